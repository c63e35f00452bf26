"""The LP engine: many small separating-hyperplane LPs, one per column (or row).

For a fixed left factor ``L`` (m, d) and every column ``j`` of a binary matrix ``X``
this module solves the two linear programs of the paper's Section 3 ("Projection-based
algorithm", ProjLP) for the right-factor row ``r = R_j``:

* the **feasibility LP**: find ``r`` with ``<L_i, r> >= tau + eps`` where
  ``X_ij = 1`` and ``<L_i, r> <= tau - eps`` where ``X_ij = 0``;
* the **L1-slack LP** (the paper's LP for the minimum-error problem)::

      min_{r, c >= 0}  sum_i c_i   s.t.  <L_i, r> + c_i >= tau + eps   (X_ij = 1)
                                          <L_i, r> - c_i <= tau - eps   (X_ij = 0)

Missing entries (``NaN`` in ``X``) drop their constraint. With ``nonnegative=True``
the variables are restricted to ``r >= 0`` (non-negative rounding rank).

How the LPs are solved
----------------------
Write ``s_i = +1`` for a one and ``s_i = -1`` for a zero, ``b_i = s_i tau + eps``. The
L1 LP is ``min 1'c`` s.t. ``S L r + c >= b``, ``c >= 0`` (``S = diag(s)``). Its LP dual
is ``max b'y`` s.t. ``L' S y = 0``, ``0 <= y <= 1``; substituting ``w = S y`` gives the
**transposed form** solved here::

    max  sum_i (tau + eps s_i) w_i   s.t.  L' w = 0,
         w_i in [0, 1] where X_ij = 1,   w_i in [-1, 0] where X_ij = 0,
         w_i = 0 where X_ij is missing.

It has ``d`` rows and ``m`` bounded columns, so the simplex basis has size ``d`` instead
of ``m``. Only the column bounds and costs depend on ``j``: every worker builds one
``highspy.Highs`` model for ``L`` and changes bounds and costs between columns.

*Primal recovery.* The row duals of the transposed form are the LP multipliers ``r``
of the constraints ``L'w = 0``; by LP duality they are an optimal ``r`` of the L1 LP,
with slacks ``c_i = max(0, b_i - s_i <L_i, r>)`` (HiGHS reports them with this sign for
a maximisation; the test-suite checks the recovery against
``scipy.optimize.linprog``). With ``nonnegative=True`` the primal has ``r >= 0``, so
the dual constraints become ``L' w <= 0`` and the (then non-negative) row duals are
``r`` again. Identical rows of ``(L, X)`` are merged: a row that occurs ``c`` times
becomes one row with box ``[0, c]`` (or ``[-c, 0]``), i.e. weight ``c`` in the primal
objective.

Every recovered ``r`` is checked in float64: its objective ``sum_i c_i`` is recomputed
from ``r`` (this is the ``objective`` returned) and must agree with the LP optimum, and
for the feasibility LP every constraint is verified with the margin of
:func:`~sklearn_rrank.certify_rounding`. A column whose LP did not end optimal, or whose
``r`` fails a check, keeps a status other than ``"optimal"``.

Status codes (``status`` arrays hold these strings)
---------------------------------------------------
``"optimal"``
    HiGHS reported an optimal basis and the recovered ``r`` passed the checks.
``"time_limit"``
    HiGHS stopped at the time limit; ``r`` is the last dual iterate (any ``r`` is a
    valid, possibly poor, solution of the L1 LP; its true objective is reported).
``"iteration_limit"``
    HiGHS stopped at its iteration limit.
``"numerical_error"``
    HiGHS reported an error or an unexpected status, or the recovered ``r`` does not
    reproduce the LP optimum within tolerance.
``"not_solved"``
    The LP was never run: the time budget was spent, or the caller asked to stop at
    the first infeasible column. ``r`` is zero.
``"uncertified"`` (feasibility only)
    The LP optimum is (numerically) zero, but the recovered ``r`` does not satisfy all
    constraints with the certification margin; the column is reported infeasible.

Parallelism
-----------
Columns are split into ``effective_n_jobs(n_jobs)`` chunks (``gen_even_slices``); each
chunk is solved by one call of the module-level worker :func:`_solve_chunk`, which
builds its own Highs model (Highs objects do not pickle). ``Parallel`` prefers threads
(highspy releases the GIL in ``Highs.run``); loky, dask and other joblib backends work
too because the worker is picklable. Every column is solved from a cold start
(``clearSolver``), so results do not depend on the chunking, i.e. on ``n_jobs``.
Presolve is off and ``Highs.run()`` is used (``solve()`` installs an interrupt handler
that serialises threads).

References
----------
Neumann, Gemulla, Miettinen, "What You Will Gain By Rounding: Theory and Algorithms for
Rounding Rank", ICDM 2016, Section 3, paragraph "Projection-based algorithm (ProjLP)".
"""

