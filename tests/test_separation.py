"""Tests of the batched separation (sklearn_rrank._core._separation)."""

import numpy as np
import pytest
from _family import (
    _column_counts,
    alternate_separation,
    separate_columns,
    separation_basis,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_rrank import certify_rounding


def _planted(m, n, d, tau, seed):
    rng = np.random.default_rng(seed)
    L = rng.standard_normal((m, d))
    R = rng.standard_normal((n, d))
    X = (L @ R.T >= tau).astype(np.float64)
    return L, X


@pytest.mark.parametrize("tau", [0.5, 0.0, -1.0, 2.0])
def test_separable_columns_are_found_and_certified(tau):
    L, X = _planted(200, 60, 5, tau, 0)
    R, separated = separate_columns(L, X, tau=tau, n_iter=1000)
    assert separated.mean() > 0.6
    assert certify_rounding(X[:, separated], L, R[separated], tau=tau)


@pytest.mark.parametrize("tau", [0.5, 0.0, -1.0])
def test_newton_finishes_separable_columns(tau):
    L, X = _planted(200, 60, 5, tau, 0)
    R, separated = separate_columns(L, X, tau=tau, n_iter=60, solver="newton")
    assert separated.all()  # the descent needs far more steps (see above)
    assert certify_rounding(X, L, R, tau=tau)
    R1, _ = separate_columns(L, X, tau=tau, n_iter=60, solver="newton", n_jobs=2)
    np.testing.assert_array_equal(R, R1)
    with pytest.raises(ValueError, match="solver"):
        separate_columns(L, X, solver="lp")


def test_reported_columns_always_certify_and_others_do_not():
    rng = np.random.default_rng(1)
    L = rng.standard_normal((80, 3))
    X = (rng.random((80, 40)) < 0.3).astype(np.float64)  # mostly not separable
    R, separated = separate_columns(L, X, n_iter=50)
    for j in range(X.shape[1]):
        ok = certify_rounding(X[:, [j]], L, R[[j]])
        assert ok == separated[j], j


def test_missing_entries_drop_their_constraint():
    L, X = _planted(150, 30, 4, 0.5, 2)
    Xm = X.copy()
    Xm[::7, ::3] = np.nan
    Xm[::7, 1::3] = 1 - X[::7, 1::3]  # flips, hidden below as missing
    Xm[::7, 1::3] = np.nan
    R, separated = separate_columns(L, Xm, n_iter=1000)
    assert separated.mean() > 0.6
    assert certify_rounding(Xm[:, separated], L, R[separated])


def test_result_does_not_depend_on_n_jobs():
    L, X = _planted(100, 50, 4, 0.5, 3)
    kw = dict(block_entries=1000)  # several blocks
    R1, s1 = separate_columns(L, X, n_jobs=1, **kw)
    R2, s2 = separate_columns(L, X, n_jobs=2, **kw)
    np.testing.assert_array_equal(R1, R2)
    np.testing.assert_array_equal(s1, s2)


def test_rank_deficient_and_degenerate_left_factors():
    L, X = _planted(60, 20, 3, 0.5, 4)
    L2 = np.hstack([L, L[:, :1], np.zeros((60, 1))])  # duplicate and zero column
    R, separated = separate_columns(L2, X, n_iter=1000)
    assert R.shape == (20, 5) and separated.mean() > 0.6
    assert certify_rounding(X[:, separated], L2, R[separated])
    R0, s0 = separate_columns(np.zeros((60, 0)), X)
    assert R0.shape == (20, 0)
    np.testing.assert_array_equal(s0, ~X.any(axis=0))  # only all-zero columns


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(1, 12),
    n=st.integers(1, 8),
    d=st.integers(1, 4),
    tau=st.sampled_from([0.5, 0.0, 1.0, -0.5]),
    seed=st.integers(0, 2**16),
    solver=st.sampled_from(["descent", "newton"]),
)
def test_never_claims_an_uncertified_column(m, n, d, tau, seed, solver):
    rng = np.random.default_rng(seed)
    L = rng.integers(-2, 3, size=(m, d)).astype(np.float64)
    X = (rng.random((m, n)) < 0.5).astype(np.float64)
    R, separated = separate_columns(L, X, tau=tau, n_iter=20, solver=solver)
    assert R.shape == (n, d) and np.isfinite(R).all()
    if separated.any():
        assert certify_rounding(X[:, separated], L, R[separated], tau=tau)


def test_a_precomputed_basis_gives_the_same_result():
    L, X = _planted(120, 30, 4, 0.5, 5)
    for solver in ["descent", "newton"]:
        R1, s1 = separate_columns(L, X, solver=solver, n_iter=30)
        basis = separation_basis(L, 0.5)
        R2, s2 = separate_columns(L, X, solver=solver, n_iter=30, basis=basis)
        np.testing.assert_array_equal(R1, R2)
        np.testing.assert_array_equal(s1, s2)


