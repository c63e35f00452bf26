"""The records of ProjLP: the options of a fit and of a rank search, the rules for
large input, and the diagnostics of a search.

:class:`ProjLPFitOptions` holds the options of one fit
(:func:`~sklearn_rrank._projlp._projlp.projlp_fit`) and :class:`LargeInput` the
rules that apply from a size on (phase 0, the squared hinge).

:class:`ProjLPSearchOptions` holds the method parameters of
:func:`~sklearn_rrank._projlp._search._projlp_search`
(``method_params={"projlp": {...}}``). The phases of the search (and phase 0 of
:mod:`sklearn_rrank._projlp._copied`) write their counts into one
:class:`ProjLPDiagnostics`; the search returns it to the skeleton as the ``info``
dict users see (:meth:`ProjLPDiagnostics.as_info`: the same keys as before the
record).
"""

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, fields

from sklearn_rrank._core._lp_engine import DEFAULT_EPS, ColumnLPs
from sklearn_rrank._search._policy import SearchPolicy

__all__ = []


@dataclass(frozen=True)
class ProjLPSearchOptions:
    """The method parameters of the ProjLP rank search, checked by the registry.

    Their meaning is documented with the search
    (:func:`~sklearn_rrank._projlp._search._projlp_search`, "Method parameters").

    Attributes
    ----------
    nested : bool, default=True
    projection : {"dense", "sign", "sparse"}, default="dense"
    eps : float, default=1e-6
    refine : bool, default=True
    refine_iter : int, default=20
    n_retries : int, default=0
    nonnegative : bool, default=False
    max_rank : int or None, default=None
    policy : SearchPolicy or None, default=None
    """

    nested: bool = True
    projection: str = "dense"
    eps: float = DEFAULT_EPS
    refine: bool = True
    refine_iter: int = 20
    n_retries: int = 0
    nonnegative: bool = False
    max_rank: int | None = None
    policy: SearchPolicy | None = None


@dataclass
class ProjLPDiagnostics:
    """The diagnostics of one ProjLP rank search (see ``_projlp_search``).

    Attributes
    ----------
    nested : bool
        Nested projections (phase 1) or a fresh one per width.
    projection : str
        Distribution of the projections (``"dense"``, ``"sign"``, ``"sparse"``).
    eps : float
        Separation margin of the feasibility LPs.
    n_lps : int
        LPs run, every phase.
    n_infeasible_lps : int
        Feasibility LPs that found their column infeasible.
    d_tried : list of int
        Widths of phase 1, in order.
    phase1_rank : int or None
        The best rank known when phase 1 ended (None: no certificate).
    phase1_seconds : float or None
        Seconds from the search's start to the end of phase 1.
    fallback : bool
        True if the trivial certificate was offered after phase 1.
    n_projections : int
        Projections drawn by phase 3.
    refine_tried : list of int
        Widths tried by phase 2, in order.
    phase2_seconds : float or None
        Seconds of phase 2.
    phase0_width : int or None
        Projection width of phase 0's last certificate that improved the bound.
    phase0_copied : int or None
        Copied columns of that certificate.
    phase0_skipped : str or None
        Why phase 0 stopped before a width (its SVD start did not fit the time left).
    phase0_out_of_reach : str or None
        Why phase 0 did not run (its first width is not below the known bound).
    phase0_tried : list of (int, int)
        ``(width, bound)`` of every width phase 0 separated: the bound is the width
        plus the copied columns.
    phase0_alternation : list of (int, list)
        ``(width, history)``: the uncertified entries after each alternation round.
    n_newton : int
        Copied columns that got phase 0's Newton steps.
    improvements : list of (int, float)
        ``(rank, seconds)`` of every certificate that improved the bound.
    status_counts : collections.Counter
        LP statuses by name (``info["lp_status_counts"]``, a dict).
    message : str or None
        How the search ended (set by the search's end).
    stopped_early : bool
        True if the deadline ended the search or phase 1 found no certificate up to
        ``max_rank``.
    """

    nested: bool
    projection: str
    eps: float
    n_lps: int = 0
    n_infeasible_lps: int = 0
    d_tried: list = field(default_factory=list)
    phase1_rank: int | None = None
    phase1_seconds: float | None = None
    fallback: bool = False
    n_projections: int = 0
    refine_tried: list = field(default_factory=list)
    phase2_seconds: float | None = None
    phase0_width: int | None = None
    phase0_copied: int | None = None
    phase0_skipped: str | None = None
    phase0_out_of_reach: str | None = None
    phase0_tried: list = field(default_factory=list)
    phase0_alternation: list = field(default_factory=list)
    n_newton: int = 0
    improvements: list = field(default_factory=list)
    status_counts: Counter = field(default_factory=Counter)
    message: str | None = None
    stopped_early: bool = False

    def count_lps(self, attempted, infeasible, statuses):
        """Count ``attempted`` LPs, ``infeasible`` of them, and their ``statuses``."""
        self.n_lps += int(attempted)
        self.n_infeasible_lps += int(infeasible)
        self.status_counts.update(statuses)

    def improved(self, rank, seconds):
        """A certificate of ``rank`` improved the bound after ``seconds``."""
        self.improvements.append((rank, round(seconds, 4)))

    def phase0_widths(self):
        """The widths phase 0 has separated."""
        return [d for d, _ in self.phase0_tried]

    def as_info(self):
        """The ``info`` dict of the search: every field by name, in order.

        ``status_counts`` is ``"lp_status_counts"`` (a plain dict); ``message`` and
        ``stopped_early`` come last, and only once the search has ended.
        """
        info = {}
        for f in fields(self):
            if f.name == "status_counts":
                info["lp_status_counts"] = dict(self.status_counts)
            elif f.name not in ("message", "stopped_early"):
                info[f.name] = getattr(self, f.name)
        if self.message is not None:
            info["message"] = self.message
            info["stopped_early"] = bool(self.stopped_early)
        return info


