"""The L-PCA family inside the rank-search skeleton (issue 12)."""

import time

import numpy as np
import pytest
import scipy.sparse as sp
from _family import (
    Deadline,
    Kernels,
    SearchMemo,
    SearchPolicy,
    StallRule,
    _lpca_search,
    modules,
    run_family,
    run_rank_search,
)

from sklearn_rrank import certify_rounding, rounding_rank_bounds

# run_rank_search's arguments of an L-PCA search within a budget
_BUDGETED = dict(method="lpca", tau=0.5, deadline=1000.0, random_state=0)


def _planted(seed, m, n, k):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)) @ rng.standard_normal((k, n)) >= 0.5).astype(
        float
    )


def test_search_never_returns_a_bound_at_or_above_the_cap():
    X = _planted(3, 60, 40, 4)
    free = run_rank_search(_lpca_search, X, method="lpca", tau=0.5, random_state=0)
    assert free.certified
    for cap in (free.rank, free.rank + 1, 2):
        res = run_rank_search(
            _lpca_search, X, method="lpca", tau=0.5, cap=cap, random_state=0
        )
        assert res.rank is None or res.rank < cap
        if res.rank is not None:
            assert certify_rounding(X, res.L, res.R)
        assert all(k < cap for k in res.info["errors_by_k"])


def test_lower_bound_met_stops_the_polish():
    X = _planted(4, 60, 40, 3)
    events = []
    res = run_rank_search(
        _lpca_search,
        X,
        method="lpca",
        tau=0.5,
        lower=3,
        random_state=0,
        progress=events.append,
    )
    assert res.certified and res.rank >= 3
    if res.rank == 3:
        assert res.info["tried"] == [3]
    assert min(res.info["errors_by_k"]) >= 3
    assert {e["stage"] for e in events} >= {"start", "step", "end"}


def test_deadline_returns_promptly_and_says_so():
    X = (np.random.default_rng(0).random((400, 300)) < 0.3).astype(float)
    t0 = time.monotonic()
    res = run_rank_search(
        _lpca_search, X, method="lpca", tau=0.5, deadline=0.5, random_state=0
    )
    assert time.monotonic() - t0 < 0.5 + 2.5  # generous: a loaded CI runner
    assert res.stopped_early
    public = rounding_rank_bounds(X, methods=("lpca",), time_limit=0.5, random_state=0)
    row = next(r for r in public.report if r["method"] == "lpca")
    assert row["stopped_early"] and row["status"] == "stopped"


def test_progress_events_inside_long_fits():
    X = _planted(5, 50, 30, 3)
    events = []
    run_rank_search(
        _lpca_search,
        X,
        method="lpca",
        tau=0.5,
        random_state=0,
        progress=events.append,
        params={"polish": False, "policy": SearchPolicy(tick_seconds=0.0)},
    )
    sweeps = [e for e in events if e["message"].startswith("sweep")]
    assert sweeps and all(e["stage"] == "step" for e in sweeps)


def test_stall_rule_stops_a_fit_whose_rounding_no_longer_improves():
    rule = StallRule(window=10, fraction=0.02)
    steady = [1000 - 40 * i for i in range(12)]  # drops 4% of 1000 per sweep
    assert not rule.stalled(steady, 10**6)
    flat = [1000, 990] + [985] * 10  # 5 in 10 sweeps: below 2% of 990
    assert rule.stalled(flat, 10**6)
    assert not rule.stalled(flat[:10], 10**6)  # the window is not full yet
    # the absolute rate: 5 of 10**6 observed entries in 10 sweeps is too little
    assert StallRule(10, 0.0, rate=1e-5).stalled(flat, 10**6)
    assert not StallRule(10, 0.0, rate=1e-6).stalled(flat, 10**6)
    assert rule.scaled(3).window == 30


def test_search_runs_lbfgs_beyond_the_newton_limit_and_certifies():
    X = _planted(0, 120, 90, 6)
    private = {"kernels": Kernels(newton_max_p=2)}
    res = run_family("lpca", X, random_state=0, polish=False, private=private)
    assert res.certified and certify_rounding(X, res.L, res.R)
    solvers = res.info["solver_by_k"]
    assert set(solvers) == set(res.info["failed_by_k"])
    assert all(s == ("newton" if k <= 2 else "lbfgs") for k, s in solvers.items())
    assert any(s == "lbfgs" for s in solvers.values())


