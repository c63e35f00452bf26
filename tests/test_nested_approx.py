"""Tests for sklearn_rrank._nested._approx: the BMNA solvers (MT, NNRR1, MT+NNRR1,
rank-1 R-SVD), their exact oracles (brute force, ILP) and NestedApprox."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from _family import (
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
from _nested_strategies import binary_matrices
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_rrank import NestedApprox, certify_rounding, is_nested
from sklearn_rrank.datasets import make_nested_matrix

METHODS = ["mt", "nnrr1", "mt+nnrr1", "rsvd"]

# ---------------------------------------------------------------------------------
# BMNA building blocks and exact oracles
# ---------------------------------------------------------------------------------

# hand-checked: nested?, number of 2 x 2 violations, BMNA optimum
HAND_CHECKED = [
    ([[1, 0], [0, 1]], False, 1, 1),
    ([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]], True, 0, 0),
    ([[1, 1, 0, 0], [0, 0, 1, 1], [1, 1, 1, 1]], False, 4, 2),
]


@pytest.mark.parametrize("X, nested, violations, optimum", HAND_CHECKED)
def test_hand_checked_examples(X, nested, violations, optimum):
    X = np.array(X)
    assert is_nested(X) is nested
    assert _count_violations(X) == violations
    assert _bmna_brute_force(X)[1] == optimum
    assert _bmna_ilp(X)[1] == optimum
    for method in ["mt", "mt+nnrr1"]:
        assert _bmna(X, method, 100, 0)["cost"] == optimum


def test_optimum_random_10x8():
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
