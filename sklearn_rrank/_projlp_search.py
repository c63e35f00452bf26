"""ProjLP's rank search: nested projections, LP descent and random retries.

The certified upper bound of ProjLP (the paper's Section 3, "Projection-based
algorithm (ProjLP)"), searched through the rank-search skeleton: phase 1 (nested
or fresh Achlioptas projections, feasibility LPs per column), phase 2 (refinement
descent by alternating L1-slack LPs, our addition) and phase 3 (random retries).
Inputs of at least ``_projlp._SEPARATION_ENTRIES`` merged entries start with the
copied-columns phase 0 of :mod:`sklearn_rrank._projlp_copied`. The fit, the
transform and the projection kernels are in :mod:`sklearn_rrank._projlp`.
"""

from collections import Counter

import numpy as np
import scipy.sparse as sp
from joblib import effective_n_jobs
from sklearn.utils import check_random_state
from sklearn.utils.parallel import Parallel, delayed

from sklearn_rrank import _projlp
from sklearn_rrank._lp import (
    _NOT_SOLVED,
    DEFAULT_EPS,
    STATUS_NAMES,
    _solve,
)
from sklearn_rrank._memory import dense_copy_refused
from sklearn_rrank._projlp import (
    _alternate,
    _Projection,
    _projection_input,
    _projection_matrix,
)
from sklearn_rrank._projlp_copied import (
    _copied_columns_search,
    _test_projection,
    _trivial_factors,
    _truncated_product,
    _uncertified_columns,
)
from sklearn_rrank._rounding import (
    _count_errors_factors,
    _factor_rows,
)

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
    nested=True,
    projection="dense",
    eps=DEFAULT_EPS,
    refine=True,
    refine_iter=20,
    n_retries=0,
    nonnegative=False,
    max_rank=None,
):
    """ProjLP's rank search: the family of ``methods=("projlp",)``.

    Trusts its input (``X`` a validated float64 array, NaN = missing; parameters
    checked). Every candidate goes through ``incumbent.offer`` (the one
    certification); phase 1 tries only widths ``max(1, lower) <= d < bound``, phase 2
    descends from ``incumbent.best_factors()``, which may be another method's
    certificate, and everything stops once ``incumbent.done``. ``deadline`` is
    checked between steps and its ``remaining()`` is the LPs' time limit. Returns the
    diagnostics dict (``"message"``; ``"stopped_early"`` if phase 1 found no
    certificate up to ``max_rank`` or the deadline ended it).

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

    Users run it through :func:`~sklearn_rrank.rounding_rank_bounds` with
    ``methods=("projlp",)``; ``time_limit`` (also handed to HiGHS), ``random_state``
    (the projections' seed), ``n_jobs`` (parallel LP workers; the result does not
    depend on it) and ``verbose`` (1: summary line; 2: one line per ``d`` and per
    improvement) come from there.

    Method parameters (``method_params={"projlp": {...}}``)
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

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 3, "Projection-based algorithm
    (ProjLP)", and Table 2 (ProjLP bounds: paleo 26, apj 29).
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
    if sp.issparse(X):  # sparse data: only the merged rows are made dense
        refused = dense_copy_refused(row_rep.size, X.shape[1])
        if refused:
            return {"message": f"skipped: {refused}"}
    Xr = X if row_rep.size == X.shape[0] else X[row_rep]
    Xr = Xr.toarray() if sp.issparse(Xr) else Xr
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
        weights=_column_counts(X, zero_is_one),
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
        L, R = incumbent.best_factors()  # sparse for the trivial one of sparse X
        return _factor_rows(L, row_rep), _factor_rows(R, col_rep)

    with Parallel(n_jobs=n_jobs, prefer="threads") as parallel:
        if not nonnegative and m_u * n_u >= _projlp._SEPARATION_ENTRIES:
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