import ctypes
import numbers
import os
import sys
import threading
import time

import highspy
import numpy as np
from joblib import effective_n_jobs
from sklearn.utils import gen_even_slices
from sklearn.utils.parallel import Parallel, delayed

from sklearn_rrank._rounding import DEFAULT_MARGIN, _certified_entries, _row_batches
from sklearn_rrank._validation import check_binary_matrix, check_tau

__all__ = [
    "DEFAULT_EPS",
    "STATUS_NAMES",
    "solve_columns_feasibility",
    "solve_columns_l1",
    "solve_rows_l1",
]

#: Default separation margin ``eps`` of the LPs. See :func:`solve_columns_l1`.
DEFAULT_EPS = 1e-6

# status codes used inside the workers (int8) and their public names
_OPTIMAL, _TIME_LIMIT, _ITERATION_LIMIT, _NUMERICAL, _NOT_SOLVED, _UNCERTIFIED = range(
    6
)
STATUS_NAMES = (
    "optimal",
    "time_limit",
    "iteration_limit",
    "numerical_error",
    "not_solved",
    "uncertified",
)

# HiGHS options of every worker model. Tighter feasibility tolerances than the
# defaults (1e-7) keep the recovered r within ~1e-9 of the constraints, far inside the
# default eps; the dual simplex is the fastest strategy on the transposed form.
_HIGHS_OPTIONS = {
    "output_flag": False,
    "presolve": "off",
    "solver": "simplex",
    "simplex_strategy": 1,
    "primal_feasibility_tolerance": 1e-9,
    "dual_feasibility_tolerance": 1e-9,
    "threads": 1,
    "random_seed": 0,
}

# relative tolerance of the objective self-check (recomputed from r vs. the LP value)
_OBJECTIVE_RTOL = 1e-6
# per-row absolute slack allowed in the objective self-check
_OBJECTIVE_ATOL_PER_ROW = 1e-8
# an LP optimum at most this (times the total weight) counts as zero in feasibility
_FEASIBLE_OBJECTIVE_TOL = 1e-9


# ----------------------------------------------------------------------------------
# parameter checks
# ----------------------------------------------------------------------------------
def _check_eps(eps):
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
        raise TypeError(f"eps must be a real number, got {eps!r}.")
    eps = float(eps)
    if not (np.isfinite(eps) and eps >= 0):
        raise ValueError(f"eps must be a finite number >= 0, got {eps}.")
    return eps


def _check_time_limit(time_limit):
    if time_limit is None:
        return None
    if isinstance(time_limit, bool) or not isinstance(time_limit, numbers.Real):
        raise TypeError(
            f"time_limit must be a number of seconds or None, got {time_limit!r}."
        )
    time_limit = float(time_limit)
    if not time_limit >= 0 or np.isnan(time_limit):
        raise ValueError(f"time_limit must be >= 0 seconds, got {time_limit}.")
    return time_limit


def _check_factor(F, n_rows, name, rows_name):
    F = np.asarray(F, dtype=np.float64)
    if F.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got shape {F.shape}.")
    if F.shape[0] != n_rows:
        raise ValueError(
            f"{name} has {F.shape[0]} rows but X has {n_rows} {rows_name}; "
            f"{name} must have shape ({n_rows}, d)."
        )
    if not np.isfinite(F).all():
        raise ValueError(f"{name} must hold finite numbers (no NaN or infinity).")
    return np.ascontiguousarray(F)


