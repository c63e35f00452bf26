"""Lower and upper bounds on the rounding rank, and ``rounding_rank_bounds``.

Lower bounds: the spectral bound (paper Proposition "spectral lower bound", via the
sign-rank bound it rests on), the VC-dimension bound (:mod:`sklearn_rrank._lower._vc`)
and
the exact rank-one test (Proposition "rounding rank one"). Upper bounds come from the
algorithms (R-SVD, ProjLP, L-PCA, Permutation, Nuclear) and are always certified by
:func:`~sklearn_rrank.certify_rounding`.
"""

import numbers
import time
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, validate_params

from sklearn_rrank._core._memory import dense_copy_refused, held_on_disk, in_memory
from sklearn_rrank._core._progress import event
from sklearn_rrank._core._trivial import trivial_rank, trivial_upper_bound
from sklearn_rrank._core._validation import (
    SPARSE_FRACTION,
    check_binary_matrix,
    check_n_jobs,
    check_tau,
    sparse_if_few_ones,
)
from sklearn_rrank._lower._spectral import spectral_lower_bound
from sklearn_rrank._search._skeleton import (
    BinaryData,
    Deadline,
    rank_zero_possible,
    run_rank_search,
)

__all__ = ["RoundingRankBounds", "rounding_rank_bounds", "spectral_lower_bound"]

# time kept back from a budget for steps that overrun their shares: 2% of the budget
# plus 1 s plus _RESERVE_PER_ENTRY s per matrix entry (the steps that cannot stop
# mid-way, a sweep or an SVD start, grow with the data: a first L-PCA sweep with its
# SVD start took 12 s on Abstracts' 6.3e7 entries at load 7), at most 10% of the
# budget and 30 s
_RESERVE = 0.1
_RESERVE_PER_ENTRY = 2e-7
# on matrices of more than this many entries, a method whose share is below
# _MIN_SHARE seconds is skipped: its setup alone would overrun the budget
_LARGE_ENTRIES = 1_000_000
_MIN_SHARE = 1.0
# the second pass (time left after every method ran once) starts a method only with
# at least this many seconds
_SECOND_PASS_MIN = 2.0
# within a budget, on matrices of at least this many entries, a weighted lower
# bound's share of the first pass is at most _LOWER_SHARE_CAP of the budget, and in
# the second pass it runs on what the searches leave: on Abstracts (6.3e7 entries,
# 900 s) the VC bound was 6 after 30 s and still 6 after its 118 s share, while
# L-PCA's descent certified one rank less per 110-150 s and was cut at the deadline
# (98 tried, 108 certified); the cap is at least _LOWER_CAP_MIN seconds (short
# budgets keep their weighted shares: VC gave 5 after 10 s on Abstracts)
_CAPPED_LOWER_ENTRIES = 4 * 10**7
_LOWER_SHARE_CAP = 0.05
_LOWER_CAP_MIN = 10.0


def _resumes(spec):
    """Whether a method's second run resumes where its first stopped (``start``)."""
    return spec.search is not None and "start" in spec.search_params


