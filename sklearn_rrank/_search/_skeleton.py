"""One rank-search skeleton for every upper-bound method, under one wall-clock budget.

Every method family that searches for a small certified rounding rank (R-SVD, ProjLP,
L-PCA, Nuclear, Permutation, and the generic search over any ``fit``) runs inside
:func:`run_rank_search`. The skeleton owns what is common to all of them:

* the **deadline** (:class:`Deadline`): one wall-clock budget per public call, handed
  down as an object, never re-interpreted as "seconds left" by each layer;
* the **zero-rank shortcut**: if ``round_tau(0) = X`` the rank is 0 and no method runs;
* **certification, once**: a family proposes factors with :meth:`Incumbent.offer`,
  which checks them with the certificate kernel of
  :func:`~sklearn_rrank.certify_rounding` and keeps the best; families never certify
  on their own;
* the **anytime record**: every improvement is stamped with the time since the start
  of the public call (``curve``), errors per rank tried (``errors_by_k``);
* the **portfolio contract**: a search is given the best bound known so far (``cap``,
  possibly found by another method, with its factors as a warm start) and the best
  lower bound; it only tries ranks below the cap and stops as soon as its bound meets
  the lower bound;
* stopped-early status, messages and progress events (``progress(event)`` with the
  keys ``method``, ``stage``, ``k``, ``bound``, ``error``, ``elapsed``, ``message``).

A family supplies one function ``search(X, incumbent, deadline, *, tau, random_state,
n_jobs, verbose, **params)`` that proposes candidate factorizations through the
incumbent and returns an ``info`` dict. A family that can fit at a rank ``k`` from a
start (L-PCA) hands its fit and its rescue to the bracket search of
:mod:`sklearn_rrank._search._bracket` (gallop, then bisect; a slice of the time left
per fit), which chooses the ranks, starts and time; the policy's
:meth:`~sklearn_rrank._search._policy.SearchPolicy.candidates` runs the same order
for a caller that can only fit and ask "is rank k certified?"
(RoundingRankCV over any estimator). Simple families use
:func:`ascend` (``k = start, start + 1, ...`` with a ``try_rank(k, warm)``
callback); R-SVD and ProjLP drive their own order of ranks (a blocked SVD scan;
nested projections then an LP descent from a certificate) but report every
candidate through the same incumbent.
"""

import time
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from sklearn_rrank._core._results import RankSearchResult, SearchReport
from sklearn_rrank._core._rounding import (
    DEFAULT_MARGIN,
    _all_finite,
    _as_factor,
    _count_uncertified,
)
from sklearn_rrank._core._rows import row_classes
from sklearn_rrank._core._trivial import trivial_rank

__all__ = [
    "BinaryData",
    "Deadline",
    "Incumbent",
    "SearchMemo",
    "ascend",
    "rank_zero_possible",
    "run_rank_search",
]


class BinaryData:
    """Validated binary data and what the methods ask of it, computed once.

    Built by a public door after validation and handed to every method of a call
    (through :class:`Incumbent`), so that counts and the merging of identical rows
    and columns are not recomputed by each method.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features), dtype float64
        Validated binary data (NaN = missing in dense arrays); read only.
    """

    def __init__(self, X):
        self.X = X
        self.shape = X.shape

    @cached_property
    def n_ones(self):
        """Number of ones (entries)."""
        if sp.issparse(self.X):
            return int(self.X.count_nonzero())
        return int(np.count_nonzero(self.X == 1))

    @cached_property
    def has_missing(self):
        """True iff some entry is missing (NaN)."""
        return not sp.issparse(self.X) and bool(np.isnan(self.X).any())

    @cached_property
    def unique_columns(self):
        """``(representatives, owner)``: first column of each distinct column, in
        order of first occurrence, and for every column the index of its class."""
        if self._pattern is not None:
            first, _, owner = row_classes(self._pattern.T.tocsr())
        else:
            first, _, owner = row_classes(np.ascontiguousarray(self._dense.T))
        return first, owner

    @cached_property
    def unique_rows(self):
        """``(representatives, counts, owner)`` of the distinct rows (as columns)."""
        if self._pattern is not None:
            return row_classes(self._pattern)
        return row_classes(self._dense)

    @property
    def _dense(self):
        return self.X.toarray() if sp.issparse(self.X) else self.X

    @cached_property
    def _pattern(self):
        """The CSR pattern of the ones of complete sparse ``X`` (else None)."""
        if not sp.issparse(self.X) or np.isnan(self.X.data).any():
            return None
        P = sp.csr_matrix(self.X, copy=True)
        P.eliminate_zeros()
        P.sort_indices()
        return P


