"""Tests of ProjLP (sklearn_rrank._projlp._projlp, _projlp_search, _projlp_copied)."""

import functools

import numpy as np
import pytest
import scipy.sparse as sp
from _family import (
    Deadline,
    Incumbent,
    LargeInput,
    _check_solver,
    _copied_columns_factors,
    _projection_matrix,
    _projlp_search,
    _ProjLPSearch,
    _SVDStart,
    projlp_fit,
    projlp_transform,
    run_family,
    run_rank_search,
    solve_columns_l1,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from sklearn_rrank import certify_rounding, rounding_error, rounding_rank_bounds
from sklearn_rrank.datasets import make_rounding_rank_matrix

#: ProjLP's rules for large input from 0 entries: phase 0 on small input
AS_LARGE = LargeInput(entries=0)


@pytest.fixture(scope="module")
def planted():
    return make_rounding_rank_matrix(40, 30, 3, random_state=0).astype(float)


# -- projections -------------------------------------------------------------------
def test_projection_distributions():
    A = _projection_matrix(3000, 20, "sparse", False, 0)
    values = np.unique(np.round(A * np.sqrt(20 / 3), 12))
    np.testing.assert_allclose(values, [-1, 0, 1])
    assert abs(np.mean(A == 0) - 2 / 3) < 0.02
    B = _projection_matrix(3000, 20, "dense", False, 0)
    np.testing.assert_allclose(np.abs(B), 1 / np.sqrt(20))
    assert abs(np.mean(B > 0) - 0.5) < 0.02
    assert (_projection_matrix(50, 5, "sign", True, 1) >= 0).all()
    np.testing.assert_array_equal(A, _projection_matrix(3000, 20, "sparse", False, 0))


# -- minimum-error fit ---------------------------------------------------------------
def test_fit_one_shot_is_the_paper_lp(planted):
    res = projlp_fit(planted, 3, max_iter=0, random_state=0)
    assert res.L.shape == (40, 3) and res.R.shape == (30, 3)
    assert res.converged and res.n_iter == 1
    # L = X A, and R is the column L1-LP solution for that L
    R, status, objective = solve_columns_l1(res.L, planted)
    np.testing.assert_allclose(res.R, R)
    assert res.info["lp_objective"] == pytest.approx(objective.sum())
    assert res.info["n_errors"] == rounding_error(planted, res.L @ res.R.T)


def test_fit_refinement_lowers_objective_and_errors(planted):
    one = projlp_fit(planted, 3, max_iter=0, random_state=1)
    ref = projlp_fit(planted, 3, max_iter=10, random_state=1)
    hist = ref.info["objective_history"]
    assert all(
        b <= a * (1 + 1e-6) + 1e-9 for a, b in zip(hist[:-1], hist[1:], strict=True)
    )
    assert ref.info["n_errors"] <= one.info["n_errors"]
    assert ref.info["n_errors"] == min(ref.info["errors_history"])
    assert ref.info["n_errors"] == rounding_error(planted, ref.L @ ref.R.T)


def test_fit_is_deterministic_and_independent_of_n_jobs(planted):
    a = projlp_fit(planted, 4, random_state=3, n_jobs=1, max_iter=2)
    b = projlp_fit(planted, 4, random_state=3, n_jobs=2, max_iter=2)
    np.testing.assert_array_equal(a.L, b.L)
    np.testing.assert_array_equal(a.R, b.R)


def test_fit_missing_entries_and_nonnegative(planted):
    rng = np.random.default_rng(0)
    X = planted.copy()
    X[rng.random(X.shape) < 0.1] = np.nan
    res = projlp_fit(X, 3, random_state=0, max_iter=3)
    assert np.isfinite(res.L).all() and np.isfinite(res.R).all()
    assert res.info["n_errors"] == rounding_error(X, res.L @ res.R.T)
    nn = projlp_fit(planted, 3, random_state=0, nonnegative=True, max_iter=2)
    assert (nn.L >= 0).all() and (nn.R >= 0).all()


def test_transform_recovers_planted_rows():
    X, L, R, _ = make_rounding_rank_matrix(
        30, 20, 3, random_state=2, return_factors=True
    )
    L_new = projlp_transform(X, R)
    assert rounding_error(X, L_new @ R.T) == 0


def test_fit_parameter_validation(planted):
    with pytest.raises(ValueError, match="n_components"):
        projlp_fit(planted, 0)
    with pytest.raises(ValueError, match="projection"):
        projlp_fit(planted, 2, projection="gaussian")
    with pytest.raises(ValueError, match="max_iter"):
        projlp_fit(planted, 2, max_iter=-1)
    with pytest.raises(ValueError, match="not binary"):
        projlp_fit(planted * 3, 2)


@pytest.mark.parametrize(
    "params", [{"eps": -1.0}, {"eps": np.inf}, {"solver": "newton"}]
)
def test_projlp_doors_name_the_bad_method_parameter(planted, params):
    # PROJLP_PARAMS is declared once: projlp_fit, projlp_transform and the
    # estimator's method_params reject the value and name the parameter
    from sklearn_rrank import RoundingRankFactorization

    (name,) = params
    with pytest.raises(ValueError, match=f"'{name}' parameter of projlp_fit"):
        projlp_fit(planted, 2, **params)
    with pytest.raises(ValueError, match=f"'{name}' parameter of projlp_transform"):
        projlp_transform(planted, np.ones((planted.shape[1], 2)), **params)
    est = RoundingRankFactorization(2, method="projlp", method_params=params)
    with pytest.raises(ValueError, match=f"'{name}' parameter"):
        est.fit(planted)
    if name == "eps":
        with pytest.raises(ValueError, match="'eps' parameter"):
            rounding_rank_bounds(
                planted, methods=("projlp",), method_params={"projlp": params}
            )


# -- rank search ---------------------------------------------------------------------
@pytest.mark.parametrize("nested", [True, False])
def test_rank_search_certifies(planted, nested):
    res = run_family("projlp", planted, nested=nested, random_state=0)
    assert res.certified and not res.stopped_early
    assert res.L.shape == (40, res.rank) and res.R.shape == (30, res.rank)
    assert certify_rounding(planted, res.L, res.R)
    assert res.rank <= 6
    info = res.info
    assert info["n_lps"] > 0 and info["d_tried"][0] == 1
    assert info["phase1_rank"] >= res.rank
    assert set(info["lp_status_counts"]) <= {"optimal", "numerical_error"}


def test_rank_search_without_refinement_is_the_projection_loop(planted):
    res = run_family("projlp", planted, refine=False, random_state=0)
    assert res.rank == res.info["phase1_rank"] == res.info["d_tried"][-1]
    assert res.info["refine_tried"] == []
    more = run_family("projlp", planted, refine=False, n_retries=20, random_state=0)
    assert more.rank <= res.rank and more.info["n_projections"] >= 20
    assert certify_rounding(planted, more.L, more.R)


def test_rank_search_independent_of_n_jobs(planted):
    a = run_family("projlp", planted, random_state=1, n_jobs=1, n_retries=8)
    b = run_family("projlp", planted, random_state=1, n_jobs=2, n_retries=8)
    assert a.rank == b.rank
    np.testing.assert_array_equal(a.L, b.L)
    np.testing.assert_array_equal(a.R, b.R)


def test_rank_search_time_limit_and_trivial_cases(planted):
    res = run_family("projlp", planted, time_limit=0.0, random_state=0)
    assert res.stopped_early and res.rank is None and not res.certified
    zero = run_family("projlp", np.zeros((4, 3)))
    assert zero.rank == 0 and zero.certified
    capped = run_family("projlp", planted, max_rank=1, random_state=0)
    assert capped.rank is None and capped.stopped_early


def test_rank_search_missing_entries_and_nonnegative(planted):
    X = planted.copy()
    X[np.random.default_rng(1).random(X.shape) < 0.2] = np.nan
    res = run_family("projlp", X, random_state=0)
    assert res.certified and certify_rounding(X, res.L, res.R)
    nn = run_family("projlp", planted, nonnegative=True, random_state=0)
    assert nn.certified and (nn.L >= 0).all() and (nn.R >= 0).all()


def test_rank_search_phase1(digits150):
    res = run_family("projlp", digits150, refine=False, random_state=0)
    assert res.certified and res.rank <= 40
    assert certify_rounding(digits150, res.L, res.R)


def test_rank_search_parameter_validation(planted):
    for name, value in (("max_rank", 0), ("n_retries", -1), ("refine_iter", -1)):
        with pytest.raises(ValueError, match=name):
            rounding_rank_bounds(
                planted, methods=("projlp",), method_params={"projlp": {name: value}}
            )


# -- regressions of issue 11 ----------------------------------------------------------
@pytest.mark.parametrize(
    "X, tau",
    [
        ([[0, 1, 0, 1], [1, 1, 0, 1], [0, 1, 0, 1], [1, 1, 0, 1]], 0.5),
        ([[1, 0, 1], [1, 1, 1], [0, 0, 0]], 0.25),
    ],
)
@pytest.mark.parametrize("seed", range(8))
def test_small_rank_one_matrices_do_not_crash(X, tau, seed):
    # the merged matrix is smaller than the widths phase 2 asks for (issue 11)
    X = np.array(X)
    res = run_family("projlp", X, tau=tau, random_state=seed)
    assert res.certified and res.rank == 1
    assert certify_rounding(X, res.L, res.R, tau=tau)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    X=hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=2, max_dims=2, min_side=1, max_side=6),
        elements=st.sampled_from([0.0, 1.0]),
    ),
    tau=st.sampled_from([0.0, 0.25, 0.5, 1.0]),
    seed=st.integers(0, 2**16),
)
def test_small_matrices_never_raise_and_certify(X, tau, seed):
    res = run_family("projlp", X, tau=tau, random_state=seed)
    # phase 1 falls back to the trivial certificate of the merged matrix
    assert res.certified and res.rank <= min(X.shape) + 1
    assert certify_rounding(X, res.L, res.R, tau=tau)