def test_a_later_run_continues_the_model_a_deadline_cut_short():
    # the portfolio's second pass hands L-PCA's search the memo of its first run:
    # the fit at k continues that model instead of a fresh SVD start (here a model
    # already exact: it certifies without a sweep, a fresh start needs sweeps)
    lpca = modules.lpca
    _svd_init = modules.lpca_init._svd_init
    _Data = modules.lpca_model._Data

    X = _planted(4, 80, 60, 3)
    data = _Data(X)
    state = _svd_init(data, 3, lpca._model_kind("global", 0.5), 0, 0.5)
    options = lpca.LPCAOptions(alpha=1e-4, stop_when_exact=True)
    *state, _, finfo = lpca._fit_core(
        data, *state, options, n_jobs=1, verbose=0, deadline=Deadline(None)
    )
    assert finfo["status"] == "exact"
    kwargs = dict(method="lpca", tau=0.5, random_state=0)
    params = {"start": 3, "max_rank": 3, "polish": False}
    fresh = run_rank_search(_lpca_search, X, params=params, **kwargs)
    assert fresh.rank == 3 and fresh.info["sweeps_by_k"][3] >= 1
    memo = SearchMemo(cut={3: tuple(state)})
    res = run_rank_search(_lpca_search, X, params=params, memo=memo, **kwargs)
    assert memo.cut == {} and res.rank == 3 and res.info["sweeps_by_k"][3] == 0


def test_only_fits_cut_by_the_deadline_are_kept_for_later():
    X = _planted(5, 60, 40, 4)
    memo = SearchMemo()
    run_rank_search(_lpca_search, X, method="lpca", tau=0.5, random_state=0, memo=memo)
    assert memo == SearchMemo()  # no deadline: nothing was cut short


def test_block_of_columns_is_the_top_pairs_of_one_gradient():
    init = modules.lpca_init
    _Data = modules.lpca_model._Data
    X = _planted(6, 90, 70, 4)
    data = _Data(X)
    kind = modules.lpca._model_kind("global", 0.5)
    U, V, mu = init._svd_init(data, 1, kind, 0, 0.5)
    one = init._add_columns(data, U, V, mu, 1)
    U3, V3, _ = init._add_columns(data, U, V, mu, 3)
    assert U3.shape == (90, 4) and V3.shape == (70, 4)
    # the first new column is the one column's (up to the randomized SVD's accuracy)
    assert np.allclose(U3[:, :2], one[0], atol=1e-6)
    assert np.allclose(V3[:, :2], one[1], atol=1e-6)
    # the new columns are scaled orthonormal singular vectors: orthogonal directions
    G = U3[:, 1:].T @ U3[:, 1:]
    assert np.allclose(G, np.diag(np.diag(G)), atol=1e-8 * np.abs(G).max())


def test_sparse_block_of_columns_is_the_dense_block():
    # sparse data: the top pairs of the gradient by chunks of rows (no m x n array),
    # with fewer power iterations than the dense SVD; the same directions
    import scipy.sparse as sp

    init = modules.lpca_init
    _Data = modules.lpca_model._Data
    X = _planted(6, 90, 70, 4)
    dense, sparse = _Data(X), _Data(sp.csr_matrix(X))
    kind = modules.lpca._model_kind("global", 0.5)
    U, V, mu = init._svd_init(dense, 1, kind, 0, 0.5)
    Ud, Vd, _ = init._add_columns(dense, U, V, mu, 3)
    Us, Vs, _ = init._add_columns(sparse, U, V, mu, 3)
    assert Us.shape == (90, 4) and Vs.shape == (70, 4)
    assert np.array_equal(Us[:, :1], U) and np.array_equal(Vs[:, :1], V)
    for j in (1, 2):  # the leading new directions, and their Newton steps
        for a, b in ((Ud[:, j], Us[:, j]), (Vd[:, j], Vs[:, j])):
            cosine = abs(a @ b) / (np.linalg.norm(a) * np.linalg.norm(b))
            assert cosine > 0.99
        assert np.isclose(
            np.linalg.norm(Us[:, j]) * np.linalg.norm(Vs[:, j]),
            np.linalg.norm(Ud[:, j]) * np.linalg.norm(Vd[:, j]),
            rtol=0.05,
        )
    one = init._add_columns(sparse, U, V, mu, 1)
    assert np.allclose(np.abs(Us[:, :2]), np.abs(one[0]), rtol=0.05, atol=1e-3)


