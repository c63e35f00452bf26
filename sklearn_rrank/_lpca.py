"""Logistic PCA (L-PCA) for rounding-rank factorizations.

Model (Schein, Saul and Ungar, AISTATS 2003; the paper's Section 3, "Logistic
Principal Component Analysis"): every observed entry ``X_ij`` is a Bernoulli variable
with ``P(X_ij = 1) = sigmoid(theta_ij)``, where the natural parameters (logits) are
``theta = U @ V.T + 1 mu.T``: ``U`` (m, p) latent row coordinates, ``V`` (n, p) a
basis and ``mu`` (n,) an optional column bias. The fit minimises the negative
log-likelihood of the observed entries plus ``alpha / 2`` times the squared Frobenius
norm of ``U``, ``V`` and ``mu``. Rounding the logits at 0 approximates ``X``.

Honest rank. Every column of the returned factors is counted: with the bias on,
``n_components = k`` means ``k - 1`` latent factors plus the bias column, and the
threshold ``tau`` is folded into the bias column, so that ``L = [U, 1]`` and
``R = [V, mu + tau]`` give ``L @ R.T = theta + tau``, which is ``>= tau`` exactly
where ``theta >= 0``. The paper does not say whether its L-PCA counted the bias.
Two further models (``fit_bias=False``: no bias; ``fit_bias="global"``: one scalar
offset, which costs no column because ``tau`` absorbs it) are described in
:func:`lpca_fit`; the global one expresses exactly the roundings of rank-k matrices
and is the default of the rank search :func:`lpca_rank_upper_bound`. It and the
reweighting rescue of the search are our additions, not part of the paper or of
Schein et al.

Solvers: ``"newton"`` (damped alternating Newton, the default), ``"lbfgs"`` (joint
objective, scipy's L-BFGS-B) and ``"mm"`` (Schein et al.'s bound-based alternating
least squares, kept for fidelity to the paper; slower). Element-wise work uses the
sigmoid through ``tanh`` and clipped exponent arguments; BLAS runs single-threaded
inside a fit and ``n_jobs`` threads work on fixed blocks of rows, so results do not
depend on ``n_jobs``.

Refinement (:func:`lpca_refine`) uses the LP engine of :mod:`sklearn_rrank._lp`.
"""

import math
import threading
import time
from contextlib import nullcontext
from numbers import Integral, Real

import numpy as np
import scipy.optimize
import scipy.sparse as sp
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params
from sklearn.utils.extmath import randomized_svd
from sklearn.utils.parallel import Parallel, delayed
from threadpoolctl import threadpool_limits

from sklearn_rrank._base import FactorizationResult
from sklearn_rrank._ranksearch import Deadline
from sklearn_rrank._rounding import _count_errors_factors, _row_batches
from sklearn_rrank._validation import check_binary_matrix, check_tau

__all__ = [
    "lpca_deviances",
    "lpca_fit",
    "lpca_row_logits",
    "lpca_transform",
    "row_log_likelihood",
]

#: default L2 penalty on every parameter (latent factors and bias)
DEFAULT_ALPHA = 1e-3
# default sweeps and tolerance of a fit and of the per-row problems of transform
FIT_MAX_ITER, FIT_TOL = 1000, 1e-6
TRANSFORM_MAX_ITER, TRANSFORM_TOL = 100, 1e-8

# exponent arguments are clipped here: exp(-700) is still a normal float64, so the slow
# denormal path of exp is never taken (the clipped terms are below 1e-300)
_EXP_CLIP = 700.0
_EXP_CLIP32 = 80.0
# matrix entries per chunk of rows: chunks are fixed by the data shape only, never by
# n_jobs, so results do not depend on the number of workers
_CHUNK_ENTRIES = 1 << 18
# chunks of a Newton block whose parts are held at once (each part a vector over
# the other side of the matrix)
_REDUCE_GROUP = 64
# correction pairs kept by L-BFGS (scipy's maxcor). Each pair costs L-BFGS-B work
# over all (m + n) k parameters per iteration: on Abstracts (k = 100, float32) an
# iteration takes 0.45 s with 20 pairs and 0.34 s with 5 (benchmarks/lpca_sweep.py),
# and in a one-off 150 s fit at k = 50 the 5-pair fit reached the lower loss
_LBFGS_MEMORY = 5
# largest fraction of ones for which the joint objective gathers and scatters the ones
# as corrections instead of reading the signs of every entry: on a chunk of 2^18
# float32 entries the corrections cost 0.03/0.06/0.08 ms at 1/5/10% ones, the passes
# they replace about 0.1 ms
_SPARSE_ONES = 0.1
# Armijo constant and maximal number of step halvings in the backtracking line search
_ARMIJO = 1e-4
_MAX_HALVINGS = 30
# smallest magnitude of the global offset (its sign is opposite to tau's)
_B_MIN = 1e-3
# ridge added to the Newton systems when alpha = 0
_MIN_RIDGE = 1e-10
# relative margin that the stop check of ``stop_when_exact`` requires (a thousand
# times the default margin of ``certify_rounding``, so that a stop is certifiable);
# float32 logits add their rounding error bound (see _stop_delta)
_STOP_MARGIN = 1e-6


# ---------------------------------------------------------------------------------
# elementwise kernels
# ---------------------------------------------------------------------------------


def _exp_clip(dtype):
    return _EXP_CLIP if dtype == np.float64 else _EXP_CLIP32


def _loss_terms(theta, q, out=None, tmp=None):
    """Entry losses ``log(1 + exp(-q theta))`` with ``q = 2x - 1`` (0 if missing).

    Computed as ``max(-q theta, 0) + log1p(exp(-|theta|))`` with the exponent argument
    clipped (no overflow, no denormals). Missing entries (``q = 0``) get ``log 2``
    here: callers multiply by the observation weights. ``out`` (may be ``theta``
    itself) and ``tmp`` are optional buffers of ``theta``'s shape and dtype.
    """
    margin = np.multiply(q, theta, out=tmp, dtype=theta.dtype)
    np.negative(margin, out=margin)
    np.maximum(margin, 0.0, out=margin)
    out = np.abs(theta, out=out)
    np.minimum(out, _exp_clip(theta.dtype), out=out)
    np.negative(out, out=out)
    np.exp(out, out=out)
    np.log1p(out, out=out)
    out += margin
    return out


def _grad_hess_terms(theta, q, g=None, h=None):
    """First and second derivatives of the entry losses with respect to ``theta``.

    ``sigmoid(theta) - x = (tanh(theta / 2) - q) / 2`` and
    ``sigmoid(theta) (1 - sigmoid(theta)) = (1 - tanh(theta / 2)^2) / 4``: the
    sigmoid via ``tanh`` is accurate for every logit and avoids the slow paths of
    ``scipy.special.expit`` for large ones. ``g`` and ``h`` are optional output
    buffers.
    """
    t = np.multiply(theta, 0.5, out=h)
    np.tanh(t, out=t)
    g = np.subtract(t, q, out=g, dtype=theta.dtype)
    g *= 0.5
    np.multiply(t, t, out=t)
    np.subtract(1.0, t, out=t)
    t *= 0.25
    return g, t


def _mm_weights(theta):
    """Jaakkola-Jordan curvature ``T = tanh(theta / 2) / theta`` (limit 1/2 at 0)."""
    small = np.abs(theta) < 1e-8
    safe = np.where(small, 1.0, theta)
    T = np.tanh(0.5 * safe) / safe
    T[small] = 0.5
    return T


# ---------------------------------------------------------------------------------
# data container and chunked helpers
# ---------------------------------------------------------------------------------


class _SparseSigns:
    """The signs ``q = 2X - 1`` of a complete binary CSR matrix, by blocks of rows.

    Only the CSR pattern of the ones is held; ``signs[rows]`` (``rows`` a slice) is
    the dense int8 block of ``q`` (1 at the ones, -1 elsewhere), equal to the same
    rows of the dense signs of :class:`_Data`, so every chunk kernel computes
    exactly what it computes on dense data. A block costs one byte per entry and
    lives only while its chunk is worked on.

    Parameters
    ----------
    indptr, indices : ndarray
        CSR pattern of the ones (sorted column indices in every row).
    shape : tuple of int
        ``(m, n)``.
    """

    ndim = 2
    dtype = np.dtype(np.int8)

    def __init__(self, indptr, indices, shape):
        self.indptr, self.indices, self.shape = indptr, indices, tuple(shape)

    @classmethod
    def of(cls, X):
        """The signs of a validated, complete binary CSR matrix ``X``."""
        X = sp.csr_matrix(X)
        keep = X.data != 0  # stored zeros are not ones
        if keep.all():
            return cls(X.indptr, X.indices, X.shape)
        rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))[keep]
        indptr = np.zeros(X.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=X.shape[0]), out=indptr[1:])
        return cls(indptr, X.indices[keep], X.shape)

    @property
    def nnz(self):
        return int(self.indptr[-1])

    def __getitem__(self, rows):
        if not isinstance(rows, slice):
            raise TypeError("sparse signs are read by slices of rows only")
        start, stop, _ = rows.indices(self.shape[0])
        stop = max(stop, start)
        out = np.full((stop - start, self.shape[1]), -1, dtype=np.int8)
        lo, hi = self.indptr[start], self.indptr[stop]
        r = np.repeat(np.arange(stop - start), np.diff(self.indptr[start : stop + 1]))
        out[r, self.indices[lo:hi]] = 1
        return out

    def transposed(self):
        """The signs of ``X.T`` (the CSR pattern of the columns)."""
        m, n = self.shape
        pattern = sp.csr_matrix(
            (np.ones(self.nnz, dtype=np.int8), self.indices, self.indptr), shape=(m, n)
        ).tocsc()
        return _SparseSigns(pattern.indptr, pattern.indices, (n, m))

    def ones_flat(self):
        """``(row pointer, flat row-major indices)`` of the ones, as :class:`_Data`."""
        rows = np.repeat(np.arange(self.shape[0], dtype=np.int64), np.diff(self.indptr))
        return np.asarray(self.indptr, dtype=np.int64), rows * self.shape[1] + (
            self.indices
        )


class _Data:
    """Validated data prepared for the solvers (both orientations).

    ``q`` holds ``2X - 1`` with missing entries set to 0, ``w`` the observation mask
    as float (None when nothing is missing) and ``n_missing`` the missing entries
    per row; ``qt``, ``wt`` and ``n_missing_t`` are the same for the transpose.
    A complete sparse ``X`` keeps its ones as a CSR pattern: ``q`` and ``qt`` are
    then :class:`_SparseSigns`, read by chunks of rows (``sparse`` is True), and no
    m x n array is held.
    """

    def __init__(self, X, dtype=np.float64):
        self.shape = X.shape
        self.dtype = np.dtype(dtype)
        self.sparse = sp.issparse(X) and not np.isnan(X.data).any()
        if self.sparse:
            self._init_sparse(X)
            return
        if sp.issparse(X):  # missing entries in a sparse matrix: dense signs
            X = X.toarray()
        missing = np.isnan(X)
        # int8 signs: 1/8 of the memory of float64 (read once per pass); built in
        # place, without m x n integer temporaries
        self.q = np.greater(X, 0).view(np.int8)
        self.q *= 2
        self.q -= 1
        self.q[missing] = 0
        self.qt = np.ascontiguousarray(self.q.T)
        if missing.any():
            self.w = (~missing).astype(self.dtype)
            self.wt = np.ascontiguousarray(self.w.T)
        else:
            self.w = self.wt = None
        self.ones = None
        if self.w is None:
            is_one = self.q > 0
            if np.count_nonzero(is_one) <= _SPARSE_ONES * X.size:
                # the ones in row-major order: their flat indices and the first one
                # of every row (a CSR pattern); the joint objective then treats them
                # as corrections to sums over all entries (see _joint_task)
                flat = np.flatnonzero(is_one)
                row_starts = np.arange(X.shape[0] + 1) * X.shape[1]
                self.ones = (np.searchsorted(flat, row_starts), flat)
            del is_one
        self.n_missing = missing.sum(axis=1)
        self.n_missing_t = missing.sum(axis=0)
        self.n_observed = int(X.size - np.count_nonzero(missing))

    def _init_sparse(self, X):
        m, n = self.shape
        self.q = _SparseSigns.of(X)
        self.qt = self.q.transposed()
        self.w = self.wt = None
        self.ones = None
        if self.q.nnz <= _SPARSE_ONES * m * n:
            self.ones = self.q.ones_flat()
        self.n_missing = np.zeros(m, dtype=np.int64)
        self.n_missing_t = np.zeros(n, dtype=np.int64)
        self.n_observed = m * n

    def densified(self):
        """This data with dense signs (for the m x n entry weights of a boost)."""
        if not self.sparse:
            return self
        other = object.__new__(_Data)
        other.__dict__.update(self.__dict__)
        other.sparse = False
        other.q = self.q[:]
        other.qt = np.ascontiguousarray(other.q.T)
        return other

    def side(self, transpose):
        if transpose:
            return self.qt, self.wt, self.n_missing_t
        return self.q, self.w, self.n_missing

    def reweighted(self, weights):
        """A copy that shares ``q`` and has entry weights ``weights`` (0 = missing)."""
        other = object.__new__(_Data)
        other.__dict__.update(self.__dict__)
        w = weights if self.w is None else weights * self.w
        other.w = w
        other.wt = np.ascontiguousarray(w.T)
        other.ones = None
        return other