@pytest.mark.parametrize("tau", [-0.3, 0.5])
def test_offset_of_either_sign_with_a_constant_column(tau):
    # L holds a column of ones (as ProjLP's phase 0 for tau <= 0): the offset
    # column -tau is then collinear with it and the offset may take either sign
    rng = np.random.default_rng(6)
    L = np.hstack([np.ones((150, 1)), rng.standard_normal((150, 4))])
    R_true = rng.standard_normal((40, 5))
    R_true[:, 0] = rng.uniform(-3, 3, 40)
    X = (L @ R_true.T >= tau).astype(np.float64)
    R, separated = separate_columns(L, X, tau=tau, n_iter=60, solver="newton")
    assert separated.all()
    assert certify_rounding(X, L, R, tau=tau)


# -- alternating separation (rows, then columns) -----------------------------------
def _counts(X, L, R, tau):
    return np.array(
        [
            0 if certify_rounding(X[:, [j]], L, R[[j]], tau=tau) else 1
            for j in range(X.shape[1])
        ]
    )


@pytest.mark.parametrize("tau", [0.5, 0.0, -1.0])
def test_alternation_is_monotone_and_its_counts_are_certified(tau):
    L0, X = _planted(120, 80, 4, tau, 5)
    rng = np.random.default_rng(0)
    start = rng.standard_normal(L0.shape)  # a start unrelated to the planted L
    steps = []
    L, R, counts, history = alternate_separation(
        start,
        X,
        tau=tau,
        n_rounds=6,
        n_iter=80,
        callback=lambda step, n: steps.append((step, n)),
    )
    # the progress callback sees every step: columns first, then rows and columns
    assert [n for step, n in steps if step == "columns"] == history
    assert [step for step, _ in steps] == ["columns"] + ["rows", "columns"] * (
        len(history) - 1
    )
    assert all(
        a >= b for a, b in zip(history[:-1], history[1:], strict=True)
    )  # never worse
    assert history[-1] == counts.sum() < history[0]  # the rows step helped
    assert L.shape == start.shape and R.shape == (80, 4)
    np.testing.assert_array_equal(counts == 0, _counts(X, L, R, tau) == 0)
    assert len(history) <= 7
    np.testing.assert_array_equal(
        start, np.random.default_rng(0).standard_normal(L0.shape)
    )


def test_alternation_stops_when_exact_and_never_modifies_its_inputs():
    L0, X = _planted(100, 60, 3, 0.5, 6)
    X_copy, L_copy = X.copy(), L0.copy()
    L, R, counts, history = alternate_separation(L0, X, n_rounds=20, n_iter=1000)
    assert history[-1] == 0 and len(history) < 21  # stopped as soon as exact
    assert not counts.any()
    assert certify_rounding(X, L, R)
    np.testing.assert_array_equal(X, X_copy)
    np.testing.assert_array_equal(L0, L_copy)
    # a warm start that separates everything is kept as it is
    Lx, Rx, cx, hx = alternate_separation(L, X, init=R, n_rounds=3)
    assert hx == [0]
    np.testing.assert_array_equal(Rx, R)
    np.testing.assert_array_equal(Lx, L)


def test_warm_start_is_never_worse_column_by_column():
    L, X = _planted(150, 50, 4, 0.5, 7)
    R_good, sep_good = separate_columns(L, X, n_iter=2000)
    assert sep_good.any()
    R, separated = separate_columns(L, X, n_iter=1, init=R_good)
    assert np.all(separated[sep_good])  # one step from a separating start keeps it
    assert certify_rounding(X[:, separated], L, R[separated])


def test_alternation_does_not_depend_on_n_jobs_and_reads_transposes():
    L0, X = _planted(90, 70, 3, 0.5, 8)
    start = L0 + 0.5 * np.random.default_rng(1).standard_normal(L0.shape)
    kw = dict(n_rounds=3, block_entries=500)  # several blocks
    a = alternate_separation(start, X, n_jobs=1, **kw)
    b = alternate_separation(start, X, n_jobs=2, **kw)
    for x, y in zip(a[:3], b[:3], strict=True):
        np.testing.assert_array_equal(x, y)
    assert a[3] == b[3]
    # the row step counts a transposed view by rows: the same as a copy
    L, R = a[0], a[1]
    np.testing.assert_array_equal(
        _column_counts(X.T, R, L, 0.5),
        _column_counts(np.ascontiguousarray(X.T), R, L, 0.5),
    )