def test_degenerate_projection_falls_back_to_the_trivial_certificate():
    # seed 0: the 5 x 6 +-1 projection of this tau=1 matrix separates no column set
    X = np.array(
        [
            [0, 1, 1, 1, 1],
            [1, 1, 1, 0, 0],
            [1, 1, 1, 1, 1],
            [0, 1, 1, 1, 1],
            [1, 0, 1, 1, 0],
        ],
        dtype=float,
    )
    for seed in range(10):
        res = run_family("projlp", X, tau=1.0, random_state=seed, refine=False)
        assert res.certified, seed
        assert certify_rounding(X, res.L, res.R, tau=1.0)
    # the fallback respects max_rank
    res = run_family("projlp", X, tau=1.0, max_rank=1, refine=False, random_state=0)
    assert res.rank is None and res.stopped_early


@pytest.mark.parametrize("shape, k", [((4, 5), 1), ((6, 6), 2)])
def test_all_ones_comes_out_exact(shape, k):
    from sklearn_rrank import RoundingRankFactorization

    for seed in range(20):
        est = RoundingRankFactorization(k, method="projlp", random_state=seed)
        assert est.fit(np.ones(shape)).reconstruction_err_ == 0, seed


@pytest.mark.parametrize("k", [2, 5, 10])
def test_default_fits_converge_on_real_data(digits150, k):
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    from sklearn_rrank import RoundingRankFactorization

    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        RoundingRankFactorization(k, method="projlp", random_state=0).fit(digits150)


