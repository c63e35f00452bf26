"""The row and column LP formulations of ProjLP and their public doors.

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

The LPs are solved by the HiGHS batch engine of :mod:`sklearn_rrank._core._lp_engine`
(its docstring derives the transposed form, the primal recovery, the status codes
and the parallelism).

References
----------
Neumann, Gemulla, Miettinen, "What You Will Gain By Rounding: Theory and Algorithms for
Rounding Rank", ICDM 2016, Section 3, paragraph "Projection-based algorithm (ProjLP)".
"""

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, validate_params

from sklearn_rrank._core._lp_engine import (
    DEFAULT_EPS,
    STATUS_NAMES,
    ColumnLPs,
    _solve,
    _unique_columns,
    _unique_rows,
)
from sklearn_rrank._core._validation import check_binary_matrix
from sklearn_rrank._search._skeleton import Deadline

__all__ = [
    "DEFAULT_EPS",
    "STATUS_NAMES",
    "solve_columns_feasibility",
    "solve_columns_l1",
    "solve_rows_l1",
]


# -- parameter constraints (declared once) and input checks ---------------------------

#: the LPs' parameters and their constraints: this module's doors and ProjLP's ``eps``
LP_PARAMS = {
    "X": ["array-like"],
    "tau": [Interval(Real, None, None, closed="neither")],
    "eps": [Interval(Real, 0, None, closed="left")],
    "nonnegative": ["boolean"],
    "n_jobs": [Integral, None],
    "time_limit": [Interval(Real, 0, None, closed="left"), None],
}


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


def _validate(L, X, tau, eps):
    """Data checks of a column door (its parameters passed ``validate_params``)."""
    X = check_binary_matrix(X, allow_missing=True, accept_sparse=False)
    L = _check_factor(L, X.shape[0], "L", "rows")
    return L, X, float(tau), float(eps)


def _solve_public(
    L, X, columns, *, feasibility, merge_columns=True, warm=None, **kwargs
):
    """Merge identical rows (and columns), solve the representatives, expand.

    ``kwargs`` hold the LPs' ``tau``, ``eps`` and ``nonnegative`` (a
    :class:`~sklearn_rrank._core._lp_engine.ColumnLPs` with ``feasibility``),
    ``stop_at_first_infeasible`` (blocks of 8 columns, doubling) and the engine's
    ``n_jobs``, ``deadline`` and ``parallel``. ``warm`` (a
    :class:`~sklearn_rrank._core._lp_engine.WarmStart` over the columns of ``X``, or
    None) starts each LP from its basis of the previous call and keeps
    the new ones. Returns ``R``, status names, objective values and the feasible
    mask, one entry per selected column.
    """
    sub = X[:, columns]
    if merge_columns and columns.size:
        rep, owner = _unique_columns(sub)
    else:
        rep = owner = np.arange(columns.size)
    Xr = sub[:, rep]
    weights = None
    rows = np.arange(L.shape[0])
    if rep.size:
        rows, counts = _unique_rows(L, Xr)
        if rows.size < L.shape[0]:
            L, Xr, weights = L[rows], Xr[rows], counts
    bases = None if warm is None else warm.get(rows, L.shape[1], columns[rep])
    lp = ColumnLPs(
        tau=kwargs.pop("tau"),
        eps=kwargs.pop("eps", DEFAULT_EPS),
        nonnegative=kwargs.pop("nonnegative", False),
        feasibility=feasibility,
    )
    stop = kwargs.pop("stop_at_first_infeasible", False)
    R, codes, objective, feasible = _solve(
        L,
        Xr,
        lp,
        weights=weights,
        bases=bases,
        first_block=8 if stop else None,
        **kwargs,
    )
    if warm is not None:
        warm.put(columns[rep], bases)
    names = np.asarray(STATUS_NAMES)
    return R[owner], names[codes[owner]], objective[owner], feasible[owner]


@validate_params(
    {"L": ["array-like"], **LP_PARAMS, "columns": ["array-like", None]},
    prefer_skip_nested_validation=True,
)
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
    HiGHS (see :mod:`sklearn_rrank._core._lp_engine` for the derivation and the primal
    recovery).

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
    >>> from sklearn_rrank._projlp._lp import solve_columns_l1
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
    deadline = Deadline(time_limit)  # the budget counts from the door
    L, X, tau, eps = _validate(L, X, tau, eps)
    return _solve_columns_l1(
        L,
        X,
        tau=tau,
        eps=eps,
        nonnegative=nonnegative,
        n_jobs=n_jobs,
        deadline=deadline,
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
    deadline=None,
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
        deadline=deadline,
    )
    return R, status, objective


@validate_params(
    {
        "L": ["array-like"],
        **LP_PARAMS,
        "columns": ["array-like", None],
        "stop_at_first_infeasible": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
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
        Per-column LP status (see :mod:`sklearn_rrank._core._lp_engine`);
        ``"uncertified"`` marks a zero LP optimum whose ``r`` failed the float64
        check.

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
    >>> from sklearn_rrank._projlp._lp import solve_columns_feasibility
    >>> L = np.array([[1.0], [2.0], [3.0]])
    >>> X = np.array([[0, 1], [1, 1], [1, 0]])
    >>> R, feasible, status = solve_columns_feasibility(L, X)
    >>> feasible.tolist()      # column 1 (ones at 1 and 2, zero at 3) needs r < 0 < r
    [True, False]
    """
    deadline = Deadline(time_limit)  # the budget counts from the door
    L, X, tau, eps = _validate(L, X, tau, eps)
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
        deadline=deadline,
    )
    return R, feasible, status


@validate_params(
    {"R": ["array-like"], **LP_PARAMS, "rows": ["array-like", None]},
    prefer_skip_nested_validation=True,
)
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
    >>> from sklearn_rrank._projlp._lp import solve_rows_l1
    >>> R = np.array([[1.0], [2.0], [3.0]])
    >>> L, status, objective = solve_rows_l1(R, [[0, 1, 1]])
    >>> status.tolist(), bool(objective[0] < 1e-9)
    (['optimal'], True)
    """
    deadline = Deadline(time_limit)  # the budget counts from the door
    X = check_binary_matrix(X, allow_missing=True, accept_sparse=False)
    R = _check_factor(R, X.shape[1], "R", "columns")
    return _solve_rows_l1(
        R,
        X,
        tau=float(tau),
        eps=float(eps),
        nonnegative=nonnegative,
        n_jobs=n_jobs,
        deadline=deadline,
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
    deadline=None,
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
        deadline=deadline,
    )
    return L, status, objective
