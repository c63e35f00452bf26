"""ProjLP: random projections plus separating LPs (the paper's Section 3).

The rows ``X_i`` of a binary matrix are points in ``R^n`` that the identity's columns
separate: ``X = round_tau(X I)``. ProjLP projects them to ``R^d`` with an Achlioptas
random projection ``A`` (n, d), ``L = X A``, and asks, column by column, for a
hyperplane normal ``R_j`` with ``round_tau(<L_i, R_j>) = X_ij`` (the feasibility LP),
or, for a fixed rank ``k``, for the ``R_j`` with the least sum of slacks (the L1-slack
LP). All LPs run on the engine of :mod:`sklearn_rrank._lp`.

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
:func:`projlp_rank_upper_bound`
    Certified upper bound on the rounding rank: the paper's loop ``d = 1, 2, ...``,
    or (default) nested projections.

References
----------
Neumann, Gemulla, Miettinen, "What You Will Gain By Rounding: Theory and Algorithms for
Rounding Rank", ICDM 2016, Section 3, paragraph "Projection-based algorithm (ProjLP)".
D. Achlioptas, "Database-friendly random projections: Johnson-Lindenstrauss with
binary coins", J. Computer and System Sciences 66(4), 2003.
"""

import numbers
import time
import warnings
from collections import Counter
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from joblib import effective_n_jobs
from sklearn.exceptions import DataDimensionalityWarning
from sklearn.random_projection import SparseRandomProjection
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params
from sklearn.utils.parallel import Parallel, delayed

from sklearn_rrank._base import FactorizationResult
from sklearn_rrank._lp import (
    _NOT_SOLVED,
    DEFAULT_EPS,
    STATUS_NAMES,
    _check_eps,
    _check_factor,
    _solve,
    _solve_public,
    _solve_rows_l1,
)
from sklearn_rrank._ranksearch import Deadline, run_rank_search
from sklearn_rrank._rounding import (
    _count_errors_factors,
    _uncertified_counts,
)
from sklearn_rrank._trivial import trivial_upper_bound
from sklearn_rrank._validation import check_binary_matrix, check_tau

__all__ = ["projlp_fit", "projlp_rank_upper_bound", "projlp_transform"]

_PROJECTIONS = ("sparse", "dense", "sign")
# columns of the projection drawn at a time by the nested rank search
_BLOCK = 16
# relative objective decrease per round below which a refinement try gives up
_REFINE_TOL = 1e-2
# total slack per observed entry below which an L1 objective counts as zero
_ZERO_SLACK = 1e-9
# the refinement stops (converged) when its fewest errors have not improved this long
_STALL_ROUNDS = 5
# phase 0 (batched separation with copied columns) runs on merged matrices with at
# least this many entries, where the LP phases cannot reach a certificate in time
_SEPARATION_ENTRIES = 4_000_000
# descent steps of the batched separation per width tried in phase 0
_SEPARATION_ITER = 60
# rounds of alternating separation (rows, then columns) per width tried in phase 0,
# and the relative decrease of the uncertified entries below which they stop
# (Abstracts from a random projection, one round: width 400 exact in 122 s, 250 in
# 120 s, where the columns step alone left 1187 and 4504 columns unseparated; from
# the truncated SVD, width 200 after 6 rounds: 4753/4894 columns separated, 370 s)
_ALTERNATIONS = 8
_ALTERNATION_TOL = 0.05
# bisection steps of the width after phase 0's pattern search
_BISECTIONS = 3
# Newton steps per copied column in phase 0
_NEWTON_ITER = 60
# phase 0 descends to this fraction of a width at which every column is separated
# (without alternation, 0.9 on Abstracts stalled: 454 at 964 s, then width 409 left
# columns that neither Newton nor the LPs separated in the remaining 38 minutes)
_DESCENT = 0.97
# phase 0 offers a repaired certificate at most this often (seconds): each offer
# multiplies factors of width d + |F| over all m x n entries
_OFFER_EVERY = 60.0
# projections tested concurrently in phase 3 of the rank search
_PHASE3_BATCH = 4


# ----------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------
def _check_projection(projection):
    if projection not in _PROJECTIONS:
        raise ValueError(
            f"projection must be one of {_PROJECTIONS}, got {projection!r}."
        )
    return projection


