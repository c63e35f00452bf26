"""ProjLP's rank search: nested projections, LP descent and random retries.

The certified upper bound of ProjLP (the paper's Section 3, "Projection-based
algorithm (ProjLP)"), searched through the rank-search skeleton: phase 1 (nested
or fresh Achlioptas projections, feasibility LPs per column), phase 2 (refinement
descent by alternating L1-slack LPs, our addition) and phase 3 (random retries).
Inputs of at least ``LargeInput.entries`` (4e6) merged entries start with the
copied-columns phase 0 of :mod:`sklearn_rrank._projlp._copied`. The fit, the
transform and the projection kernels are in :mod:`sklearn_rrank._projlp._projlp`.
"""

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from sklearn_rrank._core._lp_engine import (
    _NOT_SOLVED,
    STATUS_NAMES,
    ColumnLPs,
    _solve,
)
from sklearn_rrank._core._memory import dense_copy_refused, gib
from sklearn_rrank._core._parallel import Parallel, delayed, effective_n_jobs
from sklearn_rrank._core._rounding import (
    _count_errors_factors,
    _factor_rows,
)
from sklearn_rrank._projlp._copied import (
    _copied_columns_search,
    _test_projection,
    _trivial_factors,
    _truncated_product,
    _uncertified_columns,
)
from sklearn_rrank._projlp._projlp import (
    LARGE_INPUT,
    LargeInput,
    _alternate,
    _Projection,
    _projection_input,
    _projection_matrix,
)
from sklearn_rrank._projlp._records import ProjLPDiagnostics, ProjLPSearchOptions
from sklearn_rrank._search._policy import DEFAULT_POLICY, SearchPolicy

__all__ = []

# relative objective decrease per round below which a refinement try gives up
_REFINE_TOL = 1e-2
# projections tested concurrently in phase 3 of the rank search
_PHASE3_BATCH = 4


def _column_counts(X, value):
    """Observed entries per column of ``X`` that differ from ``value`` (0 or 1).

    ``X`` dense (NaN = missing) or CSR (complete: the stored ones).
    """
    if sp.issparse(X):
        ones = np.asarray((X == 1).sum(axis=0)).ravel()
        return X.shape[0] - ones if value else ones
    return (~np.isnan(X) & (X != float(value))).sum(axis=0)


