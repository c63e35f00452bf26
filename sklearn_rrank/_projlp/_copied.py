"""ProjLP's phase 0 on large inputs: batched separation with copied columns.

On merged matrices of at least ``LargeInput.entries`` (4e6) entries the LP phases
of :mod:`sklearn_rrank._projlp._search` cannot reach a certificate in time. Phase 0
(our addition to the paper's ProjLP) starts from a truncated SVD or a projection,
separates the columns by batched descent and Newton steps, alternates with the
rows, and copies the columns it cannot separate into the factors (a column of
``X`` as a factor column rounds it exactly), searching the width by a pattern
search and bisection.
"""

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from sklearn.utils import gen_batches

from sklearn_rrank._core._lp_engine import _solve
from sklearn_rrank._core._parallel import effective_n_jobs
from sklearn_rrank._core._rounding import (
    _dense_block,
    _uncertified_counts,
)
from sklearn_rrank._core._trivial import trivial_upper_bound
from sklearn_rrank._projlp._projlp import _Projection
from sklearn_rrank._projlp._records import LargeInput, ProjLPDiagnostics

# rounds of alternating separation (rows, then columns) per width tried in phase 0,
# and the relative decrease of the uncertified entries below which they stop
_ALTERNATIONS = 8
_ALTERNATION_TOL = 0.05
# bisection steps of the width after phase 0's pattern search
_BISECTIONS = 3
# phase 0 offers a repaired certificate at most this often (seconds): each offer
# multiplies factors of width d + |F| over all m x n entries
_OFFER_EVERY = 60.0
# copied columns written per block into the certificate with copied columns
_COPY_BLOCK = 256


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


