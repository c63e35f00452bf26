import os
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from _family import (
    SearchPolicy,
    modules,
    rsvd_error_curve,
    run_family,
    truncated_svd,
)

from sklearn_rrank import (
    RoundingRankFactorization,
    certify_rounding,
    round_matrix,
    rounding_rank_bounds,
)


def _brute_force_curve(X, tau):
    U, s, Vt = np.linalg.svd(X, full_matrices=False)
    out = [int(np.count_nonzero(round_matrix(np.zeros_like(X), tau) != X))]
    for k in range(1, s.size + 1):
        A = (U[:, :k] * s[:k]) @ Vt[:k]
        out.append(int(np.count_nonzero(round_matrix(A, tau) != X)))
    return np.array(out)


@pytest.mark.parametrize("tau", [0.5, 0.2, -0.1])
def test_error_curve_matches_brute_force(rng, tau):
    X = (rng.random((37, 23)) < 0.3).astype(float)
    U, s, Vt = truncated_svd(X)
    np.testing.assert_array_equal(
        rsvd_error_curve(X, U, s, Vt, tau=tau), _brute_force_curve(X, tau)
    )


def test_search_and_estimator_agree_on_real_data(digits150):
    # the rank search's certificate and error curve, and the estimator's errors at
    # the same k (on Paleo they are the paper's Tables 2 and 3: benchmarks/)
    X = digits150.astype(float)
    res = run_family("rsvd", X)
    assert res.rank == 45 and res.certified
    assert certify_rounding(X, res.L, res.R)
    errors = res.info["errors_by_k"]
    for k, rel in [(5, 0.271), (10, 0.117), (20, 0.023)]:
        assert round(errors[k] / X.sum(), 3) == rel
        est = RoundingRankFactorization(k, method="rsvd").fit(digits150)
        assert round(est.relative_error_, 3) == rel


def test_error_not_monotone_on_real_data(digits150):
    # the reason the scan is exhaustive: on these digits the error rises from
    # k = 37 to k = 38 (on APJ from k = 1 to k = 2)
    errors = run_family("rsvd", digits150.astype(float)).info["errors_by_k"]
    assert errors[38] > errors[37]
    assert min(k for k, e in errors.items() if e == 0) == 45


def test_sparse_input_gives_same_bound(rng):
    X = (rng.random((40, 30)) < 0.2).astype(float)
    dense = run_family("rsvd", X)
    sparse = run_family("rsvd", sp.csr_matrix(X))
    assert dense.rank == sparse.rank


def test_arpack_sparse_svd_path(rng):
    X = sp.random(200, 150, density=0.05, random_state=0, format="csr")
    X.data[:] = 1.0
    U, s, Vt = truncated_svd(X, 10, random_state=0)
    s_exact = np.linalg.svd(X.toarray(), compute_uv=False)[:10]
    np.testing.assert_allclose(s, s_exact, rtol=1e-8)


def test_estimator_picks_best_truncation_and_pads(rng):
    X = (rng.random((30, 20)) < 0.4).astype(np.uint8)
    est = RoundingRankFactorization(6, method="rsvd").fit(X)
    curve = np.array(est.solver_info_["errors_by_k"])
    assert est.reconstruction_err_ == curve[: 6 + 1].min()
    assert est.components_.shape == (6, 20)
    L = est.transform(X)
    assert L.shape == (30, 6)


@pytest.mark.parametrize("tau", [0.5, 0.3])
def test_blocked_scan_finds_the_first_exact_truncation(rng, tau):
    X = (rng.random((60, 45)) < 0.3).astype(float)
    exhaustive = run_family("rsvd", X, tau=tau)
    policy = SearchPolicy(rsvd_exhaustive_work=0, rsvd_block=7)
    blocked = run_family("rsvd", X, tau=tau, policy=policy)  # a method parameter
    assert blocked.info["scan"].startswith("blocked")
    assert blocked.certified and certify_rounding(X, blocked.L, blocked.R, tau=tau)
    # the first exact k of the curve, unless an earlier exact block end exists
    curve = exhaustive.info["errors_by_k"]
    first_block_end = (
        min(k for k in range(7, 46, 7) if curve[k] == 0)
        if any(curve[k] == 0 for k in range(7, 46, 7))
        else 45
    )
    assert exhaustive.rank <= blocked.rank <= first_block_end


