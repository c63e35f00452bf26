"""ProjLP: random projections plus separating LPs (the paper's Section 3).

The rows ``X_i`` of a binary matrix are points in ``R^n`` that the identity's columns
separate: ``X = round_tau(X I)``. ProjLP projects them to ``R^d`` with an Achlioptas
random projection ``A`` (n, d), ``L = X A``, and asks, column by column, for a
hyperplane normal ``R_j`` with ``round_tau(<L_i, R_j>) = X_ij`` (the feasibility LP),
or, for a fixed rank ``k``, for the ``R_j`` with the least sum of slacks (the L1-slack
LP). All LPs run on the engine of :mod:`sklearn_rrank._projlp._lp`.

Beyond the paper (documented where used): the fit can refine ``L`` and ``R`` by
alternating L1-slack LPs (``max_iter``), and the rank search uses nested projections,
then a refinement descent that lowers the certified bound far below the paper's
ProjLP values (paleo: 10 instead of 26; apj: 8 instead of 29, both with seed 0).

Functions
---------
:func:`projlp_fit`
    Minimum-error rank-k factorization (``RoundingRankFactorization(method="projlp")``).
:func:`projlp_transform`
    ``L`` for new rows with ``R`` fixed (per-row L1 LP).
:func:`~sklearn_rrank._projlp._search._projlp_search`
    Certified upper bound on the rounding rank (module ``_projlp_search``; the
    copied-columns phase of large inputs in ``_projlp_copied``).

References
----------
Neumann, Gemulla, Miettinen, "What You Will Gain By Rounding: Theory and Algorithms for
Rounding Rank", ICDM 2016, Section 3, paragraph "Projection-based algorithm (ProjLP)".
D. Achlioptas, "Database-friendly random projections: Johnson-Lindenstrauss with
binary coins", J. Computer and System Sciences 66(4), 2003.
"""

import time
import warnings
from collections import Counter
from numbers import Integral, Real

import numpy as np
from sklearn.exceptions import DataDimensionalityWarning
from sklearn.random_projection import SparseRandomProjection
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

from sklearn_rrank._core._lp_engine import WarmStart
from sklearn_rrank._core._parallel import Parallel
from sklearn_rrank._core._results import FactorizationResult
from sklearn_rrank._core._rounding import (
    _count_errors_factors,
)
from sklearn_rrank._core._validation import check_binary_matrix
from sklearn_rrank._projlp._lp import (
    DEFAULT_EPS,
    LP_PARAMS,
    STATUS_NAMES,
    _check_factor,
    _solve_public,
    _solve_rows_l1,
)
from sklearn_rrank._projlp._records import (  # noqa: F401 - re-exported
    LARGE_INPUT,
    LargeInput,
    ProjLPFitOptions,
)
from sklearn_rrank._search._skeleton import Deadline

__all__ = ["projlp_fit", "projlp_transform"]

_PROJECTIONS = ("sparse", "dense", "sign")
# columns of the projection drawn at a time by the nested rank search
_BLOCK = 16
# total slack per observed entry below which an L1 objective counts as zero
_ZERO_SLACK = 1e-9
# the refinement stops (converged) when its fewest errors have not improved this long
_STALL_ROUNDS = 5


# -- helpers ------------------------------------------------------------------------

#: ProjLP's parameters and their constraints, declared once for the doors
#: (:func:`projlp_fit`, :func:`projlp_transform`) and the registry
PROJLP_PARAMS = {
    "projection": [StrOptions(set(_PROJECTIONS))],
    "eps": LP_PARAMS["eps"],
    "solver": [StrOptions({"auto", "lp", "hinge"})],
}