def _projlp_search(
    X,
    incumbent,
    deadline,
    *,
    tau,
    random_state=None,
    n_jobs=None,
    verbose=0,
    large=LARGE_INPUT,
    **params,
):
    """ProjLP's rank search: the family of ``methods=("projlp",)``.

    Trusts its input (``X`` a validated float64 array, NaN = missing; parameters
    checked). Every candidate goes through ``incumbent.offer`` (the one
    certification); phase 1 tries only widths ``max(1, lower) <= d < bound``, phase 2
    descends from ``incumbent.best_factors()``, which may be another method's
    certificate, and everything stops once ``incumbent.done``. ``deadline`` is
    checked between steps and handed to the LP engine as it is. Returns the
    diagnostics dict (``"message"``; ``"stopped_early"`` if phase 1 found no
    certificate up to ``max_rank`` or the deadline ended it).

    The search runs inside the rank-search skeleton
    (:func:`sklearn_rrank._search._skeleton.run_rank_search`): the skeleton checks the
    rank-0 case, owns the deadline, and certifies every candidate ``(L, R)`` once,
    with the kernel of :func:`~sklearn_rrank.certify_rounding`, keeping the best.
    Identical rows and columns of ``X`` are merged first (each distinct column is one
    LP; repeated rows become LP weights).

    **Phase 0** (large input, our addition). When the merged matrix has at least
    ``4e6`` entries (and ``nonnegative=False``), one LP per column and width is too
    slow (each LP grows with the rows and the width), so phases
    1-3 are replaced by: for a few widths ``d`` (a pattern search from ``min(m',
    n') / 12``), the factors start from the truncated SVD ``(U_d S_d, V_d)`` of ``X``
    and :func:`~sklearn_rrank._core._separation.alternate_separation` refines them:
    rounds
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
    as the offset) and separates the columns only, without alternation. On
    sparse ``X`` with ``tau > 0`` the merged matrix stays CSR through phase 0:
    every step makes only a block of its rows or columns dense (the LP phases,
    if phase 0 leaves the search to them, get it dense).

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

    The scan stays linear, not the bracket order of L-PCA: with nested projections
    it solves each column once plus one infeasible LP per width, while a bisection
    solves again the columns it had solved above (1.4 to 3.4 times the LPs on 10
    of 11 small matrices; ``benchmarks/projlp_phase1_order.py`` counts them).

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
    beyond the paper's ProjLP (``benchmarks/panel.py`` measures the bounds).

    **Phase 3** (random retries; our addition, ``n_retries > 0``). Draw fresh
    projections of width ``b - 1`` and test all columns, those that failed most often
    first, abandoning a projection at its first infeasible column (blocks of 1, 2,
    4, ...; four projections at a time, independent of ``n_jobs``). A passing
    projection lowers the bound by one. Stops after ``n_retries`` consecutive failing
    projections. Useful with ``refine=False`` for a projection-only search.

    The defaults ``nested=True, projection="dense"`` need fewer LPs and less time
    for bounds of the same quality than the paper's loop and the sparse projection
    (Paleo and APJ, several seeds; ``benchmarks/README.md`` gives the numbers).

    Users run it through :func:`~sklearn_rrank.rounding_rank_bounds` with
    ``methods=("projlp",)``; ``time_limit`` (also handed to HiGHS), ``random_state``
    (the projections' seed), ``n_jobs`` (parallel LP workers; the result does not
    depend on it) and ``verbose`` (1: summary line; 2: one line per ``d`` and per
    improvement) come from there.

    Method parameters (``method_params={"projlp": {...}}``, the keywords
    ``params``, a :class:`~sklearn_rrank._projlp._records.ProjLPSearchOptions`)
    ------------------------------------------------------
    nested : bool, default=True
        Nested projections or the paper's fresh projection per ``d`` (phase 1).
    max_rank : int or None, default=None
        Largest ``d`` tried in phase 1 (and largest width of the trivial fallback);
        default ``min(n_samples, n_features) + 1``.
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
    policy : SearchPolicy or None, default=None
        The rules of the search (:mod:`sklearn_rrank._search._policy`): phase 2's
        step (:meth:`~sklearn_rrank._search._policy.SearchPolicy.descent_step`)
        and phase 0's descent
        (:meth:`~sklearn_rrank._search._policy.SearchPolicy.descent_width`).
        None: the default rules.

    Returns
    -------
    result : dict (the ``info`` of the RankSearchResult)
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

    Other Parameters
    ----------------
    large : LargeInput, default=LARGE_INPUT
        ProjLP's rules for large input
        (:class:`~sklearn_rrank._projlp._records.LargeInput`): the size from which
        phase 0 runs and the lengths of its steps. Not a method parameter.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 3, "Projection-based algorithm
    (ProjLP)", and Table 2 (ProjLP bounds: paleo 26, apj 29).
    """
    opts = ProjLPSearchOptions(**params)
    nonnegative = bool(opts.nonnegative)
    max_rank = min(X.shape) + 1 if opts.max_rank is None else opts.max_rank
    if sp.issparse(X):  # sparse data: only the merged rows are made dense
        row_rep, col_rep = (
            incumbent.data.unique_rows[0],
            incumbent.data.unique_columns[0],
        )
        shape = (row_rep.size, col_rep.size)
        refused = dense_copy_refused(row_rep.size, X.shape[1])
        # phase 0 reads a sparse merged matrix by blocks: it runs where no copy fits
        if refused and not _sparse_phase0(X, shape, tau, nonnegative, large):
            return {"message": f"skipped: {refused}"}
    search = _ProjLPSearch.merged(
        X,
        incumbent,
        deadline,
        tau=tau,
        eps=opts.eps,
        nonnegative=nonnegative,
        projection=opts.projection,
        n_jobs=n_jobs,
        verbose=verbose,
        rng=check_random_state(random_state),
        nested=bool(opts.nested),
        large=large,
    )
    if opts.policy is not None:
        search.policy = opts.policy
    with Parallel(n_jobs=n_jobs, prefer="threads") as parallel:
        search.parallel = parallel
        end = None
        if _phase0_applies(search.Xu.shape, search.nonnegative, large):
            end = search.phase0()
        if end is None and sp.issparse(search.Xu):
            end = _lp_phases_skipped(search) or _dense_refused(search)
            if end is None:
                search.Xu = search.Xu.toarray()  # the LP phases read it dense
        end = end or search.phase1(bool(opts.nested), max_rank)
        end = end or search.phase2(bool(opts.refine), int(opts.refine_iter))
        end = end or search.phase3(int(opts.n_retries))
    if end is None:
        if incumbent.rank is None:
            end = (False, f"no certificate below {incumbent.limit_text()}")
        else:
            end = (False, "certified")
    return search.finish(*end)


