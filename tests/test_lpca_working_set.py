"""The working-set L-PCA fit for large sparse data (``_lpca._working_set``, ``_scan``).

Outcomes: the blocked float32 scan equals the dense computation; the objective
with the surrogate of the far zeros equals its explicit sum over all entries
(value and gradient); a planted sparse sign pattern is fitted exactly and the
factors pass ``certify_rounding``; a scan's memory does not grow with ``m n``;
large sparse data take the working-set path, small data keep the dense one.
"""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from _family import (
    _WS_BYTES_PER_PARAMETER,
    _WS_STALL_DROP,
    _WS_STALL_SCANS,
    WORKING_SET_MIN_ENTRIES,
    Deadline,
    Kernels,
    _far_zeros,
    _graph_start,
    _LPCAData,
    _scan,
    _use_working_set,
    _working_set_fit,
    _working_set_of,
    _ws_phases,
    _ws_rescue,
    _WSObjective,
    run_family,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_rrank import certify_rounding, config_context, lpca_fit


def _planted(m, n, r, density, seed):
    """A sparse sign pattern ``U V^T + b > 0`` of rank ``r`` with about ``density``
    ones."""
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((m, r))
    V = rng.standard_normal((n, r))
    theta = U @ V.T
    b = -np.quantile(theta, 1 - density)
    return sp.csr_matrix((theta + b > 0).astype(np.float64))


def test_blocked_scan_equals_dense():
    rng = np.random.default_rng(0)
    m, n, p = 37, 23, 4
    X = sp.csr_matrix((rng.random((m, n)) < 0.15).astype(np.float64))
    U, V, b = rng.standard_normal((m, p)), rng.standard_normal((n, p)), -0.7
    theta = (U.astype(np.float32) @ V.astype(np.float32).T + np.float32(b)).astype(
        np.float64
    )
    ones = X.toarray() > 0
    delta, level = 0.05, -1.0
    for n_jobs in (1, 2):
        found = _scan(
            U,
            V,
            b,
            X,
            level=level,
            cap=10**6,
            delta=delta,
            n_jobs=n_jobs,
            block_entries=3 * n,
        )
        wrong = np.where(ones, theta < 0, theta >= 0)
        unsafe = np.where(ones, theta <= delta, theta >= -delta)
        assert found.n_wrong == wrong.sum()
        assert found.n_unsafe == unsafe.sum()
        r, c = np.nonzero(~ones & (theta > level))
        np.testing.assert_array_equal(found.rows, r)
        np.testing.assert_array_equal(found.cols, c)
        far = ~ones & ~(theta > level)
        assert found.n_far == far.sum()
        assert found.far_sum == pytest.approx(theta[far].sum(), rel=1e-4, abs=1e-3)


@given(seed=st.integers(0, 2**16), limit=st.sampled_from([np.inf, 0, 5, 40]))
@settings(max_examples=30, deadline=None)
def test_working_set_keeps_the_candidates_and_the_last_zeros(seed, limit):
    # W after a scan: all ones, the scan's candidates and the last W's zeros (the
    # largest logits first when they are more than the limit), row-major sorted
    rng = np.random.default_rng(seed)
    m, n, p = 13, 11, 3
    X = sp.csr_matrix((rng.random((m, n)) < 0.2).astype(np.float64))
    data = _LPCAData(X, dtype=np.float32)
    U, V = rng.standard_normal((m, p)), rng.standard_normal((n, p))
    first = _scan(U, V, -0.5, X, level=0.5, cap=10**6, delta=0.0)
    previous = _working_set_of(data, first)[3]
    U2 = U + 0.5 * rng.standard_normal((m, p))
    found = _scan(U2, V, -0.5, X, level=0.5, cap=10**6, delta=0.0)
    rows, cols, q, zeros, n_new = _working_set_of(
        data, found, previous, limit, (U2, V, -0.5)
    )
    candidates = found.rows * n + found.cols
    old = np.setdiff1d(previous, candidates)
    room = old.size if np.isinf(limit) else max(int(limit) - candidates.size, 0)
    theta = (U2 @ V.T - 0.5).ravel()
    kept = old[np.argsort(-theta[old], kind="stable")[: min(room, old.size)]]
    np.testing.assert_array_equal(zeros, np.union1d(candidates, kept))
    assert n_new == np.setdiff1d(candidates, previous).size
    flat = rows * n + cols
    np.testing.assert_array_equal(
        flat, np.union1d(X.nonzero()[0] * n + X.nonzero()[1], zeros)
    )
    np.testing.assert_array_equal(q, np.where(X.toarray().ravel()[flat] > 0, 1.0, -1.0))


def test_scan_cap_keeps_the_largest_logits():
    rng = np.random.default_rng(1)
    m, n, p = 40, 50, 3
    X = sp.csr_matrix((m, n))
    U, V = rng.standard_normal((m, p)), rng.standard_normal((n, p))
    found = _scan(U, V, 0.0, X, level=-10.0, cap=m * 5, delta=0.0)
    assert 0 < found.rows.size <= m * 5
    theta = U @ V.T
    # every kept logit is among the largest of its row block's share
    kept = theta[found.rows, found.cols]
    assert kept.min() >= np.quantile(theta, 0.5)


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_aggregate_objective_equals_explicit_sum(loss):
    # the oracle forms all m n logits; the objective sees W and Gram matrices only
    rng = np.random.default_rng(2)
    m, n, p, alpha = 30, 20, 3, 0.01
    X = rng.random((m, n)) < 0.1
    W = X | (rng.random((m, n)) < 0.2)
    rows, cols = np.nonzero(W)
    q = np.where(X[rows, cols], 1.0, -1.0)
    obj = _WSObjective(rows, cols, q, (m, n), p, True, alpha, loss)
    z = rng.standard_normal((m + n) * p + 1)
    z[-1] = -1.3

    def oracle(z):
        U = z[: m * p].reshape(m, p)
        V = z[m * p : (m + n) * p].reshape(n, p)
        theta = U @ V.T + z[-1]
        Q = np.where(X, 1.0, -1.0)
        if loss == "logistic":
            exact = np.log1p(np.exp(-Q * theta))
            far = theta[~W]
            mu, var = far.mean(), far.var()
            sig = 1.0 / (1.0 + np.exp(-mu))
            aggregate = far.size * (np.log1p(np.exp(mu)) + 0.5 * sig * (1 - sig) * var)
        else:
            exact = np.maximum(0.0, 1.0 - Q * theta) ** 2
            aggregate = 0.0
        return exact[W].sum() + aggregate + 0.5 * alpha * z @ z

    value, grad = obj(z)
    # the logits on W come from float32 copies of the factors
    assert value == pytest.approx(oracle(z), rel=1e-6)
    eps = 1e-6
    numeric = np.array(
        [
            (oracle(z + eps * e) - oracle(z - eps * e)) / (2 * eps)
            for e in np.eye(z.size)
        ]
    )
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-5)


