"""The bracket rank search: one order of ranks for every family that fits at ``k``.

A family that can fit a model of rank ``k`` from a start (L-PCA) hands the skeleton a
:class:`Family`, "fit at ``k`` from this start" and "rescue this near fit", and
:func:`bracket_search` decides which ranks to fit, from where, and for how long,
asking its :class:`~sklearn_rrank._search._policy.SearchPolicy` at every step
(the names in brackets are the policy's fields and methods):

1. The bracket ``(lo, hi]``: ``hi`` the best certified rank (this search's or the
   cap of another method), ``lo`` the largest rank ruled out (one below the lower
   bound, or the largest rank whose fit failed).
2. The next rank is ``min(lo + gap, (lo + hi) // 2)``: a gallop while fits fail far
   off (the gap starts at ``first_gap``, or where the caller puts the first rank,
   and doubles after each fit that leaves more than ``far`` of the ones wrong), a
   bisection once the bracket is narrower than twice the gap (always after the
   first certificate; ``next_rank``, ``gap_after``).
3. The start: the best certificate cut to ``k`` columns when it has at most ``2 k``
   (bisecting below it), else the nearest failed fit below ``k`` with columns added
   (``warm_below``), else the family's fresh start; a fit an earlier run left at
   ``k`` continues (``start_for``).
4. Each fit gets a slice of the time left: ``remaining / (ceil(log2(hi - lo)) + 1)``,
   the number of fits a bisection of the bracket still needs (``slice_for``).
5. The fit's factors are offered to the incumbent (which certifies). A fit that
   leaves at most ``max(rescue_min, rescue_fraction * ones)`` entries uncertified
   gets the family's rescue, on a slice as long as the fit's (``rescue_limit``).
6. Go on: a fit stopped before it converged (its slice, its sweep limit or a stall
   rule) continues when its error trend (geometric, over the last half of the
   fit) reaches the rescue threshold within twice its last slice and leaves a
   slice for the rescue before the deadline, or when it was cut before it showed
   a trend; for twice what the trend needs (at least its last slice, at most
   twice it; ``go_on``). No slice is shorter than ``min_sweeps`` sweeps at the
   pace of the latest fit, while the time lasts (``floor``).
7. Certified: ``hi = k`` (and ``lo`` the largest failed rank below it, else
   the lower end of the first run's bracket); failed: ``lo = k``. The search
   ends when the bound meets the lower bound, at ``max_rank`` or at the
   deadline (a fit the deadline cut stays in ``incumbent.memo``, with the
   failed fits, the gap and the bracket's lower end, for a later run to go on:
   :class:`~sklearn_rrank._search._skeleton.SearchMemo`). No fit or go-on
   starts when the time left is less than the latest fit's lead, what it spent
   outside its sweeps (its start and final count, which no deadline cuts;
   measured): it would not end a sweep in time, and the search ends as at the
   deadline.
8. When ``hi - lo <= 1`` before the deadline, the fit at ``lo`` goes on once more
   from where it stopped, on ``retry_share`` of the time left (then steps 5 to 7;
   ``retry_closed``): it failed within its slice, not for ever. If its slice cut
   it again (or there was no retry), the search ends stopped early, as at the
   deadline, with that fit in the memo: ``lo`` is not proven, and a later run
   (the portfolio's second pass) goes on with it. Else the search ends.

The skeleton's contract holds: every bound is certified by
:meth:`~sklearn_rrank._search._skeleton.Incumbent.offer`, the cap bounds the ranks
tried, progress events come about every ``tick_seconds`` during a fit, and an
interrupt keeps the best certificate (:func:`run_rank_search`).
"""

import time
from dataclasses import dataclass, field

import numpy as np

from sklearn_rrank._search._policy import (
    DEFAULT_POLICY,
    Start,
    StartKind,
)

__all__ = ["Attempt", "Family", "Fit", "bracket_search", "ticker"]


@dataclass
class Fit:
    """What a family's fit at ``k`` returns.

    Attributes
    ----------
    L, R : ndarray of shape (n_samples, k), (n_features, k), or None
        Candidate factors (None: nothing to offer).
    n_wrong : int or None
        Entries the factors round wrong (a cheap count; the incumbent certifies);
        None without factors when nothing was fitted (a start the deadline cut:
        the rank gets no entry in ``errors_by_k``).
    state : object
        The family's model: a later start at ``k`` (go on) or above (columns added).
    cut : bool
        True iff the fit stopped before it converged (its deadline, its sweep
        limit, or a stall rule): it may go on.
    history : list of (float, int)
        ``(time, wrong or unsafe entries)`` along the fit (the trend), the time
        on the clock of the fit's deadline.
    """

    L: object
    R: object
    n_wrong: int
    state: object
    cut: bool = False
    history: list = field(default_factory=list)


