"""Tests of the LP engine (sklearn_rrank._projlp._lp) against scipy.optimize.linprog."""

import numpy as np
import pytest
from _family import (
    DEFAULT_EPS,
    STATUS_NAMES,
    WarmStart,
    _solve_public,
    solve_columns_feasibility,
    solve_columns_l1,
    solve_rows_l1,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from joblib import parallel_config
from scipy.optimize import linprog

from sklearn_rrank import certify_rounding


def _linprog_l1(L, x, tau, eps, nonnegative=False):
    """Optimum of the paper's L1-slack LP for one column, by scipy (primal form)."""
    obs = ~np.isnan(x)
    Lo, s = L[obs], np.where(x[obs] == 1, 1.0, -1.0)
    m, d = Lo.shape
    if m == 0:
        return 0.0
    A_ub = np.hstack([-(s[:, None] * Lo), -np.eye(m)])
    b_ub = -(s * tau + eps)
    bounds = [(0 if nonnegative else None, None)] * d + [(0, None)] * m
    res = linprog(np.r_[np.zeros(d), np.ones(m)], A_ub=A_ub, b_ub=b_ub, bounds=bounds)
    assert res.status == 0
    return res.fun


def _linprog_feasible(L, x, tau, eps):
    obs = ~np.isnan(x)
    Lo, s = L[obs], np.where(x[obs] == 1, 1.0, -1.0)
    res = linprog(
        np.zeros(L.shape[1]),
        A_ub=-(s[:, None] * Lo),
        b_ub=-(s * tau + eps),
        bounds=[(None, None)] * L.shape[1],
    )
    return res.status == 0


def _slack_sum(L, x, r, tau, eps):
    obs = ~np.isnan(x)
    Lr = L[obs] @ r
    ones = x[obs] == 1
    slack = np.where(ones, tau + eps - Lr, Lr - (tau - eps))
    return np.maximum(slack, 0).sum()


def _random_instance(rng, it):
    m, n, d = rng.integers(3, 30), rng.integers(1, 6), rng.integers(1, 6)
    L = rng.standard_normal((m, d))
    X = (rng.random((m, n)) < rng.uniform(0.1, 0.9)).astype(float)
    if it % 3 == 0:
        X[rng.random((m, n)) < 0.2] = np.nan
    if it % 4 == 0:  # repeated rows are merged into weighted rows by the engine
        L, X = np.vstack([L, L[:2]]), np.vstack([X, X[:2]])
    if it % 5 == 0:  # repeated columns are solved once
        X = np.hstack([X, X[:, :1]])
    return L, X


def test_l1_matches_linprog_on_random_instances():
    rng = np.random.default_rng(0)
    for it in range(50):
        L, X = _random_instance(rng, it)
        tau = [0.5, 0.0, -1.0, 2.0][it % 4]
        nonneg = it % 7 == 0
        R, status, objective = solve_columns_l1(L, X, tau=tau, nonnegative=nonneg)
        assert R.shape == (X.shape[1], L.shape[1])
        assert (status == "optimal").all()
        for j in range(X.shape[1]):
            ref = _linprog_l1(L, X[:, j], tau, DEFAULT_EPS, nonneg)
            assert objective[j] == pytest.approx(ref, rel=1e-6, abs=1e-7)
            # primal recovery: the returned r attains the reported objective
            value = _slack_sum(L, X[:, j], R[j], tau, DEFAULT_EPS)
            assert value == pytest.approx(objective[j], rel=1e-9, abs=1e-9)
            if nonneg:
                assert (R[j] >= 0).all()


def test_feasibility_matches_linprog_and_constraints_hold():
    rng = np.random.default_rng(1)
    n_feasible = n_infeasible = 0
    for it in range(30):
        m, d, n = rng.integers(4, 25), rng.integers(1, 5), 6
        L = rng.standard_normal((m, d))
        # half of the columns planted separable, half random
        planted = (L @ rng.standard_normal((d, n // 2)) >= 0.5).astype(float)
        X = np.hstack([planted, (rng.random((m, n // 2)) < 0.5).astype(float)])
        if it % 2:
            X[rng.random(X.shape) < 0.15] = np.nan
        R, feasible, status = solve_columns_feasibility(L, X)
        for j in range(n):
            ref = _linprog_feasible(L, X[:, j], 0.5, DEFAULT_EPS)
            assert feasible[j] == ref, (it, j, status[j])
            obs = ~np.isnan(X[:, j])
            if feasible[j]:
                pred = (L @ R[j] >= 0.5)[obs]
                np.testing.assert_array_equal(pred, X[obs, j] == 1)
        n_feasible += int(feasible.sum())
        n_infeasible += int((~feasible).sum())
        Xf = np.where(np.isnan(X), np.nan, X)[:, feasible]
        if feasible.any():
            assert certify_rounding(Xf, L, R[feasible])
    assert n_feasible > 20 and n_infeasible > 20


def test_infeasible_column_detected():
    L = np.array([[1.0], [2.0], [3.0]])
    X = np.array([[1, 0], [0, 1], [1, 1]])  # column 0 needs r >= .5 and r <= .25
    R, feasible, status = solve_columns_feasibility(L, X)
    assert feasible.tolist() == [False, True]
    assert status.tolist() == ["optimal", "optimal"]
    _, _, objective = solve_columns_l1(L, X)
    assert objective[0] > 0.1 and objective[1] < 1e-9


@pytest.mark.parametrize("backend", ["threading", "loky"])
def test_results_do_not_depend_on_n_jobs(backend):
    rng = np.random.default_rng(2)
    L = rng.standard_normal((40, 4))
    X = (rng.random((40, 12)) < 0.4).astype(float)
    X[rng.random(X.shape) < 0.1] = np.nan
    R1, s1, o1 = solve_columns_l1(L, X, n_jobs=1)
    F1 = solve_columns_feasibility(L, X, n_jobs=1)
    with parallel_config(backend=backend):
        R2, s2, o2 = solve_columns_l1(L, X, n_jobs=2)
        F2 = solve_columns_feasibility(L, X, n_jobs=2)
    np.testing.assert_array_equal(R1, R2)
    np.testing.assert_array_equal(s1, s2)
    np.testing.assert_array_equal(o1, o2)
    for a, b in zip(F1, F2, strict=True):
        np.testing.assert_array_equal(a, b)


def test_dask_backend_gives_the_serial_result():
    distributed = pytest.importorskip("dask.distributed")
    rng = np.random.default_rng(3)
    L = rng.standard_normal((30, 3))
    X = (rng.random((30, 8)) < 0.5).astype(float)
    R1, s1, o1 = solve_columns_l1(L, X, n_jobs=1)
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=False,
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster),
    ):
        with parallel_config(backend="dask"):
            R2, s2, o2 = solve_columns_l1(L, X, n_jobs=2)
    np.testing.assert_array_equal(R1, R2)
    np.testing.assert_array_equal(s1, s2)
    np.testing.assert_array_equal(o1, o2)


def test_tiny_time_limit_surfaces_bad_status():
    rng = np.random.default_rng(4)
    L = rng.standard_normal((200, 20))
    X = (rng.random((200, 10)) < 0.5).astype(float)
    R, status, objective = solve_columns_l1(L, X, time_limit=1e-9)
    assert not (status == "optimal").any()
    assert set(status.tolist()) <= {"time_limit", "not_solved"}
    # objective is the true slack sum of the returned (here: zero or partial) r
    for j in range(X.shape[1]):
        value = _slack_sum(L, X[:, j], R[j], 0.5, DEFAULT_EPS)
        assert objective[j] == pytest.approx(value)
    _, feasible, fstatus = solve_columns_feasibility(L, X, time_limit=0.0)
    assert not feasible.any() and (fstatus != "optimal").all()


def test_stop_at_first_infeasible_is_independent_of_n_jobs():
    rng = np.random.default_rng(5)
    L = rng.standard_normal((30, 2))
    X = (rng.random((30, 40)) < 0.5).astype(float)  # mostly infeasible with d = 2
    out1 = solve_columns_feasibility(L, X, stop_at_first_infeasible=True, n_jobs=1)
    out2 = solve_columns_feasibility(L, X, stop_at_first_infeasible=True, n_jobs=2)
    for a, b in zip(out1, out2, strict=True):
        np.testing.assert_array_equal(a, b)
    _, feasible, status = out1
    assert (status == "not_solved").sum() >= 40 - 8  # only the first block ran
    assert not feasible[status != "not_solved"].all()


def test_rows_are_columns_of_the_transpose():
    rng = np.random.default_rng(6)
    R = rng.standard_normal((15, 3))
    X = (rng.random((7, 15)) < 0.5).astype(float)
    L1, s1, o1 = solve_rows_l1(R, X)
    L2, s2, o2 = solve_columns_l1(R, X.T)
    np.testing.assert_array_equal(L1, L2)
    np.testing.assert_array_equal(o1, o2)
    L3, _, _ = solve_rows_l1(R, X, rows=[3, 1])
    np.testing.assert_array_equal(L3, L1[[3, 1]])


def test_missing_column_and_columns_argument():
    L = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    X = np.array([[np.nan, 1, 0], [np.nan, 0, 1], [np.nan, 1, 1]])
    R, status, objective = solve_columns_l1(L, X)
    assert status[0] == "optimal" and objective[0] == 0 and not R[0].any()
    R2, status2, _ = solve_columns_l1(L, X, columns=[2, 1])
    np.testing.assert_array_equal(R2, R[[2, 1]])
    assert status2.tolist() == ["optimal", "optimal"]


def test_status_names_are_documented():
    assert STATUS_NAMES[0] == "optimal"
    assert set(STATUS_NAMES) == {
        "optimal",
        "time_limit",
        "iteration_limit",
        "numerical_error",
        "not_solved",
        "uncertified",
    }


def test_input_validation():
    L = np.ones((3, 2))
    X = np.eye(3)
    with pytest.raises(ValueError, match="rows"):
        solve_columns_l1(np.ones((4, 2)), X)
    with pytest.raises(ValueError, match="not binary"):
        solve_columns_l1(L, X * 2)
    with pytest.raises(ValueError, match="eps"):
        solve_columns_l1(L, X, eps=-1.0)
    with pytest.raises(TypeError, match="eps"):
        solve_columns_l1(L, X, eps="small")
    with pytest.raises(ValueError, match="finite"):
        solve_columns_l1(np.full((3, 2), np.nan), X)
    with pytest.raises(ValueError, match="time_limit"):
        solve_columns_feasibility(L, X, time_limit=-1)
    with pytest.raises(ValueError, match="columns"):
        solve_columns_l1(L, X, columns=[5])
    with pytest.raises(ValueError, match="columns"):
        solve_rows_l1(np.ones((2, 2)), X)


@settings(max_examples=25, deadline=None)
@given(
    st.integers(0, 10_000),
    st.integers(2, 12),
    st.integers(1, 4),
    st.sampled_from([0.5, 0.0, 1.0]),
)
def test_property_feasible_columns_round_exactly(seed, m, d, tau):
    rng = np.random.default_rng(seed)
    L = rng.standard_normal((m, d))
    X = (rng.random((m, 4)) < 0.5).astype(float)
    R, feasible, status = solve_columns_feasibility(L, X, tau=tau)
    assert set(status.tolist()) <= set(STATUS_NAMES)
    for j in np.flatnonzero(feasible):
        np.testing.assert_array_equal(L @ R[j] >= tau, X[:, j] == 1)
    # the L1 optimum is zero exactly for the feasible columns (up to tolerance)
    _, _, objective = solve_columns_l1(L, X, tau=tau)
    assert np.all(objective[feasible] < 1e-7)


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"eps": np.inf}, ValueError),
        ({"tau": np.inf}, ValueError),
        ({"time_limit": np.nan}, ValueError),
        ({"time_limit": "1"}, TypeError),
        ({"nonnegative": "yes"}, TypeError),
        ({"n_jobs": 1.5}, TypeError),
    ],
)
@pytest.mark.parametrize(
    "door", [solve_columns_l1, solve_columns_feasibility, solve_rows_l1]
)
def test_every_door_names_the_bad_parameter(door, kwargs, exc):
    X = np.array([[0.0, 1.0], [1.0, 1.0]])
    (name,) = kwargs
    with pytest.raises(exc, match=f"'{name}' parameter of {door.__name__}"):
        door(np.ones((2, 1)), X, **kwargs)
    with pytest.raises(TypeError, match="'stop_at_first_infeasible' parameter"):
        solve_columns_feasibility(np.ones((2, 1)), X, stop_at_first_infeasible=None)


@pytest.mark.parametrize("backend", ["threading", "loky"])
def test_warm_started_lps_reach_the_cold_optima_whatever_n_jobs(backend):
    # the same LPs for a perturbed factor, each from its own basis of the first
    # round: optimal, the cold optimum, and the same whatever the chunking
    rng = np.random.default_rng(4)
    L = rng.standard_normal((40, 5))
    X = (rng.random((40, 30)) < 0.4).astype(float)
    X[rng.random(X.shape) < 0.05] = np.nan
    L, X = np.vstack([L, L[:3]]), np.vstack([X, X[:3]])  # merged rows
    cols = np.arange(X.shape[1])
    kw = dict(tau=0.5, eps=DEFAULT_EPS, nonnegative=False, feasibility=False)
    kw["deadline"] = None
    first = WarmStart(X.shape[1])
    _solve_public(L, X, cols, warm=first, n_jobs=1, **kw)
    assert (first.bases >= 0).all() and first.rows.size == 40
    L2 = L * (1 + 1e-3 * rng.standard_normal(L.shape))
    _, status, cold, _ = _solve_public(L2, X, cols, n_jobs=1, **kw)
    runs = []
    for n_jobs in (1, 2):
        warm = WarmStart(X.shape[1])
        warm.rows, warm.bases = first.rows, first.bases.copy()
        with parallel_config(backend=backend):
            runs.append(_solve_public(L2, X, cols, warm=warm, n_jobs=n_jobs, **kw))
    for a, b in zip(*runs, strict=True):
        np.testing.assert_array_equal(a, b)
    R, status, objective, _ = runs[0]
    assert (status == "optimal").all()
    np.testing.assert_allclose(objective, cold, rtol=1e-7, atol=1e-8)
    for j in range(X.shape[1]):
        assert objective[j] == pytest.approx(
            _slack_sum(L2, X[:, j], R[j], 0.5, DEFAULT_EPS), rel=1e-9, abs=1e-12
        )


def test_warm_start_restarts_cold_when_the_merged_rows_change():
    warm = WarmStart(3)
    rows = np.arange(4)
    warm.put(np.arange(3), warm.get(rows, 2, np.arange(3)) + 1)
    assert (warm.get(rows, 2, np.arange(3)) == 0).all()  # kept
    assert (warm.get(np.arange(1, 5), 2, np.arange(3)) == -1).all()  # other rows
    assert warm.get(rows, 3, np.arange(3)).shape == (3, 7)  # another width