def _check_columns(columns, n):
    if columns is None:
        return np.arange(n)
    columns = np.asarray(columns)
    if columns.dtype == bool:
        if columns.shape != (n,):
            raise ValueError(f"A boolean columns mask must have shape ({n},).")
        return np.flatnonzero(columns)
    if columns.ndim != 1 or (columns.size and columns.dtype.kind not in "iu"):
        raise ValueError("columns must be a 1-D array of column indices.")
    columns = columns.astype(np.intp)
    if columns.size and (columns.min() < -n or columns.max() >= n):
        raise ValueError(f"columns holds indices outside [0, {n}).")
    return np.where(columns < 0, columns + n, columns)


# ----------------------------------------------------------------------------------
# the worker
# ----------------------------------------------------------------------------------
def _build_model(L, nonnegative):
    """One Highs model of the transposed form ``max c'w  s.t.  L'w = 0`` (or <= 0)."""
    m, d = L.shape
    lp = highspy.HighsLp()
    lp.num_col_ = m
    lp.num_row_ = d
    lp.col_cost_ = np.zeros(m)
    lp.col_lower_ = np.zeros(m)
    lp.col_upper_ = np.zeros(m)
    lp.row_lower_ = np.full(d, -highspy.kHighsInf) if nonnegative else np.zeros(d)
    lp.row_upper_ = np.zeros(d)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    # column i of the constraint matrix L' is row i of L (stored densely)
    lp.a_matrix_.start_ = np.arange(0, m * d + 1, d, dtype=np.int32)
    lp.a_matrix_.index_ = np.tile(np.arange(d, dtype=np.int32), m)
    lp.a_matrix_.value_ = np.ascontiguousarray(L).ravel()
    lp.sense_ = highspy.ObjSense.kMaximize
    h = _new_highs()
    for key, value in _HIGHS_OPTIONS.items():
        h.setOptionValue(key, value)
    status = h.passModel(lp)
    if status == highspy.HighsStatus.kError:  # pragma: no cover - defensive
        raise RuntimeError("HiGHS rejected the LP model.")
    return h


_BANNER_LOCK = threading.Lock()
_banner_pid = None  # the process whose first HiGHS instance has been built


def _new_highs():
    """A HiGHS instance whose banner reaches neither standard output nor the user.

    highspy (seen with 1.16) prints its "Running HiGHS ..." banner on standard
    output once per process, when the first instance is built (before any option
    can turn the output off; every instance then gets ``output_flag`` False). That
    line would break machine-readable output such as ``rrank ... --json`` and is
    noise for the user, so the first instance of every process is built with file
    descriptor 1 pointed at the null device (C's buffers flushed before it is
    restored). Later instances are built as usual.
    """
    global _banner_pid
    if _banner_pid == os.getpid():
        return highspy.Highs()
    with _BANNER_LOCK:
        if _banner_pid == os.getpid():
            return highspy.Highs()
        sys.stdout.flush()
        try:
            saved = os.dup(1)
        except OSError:  # no standard output to protect
            _banner_pid = os.getpid()
            return highspy.Highs()
        try:
            null = os.open(os.devnull, os.O_WRONLY)
        except OSError:  # pragma: no cover - no null device: standard error
            null = os.dup(2)
        try:
            os.dup2(null, 1)
            os.close(null)
            h = highspy.Highs()
            try:
                ctypes.CDLL(None).fflush(None)
            except (OSError, AttributeError):  # pragma: no cover - not POSIX
                pass
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        _banner_pid = os.getpid()
        return h


def _certified_mask(gap, scale, s, tau, k):
    """Entries certified like :func:`certify_rounding`, with twice its margin."""
    return _certified_entries(gap, scale, s > 0, tau, k, DEFAULT_MARGIN, factor=2.0)