def test_max_iter_hit_while_improving_still_warns(digits150):
    from sklearn.exceptions import ConvergenceWarning

    from sklearn_rrank import RoundingRankFactorization

    est = RoundingRankFactorization(10, method="projlp", random_state=0, max_iter=1)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        est.fit(digits150)


def test_search_stays_below_the_cap_and_descends_from_its_factors():
    X, L, R, X0 = make_rounding_rank_matrix(
        40, 30, 4, random_state=0, return_factors=True
    )
    X0 = X0.astype(float)
    assert certify_rounding(X0, L, R)
    res = run_rank_search(
        _projlp_search,
        X0,
        method="projlp",
        tau=0.5,
        cap=4,
        cap_factors=(L, R),
        random_state=0,
        params={"nested": True, "refine": True},
    )
    # phase 1 only tried widths below the cap and certified none, so phase 2
    # started one below the cap, from the cap's factors (the only certificate)
    assert res.info["d_tried"] and max(res.info["d_tried"]) < 4
    assert res.info["phase1_rank"] is None
    assert res.info["refine_tried"][0] == 3
    assert res.rank is None or res.rank < 4
    if res.rank is not None:
        assert certify_rounding(X0, res.L, res.R)
    # with a cap of 2 that meets the lower bound nothing runs
    res2 = run_rank_search(
        _projlp_search, X0, method="projlp", tau=0.5, cap=2, lower=2, random_state=0
    )
    assert res2.rank is None and "nothing to search" in res2.info["message"]


def test_search_stops_at_the_lower_bound(planted):
    res = run_rank_search(
        _projlp_search, planted, method="projlp", tau=0.5, lower=5, random_state=0
    )
    # without the lower bound this seed descends to 4; with it the search stops at 5
    assert res.rank == 5 and certify_rounding(planted, res.L, res.R)
    assert min(res.info["d_tried"]) >= 5
    assert all(w >= 5 for w in res.info["refine_tried"])
    assert res.info["errors_by_k"] and not res.stopped_early
    # another method's cap at the lower bound: nothing to do
    res = run_rank_search(
        _projlp_search,
        planted,
        method="projlp",
        tau=0.5,
        lower=5,
        cap=5,
        cap_factors=(res.L, res.R),
    )
    assert res.rank is None