def test_far_zeros_aggregate_is_exact_for_equal_logits():
    t = np.full(1000, -4.0)
    value, c1, c2 = _far_zeros(t.size, t.sum(), t @ t)
    assert value == pytest.approx(np.log1p(np.exp(t)).sum(), rel=1e-12)
    assert c1 + c2 * t[0] == pytest.approx(1.0 / (1.0 + np.exp(4.0)), rel=1e-12)
    # a small spread: the second-order expansion stays within its third-order term
    t = -4.0 + 0.1 * np.random.default_rng(0).standard_normal(1000)
    value, _, _ = _far_zeros(t.size, t.sum(), t @ t)
    assert value == pytest.approx(np.log1p(np.exp(t)).sum(), rel=1e-5)


def test_planted_pattern_is_fitted_exactly_and_certified():
    X = _planted(150, 120, 3, 0.05, seed=3)
    L, R, info = _working_set_fit(X, 3, deadline=Deadline(60), random_state=0)
    assert info["exact"]
    assert certify_rounding(X, L, R)
    assert L.shape == (150, 3) and R.shape == (120, 3)
    assert info["working_set"][0]["w_size"] >= X.nnz


def test_a_fit_going_on_in_the_margin_phase_runs_no_logistic_scan():
    # the search's go-on from a margin state: the margin phase (and the LPs) only
    X = _planted(150, 120, 3, 0.05, seed=3)
    data = _LPCAData(X, dtype=np.float32)
    rng = np.random.default_rng(0)
    state = (rng.standard_normal((150, 3)), rng.standard_normal((120, 3)), -1.0)
    L, R, _, info = _ws_phases(
        data, X, state, tau=0.5, alpha=1e-3, deadline=Deadline(60), logistic=False
    )
    assert info["working_set"]
    assert {row["phase"] for row in info["working_set"]} == {"margin"}
    assert info["logistic_status"] == "skipped" and info["phase"] == "margin"
    assert info["exact"] and certify_rounding(X, L, R)