def _solve_chunk(
    L,
    Xc,
    weights,
    tau,
    eps,
    nonnegative,
    feasibility,
    time_budget,
):
    """Solve the LPs of the columns of ``Xc`` (m, n_chunk) for fixed ``L`` (m, d).

    Module-level and free of Highs objects in its arguments, so it pickles for loky
    and dask. ``weights`` (m,) are the multiplicities of merged identical rows.
    ``time_budget`` is the wall-clock budget in seconds for this chunk (None: no
    limit). Returns ``R`` (n_chunk, d), int8 status codes, the slack sum at each
    returned ``r`` and (feasibility) a boolean mask of certified-feasible columns.
    """
    m, d = L.shape
    n_chunk = Xc.shape[1]
    R = np.zeros((n_chunk, d))
    codes = np.full(n_chunk, _NOT_SOLVED, dtype=np.int8)
    objective = np.zeros(n_chunk)
    feasible = np.zeros(n_chunk, dtype=bool)
    if n_chunk == 0:
        return R, codes, objective, feasible
    start = time.perf_counter()
    absL = np.abs(L)
    h = None
    idx = np.arange(m, dtype=np.int32)
    for t in range(n_chunk):
        x = Xc[:, t]
        observed = ~np.isnan(x)
        ones = x == 1
        s = np.where(ones, 1.0, -1.0)
        wobs = np.where(observed, weights, 0.0)
        if not observed.any() or d == 0:
            r = np.zeros(d)
            code = _OPTIMAL
            lp_value = None
        else:
            if time_budget is not None:
                remaining = time_budget - (time.perf_counter() - start)
                if remaining <= 0:
                    break
            if h is None:
                h = _build_model(L, nonnegative)
            if time_budget is not None:
                h.setOptionValue("time_limit", h.getRunTime() + remaining)
            lower = np.where(ones, 0.0, -wobs)
            upper = np.where(ones, wobs, 0.0)
            cost = np.where(observed, tau + eps * s, 0.0)
            h.clearSolver()
            h.changeColsBounds(m, idx, lower, upper)
            h.changeColsCost(m, idx, cost)
            h.run()
            model_status = h.getModelStatus()
            if model_status == highspy.HighsModelStatus.kOptimal:
                code = _OPTIMAL
            elif model_status == highspy.HighsModelStatus.kTimeLimit:
                code = _TIME_LIMIT
            elif model_status == highspy.HighsModelStatus.kIterationLimit:
                code = _ITERATION_LIMIT
            else:
                code = _NUMERICAL
            sol = h.getSolution()
            if sol.dual_valid:
                r = np.array(sol.row_dual, dtype=np.float64)
                if nonnegative:
                    r = np.maximum(r, 0.0)
            else:
                r = np.zeros(d)
            lp_value = h.getInfo().objective_function_value
        # slacks of the L1 LP at r, with the margin eps
        Lr = L @ r
        slack = np.where(ones, tau + eps - Lr, Lr - (tau - eps))
        slack = np.maximum(slack, 0.0) * wobs
        value = float(slack.sum())
        if code == _OPTIMAL and lp_value is not None:
            tol = _OBJECTIVE_RTOL * (1.0 + abs(lp_value)) + _OBJECTIVE_ATOL_PER_ROW * (
                wobs.sum()
            )
            if abs(value - lp_value) > tol:
                code = _NUMERICAL
        R[t] = r
        objective[t] = value
        codes[t] = code
        if feasibility:
            if code == _OPTIMAL:
                gap = Lr - tau
                ok = _certified_mask(gap, absL @ np.abs(r), s, tau, d)
                feasible[t] = bool(np.all(ok | ~observed))
                if not feasible[t] and lp_value is not None:
                    if lp_value <= _FEASIBLE_OBJECTIVE_TOL * (1.0 + wobs.sum()):
                        codes[t] = _UNCERTIFIED
    objective[codes == _NOT_SOLVED] = _zero_slack(
        Xc, np.flatnonzero(codes == _NOT_SOLVED), weights, tau, eps
    )
    return R, codes, objective, feasible


def _zero_slack(X, columns, weights, tau, eps):
    """Slack sums of the columns ``columns`` of ``X`` at ``r = 0`` (never solved).

    Computed by blocks of columns (:func:`~sklearn_rrank._rounding._row_batches`
    of the transpose), each summed exactly as the whole would be, so no m x n
    temporary is formed.
    """
    out = np.empty(len(columns))
    for part in _row_batches(len(columns), X.shape[0]):
        Xs = X[:, columns[part]]
        slack = np.where(Xs == 1, max(tau + eps, 0.0), max(eps - tau, 0.0))
        slack = np.where(np.isnan(Xs), 0.0, slack * weights[:, None])
        out[part] = slack.sum(axis=0)
    return out


