"""The portfolio of ``rounding_rank_bounds``: every method once, cheap ones first.

:func:`_portfolio` runs the requested methods of the registry under one
``Deadline``: lower bounds first, then the rank searches, each starting below the best
certified bound so far and given a share of the time left; a second pass gives what
is left to the methods that can resume. Each step is recorded as a row of the result
table.
"""

from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from sklearn_rrank._core._memory import (
    _HOLD_ON_DISK_BYTES,
    dense_copy_refused,
    held_on_disk,
    in_memory,
)
from sklearn_rrank._core._progress import event
from sklearn_rrank._core._results import Certificate, PortfolioOutcome, ProvenBound
from sklearn_rrank._core._trivial import trivial_rank
from sklearn_rrank._core._validation import (
    SPARSE_FRACTION,
)
from sklearn_rrank._portfolio import _registry
from sklearn_rrank._search._policy import DEFAULT_POLICY
from sklearn_rrank._search._skeleton import (
    BinaryData,
    Deadline,
    SearchMemo,
    rank_zero_possible,
    run_rank_search,
)


@dataclass(frozen=True)
class RunSettings:
    """What the caller of a portfolio hands every method it runs.

    Attributes
    ----------
    n_jobs : int or None, default=None
        Parallel workers of each method (results do not depend on it).
    random_state : int, RandomState instance or None, default=None
        The call's seed; each method gets its own from it
        (:func:`~sklearn_rrank._portfolio._registry.method_seed`).
    verbose : int, default=0
        Verbosity of each method.
    progress : callable or None, default=None
        Called with every progress event of the methods.
    """

    n_jobs: object = None
    random_state: object = None
    verbose: int = 0
    progress: object = None


def _resumes(spec):
    """Whether a method's second run resumes where its first stopped (``start``)."""
    return spec.search is not None and "start" in spec.search_params


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


def _portfolio(
    X, methods, *, tau, deadline, lower=0, method_params=None, registry=None, **settings
):
    """Run ``methods`` cheap-first under one deadline, sharing bounds (trusts X).

    ``settings`` are the fields of :class:`RunSettings` (``n_jobs``,
    ``random_state``, ``verbose``, ``progress``); ``registry`` as in
    :func:`_run_portfolio`.

    A first pass runs every method once, each on its weighted share of what is left
    of the budget (:meth:`_Portfolio._held`: with the weight of a search whose share
    cut a fit below its certificate). If time is left and the bounds do not meet, a
    second pass hands it to the methods the deadline stopped
    (:meth:`_Portfolio.second_pass`).

    Returns a :class:`~sklearn_rrank._core._results.PortfolioOutcome`.
    """
    run = _run_portfolio(
        X,
        methods,
        tau=tau,
        deadline=deadline,
        lower=lower,
        method_params=method_params,
        settings=RunSettings(**settings),
        registry=registry,
    )
    return run.outcome()