def test_each_phase_of_a_far_fit_ends_once_its_wrong_entries_stop_falling():
    # rank 1 for a planted rank-3 pattern, no time limit: each phase ends by its
    # stall rule, at most _WS_STALL_SCANS scans after its count last fell by a
    # quarter (the margin phase's reference is the count after its first run)
    X = _planted(150, 120, 3, 0.05, seed=3)
    _, _, info = _working_set_fit(X, 1, deadline=Deadline(None), random_state=0)
    assert not info["exact"]
    for phase, first in (("logistic", 0), ("margin", 1)):
        counts = [r["n_wrong"] for r in info["working_set"] if r["phase"] == phase]
        assert len(counts) > first
        ref, since = counts[first], first
        for i, n_wrong in enumerate(counts[first + 1 :], first + 1):
            if n_wrong < (1 - _WS_STALL_DROP) * ref:
                ref, since = n_wrong, i
        assert len(counts) - 1 - since <= _WS_STALL_SCANS


def test_a_far_fit_skips_the_lp_rescue_and_a_near_one_gets_it():
    # rank 1 for a planted rank-3 pattern stays far: its LPs would fix few of
    # its wrong entries and spend the time left
    X = _planted(150, 120, 3, 0.05, seed=3)
    _, _, far = _working_set_fit(
        X, 1, deadline=Deadline(30), random_state=0, rescue_limit=30
    )
    assert not far["exact"] and far["n_wrong"] > 30
    assert far["rescue"] is None
    _, _, ran = _working_set_fit(X, 1, deadline=Deadline(30), random_state=0)
    assert ran["rescue"] is not None