@dataclass
class RoundingRankBounds:
    """Combined lower and upper bounds on the rounding rank.

    Attributes
    ----------
    lower : int
        Best lower bound; ``lower_method`` names its method.
    upper : int
        Best certified upper bound; ``upper_method`` names its method.
    L : ndarray or CSR matrix of shape (n_samples, upper)
    R : ndarray or CSR matrix of shape (n_features, upper)
        The certificate of ``upper``: ``certify_rounding(X, L, R, tau=tau)`` holds.
        The trivial certificate of sparse ``X`` (``upper_method == "trivial"``) is
        sparse: the scaled ones of ``X`` and a sparse identity (no m x n array).
    exact : bool
        True iff ``lower == upper``.
    proven_upper : int
        The best upper bound that is either certified or proven by exact
        combinatorial reasoning without certified float factors (Permutation's
        sign-change lemma); ``proven_upper <= upper``.
    proven_upper_method : str
        The method of ``proven_upper``.
    tau : float
        The rounding threshold.
    report : list of dict
        One row per method, in the order they ran: ``method``, ``kind`` ("lower" or
        "upper"), ``bound`` (int or None), ``seconds`` (the method's own),
        ``certified`` (upper bounds), ``stopped_early``, ``message``, ``status``
        (``"ok"``, ``"stopped"`` (deadline), ``"skipped"`` (bounds already met or
        no budget left), ``"failed"`` (the method raised; the message says
        what) or ``"interrupted"`` (the method was running, or had not started,
        when the call was interrupted)), ``budget`` (seconds granted, None if
        unlimited), ``curve`` (a list of ``[seconds, bound]`` pairs, seconds since
        the start of the call, one per improvement: the anytime curve) and, for
        rank searches, ``errors_by_k``.
    seconds : float
        Wall-clock seconds of the whole call.
    time_limit : float or None
        The budget of the call.
    interrupted : bool
        True if the call was interrupted (``KeyboardInterrupt``): the bounds are
        those reached until then.
    """

    lower: int
    upper: int
    lower_method: str
    upper_method: str
    L: np.ndarray
    R: np.ndarray
    exact: bool
    tau: float
    report: list = field(default_factory=list)
    proven_upper: int | None = None
    proven_upper_method: str | None = None
    seconds: float = 0.0
    time_limit: float | None = None
    interrupted: bool = False

    def __repr__(self):
        # the factors by shape only: a repr of L and R runs to thousands of lines
        return (
            f"RoundingRankBounds(lower={self.lower}, upper={self.upper}, "
            f"lower_method={self.lower_method!r}, upper_method={self.upper_method!r}, "
            f"exact={self.exact}, tau={self.tau}, L=<{_kind(self.L)} {self.L.shape}>, "
            f"R=<{_kind(self.R)} {self.R.shape}>, seconds={self.seconds:.3g}, "
            f"report=<{len(self.report)} rows>)"
        )

    def to_dict(self):
        """JSON-friendly summary (without the factors)."""
        return {
            "lower": self.lower,
            "upper": self.upper,
            "lower_method": self.lower_method,
            "upper_method": self.upper_method,
            "exact": self.exact,
            "proven_upper": self.proven_upper,
            "proven_upper_method": self.proven_upper_method,
            "tau": self.tau,
            "seconds": self.seconds,
            "time_limit": self.time_limit,
            "interrupted": self.interrupted,
            "report": self.report,
        }


def _kind(A):
    return "sparse" if sp.issparse(A) else "array"


def _check_methods(methods, allowed):
    if methods is None:
        raise ValueError(f"methods must name at least one of {allowed}; got None.")
    if isinstance(methods, str):
        methods = [m.strip() for m in methods.split(",") if m.strip()]
    methods = tuple(methods)
    if not methods:
        raise ValueError(f"methods must name at least one of {allowed}.")
    for m in methods:
        if not isinstance(m, str) or m not in allowed:
            raise ValueError(f"Unknown method {m!r}; choose from {allowed}.")
    return tuple(dict.fromkeys(methods))


class _DenseCopy:
    """The dense float64 copy of validated (possibly sparse) ``X``, made once on demand.

    :meth:`get` returns ``X`` itself when it is dense, else densifies it the first
    time, unless :func:`~sklearn_rrank._core._memory.dense_copy_refused` says why not
    (more than 2 GiB, or more than fits in memory): then it returns None and
    :attr:`message` says why, so that the portfolio skips the method that needs it.
    """

    def __init__(self, X):
        self.X, self.dense, self.message = X, None, ""

    def get(self):
        if not sp.issparse(self.X):
            return self.X
        if self.dense is None and not self.message:
            self.message = dense_copy_refused(*self.X.shape) or ""
            if not self.message:
                self.dense = self.X.toarray()
        return self.dense


def _portfolio(X, methods, *, tau, deadline, **kwargs):
    """Run ``methods`` cheap-first under one deadline, sharing bounds (trusts X).

    A first pass runs every method once, each on its weighted share of what is left
    of the budget (:meth:`_Portfolio._held`: with the weight of a search whose share
    cut a fit below its certificate). If time is left and the bounds do not meet, a
    second pass hands it to the methods the deadline stopped
    (:meth:`_Portfolio.second_pass`).

    Returns ``(lower, lower_method, best, proven, report)`` where ``best`` is
    ``(rank, method, L, R)`` of the best certificate or None.
    """
    return _run_portfolio(X, methods, tau=tau, deadline=deadline, **kwargs).outcome()