def _projection_matrix(n_features, width, projection, nonnegative, seed):
    """Achlioptas projection ``A`` of shape (n_features, width), dense float64.

    ``"sparse"``: entries ``+-sqrt(3 / width)`` with probability 1/6 each, else 0
    (``SparseRandomProjection(density=1/3)``); ``"dense"``/``"sign"``:
    ``+-1/sqrt(width)`` with probability 1/2 each (density 1). ``nonnegative`` keeps
    ``A >= 0`` (so ``L >= 0``): ``|A|`` for ``"sparse"``, ``max(A, 0)`` for ``"dense"``
    (``|A|`` of a +-1 matrix would be constant).
    """
    density = 1.0 / 3.0 if projection == "sparse" else 1.0
    srp = SparseRandomProjection(
        n_components=width, density=density, dense_output=True, random_state=seed
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataDimensionalityWarning)
        srp.fit(np.zeros((1, n_features)))
    A = srp.components_.T
    A = A.toarray() if hasattr(A, "toarray") else np.asarray(A)
    A = np.asarray(A, dtype=np.float64)
    if not nonnegative:
        return A
    return np.abs(A) if projection == "sparse" else np.maximum(A, 0.0)


def _status_counts(codes):
    counts = Counter(STATUS_NAMES[c] for c in np.asarray(codes).ravel())
    return {name: int(counts[name]) for name in STATUS_NAMES if counts[name]}


def _projection_input(X, nonnegative, tau=0.5):
    """The points that are projected: ``X`` with missing entries (NaN) set to 0.

    Complete ``X`` with ``tau > 0`` (and not ``nonnegative``) is returned as it is:
    callers treat the points as read only.

    For ``tau <= 0`` (and not ``nonnegative``) the points are the halved sign
    matrix ``X - 1/2`` (missing entries 0, halfway): a projection of ``X`` itself
    maps an all-zero row to ``L_i = 0``, whose products ``0 >= tau`` all round to 1,
    so such a row could never be fitted.

    For ``nonnegative`` the points are ``[X, 1 - X]`` (missing entries 0 in both
    halves): with ``L = X |A|`` alone, a row contained in another row would get a
    smaller ``L_i`` componentwise, hence a smaller ``<L_i, r>`` for every ``r >= 0``,
    and a one in the smaller row above a zero in the larger row could never be
    separated. The doubled points avoid that (at full width, ``A = I`` separates).
    """
    if not nonnegative:
        centre = 0.5 if tau <= 0 else 0.0
        missing = np.isnan(X)
        if centre == 0.0 and not missing.any():
            return X  # the points are X itself (read only): no m x n copy
        return np.where(missing, 0.0, X - centre)
    X0 = np.where(np.isnan(X), 0.0, X)
    return np.hstack([X0, np.where(np.isnan(X), 0.0, 1.0 - X)])


