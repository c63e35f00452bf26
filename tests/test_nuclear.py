"""Tests for Nuclear (sklearn_rrank._upper._nuclear): ADMM nuclear-norm minimisation."""

import cvxpy as cp  # test-only dependency (the "test" extra), never skipped
import numpy as np
import pytest
import scipy.sparse as sp
from _family import nuclear_norm_minimization, run_family, truncate_rounding
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.exceptions import ConvergenceWarning

from sklearn_rrank import certify_rounding, rounding_rank_bounds


def cvxpy_optimum(X, tau, delta):
    """Reference optimum (ALGORITHMS.md, Section 6.5) with Clarabel (interior point)."""
    observed = ~np.isnan(X)
    S = np.where(observed, 2 * np.nan_to_num(X) - 1, 0.0)
    Y = cp.Variable(X.shape)
    constraints = [cp.multiply(S, Y - tau) >= delta * observed]
    problem = cp.Problem(cp.Minimize(cp.normNuc(Y)), constraints)
    problem.solve(solver=cp.CLARABEL)
    assert problem.status == cp.OPTIMAL
    return problem.value


def violation(Y, X, tau, delta):
    ones, zeros = X == 1, X == 0
    return max(
        np.max(tau + delta - Y[ones], initial=0.0),
        np.max(Y[zeros] - (tau - delta), initial=0.0),
    )


@pytest.fixture(scope="module")
def planted_30x25():
    rng = np.random.default_rng(0)
    return (rng.normal(size=(30, 2)) @ rng.normal(size=(2, 25)) >= 0.3).astype(int)


# ------------------------------------------------------------ optimum vs cvxpy


@pytest.mark.parametrize(
    "seed, tau, delta, missing",
    [
        (0, 0.5, 0.5, False),
        (1, 0.5, 0.25, False),
        (2, 1.0, 0.3, False),
        (3, 0.0, 1.0, False),
        (4, -0.5, 0.5, False),
        (5, 0.5, 0.5, True),
        (6, 0.3, 0.2, True),
    ],
)
def test_admm_optimum_matches_cvxpy(seed, tau, delta, missing):
    rng = np.random.default_rng(seed)
    X = (rng.random((10, 10)) < rng.uniform(0.2, 0.7)).astype(float)
    if missing:
        X[rng.random((10, 10)) < 0.2] = np.nan
    reference = cvxpy_optimum(X, tau, delta)
    Y, info = nuclear_norm_minimization(X, tau=tau, delta=delta)
    assert info["converged"]
    assert info["nuclear_norm"] == pytest.approx(reference, rel=1e-4)
    # the reported value is the nuclear norm of Y, and Y is nearly feasible
    assert np.linalg.svd(Y, compute_uv=False).sum() == pytest.approx(
        info["nuclear_norm"], rel=1e-9
    )
    assert violation(Y, X, tau, delta) == pytest.approx(info["max_violation"])
    assert info["max_violation"] < 1e-3 * delta


def test_missing_entries_drop_constraints():
    X = np.array([[1.0, 0.0], [0.0, np.nan]])
    Y, info = nuclear_norm_minimization(X)
    assert info["nuclear_norm"] == pytest.approx(1.0, rel=1e-4)
    res = run_family("nuclear", X)
    assert res.rank == 1 and res.certified
    assert run_family("nuclear", np.eye(2)).rank == 2


# ------------------------------------------------------------ ALGORITHMS.md 6.6


def test_planted_example_values(planted_30x25):
    Y, info = nuclear_norm_minimization(planted_30x25, tau=0.5, delta=0.5)
    assert info["converged"]
    assert info["nuclear_norm"] == pytest.approx(46.06219, abs=5e-5)
    np.testing.assert_allclose(
        info["singular_values"][:5], [12.05, 10.68, 6.89, 2.96, 2.28], atol=5e-3
    )
    assert info["max_violation"] < 1e-4