def _run_portfolio(
    X,
    methods,
    *,
    tau,
    deadline,
    lower=0,
    n_jobs=None,
    random_state=None,
    verbose=0,
    progress=None,
    method_params=None,
):
    """:func:`_portfolio`, returning the :class:`_Portfolio` (also each search's
    :class:`RankSearchResult` in ``results``)."""
    from sklearn_rrank._portfolio._registry import METHODS, check_method_params

    specs = sorted((METHODS[m] for m in methods), key=lambda s: s.cost)
    method_params = dict(method_params or {})
    for name in method_params:
        if name not in methods:
            raise ValueError(
                f"method_params names {name!r}, which is not among methods {methods}."
            )
    params = {
        s.name: check_method_params(s, method_params.get(s.name), "search")
        for s in specs
    }
    run = _Portfolio(
        X,
        specs,
        params,
        tau=tau,
        deadline=deadline,
        lower=lower,
        n_jobs=n_jobs,
        random_state=random_state,
        verbose=verbose,
        progress=progress,
    )
    try:
        run.first_pass()
        run.second_pass()
    except KeyboardInterrupt as exc:
        run.load_best()
        # a method interrupted while it was being started (before its own handler
        # could mark it) says so too
        if run.current is not None and run.current["status"] == "ok":
            run.current.update(status="interrupted", stopped_early=True)
        # the methods that did not start say so; the caller finds the bounds
        # reached so far on the exception
        for spec in specs[len(run.report) :]:
            run.report.append(
                _new_row(spec.name, spec.lower is not None)
                | {
                    "status": "interrupted",
                    "stopped_early": True,
                    "message": "not run",
                }
            )
        exc.portfolio = run.outcome()
        raise
    run.load_best()
    return run