@pytest.mark.parametrize("n_checks", [0, 3, 12])
def test_columns_added_on_sparse_data_stop_at_the_deadline(counting_deadline, n_checks):
    # the passes over the data that add columns (a gallop's start from the fit
    # below) check the deadline between their chunks: once it has passed, no
    # column is added and no further pass runs (the fit reports its start cut)
    init = modules.lpca_init
    kernels = Kernels(chunk_entries=700)  # 10 rows a chunk: 9 chunks a pass
    X = sp.csr_matrix(_planted(6, 90, 70, 4))
    data = modules.lpca_model._Data(X, kernels=kernels)
    kind = modules.lpca._model_kind("global", 0.5)
    U, V, mu = init._svd_init(data, 1, kind, 0, 0.5)
    deadline = counting_deadline(n_checks)
    U2, V2, mu2 = init._add_columns(data, U, V, mu, 3, deadline)
    assert U2.shape == U.shape and V2.shape == V.shape
    assert np.array_equal(U2, U) and np.array_equal(V2, V)
    assert deadline.calls == n_checks + 1  # nothing was checked after it passed
    free = init._add_columns(data, U, V, mu, 3, counting_deadline(None))
    assert free[0].shape == (90, 4)


@pytest.mark.parametrize("n_checks", [57, 76, 95, 114])
def test_a_start_the_deadline_cuts_records_no_count(counting_deadline, n_checks):
    # the deadline passes while a gallop's fit adds its columns: nothing was
    # fitted at that rank, so the search records no count for it (it recorded
    # every entry as wrong)
    X = sp.csr_matrix(_planted(6, 90, 70, 4))
    res = run_rank_search(
        _lpca_search,
        X,
        method="lpca",
        tau=0.5,
        deadline=counting_deadline(n_checks),
        random_state=0,
        params={"kernels": Kernels(chunk_entries=700)},
    )
    assert res.stopped_early
    assert all(v < 90 * 70 for v in res.report.errors_by_k.values())


def test_entry_weights_are_the_dense_weights_by_blocks_of_rows():
    # the boost's weights: the observation weights times a few factors, read by
    # slices of rows in both orientations, equal to the dense m x n weights
    _EntryWeights = modules.lpca_model._EntryWeights
    rng = np.random.default_rng(0)
    m, n = 13, 9
    flat = np.sort(rng.choice(m * n, size=20, replace=False))
    values = rng.uniform(2, 5, size=20)
    for base in (None, (rng.random((m, n)) > 0.2).astype(float)):
        dense = np.ones((m, n)) if base is None else base.copy()
        dense.reshape(-1)[flat] *= values
        weights = _EntryWeights((m, n), np.float64, flat, values, base)
        base_t = None if base is None else np.ascontiguousarray(base.T)
        weights_t = weights.transposed(base_t)
        assert np.array_equal(weights[0:m], dense)
        assert np.array_equal(weights[4:9], dense[4:9])
        assert np.array_equal(weights_t[2:7], dense.T[2:7])
        assert weights[5:5].shape == (0, n)
        with pytest.raises(TypeError, match="slices"):
            weights[3]


def test_boost_of_sparse_data_is_the_dense_boost_by_blocks_of_rows():
    # the boost reweights sparse data without an m x n array (it used to densify,
    # or give up past the dense-copy limit: 12 GB on 1e9 entries) and ends where
    # the boost of the same dense data ends
    import scipy.sparse as sp

    lpca, model = modules.lpca, modules.lpca_model
    X = _planted(3, 80, 60, 3)
    dense = model._Data(X)
    kind = lpca._model_kind("global", 0.5)
    U, V, mu = modules.lpca_init._svd_init(dense, 3, kind, 0, 0.5)
    options = lpca.LPCAOptions(
        solver="newton", alpha=1e-3, max_iter=10, tol=0.0, stop_when_exact=True
    )
    U, V, mu, _, finfo = lpca._fit_core(
        dense, U, V, mu, options, n_jobs=1, verbose=0, deadline=Deadline(None)
    )
    assert finfo["n_errors_logit"] > 0  # a near fit for the boost to finish
    args = dict(sweep_factor=1, n_jobs=1, verbose=0, deadline=Deadline(None))
    Ud, Vd, mud, exact_dense = modules.lpca_refine._boost(
        dense, U, V, mu, options, **args
    )
    blocks = []

    class Recorded(model._SparseSigns):  # the signs, recording the rows read
        def __getitem__(self, rows):
            blocks.append(rows.indices(self.shape[0]))
            return super().__getitem__(rows)

    # chunks of 10 rows, Gram chunks of 16
    kernels = Kernels(chunk_entries=600, gram_rows=16)
    sparse = model._Data(sp.csr_matrix(X), kernels=kernels)
    for name in ("q", "qt"):
        signs = getattr(sparse, name)
        setattr(sparse, name, Recorded(signs.indptr, signs.indices, signs.shape))
    Us, Vs, mus, exact_sparse = modules.lpca_refine._boost(
        sparse, U, V, mu, options, **args
    )
    assert exact_dense and exact_sparse
    assert blocks and max(stop - start for start, stop, _ in blocks) <= 16
    assert np.allclose(Us, Ud) and np.allclose(Vs, Vd) and np.allclose(mus, mud)


