"""The worker side of data-parallel L-PCA: one row block of ``X`` and of ``U``.

A :class:`_LPCABlock` (a Dask actor, see :mod:`sklearn_rrank._lpca._distributed`)
holds the CSR pattern of the ones of a block of rows of ``X`` and the same rows of
the latent factor ``U``. Its methods take the broadcast right factor and return sums
over the block's rows: the warm start's products, the losses and entry counts, the
``U`` half step (the serial row kernel,
:func:`~sklearn_rrank._lpca._newton._newton_block`), the column gradients, Hessians
and trial losses of the ``[V, mu]`` half step, the global offset's sums and, at the
end, the packaged rows of ``L`` and their errors.
"""

import numpy as np
from threadpoolctl import threadpool_limits

from sklearn_rrank._core._rounding import _row_error_counts
from sklearn_rrank._lpca._model import (
    _buffer,
    _chunks,
    _count_unsafe,
    _eval_chunk,
    _grad_hess_terms,
    _loss_terms,
    _package,
    _pair_index,
    _penalty_rows,
    _run_chunks,
)
from sklearn_rrank._lpca._newton import _newton_block, _offset_chunk, _offset_loss_chunk
from sklearn_rrank._lpca._options import KERNELS

# entries per chunk of rows in the column (V) half step: larger than the serial
# chunks, so that the (n, (p + 1)(p + 2) / 2) Hessian sums are updated less often
_V_CHUNK_ENTRIES = 1 << 20

# deserialisations of row blocks of X in this process (a worker's count shows that
# the data was shipped to it once; see tests/test_lpca_distributed.py)
_BLOCKS_RECEIVED = 0


def _blocks_received():
    """How many row blocks of ``X`` this process has received (unpickled)."""
    return _BLOCKS_RECEIVED


class _RowBlock:
    """Rows ``start:start + m`` of a binary matrix: the CSR pattern of its ones.

    Unpickling counts in ``_BLOCKS_RECEIVED``, so the workers can tell how often a
    block was shipped to them.
    """

    def __init__(self, X, start):
        self.X = X
        self.start = start

    def __getstate__(self):
        return self.__dict__

    def __setstate__(self, state):
        global _BLOCKS_RECEIVED
        _BLOCKS_RECEIVED += 1
        self.__dict__.update(state)


class _CSRSigns:
    """``q = 2X - 1`` (int8) of a CSR block, built one chunk of rows at a time.

    Indexing with a slice of rows returns a dense int8 chunk in a reused per-thread
    buffer, valid until the next indexing: the kernels of
    :mod:`sklearn_rrank._lpca._newton` read ``q[rows]`` once per chunk.
    """

    def __init__(self, X):
        self.indptr, self.indices = X.indptr, X.indices
        self.shape = X.shape

    def __getitem__(self, rows):
        start, stop, _ = rows.indices(self.shape[0])
        out = _buffer("qsign", (stop - start, self.shape[1]), np.int8)
        out.fill(-1)
        lo, hi = self.indptr[start], self.indptr[stop]
        r = np.repeat(np.arange(stop - start), np.diff(self.indptr[start : stop + 1]))
        out[r, self.indices[lo:hi]] = 1
        return out


class _BlockData:
    """The part of :class:`~sklearn_rrank._lpca._model._Data` the row kernels read."""

    def __init__(self, X):
        self.q = _CSRSigns(X)
        self.w = None
        self.n_missing = np.zeros(X.shape[0], dtype=np.int64)
        self.shape = X.shape
        self.kernels = KERNELS  # the serial fit's chunks

    def side(self, transpose):
        return self.q, self.w, self.n_missing


def _top_row(U):
    """The row of ``U`` with the largest norm (what :func:`_stop_delta` reads)."""
    if U.shape[0] == 0:
        return np.zeros((0, U.shape[1]))
    return U[[int(np.argmax(_penalty_rows(U)))]]