_workspace = threading.local()


def _buffer(name, shape, dtype):
    """A reusable per-thread work array (its content is garbage on return).

    The m x n work of a sweep is done in fixed chunks of rows; the chunk buffers are
    allocated once per thread and reused by every chunk and sweep, so no m x n
    temporary is allocated (and page-faulted in) per sweep.
    """
    bufs = getattr(_workspace, "bufs", None)
    if bufs is None:
        bufs = _workspace.bufs = {}
    size = math.prod(shape)
    dtype = np.dtype(dtype)
    buf = bufs.get((name, dtype))
    if buf is None or buf.size < size:
        buf = bufs[(name, dtype)] = np.empty(max(size, _CHUNK_ENTRIES), dtype=dtype)
    return buf[:size].reshape(shape)


def _chunks(n_rows, n_cols):
    """The row blocks of :func:`~sklearn_rrank._rounding._row_batches`, L-PCA's size."""
    return _row_batches(n_rows, n_cols, _CHUNK_ENTRIES)


def _run_chunks(parallel, func, chunks, *args):
    """Apply ``func(chunk, *args)`` to every chunk, in order, serially or in threads."""
    if parallel is None or len(chunks) == 1:
        return [func(c, *args) for c in chunks]
    return parallel(delayed(func)(c, *args) for c in chunks)


def _make_parallel(n_jobs, verbose):
    from joblib import effective_n_jobs

    if effective_n_jobs(n_jobs) == 1:
        return None
    return Parallel(n_jobs=n_jobs, prefer="threads")


def _pair_index(p):
    a, b = np.triu_indices(p)
    return a, b


def _gram_batched(h, F, pairs, FF=None):
    """Per-row weighted Gram matrices ``sum_j h_ij F_j F_j^T`` of shape (rows, p, p).

    ``FF`` (the pair products ``F[:, a] * F[:, b]``) may be given, computed once per
    block instead of once per chunk. The result is float64.
    """
    a, b = pairs
    p = F.shape[1]
    if FF is None:
        FF = F[:, a] * F[:, b]
    flat = h @ FF
    H = np.empty((h.shape[0], p, p))
    H[:, a, b] = flat
    H[:, b, a] = flat
    return H


# ---------------------------------------------------------------------------------
# one block update: the parameters P of a set of "rows" with the factor F fixed,
# logits theta = P @ F.T + offset (offset: row vector over the columns, or None)
# ---------------------------------------------------------------------------------


def _penalty_rows(P):
    return np.einsum("ij,ij->i", P, P, dtype=np.float64)


def _count_unsafe(theta, q, n_missing, delta, tmp=None):
    """Observed entries that are wrong or within ``delta`` of the wrong side.

    Missing entries have ``q = 0`` and are always counted by ``q theta <= delta``;
    their number is subtracted.
    """
    prod = np.multiply(q, theta, out=tmp, dtype=theta.dtype)
    mask = np.less_equal(prod, delta, out=_buffer("mask", prod.shape, np.bool_))
    return int(np.count_nonzero(mask)) - int(n_missing)


def _count_wrong(theta, q):
    """Observed entries whose rounding at logit 0 differs from the data."""
    return int(np.count_nonzero((q > 0) & (theta < 0))) + int(
        np.count_nonzero((q < 0) & (theta >= 0))
    )


def _newton_chunk(rows, P, F, offset, q, w, n_missing, alpha, pairs, delta, row_loss):
    """One damped Newton step for the rows ``rows`` of ``P`` (independent problems).

    The objective of row ``i`` is ``sum_j w_ij l(theta_ij) + alpha / 2 |P_i|^2`` with
    ``theta_i = F P_i + offset``. All ``p x p`` Newton systems of the chunk are solved
    in one batched call (in float64); the step is then halved per row until the
    Armijo rule holds, and a row whose step never passes keeps its parameters, so no
    row objective increases. ``row_loss`` holds the current data losses of all rows.
    ``pairs`` is ``(a, b, FF)``: the upper-triangle indices and the pair products of
    ``F``. The chunk's ``theta``, gradient, curvature and loss work in per-thread
    buffers of ``P``'s dtype (float64, or float32 in the float32 mode).

    Returns the new rows of ``P``, their data losses, the column sums of the new
    entry losses, and the number of unsafe entries (see :func:`_count_unsafe`) at
    the *old* parameters (-1 if ``delta`` is None).
    """
    Pc = P[rows]
    qc = q[rows]
    wc = None if w is None else w[rows]
    n_rows, p = Pc.shape
    dt = P.dtype
    shape = (n_rows, F.shape[0])
    theta = np.matmul(Pc, F.T, out=_buffer("theta", shape, dt))
    if offset is not None:
        theta += offset
    g = _buffer("g", shape, dt)
    n_unsafe = -1
    if delta is not None:
        n_unsafe = _count_unsafe(theta, qc, n_missing[rows].sum(), delta, tmp=g)
    g, h = _grad_hess_terms(theta, qc, g, _buffer("h", shape, dt))
    if wc is not None:
        g *= wc
        h *= wc
    loss0 = row_loss[rows]
    Pd = Pc.astype(np.float64)
    f0 = loss0 + 0.5 * alpha * _penalty_rows(Pd)
    grad = (g @ F).astype(np.float64)
    grad += alpha * Pd
    H = _gram_batched(h, F, pairs[:2], pairs[2])
    diag = np.arange(p)
    H[:, diag, diag] += max(alpha, _MIN_RIDGE)
    D = -np.linalg.solve(H, grad[:, :, None])[:, :, 0]
    slope = np.einsum("ij,ij->i", grad, D)
    # rows with a (numerically) zero slope are at their optimum: leave them alone
    movable = slope < -1e-15 * (np.abs(f0) + 1.0)
    Dc = D.astype(dt, copy=False)
    dtheta = np.matmul(Dc, F.T, out=_buffer("dtheta", shape, dt))

    # full step for every row at once (no fancy indexing in the common case)
    trial = Pc + Dc
    E = np.add(theta, dtheta, out=h)
    E = _loss_terms(E, qc, out=E, tmp=g)
    if wc is not None:
        E *= wc
    new_loss = E.sum(axis=1, dtype=np.float64)
    ok = movable & (
        new_loss + 0.5 * alpha * _penalty_rows(trial.astype(np.float64))
        <= f0 + _ARMIJO * slope
    )
    if ok.all():
        return trial, new_loss, E.sum(axis=0, dtype=np.float64), n_unsafe
    newP = np.where(ok[:, None], trial, Pc)
    new_loss = np.where(ok, new_loss, loss0)
    done = ok.copy()
    active = np.flatnonzero(movable & ~ok)
    step = 0.5
    for _ in range(_MAX_HALVINGS):
        if active.size == 0:
            break
        trial = Pc[active] + step * Dc[active]
        terms = _loss_terms(theta[active] + dt.type(step) * dtheta[active], qc[active])
        if wc is not None:
            terms *= wc[active]
        tl = terms.sum(axis=1, dtype=np.float64)
        ft = tl + 0.5 * alpha * _penalty_rows(trial.astype(np.float64))
        ok = ft <= f0[active] + _ARMIJO * step * slope[active]
        acc = active[ok]
        newP[acc] = trial[ok]
        new_loss[acc] = tl[ok]
        E[acc] = terms[ok]
        done[acc] = True
        active = active[~ok]
        step *= 0.5
    rest = np.flatnonzero(~done)
    if rest.size:
        terms = _loss_terms(theta[rest], qc[rest])
        if wc is not None:
            terms *= wc[rest]
        E[rest] = terms
    return newP, new_loss, E.sum(axis=0, dtype=np.float64), n_unsafe


def _newton_block(parallel, P, F, offset, data, transpose, alpha, delta, row_loss):
    """Damped Newton step on every row of ``P``; see :func:`_newton_chunk`.

    Returns the new ``P``, the new data losses of its rows, the data losses of the
    other side (columns of the chunks) and the unsafe count at the old ``P``.
    """
    q, w, n_missing = data.side(transpose)
    chunks = _chunks(P.shape[0], F.shape[0])
    a, b = _pair_index(P.shape[1])
    pairs = (a, b, F[:, a] * F[:, b])
    args = (P, F, offset, q, w, n_missing, alpha, pairs, delta, row_loss)
    newP, new_loss, other_loss, n_unsafe = [], [], None, 0
    # each part holds a vector over the other side: the chunks run in groups whose
    # parts are summed (in chunk order) before the next group (a 200000 x 5000
    # matrix has 5000 one-column chunks, whose 200000-vectors took 8 GB at once)
    for g in range(0, len(chunks), _REDUCE_GROUP):
        group = chunks[g : g + _REDUCE_GROUP]
        for r in _run_chunks(parallel, _newton_chunk, group, *args):
            newP.append(r[0])
            new_loss.append(r[1])
            n_unsafe += r[3]
            if other_loss is None:
                other_loss = r[2].copy()
            else:
                other_loss += r[2]
    return np.concatenate(newP, axis=0), np.concatenate(new_loss), other_loss, n_unsafe


def _mm_chunk(rows, P, F, offset, q, w, alpha):
    """One Schein et al. bound update for the rows ``rows`` of ``P``.

    Solves ``(sum_j w T_ij F_j F_j^T + 2 alpha I) P_i = sum_j w (q_ij - T_ij o_j) F_j``
    with ``T = tanh(theta / 2) / theta`` and ``q = 2x - 1`` (Schein et al. 2003,
    with the L2 penalty added): the exact minimiser of the Jaakkola-Jordan upper bound
    of the objective, so the objective never increases.
    """
    Pc = P[rows]
    theta = Pc @ F.T
    if offset is not None:
        theta += offset
    T = _mm_weights(theta)
    if w is not None:
        T *= w[rows]
    b = q[rows]
    if offset is not None:
        b = b - T * offset
    p = Pc.shape[1]
    H = _gram_batched(T, F, _pair_index(p))
    H[:, np.arange(p), np.arange(p)] += max(2.0 * alpha, _MIN_RIDGE)
    rhs = b @ F
    return np.linalg.solve(H, rhs[:, :, None])[:, :, 0]


def _mm_block(parallel, P, F, offset, data, transpose, alpha):
    """Schein et al. bound update of every row of ``P``; see :func:`_mm_chunk`."""
    q, w, _ = data.side(transpose)
    chunks = _chunks(P.shape[0], F.shape[0])
    parts = _run_chunks(parallel, _mm_chunk, chunks, P, F, offset, q, w, alpha)
    return np.concatenate(parts, axis=0)