class _Portfolio:
    """The state of one portfolio run: bounds so far, best certificate, report."""

    def __init__(
        self,
        X,
        specs,
        params,
        *,
        tau,
        deadline,
        lower,
        n_jobs,
        random_state,
        verbose,
        progress,
    ):
        # a sparse copy for the methods that work on sparse input (R-SVD's Gram
        # matrix and the spectral bound's operator): cheap and fast for sparse data
        self.X_sparse = None
        if any(s.sparse for s in specs):
            if sp.issparse(X):
                self.X_sparse = X
            elif np.count_nonzero(X) < SPARSE_FRACTION * X.size:
                self.X_sparse = sp.csr_matrix(X)
        # sparse data stays sparse: the methods that need dense data get one dense
        # copy, made when the first of them runs and only if it fits in memory
        self.dense = _DenseCopy(X)
        self.given_sparse = sp.issparse(X)
        self.X = X
        self.specs = specs
        self.params = params
        self.tau = tau
        self.origin = deadline.start
        if deadline.limited:
            # shares are cut from a slightly earlier end: setup steps that no method
            # can interrupt (an SVD, a model build, preprocessing) overrun their shares
            deadline = Deadline(
                _start=deadline.start, _end=deadline.end - _reserve(deadline, X.shape)
            )
        self.deadline = deadline
        self.large = X.shape[0] * X.shape[1] > _LARGE_ENTRIES
        # the longest first-pass share of a lower bound (seconds; None: no cap)
        self.lower_cap = None
        if deadline.limited and X.shape[0] * X.shape[1] >= _CAPPED_LOWER_ENTRIES:
            budget = deadline.end - deadline.start
            self.lower_cap = max(_LOWER_SHARE_CAP * budget, _LOWER_CAP_MIN)
        self.data = BinaryData(X)  # counts and merged rows/columns, for every method
        self.common = dict(
            n_jobs=n_jobs, verbose=verbose, progress=progress, random_state=random_state
        )
        self.lower = lower
        self.lower_method = "trivial"
        self.best = None  # (rank, method, L, R)
        self.best_model = None  # the LogisticModel of the best certificate, if any
        self.proven = None  # (rank, method)
        if rank_zero_possible(X, tau):
            m, n = X.shape
            self.best = (0, "trivial", np.zeros((m, 0)), np.zeros((n, 0)))
        else:
            self.lower = max(lower, 1)
        self.report = []
        # the row of the method being started or run (None between methods): an
        # interrupt before the method's own handler is reached still marks it
        self.current = None
        self.results = {}  # method -> its last RankSearchResult (best: with factors)
        self.memos = {}  # method -> its state across runs (Incumbent.memo)

    def load_best(self):
        """Load the best certificate back into memory (:func:`held_on_disk`)."""
        if self.best is None:
            return
        rank, name, L, R = self.best
        self.best = (rank, name, in_memory(L), in_memory(R))
        res = self.results.get(name)
        if res is not None and res.L is not None:
            self.results[name] = replace(res, L=self.best[2], R=self.best[3])

    def outcome(self):
        return self.lower, self.lower_method, self.best, self.proven, self.report

    def met(self):
        return self.best is not None and self.best[0] <= self.lower

    def first_pass(self):
        """Every method once, cheap first, on its weighted share of what is left."""
        specs = self.specs
        for i, spec in enumerate(specs):
            row = _new_row(spec.name, spec.lower is not None)
            self.report.append(row)
            self.current = row
            if self.met():
                row.update(status="skipped", message="bounds already meet")
                continue
            if self.deadline.expired():
                row.update(
                    status="skipped", message="time budget used up", stopped_early=True
                )
                continue
            weights = sum(t.weight for t in specs[i:]) + self._held(specs[:i])
            share = spec.weight / weights if spec.weight and weights else 1.0
            cap = self.lower_cap if spec.lower is not None and spec.weight else None
            sub = self.deadline.child(cap, fraction=share)
            row["budget"] = sub.remaining()
            if (
                self.large
                and spec.weight
                and sub.limited
                and sub.remaining() < _MIN_SHARE
            ):
                row.update(
                    status="skipped",
                    message=f"too little of the budget left ({sub.remaining():.1f} s)",
                    stopped_early=True,
                )
                continue
            self._run(spec, row, sub, self.params[spec.name])

    def _held(self, ran):
        """The weight of the searches of ``ran`` that hold a share of the time left.

        A search that resumes (``start``), holds the best certificate and that its
        share stopped with a fit cut below it (its model in the memo: a polish fit)
        goes on in the second pass from that model; its weight counts in the first
        pass's shares after it, so that the last method does not take all the time
        left (APJ, 60 s, two busy processes beside it: L-PCA certified 6 and its
        share cut the fit at 5; ProjLP, last, took the 20 s left and found nothing
        below 6, where in the runs whose ProjLP ended early L-PCA's second pass
        certified 5 in 3-4 s). A search without a certificate holds nothing: on
        americas_small, 20 s, L-PCA's share cut its ascent at k = 5, and ProjLP on
        half the time left gave 19 where on all of it it gave 11.
        """
        if self.best is None:
            return 0.0
        rank, owner = self.best[0], self.best[1]
        rows = {row["method"]: row for row in self.report}
        return sum(
            t.weight
            for t in ran
            if t.weight
            and t.name == owner
            and _resumes(t)
            and rows[t.name]["status"] == "stopped"
            and any(k < rank for k in self.memos.get(t.name, {}))
        )

    def second_pass(self):
        """Hand the time left to the methods the deadline stopped.

        When methods finish under their shares (a search that found nothing below
        the known bound, a lower bound that completed), the first pass ends early.
        What is left goes, by weight, to the rank searches that the deadline
        stopped, again under the best bound; a search that takes ``start`` resumes
        where it stopped (:meth:`_resume`). Lower bounds that the deadline stopped
        run again only if their new share is larger than their first. Without any
        certificate yet (a 200,000 x 5,000 matrix: R-SVD found none, L-PCA's share
        ended at k = 9) the searches resume below the trivial rank; the call ended
        after 735 s of a 1800 s budget before.
        """
        if not self.deadline.limited or self.met():
            return
        rows = {row["method"]: row for row in self.report}
        todo = [
            s
            for s in self.specs
            if rows[s.name]["status"] == "stopped" and s.weight and s.search is not None
        ]
        todo += [
            s
            for s in self.specs
            if rows[s.name]["status"] == "stopped" and s.weight and s.lower is not None
        ]
        for i, spec in enumerate(todo):
            if self.met() or self.deadline.remaining() < _SECOND_PASS_MIN:
                return
            weights = self._second_weights(spec, todo[i:], rows)
            sub = self.deadline.child(fraction=spec.weight / weights)
            row = rows[spec.name]
            params = dict(self.params[spec.name])
            if _resumes(spec):
                params["start"] = max(params.get("start", 1), self._resume(spec, row))
            elif sub.remaining() <= (row["budget"] or 0.0):
                continue  # the same run on less time cannot do better
            first = {key: row[key] for key in ("seconds", "budget", "message")}
            first_curve = list(row["curve"])
            first_errors = dict(row.get("errors_by_k", {}))
            bound = row["bound"]
            row.update(status="ok", stopped_early=False, message="")
            row["budget"] = sub.remaining()
            try:
                self._run(spec, row, sub, params)
            finally:
                _merge_rows(row, first, first_curve, first_errors, bound, spec)

    def _second_weights(self, spec, rest, rows):
        """The weights that share the time left with ``spec`` in the second pass.

        Those of ``rest`` (``spec`` and the methods after it), except a method that
        does not resume (no ``start``: a lower bound) whose share of the time left
        now would not exceed its first budget: it runs again only on more time than
        its first run had (below), so it would hold back time it does not use (on
        Abstracts, 900 s, VC's 86 s after its first 115 s: the call ended 114 s
        early, L-PCA's polish fit cut at 3/4 of the time left).

        A capped lower bound (``lower_cap``) holds back nothing: it runs last, on
        what the searches leave.
        """
        total = sum(t.weight for t in rest)
        left = self.deadline.remaining()

        def runs_again(t):
            if t is spec or _resumes(t):
                return True
            if self.lower_cap is not None and t.lower is not None:
                return False
            return left * t.weight / total > (rows[t.name]["budget"] or 0.0)

        return sum(t.weight for t in rest if runs_again(t))

    def _resume(self, spec, row):
        """The rank where a search the deadline stopped resumes in the second pass.

        The rank of the fit the deadline cut short (kept in the search's memo), else
        the rank above the last one it tried; always below the best certificate
        (only smaller ranks can improve it), and never far above where the search
        was: on Abstracts R-SVD's certificate is 4421 while L-PCA stopped at k = 13.
        Without a certificate, below the trivial rank (``min(m, n)``, one more for
        ``tau <= 0``).
        """
        if self.best is not None:
            top = self.best[0] - 1
        else:
            top = trivial_rank(self.data.shape, self.tau) - 1
        cut = [k for k in self.memos.get(spec.name, {}) if k <= top]
        if cut:
            return max(cut)
        tried = [k for k in row.get("errors_by_k", {}) if k < top]
        return min(top, max(tried) + 1) if tried else top

    def _run(self, spec, row, sub, params):
        """Run one method on the deadline ``sub``; fill ``row``, update the bounds."""
        self.current = row
        t0 = time.monotonic()
        res = None
        use_sparse = spec.sparse and (self.given_sparse or spec.sparse_from_dense)
        X = self.X_sparse if use_sparse and self.X_sparse is not None else None
        if X is None:
            X = self.dense.get()
        if X is None:
            row.update(status="skipped", message=self.dense.message)
            return
        try:
            if spec.lower is not None:
                self._event(spec.name, "start", None, "")
                found = spec.lower(X, tau=self.tau, deadline=sub)
                bound = int(found.bound)
                row.update(
                    bound=bound,
                    stopped_early=bool(found.stopped_early),
                    message=found.message,
                )
                row["curve"] = [[round(time.monotonic() - self.origin, 4), int(bound)]]
                if bound > self.lower:
                    self.lower, self.lower_method = int(bound), spec.name
            else:
                res = self._search(spec, X, sub, params)
                self._take(spec, row, res)
        except KeyboardInterrupt as exc:
            row.update(
                status="interrupted",
                stopped_early=True,
                message="",
                seconds=time.monotonic() - t0,
            )
            # what the search certified before the stop (or its whole result, if
            # the signal came just after it returned)
            part = getattr(exc, "rank_search_result", None) or res
            if part is not None:
                row.update(curve=list(part.report.curve), message=part.report.message)
                if part.rank is not None:
                    row.update(bound=int(part.rank), certified=True)
                    if self.best is None or part.rank < self.best[0]:
                        self.best = (int(part.rank), spec.name, part.L, part.R)
                        self.best_model = part.report.model
            raise
        except (MemoryError, Exception) as exc:  # noqa: BLE001 - reported, not hidden
            row.update(status="failed", message=f"failed: {type(exc).__name__}: {exc}")
        row["seconds"] = time.monotonic() - t0
        if row["status"] == "ok" and row["stopped_early"]:
            row["status"] = "stopped"
        if spec.lower is not None:
            self._event(spec.name, "end", row["bound"], row["message"])
        self.current = None

    def _event(self, method, stage, bound, message):
        """A progress event for a lower bound (rank searches send their own)."""
        progress = self.common["progress"]
        if progress is not None:
            elapsed = time.monotonic() - self.origin
            progress(
                event(method, stage, bound=bound, elapsed=elapsed, message=message)
            )

    def _search(self, spec, X, sub, params):
        from sklearn_rrank._portfolio._registry import method_seed

        best = self.best
        return run_rank_search(
            spec.search,
            X,
            method=spec.name,
            tau=self.tau,
            deadline=sub,
            lower=self.lower,
            cap=None if best is None else best[0],
            cap_factors=None if best is None else (best[2], best[3]),
            origin=self.origin,
            progress=self.common["progress"],
            random_state=method_seed(self.common["random_state"], spec.name),
            n_jobs=self.common["n_jobs"],
            verbose=self.common["verbose"],
            params=params,
            data=self.data,
            memo=self.memos.setdefault(spec.name, {}),
        )

    def _take(self, spec, row, res):
        """Record a rank search's result in ``row`` and in the bounds."""
        report = res.report
        row["curve"] = list(report.curve)
        row["errors_by_k"] = dict(report.errors_by_k)
        row.update(stopped_early=bool(res.stopped_early), message=report.message)
        if res.rank is not None:
            row.update(bound=int(res.rank), certified=True)
            # held on disk while later methods run, if large (no copy in memory)
            L, R = held_on_disk(res.L, res.R)
            res = replace(res, L=L, R=R)
            self.best = (int(res.rank), spec.name, L, R)
            self.best_model = report.model
            # one certificate is held: the dominated ones' factors go at once
            for name, other in self.results.items():
                if name != spec.name and other.L is not None:
                    self.results[name] = replace(other, L=None, R=None)
        self.results[spec.name] = res
        if report.lower is not None and report.lower > self.lower:
            self.lower, self.lower_method = report.lower, spec.name
            if res.rank is None:  # a search that proved a lower bound
                row.update(kind="lower", bound=report.lower)
        if report.proven_rank is not None and res.rank is None:
            row.update(bound=report.proven_rank, certified=False, proof=report.proof)
            if self.proven is None or report.proven_rank < self.proven[0]:
                self.proven = (report.proven_rank, spec.name)