# ----------------------------------------------------------------------------------
# drivers
# ----------------------------------------------------------------------------------
def _row_keys(X, L=None):
    """One opaque byte string per row of ``(L, X)`` (X binary, NaN as 2).

    Comparing rows as raw bytes (a 1-D ``np.void`` array) makes ``np.unique`` sort
    strings instead of running a lexicographic sort over float columns: about 20
    times faster on a 3485 x 10127 matrix.
    """
    codes = np.where(np.isnan(X), 2, X).astype(np.uint8)
    if L is not None and L.shape[1]:
        codes = np.hstack(
            [np.ascontiguousarray(L, dtype=np.float64).view(np.uint8), codes]
        )
    codes = np.ascontiguousarray(codes)
    return codes.view(np.dtype((np.void, codes.shape[1]))).ravel()


def _unique_rows(L, X):
    """Merge identical rows of ``(L, X)``: representative indices and multiplicities."""
    _, first, counts = np.unique(_row_keys(X, L), return_index=True, return_counts=True)
    order = np.argsort(first)
    return first[order], counts[order].astype(np.float64)


def _unique_columns(X):
    """Representative column indices, and for every column its representative."""
    key = _row_keys(np.ascontiguousarray(X.T))
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    inverse = np.asarray(inverse).ravel()
    # map to representatives in order of first occurrence
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order], rank[inverse]


def _solve(
    L,
    X,
    *,
    tau,
    eps,
    nonnegative,
    feasibility,
    n_jobs,
    time_limit,
    columns=None,
    stop_at_first_infeasible=False,
    weights=None,
    parallel=None,
    first_block=8,
):
    """Solve the column LPs for validated float64 ``L`` (m, d), ``X`` (m, n).

    ``columns`` (int array) selects the columns, ``weights`` (m,) are row
    multiplicities (rows of ``L``/``X`` already merged by the caller), ``parallel`` an
    optional open ``Parallel`` instance to reuse. With ``stop_at_first_infeasible``
    (feasibility only) the columns are processed in blocks whose sizes do not depend
    on ``n_jobs`` (``first_block`` columns, then twice as many each time), stopping
    after the first block with an infeasible column; unattempted columns keep status
    ``not_solved``. Returns ``R`` (len(columns),
    d), int8 codes, objective values and the feasible mask.
    """
    m, d = L.shape
    if columns is None:
        columns = np.arange(X.shape[1])
    if weights is None:
        weights = np.ones(m)
    n_sel = columns.size
    R = np.zeros((n_sel, d))
    codes = np.full(n_sel, _NOT_SOLVED, dtype=np.int8)
    objective = np.zeros(n_sel)
    feasible = np.zeros(n_sel, dtype=bool)
    if n_sel == 0:
        return R, codes, objective, feasible
    start = time.perf_counter()
    n_workers = max(1, effective_n_jobs(n_jobs))

    def run_block(block):
        budget = None
        if time_limit is not None:
            budget = time_limit - (time.perf_counter() - start)
            if budget <= 0:
                return False
        n_chunks = min(n_workers, block.size)
        args = (tau, eps, nonnegative, feasibility, budget)
        if n_chunks == 1:
            results = [_solve_chunk(L, X[:, columns[block]], weights, *args)]
            slices = [slice(0, block.size)]
        else:
            slices = list(gen_even_slices(block.size, n_chunks))
            par = (
                parallel
                if parallel is not None
                else Parallel(n_jobs=n_jobs, prefer="threads")
            )
            results = par(
                delayed(_solve_chunk)(L, X[:, columns[block[sl]]], weights, *args)
                for sl in slices
            )
        for sl, (Rc, cc, oc, fc) in zip(slices, results, strict=True):
            pos = block[sl]
            R[pos], codes[pos], objective[pos], feasible[pos] = Rc, cc, oc, fc
        return True

    if not (feasibility and stop_at_first_infeasible):
        run_block(np.arange(n_sel))
    else:
        pos, size = 0, int(first_block)
        while pos < n_sel:
            block = np.arange(pos, min(pos + size, n_sel))
            if not run_block(block):
                break
            pos = block[-1] + 1
            if not feasible[block].all():
                break
            size *= 2
    unsolved = codes == _NOT_SOLVED
    if unsolved.any():
        objective[unsolved] = _zero_slack(X, columns[unsolved], weights, tau, eps)
    return R, codes, objective, feasible


def _validate(L, X, tau, eps, time_limit, factor_name, rows_name):
    tau = check_tau(tau)
    eps = _check_eps(eps)
    time_limit = _check_time_limit(time_limit)
    X = check_binary_matrix(X, allow_missing=True, accept_sparse=False)
    L = _check_factor(L, X.shape[0], factor_name, rows_name)
    return L, X, tau, eps, time_limit


