"""The L-PCA family inside the rank-search skeleton (issue 12)."""

import time

import numpy as np
import pytest
import scipy.sparse as sp
from _family import (
    Deadline,
    Incumbent,
    _lpca_search,
    modules,
    run_family,
    run_rank_search,
    spy,
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
        assert res.info["polish"] == {}
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


def test_progress_events_inside_long_fits(monkeypatch):
    search_module = modules.lpca_search

    monkeypatch.setattr(search_module, "_TICK_SECONDS", 0.0)
    X = _planted(5, 50, 30, 3)
    events = []
    run_rank_search(
        _lpca_search,
        X,
        method="lpca",
        tau=0.5,
        random_state=0,
        progress=events.append,
        params={"polish": False},
    )
    sweeps = [e for e in events if e["message"].startswith("sweep")]
    assert sweeps and all(e["stage"] == "step" for e in sweeps)


class _Bound:
    def __init__(self, bound):
        self.bound = bound


def test_next_rank_jumps_only_while_far_and_never_past_the_bound():
    _next_rank = modules.lpca_search._next_rank

    ones = 1000  # far: more than 100 uncertified entries
    assert _next_rank(9, 1, 100, ones, _Bound(None), 50) == 10  # near: one step
    assert _next_rank(9, 1, 101, ones, _Bound(None), 50) == 13  # far: (9 - 1 + 1) // 2
    assert _next_rank(9, 5, 500, ones, _Bound(None), 50) == 11  # from start 5
    assert _next_rank(1, 1, 900, ones, _Bound(None), 50) == 2  # at least one
    assert _next_rank(9, 1, 900, ones, _Bound(12), 50) == 11  # below the bound
    assert _next_rank(9, 1, 900, ones, _Bound(None), 10) == 10  # max_rank
    assert _next_rank(9, 1, 900, ones, _Bound(10), 50) == 10  # ends the ascent
    # after a scout a far cut fit jumps to twice k at least (Abstracts, 1800 s:
    # 69, 70, 72, 76, 84, 100, 132, 196, all cut far; 900 s: 69, 104, 156, 244,
    # 420, all cut far, where fresh fits at 133 and 138 certified)
    assert _next_rank(69, 69, 900, ones, _Bound(None), 999, True, jump=True) == 138
    assert _next_rank(69, 69, 900, ones, _Bound(90), 999, True, jump=True) == 89
    assert _next_rank(69, 69, 100, ones, _Bound(None), 999, True, jump=True) == 70


def test_ascent_jumps_while_far_and_the_polish_bisects_the_skipped_ranks():
    X = _planted(0, 200, 150, 8)
    res = run_family("lpca", X, random_state=0)
    assert res.certified and certify_rounding(X, res.L, res.R)
    info, ones = res.info, int(X.sum())
    ascent = sorted(info["failed_by_k"])
    assert ascent[0] == 1 and info["status_by_k"]
    for a, b in zip(ascent[:-1], ascent[1:], strict=True):
        far = info["failed_by_k"][a] > 0.1 * ones
        assert b - a == (max(1, a // 2) if far else 1)
    assert any(
        b - a > 1 for a, b in zip(ascent[:-1], ascent[1:], strict=True)
    )  # it did jump
    floor = max(k for k in ascent if info["errors_by_k"][k] > 0.1 * ones)
    assert all(floor < k < ascent[-1] for k in info["polish"])
    certified = [k for k, row in info["polish"].items() if row["certified"]]
    assert res.rank == min(certified, default=ascent[-1])
    # the polish's fits are in errors_by_k too, as the ascent's: 0 where certified
    assert info["polish"] and set(info["polish"]) <= set(info["errors_by_k"])
    for k, row in info["polish"].items():
        assert info["errors_by_k"][k] == (0 if row["certified"] else row["errors"])
    assert info["errors_by_k"][res.rank] == 0


def test_solver_budget_newton_for_few_factors_lbfgs_with_more_sweeps_beyond():
    _AUTO_NEWTON_MAX_P = modules.lpca._AUTO_NEWTON_MAX_P
    _LBFGS_SWEEP_FACTOR = modules.lpca_search._LBFGS_SWEEP_FACTOR
    _solver_budget = modules.lpca_search._solver_budget

    p = _AUTO_NEWTON_MAX_P
    assert _solver_budget(p, (50, 40), 300, (30, 0.02)) == {
        "solver": "newton",
        "max_iter": 300,
        "stall": (30, 0.02),
    }
    f = _LBFGS_SWEEP_FACTOR
    assert _solver_budget(p + 1, (50, 40), 300, (30, 0.02)) == {
        "solver": "lbfgs",
        "max_iter": 300 * f,
        "stall": (30 * f, 0.02),
    }
    assert _solver_budget(p + 1, (50, 40), 30, None)["stall"] is None
    far = _solver_budget(p + 1, (50, 40), 300, (30, 0.02), far=70)
    assert far["stall"] == (30 * f, 0.02, 0.0, 70)
    # Newton fits get no "far" rule, except within a budget
    assert _solver_budget(p, (50, 40), 300, (30, 0.02), far=70)["stall"] == (30, 0.02)
    limited = _solver_budget(p, (50, 40), 300, (30, 0.02), far=70, limited=True)
    assert limited["stall"] == (30, 0.02, 0.0, 70)
    # the "near" stop keeps the far rule (none: infinitely far)
    near = _solver_budget(p + 1, (50, 40), 300, (30, 0.02), far=70, near=5)
    assert near["stall"] == (30 * f, 0.02, 0.0, 70, 5)
    near = _solver_budget(p, (50, 40), 300, (30, 0.02), near=5)
    assert near["stall"] == (30, 0.02, 0.0, np.inf, 5)


def test_stalled_far_rule_stops_a_steady_fit_still_far_after_its_window():
    _stalled = modules.lpca_newton._stalled

    steady = [1000 - 40 * i for i in range(12)]  # drops 4% of 1000 per sweep
    assert not _stalled(steady, (10, 0.02), 10**6)
    assert not _stalled(steady[:10], (10, 0.02, 0.0, 100), 10**6)  # window not full
    assert _stalled(steady, (10, 0.02, 0.0, 100), 10**6)  # 560 left > 100
    assert not _stalled(steady, (10, 0.02, 0.0, 600), 10**6)  # near enough


def test_stalled_near_rule_stops_at_any_sweep_once_few_entries_fail():
    _stalled = modules.lpca_newton._stalled

    steady = [1000 - 40 * i for i in range(12)]  # 560 after 11 sweeps
    assert not _stalled(steady[:3], (10, 0.02, 0.0, np.inf, 900), 10**6)  # 920
    assert _stalled(steady[:4], (10, 0.02, 0.0, np.inf, 900), 10**6)  # 880
    assert not _stalled(steady, (10, 0.02, 0.0, np.inf, 500), 10**6)
    assert not _stalled([], (10, 0.02, 0.0, np.inf, 500), 10**6)


def test_search_runs_lbfgs_beyond_the_newton_limit_and_certifies(monkeypatch):
    _lpca = modules.lpca

    monkeypatch.setattr(_lpca, "_AUTO_NEWTON_MAX_P", 2)
    X = _planted(0, 120, 90, 6)
    res = run_family("lpca", X, random_state=0, polish=False)
    assert res.certified and certify_rounding(X, res.L, res.R)
    solvers = res.info["solver_by_k"]
    assert set(solvers) == set(res.info["failed_by_k"])
    assert all(s == ("newton" if k <= 2 else "lbfgs") for k, s in solvers.items())
    assert any(s == "lbfgs" for s in solvers.values())


def test_a_later_run_continues_the_model_a_deadline_cut_short(monkeypatch):
    # the portfolio's second pass hands L-PCA's search the memo of its first run:
    # the fit at k continues that model instead of a fresh SVD start
    search_module = modules.lpca_search
    _model_kind = modules.lpca._model_kind
    _svd_init = modules.lpca_init._svd_init
    _Data = modules.lpca_model._Data

    X = _planted(4, 80, 60, 3)
    kind = _model_kind("global", 0.5)
    memo = {3: _svd_init(_Data(X), 3, kind, 0, 0.5)}

    def no_fresh_start(*args, **kwargs):
        raise AssertionError("a fresh SVD start although a model was kept")

    monkeypatch.setattr(search_module, "_svd_init", no_fresh_start)
    res = run_rank_search(
        _lpca_search,
        X,
        method="lpca",
        tau=0.5,
        random_state=0,
        params={"start": 3, "max_rank": 3, "polish": False},
        memo=memo,
    )
    assert memo == {} and res.info["sweeps_by_k"][3] >= 1


def test_only_fits_cut_by_the_deadline_are_kept_for_later():
    X = _planted(5, 60, 40, 4)
    memo = {}
    run_rank_search(_lpca_search, X, method="lpca", tau=0.5, random_state=0, memo=memo)
    assert memo == {}  # no deadline: nothing was cut short


def test_ascent_stops_adding_columns_once_the_deadline_passes(monkeypatch):
    # a jump of the ascent adds one latent column per SVD of the gradient (several
    # seconds each on Abstracts): the deadline is checked before each column
    lpca_search = modules.lpca_search

    real, calls = lpca_search._add_column, []
    budget = Deadline(1000.0)

    def add_column(data, U, V, mu, deadline):
        calls.append(U.shape[1])
        if len(calls) == 2:  # the first column of the jump 2 -> 4: time is up
            deadline.end = budget.end = time.monotonic()
        return real(data, U, V, mu, deadline)

    monkeypatch.setattr(lpca_search, "_add_column", add_column)
    X = (np.random.default_rng(0).random((60, 40)) < 0.5).astype(float)
    res = run_rank_search(
        _lpca_search,
        X,
        method="lpca",
        tau=0.5,
        deadline=budget,
        random_state=0,
        params={"polish": False},
    )
    assert calls == [1, 2]  # k = 1 -> 2, then one column of 2 -> 4 only
    assert res.rank is None and res.stopped_early
    assert "time limit" in res.report.message


def test_ascent_goes_on_at_a_k_whose_share_passed_while_columns_were_added(
    monkeypatch,
):
    # only the step's share passed (two busy processes beside APJ, 60 s: the
    # columns of the gallop 4 -> 6 outlasted it with 10 s of L-PCA's share left):
    # the same k goes on once with all the time left, from the columns it has
    lpca_search = modules.lpca_search
    real_add, calls = lpca_search._add_column, []
    real_step, shares = lpca_search._ascent_step, []

    def add_column(data, U, V, mu, deadline):
        calls.append(U.shape[1])
        if len(calls) == 2:  # the first column of the jump 2 -> 4: its share ends
            deadline.end = time.monotonic()
        return real_add(data, U, V, mu, deadline)

    def ascent_step(*args, k, share, **kwargs):
        shares.append((k, share))
        return real_step(*args, k=k, share=share, **kwargs)

    monkeypatch.setattr(lpca_search, "_add_column", add_column)
    monkeypatch.setattr(lpca_search, "_ascent_step", ascent_step)
    X = (np.random.default_rng(0).random((60, 40)) < 0.5).astype(float)
    res = run_rank_search(
        _lpca_search, X, **_BUDGETED, params={"polish": False, "max_rank": 4}
    )
    # k = 1 -> 2, one column of 2 -> 4 (its share ends), then the third from there
    assert calls[:3] == [1, 2, 3]
    share = lpca_search._ASCENT_SHARE
    assert shares[:4] == [(1, share), (2, share), (4, share), (4, 1.0)]
    assert 4 in res.info["sweeps_by_k"] and res.info["sweeps_by_k"][4] >= 1


def test_ascent_ends_at_a_fit_its_share_cut_before_its_first_sweep(monkeypatch):
    # a fit cut by its share before its first sweep says nothing about its k, and
    # a larger k would get less time still: the same k goes on once with all the
    # time left, then the ascent ends there (its model kept for a second pass)
    # instead of galloping on with columns and no sweeps
    lpca_search = modules.lpca_search
    tried = []

    def fit_and_rescue(incumbent, info, data, state, own, deadline, **kwargs):
        k = state[0].shape[1]
        tried.append(k)
        finfo = {"status": "time_limit", "solver_used": "newton"}
        finfo["n_errors_logit"] = incumbent.data.n_ones
        out = dict(state=state, best=state, ok=False, rescue=None, rescued=False)
        return dict(out, failed=finfo["n_errors_logit"], finfo=finfo, sweeps=k < 4)

    monkeypatch.setattr(lpca_search, "_fit_and_rescue", fit_and_rescue)
    X = _planted(3, 60, 40, 4)
    memo, params = {}, {"polish": False, "fit_bias": False}
    res = run_rank_search(_lpca_search, X, **_BUDGETED, params=params, memo=memo)
    # one sweep at k = 1 and 2, none at 4, which goes on once with all the time
    # left, again without a sweep: the end
    assert tried == [1, 2, 4, 4]
    assert res.stopped_early and "time limit" in res.report.message
    assert sorted(memo) == [1, 2, 4]
    # the scout's ascent on its sample (retry_unstarted=False) ends at once
    tried.clear()
    params["retry_unstarted"] = False
    res = run_rank_search(_lpca_search, X, **_BUDGETED, params=params, memo={})
    assert tried == [1, 2, 4] and "time limit" in res.report.message


def test_scout_starts_the_ascent_where_a_row_sample_certifies(monkeypatch):
    # large data within a budget: the ascent runs first on a sample of whole rows
    # (their rounding rank is at most X's) with its own certification, and the
    # ascent on X starts at the rank that certified the sample (within Newton's
    # range: not grown)
    lpca_search = modules.lpca_search
    X = _planted(4, 400, 30, 3)
    monkeypatch.setattr(lpca_search, "_SCOUT_MIN_ENTRIES", X.size)
    monkeypatch.setattr(lpca_search, "_SCOUT_ENTRIES", 100 * 30)
    events, retries = [], []
    real = lpca_search._lpca_search

    def sample_search(*args, retry_unstarted=True, **kwargs):  # the scout's call
        retries.append(retry_unstarted)
        return real(*args, retry_unstarted=retry_unstarted, **kwargs)

    monkeypatch.setattr(lpca_search, "_lpca_search", sample_search)
    res = run_rank_search(_lpca_search, X, **_BUDGETED, progress=events.append)
    assert retries == [False]  # the sample's ascent does not retry a step
    scout = res.info["scout"]
    assert scout["axis"] == 0 and scout["size"] == 100 and scout["rank"] is not None
    assert scout["start"] == scout["rank"] == min(res.info["failed_by_k"])
    assert res.certified and certify_rounding(X, res.L, res.R, tau=0.5)
    # the polish bisects above the sample's last far rank, below the scout's start
    assert scout["floor"] < scout["start"] - 1 and res.rank < scout["start"]
    # the sample's fits reach the user as steps of the search, never as a bound
    steps = [e for e in events if "scout on 100 rows" in e["message"]]
    assert steps and all(e["stage"] == "step" for e in steps)
    # with the sample's counts in the message, never as X's error at k (the
    # progress line keeps the least error at k)
    assert all(e["error"] is None for e in steps)
    assert any(e["message"].endswith("wrong in the sample)") for e in steps)
    improved = [e for e in events if e["stage"] == "improved"]
    bounds = [e["bound"] for e in improved]
    assert bounds[0] == scout["start"] and bounds[-1] == res.rank
    assert bounds == sorted(set(bounds), reverse=True)  # each lowers the bound
    # no scout without a budget, on smaller data, or when resumed above its start
    free = run_rank_search(_lpca_search, X, method="lpca", tau=0.5, random_state=0)
    assert "scout" not in free.info
    resumed = run_rank_search(_lpca_search, X, **_BUDGETED, params={"start": 2})
    assert "scout" not in resumed.info
    # a wide matrix: whole columns
    wide = run_rank_search(_lpca_search, X.T.copy(), **_BUDGETED)
    assert wide.info["scout"]["axis"] == 1


def _fake_ascent_step(verdict, steps, record=lambda k, share, state: (k, share)):
    """A stand-in for ``_ascent_step``: ``verdict(k)`` gives ``(status, failed)``.

    Each call appends ``record(k, share, state)`` to ``steps`` and returns the model
    ``("model", k)``; status ``"exact"`` certifies ``k`` (as the offer would).
    """

    def ascent_step(incumbent, data, info, deadline, state, *, k, share, **kwargs):
        steps.append(record(k, share, state))
        status, failed = verdict(k)
        info["status_by_k"][k] = status
        info["sweeps_by_k"][k] = 5
        info["failed_by_k"][k] = failed
        if status == "exact":
            incumbent.rank = k
        return ("model", k), status == "exact", failed

    return ascent_step


def test_a_near_fit_cut_short_goes_on_at_the_same_k(monkeypatch):
    # 1e9 entries: near fits that their shares cut went on at k + 1, one column per
    # share; after a scout such a fit goes on at the same k with the time left, once
    lpca_search = modules.lpca_search
    X = _planted(4, 400, 30, 3)
    n_ones = int(X.sum())
    steps = []

    def verdict(k):  # near (5% of the ones) and cut, until the fourth fit
        return ("exact", 0) if len(steps) == 4 else ("time_limit", n_ones // 20)

    ascent_step = _fake_ascent_step(verdict, steps)

    scout = {"start": 3, "floor": 1}
    monkeypatch.setattr(lpca_search, "_scout", lambda *a, **kw: scout)
    monkeypatch.setattr(lpca_search, "_ascent_step", ascent_step)
    kwargs = _BUDGETED
    run_rank_search(_lpca_search, X, params={"polish": False}, **kwargs)
    share = lpca_search._ASCENT_SHARE
    assert steps == [(3, share), (3, 1.0), (4, share), (4, 1.0)]
    # without a scout, within a budget, with half the time left (APJ, 60 s, two
    # busy processes beside it: the fit at k = 6 cut with 139 entries wrong went on
    # and certified; idle, in float32, k = 4 went on with all of L-PCA's share, 34
    # entries short, and L-PCA certified nothing)
    steps.clear()
    monkeypatch.setattr(lpca_search, "_scout", lambda *a, **kw: None)
    params = {"polish": False, "start": 3}
    run_rank_search(_lpca_search, X, params=params, **kwargs)
    half = lpca_search._CONTINUED_SHARE
    assert half == 0.5
    assert steps == [(3, share), (3, half), (4, share), (4, half)]
    steps.clear()  # without a budget no fit is cut by a share: k + 1
    run_rank_search(_lpca_search, X, params=params, **dict(kwargs, deadline=None))
    assert [k for k, _ in steps] == [3, 4, 5, 6]


def test_large_data_polish_after_a_scout_and_a_resumed_cut_fit_get_all_the_time(
    monkeypatch,
):
    # Abstracts, 900 s: after the scout the ascent certified 133 at once; the polish
    # had the ascent's time and its fit at k = 101 was cut after about 110 s, with
    # 126 s of L-PCA's share unused
    lpca_search = modules.lpca_search
    X = _planted(4, 400, 30, 3)
    n_ones = int(X.sum())
    steps, polished = [], []

    # far: the ascent climbs to the bound
    ascent_step = _fake_ascent_step(lambda k: ("time_limit", n_ones), steps)

    def polish(incumbent, data, info, deadline, **kwargs):
        polished.append(deadline.remaining())

    monkeypatch.setattr(lpca_search, "_ascent_step", ascent_step)
    monkeypatch.setattr(lpca_search, "_polish", polish)
    monkeypatch.setattr(lpca_search, "_SCOUT_MIN_ENTRIES", X.size)
    monkeypatch.setattr(
        lpca_search, "_scout", lambda *a, **kw: {"start": 3, "floor": 1}
    )
    kwargs = dict(_BUDGETED, cap=4)
    run_rank_search(_lpca_search, X, **kwargs)
    assert steps == [(3, lpca_search._ASCENT_SHARE)] and polished[-1] > 900
    monkeypatch.setattr(lpca_search, "_scout", lambda *a, **kw: None)
    run_rank_search(_lpca_search, X, **kwargs)  # no scout: the ascent's time
    assert polished[-1] <= lpca_search._POLISH_MIN_SECONDS
    # resumed (a portfolio's second pass) at a k whose fit a deadline cut: that fit
    # goes on with all the time left, on smaller data too; without a cut fit, a share
    params = {"start": 3, "polish": False}
    first = []
    for cap, memo, large in (
        (4, {3: None}, True),
        (6, {}, True),
        (4, {3: None}, False),
    ):
        # (cap 6: below the bound less one; right below it the polish comes at once)
        steps.clear()
        monkeypatch.setattr(lpca_search, "_SCOUT_MIN_ENTRIES", X.size + (not large))
        run_rank_search(
            _lpca_search, X, **dict(kwargs, cap=cap), params=params, memo=memo
        )
        first.append(steps[0])
    share = lpca_search._ASCENT_SHARE
    assert first == [(3, 1.0), (3, share), (3, 1.0)]


def test_after_a_scout_a_far_cut_fit_jumps_to_a_fresh_start(monkeypatch):
    # Abstracts, 1800 s: after the scout the ascent on X climbed 69, 70,
    # 72, ..., 196, each fit from the last with columns added and cut by its share
    lpca_search = modules.lpca_search
    X = _planted(4, 400, 30, 3)
    n_ones = int(X.sum())
    steps = []

    ascent_step = _fake_ascent_step(  # far, not hopeless
        lambda k: ("time_limit", n_ones // 2), steps, lambda k, share, state: (k, state)
    )

    monkeypatch.setattr(lpca_search, "_ascent_step", ascent_step)
    monkeypatch.setattr(lpca_search, "_SCOUT_MIN_ENTRIES", X.size)
    monkeypatch.setattr(
        lpca_search, "_scout", lambda *a, **kw: {"start": 4, "floor": 1}
    )
    params = {"polish": False}
    run_rank_search(_lpca_search, X, **_BUDGETED, params=params, cap=14)
    assert steps == [(4, None), (8, None), (13, None)]
    # a jumped-to fit cut with at most half the wrong entries of the fit it jumped
    # from goes on at its k with all the time left (L6, a loaded Abstracts run:
    # 69 cut with 254,209 wrong, 138 with 82,112 after 35 sweeps; the ascent
    # jumped on to 276 and 552, and the call's bound was ProjLP's 408)
    steps.clear()
    shares = []
    failed = {4: n_ones // 2, 8: n_ones // 4 - 1, 13: n_ones // 2}
    far_step = ascent_step
    ascent_step = _fake_ascent_step(
        lambda k: ("time_limit", failed[k]),
        steps,
        lambda k, share, state: shares.append(share) or (k, state),
    )
    monkeypatch.setattr(lpca_search, "_ascent_step", ascent_step)
    run_rank_search(_lpca_search, X, **_BUDGETED, params=params, cap=14)
    assert [k for k, _ in steps] == [4, 8, 8, 13]
    assert shares[2] == 1.0  # once, with all the time left; then the jump
    failed[8] += 2  # more than half of 4's: the jump at once
    steps.clear()
    run_rank_search(_lpca_search, X, **_BUDGETED, params=params, cap=14)
    assert [k for k, _ in steps] == [4, 8, 13]
    # the scout's start is no jump: cut far, it jumps whatever the count
    failed[4] = n_ones // 4
    steps.clear()
    run_rank_search(_lpca_search, X, **_BUDGETED, params=params, cap=14)
    assert [k for k, _ in steps] == [4, 8, 13]
    monkeypatch.setattr(lpca_search, "_ascent_step", far_step)
    steps.clear()  # without a scout: the gallop, each fit from the last
    monkeypatch.setattr(lpca_search, "_scout", lambda *a, **kw: None)
    run_rank_search(_lpca_search, X, **_BUDGETED, params=params, cap=14)
    assert [k for k, _ in steps] == [1, 2, 4, 8, 13]
    assert [s for _, s in steps[1:]] == [("model", k) for k in (1, 2, 4, 8)]


def _polish_on(X, incumbent, deadline=None, info=None, **kwargs):
    """Run the polish phase on ``X`` (no deadline by default; ranks <= 30); returns
    whether it reports itself cut."""
    params = dict(kind="global", tau=0.5, start=1, seed=0, rescue_limit=30)
    params.update(max_rank=30, fit=dict(tau=0.5, alpha=1e-4, n_jobs=None, verbose=0))
    return modules.lpca_search._polish(
        incumbent,
        modules.lpca_model._Data(X),
        info or modules.lpca_search._search_info("global"),
        deadline or Deadline(None),
        n_ones=int(X.sum()),
        **dict(params, **kwargs),
    )


def _failing_polish_fits(monkeypatch, tried, deadlines=None):
    """Polish fits that fail (99 entries wrong), their start's first item in ``tried``.

    The SVD start of ``p`` columns is ``(p, None, None)``; each fit's deadlines (its
    own and its rescue's) go to ``deadlines`` if given.
    """
    lpca_search = modules.lpca_search

    def fit_and_rescue(incumbent, info, data, state, own, rescue_deadline, **kw):
        tried.append(state[0])
        if deadlines is not None:
            deadlines.append((own, rescue_deadline))
        finfo = {"status": "stalled", "n_errors_logit": 99}
        out = dict(state=state, best=state, ok=False, rescue=None, rescued=False)
        return dict(out, failed=99, finfo=finfo, sweeps=3)

    monkeypatch.setattr(lpca_search, "_fit_and_rescue", fit_and_rescue)
    monkeypatch.setattr(
        lpca_search, "_svd_init", lambda data, p, *a, **kw: (p, None, None)
    )


def test_polish_after_a_scout_descends_cautiously_from_the_bound(monkeypatch):
    # one fit at k = 133 took 165 s of a 341 s share on Abstracts: after a scout the
    # polish tries no rank below 90% of the bound (a bisection from the floor, 1,
    # would try k = 10 first here)
    X = _planted(4, 400, 30, 3)
    tried = []

    _failing_polish_fits(monkeypatch, tried)
    for descent, expected in ((0.9, [18, 19]), (None, [10, 15, 17, 18, 19])):
        tried.clear()
        incumbent = Incumbent(X, 0.5, "lpca", cap=20)
        _polish_on(X, incumbent, descent=descent)
        assert tried == expected


def test_the_descent_does_not_pass_a_rank_whose_fit_a_deadline_cut(monkeypatch):
    # Abstracts, 900 s: the first pass's share cut the polish fit at 102 below 113;
    # the second pass continued 107, descended to 97 (90%), failed, and certified
    # 102 at the deadline. A cut fit above the descent's rank goes on first.
    X = _planted(4, 400, 30, 3)
    tried = []
    _failing_polish_fits(monkeypatch, tried)
    incumbent = Incumbent(X, 0.5, "lpca", cap=30)
    incumbent.memo[28] = ("memo 28", None, None)
    _polish_on(X, incumbent, descent=0.9)
    assert tried == ["memo 28", 29]
    # a cut fit at or below the floor is not taken (the first pass's own floor)
    tried.clear()
    incumbent = Incumbent(X, 0.5, "lpca", cap=30)
    incumbent.memo[26] = ("memo 26", None, None)
    _polish_on(X, incumbent, descent=0.9, start=27)
    assert tried == [28, 29]


def test_a_resumed_polish_aims_close_when_one_fit_is_left(monkeypatch):
    # Abstracts, 900 s: with 235 s left after a fit that certified in 97 s, a 90%
    # step (102 -> 92) fails; the last fit steps a third of that, with all the time
    X = _planted(4, 400, 90, 3)
    tried, deadlines = [], []
    _failing_polish_fits(monkeypatch, tried, deadlines)
    first = []
    for seconds, retry_cut in ((250.0, True), (1000.0, True), (250.0, False)):
        tried.clear()
        deadlines.clear()
        incumbent = Incumbent(X, 0.5, "lpca")
        assert incumbent.offer(X.copy(), np.eye(X.shape[1]))  # rank 90
        info = modules.lpca_search._search_info("global")
        info["seconds_by_k"][90] = 100.0  # the certified fit took 100 s
        deadline = Deadline(seconds)
        _polish_on(
            X,
            incumbent,
            deadline,
            info=info,
            descent=0.9,
            share=0.5,
            retry_cut=retry_cut,
            max_rank=100,
        )
        own = deadlines[0][0]
        first.append((tried[0], round(own.remaining() / deadline.remaining(), 1)))
    # 250 s < 3 x 100 s: 87 (96.7% of 90) with all of it; else 81 on half of it
    assert first == [(87, 1.0), (81, 0.5), (81, 0.5)]


def _scout_on(X, cap=None, max_rank=31):
    """The scout's record on ``X`` (first rank 6, a 100 s deadline)."""
    return modules.lpca_search._scout(
        X,
        Incumbent(X, 0.5, "lpca", cap=cap),
        Deadline(100.0),
        first=6,
        max_rank=max_rank,
        seed=0,
        fit=dict(tau=0.5, alpha=1e-4, n_jobs=None, verbose=0),
        fit_bias="global",
        dtype="float64",
    )


def test_scout_floor_counts_only_sample_fits_that_ended(monkeypatch):
    # Abstracts, 900 s: the sample's fits at k = 37, 69 and 133 were cut by their
    # shares; as the floor they left the polish no rank below 133
    lpca_search = modules.lpca_search
    X = _planted(4, 400, 30, 3)
    status = {6: "stalled", 9: "stalled", 13: "time_limit", 21: "time_limit"}
    found = {
        "failed_by_k": dict.fromkeys(status, 10**6),  # all far
        "sweeps_by_k": dict.fromkeys(status, 5),
        "status_by_k": status,
    }
    monkeypatch.setattr(lpca_search, "_lpca_search", lambda *a, **kw: found)
    monkeypatch.setattr(lpca_search, "_SCOUT_MIN_ENTRIES", X.size)
    monkeypatch.setattr(lpca_search, "_SCOUT_ENTRIES", 100 * 30)
    record = _scout_on(X)
    assert record["floor"] == 9
    # the last fit (21) was cut far: the start stays at it
    assert record["start"] == 21


def test_scout_starts_past_the_samples_last_fit_only_if_it_ended_far(monkeypatch):
    # Abstracts, 900 s, two busy processes beside it: the scout's share cut the
    # sample's fits at 69 (41% of its ones wrong) and 133 (22%, seconds after it
    # started); a jump from 133 started X at 266, where fits at 133 certify. A fit
    # cut far off starts X at its rank (X's own ascent doubles the rank if its fit
    # there is cut far off too); one that ended far off, at the sample's next rank
    lpca_search = modules.lpca_search
    X = _planted(4, 400, 30, 3)
    status = {6: "stalled", 7: "stalled", 9: "stalled", 13: "time_limit"}
    failed = {6: 10**6, 7: 10**6, 9: 10**6, 13: 10**6}
    found = {"failed_by_k": failed, "sweeps_by_k": dict.fromkeys(status, 5)}
    found["status_by_k"] = status
    monkeypatch.setattr(lpca_search, "_lpca_search", lambda *a, **kw: found)
    monkeypatch.setattr(lpca_search, "_SCOUT_MIN_ENTRIES", X.size)
    monkeypatch.setattr(lpca_search, "_SCOUT_ENTRIES", 100 * 30)
    # 13 cut far: the start stays at 13 (it was the jump, 26, before)
    assert _scout_on(X)["start"] == 13
    assert _scout_on(X, cap=12)["start"] == 11  # below the known bound
    # cut near (at most 10% of the sample's ones wrong): the start stays at 13
    failed[13] = 1
    assert _scout_on(X)["start"] == 13
    # a fit that ended far (not cut): the gallop's next rank, 13 + 8 (climbed from
    # 6); below the known bound
    failed[13], status[13] = 10**6, "stalled"
    assert _scout_on(X)["start"] == 21
    assert _scout_on(X, cap=17)["start"] == 16
    # ended near: the start stays at it
    failed[13] = 1
    assert _scout_on(X)["start"] == 13
    # cut before its first sweep: not counted, however far its start's count (a
    # loaded Abstracts run: the sample's fit at 133 was cut so with 22% of its
    # ones wrong; X started at 133 and certified it); 9 ended far, its gallop: 13
    failed[13], status[13] = 10**6, "time_limit"
    found["sweeps_by_k"][13] = 0
    assert _scout_on(X)["start"] == 13
    # near at a rank the gallop reached from a fit the share cut far off: X starts
    # at the cut rank (L8, a loaded Abstracts run: the sample's 133 cut far, 261
    # near; X's ascent from 261 certified 261 and the polish reached 212 at 613 s)
    found["sweeps_by_k"][13] = 5
    failed[13], status[9] = 1, "time_limit"
    assert _scout_on(X)["start"] == 9
    # also after k + 1 steps of near fits from the gallop's landing
    failed[14], status[14], found["sweeps_by_k"][14] = 1, "time_limit", 5
    assert _scout_on(X)["start"] == 9
    for d in (failed, status, found["sweeps_by_k"]):
        del d[14]
    status[9] = "stalled"  # ended far: the near fit's rank
    assert _scout_on(X)["start"] == 13


def test_scout_start_grows_the_samples_lbfgs_rank_below_the_bound(monkeypatch):
    # Abstracts, 2100 s and 3600 s: 2044 of 12841 rows certified at 69, where X
    # needs about 100, and the fit on X at 69 ran 400-540 s with 35% of the ones
    # wrong; the ascent on X starts at twice the sample's rank, below the bound (at
    # 1.5 times, 104, a 900 s run's fit on X took 320 s to 812 entries wrong)
    lpca_search = modules.lpca_search
    X = _planted(4, 400, 30, 3)
    status = {6: "stalled", 8: "exact"}

    def search(Xs, sample, *args, **kwargs):
        sample.rank = 8  # the sample certified 8
        return {
            "failed_by_k": {6: 10**6, 8: 0},
            "sweeps_by_k": dict.fromkeys(status, 5),
            "status_by_k": status,
        }

    monkeypatch.setattr(lpca_search, "_lpca_search", search)
    monkeypatch.setattr(lpca_search, "_SCOUT_MIN_ENTRIES", X.size)
    monkeypatch.setattr(lpca_search, "_SCOUT_ENTRIES", 100 * 30)
    # the sample's rank 8 beyond Newton's range (its fits run L-BFGS)
    monkeypatch.setattr(modules.lpca, "_AUTO_NEWTON_MAX_P", 7)
    starts = []
    for cap, max_rank in ((None, 31), (10, 31), (None, 11)):
        record = _scout_on(X, cap=cap, max_rank=max_rank)
        assert record["rank"] == 8 and record["floor"] == 6
        starts.append(record["start"])
    assert starts == [16, 9, 11]
    # within Newton's range the start stays at the sample's rank (planted 200,000 x
    # 5,000: the sample certified 17; grown to 26, an L-BFGS fit from a fresh start
    # certified nothing in 1800 s, where the Newton ascent from 17 certified 24)
    monkeypatch.setattr(modules.lpca, "_AUTO_NEWTON_MAX_P", 8)
    record = _scout_on(X)
    assert record["rank"] == 8 and record["start"] == 8
    monkeypatch.setattr(modules.lpca, "_AUTO_NEWTON_MAX_P", 7)
    # a certificate after a fit its share cut is not grown (Abstracts, 900 s: 69
    # cut, 133 certified on the sample, and X's ascent from 200 certified 200)
    status[6] = "time_limit"
    record = _scout_on(X)
    assert record["rank"] == 8 and record["start"] == 8


def test_rescues_repeat_within_a_budget_while_the_failures_drop(monkeypatch):
    # a stand-in state is (failing entries, 0, 0); each rescue maps it to the next
    mod = modules.lpca_search
    after = {30: 12, 12: 5, 5: 5}
    calls = []

    def rescue(incumbent, info, data, U, V, mu, L, R, **kwargs):
        calls.append(U)
        return False, {"from": U}, (after[U], V, mu)

    class Incumbent:
        @staticmethod
        def count_uncertified(L, R):
            return L

    monkeypatch.setattr(mod, "_package", lambda U, V, mu, tau: (U, V))
    monkeypatch.setattr(mod, "_rescue", rescue)
    fit = {"tau": 0.5, "n_jobs": 1, "verbose": 0}

    def run(deadline, limit=40):
        calls.clear()
        return mod._rescues(
            Incumbent(), {}, None, (30, 0, 0), deadline, limit=limit, fit=fit, tick=None
        )

    ok, info, state = run(Deadline(60))
    assert not ok and calls == [30, 12, 5] and state[0] == 5 and info == {"from": 5}
    ok, info, state = run(Deadline(None))  # without a budget: one rescue, as before
    assert calls == [30] and state[0] == 12
    ok, info, state = run(Deadline(60), limit=29)  # not near enough: none
    assert calls == [] and info is None and state[0] == 30


def test_block_of_columns_is_the_top_pairs_of_one_gradient():
    init = modules.lpca_init
    _Data = modules.lpca_model._Data
    X = _planted(6, 90, 70, 4)
    data = _Data(X)
    kind = modules.lpca._model_kind("global", 0.5)
    U, V, mu = init._svd_init(data, 1, kind, 0, 0.5)
    one = init._add_column(data, U, V, mu)
    block = init._add_columns(data, U, V, mu, 1)
    assert np.array_equal(one[0], block[0]) and np.array_equal(one[1], block[1])
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
    one = init._add_column(sparse, U, V, mu)
    assert np.allclose(np.abs(Us[:, :2]), np.abs(one[0]), rtol=0.05, atol=1e-3)


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


def test_boost_of_sparse_data_is_the_dense_boost_by_blocks_of_rows(monkeypatch):
    # the boost reweights sparse data without an m x n array (it used to densify,
    # or give up past the dense-copy limit: 12 GB on 1e9 entries) and ends where
    # the boost of the same dense data ends
    import scipy.sparse as sp

    lpca, model = modules.lpca, modules.lpca_model
    X = _planted(3, 80, 60, 3)
    dense = model._Data(X)
    kind = lpca._model_kind("global", 0.5)
    U, V, mu = modules.lpca_init._svd_init(dense, 3, kind, 0, 0.5)
    U, V, mu, _, finfo = lpca._fit_core(
        dense, U, V, mu, tau=0.5, solver="newton", alpha=1e-3, max_iter=10,
        tol=0.0, n_jobs=1, verbose=0, stop_when_exact=True, deadline=Deadline(None),
    )  # fmt: skip
    assert finfo["n_errors_logit"] > 0  # a near fit for the boost to finish
    args = dict(tau=0.5, alpha=1e-3, n_jobs=1, deadline=Deadline(None), verbose=0)
    Ud, Vd, mud, exact_dense = modules.lpca_search._boost(dense, U, V, mu, **args)
    monkeypatch.setattr(model, "_CHUNK_ENTRIES", 600)  # chunks of 10 rows
    monkeypatch.setattr(model, "_GRAM_ROWS", 16)
    blocks = []
    read = model._SparseSigns.__getitem__
    monkeypatch.setattr(
        model._SparseSigns,
        "__getitem__",
        lambda self, rows: (
            blocks.append(rows.indices(self.shape[0])) or read(self, rows)
        ),
    )
    sparse = model._Data(sp.csr_matrix(X))
    Us, Vs, mus, exact_sparse = modules.lpca_search._boost(sparse, U, V, mu, **args)
    assert exact_dense and exact_sparse
    assert blocks and max(stop - start for start, stop, _ in blocks) <= 16
    assert np.allclose(Us, Ud) and np.allclose(Vs, Vd) and np.allclose(mus, mud)


def test_large_data_add_a_jumps_columns_in_one_block(monkeypatch):
    lpca_search = modules.lpca_search
    blocks = []
    real = lpca_search._add_columns

    def add_columns(data, U, V, mu, r, deadline):
        blocks.append((U.shape[1], r))
        return real(data, U, V, mu, r, deadline)

    monkeypatch.setattr(lpca_search, "_add_columns", add_columns)
    X = (np.random.default_rng(0).random((60, 40)) < 0.5).astype(float)
    params = {"polish": False, "max_rank": 4}
    kwargs = dict(method="lpca", tau=0.5, random_state=0, params=params)
    # a limited budget: the ascent gallops 1, 2, 4 while far
    run_rank_search(_lpca_search, X, deadline=1000.0, **kwargs)
    assert blocks == []  # 2400 entries: one column at a time
    monkeypatch.setattr(lpca_search, "_BLOCK_ADD_ENTRIES", X.size)
    res = run_rank_search(_lpca_search, X, deadline=1000.0, **kwargs)
    assert blocks == [(1, 1), (2, 2)]  # k = 1 -> 2, then the jump 2 -> 4 at once
    assert 4 in res.info["failed_by_k"]
    blocks.clear()  # sparse data of as many entries: the same blocks
    import scipy.sparse as sp

    run_rank_search(_lpca_search, sp.csr_matrix(X), deadline=1000.0, **kwargs)
    assert blocks == [(1, 1), (2, 2)]


def test_no_polish_far_below_a_cap_the_ascent_never_reached():
    # Abstracts: the ascent stopped at k = 7 under R-SVD's cap 4421 and the polish
    # bisected at k = 2214 (an L-BFGS fit whose history took 6 GB); polish only
    # below the search's own certificate or a cap the ascent came up to
    X = np.eye(6)
    capped = Incumbent(X, 0.5, "lpca", cap=5)
    assert not modules.lpca_search._polish_wanted(capped, "time limit")
    assert modules.lpca_search._polish_wanted(capped, "bound")
    own = Incumbent(X, 0.5, "lpca", cap=5, rank=4)
    assert modules.lpca_search._polish_wanted(own, "certified")
    assert modules.lpca_search._polish_wanted(own, "time limit")
    met = Incumbent(X, 0.5, "lpca", lower=5, cap=5)
    assert not modules.lpca_search._polish_wanted(met, "bound")  # nothing to polish
    assert not modules.lpca_search._polish_wanted(Incumbent(X, 0.5, "lpca"), "bound")


def test_search_in_float32_fits_in_float32_and_certifies_in_float64(monkeypatch):
    # Abstracts: one float32 fit at k = 100 certified in about 7 minutes, float64
    # did not in 30; the search takes the estimator's dtype, the certificate stays
    # the float64 one
    X = _planted(3, 50, 40, 3)
    dtypes = spy(
        monkeypatch, modules.lpca_search, "_fit_core", lambda data, *a, **k: data.dtype
    )
    res = run_family("lpca", X, random_state=0, dtype="float32")
    assert res.certified and set(dtypes) == {np.dtype(np.float32)}
    assert res.L.dtype == np.float64 and certify_rounding(X, res.L, res.R)
    assert res.info["fit_params"] == {"fit_bias": "global", "dtype": "float32"}
    plain = run_family("lpca", X, random_state=0)
    assert "dtype" not in plain.info["fit_params"]


def test_search_sweeps_in_float32_by_default_on_large_data(monkeypatch):
    # dtype="auto": float32 from _FLOAT32_ENTRIES entries on (lowered here)
    X = _planted(3, 50, 40, 3)
    monkeypatch.setattr(modules.lpca_search, "_FLOAT32_ENTRIES", 50 * 40)
    dtypes = spy(
        monkeypatch, modules.lpca_search, "_fit_core", lambda data, *a, **k: data.dtype
    )
    res = run_family("lpca", X, random_state=0)
    assert set(dtypes) == {np.dtype(np.float32)}
    assert res.info["fit_params"]["dtype"] == "float32"
    monkeypatch.setattr(modules.lpca_search, "_FLOAT32_ENTRIES", 50 * 40 + 1)
    assert "dtype" not in run_family("lpca", X, random_state=0).info["fit_params"]


def test_hopeless_rule_gives_up_early_within_a_budget_only():
    _solver_budget = modules.lpca_search._solver_budget
    _stalled = modules.lpca_newton._stalled
    early = modules.lpca_search._EARLY_SWEEPS
    f = modules.lpca_search._LBFGS_SWEEP_FACTOR
    p = modules.lpca._AUTO_NEWTON_MAX_P

    kw = dict(far=70, hopeless=90)
    assert _solver_budget(p, (50, 40), 300, (30, 0.02), **kw)["stall"] == (30, 0.02)
    newton = _solver_budget(p, (50, 40), 300, (30, 0.02), limited=True, **kw)
    assert newton["stall"] == (30, 0.02, 0.0, 70, -1, (early, 90))
    lbfgs = _solver_budget(p + 1, (50, 40), 300, (30, 0.02), limited=True, **kw)
    assert lbfgs["stall"] == (30 * f, 0.02, 0.0, 70)  # L-BFGS: no early verdict
    near = _solver_budget(p, (50, 40), 300, (30, 0.02), limited=True, near=5, **kw)
    assert near["stall"] == (30, 0.02, 0.0, 70, 5, (early, 90))
    stall = (30, 0.02, 0.0, np.inf, -1, (5, 90))
    slow = [100 - i for i in range(7)]  # 94 left after 6 sweeps: still hopeless
    assert not _stalled(slow[:5], stall, 10**6)  # before the early window
    assert _stalled(slow, stall, 10**6)
    fast = [100 - 3 * i for i in range(7)]  # 82 left: goes on
    assert not _stalled(fast, stall, 10**6)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_a_fit_cut_before_its_first_sweep_counts_its_start_once(monkeypatch, dtype):
    # on 1e9 entries each pass over the data took 11 s: the wrong entries of the
    # start are counted while the start is evaluated, not again after the deadline
    X = _planted(0, 60, 40, 3)
    data = modules.lpca_model._Data(X, dtype=dtype)
    U, V, mu = modules.lpca_init._svd_init(data, 3, "global", 0, 0.5)
    after = spy(monkeypatch, modules.lpca, "_evaluate", lambda *a, **k: 1)
    *_, n_iter, finfo = modules.lpca._fit_core(
        data, U, V, mu, tau=0.5, solver="newton", alpha=1e-4, max_iter=10, tol=0.0,
        n_jobs=1, verbose=0, stop_when_exact=True, deadline=Deadline(0.0),
    )  # fmt: skip
    assert n_iter == 0 and finfo["status"] == "time_limit" and not after
    _, n_wrong, _ = modules.lpca_model._evaluate(None, U, V, mu, data, 0.5)
    assert finfo["n_errors_logit"] == n_wrong > 0
    # a fit that swept counts its end state
    *_, n_iter, finfo = modules.lpca._fit_core(
        data, U, V, mu, tau=0.5, solver="newton", alpha=1e-4, max_iter=2, tol=0.0,
        n_jobs=1, verbose=0, stop_when_exact=True, deadline=Deadline(None),
    )  # fmt: skip
    assert n_iter == 2 and len(after) == 1


def test_a_far_fit_cut_by_its_deadline_is_neither_offered_nor_counted(monkeypatch):
    # two passes over the data after the deadline (14 s on 1e9 entries) that could
    # not change what follows: more entries wrong than the rescue takes
    X = _planted(1, 60, 40, 4)
    incumbent = Incumbent(X, 0.5, "lpca")
    data = modules.lpca_model._Data(X)
    state = modules.lpca_init._svd_init(data, 1, "global", 0, 0.5)
    offered = spy(monkeypatch, modules.lpca_search, "_offer", lambda *a, **k: 1)
    counted = spy(monkeypatch, incumbent, "count_uncertified", lambda *a, **k: 1)
    fit = {"tau": 0.5, "alpha": 1e-4, "n_jobs": 1, "verbose": 0}
    budget = {"solver": "newton", "max_iter": 3, "stall": None, "tol": 0.0}

    def run(own, limit):
        return modules.lpca_search._fit_and_rescue(
            incumbent, {}, data, state, own, Deadline(None), budget=budget,
            near=None, limit=limit, fit=fit, tick=None,
        )  # fmt: skip

    res = run(Deadline(0.0), limit=5)
    assert res["failed"] == res["finfo"]["n_errors_logit"] > 5 and not res["ok"]
    assert not offered and not counted
    res = run(Deadline(None), limit=5)  # not cut by a deadline: offered and counted
    assert offered and counted and res["failed"] > 5
    del offered[:], counted[:]
    res = run(Deadline(0.0), limit=10**6)  # near enough for a rescue: counted
    assert offered and counted


def test_a_fit_that_goes_on_after_a_failed_rescue_starts_from_its_best_model(
    monkeypatch,
):
    # Abstracts, 900 s, loaded: the fit at k = 120 stopped near with 50,052 entries
    # wrong, the boost reached 9, the LPs failed, and the fit went on from 50,052
    mod = modules.lpca_search
    X = _planted(1, 60, 40, 4)
    incumbent = Incumbent(X, 0.5, "lpca")
    starts = []

    def fit_core(data, U, V, mu, **kw):
        starts.append(U)
        return f"fit from {U}", V, mu, 3, {"status": "stalled", "n_errors_logit": 50}

    monkeypatch.setattr(mod, "_fit_core", fit_core)
    monkeypatch.setattr(mod, "_package", lambda U, V, mu, tau: (U, V))
    monkeypatch.setattr(mod, "_offer", lambda *a, **k: False)
    monkeypatch.setattr(incumbent, "count_uncertified", lambda *a, **k: 50)
    boosted = ("boosted", None, None)
    monkeypatch.setattr(mod, "_rescues", lambda *a, **k: (False, {}, boosted))
    fit = {"tau": 0.5, "alpha": 1e-4, "n_jobs": 1, "verbose": 0}
    budget = {"solver": "lbfgs", "max_iter": 3, "stall": (30, 0.02, 0, 9, 60)}
    res = mod._fit_and_rescue(
        incumbent, {}, None, ("svd", None, None), Deadline(None), Deadline(None),
        budget=dict(budget, tol=0.0), near=60, limit=60, fit=fit, tick=None,
    )  # fmt: skip
    assert starts == ["svd", "boosted"]
    assert res["state"][0] == "fit from boosted" and res["sweeps"] == 6
    # not near enough for a rescue: the fit goes on from its own model
    del starts[:]
    res = mod._fit_and_rescue(
        incumbent, {}, None, ("svd", None, None), Deadline(None), Deadline(None),
        budget=dict(budget, tol=0.0), near=60, limit=10, fit=fit, tick=None,
    )  # fmt: skip
    assert starts == ["svd", "fit from svd"]


def test_within_a_budget_a_hopeless_fit_hands_nothing_on(monkeypatch):
    # on 1e9 entries the ascent's warm-started fits left 92% of the ones wrong at
    # k = 16 after 5 sweeps; a fresh SVD start is the better start after such a fit
    X = _planted(2, 80, 60, 6)
    mod = modules.lpca_search
    monkeypatch.setattr(mod, "_EARLY_FAR_FRACTION", -1.0)  # every fit hopeless
    starts = spy(monkeypatch, mod, "_svd_init", lambda data, p, *a, **k: p)
    run_family("lpca", X, random_state=0, time_limit=60, max_rank=5, polish=False)
    assert starts == [1, 2, 4, 5]  # the gallop, each k from the SVD
    del starts[:]
    run_family("lpca", X, random_state=0, max_rank=5, polish=False)
    assert starts == [1]  # without a budget: one start, then warm starts


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


def test_truncated_start_chooses_the_scale_on_blocks_of_rows(monkeypatch):
    # on large data the scale comes from evenly spaced blocks of rows, not a pass
    # over all entries (11 s per pass on 1e9 entries): here 8 blocks of 2 rows
    lpca_init, lpca_model = modules.lpca_init, modules.lpca_model
    rng = np.random.default_rng(0)
    L, R = rng.standard_normal((80, 6)), rng.standard_normal((50, 6))
    X = (L @ R.T >= 0.5).astype(float)
    flip = rng.random(X.shape) < 0.1
    data = lpca_model._Data(np.where(flip, 1 - X, X))
    full = lpca_init._truncated_start(data, L, R, 5, 0.5)
    seen = spy(monkeypatch, lpca_init, "_loss_terms", lambda theta, q: theta.shape)
    monkeypatch.setattr(lpca_init, "_TRUNCATED_SAMPLE", 16 * 50)
    sampled = lpca_init._truncated_start(data, L, R, 5, 0.5)
    assert seen and set(seen) == {(16, 50)}
    np.testing.assert_allclose(
        sampled[0] @ sampled[1].T,
        full[0] @ full[1].T * (float(sampled[2]) / float(full[2])),
    )
    assert 0.25 <= float(sampled[2]) / float(full[2]) <= 4


def test_polish_with_truncate_starts_from_the_best_certificate_cut_to_k(monkeypatch):
    # Abstracts: a fit at k = 100 from a certificate of rank 120 cut to 100 columns
    # left 12,104 entries wrong after 200 iterations, from the fresh SVD start 32,713
    lpca_search = modules.lpca_search
    X = _planted(4, 400, 30, 3)
    rng = np.random.default_rng(1)
    cap_factors = rng.standard_normal((400, 20)), rng.standard_normal((30, 20))
    starts = []

    def fit_and_rescue(incumbent, info, data, state, *args, **kwargs):
        finfo = {"status": "stalled", "n_errors_logit": 99}
        out = dict(state=state, best=state, ok=False, rescue=None, rescued=False)
        return dict(out, failed=99, finfo=finfo, sweeps=3)

    def truncated(data, L, R, p, tau, **kwargs):
        assert L is cap_factors[0] and R is cap_factors[1]
        starts.append(("truncated", p))
        return ("truncated", p), None, None

    def svd(data, p, *args, **kwargs):
        starts.append(("svd", p))
        return ("svd", p), None, None

    monkeypatch.setattr(lpca_search, "_fit_and_rescue", fit_and_rescue)
    monkeypatch.setattr(lpca_search, "_truncated_start", truncated)
    monkeypatch.setattr(lpca_search, "_svd_init", svd)
    cases = (
        (True, "global", {}, [("truncated", 18), ("truncated", 19)]),
        (False, "global", {}, [("svd", 18), ("svd", 19)]),
        (True, "none", {}, [("svd", 18), ("svd", 19)]),  # global offset only
        (True, "global", {18: ("memo", 0, 0)}, [("truncated", 19)]),  # memo first
    )
    for truncate, kind, memo, expected in cases:
        starts.clear()
        incumbent = Incumbent(
            X, 0.5, "lpca", cap=20, cap_factors=cap_factors, memo=dict(memo)
        )
        _polish_on(X, incumbent, kind=kind, descent=0.9, truncate=truncate)
        assert starts == expected


def test_resumed_search_polishes_below_the_fit_it_continues(monkeypatch):
    # Abstracts, 900 s: the polish fit at k = 120 went on in the portfolio's second
    # pass and certified; with its floor at 119 the search then ended with time left
    # (APJ, 60 s: k = 5 certified with 11 s left, and k = 4 was not tried)
    lpca_search = modules.lpca_search
    X = _planted(4, 400, 30, 3)
    calls = []

    ascent_step = _fake_ascent_step(lambda k: ("exact", 0), [])  # certified

    def polish(incumbent, data, info, deadline, *, start, descent, truncate, **kw):
        calls.append(
            (start, descent, truncate, kw["retry_cut"], deadline.remaining() > 900)
        )

    monkeypatch.setattr(lpca_search, "_ascent_step", ascent_step)
    monkeypatch.setattr(lpca_search, "_polish", polish)
    monkeypatch.setattr(lpca_search, "_SCOUT_MIN_ENTRIES", X.size)
    kwargs = dict(_BUDGETED, cap=12, lower=2, params={"start": 10})
    run_rank_search(_lpca_search, X, **kwargs, memo={10: None})
    run_rank_search(_lpca_search, X, **kwargs, memo={})  # nothing cut: as before
    monkeypatch.setattr(lpca_search, "_SCOUT_MIN_ENTRIES", X.size + 1)
    run_rank_search(_lpca_search, X, **kwargs, memo={10: None})  # smaller data
    descent = lpca_search._POLISH_DESCENT
    assert calls[0] == (2, descent, True, True, True)
    assert calls[1][:4] == (10, None, False, False)
    assert calls[2] == (2, descent, False, True, True)  # no truncated starts
    # resumed right below the bound with nothing to continue: no ascent fit (on
    # Abstracts, 900 s, a fresh fit at k = 119 took 194 s), the polish at once
    steps = []
    ascent_step = _fake_ascent_step(lambda k: ("exact", 0), steps)
    monkeypatch.setattr(lpca_search, "_ascent_step", ascent_step)
    calls.clear()
    run_rank_search(_lpca_search, X, **dict(kwargs, cap=11), memo={})
    assert steps == [] and calls == [(2, descent, False, True, True)]


def test_a_polish_its_deadline_cuts_reports_the_search_stopped_early(monkeypatch):
    # Paleo, 60 s: the polish fit at k = 8 was cut by the polish's share with 54
    # entries wrong; the search said it ended, and the call ended after 19 s
    lpca_search = modules.lpca_search
    X = _planted(4, 120, 30, 3)
    wrong = {}

    def fit_and_rescue(incumbent, info, data, state, deadline, *args, **kwargs):
        time.sleep(0.3)  # the fit runs until its deadline passes
        finfo = {"status": "time_limit", "n_errors_logit": wrong["n"]}
        out = dict(state=state, best=state, ok=False, rescue=None, rescued=False)
        return dict(out, failed=wrong["n"], finfo=finfo, sweeps=3)

    monkeypatch.setattr(lpca_search, "_fit_and_rescue", fit_and_rescue)
    monkeypatch.setattr(
        lpca_search, "_svd_init", lambda data, p, *a, **kw: (p, None, None)
    )
    params = dict(kind="global", tau=0.5, seed=0, rescue_limit=30, max_rank=30)
    params.update(fit=dict(tau=0.5, alpha=1e-4, n_jobs=None, verbose=0))
    n_ones = int(X.sum())
    for n in (5, n_ones):  # near or far, a cut fit is kept and goes on later
        wrong["n"] = n
        incumbent = Incumbent(X, 0.5, "lpca", cap=10)
        out = lpca_search._polish(
            incumbent,
            modules.lpca_model._Data(X),
            lpca_search._search_info("global"),
            Deadline(0.2),
            start=9,
            n_ones=n_ones,
            **params,
        )
        assert out is True and 9 in incumbent.memo
    # with no rank left below the bound, nothing was cut
    incumbent = Incumbent(X, 0.5, "lpca", cap=10)
    data = modules.lpca_model._Data(X)
    info = lpca_search._search_info("global")
    assert not lpca_search._polish(
        incumbent, data, info, Deadline(0.2), start=10, n_ones=n_ones, **params
    )
    # the search then says it stopped early, so that a second pass resumes it
    info = {"polish": {}}
    lpca_search._conclude(info, incumbent, Deadline(100.0), "certified", 30)
    assert not info["stopped_early"]
    lpca_search._conclude(
        info, incumbent, Deadline(100.0), "certified", 30, polish_cut=True
    )
    assert info["stopped_early"]


def test_a_resumed_polish_retries_a_cut_fit_unless_it_was_hopeless(monkeypatch):
    # APJ, 60 s: the ascent's share cut k = 4 with 17% of the ones wrong after
    # 4.5 s; in the second pass, after k = 5 certified, k = 4 was not tried
    X = _planted(4, 400, 30, 3)
    n_ones = int(X.sum())
    tried = []

    _failing_polish_fits(monkeypatch, tried)
    for wrong, retry_cut, expected in (
        (n_ones // 5, True, [19]),  # near enough: retried (the memo's model)
        (n_ones // 5, False, []),  # the first pass: the cut fit raises the floor
        (n_ones - 1, True, []),  # more than half of the ones wrong: hopeless
    ):
        tried.clear()
        incumbent = Incumbent(X, 0.5, "lpca", cap=20)
        incumbent.record(19, wrong)
        incumbent.memo[19] = ("memo", None, None)
        _polish_on(X, incumbent, start=19, retry_cut=retry_cut)
        assert tried == [{19: "memo"}[k] for k in expected]


def test_a_first_pass_leaving_a_cut_fit_below_the_bound_reports_itself_cut(
    monkeypatch,
):
    # APJ, 60 s: the ascent's share cut k = 4 with 710 of 6,902 ones wrong (just
    # above the floor's 10%), 5 certified, and no rank was left for the polish: the
    # search ended as done and the second pass gave its time to VC ([3, 5]; with
    # the fit at 4 near, the second pass certified 4)
    X = _planted(4, 400, 30, 3)
    n_ones = int(X.sum())
    tried = []
    _failing_polish_fits(monkeypatch, tried)
    for wrong, deadline, retry_cut, cut in (
        (n_ones // 5, Deadline(1000.0), False, True),  # a later pass retries it
        (n_ones - 1, Deadline(1000.0), False, False),  # hopeless: never retried
        (n_ones // 5, Deadline(None), False, False),  # no budget: nothing cut
        (n_ones // 5, Deadline(1000.0), True, False),  # the retry itself (fails)
    ):
        tried.clear()
        incumbent = Incumbent(X, 0.5, "lpca", cap=20)
        incumbent.record(19, wrong)
        incumbent.memo[19] = ("memo", None, None)
        out = _polish_on(X, incumbent, deadline, start=19, retry_cut=retry_cut)
        assert out is cut
        assert tried == (["memo"] if retry_cut else [])


def test_polish_fits_after_a_scout_get_half_the_time_then_all(monkeypatch):
    # Abstracts, 3600 s: the polish fit at k = 94 below a certificate of 104 took
    # the whole budget and failed; with half the time left the next fit tries a
    # rank between them (99) with all the rest
    X = _planted(4, 400, 30, 3)
    tried, deadlines = [], []
    _failing_polish_fits(monkeypatch, tried, deadlines)
    deadline = Deadline(1000.0)
    runs = []
    for share in (0.5, None):
        tried.clear()
        deadlines.clear()
        incumbent = Incumbent(X, 0.5, "lpca", cap=30)
        _polish_on(X, incumbent, deadline, descent=0.9, share=share)
        # the rescue stays within the fit's share
        assert all(own is rescue for own, rescue in deadlines)
        given = [
            round(own.remaining() / deadline.remaining(), 2) for own, _ in deadlines
        ]
        runs.append((list(tried), given))
    # k = 27 (90% of 30) on half the time; after its failure 28 on all of it (29
    # is left too), then 29
    assert runs[0] == ([27, 28, 29], [0.5, 1.0, 1.0])
    assert runs[1] == ([27, 28, 29], [1.0, 1.0, 1.0])
    # a fit its half cuts goes on at the same k with all the time if at most 5% of
    # the ones are wrong (Abstracts, 900 s: 120 below 133, 3.3%, then certified),
    # else it raises the floor (2100 s: 94 below 104, 10.5%)
    lpca_search = modules.lpca_search
    real_failing = lpca_search._fit_and_rescue
    n_ones = int(X.sum())

    def cut_by_share(incumbent, info, data, state, own, rescue_deadline, **kw):
        if own is not deadline:
            own.end = time.monotonic()  # its share ends during the fit
        return real_failing(incumbent, info, data, state, own, rescue_deadline, **kw)

    monkeypatch.setattr(lpca_search, "_fit_and_rescue", cut_by_share)
    for wrong, expected in ((n_ones // 20, [27, 27, 28, 29]), (n_ones, [27, 28, 29])):
        monkeypatch.setattr(
            lpca_search, "_evaluate", lambda *a, w=wrong, **kw: (None, w, None)
        )
        tried.clear()
        deadlines.clear()
        incumbent = Incumbent(X, 0.5, "lpca", cap=30)
        _polish_on(X, incumbent, deadline, descent=0.9, share=0.5)
        assert tried == expected


def test_a_polish_fit_cut_near_by_its_share_goes_on_even_at_the_last_step(
    monkeypatch,
):
    # Abstracts, 900 s, loaded, second pass: the share cut the fit at k = 120 below
    # 126 with 9 entries unsafe; less than three times the last certified fit's
    # seconds were then left, the short last step put the next fit at 122 (cut at
    # the deadline) and the call ended at [6, 126]
    lpca_search = modules.lpca_search
    X = _planted(4, 400, 30, 3)
    n_ones = int(X.sum())
    tried = []
    _failing_polish_fits(monkeypatch, tried)
    real_failing = lpca_search._fit_and_rescue
    deadline = Deadline(1000.0)

    def cut_by_share(incumbent, info, data, state, own, rescue_deadline, **kw):
        if own is not deadline:
            own.end = time.monotonic()  # its share ends during the fit
            deadline.end = time.monotonic() + 500.0  # now room for one last fit
        return real_failing(incumbent, info, data, state, own, rescue_deadline, **kw)

    monkeypatch.setattr(lpca_search, "_fit_and_rescue", cut_by_share)
    monkeypatch.setattr(
        lpca_search, "_evaluate", lambda *a, **kw: (None, n_ones // 20, None)
    )
    incumbent = Incumbent(X, 0.5, "lpca", cap=30)
    incumbent.rank = 30  # its certificate took 300 s: 1000 s left are over 3 times
    info = lpca_search._search_info("global")
    info["seconds_by_k"][30] = 300.0
    _polish_on(
        X, incumbent, deadline, info=info, descent=0.9, share=0.5, retry_cut=True
    )
    # 27 (90% of 30) on its share, cut near: 27 again with all the time left (the
    # last step would have put the next fit at 29, 96.7% of 30), then 29
    assert tried == [27, 27, 29]
