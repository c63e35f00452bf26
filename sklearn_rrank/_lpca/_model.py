"""The L-PCA model: data, entry kernels, bias models and likelihoods.

Everything the solvers of logistic PCA share (:mod:`sklearn_rrank._lpca._fit` for the
model and the public doors):

* the element-wise kernels of the entry losses ``log(1 + exp(-q theta))`` and their
  first two derivatives (sigmoid through ``tanh``, clipped exponent arguments);
* :class:`_Data`, the validated data in both orientations (int8 signs, observation
  weights), with :class:`_SparseSigns` for complete sparse input, and the fixed
  chunks of rows that all m x n work is cut into (never by ``n_jobs``);
* the evaluation of the objective by chunks (losses, wrong and unsafe entries, the
  stop margin of ``stop_when_exact``);
* the three bias models (column bias, global offset, none): their parameter layout
  and the packaging of ``(U, V, mu)`` into rounding factors ``(L, R)``;
* the Bernoulli log-likelihood and deviances of fitted logits.
"""

import math
import threading

import numpy as np
import scipy.sparse as sp

from sklearn_rrank._core._parallel import Parallel, delayed, effective_n_jobs
from sklearn_rrank._core._rounding import _row_batches
from sklearn_rrank._lpca._options import KERNELS

__all__ = ["lpca_deviances", "row_log_likelihood"]

# exponent arguments are clipped here: exp(-700) is still a normal float64, so the slow
# denormal path of exp is never taken (the clipped terms are below 1e-300)
_EXP_CLIP = 700.0
_EXP_CLIP32 = 80.0
# block sizes: the fields of Kernels (sklearn_rrank._lpca._options); a chunk of the
# per-row Gram matrices stays within this many entries whatever its least rows
_GRAM_MAX_ENTRIES = 1 << 23
# up to this fraction of ones the joint objective corrects for the ones (gather and
# scatter) instead of reading the sign of every entry: cheaper than the full pass
_SPARSE_ONES = 0.1
# smallest magnitude of the global offset (its sign is opposite to tau's)
_B_MIN = 1e-3
# relative margin the stop check of ``stop_when_exact`` requires: a thousand times the
# certificate's, so that a stop is certifiable (float32 adds its error, _stop_delta)
_STOP_MARGIN = 1e-6


# ---------------------------------------------------------------------------------
# elementwise kernels
# ---------------------------------------------------------------------------------


def _exp_clip(dtype):
    return _EXP_CLIP if dtype == np.float64 else _EXP_CLIP32


def _loss_terms(theta, q, out=None, tmp=None):
    """Entry losses ``log(1 + exp(-q theta))`` with ``q = 2x - 1`` (0 if missing).

    Computed as ``max(-q theta, 0) + log1p(exp(-|theta|))`` with the exponent argument
    clipped (no overflow, no denormals), ``log1p`` by :func:`_log1p_unit`. Missing
    entries (``q = 0``) get ``log 2`` here: callers multiply by the observation
    weights. ``out`` (may be ``theta`` itself) and ``tmp`` are optional buffers of
    ``theta``'s shape and dtype.
    """
    margin = np.multiply(q, theta, out=tmp, dtype=theta.dtype)
    np.negative(margin, out=margin)
    np.maximum(margin, 0.0, out=margin)
    out = np.abs(theta, out=out)
    np.minimum(out, _exp_clip(theta.dtype), out=out)
    np.negative(out, out=out)
    np.exp(out, out=out)
    _log1p_unit(out)
    out += margin
    return out