def _solve_public(L, X, columns, *, feasibility, merge_columns=True, **kwargs):
    """Merge identical rows (and columns), solve the representatives, expand.

    Returns ``R``, status names, objective values and the feasible mask, one entry
    per selected column.
    """
    sub = X[:, columns]
    if merge_columns and columns.size:
        rep, owner = _unique_columns(sub)
    else:
        rep = owner = np.arange(columns.size)
    Xr = sub[:, rep]
    weights = None
    if rep.size:
        rows, counts = _unique_rows(L, Xr)
        if rows.size < L.shape[0]:
            L, Xr, weights = L[rows], Xr[rows], counts
    R, codes, objective, feasible = _solve(
        L, Xr, feasibility=feasibility, weights=weights, **kwargs
    )
    names = np.asarray(STATUS_NAMES)
    return R[owner], names[codes[owner]], objective[owner], feasible[owner]


def solve_columns_l1(
    L,
    X,
    *,
    tau=0.5,
    eps=DEFAULT_EPS,
    nonnegative=False,
    n_jobs=None,
    time_limit=None,
    columns=None,
):
    """Solve the paper's L1-slack LP for every column of ``X`` with ``L`` fixed.

    For each column ``j`` find ``r = R_j`` minimising the sum of slacks
    ``sum_i c_i`` subject to ``<L_i, r> + c_i >= tau + eps`` where ``X_ij = 1``,
    ``<L_i, r> - c_i <= tau - eps`` where ``X_ij = 0``, ``c >= 0``; missing entries
    (``NaN``) drop their constraint. The LPs are solved in their transposed form with
    HiGHS (see the module docstring for the derivation and the primal recovery).

    Parameters
    ----------
    L : array-like of shape (n_samples, d)
        Fixed left factor (finite floats).
    X : array-like of shape (n_samples, n_features)
        Binary data; ``NaN`` marks missing entries.
    tau : float, default=0.5
        Rounding threshold.
    eps : float, default=1e-6
        Separation margin (>= 0) of the constraints. The paper uses the smallest
        positive float, which is far below the LP tolerances: an ``r`` found with such
        an ``eps`` can round wrongly or fail :func:`~sklearn_rrank.certify_rounding`.
        The default ``1e-6`` is 1000 times the feasibility tolerances used (1e-9), so
        a constraint met by the LP holds with a gap of about ``1e-6`` in float64, which
        passes the certificate's relative margin (1e-9 times ``|L_i| . |r| + |tau|``)
        unless ``|L_i| . |r|`` exceeds about 1e3. Measured on paleo (phase 1 of the
        ProjLP rank search, 10 seeds): ``eps=1e-4`` gave the same bounds as ``1e-6``,
        while ``eps=1e-8`` gave larger ones (columns whose ``r`` failed the float64
        check). For ``tau = 0`` the LP is scale invariant and only the ratio of
        ``eps`` to the tolerances matters.
    nonnegative : bool, default=False
        If True, restrict ``r >= 0``.
    n_jobs : int or None, default=None
        Number of parallel workers (joblib; threads unless a backend is configured
        with :func:`joblib.parallel_config`). Results do not depend on ``n_jobs``.
    time_limit : float or None, default=None
        Wall-clock limit in seconds for the whole call. Columns whose LP was stopped by
        it have status ``"time_limit"``, columns never attempted ``"not_solved"``.
    columns : array-like of int or None, default=None
        Solve only these columns (in this order); the outputs then have
        ``len(columns)`` rows.

    Returns
    -------
    R : ndarray of shape (n_features, d), dtype float64
        ``R[j]`` is the solution ``r`` of column ``j`` (zeros if not solved).
    status : ndarray of shape (n_features,), dtype str
        Per-column status, one of ``"optimal"``, ``"time_limit"``,
        ``"iteration_limit"``, ``"numerical_error"``, ``"not_solved"`` (see the module
        docstring). Only ``"optimal"`` columns are proven optimal.
    objective : ndarray of shape (n_features,), dtype float64
        Sum of slacks ``sum_i c_i`` recomputed in float64 at the returned ``r``; for an
        optimal column it is the LP optimum.

    Raises
    ------
    ValueError
        If ``X`` is not binary, shapes do not match, or a parameter is out of range.
    TypeError
        If ``tau``, ``eps`` or ``time_limit`` is not a number.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 3, paragraph "Projection-based
    algorithm (ProjLP)", the L1-slack LP.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank._lp import solve_columns_l1
    >>> L = np.array([[1.0], [2.0], [3.0]])
    >>> X = np.array([[0, 1], [1, 1], [1, 0]])
    >>> R, status, objective = solve_columns_l1(L, X)
    >>> status.tolist()
    ['optimal', 'optimal']
    >>> bool(objective[0] < 1e-9)       # column 0 is separable: no slack needed
    True
    >>> bool(((L @ R.T >= 0.5) == X)[:, 0].all())
    True
    """
    L, X, tau, eps, time_limit = _validate(L, X, tau, eps, time_limit, "L", "rows")
    return _solve_columns_l1(
        L,
        X,
        tau=tau,
        eps=eps,
        nonnegative=nonnegative,
        n_jobs=n_jobs,
        time_limit=time_limit,
        columns=columns,
    )