# ----------------------------------------------------------------------------------
# minimum-error factorization
# ----------------------------------------------------------------------------------
@validate_params(
    {
        **LP_PARAMS,
        "n_components": [Interval(Integral, 1, None, closed="left")],
        **PROJLP_PARAMS,
        "max_iter": [Interval(Integral, 0, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    },
    prefer_skip_nested_validation=True,
)
def projlp_fit(
    X,
    n_components,
    *,
    tau=0.5,
    projection="sparse",
    nonnegative=False,
    eps=DEFAULT_EPS,
    max_iter=50,
    tol=1e-4,
    time_limit=None,
    random_state=None,
    n_jobs=None,
    verbose=0,
    solver="auto",
):
    """Minimum-error rounding rank-k factorization by ProjLP.

    ``L = X A`` with an Achlioptas random projection ``A`` (n_features, k); then every
    column's ``R_j`` solves the paper's L1-slack LP with ``L`` fixed (missing entries
    of ``X`` count as 0 in ``X A`` and drop their LP constraints). With
    ``max_iter=0`` this is the paper's ProjLP for the minimum-error problem.

    With ``max_iter > 0`` (our addition) the factors are then refined by alternating
    L1-slack LPs: the rows of ``L`` with ``R`` fixed, then the columns of ``R`` with
    ``L`` fixed. Both LPs minimise the same total slack ``sum_ij c_ij``, so it never
    increases; the factors with the fewest rounding errors seen are returned. The
    refinement stops when no error is left, when a round lowers the total slack by
    at most ``tol`` times its value, when the fewest rounding errors seen have not
    improved for 5 rounds (a stall: converged, no warning), or after ``max_iter``
    rounds. It lowers the
    error a lot: paleo ``k=10`` about 0.02 relative error instead of about 0.40 for
    the one-shot ProjLP (paper: 0.360), apj ``k=10`` 0 instead of about 0.34
    (paper: 0.302); see the report of issue 3 for the measurements.

    With ``solver="hinge"`` (our addition, for large input) the LPs are replaced by
    the squared hinge of the L2-SVM
    (:func:`~sklearn_rrank._core._separation.alternate_separation`): the same
    alternation
    of columns and rows from the same projection, each step a batched descent over
    all columns (or rows) at once, every column and row keeping its previous factor
    row where the new one leaves more entries uncertified (wrong, or within the
    margin of :func:`~sklearn_rrank.certify_rounding`). One LP per column and row
    costs hours on Abstracts (12841 x 4894); the descent takes minutes.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Binary data; ``NaN`` marks missing entries.
    n_components : int
        Rank ``k`` (>= 1).
    tau : float, default=0.5
        Rounding threshold.
    projection : {"sparse", "dense", "sign"}, default="sparse"
        ``"sparse"``: Achlioptas' sparse distribution ``sqrt(3) * {+1, 0, -1}`` with
        probabilities 1/6, 2/3, 1/6 (``SparseRandomProjection(density=1/3)``);
        ``"dense"`` (alias ``"sign"``): ``+-1`` with probability 1/2.
    nonnegative : bool, default=False
        If True, project the non-negative points ``[X, 1 - X]`` with a non-negative
        projection (so ``L >= 0``) and restrict ``R >= 0`` (and ``L >= 0``
        in the refinement): a non-negative factorization.
    eps : float, default=1e-6
        Separation margin of the LPs (see
        :func:`sklearn_rrank._projlp._lp.solve_columns_l1`);
        not used by ``solver="hinge"`` (its margin is the certificate's).
    max_iter : int, default=50
        Rounds of alternating refinement (0: the paper's one-shot ProjLP).
    tol : float, default=1e-4
        Relative decrease per round below which the refinement stops: of the total
        slack (LPs) or of the uncertified entries (``solver="hinge"``).
    time_limit : float or None, default=None
        Wall-clock budget in seconds for the whole fit (None: no limit). At the
        limit the LPs still running stop (their columns or rows keep the last
        iterate, or zero if never started), and the factors with the fewest
        rounding errors seen so far are returned with ``converged=False`` and
        ``info["stop_reason"] == "time_limit"``.
    random_state : int, RandomState instance or None, default=None
        Seed of the projection.
    n_jobs : int or None, default=None
        Parallel LP workers; the result does not depend on it.
    verbose : int, default=0
        Print a summary line if >= 1.
    solver : {"auto", "lp", "hinge"}, default="auto"
        ``"lp"``: the L1-slack LPs of the paper (HiGHS). ``"hinge"``: the batched
        squared-hinge descent (see above); it cannot keep factors non-negative.
        ``"auto"``: ``"hinge"`` from 4 million entries when ``nonnegative`` is
        False, else ``"lp"``.

    Returns
    -------
    result : FactorizationResult
        ``L`` (n_samples, k), ``R`` (n_features, k); ``n_iter`` is one plus the
        refinement rounds; ``converged`` is False if more than 1% of the LPs did
        not end optimal or the refinement stopped at ``max_iter`` while still
        improving. ``info`` holds ``"lp_status_counts"``,
        ``"n_lps"``, ``"lp_objective"`` (total slack of the last round),
        ``"n_errors"`` (rounding errors of the returned factors on the observed
        entries), ``"objective_history"``, ``"errors_history"``, ``"stop_reason"``
        (``"exact"``, ``"zero_slack"``, ``"tol"``, ``"stalled"``, ``"max_iter"``,
        ``"one_shot"``, ``"time_limit"``), ``"seconds"``, ``"projection"`` and
        ``"solver"`` (the one used). With ``solver="hinge"`` no LP is solved
        (``"n_lps"`` is 0), ``"objective_history"`` holds the uncertified entries
        after the first step and every round and ``"lp_objective"`` is None.

    Raises
    ------
    ValueError
        If ``X`` is not binary, a parameter is out of range, or
        ``solver="hinge"`` is asked for with ``nonnegative=True``.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 3, "Projection-based algorithm
    (ProjLP)": the L1-slack LP for the minimum-error problem; Achlioptas (2003).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import projlp_fit
    >>> X = np.array([[1, 1, 0], [1, 0, 0], [0, 0, 1], [1, 1, 1]])
    >>> res = projlp_fit(X, 2, random_state=0)
    >>> res.L.shape, res.R.shape, res.converged
    ((4, 2), (3, 2), True)
    """
    deadline = Deadline(time_limit)  # the budget counts from the door
    X = check_binary_matrix(X, allow_missing=True, accept_sparse=False, method="projlp")
    options = ProjLPFitOptions(
        tau=float(tau),
        projection=projection,
        nonnegative=nonnegative,
        eps=float(eps),
        max_iter=int(max_iter),
        tol=float(tol),
        solver=solver,
    )
    return _projlp_fit(
        X,
        int(n_components),
        options,
        deadline=deadline,
        random_state=random_state,
        n_jobs=n_jobs,
        verbose=verbose,
    )


def _projlp_fit(
    X,
    k,
    options=ProjLPFitOptions(),  # noqa: B008 - frozen, never modified
    *,
    deadline=None,
    random_state=None,
    n_jobs=None,
    verbose=0,
):
    """:func:`projlp_fit` on validated data and ``options`` (a
    :class:`ProjLPFitOptions`; ``"auto"`` resolved here).

    ``deadline`` is the call's :class:`~sklearn_rrank._search._skeleton.Deadline` or
    None.
    """
    tau, nonnegative, max_iter = options.tau, options.nonnegative, options.max_iter
    projection, eps = options.projection, options.eps
    solver = _check_solver(options.solver, nonnegative, X.size)
    rng = check_random_state(random_state)
    t0 = time.perf_counter()
    m, n = X.shape
    seed = rng.randint(np.iinfo(np.int32).max)
    P = _projection_input(X, bool(nonnegative), tau)
    A = _projection_matrix(P.shape[1], k, projection, bool(nonnegative), seed)
    L = _nonzero_columns(P, A, np.random.RandomState(seed))
    del P
    common = dict(
        n_jobs=n_jobs, max_iter=max_iter, tol=float(options.tol), deadline=deadline
    )
    if solver == "hinge":
        out = _alternate_hinge(X, L, tau=tau, **common)
    else:
        out = _alternate(X, L, options.lps(), verbose=verbose, **common)
    n_bad = sum(c for name, c in out["status_counts"].items() if name != "optimal")
    mostly_optimal = n_bad <= 0.01 * max(out["n_lps"], 1)
    converged = (
        mostly_optimal
        and out["stop"] != "time_limit"
        and (max_iter == 0 or out["stop"] != "max_iter")
    )
    stop_text = "by the time limit" if out["stop"] == "time_limit" else out["stop"]
    info = {
        "lp_status_counts": out["status_counts"],
        "n_lps": out["n_lps"],
        "lp_objective": out["objective"],
        "n_errors": out["errors"],
        "objective_history": out["objective_history"],
        "errors_history": out["errors_history"],
        "stop_reason": out["stop"],
        "message": (
            f"refinement stopped: {stop_text}; {n_bad} of {out['n_lps']} LPs "
            "did not end optimal"
            if solver == "lp"
            else f"squared-hinge refinement stopped: {stop_text}"
        ),
        "seconds": time.perf_counter() - t0,
        "projection": projection,
        "eps": eps,
        "solver": solver,
    }
    if verbose >= 1:
        print(
            f"[projlp] k={k}: {out['errors']} rounding errors after "
            f"{out['n_rounds']} refinement rounds ({out['stop']}), LP statuses "
            f"{out['status_counts']}, {info['seconds']:.2f} s"
        )
    return FactorizationResult(
        L=out["L"],
        R=out["R"],
        n_iter=1 + out["n_rounds"],
        converged=converged,
        info=info,
        message=info["message"],
        time_limited=out["stop"] == "time_limit",
    )


def _nonzero_columns(P, A, rng, n_tries=8):
    """``L = P A`` with every all-zero column of ``L`` redrawn.

    A projection column whose signs cancel on every row (e.g. a sparse column on an
    all-ones matrix) gives an all-zero column of ``L``, which no right factor can
    use. Such columns get a fresh dense column (same sign rule as the projection),
    up to ``n_tries`` times, and finally the all-ones column (row sums of ``P``).
    """
    L = np.asarray(P @ A, dtype=np.float64)
    nonnegative = bool(np.all(A >= 0))
    for _ in range(n_tries):
        dead = np.flatnonzero(~np.any(np.abs(L) > 1e-12, axis=0))
        if dead.size == 0:
            return L
        B = rng.choice([-1.0, 1.0], size=(A.shape[0], dead.size))
        if nonnegative:
            B = np.abs(B)
        L[:, dead] = P @ B
    dead = np.flatnonzero(~np.any(np.abs(L) > 1e-12, axis=0))
    L[:, dead] = (P @ np.ones(A.shape[0]))[:, None]
    return L


# whether each round's LPs start from the bases of the round before: off, as warm
# rounds were no faster and descended less on Paleo (benchmarks/lp_engine.py)
_WARM_ROUNDS = False


def _alternate(
    X,
    L,
    lp,
    *,
    n_jobs,
    max_iter,
    tol,
    deadline=None,
    verbose=0,
    on_round=None,
    parallel=None,
):
    """Alternating L1-slack LPs from ``L``: first ``R`` for ``L``, then rounds.

    ``lp`` (a :class:`~sklearn_rrank._core._lp_engine.ColumnLPs`) gives the LPs'
    threshold, margin and sign of the factors (its ``feasibility`` is not used: the
    rounds solve the L1-slack LPs).

    Each round solves the row LPs (``R`` fixed) and then the column LPs (``L``
    fixed). Both minimise the same total ``sum_ij c_ij`` of slacks, so the objective
    after each exact sweep does not increase. Stops when the objective is 0 (every
    observed entry met with margin ``eps``), when a round lowers it by at most
    ``tol`` times its value, when the fewest errors have not improved for
    ``_STALL_ROUNDS`` rounds, after ``max_iter`` rounds, or when ``deadline`` (a
    :class:`~sklearn_rrank._search._skeleton.Deadline` or None) expires. ``on_round``
    (or None) is called as ``on_round(n_rounds, L, R)`` after the first sweep
    (``n_rounds == 0``) and after every round: a round of a few thousand LPs takes
    about a second, and the rank search reports it as progress. With
    ``_WARM_ROUNDS`` every LP of a round starts from its own basis of the round
    before (:class:`~sklearn_rrank._core._lp_engine.WarmStart`). ``parallel``: an open
    ``Parallel`` to reuse (None: one for the whole call). Returns a dict with the
    factors of fewest rounding errors seen and diagnostics.
    """
    if parallel is None:  # one pool of workers for every sweep
        with Parallel(n_jobs=n_jobs, prefer="threads") as parallel:
            return _alternate(
                X,
                L,
                lp,
                n_jobs=n_jobs,
                max_iter=max_iter,
                tol=tol,
                deadline=deadline,
                verbose=verbose,
                on_round=on_round,
                parallel=parallel,
            )
    m, n = X.shape
    XT = np.ascontiguousarray(X.T)
    counts = Counter()
    tau = lp.tau
    kw = dict(tau=tau, eps=lp.eps, nonnegative=lp.nonnegative, n_jobs=n_jobs)
    # each round solves the LPs of the last one for factors that changed: with
    # _WARM_ROUNDS every LP starts from its own basis of the round before
    warm = {id(X): None, id(XT): None}
    if _WARM_ROUNDS:
        warm = {id(X): WarmStart(n), id(XT): WarmStart(m)}

    def sweep(F, Xs):
        G, status, objective, _ = _solve_public(
            F,
            Xs,
            np.arange(Xs.shape[1]),
            feasibility=False,
            deadline=deadline,
            warm=warm[id(Xs)],
            parallel=parallel,
            **kw,
        )
        counts.update(status.tolist())
        return G, float(objective.sum())

    R, value = sweep(L, X)
    n_lps = n
    errors = _count_errors_factors(X, L, R, tau)
    if on_round is not None:
        on_round(0, L, R)
    best = (errors, L, R)
    objective_history, errors_history = [value], [errors]
    stop = "max_iter" if max_iter > 0 else "one_shot"
    since_best = 0
    n_rounds = 0
    zero = _ZERO_SLACK * max(1, int(np.count_nonzero(~np.isnan(X))))
    if errors == 0 or value <= zero:
        stop = "exact" if errors == 0 else "zero_slack"
        max_iter = 0
    elif deadline is not None and deadline.expired():
        stop = "time_limit"  # the first sweep itself may be cut short
        max_iter = 0
    for _ in range(max_iter):
        if deadline is not None and deadline.expired():
            stop = "time_limit"
            break
        L, _ = sweep(R, XT)
        R, new_value = sweep(L, X)
        n_lps += m + n
        n_rounds += 1
        errors = _count_errors_factors(X, L, R, tau)
        if on_round is not None:
            on_round(n_rounds, L, R)
        objective_history.append(new_value)
        errors_history.append(errors)
        if errors < best[0]:
            best = (errors, L, R)
            since_best = 0
        else:
            since_best += 1
        if verbose >= 2:
            print(
                f"[projlp]   round {n_rounds}: objective {new_value:.6g}, "
                f"{errors} errors"
            )
        if errors == 0 or new_value <= zero:
            # zero total slack with errors left: entries within ~1e-9 of tau
            stop = "exact" if errors == 0 else "zero_slack"
            break
        if deadline is not None and deadline.expired():
            stop = "time_limit"  # this round's LPs may have been cut short
            break
        if value - new_value <= tol * value:
            stop = "tol"
            break
        if since_best >= _STALL_ROUNDS:
            stop = "stalled"
            break
        value = new_value
    return {
        "L": best[1],
        "R": best[2],
        "errors": int(best[0]),
        "objective": objective_history[-1],
        "objective_history": objective_history,
        "errors_history": errors_history,
        "n_rounds": n_rounds,
        "n_lps": n_lps,
        "status_counts": dict(counts),
        "stop": stop,
    }


def _alternate_hinge(X, L, *, tau, n_jobs, max_iter, tol, deadline):
    """:func:`_alternate` with the squared hinge in place of the LPs.

    :func:`~sklearn_rrank._core._separation.alternate_separation` from ``L`` with
    ``max_iter`` rounds; returns the dict of :func:`_alternate` (no LP solved).
    """
    from sklearn_rrank._core._separation import alternate_separation

    L, R, _, history = alternate_separation(
        L,
        X,
        tau=tau,
        n_rounds=max_iter,
        n_iter=LARGE_INPUT.separation_iter,
        tol=tol,
        deadline=deadline,
        n_jobs=n_jobs,
    )
    n_rounds = len(history) - 1
    if history[-1] == 0:
        stop = "exact"
    elif deadline is not None and deadline.expired():
        stop = "time_limit"
    elif max_iter == 0:
        stop = "one_shot"
    elif n_rounds == max_iter:
        stop = "max_iter"
    else:
        stop = "tol"
    errors = _count_errors_factors(X, L, R, tau)
    return {
        "L": L,
        "R": R,
        "errors": int(errors),
        "objective": None,
        "objective_history": history,
        "errors_history": [int(errors)],
        "n_rounds": n_rounds,
        "n_lps": 0,
        "status_counts": {},
        "stop": stop,
    }


@validate_params(
    {
        **LP_PARAMS,
        "R": ["array-like"],
        "eps": PROJLP_PARAMS["eps"],
        "solver": PROJLP_PARAMS["solver"],
    },
    prefer_skip_nested_validation=True,
)
def projlp_transform(
    X,
    R,
    *,
    tau=0.5,
    eps=DEFAULT_EPS,
    nonnegative=False,
    n_jobs=None,
    solver="auto",
):
    """Left factor for (new) rows with the right factor ``R`` fixed.

    Row ``i`` gets the ``L_i`` that minimises the L1 slacks of
    ``round_tau(<L_i, R_j>) = X_ij`` over the observed entries of the row
    (``solver="lp"``), or their squared hinge (``solver="hinge"``, our addition for
    large input: all rows at once by the batched descent of
    :func:`~sklearn_rrank._core._separation.separate_columns` on ``X^T``).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Binary data; ``NaN`` marks missing entries.
    R : array-like of shape (n_features, k)
        Fixed right factor (``components_.T`` of a fitted estimator).
    tau : float, default=0.5
        Rounding threshold.
    eps : float, default=1e-6
        Separation margin of the LPs.
    nonnegative : bool, default=False
        If True, restrict ``L >= 0``.
    n_jobs : int or None, default=None
        Parallel LP workers (threads for the descent); the result does not depend
        on it.
    solver : {"auto", "lp", "hinge"}, default="auto"
        As in :func:`projlp_fit`: ``"auto"`` is ``"hinge"`` from 4 million entries
        when ``nonnegative`` is False, else ``"lp"``; ``eps`` is used by the LPs
        only.

    Returns
    -------
    L : ndarray of shape (n_samples, k), dtype float64

    Raises
    ------
    ValueError
        If ``X`` is not binary, ``R`` does not have ``n_features`` rows, ``solver``
        is unknown, or ``solver="hinge"`` is asked for with ``nonnegative=True``.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 3 (ProjLP), the L1-slack LP
    with the roles of the factors swapped.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import projlp_transform
    >>> R = np.array([[1.0], [2.0], [3.0]])
    >>> L = projlp_transform([[0, 1, 1], [0, 0, 1]], R)
    >>> (L @ R.T >= 0.5).astype(int).tolist()
    [[0, 1, 1], [0, 0, 1]]
    """
    X = check_binary_matrix(X, allow_missing=True, accept_sparse=False, method="projlp")
    return _projlp_transform(
        X,
        R,
        tau=float(tau),
        eps=float(eps),
        nonnegative=nonnegative,
        n_jobs=n_jobs,
        solver=solver,
    )


def _projlp_transform(
    X, R, *, tau=0.5, eps=DEFAULT_EPS, nonnegative=False, n_jobs=None, solver="auto"
):
    """:func:`projlp_transform` on validated data; checks only ``R``."""
    solver = _check_solver(solver, nonnegative, X.size)
    if solver == "lp":
        L, _, _ = _solve_rows_l1(
            _check_factor(R, X.shape[1], "R", "columns"),
            X,
            tau=tau,
            eps=eps,
            nonnegative=nonnegative,
            n_jobs=n_jobs,
        )
        return L
    from sklearn_rrank._core._separation import separate_columns

    R = _check_factor(R, X.shape[1], "R", "columns")
    L, _ = separate_columns(
        R, X.T, tau=tau, n_iter=LARGE_INPUT.separation_iter, n_jobs=n_jobs
    )
    return L


def _check_solver(solver, nonnegative, n_entries):
    """The solver of :func:`projlp_fit` and :func:`projlp_transform` ("lp"/"hinge").

    ``solver`` passed its door's constraint; the pair ``("hinge", nonnegative)``,
    which no single-parameter constraint can reject, raises here.
    """
    if solver == "hinge" and nonnegative:
        raise ValueError(
            "solver='hinge' cannot keep the factors non-negative; use solver='lp' "
            "with nonnegative=True."
        )
    if solver == "auto":
        large = n_entries >= LARGE_INPUT.entries
        solver = "hinge" if large and not nonnegative else "lp"
    return solver


# ----------------------------------------------------------------------------------
# projections of the rank search
# ----------------------------------------------------------------------------------
class _Projection:
    """Columns of a nested projection, drawn in blocks on demand (deterministic)."""

    def __init__(self, X0, projection, nonnegative, rng):
        self.X0 = X0
        self.projection = projection
        self.nonnegative = nonnegative
        self.rng = rng
        self.L = np.zeros((X0.shape[0], 0))

    def left(self, d):
        while self.L.shape[1] < d:
            seed = self.rng.randint(np.iinfo(np.int32).max)
            A = _projection_matrix(
                self.X0.shape[1], _BLOCK, self.projection, self.nonnegative, seed
            )
            self.L = np.hstack([self.L, self.X0 @ A])
        return self.L[:, :d]