class Deadline:
    """A wall-clock deadline shared by everything one public call runs.

    Parameters
    ----------
    seconds : float or None, default=None
        Budget in seconds from now; None means no limit.
    clock : callable or None, default=None
        Seconds on a monotonic clock (None: :func:`time.monotonic`). A test hands a
        fake clock that its fake work advances, so that time passes without
        sleeping; the children of a deadline share its clock.

    Notes
    -----
    :meth:`child` gives a sub-deadline that never ends
    after its parent, so a method given a share of the budget cannot overrun the
    whole call.

    A deadline crosses process boundaries as itself: pickled (for a loky, Dask or
    Ray worker of :mod:`joblib`), it travels as its remaining and elapsed seconds
    and is rebuilt on the receiver's clock, because ``time.monotonic()`` readings of
    two machines are not comparable. Its end is then the same instant, later by the
    transfer time at most. Only the leaves that hand a time limit to another
    library (the HiGHS option ``time_limit``) read :meth:`remaining` as seconds.
    """

    def __init__(self, seconds=None, *, clock=None, _start=None, _end=None):
        self.clock = time.monotonic if clock is None else clock
        self.start = self.clock() if _start is None else _start
        if _end is None and seconds is not None:
            _end = self.start + float(seconds)
        self.end = _end

    @classmethod
    def coerce(cls, value):
        """A :class:`Deadline` from a Deadline, a number of seconds, or None."""
        if isinstance(value, Deadline):
            return value
        return cls(value)

    @property
    def limited(self):
        """True iff the deadline has an end."""
        return self.end is not None

    def now(self):
        """The reading of the deadline's clock (seconds)."""
        return self.clock()

    def elapsed(self):
        """Seconds since the deadline was created."""
        return self.clock() - self.start

    def remaining(self):
        """Seconds left (at least 0.0), or None when unlimited."""
        if self.end is None:
            return None
        return max(0.0, self.end - self.clock())

    def expired(self):
        """True iff the deadline has passed."""
        return self.end is not None and self.clock() >= self.end

    def leaves_room_for(self, seconds):
        """True iff a step of ``seconds`` (measured: the last one) ends in time.

        A solver that repeats steps of about equal cost asks this before the next:
        at 1e9 entries an L-PCA sweep takes minutes, and a sweep the deadline cuts
        short is lost along with the time the fit's final passes need.
        """
        return self.end is None or self.clock() + seconds < self.end

    def child(self, seconds=None, *, fraction=None):
        """A sub-deadline ending after ``seconds`` (or a ``fraction`` of what is left).

        It never ends later than this deadline. With neither argument, the child is
        this deadline's end.
        """
        now = self.clock()
        end = self.end
        if fraction is not None and end is not None:
            end = now + fraction * max(0.0, end - now)
        if seconds is not None:
            mine = now + float(seconds)
            end = mine if end is None else min(end, mine)
        return Deadline(clock=self.clock, _start=now, _end=end)

    def ending_before(self, seconds):
        """This deadline ended ``seconds`` earlier (the same start; unlimited stays).

        The work before a last step that no deadline stops (the float64 check of a
        wide certificate) runs to it, so that the step ends by this deadline.
        """
        if self.end is None:
            return self
        return Deadline(clock=self.clock, _start=self.start, _end=self.end - seconds)

    def __reduce__(self):
        return (_rebuild_deadline, (self.remaining(), self.elapsed()))

    def __repr__(self):
        rem = self.remaining()
        return "Deadline(unlimited)" if rem is None else f"Deadline({rem:.1f} s left)"


def _rebuild_deadline(remaining, elapsed):
    """A :class:`Deadline` unpickled on this process's clock (see its Notes)."""
    now = time.monotonic()
    end = None if remaining is None else now + remaining
    return Deadline(_start=now - elapsed, _end=end)


def rank_zero_possible(X, tau):
    """True iff ``round_tau(0) == X`` on every observed entry (rounding rank 0)."""
    if sp.issparse(X):  # complete binary CSR: stored entries are the ones
        ones = X.count_nonzero()
        return ones == 0 if tau > 0 else ones == X.shape[0] * X.shape[1]
    if tau > 0:
        return not np.any(X == 1)
    return not np.any(X == 0)


