"""Tests of logistic PCA (``sklearn_rrank._lpca._fit``)."""

import numpy as np
import pytest
import scipy.sparse as sp
from _family import (
    Deadline,
    FitLoop,
    Kernels,
    LPCAOptions,
    _lpca_fit,
    _lpca_refine,
    check_binary_matrix,
    lpca_fit,
    lpca_transform,
    modules,
    run_family,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_rrank import certify_rounding, round_matrix, rounding_rank_bounds

_lpca_init = modules.lpca_init
_lpca_lbfgs = modules.lpca_lbfgs
_lpca_model = modules.lpca_model
_lpca_newton = modules.lpca_newton
_lpca_search = modules.lpca_search

MODELS = [True, False, "global"]
# many chunks of rows on small data (Gram chunks the same): the threaded paths run
SMALL_BLOCKS = Kernels(chunk_entries=64, gram_rows=1)


def _random_binary(rng, m, n, density=0.4, missing=0.0):
    X = (rng.random((m, n)) < density).astype(float)
    if missing:
        X[rng.random((m, n)) < missing] = np.nan
    return X


def _planted(seed, m=300, n=200, k=6):
    """The paper's generator: L, R uniform on [q - 1/2, q + 1/2], q = sqrt(0.5/k)."""
    rng = np.random.default_rng(seed)
    q = np.sqrt(0.5 / k)
    L = rng.uniform(q - 0.5, q + 0.5, (m, k))
    R = rng.uniform(q - 0.5, q + 0.5, (n, k))
    return (L @ R.T >= 0.5).astype(np.uint8)


# ---------------------------------------------------------------------------------
# elementwise kernels and gradients (finite differences)
# ---------------------------------------------------------------------------------


def test_entry_derivatives_finite_difference(rng):
    theta = rng.normal(scale=5, size=2000)
    q = rng.choice([-1.0, 1.0], size=theta.size)
    g, h = _lpca_model._grad_hess_terms(theta, q)
    eps = 1e-6
    fd_g = (
        _lpca_model._loss_terms(theta + eps, q)
        - _lpca_model._loss_terms(theta - eps, q)
    ) / (2 * eps)
    assert_allclose(g, fd_g, atol=1e-7)
    g_plus, _ = _lpca_model._grad_hess_terms(theta + eps, q)
    g_minus, _ = _lpca_model._grad_hess_terms(theta - eps, q)
    assert_allclose(h, (g_plus - g_minus) / (2 * eps), atol=1e-7)


def test_log1p_unit_float32_is_accurate_and_float64_is_numpy(rng):
    # float32 by log(u) e / (u - 1), u = fl(1 + e): a few ulp of log1p for e above
    # half an ulp of 1, 0 below (its true value is under 6e-8); float64 is np.log1p
    e = np.exp(-np.abs(rng.normal(scale=8, size=4000)))
    e[:4] = [0.0, 1.0, 1e-9, 2.0**-23]
    got = _lpca_model._log1p_unit(e.astype(np.float32))
    assert got.dtype == np.float32
    ref = np.log1p(e.astype(np.float32).astype(np.float64))
    assert_allclose(got, ref, rtol=4e-7, atol=6e-8)
    tiny = e.astype(np.float32) <= 2.0**-24
    assert tiny.sum() >= 2 and np.all(got[tiny] == 0.0)
    assert_allclose(got[~tiny], ref[~tiny], rtol=4e-7)
    # the losses of wrong ones, -theta + log1p(exp(theta)), theta = log(e) < 0
    theta = np.log(e[1:]).astype(np.float32)
    assert_allclose(
        _lpca_model._loss_terms(theta, np.ones_like(theta)),
        np.logaddexp(0.0, -theta.astype(np.float64)),
        rtol=4e-7,
        atol=6e-8,
    )
    x = e.copy()
    assert np.array_equal(_lpca_model._log1p_unit(x), np.log1p(e)) and x is not e


def test_loss_terms_match_logaddexp_for_large_logits():
    theta = np.array([-800.0, -40.0, -1.0, 0.0, 1.0, 40.0, 800.0])
    for q in (-1.0, 1.0):
        expected = np.logaddexp(0.0, -q * theta)
        # the clipped exponent leaves at most exp(-700) ~ 1e-304 absolute error
        assert_allclose(
            _lpca_model._loss_terms(theta, np.full(7, q)),
            expected,
            rtol=1e-12,
            atol=1e-300,
        )


@given(z=st.floats(-50, 50), xi=st.floats(-50, 50))
@settings(max_examples=100)
def test_jaakkola_jordan_bound(z, xi):
    # log sigmoid(z) >= log sigmoid(xi) + (z - xi)/2 - T(xi)/4 (z^2 - xi^2)
    T = _lpca_model._mm_weights(np.array([xi]))[0]
    log_sig = -np.logaddexp(0.0, -z)
    bound = -np.logaddexp(0.0, -xi) + (z - xi) / 2 - T / 4 * (z * z - xi * xi)
    assert log_sig >= bound - 1e-9 * (1 + abs(bound))


# the three paths of _joint_task: missing entries (weights), dense signs, and few
# ones (at most _SPARSE_ONES of the entries) as corrections
PATHS = [(0.2, 0.4), (0.0, 0.4), (0.0, 0.05)]


@pytest.mark.parametrize("missing, density", PATHS)
@pytest.mark.parametrize("kind", ["column", "none", "global"])
def test_joint_gradient_finite_difference(rng, kind, missing, density):
    m, n, p = 9, 7, 3
    X = _random_binary(rng, m, n, density=density, missing=missing)
    X[0, 0] = 1.0  # at least one one
    data = _lpca_model._Data(X)
    size = (m + n) * p + {"column": n, "none": 0, "global": 1}[kind]
    z = rng.normal(size=size)
    f, grad = _lpca_lbfgs._joint_objective(z, data, p, kind, alpha=0.3)
    eps = 1e-6
    for _ in range(10):
        d = rng.normal(size=size)
        fp, _ = _lpca_lbfgs._joint_objective(z + eps * d, data, p, kind, alpha=0.3)
        fm, _ = _lpca_lbfgs._joint_objective(z - eps * d, data, p, kind, alpha=0.3)
        assert_allclose((fp - fm) / (2 * eps), grad @ d, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("missing, density", PATHS)
@pytest.mark.parametrize("kind", ["column", "none", "global"])
def test_joint_objective_counts_match_evaluate(rng, kind, missing, density):
    m, n, p = 30, 20, 3
    X = _random_binary(rng, m, n, density=density, missing=missing)
    assert (_lpca_model._Data(X).ones is not None) == (not missing and density < 0.1)
    data = _lpca_model._Data(X)
    size = (m + n) * p + {"column": n, "none": 0, "global": 1}[kind]
    z = rng.normal(size=size)
    counts = {}
    f, _ = _lpca_lbfgs._joint_objective(z, data, p, kind, 0.3, None, 0.5, counts)
    U, V, mu = _lpca_lbfgs._unpack(z, m, n, p, kind)
    losses, n_wrong, n_unsafe = _lpca_model._evaluate(None, U, V, mu, data, 0.5)
    assert counts["unsafe"] == n_unsafe and "wrong" not in counts
    # the start of an L-BFGS fit also counts the wrong entries (the count of a
    # fit the deadline cuts before its first iteration): the same logits
    args = (None, 0.5, counts, None, True)
    assert_allclose(_lpca_lbfgs._joint_objective(z, data, p, kind, 0.3, *args)[0], f)
    assert counts["wrong"] == n_wrong and counts["unsafe"] == n_unsafe
    assert_allclose(f, _lpca_model._objective(losses, U, V, mu, 0.3))
    # float32 mode: the same objective up to float32 rounding
    data32 = _lpca_model._Data(X, dtype=np.float32)
    f32, g32 = _lpca_lbfgs._joint_objective(z, data32, p, kind, 0.3)
    assert g32.dtype == np.float64
    assert_allclose(f32, f, rtol=1e-5)


def test_joint_objective_ones_as_corrections_match_weighted_path(rng):
    # without missing entries the ones are gathered/scattered corrections to sums
    # over all entries; unit weights force the path that reads the signs q
    m, n, p = 40, 25, 3
    X = _random_binary(rng, m, n, density=0.05)
    size = (m + n) * p + n
    z = rng.normal(size=size)
    for dtype, rtol in [(np.float64, 1e-12), (np.float32, 1e-5)]:
        data = _lpca_model._Data(X, dtype=dtype)
        assert data.ones is not None
        weighted = data.reweighted(np.empty(0, dtype=np.int64), np.empty(0))
        counts, counts_w = {}, {}
        f, g = _lpca_lbfgs._joint_objective(
            z, data, p, "column", 0.3, None, 0.5, counts
        )
        fw, gw = _lpca_lbfgs._joint_objective(
            z, weighted, p, "column", 0.3, None, 0.5, counts_w
        )
        assert counts["unsafe"] == counts_w["unsafe"]
        assert_allclose(f, fw, rtol=rtol)
        assert_allclose(g, gw, rtol=rtol, atol=rtol * np.abs(g).max())


def test_newton_step_uses_exact_gradient_and_hessian(rng):
    # one undamped Newton step on a strictly convex row problem equals the minimiser
    # of its quadratic model; check gradient and Hessian of the row objective by
    # finite differences of the objective itself
    n, p, alpha = 30, 3, 0.5
    F = rng.normal(size=(n, p))
    q = rng.choice([-1.0, 1.0], size=(1, n))
    P = rng.normal(size=(1, p))

    def objective(u):
        return _lpca_model._loss_terms(F @ u, q[0]).sum() + 0.5 * alpha * u @ u

    theta = P @ F.T
    g, h = _lpca_model._grad_hess_terms(theta, q)
    grad = (g @ F + alpha * P)[0]
    H = _lpca_model._gram_batched(h, F, _lpca_model._pair_index(p))[0] + alpha * np.eye(
        p
    )
    eps = 1e-5
    E = np.eye(p)
    fd_grad = [
        (objective(P[0] + eps * e) - objective(P[0] - eps * e)) / (2 * eps) for e in E
    ]
    assert_allclose(grad, fd_grad, rtol=1e-6, atol=1e-8)
    fd_hess = np.array(
        [
            [
                (
                    objective(P[0] + eps * (a + b))
                    - objective(P[0] + eps * (a - b))
                    - objective(P[0] - eps * (a - b))
                    + objective(P[0] - eps * (a + b))
                )
                / (4 * eps * eps)
                for b in E
            ]
            for a in E
        ]
    )
    assert_allclose(H, fd_hess, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------------
# monotonicity
# ---------------------------------------------------------------------------------


@given(
    seed=st.integers(0, 2**31 - 1),
    m=st.integers(3, 25),
    n=st.integers(3, 25),
    k=st.integers(1, 4),
    model=st.sampled_from(MODELS),
    missing=st.sampled_from([0.0, 0.2]),
)
@settings(max_examples=25, deadline=None)
@pytest.mark.parametrize("solver", ["newton", "mm"])
def test_objective_never_increases(solver, seed, m, n, k, model, missing):
    rng = np.random.default_rng(seed)
    X = _random_binary(rng, m, n, density=rng.uniform(0.1, 0.9), missing=missing)
    res = lpca_fit(
        X, k, fit_bias=model, solver=solver, max_iter=40, tol=0, random_state=seed
    )
    loss = np.asarray(res.info["loss"])
    assert np.all(np.isfinite(loss))
    increase = np.diff(loss)
    assert np.all(increase <= 1e-10 * np.abs(loss[1:]) + 1e-12), increase.max()


def test_mm_slower_but_same_kind_of_optimum(rng):
    X = _random_binary(rng, 30, 20)
    newton = lpca_fit(X, 3, solver="newton", max_iter=500, tol=1e-10, random_state=0)
    mm = lpca_fit(X, 3, solver="mm", max_iter=40, tol=0, random_state=0)
    # both start from the same point and decrease; Newton ends lower
    assert newton.info["loss"][0] == pytest.approx(mm.info["loss"][0])
    assert newton.info["loss"][-1] <= mm.info["loss"][-1] + 1e-9


def test_solvers_agree_on_a_convex_problem(rng):
    # k = 1 with the bias is "bias only": a convex problem with a unique minimiser
    X = _random_binary(rng, 25, 18, missing=0.1)
    fits = [
        lpca_fit(X, 1, solver=s, alpha=0.1, max_iter=2000, tol=1e-13)
        for s in ("newton", "lbfgs", "mm")
    ]
    for other in fits[1:]:
        assert other.info["loss"][-1] == pytest.approx(
            fits[0].info["loss"][-1], rel=1e-7
        )
        assert_allclose(other.R, fits[0].R, atol=1e-4)


def test_lbfgs_decreases_from_the_same_start(rng):
    X = _random_binary(rng, 25, 18)
    a = lpca_fit(X, 3, solver="newton", max_iter=50, random_state=0)
    b = lpca_fit(X, 3, solver="lbfgs", max_iter=200, random_state=0)
    assert a.info["loss"][0] == pytest.approx(b.info["loss"][0])
    assert b.info["loss"][-1] < 0.8 * b.info["loss"][0]
    assert b.info["loss"][-1] == pytest.approx(a.info["loss"][-1], rel=0.05)


def test_lbfgs_runs_the_global_offset_scaled_to_its_curvature(rng):
    # a tall planted matrix: the offset's curvature (m n) is far above the
    # factors'; L-BFGS runs it scaled (a change of variables only: the start has
    # the objective the Newton fit sees, the fit is exact, its offset keeps its bound)
    m, n = 2000, 40
    L, R = rng.uniform(-0.5, 0.5, (m, 3)), rng.uniform(-0.5, 0.5, (n, 3))
    P = L @ R.T
    X = (P >= np.quantile(P, 0.97)).astype(float)
    U, V, _ = _lpca_init._svd_init(_lpca_model._Data(X), 6, "global", 0, 0.5)
    scale = _lpca_lbfgs._offset_scale(U, V, m, n)
    typical = (np.sum(U**2) + np.sum(V**2)) / 12
    assert scale == pytest.approx(np.sqrt(max(typical, 1.0) / (m * n)))
    assert scale < 0.1
    kwargs = dict(fit_bias="global", alpha=1e-4, random_state=0)
    fit = lpca_fit(X, 6, solver="lbfgs", stop_when_exact=True, max_iter=3000, **kwargs)
    newton = lpca_fit(X, 6, solver="newton", max_iter=1, **kwargs)
    assert fit.info["loss"][0] == pytest.approx(newton.info["loss"][0])
    assert fit.info["status"] == "exact" and fit.info["offset"] <= -1e-3
    assert certify_rounding(X, fit.L, fit.R, tau=0.5)


# ---------------------------------------------------------------------------------
# missing entries
# ---------------------------------------------------------------------------------


def test_masked_entry_values_do_not_change_a_newton_step(rng):
    X = _random_binary(rng, 20, 15, missing=0.3)
    data = _lpca_model._Data(X)
    # the same data with arbitrary +-1 values at the masked entries
    other = _lpca_model._Data(X)
    mask = np.isnan(X)
    other.q = other.q.copy()
    other.q[mask] = rng.choice([-1.0, 1.0], size=mask.sum())
    other.qt = np.ascontiguousarray(other.q.T)
    U, V, mu = _lpca_init._svd_init(data, 3, "column", 0)
    loss, _, _ = _lpca_model._evaluate(None, U, V, mu, data, 0.5)
    loss_other, _, _ = _lpca_model._evaluate(None, U, V, mu, other, 0.5)
    assert_array_equal(loss, loss_other)
    new = _lpca_newton._newton_block(None, U, V, mu, data, False, 1e-3, None, loss)
    new_other = _lpca_newton._newton_block(
        None, U, V, mu, other, False, 1e-3, None, loss
    )
    for a, b in zip(new[:3], new_other[:3], strict=True):
        assert_array_equal(a, b)
    P, F, off = _lpca_model._with_bias(U, V, mu)
    col_loss, _, _ = _lpca_model._evaluate(None, U, V, mu, data, 0.5, transpose=True)
    new = _lpca_newton._newton_block(None, P, F, off, data, True, 1e-3, None, col_loss)
    new_other = _lpca_newton._newton_block(
        None, P, F, off, other, True, 1e-3, None, col_loss
    )
    for a, b in zip(new[:3], new_other[:3], strict=True):
        assert_array_equal(a, b)


@pytest.mark.parametrize("model", MODELS)
def test_missing_row_is_like_a_deleted_row(rng, model):
    X = _random_binary(rng, 30, 20, density=0.3)
    X_missing = X.copy()
    X_missing[7] = np.nan
    X_deleted = np.delete(X, 7, axis=0)
    kw = dict(fit_bias=model, max_iter=60, tol=0, random_state=0)
    a = lpca_fit(X_missing, 3, **kw)
    b = lpca_fit(X_deleted, 3, **kw)
    assert_allclose(a.R, b.R, rtol=1e-6, atol=1e-8)
    assert_allclose(np.delete(a.L, 7, axis=0), b.L, rtol=1e-6, atol=1e-8)
    assert a.info["loss"][-1] == pytest.approx(b.info["loss"][-1], rel=1e-9)


def test_missing_entries_are_not_counted_as_errors(rng):
    X = _random_binary(rng, 25, 20, missing=0.25)
    res = lpca_fit(X, 4, random_state=0)
    observed = ~np.isnan(X)
    B = round_matrix(res.L @ res.R.T)
    assert res.info["n_errors"] == int(np.count_nonzero((B != X) & observed))


# ---------------------------------------------------------------------------------
# honest rank: factor shapes and rounding at tau
# ---------------------------------------------------------------------------------


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("tau", [0.5, 2.0, -0.7, 0.0])
@pytest.mark.parametrize("solver", ["newton", "lbfgs", "mm"])
def test_factors_round_like_the_logits(rng, model, tau, solver):
    if model == "global" and tau == 0:
        with pytest.raises(ValueError, match="tau != 0"):
            lpca_fit(np.eye(3), 2, fit_bias=model, tau=tau)
        return
    X = _random_binary(rng, 15, 12)
    k = 3
    res = lpca_fit(X, k, tau=tau, fit_bias=model, solver=solver, max_iter=30)
    assert res.L.shape == (15, k) and res.R.shape == (12, k)
    # the fit does not depend on tau (for the global model: only on its sign), so
    # a fit at a reference threshold rounds the same logits
    ref_tau = -0.5 if (model == "global" and tau < 0) else 0.5
    ref = lpca_fit(X, k, tau=ref_tau, fit_bias=model, solver=solver, max_iter=30)
    assert_array_equal(
        round_matrix(res.L @ res.R.T, tau), round_matrix(ref.L @ ref.R.T, ref_tau)
    )
    if model is True:
        assert_array_equal(res.L[:, -1], 1.0)
        assert_allclose(res.R[:, -1] - tau, ref.R[:, -1] - ref_tau)
    errors = int(np.count_nonzero(round_matrix(res.L @ res.R.T, tau) != X))
    assert res.info["n_errors"] == errors


def test_bias_counts_as_a_column():
    # a matrix with constant columns needs only the bias: k = 1 means "bias only"
    X = np.array([[1, 0, 1], [1, 0, 1], [1, 0, 1]])
    res = lpca_fit(X, 1, stop_when_exact=True, max_iter=100)
    assert res.L.shape == (3, 1) and res.info["n_latent"] == 0
    assert certify_rounding(X, res.L, res.R)


@pytest.mark.parametrize("model", MODELS)
def test_init_round_trip(rng, model):
    X = _random_binary(rng, 12, 10)
    a = lpca_fit(X, 3, fit_bias=model, max_iter=20, tol=0, random_state=0)
    b = lpca_fit(X, 3, fit_bias=model, max_iter=1, tol=0, init=(a.L, a.R))
    if model is True:
        # the bias representation is exact: warm start resumes at the same objective
        assert b.info["loss"][0] == pytest.approx(a.info["loss"][-1], rel=1e-12)
    assert b.info["loss"][-1] <= b.info["loss"][0] + 1e-12


# ---------------------------------------------------------------------------------
# stop_when_exact, planted matrices, rank search
# ---------------------------------------------------------------------------------


@pytest.mark.parametrize("model", MODELS)
def test_stop_when_exact_is_certifiable(model):
    X = np.tril(np.ones((12, 10)))
    res = lpca_fit(X, 2, fit_bias=model, stop_when_exact=True, max_iter=300)
    assert res.info["status"] == "exact"
    assert res.info["n_errors"] == 0
    assert certify_rounding(X, res.L, res.R)


def test_planted_rank_6_is_certified():
    X = _planted(0)
    res = run_family("lpca", X, random_state=0, start=5, polish=False)
    assert res.certified and res.rank <= 7
    assert certify_rounding(X, res.L, res.R, margin=1e-9)
    assert res.L.shape == (300, res.rank) and res.R.shape == (200, res.rank)
    assert_array_equal(round_matrix(res.L @ res.R.T), X)
    assert set(res.info["errors_by_k"]) == set(range(5, res.rank + 1))
    # the global model finds the planted rank itself
    fit = lpca_fit(X, 6, fit_bias="global", stop_when_exact=True, random_state=0)
    assert fit.info["status"] == "exact"
    assert certify_rounding(X, fit.L, fit.R)


def test_rank_search_nested_matrix_is_rank_one():
    X = np.triu(np.ones((9, 7), dtype=int))
    res = run_family("lpca", X, random_state=0)
    assert (res.rank, res.certified, res.stopped_early) == (1, True, False)
    assert certify_rounding(X, res.L, res.R)


def test_rank_search_info_and_limits(rng):
    X = _random_binary(rng, 30, 25)
    res = run_family("lpca", X, max_rank=2, refine=False, random_state=0)
    assert res.rank is None and not res.certified and res.stopped_early
    assert set(res.info["errors_by_k"]) == {1, 2}
    assert set(res.info["seconds_by_k"]) == {1, 2}
    assert res.info["rescued_by_refinement"] is False
    timed = run_family("lpca", X, time_limit=0.0, random_state=0)
    assert timed.stopped_early and timed.rank is None
    with_bias = run_family("lpca", X, fit_bias=True, random_state=0)
    assert with_bias.certified
    assert certify_rounding(X, with_bias.L, with_bias.R)


def test_polish_never_worsens_the_bound():
    X = _planted(6, 80, 60, 4)
    forward = run_family("lpca", X, random_state=0, polish=False)
    polished = run_family("lpca", X, random_state=0, polish=True)
    assert forward.certified and polished.certified
    assert polished.rank <= forward.rank
    assert certify_rounding(X, polished.L, polished.R)
    assert polished.L.shape[1] == polished.rank
    # the same path to the first certificate, then only ranks below it
    first = len(forward.info["tried"])
    assert polished.info["tried"][:first] == forward.info["tried"]
    assert all(k < forward.rank for k in polished.info["tried"][first:])
    errors = polished.info["errors_by_k"]
    assert polished.rank == min(k for k, e in errors.items() if e == 0)


def test_rank_search_with_missing_entries(rng):
    X = _planted(1, 60, 40, 3).astype(float)
    X[rng.random(X.shape) < 0.1] = np.nan
    res = run_family("lpca", X, random_state=0)
    assert res.certified
    assert certify_rounding(X, res.L, res.R)


# ---------------------------------------------------------------------------------
# n_jobs, determinism, inputs not modified
# ---------------------------------------------------------------------------------


@pytest.mark.parametrize("solver", ["newton", "lbfgs", "mm"])
@pytest.mark.parametrize("model", MODELS)
def test_results_do_not_depend_on_n_jobs(solver, model):
    X = _random_binary(np.random.default_rng(0), 40, 25, missing=0.1)
    options = LPCAOptions(
        fit_bias=model, solver=solver, max_iter=15, kernels=SMALL_BLOCKS
    )
    a = _lpca_fit(X, 3, options, random_state=0, n_jobs=1)
    b = _lpca_fit(X, 3, options, random_state=0, n_jobs=2)
    assert_array_equal(a.L, b.L)
    assert_array_equal(a.R, b.R)
    assert a.info["loss"] == b.info["loss"]


def test_transform_and_search_do_not_depend_on_n_jobs():
    X = _planted(2, 60, 40, 3)
    private = {"kernels": Kernels(chunk_entries=600, gram_rows=1)}  # 10-row chunks
    kw = dict(random_state=0, polish=False, private=private)
    a = run_family("lpca", X, n_jobs=1, **kw)
    b = run_family("lpca", X, n_jobs=2, **kw)
    assert a.rank == b.rank
    assert_array_equal(a.L, b.L)
    # the transform's chunks are the package's: 2 chunks of rows here
    X = _planted(2, 600, 500, 3)
    for model in MODELS:
        R = lpca_fit(X, 3, fit_bias=model, random_state=0, max_iter=20).R
        La = lpca_transform(X, R, fit_bias_column=model, n_jobs=1)
        Lb = lpca_transform(X, R, fit_bias_column=model, n_jobs=2)
        assert_array_equal(La, Lb)


def test_inputs_are_not_modified(rng):
    X = _random_binary(rng, 10, 8, missing=0.1)
    X0 = X.copy()
    res = lpca_fit(X, 2, max_iter=5)
    L0, R0 = res.L.copy(), res.R.copy()
    lpca_fit(X, 2, max_iter=5, init=(res.L, res.R))
    lpca_transform(X, res.R)
    refine(X, res.L, res.R)
    assert_array_equal(X, X0)
    assert_array_equal(res.L, L0)
    assert_array_equal(res.R, R0)


# ---------------------------------------------------------------------------------
# transform
# ---------------------------------------------------------------------------------


@pytest.mark.parametrize("model", MODELS)
def test_transform_reproduces_training_rows(model):
    X = _planted(3, 50, 30, 2)
    fit = lpca_fit(X, 3, fit_bias=model, random_state=0, alpha=1e-3, max_iter=200)
    L = lpca_transform(X, fit.R, fit_bias_column=model, alpha=1e-3, max_iter=200)
    assert L.shape == fit.L.shape
    if model is True:
        assert_array_equal(L[:, -1], 1.0)
    err_fit = fit.info["n_errors"]
    err_transform = int(np.count_nonzero(round_matrix(L @ fit.R.T) != X))
    assert err_transform <= err_fit + 0.01 * X.size


def test_transform_new_rows_and_missing(rng):
    X = _planted(4, 80, 30, 2).astype(float)
    fit = lpca_fit(X[:60], 3, random_state=0)
    new = X[60:].copy()
    new[:, :5] = np.nan
    L = lpca_transform(new, fit.R)
    B = round_matrix(L @ fit.R.T)
    observed = ~np.isnan(new)
    assert np.mean(B[observed] != new[observed]) < 0.1


def test_transform_validation():
    R = np.ones((3, 2))
    with pytest.raises(ValueError, match="R must have shape"):
        lpca_transform(np.eye(4), R)
    with pytest.raises(ValueError, match="finite"):
        lpca_transform(np.eye(3), np.full((3, 2), np.nan))


# ---------------------------------------------------------------------------------
# refinement by LPs
# ---------------------------------------------------------------------------------


def refine(X, L, R, n_rounds=3):
    """The LP refinement of the search's rescue, on data validated here."""
    X = check_binary_matrix(X, allow_missing=True, method="lpca")
    return _lpca_refine(X, L, R, tau=0.5, n_rounds=n_rounds, deadline=Deadline(None))


def test_refine_repairs_a_broken_column(rng):
    X = _planted(5, 40, 30, 3)
    fit = lpca_fit(X, 4, fit_bias="global", stop_when_exact=True, random_state=0)
    assert certify_rounding(X, fit.L, fit.R)
    R = fit.R.copy()
    j = int(np.argmax(X.sum(axis=0)))
    R[j] = 0.0  # column j now rounds to all zeros
    L2, R2, info = refine(X, fit.L, R)
    assert info["errors_before"] == X[:, j].sum()
    assert info["errors_before"] > 0
    assert info["errors_after"] == 0 and info["certified"]
    assert info["errors_removed"] == info["errors_before"]
    assert certify_rounding(X, L2, R2)


class _ReadDeadline(Deadline):
    """An unlimited-in-practice deadline that records who read it as seconds."""

    def __init__(self):
        super().__init__(1e6)
        self.seconds_read = 0

    def remaining(self):
        self.seconds_read += 1
        return super().remaining()


def test_refine_hands_its_deadline_to_the_lp_engine():
    # the refinement passes the Deadline itself; only the engine's HiGHS leaf reads
    # it as seconds (once per LP it runs), so every LP sees the same end
    X = check_binary_matrix(_planted(5, 40, 30, 3), method="lpca")
    fit = lpca_fit(X, 4, fit_bias="global", stop_when_exact=True, random_state=0)
    R = fit.R.copy()
    R[int(np.argmax(X.sum(axis=0)))] = 0.0
    deadline = _ReadDeadline()
    _, _, info = _lpca_refine(X, fit.L, R, tau=0.5, n_rounds=1, deadline=deadline)
    assert info["n_lps"] >= 1
    assert deadline.seconds_read >= 1  # the leaf read it
    expired = Deadline(0.0)
    _, _, info = _lpca_refine(X, fit.L, R, tau=0.5, n_rounds=3, deadline=expired)
    assert info["n_lps"] == 0 and info["errors_after"] == info["errors_before"]


@given(seed=st.integers(0, 2**31 - 1))
@settings(max_examples=8, deadline=None)
def test_refine_never_increases_failures(seed):
    rng = np.random.default_rng(seed)
    X = _random_binary(rng, 15, 12, missing=0.1)
    L = rng.normal(size=(15, 2))
    R = rng.normal(size=(12, 2))
    _, n_before = certify_rounding(X, L, R, return_count=True)
    L2, R2, info = refine(X, L, R, n_rounds=2)
    _, n_after = certify_rounding(X, L2, R2, return_count=True)
    assert info["uncertified_before"] == n_before
    assert info["uncertified_after"] == n_after <= n_before


@given(seed=st.integers(0, 2**31 - 1))
@settings(max_examples=6, deadline=None)
def test_refine_sparse_equals_dense(seed):
    # sparse data is refined from the failing columns and rows made dense, with the
    # same LPs as dense data: the same factors and counts
    rng = np.random.default_rng(seed)
    X = (rng.random((30, 25)) < 0.2).astype(float)
    L = rng.normal(size=(30, 3))
    R = rng.normal(size=(25, 3))
    Ld, Rd, dense = refine(X, L, R, n_rounds=2)
    Xs = check_binary_matrix(sp.csr_matrix(X), accept_sparse=True, method="lpca")
    Ls, Rs, sparse = _lpca_refine(
        Xs, L, R, tau=0.5, n_rounds=2, deadline=Deadline(None)
    )
    assert_array_equal(Ls, Ld)
    assert_array_equal(Rs, Rd)
    for key in ("errors_before", "errors_after", "uncertified_after", "n_lps"):
        assert sparse[key] == dense[key]


def test_refine_validation():
    with pytest.raises(ValueError, match="shapes"):
        refine(np.eye(3), np.ones((3, 2)), np.ones((4, 2)))


def test_search_parameter_validation():
    X = _planted(2, 20, 15, 2)
    for name, value in (("max_rank", 0), ("start", 0), ("polish", "yes")):
        with pytest.raises(ValueError, match=name):
            rounding_rank_bounds(
                X, methods=("lpca",), method_params={"lpca": {name: value}}
            )


# ---------------------------------------------------------------------------------
# parameter validation
# ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_components": 0}, "n_components"),
        ({"solver": "sgd"}, "solver"),
        ({"alpha": -1.0}, "alpha"),
        ({"max_iter": 0}, "max_iter"),
        ({"fit_bias": "yes"}, "fit_bias"),
        ({"tau": np.nan}, "tau"),
    ],
)
def test_lpca_fit_parameter_errors(kwargs, match):
    params = {"n_components": 2, **kwargs}
    with pytest.raises(ValueError, match=match):
        lpca_fit(np.eye(4), **params)


def test_lpca_fit_input_errors():
    with pytest.raises(ValueError, match="not binary"):
        lpca_fit([[0, 2], [1, 0]], 1)
    with pytest.raises(ValueError, match="init must be a pair"):
        lpca_fit(np.eye(3), 2, init=(np.ones((3, 2)), np.ones((2, 2))))
    with pytest.raises(ValueError, match="bias column"):
        lpca_fit(np.eye(3), 2, init=(np.eye(3)[:, :2], np.ones((3, 2))))
    with pytest.raises(ValueError, match="init must be a pair"):
        lpca_fit(np.eye(3), 2, init=(np.ones((3, 2)),))


@given(
    p=st.integers(1, 120),
    seed=st.integers(0, 2**16),
    scale=st.floats(1e-2, 1e3),
)
@settings(max_examples=30, deadline=None)
def test_float32_stop_margin_covers_the_float32_logit_error(p, seed, scale):
    # the logits of the joint objective in float32 ([U, 1] @ ([V, mu] / 2).T, doubled)
    # differ from the float64 logits by less than the margin float32 adds
    rng = np.random.default_rng(seed)
    m, n = 40, 30
    U = scale * rng.standard_normal((m, p))
    V = rng.standard_normal((n, p))
    mu = scale * rng.standard_normal(n)
    theta = U @ V.T + mu
    Ub = np.column_stack([U, np.ones(m)]).astype(np.float32)
    F = np.multiply(np.column_stack([V, mu]), 0.5, dtype=np.float32)
    theta32 = 2.0 * (Ub @ F.T).astype(np.float64)
    d64 = _lpca_model._stop_delta(U, V, mu, 0.5)
    d32 = _lpca_model._stop_delta(U.astype(np.float32), V.astype(np.float32), mu, 0.5)
    assert d32 > d64
    assert np.abs(theta32 - theta).max() <= d32 - d64 * (1 - 1e-6)
    # the added margin is (p + 4) float32 epsilons on the same scale
    assert_allclose(d32 / d64, 1 + (p + 4) * np.finfo(np.float32).eps / 1e-6, rtol=1e-5)


# -- sparse data: the ones as a CSR pattern, no m x n array -------------------------


@pytest.fixture(scope="module")
def sparse_planted():
    rng = np.random.default_rng(3)
    A = rng.standard_normal((1200, 5)) @ rng.standard_normal((5, 300))
    return (A >= np.quantile(A, 0.97)).astype(np.float64)


def test_sparse_signs_blocks_equal_dense_signs(sparse_planted):
    import scipy.sparse as sp

    X = sparse_planted
    dense, sparse = _lpca_model._Data(X), _lpca_model._Data(sp.csr_matrix(X))
    assert sparse.sparse and not dense.sparse
    for rows in _lpca_model._chunks(*X.shape)[:3] + [slice(5, 9)]:
        assert_array_equal(sparse.q[rows], dense.q[rows])
    assert_array_equal(sparse.qt[slice(0, 300)], dense.qt)
    assert_array_equal(sparse.ones[0], dense.ones[0])
    assert_array_equal(sparse.ones[1], dense.ones[1])
    # a stored zero is not a one
    Xs = sp.csr_matrix(X)
    Xs.data[0] = 0.0
    X0 = Xs.toarray()
    assert_array_equal(_lpca_model._Data(Xs).q[0:50], _lpca_model._Data(X0).q[0:50])


@pytest.mark.parametrize("fit_bias", [True, "global"])
def test_sparse_fit_matches_dense_fit(sparse_planted, fit_bias):
    import scipy.sparse as sp

    X = sparse_planted
    kw = dict(fit_bias=fit_bias, random_state=0, max_iter=30)
    dense = lpca_fit(X, 4, **kw)
    sparse = lpca_fit(sp.csr_matrix(X), 4, **kw)
    # the sweeps are the same kernels on the same signs; only the SVD warm start
    # is another (blocked, operator) computation of the same factors
    assert abs(sparse.info["n_errors"] - dense.info["n_errors"]) <= 2
    assert_allclose(sparse.info["deviance"], dense.info["deviance"], rtol=1e-3)
    assert_allclose(sparse.info["null_deviance"], dense.info["null_deviance"])


def test_sparse_add_column_matches_dense(sparse_planted):
    import scipy.sparse as sp

    X = sparse_planted
    dense, sparse = _lpca_model._Data(X), _lpca_model._Data(sp.csr_matrix(X))
    U, V, mu = _lpca_init._svd_init(dense, 2, "column", np.random.RandomState(0))
    Ud, Vd, _ = _lpca_init._add_columns(dense, U, V, mu, 1)
    Us, Vs, _ = _lpca_init._add_columns(sparse, U, V, mu, 1)
    # nearly the same rank-one direction (fewer power iterations on sparse data)
    for a, b in ((Ud[:, -1], Us[:, -1]), (Vd[:, -1], Vs[:, -1])):
        cosine = abs(a @ b) / (np.linalg.norm(a) * np.linalg.norm(b))
        assert cosine > 0.999
    assert_allclose(np.linalg.norm(Us[:, -1]), np.linalg.norm(Ud[:, -1]), rtol=1e-2)


def test_estimator_fits_and_transforms_sparse_lpca(sparse_planted):
    import scipy.sparse as sp

    from sklearn_rrank import RoundingRankFactorization, config_context

    X = sparse_planted[:400]
    Xs = sp.csr_matrix(X)
    kw = dict(method="lpca", random_state=0, max_iter=50)
    dense = RoundingRankFactorization(5, **kw).fit(X)
    sparse = RoundingRankFactorization(5, **kw).fit(Xs)
    assert abs(sparse.reconstruction_err_ - dense.reconstruction_err_) <= 2
    L = sparse.transform(Xs)
    assert (sparse.inverse_transform(L) != X).sum() <= sparse.reconstruction_err_
    # a method that needs the dense matrix says so when it would not fit
    # (a memory limit of one dense copy of X: a dense work array may take half)
    with config_context(memory_limit=8 * X.size):
        with pytest.raises(ValueError, match="works on the dense matrix"):
            RoundingRankFactorization(2, method="projlp").fit(Xs)
        RoundingRankFactorization(2, method="lpca", max_iter=5).fit(Xs)  # sparse


def test_lpca_fit_keeps_sparse_input_sparse(monkeypatch):
    # the door used to densify CSR input (8 bytes per entry: 8 GB at 1e9 entries);
    # 3e5 entries: more than one chunk of rows (2**18 entries)
    rng = np.random.default_rng(0)
    X = (rng.random((1000, 300)) < 0.05).astype(float)
    dense = lpca_fit(X, 5, random_state=0, max_iter=20)
    Xs = sp.csr_matrix(X)
    toarray = sp.csr_matrix.toarray

    def blocks_only(self, *args, **kwargs):  # row blocks may be densified, X not
        if self.shape == X.shape:
            pytest.fail("the whole of X was densified")
        return toarray(self, *args, **kwargs)

    monkeypatch.setattr(sp.csr_matrix, "toarray", blocks_only)
    sparse = lpca_fit(Xs, 5, random_state=0, max_iter=20)
    assert sparse.info["n_errors"] == dense.info["n_errors"]
    assert_allclose(sparse.L @ sparse.R.T, dense.L @ dense.R.T, atol=1e-9)
    assert_allclose(lpca_transform(Xs[:10], dense.R), lpca_transform(X[:10], dense.R))


def test_sweep_loop_starts_no_sweep_the_deadline_cannot_hold():
    # at 1e9 entries a sweep takes minutes: one that cannot end in time is not
    # started, so that the time left goes to the fit's final passes (an estimator
    # fit on 1800 s took 1976 s)
    now = [0.0]  # a fake clock: each sweep takes 0.3 s of it

    class SlowSweep:
        start = (10.0, 5)

        def __init__(self, pass_seconds=0.0):
            self.calls = 0
            # the start's evaluation: as long as the fit's count after the loop
            self.pass_seconds = pass_seconds

        def __call__(self, U, V, mu, stop_when_exact):
            self.calls += 1
            now[0] += 0.3
            return U, V, mu, 10.0 - self.calls, 5

    deadline = Deadline(0.5, clock=lambda: now[0])
    loop = FitLoop(10, 0.0, stop_when_exact=False, deadline=deadline)
    sweep = SlowSweep()
    out = _lpca_newton._sweep_loop(sweep, 1, 2, 3, loop, 10)
    assert out[4:] == (1, "time_limit") and sweep.calls == 1  # 0.2 s left < 0.3 s
    # the count after the loop (a pass of 0.25 s) needs room too: 0.4 s left after
    # two sweeps hold a third sweep but not the sweep and the count
    now[0] = 0.0
    for pass_seconds, sweeps in ((0.0, 3), (0.25, 2)):
        deadline = Deadline(1.0, clock=lambda: now[0])
        loop = FitLoop(10, 0.0, stop_when_exact=False, deadline=deadline)
        sweep = SlowSweep(pass_seconds)
        out = _lpca_newton._sweep_loop(sweep, 1, 2, 3, loop, 10)
        assert out[4:] == (sweeps, "time_limit") and sweep.calls == sweeps
    assert Deadline(None).leaves_room_for(1e9)
    assert not Deadline(1.0).leaves_room_for(2.0)


@pytest.mark.parametrize("tau", [0.5, -0.5])
def test_package_without_bias_scales_rows_by_blocks(tau):
    # the per-row scale of the no-bias model needs each row's reference logit: it
    # is found by blocks of rows (the whole m x n logits took 8 bytes per entry
    # in every fit of the default model, whose transform packages this way)
    rng = np.random.default_rng(0)
    U, V = rng.normal(size=(57, 3)), rng.normal(size=(23, 3))
    U[5] = 0.0  # a row without a logit on the scaled side keeps its scale 1
    L, R = _lpca_model._package(U, V, None, tau, entries=100)  # blocks of 4 rows
    theta = U @ V.T
    side = theta > 0 if tau > 0 else theta < 0
    ref = np.where(side, theta, np.inf if tau > 0 else -np.inf)
    ref = ref.min(axis=1) if tau > 0 else ref.max(axis=1)
    scale = np.where(np.isfinite(ref), 2 * tau / np.where(np.isfinite(ref), ref, 1), 1)
    assert_allclose(L, U * scale[:, None], rtol=1e-13)
    assert_array_equal(R, V)
    # exact but for logits that are exactly 0 (row 5; documented for tau > 0)
    nonzero = theta != 0
    assert_array_equal((L @ R.T >= tau)[nonzero], (theta >= 0)[nonzero])


def test_lbfgs_keeps_the_global_offset_on_its_side():
    # the offset keeps its side by evaluation at the clamped offset (scipy's
    # bounds cost a Python loop over all parameters): nearly full or empty data
    # push it across its edge, where it stays
    rng = np.random.default_rng(0)
    for density, tau, k in [(0.97, 0.5, 1), (0.97, 0.5, 2), (0.03, -0.5, 1)]:
        X = (rng.random((200, 60)) < density).astype(float)
        fit = lpca_fit(
            X,
            k,
            tau=tau,
            fit_bias="global",
            solver="lbfgs",
            max_iter=300,
            random_state=0,
        )
        b, loss = fit.info["offset"], fit.info["loss"]
        assert (b <= -1e-3) if tau > 0 else (b >= 1e-3)
        assert loss[-1] < 0.7 * loss[0]
