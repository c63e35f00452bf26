"""Lower and upper bounds on the rounding rank, and ``rounding_rank_bounds``.

Lower bounds: the spectral bound (paper Proposition "spectral lower bound", via the
sign-rank bound it rests on), the VC-dimension bound (:mod:`sklearn_rrank._vc`) and
the exact rank-one test (Proposition "rounding rank one"). Upper bounds come from the
algorithms (R-SVD, ProjLP, L-PCA, Permutation, Nuclear) and are always certified by
:func:`~sklearn_rrank.certify_rounding`.
"""

import numbers
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, validate_params

from sklearn_rrank._memory import fits_in_memory, gib
from sklearn_rrank._ranksearch import (
    BinaryData,
    Deadline,
    rank_zero_possible,
    run_rank_search,
)
from sklearn_rrank._spectral import spectral_lower_bound
from sklearn_rrank._trivial import trivial_upper_bound
from sklearn_rrank._validation import check_binary_matrix, check_n_jobs, check_tau

__all__ = ["RoundingRankBounds", "rounding_rank_bounds", "spectral_lower_bound"]

# fraction of a budget (at most 30 s) kept back for steps that overrun their shares
_RESERVE = 0.1
# on matrices of more than this many entries, a method whose share is below
# _MIN_SHARE seconds is skipped: its setup alone would overrun the budget
_LARGE_ENTRIES = 1_000_000
_MIN_SHARE = 1.0

# data with fewer ones than this fraction goes to R-SVD and the spectral bound sparse
_SPARSE_FRACTION = 0.1


@dataclass
class RoundingRankBounds:
    """Combined lower and upper bounds on the rounding rank.

    Attributes
    ----------
    lower : int
        Best lower bound; ``lower_method`` names its method.
    upper : int
        Best certified upper bound; ``upper_method`` names its method.
    L : ndarray of shape (n_samples, upper)
    R : ndarray of shape (n_features, upper)
        The certificate of ``upper``: ``certify_rounding(X, L, R, tau=tau)`` holds.
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
            f"exact={self.exact}, tau={self.tau}, L=<array {self.L.shape}>, "
            f"R=<array {self.R.shape}>, seconds={self.seconds:.3g}, "
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
    time, if ``8 m n`` bytes fit in memory (:func:`~sklearn_rrank._memory.
    fits_in_memory`); otherwise it returns None and :attr:`message` says why, so
    that the portfolio skips the method that needs it.
    """

    def __init__(self, X):
        self.X, self.dense, self.message = X, None, ""

    def get(self):
        if not sp.issparse(self.X):
            return self.X
        if self.dense is None and not self.message:
            m, n = self.X.shape
            if fits_in_memory(8 * m * n):
                self.dense = self.X.toarray()
            else:
                self.message = (
                    f"needs the dense matrix ({gib(8 * m * n)}), which does not fit "
                    "in the memory available"
                )
        return self.dense