@dataclass
class SearchMemo:
    """What a rank search keeps across its runs within one call.

    A portfolio that runs a stopped search again (its second pass) hands it the
    same memo, so that the search goes on where it stopped instead of starting
    again. The bracket search
    (:func:`~sklearn_rrank._search._bracket.bracket_search`) fills it; other
    families leave it empty.

    Attributes
    ----------
    cut : dict of int to object
        Rank -> model of a fit that stopped before it converged (the deadline cut
        it, or its slice did when the bracket had closed on it): the next run
        goes on with it, and resumes at its rank.
    failed : dict of int to object
        Rank -> model of every failed fit of a run that stopped: the next run's
        bracket keeps them, so that below a new certificate it bisects down to
        them, not to the rank it resumed at.
    gap : int or None
        The gallop's gap when the run stopped (None: the policy's first gap).
    floor : int or None
        The lower end of the first run's bracket (one below the rank it started
        at): below a new certificate under every failed fit, the next run bisects
        down to it, not to the rank it resumed at (None: no run stopped yet).
    """

    cut: dict = field(default_factory=dict)
    failed: dict = field(default_factory=dict)
    gap: int | None = None
    floor: int | None = None


@dataclass
class Incumbent:
    """The best certified factorization of one method's search, and its record.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), dtype float64
        Validated binary data (NaN = missing); read only.
    tau : float
        Rounding threshold.
    method : str
        Name of the searching method (for events and the report).
    lower : int, default=0
        Best lower bound known: the search may stop when its bound reaches it.
    cap : int or None, default=None
        Best certified bound known from other methods: only smaller ranks improve.
    cap_factors : tuple of ndarrays or None, default=None
        ``(L, R)`` certifying ``cap``, offered as a warm start.
    origin : float or None, default=None
        ``clock()`` at the start of the public call; ``curve`` is measured from it.
    progress : callable or None, default=None
        Called with an event dict at each step and improvement.
    clock : callable, default=time.monotonic
        Seconds on a monotonic clock: the call's deadline's (a test's fake clock).
    data : BinaryData or None, default=None
        The call's data object (built from ``X`` if None).
    memo : SearchMemo or None, default=None
        The search's state kept across its runs within one call (a portfolio
        that runs a stopped search again hands it the same memo; a new one if
        None).
    """

    X: np.ndarray
    tau: float
    method: str
    lower: int = 0
    cap: int | None = None
    cap_factors: tuple | None = None
    origin: float | None = None
    progress: object = None
    rank: int | None = None
    L: np.ndarray | None = None
    R: np.ndarray | None = None
    curve: list = field(default_factory=list)
    errors_by_k: dict = field(default_factory=dict)
    n_offers: int = 0
    data: BinaryData | None = None
    memo: SearchMemo | None = None
    clock: object = time.monotonic

    def __post_init__(self):
        if self.origin is None:
            self.origin = self.clock()
        if self.data is None:
            self.data = BinaryData(self.X)
        if self.memo is None:
            self.memo = SearchMemo()

    # -- what a search may ask -------------------------------------------------------
    @property
    def bound(self):
        """The best certified rank known to this search (its own or the cap)."""
        if self.rank is None:
            return self.cap
        return self.rank if self.cap is None else min(self.rank, self.cap)

    @property
    def done(self):
        """True iff the known bound already meets the lower bound."""
        b = self.bound
        return b is not None and b <= self.lower

    @property
    def ceiling(self):
        """The trivial rank ``min(m, n)`` (one more for ``tau <= 0``).

        The trivial factorization (``X`` itself as a factor) certifies it, so no
        search offers a wider certificate (ProjLP's copied columns could).
        """
        return trivial_rank(self.X.shape, self.tau)

    def limit_text(self):
        """``"the known bound b"``, or ``"the trivial rank c"`` without a bound."""
        if self.bound is not None:
            return f"the known bound {self.bound}"
        return f"the trivial rank {self.ceiling}"

    def worth_trying(self, k):
        """True iff a certificate of rank ``k`` would improve the bound.

        Ranks above :attr:`ceiling` never do: the trivial factorization is better.
        """
        b = self.bound
        return self.lower <= k <= self.ceiling and (b is None or k < b)

    def best_factors(self):
        """``(L, R)`` of the best known certificate (own or the cap's), or None."""
        if self.rank is not None and (self.cap is None or self.rank <= self.cap):
            return self.L, self.R
        return self.cap_factors

    def elapsed(self):
        """Seconds since the start of the public call."""
        return self.clock() - self.origin

    # -- what a search reports ---------------------------------------------------------
    def count_uncertified(self, L, R, *, stop_early=False):
        """Entries that ``(L, R)`` does not certify (the certificate kernel)."""
        L, R = _as_factor(L), _as_factor(R)
        return _count_uncertified(
            self.X, L, R, self.tau, DEFAULT_MARGIN, stop_early=stop_early
        )

    def offer(self, L, R):
        """Propose factors; keep them iff they certify ``X`` and lower the bound.

        Returns
        -------
        accepted : bool
            True iff ``(L, R)`` is certified and of smaller rank than the bound.
        """
        L, R = _as_factor(L), _as_factor(R)  # arrays, or CSR (a sparse certificate)
        k = int(L.shape[1])
        self.n_offers += 1
        if not self.worth_trying(k):
            return False
        if L.shape[0] != self.X.shape[0] or R.shape != (self.X.shape[1], k):
            raise ValueError(
                f"{self.method}: factors of shapes {L.shape} and {R.shape} do not "
                f"match X of shape {self.X.shape}."
            )
        if not (_all_finite(L) and _all_finite(R)):
            return False
        if self.count_uncertified(L, R, stop_early=True):
            return False
        self.rank, self.L, self.R = k, L, R
        self.curve.append([round(self.elapsed(), 4), k])
        self.event("improved", k=k, bound=k)
        return True

    def record(self, k, errors=None, message=""):
        """Record the wrong entries of the fit tried at rank ``k``."""
        if errors is not None:
            self.errors_by_k[int(k)] = int(errors)
        self.event("step", k=k, error=errors, message=message)

    def event(self, stage, *, k=None, bound=None, error=None, message=""):
        """Send a progress event (no-op without a ``progress`` callback)."""
        if self.progress is None:
            return
        self.progress(
            {
                "method": self.method,
                "stage": stage,
                "k": None if k is None else int(k),
                "bound": self.bound if bound is None else int(bound),
                "error": None if error is None else int(error),
                "elapsed": self.elapsed(),
                "message": message,
            }
        )


