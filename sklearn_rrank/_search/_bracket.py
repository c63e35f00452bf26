"""The bracket rank search: one order of ranks for every family that fits at ``k``.

A family that can fit a model of rank ``k`` from a start (L-PCA; any estimator of
:class:`~sklearn_rrank.RoundingRankCV` through :func:`bracket_candidates`) hands
the skeleton two functions, "fit at ``k`` from this start" and "rescue this near
fit", and :func:`bracket_search` decides which ranks to fit, from where, and for
how long:

1. The bracket ``(lo, hi]``: ``hi`` the best certified rank (this search's or the
   cap of another method), ``lo`` the largest rank ruled out (one below the lower
   bound, or the largest rank whose fit failed).
2. The next rank is ``min(lo + gap, (lo + hi) // 2)``: a gallop while fits fail far
   off (the gap doubles after each fit that leaves more than :data:`FAR` of the ones
   wrong), a bisection once the bracket is narrower than twice the gap (always
   after the first certificate).
3. The start: the best certificate cut to ``k`` columns when it has at most ``2 k``
   (bisecting below it), else the nearest failed fit below ``k`` with columns added,
   else the family's fresh start; a fit an earlier run left at ``k`` continues.
4. Each fit gets a slice of the time left: ``remaining / (ceil(log2(hi - lo)) + 1)``,
   the number of fits a bisection of the bracket still needs.
5. The fit's factors are offered to the incumbent (which certifies). A fit that
   leaves at most ``max(RESCUE_MIN, RESCUE_FRACTION * ones)`` entries uncertified
   gets the family's rescue, on a slice as long as the fit's.
6. Go on: a fit stopped before it converged (its slice, its sweep limit or a stall
   rule) continues when its error trend (geometric, over the last half of the
   fit) reaches the rescue threshold within twice its last slice and leaves a
   slice for the rescue before the deadline, or when it was cut before it showed
   a trend; for twice what the trend needs (at least its last slice, at most
   twice it). No slice is shorter than :data:`MIN_SWEEPS` sweeps at the pace of
   the latest fit, while the time lasts.
7. Certified: ``hi = k`` (and ``lo`` the largest failed rank below it); failed:
   ``lo = k``. The search ends when the bound meets the lower bound, at
   ``max_rank`` or at the deadline (a fit the deadline cut stays in
   ``incumbent.memo`` for a later run to continue).
8. When ``hi - lo <= 1`` before the deadline, the fit at ``lo`` goes on once more
   from where it stopped, on half the time left (then steps 5 to 7): it failed
   within its slice, not for ever. Without a failed fit at ``lo`` left to go on,
   the search ends.

The skeleton's contract holds: every bound is certified by
:meth:`~sklearn_rrank._search._skeleton.Incumbent.offer`, the cap bounds the ranks
tried, progress events come about every :data:`TICK_SECONDS` during a fit, and an
interrupt keeps the best certificate (:func:`run_rank_search`).
"""

import math
import time
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Fit", "bracket_candidates", "bracket_search", "next_rank"]

# a failed fit leaving more than this fraction of the ones wrong is far off: the
# gallop doubles its gap (a near miss suggests the rank is close above)
FAR = 0.1
# a near fit is rescued when at most max(RESCUE_MIN, RESCUE_FRACTION * ones) entries
# fail: the boost and the LPs fix a handful of entries, not a far fit
RESCUE_MIN = 30
RESCUE_FRACTION = 0.005
# a slice holds at least this many sweeps at the pace of the latest fit (while the
# time lasts): a fit cut after fewer shows no trend, and its work is lost
MIN_SWEEPS = 3
# seconds between two progress events inside a fit
TICK_SECONDS = 2.0


@dataclass
class Fit:
    """What a family's fit at ``k`` returns.

    Attributes
    ----------
    L, R : ndarray of shape (n_samples, k), (n_features, k), or None
        Candidate factors (None: nothing to offer).
    n_wrong : int
        Entries the factors round wrong (a cheap count; the incumbent certifies).
    state : object
        The family's model: a later start at ``k`` (go on) or above (columns added).
    cut : bool
        True iff the fit stopped before it converged (its deadline, its sweep
        limit, or a stall rule): it may go on.
    history : list of (float, int)
        ``(time.monotonic(), wrong or unsafe entries)`` along the fit (the trend).
    """

    L: object
    R: object
    n_wrong: int
    state: object
    cut: bool = False
    history: list = field(default_factory=list)