def test_all_zero_matrix():
    X = np.zeros((4, 5))
    est = RoundingRankFactorization(1, method="rsvd").fit(X)
    assert est.reconstruction_err_ == 0 and est.certified_
    res = run_family("rsvd", X)
    assert res.rank == 0 and res.certified
    # tau <= 0: the all-ones matrix has rounding rank 0, the zero matrix 1
    assert run_family("rsvd", np.ones((3, 3)), tau=0.0).rank == 0
    # ... and at tau < 0 the zero matrix needs rank 1: R-SVD rounds the SVD of the
    # halved sign matrix shifted to tau (-1 everywhere), exact at rank 1
    res = run_family("rsvd", X, tau=-0.5)
    assert res.rank == 1 and res.certified


def test_gram_route_takes_all_components_from_numpys_eigh():
    # numpy's eigh releases the GIL (the progress line goes on); scipy's held it,
    # and the progress line froze for 12 to 42 s during R-SVD on Abstracts. The
    # triplets are those of the subset route (scipy), which fewer components take
    X = sp.random(300, 150, density=0.05, random_state=0, format="csr")
    X.data[:] = 1.0
    rsvd = modules.rsvd
    U, s, Vt = rsvd._gram_svd(X, 150)
    _, s2, _ = rsvd._gram_svd(X, 149)
    np.testing.assert_allclose(s[:149], s2, rtol=1e-9, atol=1e-9)
    A, B = (U * s) @ Vt, X.toarray()
    np.testing.assert_allclose(A, B, atol=1e-8)  # all components: X itself


