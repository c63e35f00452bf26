"""The HiGHS batch engine: many small LPs for one fixed factor, in parallel.

The engine behind :mod:`sklearn_rrank._projlp._lp` (the row and column LP formulations
and
their public doors): for a validated float64 left factor ``L`` (m, d) and the
columns of a binary ``X`` it solves the transposed L1-slack LP of every column with
one ``highspy.Highs`` model per worker, recovers and checks ``r`` in float64, and
returns int8 status codes (names in :data:`STATUS_NAMES`). It trusts its input.
It also merges identical rows and columns (with
:func:`~sklearn_rrank._core._rows.row_classes`, as
:class:`~sklearn_rrank._search._skeleton.BinaryData` does).

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
(``clearSolver``), or from its own basis of the previous round of the same LPs
(:class:`WarmStart`), so results do not depend on the chunking, i.e. on ``n_jobs``.
Presolve is off and ``Highs.run()`` is used (``solve()`` installs an interrupt handler
that serialises threads).

References
----------
Neumann, Gemulla, Miettinen, "What You Will Gain By Rounding: Theory and Algorithms for
Rounding Rank", ICDM 2016, Section 3, paragraph "Projection-based algorithm (ProjLP)".
"""

import ctypes
import os
import sys
import threading
from dataclasses import dataclass

import highspy
import numpy as np
from sklearn.utils import gen_even_slices

from sklearn_rrank._core._parallel import Parallel, delayed, effective_n_jobs
from sklearn_rrank._core._rounding import (
    DEFAULT_MARGIN,
    _certified_entries,
    _row_batches,
)
from sklearn_rrank._core._rows import row_classes

__all__ = ["DEFAULT_EPS", "STATUS_NAMES", "ColumnLPs", "WarmStart"]

#: Default separation margin ``eps`` of the LPs. See :func:`solve_columns_l1`.
DEFAULT_EPS = 1e-6


@dataclass(frozen=True)
class ColumnLPs:
    """What every LP of one call of the engine shares.

    Attributes
    ----------
    tau : float
        Rounding threshold.
    eps : float, default=1e-6
        Separation margin of the constraints (:data:`DEFAULT_EPS`).
    nonnegative : bool, default=False
        ``r >= 0`` (a bound on the non-negative rounding rank).
    feasibility : bool, default=False
        The feasibility LP (every entry met with margin ``eps``, checked with the
        certificate's margin) or the L1-slack LP.
    """

    tau: float
    eps: float = DEFAULT_EPS
    nonnegative: bool = False
    feasibility: bool = False


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

# HiGHS options of every worker model: feasibility tolerances of 1e-9 keep r far inside
# the default eps; the dual simplex is the fastest strategy on the transposed form
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
    deadline,
    bases=None,
):
    """Solve the LPs of the columns of ``Xc`` (m, n_chunk) for fixed ``L`` (m, d).

    Module-level and free of Highs objects in its arguments, so it pickles for loky
    and dask. ``weights`` (m,) are the multiplicities of merged identical rows.
    ``deadline`` is the call's :class:`~sklearn_rrank._search._skeleton.Deadline` (or
    None: no limit); this leaf turns it into HiGHS's ``time_limit`` seconds.
    ``bases`` (n_chunk, m + d) int8, or None: the basis each column's LP starts
    from (its column then row statuses, :func:`_basis_codes`; a row of -1: a cold
    start); the final bases are returned in a copy of it (else None), so a caller
    can start the next round of the same LPs from them.
    Returns ``R`` (n_chunk, d), int8 status codes, the slack sum at each
    returned ``r``, (feasibility) a boolean mask of certified-feasible columns and
    the final bases.
    """
    m, d = L.shape
    n_chunk = Xc.shape[1]
    R = np.zeros((n_chunk, d))
    codes = np.full(n_chunk, _NOT_SOLVED, dtype=np.int8)
    objective = np.zeros(n_chunk)
    feasible = np.zeros(n_chunk, dtype=bool)
    bases = None if bases is None else np.array(bases, dtype=np.int8)
    if n_chunk == 0:
        return R, codes, objective, feasible, bases
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
            remaining = None if deadline is None else deadline.remaining()
            if remaining is not None and remaining <= 0:
                break
            if h is None:
                h = _build_model(L, nonnegative)
            if remaining is not None:
                h.setOptionValue("time_limit", h.getRunTime() + remaining)
            lower = np.where(ones, 0.0, -wobs)
            upper = np.where(ones, wobs, 0.0)
            cost = np.where(observed, tau + eps * s, 0.0)
            # each LP starts from nothing but its own basis (or none): the result
            # of a column does not depend on which columns a worker solved before
            h.clearSolver()
            h.changeColsBounds(m, idx, lower, upper)
            h.changeColsCost(m, idx, cost)
            if bases is not None and bases[t, 0] >= 0:
                h.setBasis(_highs_basis(bases[t], m))
            h.run()
            if bases is not None:
                bases[t] = _basis_codes(h.getBasis(), m + d)
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
    return R, codes, objective, feasible, bases


_BASIS_STATUSES = tuple(highspy.HighsBasisStatus(v) for v in range(5))