def _check_positive_int(value, name, allow_none=False):
    if value is None and allow_none:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Integral)
        or int(value) < 1
    ):
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    return int(value)


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
    (:func:`~sklearn_rrank._separation.alternate_separation`): the same alternation
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
        Separation margin of the LPs (see :func:`sklearn_rrank._lp.solve_columns_l1`);
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
    >>> from sklearn_rrank._projlp import projlp_fit
    >>> X = np.array([[1, 1, 0], [1, 0, 0], [0, 0, 1], [1, 1, 1]])
    >>> res = projlp_fit(X, 2, random_state=0)
    >>> res.L.shape, res.R.shape, res.converged
    ((4, 2), (3, 2), True)
    """
    tau = check_tau(tau)
    eps = _check_eps(eps)
    k = _check_positive_int(n_components, "n_components")
    projection = _check_projection(projection)
    X = check_binary_matrix(X, allow_missing=True, accept_sparse=False, method="projlp")
    max_iter = _check_nonnegative_int(max_iter, "max_iter")
    if not (isinstance(tol, numbers.Real) and not isinstance(tol, bool) and tol >= 0):
        raise ValueError(f"tol must be a number >= 0, got {tol!r}.")
    if time_limit is not None and not (
        isinstance(time_limit, numbers.Real)
        and not isinstance(time_limit, bool)
        and time_limit >= 0
    ):
        raise ValueError(
            f"time_limit must be None or a number >= 0, got {time_limit!r}."
        )
    return _projlp_fit(
        X,
        k,
        tau=tau,
        projection=projection,
        nonnegative=nonnegative,
        eps=eps,
        max_iter=max_iter,
        tol=tol,
        time_limit=time_limit,
        random_state=random_state,
        n_jobs=n_jobs,
        verbose=verbose,
        solver=solver,
    )


def _projlp_fit(
    X,
    k,
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
    """:func:`projlp_fit` on validated data and parameters (``"auto"`` resolved)."""
    solver = _check_solver(solver, nonnegative, X.size)
    deadline = None if time_limit is None else Deadline(float(time_limit))
    rng = check_random_state(random_state)
    t0 = time.perf_counter()
    m, n = X.shape
    seed = rng.randint(np.iinfo(np.int32).max)
    P = _projection_input(X, bool(nonnegative), tau)
    A = _projection_matrix(P.shape[1], k, projection, bool(nonnegative), seed)
    L = _nonzero_columns(P, A, np.random.RandomState(seed))
    del P
    common = dict(
        tau=tau, n_jobs=n_jobs, max_iter=max_iter, tol=float(tol), deadline=deadline
    )
    if solver == "hinge":
        out = _alternate_hinge(X, L, **common)
    else:
        nonnegative = bool(nonnegative)
        out = _alternate(
            X, L, eps=eps, nonnegative=nonnegative, verbose=verbose, **common
        )
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


def _check_nonnegative_int(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"{name} must be an integer >= 0, got {value!r}.")
    return int(value)


def _alternate(
    X,
    L,
    *,
    tau,
    eps,
    nonnegative,
    n_jobs,
    max_iter,
    tol,
    deadline=None,
    verbose=0,
):
    """Alternating L1-slack LPs from ``L``: first ``R`` for ``L``, then rounds.

    Each round solves the row LPs (``R`` fixed) and then the column LPs (``L``
    fixed). Both minimise the same total ``sum_ij c_ij`` of slacks, so the objective
    after each exact sweep does not increase. Stops when the objective is 0 (every
    observed entry met with margin ``eps``), when a round lowers it by at most
    ``tol`` times its value, when the fewest errors have not improved for
    ``_STALL_ROUNDS`` rounds, after ``max_iter`` rounds, or when ``deadline`` (a
    :class:`~sklearn_rrank._ranksearch.Deadline` or None) expires. Returns a dict
    with the factors of fewest rounding errors seen and diagnostics.
    """
    m, n = X.shape
    XT = np.ascontiguousarray(X.T)
    counts = Counter()
    kw = dict(tau=tau, eps=eps, nonnegative=nonnegative, n_jobs=n_jobs)

    def remaining():
        return None if deadline is None else deadline.remaining()

    def sweep(F, Xs):
        G, status, objective, _ = _solve_public(
            F,
            Xs,
            np.arange(Xs.shape[1]),
            feasibility=False,
            time_limit=remaining(),
            **kw,
        )
        counts.update(status.tolist())
        return G, float(objective.sum())

    R, value = sweep(L, X)
    n_lps = n
    errors = _count_errors_factors(X, L, R, tau)
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

    :func:`~sklearn_rrank._separation.alternate_separation` from ``L`` with
    ``max_iter`` rounds; returns the dict of :func:`_alternate` (no LP solved).
    """
    from sklearn_rrank._separation import alternate_separation

    L, R, _, history = alternate_separation(
        L,
        X,
        tau=tau,
        n_rounds=max_iter,
        n_iter=_SEPARATION_ITER,
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
    :func:`~sklearn_rrank._separation.separate_columns` on ``X^T``).

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
    >>> from sklearn_rrank._projlp import projlp_transform
    >>> R = np.array([[1.0], [2.0], [3.0]])
    >>> L = projlp_transform([[0, 1, 1], [0, 0, 1]], R)
    >>> (L @ R.T >= 0.5).astype(int).tolist()
    [[0, 1, 1], [0, 0, 1]]
    """
    X = check_binary_matrix(X, allow_missing=True, accept_sparse=False, method="projlp")
    return _projlp_transform(
        X,
        R,
        tau=check_tau(tau),
        eps=eps,
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
    from sklearn_rrank._separation import separate_columns

    R = _check_factor(R, X.shape[1], "R", "columns")
    L, _ = separate_columns(R, X.T, tau=tau, n_iter=_SEPARATION_ITER, n_jobs=n_jobs)
    return L


def _check_solver(solver, nonnegative, n_entries):
    """The solver of :func:`projlp_fit` and :func:`projlp_transform` ("lp"/"hinge")."""
    if solver not in ("auto", "lp", "hinge"):
        raise ValueError(f"solver must be 'auto', 'lp' or 'hinge', got {solver!r}.")
    if solver == "hinge" and nonnegative:
        raise ValueError(
            "solver='hinge' cannot keep the factors non-negative; use solver='lp' "
            "with nonnegative=True."
        )
    if solver == "auto":
        large = n_entries >= _SEPARATION_ENTRIES
        solver = "hinge" if large and not nonnegative else "lp"
    return solver


# ----------------------------------------------------------------------------------
# rank search
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


@validate_params(
    {
        "X": ["array-like"],
        "tau": [Real],
        "nested": ["boolean"],
        "max_rank": [Interval(Integral, 1, None, closed="left"), None],
        "time_limit": [Interval(Real, 0, None, closed="left"), None],
        "random_state": ["random_state"],
        "n_jobs": [Integral, None],
        "verbose": ["verbose"],
        "nonnegative": ["boolean"],
        "projection": [StrOptions(set(_PROJECTIONS))],
        "eps": [Interval(Real, 0, None, closed="left")],
        "refine": ["boolean"],
        "refine_iter": [Interval(Integral, 0, None, closed="left")],
        "n_retries": [Interval(Integral, 0, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def projlp_rank_upper_bound(
    X,
    *,
    tau=0.5,
    nested=True,
    max_rank=None,
    time_limit=None,
    random_state=None,
    n_jobs=None,
    verbose=0,
    nonnegative=False,
    projection="dense",
    eps=DEFAULT_EPS,
    refine=True,
    refine_iter=20,
    n_retries=0,
):
    """Certified upper bound on the rounding rank by ProjLP.

    The search runs inside the rank-search skeleton
    (:func:`sklearn_rrank._ranksearch.run_rank_search`): the skeleton checks the
    rank-0 case, owns the deadline, and certifies every candidate ``(L, R)`` once,
    with the kernel of :func:`~sklearn_rrank.certify_rounding`, keeping the best.
    Identical rows and columns of ``X`` are merged first (each distinct column is one
    LP; repeated rows become LP weights).

    **Phase 0** (large input, our addition). When the merged matrix has at least
    ``4e6`` entries (and ``nonnegative=False``), one LP per column and width is too
    slow (Abstracts, 12841 x 4894: about 3-12 s per column at ``d = 400``), so phases
    1-3 are replaced by: for a few widths ``d`` (a pattern search from ``min(m',
    n') / 12``), the factors start from the truncated SVD ``(U_d S_d, V_d)`` of ``X``
    and :func:`~sklearn_rrank._separation.alternate_separation` refines them: rounds
    of batched squared-hinge descent over all columns (``L`` fixed), then all rows
    (``R`` fixed), every row and column certified in float64 and never made worse
    (ProjLP's alternating refinement with the L2-SVM in place of the LPs). The ``F``
    columns left unseparated are copied into ``L`` (a column ``X_j`` of ``L``
    reproduces column ``j`` exactly): a certificate of width ``d + |F|``, by the
    subadditivity of the rounding rank over a split of the columns. At the best
    width the copied columns then get the finite Newton method of the L2-SVM and
    then the exact feasibility LP, fewest ones first; every column separated lowers
    the bound by one. When no column is left, the search descends to 97% of the
    width, starting from the truncation of the factors just found, until the
    deadline. For ``tau <= 0`` phase 0 keeps ``L = [1, X A_{d-1}]`` (a column of ones
    as the offset) and separates the columns only, without alternation.
    Measured on Abstracts: see the user guide, section "Large matrices".

    **Phase 1** (the paper's loop). For ``d = 1, 2, ...`` set ``L = X A_d`` and solve
    the feasibility LP of the columns until one is infeasible (then go to ``d + 1``) or
    all are feasible: then ``round_tau(L R^T) = X`` and ``rrank_tau(X) <= d``.

    * ``nested=False`` is the paper's loop as written: a fresh projection ``A_d``
      (n, d) for every ``d``, and every column is solved again at every ``d``.
    * ``nested=True`` (default) draws one projection and uses its first ``d``
      columns, ``A_d = A[:, :d]``. A column feasible at ``d`` stays feasible at
      ``d + 1`` (pad ``r`` with a zero), so it is never solved again, and phase 1 ends
      at exactly ``max_j d_j``, the largest per-column least feasible width of this
      projection.

    Each ``d`` starts with the column that failed last; columns are attempted in
    blocks of 8, 16, 32, ... (independent of ``n_jobs``). Phase 1 only tries widths
    below the best bound known (when the search runs in a portfolio, another method
    may already have certified a smaller one). If it ends without any certificate
    (a random projection can be degenerate on a tiny matrix), the trivial
    certificate of width ``min(m', n')`` (one more for ``tau <= 0``) of the merged
    ``m' x n'`` matrix is offered instead, if it is at most ``max_rank``.

    **Phase 2** (refinement descent; our addition, ``refine=True``). From the best
    certificate ``(L, R)`` known, of width ``b`` (its own, or another method's in a
    portfolio), start at width ``w < b`` with the left factor of the best rank-``w``
    approximation of ``L R^T`` and alternate the L1-slack LPs of the columns (``L``
    fixed) and of the rows (``R`` fixed). Both minimise the same total slack, which
    therefore never increases. A try succeeds when no rounding error is left; the
    columns are then re-solved with the separation margin and the factors
    certified. A try fails after ``refine_iter`` rounds, when a round lowers the
    total slack by less than 1 %, or when the fewest errors stall. Widths are tried
    galloping: ``w = b - 1, b - 2, b - 4, ...`` while tries succeed; after a failure
    the step is halved, and a failure at ``w = b - 1`` ends phase 2. This goes well
    beyond the paper's ProjLP: on paleo and apj it certified far smaller bounds (see
    the measurements below).

    **Phase 3** (random retries; our addition, ``n_retries > 0``). Draw fresh
    projections of width ``b - 1`` and test all columns, those that failed most often
    first, abandoning a projection at its first infeasible column (blocks of 1, 2,
    4, ...; four projections at a time, independent of ``n_jobs``). A passing
    projection lowers the bound by one. Stops after ``n_retries`` consecutive failing
    projections. Useful with ``refine=False`` for a projection-only search.

    Phase 1 measured on paleo (seeds 0-9) and apj (seeds 0-2), 2 jobs, noisy shared
    machine, mean bound / mean LPs / mean seconds:

    =====  =================  =================  =================  =================
    data   nested, dense      nested, sparse     paper, dense       paper, sparse
    =====  =================  =================  =================  =================
    paleo  28.7 / 303 / 0.4   31.2 / 313 / 0.4   29.8 / 522 / 0.6   29.1 / 488 / 0.5
    apj    26.3 / 721 / 1.4   31.0 / 727 / 1.4   24.0 / 1055 / 2.3  30.3 / 2331 / 4.1
    =====  =================  =================  =================  =================

    The nested loop needs fewer LPs and less time for bounds of the same quality, and
    the +-1 (``"dense"``) projection gives smaller bounds than the sparse one: hence
    the defaults ``nested=True, projection="dense"``. Phase 2 then lowers the bound
    much further (seed 0, 2 jobs, shared machine: paleo 10 in 9-14 s, apj 8 in about
    40 s; the report of issue 3 had apj 7).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Binary data; ``NaN`` marks missing entries (their constraints are dropped and
        they count as 0 in ``X A``).
    tau : float, default=0.5
        Rounding threshold.
    nested : bool, default=True
        Nested projections or the paper's fresh projection per ``d`` (phase 1).
    max_rank : int or None, default=None
        Largest ``d`` tried in phase 1 (and largest width of the trivial fallback);
        default ``min(n_samples, n_features) + 1``.
    time_limit : float or None, default=None
        Wall-clock limit in seconds for the whole call, also handed to HiGHS. When it
        expires the best certified result so far is returned (``rank=None`` if there
        is none) with ``stopped_early=True``.
    random_state : int, RandomState instance or None, default=None
        Seed of the projections.
    n_jobs : int or None, default=None
        Parallel LP workers; the result does not depend on it.
    verbose : int, default=0
        1: summary line; 2: one line per ``d`` and per improvement.
    nonnegative : bool, default=False
        Non-negative projection and ``R >= 0``: a bound on the non-negative rounding
        rank.
    projection : {"dense", "sign", "sparse"}, default="dense"
        Distribution of the projection (see :func:`projlp_fit`).
    eps : float, default=1e-6
        Separation margin of the feasibility LPs.
    refine : bool, default=True
        Run phase 2 (refinement descent by alternating L1 LPs).
    refine_iter : int, default=20
        Largest number of alternating rounds per width in phase 2.
    n_retries : int, default=0
        Phase 3 stops after this many consecutive failing projections (0: no phase 3).

    Returns
    -------
    result : RankSearchResult
        ``rank``, certified ``L`` (n_samples, rank) and ``R`` (n_features, rank);
        ``stopped_early`` is True if the time limit ended the search or phase 1
        found no certificate up to ``max_rank``. ``info`` holds ``"n_lps"`` (LPs
        run), ``"n_infeasible_lps"``, ``"d_tried"`` (phase 1), ``"phase1_rank"``,
        ``"phase1_seconds"``, ``"fallback"`` (True if the trivial certificate was
        offered), ``"refine_tried"`` (widths tried in phase 2),
        ``"phase2_seconds"``, ``"n_projections"`` (phase 3), ``"improvements"``
        (list of ``(rank, seconds)``), ``"lp_status_counts"``, ``"nested"``,
        ``"projection"``, ``"eps"``, and from the skeleton ``"message"``,
        ``"curve"``, ``"errors_by_k"`` (wrong entries of the candidate tried at each
        width) and ``"seconds"``.

    Raises
    ------
    ValueError
        If ``X`` is not binary or a parameter is out of range.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 3, "Projection-based algorithm
    (ProjLP)", and Table 2 (ProjLP bounds: paleo 26, apj 29).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank._projlp import projlp_rank_upper_bound
    >>> res = projlp_rank_upper_bound(np.eye(6), random_state=0)
    >>> res.certified, res.rank <= 3
    (True, True)
    """
    tau = check_tau(tau)
    X = check_binary_matrix(X, allow_missing=True, accept_sparse=False, method="projlp")
    return run_rank_search(
        _projlp_search,
        X,
        method="projlp",
        tau=tau,
        deadline=time_limit,
        random_state=random_state,
        n_jobs=n_jobs,
        verbose=verbose,
        params={
            "nested": bool(nested),
            "max_rank": max_rank,
            "nonnegative": bool(nonnegative),
            "projection": projection,
            "eps": float(eps),
            "refine": bool(refine),
            "refine_iter": int(refine_iter),
            "n_retries": int(n_retries),
        },
    )


def _projlp_search(
    X,
    incumbent,
    deadline,
    *,
    tau,
    random_state=None,
    n_jobs=None,
    verbose=0,
    nested=True,
    projection="dense",
    eps=DEFAULT_EPS,
    refine=True,
    refine_iter=20,
    n_retries=0,
    nonnegative=False,
    max_rank=None,
):
    """ProjLP family of the rank-search skeleton (see :func:`projlp_rank_upper_bound`).

    Trusts its input (``X`` a validated float64 array, NaN = missing; parameters
    checked). Every candidate goes through ``incumbent.offer`` (the one
    certification); phase 1 tries only widths ``max(1, lower) <= d < bound``, phase 2
    descends from ``incumbent.best_factors()``, which may be another method's
    certificate, and everything stops once ``incumbent.done``. ``deadline`` is
    checked between steps and its ``remaining()`` is the LPs' time limit. Returns the
    diagnostics dict (``"message"``; ``"stopped_early"`` if phase 1 found no
    certificate up to ``max_rank`` or the deadline ended it).
    """
    m, n = X.shape
    if max_rank is None:
        max_rank = min(m, n) + 1
    refine = bool(refine)
    nonnegative = bool(nonnegative)
    refine_iter = int(refine_iter)
    n_retries = int(n_retries)
    rng = check_random_state(random_state)
    t_start = deadline.elapsed()
    info = {
        "nested": bool(nested),
        "projection": projection,
        "eps": eps,
        "n_lps": 0,
        "n_infeasible_lps": 0,
        "d_tried": [],
        "phase1_rank": None,
        "phase1_seconds": None,
        "fallback": False,
        "n_projections": 0,
        "refine_tried": [],
        "phase2_seconds": None,
        "phase0_width": None,
        "phase0_copied": None,
        "phase0_skipped": None,
        "phase0_tried": [],
        "phase0_alternation": [],
        "n_newton": 0,
        "improvements": [],
        "lp_status_counts": {},
    }
    status_counts = Counter()

    def elapsed():
        return deadline.elapsed() - t_start

    def finish(stopped, message):
        info["lp_status_counts"] = dict(status_counts)
        if info["phase0_skipped"]:
            message += f" (phase 0 stopped: {info['phase0_skipped']})"
        info["message"] = message
        info["stopped_early"] = bool(stopped)
        if verbose >= 1:
            print(
                f"[projlp] rank bound {incumbent.rank} ({message}), {info['n_lps']} "
                f"LPs, {elapsed():.2f} s"
            )
        return info

    # merge identical columns (one LP each) and identical rows (LP weights)
    # (computed once per call in the data object; identical rows of X are identical
    # rows of X[:, col_rep], which holds a copy of every distinct column)
    col_rep, col_owner = incumbent.data.unique_columns
    row_rep, weights, row_owner = incumbent.data.unique_rows
    # X itself where no row (column) is merged: copies only of what merging shrinks
    Xr = X if row_rep.size == X.shape[0] else X[row_rep]
    Xu = Xr if col_rep.size == X.shape[1] else Xr[:, col_rep]  # read only
    X0u = _projection_input(Xr, nonnegative, tau)
    del Xr
    n_in = X0u.shape[1]
    m_u, n_u = Xu.shape
    queue = list(range(n_u))  # attempt order; failing columns move to the front
    fail_count = np.zeros(n_u, dtype=np.int64)
    # wrong entries of X in the columns of each merged column when its r is 0
    zero_is_one = 0.0 >= tau
    wrong_if_zero = np.bincount(
        col_owner,
        weights=(~np.isnan(X) & (X != float(zero_is_one))).sum(axis=0),
        minlength=n_u,
    ).astype(np.int64)

    def record(cols, codes, feasible):
        """Count the LPs run and move the first failing column up the queue."""
        attempted = codes != _NOT_SOLVED
        info["n_lps"] += int(attempted.sum())
        info["n_infeasible_lps"] += int((attempted & ~feasible).sum())
        status_counts.update(STATUS_NAMES[c] for c in codes[attempted])
        info["lp_status_counts"] = dict(status_counts)
        failed = cols[attempted & ~feasible]
        if failed.size:
            first = int(failed[0])
            fail_count[first] += 1
            queue.remove(first)
            # the queue is ordered by failure count; the latest failure leads its tier
            pos = 0
            while pos < len(queue) and fail_count[queue[pos]] > fail_count[first]:
                pos += 1
            queue.insert(pos, first)
        return attempted

    def attempt(Lu, cols, parallel, stop_at_first_infeasible=True):
        R_d, codes, _, feasible = _solve(
            Lu,
            Xu,
            tau=tau,
            eps=eps,
            nonnegative=nonnegative,
            feasibility=True,
            n_jobs=n_jobs,
            time_limit=deadline.remaining(),
            columns=cols,
            stop_at_first_infeasible=stop_at_first_infeasible,
            weights=weights,
            parallel=parallel,
            first_block=8,
        )
        attempted = record(cols, codes, feasible)
        return R_d, feasible, attempted

    def certify(Lu, R_u):
        """Offer the full factors; on failure return the uncertified columns."""
        if incumbent.offer(Lu[row_owner], R_u[col_owner]):
            info["improvements"].append((Lu.shape[1], round(elapsed(), 4)))
            if verbose >= 2:
                print(f"[projlp] certified rank {Lu.shape[1]} at {elapsed():.2f} s")
            return None
        return _uncertified_columns(Xu, Lu, R_u, tau)

    def best_reduced():
        """The best known certificate on the merged rows and columns."""
        L, R = incumbent.best_factors()
        return (
            np.asarray(L, dtype=np.float64)[row_rep],
            np.asarray(R, dtype=np.float64)[col_rep],
        )

    with Parallel(n_jobs=n_jobs, prefer="threads") as parallel:
        if not nonnegative and m_u * n_u >= _SEPARATION_ENTRIES:
            # ---- phase 0 (large input): separation with copied columns -------------
            _copied_columns_search(
                Xu,
                X0u,
                row_owner,
                col_owner,
                incumbent,
                deadline,
                tau=tau,
                projection=projection,
                rng=rng,
                n_jobs=n_jobs,
                info=info,
                lps=lambda Lu, cols: attempt(Lu, cols, parallel, False)[:2],
            )
            if info["phase0_width"] is not None:
                return finish(
                    deadline.expired(),
                    f"phase 0: projection width {info['phase0_width']} and "
                    f"{info['phase0_copied']} copied columns",
                )
            if incumbent.bound is not None:
                return finish(True, "phase 0 did not improve the known bound")
        # ---- phase 1: d = max(1, lower), ... below the known bound -----------------
        proj = _Projection(X0u, projection, nonnegative, rng) if nested else None
        solved = np.zeros(n_u, dtype=bool)
        R_u = None
        for d in range(max(1, incumbent.lower), max_rank + 1):
            if not incumbent.worth_trying(d):
                break  # a certificate of width d would not improve the bound
            if deadline.expired():
                return finish(True, f"time limit reached in phase 1 before d={d}")
            if nested:
                Lu = proj.left(d)
                R_prev = R_u
                R_u = np.zeros((n_u, d))
                if R_prev is not None:
                    R_u[:, : R_prev.shape[1]] = R_prev
            else:
                seed = rng.randint(np.iinfo(np.int32).max)
                Lu = X0u @ _projection_matrix(n_in, d, projection, nonnegative, seed)
                solved[:] = False
                R_u = np.zeros((n_u, d))
            cols = np.array([j for j in queue if not solved[j]], dtype=np.intp)
            R_d, feasible, attempted = attempt(Lu, cols, parallel)
            info["d_tried"].append(d)
            R_u[cols[feasible]] = R_d[feasible]
            solved[cols[feasible]] = True
            # the candidate: feasible columns exact, the others r = 0
            incumbent.record(
                d,
                int(wrong_if_zero[~solved].sum()),
                message=f"phase 1: {int(solved.sum())}/{n_u} columns separable",
            )
            if verbose >= 2:
                print(
                    f"[projlp] d={d}: {int(attempted.sum())} LPs, "
                    f"{int(solved.sum())}/{n_u} columns feasible, {elapsed():.2f} s"
                )
            if solved.all():
                bad = certify(Lu, R_u)
                if bad is None:
                    break
                # drop the columns that fail the certificate and keep searching
                solved[bad] = False
                R_u[bad] = 0.0
        info["phase1_rank"] = incumbent.rank
        info["phase1_seconds"] = elapsed()
        if incumbent.bound is None and not deadline.expired():
            factors = _trivial_factors(Xu, tau, nonnegative)
            if factors is not None and factors[0].shape[1] <= max_rank:
                info["fallback"] = True
                certify(*factors)
        if incumbent.bound is None:
            if deadline.expired():
                return finish(True, "time limit reached in phase 1")
            return finish(True, f"no certificate up to max_rank={max_rank}")
        if incumbent.done:
            return finish(False, "certified (bound meets the lower bound)")

        # ---- phase 2: refinement descent from the best known certificate -----------
        step = 1
        floor = max(incumbent.lower, 1)
        t2 = elapsed()
        tried = set()  # (width, bound) pairs: the same start gives the same try
        while refine and incumbent.bound > floor:
            if deadline.expired():
                return finish(True, "time limit reached in phase 2")
            width = max(floor, incumbent.bound - step)
            if (width, incumbent.bound) in tried:
                if step == 1:
                    break
                step = max(1, step // 2)
                continue
            tried.add((width, incumbent.bound))
            info["refine_tried"].append(width)
            Lb, Rb = best_reduced()
            L0, _ = _truncated_product(Lb, Rb, width)
            if nonnegative:
                # a non-negative start: orient every factor column, clip at zero
                L0 = np.maximum(L0 * np.where(L0.sum(axis=0) < 0, -1.0, 1.0), 0.0)
            out = _alternate(
                Xu,
                L0,
                tau=tau,
                eps=eps,
                nonnegative=nonnegative,
                n_jobs=n_jobs,
                max_iter=refine_iter,
                tol=_REFINE_TOL,
                deadline=deadline,
            )
            info["n_lps"] += out["n_lps"]
            status_counts.update(out["status_counts"])
            n_wrong = _count_errors_factors(
                X, out["L"][row_owner], out["R"][col_owner], tau
            )
            incumbent.record(width, n_wrong, message="phase 2 (LP descent)")
            ok = False
            if out["errors"] == 0:
                # re-solve the columns with the separation margin, then certify
                Lu = out["L"]
                order = np.array(queue, dtype=np.intp)
                R_d, feasible, _ = attempt(Lu, order, parallel)
                if feasible.all():
                    R_u = np.zeros((n_u, width))
                    R_u[order] = R_d
                    ok = certify(Lu, R_u) is None
            if verbose >= 2:
                print(
                    f"[projlp] refine d={width}: {'certified' if ok else 'failed'} "
                    f"({out['stop']}, {out['n_rounds']} rounds), {elapsed():.2f} s"
                )
            if ok:
                step *= 2
            elif step == 1:
                break
            else:
                step = max(1, step // 2)
        info["phase2_seconds"] = elapsed() - t2
        if deadline.expired():
            return finish(True, "time limit reached in phase 2")

        # ---- phase 3: fresh projections of width bound - 1 -------------------------
        # projections are tested _PHASE3_BATCH at a time (each test serial, one per
        # worker); the batch size does not depend on n_jobs, so neither does the result
        failures = 0
        while failures < n_retries and incumbent.bound > floor:
            if deadline.expired():
                return finish(True, "time limit reached in phase 3")
            width = incumbent.bound - 1
            batch = min(_PHASE3_BATCH, n_retries - failures)
            lefts = []
            for _ in range(batch):
                seed = rng.randint(np.iinfo(np.int32).max)
                A = _projection_matrix(n_in, width, projection, nonnegative, seed)
                lefts.append(X0u @ A)
            info["n_projections"] += batch
            cols = np.array(queue, dtype=np.intp)
            args = (Xu, cols, weights, tau, eps, nonnegative, deadline.remaining())
            if batch == 1 or effective_n_jobs(n_jobs) == 1:
                results = [_test_projection(Lu, *args) for Lu in lefts]
            else:
                results = parallel(delayed(_test_projection)(Lu, *args) for Lu in lefts)
            improved = False
            for Lu, (R_d, codes, feasible) in zip(lefts, results, strict=True):
                record(cols, codes, feasible)
                incumbent.record(
                    width,
                    int(wrong_if_zero[cols[~feasible]].sum()),
                    message="phase 3 (fresh projection)",
                )
                if improved or not feasible.all():
                    failures += 0 if improved else 1
                    continue
                R_u = np.zeros((n_u, width))
                R_u[cols] = R_d
                if certify(Lu, R_u) is None:
                    improved = True
                    failures = 0
                else:
                    failures += 1
    if incumbent.rank is None:
        return finish(False, f"no certificate below {incumbent.limit_text()}")
    return finish(False, "certified")


def _trivial_factors(Xu, tau, nonnegative):
    """Certified factors of the merged matrix of width ``min(m', n')`` (+1 if tau<=0).

    ``c Xu`` with ``c = 2 tau`` rounds to ``Xu`` for ``tau > 0`` (missing entries
    count as 0), written as ``L = c Xu, R = I`` or ``L = I, R = c Xu^T``; for
    ``tau <= 0`` a constant column shifts the zeros below ``tau`` (not non-negative:
    None then).
    """
    if tau <= 0 and nonnegative:
        return None
    return trivial_upper_bound(np.where(np.isnan(Xu), 0.0, Xu), tau=tau)


def _truncated_product(L, R, width):
    """Balanced factors ``(U_w S_w^(1/2), V_w S_w^(1/2))`` of the best rank-``width``
    approximation of ``L R^T``.

    Computed from thin QR factorizations of ``L`` and ``R`` (cost O((m + n) k^2)).
    When ``L R^T`` has fewer than ``width`` singular values (a matrix with fewer
    distinct rows or columns than ``width``), zero columns pad the factors.
    """
    Q1, T1 = np.linalg.qr(L)
    Q2, T2 = np.linalg.qr(R)
    U, s, Vt = np.linalg.svd(T1 @ T2.T, full_matrices=False)
    r = min(width, s.shape[0])
    F = np.zeros((L.shape[0], width))
    G = np.zeros((R.shape[0], width))
    F[:, :r] = (Q1 @ U[:, :r]) * np.sqrt(s[:r])
    G[:, :r] = (Q2 @ Vt[:r].T) * np.sqrt(s[:r])
    return F, G


def _test_projection(Lu, Xu, cols, weights, tau, eps, nonnegative, time_budget):
    """Feasibility of all ``cols`` for one projection, stopping at the first failure.

    Module-level (picklable) task of phase 2 of :func:`projlp_rank_upper_bound`;
    columns are tried serially in blocks of 1, 2, 4, ...
    """
    R_d, codes, _, feasible = _solve(
        Lu,
        Xu,
        tau=tau,
        eps=eps,
        nonnegative=nonnegative,
        feasibility=True,
        n_jobs=1,
        time_limit=time_budget,
        columns=cols,
        stop_at_first_infeasible=True,
        weights=weights,
        first_block=1,
    )
    return R_d, codes, feasible


def _uncertified_columns(Xu, Lu, R_u, tau):
    """Columns (of the merged matrix) holding an entry that fails the certificate.

    The certificate kernel of :func:`~sklearn_rrank.certify_rounding` on the merged
    matrix (its rows and columns stand for the repeated ones of ``X``).
    """
    return _uncertified_counts(Xu, Lu, R_u, tau, axis=0) > 0


def _copied_columns_factors(Lu, R_sep, separated, Xu, tau):
    """Factors of width ``d + |F|``, exact by construction.

    ``F`` are the columns not ``separated`` by ``(Lu, R_sep)``. Column ``j`` of ``F``
    is copied into the left factor and reproduced by ``r = 2 tau e_j`` (for
    ``tau > 0``: ones give ``2 tau >= tau``, zeros ``0 < tau``). For ``tau <= 0`` the
    caller's ``Lu[:, 0]`` is a column of ones and ``r = 2 e_j + (tau - 1) e_0`` (ones
    give ``tau + 1``, zeros ``tau - 1``). This is the subadditivity of the rounding
    rank over a split of the columns, with the trivial bound on the part ``F``.
    """
    m_u, n_u = Xu.shape
    d = Lu.shape[1]
    F = np.flatnonzero(~separated)
    L = np.zeros((m_u, d + F.size))
    R = np.zeros((n_u, d + F.size))
    L[:, :d] = Lu
    R[separated, :d] = R_sep[separated]
    copies = d + np.arange(F.size)
    L[:, copies] = np.nan_to_num(Xu[:, F])
    if tau > 0:
        R[F, copies] = 2.0 * tau
    else:
        R[F, copies] = 2.0
        R[F, 0] = tau - 1.0
    return L, R


class _SVDStart:
    """Start factors ``(U_d S_d, V_d)`` of phase 0: the truncated SVD of ``X0``.

    ``X0`` is the merged matrix, missing entries set to 0. The triplets come from
    the Gram matrix (:func:`sklearn_rrank._rsvd._gram_svd`), computed once for
    ``K = 1.5 d`` components and again, for ``max(2 K, 1.5 d)``,
    when a wider start is asked for. A sparse ``X0`` (at most a tenth of the
    entries are ones) gets the Gram matrix by a sparse product: the same integer
    counts as the dense product, at a fraction of its ``m n^2`` operations. Neither
    the product nor the eigendecomposition can be interrupted, so a start whose
    estimated time (:func:`sklearn_rrank._rsvd._gram_svd_seconds`) exceeds what is left
    of ``deadline`` is not computed: :meth:`factors` returns None.
    """

    def __init__(self, X0, deadline):
        nnz = int(np.count_nonzero(X0))
        self.nnz = nnz if nnz <= 0.1 * X0.size else None
        self.X0 = sp.csr_matrix(X0) if self.nnz is not None else X0
        self.deadline = deadline
        self.K = 0
        self.message = None

    def factors(self, d):
        from sklearn_rrank._rsvd import _gram_svd, _gram_svd_seconds

        if d > self.K:
            m, n = self.X0.shape
            K = min(min(m, n), max(2 * self.K, int(1.5 * d)))
            if self.deadline.limited:
                need = _gram_svd_seconds(m, n, self.nnz)
                left = self.deadline.remaining()
                if need > left:
                    self.message = (
                        f"the SVD start of {K} components needs about {need:.0f} s, "
                        f"{left:.0f} s were left"
                    )
                    return None
            self.K = K
            U, s, Vt = _gram_svd(self.X0, self.K)
            self.L, self.R = U * s, Vt.T
        return self.L[:, :d], self.R[:, :d]


def _copied_columns_search(
    Xu,
    X0u,
    row_owner,
    col_owner,
    incumbent,
    deadline,
    *,
    tau,
    projection,
    rng,
    n_jobs,
    info,
    lps,
):
    """Phase 0 of the ProjLP search (large input): see :func:`projlp_rank_upper_bound`.

    ``lps(Lu, cols)`` solves the feasibility LPs of the merged columns ``cols`` for
    the left factor ``Lu`` (counting them in ``info``) and returns ``(R, feasible)``.

    1. For a few widths ``d`` (a pattern search from ``min(m', n') / 12``: up by
       half while the bound drops, else down; then up to three bisections between
       the best width and the next smaller one tried), the truncated SVD of ``X`` is
       refined by :func:`~sklearn_rrank._separation.alternate_separation`; the
       columns ``F`` it cannot separate are copied into ``L``, which gives a
       certificate of width ``d + |F|`` (:func:`_copied_columns_factors`), offered
       to the incumbent. For ``tau <= 0``, ``L = [1, X A_{d-1}]`` (an offset column
       of ones) and only the columns are separated
       (:func:`~sklearn_rrank._separation.separate_columns`).
    2. At the best width the columns of ``F`` get the finite Newton method of
       :func:`~sklearn_rrank._separation.separate_columns` (``solver="newton"``),
       fewest ones first, in blocks; each certified column leaves ``F``.
    3. The columns left get the exact feasibility LP, fewest ones first; each
       feasible one leaves ``F``. Every column leaving ``F`` lowers the bound by one;
       the repaired certificate is offered every ``_OFFER_EVERY`` seconds and at
       the end of the width.
    4. If no column is left, the search descends to 97% of the width (step 1 at
       that width, started from the truncation of the factors just found
       (:func:`_truncated_product`), then 2 and 3), until the deadline or the lower
       bound.
    """
    from sklearn_rrank._separation import (
        alternate_separation,
        separate_columns,
        separation_basis,
    )

    m_u, n_u = Xu.shape
    d_max = min(m_u, n_u) - 1
    if d_max < 1:
        return
    proj = _Projection(X0u, projection, False, rng)  # nested, drawn on demand
    missing = np.isnan(Xu)
    svd_start = _SVDStart(np.where(missing, 0.0, Xu) if missing.any() else Xu, deadline)
    del missing

    def try_width(d, warm=None):
        """The state ``(Lu, R_sep, separated, bound)`` at width ``d``, or None."""
        if tau > 0:
            if warm is None:
                start = svd_start.factors(d)
            else:
                start = _truncated_product(*warm, d)
            if start is None:  # the SVD start does not fit in the time left
                info["phase0_skipped"] = svd_start.message
                return None
            L0, R0 = start
            Lu, R_sep, counts, history = alternate_separation(
                L0,
                Xu,
                init=R0,
                tau=tau,
                n_rounds=_ALTERNATIONS,
                n_iter=_SEPARATION_ITER,
                tol=_ALTERNATION_TOL,
                deadline=deadline,
                n_jobs=n_jobs,
            )
            separated = counts == 0
        else:  # an offset column: rows of zeros need L_i . r < tau <= 0
            Lu = np.hstack([np.ones((m_u, 1)), proj.left(d - 1)])
            R_sep, separated = separate_columns(
                Lu,
                Xu,
                tau=tau,
                n_iter=_SEPARATION_ITER,
                deadline=deadline,
                n_jobs=n_jobs,
            )
            history = []
        bound = d + int((~separated).sum())
        info["phase0_tried"].append((d, bound))
        info["phase0_alternation"].append((d, history))
        incumbent.record(
            bound,
            None,
            message=f"phase 0: width {d}, {int(separated.sum())}/{n_u} columns "
            "separated",
        )
        return Lu, R_sep, separated, bound

    def offer(state):
        Lu, R_sep, separated, _ = state
        if not incumbent.worth_trying(Lu.shape[1] + int((~separated).sum())):
            return
        L, R = _copied_columns_factors(Lu, R_sep, separated, Xu, tau)
        if incumbent.offer(L[row_owner], R[col_owner]):
            info["improvements"].append((L.shape[1], round(deadline.elapsed(), 4)))
            info["phase0_width"] = Lu.shape[1]
            info["phase0_copied"] = int((~separated).sum())

    # 1. pattern search over the projection width: up by half while the bound
    # drops; if the first step up does not help, down by a third while it drops
    best = try_width(max(1, min(d_max, round(min(m_u, n_u) / 12))))
    if best is None:
        return
    offer(best)
    for factor in (1.5, 1 / 1.5):
        moved = False
        while not deadline.expired():
            d = max(1, min(d_max, round(best[0].shape[1] * factor)))
            if any(d == t for t, _ in info["phase0_tried"]) or d >= best[3]:
                break  # tried, or a width that cannot beat the best bound
            state = try_width(d)
            if state is None or state[3] >= best[3]:
                break
            best, moved = state, True
            offer(best)
        if moved:
            break
    # then bisect between the best width and the largest width tried below it
    for _ in range(_BISECTIONS):
        d_best = best[0].shape[1]
        below = [t for t, _ in info["phase0_tried"] if t < d_best]
        if deadline.expired() or not below:
            break
        d = (max(below) + d_best) // 2
        if any(d == t for t, _ in info["phase0_tried"]):
            break
        state = try_width(d)
        if state is not None and state[3] < best[3]:
            best = state
            offer(best)
    ones = np.nansum(Xu, axis=0)
    block = 8 * max(1, effective_n_jobs(n_jobs))

    def finish_copied(state):
        """Stages 2 and 3 at one width: Newton, then LPs, for the copied columns."""
        Lu, R_sep, separated, _ = state
        R_sep, separated = R_sep.copy(), separated.copy()
        basis = separation_basis(Lu, tau)  # one SVD for every Newton block
        last_offer = deadline.elapsed()
        improved = False

        def progress(R_new, ok, cols, how):
            nonlocal last_offer, improved
            R_sep[cols[ok]] = R_new[ok]
            separated[cols[ok]] = True
            improved |= bool(ok.any())
            incumbent.record(
                Lu.shape[1] + int((~separated).sum()),
                None,
                message=f"phase 0: width {Lu.shape[1]}, {how}",
            )
            if improved and deadline.elapsed() - last_offer >= _OFFER_EVERY:
                offer((Lu, R_sep, separated, None))
                last_offer, improved = deadline.elapsed(), False

        for how in ("newton", "lp"):
            todo = np.array(
                [j for j in np.argsort(ones, kind="stable") if not separated[j]],
                dtype=np.intp,
            )
            for begin in range(0, todo.size, block):
                if deadline.expired() or incumbent.done:
                    break
                cols = todo[begin : begin + block]
                if how == "newton":
                    R_c, ok = separate_columns(
                        Lu,
                        Xu[:, cols],
                        tau=tau,
                        n_iter=_NEWTON_ITER,
                        solver="newton",
                        deadline=deadline,
                        n_jobs=n_jobs,
                        basis=basis,
                    )
                    info["n_newton"] += int(cols.size)
                    progress(R_c, ok, cols, f"Newton, {int(ok.sum())}/{cols.size}")
                    continue
                R_c, ok = lps(Lu, cols)
                progress(R_c, ok, cols, f"LPs, {int(ok.sum())}/{cols.size}")
        if improved:
            offer((Lu, R_sep, separated, None))
        return Lu, R_sep, separated

    while True:
        Lu, R_sep, separated = finish_copied(best)
        d = min(Lu.shape[1] - 1, round(_DESCENT * Lu.shape[1]))  # always smaller
        if (
            not separated.all()
            or deadline.expired()
            or incumbent.done
            or d < max(1, incumbent.lower)
        ):
            return
        # every column separated at this width: descend to a smaller one, from the
        # truncation of the factors just found
        best = try_width(d, warm=(Lu, R_sep))
        offer(best)