@dataclass(frozen=True)
class Family:
    """What a family hands the bracket search.

    Attributes
    ----------
    fit : callable
        ``fit(k, start, deadline) -> Fit``: fit at ``k`` from ``start`` (a
        :class:`~sklearn_rrank._search._policy.Start`); a family that cannot use
        a start of that kind starts fresh.
    rescue : callable or None, default=None
        ``rescue(k, fit, deadline, offer) -> bool``: try to certify a near ``Fit``
        (offering candidates through ``offer``); True iff a candidate was accepted.
    accepted : callable or None, default=None
        ``accepted(k, fit)``: told when a fit's own factors were accepted.
    """

    fit: object
    rescue: object = None
    accepted: object = None


@dataclass(frozen=True)
class Attempt:
    """The outcome of one rank's fits (with their go-ons and rescue).

    Attributes
    ----------
    certified : bool
    fit : Fit
        The last fit (``n_wrong``: its uncertified entries).
    pace : float or None
        Seconds per sweep of the latest fit.
    lead : float or None
        Seconds the latest fit spent outside its sweeps: from its start to the
        end of its first sweep and from its last sweep to its return (its start,
        first pass and final count; the whole fit if it ended no sweep).
    """

    certified: bool
    fit: Fit
    pace: float | None
    lead: float | None = None


def ticker(incumbent, k, history, policy=DEFAULT_POLICY, clock=time.monotonic):
    """A per-sweep callback: appends ``(time, errors)`` to ``history`` and sends a
    progress event about every ``policy.tick_seconds`` (``clock``: the fit's
    deadline's)."""
    last = [clock()]

    def tick(sweep, n_errors):
        now = clock()
        history.append((now, int(n_errors)))
        if now - last[0] >= policy.tick_seconds:
            last[0] = now
            incumbent.event("step", k=k, error=n_errors, message=f"sweep {sweep}")

    return tick


def _pace(history, pace):
    """Seconds per sweep: the median step of ``history`` (``pace`` if too short)."""
    if len(history) < 2:
        return pace
    return float(np.median(np.diff([t for t, _ in history])))


def _lead(history, began, ended):
    """Seconds of a fit from ``began`` to ``ended`` outside its sweeps: before the
    end of the first sweep of ``history`` and after its last one (all of it
    without a sweep)."""
    total = max(ended - began, 0.0)
    if not history:
        return total
    before = max(history[0][0] - began, 0.0)
    return min(before + max(ended - history[-1][0], 0.0), total)


def _no_room(deadline, lead):
    """True iff ``deadline`` has passed or leaves less than ``lead`` seconds: a
    fit would not end a sweep and its count before it (``lead``: the latest
    fit's, measured; None before the first fit)."""
    return deadline.expired() or (
        lead is not None and not deadline.leaves_room_for(lead)
    )


def _remaining(deadline):
    return deadline.remaining() if deadline.limited else None


def _attempt(incumbent, deadline, k, start, family, policy, seconds, pace):
    """Fit ``k`` (going on while the policy allows), offer it, rescue a near miss.

    The fit gets ``seconds`` (None: no limit), a rescue as long as the fit's slice,
    a go-on what :meth:`~SearchPolicy.go_on` gives it; no slice is shorter than
    :meth:`~SearchPolicy.floor` while the time lasts. A go-on needs room for the
    lead of the latest fit (:func:`_no_room`). Returns an :class:`Attempt`.
    """
    limit = policy.rescue_limit(incumbent.data.n_ones)
    while True:
        share = deadline.child(policy.floor(seconds, pace))
        last = share.remaining()
        began = deadline.now()
        res = family.fit(k, start, share)
        lead = _lead(res.history, began, deadline.now())
        pace = _pace(res.history, pace)
        n_failed = res.n_wrong
        if res.L is not None and n_failed <= limit:
            if n_failed == 0 and incumbent.offer(res.L, res.R):
                if family.accepted is not None:
                    family.accepted(k, res)
                return Attempt(True, res, pace, lead)
            n_failed = incumbent.count_uncertified(res.L, res.R)
            rescue = family.rescue
            if rescue is not None and n_failed <= limit and not deadline.expired():
                # as long as the fit's slice: a fit that needed it to turn near
                # is not rescued in less
                if rescue(k, res, deadline.child(last), incumbent.offer):
                    return Attempt(True, res, pace, lead)
        res.n_wrong = n_failed
        if not res.cut or _no_room(deadline, lead):
            return Attempt(False, res, pace, lead)
        more = policy.go_on(
            res.history, limit, _remaining(deadline), deadline.elapsed(), last
        )
        if not more.go:
            return Attempt(False, res, pace, lead)
        seconds, start = more.seconds, Start(StartKind.SAME, res.state)


