"""Float32 compute mode, solver choice per size, reused buffers (issue 13)."""

import numpy as np
import pytest
from _family import Deadline, Kernels, LPCAOptions, _lpca_fit, lpca_fit, modules
from numpy.testing import assert_array_equal
from sklearn.utils.extmath import randomized_svd

from sklearn_rrank import certify_rounding

_lpca = modules.lpca
_lpca_model = modules.lpca_model


def _planted(seed, m=120, n=80, k=4):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)) @ rng.standard_normal((k, n)) >= 0.5).astype(
        float
    )


@pytest.mark.parametrize("model", [True, False, "global"])
def test_float32_mode_fits_and_certifies_in_float64(model):
    X = _planted(0)
    res = lpca_fit(X, 5, fit_bias=model, dtype="float32", random_state=0)
    assert res.L.dtype == np.float64 and res.R.dtype == np.float64
    assert res.info["dtype"] == "float32"
    ref = lpca_fit(X, 5, fit_bias=model, random_state=0)
    assert res.info["n_errors"] <= ref.info["n_errors"] + 0.01 * X.size
    # the error count is the float64 rounding of the returned factors
    assert res.info["n_errors"] == int(np.sum(((res.L @ res.R.T) >= 0.5) != (X == 1)))


def test_float32_exact_stop_is_certifiable():
    X = _planted(1, k=3)
    res = lpca_fit(
        X, 3, fit_bias="global", dtype="float32", stop_when_exact=True, random_state=0
    )
    assert res.info["status"] == "exact"
    assert certify_rounding(X, res.L, res.R)


def test_auto_solver_picks_by_size():
    assert _lpca._resolve_solver("auto", 10) == "newton"
    assert _lpca._resolve_solver("auto", 100) == "lbfgs"
    assert _lpca._resolve_solver("mm", 100) == "mm"
    X = _planted(2, 40, 30)
    res = lpca_fit(X, 4, max_iter=5, random_state=0)
    assert res.info["solver_used"] == "newton"
    options = LPCAOptions(max_iter=5, kernels=Kernels(newton_max_p=2))
    res = _lpca_fit(X, 4, options, random_state=0)
    assert res.info["solver_used"] == "lbfgs"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_chunked_buffers_do_not_depend_on_n_jobs(dtype):
    X = _planted(3, 60, 40)
    X[np.random.default_rng(0).random(X.shape) < 0.1] = np.nan
    kernels = Kernels(chunk_entries=256, gram_rows=1)  # 10 chunks a pass
    options = LPCAOptions(max_iter=10, dtype=dtype, solver="newton", kernels=kernels)
    a = _lpca_fit(X, 3, options, random_state=0, n_jobs=1)
    b = _lpca_fit(X, 3, options, random_state=0, n_jobs=2)
    assert_array_equal(a.L, b.L)
    assert a.info["loss"] == b.info["loss"]


def _cut_after_one_sweep(counting_deadline, extra, kernels, **kw):
    """Fits of 1 and of up to 50 sweeps, the latter on a deadline expiring after
    the checks of the first fit plus ``extra`` (inside its second sweep)."""
    X = _planted(4, 60, 40)
    n_jobs = kw.pop("n_jobs", None)
    options = dict(tol=0.0, kernels=kernels, **kw)
    run = dict(random_state=0, n_jobs=n_jobs)
    counter = counting_deadline()
    opts = _lpca.LPCAOptions(max_iter=1, **options)
    one = _lpca._lpca_fit(X, 3, opts, deadline=counter, **run)
    n_checks = counter.calls  # those of the first sweep and the one after it
    opts = _lpca.LPCAOptions(max_iter=50, **options)
    cut = _lpca._lpca_fit(
        X, 3, opts, deadline=counting_deadline(n_checks + extra), **run
    )
    # the same one-sweep fit without a deadline: checks change no result
    free = _lpca._lpca_fit(X, 3, _lpca.LPCAOptions(max_iter=1, **options), **run)
    assert_array_equal(free.L, one.L)
    assert_array_equal(free.R, one.R)
    return one, cut, n_checks


@pytest.mark.parametrize("n_jobs", [None, 2])
@pytest.mark.parametrize("solver", ["newton", "mm"])
@pytest.mark.parametrize("model", [True, False, "global"])
def test_deadline_inside_a_sweep_keeps_the_last_full_sweep(
    counting_deadline, n_jobs, solver, model
):
    # 10 chunks a pass; threads check before each run of check_group chunks
    kernels = Kernels(chunk_entries=256, gram_rows=1, check_group=2)
    one, cut, n_checks = _cut_after_one_sweep(
        counting_deadline, 2, kernels, solver=solver, fit_bias=model, n_jobs=n_jobs
    )
    assert n_checks >= 6  # the deadline is checked inside the sweep
    assert cut.info["status"] == "time_limit" and cut.n_iter == 1
    assert one.info["status"] == "max_iter" and one.n_iter == 1
    assert_array_equal(cut.L, one.L)
    assert_array_equal(cut.R, one.R)
    assert cut.info["loss"] == one.info["loss"]


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_deadline_inside_an_lbfgs_iteration_keeps_the_last_iterate(
    counting_deadline, n_jobs
):
    # one chunk per task of the joint objective, a check every two tasks
    kernels = Kernels(chunk_entries=256, gram_rows=1, task_chunks=1, check_group=2)
    # expires at the first check of the second iteration: inside the objective
    one, cut, n_checks = _cut_after_one_sweep(
        counting_deadline, 0, kernels, solver="lbfgs", n_jobs=n_jobs
    )
    assert n_checks >= 3
    assert cut.info["status"] == "time_limit" and cut.n_iter == 1
    assert_array_equal(cut.L, one.L)
    assert_array_equal(cut.R, one.R)


def test_dense_svd_start_shrinks_to_the_time_left():
    # all the power iterations when they fit in the time left, none when it is gone
    _lpca_init = modules.lpca_init

    Z = np.random.default_rng(0).standard_normal((50, 30))
    full = _lpca_init._randomized_svd(Z, 2, 0)
    timed = _lpca_init._randomized_svd(Z, 2, 0, Deadline(1e6))
    cut = _lpca_init._randomized_svd(Z, 2, 0, Deadline(0.0))
    kw = dict(n_oversamples=_lpca_init._INIT_OVERSAMPLES, random_state=0)
    n_iter = _lpca_init._INIT_POWER_ITER
    for got, n in [(full, n_iter), (timed, n_iter), (cut, 0)]:
        for a, b in zip(got, randomized_svd(Z, 2, n_iter=n, **kw), strict=True):
            assert_array_equal(a, b)


def test_gram_chunks_have_enough_rows_for_a_matrix_product():
    # the column half step of a tall matrix: one-row chunks made the Hessians a
    # memory-bound pass over the pair products per column
    n_cols = 200_000
    chunks = _lpca_model._gram_chunks(5000, n_cols)
    assert {c.stop - c.start for c in chunks[:-1]} == {Kernels().gram_rows}
    assert _lpca_model._chunks(5000, n_cols)[0].stop == 1
    # never more than _GRAM_MAX_ENTRIES entries, never fewer rows than _chunks
    huge = _lpca_model._gram_chunks(10, 10 * _lpca_model._GRAM_MAX_ENTRIES)
    assert [c.stop - c.start for c in huge] == [1] * 10
    assert _lpca_model._gram_chunks(1000, 50) == _lpca_model._chunks(1000, 50)