@dataclass(frozen=True)
class LargeInput:
    """ProjLP's rules for large input: from which size they apply, and their steps.

    The rank search (:func:`~sklearn_rrank._projlp._search._projlp_search`) takes
    an instance as its private keyword ``large``; the fit and the transform use
    :data:`LARGE_INPUT`.

    Attributes
    ----------
    entries : int, default=4_000_000
        Merged matrices of at least this many entries start the rank search with
        phase 0 (batched separation with copied columns), and ``solver="auto"``
        picks the squared hinge: one LP per column and width cannot reach a
        certificate in time there.
    separation_iter : int, default=60
        Descent steps of the batched separation per width tried in phase 0 and per
        step of the hinge solver.
    newton_iter : int, default=60
        Newton steps per copied column in phase 0.
    svd_seconds : callable or None, default=None
        ``svd_seconds(m, n, nnz)``: the estimated seconds of phase 0's SVD start,
        which no deadline stops (a start that does not fit the time left is
        skipped); None: :func:`~sklearn_rrank._upper._rsvd._gram_svd_seconds`.
    check_seconds : callable or None, default=None
        ``check_seconds(m, n, k)``: the estimated seconds of the float64 check of an
        ``m x n`` certificate of width ``k``, which no deadline stops; phase 0 ends
        its widths that long before the deadline, so that the check of its last
        certificate ends in time. None:
        :func:`~sklearn_rrank._projlp._copied._check_seconds`.
    """

    entries: int = 4_000_000
    separation_iter: int = 60
    newton_iter: int = 60
    svd_seconds: Callable | None = None
    check_seconds: Callable | None = None


#: the rules for large input every fit and search uses unless handed others
LARGE_INPUT = LargeInput()


@dataclass(frozen=True)
class ProjLPFitOptions:
    """The options of one ProjLP fit (:func:`projlp_fit`, validated there).

    Attributes
    ----------
    tau : float, default=0.5
        Rounding threshold.
    projection : {"sparse", "dense", "sign"}, default="sparse"
        Distribution of the projection.
    nonnegative : bool, default=False
        Non-negative projection and factors.
    eps : float, default=1e-6
        Separation margin of the LPs.
    max_iter : int, default=50
        Alternating rounds (0: the paper's one-shot LP).
    tol : float, default=1e-4
        Relative decrease of the objective per round below which the rounds stop.
    solver : {"auto", "lp", "hinge"}, default="auto"
        The LPs or the squared hinge (``"auto"``: by :attr:`LargeInput.entries`).
    """

    tau: float = 0.5
    projection: str = "sparse"
    nonnegative: bool = False
    eps: float = DEFAULT_EPS
    max_iter: int = 50
    tol: float = 1e-4
    solver: str = "auto"

    def lps(self):
        """The L1-slack LPs of the fit (:class:`ColumnLPs`)."""
        return ColumnLPs(self.tau, self.eps, bool(self.nonnegative))