def _solve_columns_l1(
    L,
    X,
    *,
    tau=0.5,
    eps=DEFAULT_EPS,
    nonnegative=False,
    n_jobs=None,
    time_limit=None,
    columns=None,
):
    """:func:`solve_columns_l1` on validated ``X`` and a float64 ``L``; no checks."""
    cols = _check_columns(columns, X.shape[1])
    R, status, objective, _ = _solve_public(
        L,
        X,
        cols,
        feasibility=False,
        tau=tau,
        eps=eps,
        nonnegative=bool(nonnegative),
        n_jobs=n_jobs,
        time_limit=time_limit,
    )
    return R, status, objective


def solve_columns_feasibility(
    L,
    X,
    *,
    tau=0.5,
    eps=DEFAULT_EPS,
    nonnegative=False,
    n_jobs=None,
    time_limit=None,
    columns=None,
    stop_at_first_infeasible=False,
):
    """Decide for every column of ``X`` whether ``L`` admits a separating ``r``.

    Column ``j`` is *feasible* if there is ``r`` with ``<L_i, r> >= tau + eps`` where
    ``X_ij = 1`` and ``<L_i, r> <= tau - eps`` where ``X_ij = 0`` (missing entries
    dropped). It is decided with the L1-slack LP (feasible iff its optimum is 0), and
    a column is reported feasible only if the recovered ``r`` satisfies every observed
    constraint in float64 with (twice) the margin of
    :func:`~sklearn_rrank.certify_rounding`, so that the assembled factors of
    feasible columns always pass the certificate.

    Parameters
    ----------
    L : array-like of shape (n_samples, d)
        Fixed left factor.
    X : array-like of shape (n_samples, n_features)
        Binary data; ``NaN`` marks missing entries.
    tau : float, default=0.5
        Rounding threshold.
    eps : float, default=1e-6
        Separation margin; see :func:`solve_columns_l1`.
    nonnegative : bool, default=False
        If True, restrict ``r >= 0``.
    n_jobs : int or None, default=None
        Number of parallel workers; results do not depend on it.
    time_limit : float or None, default=None
        Wall-clock limit in seconds for the whole call.
    columns : array-like of int or None, default=None
        Solve only these columns, in this order.
    stop_at_first_infeasible : bool, default=False
        If True, process the columns in blocks of 8, 16, 32, ... (block sizes do not
        depend on ``n_jobs``) and stop after the first block holding an infeasible
        column. Later columns get status ``"not_solved"``.

    Returns
    -------
    R : ndarray of shape (n_features, d), dtype float64
        Separating vectors of the feasible columns (the L1 solution otherwise).
    feasible_mask : ndarray of shape (n_features,), dtype bool
        True for certified-feasible columns.
    status : ndarray of shape (n_features,), dtype str
        Per-column LP status (see the module docstring); ``"uncertified"`` marks a
        zero LP optimum whose ``r`` failed the float64 check.

    Raises
    ------
    ValueError
        If ``X`` is not binary, shapes do not match, or a parameter is out of range.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 3, the feasibility LP of ProjLP.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank._lp import solve_columns_feasibility
    >>> L = np.array([[1.0], [2.0], [3.0]])
    >>> X = np.array([[0, 1], [1, 1], [1, 0]])
    >>> R, feasible, status = solve_columns_feasibility(L, X)
    >>> feasible.tolist()      # column 1 (ones at 1 and 2, zero at 3) needs r < 0 < r
    [True, False]
    """
    L, X, tau, eps, time_limit = _validate(L, X, tau, eps, time_limit, "L", "rows")
    cols = _check_columns(columns, X.shape[1])
    R, status, _, feasible = _solve_public(
        L,
        X,
        cols,
        feasibility=True,
        # merging columns would change the order in which blocks are attempted
        merge_columns=not stop_at_first_infeasible,
        stop_at_first_infeasible=bool(stop_at_first_infeasible),
        tau=tau,
        eps=eps,
        nonnegative=bool(nonnegative),
        n_jobs=n_jobs,
        time_limit=time_limit,
    )
    return R, feasible, status