# ---------------------------------------------------------------------------------
# objective evaluation
# ---------------------------------------------------------------------------------


def _eval_chunk(rows, P, F, offset, q, w, n_missing, delta):
    Pc = P[rows]
    shape = (Pc.shape[0], F.shape[0])
    theta = np.matmul(Pc, F.T, out=_buffer("theta", shape, P.dtype))
    if offset is not None:
        theta += offset
    qc = q[rows]
    tmp = _buffer("g", shape, P.dtype)
    n_wrong = _count_wrong(theta, qc)
    n_unsafe = _count_unsafe(theta, qc, n_missing[rows].sum(), delta, tmp=tmp)
    terms = _loss_terms(theta, qc, out=_buffer("h", shape, P.dtype), tmp=tmp)
    if w is not None:
        terms *= w[rows]
    return terms.sum(axis=1, dtype=np.float64), n_wrong, n_unsafe


def _stop_delta(U, V, mu, tau):
    """Absolute margin on the logits that makes a stop with zero errors certifiable.

    It bounds ``1e-6 (1 + |L_i| . |R_j| + |tau|)`` for the packaged factors, a
    thousand times what :func:`certify_rounding` requires by default. Logits
    computed in float32 (``U.dtype``) also carry rounding errors of at most
    ``(p + 4) eps`` times ``sum_l |U_il V_jl| + |mu_j|`` (the casts of the
    factors, the dot product of ``p + 1`` terms, the offset; ``eps`` is float32's
    machine epsilon, twice its unit roundoff), which the same scale bounds; their
    margin adds that (1.3e-5 instead of 1e-6 at p = 100).
    """
    nu = np.sqrt(_penalty_rows(U).max()) if U.size else 0.0
    nv = np.sqrt(_penalty_rows(V).max()) if V.size else 0.0
    scale = nu * nv + 2.0 * abs(tau) + 1.0
    if mu is not None:
        scale += np.abs(mu).max()
    margin = _STOP_MARGIN
    if U.dtype != np.float64:
        margin += (U.shape[1] + 4) * float(np.finfo(U.dtype).eps)
    return margin * (1.0 + scale)


def _penalty(U, V, mu):
    total = float(np.sum(U * U, dtype=np.float64) + np.sum(V * V, dtype=np.float64))
    if mu is not None:
        total += float(np.sum(mu * mu))
    return total


def _evaluate(parallel, U, V, mu, data, tau, transpose=False):
    """Data losses per row (per column if ``transpose``) and the entry counts.

    Returns ``(losses, n_wrong, n_unsafe)``: ``n_wrong`` entries are rounded wrongly
    at logit 0, ``n_unsafe`` entries are wrong or within the stop margin of 0.
    """
    delta = _stop_delta(U, V, mu, tau)
    if transpose:
        P, F, offset = _with_bias(U, V, mu)
    else:
        P, F, offset = U, V, mu
    q, w, n_missing = data.side(transpose)
    chunks = _chunks(P.shape[0], F.shape[0])
    parts = _run_chunks(
        parallel, _eval_chunk, chunks, P, F, offset, q, w, n_missing, delta
    )
    losses = np.concatenate([q[0] for q in parts])
    return losses, sum(q[1] for q in parts), sum(q[2] for q in parts)


def _objective(losses, U, V, mu, alpha):
    return float(losses.sum()) + 0.5 * alpha * _penalty(U, V, mu)


def _is_global(mu):
    """Whether ``mu`` is the scalar offset of the "global" model (a 0-d array)."""
    return mu is not None and mu.ndim == 0


def _with_bias(U, V, mu):
    """``(P, F, offset)`` of the column update.

    Column bias: ``P = [V, mu]``, ``F = [U, 1]``; global offset: ``P = V``, ``F = U``
    and the offset ``b``; no bias: ``P = V``, ``F = U``.
    """
    if mu is None or _is_global(mu):
        return V, U, mu
    ones = np.ones((U.shape[0], 1), dtype=U.dtype)
    return np.hstack([V, mu[:, None].astype(V.dtype)]), np.hstack([U, ones]), None


def _split_bias(VB, mu):
    if mu is None or _is_global(mu):
        return VB, mu
    return VB[:, :-1], VB[:, -1].copy()


def _offset_sign(tau):
    """Required sign of the global offset ``b``: opposite to ``tau``."""
    return -1.0 if tau > 0 else 1.0


def _project_offset(b, tau):
    """Keep the global offset on the side that ``tau`` needs, at least ``_B_MIN``."""
    if tau > 0:
        return np.asarray(min(float(b), -_B_MIN))
    return np.asarray(max(float(b), _B_MIN))


def _offset_chunk(rows, U, V, b, q, w):
    theta = U[rows] @ V.T
    theta += b
    g, h = _grad_hess_terms(theta, q[rows])
    if w is not None:
        g *= w[rows]
        h *= w[rows]
    return g.sum(), h.sum()


def _offset_loss_chunk(rows, U, V, b, q, w):
    theta = U[rows] @ V.T
    theta += b
    terms = _loss_terms(theta, q[rows])
    if w is not None:
        terms *= w[rows]
    return terms.sum(axis=1)


def _offset_step(parallel, U, V, b, data, alpha, tau, row_loss):
    """Damped, projected Newton step on the global offset ``b`` (U and V fixed).

    The step is halved until the projected Armijo rule holds; if it never does,
    ``b`` is kept. Returns the new ``b`` and the per-row data losses there.
    """
    chunks = _chunks(*data.shape)
    parts = _run_chunks(parallel, _offset_chunk, chunks, U, V, b, data.q, data.w)
    grad = sum(r[0] for r in parts) + alpha * float(b)
    hess = sum(r[1] for r in parts) + max(alpha, _MIN_RIDGE)
    f0 = float(row_loss.sum()) + 0.5 * alpha * float(b) ** 2
    step = 1.0
    for _ in range(_MAX_HALVINGS):
        trial = _project_offset(float(b) - step * grad / hess, tau)
        change = float(trial) - float(b)
        if change == 0.0:
            break
        parts = _run_chunks(
            parallel, _offset_loss_chunk, chunks, U, V, trial, data.q, data.w
        )
        losses = np.concatenate(parts)
        ft = float(losses.sum()) + 0.5 * alpha * float(trial) ** 2
        if ft <= f0 + _ARMIJO * grad * change:
            return trial, losses
        step *= 0.5
    return b, row_loss


def _offset_mm_step(parallel, U, V, b, data, alpha, tau):
    """Schein-style bound update of the global offset (closed form, projected)."""
    chunks = _chunks(*data.shape)

    def chunk(rows):
        theta = U[rows] @ V.T
        theta += b
        T = _mm_weights(theta)
        q = data.q[rows]
        if data.w is not None:
            T *= data.w[rows]
            q = q * data.w[rows]
        return float(np.sum(q) - np.sum(T * theta)), float(T.sum())

    parts = _run_chunks(parallel, chunk, chunks)
    num = sum(r[0] for r in parts) + float(b) * sum(r[1] for r in parts)
    den = sum(r[1] for r in parts) + max(2.0 * alpha, _MIN_RIDGE)
    return _project_offset(num / den, tau)


# ---------------------------------------------------------------------------------
# initialisation
# ---------------------------------------------------------------------------------

# scale of the saturated logits 2X - 1 used by the SVD warm start
_INIT_SCALE = 2.0
# starting magnitude of the global offset: larger than _INIT_SCALE, so that the
# shifted matrix c (2X - 1) - b is positive and its SVD carries the offset along
_GLOBAL_INIT = 4.0


def _svd_init(data, p, kind, random_state, tau=0.5):
    """Warm start from the truncated SVD of ``c (2X - 1)`` (missing entries 0).

    With the column bias (``kind="column"``), ``mu`` starts at the column means of
    ``c (2X - 1)`` over the observed entries, with the global offset
    (``kind="global"``) ``b`` starts at the overall mean (projected to the side
    ``tau`` needs); the SVD is taken of the centred matrix. The factors are balanced
    (``U = A sqrt(S)``, ``V = B sqrt(S)``). Directions beyond the rank of the
    matrix get small random values (zero columns would stay zero).
    """
    m, n = data.shape
    rng = check_random_state(random_state)
    if data.sparse:
        return _svd_init_sparse(data, p, kind, rng, tau)
    # one m x n float64 work array, updated in place
    Z = np.multiply(data.q, _INIT_SCALE, dtype=np.float64)
    if data.w is not None:
        Z *= data.w
    mu = None
    if kind != "none":
        counts = data.w.sum(axis=0) if data.w is not None else np.full(n, m)
        if kind == "column":
            mu = Z.sum(axis=0) / np.maximum(counts, 1)
        else:
            mu = _project_offset(_GLOBAL_INIT * _offset_sign(tau), tau)
        Z -= mu
        if data.w is not None:
            Z *= data.w
    if p == 0:
        return np.zeros((m, 0)), np.zeros((n, 0)), mu
    if 2 * p >= min(m, n):
        A, s, Bt = np.linalg.svd(Z, full_matrices=False)
        A, s, Bt = A[:, :p], s[:p], Bt[:p].T
    else:
        A, s, Bt = randomized_svd(Z, p, n_iter=7, random_state=rng)
        Bt = Bt.T
    root = np.sqrt(s)
    U, V = A * root, Bt * root
    small = s <= 1e-8 * max(s[0], 1.0)
    n_extra = p - s.size + int(small.sum())
    if n_extra:
        scale = 1e-2
        U = np.hstack([U[:, ~small], scale * rng.standard_normal((m, n_extra))])
        V = np.hstack([V[:, ~small], scale * rng.standard_normal((n, n_extra))])
    return U, V, mu


# power iterations of the randomized SVD of the sparse warm start (as randomized_svd)
_INIT_POWER_ITER = 7
_INIT_OVERSAMPLES = 10


def _svd_init_sparse(data, p, kind, rng, tau):
    """:func:`_svd_init` for sparse signs: ``c (2X - 1) - mu`` as an operator.

    Complete data only, so ``Z = 2c X - 1 s^T`` with ``s = c + mu`` (``mu`` the column
    means of ``c (2X - 1)``, the global offset, or 0): a sparse matrix plus a rank-one
    term. Its top ``p`` singular triplets come from a randomized SVD (Halko et al.,
    ``p + 10`` samples, 7 QR-normalised power iterations) whose products use the CSR
    pattern of the ones, so memory grows with the ones and ``(m + n) p``. The result
    equals the dense warm start up to floating-point rounding (another order of
    summation), not bit for bit.
    """
    m, n = data.shape
    c = _INIT_SCALE
    q, qt = data.q, data.qt
    ones = np.ones(q.nnz)
    X = sp.csr_matrix((ones, q.indices, q.indptr), shape=(m, n))
    XT = sp.csr_matrix((ones, qt.indices, qt.indptr), shape=(n, m))
    col_ones = np.diff(qt.indptr).astype(np.float64)
    mu = None
    if kind == "column":
        mu = c * (2.0 * col_ones - m) / max(m, 1)
    elif kind == "global":
        mu = _project_offset(_GLOBAL_INIT * _offset_sign(tau), tau)
    s = np.broadcast_to(c + (0.0 if mu is None else mu), (n,)).astype(np.float64)
    if p == 0:
        return np.zeros((m, 0)), np.zeros((n, 0)), mu

    def matmat(G):  # Z @ G
        out = 2.0 * c * (X @ G)
        out -= s @ G
        return out

    def rmatmat(Q):  # Z.T @ Q
        out = 2.0 * c * (XT @ Q)
        out -= np.outer(s, Q.sum(axis=0))
        return out

    size = min(p + _INIT_OVERSAMPLES, m, n)
    Q = matmat(rng.standard_normal((n, size)))
    for _ in range(_INIT_POWER_ITER):
        Q, _ = np.linalg.qr(Q)
        Q, _ = np.linalg.qr(rmatmat(Q))
        Q = matmat(Q)
    Q, _ = np.linalg.qr(Q)
    Ab, sv, Bt = np.linalg.svd(rmatmat(Q).T, full_matrices=False)
    A, sv, B = (Q @ Ab)[:, :p], sv[:p], Bt[:p].T
    root = np.sqrt(sv)
    U, V = A * root, B * root
    small = sv <= 1e-8 * max(sv[0], 1.0)
    n_extra = p - sv.size + int(small.sum())
    if n_extra:
        scale = 1e-2
        U = np.hstack([U[:, ~small], scale * rng.standard_normal((m, n_extra))])
        V = np.hstack([V[:, ~small], scale * rng.standard_normal((n, n_extra))])
    return U, V, mu