@pytest.mark.parametrize("rule", ["prefix", "greedy"])
def test_planted_example_rank_8(planted_30x25, rule):
    res = run_family("nuclear", planted_30x25, rule=rule)
    assert res.rank == 8
    assert res.certified and res.info["source"] == "admm"
    assert res.L.shape == (30, 8) and res.R.shape == (25, 8)
    assert certify_rounding(planted_30x25, res.L, res.R, tau=0.5)
    # rrank <= 2 by construction: the nuclear norm is a loose proxy for rank
    assert res.rank > 2


@pytest.mark.parametrize("n", [2, 3, 4, 6, 9])
def test_identity_gives_certified_bound_n(n):
    res = run_family("nuclear", np.eye(n))
    assert res.certified and not res.stopped_early
    assert certify_rounding(np.eye(n), res.L, res.R)
    # the optimum is I_n itself: every singular value is 1, truncated rank n
    # (although rrank(I_n) = 2 for n >= 2: the paper's caveat about Nuclear)
    np.testing.assert_allclose(res.info["singular_values"], np.ones(n), atol=1e-6)
    assert res.info["nuclear_norm"] == pytest.approx(n, rel=1e-6)
    assert res.rank == n


# ------------------------------------------------------------ random certificates


@settings(max_examples=40, deadline=None)
@given(
    X=arrays(
        np.int8,
        st.tuples(st.integers(1, 8), st.integers(1, 8)),
        elements=st.integers(0, 1),
    ),
    params=st.sampled_from([(0.5, 0.5), (0.5, 0.25), (1.0, 0.5), (-0.5, 0.5)]),
    rule=st.sampled_from(["prefix", "greedy"]),
)
def test_bounds_are_certified(X, params, rule):
    tau, delta = params
    res = run_family("nuclear", X, tau=tau, delta=delta, rule=rule)
    assert res.certified
    assert certify_rounding(X, res.L, res.R, tau=tau)
    assert res.L.shape == (X.shape[0], res.rank)
    assert 0 <= res.rank <= min(X.shape)
    # rank 0 (the zero matrix) rounds to X iff X is constant on the side of 0
    zero_works = bool((X == 0).all()) if tau > 0 else bool((X == 1).all())
    assert (res.rank == 0) == zero_works


@settings(max_examples=40, deadline=None)
@given(
    Y=arrays(
        np.float64,
        st.tuples(st.integers(1, 7), st.integers(1, 7)),
        elements=st.floats(-3, 3, allow_nan=False),
    ),
)
def test_prefix_rule_is_the_smallest_certified_prefix(Y):
    tau = 0.5
    X = (Y >= tau).astype(int)
    rank, L, R = truncate_rounding(Y, X, tau=tau, rule="prefix")
    U, s, Vt = np.linalg.svd(Y, full_matrices=False)
    first = None
    for r in range(s.shape[0] + 1):
        Lr, Rr = U[:, :r] * np.sqrt(s[:r]), Vt[:r].T * np.sqrt(s[:r])
        if certify_rounding(X, Lr, Rr, tau=tau):
            first = r
            break
    assert rank == first
    if rank is not None:
        assert certify_rounding(X, L, R, tau=tau)
    greedy_rank, Lg, Rg = truncate_rounding(Y, X, tau=tau, rule="greedy")
    if greedy_rank is not None:
        assert certify_rounding(X, Lg, Rg, tau=tau)


def test_truncation_not_monotone_is_scanned_upwards():
    # errors of the rank-r truncations r = 0..5 are 18, 6, 4, 0, 1, 0: bisection on
    # r would answer 5, the upward scan answers 3
    Y = np.random.default_rng(21).normal(size=(6, 5)) + 0.5
    X = (Y >= 0.5).astype(int)
    U, s, Vt = np.linalg.svd(Y, full_matrices=False)
    errors = [
        np.count_nonzero(((U[:, :r] * s[:r]) @ Vt[:r] >= 0.5) != X) for r in range(6)
    ]
    assert errors == [18, 6, 4, 0, 1, 0]
    rank, L, R = truncate_rounding(Y, X)
    assert rank == 3
    assert certify_rounding(X, L, R)


def test_truncate_rounding_rejects_wrong_matrix():
    X = np.eye(3)
    rank, L, R = truncate_rounding(np.zeros((3, 3)), X)
    assert rank is None and L is None and R is None
    assert truncate_rounding(np.zeros((3, 3)), X, rule="greedy") == (None, None, None)