def test_a_jump_starts_from_the_fit_below_on_dense_and_sparse_data():
    # a jump of more than one rank starts from the fit below with its columns
    # added in one block (test_block_of_columns_is_the_top_pairs_of_one_gradient);
    # sparse data of as many entries take the same ranks
    X = (np.random.default_rng(0).random((60, 40)) < 0.5).astype(float)
    params = {"polish": False, "max_rank": 4}
    kwargs = dict(method="lpca", tau=0.5, random_state=0, params=params)
    # a limited budget: the search gallops from 1 while far
    dense = run_rank_search(_lpca_search, X, deadline=1000.0, **kwargs)
    tried = dense.info["tried"]
    assert any(b - a > 1 for a, b in zip(tried, tried[1:], strict=False))
    sparse = run_rank_search(_lpca_search, sp.csr_matrix(X), deadline=1000.0, **kwargs)
    assert sparse.info["tried"] == tried


def test_search_in_float32_fits_in_float32_and_certifies_in_float64():
    # Abstracts: one float32 fit at k = 100 certified in about 7 minutes, float64
    # did not in 30; the search takes the estimator's dtype, the certificate stays
    # the float64 one
    X = _planted(3, 50, 40, 3)
    res = run_family("lpca", X, random_state=0, dtype="float32")
    assert res.certified
    assert res.L.dtype == np.float64 and certify_rounding(X, res.L, res.R)
    assert res.info["fit_params"] == {"fit_bias": "global", "dtype": "float32"}
    plain = run_family("lpca", X, random_state=0)
    assert "dtype" not in plain.info["fit_params"]
    # the sweeps ran in float32: other factors than the float64 sweeps'
    assert res.L.shape != plain.L.shape or not np.array_equal(res.L, plain.L)


def test_search_sweeps_in_float32_by_default_on_large_data():
    # dtype="auto": float32 from Kernels.float32_entries entries on (lowered here)
    X = _planted(3, 50, 40, 3)
    float32 = run_family("lpca", X, random_state=0, dtype="float32")
    float64 = run_family("lpca", X, random_state=0, dtype="float64")
    for entries, same in [(50 * 40, float32), (50 * 40 + 1, float64)]:
        private = {"kernels": Kernels(float32_entries=entries)}
        res = run_family("lpca", X, random_state=0, private=private)
        assert res.info["fit_params"] == same.info["fit_params"]
        assert res.rank == same.rank and np.array_equal(res.L, same.L)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_truncated_start_keeps_the_dominant_part_of_a_certificate(dtype):
    # a certificate of rank 6 whose last two columns are small: cut to 4 columns it
    # still rounds to X; at all its 6 columns the logits keep the certificate's signs;
    # the scale is the best power of 2 (the loss rises both ways)
    lpca_init, lpca_model = modules.lpca_init, modules.lpca_model
    rng = np.random.default_rng(0)
    L0, R0 = rng.standard_normal((80, 4)), rng.standard_normal((50, 4))
    X = (L0 @ R0.T >= 0.5).astype(float)
    L = np.hstack([L0, 1e-3 * rng.standard_normal((80, 2))])
    R = np.hstack([R0, 1e-3 * rng.standard_normal((50, 2))])
    assert certify_rounding(X, L, R)
    data = lpca_model._Data(X, dtype=dtype)
    before = L.copy(), R.copy()

    def loss_and_wrong(U, V, mu):
        losses, n_wrong, _ = lpca_model._evaluate(
            None, U.astype(dtype), V.astype(dtype), mu, data, 0.5
        )
        return float(losses.sum()), n_wrong

    for p in (4, 6):
        U, V, mu = lpca_init._truncated_start(data, L, R, p, 0.5)
        assert U.shape == (80, p) and V.shape == (50, p) and mu.ndim == 0
        assert U.dtype == V.dtype == np.float64
        assert loss_and_wrong(U, V, mu)[1] == 0
        # separable: the loss falls as the scale grows, up to the last step
        c = -float(mu) / 0.5
        assert c == 2.0**lpca_init._TRUNCATED_MAX_STEPS
        if p == 6:  # all the columns: theta = c (L R^T - tau) exactly
            np.testing.assert_allclose(
                U @ V.T + float(mu), c * (L @ R.T - 0.5), rtol=1e-9, atol=1e-6
            )
    # 10% of the entries flipped: the scale is the best power of 2 (the loss rises
    # both ways); the start still rounds like the certificate
    flip = rng.random(X.shape) < 0.1
    data = lpca_model._Data(np.where(flip, 1 - X, X), dtype=dtype)
    U, V, mu = lpca_init._truncated_start(data, L, R, 4, 0.5)
    loss, n_wrong = loss_and_wrong(U, V, mu)
    assert n_wrong == flip.sum()
    for factor in (2.0, 0.5):
        root = np.sqrt(factor)
        assert loss_and_wrong(U * root, V * root, mu * factor)[0] >= loss
    assert np.array_equal(L, before[0]) and np.array_equal(R, before[1])
    # a sparse certificate (ProjLP's copied columns are CSR) gives the same start
    U1 = lpca_init._truncated_start(data, L, R, 4, 0.5)[0]
    U2 = lpca_init._truncated_start(data, sp.csr_matrix(L), sp.csr_matrix(R), 4, 0.5)[0]
    np.testing.assert_allclose(U1, U2)