def _add_column(data, U, V, mu, deadline=None):
    """Add one latent column along the steepest rank-one descent direction.

    The new column is the top singular pair ``(a, b)`` of the negative gradient of
    the data loss with respect to the logits, scaled by one Newton step on the
    objective along ``t a b^T`` (at least a small positive step). On sparse data
    the pair is found by chunks of rows (:func:`_top_gradient_pair`, which cuts its
    power iterations short once ``deadline`` has expired).
    """
    m, n = data.shape
    if data.sparse:
        a, b, s0, curvature = _top_gradient_pair(data, U, V, mu, deadline)
        t = min(max(s0 / max(curvature, 1e-12), 1e-2), 1e2)
        root = np.sqrt(t)
        return np.hstack([U, root * a[:, None]]), np.hstack([V, root * b[:, None]]), mu
    theta = U @ V.T
    if mu is not None:
        theta += mu
    g, h = _grad_hess_terms(theta, data.q)
    if data.w is not None:
        g *= data.w
        h *= data.w
    A, s, Bt = (
        np.linalg.svd(-g, full_matrices=False)
        if min(m, n) <= 64
        else (randomized_svd(-g, 1, n_iter=7, random_state=0))
    )
    a, b, s0 = A[:, 0], Bt[0], s[0]
    curvature = float((a * a) @ h @ (b * b))
    t = s0 / max(curvature, 1e-12)
    t = min(max(t, 1e-2), 1e2)
    root = np.sqrt(t)
    return (
        np.hstack([U, root * a[:, None]]),
        np.hstack([V, root * b[:, None]]),
        mu,
    )


def _gradient_blocks(data, U, V, mu, curvature=False):
    """``(rows, g)`` (``(rows, g, h)`` with ``curvature``) by the chunks of the data.

    ``g`` and ``h`` are the first and second derivatives of the entry losses at the
    logits ``U V^T + mu`` (:func:`_grad_hess_terms`), one chunk of rows at a time.
    """
    for rows in _chunks(*data.shape):
        theta = U[rows] @ V.T
        if mu is not None:
            theta += mu
        if curvature:
            g, h = _grad_hess_terms(theta, data.q[rows])
            yield rows, g, h
        else:  # g = (tanh(theta / 2) - q) / 2 only
            np.multiply(theta, 0.5, out=theta)
            np.tanh(theta, out=theta)
            theta -= data.q[rows]
            theta *= 0.5
            yield rows, theta


# power iterations for the top singular pair of the gradient of sparse data: every
# product recomputes the gradient chunk by chunk (a pass of tanh over all entries),
# so fewer than the dense SVD's 7; the pair is a heuristic direction for a new column
_ADD_COLUMN_POWER_ITER = 2


def _top_gradient_pair(data, U, V, mu, deadline=None):
    """Top singular pair of ``-g`` and the curvature along it, by chunks of rows.

    The sparse-data counterpart of the dense SVD in :func:`_add_column`: ``g`` is
    recomputed chunk by chunk in every product of a randomized power iteration
    (one vector plus 10 samples, ``_ADD_COLUMN_POWER_ITER`` iterations, fewer once
    ``deadline`` has expired), so no m x n array is held. Returns ``(a, b, sigma,
    (a * a) @ h @ (b * b))``.
    """
    m, n = data.shape
    rng = np.random.RandomState(0)
    size = min(1 + _INIT_OVERSAMPLES, m, n)

    def matmat(G):  # -g @ G
        out = np.empty((m, G.shape[1]))
        for rows, g in _gradient_blocks(data, U, V, mu):
            np.matmul(g, -G, out=out[rows])
        return out

    def rmatmat(Q):  # -g.T @ Q
        out = np.zeros((n, Q.shape[1]))
        for rows, g in _gradient_blocks(data, U, V, mu):
            out -= g.T @ Q[rows]
        return out

    Q = matmat(rng.standard_normal((n, size)))
    for _ in range(_ADD_COLUMN_POWER_ITER):
        if deadline is not None and deadline.expired():
            break  # the sampled range is a (rougher) direction too
        Q, _ = np.linalg.qr(Q)
        Q, _ = np.linalg.qr(rmatmat(Q))
        Q = matmat(Q)
    Q, _ = np.linalg.qr(Q)
    Ab, sv, Bt = np.linalg.svd(rmatmat(Q).T, full_matrices=False)
    a, b = Q @ Ab[:, 0], Bt[0]
    b2 = b * b
    curvature = 0.0
    for rows, _, h in _gradient_blocks(data, U, V, mu, curvature=True):
        curvature += float((a[rows] * a[rows]) @ (h @ b2))
    return a, b, float(sv[0]), curvature


def _init_from_factors(L, R, kind, tau, m, n, k):
    """Turn user factors ``(L, R)`` in the returned format into ``U, V, mu``.

    For the global model ``theta = L R^T - tau`` has exactly the sign pattern of
    the rounding of ``(L, R)``.
    """
    L = np.asarray(L, dtype=np.float64)
    R = np.asarray(R, dtype=np.float64)
    if L.shape != (m, k) or R.shape != (n, k):
        raise ValueError(
            f"init must be a pair (L, R) of shapes ({m}, {k}) and ({n}, {k}); got "
            f"{L.shape} and {R.shape}."
        )
    if not (np.isfinite(L).all() and np.isfinite(R).all()):
        raise ValueError("init factors must hold finite numbers.")
    if kind == "none":
        return L.copy(), R.copy(), None
    if kind == "global":
        # theta = c (L R^T - tau) with c >= 1 chosen so that |b| = c |tau| >= _B_MIN
        c = max(1.0, _B_MIN / abs(tau))
        root = np.sqrt(c)
        return L * root, R * root, np.asarray(-c * tau)
    c = L[:, -1]
    if not np.all(c == c[0]) or c[0] == 0:
        raise ValueError(
            "With fit_bias=True the last column of the initial L must be a nonzero "
            "constant (the bias column, as returned by lpca_fit)."
        )
    mu = c[0] * R[:, -1] - tau
    return L[:, :-1].copy(), R[:, :-1].copy(), mu


def _package(U, V, mu, tau):
    """Factors ``L (m, k)``, ``R (n, k)`` with ``round_tau(L R^T) = round_0(theta)``.

    With the bias: ``L = [U, 1]``, ``R = [V, mu + tau]``. With the global offset
    ``b`` (of the sign opposite to ``tau``): ``L = s U``, ``R = s V`` with
    ``s^2 = tau / -b``. Without the bias, row ``i``
    of ``L`` is ``c_i U_i`` with ``c_i > 0`` chosen per row so that the logits keep
    their side of ``tau``: for ``tau > 0`` the smallest positive logit of the row is
    scaled to ``2 tau``, for ``tau < 0`` the largest negative one to ``2 tau``. This
    is exact except for logits that are exactly 0 when ``tau > 0`` (they round to 1 at
    logit 0 but to 0 at ``tau``).
    """
    m = U.shape[0]
    if _is_global(mu):
        # theta >= 0  <=>  U V^T >= -b  <=>  (tau / -b) U V^T >= tau
        root = np.sqrt(tau / -float(mu))
        return U * root, V * root
    if mu is not None:
        L = np.hstack([U, np.ones((m, 1))])
        R = np.hstack([V, (mu + tau)[:, None]])
        return L, R
    if tau == 0:
        return U.copy(), V.copy()
    theta = U @ V.T
    if tau > 0:
        masked = np.where(theta > 0, theta, np.inf)
        ref = masked.min(axis=1)
    else:
        masked = np.where(theta < 0, theta, -np.inf)
        ref = masked.max(axis=1)
    scale = np.where(
        np.isfinite(ref), 2.0 * tau / np.where(np.isfinite(ref), ref, 1), 1
    )
    return U * scale[:, None], V.copy()


# ---------------------------------------------------------------------------------
# the fitting loops: one sweep loop shared by the alternating solvers
# ---------------------------------------------------------------------------------


def _stalled(counts, stall, n_observed):
    """Whether the unsafe counts have stalled.

    ``stall = (window, fraction[, rate[, far]])``: the count has not dropped, over
    the last ``window`` sweeps, by ``fraction`` of its value nor by ``rate`` times
    the number of observed entries; or (with ``far``) it is still above ``far``
    after ``window`` sweeps: the fit is far from an exact rounding.
    """
    if stall is None or len(counts) <= stall[0]:
        return False
    if len(stall) > 3 and counts[-1] > stall[3]:
        return True
    window = counts[-stall[0] - 1 :]
    drop = window[0] - min(window[1:])
    absolute = stall[2] * n_observed if len(stall) > 2 else 0.0
    return drop < max(stall[1] * window[0], absolute) or drop <= 0


class _NewtonSweep:
    """One damped alternating Newton sweep: all rows of U, then of [V, mu] (+ b).

    Data losses are carried along per row and per column, so each half step costs
    one gradient/Hessian pass and one loss pass (plus the halvings of the rows that
    need them). Each half step also reports the entry counts of the state it starts
    from, so the exactness check is free and done twice per sweep.
    """

    def __init__(self, data, U, V, mu, *, alpha, tau, parallel):
        self.data, self.alpha, self.tau, self.parallel = data, alpha, tau, parallel
        self.row_loss, _, n_unsafe = _evaluate(parallel, U, V, mu, data, tau)
        self.start = (_objective(self.row_loss, U, V, mu, alpha), n_unsafe)

    def __call__(self, U, V, mu, stop_when_exact):
        data, alpha, tau, parallel = self.data, self.alpha, self.tau, self.parallel
        if U.shape[1]:
            delta = _stop_delta(U, V, mu, tau)
            U_new, _, col_loss, n_unsafe = _newton_block(
                parallel, U, V, mu, data, False, alpha, delta, self.row_loss
            )
            if stop_when_exact and n_unsafe == 0:
                return U, V, mu, _objective(self.row_loss, U, V, mu, alpha), 0
            U = U_new
        else:
            col_loss, _, _ = _evaluate(parallel, U, V, mu, data, tau, transpose=True)
        delta = _stop_delta(U, V, mu, tau)
        P, F, offset = _with_bias(U, V, mu)
        P_new, _, row_loss, n_unsafe = _newton_block(
            parallel, P, F, offset, data, True, alpha, delta, col_loss
        )
        if stop_when_exact and n_unsafe == 0:
            return U, V, mu, _objective(col_loss, U, V, mu, alpha), 0
        V, mu = _split_bias(P_new, mu)
        if _is_global(mu):
            mu, row_loss = _offset_step(parallel, U, V, mu, data, alpha, tau, row_loss)
        self.row_loss = row_loss
        return U, V, mu, _objective(row_loss, U, V, mu, alpha), n_unsafe


class _MMSweep:
    """Schein et al.'s alternating bound updates (U, then [V, mu]); monotone."""

    def __init__(self, data, U, V, mu, *, alpha, tau, parallel):
        self.data, self.alpha, self.tau, self.parallel = data, alpha, tau, parallel
        losses, _, n_unsafe = _evaluate(parallel, U, V, mu, data, tau)
        self.start = (_objective(losses, U, V, mu, alpha), n_unsafe)

    def __call__(self, U, V, mu, stop_when_exact):
        data, alpha, tau, parallel = self.data, self.alpha, self.tau, self.parallel
        if U.shape[1]:
            U = _mm_block(parallel, U, V, mu, data, False, alpha)
        P, F, offset = _with_bias(U, V, mu)
        V, mu = _split_bias(_mm_block(parallel, P, F, offset, data, True, alpha), mu)
        if _is_global(mu):
            mu = _offset_mm_step(parallel, U, V, mu, data, alpha, tau)
        losses, _, n_unsafe = _evaluate(parallel, U, V, mu, data, tau)
        return U, V, mu, _objective(losses, U, V, mu, alpha), n_unsafe