def test_deadline_returns_promptly():
    import time

    X = make_rounding_rank_matrix(300, 200, 15, noise=0.05, random_state=0)
    t0 = time.monotonic()
    res = run_family("projlp", X, time_limit=0.5, random_state=0)
    assert time.monotonic() - t0 < 1.5
    assert res.stopped_early and "time limit" in res.info["message"]
    if res.certified:
        assert certify_rounding(X, res.L, res.R)
    # the same through the skeleton with a Deadline object
    t0 = time.monotonic()
    res = run_rank_search(
        _projlp_search, X.astype(float), method="projlp", tau=0.5, deadline=0.5
    )
    assert time.monotonic() - t0 < 1.5 and res.stopped_early


@pytest.mark.parametrize("method", ["projlp", "lpca"])
def test_time_limit_returns_best_so_far_and_says_so(digits150, method):
    from sklearn.exceptions import ConvergenceWarning

    from sklearn_rrank import RoundingRankFactorization

    est = RoundingRankFactorization(10, method=method, random_state=0, time_limit=0.0)
    with pytest.warns(ConvergenceWarning, match="raise time_limit"):
        est.fit(digits150)
    info = est.solver_info_
    assert "time_limit" in (info.get("status"), info.get("stop_reason"))
    assert not est.certified_
    # the reported error is the error of the returned factors
    L = est.transform(digits150) if method == "lpca" else None
    if L is not None:
        assert L.shape == (digits150.shape[0], 10)
    assert 0 < est.reconstruction_err_ <= digits150.size


def test_time_limit_unused_by_one_shot_methods_raises(digits150):
    from sklearn_rrank import RoundingRankFactorization

    for method in ["rsvd", "asso"]:
        est = RoundingRankFactorization(3, method=method, time_limit=5.0)
        with pytest.raises(ValueError, match="time_limit=5.0 is not used"):
            est.fit(digits150)


def test_projlp_fit_time_limit_validation(planted):
    with pytest.raises(ValueError, match="time_limit"):
        projlp_fit(planted, 2, time_limit=-1)
    res = projlp_fit(planted, 3, random_state=0, time_limit=1e6)
    assert res.info["stop_reason"] != "time_limit"


# -- phase 0 (large input): batched separation with copied columns -----------------
@pytest.mark.parametrize("tau", [0.5, 2.0, 0.0, -0.3])
def test_copied_columns_factors_are_exact(tau):
    rng = np.random.default_rng(0)
    X = (rng.random((30, 12)) < 0.3).astype(float)
    X[0] = 1.0  # a row of ones and one of zeros
    X[1] = 0.0
    Lu = np.ones((30, 1)) if tau <= 0 else np.zeros((30, 1))
    ident = np.arange(30), np.arange(12)
    L, R = _copied_columns_factors(
        Lu, np.zeros((12, 1)), np.zeros(12, bool), X, tau, *ident
    )
    assert L.shape[1] == 13
    assert certify_rounding(X, L, R, tau=tau)


@pytest.mark.parametrize("tau", [0.5, -0.3])
def test_copied_columns_factors_expand_merged_rows_and_columns(tau):
    # the merged matrix Xu stands for X = Xu[row_owner][:, col_owner]; the factors
    # come out at the size of X, the separated columns keep their rows of R_sep
    rng = np.random.default_rng(1)
    Xu = (rng.random((20, 9)) < 0.4).astype(float)
    Xu[3, 2] = np.nan  # a missing entry is copied as 0 and left unconstrained
    row_owner = np.r_[np.arange(20), [0, 5, 5]]
    col_owner = np.r_[np.arange(9), [8, 1]]
    X = Xu[row_owner][:, col_owner]
    Lu = np.hstack([np.ones((20, 1)), rng.standard_normal((20, 2))])
    R_sep = np.zeros((9, 3))
    R_sep[:, 0] = 2.0 if tau > 0 else tau + 1.0
    Xu[:, 4] = 1.0  # an all-ones column, separated by the column of ones of Lu
    separated = np.zeros(9, dtype=bool)
    separated[4] = True
    L, R = _copied_columns_factors(Lu, R_sep, separated, Xu, tau, row_owner, col_owner)
    X = Xu[row_owner][:, col_owner]
    assert L.shape == (23, 3 + (~separated).sum()) and R.shape == (11, L.shape[1])
    assert certify_rounding(X, L, R, tau=tau)
    np.testing.assert_array_equal(R[4, :3], R_sep[4])