def _lp_phases_skipped(search):
    """The end of a search on sparse data whose phase 0 could not start, or None.

    The LP phases read the merged matrix dense and solve one LP per merged column
    and width, slower than phase 0 (which exists because the LPs do not scale).
    When phase 0 did not even fit its SVD start in the time left, they are not
    run: on large sparse data they would make the merged matrix dense (many times
    the memory of the data) and solve few LPs before the deadline.
    """
    if not search.diag.phase0_skipped or search.diag.phase0_tried:
        return None
    m_u, n_u = search.Xu.shape
    return (
        True,
        f"the LP phases were not run (they read the merged matrix dense, "
        f"{gib(8 * m_u * n_u)}, and are slower than phase 0)",
    )


def _dense_refused(search):
    """The end of a search whose LP phases would need a dense copy that won't fit."""
    refused = dense_copy_refused(*search.Xu.shape)
    return (True, f"the LP phases were not run: {refused}") if refused else None


def _merged_rows(X, row_rep, *, keep_sparse=False):
    """The rows ``row_rep`` of ``X`` (``X`` itself when no row is merged).

    Copies only what merging shrinks; of sparse ``X`` only the merged rows are
    made dense, unless ``keep_sparse``.
    """
    Xr = X if row_rep.size == X.shape[0] else X[row_rep]
    return Xr.toarray() if sp.issparse(Xr) and not keep_sparse else Xr


def _phase0_applies(shape, nonnegative, large):
    """Whether the search on a merged matrix of ``shape`` starts with phase 0."""
    return not nonnegative and shape[0] * shape[1] >= large.entries


def _sparse_phase0(X, shape, tau, nonnegative, large):
    """Whether the merged matrix stays CSR: complete sparse ``X``, phase 0 with tau > 0.

    Phase 0 with ``tau > 0`` reads the merged matrix only by blocks of rows or
    columns (separations, certificates, the copied columns and their LPs), so it
    is never made dense (a dense merged matrix of a large sparse input dominates
    the memory of the call). The LP phases (and
    phase 0 with ``tau <= 0``, which projects) read it dense.
    """
    if not sp.issparse(X) or np.isnan(X.data).any():  # sparse and complete only
        return False
    return tau > 0 and _phase0_applies(shape, nonnegative, large)


