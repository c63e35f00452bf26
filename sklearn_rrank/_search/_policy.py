"""The rank-search policy: every rule that chooses a rank, a start, a slice or a share.

A rank search keeps its state (the bracket ``(lo, hi]``, its failed fits, the best
certificate) and asks one :class:`SearchPolicy` what to do next. In the manner of
scikit-learn's ``NewtonSolver``, the calls of one fit of the bracket search
(:func:`~sklearn_rrank._search._bracket.bracket_search`) come in this order:

1. :meth:`~SearchPolicy.next_rank`: the next rank of the bracket, or None when it
   has closed; then :meth:`~SearchPolicy.retry_closed` (go on once more with the
   failed fit at ``lo``?).
2. :meth:`~SearchPolicy.start_for`: where the fit at ``k`` starts (a
   :class:`Start`).
3. :meth:`~SearchPolicy.slice_for`: the seconds of its first slice, at least
   :meth:`~SearchPolicy.floor` (a few sweeps at the latest pace).
4. :meth:`~SearchPolicy.rescue_limit`: a failed fit with at most this many
   uncertified entries gets the family's rescue.
5. :meth:`~SearchPolicy.go_on`: whether a fit its slice cut goes on, and for how
   long (a :class:`GoOn`).
6. :meth:`~SearchPolicy.gap_after`: the gallop's gap after a failed fit (the bracket
   moves: a certified ``k`` becomes ``hi``, a failed one ``lo``).

:meth:`~SearchPolicy.candidates` runs steps 1 and 6 over a list of candidate ranks
for a caller that can only fit a rank and ask whether it is certified
(:class:`~sklearn_rrank.RoundingRankCV`); :meth:`~SearchPolicy.descent_step` is the
step of ProjLP's phase 2 (a descent below its certificate) and
:meth:`~SearchPolicy.descent_width` the width of its phase 0;
:meth:`~SearchPolicy.rsvd_order` is the order of R-SVD's ranks; the ``portfolio_*``
fields, :meth:`~SearchPolicy.reserve` and :meth:`~SearchPolicy.resume_rank` are the
shares and resumes of the portfolio of :func:`~sklearn_rrank.rounding_rank_bounds`.

The tunables are the fields of the frozen dataclass, with their reasons and
defaults in one place. A candidate rule is another instance
(``SearchPolicy(far=0.2)``) or a subclass that overrides a step, so that two rules
are compared on the benchmark panel without a branch of the code. Whatever the
policy, every bound is certified by the search's incumbent.
"""

import math
from dataclasses import dataclass
from enum import Enum

__all__ = [
    "DEFAULT_POLICY",
    "FRESH",
    "STOP",
    "WORKING_SET_POLICY",
    "GoOn",
    "SearchPolicy",
    "Start",
    "StartKind",
]


class StartKind(Enum):
    """Where a fit at ``k`` starts."""

    #: the family's own start (a truncated SVD for L-PCA)
    FRESH = "fresh"
    #: the model of a fit at the same ``k``, which goes on
    SAME = "same"
    #: the model of a failed fit at a smaller rank, with columns added
    BELOW = "below"
    #: the best certificate ``(L, R)``, cut to ``k`` columns
    CERTIFICATE = "certificate"


@dataclass(frozen=True)
class Start:
    """The start of a fit: its kind and the state it starts from.

    Attributes
    ----------
    kind : StartKind
    state : object
        The family's model (``SAME``, ``BELOW``), the certificate's factors
        ``(L, R)`` (``CERTIFICATE``), or None (``FRESH``).
    """

    kind: StartKind
    state: object = None


#: a fresh start
FRESH = Start(StartKind.FRESH)


@dataclass(frozen=True)
class GoOn:
    """Whether a fit its slice cut goes on, and for how many seconds.

    Attributes
    ----------
    go : bool
    seconds : float or None
        The go-on's slice; None for the rest of an unlimited deadline.
    """

    go: bool
    seconds: float | None = None