@pytest.mark.parametrize("tau", [0.5, 0.0, -0.3])
def test_phase0_certifies_and_is_reproducible(planted, tau):
    kw = dict(tau=tau, random_state=0, private={"large": AS_LARGE})
    res = run_family("projlp", planted, n_jobs=1, **kw)
    info = res.info
    assert info["phase0_tried"] and res.certified
    assert certify_rounding(planted, res.L, res.R, tau=tau)
    assert res.rank <= min(planted.shape) + 1
    best = min(bound for _, bound in info["phase0_tried"])
    assert res.rank <= best  # the LP repair only lowers it
    for _, history in info["phase0_alternation"]:  # rows and columns, never worse
        assert history == sorted(history, reverse=True)
        assert (len(history) > 0) == (tau > 0)
    again = run_family("projlp", planted, n_jobs=2, **kw)
    assert again.rank == res.rank
    np.testing.assert_array_equal(again.L, res.L)


def _projlp_state(X, tau):
    """The state of a ProjLP search of ``X`` (phase 0 from 0 entries), not run."""
    return _ProjLPSearch.merged(
        X,
        Incumbent(X, tau, "projlp"),
        Deadline(None),
        tau=tau,
        nonnegative=False,
        nested=True,
        eps=1e-6,
        projection="dense",
        n_jobs=1,
        verbose=0,
        rng=np.random.RandomState(0),
        large=AS_LARGE,
    )


@pytest.mark.parametrize("tau", [0.5, 0.7])
def test_phase0_on_sparse_input_never_densifies_the_merged_matrix(tau):
    # issue 28: sparse data stays sparse through phase 0 (0.5 GB on Abstracts); the
    # bound and the certificate are those of the dense input
    X = make_rounding_rank_matrix(60, 40, 3, random_state=1).astype(float)
    X[:, :4] = 0.0  # fewer ones, and a merged (repeated) column
    X[5] = X[4]  # a merged row
    # the merged matrix phase 0 reads: CSR for sparse X, dense for dense X
    merged = _projlp_state(X, tau).Xu
    state = _projlp_state(sp.csr_matrix(X), tau)
    assert not sp.issparse(merged) and sp.issparse(state.Xu)
    np.testing.assert_array_equal(state.Xu.toarray(), merged)
    kw = dict(tau=tau, random_state=0, n_jobs=1, private={"large": AS_LARGE})
    dense = run_family("projlp", X, **kw)
    sparse = run_family("projlp", sp.csr_matrix(X), **kw)
    assert sparse.certified and sparse.rank == dense.rank
    assert certify_rounding(X, sparse.L, sparse.R, tau=tau)
    assert sparse.info["phase0_tried"] == dense.info["phase0_tried"]


def test_phase0_reports_its_steps(planted):
    # on Abstracts one alternation step of phase 0 takes tens of seconds: each step
    # and the (uninterruptible) SVD start say so, with the uncertified entries
    events = []
    run_family(
        "projlp",
        planted,
        random_state=0,
        progress=events.append,
        private={"large": AS_LARGE},
    )
    messages = [e["message"] for e in events if e["method"] == "projlp"]
    assert any(msg.endswith("SVD start") for msg in messages)
    steps = [msg for msg in messages if "separated, " in msg]
    assert steps and all(msg.endswith("entries uncertified") for msg in steps)
    assert any("rows separated" in msg for msg in steps)


@pytest.mark.parametrize("tau", [0.5, 0.0])
def test_phase0_makes_the_projection_input_only_when_it_projects(planted, tau):
    # with tau > 0 phase 0 never projects: no m x n copy of the points (500 MB
    # on Abstracts); its offset column for tau <= 0 is a projection
    state = _projlp_state(planted, tau)
    state.phase0()
    assert state.diag.phase0_tried and state.incumbent.rank is not None
    assert ("X0u" in vars(state)) == (tau <= 0)  # made on first use only


def test_phase0_respects_the_deadline(planted):
    res = run_family(
        "projlp", planted, random_state=0, time_limit=0.0, private={"large": AS_LARGE}
    )
    assert res.stopped_early


def test_phase0_skips_an_svd_start_that_does_not_fit_the_deadline(planted):
    # on a 32000 x 16000 matrix the Gram SVD of the start took minutes of a 32 s share
    slow = {"large": LargeInput(entries=0, svd_seconds=lambda m, n, nnz: 1e9)}
    res = run_family("projlp", planted, random_state=0, time_limit=30.0, private=slow)
    info = res.info
    assert info["phase0_tried"] == [] and "SVD start" in info["phase0_skipped"]
    assert "phase 0 stopped" in info["message"]
    assert res.certified and certify_rounding(planted, res.L, res.R)  # phase 1 did
    unlimited = run_family("projlp", planted, random_state=0, private=slow)
    # no estimate asked
    assert unlimited.info["phase0_skipped"] is None