def _log1p_unit(e):
    """``log1p(e)`` in place for ``0 <= e <= 1``; float32 by a vectorised ``log``.

    In float32 ``log1p(e) = log(u) e / (u - 1)`` with ``u = fl(1 + e)``: ``u - 1``
    is exact and the result is within a few units in the last place of
    ``log1p(e)`` (Goldberg, "What every computer scientist should know about
    floating-point arithmetic", 1991, Theorem 4). Where ``u`` rounds to 1 (``e``
    at most half an ulp of 1, ``6e-8``) the result is 0, below the rounding of
    any float32 sum of losses it enters. NumPy's ``log1p`` is not
    vectorised without AVX-512, this is (relative error at most 2.8e-7); in
    float64 ``log`` is not faster, so float64 keeps ``np.log1p``. Chunk-sized
    inputs use a per-thread buffer.
    """
    dt = e.dtype
    if dt != np.float32:
        return np.log1p(e, out=e)
    if e.size <= KERNELS.chunk_entries:
        d = _buffer("log1p", e.shape, dt)
    else:
        d = np.empty_like(e)
    np.add(e, 1.0, out=d)
    d -= 1.0  # exact
    # d = 0 (u = 1) becomes half an ulp of 1; 1 + d rounds back to 1 (ties to even)
    np.maximum(d, np.finfo(dt).epsneg, out=d)
    np.divide(e, d, out=e)
    d += 1.0  # u
    np.log(d, out=d)
    e *= d
    return e


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
        self._flat = None  # flat indices of the ones, made by the first `at`

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

    def at(self, rows, cols):
        """The signs (int8) of the entries ``(rows[e], cols[e])``."""
        flat = np.asarray(rows, dtype=np.int64) * self.shape[1] + cols
        if self._flat is None:
            self._flat = self.ones_flat()[1]  # row-major sorted
        ones = self._flat
        pos = np.minimum(np.searchsorted(ones, flat), max(ones.size - 1, 0))
        hit = ones[pos] == flat if ones.size else np.zeros(flat.size, dtype=bool)
        return np.where(hit, 1, -1).astype(np.int8)

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
    m x n array is held. ``kernels`` (a :class:`~sklearn_rrank._lpca._options.
    Kernels`) fixes the chunks of rows the passes over the data are cut into.
    """

    def __init__(self, X, dtype=np.float64, working_set=False, kernels=KERNELS):
        # whether a large sparse fit may take the working-set path (opt-in)
        self.working_set = bool(working_set)
        self.kernels = kernels
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

    def q_at(self, rows, cols):
        """The signs (int8: 1, -1, 0 when missing) of the entries ``(rows, cols)``."""
        if self.sparse:
            return self.q.at(rows, cols)
        return self.q[rows, cols]

    def side(self, transpose):
        if transpose:
            return self.qt, self.wt, self.n_missing_t
        return self.q, self.w, self.n_missing

    def reweighted(self, flat, values):
        """A copy that shares ``q`` and has the entry weights of :class:`_EntryWeights`.

        ``flat`` (sorted row-major indices of entries) and ``values`` (their weight
        factors) change the observation weights at few entries; no m x n array is
        made (dense weights would cost 8 bytes per entry).
        """
        other = object.__new__(_Data)
        other.__dict__.update(self.__dict__)
        other.w = _EntryWeights(self.shape, self.dtype, flat, values, self.w)
        other.wt = other.w.transposed(self.wt)
        other.ones = None
        return other


class _EntryWeights:
    """Entry weights that differ from the observation weights at few entries.

    ``weights[rows]`` (``rows`` a slice) is the dense block of the rows: the
    observation weights ``base`` (1 where ``base`` is None) times ``values`` at the
    entries ``flat`` (sorted row-major flat indices). A block lives only while its
    chunk is worked on, like the blocks of :class:`_SparseSigns`.

    Parameters
    ----------
    shape : tuple of int
        ``(m, n)``.
    dtype : dtype
        Precision of the blocks (the sweeps').
    flat : ndarray of int64
        Sorted, distinct row-major flat indices ``i * n + j``.
    values : ndarray
        Weight factor of each entry of ``flat``.
    base : ndarray of shape (m, n) or None
        Observation weights (0 at missing entries).
    """

    ndim = 2

    def __init__(self, shape, dtype, flat, values, base=None):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        self.flat, self.values, self.base = flat, values, base

    def __getitem__(self, rows):
        if not isinstance(rows, slice):
            raise TypeError("entry weights are read by slices of rows only")
        start, stop, _ = rows.indices(self.shape[0])
        stop = max(stop, start)
        n = self.shape[1]
        if self.base is None:
            out = np.ones((stop - start, n), dtype=self.dtype)
        else:
            out = np.array(self.base[start:stop], dtype=self.dtype)
        lo, hi = np.searchsorted(self.flat, [start * n, stop * n])
        out.reshape(-1)[self.flat[lo:hi] - start * n] *= self.values[lo:hi]
        return out

    def transposed(self, base_t=None):
        """The same weights of the transpose (``base_t``: the transposed base)."""
        m, n = self.shape
        rows, cols = np.divmod(self.flat, n)
        flat_t = cols * m + rows
        order = np.argsort(flat_t, kind="stable")
        return _EntryWeights(
            (n, m), self.dtype, flat_t[order], self.values[order], base_t
        )


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
        buf = bufs[(name, dtype)] = np.empty(
            max(size, KERNELS.chunk_entries), dtype=dtype
        )
    return buf[:size].reshape(shape)


def _chunks(n_rows, n_cols, kernels=KERNELS):
    """The row blocks of :func:`~sklearn_rrank._core._rounding._row_batches` of
    ``kernels.chunk_entries`` entries."""
    return _row_batches(n_rows, n_cols, kernels.chunk_entries)


def _gram_rows(n_cols, kernels=KERNELS):
    """Rows per chunk of the Newton and bound updates: :func:`_chunks`' rows, at
    least ``kernels.gram_rows`` (as long as a chunk stays within
    ``_GRAM_MAX_ENTRIES``)."""
    least = min(kernels.gram_rows, _GRAM_MAX_ENTRIES // max(n_cols, 1))
    return max(1, kernels.chunk_entries // max(n_cols, 1), least)


def _gram_chunks(n_rows, n_cols, kernels=KERNELS):
    """The chunks of the Newton and bound updates (see :func:`_gram_rows`)."""
    rows = _gram_rows(n_cols, kernels)
    return _row_batches(n_rows, n_cols, rows * max(n_cols, 1))


class _Expired(Exception):
    """A limited deadline passed inside a pass over the chunks (:func:`_run_chunks`).

    The fitting loops catch it and return the state they started the interrupted
    sweep (L-BFGS: iteration) from.
    """


def _run_chunks(parallel, func, chunks, *args, deadline=None, group=None):
    """Apply ``func(chunk, *args)`` to every chunk, in order, serially or in threads.

    With a limited ``deadline`` (a :class:`~sklearn_rrank._search._skeleton.Deadline`),
    it
    is checked before each chunk (serially) or each run of ``group`` chunks
    (threads, ``KERNELS.check_group`` by default; checked in the calling thread) and
    :class:`_Expired` is raised once it has passed. The results are the same as
    without it whenever it does not pass; an unlimited deadline (or None) is
    never checked.
    """
    if deadline is None or not deadline.limited:
        return _run_all(parallel, func, chunks, args)
    step = 1 if parallel is None else group or KERNELS.check_group
    out = []
    for start in range(0, len(chunks), step):
        if deadline.expired():
            raise _Expired
        out += _run_all(parallel, func, chunks[start : start + step], args)
    return out


def _run_all(parallel, func, chunks, args):
    if parallel is None or len(chunks) == 1:
        return [func(c, *args) for c in chunks]
    return parallel(delayed(func)(c, *args) for c in chunks)


def _make_parallel(n_jobs, verbose):
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


def _evaluate(parallel, U, V, mu, data, tau, transpose=False, deadline=None):
    """Data losses per row (per column if ``transpose``) and the entry counts.

    Returns ``(losses, n_wrong, n_unsafe)``: ``n_wrong`` entries are rounded wrongly
    at logit 0, ``n_unsafe`` entries are wrong or within the stop margin of 0.
    Raises :class:`_Expired` if a limited ``deadline`` passes (see
    :func:`_run_chunks`).
    """
    delta = _stop_delta(U, V, mu, tau)
    if transpose:
        P, F, offset = _with_bias(U, V, mu)
    else:
        P, F, offset = U, V, mu
    q, w, n_missing = data.side(transpose)
    kernels = data.kernels
    chunks = _chunks(P.shape[0], F.shape[0], kernels)
    args = (P, F, offset, q, w, n_missing, delta)
    parts = _run_chunks(
        parallel,
        _eval_chunk,
        chunks,
        *args,
        deadline=deadline,
        group=kernels.check_group,
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


def _package(U, V, mu, tau, entries=None):
    """Factors ``L (m, k)``, ``R (n, k)`` with ``round_tau(L R^T) = round_0(theta)``.

    With the bias: ``L = [U, 1]``, ``R = [V, mu + tau]``. With the global offset
    ``b`` (of the sign opposite to ``tau``): ``L = s U``, ``R = s V`` with
    ``s^2 = tau / -b``. Without the bias, row ``i``
    of ``L`` is ``c_i U_i`` with ``c_i > 0`` chosen per row so that the logits keep
    their side of ``tau``: for ``tau > 0`` the smallest positive logit of the row is
    scaled to ``2 tau``, for ``tau < 0`` the largest negative one to ``2 tau``. This
    is exact except for logits that are exactly 0 when ``tau > 0`` (they round to 1 at
    logit 0 but to 0 at ``tau``). The reference logits of the rows are found by
    blocks of about ``entries`` entries (None: the package's blocks).
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
    # the reference logit of every row, by blocks of rows (no m x n array)
    ref = np.empty(m)
    for rows in _row_batches(m, V.shape[0], entries):
        theta = U[rows] @ V.T
        if tau > 0:
            theta[theta <= 0] = np.inf
            ref[rows] = theta.min(axis=1, initial=np.inf)
        else:
            theta[theta >= 0] = -np.inf
            ref[rows] = theta.max(axis=1, initial=-np.inf)
    scale = np.where(
        np.isfinite(ref), 2.0 * tau / np.where(np.isfinite(ref), ref, 1), 1
    )
    return U * scale[:, None], V.copy()


def _logits_of(U, V, mu):
    """Logits ``U V^T + 1 mu^T`` (column bias), ``+ b`` (global) or ``U V^T``."""
    theta = np.asarray(U, dtype=np.float64) @ np.asarray(V, dtype=np.float64).T
    if mu is not None:
        theta += np.asarray(mu, dtype=np.float64)
    return theta


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


def _kind(mu):
    if mu is None:
        return "none"
    return "global" if _is_global(mu) else "column"