def test_scan_memory_does_not_grow_with_the_entries():
    # 6e7 entries: one float32 copy of the logits would be 240 MB
    m = n = 7746
    X = sp.csr_matrix(
        (np.ones(m), (np.arange(m), np.arange(m))), shape=(m, n), dtype=np.float64
    )
    rng = np.random.default_rng(4)
    U, V = rng.standard_normal((m, 2)), rng.standard_normal((n, 2))
    tracemalloc.start()
    found = _scan(U, V, -3.0, X, level=-1.0, cap=10_000, delta=0.0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert found.rows.size <= 10_000 + 2 * m
    assert peak < 80e6


def test_large_sparse_data_take_the_working_set_path_when_asked():
    m = n = int(np.sqrt(WORKING_SET_MIN_ENTRIES)) + 1
    big = sp.csr_matrix(
        (np.ones(m), (np.arange(m), np.arange(m))), shape=(m, n), dtype=np.float64
    )
    assert not _use_working_set(_LPCAData(big), np.asarray(-4.0))  # off by default
    data = _LPCAData(big, working_set=True)
    assert _use_working_set(data, np.asarray(-4.0))
    assert _use_working_set(data, None)
    assert not _use_working_set(data, np.zeros(n))  # the column bias: dense
    small = sp.csr_matrix(big[:100, :100])
    assert not _use_working_set(_LPCAData(small, working_set=True), np.asarray(-4.0))
    dense = small.toarray()
    assert not _use_working_set(_LPCAData(dense, working_set=True), np.asarray(-4.0))


def test_small_sparse_fit_keeps_the_dense_solver():
    X = _planted(60, 50, 2, 0.1, seed=5)
    res = lpca_fit(X, 2, fit_bias="global", random_state=0)
    assert res.info["solver_used"] != "working_set"


def test_a_scan_the_deadline_cuts_counts_nothing_and_the_fit_keeps_its_budget():
    rng = np.random.default_rng(2)
    m, n, p = 40, 50, 3
    X = sp.csr_matrix((rng.random((m, n)) < 0.1).astype(float))
    U, V = rng.standard_normal((m, p)), rng.standard_normal((n, p))
    args = dict(level=-1.0, cap=100, delta=0.0, block_entries=n)
    assert _scan(U, V, 0.0, X, deadline=Deadline(0.0), **args) is None
    assert _scan(U, V, 0.0, X, deadline=Deadline(), **args)
    # a fit whose deadline has passed returns its start, uncounted: no scan says
    # how many entries it rounds wrong, so it claims neither exact nor a count
    L, R, info = _working_set_fit(X, 2, deadline=Deadline(0.0), random_state=0)
    assert L.shape == (m, 2)
    assert info["n_wrong"] is None and not info["exact"]


def _near_fit(seed, rows):
    """A planted sparse pattern, its exact factors and a copy with ``rows`` of ``L``
    moved so that a few entries fail."""
    rng = np.random.default_rng(seed)
    m, n, k = 400, 300, 4
    U, V = rng.standard_normal((m, k)), rng.standard_normal((n, k))
    theta = U @ V.T
    t = np.quantile(theta, 0.97)
    X = sp.csr_matrix((theta > t).astype(np.float64))
    c = np.sqrt(0.5 / t)
    L, R = U * c, V * c
    L_near = L.copy()
    L_near[rows] += 0.3 * rng.standard_normal((len(rows), k))
    return X, L, R, L_near


def test_working_set_rescue_repairs_a_near_fit_and_certifies():
    X, L, R, L_near = _near_fit(0, [3, 50, 200])
    assert certify_rounding(X, L, R)
    ok, failed = certify_rounding(X, L_near, R, return_count=True)
    assert not ok and 0 < failed < 100
    L_near_copy, R_copy = L_near.copy(), R.copy()
    L2, R2, info = _ws_rescue(X, L_near, R, tau=0.5, deadline=Deadline(60))
    assert certify_rounding(X, L2, R2)
    assert info["certified"] and info["uncertified_after"] == 0
    assert info["uncertified_before"] == failed
    # the inputs are not modified
    np.testing.assert_array_equal(L_near, L_near_copy)
    np.testing.assert_array_equal(R, R_copy)


def test_working_set_rescue_counts_are_the_certificates_and_never_grow():
    rng = np.random.default_rng(5)
    X, L, R, _ = _near_fit(1, [])
    L_near = L + 0.03 * rng.standard_normal(L.shape)
    _, failed = certify_rounding(X, L_near, R, return_count=True)
    results = [
        _ws_rescue(X, L_near, R, tau=0.5, deadline=Deadline(60), n_jobs=n_jobs)
        for n_jobs in (1, 2)
    ]
    (L2, R2, info), (L3, R3, _) = results
    _, after = certify_rounding(X, L2, R2, return_count=True)
    assert info["uncertified_before"] == failed
    assert info["uncertified_after"] == after <= failed // 10
    # the lines are independent: the result does not depend on n_jobs
    np.testing.assert_array_equal(L2, L3)
    np.testing.assert_array_equal(R2, R3)


def _symmetric_planted(n, r, density, seed):
    rng = np.random.default_rng(seed)
    Q = rng.standard_normal((n, r))
    signs = np.where(np.arange(r) % 2 == 0, 1.0, -1.0)
    theta = (Q * signs) @ Q.T
    A = theta > np.quantile(theta, 1 - density)
    np.fill_diagonal(A, False)
    return sp.csr_matrix(A.astype(np.float64))


def test_graph_start_takes_eigenpairs_at_both_ends_of_the_spectrum():
    X = _symmetric_planted(120, 4, 0.05, seed=2)
    k, tau = 6, 0.5
    U, V, mu = _graph_start(X, k, tau, random_state=0)
    lam, Q = np.linalg.eigh(X.toarray())
    ends = np.r_[np.arange(k // 2), np.arange(lam.size - (k - k // 2), lam.size)]
    expected = 4.0 * (Q[:, ends] * lam[ends]) @ Q[:, ends].T
    # eigsh runs at a start's tolerance, not to machine precision
    np.testing.assert_allclose(U @ V.T, expected, atol=1e-3 * np.abs(expected).max())
    assert float(mu) == pytest.approx(-4.0 * tau)


def test_graph_start_fit_of_a_symmetric_pattern_is_certified():
    X = _symmetric_planted(150, 4, 0.05, seed=4)
    L, R, info = _working_set_fit(
        X, 6, deadline=Deadline(60), random_state=0, start="graph"
    )
    assert info["exact"]
    assert certify_rounding(X, L, R)


def test_working_set_rescue_the_deadline_cuts_returns_the_factors_uncounted():
    X, _, R, L_near = _near_fit(0, [3])
    L2, R2, info = _ws_rescue(X, L_near, R, tau=0.5, deadline=Deadline(0.0))
    np.testing.assert_array_equal(L2, L_near)
    np.testing.assert_array_equal(R2, R)
    assert info["uncertified_after"] is None and not info["certified"]


@pytest.mark.parametrize("density, seed", [(0.0028, 2), (0.003, 7)])
def test_rank_search_on_the_working_set_certifies_a_planted_graph(density, seed):
    # the search's fits on large sparse data run the working set's phases and
    # LPs (a seam lowers the size rule to this small graph): the certificate
    # re-checks, the fits say they ran on W, and no logistic model is claimed
    # for factors that the hinge or the LPs made; at seed 7 the fit at k = 3
    # fails by its stall rules and the search (no time limit) moves on
    X = _planted(400, 400, 3, density, seed)
    private = {"kernels": Kernels(working_set_entries=X.shape[0] * X.shape[1])}
    res = run_family(
        "lpca", X, random_state=0, working_set=True, polish=False, private=private
    )
    assert res.certified and res.rank is not None and res.rank <= 8
    assert certify_rounding(X, res.L, res.R)
    info = res.info
    assert set(info["solver_by_k"].values()) == {"working_set"}
    if info["status_by_k"][res.rank] != "exact":
        assert info["model"] is None
    else:  # the logistic phase's penalty
        assert info["model"].alpha == 1e-3


def test_rank_search_on_the_working_set_tries_no_rank_past_its_memory():
    # a fit's solver state grows with (m + n) k: with room for two latent factors
    # the search of a rank-3 pattern tries no rank above 2, finds no
    # certificate and says why (no time limit: the cap, not the clock, ends it)
    X = _planted(400, 400, 3, 0.003, 7)
    private = {"kernels": Kernels(working_set_entries=X.shape[0] * X.shape[1])}
    limit = 2 * (2 * _WS_BYTES_PER_PARAMETER * (400 + 400) + 1)
    with config_context(memory_limit=limit):
        res = run_family(
            "lpca", X, random_state=0, working_set=True, polish=False, private=private
        )
    info = res.info
    assert res.rank is None and not res.certified
    assert info["tried"] and max(info["tried"]) <= 2
    assert "fits in memory" in info["message"]