def _reserve(deadline, shape):
    """Seconds of a limited ``deadline`` kept back for steps that overrun."""
    total = deadline.end - deadline.start
    grows = 1.0 + 0.02 * total + _RESERVE_PER_ENTRY * shape[0] * shape[1]
    return min(_RESERVE * total, 30.0, grows)


def _merge_rows(row, first, first_curve, first_errors, bound, spec):
    """Fold a method's second run (in ``row``) into its first (the other args)."""
    row.update(
        seconds=first["seconds"] + row["seconds"],
        budget=(first["budget"] or 0.0) + (row["budget"] or 0.0),
        curve=first_curve + row["curve"],
        message=(
            first["message"]
            if row["message"] == first["message"]  # the second run said nothing new
            else f"{first['message']}; given the time left: {row['message']}"
        ),
    )
    if "errors_by_k" in row:
        row["errors_by_k"] = {**first_errors, **row["errors_by_k"]}
    if bound is not None and (
        row["bound"] is None or (spec.lower is not None and bound > row["bound"])
    ):
        row["bound"] = bound  # the first run's bound stands
        if spec.search is not None:
            row["certified"] = True


def _new_row(method, lower):
    """A report row before the method runs."""
    return {
        "method": method,
        "kind": "lower" if lower else "upper",
        "bound": None,
        "seconds": 0.0,
        "certified": None,
        "stopped_early": False,
        "message": "",
        "status": "ok",
        "budget": None,
        "curve": [],
    }


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "methods": ["array-like", str, None],
        "tau": [Interval(numbers.Real, None, None, closed="neither")],
        "time_limit": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "n_jobs": [Interval(numbers.Integral, None, None, closed="neither"), None],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "progress": [callable, None],
        "method_params": [dict, None],
    },
    prefer_skip_nested_validation=True,
)
def rounding_rank_bounds(
    X,
    *,
    methods="default",
    tau=0.5,
    time_limit=None,
    n_jobs=None,
    random_state=None,
    verbose=0,
    progress=None,
    method_params=None,
):
    """Lower and certified upper bounds on the rounding rank of a binary matrix.

    The requested methods run as a **portfolio** under one wall-clock budget:
    cheap methods first (rank-one test, spectral bound, R-SVD, VC dimension, then
    L-PCA, ProjLP, Nuclear, Permutation, Asso); every upper-bound search is told the
    best certified bound so far and only tries smaller ranks (ProjLP's descent starts
    from that certificate); the portfolio stops as soon as the upper bound meets the
    lower bound. Each report row records when each improvement happened (the
    anytime curve). An upper bound always exists: the trivial factorization of rank
    ``min(m, n)`` (plus one for ``tau <= 0``) is the fallback.

    **How the budget is shared.** ``time_limit`` is the budget of the whole call.
    When a method starts it gets the share ``w / W`` of the time still left, where
    ``w`` is its weight and ``W`` the weights of the methods not yet run (VC 1,
    R-SVD 14, L-PCA 3, ProjLP 3, Nuclear 1, Permutation 1, Asso 1; the rank-one
    test and the spectral bound take well under a second and run with the whole
    remaining budget). Time a method does not use flows to the later ones. A method
    stopped by its share reports ``stopped_early`` and contributes what it certified.
    A rank search that holds the best certificate and whose share cut a fit below
    it keeps its weight in ``W`` (the last method does not take all the time left),
    and after every method ran once, the time left goes to the methods their shares
    stopped (a search resumes where it stopped).
    The shares are cut from the budget less 10% (at most 30 s), kept back for steps
    no method can interrupt; on matrices of more than a million entries a method
    whose share is below one second is skipped. On matrices of at least ``4e7``
    entries a lower bound's first share is at most 5% of the budget (at least 10 s),
    and it runs again only on what the searches leave (the VC bound grows slowly
    with time; L-PCA's descent needs minutes per step there).
    The call returns within the budget plus the last uninterruptible step (one
    sweep, one LP, or an SVD that was estimated to fit).

    **Memory on sparse data.** Sparse ``X`` stays sparse: R-SVD, the spectral
    bound, L-PCA and ProjLP take the CSR matrix (ProjLP densifies only its merged
    rows); the other methods, and VC, get a dense copy only up to 2 GiB that fits
    in memory, else they are skipped with a message. R-SVD computes at most the
    singular triplets that fit in 1 GiB (its message says when it keeps fewer), and
    the trivial certificate of sparse data is sparse (``L`` and ``R`` CSR). A
    dense array of at least ``1e7`` entries with fewer than 10% ones (and no NaN)
    is taken as its CSR matrix when every requested method works on sparse data
    (the default methods do), so that no float64 copy of its entries is made
    (Abstracts: 503 MB).

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary data (no missing entries).
    methods : "default", str or sequence of str, default="default"
        Method names, or a comma-separated string. ``"default"``: ``("rank_one",
        "spectral", "rsvd", "vc", "lpca", "projlp")``. Lower bounds: ``"spectral"``
        (:func:`spectral_lower_bound`), ``"vc"``
        (:func:`~sklearn_rrank.vc_lower_bound`: the best of the VC dimension and
        the VC dimension with complements less one; the report's message says
        which), ``"rank_one"`` (the exact test of
        Proposition "rounding rank one": either a certified rank-1
        factorization or the lower bound 2). Upper bounds:
        ``"rsvd"``, ``"lpca"``, ``"projlp"``, ``"nuclear"``, ``"permutation"``
        (a bound proven by the sign-change lemma is reported as ``proven_upper``
        when its float64 factors do not certify), ``"asso"`` and ``"trivial"``.
    tau : float, default=0.5
        Rounding threshold.
    time_limit : float or None, default=None
        Wall-clock budget of the whole call in seconds (None: every method runs to
        its end).
    n_jobs : int or None, default=None
        Parallel jobs of the LP- and L-PCA-based methods; results do not depend on
        it. R-SVD and the spectral bound do not use it (LAPACK's own threads).
    random_state : int, RandomState instance or None, default=None
        Makes the randomized methods reproducible; each method's seed is derived
        from it and the method's name only.
    verbose : int, default=0
        Verbosity passed to the methods.
    progress : callable or None, default=None
        Called with an event dict (``method``, ``stage`` in {"start", "step",
        "improved", "end"}, ``k``, ``bound``, ``error``, ``elapsed`` seconds,
        ``message``) during the searches; the command line draws its progress line
        from these.
    method_params : dict or None, default=None
        ``{method: {parameter: value}}`` for the rank searches (e.g.
        ``{"projlp": {"projection": "sparse"}}``); unknown names raise.

    Returns
    -------
    bounds : RoundingRankBounds

    Raises
    ------
    ValueError
        If ``X`` is not binary or holds missing entries, a method name or method
        parameter is unknown, or ``time_limit`` is not positive.
    KeyboardInterrupt
        If the call is interrupted (Ctrl-C) after the methods started, the
        ``KeyboardInterrupt`` is raised again, so that scripts stop as usual, with
        the bounds reached so far attached as its attribute ``bounds``: a
        :class:`RoundingRankBounds` with ``interrupted=True``, whose certificate
        is the best one found (including what the interrupted method certified
        before the stop; the trivial one if none), whose lower bound is the best
        one completed, and whose report marks the interrupted method and those
        not started ``"interrupted"``. Catch it to keep the bounds::

            try:
                res = rounding_rank_bounds(X)
            except KeyboardInterrupt as exc:
                res = exc.bounds

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Sections 2-4.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import rounding_rank_bounds
    >>> b = rounding_rank_bounds(np.eye(5), methods=("spectral", "rank_one", "rsvd"))
    >>> b.lower, b.upper, b.upper_method
    (2, 5, 'rsvd')
    """
    from sklearn_rrank._portfolio._registry import (
        BOUND_METHODS,
        DEFAULT_METHODS,
        METHODS,
    )

    deadline = Deadline(time_limit)
    tau = check_tau(tau)
    check_n_jobs(n_jobs)
    if isinstance(methods, str) and methods == "default":
        methods = DEFAULT_METHODS
    methods = _check_methods(methods, BOUND_METHODS)
    if progress is not None:  # the checks of a large input take a while: say so
        progress(event("data", "start", message="checking the input"))
    if all(METHODS[name].sparse for name in methods):
        # large dense data with few ones is worked on sparse (no float64 copy)
        X = sparse_if_few_ones(X)
    X = check_binary_matrix(X, accept_sparse=True, method="rounding_rank_bounds")
    return _bounds_result(
        X,
        methods,
        tau=tau,
        deadline=deadline,
        n_jobs=n_jobs,
        random_state=random_state,
        verbose=verbose,
        progress=progress,
        method_params=method_params,
        time_limit=time_limit,
    )