def ascend(incumbent, deadline, try_rank, *, start=None, stop=None):
    """Try ``k = start, start + 1, ...`` until one is certified, the bound or ``stop``.

    ``try_rank(k, warm)`` returns ``(L, R, n_wrong, state)``: candidate factors of
    rank ``k`` (or None), the number of wrong entries (or None) and a warm-start state
    handed to the next call. The first certified ``k`` ends the ascent.

    Returns
    -------
    reason : str
        ``"certified"``, ``"bound"`` (reached the known bound), ``"stop"`` or
        ``"time limit"``.
    """
    k = max(1, incumbent.lower) if start is None else max(1, int(start))
    warm = None
    while True:
        if stop is not None and k > stop:
            return "stop"
        if not incumbent.worth_trying(k):
            return "bound"
        if deadline.expired():
            return "time limit"
        L, R, n_wrong, warm = try_rank(k, warm)
        incumbent.record(k, n_wrong)
        if L is not None and incumbent.offer(L, R):
            return "certified"
        k += 1


def _report(info):
    """The typed :class:`SearchReport` of a search's completed ``info`` dict.

    The one place where the skeleton reads the family's keys
    (``SearchReport.FAMILY_KEYS``) and its own (``curve``, ``errors_by_k``,
    ``seconds``, ``interrupted``).
    """
    get = info.get
    return SearchReport(
        message=str(get("message", "")),
        curve=list(get("curve", [])),
        errors_by_k={int(k): int(v) for k, v in get("errors_by_k", {}).items()},
        seconds=float(get("seconds", 0.0)),
        lower=None if get("lower") is None else int(info["lower"]),
        proven_rank=None if get("proven_rank") is None else int(info["proven_rank"]),
        proof=get("proof"),
        fit_params=dict(get("fit_params") or {}),
        model=get("model"),
        interrupted=bool(get("interrupted", False)),
    )