# ------------------------------------------------------------ limits and options


def test_time_limit_and_max_iter(planted_30x25):
    res = run_family("nuclear", planted_30x25, time_limit=1e-9)
    assert res.info["n_iter"] == 1 and res.info["stopped_by_time"]
    # any certified truncation is a valid bound, never claim more
    if res.certified:
        assert certify_rounding(planted_30x25, res.L, res.R)
    else:
        assert res.rank is None and res.stopped_early and "message" in res.info
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        _, info = nuclear_norm_minimization(planted_30x25, max_iter=3)
    assert info["n_iter"] == 3 and not info["converged"]


def test_projection_fallback_when_admm_iterate_is_infeasible(planted_30x25):
    res = run_family("nuclear", planted_30x25, max_iter=1)
    assert res.certified
    assert certify_rounding(planted_30x25, res.L, res.R)
    assert res.info["source"] in ("admm", "projection")


def test_rectangular_sparse_and_input_not_modified():
    rng = np.random.default_rng(7)
    X = (rng.random((12, 5)) < 0.4).astype(float)
    X_copy = X.copy()
    dense = run_family("nuclear", X)
    sparse = run_family("nuclear", sp.csr_matrix(X))
    assert dense.rank == sparse.rank and dense.certified
    np.testing.assert_allclose(dense.L @ dense.R.T, sparse.L @ sparse.R.T, atol=1e-12)
    np.testing.assert_array_equal(X, X_copy)


def test_verbose(capsys, planted_30x25):
    run_family("nuclear", planted_30x25, verbose=2)
    out = capsys.readouterr().out
    assert "[nuclear] iter 1:" in out and "certified rank 8" in out


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"delta": 0.0}, ValueError, "delta"),
        ({"delta": -1.0}, ValueError, "delta"),
        ({"tol": 0.0}, ValueError, "tol"),
        ({"max_iter": 0}, ValueError, "max_iter"),
        ({"max_iter": 1.5}, TypeError, "max_iter"),
        ({"tau": np.nan}, ValueError, "tau"),
        ({"time_limit": -1.0}, ValueError, "time_limit"),
        ({"rule": "bisect"}, ValueError, "rule"),
    ],
)
def test_parameter_validation(kwargs, exc, match):
    # the door of a single method's search is rounding_rank_bounds
    door = {k: kwargs.pop(k) for k in ("tau", "time_limit") if k in kwargs}
    with pytest.raises(exc, match=match):
        rounding_rank_bounds(
            np.eye(3), methods=("nuclear",), method_params={"nuclear": kwargs}, **door
        )


def test_data_validation():
    with pytest.raises(ValueError, match="not binary"):
        nuclear_norm_minimization(np.eye(3) * 2)
    with pytest.raises(ValueError, match="shape"):
        truncate_rounding(np.zeros((2, 3)), np.eye(3))
    with pytest.raises(ValueError, match="finite"):
        truncate_rounding(np.full((3, 3), np.inf), np.eye(3))
    with pytest.raises(ValueError, match="rule"):
        truncate_rounding(np.eye(3), np.eye(3), rule="bisect")


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"delta": 0.0}, ValueError),
        ({"delta": np.inf}, ValueError),
        ({"tol": -1.0}, ValueError),
        ({"max_iter": 0}, ValueError),
        ({"max_iter": 1.5}, TypeError),
        ({"tau": np.nan}, ValueError),
        ({"tau": "0.5"}, TypeError),
    ],
)
def test_public_door_names_the_bad_parameter(kwargs, exc):
    # nuclear_norm_minimization declares NUCLEAR_PARAMS, as the registry does
    (name,) = kwargs
    with pytest.raises(exc, match=f"'{name}' parameter of nuclear_norm_minimization"):
        nuclear_norm_minimization(np.eye(3), **kwargs)
    if name != "tau":  # the same constraint at the bounds door
        with pytest.raises(exc, match=f"'{name}' parameter"):
            rounding_rank_bounds(
                np.eye(3), methods=("nuclear",), method_params={"nuclear": kwargs}
            )