#: a fit that stops
STOP = GoOn(False)


@dataclass(frozen=True)
class SearchPolicy:
    """The rules of the rank searches, as fields with their reasons.

    Parameters
    ----------
    far : float, default=0.1
        A failed fit leaving more than this fraction of the ones wrong is far
        off: the gallop doubles its gap (a near miss suggests the rank is close
        above).
    rescue_min : int, default=30
    rescue_fraction : float, default=0.005
        A failed fit is rescued when at most ``max(rescue_min, rescue_fraction *
        ones)`` entries are uncertified: the boost and the LPs fix a handful of
        entries, not a far fit.
    first_gap : int, default=1
        The gallop's first gap: the first fit is at ``lower + first_gap - 1``.
        With 1 the search starts at the lower bound; a candidate rule for a
        family whose fits below the rank cost minutes starts higher.
    warm_below : bool, default=True
        A fit with no certificate to start from starts from the nearest failed
        fit below its rank, with columns added; False: from the family's fresh
        start (a candidate rule for a family whose fresh start is good).
    min_sweeps : int, default=3
        A slice holds at least this many sweeps at the pace of the latest fit
        (while the time lasts): a fit cut after fewer shows no trend, and its work
        is lost.
    slice_share : float, default=0.0
        A fit's first slice is at least this share of the time left. With 0
        the bisection's slice alone counts; a family whose one fit needs a
        large part of the budget (:data:`WORKING_SET_POLICY`) needs more, or
        every fit is cut before it gets near.
    retry_share : float or None, default=0.5
        When the bracket has closed before the deadline, the failed fit at ``lo``
        goes on once more on this share of the time left (it failed within its
        slice, not for ever); None: the search ends there.
    tick_seconds : float, default=2.0
        Seconds between two progress events inside a fit.
    portfolio_reserve : float, default=0.1
    portfolio_reserve_per_entry : float, default=2e-7
        Time the portfolio keeps back for steps that cannot stop mid-way (a sweep,
        an SVD start): 1 s + 2% of the budget + ``portfolio_reserve_per_entry`` s
        per entry, at most ``portfolio_reserve`` of the budget and 30 s.
    portfolio_large_entries : int, default=1_000_000
    portfolio_min_share : float, default=1.0
        On matrices of more than ``portfolio_large_entries`` entries, a method
        whose share is below ``portfolio_min_share`` seconds is skipped: its setup
        alone would overrun the budget.
    portfolio_second_pass_min : float, default=2.0
        The second pass (the time left after every method ran once) starts a
        method only with at least this many seconds.
    portfolio_capped_lower_entries : int, default=40_000_000
    portfolio_lower_share_cap : float, default=0.05
    portfolio_lower_cap_min : float, default=10.0
        On matrices of at least ``portfolio_capped_lower_entries`` entries a
        weighted lower bound gets at most ``portfolio_lower_share_cap`` of the
        budget (at least ``portfolio_lower_cap_min`` s) first, and what the
        searches leave afterwards: its exhaustive steps would take the searches'
        time.
    phase0_descent : float, default=0.97
        ProjLP's phase 0 descends from a width at which every column is separated
        to this fraction of it (at least one less): small steps, as a width far
        below the last separated one rarely separates.
    rsvd_exhaustive_work : float, default=4e9
        R-SVD scans every truncation ``k = 1..K`` (the error of each) while
        ``m n K`` is at most this many operations; above, it scans from the top by
        blocks and stops below the last exact block (an anytime scan).
    rsvd_block : int, default=64
        Components per block of R-SVD's scan from the top: a block of rows is
        checked once per block, and the last exact block is then followed
        component by component.
    sample_entries : int, default=10_000_000
    sample_share : float, default=0.5
        Under a time limit, a search on data of at least four times
        ``sample_entries`` entries first runs on a random sample of whole rows (of
        columns, if there are more columns) of about ``sample_entries`` entries,
        on ``sample_share`` of its time: there a fit costs a fraction of one on
        the data, and the sample's rounding rank is at most the data's, so its
        bracket says where the data's starts (:meth:`sample_size`).
    sample_growth : float, default=2.0
        The data's first fit is at this multiple of the rank its sample certified
        (rounded up): a sample of rows has a smaller rounding rank than the data.
    sample_slice_share : float, default=1/3
        The fits of a search that samples first, on the sample and then on the
        data, get at least this share of the time left (:attr:`slice_share`): a
        fit near the rank needs a large part of the budget at that size, and the
        bisection's slices cut every fit before it came near.

    Notes
    -----
    The defaults were chosen on the benchmark panel (``benchmarks/panel.py``,
    every budget tier, several seeds, idle and beside busy processes);
    ``benchmarks/README.md`` says on which measurements.
    """

    far: float = 0.1
    rescue_min: int = 30
    rescue_fraction: float = 0.005
    first_gap: int = 1
    warm_below: bool = True
    min_sweeps: int = 3
    slice_share: float = 0.0
    retry_share: float | None = 0.5
    tick_seconds: float = 2.0
    portfolio_reserve: float = 0.1
    portfolio_reserve_per_entry: float = 2e-7
    portfolio_large_entries: int = 1_000_000
    portfolio_min_share: float = 1.0
    portfolio_second_pass_min: float = 2.0
    portfolio_capped_lower_entries: int = 4 * 10**7
    portfolio_lower_share_cap: float = 0.05
    portfolio_lower_cap_min: float = 10.0
    phase0_descent: float = 0.97
    rsvd_exhaustive_work: float = 4e9
    rsvd_block: int = 64
    sample_entries: int = 10_000_000
    sample_share: float = 0.5
    sample_growth: float = 2.0
    sample_slice_share: float = 1 / 3

    # -- 1. which rank ------------------------------------------------------------
    def next_rank(self, lo, hi, gap):
        """The next rank of the bracket ``(lo, hi]``: ``min(lo + gap, (lo + hi) // 2)``.

        A gallop while the gap is small against the bracket, a bisection once the
        bracket is narrower than twice the gap. ``hi`` is the smallest certified
        rank (or one above the largest candidate). Returns a rank in ``(lo, hi)``,
        or None when ``hi - lo <= 1``.
        """
        if hi - lo <= 1:
            return None
        return max(lo + 1, min(lo + gap, (lo + hi) // 2))

    def retry_closed(self, lo, has_failed_fit, retried, limited):
        """Whether the closed bracket's failed fit at ``lo`` goes on once more.

        Only under a time limit (without one the fit already ran to its stall
        rule), once per rank, and only when ``retry_share`` is set.
        """
        return (
            self.retry_share is not None
            and limited
            and has_failed_fit
            and lo not in retried
        )

    # -- 2. from where ------------------------------------------------------------
    def start_for(self, k, cut, best_factors, bound, below):
        """The start of the fit at ``k`` (a :class:`Start`).

        A fit an earlier run left cut at ``k`` (``cut``) goes on; else the best
        certificate cut to ``k`` columns when it has at most ``2 k`` (cutting more
        loses what made it exact); else the nearest failed fit below ``k`` with
        columns added (with :attr:`warm_below`); else a fresh start. ``cut`` and
        ``below`` map ranks to models; the entry used is removed from ``cut``.
        """
        if k in cut:
            return Start(StartKind.SAME, cut.pop(k))
        if best_factors is not None and bound <= 2 * k:
            return Start(StartKind.CERTIFICATE, best_factors)
        nearest = max((j for j in below if j < k), default=None)
        if nearest is None or not self.warm_below:
            return FRESH
        return Start(StartKind.BELOW, below[nearest])

    # -- 3. for how long ----------------------------------------------------------
    def slice_for(self, remaining, lo, hi, retry=False):
        """Seconds of a fit's first slice: the time left over the fits a bisection
        of ``(lo, hi]`` still needs plus one, at least :attr:`slice_share` of it
        (``retry_share`` of it for a retry); None without a time limit
        (``remaining`` None)."""
        if remaining is None:
            return None
        if retry:
            return remaining * self.retry_share
        fits = math.ceil(math.log2(max(hi - lo, 2))) + 1
        return max(remaining / fits, remaining * self.slice_share)

    def floor(self, seconds, pace):
        """``seconds`` raised to :attr:`min_sweeps` sweeps at ``pace`` (seconds per
        sweep of the latest fit, or None)."""
        if seconds is None or pace is None:
            return seconds
        return max(seconds, self.min_sweeps * pace)

    # -- 4. rescue ----------------------------------------------------------------
    def rescue_limit(self, n_ones):
        """Uncertified entries at most which a failed fit is near (rescued)."""
        return max(self.rescue_min, int(self.rescue_fraction * n_ones))

    # -- 5. go on -----------------------------------------------------------------
    @staticmethod
    def needed(history, threshold):
        """Seconds the errors' trend over the last half of ``history`` needs to
        reach ``threshold`` (0 when there), or None when there is no falling trend.

        ``history`` holds ``(time, errors)`` pairs. The trend is geometric: the
        errors of a converging fit fall by a factor per unit of time, and a
        straight line through two points of such a curve promises far too much. A
        flat or rising trend has no time (more of the same will not certify, near
        or not: a near fit had its rescue).
        """
        if len(history) < 2:
            return None
        (t0, e0), (t1, e1) = history[(len(history) - 1) // 2], history[-1]
        if e1 >= e0 or t1 <= t0:
            return None
        if e1 <= threshold:
            return 0.0
        rate = math.log(e0 / max(e1, 1))
        return (t1 - t0) * math.log(e1 / max(threshold, 1)) / rate

    def go_on(self, history, threshold, remaining, elapsed, last):
        """Whether a fit cut after a slice of ``last`` seconds goes on (a
        :class:`GoOn`).

        ``remaining`` is the search's time left (None: no limit) and ``elapsed``
        the time it has run. A fit cut before it showed a trend goes on for twice
        ``last``. Else its trend (:meth:`needed`) must reach ``threshold`` within
        twice ``last`` (a go-on pays off in the slice it asks for, or the time is
        better spent at another rank) and leave ``last`` seconds for the rescue
        before the deadline; it goes on for twice what the trend needs, at least
        ``last`` and at most twice it. Without a time limit the trend must reach
        ``threshold`` within as long again as the search has run, so that a slow
        fit does not go on for ever.
        """
        needed = self.needed(history, threshold)
        if len(history) < 2:
            return GoOn(True, None if remaining is None else 2 * last)
        if remaining is None:
            return GoOn(True) if needed is not None and needed <= elapsed else STOP
        if needed is None or needed > 2 * last or needed + last > remaining:
            return STOP
        return GoOn(True, min(2 * last, max(last, 2 * needed)))

    # -- 6. move the bracket ------------------------------------------------------
    def gap_after(self, gap, n_wrong, n_ones):
        """The gallop's gap after a failed fit: doubled when it was far off."""
        return gap * 2 if n_wrong > self.far * max(n_ones, 1) else gap

    # -- the same order over candidates ------------------------------------------
    def candidates(self, candidates, try_k, deadline, *, gallop=True):
        """Smallest certified rank of sorted ``candidates``, asking ``try_k(k)``.

        The bracket order over the candidates' indices: with ``gallop``, indices
        ``0, 2, 6, 14, ...`` (each failure doubles the gap; never past the middle
        of what is left) until a certified one, then bisection between the last
        failure and the smallest certified index; without, ``0, 1, 2, ...`` until
        the first certified. The deadline is checked before every try but the
        first (one candidate is always tried).

        Returns
        -------
        best : int or None
            The smallest certified candidate found.
        stopped : bool
            True iff the deadline had passed at one of its checks.
        """
        lo, hi, gap, n_tries, stopped = -1, len(candidates), 1, 0, False
        best = None
        while (i := self.next_rank(lo, hi, gap)) is not None:
            if deadline.expired():
                stopped = True
                if n_tries:
                    break
            n_tries += 1
            if try_k(candidates[i]):
                hi = best = i
            else:
                lo, gap = i, (2 * gap if gallop else gap)
        return (None if best is None else candidates[best]), stopped

    # -- ProjLP's descent ---------------------------------------------------------
    def descent_step(self, step, certified):
        """The next step of a descent below a certificate (ProjLP's phase 2), or
        None when it ends: doubled after a certified width, halved after a failed
        one, and the descent ends when a step of one fails."""
        if certified:
            return 2 * step
        return None if step == 1 else max(1, step // 2)

    # -- ProjLP's phase 0 and R-SVD's scan: the order of their ranks -------------
    def descent_width(self, width):
        """The width ProjLP's phase 0 tries after ``width``, at which every column
        was separated: :attr:`phase0_descent` of it, and always smaller."""
        return min(width - 1, round(self.phase0_descent * width))

    def rsvd_order(self, m, n, K):
        """The ranks R-SVD's scan of ``K`` components of an ``m x n`` matrix visits.

        None for every ``k = 1..K`` in turn (the exhaustive scan, while ``m n K <=
        rsvd_exhaustive_work``), else the block boundaries ``K, K - rsvd_block,
        ..., 0`` of the scan from the top.
        """
        if float(m) * n * K <= self.rsvd_exhaustive_work:
            return None
        return list(range(K, 0, -self.rsvd_block)) + [0]

    # -- a sample first -----------------------------------------------------------
    def sample_size(self, m, n, limited):
        """``(axis, size)``: the sample of whole rows (axis 0) or columns (axis 1)
        of an ``m x n`` matrix that a search with a time limit (``limited``) runs
        on first, about :attr:`sample_entries` entries along the longer side; None
        without a time limit or below four times that many entries."""
        if not limited or m * n < 4 * self.sample_entries:
            return None
        axis, short = (0, n) if m >= n else (1, m)
        return axis, -(-self.sample_entries // short)

    # -- the portfolio's shares and resumes ---------------------------------------
    def resume_rank(self, top, failed, cut, tried):
        """The rank where a search the deadline stopped resumes (second pass).

        One above the largest rank of the failed fits its run kept (``failed``:
        its bracket's lower end, so that the resumed bracket search picks the
        rank it would have picked next), else the largest rank of a fit the
        deadline cut short (``cut``), else the rank above the largest one
        ``tried``, else ``top``; at most ``top``, the rank below the best
        certificate (only smaller ranks improve it), and never far above where
        the search was.
        """
        failed = [k for k in failed if k <= top]
        if failed:
            return min(top, max(failed) + 1)
        cut = [k for k in cut if k <= top]
        if cut:
            return max(cut)
        tried = [k for k in tried if k < top]
        return min(top, max(tried) + 1) if tried else top

    def reserve(self, budget, n_entries):
        """Seconds of a ``budget`` the portfolio keeps back for steps that cannot
        stop mid-way, on data of ``n_entries`` entries."""
        held = 1.0 + 0.02 * budget + self.portfolio_reserve_per_entry * n_entries
        return min(held, self.portfolio_reserve * budget, 30.0)


#: the rules every search uses unless it is handed another policy
DEFAULT_POLICY = SearchPolicy()
#: the rules of L-PCA's search on the working set (large sparse data): a fit
#: there ends by its own stall rules, and one near the rank needs hundreds of
#: seconds, more than a bisection's slice of a budget of half an hour
WORKING_SET_POLICY = SearchPolicy(slice_share=1 / 3)