class _LPCABlock:
    """One row block on a worker: its rows of ``X`` and of ``U`` (a Dask actor).

    Methods take the broadcast factors and return sums over the block's rows;
    trusted private code (no checks). ``column`` tells whether the model has a
    column bias (then ``F = [U, 1]`` in the column half step).
    """

    def __init__(self, block, U, p, column):
        self.X = block.X
        self.start = block.start
        self.data = _BlockData(self.X)
        m, n = self.X.shape
        self.chunks = _chunks(m, n)
        size = max(1, _V_CHUNK_ENTRIES // max(n, 1))
        self.vchunks = [slice(i, min(i + size, m)) for i in range(0, m, size)]
        self.column = column
        self.U = np.zeros((m, p)) if U is None else U
        self.pending = None
        self.row_loss = None
        self.stash = None
        self.Y = None

    # ---- state ----------------------------------------------------------------
    def stats(self):
        """Sum of squares and the largest-norm row of ``U``."""
        return float(np.sum(self.U * self.U)), _top_row(self.U)

    def _commit(self):
        if self.pending is not None:
            self.U, self.pending = self.pending, None

    def _F(self):
        if not self.column:
            return self.U
        return np.hstack([self.U, np.ones((self.U.shape[0], 1))])

    # ---- warm start (randomized SVD of Z = 4 X - 1 c^T) -------------------------
    def col_counts(self):
        return np.asarray(self.X.sum(axis=0)).ravel()

    def _zq(self, Q, c):
        Y = 4.0 * (self.X @ Q)
        Y -= c @ Q
        return Y

    def ztzq(self, Q, c):
        """``Z_b^T Z_b Q`` for this block's rows ``Z_b`` of ``Z``."""
        Y = self._zq(Q, c)
        out = 4.0 * (self.X.T @ Y)
        out -= np.outer(c, Y.sum(axis=0))
        return out

    def gram(self, Q, c):
        """``Y_b^T Y_b`` with ``Y_b = Z_b Q`` (kept for :meth:`set_svd_factor`)."""
        self.Y = self._zq(Q, c)
        return self.Y.T @ self.Y

    def set_svd_factor(self, M, n_extra, seed):
        """``U = [Y_b M, small random columns]`` (random part seeded per chunk)."""
        U = self.Y @ M
        self.Y = None
        if n_extra:
            extra = np.empty((U.shape[0], n_extra))
            per = KERNELS.chunk_entries // max(self.X.shape[1], 1)
            first = self.start // max(1, per)
            for i, rows in enumerate(self.chunks):
                rng = np.random.RandomState((seed + first + i) % (2**32))
                extra[rows] = 1e-2 * rng.standard_normal(
                    (rows.stop - rows.start, n_extra)
                )
            U = np.hstack([U, extra])
        self.U = U

    # ---- evaluation -------------------------------------------------------------
    def evaluate(self, V, mu, delta):
        """Row losses (kept), and the wrong and unsafe entries of the logits."""
        with threadpool_limits(limits=1, user_api="blas"):
            parts = _run_chunks(
                None, _eval_chunk, self.chunks, self.U, V, mu, self.data.q, None,
                self.data.n_missing, delta,
            )  # fmt: skip
        self.row_loss = np.concatenate([r[0] for r in parts])
        return (
            float(self.row_loss.sum()),
            sum(r[1] for r in parts),
            sum(r[2] for r in parts),
        )

    def col_losses(self, V, mu):
        """Column sums of the entry losses (the ``U`` half step without factors)."""
        out = np.zeros(V.shape[0])
        with threadpool_limits(limits=1, user_api="blas"):
            for rows in self.chunks:
                theta = np.matmul(self.U[rows], V.T)
                if mu is not None:
                    theta += mu
                out += _loss_terms(theta, self.data.q[rows]).sum(axis=0)
        return out

    # ---- the U half step ------------------------------------------------------------
    def u_step(self, V, mu, alpha, delta):
        """One damped Newton step on every row of ``U`` (kept pending)."""
        with threadpool_limits(limits=1, user_api="blas"):
            U_new, _, col_loss, n_unsafe = _newton_block(
                None, self.U, V, mu, self.data, False, alpha, delta, self.row_loss
            )
        self.pending = U_new
        return col_loss, n_unsafe, float(np.sum(U_new * U_new)), _top_row(U_new)

    # ---- the column half step --------------------------------------------------------
    def _logits(self, Fc, P, offset, name="theta"):
        theta = np.matmul(
            Fc, P.T, out=_buffer(name, (Fc.shape[0], P.shape[0]), P.dtype)
        )
        if offset is not None:
            theta += offset
        return theta

    def v_grad(self, P, offset, delta):
        """Shares of the column gradients and Hessians at ``P`` (commits ``U``).

        Returns ``(G, Hflat, n_unsafe)``: ``G = g^T F`` of shape (n, p1) and the
        upper triangles ``h^T (F_a F_b)`` of shape (n, p1 (p1 + 1) / 2).
        """
        self._commit()
        F = self._F()
        n, p1 = P.shape
        a, b = _pair_index(p1)
        G = np.zeros((n, p1))
        Hf = np.zeros((n, a.size))
        n_unsafe = 0
        with threadpool_limits(limits=1, user_api="blas"):
            for rows in self.vchunks:
                Fc = F[rows]
                theta = self._logits(Fc, P, offset)
                qc = self.data.q[rows]
                g = _buffer("g", theta.shape, theta.dtype)
                n_unsafe += _count_unsafe(theta, qc, 0, delta, tmp=g)
                g, h = _grad_hess_terms(
                    theta, qc, g, _buffer("h", theta.shape, P.dtype)
                )
                G += g.T @ Fc
                Hf += h.T @ (Fc[:, a] * Fc[:, b])
        return G, Hf, n_unsafe

    def v_trial(self, P, D, offset):
        """Column losses at the full step ``P + D`` (row losses kept aside)."""
        F = self._F()
        col = np.zeros(P.shape[0])
        rowsum = np.empty(F.shape[0])
        with threadpool_limits(limits=1, user_api="blas"):
            for rows in self.vchunks:
                Fc = F[rows]
                theta = self._logits(Fc, P, offset)
                dtheta = self._logits(Fc, D, None, "dtheta")
                E = np.add(theta, dtheta, out=_buffer("h", theta.shape, P.dtype))
                E = _loss_terms(E, self.data.q[rows], out=E, tmp=dtheta)
                col += E.sum(axis=0, dtype=np.float64)
                rowsum[rows] = E.sum(axis=1, dtype=np.float64)
        self.stash = rowsum
        return col

    def v_losses(self, P, D, cols, step, offset):
        """Losses of the columns ``cols`` (parameters ``P``, steps ``D``) at
        ``theta + step * dtheta``."""
        F = self._F()
        col = np.zeros(P.shape[0])
        with threadpool_limits(limits=1, user_api="blas"):
            for rows in self.vchunks:
                Fc = F[rows]
                theta = self._logits(Fc, P, offset)
                dtheta = self._logits(Fc, D, None, "dtheta")
                E = theta + P.dtype.type(step) * dtheta
                qc = self.data.q[rows][:, cols]
                col += _loss_terms(E, qc).sum(axis=0, dtype=np.float64)
        return col

    def v_commit(self, P, D, steps, offset):
        """Keep the row losses of the accepted steps (``steps`` per column, or None
        when every column took the full step); returns their sum."""
        if steps is None:
            self.row_loss = self.stash
        else:
            F = self._F()
            self.row_loss = np.empty(F.shape[0])
            with threadpool_limits(limits=1, user_api="blas"):
                for rows in self.vchunks:
                    Fc = F[rows]
                    theta = self._logits(Fc, P, offset)
                    dtheta = self._logits(Fc, D, None, "dtheta")
                    E = theta + steps * dtheta
                    E = _loss_terms(E, self.data.q[rows], out=E)
                    self.row_loss[rows] = E.sum(axis=1, dtype=np.float64)
        self.stash = None
        return float(self.row_loss.sum())

    # ---- the global offset -------------------------------------------------------
    def offset_grad(self, V, b):
        with threadpool_limits(limits=1, user_api="blas"):
            parts = _run_chunks(
                None, _offset_chunk, self.chunks, self.U, V, b, self.data.q, None
            )
        return sum(r[0] for r in parts), sum(r[1] for r in parts)

    def offset_losses(self, V, b):
        with threadpool_limits(limits=1, user_api="blas"):
            parts = _run_chunks(
                None, _offset_loss_chunk, self.chunks, self.U, V, b, self.data.q, None
            )
        self.stash = np.concatenate(parts)
        return float(self.stash.sum())

    def offset_commit(self):
        self.row_loss, self.stash = self.stash, None

    # ---- the end of the fit ----------------------------------------------------------
    def finish(self, V, mu, tau, Rt, delta, uncertified):
        """Packaged rows of ``L``, logit-sign errors, the data loss and the errors
        of ``round_tau(L R^T)`` against the block (and its uncertified entries)."""
        self.pending = None
        loss, n_wrong, _ = self.evaluate(V, mu, delta)
        with threadpool_limits(limits=1, user_api="blas"):
            L = np.vstack(
                [_package(self.U[rows], V, mu, tau)[0] for rows in self.chunks]
            )
            if uncertified:
                errors, unsafe = _row_error_counts(self.X, L, Rt, tau, uncertified=True)
                n_unsafe = int(unsafe.sum())
            else:
                errors, n_unsafe = _row_error_counts(self.X, L, Rt, tau), None
        return L, n_wrong, loss, int(errors.sum()), n_unsafe