def _test_projection(Lu, Xu, cols, weights, lp, deadline):
    """Feasibility of all ``cols`` for one projection, stopping at the first failure.

    Module-level (picklable) task of phase 3 of the ProjLP search
    (:mod:`sklearn_rrank._projlp._search`); ``lp`` are the feasibility LPs
    (:class:`~sklearn_rrank._core._lp_engine.ColumnLPs`); columns are tried serially
    in blocks of 1, 2, 4, ...
    """
    R_d, codes, _, feasible = _solve(
        Lu,
        Xu,
        lp,
        n_jobs=1,
        deadline=deadline,
        columns=cols,
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


def _check_seconds(m, n, k):
    """Rough seconds of the float64 check of ``m x n`` factors of width ``k``.

    The certificate kernel forms ``L R^T`` and the error scale ``|L| |R|^T`` by
    blocks of rows, ``4 m n k`` operations, at the GEMM rate, scaled by the load as
    the SVD start's estimate (:func:`~sklearn_rrank._upper._rsvd._load_factor`).
    """
    from sklearn_rrank._upper._rsvd import _gemm_rate, _load_factor

    return 4.0 * m * n * k / _gemm_rate() * _load_factor()


def _copied_columns_factors(Lu, R_sep, separated, Xu, tau, row_owner, col_owner):
    """Factors of ``X`` of width ``d + |F|``, exact by construction.

    ``F`` are the columns not ``separated`` by ``(Lu, R_sep)``. Column ``j`` of ``F``
    is copied into the left factor and reproduced by ``r = 2 tau e_j`` (for
    ``tau > 0``: ones give ``2 tau >= tau``, zeros ``0 < tau``). For ``tau <= 0`` the
    caller's ``Lu[:, 0]`` is a column of ones and ``r = 2 e_j + (tau - 1) e_0`` (ones
    give ``tau + 1``, zeros ``tau - 1``). This is the subadditivity of the rounding
    rank over a split of the columns, with the trivial bound on the part ``F``.

    The merged factors are expanded to the rows and columns of ``X`` (``row_owner``,
    ``col_owner``) as they are written, and the copies go in by blocks of columns:
    on Abstracts, a width of 408 with 3557 copied columns made three more m x
    (d + |F|) arrays of 360-400 MB each on the way (the merged factor, the copied
    columns and their NaN-free copy).
    """
    n_u = Xu.shape[1]
    d = Lu.shape[1]
    F = np.flatnonzero(~separated)
    L = np.zeros((row_owner.size, d + F.size))
    L[:, :d] = Lu[row_owner]
    copies = d + np.arange(F.size)
    for block in gen_batches(F.size, _COPY_BLOCK) if F.size else ():
        Xb = Xu[:, F[block]]
        Xb = Xb.toarray() if sp.issparse(Xb) else np.nan_to_num(Xb)
        L[:, copies[block]] = Xb[row_owner]
    R_u = np.zeros((n_u, d + F.size))
    R_u[separated, :d] = R_sep[separated]
    if tau > 0:
        R_u[F, copies] = 2.0 * tau
    else:
        R_u[F, copies] = 2.0
        R_u[F, 0] = tau - 1.0
    return L, R_u[col_owner]


class _SVDStart:
    """Start factors ``(U_d S_d, V_d)`` of phase 0: the truncated SVD of ``X0``.

    ``X0`` is the merged matrix, missing entries set to 0. The triplets come from
    the Gram matrix (:func:`sklearn_rrank._upper._rsvd._gram_svd`), computed once for
    ``K = 1.5 d`` components and again, for ``max(2 K, 1.5 d)``,
    when a wider start is asked for. A sparse ``X0`` (CSR, or at most a tenth of
    the entries are ones) gets the Gram matrix by a sparse product: the same integer
    counts as the dense product, at a fraction of its ``m n^2`` operations, and its
    time is estimated from the ones (``nnz``), as R-SVD's is. Neither
    the product nor the eigendecomposition can be interrupted, so a start whose
    estimated time (:func:`sklearn_rrank._upper._rsvd._gram_svd_seconds`) exceeds what
    is left
    of ``deadline`` is not computed: :meth:`factors` returns None. ``svd_seconds``
    (or None) stands for that estimate (:attr:`LargeInput.svd_seconds`); ``kept``
    are the seconds kept after ``deadline`` for the check of phase 0's certificate,
    which the message of a skip names.
    """

    def __init__(self, X0, deadline, svd_seconds=None, kept=0.0):
        nnz = int(X0.count_nonzero() if sp.issparse(X0) else np.count_nonzero(X0))
        # the product follows the ones where X0 is sparse (CSR, or made CSR here)
        self.nnz = nnz if sp.issparse(X0) or nnz <= 0.1 * X0.size else None
        self.X0 = sp.csr_matrix(X0) if self.nnz is not None else X0
        self.deadline = deadline
        self.svd_seconds = svd_seconds
        self.kept = kept
        self.K = 0
        self.message = None

    def factors(self, d):
        from sklearn_rrank._upper._rsvd import _gram_svd, _gram_svd_seconds

        if d > self.K:
            m, n = self.X0.shape
            K = min(min(m, n), max(2 * self.K, int(1.5 * d)))
            if self.deadline.limited:
                need = (self.svd_seconds or _gram_svd_seconds)(m, n, self.nnz)
                left = self.deadline.remaining()
                if need > left:
                    ones = "" if self.nnz is None else f" (sparse, {self.nnz} ones)"
                    kept = (
                        f" (and {self.kept:.0f} s kept for the check of a certificate)"
                        if self.kept
                        else ""
                    )
                    self.message = (
                        f"the SVD start of {K} components needs about {need:.0f} s"
                        f"{ones}, {left:.0f} s were left{kept}"
                    )
                    return None
            self.K = K
            U, s, Vt = _gram_svd(self.X0, self.K)
            self.L, self.R = U * s, Vt.T
        return self.L[:, :d], self.R[:, :d]


def _copied_columns_search(search, lps):
    """Phase 0 of the ProjLP search on large input (see ``_projlp_search``).

    ``search`` is the state of the ProjLP search
    (:class:`~sklearn_rrank._projlp._search._ProjLPSearch`): phase 0 reads its
    merged matrix ``Xu`` (and for ``tau <= 0`` the projection input ``X0u``), the
    owners of the rows and columns of ``X``, its incumbent, deadline, ``tau``,
    ``projection``, ``rng`` and ``n_jobs``, and writes its diagnostics
    (``search.diag``, a :class:`~sklearn_rrank._projlp._records.ProjLPDiagnostics`).
    ``lps(Lu, cols)`` solves the feasibility LPs of the merged columns ``cols`` for
    the left factor ``Lu`` (counting them in ``search.diag``) and returns
    ``(R, feasible)``. ``search.large`` (a
    :class:`~sklearn_rrank._projlp._records.LargeInput`) gives the steps of the
    separations and the estimate of the SVD start, ``search.policy`` (a
    :class:`~sklearn_rrank._search._policy.SearchPolicy`) the width of step 4
    (:meth:`~sklearn_rrank._search._policy.SearchPolicy.descent_width`).

    0. If the known bound is at most the first width, ``min(m', n') / 12``, phase
       0 does not run (``diag.phase0_out_of_reach`` says why).
    1. For a few widths ``d`` (a pattern search from ``min(m', n') / 12``: up by
       half while the bound drops, else down; then up to three bisections between
       the best width and the next smaller one tried), the truncated SVD of ``X`` is
       refined by :func:`~sklearn_rrank._core._separation.alternate_separation`; the
       columns ``F`` it cannot separate are copied into ``L``, which gives a
       certificate of width ``d + |F|`` (:func:`_copied_columns_factors`), offered
       to the incumbent. For ``tau <= 0``, ``L = [1, X A_{d-1}]`` (an offset column
       of ones) and only the columns are separated
       (:func:`~sklearn_rrank._core._separation.separate_columns`).
    2. At the best width the columns of ``F`` get the finite Newton method of
       :func:`~sklearn_rrank._core._separation.separate_columns` (``solver="newton"``),
       fewest ones first, in blocks; each certified column leaves ``F``.
    3. The columns left get the exact feasibility LP, fewest ones first; each
       feasible one leaves ``F``. Every column leaving ``F`` lowers the bound by one;
       the repaired certificate is offered every ``_OFFER_EVERY`` seconds and at
       the end of the width.
    4. If no column is left, the search descends to 97% of the width (step 1 at
       that width, started from the truncation of the factors just found
       (:func:`_truncated_product`), then 2 and 3), until the deadline or the lower
       bound.

    Under a time limit the steps end earlier, by the estimated check of a
    certificate as wide as the known bound (or ``min(m, n)``;
    ``search.large.check_seconds``): no deadline stops the check of the last
    certificate offered. Returns True iff that earlier deadline has passed.
    """
    Xu, incumbent = search.Xu, search.incumbent
    m_u, n_u = Xu.shape
    d_max = min(m_u, n_u) - 1
    if d_max < 1:
        return False
    first = max(1, min(d_max, round(min(m_u, n_u) / 12)))
    if incumbent.bound is not None and first >= incumbent.bound:
        # a certificate of width d has at least d columns: the first width cannot
        # beat the bound, and the widths below it are out of phase 0's reach on
        # the large data it is made for (its copied columns add to the width)
        search.diag.phase0_out_of_reach = (
            f"its first width {first} is not below the known bound {incumbent.bound}"
        )
        return False
    deadline, kept = search.deadline, 0.0
    if deadline.limited:
        # its certificates are wide (d + |F| columns) and their check cannot be
        # stopped: the widths end that long before the deadline
        m, n = search.row_owner.size, search.col_owner.size
        width = min(m, n) if incumbent.bound is None else min(m, n, incumbent.bound)
        kept = (search.large.check_seconds or _check_seconds)(m, n, width)
        deadline = deadline.ending_before(kept)
    # a sparse Xu is complete (its stored entries are the ones)
    missing = None if sp.issparse(Xu) else np.isnan(Xu)
    phase = _CopiedColumns(
        Xu=Xu,
        row_owner=search.row_owner,
        col_owner=search.col_owner,
        incumbent=incumbent,
        deadline=deadline,
        tau=search.tau,
        n_jobs=search.n_jobs,
        diag=search.diag,
        lps=lps,
        large=search.large,
        # nested, drawn on demand (the offset column's widths of tau <= 0 only; the
        # projection input is made only then)
        proj=(
            None
            if search.tau > 0
            else _Projection(search.X0u, search.projection, False, search.rng)
        ),
        svd_start=_SVDStart(
            np.where(missing, 0.0, Xu) if missing is not None and missing.any() else Xu,
            deadline,
            search.large.svd_seconds,
            kept,
        ),
    )
    del missing
    best = phase.try_width(first)
    if best is None:
        return deadline.expired()
    phase.offer(best)
    best = phase.bisect(phase.pattern_search(best))
    while True:
        Lu, R_sep, separated = phase.finish_copied(best)
        d = search.policy.descent_width(Lu.shape[1])  # always smaller
        if (
            not separated.all()
            or deadline.expired()
            or incumbent.done
            or d < max(1, incumbent.lower)
        ):
            return deadline.expired()
        # every column separated at this width: descend to a smaller one, from the
        # truncation of the factors just found
        best = phase.try_width(d, warm=(Lu, R_sep))
        phase.offer(best)


@dataclass
class _CopiedColumns:
    """The state of phase 0 and its steps (see :func:`_copied_columns_search`).

    A width's state is the tuple ``(Lu, R_sep, separated, bound)``: the left
    factor, the right factor of the separated columns, the mask of the separated
    merged columns and the width ``d + |F|`` of the certificate with copied columns.
    """

    Xu: np.ndarray
    row_owner: np.ndarray
    col_owner: np.ndarray
    incumbent: object
    deadline: object
    tau: float
    n_jobs: object
    diag: ProjLPDiagnostics
    lps: object
    large: LargeInput
    proj: _Projection | None  # None for tau > 0 (no projections drawn)
    svd_start: _SVDStart
    # the repair of finish_copied: time of its last offer, news since then
    _last_offer: float = field(default=0.0, init=False)
    _improved: bool = field(default=False, init=False)

    @cached_property
    def ones(self):
        """Ones per merged column: the copied columns are tried fewest first.

        Counted without a copy of ``Xu`` (``nansum`` made one: 0.5 GB on Abstracts).
        """
        if sp.issparse(self.Xu):
            return np.asarray(self.Xu.sum(axis=0)).ravel()
        return np.count_nonzero(self.Xu == 1, axis=0).astype(np.float64)

    @property
    def d_max(self):
        return min(self.Xu.shape) - 1

    def tried(self, d):
        return d in self.diag.phase0_widths()

    def try_width(self, d, warm=None):
        """The state ``(Lu, R_sep, separated, bound)`` at width ``d``, or None."""
        from sklearn_rrank._core._separation import (
            alternate_separation,
            separate_columns,
        )

        Xu, tau, deadline = self.Xu, self.tau, self.deadline
        m_u, n_u = Xu.shape
        if tau > 0:
            if warm is None:
                if d > self.svd_start.K:  # an eigendecomposition no deadline stops
                    self.incumbent.event(
                        "step", k=d, message=f"phase 0: width {d}, SVD start"
                    )
                start = self.svd_start.factors(d)
            else:
                start = _truncated_product(*warm, d)
            if start is None:  # the SVD start does not fit in the time left
                self.diag.phase0_skipped = self.svd_start.message
                return None
            L0, R0 = start
            Lu, R_sep, counts, history = alternate_separation(
                L0,
                Xu,
                init=R0,
                tau=tau,
                n_rounds=_ALTERNATIONS,
                n_iter=self.large.separation_iter,
                tol=_ALTERNATION_TOL,
                deadline=deadline,
                n_jobs=self.n_jobs,
                callback=lambda step, n_wrong: self.incumbent.event(
                    "step",
                    k=d,
                    message=f"phase 0: width {d}, {step} separated, "
                    f"{n_wrong} entries uncertified",
                ),
            )
            separated = counts == 0
        else:  # an offset column: rows of zeros need L_i . r < tau <= 0
            Lu = np.hstack([np.ones((m_u, 1)), self.proj.left(d - 1)])
            R_sep, separated = separate_columns(
                Lu,
                Xu,
                tau=tau,
                n_iter=self.large.separation_iter,
                deadline=deadline,
                n_jobs=self.n_jobs,
            )
            history = []
        bound = d + int((~separated).sum())
        self.diag.phase0_tried.append((d, bound))
        self.diag.phase0_alternation.append((d, history))
        self.incumbent.record(
            bound,
            None,
            message=f"phase 0: width {d}, {int(separated.sum())}/{n_u} columns "
            "separated",
        )
        return Lu, R_sep, separated, bound

    def offer(self, state):
        """Offer the certificate with copied columns of ``state`` if it can help."""
        Lu, R_sep, separated, _ = state
        if not self.incumbent.worth_trying(Lu.shape[1] + int((~separated).sum())):
            return
        L, R = _copied_columns_factors(
            Lu, R_sep, separated, self.Xu, self.tau, self.row_owner, self.col_owner
        )
        if self.incumbent.offer(L, R):
            self.diag.improved(L.shape[1], self.deadline.elapsed())
            self.diag.phase0_width = Lu.shape[1]
            self.diag.phase0_copied = int((~separated).sum())

    def pattern_search(self, best):
        """Step 1's pattern search over the width; returns the best state.

        Up by half while the bound drops; if the first step up does not help, down
        by a third while it drops.
        """
        for factor in (1.5, 1 / 1.5):
            moved = False
            while not self.deadline.expired():
                d = max(1, min(self.d_max, round(best[0].shape[1] * factor)))
                if self.tried(d) or d >= best[3]:
                    break  # tried, or a width that cannot beat the best bound
                state = self.try_width(d)
                if state is None or state[3] >= best[3]:
                    break
                best, moved = state, True
                self.offer(best)
            if moved:
                break
        return best

    def bisect(self, best):
        """Bisect between the best width and the largest width tried below it."""
        for _ in range(_BISECTIONS):
            d_best = best[0].shape[1]
            below = [t for t in self.diag.phase0_widths() if t < d_best]
            if self.deadline.expired() or not below:
                break
            d = (max(below) + d_best) // 2
            if self.tried(d):
                break
            state = self.try_width(d)
            if state is not None and state[3] < best[3]:
                best = state
                self.offer(best)
        return best

    def finish_copied(self, state):
        """Stages 2 and 3 at one width: Newton, then LPs, for the copied columns."""
        from sklearn_rrank._core._separation import separation_basis

        Lu, R_sep, separated, _ = state
        R_sep, separated = R_sep.copy(), separated.copy()
        basis = separation_basis(Lu, self.tau)  # one SVD for every Newton block
        self._last_offer = self.deadline.elapsed()
        self._improved = False
        for how in ("newton", "lp"):
            todo = np.array(
                [j for j in np.argsort(self.ones, kind="stable") if not separated[j]],
                dtype=np.intp,
            )
            self._separate_copied(Lu, R_sep, separated, todo, how, basis)
        if self._improved:
            self.offer((Lu, R_sep, separated, None))
        return Lu, R_sep, separated

    def _separate_copied(self, Lu, R_sep, separated, todo, how, basis):
        """Newton steps or LPs for the copied columns ``todo``, block by block."""
        from sklearn_rrank._core._separation import separate_columns

        block = 8 * max(1, effective_n_jobs(self.n_jobs))
        for begin in range(0, todo.size, block):
            if self.deadline.expired() or self.incumbent.done:
                break
            cols = todo[begin : begin + block]
            if how == "newton":
                R_c, ok = separate_columns(
                    Lu,
                    _dense_block(self.Xu[:, cols]),
                    tau=self.tau,
                    n_iter=self.large.newton_iter,
                    solver="newton",
                    deadline=self.deadline,
                    n_jobs=self.n_jobs,
                    basis=basis,
                )
                self.diag.n_newton += int(cols.size)
                label = f"Newton, {int(ok.sum())}/{cols.size}"
            else:
                R_c, ok = self.lps(Lu, cols)
                label = f"LPs, {int(ok.sum())}/{cols.size}"
            self._progress(Lu, R_sep, separated, R_c, ok, cols, label)

    def _progress(self, Lu, R_sep, separated, R_new, ok, cols, how):
        """Keep the columns separated; offer the repair every ``_OFFER_EVERY`` s."""
        R_sep[cols[ok]] = R_new[ok]
        separated[cols[ok]] = True
        self._improved |= bool(ok.any())
        self.incumbent.record(
            Lu.shape[1] + int((~separated).sum()),
            None,
            message=f"phase 0: width {Lu.shape[1]}, {how}",
        )
        if (
            self._improved
            and self.deadline.elapsed() - self._last_offer >= _OFFER_EVERY
        ):
            self.offer((Lu, R_sep, separated, None))
            self._last_offer, self._improved = self.deadline.elapsed(), False
