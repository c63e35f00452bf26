"""Tests for sklearn_rrank._nested: rounding rank one, NestedApprox, nestedness."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_rrank import certify_rounding
from sklearn_rrank._nested import (
    is_nested,
    is_rounding_rank_one,
    nested_decomposition,
)
from sklearn_rrank._nested_approx import (
    NestedApprox,
    _best_upper_sets,
    _bmna,
    _bmna_brute_force,
    _bmna_ilp,
    _count_violations,
    _insertion_sweep,
    _mt_greedy,
    _nested_from_order,
    _nnrr1,
)
from sklearn_rrank._nestedness import (
    _curveball_trades,
    _fill_exponent,
    _fill_line_crossing,
    nestedness_temperature,
    nodf,
    nodf_null_model,
)
from sklearn_rrank.datasets._nested_generator import make_nested_matrix

METHODS = ["mt", "nnrr1", "mt+nnrr1", "rsvd"]

# ---------------------------------------------------------------------------------
# helpers and oracles
# ---------------------------------------------------------------------------------


def _is_nested_pairs(X):
    """Definition: every two rows are comparable under inclusion."""
    X = np.asarray(X, dtype=bool)
    for a, b in itertools.combinations(range(X.shape[0]), 2):
        if not (np.all(X[a] <= X[b]) or np.all(X[b] <= X[a])):
            return False
    return True


def _all_binary(m, n):
    for code in range(1 << (m * n)):
        yield ((code >> np.arange(m * n)) & 1).reshape(m, n)


def _rank_one_patterns(m, n, tau, values):
    """Set of all round_tau(outer(l, r)) with l, r over a grid (codes as ints)."""
    L = np.array(list(itertools.product(values, repeat=m)))
    R = np.array(list(itertools.product(values, repeat=n)))
    weights = 1 << np.arange(m * n)
    found = set()
    for l in L:
        P = (l[:, None, None] * R.T[None, :, :]) >= tau
        found.update(np.unique(P.reshape(m * n, -1).T @ weights).tolist())
    return found


binary_matrices = st.integers(1, 6).flatmap(
    lambda m: st.integers(1, 6).flatmap(
        lambda n: st.lists(
            st.lists(st.integers(0, 1), min_size=n, max_size=n),
            min_size=m,
            max_size=m,
        )
    )
)


# ---------------------------------------------------------------------------------
# is_nested, nested_decomposition, is_rounding_rank_one
# ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "X, expected",
    [
        ([[1, 0], [0, 1]], False),
        ([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]], True),
        ([[1, 1, 0, 0], [0, 0, 1, 1], [1, 1, 1, 1]], False),
        ([[0, 0], [0, 0]], True),
        ([[0, 1, 0], [1, 1, 0], [0, 1, 1]], False),
        ([[0, 1, 0], [1, 1, 0], [0, 1, 0]], True),
    ],
)
def test_is_nested_examples(X, expected):
    assert is_nested(X) is expected
    assert is_nested(sp.csr_matrix(np.array(X))) is expected
    assert is_nested(np.array(X).T) is expected  # nestedness is symmetric


def test_is_nested_exhaustive_3x3():
    for X in _all_binary(3, 3):
        assert is_nested(X) == _is_nested_pairs(X), X


@settings(max_examples=60, deadline=None)
@given(binary_matrices)
def test_is_nested_matches_definition(X):
    X = np.array(X)
    assert is_nested(X) == _is_nested_pairs(X)
    assert is_nested(sp.csr_matrix(X)) == _is_nested_pairs(X)


def test_is_nested_rejects_non_binary():
    with pytest.raises(ValueError, match="not binary"):
        is_nested([[0, 2]])
    with pytest.raises(ValueError, match="missing"):
        is_nested([[0, np.nan]])


@settings(max_examples=60, deadline=None)
@given(binary_matrices, st.sampled_from([0.5, 1.0, 3e-3, 7.0]))
def test_nested_decomposition_certified(X, tau):
    X = np.array(X)
    if not _is_nested_pairs(X):
        with pytest.raises(ValueError, match="not nested"):
            nested_decomposition(X, tau=tau)
        return
    l, r = nested_decomposition(X, tau=tau)
    assert l.shape == (X.shape[0],) and r.shape == (X.shape[1],)
    assert np.all(l >= 0) and np.all(r >= 0)
    assert certify_rounding(X, l[:, None], r[:, None], tau=tau)
    assert_array_equal(np.outer(l, r) >= tau, X.astype(bool))
    l2, r2 = nested_decomposition(sp.csr_matrix(X), tau=tau)
    assert_allclose(l2, l)
    assert_allclose(r2, r)


def test_nested_decomposition_large_margin():
    # a full staircase of size 3000: the paper's 2^-j construction would underflow
    n = 3000
    X = np.tril(np.ones((n, n), dtype=np.uint8))
    l, r = nested_decomposition(X)
    assert certify_rounding(X, l[:, None], r[:, None], margin=1e-6)


def test_nested_decomposition_tau_nonpositive():
    ones = np.ones((2, 3))
    for tau in (0.0, -1.0):
        l, r = nested_decomposition(ones, tau=tau)
        assert certify_rounding(ones, l[:, None], r[:, None], tau=tau)
        with pytest.raises(ValueError, match="only the all-ones matrix"):
            nested_decomposition([[1, 0], [1, 1]], tau=tau)


def test_nested_decomposition_zero_matrix():
    l, r = nested_decomposition(np.zeros((2, 3)))
    assert_array_equal(l, 0)
    assert_array_equal(r, 0)


def test_identity_matrices():
    # appendix "Identity Matrices Have Rounding Rank 2": I_n, n >= 3, is not rank one
    for n in range(3, 7):
        assert not is_rounding_rank_one(np.eye(n))
    # I_2 is two 1x1 nested blocks; I_1 is nested
    assert is_rounding_rank_one(np.eye(2))
    assert is_rounding_rank_one(np.eye(1))


def test_triangular_and_block_nested():
    U = np.triu(np.ones((5, 5)))
    ok, l, r = is_rounding_rank_one(U, return_factors=True)
    assert ok and np.all(l >= 0) and np.all(r >= 0)
    B1 = np.array([[1, 1, 1], [1, 0, 0]])
    B2 = np.array([[1, 1], [1, 1], [0, 1]])
    B = np.zeros((6, 6), dtype=int)
    B[:2, :3] = B1
    B[2:5, 3:5] = B2  # row 5 and column 5 stay empty
    rng = np.random.default_rng(3)
    B = B[rng.permutation(6)][:, rng.permutation(6)]
    ok, l, r = is_rounding_rank_one(B, return_factors=True)
    assert ok
    assert (l < 0).any() and (l > 0).any()
    assert certify_rounding(B, l[:, None], r[:, None])
    assert not is_nested(B)
    # a third block breaks it; a non-nested block breaks it
    B3 = np.zeros((7, 7), dtype=int)
    B3[:6, :6] = B
    B3[6, 6] = 1
    assert not is_rounding_rank_one(B3)
    C = np.zeros((4, 4), dtype=int)
    C[:2, :2] = np.eye(2)
    C[2:, 2:] = 1
    assert not is_rounding_rank_one(C)


@pytest.mark.parametrize("tau", [0.5, 0.0, -0.5])
def test_rank_one_against_grid_oracle(tau):
    """Every 3x3 matrix: True iff round_tau(l r^T) over a grid of l, r finds it."""
    values = np.array([0, 0.25, 0.5, 1, 2, 4])
    values = np.concatenate([-values[1:], values])
    found = _rank_one_patterns(3, 3, tau, values)
    weights = 1 << np.arange(9)
    for X in _all_binary(3, 3):
        rank_zero = X.sum() == (0 if tau > 0 else 9)
        expected = int(X.ravel() @ weights) in found and not rank_zero
        ok, l, r = is_rounding_rank_one(X, tau=tau, return_factors=True)
        assert ok == expected, X
        if ok:
            assert certify_rounding(X, l[:, None], r[:, None], tau=tau)
        else:
            assert l is None and r is None


@pytest.mark.parametrize("tau", [0.5, 2.0, 0.0, -0.5, -3.0])
def test_rank_one_zero_and_ones(tau):
    zeros, ones = np.zeros((3, 4)), np.ones((3, 4))
    # rank 0: zeros for tau > 0, ones for tau <= 0
    assert is_rounding_rank_one(zeros, tau=tau) is (tau <= 0)
    assert is_rounding_rank_one(ones, tau=tau) is (tau > 0)


def test_rank_one_sparse_input_and_tau_equivalence():
    rng = np.random.default_rng(0)
    for _ in range(30):
        X = (rng.random((5, 4)) < 0.4).astype(int)
        a = is_rounding_rank_one(X)
        assert is_rounding_rank_one(sp.csr_matrix(X)) == a
        assert is_rounding_rank_one(X, tau=7.5) == a
        # tau < 0 is tau > 0 on the complement
        assert is_rounding_rank_one(1 - X, tau=-0.5) == a


# ---------------------------------------------------------------------------------
# BMNA building blocks and exact oracles
# ---------------------------------------------------------------------------------

# ALGORITHMS.md 1.7 (hand-checked): nested?, violations, BMNA optimum
TABLE_1_7 = [
    ([[1, 0], [0, 1]], False, 1, 1),
    ([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]], True, 0, 0),
    ([[1, 1, 0, 0], [0, 0, 1, 1], [1, 1, 1, 1]], False, 4, 2),
]


@pytest.mark.parametrize("X, nested, violations, optimum", TABLE_1_7)
def test_table_1_7(X, nested, violations, optimum):
    X = np.array(X)
    assert is_nested(X) is nested
    assert _count_violations(X) == violations
    assert _bmna_brute_force(X)[1] == optimum
    assert _bmna_ilp(X)[1] == optimum
    for method in ["mt", "mt+nnrr1"]:
        assert _bmna(X, method, 100, 0)["cost"] == optimum


def test_table_1_7_random_10x8():
    rng = np.random.default_rng(8)
    B = (rng.random((10, 8)) < 0.4).astype(int)
    N_ilp, c_ilp = _bmna_ilp(B)
    N_bf, c_bf = _bmna_brute_force(B)
    assert c_ilp == c_bf == 17
    assert is_nested(N_ilp) and is_nested(N_bf)
    assert np.count_nonzero(N_ilp != B) == 17
    for method in METHODS:
        assert _bmna(B, method, 100, 0)["cost"] >= 17
    assert _bmna(B, "mt", 100, 0)["cost"] == 17


def _naive_violations(X):
    X = np.asarray(X, dtype=bool)
    count = 0
    for i, k in itertools.combinations(range(X.shape[0]), 2):
        for a, b in itertools.combinations(range(X.shape[1]), 2):
            sub = X[np.ix_([i, k], [a, b])]
            count += bool(
                (sub[0, 0] and sub[1, 1] and not sub[0, 1] and not sub[1, 0])
                or (sub[0, 1] and sub[1, 0] and not sub[0, 0] and not sub[1, 1])
            )
    return count


@settings(max_examples=40, deadline=None)
@given(binary_matrices)
def test_violations_and_nestedness(X):
    X = np.array(X)
    v = _count_violations(X)
    assert v == _naive_violations(X)
    assert (v == 0) == is_nested(X)


@settings(max_examples=40, deadline=None)
@given(binary_matrices, st.randoms(use_true_random=False))
def test_nested_from_order_is_optimal_for_its_order(X, rnd):
    X = np.array(X, dtype=bool)
    order = np.array(rnd.sample(range(X.shape[1]), X.shape[1]))
    N, cost = _nested_from_order(X, order)
    assert cost == np.count_nonzero(N != X)
    # every row is a prefix of the order, and no prefix length does better
    Xo = X[:, order]
    for i in range(X.shape[0]):
        k = int(N[i].sum())
        assert_array_equal(N[i, order], np.arange(X.shape[1]) < k)
        best = min(
            np.count_nonzero((np.arange(X.shape[1]) < L) != Xo[i])
            for L in range(X.shape[1] + 1)
        )
        assert np.count_nonzero(N[i] != X[i]) == best


def test_brute_force_matches_ilp():
    rng = np.random.default_rng(1)
    for _ in range(12):
        m, n = rng.integers(2, 6, size=2)
        B = rng.random((m, n)) < rng.uniform(0.2, 0.8)
        N, c = _bmna_brute_force(B)
        assert is_nested(N) and c == np.count_nonzero(N != B)
        assert _bmna_ilp(B)[1] == c


def _naive_greedy(B):
    N = B.astype(np.int64)
    while True:
        C = 1 - N
        M = C @ N.T
        G = (2 * N - 1) * (M @ C - M.T @ N)
        k = np.argmax(G)
        if G.flat[k] <= 0:
            return N.astype(bool)
        N.flat[k] = 1 - N.flat[k]


def test_greedy_incremental_updates_match_recomputation():
    rng = np.random.default_rng(2)
    for _ in range(40):
        B = rng.random(tuple(rng.integers(2, 9, size=2))) < 0.5
        ref = _naive_greedy(B.T).T if B.shape[0] > B.shape[1] else _naive_greedy(B)
        out = _mt_greedy(B)
        assert_array_equal(out, ref)
        assert _count_violations(out) <= _count_violations(B)


def test_insertion_sweep_costs_are_exact():
    rng = np.random.default_rng(3)
    for _ in range(20):
        B = rng.random((rng.integers(2, 7), rng.integers(2, 7))) < 0.5
        order = rng.permutation(B.shape[1])
        _, cost = _nested_from_order(B, order)
        new_order, new_cost, improved = _insertion_sweep(B, order, cost)
        assert sorted(new_order) == list(range(B.shape[1]))
        assert _nested_from_order(B, new_order)[1] == new_cost
        assert new_cost <= cost and improved == (new_cost < cost)
        if not improved:  # a local optimum: no single move helps
            for j in range(B.shape[1]):
                sigma = order[order != j]
                for p in range(B.shape[1]):
                    moved = np.insert(sigma, p, j)
                    assert _nested_from_order(B, moved)[1] >= cost


def test_best_upper_sets_matches_enumeration():
    rng = np.random.default_rng(4)
    for _ in range(30):
        m, n = rng.integers(1, 7, size=2)
        B = rng.random((m, n)) < 0.5
        values = rng.integers(0, 4, size=n).astype(float)  # ties and zeros
        chosen, cost = _best_upper_sets(B, values, values > 0)
        total = 0
        for i in range(m):
            options = [np.zeros(n, bool)] + [values >= v for v in values[values > 0]]
            best = min(np.count_nonzero(o != B[i]) for o in options)
            row = values >= chosen[i] if not np.isnan(chosen[i]) else np.zeros(n, bool)
            assert np.count_nonzero(row != B[i]) == best
            total += best
        assert cost == total


def test_nnrr1_never_worse_than_start():
    rng = np.random.default_rng(5)
    for _ in range(20):
        B = rng.random((8, 7)) < 0.5
        N0, c0 = _nested_from_order(B, rng.permutation(7))
        r0 = np.zeros(7)
        r0[np.argsort(-N0.sum(0), kind="stable")] = np.arange(7, 0, -1)
        N, c, n_iter, converged = _nnrr1(B, r0, 50, start_cost=c0)
        assert c <= c0 and is_nested(N) and converged


def test_methods_against_brute_force_6x6():
    """No method beats the optimum; MT and MT+NNRR1 reach it on >= 95% of cases."""
    rng = np.random.default_rng(0)
    hits = dict.fromkeys(METHODS, 0)
    for _ in range(200):
        B = rng.random((6, 6)) < 0.5
        opt = _bmna_brute_force(B)[1]
        for method in METHODS:
            res = _bmna(B, method, 100, 0)
            assert res["cost"] >= opt
            assert res["cost"] == np.count_nonzero(res["N"] != B)
            hits[method] += res["cost"] == opt
    assert hits["mt"] >= 190
    assert hits["mt+nnrr1"] >= 190
    assert hits["rsvd"] < hits["nnrr1"] <= hits["mt+nnrr1"]


def test_methods_against_ilp_10x8():
    rng = np.random.default_rng(6)
    for _ in range(3):
        B = rng.random((10, 8)) < 0.5
        opt = _bmna_ilp(B)[1]
        assert _bmna_brute_force(B)[1] == opt
        for method in METHODS:
            assert _bmna(B, method, 100, 0)["cost"] >= opt


def test_mt_beats_planted_on_noisy_nested():
    X, clean = make_nested_matrix(
        40, 60, density=0.4, noise=0.1, random_state=0, return_clean=True
    )
    planted = np.count_nonzero(X != clean)
    costs = {m: _bmna(X, m, 100, 0)["cost"] for m in METHODS}
    assert costs["mt"] <= planted
    assert costs["mt+nnrr1"] <= costs["mt"]
    assert costs["rsvd"] > costs["nnrr1"]


# ---------------------------------------------------------------------------------
# NestedApprox
# ---------------------------------------------------------------------------------


@parametrize_with_checks([NestedApprox(binarize=0.0)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.fixture(scope="module")
def noisy():
    return make_nested_matrix(30, 40, density=0.4, noise=0.2, random_state=1)


@pytest.mark.parametrize("method", METHODS)
def test_nested_approx_result(noisy, method):
    est = NestedApprox(method=method, random_state=0).fit(noisy)
    L, r = est.embedding_, est.components_
    assert L.shape == (30, 1) and r.shape == (1, 40)
    assert np.all(L >= 0) and np.all(r >= 0)
    N = (L @ r >= 0.5).astype(np.uint8)
    assert is_nested(N)
    assert certify_rounding(N, L, r.T)
    assert est.reconstruction_err_ == np.count_nonzero(N != noisy)
    assert_allclose(est.relative_error_, est.reconstruction_err_ / noisy.sum())
    stair = N[est.row_order_][:, est.column_order_]
    assert np.all(np.diff(stair.astype(int), axis=0) <= 0)
    assert np.all(np.diff(stair.astype(int), axis=1) <= 0)
    assert est.n_iter_ >= 1
    # transform re-fits rows with r fixed: never worse than the fitted matrix
    Z = est.inverse_transform(est.transform(noisy))
    assert is_nested(Z)
    assert np.count_nonzero(Z != noisy) <= est.reconstruction_err_
    assert_allclose(est.score(noisy), -np.count_nonzero(Z != noisy) / noisy.sum())
    # deterministic given random_state
    est2 = NestedApprox(method=method, random_state=0).fit(noisy)
    assert_array_equal(est2.components_, est.components_)
    assert_array_equal(est2.embedding_, est.embedding_)


def test_nested_approx_exact_on_nested(noisy):
    _, clean = make_nested_matrix(
        25, 20, density=0.3, random_state=2, return_clean=True
    )
    for method in ["mt", "nnrr1", "mt+nnrr1"]:  # the rounded SVD need not be exact
        est = NestedApprox(method=method, tau=3.0).fit(clean)
        assert est.reconstruction_err_ == 0
        assert_array_equal(est.inverse_transform(est.transform(clean)), clean)


def test_nested_approx_mt_nnrr1_not_worse_than_mt(noisy):
    mt = NestedApprox(method="mt").fit(noisy).reconstruction_err_
    both = NestedApprox(method="mt+nnrr1").fit(noisy).reconstruction_err_
    assert both <= mt


def test_nested_approx_inputs(noisy):
    est = NestedApprox(method="nnrr1").fit(noisy)
    est_sp = NestedApprox(method="nnrr1").fit(sp.csr_matrix(noisy))
    assert_array_equal(est.components_, est_sp.components_)
    real = noisy * 0.9 + 0.05
    est_b = NestedApprox(method="nnrr1", binarize=0.5).fit(real)
    assert_array_equal(est_b.components_, est.components_)
    with pytest.raises(ValueError, match="not binary"):
        NestedApprox().fit(real)
    with pytest.raises(ValueError, match="tau"):
        NestedApprox(tau=0.0).fit(noisy)
    with pytest.raises(ValueError, match="method"):
        NestedApprox(method="svd").fit(noisy)
    with pytest.raises(ValueError, match="shape"):
        est.inverse_transform(np.ones((2, 2)))


def test_nested_approx_convergence_warning():
    X = make_nested_matrix(40, 50, density=0.5, noise=0.4, random_state=3)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        NestedApprox(method="nnrr1", max_iter=1).fit(X)


def test_nested_approx_transform_new_rows(noisy):
    est = NestedApprox().fit(noisy[:20])
    L = est.transform(noisy[20:])
    assert L.shape == (10, 1) and np.all(L >= 0)
    r = est.components_[0]
    Z = est.inverse_transform(L)
    for i in range(10):  # each row is the best upper set of r (or empty)
        options = [np.zeros(40, bool)] + [r >= v for v in np.unique(r[r > 0])]
        best = min(np.count_nonzero(o != noisy[20 + i]) for o in options)
        assert np.count_nonzero(Z[i] != noisy[20 + i]) == best
    assert certify_rounding(Z, L, r[:, None])


# ---------------------------------------------------------------------------------
# nestedness metrics and the null model (ALGORITHMS.md 7)
# ---------------------------------------------------------------------------------


def test_nodf_examples():
    assert nodf([[1, 1, 1], [1, 1, 0], [1, 0, 0]]) == (100.0, 100.0, 100.0)
    assert nodf(np.eye(3)).nodf == 0.0
    res = nodf([[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 1, 0]])
    assert_allclose(res, (500 / 9, 200 / 3, 50.0))
    assert_allclose(nodf(sp.csr_matrix(np.eye(3))), (0.0, 0.0, 0.0))
    one_row = nodf([[1, 0, 1]])
    assert np.isnan(one_row.rows) and one_row.nodf == one_row.columns


def _naive_nodf(X):
    X = np.asarray(X, dtype=float)
    X = X[np.argsort(-X.sum(1), kind="stable")][:, np.argsort(-X.sum(0), kind="stable")]

    def part(A):
        vals = []
        for i, k in itertools.combinations(range(A.shape[0]), 2):
            si, sk = A[i].sum(), A[k].sum()
            vals.append(0.0 if si <= sk or sk == 0 else 100 * (A[i] @ A[k]) / sk)
        return vals

    rows, cols = part(X), part(X.T)
    return np.mean(rows + cols)


@settings(max_examples=40, deadline=None)
@given(binary_matrices.filter(lambda X: len(X) > 1 and len(X[0]) > 1))
def test_nodf_matches_definition(X):
    assert_allclose(nodf(X).nodf, _naive_nodf(X))
    X = np.array(X)
    assert_allclose(nodf(X[::-1]).nodf, nodf(X).nodf)  # sorted first


def test_nodf_unsorted_order_matters():
    X = np.array([[1, 0, 0], [1, 1, 0], [1, 1, 1]])
    assert nodf(X).nodf == 100.0
    # rows in increasing fill score 0; the columns are already decreasing
    assert nodf(X, sort=False) == (50.0, 0.0, 100.0)


def _fill_line(x, p):
    return 1 - (1 - (1 - x) ** p) ** (1 / p)


def test_temperature_fill_line():
    from scipy.integrate import quad
    from scipy.optimize import brentq

    for fill in [0.02, 0.3, 0.5, 0.55, 0.9]:
        p = _fill_exponent(fill)
        area = quad(_fill_line, 0, 1, args=(p,))[0]
        assert_allclose(area, fill, atol=1e-8)
    assert_allclose(_fill_exponent(0.5), 1.0)
    p = _fill_exponent(0.3)
    a = np.array([-0.7, -0.2, 0.0, 0.35, 0.9])
    x = _fill_line_crossing(a, p)
    for ai, xi in zip(a, x, strict=True):
        root = brentq(lambda t, ai=ai: _fill_line(t, p) - t - ai, 0, 1)
        assert_allclose(xi, root, atol=1e-12)


def test_temperature_values():
    stair = np.tril(np.ones((10, 10)))[::-1]  # full rows on top: packed already
    assert nestedness_temperature(stair) < 0.005
    assert nestedness_temperature(stair, pack=False) < 0.005
    assert nestedness_temperature(stair[::-1], pack=False) > 50  # upside down
    rng = np.random.default_rng(0)
    rand = (rng.random((10, 10)) < 0.55).astype(int)
    t_rand = nestedness_temperature(rand)
    assert 20 < t_rand < 100
    assert nestedness_temperature(np.zeros((3, 3))) == 0.0
    assert nestedness_temperature(np.ones((3, 3))) == 0.0


def test_curveball_preserves_margins():
    rng = np.random.default_rng(0)
    X = rng.random((12, 9)) < 0.4
    M = _curveball_trades(X.copy(), 500, np.random.default_rng(1))
    assert_array_equal(M.sum(0), X.sum(0))
    assert_array_equal(M.sum(1), X.sum(1))
    assert np.count_nonzero(M != X) > 0


def test_curveball_uniform_on_permutation_matrices():
    """Margins (1, 1, 1): the six 3 x 3 permutation matrices are equally likely."""
    rng = np.random.default_rng(0)
    M = np.eye(3, dtype=bool)
    counts = {}
    for _ in range(3000):
        _curveball_trades(M, 3, rng)
        key = tuple(np.argmax(M, axis=1))
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 6
    assert all(400 < c < 600 for c in counts.values())


def test_nodf_null_model():
    rng = np.random.default_rng(0)
    X = (rng.random((15, 20)) < 0.4).astype(int)
    res = nodf_null_model(X, n_samples=30, random_state=0)
    res2 = nodf_null_model(X, n_samples=30, random_state=0)
    assert_array_equal(res.null_nodf, res2.null_nodf)
    assert not np.array_equal(
        res.null_nodf, nodf_null_model(X, n_samples=30, random_state=1).null_nodf
    )
    assert res.nodf == nodf(X).nodf
    assert res.null_nodf.shape == (30,)
    assert_allclose(res.z_score, (res.nodf - res.null_mean) / res.null_std)
    assert_allclose(res.null_std, np.std(res.null_nodf, ddof=1))
    n_ge = np.count_nonzero(res.null_nodf >= res.nodf)
    assert res.p_value == (1 + n_ge) / 31
    assert abs(res.z_score) < 4  # a random matrix is typical of its null model
    # a staircase is the only matrix with its margins
    fixed = nodf_null_model(np.tril(np.ones((6, 6))), n_samples=5, random_state=0)
    assert fixed.p_value == 1.0 and np.isnan(fixed.z_score)
    assert_allclose(fixed.null_nodf, 100.0)
    with pytest.raises(ValueError, match="n_samples"):
        nodf_null_model(X, n_samples=0)


# ---------------------------------------------------------------------------------
# make_nested_matrix
# ---------------------------------------------------------------------------------


@pytest.mark.parametrize("density, noise", [(0.1, 0.15), (0.5, 0.5), (0.7, 0.05)])
def test_make_nested_matrix(density, noise):
    X, clean = make_nested_matrix(
        20, 30, density=density, noise=noise, random_state=0, return_clean=True
    )
    assert X.dtype == np.uint8 and X.shape == (20, 30)
    assert is_nested(clean)
    assert clean.sum() == round(density * 600)
    assert np.count_nonzero(X != clean) == round(noise * clean.sum())
    assert_array_equal(
        make_nested_matrix(20, 30, density=density, noise=noise, random_state=0), X
    )


def test_make_nested_matrix_errors():
    with pytest.raises(ValueError, match="flips"):
        make_nested_matrix(3, 3, density=1.0, noise=2.0)
    with pytest.raises(ValueError, match="density"):
        make_nested_matrix(3, 3, density=1.5)
    assert make_nested_matrix(3, 4, density=0.0).sum() == 0