def solve_rows_l1(
    R,
    X,
    *,
    tau=0.5,
    eps=DEFAULT_EPS,
    nonnegative=False,
    n_jobs=None,
    time_limit=None,
    rows=None,
):
    """Solve the L1-slack LP for every row of ``X`` with the right factor ``R`` fixed.

    The same LP as :func:`solve_columns_l1` with the roles of rows and columns
    swapped: row ``i`` gets ``l = L_i`` minimising the slacks of
    ``<l, R_j> >= tau + eps`` (``X_ij = 1``) and ``<l, R_j> <= tau - eps``
    (``X_ij = 0``). Equivalent to ``solve_columns_l1(R, X.T, ...)``.

    Parameters
    ----------
    R : array-like of shape (n_features, d)
        Fixed right factor.
    X : array-like of shape (n_samples, n_features)
        Binary data; ``NaN`` marks missing entries.
    tau : float, default=0.5
        Rounding threshold.
    eps : float, default=1e-6
        Separation margin; see :func:`solve_columns_l1`.
    nonnegative : bool, default=False
        If True, restrict ``l >= 0``.
    n_jobs : int or None, default=None
        Number of parallel workers; results do not depend on it.
    time_limit : float or None, default=None
        Wall-clock limit in seconds for the whole call.
    rows : array-like of int or None, default=None
        Solve only these rows, in this order.

    Returns
    -------
    L : ndarray of shape (n_samples, d), dtype float64
        ``L[i]`` solves the LP of row ``i``.
    status : ndarray of shape (n_samples,), dtype str
        Per-row status (see :func:`solve_columns_l1`).
    objective : ndarray of shape (n_samples,), dtype float64
        Sum of slacks at the returned ``L[i]``.

    Raises
    ------
    ValueError
        If ``X`` is not binary, shapes do not match, or a parameter is out of range.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 3 (ProjLP), with the roles of
    the factors swapped.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank._lp import solve_rows_l1
    >>> R = np.array([[1.0], [2.0], [3.0]])
    >>> L, status, objective = solve_rows_l1(R, [[0, 1, 1]])
    >>> status.tolist(), bool(objective[0] < 1e-9)
    (['optimal'], True)
    """
    tau = check_tau(tau)
    eps = _check_eps(eps)
    time_limit = _check_time_limit(time_limit)
    X = check_binary_matrix(X, allow_missing=True, accept_sparse=False)
    R = _check_factor(R, X.shape[1], "R", "columns")
    return _solve_rows_l1(
        R,
        X,
        tau=tau,
        eps=eps,
        nonnegative=nonnegative,
        n_jobs=n_jobs,
        time_limit=time_limit,
        rows=rows,
    )


def _solve_rows_l1(
    R,
    X,
    *,
    tau=0.5,
    eps=DEFAULT_EPS,
    nonnegative=False,
    n_jobs=None,
    time_limit=None,
    rows=None,
):
    """:func:`solve_rows_l1` on validated ``X`` and a float64 ``R``; no checks."""
    XT = np.ascontiguousarray(X.T)
    cols = _check_columns(rows, XT.shape[1])
    L, status, objective, _ = _solve_public(
        R,
        XT,
        cols,
        feasibility=False,
        tau=tau,
        eps=eps,
        nonnegative=bool(nonnegative),
        n_jobs=n_jobs,
        time_limit=time_limit,
    )
    return L, status, objective