def test_phase0_ends_its_widths_in_time_for_the_check_of_its_certificate(planted):
    # no deadline stops the check of phase 0's wide certificate: its widths end the
    # estimated check of a certificate as wide as the known bound before the deadline
    asked = []

    def check(m, n, k):
        asked.append((m, n, k))
        return 1e9

    slow = {"large": LargeInput(entries=0, check_seconds=check)}
    res = run_family("projlp", planted, random_state=0, time_limit=30.0, private=slow)
    assert asked == [(*planted.shape, min(planted.shape))]
    assert res.info["phase0_tried"] == []  # no time was left for a width
    skipped = res.info["phase0_skipped"]
    assert "0 s were left (and 1000000000 s kept for the check" in skipped
    assert res.certified and certify_rounding(planted, res.L, res.R)  # phase 1 did
    # a check that fits leaves phase 0 its widths; without a time limit none is asked
    fast = {"large": LargeInput(entries=0, check_seconds=lambda m, n, k: 0.0)}
    res = run_family("projlp", planted, random_state=0, time_limit=30.0, private=fast)
    assert res.info["phase0_tried"] and res.certified
    asked.clear()
    run_family("projlp", planted, random_state=0, private=slow)
    assert asked == []


def test_phase0_estimates_the_svd_start_of_sparse_data_from_its_ones(planted):
    # issue 69: a CSR matrix with over a tenth ones gets the sparse Gram product,
    # and its skip said what the dense one would have cost (m n, not nnz)
    asked = []

    def seconds(m, n, nnz):
        asked.append(nnz)
        return 1e9 if nnz is None else 1e6 + nnz

    slow = {"large": LargeInput(entries=0, svd_seconds=seconds)}
    Xs = sp.csr_matrix(planted)
    assert Xs.nnz > 0.1 * planted.size
    res = run_family("projlp", Xs, random_state=0, time_limit=30, private=slow)
    (nnz,) = asked
    assert 0 < nnz <= Xs.nnz  # the ones of the merged matrix
    skipped = res.info["phase0_skipped"]
    assert f"needs about {1e6 + nnz:.0f} s (sparse, {nnz} ones)" in skipped
    # the same data dense: the dense product, estimated from m n
    asked.clear()
    res = run_family("projlp", planted, random_state=0, time_limit=30, private=slow)
    assert asked == [None] and "needs about 1000000000 s," in res.info["phase0_skipped"]


def test_sparse_data_skip_the_lp_phases_when_phase0_could_not_start(planted):
    # a 22,627 x 11,313 CSR matrix with a 60 s budget: phase 0's SVD start did not
    # fit, and the LP phases made the merged matrix dense (4.3 GB peak) for 32 LPs
    slow = {"large": LargeInput(entries=0, svd_seconds=lambda m, n, nnz: 1e9)}
    Xs = sp.csr_matrix(planted)
    res = run_family("projlp", Xs, random_state=0, time_limit=30, private=slow)
    info = res.info
    assert info["phase0_tried"] == [] and "SVD start" in info["phase0_skipped"]
    assert "LP phases were not run" in info["message"] and res.stopped_early
    assert info["n_lps"] == 0 and not res.certified  # no LP phase ran
    # dense data keep the LP phases (the test above), as does sparse data whose
    # phase 0 ran
    large = {"large": AS_LARGE}
    res = run_family("projlp", Xs, random_state=0, time_limit=30, private=large)
    assert res.info["phase0_tried"] and res.certified


def test_svd_start_sparse_gram_equals_the_dense_one():
    rng = np.random.default_rng(0)
    sparse = (rng.random((200, 120)) < 0.05).astype(float)  # 5% ones
    dense = sparse.copy()
    dense[:100] = 1.0  # over a tenth ones: the dense product
    for X in (sparse, dense):
        start = _SVDStart(X, Deadline(None))
        assert (start.nnz is not None) == (X is sparse)
        L, R = start.factors(10)
        U, s, Vt = np.linalg.svd(X, full_matrices=False)
        np.testing.assert_allclose(L @ R.T, (U[:, :10] * s[:10]) @ Vt[:10], atol=1e-8)


def test_phase0_lps_finish_what_the_descent_and_newton_leave(planted):
    # one descent step, and Newton returns its start: the LPs are left work
    short = LargeInput(entries=0, separation_iter=1, newton_iter=0)
    res = run_family(
        "projlp", planted, random_state=0, n_jobs=2, private={"large": short}
    )
    assert res.info["n_lps"] > 0 and res.certified
    assert certify_rounding(planted, res.L, res.R)
    first = res.info["phase0_tried"][0]
    assert res.rank < first[1]  # the LPs lowered the first width's bound


