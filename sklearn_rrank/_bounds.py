"""Lower and upper bounds on the rounding rank, and ``rounding_rank_bounds``.

Lower bounds: the spectral bound (paper Proposition "spectral lower bound", via the
sign-rank bound it rests on), the VC-dimension bound (:mod:`sklearn_rrank._lower._vc`)
and the exact rank-one test (Proposition "rounding rank one"). Upper bounds come from
the algorithms (R-SVD, ProjLP, L-PCA, Permutation, Nuclear) and are always certified
by :func:`~sklearn_rrank.certify_rounding`. The methods run as a portfolio
(:mod:`sklearn_rrank._portfolio._run`).
"""

import numbers
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, validate_params

from sklearn_rrank._core._progress import event
from sklearn_rrank._core._results import Certificate, ProvenBound
from sklearn_rrank._core._trivial import trivial_upper_bound
from sklearn_rrank._core._validation import (
    check_binary_matrix,
    check_n_jobs,
    check_tau,
    sparse_if_few_ones,
)
from sklearn_rrank._lower._spectral import spectral_lower_bound
from sklearn_rrank._portfolio._run import _portfolio
from sklearn_rrank._search._skeleton import (
    Deadline,
)

__all__ = ["RoundingRankBounds", "rounding_rank_bounds", "spectral_lower_bound"]


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
        outcome = _portfolio(X, methods, tau=tau, deadline=deadline, **kwargs)
    except KeyboardInterrupt as exc:
        if not hasattr(exc, "portfolio"):
            raise  # before any method started: nothing to report
        interrupted = exc
        outcome = exc.portfolio
    lower, lower_method, report = outcome.lower, outcome.lower_method, outcome.report
    best, proven = outcome.best, outcome.proven
    if best is None:
        L, R = trivial_upper_bound(X, tau=tau)
        best = Certificate(L.shape[1], "trivial", L, R)
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
    upper, upper_method, L, R = best.rank, best.method, best.L, best.R
    if proven is None or proven.rank >= upper:
        proven = ProvenBound(upper, upper_method)
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
        proven_upper=proven.rank,
        proven_upper_method=proven.method,
        seconds=deadline.elapsed(),
        time_limit=time_limit,
        interrupted=interrupted is not None,
    )
    if interrupted is not None:
        interrupted.bounds = result
        raise interrupted
    return result