def bracket_search(
    incumbent,
    deadline,
    family,
    *,
    policy=DEFAULT_POLICY,
    start=1,
    max_rank=None,
    stop_first=False,
    gap=None,
):
    """Search the smallest certified rank by the bracket rule (module docstring).

    Parameters
    ----------
    incumbent : Incumbent
        Certifies and keeps every candidate; gives the lower bound and the cap.
    deadline : Deadline
        The search's budget.
    family : Family
        The family's fit, rescue and acceptance callbacks.
    policy : SearchPolicy, default=DEFAULT_POLICY
        The rules: which rank next, from which start, for how long, whether to go
        on or rescue (:mod:`sklearn_rrank._search._policy`).
    start : int, default=1
        Smallest rank tried first. A resumed search starts where it stopped, and
        below a new certificate it bisects down to the failed fits its earlier
        run kept in ``incumbent.memo``.
    max_rank : int or None, default=None
        Largest rank tried (None: the trivial rank less one).
    stop_first : bool, default=False
        Stop at the first certificate (no bisection below it).
    gap : int or None, default=None
        The gallop's first gap, so that the first rank tried is ``start - 1 +
        gap`` (at most the middle of the bracket); None: the gap an earlier run
        kept in ``incumbent.memo``, else ``policy.first_gap``.

    Returns
    -------
    info : dict
        ``"reason"`` (``"met"``, ``"time limit"``, ``"unproven"`` (step 8),
        ``"max_rank"`` or ``"first"``; with ``"unproven"``, the key ``"unproven"``
        holds the rank), ``"tried"`` (ranks in order), ``"seconds_by_k"``,
        ``"fits"`` and ``"stopped_early"``.
    """
    top = incumbent.ceiling if max_rank is None else min(max_rank, incumbent.ceiling)
    floor = max(incumbent.lower - 1, 0)
    bottom = max(floor, start - 1)
    memo = incumbent.memo
    # below a certificate under every failed fit, the bracket reopens down to
    # where the first run started: a rank a resumed run starts at is not proven
    base = bottom if memo.floor is None else max(floor, min(bottom, memo.floor))
    # a resumed search keeps the failed fits of its earlier run (below ``start``)
    below = {j: state for j, state in memo.failed.items() if floor < j < start}
    if gap is None:
        gap = policy.first_gap if memo.gap is None else memo.gap
    memo.failed, memo.gap = {}, None
    lo, pace, lead = bottom, None, None
    retried = set()  # the ranks whose closed bracket went on once more
    unproven = set()  # failed ranks whose last fit its slice cut (not converged)
    info = {"tried": [], "seconds_by_k": {}, "fits": 0}
    reason = "met"
    while not incumbent.done:
        hi = min(incumbent.bound if incumbent.bound is not None else top + 1, top + 1)
        k, retry = policy.next_rank(lo, hi, gap), False
        if k is None and policy.retry_closed(
            lo, lo in below, retried, deadline.limited
        ):
            k, retry = lo, True
            retried.add(lo)
        if k is None and deadline.limited and lo in unproven:
            memo.cut[lo] = below[lo]  # a later run goes on with it (step 8)
            reason, info["unproven"] = "unproven", lo
            break
        if k is None:
            reason = "met" if hi <= top else "max_rank"
            break
        if _no_room(deadline, lead):
            reason = "time limit"
            break
        t0 = deadline.now()
        if k in below:  # the failed fit at k goes on
            begin = Start(StartKind.SAME, below.pop(k))
        else:
            begin = policy.start_for(
                k, memo.cut, incumbent.best_factors(), incumbent.bound, below
            )
        seconds = policy.slice_for(_remaining(deadline), lo, hi, retry=retry)
        out = _attempt(incumbent, deadline, k, begin, family, policy, seconds, pace)
        res, pace, lead = out.fit, out.pace, out.lead
        info["fits"] += 1
        info["tried"].append(k)
        info["seconds_by_k"][k] = deadline.now() - t0
        incumbent.record(k, 0 if out.certified else res.n_wrong)
        if out.certified:
            if stop_first:
                reason = "first"
                break
            lo = max(floor, max((j for j in below if j < k), default=base))
            continue
        if res.cut and _no_room(deadline, lead):
            memo.cut[k] = res.state  # a later run goes on with this fit
            reason = "time limit"
            break
        below[k] = res.state
        if res.cut:
            unproven.add(k)
        else:
            unproven.discard(k)
        gap = policy.gap_after(gap, res.n_wrong, incumbent.data.n_ones)
        lo = k
    info["reason"] = reason
    # a resumed run (a portfolio's second pass) can go on from a time limit or an
    # unproven closed bracket, and a search that found nothing up to max_rank did
    # not finish its task either
    unfinished = reason in ("time limit", "unproven") or (
        reason == "max_rank" and incumbent.rank is None
    )
    info["stopped_early"] = unfinished and not incumbent.done
    if info["stopped_early"]:
        memo.failed, memo.gap, memo.floor = below, gap, base
    return info