def _sweep_loop(
    sweep,
    U,
    V,
    mu,
    *,
    n_observed,
    max_iter,
    tol,
    stall,
    stop_when_exact,
    deadline,
    verbose,
    tick=None,
    unsafe_history=None,
):
    """Run ``sweep`` until a stopping rule holds; the loop of every sweep solver.

    Rules, checked after each sweep in this order: ``"exact"`` (with
    ``stop_when_exact``, no observed entry wrong or within the stop margin),
    ``"tol"`` (relative objective decrease below ``tol``), ``"stalled"`` (see
    :func:`_stalled`), ``"time_limit"`` (``deadline.expired()``), else
    ``"max_iter"``. ``tick(sweep_number, n_unsafe)`` is called after every sweep
    (progress reports). The unsafe counts are appended to ``unsafe_history``.
    """
    if unsafe_history is None:
        unsafe_history = []
    objective, n_unsafe = sweep.start
    history = [objective]
    unsafe_history.append(n_unsafe)
    if stop_when_exact and n_unsafe == 0:
        return U, V, mu, history, 0, "exact"
    status, n_iter = "max_iter", 0
    for it in range(1, max_iter + 1):
        U, V, mu, objective, n_unsafe = sweep(U, V, mu, stop_when_exact)
        n_iter = it
        prev = history[-1]
        history.append(objective)
        if stop_when_exact and n_unsafe == 0:
            status = "exact"
            break
        unsafe_history.append(n_unsafe)
        if verbose >= 2:
            print(f"[lpca] sweep {it}: objective {objective:.8g}, {n_unsafe} unsafe")
        if tick is not None:
            tick(it, n_unsafe)
        if prev - objective <= tol * max(abs(objective), 1e-300):
            status = "tol"
            break
        if _stalled(unsafe_history, stall, n_observed):
            status = "stalled"
            break
        if deadline is not None and deadline.expired():
            status = "time_limit"
            break
    return U, V, mu, history, n_iter, status


def _unpack(z, m, n, p, kind):
    """Split the parameter vector of the joint objective into ``U, V, mu``."""
    U = z[: m * p].reshape(m, p)
    V = z[m * p : m * p + n * p].reshape(n, p)
    if kind == "none":
        mu = None
    elif kind == "global":
        mu = z[m * p + n * p].reshape(())
    else:
        mu = z[m * p + n * p :]
    return U, V, mu


def _kind(mu):
    if mu is None:
        return "none"
    return "global" if _is_global(mu) else "column"


# chunks of rows per task of the joint objective: each task accumulates its share of
# the gradient of V in place, so only a few (n, p) partial sums are added up at the
# end; fixed by the data shape only (never by n_jobs), like the chunks themselves
_TASK_CHUNKS = 16
_LOG2 = float(np.log(2.0))


def _total(a, w=None):
    """Sum of the entries of ``a`` (weighted by ``w``): one vectorised pass.

    ``np.einsum`` sums with several accumulators in the dtype of ``a``, three times
    faster than ``a.sum()`` in float32 on a chunk of 2^18 entries; its error is at
    the rounding of the result (checked against ``math.fsum``). The sums of the
    chunks are added up in float64.
    """
    if w is None:
        return float(np.einsum("ij->", a))
    return float(np.einsum("ij,ij->", a, w))