# -- projlp_fit with the squared hinge (large input) --------------------------------
@pytest.mark.parametrize("tau", [0.5, -0.3])
def test_hinge_solver_lowers_the_errors_and_reports_them(planted, tau):
    one_shot = projlp_fit(planted, 3, tau=tau, solver="hinge", max_iter=0)
    res = projlp_fit(planted, 3, tau=tau, solver="hinge", max_iter=20, random_state=0)
    info = res.info
    assert info["solver"] == "hinge" and info["n_lps"] == 0
    assert one_shot.info["stop_reason"] in ("one_shot", "exact")
    errors = int(np.sum((res.L @ res.R.T >= tau) != (planted == 1)))
    assert info["n_errors"] == errors <= info["objective_history"][-1]
    history = info["objective_history"]
    assert history == sorted(history, reverse=True)  # uncertified entries
    assert info["stop_reason"] in ("exact", "tol", "max_iter")
    again = projlp_fit(
        planted, 3, tau=tau, solver="hinge", max_iter=20, random_state=0, n_jobs=2
    )
    np.testing.assert_array_equal(again.L, res.L)
    np.testing.assert_array_equal(again.R, res.R)


def test_hinge_solver_recovers_a_planted_matrix():
    X = make_rounding_rank_matrix(120, 80, 3, random_state=1).astype(float)
    res = projlp_fit(X, 6, solver="hinge", max_iter=30, random_state=0)
    lp = projlp_fit(X, 6, solver="lp", max_iter=0, random_state=0)
    assert res.info["n_errors"] < lp.info["n_errors"]  # below the one-shot LP


def test_hinge_solver_choice_and_validation(planted):
    assert projlp_fit(planted, 2, max_iter=1).info["solver"] == "lp"  # small input
    # "auto" picks the hinge from 4e6 entries, unless the factors are non-negative
    large = LargeInput().entries
    assert _check_solver("auto", False, large - 1) == "lp"
    assert _check_solver("auto", False, large) == "hinge"
    assert _check_solver("auto", True, large) == "lp"
    with pytest.raises(ValueError, match="non-negative"):
        projlp_fit(planted, 2, solver="hinge", nonnegative=True)
    with pytest.raises(ValueError, match="solver"):
        projlp_fit(planted, 2, solver="newton")
    res = projlp_fit(planted, 2, solver="hinge", time_limit=0.0)
    assert res.info["stop_reason"] in ("time_limit", "exact")
    assert not res.converged or res.info["stop_reason"] == "exact"


def test_hinge_transform_rows_and_choice():
    from sklearn_rrank import RoundingRankFactorization

    X, L, R, _ = make_rounding_rank_matrix(
        150, 60, 3, random_state=2, return_factors=True
    )
    X = X.astype(float)
    L_h = projlp_transform(X, R, solver="hinge")
    L_lp = projlp_transform(X, R, solver="lp")
    assert L_h.shape == L_lp.shape == (150, 3)
    # the planted R separates every row: both solvers find rows that round to X
    assert np.mean((L_h @ R.T >= 0.5) == (X == 1)) > 0.99
    with pytest.raises(ValueError, match="non-negative"):
        projlp_transform(X, np.abs(R), solver="hinge", nonnegative=True)
    with pytest.raises(ValueError, match="rows"):
        projlp_transform(X, R[:5], solver="hinge")
    # the estimator hands the solver to transform, so fit_transform stays cheap:
    # new rows get the hinge rows of the public transform, not the LP ones
    est = RoundingRankFactorization(
        3, method="projlp", random_state=0, method_params={"solver": "hinge"}
    ).fit(X)
    assert est.solver_info_["solver"] == "hinge"
    assert est.transform(X).shape == (150, 3)
    X_new = make_rounding_rank_matrix(40, 60, 3, random_state=5).astype(float)
    L_new = est.transform(X_new)
    R_fit = est.components_.T
    np.testing.assert_allclose(
        L_new, projlp_transform(X_new, R_fit, solver="hinge"), atol=1e-6
    )
    assert not np.allclose(L_new, projlp_transform(X_new, R_fit, solver="lp"))


@pytest.mark.parametrize("method", ["projlp", "lpca"])
def test_time_limit_keeps_the_fitted_rows(digits150, method):
    """With a budget, fit never re-solves the training rows (transform has no
    deadline): on Abstracts k=100 that re-solve ran minutes past the limit."""
    from sklearn_rrank import RoundingRankFactorization

    budget = RoundingRankFactorization(5, method=method, random_state=0, time_limit=60)
    L = budget.fit_transform(digits150)
    plain = RoundingRankFactorization(5, method=method, random_state=0)
    L_plain = plain.fit_transform(digits150)
    # the same fit: with a budget its rows stay as fitted (not those transform
    # solves), without one they are transform's
    np.testing.assert_array_equal(budget.components_, plain.components_)
    assert not np.array_equal(L, budget.transform(digits150))
    np.testing.assert_array_equal(L_plain, plain.transform(digits150))
    if method == "projlp":
        np.testing.assert_array_equal(L, projlp_fit(digits150, 5, random_state=0).L)


