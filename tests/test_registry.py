"""The method registry, one rank search under one budget, and parameter validation."""

import pickle
import time
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
from _family import (
    BOUND_METHODS,
    FIT_METHODS,
    METHODS,
    BinaryData,
    Deadline,
    FakeClock,
    Incumbent,
    _merge_rows,
    bounds_with,
    rrank,
    swapped,
    trivial_upper_bound,
)
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sklearn_rrank import (
    RoundingRankCV,
    RoundingRankFactorization,
    certify_rounding,
    feature_dimension_bounds,
    rounding_rank_bounds,
)
from sklearn_rrank.datasets import make_rounding_rank_matrix

PLANTED = make_rounding_rank_matrix(24, 18, 3, random_state=0)
# a Boolean product of rank 3 (Asso, a Boolean factorization, can certify it)
_rng = np.random.default_rng(0)
BOOLEAN = ((_rng.random((24, 3)) < 0.4) @ (_rng.random((3, 18)) < 0.4) > 0).astype(int)


# -- the registry is the one door list ---------------------------------------------
@pytest.mark.parametrize("method", FIT_METHODS)
def test_every_fit_method_reachable_from_estimator_and_cv(method):
    est = RoundingRankFactorization(3, method=method, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(BOOLEAN)
        cv = RoundingRankCV(
            RoundingRankFactorization(method=method, random_state=0),
            time_limit=30,
            mode="exact",
        ).fit(BOOLEAN)
    assert est.components_.shape == (3, BOOLEAN.shape[1])
    assert cv.certified_ and cv.n_components_ >= 1
    be = cv.best_estimator_
    assert be.certified_ and be.n_components_ == max(cv.n_components_, 1)
    assert be.transform(BOOLEAN).shape == (BOOLEAN.shape[0], be.n_components_)


@pytest.mark.parametrize("method", BOUND_METHODS)
def test_every_bound_method_reachable_from_rounding_rank_bounds(method):
    b = rounding_rank_bounds(BOOLEAN, methods=(method,), random_state=0)
    row = next(r for r in b.report if r["method"] == method)
    assert row["status"] in ("ok", "skipped"), row
    assert b.lower <= b.upper
    assert certify_rounding(BOOLEAN, b.L, b.R)


@pytest.mark.parametrize(
    "method", [n for n, s in METHODS.items() if s.search is not None]
)
def test_every_search_method_reachable_from_feature_dimension_bounds(method):
    lower, upper = feature_dimension_bounds(PLANTED, methods=(method,), random_state=0)
    assert 0 <= lower <= upper


def test_unknown_method_params_raise_with_valid_names():
    with pytest.raises(ValueError, match="solvr.*valid names.*solver"):
        RoundingRankFactorization(2, method="lpca", method_params={"solvr": "mm"}).fit(
            PLANTED
        )
    with pytest.raises(ValueError, match="projection"):
        rounding_rank_bounds(
            PLANTED, methods=("rsvd",), method_params={"rsvd": {"projection": "x"}}
        )
    with pytest.raises(ValueError, match="not among methods"):
        rounding_rank_bounds(
            PLANTED, methods=("rsvd",), method_params={"lpca": {"start": 2}}
        )
    # a fit-only parameter is not silently dropped by the exact rank search
    est = RoundingRankFactorization(method="lpca", method_params={"solver": "mm"})
    with pytest.raises(ValueError, match="rank search"):
        RoundingRankCV(est, mode="exact").fit(PLANTED)


@pytest.mark.parametrize("name", ["max_iter", "tol"])
def test_unused_iteration_parameters_raise(name):
    with pytest.raises(ValueError, match=f"{name}.*not used"):
        RoundingRankFactorization(2, method="rsvd", **{name: 3}).fit(PLANTED)


# -- parameter validation, one behaviour at every door ------------------------------
@pytest.mark.parametrize("method", FIT_METHODS)
def test_boolean_n_components_rejected_by_every_method(method):
    with pytest.raises((TypeError, ValueError), match="n_components"):
        RoundingRankFactorization(True, method=method).fit(np.eye(3))


def test_text_entries_rejected_everywhere():
    X = np.array([["0", "1"], ["1", "0"]])
    for door in (
        lambda: RoundingRankFactorization(1, method="rsvd").fit(X),
        lambda: RoundingRankCV(mode="exact").fit(X),
        lambda: rounding_rank_bounds(X),
        lambda: certify_rounding(X, np.ones((2, 1)), np.ones((2, 1))),
    ):
        with pytest.raises(TypeError):
            door()


@pytest.mark.parametrize("n_jobs", [0, 1.5, "2", True])
def test_bad_n_jobs_rejected_everywhere(n_jobs):
    for door in (
        lambda: RoundingRankFactorization(2, method="rsvd", n_jobs=n_jobs).fit(PLANTED),
        lambda: rounding_rank_bounds(PLANTED, methods=("rsvd",), n_jobs=n_jobs),
        lambda: RoundingRankCV(n_jobs=n_jobs, mode="exact").fit(PLANTED),
        lambda: feature_dimension_bounds(PLANTED, n_jobs=n_jobs),
    ):
        with pytest.raises((TypeError, ValueError), match="n_jobs"):
            door()


@pytest.mark.parametrize("methods", [None, (), ("nope",), [1]])
def test_bad_methods(methods):
    with pytest.raises(ValueError, match="method"):
        rounding_rank_bounds(PLANTED, methods=methods)


def test_cv_rejects_non_integer_candidates():
    with pytest.raises(ValueError, match="positive integers"):
        RoundingRankCV(n_components=[1.5], mode="exact").fit(PLANTED)


# -- RoundingRankCV and feature names -------------------------------------------------
def test_cv_checks_feature_names_and_has_names_out():
    pd = pytest.importorskip("pandas")
    from sklearn.pipeline import make_pipeline

    df = pd.DataFrame(PLANTED, columns=[f"f{i}" for i in range(PLANTED.shape[1])])
    cv = RoundingRankCV(RoundingRankFactorization(method="rsvd"), mode="exact").fit(df)
    renamed = df.rename(columns={"f0": "g0"})
    with pytest.raises(ValueError, match="feature names"):
        cv.transform(renamed)
    with pytest.raises(ValueError, match="feature names"):
        cv.transform(df[df.columns[::-1]])
    names = cv.get_feature_names_out()
    assert len(names) == cv.n_components_
    pipe = make_pipeline(
        RoundingRankCV(RoundingRankFactorization(method="rsvd"), mode="exact")
    )
    pipe.fit(df)
    assert list(pipe.get_feature_names_out()) == list(names)
    out = cv.set_output(transform="pandas").transform(df)
    assert list(out.columns) == list(names)


# -- one rank search, one budget -----------------------------------------------------
def test_cv_exact_and_rounding_rank_bounds_agree():
    for method in ("rsvd", "lpca", "projlp"):
        b = rounding_rank_bounds(PLANTED, methods=(method,), random_state=3)
        cv = RoundingRankCV(
            RoundingRankFactorization(method=method, random_state=3),
            mode="exact",
        ).fit(PLANTED)
        assert cv.n_components_ == b.upper, method


def test_portfolio_starts_below_the_best_bound_and_stops_when_met():
    b = rounding_rank_bounds(
        PLANTED, methods=("rank_one", "vc", "rsvd", "lpca", "projlp"), random_state=0
    )
    rows = {r["method"]: r for r in b.report}
    # every later search only certifies below what came before
    if rows["lpca"]["bound"] is not None:
        assert rows["lpca"]["bound"] < rows["rsvd"]["bound"]
    if b.exact:
        after = [r for r in b.report if r["status"] == "skipped"]
        assert all(r["message"] == "bounds already meet" for r in after)
    for r in b.report:
        for (t0, b0), (t1, b1) in zip(r["curve"], r["curve"][1:], strict=False):
            assert t0 <= t1 and (r["kind"] == "lower" or b1 < b0)


def test_budget_is_kept_and_certificates_stand():
    X = make_rounding_rank_matrix(150, 120, 12, noise=0.02, random_state=1)
    t0 = time.monotonic()
    b = rounding_rank_bounds(X, time_limit=3.0, random_state=0)
    took = time.monotonic() - t0
    assert took < 3.0 + 2.0, took
    assert b.lower <= b.upper and certify_rounding(X, b.L, b.R)
    assert any(r["stopped_early"] or r["status"] == "skipped" for r in b.report)


def test_failing_method_does_not_take_the_call_down():
    def boom(*args, **kwargs):
        raise RuntimeError("solver exploded")

    registry = swapped(nuclear={"search": boom})
    b = bounds_with(PLANTED, ("rsvd", "nuclear"), registry)
    row = next(r for r in b.report if r["method"] == "nuclear")
    assert row["status"] == "failed" and "solver exploded" in row["message"]
    assert b.upper_method == "rsvd"


def test_deadline_child_never_outlives_parent():
    parent = Deadline(0.2)
    child = parent.child(seconds=10)
    assert child.end <= parent.end
    half = parent.child(fraction=0.5)
    assert half.remaining() <= parent.remaining()
    assert Deadline(None).remaining() is None and not Deadline(None).expired()


def test_deadline_ending_before_keeps_its_start_and_never_outlives_it():
    clock = FakeClock()
    d = Deadline(30.0, clock=clock)
    clock.advance(5.0)
    early = d.ending_before(10.0)
    assert early.remaining() == 15.0 and early.elapsed() == d.elapsed() == 5.0
    clock.advance(15.0)
    assert early.expired() and not d.expired()
    assert d.ending_before(40.0).remaining() == 0.0
    assert Deadline(None).ending_before(10.0).remaining() is None


def test_deadline_pickles_as_the_time_it_has_left():
    # process workers (loky, Dask, Ray) get the same end on their own clock
    clock = FakeClock()
    d = Deadline(30.0, clock=clock)
    clock.advance(5.0)
    back = pickle.loads(pickle.dumps(d))  # on this process's monotonic clock
    assert type(back) is Deadline
    assert back.remaining() == pytest.approx(25.0, abs=0.05)
    assert back.elapsed() == pytest.approx(5.0, abs=0.05)
    assert pickle.loads(pickle.dumps(Deadline())).remaining() is None
    assert pickle.loads(pickle.dumps(Deadline(0.0))).expired()


def test_incumbent_certifies_and_keeps_only_improvements():
    X = np.eye(3)
    inc = Incumbent(X, 0.5, "test", cap=3)
    assert not inc.offer(np.eye(3), np.eye(3))  # not below the cap
    assert not inc.offer(np.ones((3, 2)), np.ones((3, 2)))  # wrong rounding
    L = np.array([[1.0, 0], [0, 1], [1, 1]])
    assert inc.rank is None
    events = []
    inc.progress = events.append
    R = np.array([[1.0, -1], [-1, 1], [0, 0]])
    # rank 2 cannot round to I_3 this way: rejected, nothing recorded
    assert not inc.offer(L, R)
    assert events == [] and inc.curve == []


@pytest.mark.parametrize("tau", [0.5, 0.0, -0.3])
def test_incumbent_refuses_certificates_wider_than_the_trivial_rank(tau):
    X = PLANTED.astype(float)
    inc = Incumbent(X, tau, "test")
    assert inc.ceiling == min(X.shape) + (tau <= 0)
    L, R = trivial_upper_bound(X, tau=tau)
    wide_L = np.hstack([L, np.zeros((X.shape[0], 1))])
    wide_R = np.hstack([R, np.zeros((X.shape[1], 1))])
    assert certify_rounding(X, wide_L, wide_R, tau=tau)  # certified, but too wide
    assert not inc.worth_trying(inc.ceiling + 1)
    assert not inc.offer(wide_L, wide_R) and inc.rank is None
    assert "trivial rank" in inc.limit_text()
    assert inc.offer(L, R) and inc.rank == inc.ceiling  # the trivial width itself


def test_portfolio_never_reports_more_than_the_trivial_rank():
    # ProjLP's copied columns gave 8663 on a 16000 x 8000 matrix (trivial: 8000)
    def too_wide(X, incumbent, deadline, *, tau, **kwargs):
        L, R = trivial_upper_bound(X, tau=tau)
        extra = np.zeros((X.shape[0], 5)), np.zeros((X.shape[1], 5))
        incumbent.offer(np.hstack([L, extra[0]]), np.hstack([R, extra[1]]))
        return {}

    b = bounds_with(PLANTED, ("nuclear",), swapped(nuclear={"search": too_wide}))
    assert b.upper == min(PLANTED.shape) and b.upper_method == "trivial"
    assert certify_rounding(PLANTED, b.L, b.R)


# -- the issue-11 fuzz: small matrices, every method, every tau ----------------------
@given(
    arrays(
        np.int8,
        st.tuples(st.integers(1, 5), st.integers(1, 5)),
        elements=st.integers(0, 1),
    ),
    st.sampled_from([0.0, 0.25, 0.5, 1.0]),
)
def test_fuzz_every_method_small_matrices(X, tau):
    b = rounding_rank_bounds(X, methods=BOUND_METHODS, tau=tau, random_state=0)
    assert b.lower <= b.upper
    assert certify_rounding(X, b.L, b.R, tau=tau)
    for r in b.report:
        assert r["status"] != "failed", r


# -- the command line is a door too ---------------------------------------------------
@pytest.mark.parametrize("method", BOUND_METHODS)
def test_every_bound_method_reachable_from_the_cli(method, tmp_path, capsys):
    import json

    path = tmp_path / "x.npy"
    np.save(path, BOOLEAN)
    assert rrank(["bounds", str(path), "--methods", method, "--json", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert method in [r["method"] for r in out["report"]]


@pytest.mark.parametrize("method", FIT_METHODS)
def test_every_fit_method_reachable_from_the_cli(method, tmp_path, capsys):
    import json

    path = tmp_path / "x.npy"
    np.save(path, BOOLEAN)
    argv = ["factorize", str(path), "-k", "3", "--method", method, "--json", "-q"]
    assert rrank(argv) == 0
    assert json.loads(capsys.readouterr().out)["method"] == method


@pytest.mark.parametrize("X, tau", [(np.ones((4, 5)), 0.0), (np.zeros((4, 5)), 0.5)])
def test_cv_exact_finds_rank_zero_like_rounding_rank_bounds(X, tau):
    cv = RoundingRankCV(
        RoundingRankFactorization(method="rsvd", tau=tau), mode="exact"
    ).fit(X)
    b = rounding_rank_bounds(X, methods=("rsvd",), tau=tau)
    assert cv.n_components_ == b.upper == 0 and cv.certified_


def test_binary_data_merges_rows_and_columns_once():
    rng = np.random.default_rng(0)
    X = (rng.random((30, 12)) < 0.3).astype(float)
    X[7] = X[2]
    X[:, 5] = X[:, 1]
    X[3, 4] = np.nan
    data = BinaryData(X)
    rep, owner = data.unique_columns
    assert np.array_equal(
        np.nan_to_num(X[:, rep][:, owner], nan=2), np.nan_to_num(X, nan=2)
    )
    rows, counts, row_owner = data.unique_rows
    assert counts.sum() == X.shape[0] and 7 not in rows and 2 in rows
    assert np.array_equal(
        np.nan_to_num(X[rows][row_owner], nan=2), np.nan_to_num(X, nan=2)
    )
    assert data.n_ones == int(np.nansum(X)) and data.has_missing


def test_second_pass_gives_the_time_left_to_stopped_searches():
    # L-PCA is stopped by its share, ProjLP finishes at once: the time ProjLP did
    # not use goes back to L-PCA, which resumes just below the best certificate
    calls = []
    clock = FakeClock()

    def stopped_then_quick(X, incumbent, deadline, *, tau, **kwargs):
        calls.append((kwargs.get("start"), deadline.remaining()))
        if len(calls) == 1:  # runs to the end of its share
            clock.advance(deadline.remaining())
        return {"message": f"call {len(calls)}"}

    def quick(X, incumbent, deadline, *, tau, **kwargs):
        return {"message": "nothing to do"}

    registry = swapped(lpca={"search": stopped_then_quick}, projlp={"search": quick})
    b = bounds_with(
        PLANTED,
        ("rsvd", "lpca", "projlp"),
        registry,
        time_limit=8.0,
        clock=clock,
        random_state=0,
    )
    assert b.upper_method == "rsvd" and len(calls) == 2
    assert calls[0][0] is None and calls[1][0] == b.upper - 1
    assert calls[1][1] > 0.5 * calls[0][1]  # most of ProjLP's unused share
    row = next(r for r in b.report if r["method"] == "lpca")
    assert row["message"] == "call 1 (time limit reached); given the time left: call 2"
    assert row["status"] == "ok" and row["bound"] is None


def test_no_second_pass_without_a_budget_or_when_the_bounds_meet():
    calls = []

    def search(X, incumbent, deadline, *, tau, **kwargs):
        calls.append(kwargs.get("start"))
        return {}

    registry = swapped(lpca={"search": search})
    bounds_with(PLANTED, ("rsvd", "lpca"), registry, random_state=0)
    assert calls == [None]


def test_a_second_run_that_says_the_same_is_not_repeated():
    merge = _merge_rows
    first = {"message": "time limit: 3 rows shattered", "seconds": 1.0, "budget": 2.0}
    for second, expected in [
        ("time limit: 3 rows shattered", "time limit: 3 rows shattered"),
        ("4 rows", "time limit: 3 rows shattered; given the time left: 4 rows"),
    ]:
        row = {"message": second, "seconds": 1.0, "budget": 1.0, "curve": []}
        row["bound"] = None
        merge(row, first, [], {}, 3, SimpleNamespace(lower=object(), search=None))
        assert row["message"] == expected and row["bound"] == 3