def _run_portfolio(
    X,
    methods,
    *,
    tau,
    deadline,
    lower=0,
    method_params=None,
    settings=None,
    policy=DEFAULT_POLICY,
    registry=None,
    hold_bytes=_HOLD_ON_DISK_BYTES,
):
    """:func:`_portfolio`, returning the :class:`_Portfolio` (also each search's
    :class:`RankSearchResult` in ``results``); ``settings`` (a
    :class:`RunSettings`; None: its defaults) are handed to every method;
    ``policy`` (a :class:`~sklearn_rrank._search._policy.SearchPolicy`) gives
    the shares.

    ``registry`` maps the names of ``methods`` to their ``MethodSpec`` (None: the
    registry's ``METHODS``); a certificate of at least ``hold_bytes`` is held on
    disk while later methods run (:func:`held_on_disk`)."""

    registry = _registry.METHODS if registry is None else registry
    specs = sorted((registry[m] for m in methods), key=lambda s: s.cost)
    method_params = dict(method_params or {})
    for name in method_params:
        if name not in methods:
            raise ValueError(
                f"method_params names {name!r}, which is not among methods {methods}."
            )
    params = {
        s.name: _registry.check_method_params(s, method_params.get(s.name), "search")
        for s in specs
    }
    run = _Portfolio(
        X,
        specs,
        params,
        tau=tau,
        deadline=deadline,
        lower=lower,
        settings=RunSettings() if settings is None else settings,
        policy=policy,
    )
    run.hold_bytes = hold_bytes
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
        settings,
        policy,
    ):
        self.policy = policy
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
        # each method's share of the time left, for this input (see MethodSpec)
        self.weights = {s.name: _registry.weight_of(s, X) for s in specs}
        self.params = params
        self.tau = tau
        self.origin = deadline.start
        if deadline.limited:
            # shares are cut from a slightly earlier end: setup steps that no method
            # can interrupt (an SVD, a model build, preprocessing) overrun their shares
            budget = deadline.end - deadline.start
            held = policy.reserve(budget, X.shape[0] * X.shape[1])
            deadline = Deadline(
                clock=deadline.clock, _start=deadline.start, _end=deadline.end - held
            )
        self.deadline = deadline
        self.large = X.shape[0] * X.shape[1] > policy.portfolio_large_entries
        # the longest first-pass share of a lower bound (seconds; None: no cap)
        self.lower_cap = None
        entries = X.shape[0] * X.shape[1]
        if deadline.limited and entries >= policy.portfolio_capped_lower_entries:
            budget = deadline.end - deadline.start
            self.lower_cap = max(
                policy.portfolio_lower_share_cap * budget,
                policy.portfolio_lower_cap_min,
            )
        self.data = BinaryData(X)  # counts and merged rows/columns, for every method
        self.settings = settings  # a RunSettings
        self.lower = lower
        self.lower_method = "trivial"
        self.best = None  # a Certificate
        self.best_model = None  # the LogisticModel of the best certificate, if any
        self.proven = None  # a ProvenBound
        if rank_zero_possible(X, tau):
            m, n = X.shape
            self.best = Certificate(0, "trivial", np.zeros((m, 0)), np.zeros((n, 0)))
        else:
            self.lower = max(lower, 1)
        self.report = []
        # the row of the method being started or run (None between methods): an
        # interrupt before the method's own handler is reached still marks it
        self.current = None
        self.results = {}  # method -> its last RankSearchResult (best: with factors)
        self.memos = {}  # method -> its SearchMemo (state across its runs)
        # certificates of at least this many bytes are held on disk (_run_portfolio)
        self.hold_bytes = _HOLD_ON_DISK_BYTES

    def load_best(self):
        """Load the best certificate back into memory (:func:`held_on_disk`)."""
        if self.best is None:
            return
        best = self.best
        self.best = replace(best, L=in_memory(best.L), R=in_memory(best.R))
        name = best.method
        res = self.results.get(name)
        if res is not None and res.L is not None:
            self.results[name] = replace(res, L=self.best.L, R=self.best.R)

    def outcome(self):
        return PortfolioOutcome(
            self.lower, self.lower_method, self.best, self.proven, self.report
        )

    def met(self):
        return self.best is not None and self.best.rank <= self.lower

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
            weight = self.weights[spec.name]
            weights = sum(self.weights[t.name] for t in specs[i:])
            weights += self._held(specs[:i])
            share = weight / weights if weight and weights else 1.0
            cap = self.lower_cap if spec.lower is not None and weight else None
            sub = self.deadline.child(cap, fraction=share)
            row["budget"] = sub.remaining()
            short = sub.limited and sub.remaining() < self.policy.portfolio_min_share
            if self.large and weight and short:
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
        left from a fit that is close to a smaller certificate. A search without a
        certificate holds nothing: the methods after it need the time to find one.
        """
        if self.best is None:
            return 0.0
        rank, owner = self.best.rank, self.best.method
        rows = {row["method"]: row for row in self.report}
        return sum(
            self.weights[t.name]
            for t in ran
            if self.weights[t.name]
            and t.name == owner
            and _resumes(t)
            and rows[t.name]["status"] == "stopped"
            and any(k < rank for k in self._memo(t.name).cut)
        )

    def second_pass(self):
        """Hand the time left to the methods the deadline stopped.

        When methods finish under their shares (a search that found nothing below
        the known bound, a lower bound that completed), the first pass ends early.
        What is left goes, by weight, to the rank searches that the deadline
        stopped, again under the best bound; a search that takes ``start`` resumes
        where it stopped (:meth:`_resume`). Lower bounds that the deadline stopped
        run again only if their new share is larger than their first. Without any
        certificate yet the searches resume below the trivial rank, so that the
        budget is used.
        """
        if not self.deadline.limited or self.met():
            return
        rows = {row["method"]: row for row in self.report}
        todo = [
            s
            for s in self.specs
            if rows[s.name]["status"] == "stopped"
            and self.weights[s.name]
            and s.search is not None
        ]
        todo += [
            s
            for s in self.specs
            if rows[s.name]["status"] == "stopped"
            and self.weights[s.name]
            and s.lower is not None
        ]
        for i, spec in enumerate(todo):
            left = self.deadline.remaining()
            if self.met() or left < self.policy.portfolio_second_pass_min:
                return
            weights = self._second_weights(spec, todo[i:], rows)
            sub = self.deadline.child(fraction=self.weights[spec.name] / weights)
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
        its first run had (below), so it would hold back time it does not use and
        the call would end early.

        A capped lower bound (``lower_cap``) holds back nothing: it runs last, on
        what the searches leave.
        """
        total = sum(self.weights[t.name] for t in rest)
        left = self.deadline.remaining()

        def runs_again(t):
            if t is spec or _resumes(t):
                return True
            if self.lower_cap is not None and t.lower is not None:
                return False
            return left * self.weights[t.name] / total > (rows[t.name]["budget"] or 0.0)

        return sum(self.weights[t.name] for t in rest if runs_again(t))

    def _resume(self, spec, row):
        """The rank where a search the deadline stopped resumes in the second pass.

        One above the largest failed fit the search kept in its memo, else the
        rank of the fit the deadline cut short (kept there too), else the rank
        above the last one it tried
        (:meth:`~sklearn_rrank._search._policy.SearchPolicy.resume_rank`); always
        below the best certificate (only smaller ranks can improve it), and never
        far above where the search was: on Abstracts R-SVD's certificate is 4421
        while L-PCA stopped at k = 13. Without a certificate, below the trivial
        rank (``min(m, n)``, one more for ``tau <= 0``).
        """
        if self.best is not None:
            top = self.best.rank - 1
        else:
            top = trivial_rank(self.data.shape, self.tau) - 1
        memo = self._memo(spec.name)
        tried = row.get("errors_by_k", {})
        return self.policy.resume_rank(top, memo.failed, memo.cut, tried)

    def _memo(self, name):
        """The :class:`SearchMemo` of method ``name``, kept across its runs."""
        return self.memos.setdefault(name, SearchMemo())

    def _run(self, spec, row, sub, params):
        """Run one method on the deadline ``sub``; fill ``row``, update the bounds."""
        self.current = row
        t0 = self.deadline.now()
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
                row["curve"] = [
                    [round(self.deadline.now() - self.origin, 4), int(bound)]
                ]
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
                seconds=self.deadline.now() - t0,
            )
            # what the search certified before the stop (or its whole result, if
            # the signal came just after it returned)
            part = getattr(exc, "rank_search_result", None) or res
            if part is not None:
                row.update(curve=list(part.report.curve), message=part.report.message)
                if part.rank is not None:
                    row.update(bound=int(part.rank), certified=True)
                    if self.best is None or part.rank < self.best.rank:
                        self.best = Certificate(
                            int(part.rank), spec.name, part.L, part.R
                        )
                        self.best_model = part.report.model
            raise
        except (MemoryError, Exception) as exc:  # noqa: BLE001 - reported, not hidden
            row.update(status="failed", message=f"failed: {type(exc).__name__}: {exc}")
        row["seconds"] = self.deadline.now() - t0
        if row["status"] == "ok" and row["stopped_early"]:
            row["status"] = "stopped"
        if spec.lower is not None:
            self._event(spec.name, "end", row["bound"], row["message"])
        self.current = None

    def _event(self, method, stage, bound, message):
        """A progress event for a lower bound (rank searches send their own)."""
        progress = self.settings.progress
        if progress is not None:
            elapsed = self.deadline.now() - self.origin
            progress(
                event(method, stage, bound=bound, elapsed=elapsed, message=message)
            )

    def _search(self, spec, X, sub, params):

        best = self.best
        return run_rank_search(
            spec.search,
            X,
            method=spec.name,
            tau=self.tau,
            deadline=sub,
            lower=self.lower,
            cap=None if best is None else best.rank,
            cap_factors=None if best is None else (best.L, best.R),
            origin=self.origin,
            progress=self.settings.progress,
            random_state=_registry.method_seed(self.settings.random_state, spec.name),
            n_jobs=self.settings.n_jobs,
            verbose=self.settings.verbose,
            params=params,
            data=self.data,
            memo=self._memo(spec.name),
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
            L, R = held_on_disk(res.L, res.R, self.hold_bytes)
            res = replace(res, L=L, R=R)
            self.best = Certificate(int(res.rank), spec.name, L, R)
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
            if self.proven is None or report.proven_rank < self.proven.rank:
                self.proven = ProvenBound(report.proven_rank, spec.name)


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