def test_truncated_start_chooses_the_scale_on_blocks_of_rows():
    # on large data the scale comes from evenly spaced blocks of rows, not a pass
    # over all entries (11 s per pass on 1e9 entries): here 8 blocks of 2 rows,
    # which miss row 5, the one row the certificate rounds wrong
    lpca_init, lpca_model = modules.lpca_init, modules.lpca_model
    rng = np.random.default_rng(0)
    L0, R0 = rng.standard_normal((80, 5)), rng.standard_normal((50, 5))
    L = np.hstack([L0, 1e-3 * rng.standard_normal((80, 1))])
    R = np.hstack([R0, 1e-3 * rng.standard_normal((50, 1))])
    X = (L0 @ R0.T >= 0.5).astype(float)
    X[5] = 1 - X[5]
    full = lpca_init._truncated_start(lpca_model._Data(X), L, R, 5, 0.5)
    kernels = Kernels(truncated_sample=16 * 50)
    data = lpca_model._Data(X, kernels=kernels)
    sampled = lpca_init._truncated_start(data, L, R, 5, 0.5)
    np.testing.assert_allclose(
        sampled[0] @ sampled[1].T,
        full[0] @ full[1].T * (float(sampled[2]) / float(full[2])),
    )
    # the sample is separable: the scale grows to its last step; all rows: less
    c_sampled, c_full = -float(sampled[2]) / 0.5, -float(full[2]) / 0.5
    assert c_sampled == 2.0**lpca_init._TRUNCATED_MAX_STEPS > c_full


def test_a_search_on_large_data_starts_where_its_sample_put_it():
    # a policy whose sample is small makes this 120 x 90 matrix "large": the
    # search runs first on 23 whole rows (about 2000 entries), certified there,
    # and the data's first fit is at twice the rank the sample certified
    X = _planted(0, 120, 90, 6)
    events = []
    policy = SearchPolicy(sample_entries=2000)
    res = run_family(
        "lpca",
        X,
        time_limit=60.0,
        random_state=0,
        policy=policy,
        progress=events.append,
    )
    sample = res.info["sample"]
    assert (sample["axis"], sample["size"]) == (0, 23)
    assert sample["rank"] is not None and sample["lo"] < sample["rank"]
    assert res.info["tried"][0] == sample["first"] == 2 * sample["rank"]
    assert res.certified and certify_rounding(X, res.L, res.R)
    # the sample's fits reach the user as steps, its certificate never as a bound
    steps = [e for e in events if e["message"].startswith("sample of 23 rows")]
    assert steps and all(e["stage"] == "step" for e in steps)
    improved = [e["bound"] for e in events if e["stage"] == "improved"]
    assert improved[-1] == res.rank


@pytest.mark.parametrize(
    "time_limit, sample_entries", [(None, 2000), (60.0, 2701), (60.0, 10**7)]
)
def test_no_sample_without_a_time_limit_or_below_four_samples_of_entries(
    time_limit, sample_entries
):
    X = _planted(0, 120, 90, 6)  # 10,800 entries: under 4 x 2701
    policy = SearchPolicy(sample_entries=sample_entries)
    res = run_family("lpca", X, time_limit=time_limit, random_state=0, policy=policy)
    assert "sample" not in res.info
    assert res.certified and certify_rounding(X, res.L, res.R)