@dataclass
class _ProjLPSearch:
    """The state of one ProjLP rank search and its phases (see ``_projlp_search``).

    ``Xu`` is ``X`` with identical rows and columns merged (``weights`` counts the
    rows each merged row stands for; ``row_owner``/``col_owner`` map the rows and
    columns of ``X`` to the merged ones) and ``X0u`` the projection input (made on
    first use); ``diag`` holds the diagnostics the phases write. The phases
    return ``None`` to go on, or ``(stopped, message)`` to end the search.
    """

    X: np.ndarray
    Xu: np.ndarray
    weights: np.ndarray
    row_rep: np.ndarray
    col_rep: np.ndarray
    row_owner: np.ndarray
    col_owner: np.ndarray
    incumbent: object
    deadline: object
    tau: float
    eps: float
    nonnegative: bool
    projection: str
    n_jobs: object
    verbose: int
    rng: np.random.RandomState
    diag: ProjLPDiagnostics
    t_start: float
    # attempt order of the merged columns; failing columns move to the front
    queue: list = field(default_factory=list)
    fail_count: np.ndarray = None
    # wrong entries of X in the columns of each merged column when its r is 0
    wrong_if_zero: np.ndarray = None
    parallel: object = None
    policy: SearchPolicy = DEFAULT_POLICY
    large: LargeInput = LARGE_INPUT

    @classmethod
    def merged(cls, X, incumbent, deadline, *, tau, nonnegative, nested, **params):
        """Merge identical columns (one LP each) and rows (LP weights) of ``X``.

        Computed once per call in the data object; identical rows of X are
        identical rows of ``X[:, col_rep]``, which holds a copy of every distinct
        column.
        """
        col_rep, col_owner = incumbent.data.unique_columns
        row_rep, weights, row_owner = incumbent.data.unique_rows
        shape = (row_rep.size, col_rep.size)
        keep_sparse = _sparse_phase0(X, shape, tau, nonnegative, params["large"])
        Xr = _merged_rows(X, row_rep, keep_sparse=keep_sparse)
        Xu = Xr if col_rep.size == X.shape[1] else Xr[:, col_rep]  # read only
        del Xr  # the projection input is made when a projection is drawn (X0u)
        if keep_sparse:
            Xu = sp.csr_matrix(Xu)
        n_u = Xu.shape[1]
        zero_is_one = 0.0 >= tau
        wrong_if_zero = np.bincount(
            col_owner,
            weights=_column_counts(X, zero_is_one),
            minlength=n_u,
        ).astype(np.int64)
        diag = ProjLPDiagnostics(
            nested=nested, projection=params["projection"], eps=params["eps"]
        )
        return cls(
            X=X,
            Xu=Xu,
            weights=weights,
            row_rep=row_rep,
            col_rep=col_rep,
            row_owner=row_owner,
            col_owner=col_owner,
            incumbent=incumbent,
            deadline=deadline,
            tau=tau,
            nonnegative=nonnegative,
            diag=diag,
            t_start=deadline.elapsed(),
            queue=list(range(n_u)),
            fail_count=np.zeros(n_u, dtype=np.int64),
            wrong_if_zero=wrong_if_zero,
            **params,
        )

    @cached_property
    def X0u(self):
        """The projection input of the merged rows (all columns of ``X``).

        Made on first use: phase 0 with ``tau > 0`` (large input) never projects,
        and this m x n copy would double the memory beside ``Xu``.
        """
        Xr = _merged_rows(self.X, self.row_rep)
        return _projection_input(Xr, self.nonnegative, self.tau)

    def elapsed(self):
        return self.deadline.elapsed() - self.t_start

    def lps(self, feasibility):
        """The search's LPs (:class:`~sklearn_rrank._core._lp_engine.ColumnLPs`)."""
        return ColumnLPs(self.tau, self.eps, self.nonnegative, feasibility)

    def wrong_entries(self, Lu, R_u):
        """Wrong entries of ``X`` (not of the merged matrix) of merged factors."""
        return _count_errors_factors(
            self.X, Lu[self.row_owner], R_u[self.col_owner], self.tau
        )

    def finish(self, stopped, message):
        """The ``info`` dict of the search, its message printed at ``verbose >= 1``."""
        diag = self.diag
        if diag.phase0_skipped:
            message += f" (phase 0 stopped: {diag.phase0_skipped})"
        diag.message, diag.stopped_early = message, bool(stopped)
        if self.verbose >= 1:
            print(
                f"[projlp] rank bound {self.incumbent.rank} ({message}), "
                f"{diag.n_lps} LPs, {self.elapsed():.2f} s"
            )
        return diag.as_info()

    def record(self, cols, codes, feasible):
        """Count the LPs run and move the first failing column up the queue."""
        queue, fail_count = self.queue, self.fail_count
        attempted = codes != _NOT_SOLVED
        self.diag.count_lps(
            attempted.sum(),
            (attempted & ~feasible).sum(),
            (STATUS_NAMES[c] for c in codes[attempted]),
        )
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

    def attempt(self, Lu, cols, stop_at_first_infeasible=True):
        """Feasibility LPs of the merged columns ``cols`` for the left factor ``Lu``.

        Of a sparse merged matrix (phase 0) only the columns ``cols`` are made dense.
        """
        X, columns = self.Xu, cols
        if sp.issparse(X):
            X, columns = X[:, cols].toarray(), np.arange(len(cols))
        R_d, codes, _, feasible = _solve(
            Lu,
            X,
            self.lps(feasibility=True),
            n_jobs=self.n_jobs,
            deadline=self.deadline,
            columns=columns,
            weights=self.weights,
            parallel=self.parallel,
            first_block=8 if stop_at_first_infeasible else None,
        )
        attempted = self.record(cols, codes, feasible)
        return R_d, feasible, attempted

    def certify(self, Lu, R_u):
        """Offer the full factors; on failure return the uncertified columns."""
        if self.incumbent.offer(Lu[self.row_owner], R_u[self.col_owner]):
            self.diag.improved(Lu.shape[1], self.elapsed())
            if self.verbose >= 2:
                print(
                    f"[projlp] certified rank {Lu.shape[1]} at {self.elapsed():.2f} s"
                )
            return None
        return _uncertified_columns(self.Xu, Lu, R_u, self.tau)

    def best_reduced(self):
        """The best known certificate on the merged rows and columns."""
        L, R = self.incumbent.best_factors()  # sparse for the trivial one of sparse X
        return _factor_rows(L, self.row_rep), _factor_rows(R, self.col_rep)

    def phase0(self):
        """Phase 0 (large input): separation with copied columns."""
        diag, incumbent = self.diag, self.incumbent
        stopped = _copied_columns_search(
            self, lambda Lu, cols: self.attempt(Lu, cols, False)[:2]
        )
        if diag.phase0_out_of_reach:
            # not stopped by the deadline: the time left is not this search's to use
            return False, f"phase 0 not run: {diag.phase0_out_of_reach}"
        if diag.phase0_width is not None:
            return (
                stopped,
                f"phase 0: projection width {diag.phase0_width} and "
                f"{diag.phase0_copied} copied columns",
            )
        if incumbent.bound is not None:
            return True, "phase 0 did not improve the known bound"
        return None

    def phase1(self, nested, max_rank):
        """Phase 1: d = max(1, lower), ... below the known bound; then the fallback."""
        incumbent, deadline, n_u = self.incumbent, self.deadline, self.Xu.shape[1]
        proj = (
            _Projection(self.X0u, self.projection, self.nonnegative, self.rng)
            if nested
            else None
        )
        solved = np.zeros(n_u, dtype=bool)
        R_u = None
        for d in range(max(1, incumbent.lower), max_rank + 1):
            if not incumbent.worth_trying(d):
                break  # a certificate of width d would not improve the bound
            if deadline.expired():
                return True, f"time limit reached in phase 1 before d={d}"
            if nested:
                Lu = proj.left(d)
                R_prev = R_u
                R_u = np.zeros((n_u, d))
                if R_prev is not None:
                    R_u[:, : R_prev.shape[1]] = R_prev
            else:
                seed = self.rng.randint(np.iinfo(np.int32).max)
                Lu = self.X0u @ _projection_matrix(
                    self.X0u.shape[1], d, self.projection, self.nonnegative, seed
                )
                solved[:] = False
                R_u = np.zeros((n_u, d))
            if self._phase1_width(Lu, R_u, solved):
                break
        self.diag.phase1_rank = incumbent.rank
        self.diag.phase1_seconds = self.elapsed()
        return self._phase1_end(max_rank)

    def _phase1_width(self, Lu, R_u, solved):
        """LPs of the unsolved columns at one width; True once it is certified."""
        d, n_u = Lu.shape[1], self.Xu.shape[1]
        cols = np.array([j for j in self.queue if not solved[j]], dtype=np.intp)
        R_d, feasible, attempted = self.attempt(Lu, cols)
        self.diag.d_tried.append(d)
        R_u[cols[feasible]] = R_d[feasible]
        solved[cols[feasible]] = True
        # the candidate: feasible columns exact, the others r = 0
        self.incumbent.record(
            d,
            int(self.wrong_if_zero[~solved].sum()),
            message=f"phase 1: {int(solved.sum())}/{n_u} columns separable",
        )
        if self.verbose >= 2:
            print(
                f"[projlp] d={d}: {int(attempted.sum())} LPs, "
                f"{int(solved.sum())}/{n_u} columns feasible, {self.elapsed():.2f} s"
            )
        if solved.all():
            bad = self.certify(Lu, R_u)
            if bad is None:
                return True
            # drop the columns that fail the certificate and keep searching
            solved[bad] = False
            R_u[bad] = 0.0
        return False

    def _phase1_end(self, max_rank):
        """The trivial fallback without a certificate; the end of a search done."""
        incumbent, deadline = self.incumbent, self.deadline
        if incumbent.bound is None and not deadline.expired():
            factors = _trivial_factors(self.Xu, self.tau, self.nonnegative)
            if factors is not None and factors[0].shape[1] <= max_rank:
                self.diag.fallback = True
                self.certify(*factors)
        if incumbent.bound is None:
            if deadline.expired():
                return True, "time limit reached in phase 1"
            return True, f"no certificate up to max_rank={max_rank}"
        if incumbent.done:
            return False, "certified (bound meets the lower bound)"
        return None

    def phase2(self, refine, refine_iter):
        """Phase 2: refinement descent from the best known certificate."""
        incumbent, deadline = self.incumbent, self.deadline
        step = 1
        floor = max(incumbent.lower, 1)
        t2 = self.elapsed()
        tried = set()  # (width, bound) pairs
        while refine and incumbent.bound > floor:
            if deadline.expired():
                return True, "time limit reached in phase 2"
            width = max(floor, incumbent.bound - step)
            if (width, incumbent.bound) in tried:
                certified = False  # the same start gives the same try
            else:
                tried.add((width, incumbent.bound))
                self.diag.refine_tried.append(width)
                certified = self._refine_width(width, refine_iter)
            step = self.policy.descent_step(step, certified)
            if step is None:
                break
        self.diag.phase2_seconds = self.elapsed() - t2
        if deadline.expired():
            return True, "time limit reached in phase 2"
        return None

    def _refine_width(self, width, refine_iter):
        """Alternating L1 LPs from the truncated best certificate; True if certified."""
        Lb, Rb = self.best_reduced()
        L0, _ = _truncated_product(Lb, Rb, width)
        if self.nonnegative:
            # a non-negative start: orient every factor column, clip at zero
            L0 = np.maximum(L0 * np.where(L0.sum(axis=0) < 0, -1.0, 1.0), 0.0)

        def on_round(n_rounds, L, R):
            # a round is one LP per merged row and column (seconds on mid-sized
            # data): every round is a progress step, so that the line shows
            # phase 2 at work, not phase 1's last count
            self.incumbent.record(
                width,
                self.wrong_entries(L, R),
                message=f"phase 2 (LP descent), round {n_rounds}",
            )

        self.incumbent.record(width, message="phase 2 (LP descent)")
        out = _alternate(
            self.Xu,
            L0,
            self.lps(feasibility=False),
            n_jobs=self.n_jobs,
            max_iter=refine_iter,
            tol=_REFINE_TOL,
            deadline=self.deadline,
            on_round=on_round,
            parallel=self.parallel,
        )
        self.diag.count_lps(out["n_lps"], 0, out["status_counts"])
        n_wrong = self.wrong_entries(out["L"], out["R"])
        self.incumbent.record(width, n_wrong, message="phase 2 (LP descent)")
        ok = False
        if out["errors"] == 0:
            # re-solve the columns with the separation margin, then certify
            Lu = out["L"]
            order = np.array(self.queue, dtype=np.intp)
            R_d, feasible, _ = self.attempt(Lu, order)
            if feasible.all():
                R_u = np.zeros((self.Xu.shape[1], width))
                R_u[order] = R_d
                ok = self.certify(Lu, R_u) is None
        if self.verbose >= 2:
            print(
                f"[projlp] refine d={width}: {'certified' if ok else 'failed'} "
                f"({out['stop']}, {out['n_rounds']} rounds), {self.elapsed():.2f} s"
            )
        return ok

    def phase3(self, n_retries):
        """Phase 3: fresh projections of width bound - 1.

        Projections are tested ``_PHASE3_BATCH`` at a time (each test serial, one
        per worker); the batch size does not depend on n_jobs, so neither does the
        result.
        """
        incumbent = self.incumbent
        floor = max(incumbent.lower, 1)
        failures = 0
        while failures < n_retries and incumbent.bound > floor:
            if self.deadline.expired():
                return True, "time limit reached in phase 3"
            width = incumbent.bound - 1
            batch = min(_PHASE3_BATCH, n_retries - failures)
            lefts = []
            for _ in range(batch):
                seed = self.rng.randint(np.iinfo(np.int32).max)
                A = _projection_matrix(
                    self.X0u.shape[1], width, self.projection, self.nonnegative, seed
                )
                lefts.append(self.X0u @ A)
            self.diag.n_projections += batch
            failures = self._phase3_batch(width, lefts, failures)
        return None

    def _phase3_batch(self, width, lefts, failures):
        """Test a batch of left factors; the count of consecutive failures after it."""
        cols = np.array(self.queue, dtype=np.intp)
        args = (self.Xu, cols, self.weights, self.lps(True), self.deadline)
        if len(lefts) == 1 or effective_n_jobs(self.n_jobs) == 1:
            results = [_test_projection(Lu, *args) for Lu in lefts]
        else:
            results = self.parallel(
                delayed(_test_projection)(Lu, *args) for Lu in lefts
            )
        improved = False
        for Lu, (R_d, codes, feasible) in zip(lefts, results, strict=True):
            self.record(cols, codes, feasible)
            self.incumbent.record(
                width,
                int(self.wrong_if_zero[cols[~feasible]].sum()),
                message="phase 3 (fresh projection)",
            )
            if improved or not feasible.all():
                failures += 0 if improved else 1
                continue
            R_u = np.zeros((self.Xu.shape[1], width))
            R_u[cols] = R_d
            if self.certify(Lu, R_u) is None:
                improved = True
                failures = 0
            else:
                failures += 1
        return failures
