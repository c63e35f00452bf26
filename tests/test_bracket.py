"""The bracket rank search judged by its outcomes, behind the family seam.

A fake family certifies rank ``k`` iff ``k >= r*`` (its factors round to ``X``
exactly for ``k >= r*``, and are wrong otherwise), with noisy error counts and a
cost per fit; the properties are those of the module docstring of
``sklearn_rrank._search._bracket``: the rank is found in few fits, a deadline is
overrun by at most one slice, only certified factors become a bound, and an
interrupt keeps the best certificate.
"""

import math

import numpy as np
import pytest
from _family import (
    BracketFamily,
    BracketFit,
    Deadline,
    FakeClock,
    SearchMemo,
    SearchPolicy,
    StartKind,
    bracket_search,
    run_rank_search,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sklearn_rrank import certify_rounding

_SETTINGS = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def _matrix(r, m=40, n=40):
    """A binary matrix of rounding rank at most ``r``: ``X = [I_r-ish block]``.

    Rows ``i < r`` and columns ``j < r`` carry the identity; the rest is 0: the
    rank-``r`` factors ``L = R = [I_r; 0]`` round it exactly at ``tau = 0.5``.
    """
    X = np.zeros((m, n))
    X[np.arange(r), np.arange(r)] = 1.0
    return X


class FakeFamily:
    """``fit(k)`` certifies iff ``k >= r*``; errors far below ``r*`` and noisy.

    Each fit takes ``cost`` seconds (or until its deadline) on the family's fake
    clock. ``near`` ranks just below ``r*`` leave few errors (a near miss); the
    others leave many.
    """

    def __init__(self, X, r_star, *, cost=0.0, seed=0, near=0):
        self.clock = FakeClock()
        self.X, self.r_star, self.cost = X, r_star, cost
        self.rng = np.random.default_rng(seed)
        self.near = near
        self.fits, self.offered = [], []

    def factors(self, k):
        m, n = self.X.shape
        L, R = np.zeros((m, k)), np.zeros((n, k))
        j = min(k, self.r_star)
        L[np.arange(j), np.arange(j)] = 1.0
        R[np.arange(j), np.arange(j)] = 1.0
        return L, R

    def fit(self, k, warm, deadline):
        self.fits.append(k)
        t0 = self.clock()
        rem = deadline.remaining()
        self.clock.advance(self.cost if rem is None else min(self.cost, rem))
        cut = deadline.expired()
        L, R = self.factors(k)
        if k >= self.r_star:
            n_wrong = 0
        elif k >= self.r_star - self.near:
            n_wrong = 1 + int(self.rng.integers(0, 5))
        else:
            n_wrong = int(self.r_star - k + self.rng.integers(0, 3)) * 1000
        history = [(t0, n_wrong + 1000), (self.clock() + 1e-3, n_wrong + 999)]
        if cut:  # an unfinished fit has nothing to offer
            L = R = None
            n_wrong += 1000
        return BracketFit(L, R, n_wrong, ("fake", k), cut=cut, history=history)


def _search(
    X, family, *, deadline=None, lower=0, cap=None, interrupt_at=None, policy=None
):
    def search(X, incumbent, dl, **kw):
        offer = incumbent.offer

        def spying_offer(L, R):
            ok = offer(L, R)
            family.offered.append((L.shape[1], ok, bool(certify_rounding(X, L, R))))
            return ok

        incumbent.offer = spying_offer
        fit = family.fit
        if interrupt_at is not None:

            def fit(k, warm, d):
                if len(family.fits) == interrupt_at:
                    raise KeyboardInterrupt
                return family.fit(k, warm, d)

        policy_kw = {} if policy is None else {"policy": policy}
        # a family without a rescue (its near misses are real) leaves it None
        family_ = BracketFamily(fit, rescue=getattr(family, "rescue", None))
        return bracket_search(incumbent, dl, family_, **policy_kw)

    if not isinstance(deadline, Deadline):
        deadline = Deadline(deadline, clock=family.clock)
    return run_rank_search(
        search, X, method="fake", tau=0.5, deadline=deadline, lower=lower, cap=cap
    )


@_SETTINGS
@given(r_star=st.integers(1, 35), seed=st.integers(0, 10), near=st.integers(0, 3))
def test_finds_the_rank_in_logarithmically_many_fits(r_star, seed, near):
    X = _matrix(r_star)
    family = FakeFamily(X, r_star, seed=seed, near=near)
    res = _search(X, family)
    assert res.rank == r_star
    assert certify_rounding(X, res.L, res.R)
    # a gallop to the rank, then a bisection back (near misses do not double the
    # gap: a few more fits each)
    bound = 2 * math.ceil(math.log2(r_star)) + 2 + near
    assert len(family.fits) <= bound, family.fits
    assert not res.stopped_early


@_SETTINGS
@given(r_star=st.integers(2, 30), lower=st.integers(0, 30), cap=st.integers(1, 41))
def test_never_tries_outside_the_bracket_and_keeps_the_cap(r_star, lower, cap):
    X = _matrix(r_star)
    family = FakeFamily(X, r_star)
    res = _search(X, family, lower=lower, cap=cap)
    assert all(max(lower, 1) <= k < cap for k in family.fits)
    if res.rank is not None:
        assert res.rank < cap and certify_rounding(X, res.L, res.R)
    if r_star < cap and lower <= r_star:
        assert res.rank == max(r_star, lower)


@_SETTINGS
@given(r_star=st.integers(1, 30), seed=st.integers(0, 5))
def test_uncertified_factors_are_never_a_bound(r_star, seed):
    X = _matrix(r_star)
    family = FakeFamily(X, r_star, seed=seed, near=2)
    res = _search(X, family)
    # every accepted offer re-checks, every rejected one does not
    assert all(ok == checks for _, ok, checks in family.offered)
    assert res.rank is None or certify_rounding(X, res.L, res.R)
    curve_ranks = [k for _, k in res.info["curve"]]
    assert all(k >= r_star for k in curve_ranks)


@pytest.mark.parametrize("budget", [0.3, 0.6])
def test_a_deadline_is_overrun_by_at_most_one_slice(budget):
    # fits that cost more than any slice: each is cut at its own deadline
    X = _matrix(30, 64, 64)
    family = FakeFamily(X, 30, cost=10.0)
    res = _search(X, family, deadline=budget)
    first_slice = budget / (math.ceil(math.log2(64)) + 1)
    assert family.clock() <= budget + first_slice
    assert res.rank is None


@pytest.mark.parametrize("share", [0.0, 1 / 3, 0.5])
def test_every_first_slice_holds_the_policy_slice_share_of_the_time_left(share):
    # fits long against a bisection's slice (the working set's): with a slice
    # share, no fit is cut to less than that share of what the search has left
    X = _matrix(30)
    family = FakeFamily(X, 30, cost=3.0)
    budget, seen = 100.0, []
    fit = family.fit

    def recording(k, warm, deadline):
        seen.append((deadline.remaining(), budget - family.clock()))
        return fit(k, warm, deadline)

    family.fit = recording
    res = _search(X, family, deadline=budget, policy=SearchPolicy(slice_share=share))
    assert res.rank == 30
    shares = [given / left for given, left in seen]
    assert min(shares) >= share - 1e-9
    if share == 0.0:  # the bisection's slices alone are shorter
        assert min(shares) < 1 / 3


@_SETTINGS
@given(
    r_star=st.integers(1, 35),
    lower=st.integers(0, 10),
    first_gap=st.integers(1, 40),
    seed=st.integers(0, 5),
)
def test_a_first_gap_starts_the_gallop_higher_and_finds_the_same_rank(
    r_star, lower, first_gap, seed
):
    # the first fit is lower + first_gap - 1 (never past the middle of the
    # bracket), and the bisection back below it still finds the rank
    X = _matrix(r_star)
    family = FakeFamily(X, r_star, seed=seed)
    res = _search(X, family, lower=lower, policy=SearchPolicy(first_gap=first_gap))
    bottom = max(lower, 1) - 1
    top = min(X.shape) + 1  # one above the trivial certificate's rank
    assert family.fits[0] == max(
        bottom + 1, min(bottom + first_gap, (bottom + top) // 2)
    )
    assert res.rank == max(r_star, lower)
    assert certify_rounding(X, res.L, res.R)


@pytest.mark.parametrize("warm_below", [True, False])
def test_without_warm_below_no_fit_starts_from_a_failed_fit_below(warm_below):
    # the gallop's fits fail below the rank: with warm_below they start from the
    # nearest one (columns added), without it fresh; the rank is found either way
    X = _matrix(20)
    family = FakeFamily(X, 20)
    kinds = []
    fit = family.fit

    def recording(k, warm, deadline):
        kinds.append(warm.kind)
        return fit(k, warm, deadline)

    family.fit = recording
    res = _search(X, family, policy=SearchPolicy(warm_below=warm_below))
    assert res.rank == 20
    assert (StartKind.BELOW in kinds) == warm_below
    assert StartKind.CERTIFICATE in kinds  # the bisection below a certificate


class SetupFamily(FakeFamily):
    """Fits with a start that no deadline cuts, as L-PCA's on 1e8 entries.

    A fit first spends ``setup`` seconds (its start and first pass over the data),
    then runs sweeps of ``sweep`` seconds while its deadline leaves room for one
    more and for the final count (``tail`` seconds, after a sweep only); a sweep
    that its deadline cuts is lost. It never certifies.
    """

    def __init__(self, X, *, setup, sweep, tail):
        super().__init__(X, X.shape[0] + 1)
        self.setup, self.sweep, self.tail = setup, sweep, tail

    def fit(self, k, warm, deadline):
        self.fits.append(k)
        clock = self.clock
        clock.advance(self.setup)
        history, n_wrong = [], 10_000 + k
        while deadline.leaves_room_for(self.sweep + self.tail):
            clock.advance(self.sweep)
            n_wrong -= 1
            history.append((clock(), n_wrong))
        if history:
            clock.advance(self.tail)
        elif not deadline.expired():
            clock.advance(deadline.remaining())  # a sweep cut at the deadline
        return BracketFit(None, None, n_wrong, ("fake", k), cut=True, history=history)


@pytest.mark.parametrize("budget", [60.0, 100.0, 137.0, 250.0])
def test_no_fit_starts_that_would_not_end_a_sweep_before_the_deadline(budget):
    # the start of a fit cannot be cut: the search starts a fit only when the
    # time left holds what the latest fit spent outside its sweeps
    X = _matrix(30, 64, 64)
    family = SetupFamily(X, setup=7.0, sweep=1.0, tail=1.5)
    res = _search(X, family, deadline=budget)
    assert len(family.fits) > 3
    assert family.clock() <= budget
    assert res.rank is None and res.stopped_early


def test_an_interrupt_keeps_the_best_certificate():
    X = _matrix(12)
    family = FakeFamily(X, 12)
    with pytest.raises(KeyboardInterrupt) as exc:
        _search(X, family, interrupt_at=4)
    kept = exc.value.rank_search_result
    assert kept.info["interrupted"]
    assert kept.rank is not None and kept.rank >= 12
    assert certify_rounding(X, kept.L, kept.R)


def test_a_fit_without_a_count_goes_on_at_its_rank():
    # a slice that ends before the fit counted its wrong entries (a working-set
    # fit before its first scan) is no evidence that the rank is far: the fit goes
    # on at the same rank, nothing is recorded for it, and the rank is found
    X = _matrix(20)
    family = FakeFamily(X, 20, cost=1.0)
    fit = family.fit

    def uncounted_first(k, warm, deadline):
        if not family.fits:
            family.fits.append(k)
            return BracketFit(None, None, None, ("fake", k), cut=True)
        return fit(k, warm, deadline)

    family.fit = uncounted_first
    res = _search(X, family, deadline=1000.0)
    assert family.fits[1] == family.fits[0]
    assert res.rank == 20


def test_a_cut_fit_goes_on_when_its_trend_pays_off_in_its_next_slice():
    policy = SearchPolicy()

    def go_on(history, last, remaining=100.0, elapsed=0.0):
        more = policy.go_on(history, 30, remaining, elapsed, last)
        return more.seconds if more.go else False

    # 500 -> 100 in a second: 30 is 0.75 s away, within twice a 1 s slice
    assert 1.0 <= go_on([(0.0, 1000), (1.0, 500), (2.0, 100)], 1.0) <= 2.0
    # halving each second from 3200: 30 is 6.7 s away
    assert go_on([(0.0, 6400), (1.0, 3200)], 2.0) is False  # > 2 slices
    assert go_on([(0.0, 6400), (1.0, 3200)], 4.0) == 8.0
    assert go_on([(0.0, 6400), (1.0, 3200)], 4.0, remaining=8.0) is False
    assert go_on([(0.0, 1000), (1.0, 999), (2.0, 998)], 1.0) is False
    assert go_on([(0.0, 1000), (1.0, 1000), (2.0, 1200)], 1.0) is False
    assert go_on([(0.0, 100), (1.0, 10)], 1.0) == 1.0  # near, falling
    assert go_on([(0.0, 28), (1.0, 28)], 1.0) is False  # near but flat
    assert go_on([(0.0, 5000)], 1.0) == 2.0  # no trend yet
    # without a deadline: the trend within as long again as the search has run
    unlimited = policy.go_on([(0.0, 100), (1.0, 10)], 30, None, 5.0, None)
    assert unlimited.go and unlimited.seconds is None
    assert go_on([(0.0, 1000), (1.0, 1000)], None, remaining=None) is False


class SlowNearFamily(FakeFamily):
    """Every fit runs to its slice's end with a steep geometric trend, and is near
    (5 entries wrong, never exact) once ``near_after`` seconds of fitting have
    passed in all; its rescue certifies when it gets ``rescue_needs`` seconds."""

    def __init__(self, X, r_star, near_after, rescue_needs):
        super().__init__(X, r_star)
        self.near_after, self.rescue_needs = near_after, rescue_needs
        self.fitted, self.rescues = 0.0, []

    def fit(self, k, warm, deadline):
        self.fits.append(k)
        t0 = self.clock()
        self.clock.advance(deadline.remaining())  # a real fit runs to its slice's end
        self.fitted += self.clock() - t0
        n_wrong = 5 if self.fitted >= self.near_after else 100
        history = [(t0, n_wrong * 100), (self.clock(), n_wrong)]
        L, R = self.factors(k)
        return BracketFit(L, R, n_wrong, ("fake", k), cut=True, history=history)

    def rescue(self, k, fit, deadline, offer):
        left = deadline.remaining()
        self.rescues.append(left)
        if left < self.rescue_needs:
            return False
        self.clock.advance(self.rescue_needs)
        return offer(*self.factors(k))


def test_a_fit_that_goes_on_leaves_time_for_its_rescue():
    # the trend says the fit turns near within a fraction of its slice: it goes
    # on for about as long again, not for all the time left, and the near fit
    # still gets its rescue (a slice as long as the fit's)
    X = _matrix(6)
    # ranks 6 to 40: seven bisection steps, a first slice of 1.4 / 7 = 0.2 s; the
    # fit is near after 0.7 s of fitting
    family = SlowNearFamily(X, 6, near_after=0.7, rescue_needs=0.05)
    res = _search(X, family, deadline=1.4, lower=6, cap=40)
    assert family.rescues and family.rescues[0] >= 0.05, family.rescues
    assert res.rank == 6 and certify_rounding(X, res.L, res.R)


class NeedsTimeFamily(FakeFamily):
    """Fits at ``k >= r*`` certify at once; the fit at ``r* - 1`` certifies once it
    has had ``needs`` seconds in all, and before that it runs to its slice's end
    far off and flat (no trend: no go-on, no rescue); lower ranks never certify."""

    def __init__(self, X, r_star, needs):
        super().__init__(X, r_star - 1)
        self.top, self.needs, self.fitted = r_star, needs, 0.0

    def fit(self, k, warm, deadline):
        self.fits.append(k)
        t0 = self.clock()
        L, R = self.factors(k)
        needs = self.needs - self.fitted if k == self.top - 1 else math.inf
        if k < self.top:
            left = deadline.remaining()
            if needs > left:  # cut at the slice's end, far off and flat
                self.clock.advance(left)
                if k == self.top - 1:
                    self.fitted += left
                history = [(t0, 1000), (self.clock(), 1000)]
                return BracketFit(None, None, 1000, ("fake", k), True, history)
            self.clock.advance(needs)
        return BracketFit(L, R, 0, ("fake", k), history=[(t0, 0), (t0 + 1e-3, 0)])


def test_time_left_after_the_bracket_closes_goes_to_the_fit_below_it():
    # the fit at 5 needs 0.4 s; its first slice is 1.2 / 7 s: the bracket closes
    # at (5, 6] with about 1 s left, half of which takes the fit at 5 to exact
    X = _matrix(5)
    family = NeedsTimeFamily(X, 6, needs=0.4)
    res = _search(X, family, deadline=1.2, lower=5, cap=40)
    assert family.clock() <= 1.2
    assert res.rank == 5 and certify_rounding(X, res.L, res.R), family.fits
    assert family.fits.count(5) == 2


def test_a_policy_without_the_retry_leaves_the_closed_bracket_alone():
    # the same family and budget as above; a candidate rule is another instance
    X = _matrix(5)
    family = NeedsTimeFamily(X, 6, needs=0.4)
    res = _search(
        X,
        family,
        deadline=1.2,
        lower=5,
        cap=40,
        policy=SearchPolicy(retry_share=None),
    )
    assert res.rank == 6 and certify_rounding(X, res.L, res.R), family.fits
    assert family.fits.count(5) == 1


def _run_with_memo(family, X, seconds, memo, *, start=1, lower=0, cap=None, gap=None):
    """One run of the bracket search that keeps its state in ``memo``, as a
    portfolio's two runs of one search do; records the start of every fit."""
    starts = []

    def fit(k, begin, deadline):
        starts.append((k, begin.kind, begin.state))
        return family.fit(k, begin, deadline)

    def search(X, incumbent, deadline, **kw):
        return bracket_search(
            incumbent, deadline, BracketFamily(fit), start=start, gap=gap
        )

    res = run_rank_search(
        search,
        X,
        method="fake",
        tau=0.5,
        deadline=Deadline(seconds, clock=family.clock),
        lower=lower,
        cap=cap,
        memo=memo,
    )
    return res, starts


def test_a_closed_bracket_whose_fit_was_cut_again_is_stopped_and_goes_on_later():
    # the fit at 5 needs 2 s, more than the first run's 1.2 s: the bracket closes
    # at (5, 6], the retry's slice cuts it again, and the search says it stopped
    # (5 is not proven); a second run with the same memo goes on with that fit
    X = _matrix(5)
    family = NeedsTimeFamily(X, 6, needs=2.0)
    memo = SearchMemo()
    res, _ = _run_with_memo(family, X, 1.2, memo, lower=5, cap=40)
    assert res.rank == 6 and res.stopped_early
    assert family.fits.count(5) == 2 and set(memo.cut) == {5}
    top = res.rank - 1
    start = SearchPolicy().resume_rank(
        top, memo.failed, memo.cut, res.info["errors_by_k"]
    )
    again, starts = _run_with_memo(family, X, 3.0, memo, start=start, lower=5, cap=6)
    assert again.rank == 5 and certify_rounding(X, again.L, again.R)
    assert starts[0] == (5, StartKind.SAME, ("fake", 5))
    assert not again.stopped_early


def test_a_resumed_search_bisects_below_a_new_certificate_to_its_earlier_failed_fits():
    # the first run galloped 1, 3, 7 (far) and the deadline cut its fit at 15; the
    # second run goes on with it, certifies 15, then bisects down to the rank
    # (13), not only to the rank it resumed at
    X = _matrix(13)
    family = FakeFamily(X, 13, cost=0.3)
    memo = SearchMemo()
    res, _ = _run_with_memo(family, X, 1.0, memo)
    assert res.rank is None and res.stopped_early and set(memo.cut) == {15}
    top = 39  # below the trivial rank, min(m, n) = 40
    start = SearchPolicy().resume_rank(
        top, memo.failed, memo.cut, res.info["errors_by_k"]
    )
    again, starts = _run_with_memo(family, X, 10.0, memo, start=start)
    assert again.rank == 13 and certify_rounding(X, again.L, again.R)
    assert starts[0] == (15, StartKind.SAME, ("fake", 15))
    assert 11 in again.info["tried"] and not again.stopped_early


class SlowRankFamily(FakeFamily):
    """Fits at ``k >= r*`` certify at once, except the fit at ``slow``: it runs to
    its slice's end far off and flat (cut) until it has had ``needs`` seconds in
    all, then certifies. Fits below ``r*`` fail far off at once."""

    def __init__(self, X, r_star, slow, needs):
        super().__init__(X, r_star)
        self.slow, self.needs, self.fitted = slow, needs, 0.0

    def fit(self, k, warm, deadline):
        if k != self.slow:
            return super().fit(k, warm, deadline)
        self.fits.append(k)
        t0, left = self.clock(), deadline.remaining()
        if self.needs - self.fitted > left:
            self.clock.advance(left)
            self.fitted += left
            history = [(t0, 1000), (self.clock(), 1000)]
            return BracketFit(None, None, 1000, ("fake", k), True, history)
        self.clock.advance(self.needs - self.fitted)
        L, R = self.factors(k)
        return BracketFit(L, R, 0, ("fake", k), history=[(t0, 0), (t0 + 1e-3, 0)])


def test_a_resumed_search_whose_cut_fit_certifies_bisects_down_to_its_first_floor():
    # the first run's first fit, at 20 (a caller's gap), is cut far off and flat,
    # so the bracket closes on (20, 21] and 20 stays unproven; the second run
    # certifies 20 and bisects below it down to where the first run started, to
    # the rank (6), not to the rank it resumed at
    X = _matrix(6)
    family = SlowRankFamily(X, 6, slow=20, needs=2.0)
    memo = SearchMemo()
    res, _ = _run_with_memo(family, X, 1.2, memo, gap=20)
    assert res.rank == 21 and res.stopped_early and set(memo.cut) == {20}
    assert min(res.info["tried"]) == 20
    start = SearchPolicy().resume_rank(
        res.rank - 1, memo.failed, memo.cut, res.info["errors_by_k"]
    )
    again, starts = _run_with_memo(family, X, 10.0, memo, start=start, cap=21)
    assert starts[0] == (20, StartKind.SAME, ("fake", 20))
    assert again.rank == 6 and certify_rounding(X, again.L, again.R)
    assert not again.stopped_early


def test_next_rank_gallops_then_bisects():
    next_rank = SearchPolicy().next_rank
    assert next_rank(0, 100, 1) == 1
    assert next_rank(3, 100, 8) == 11  # the gallop
    assert next_rank(3, 11, 8) == 7  # bisection once the bracket is narrow
    assert next_rank(6, 7, 4) is None  # the bounds meet


@pytest.mark.parametrize("r_index", range(0, 12))
def test_bracket_candidates_finds_the_smallest_certified(r_index):
    candidates = [1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233]
    tried = []

    def try_k(k):
        tried.append(k)
        return k >= candidates[r_index]

    best, stopped = SearchPolicy().candidates(candidates, try_k, Deadline(None))
    assert best == candidates[r_index] and not stopped
    assert len(tried) <= 2 * math.ceil(math.log2(len(candidates))) + 1


def test_bracket_candidates_none_certified_and_deadline():
    candidates = SearchPolicy().candidates
    best, stopped = candidates([1, 2, 3], lambda k: False, Deadline(None))
    assert best is None and not stopped
    tried = []
    best, stopped = candidates(
        [1, 2, 3], lambda k: tried.append(k) or False, Deadline(0.0)
    )
    assert tried == [1] and stopped  # one candidate is always tried


@_SETTINGS
@given(
    r_star=st.integers(1, 35),
    lo=st.integers(0, 34),
    gap=st.integers(1, 40),
    seed=st.integers(0, 5),
)
def test_a_callers_gap_puts_the_first_rank_and_the_bisection_still_finds_the_rank(
    r_star, lo, gap, seed
):
    # a search handed (start, gap) by a caller (L-PCA after its sample) tries
    # start - 1 + gap first (never past the middle of the bracket) and bisects
    # back down to start - 1
    lo = min(lo, r_star - 1)
    X = _matrix(r_star)
    family = FakeFamily(X, r_star, seed=seed)

    def search(X, incumbent, dl, **kw):
        return bracket_search(
            incumbent, dl, BracketFamily(family.fit), start=lo + 1, gap=gap
        )

    res = run_rank_search(
        search, X, method="fake", tau=0.5, deadline=Deadline(None, clock=family.clock)
    )
    top = min(X.shape) + 1  # one above the trivial certificate's rank
    assert family.fits[0] == max(lo + 1, min(lo + gap, (lo + top) // 2))
    assert res.rank == r_star
    assert certify_rounding(X, res.L, res.R)