def _bounds_result(X, methods, *, tau, deadline, time_limit=None, **kwargs):
    interrupted = None
    try:
        lower, lower_method, best, proven, report = _portfolio(
            X, methods, tau=tau, deadline=deadline, **kwargs
        )
    except KeyboardInterrupt as exc:
        if not hasattr(exc, "portfolio"):
            raise  # before any method started: nothing to report
        interrupted = exc
        lower, lower_method, best, proven, report = exc.portfolio
    if best is None:
        L, R = trivial_upper_bound(X, tau=tau)
        best = (L.shape[1], "trivial", L, R)
        report.append(
            {
                "method": "trivial",
                "kind": "upper",
                "bound": L.shape[1],
                "seconds": 0.0,
                "certified": True,
                "stopped_early": False,
                "message": "fallback: X itself as a factor",
                "status": "ok",
                "budget": None,
                "curve": [[round(deadline.elapsed(), 4), L.shape[1]]],
            }
        )
    upper, upper_method, L, R = best
    if proven is None or proven[0] >= upper:
        proven = (upper, upper_method)
    if lower > upper:  # pragma: no cover - would mean a wrong bound somewhere
        raise RuntimeError(
            f"lower bound {lower} ({lower_method}) exceeds the certified upper bound "
            f"{upper} ({upper_method}); please report this as a bug."
        )
    result = RoundingRankBounds(
        lower=lower,
        upper=upper,
        lower_method=lower_method,
        upper_method=upper_method,
        L=L,
        R=R,
        exact=lower == upper,
        tau=tau,
        report=report,
        proven_upper=proven[0],
        proven_upper_method=proven[1],
        seconds=deadline.elapsed(),
        time_limit=time_limit,
        interrupted=interrupted is not None,
    )
    if interrupted is not None:
        interrupted.bounds = result
        raise interrupted
    return result