def _basis_codes(basis, size):
    """A HiGHS basis as int8 codes (columns then rows); -1 where it is not valid."""
    if not basis.valid:
        return np.full(size, -1, dtype=np.int8)
    codes = [int(v) for v in basis.col_status] + [int(v) for v in basis.row_status]
    return np.asarray(codes, dtype=np.int8)


def _highs_basis(codes, m):
    """The HiGHS basis of int8 ``codes`` (``m`` columns, then the rows)."""
    basis = highspy.HighsBasis()
    basis.col_status = [_BASIS_STATUSES[v] for v in codes[:m]]
    basis.row_status = [_BASIS_STATUSES[v] for v in codes[m:]]
    basis.valid = True
    return basis


def _zero_slack(X, columns, weights, tau, eps):
    """Slack sums of the columns ``columns`` of ``X`` at ``r = 0`` (never solved).

    Computed by blocks of columns (:func:`~sklearn_rrank._core._rounding._row_batches`
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
# merging identical rows and columns; the batch driver
# ----------------------------------------------------------------------------------
def _unique_rows(L, X):
    """Merge identical rows of ``(L, X)``: representative indices and multiplicities."""
    first, counts, _ = row_classes(X, prefix=L)
    return first, counts


def _unique_columns(X):
    """Representative column indices, and for every column its representative."""
    first, _, owner = row_classes(np.ascontiguousarray(X.T))
    return first, owner


def _solve(
    L,
    X,
    lp,
    *,
    n_jobs,
    deadline,
    columns=None,
    weights=None,
    parallel=None,
    bases=None,
    first_block=None,
):
    """Solve the column LPs for validated float64 ``L`` (m, d), ``X`` (m, n).

    ``lp`` (a :class:`ColumnLPs`) says which LPs: threshold, margin, sign of ``r``,
    feasibility or L1 slack. ``deadline`` is the call's
    :class:`~sklearn_rrank._search._skeleton.Deadline` or None
    (no limit); it goes to every chunk as it is. ``columns`` (int array) selects the
    columns, ``weights`` (m,) are row
    multiplicities (rows of ``L``/``X`` already merged by the caller), ``parallel`` an
    optional open ``Parallel`` instance to reuse. With ``first_block`` (an int;
    feasibility only) the columns are processed in blocks whose sizes do not depend
    on ``n_jobs`` (``first_block`` columns, then twice as many each time), stopping
    after the first block with an infeasible column; unattempted columns keep status
    ``not_solved``. None: every column. ``bases`` (len(columns), m + d) int8 or
    None: each LP starts from its row of it (-1: cold) and the final bases are
    written back into it (the warm start of :class:`WarmStart`). Returns ``R``
    (len(columns), d), int8 codes, objective values and the feasible mask.
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
    n_workers = max(1, effective_n_jobs(n_jobs))

    def run_block(block):
        if deadline is not None and deadline.expired():
            return False
        n_chunks = min(n_workers, block.size)
        args = (lp.tau, lp.eps, lp.nonnegative, lp.feasibility, deadline)

        def start(sl):
            return None if bases is None else bases[block[sl]]

        if n_chunks == 1:
            slices = [slice(0, block.size)]
            X_block = X[:, columns[block]]
            results = [_solve_chunk(L, X_block, weights, *args, start(slices[0]))]
        else:
            slices = list(gen_even_slices(block.size, n_chunks))
            par = (
                parallel
                if parallel is not None
                else Parallel(n_jobs=n_jobs, prefer="threads")
            )
            results = par(
                delayed(_solve_chunk)(
                    L, X[:, columns[block[sl]]], weights, *args, start(sl)
                )
                for sl in slices
            )
        for sl, (Rc, cc, oc, fc, bc) in zip(slices, results, strict=True):
            pos = block[sl]
            R[pos], codes[pos], objective[pos], feasible[pos] = Rc, cc, oc, fc
            if bases is not None:
                bases[pos] = bc
        return True

    if not lp.feasibility or first_block is None:
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
        objective[unsolved] = _zero_slack(X, columns[unsolved], weights, lp.tau, lp.eps)
    return R, codes, objective, feasible


class WarmStart:
    """The final bases of one family of LPs, to start their next round from.

    ProjLP's alternating rounds solve the LPs of the same columns again for a
    factor that changed a little; each LP then starts from its own previous basis
    (HiGHS ``setBasis``) instead of from nothing. The bases are kept per column
    (``columns`` of :func:`_solve`), for one shape ``(m, d)`` of the merged rows
    and width: when the merged rows change, the next round starts cold. Results
    do not depend on ``n_jobs``: a column's start is its own basis only. Memory:
    ``m + d`` bytes per column.
    """

    def __init__(self, n_columns):
        self.n_columns = int(n_columns)
        self.rows = None  # the merged rows the bases were found on
        self.bases = None  # (n_columns, m + d) int8, -1: none yet

    def get(self, rows, d, columns):
        """Start bases of ``columns`` on the merged ``rows`` at width ``d``."""
        size = rows.size + d
        if self.bases is None or self.bases.shape[1] != size:
            self.bases = np.full((self.n_columns, size), -1, dtype=np.int8)
            self.rows = rows
        elif not np.array_equal(self.rows, rows):
            self.bases.fill(-1)
            self.rows = rows
        return self.bases[columns]

    def put(self, columns, bases):
        """Keep the final ``bases`` of ``columns``."""
        self.bases[columns] = bases
