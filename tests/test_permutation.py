"""Tests of the Permutation bound (sign-change ordering, Chebyshev factors)."""

from itertools import combinations

import numpy as np
import pytest
from _family import (
    _STRATEGIES,
    Deadline,
    _sign_change_ordering,
    check_binary_matrix,
    rank_zero_possible,
    run_family,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sklearn_rrank import (
    certify_rounding,
    permutation_factors,
    round_matrix,
    rounding_rank_bounds,
    sign_change_ordering,
)


def permutation_rank_upper_bound(X, **kwargs):
    """The Permutation search; ``rank`` is the proven bound if none is certified.

    (``rounding_rank_bounds`` reports such a bound as ``proven_upper``.)
    """
    res = run_family("permutation", X, **kwargs)
    if res.rank is None and res.info.get("proven_rank") is not None:
        res.rank = int(res.info["proven_rank"])  # proven by the lemma, not certified
    return res


def _changes(X, order):
    """Independent count: max over columns of the changes of ``X[order]``."""
    Xo = np.asarray(X, dtype=int)[order]
    if Xo.shape[0] < 2:
        return 0
    return int(np.abs(np.diff(Xo, axis=0)).sum(axis=0).max())


def _vc_dimension(X):
    """Largest set of columns shattered by the rows (brute force, tiny inputs)."""
    X = np.asarray(X, dtype=int)
    rows = {tuple(r) for r in X}
    best = 0
    for d in range(1, X.shape[1] + 1):
        if 2**d > len(rows):
            break
        if any(
            len({tuple(r[list(S)]) for r in X}) == 2**d
            for S in combinations(range(X.shape[1]), d)
        ):
            best = d
        else:
            break
    return best


def _check_result(X, res, tau=0.5):
    """Invariants every result must satisfy (the bound and its certificate)."""
    X = np.asarray(X, dtype=float)
    if rank_zero_possible(X, tau):  # the skeleton's rank-0 shortcut
        assert res.rank == 0 and certify_rounding(X, res.L, res.R, tau=tau)
        return
    assert res.info["proof"] == "sign-change lemma"
    order = res.info["order"]
    if res.info["orientation"] == "rows":
        assert np.array_equal(np.sort(order), np.arange(X.shape[0]))
        c = _changes(X, order)
    else:
        assert np.array_equal(np.sort(order), np.arange(X.shape[1]))
        c = _changes(X.T, order)
    assert res.info["max_changes"] == c
    assert res.rank == c + 1
    if res.certified:
        assert res.L.shape == (X.shape[0], res.rank)
        assert res.R.shape == (X.shape[1], res.rank)
        assert certify_rounding(X, res.L, res.R, tau=tau)
        assert np.array_equal(round_matrix(res.L @ res.R.T, tau), X)
    else:
        assert res.L is None and res.R is None
        assert "sign-change lemma" in res.info["message"]


def _halfspace(m, n, d, seed):
    rng = np.random.default_rng(seed)
    P = rng.normal(size=(m, d))
    Q = rng.normal(size=(n, d))
    t = rng.normal(size=n)
    return (P @ Q.T >= t).astype(np.uint8)


# ----------------------------------------------------------------------------------
# the examples of the notes (ALGORITHMS.md, Section 3.6)
# ----------------------------------------------------------------------------------


def test_identity_4_in_identity_order():
    X = np.eye(4)
    L, R, info = permutation_factors(X, np.arange(4))
    assert info["changes"].tolist() == [1, 2, 2, 1]
    assert info["max_changes"] == 2
    assert L.shape == (4, 3) and R.shape == (4, 3)
    assert info["certified"] and info["n_errors"] == 0
    assert np.array_equal(round_matrix(L @ R.T), X)


def test_identity_4_bound_is_3_and_certified():
    res = permutation_rank_upper_bound(np.eye(4, dtype=int), random_state=0)
    assert res.rank == 3
    assert res.certified
    _check_result(np.eye(4), res)


@pytest.mark.parametrize("n", [3, 5, 8, 16, 40])
def test_identity_matrices_give_certified_bound_3(n):
    # every order leaves at least n - 2 columns with two changes
    res = permutation_rank_upper_bound(np.eye(n), random_state=n)
    assert res.rank == 3
    assert res.certified
    _check_result(np.eye(n), res)


def test_identity_2_bound_is_2():
    res = permutation_rank_upper_bound(np.eye(2), random_state=0)
    assert res.rank == 2 and res.certified


@pytest.mark.parametrize("seed", range(4))
def test_nested_matrix_bound_is_2(seed):
    rng = np.random.default_rng(seed)
    a, b = rng.random(30), rng.random(25)
    X = (a[:, None] + b[None, :] >= 1).astype(int)
    assert 0 < X.sum() < X.size and len(np.unique(X, axis=0)) > 1
    res = permutation_rank_upper_bound(X, random_state=seed)
    assert res.rank == 2
    assert res.certified
    _check_result(X, res)


@pytest.mark.parametrize("seed", range(5))
def test_halfspace_d1_spectral_order_has_one_change(seed):
    X = _halfspace(120, 90, 1, seed)
    order, c = sign_change_ordering(X, strategy="spectral", n_2opt=0, random_state=0)
    assert c == 1 == _changes(X, order)
    res = permutation_rank_upper_bound(X, random_state=seed)
    assert res.rank == 2 and res.certified
    _check_result(X, res)


def test_halfspace_d2_is_much_better_than_trivial():
    X = _halfspace(80, 60, 2, 0)
    res = permutation_rank_upper_bound(X, random_state=0)
    _check_result(X, res)
    identity_bound = _changes(X, np.arange(80)) + 1
    assert res.rank < identity_bound
    assert res.rank <= 12  # 10-13 measured on 200 x 150 (notes: 13-15)


# ----------------------------------------------------------------------------------
# orderings
# ----------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["best", *_STRATEGIES])
def test_each_strategy_returns_a_permutation_with_the_claimed_count(strategy):
    X = _halfspace(50, 30, 2, 1)
    order, c = sign_change_ordering(X, strategy=strategy, random_state=0)
    assert order.dtype == np.int64
    assert np.array_equal(np.sort(order), np.arange(50))
    assert c == _changes(X, order)


def test_best_is_no_worse_than_each_strategy():
    X = _halfspace(60, 40, 2, 2)
    _, best = sign_change_ordering(X, random_state=3)
    for strategy in _STRATEGIES:
        _, c = sign_change_ordering(X, strategy=strategy, random_state=3)
        assert best <= c


def test_two_opt_never_worsens_a_start():
    X = _halfspace(60, 40, 3, 4)
    _, c0 = sign_change_ordering(X, strategy="identity", n_2opt=0)
    _, c1 = sign_change_ordering(X, strategy="identity", random_state=0)
    assert c0 == _changes(X, np.arange(60))
    assert c1 <= c0


def test_identical_rows_are_adjacent_and_order_is_deterministic():
    rng = np.random.default_rng(0)
    base = (rng.random((8, 12)) < 0.5).astype(int)
    X = base[rng.integers(0, 8, size=40)]
    o1, c1 = sign_change_ordering(X, random_state=7)
    o2, c2 = sign_change_ordering(X, random_state=7)
    assert np.array_equal(o1, o2) and c1 == c2
    # runs of identical rows: the number of row switches equals distinct rows - 1
    Xo = X[o1]
    switches = np.count_nonzero((Xo[1:] != Xo[:-1]).any(axis=1))
    assert switches == len(np.unique(X, axis=0)) - 1


def test_ordering_of_a_large_matrix_with_many_pairs():
    # more distinct rows than the all-pairs limit: k-NN + MST candidate edges
    X = _halfspace(700, 40, 1, 5)
    order, c = sign_change_ordering(X, strategy="kruskal_mw", n_2opt=0)
    assert np.array_equal(np.sort(order), np.arange(700))
    assert c == _changes(X, order)
    assert c <= 6


@pytest.mark.parametrize("strategy", ["nearest_neighbor", "kruskal_mw"])
def test_ordering_without_the_dense_distance_matrix(strategy):
    # the paths for many distinct rows: distances computed row block by row block
    X = _halfspace(80, 30, 1, 6)
    rng, limits = np.random.RandomState(0), dict(dense_distances=10, all_pairs=10)
    order, c, _, _ = _sign_change_ordering(
        check_binary_matrix(X), strategy, 0, rng, Deadline(), **limits
    )
    assert np.array_equal(np.sort(order), np.arange(80))
    assert c == _changes(X, order)
    assert c <= 4


# ----------------------------------------------------------------------------------
# the bound on random and rectangular inputs
# ----------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    arrays(
        np.uint8,
        st.tuples(st.integers(1, 8), st.integers(1, 8)),
        elements=st.integers(0, 1),
    ),
    st.sampled_from([0.5, 0.0, -1.0, 2.0]),
)
def test_random_small_matrices(X, tau):
    res = permutation_rank_upper_bound(X, tau=tau, random_state=0)
    _check_result(X, res, tau=tau)
    # exact lower facts: VC dimension (affine halfspaces in R^k have VC dim k + 1)
    vc = max(_vc_dimension(X), _vc_dimension(X.T))
    assert res.rank >= vc - 1
    # rank 0 only when round_tau(0) = X (the skeleton's shortcut)
    assert res.rank >= 1 or rank_zero_possible(X, tau)
    # trivial upper facts: one change per row switch, the identity order
    assert res.rank <= min(X.shape)
    assert res.rank <= _changes(X, np.arange(X.shape[0])) + 1
    # small matrices: c_max <= 7, float64 factors always certify
    assert res.certified