@pytest.mark.parametrize("sparse", [True, False])
def test_gram_route_holds_one_gram_matrix(sparse):
    # svd_bytes counts one small x small Gram matrix: the subset eigh works in it
    # (LAPACK copied the C-ordered Gram matrix of dense input)
    X = sp.random(1200, 900, density=0.01, random_state=0, format="csr")
    X.data[:] = 1.0
    X = X if sparse else X.toarray()
    gram = 8 * 900 * 900
    tracemalloc.start()
    try:
        modules.rsvd._gram_svd(X, 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.5 * gram


@pytest.mark.parametrize(
    ("K", "sparse", "route"),
    [
        (37, True, "arpack"),
        (38, True, "gram"),
        (75, True, "gram"),
        (38, False, "gesdd"),
    ],
)
def test_svd_and_its_estimate_take_one_route(K, sparse, route):
    # a third of the components of a sparse matrix went to ARPACK while the budget
    # check estimated the Gram route: both now follow _svd_route
    X = sp.random(300, 150, density=0.05, random_state=0, format="csr")
    X.data[:] = 1.0
    X = X if sparse else X.toarray()
    rsvd = modules.rsvd
    assert rsvd._svd_route(300, 150, K, sparse) == route
    U, s, Vt = truncated_svd(X, K, random_state=0)
    s_exact = np.linalg.svd(np.asarray(sp.csr_matrix(X).toarray()), compute_uv=False)
    np.testing.assert_allclose(s, s_exact[:K], rtol=1e-6, atol=1e-8)
    # the search's SVD takes the route its estimate was asked for
    asked = []

    def seconds(m, n, K, nnz, route):
        asked.append(route)
        return 0.0

    scan = {"scan": modules.rsvd.Scan(svd_seconds=seconds)}
    res = run_family("rsvd", X, max_rank=K, time_limit=600, private=scan)
    assert asked == [route] and res.info["svd_route"] == route


def test_time_limit_skips_an_svd_that_cannot_finish(rng):
    slow = {"scan": modules.rsvd.Scan(svd_seconds=lambda *args, **kw: 1e6)}
    X = (rng.random((30, 20)) < 0.3).astype(float)
    res = run_family("rsvd", X, time_limit=5, private=slow)
    assert res.rank is None and res.stopped_early
    assert "skipped" in res.info["message"]
    assert "needs about 1000000 s" in res.info["message"]


@pytest.mark.parametrize("sparse", [False, True])
def test_blocked_scan_by_blocks_of_rows_equals_one_block(rng, sparse):
    import scipy.sparse as sp

    X = (rng.random((80, 40)) < 0.25).astype(float)
    policy = SearchPolicy(rsvd_exhaustive_work=0, rsvd_block=5)
    one = run_family("rsvd", X, policy=policy)
    # blocks of 3 rows: the failing boundary is found by another block of rows
    rows = {"scan": modules.rsvd.Scan(row_entries=3 * 40)}
    data = sp.csr_matrix(X) if sparse else X
    many = run_family("rsvd", data, policy=policy, private=rows)
    assert many.rank == one.rank
    assert certify_rounding(X, many.L, many.R)


def test_bounds_door_runs_the_rsvd_search(digits150):
    # the user's surface: the same certificate as the family search
    b = rounding_rank_bounds(digits150, methods=("rsvd",))
    assert b.upper == 45 and b.upper_method == "rsvd"
    assert certify_rounding(digits150, b.L, b.R)
    capped = rounding_rank_bounds(
        digits150, methods=("rsvd",), method_params={"rsvd": {"max_rank": 10}}
    )
    assert capped.upper_method != "rsvd"  # no truncation up to 10 is exact


@pytest.mark.parametrize(
    "params, match",
    [({"max_rank": 0}, "max_rank"), ({"max_rank": 2.5}, "max_rank"), ({"k": 1}, "k")],
)
def test_bounds_door_validates_rsvd_params(params, match):
    with pytest.raises((ValueError, TypeError), match=match):
        rounding_rank_bounds(
            np.eye(3), methods=("rsvd",), method_params={"rsvd": params}
        )


def test_load_counts_the_processes_runnable_now():
    # the 1-minute average lags a load that just began; what runs now counts too
    rsvd = modules.rsvd
    cores = max(os.cpu_count() or 1, 1)
    assert rsvd._load_average(lambda: (8.0 * cores, 0.0, 0.0)) >= 8.0
    idle = rsvd._load_average(lambda: (0.0, 0.0, 0.0))
    if os.path.exists("/proc/loadavg"):  # this test's own process is runnable
        assert idle >= 1.0 / cores
    else:
        assert idle == 0.0


def test_an_svd_that_does_not_fit_is_truncated_not_skipped():
    # memory set small: the Gram matrix of a sparse 240 x 160 matrix does not fit,
    # ARPACK's basis for a few components does; the SVD keeps what fits, by ARPACK,
    # and certifies the blocks' rank below it
    from sklearn_rrank import config_context

    memory = modules.memory
    rng = np.random.default_rng(3)
    blocks = np.array([[1, 0, 0, 1], [0, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0.0]])
    X = blocks[rng.integers(4, size=240)][:, rng.integers(4, size=160)]
    X = sp.csr_matrix(X)
    room = memory.svd_bytes(240, 160, 20, lanczos=True)
    assert room < memory.svd_bytes(240, 160, 1)  # the Gram matrix alone is more
    # an SVD may take a quarter of the memory available
    with config_context(memory_limit=4 * room):
        assert memory.svd_components_that_fit(240, 160, 160) == 0
        assert memory.svd_components_that_fit(240, 160, 160, lanczos=True) == 20
        res = run_family("rsvd", X, random_state=0)
    assert res.info["svd_route"] == "arpack"
    assert "the SVD keeps 20 (arpack)" in res.info["message"]
    assert res.rank is not None and res.rank <= 20
    assert certify_rounding(X, res.L, res.R)
    dense = run_family("rsvd", X.toarray(), random_state=0)
    assert res.rank == dense.rank