def _joint_task(chunks, U, V, F, q, w, n_missing, ones, delta):
    """Loss, gradient parts and unsafe entries of a run of chunks of rows.

    ``F`` is ``[V, mu] / 2`` (``V / 2`` without a bias), so that one product per
    chunk gives the half logits ``h = theta / 2 = [U, 1] @ F.T``. With
    ``t = tanh(h)``, the entry loss is ``max(-2 q h, 0) + log 2 - log1p(|t|)``
    (since ``tanh(|q theta| / 2) = |t|`` and
    ``log1p(exp(-|q theta|)) = log(2 / (1 + |t|))``) and twice its derivative is
    ``t - q``; the factor 1/2 is applied to the small products, not to the entries.

    With ``ones`` (the CSR pattern of the ones that :class:`_Data` keeps when
    nothing is missing and at most ``_SPARSE_ONES`` of the entries are ones), the
    signs ``q`` are never read: the chunk is treated as all zeros (``q = -1``) and
    the ones are corrections gathered from, and scattered into, the chunk:
    ``sum max(-2 q h, 0) = 2 sum max(h, 0) - 2 sum_ones h`` and
    ``t - q = t + 1 - 2 [x = 1]``. This saves three passes over the entries.

    Returns the task's rows of ``2 dF/dU`` and its shares of ``2 dF/dV`` and
    ``2 dF/dmu`` (accumulated in place over the chunks, as the columns of one
    (n, F.shape[1]) array). The loss of the well-classified entries (``|q theta| >
    17`` in float32) is lost to rounding in ``log 2 - log1p(|t|)``; each such
    entry's true loss is below ``5e-8``.
    """
    dt = U.dtype
    n, p = V.shape
    p1 = F.shape[1]  # p + 1 with a bias: G.T @ [U, 1] gives dF/dV and dF/dmu at once
    gVmu = np.zeros((n, p1), dtype=dt)
    first = chunks[0].start
    gU = np.empty((chunks[-1].stop - first, p), dtype=dt)
    Ub = np.ones((_CHUNK_ENTRIES // max(n, 1) + 1, p1), dtype=dt)
    # np.minimum/maximum against an array are several times faster than against a
    # scalar
    zeros = np.zeros(Ub.shape[0] * n, dtype=dt)
    loss, n_unsafe = 0.0, 0
    for rows in chunks:
        Uc = U[rows]
        Ub1 = Ub[: Uc.shape[0]]
        Ub1[:, :p] = Uc
        shape = (Uc.shape[0], n)
        wc = None if w is None else w[rows]
        half = np.matmul(Ub1, F.T, out=_buffer("theta", shape, dt))
        a = _buffer("g", shape, dt)
        mask = _buffer("mask", shape, np.bool_)
        if ones is not None:
            ptr, flat = ones
            at = flat[ptr[rows.start] : ptr[rows.stop]] - rows.start * n
            h1 = half.reshape(-1)[at]
            # unsafe: zeros with h >= -delta / 2 and ones with h <= delta / 2
            np.greater_equal(half, -0.5 * delta, out=mask)
            n_unsafe += int(np.count_nonzero(mask))
            n_unsafe += int(np.count_nonzero(h1 <= 0.5 * delta))
            n_unsafe -= int(np.count_nonzero(h1 >= -0.5 * delta))
            np.maximum(half, zeros[: half.size].reshape(shape), out=a)
            relu = 2.0 * (_total(a) - float(h1.sum(dtype=np.float64)))
            n_obs = float(half.size)
        else:
            qc = q[rows]
            np.multiply(qc, half, out=a, dtype=dt)
            np.less_equal(a, 0.5 * delta, out=mask)
            n_unsafe += int(np.count_nonzero(mask)) - int(n_missing[rows].sum())
            np.minimum(a, zeros[: a.size].reshape(shape), out=a)  # -max(-2a, 0) / 2
            relu = -2.0 * _total(a, wc)
            n_obs = float(a.size if w is None else wc.sum(dtype=np.float64))
        t = np.tanh(half, out=half)
        b = np.abs(t, out=_buffer("h", shape, dt))
        np.log1p(b, out=b)
        loss += _LOG2 * n_obs + relu - _total(b, wc)
        if ones is not None:
            g = np.add(t, 1.0, out=t)  # twice the derivative: t - q
            g.reshape(-1)[at] -= 2.0
        else:
            g = np.subtract(t, qc, out=t, dtype=dt)
            if wc is not None:
                g *= wc
        np.matmul(g, V, out=gU[rows.start - first : rows.stop - first])
        gVmu += np.matmul(g.T, Ub1, out=_buffer("gV", gVmu.shape, dt))
    return loss, gU, gVmu, n_unsafe


def _joint_objective(z, data, p, kind, alpha, parallel=None, tau=0.5, counts=None):
    """Objective and gradient over ``z = [U.ravel(), V.ravel(), mu]`` (L-BFGS).

    The m x n work runs in ``data.dtype`` (float32 mode: the factors are cast down
    for it; the sums and the returned gradient are float64), in fixed runs of
    chunks of rows (see :func:`_joint_task`). If ``counts`` is a dict,
    ``counts["unsafe"]`` receives the entries that are wrong or within the stop
    margin at ``z`` (see :func:`_evaluate`), computed from the same logits.
    """
    m, n = data.shape
    U, V, mu = _unpack(z, m, n, p, kind)
    dt = data.dtype
    Uw, Vw = U.astype(dt, copy=False), V.astype(dt, copy=False)
    muw = None if mu is None else mu.astype(dt, copy=False)
    delta = _stop_delta(Uw, Vw, muw, tau)
    F = Vw if mu is None else np.column_stack([Vw, np.broadcast_to(muw, n)])
    F = np.multiply(F, 0.5, dtype=dt)
    chunks = _chunks(m, n)
    tasks = [chunks[i : i + _TASK_CHUNKS] for i in range(0, len(chunks), _TASK_CHUNKS)]
    args = (Uw, Vw, F, data.q, data.w, data.n_missing, data.ones, delta)
    # the tasks return their results (no shared output array): the same on every
    # joblib backend, threads or processes of a cluster
    parts = _run_chunks(parallel, _joint_task, tasks, *args)
    f = sum(r[0] for r in parts) + 0.5 * alpha * float(z @ z)
    # gradient = alpha z + (the tasks' doubled data gradients) / 2, written in place
    grad = np.multiply(z, alpha)
    # views into grad (a global mu is unpacked as a 0-d copy: its entry is grad[-1])
    gU, gV, gmu = _unpack(grad, m, n, p, kind)
    start = 0
    for r in parts:
        stop = start + r[1].shape[0]
        gU[start:stop] += 0.5 * r[1]
        start = stop
    gVmu = parts[0][2].astype(np.float64)
    for r in parts[1:]:
        gVmu += r[2]
    gV += 0.5 * gVmu[:, :p]
    if kind == "column":
        gmu += 0.5 * gVmu[:, p]
    elif kind == "global":
        grad[-1] += 0.5 * float(gVmu[:, p].sum())
    if counts is not None:
        counts["unsafe"] = sum(r[3] for r in parts)
    return f, grad


def _lbfgs_fit(
    data,
    U,
    V,
    mu,
    *,
    alpha,
    max_iter,
    tol,
    tau,
    parallel,
    stop_when_exact,
    deadline,
    verbose,
    stall=None,
    tick=None,
    unsafe_history=None,
):
    """Minimise the joint objective over ``(U, V, mu)`` with scipy's L-BFGS-B.

    The stopping rules are those of :func:`_sweep_loop`, checked in scipy's
    callback after every iteration (``tol`` is also scipy's ``ftol``).
    """
    m, n = data.shape
    p = U.shape[1]
    kind = _kind(mu)
    if unsafe_history is None:
        unsafe_history = []

    def unpack(z):
        return _unpack(z, m, n, p, kind)

    last = {}  # the last point evaluated (a copy) and its unsafe count

    def fun(z):
        counts = {}
        out = _joint_objective(z, data, p, kind, alpha, parallel, tau, counts)
        last["z"], last["unsafe"] = z.copy(), counts["unsafe"]
        return out

    z0 = np.concatenate([U.ravel(), V.ravel()] + ([] if mu is None else [np.ravel(mu)]))
    bounds = None
    if kind == "global":
        bounds = [(None, None)] * (z0.size - 1)
        bounds.append((None, -_B_MIN) if tau > 0 else (_B_MIN, None))
    history = [fun(z0)[0]]
    state = {"status": "max_iter", "n_iter": 0}

    def callback(intermediate_result):
        state["n_iter"] += 1
        history.append(float(intermediate_result.fun))
        if verbose >= 2:
            print(f"[lpca] iter {state['n_iter']}: loss {history[-1]:.6g}")
        # the accepted point is normally the last one evaluated: reuse its count
        if np.array_equal(last["z"], intermediate_result.x):
            n_unsafe = last["unsafe"]
        else:
            U_, V_, mu_ = unpack(intermediate_result.x)
            _, _, n_unsafe = _evaluate(parallel, U_, V_, mu_, data, tau)
        unsafe_history.append(n_unsafe)
        if tick is not None:
            tick(state["n_iter"], n_unsafe)
        if stop_when_exact and n_unsafe == 0:
            state["status"] = "exact"
            raise StopIteration
        if _stalled(unsafe_history, stall, data.n_observed):
            state["status"] = "stalled"
            raise StopIteration
        if deadline is not None and deadline.expired():
            state["status"] = "time_limit"
            raise StopIteration

    res = scipy.optimize.minimize(
        fun,
        z0,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        callback=callback,
        options={
            "maxiter": max_iter,
            "ftol": tol,
            "gtol": 0.0,
            "maxcor": _LBFGS_MEMORY,
        },
    )
    if state["status"] == "max_iter" and res.status == 0:
        state["status"] = "tol"
    U, V, mu = (a.copy() if a is not None else None for a in unpack(res.x))
    if kind == "global":
        mu = _project_offset(mu, tau)
    return U, V, mu, history, state["n_iter"], state["status"]


def _fit_core(
    data,
    U,
    V,
    mu,
    *,
    tau,
    solver,
    alpha,
    max_iter,
    tol,
    n_jobs,
    verbose,
    stop_when_exact,
    deadline,
    stall=None,
    tick=None,
):
    """Run a solver from ``(U, V, mu)``; return the state and a diagnostics dict.

    ``deadline`` is a :class:`~sklearn_rrank._ranksearch.Deadline` or None. The
    sweeps compute in ``data.dtype`` (float32 mode: the factors are cast down at
    the start and back to float64 at the end); ``solver="auto"`` is resolved by
    :func:`_resolve_solver`.
    """
    start = time.perf_counter()
    solver = _resolve_solver(solver, U.shape[1], *data.shape)
    if data.dtype != np.float64:
        U, V = U.astype(data.dtype), V.astype(data.dtype)
    unsafe_history = []
    parallel = _make_parallel(n_jobs, verbose)
    common = dict(
        max_iter=max_iter,
        tol=tol,
        stall=stall,
        stop_when_exact=stop_when_exact,
        deadline=deadline,
        verbose=verbose,
        tick=tick,
        unsafe_history=unsafe_history,
    )
    # BLAS runs single-threaded: the products here are per block of rows, and
    # multithreaded BLAS on small products is slow on a busy machine; parallelism
    # comes from n_jobs
    with threadpool_limits(limits=1, user_api="blas"), parallel or nullcontext():
        if solver == "lbfgs":
            U, V, mu, history, n_iter, status = _lbfgs_fit(
                data, U, V, mu, alpha=alpha, tau=tau, parallel=parallel, **common
            )
        else:
            kind = _NewtonSweep if solver == "newton" else _MMSweep
            sweep = kind(data, U, V, mu, alpha=alpha, tau=tau, parallel=parallel)
            U, V, mu, history, n_iter, status = _sweep_loop(
                sweep, U, V, mu, n_observed=data.n_observed, **common
            )
        U, V = U.astype(np.float64), V.astype(np.float64)
        if mu is not None:
            mu = np.asarray(mu, dtype=np.float64)
        n_wrong = 0
        if status != "exact":
            _, n_wrong, _ = _evaluate(parallel, U, V, mu, data, tau)
    info = {
        "solver_used": solver,
        "unsafe_history": unsafe_history,
        "loss": [float(v) for v in history],
        "status": status,
        "n_errors_logit": int(n_wrong),
        "seconds": time.perf_counter() - start,
    }
    return U, V, mu, n_iter, info


# ---------------------------------------------------------------------------------
# public functions
# ---------------------------------------------------------------------------------

_SOLVERS = ("auto", "newton", "lbfgs", "mm")
# "auto": Newton up to this many latent factors, L-BFGS beyond (a Newton half step
# costs O(m n p^2 / 2) for the p x p systems, L-BFGS O(m n p) per iteration)
_AUTO_NEWTON_MAX_P = 24


def _resolve_solver(solver, p, m, n):
    """The solver that ``"auto"`` stands for with ``p`` latent factors."""
    if solver != "auto":
        return solver
    return "newton" if p <= _AUTO_NEWTON_MAX_P else "lbfgs"


def _model_kind(fit_bias, tau):
    """``"column"``, ``"none"`` or ``"global"`` from the ``fit_bias`` parameter."""
    if isinstance(fit_bias, str):
        if tau == 0:
            raise ValueError(
                'fit_bias="global" needs tau != 0 (with tau = 0 the offset must be 0; '
                "use fit_bias=False)."
            )
        return "global"
    return "column" if fit_bias else "none"


def _fit_message(info, max_iter, tol):
    """One line on how a fit stopped; for a non-converged fit, what to change."""
    status = info["status"]
    if status == "exact":
        return "converged: every entry rounded correctly with a margin"
    if status == "tol":
        return f"converged: relative objective decrease below tol={tol:g}"
    if status == "stalled":
        return "converged: the wrong entries stopped dropping (stall of the rounding)"
    loss = info["loss"]
    rel = (loss[-2] - loss[-1]) / max(abs(loss[-1]), 1e-300) if len(loss) > 1 else 0
    if status == "time_limit":
        return (
            f"stopped by the time limit with a relative objective decrease of "
            f"{rel:.1e} per sweep; raise time_limit"
        )
    return (
        f"stopped after max_iter={max_iter} sweeps with a relative objective "
        f"decrease of {rel:.1e} per sweep (tol={tol:g}) and the wrong entries still "
        f"dropping; raise max_iter, or raise tol to accept this fit"
    )


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "tau": [Real],
        "fit_bias": ["boolean", StrOptions({"global"})],
        "solver": [StrOptions(set(_SOLVERS))],
        "dtype": [StrOptions({"float64", "float32"})],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "init": [tuple, list, None],
        "random_state": ["random_state"],
        "n_jobs": [Integral, None],
        "verbose": ["verbose"],
        "stop_when_exact": ["boolean"],
        "time_limit": [Interval(Real, 0, None, closed="left"), None],
    },
    prefer_skip_nested_validation=True,
)
def lpca_fit(
    X,
    n_components,
    *,
    tau=0.5,
    fit_bias=True,
    solver="auto",
    alpha=DEFAULT_ALPHA,
    max_iter=FIT_MAX_ITER,
    tol=FIT_TOL,
    init=None,
    random_state=None,
    n_jobs=None,
    verbose=0,
    stop_when_exact=False,
    time_limit=None,
    dtype="float64",
):
    """Logistic PCA of a binary matrix, returned as a rounding rank-k factorization.

    Fits ``P(X_ij = 1) = sigmoid(theta_ij)`` with logits
    ``theta = U V^T + 1 mu^T`` by minimising the negative log-likelihood of the
    observed entries plus ``alpha / 2 (|U|^2 + |V|^2 + |mu|^2)``, and returns factors
    ``L``, ``R`` with exactly ``n_components`` columns such that
    ``round_tau(L @ R.T)`` is the model's rounding at logit 0 (``theta >= 0``).

    **Honest rank**: every column is counted. With ``fit_bias=True`` (the L-PCA of
    Schein et al. with its bias) the model has
    ``n_components - 1`` latent factors plus the column bias, returned as
    ``L = [U, 1]`` and ``R = [V, mu + tau]`` (so ``L @ R.T = theta + tau``: the
    threshold ``tau`` is folded into the bias column at no extra rank; any ``tau``
    works). With ``fit_bias=False`` there are ``n_components`` latent factors and
    ``R = V``; row ``i`` of ``L`` is ``c_i U_i`` with a per-row scale ``c_i > 0``
    (which does not change the rank) chosen so that logits keep their side of
    ``tau``: for ``tau > 0`` the row's smallest positive logit is scaled to
    ``2 tau``, for ``tau < 0`` its largest negative logit is scaled to ``2 tau``, and
    for ``tau = 0`` nothing is scaled. This is exact except, for ``tau > 0``, logits
    that are exactly 0 (rounded to 1 at logit 0, but ``0 < tau``).
    With ``fit_bias="global"`` (needs ``tau != 0``) the logits are
    ``theta = U V^T + b`` with ``n_components`` latent factors and one scalar offset
    ``b`` whose sign is opposite to ``tau``'s (``|b| >= 1e-3``); then
    ``L = s U``, ``R = s V`` with ``s^2 = tau / -b``, so that
    ``L @ R.T >= tau`` exactly where ``theta >= 0``. The scalar costs no column: these
    models express exactly the roundings at ``tau`` of rank-``k`` matrices, more than
    ``fit_bias=False`` (sign patterns of rank-``k`` logits) and ``fit_bias=True``
    (``k - 1`` factors plus a bias column), so they can certify smaller ranks.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary data; ``NaN`` marks missing entries, which get weight 0 (they do not
        influence the fit).
    n_components : int
        Number ``k >= 1`` of columns of ``L`` and ``R``, the bias column included.
    tau : float, default=0.5
        Rounding threshold of the returned factorization.
    fit_bias : bool or "global", default=True
        True: a column bias ``mu`` (it uses one of the ``n_components`` columns);
        False: no bias; ``"global"``: one scalar offset that uses no column (see
        above).
    solver : {"auto", "newton", "lbfgs", "mm"}, default="auto"
        ``"auto"``: ``"newton"`` up to 24 latent factors, ``"lbfgs"`` beyond (a
        Newton sweep solves one ``p x p`` system per row and column and costs
        ``O(m n p^2)``, an L-BFGS iteration ``O(m n p)``; on Abstracts, 12841 x
        4894, the Newton systems dominate from ``p`` of a few tens, see
        ``benchmarks/lpca_sweep.py``). ``"newton"``: damped alternating Newton.
        Given ``V`` and ``mu`` the rows of
        ``U`` are independent problems; one Newton step is taken for all of them
        with one batched solve of ``p x p`` systems, with a backtracking line search
        per row (a row whose step fails keeps its parameters); then the same for the
        rows of ``[V, mu]``. The objective never increases. ``"lbfgs"``: the joint
        objective over all parameters with scipy's L-BFGS-B (useful for large ``k``,
        where the ``k x k`` systems get expensive). ``"mm"``: Schein, Saul and
        Ungar's alternating updates that maximise the Jaakkola-Jordan bound (monotone
        and faithful to the original L-PCA, but much slower to converge).
    alpha : float, default=1e-3
        L2 penalty on every parameter. It keeps the optimum finite on separable
        data and the Newton systems well conditioned.
    max_iter : int, default=1000
        Maximal number of sweeps (one update of ``U`` and one of ``[V, mu]``;
        L-BFGS iterations for ``"lbfgs"``).
    tol : float, default=1e-6
        Stop when the objective decreases by less than ``tol`` times its value in a
        sweep (for ``"lbfgs"``: scipy's ``ftol``). The fit has also converged
        (status ``"stalled"``) when the rounding stalls: the observed entries that
        are wrong (or within the stop margin) have not dropped by 1% of their
        number, nor by ``1e-5`` of the observed entries, in 50 sweeps (near
        separable data let the logits grow for many sweeps without changing the
        rounding).
    init : tuple (L, R) or None, default=None
        Warm start in the returned format (e.g. the factors of an earlier fit).
        With ``fit_bias=True`` the last column of ``L`` must be a nonzero constant.
        With ``fit_bias="global"`` any factors work: the start is
        ``theta = c (L R^T - tau)`` (``c >= 1`` keeps ``|b| >= 1e-3``), whose signs
        are the rounding of ``(L, R)``, e.g. a certificate of another method.
        With ``fit_bias=False`` the start is ``theta = L R^T``. None: truncated SVD
        of ``2 (2X - 1)`` (missing entries 0), column-centred with the column bias,
        shifted by the starting offset ``b = -4 sign(tau)`` with the global one
        (Schein et al. start from random values instead).
    random_state : int, RandomState instance or None, default=None
        Seed of the randomized SVD of the warm start.
    n_jobs : int or None, default=None
        Number of threads working on blocks of rows; results do not depend on it.
        Inside the fit BLAS runs single-threaded.
    verbose : int, default=0
        Print one line per sweep if ``verbose >= 2``.
    stop_when_exact : bool, default=False
        Stop as soon as every observed entry is rounded correctly with a margin
        (``|theta_ij| > 1e-6 (1 + |L_i| |R_j| + |tau|)`` on the right side), checked
        before every half sweep at no extra cost. The caller certifies the result
        with :func:`~sklearn_rrank.certify_rounding`.
    time_limit : float or None, default=None
        Stop after this many seconds (checked once per sweep).
    dtype : {"float64", "float32"}, default="float64"
        Precision of the sweeps' ``m x n`` work (logits, gradients, losses).
        ``"float32"`` halves the memory traffic and makes the element-wise
        functions several times faster on large data; the returned factors, the
        error count and every certificate are computed in float64. The stop check
        of ``stop_when_exact`` then adds float32's rounding bound to its relative
        margin: ``1e-6 + (p + 4) eps`` with ``eps`` float32's machine epsilon and
        ``p`` the latent factors (1.3e-5 at ``p = 100``).

    Returns
    -------
    result : FactorizationResult
        ``L`` of shape (n_samples, n_components) and ``R`` of shape
        (n_features, n_components), float64; ``n_iter`` sweeps; ``converged`` is
        True when the tolerance, the stall of the rounding or exactness stopped the
        fit. ``info`` holds ``"message"`` (how the fit stopped; when it did not
        converge, which parameter to change),
        ``"loss"`` (objective after each sweep, starting with the initial value),
        ``"n_errors"`` (observed entries where ``round_tau(L @ R.T)`` differs from
        ``X``), ``"status"`` (``"tol"``, ``"stalled"``, ``"exact"``, ``"max_iter"``
        or ``"time_limit"``), ``"solver"``, ``"alpha"``, ``"fit_bias"``, ``"n_latent"``
        (latent factors: ``n_components - 1`` with the column bias, else
        ``n_components``), ``"offset"`` (the global offset ``b``, only for
        ``fit_bias="global"``), ``"n_errors_logit"`` (wrong signs of the logits;
        equals ``"n_errors"`` except for exactly-zero logits without a bias),
        ``"unsafe_history"`` (newton only: entries wrong or within the stop margin,
        once per sweep), ``"deviance"`` and ``"null_deviance"`` (see
        :func:`lpca_deviances`; of the fitted logits ``theta``, without the
        penalty) and ``"seconds"``.

    Raises
    ------
    ValueError
        If ``X`` is not binary, a parameter is out of range, or ``init`` does not
        match.

    See Also
    --------
    lpca_transform : Logistic regression of new rows on fixed ``R``.
    lpca_rank_upper_bound : Rank search with certificates.

    Notes
    -----
    The paper (Section 3) does not say whether its L-PCA counted the bias in the
    rank; here it always is counted. Each Newton sweep costs
    ``O(m n p^2 + (m + n) p^3)`` with ``p`` the number of latent factors.

    References
    ----------
    Neumann, Gemulla, Miettinen, "What You Will Gain By Rounding: Theory and
    Algorithms for Rounding Rank", ICDM 2016, Section 3, "Logistic Principal
    Component Analysis (L-PCA)". A. I. Schein, L. K. Saul, L. H. Ungar, "A
    Generalized Linear Model for Principal Component Analysis of Binary Data",
    AISTATS 2003. M. Collins, S. Dasgupta, R. E. Schapire, "A Generalization of
    Principal Components Analysis to the Exponential Family", NIPS 2001
    (alternating convex fits).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank._lpca import lpca_fit
    >>> X = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 0]])
    >>> res = lpca_fit(X, 2, random_state=0)
    >>> res.L.shape, res.R.shape, res.info["n_errors"]
    ((4, 2), (3, 2), 0)
    """
    X = check_binary_matrix(X, allow_missing=True, method="lpca")
    return _lpca_fit(
        X,
        n_components,
        tau=check_tau(tau),
        fit_bias=fit_bias,
        solver=solver,
        alpha=alpha,
        max_iter=max_iter,
        tol=tol,
        init=init,
        random_state=random_state,
        n_jobs=n_jobs,
        verbose=verbose,
        stop_when_exact=stop_when_exact,
        time_limit=time_limit,
        dtype=dtype,
    )