def run_rank_search(
    search,
    X,
    *,
    method,
    tau,
    deadline=None,
    lower=0,
    cap=None,
    cap_factors=None,
    origin=None,
    progress=None,
    random_state=None,
    n_jobs=None,
    verbose=0,
    params=None,
    data=None,
    memo=None,
):
    """Run one family's rank search inside the skeleton.

    Parameters
    ----------
    search : callable
        ``search(X, incumbent, deadline, *, tau, random_state, n_jobs, verbose,
        **params) -> info`` (see the module docstring).
    X : ndarray of shape (n_samples, n_features), dtype float64
        Validated binary data (NaN = missing).
    method : str
        Name of the method.
    tau : float
        Rounding threshold.
    deadline : Deadline, float or None, default=None
        Wall-clock budget.
    lower, cap, cap_factors, origin, progress
        See :class:`Incumbent`.
    random_state, n_jobs, verbose
        Passed to ``search``.
    params : dict or None, default=None
        Method parameters, already checked against the method's accepted names.
    data : BinaryData or None, default=None
        The call's shared data object for ``X`` (built here if None).
    memo : SearchMemo or None, default=None
        The search's state from an earlier run of the same search in this call
        (see :class:`SearchMemo`); a new one if None.

    Returns
    -------
    result : RankSearchResult
        ``rank`` is the search's own certified bound (None if it found none below
        ``cap``); ``info`` holds ``curve`` (``[seconds, bound]`` pairs from
        ``origin``), ``errors_by_k``, ``message``, ``seconds`` and the family's own
        diagnostics. ``stopped_early`` is True iff the deadline ended the search.

    Raises
    ------
    KeyboardInterrupt
        Raised again if the search is interrupted, with the attribute
        ``rank_search_result`` (a ``RankSearchResult`` of what was certified until
        then, ``info["interrupted"]`` True).
    """
    deadline = Deadline.coerce(deadline)
    inc = Incumbent(
        X,
        tau,
        method,
        lower=int(lower),
        cap=cap,
        cap_factors=cap_factors,
        origin=origin,
        progress=progress,
        data=data if data is not None and data.X is X else None,
        memo=memo,
        clock=deadline.clock,
    )
    t0 = deadline.now()
    try:
        inc.event("start")
        if rank_zero_possible(X, tau):
            m, n = X.shape
            inc.offer(np.zeros((m, 0)), np.zeros((n, 0)))
            info = {"message": "rounding rank 0: round_tau(0) equals X"}
        elif inc.done:
            info = {
                "message": f"nothing to search: bound {inc.bound} meets lower {lower}"
            }
        else:
            info = search(
                X,
                inc,
                deadline,
                tau=tau,
                random_state=random_state,
                n_jobs=n_jobs,
                verbose=verbose,
                **(params or {}),
            )
            info = dict(info or {})
        timed_out = deadline.expired() and not inc.done
        stopped = bool(info.pop("stopped_early", False)) or timed_out
        if "message" not in info or not info["message"]:
            if inc.rank is not None:
                info["message"] = f"certified rank {inc.rank}"
            elif cap is not None:
                info["message"] = f"no certificate below the known bound {cap}"
            else:
                info["message"] = "no certificate found"
        if timed_out and "time limit" not in info["message"]:
            info["message"] += " (time limit reached)"
        info["curve"] = inc.curve
        info.setdefault("errors_by_k", inc.errors_by_k)
        info["seconds"] = deadline.now() - t0
        inc.event("end", message=info["message"])
        if verbose:
            print(f"[{method}] {info['message']} in {info['seconds']:.2f} s")
        return RankSearchResult(
            rank=inc.rank,
            L=inc.L,
            R=inc.R,
            certified=inc.rank is not None,
            stopped_early=stopped,
            info=info,
            report=_report(info),
        )
    except KeyboardInterrupt as exc:
        # keep what the search certified so far for the caller
        # (rounding_rank_bounds reports it), then stop as asked
        info = {
            "message": (
                "nothing certified yet"
                if inc.rank is None
                else f"certified rank {inc.rank} so far"
            ),
            "interrupted": True,
            "curve": inc.curve,
            "errors_by_k": inc.errors_by_k,
            "seconds": deadline.now() - t0,
        }
        exc.rank_search_result = RankSearchResult(
            rank=inc.rank,
            L=inc.L,
            R=inc.R,
            certified=inc.rank is not None,
            stopped_early=True,
            info=info,
            report=_report(info),
        )
        raise