def test_estimator_max_iter_zero_is_the_one_shot_projlp(planted):
    from sklearn_rrank import RoundingRankFactorization

    res = projlp_fit(planted, 3, max_iter=0, random_state=0)
    est = RoundingRankFactorization(3, method="projlp", max_iter=0, random_state=0)
    L = est.fit_transform(planted)
    np.testing.assert_allclose(est.components_.T, res.R)
    np.testing.assert_allclose(L, res.L)
    assert est.reconstruction_err_ == res.info["n_errors"]
    with pytest.raises(ValueError, match="max_iter=0 is not supported by method='lpca"):
        RoundingRankFactorization(3, method="lpca", max_iter=0).fit(planted)
    # the messages name the methods that can, from the registry
    with pytest.raises(ValueError, match="method='projlp'"):
        RoundingRankFactorization(3, method="lpca", max_iter=0).fit(planted)
    with pytest.raises(ValueError, match="nonnegative=True .* use 'projlp'"):
        RoundingRankFactorization(3, method="rsvd", nonnegative=True).fit(planted)


def test_phase0_does_not_run_when_the_known_bound_is_below_its_first_width():
    # Abstracts, 900 s: L-PCA certified 133, and phase 0 spent 485 s at its first
    # width, 408, which cannot beat it (a certificate of width d has d columns)
    search = functools.partial(_projlp_search, large=AS_LARGE)
    X = make_rounding_rank_matrix(120, 100, 3, random_state=0).astype(float)
    kwargs = dict(method="projlp", tau=0.5, deadline=Deadline(30.0), random_state=0)
    res = run_rank_search(search, X, cap=3, **kwargs)
    info = res.info
    assert "not below the known bound 3" in info["phase0_out_of_reach"]
    assert info["phase0_tried"] == [] and info["n_lps"] == 0
    assert "phase 0 not run" in info["message"] and not res.stopped_early
    # below its first width phase 0 runs as before
    res = run_rank_search(search, X, **kwargs)
    assert res.info["phase0_out_of_reach"] is None and res.info["phase0_tried"]


def test_phase2_reports_every_round(planted):
    # a round of phase 2 solves one LP per merged row and column (APJ: about 1 s,
    # longer under load): each is a progress step with the wrong entries of X, and
    # the line no longer shows phase 1's last count while phase 2 runs
    events = []
    res = rounding_rank_bounds(
        planted, methods=("projlp",), random_state=0, progress=events.append
    )
    steps = [e for e in events if e["method"] == "projlp" and e["stage"] == "step"]
    # a width's start has no count yet; its result (after the rounds) has one
    starts = [
        i
        for i, e in enumerate(steps)
        if e["message"] == "phase 2 (LP descent)" and e["error"] is None
    ]
    assert starts
    for i in starts:
        width = steps[i]["k"]
        rounds = []
        for e in steps[i + 1 :]:
            if not e["message"].startswith("phase 2 (LP descent), round "):
                break
            assert e["k"] == width and e["error"] >= 0
            rounds.append(int(e["message"].rsplit(" ", 1)[1]))
        assert rounds == list(range(len(rounds))) and rounds
    assert res.upper <= 6


def test_phase0_runs_on_sparse_data_whose_dense_copy_is_refused():
    from sklearn_rrank import config_context

    # phase 0 reads a sparse merged matrix by blocks: ProjLP is not skipped when no
    # dense copy is allowed; the LP phases after it, which would read it dense, are
    X = make_rounding_rank_matrix(60, 40, 3, random_state=1).astype(float)
    X[:, :4] = 0.0
    kw = dict(random_state=0, n_jobs=1, private={"large": AS_LARGE})
    dense = run_family("projlp", X, **kw)
    # a machine whose memory is one dense copy of X: a dense work array may take
    # half of it, so the merged matrix is not made dense
    with config_context(memory_limit=8 * X.size):
        sparse = run_family("projlp", sp.csr_matrix(X), **kw)
    assert not sparse.info["message"].startswith("skipped")
    assert sparse.info["phase0_tried"] == dense.info["phase0_tried"]
    assert sparse.certified and certify_rounding(X, sparse.L, sparse.R)
    if "the LP phases were not run" not in sparse.info["message"]:
        assert sparse.rank == dense.rank  # phase 0 ended the search on both