def _lpca_fit(
    X,
    n_components,
    *,
    tau=0.5,
    fit_bias=True,
    solver="auto",
    alpha=DEFAULT_ALPHA,
    max_iter=FIT_MAX_ITER,
    tol=FIT_TOL,
    init=None,
    random_state=None,
    n_jobs=None,
    verbose=0,
    stop_when_exact=False,
    time_limit=None,
    dtype="float64",
):
    """:func:`lpca_fit` on validated data (float64, NaN = missing); no checks."""
    m, n = X.shape
    k = int(n_components)
    kind = _model_kind(fit_bias, tau)
    p = k - 1 if kind == "column" else k
    data = _Data(X, dtype=dtype)
    if init is None:
        U, V, mu = _svd_init(data, p, kind, check_random_state(random_state), tau)
    else:
        if len(init) != 2:
            raise ValueError("init must be a pair (L, R) or None.")
        U, V, mu = _init_from_factors(init[0], init[1], kind, tau, m, n, k)
    deadline = None if time_limit is None else Deadline(time_limit)
    U, V, mu, n_iter, info = _fit_core(
        data,
        U,
        V,
        mu,
        tau=tau,
        solver=solver,
        alpha=float(alpha),
        max_iter=int(max_iter),
        tol=float(tol),
        n_jobs=n_jobs,
        verbose=verbose,
        stop_when_exact=stop_when_exact,
        deadline=deadline,
        # the stall of the rounding ends the alternating solvers' fits only: L-BFGS
        # moves all parameters at once and its rounding may rest for 50 iterations
        # and then drop again (Abstracts, k=50: stalled at a relative error of 0.54)
        stall=_FIT_STALL if _resolve_solver(solver, p, m, n) != "lbfgs" else None,
    )
    L, R = _package(U, V, mu, tau)
    deviance, null_deviance = lpca_deviances(X, U, V, mu)
    info.update(
        n_errors=_count_errors_factors(X, L, R, tau),
        deviance=deviance,
        null_deviance=null_deviance,
        solver=solver,
        dtype=str(np.dtype(dtype)),
        alpha=float(alpha),
        fit_bias=fit_bias if kind == "global" else bool(fit_bias),
        n_latent=p,
    )
    if kind == "global":
        info["offset"] = float(mu)
    info["message"] = _fit_message(info, max_iter, tol)
    if verbose:
        print(
            f"[lpca] k={k}: {n_iter} sweeps, status {info['status']}, "
            f"{info['n_errors']} wrong entries, {info['seconds']:.2f}s"
        )
    return FactorizationResult(
        L=L,
        R=R,
        n_iter=n_iter,
        converged=info["status"] in ("tol", "exact", "stalled"),
        info=info,
    )


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "R": ["array-like"],
        "tau": [Real],
        "fit_bias_column": ["boolean", StrOptions({"global"})],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "n_jobs": [Integral, None],
    },
    prefer_skip_nested_validation=True,
)
def lpca_transform(
    X,
    R,
    *,
    tau=0.5,
    fit_bias_column=True,
    alpha=DEFAULT_ALPHA,
    max_iter=TRANSFORM_MAX_ITER,
    tol=TRANSFORM_TOL,
    n_jobs=None,
):
    """Row representations of new data for a fixed right factor (logistic regression).

    Every row of ``X`` is fitted by an L2-penalised logistic regression on the rows
    of ``R`` (damped Newton, all rows in one batched solve per step, backtracking per
    row). ``fit_bias_column`` says which model of :func:`lpca_fit` produced ``R``
    (its ``fit_bias``). True: the last column of ``R`` is the bias column, the
    logits are ``L[:, :-1] @ R[:, :-1].T + R[:, -1] - tau`` and ``L[:, -1]`` stays
    fixed at 1. False: the logits are ``L @ R.T`` and each row of ``L`` is rescaled
    for ``tau`` as in :func:`lpca_fit`. ``"global"``: each row gets its own
    intercept ``c_i`` (sign opposite to ``tau``'s, ``|c_i| >= 1e-3``), the logits
    are ``a_i @ R.T + c_i`` and ``L_i = a_i tau / -c_i``, which uses no extra
    column. In all cases ``round_tau(L @ R.T)`` is the rounding of the fitted
    logits at 0.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary data; ``NaN`` marks missing entries (weight 0).
    R : array-like of shape (n_features, k)
        Fixed right factor, e.g. ``lpca_fit(...).R``.
    tau : float, default=0.5
        Rounding threshold (the one used to fit ``R``).
    fit_bias_column : bool or "global", default=True
        The ``fit_bias`` of the :func:`lpca_fit` call that produced ``R``: True if
        its last column is the bias column (``mu + tau``).
    alpha : float, default=1e-3
        L2 penalty on the fitted coordinates.
    max_iter : int, default=100
        Maximal number of Newton steps.
    tol : float, default=1e-8
        Stop when the objective decreases by less than ``tol`` times its value.
    n_jobs : int or None, default=None
        Number of threads; results do not depend on it.

    Returns
    -------
    L : ndarray of shape (n_samples, k), dtype float64
        Row representations; with ``fit_bias_column`` the last column is 1.

    Raises
    ------
    ValueError
        If ``X`` is not binary or ``R`` does not match ``X``.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 3 (L-PCA); Collins, Dasgupta
    and Schapire (NIPS 2001) for the per-row logistic regressions.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank._lpca import lpca_fit, lpca_transform
    >>> X = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 0]])
    >>> R = lpca_fit(X, 2, random_state=0).R
    >>> L = lpca_transform([[1, 1, 1], [1, 0, 0]], R)
    >>> ((L @ R.T) >= 0.5).astype(int)
    array([[1, 1, 1],
           [1, 0, 0]])
    """
    X = check_binary_matrix(X, allow_missing=True, method="lpca")
    return _lpca_transform(
        X,
        R,
        tau=check_tau(tau),
        fit_bias_column=fit_bias_column,
        alpha=alpha,
        max_iter=max_iter,
        tol=tol,
        n_jobs=n_jobs,
    )


def _lpca_transform(
    X,
    R,
    *,
    tau=0.5,
    fit_bias_column=True,
    alpha=DEFAULT_ALPHA,
    max_iter=TRANSFORM_MAX_ITER,
    tol=TRANSFORM_TOL,
    n_jobs=None,
):
    """:func:`lpca_transform` on validated data; checks only ``R``."""
    R = np.asarray(R, dtype=np.float64)
    m, n = X.shape
    if R.ndim != 2 or R.shape[0] != n or R.shape[1] < 1:
        raise ValueError(
            f"R must have shape ({n}, k) with k >= 1 to match X with {n} columns; "
            f"got {R.shape}."
        )
    if not np.isfinite(R).all():
        raise ValueError("R must hold finite numbers.")
    kind = _model_kind(fit_bias_column, tau)
    bound = None
    if kind == "column":
        F, offset = R[:, :-1], R[:, -1] - tau
        P = np.zeros((m, F.shape[1]))
    elif kind == "none":
        F, offset = R, None
        P = np.zeros((m, F.shape[1]))
    else:
        # features [R, 1]; the last parameter is the row intercept c_i
        F, offset = np.hstack([R, np.ones((n, 1))]), None
        P = np.zeros((m, F.shape[1]))
        P[:, -1] = _offset_sign(tau)
        bound = (-np.inf, -_B_MIN) if tau > 0 else (_B_MIN, np.inf)
    P = _fit_rows(X, P, F, offset, alpha, max_iter, tol, n_jobs, bound)
    if kind == "column":
        return np.hstack([P, np.ones((m, 1))])
    if kind == "global":
        return P[:, :-1] * (tau / -P[:, -1])[:, None]
    L, _ = _package(P, F, None, tau)
    return L