@pytest.mark.parametrize("shape", [(5, 40), (40, 5), (3, 200), (30, 12)])
def test_rectangular_inputs(shape):
    rng = np.random.default_rng(sum(shape))
    X = (rng.random(shape) < 0.4).astype(int)
    res = permutation_rank_upper_bound(X, random_state=0)
    _check_result(X, res)
    assert res.rank <= min(shape)
    rows = permutation_rank_upper_bound(X, orientation="rows", random_state=0)
    cols = permutation_rank_upper_bound(X, orientation="columns", random_state=0)
    assert rows.info["orientation"] == "rows"
    assert cols.info["orientation"] == "columns"
    _check_result(X, rows)
    _check_result(X, cols)
    assert rows.rank <= shape[0] and cols.rank <= shape[1]


def test_column_orientation_swaps_the_factors():
    X = _halfspace(6, 50, 1, 3).T  # 50 x 6: columns are the 1-D halfspace rows
    res = permutation_rank_upper_bound(X, orientation="columns", random_state=0)
    assert res.info["orientation"] == "columns"
    assert res.certified and res.L.shape[0] == 50 and res.R.shape[0] == 6
    _check_result(X, res)


@pytest.mark.parametrize("tau", [0.5, 0.0, -0.3, 7.0])
def test_factors_for_other_thresholds(tau):
    X = _halfspace(30, 20, 1, 9)
    order, _ = sign_change_ordering(X, random_state=0)
    for nodes in ("uniform", "adaptive", "chebyshev"):
        L, R, info = permutation_factors(X, order, tau=tau, nodes=nodes)
        assert info["nodes"] == nodes
        assert info["certified"] and info["n_errors"] == 0
        assert np.array_equal(round_matrix(L @ R.T, tau), X)
        assert np.abs(L).max() <= 1.0 + 1e-12  # Chebyshev values on [-1, 1]