def _portfolio(
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
    """Run ``methods`` cheap-first under one deadline, sharing bounds (trusts X).

    Returns ``(lower, lower_method, best, proven, report)`` where ``best`` is
    ``(rank, method, L, R)`` of the best certificate or None.
    """
    from sklearn_rrank._methods import METHODS, check_method_params, method_seed

    specs = sorted((METHODS[m] for m in methods), key=lambda s: s.cost)
    # a sparse copy for the methods that work on sparse input (R-SVD's Gram matrix
    # and the spectral bound's operator): cheap and fast for sparse data
    X_sparse = None
    if any(s.sparse for s in specs):
        if sp.issparse(X):
            X_sparse = X
        elif np.count_nonzero(X) < _SPARSE_FRACTION * X.size:
            X_sparse = sp.csr_matrix(X)
    # sparse data stays sparse: the methods that need dense data get one dense copy,
    # made when the first of them runs and only if it fits in memory
    dense = _DenseCopy(X)
    given_sparse = sp.issparse(X)
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
    origin = deadline.start
    if deadline.limited:
        # shares are cut from a slightly earlier end: setup steps that no method
        # can interrupt (an SVD, a model build, preprocessing) overrun their shares
        total = deadline.end - deadline.start
        deadline = Deadline(
            _start=deadline.start, _end=deadline.end - min(_RESERVE * total, 30.0)
        )
    large = X.shape[0] * X.shape[1] > _LARGE_ENTRIES
    data = BinaryData(X)  # counts and merged rows/columns, once for every method
    lower_method = "trivial"
    best = None  # (rank, method, L, R)
    proven = None  # (rank, method)
    if rank_zero_possible(X, tau):
        m, n = X.shape
        best = (0, "trivial", np.zeros((m, 0)), np.zeros((n, 0)))
    else:
        lower = max(lower, 1)
    report = []
    try:
        for i, spec in enumerate(specs):
            row = _new_row(spec.name, spec.lower is not None)
            report.append(row)
            if best is not None and best[0] <= lower:
                row.update(status="skipped", message="bounds already meet")
                continue
            if deadline.expired():
                row.update(
                    status="skipped", message="time budget used up", stopped_early=True
                )
                continue
            weights = sum(t.weight for t in specs[i:])
            share = spec.weight / weights if spec.weight and weights else 1.0
            sub = deadline.child(fraction=share)
            row["budget"] = sub.remaining()
            if large and spec.weight and sub.limited and sub.remaining() < _MIN_SHARE:
                row.update(
                    status="skipped",
                    message=f"too little of the budget left ({sub.remaining():.1f} s)",
                    stopped_early=True,
                )
                continue
            t0 = time.monotonic()
            res = None
            use_sparse = spec.sparse and (given_sparse or spec.sparse_from_dense)
            Xm = X_sparse if use_sparse and X_sparse is not None else dense.get()
            if Xm is None:
                row.update(status="skipped", message=dense.message)
                continue
            try:
                if spec.lower is not None:
                    bound, info = spec.lower(Xm, tau=tau, deadline=sub)
                    row.update(bound=int(bound), **_row_info(info))
                    row["curve"] = [[round(time.monotonic() - origin, 4), int(bound)]]
                    if bound > lower:
                        lower, lower_method = int(bound), spec.name
                else:
                    res = run_rank_search(
                        spec.search,
                        Xm,
                        method=spec.name,
                        tau=tau,
                        deadline=sub,
                        lower=lower,
                        cap=None if best is None else best[0],
                        cap_factors=None if best is None else (best[2], best[3]),
                        origin=origin,
                        progress=progress,
                        random_state=method_seed(random_state, spec.name),
                        n_jobs=n_jobs,
                        verbose=verbose,
                        params=params[spec.name],
                        data=data,
                    )
                    info = res.info
                    row["curve"] = info.get("curve", [])
                    row["errors_by_k"] = {
                        int(k): int(v) for k, v in info.get("errors_by_k", {}).items()
                    }
                    row.update(
                        stopped_early=bool(res.stopped_early),
                        message=str(info.get("message", "")),
                    )
                    if res.rank is not None:
                        row.update(bound=int(res.rank), certified=True)
                        best = (int(res.rank), spec.name, res.L, res.R)
                    if info.get("lower") is not None and info["lower"] > lower:
                        lower, lower_method = int(info["lower"]), spec.name
                        if res.rank is None:  # a search that proved a lower bound
                            row.update(kind="lower", bound=int(info["lower"]))
                    if info.get("proven_rank") is not None and res.rank is None:
                        row.update(
                            bound=int(info["proven_rank"]),
                            certified=False,
                            proof=info.get("proof"),
                        )
                        if proven is None or info["proven_rank"] < proven[0]:
                            proven = (int(info["proven_rank"]), spec.name)
            except KeyboardInterrupt as exc:
                row.update(
                    status="interrupted",
                    stopped_early=True,
                    message="",
                    seconds=time.monotonic() - t0,
                )
                # what the search certified before the stop (or its whole result,
                # if the signal came just after it returned)
                part = getattr(exc, "rank_search_result", None) or res
                if part is not None:
                    row.update(
                        curve=part.info.get("curve", []),
                        message=part.info.get("message", ""),
                    )
                    if part.rank is not None:
                        row.update(bound=int(part.rank), certified=True)
                        if best is None or part.rank < best[0]:
                            best = (int(part.rank), spec.name, part.L, part.R)
                raise
            except (MemoryError, Exception) as exc:  # noqa: BLE001 - reported, not hidden
                row.update(
                    status="failed", message=f"failed: {type(exc).__name__}: {exc}"
                )
            row["seconds"] = time.monotonic() - t0
            if row["status"] == "ok" and row["stopped_early"]:
                row["status"] = "stopped"
            if progress is not None and spec.lower is not None:
                progress(
                    {
                        "method": spec.name,
                        "stage": "end",
                        "k": None,
                        "bound": row["bound"],
                        "error": None,
                        "elapsed": time.monotonic() - origin,
                        "message": row["message"],
                    }
                )
    except KeyboardInterrupt as exc:
        # the methods that did not start say so; the caller finds the bounds
        # reached so far on the exception
        for spec in specs[len(report) :]:
            report.append(
                _new_row(spec.name, spec.lower is not None)
                | {
                    "status": "interrupted",
                    "stopped_early": True,
                    "message": "not run",
                }
            )
        exc.portfolio = (lower, lower_method, best, proven, report)
        raise
    return lower, lower_method, best, proven, report


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


def _row_info(info):
    return {
        "stopped_early": bool(info.get("stopped_early", False)),
        "message": str(info.get("message", "")),
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
    The shares are cut from the budget less 10% (at most 30 s), kept back for steps
    no method can interrupt; on matrices of more than a million entries a method
    whose share is below one second is skipped.
    The call returns within the budget plus the last uninterruptible step (one
    sweep, one LP, or an SVD that was estimated to fit).

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
    from sklearn_rrank._methods import BOUND_METHODS, DEFAULT_METHODS

    deadline = Deadline(time_limit)
    tau = check_tau(tau)
    check_n_jobs(n_jobs)
    if isinstance(methods, str) and methods == "default":
        methods = DEFAULT_METHODS
    methods = _check_methods(methods, BOUND_METHODS)
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