def _fit_rows(X, P, F, offset, alpha, max_iter, tol, n_jobs, bound=None):
    """Row coordinates ``P`` of the penalised logistic regressions on fixed ``F``."""
    if not F.shape[1]:
        return P
    data = _Data(X)
    args = (data, P, F, offset, float(alpha), int(max_iter), float(tol), bound)
    parallel = _make_parallel(n_jobs, 0)
    with threadpool_limits(limits=1, user_api="blas"):
        if parallel is None:
            return _transform_loop(None, *args)
        with parallel:
            return _transform_loop(parallel, *args)


def _logits_of(U, V, mu):
    """Logits ``U V^T + 1 mu^T`` (column bias), ``+ b`` (global) or ``U V^T``."""
    theta = np.asarray(U, dtype=np.float64) @ np.asarray(V, dtype=np.float64).T
    if mu is not None:
        theta += np.asarray(mu, dtype=np.float64)
    return theta


def _row_model(X, R, tau, fit_bias, offset, alpha, max_iter, tol, n_jobs):
    """``(P, F, bias)`` with the logits of the rows of ``X`` equal ``P F^T + bias``."""
    X = check_binary_matrix(X, allow_missing=True, method="lpca")
    tau = check_tau(tau)
    R = np.asarray(R, dtype=np.float64)
    kind = _model_kind(fit_bias, tau)
    if kind == "column":
        F, bias = R[:, :-1], R[:, -1] - tau
    elif kind == "none":
        F, bias = R, None
    else:
        if offset is None or float(offset) * tau >= 0:
            raise ValueError(
                "fit_bias='global' needs the fit's global offset (of the sign "
                f"opposite to tau={tau!r}); got offset={offset!r}."
            )
        F, bias = R / np.sqrt(tau / -float(offset)), np.asarray(float(offset))
    P = np.zeros((X.shape[0], F.shape[1]))
    P = _fit_rows(X, P, F, bias, alpha, max_iter, tol, n_jobs)
    return X, P, F, bias


def lpca_row_logits(
    X,
    R,
    *,
    tau=0.5,
    fit_bias=True,
    offset=None,
    alpha=DEFAULT_ALPHA,
    max_iter=100,
    tol=1e-8,
    n_jobs=None,
    return_log_likelihood=False,
):
    """Logits of new rows under a fitted L-PCA model (the model's ``R`` fixed).

    Every row gets the coordinates ``u_i`` of an L2-penalised logistic regression
    (the regression of :func:`lpca_transform`, missing entries weight 0) with the
    fitted model's bias fixed, and the logits are those of the fitted model:
    ``fit_bias=True``: ``u_i V^T + mu`` with ``R = [V, mu + tau]`` (so the logits
    are ``lpca_transform(X, R) @ R.T - tau``); ``fit_bias=False``: ``u_i R^T``
    (``R = V``; unlike :func:`lpca_transform`, no row is rescaled for ``tau``);
    ``fit_bias="global"``: ``u_i V^T + b`` with ``b = offset`` (the fit's
    ``info["offset"]``) and ``V = R / s``, ``s^2 = tau / -b``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Binary data; ``NaN`` marks missing entries (weight 0).
    R : ndarray of shape (n_features, k)
        Right factor of :func:`lpca_fit`.
    tau : float, default=0.5
        Rounding threshold of the fit.
    fit_bias : bool or "global", default=True
        The fit's ``fit_bias``.
    offset : float or None, default=None
        The global offset ``b`` (required for ``fit_bias="global"``).
    alpha : float, default=1e-3
        L2 penalty on the row coordinates.
    max_iter : int, default=100
        Maximal number of Newton steps.
    tol : float, default=1e-8
        Stop when the objective decreases by less than ``tol`` times its value.
    n_jobs : int or None, default=None
        Number of threads; results do not depend on it.
    return_log_likelihood : bool, default=False
        Return the log-likelihood of every row (see :func:`row_log_likelihood`)
        instead of the logits, without forming all logits at once.

    Returns
    -------
    theta : ndarray of shape (n_samples, n_features), dtype float64
        Logits: ``P(X_ij = 1) = sigmoid(theta_ij)``, for missing entries too.
        With ``return_log_likelihood``, an ndarray of shape (n_samples,) instead.
    """
    X, P, F, bias = _row_model(
        X, R, tau, fit_bias, offset, alpha, max_iter, tol, n_jobs
    )
    if return_log_likelihood:
        return row_log_likelihood(X, P, F, bias)
    return _logits_of(P, F, bias)


def lpca_deviances(X, U, V, mu=None):
    """Bernoulli deviance of the logits ``U V^T + mu`` and of the null model.

    The deviance of a model is ``2 (loglik(saturated) - loglik(model))`` over the
    observed entries; the saturated model of binary data has log-likelihood 0, so
    it is ``-2 sum_ij log sigmoid((2 X_ij - 1) theta_ij)``. The null model has one
    probability per column, the mean of its observed entries (the null model of
    logistic PCA, Landgraf and Lee 2020); its deviance is
    ``-2 sum_j (n1_j log p_j + n0_j log(1 - p_j))`` with ``0 log 0 = 0``.
    Missing entries (``NaN``) are ignored.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Binary data, ``NaN`` = missing (a sparse matrix is read by chunks of rows).
    U : ndarray of shape (n_samples, p)
    V : ndarray of shape (n_features, p)
    mu : ndarray of shape (n_features,), scalar or None, default=None
        Column bias or global offset of the logits.

    Returns
    -------
    deviance, null_deviance : float
    """
    deviance = -2.0 * float(row_log_likelihood(X, U, V, mu).sum())
    if sp.issparse(X) and not np.isnan(X.data).any():  # complete: no m x n array
        n1 = np.bincount(X.indices[X.data == 1], minlength=X.shape[1])
        n1 = n1.astype(np.float64)
        n0 = X.shape[0] - n1
    else:
        X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
        observed = ~np.isnan(X)
        n1 = np.count_nonzero(X == 1, axis=0).astype(np.float64)
        n0 = observed.sum(axis=0) - n1
    with np.errstate(divide="ignore", invalid="ignore"):
        p = n1 / (n1 + n0)
        loglik = np.where(n1 > 0, n1 * np.log(p), 0.0) + np.where(
            n0 > 0, n0 * np.log1p(-p), 0.0
        )
    return deviance, -2.0 * float(loglik.sum())


def row_log_likelihood(X, U, V, mu=None):
    """Bernoulli log-likelihood (nats) of every row of ``X``, logits ``U V^T + mu``.

    ``sum_j log sigmoid((2 X_ij - 1) theta_ij)`` over the observed entries (``NaN``
    entries are ignored), computed in chunks of rows with the solvers' entry losses
    (no overflow; exponent arguments clipped at 700, below 1e-300 in the result).
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        missing = bool(np.isnan(X.data).any())
    else:
        X = np.asarray(X, dtype=np.float64)
        missing = bool(np.isnan(X).any())
    out = np.empty(X.shape[0])
    for rows in _chunks(*X.shape):
        Xb = X[rows].toarray() if sp.issparse(X) else X[rows]
        q = 2.0 * Xb - 1.0
        if missing:
            unobserved = np.isnan(q)
            q[unobserved] = 0.0
        theta = _logits_of(U[rows], V, mu)
        # -log sigmoid(q theta) = log(1 + exp(-q theta))
        losses = _loss_terms(theta, q, out=theta)
        if missing:
            losses[unobserved] = 0.0
        out[rows] = -losses.sum(axis=1)
    return out


def _transform_loop(parallel, data, P, F, offset, alpha, max_iter, tol, bound=None):
    """Newton steps on all rows of ``P`` (``F`` fixed) until the objective stalls."""
    q, w, n_missing = data.side(False)
    chunks = _chunks(P.shape[0], F.shape[0])
    parts = _run_chunks(
        parallel, _eval_chunk, chunks, P, F, offset, q, w, n_missing, 0.0
    )
    row_loss = np.concatenate([r[0] for r in parts])
    objective = float(row_loss.sum()) + 0.5 * alpha * float(np.sum(P * P))
    pairs = _pair_index(P.shape[1])
    for _ in range(max_iter):
        if bound is None:
            P, row_loss, _, _ = _newton_block(
                parallel, P, F, offset, data, False, alpha, None, row_loss
            )
        else:
            parts = _run_chunks(
                parallel,
                _projected_newton_chunk,
                chunks,
                P,
                F,
                q,
                w,
                alpha,
                pairs,
                bound,
                row_loss,
            )
            P = np.concatenate([r[0] for r in parts], axis=0)
            row_loss = np.concatenate([r[1] for r in parts])
        new = float(row_loss.sum()) + 0.5 * alpha * float(np.sum(P * P))
        if objective - new <= tol * max(abs(new), 1e-300):
            break
        objective = new
    return P


def _projected_newton_chunk(rows, P, F, q, w, alpha, pairs, bound, row_loss):
    """Damped Newton step with the last parameter kept in ``[bound[0], bound[1]]``.

    Rows whose last parameter sits on a bound with the gradient pushing outwards
    keep it fixed (the Newton system is reduced); trial points are clipped, and
    accepted only under the projected Armijo rule, so no row objective increases.
    """
    Pc = P[rows]
    qc = q[rows]
    wc = None if w is None else w[rows]
    lo, hi = bound
    theta = Pc @ F.T
    g, h = _grad_hess_terms(theta, qc)
    if wc is not None:
        g *= wc
        h *= wc
    grad = g @ F + alpha * Pc
    H = _gram_batched(h, F, pairs)
    diag = np.arange(Pc.shape[1])
    H[:, diag, diag] += max(alpha, _MIN_RIDGE)
    last = Pc[:, -1]
    fixed = ((last <= lo) & (grad[:, -1] > 0)) | ((last >= hi) & (grad[:, -1] < 0))
    reduced = grad.copy()
    reduced[fixed, -1] = 0.0
    H[fixed, -1, :] = 0.0
    H[fixed, :, -1] = 0.0
    H[fixed, -1, -1] = 1.0
    D = -np.linalg.solve(H, reduced[:, :, None])[:, :, 0]
    loss0 = row_loss[rows]
    f0 = loss0 + 0.5 * alpha * _penalty_rows(Pc)
    newP = Pc.copy()
    new_loss = loss0.copy()
    active = np.arange(Pc.shape[0])
    step = 1.0
    for _ in range(_MAX_HALVINGS):
        if active.size == 0:
            break
        trial = Pc[active] + step * D[active]
        np.clip(trial[:, -1], lo, hi, out=trial[:, -1])
        decrease = np.einsum("ij,ij->i", grad[active], trial - Pc[active])
        terms = _loss_terms(trial @ F.T, qc[active])
        if wc is not None:
            terms *= wc[active]
        tl = terms.sum(axis=1)
        ft = tl + 0.5 * alpha * _penalty_rows(trial)
        ok = (decrease < 0) & (ft <= f0[active] + _ARMIJO * decrease)
        newP[active[ok]] = trial[ok]
        new_loss[active[ok]] = tl[ok]
        active = active[~ok & (decrease < 0)]
        step *= 0.5
    return newP, new_loss


# lpca_fit: the fit has converged ("stalled") when the entries wrong or within the
# stop margin have not dropped by 1% of their number, nor by 1e-5 of the observed
# entries, in 50 sweeps: the rounding no longer changes (much) although the logits
# still move
_FIT_STALL = (50, 0.01, 1e-5)