def test_large_c_returns_proven_but_uncertified_bound():
    rng = np.random.default_rng(0)
    X = (rng.random((60, 50)) < 0.5).astype(int)
    res = permutation_rank_upper_bound(X, random_state=0)
    _check_result(X, res)
    assert res.rank > 10
    assert not res.certified
    assert res.info["proof"] == "sign-change lemma"
    assert "no certified float64 factors" in res.info["message"]
    assert res.info["dynamic_range_digits"] > 9
    # the public door reports it as the proven (not certified) upper bound
    b = rounding_rank_bounds(X, methods=("permutation",), random_state=0)
    assert b.proven_upper_method == "permutation" and b.upper_method == "trivial"
    assert b.proven_upper == res.rank < b.upper


def test_time_limit_still_returns_a_proven_bound():
    X = _halfspace(150, 100, 3, 0)
    res = permutation_rank_upper_bound(X, time_limit=1e-6, random_state=0)
    assert res.stopped_early
    _check_result(X, res)


def test_verbose_prints(capsys):
    permutation_rank_upper_bound(np.eye(5), verbose=2, random_state=0)
    out = capsys.readouterr().out
    assert "[permutation] kruskal_mw" in out and "sign-change lemma" in out


def test_does_not_modify_input():
    X = _halfspace(20, 10, 2, 0)
    X0 = X.copy()
    permutation_rank_upper_bound(X, random_state=0)
    order, _ = sign_change_ordering(X, random_state=0)
    permutation_factors(X, order)
    assert np.array_equal(X, X0)


# ----------------------------------------------------------------------------------
# parameter validation
# ----------------------------------------------------------------------------------


def test_invalid_parameters():
    X = np.eye(3)
    with pytest.raises(ValueError, match="strategy"):
        sign_change_ordering(X, strategy="greedy")
    with pytest.raises(ValueError, match="n_2opt"):
        sign_change_ordering(X, n_2opt=-1)
    with pytest.raises(ValueError, match="margin"):
        permutation_factors(X, np.arange(3), margin=1.0)
    with pytest.raises(ValueError, match="permutation of range"):
        permutation_factors(X, [0, 0, 1])
    with pytest.raises(ValueError, match="permutation of range"):
        permutation_factors(X, np.arange(4))
    perm = {"methods": ("permutation",)}
    with pytest.raises(ValueError, match="orientation"):
        rounding_rank_bounds(
            X, **perm, method_params={"permutation": {"orientation": "diagonal"}}
        )
    with pytest.raises(ValueError, match="time_limit"):
        rounding_rank_bounds(X, **perm, time_limit=0)
    with pytest.raises(ValueError, match="tau"):
        rounding_rank_bounds(X, **perm, tau=np.inf)
    with pytest.raises(ValueError, match="not binary"):
        rounding_rank_bounds([[0, 2], [1, 0]], **perm)
    with pytest.raises(ValueError, match="permutation"):
        sign_change_ordering([[0, np.nan], [1, 0]])