def next_rank(lo, hi, gap):
    """The next rank of the bracket ``(lo, hi]``: ``min(lo + gap, (lo + hi) // 2)``.

    ``hi`` is the smallest certified rank (or one above the largest candidate).
    Returns a rank in ``(lo, hi)``, or None when ``hi - lo <= 1``.
    """
    if hi - lo <= 1:
        return None
    return max(lo + 1, min(lo + gap, (lo + hi) // 2))


def _steps(lo, hi):
    """Fits a bisection of the bracket ``(lo, hi]`` still needs, plus one."""
    return math.ceil(math.log2(max(hi - lo, 2))) + 1


def _needed(history, threshold):
    """Seconds the errors' trend over the last half of ``history`` needs to reach
    ``threshold`` (0 when there), or None when there is no falling trend.

    The trend is geometric: the errors of a converging fit fall by a factor per
    unit of time, and a straight line through two points of such a curve promises
    far too much. A flat or rising trend has no time (more of the same will not
    certify, near or not: a near fit had its rescue).
    """
    if len(history) < 2:
        return None
    (t0, e0), (t1, e1) = history[(len(history) - 1) // 2], history[-1]
    if e1 >= e0 or t1 <= t0:
        return None
    if e1 <= threshold:
        return 0.0
    return (t1 - t0) * math.log(e1 / max(threshold, 1)) / math.log(e0 / max(e1, 1))


def _go_on(history, threshold, deadline, last):
    """Seconds of the go-on of a fit cut after a slice of ``last`` seconds: False
    when it stops, None for the rest of an unlimited ``deadline``.

    A fit cut before it showed a trend goes on for twice ``last``. Else its trend
    (:func:`_needed`) must reach ``threshold`` within twice ``last`` (a go-on
    pays off in the slice it asks for, or the time is better spent at another
    rank) and leave ``last`` seconds for the rescue before the deadline; it goes
    on for twice what the trend needs, at least ``last`` and at most twice it.
    Without a deadline the trend must reach ``threshold`` within as long again
    as the search has run, so that a slow fit does not go on for ever.
    """
    needed = _needed(history, threshold)
    if len(history) < 2:
        return 2 * last if deadline.limited else None
    if not deadline.limited:
        return None if needed is not None and needed <= deadline.elapsed() else False
    if needed is None or needed > 2 * last or needed + last > deadline.remaining():
        return False
    return min(2 * last, max(last, 2 * needed))


def ticker(incumbent, k, history):
    """A per-sweep callback: appends ``(time, errors)`` to ``history`` and sends a
    progress event about every :data:`TICK_SECONDS`."""
    last = [time.monotonic()]

    def tick(sweep, n_errors):
        now = time.monotonic()
        history.append((now, int(n_errors)))
        if now - last[0] >= TICK_SECONDS:
            last[0] = now
            incumbent.event("step", k=k, error=n_errors, message=f"sweep {sweep}")

    return tick


def rescue_limit(incumbent):
    """Uncertified entries at most which a near fit is rescued."""
    return max(RESCUE_MIN, int(RESCUE_FRACTION * incumbent.data.n_ones))


def _warm(incumbent, k, below):
    """The start of the fit at ``k`` (step 3 of the module docstring)."""
    if k in incumbent.memo:
        return ("same", incumbent.memo.pop(k))
    factors = incumbent.best_factors()
    if factors is not None and incumbent.bound <= 2 * k:
        return ("certificate", factors)
    nearest = max((j for j in below if j < k), default=None)
    return None if nearest is None else ("below", below[nearest])


def _pace(history, pace):
    """Seconds per sweep: the median step of ``history`` (``pace`` if too short)."""
    if len(history) < 2:
        return pace
    return float(np.median(np.diff([t for t, _ in history])))


def _try(incumbent, deadline, k, warm, family, limit, steps, pace):
    """Fit ``k`` (going on while its trend allows), offer it, rescue a near miss.

    The fit gets ``1 / steps`` of the time left, a rescue as long as the fit's
    slice, a go-on the seconds :func:`_go_on` gives it; no slice is shorter than
    :data:`MIN_SWEEPS` sweeps at ``pace`` (seconds per sweep of the latest fit, or
    None) while the time lasts. Returns ``(certified, the last Fit, pace)``.
    """
    fit, rescue, accepted = family
    seconds = None if not deadline.limited else deadline.remaining() / steps
    while True:
        if seconds is not None and pace is not None:
            seconds = max(seconds, MIN_SWEEPS * pace)
        share = deadline.child(seconds)
        last = share.remaining()
        res = fit(k, warm, share)
        pace = _pace(res.history, pace)
        n_failed = res.n_wrong
        if res.L is not None and n_failed <= limit:
            if n_failed == 0 and incumbent.offer(res.L, res.R):
                if accepted is not None:
                    accepted(k, res)
                return True, res, pace
            n_failed = incumbent.count_uncertified(res.L, res.R)
            if rescue is not None and n_failed <= limit and not deadline.expired():
                # as long as the fit's slice: a fit that needed it to turn near
                # is not rescued in less
                if rescue(k, res, deadline.child(last), incumbent.offer):
                    return True, res, pace
        res.n_wrong = n_failed
        if not res.cut or deadline.expired():
            return False, res, pace
        seconds = _go_on(res.history, limit, deadline, last)
        if seconds is False:
            return False, res, pace
        warm = ("same", res.state)


def bracket_search(
    incumbent,
    deadline,
    fit,
    *,
    rescue=None,
    accepted=None,
    start=1,
    max_rank=None,
    stop_first=False,
):
    """Search the smallest certified rank by the bracket rule (module docstring).

    Parameters
    ----------
    incumbent : Incumbent
        Certifies and keeps every candidate; gives the lower bound and the cap.
    deadline : Deadline
        The search's budget.
    fit : callable
        ``fit(k, warm, deadline) -> Fit``. ``warm`` is None (a fresh start),
        ``("certificate", (L, R))`` (cut it to ``k``), ``("below", state)`` (a fit at
        a smaller rank: add columns) or ``("same", state)`` (go on at ``k``); a
        family that cannot use a warm start starts fresh.
    rescue : callable or None, default=None
        ``rescue(k, fit, deadline, offer) -> bool``: try to certify a near ``Fit``
        (offering candidates through ``offer``); True iff a candidate was accepted.
    accepted : callable or None, default=None
        ``accepted(k, fit)``: told when a fit's own factors were accepted.
    start : int, default=1
        Smallest rank tried (a resumed search starts where it stopped).
    max_rank : int or None, default=None
        Largest rank tried (None: the trivial rank less one).
    stop_first : bool, default=False
        Stop at the first certificate (no bisection below it).

    Returns
    -------
    info : dict
        ``"reason"`` (``"met"``, ``"time limit"``, ``"max_rank"`` or ``"first"``),
        ``"tried"`` (ranks in order), ``"seconds_by_k"``, ``"fits"`` and
        ``"stopped_early"``.
    """
    top = incumbent.ceiling if max_rank is None else min(max_rank, incumbent.ceiling)
    bottom = max(incumbent.lower - 1, start - 1, 0)
    lo, gap, below, limit, pace = bottom, 1, {}, rescue_limit(incumbent), None
    again = set()  # the ranks step 8 went on with
    info = {"tried": [], "seconds_by_k": {}, "fits": 0}
    far = FAR * max(incumbent.data.n_ones, 1)
    reason = "met"
    while not incumbent.done:
        hi = min(incumbent.bound if incumbent.bound is not None else top + 1, top + 1)
        k = next_rank(lo, hi, gap)
        steps = _steps(lo, hi) if deadline.limited else 1
        if k is None and deadline.limited and lo in below and lo not in again:
            k, steps = lo, 2  # step 8
            again.add(lo)
        if k is None:
            reason = "met" if hi <= top else "max_rank"
            break
        if deadline.expired():
            reason = "time limit"
            break
        t0 = time.monotonic()
        warm = ("same", below.pop(k)) if k in below else _warm(incumbent, k, below)
        family = (fit, rescue, accepted)
        ok, res, pace = _try(incumbent, deadline, k, warm, family, limit, steps, pace)
        info["fits"] += 1
        info["tried"].append(k)
        info["seconds_by_k"][k] = time.monotonic() - t0
        incumbent.record(k, 0 if ok else res.n_wrong)
        if ok:
            if stop_first:
                reason = "first"
                break
            lo = max((j for j in below if j < k), default=bottom)
            continue
        if deadline.expired() and res.cut:
            incumbent.memo[k] = res.state  # a later run goes on with this fit
            reason = "time limit"
            break
        below[k] = res.state
        gap = gap * 2 if res.n_wrong > far else gap
        lo = k
    info["reason"] = reason
    # a resumed run (a portfolio's second pass) can go on from a time limit, and a
    # search that found nothing up to max_rank did not finish its task either
    unfinished = reason == "time limit" or (
        reason == "max_rank" and incumbent.rank is None
    )
    info["stopped_early"] = unfinished and not incumbent.done
    return info


def bracket_candidates(candidates, try_k, deadline):
    """Smallest certified rank of sorted ``candidates`` in the bracket order.

    The order of :func:`bracket_search` over the candidates' indices, for a caller
    that can only fit a rank and ask whether it is certified
    (:class:`~sklearn_rrank.RoundingRankCV`, ``search="galloping"``): indices
    ``0, 2, 6, 14, ...`` (each failure doubles the gap; never past the middle of
    what is left) until a certified one, then bisection between the last failure
    and the smallest certified index. ``try_k(k) -> bool``; the deadline is checked
    before every try but the first.

    Returns
    -------
    best : int or None
        The smallest certified candidate found.
    stopped : bool
        True iff the deadline had passed at one of its checks.
    """
    lo, hi, gap, n_tries, stopped = -1, len(candidates), 1, 0, False
    best = None
    while True:
        i = next_rank(lo, hi, gap)
        if i is None:
            break
        if deadline.expired():
            stopped = True
            if n_tries:
                break
        n_tries += 1
        if try_k(candidates[i]):
            hi = best = i
        else:
            lo, gap = i, 2 * gap
    return (None if best is None else candidates[best]), stopped
