"""The margin phase of an L-PCA fit: a squared hinge on a working set of entries.

Late in a fit nearly every entry is right by a wide margin, yet every logistic pass
still spends its gradient on all ``m n`` entries. The margin phase minimises

    ``f(U, V, mu) = sum_ij max(0, 1 - q_ij theta_ij)^2 + alpha / 2 (|U|^2 + |V|^2
    + |mu|^2)``

(``q = 2X - 1``, ``theta = U V^T + mu`` as in :mod:`sklearn_rrank._lpca._fit`),
whose value and gradient involve only the entries of margin ``q theta < 1``; it is
zero on the data exactly when every entry is right with margin 1. The phase
(our addition; the working set is that of SVM solvers, e.g. Joachims, "Making
large-scale SVM learning practical", 1999):

1. Scale the state so that margin 1 is the :data:`_SCALE_QUANTILE` quantile of
   the margins of the right entries (a sample): the rounding does not change.
2. One pass over all entries, by chunks of rows: the entries of margin below
   :data:`_WORKING_MARGIN` form the working set (the smallest margins of each chunk
   when there are more than the chunk's share of :data:`_MAX_WORKING`). None wrong
   or unsafe (within the stop margin): exact, stop.
3. Run scipy's L-BFGS-B on ``f`` restricted to the working set for
   :data:`_INNER_ITER` iterations: value and gradient cost ``O(|W| p)``, and they
   are ``f``'s own while no entry outside the set falls below margin 1.
4. Repeat from step 2 until exact, the deadline, or :data:`_STALL_ROUNDS` rounds
   without fewer wrong entries (counted from the first round, which may trade
   wrong entries for margin). The state with the fewest wrong entries is kept.

The result has no logistic model: its logits are not a maximum of the likelihood.
"""

import itertools

import numpy as np
import scipy.optimize
import scipy.sparse as sp

from sklearn_rrank._lpca._model import _chunks, _is_global, _stop_delta
from sklearn_rrank._lpca._working_set import _use_working_set, _ws_margin_fit

__all__ = []

# margin 1 of the hinge is put at this quantile of the right entries' margins: a
# few percent of them then pull the fit, so that it keeps its scale
_SCALE_QUANTILE = 0.05
# the working set: entries of margin below this (the hinge acts below 1; the rest
# watches for entries that fall), at most _MAX_WORKING of the smallest margins
_WORKING_MARGIN = 3.0
_MAX_WORKING = 1_500_000
# L-BFGS-B iterations on one working set, and rounds without fewer wrong entries
# after which the phase ends
_INNER_ITER = 50
_STALL_ROUNDS = 10
# entries per block of the working-set kernels (bounds their temporaries)
_BLOCK = 1 << 18


class _Stop(Exception):
    """Raised in the L-BFGS-B callback when the deadline has passed."""


def _offset_bounds(mu, tau, size):
    """L-BFGS-B bounds: the global offset keeps the sign opposite to ``tau``."""
    if not _is_global(mu):
        return None
    lo = np.full(size, -np.inf)
    hi = np.full(size, np.inf)
    if tau > 0:
        hi[-1] = -1e-3
    else:
        lo[-1] = 1e-3
    return scipy.optimize.Bounds(lo, hi)


def _offset_of(mu, j):
    """The offsets of the entries in columns ``j`` (0 without a bias)."""
    if mu is None:
        return 0.0
    return mu if _is_global(mu) else mu[j]


def _working_set(data, U, V, mu, delta, deadline):
    """Step 2: ``(rows, cols, signs, n_wrong, n_unsafe)`` of one pass.

    ``rows, cols`` are row-major sorted; entries with weight 0 (missing) are left
    out. ``n_wrong`` counts margins below 0, ``n_unsafe`` margins at most ``delta``.
    None when the deadline passes during the pass.
    """
    dtype = data.dtype
    Uc, Vc = U.astype(dtype, copy=False), V.astype(dtype, copy=False)
    offset = None if mu is None else np.asarray(mu, dtype=dtype)
    parts, n_wrong, n_unsafe = [], 0, 0
    for rows in _chunks(*data.shape, data.kernels):
        if deadline.expired():
            return None
        theta = Uc[rows] @ Vc.T
        if offset is not None:
            theta += offset
        q = data.q[rows]
        margin = q * theta
        if data.w is not None:
            margin[data.w[rows] <= 0] = np.inf
        n_wrong += int(np.count_nonzero(margin < 0))
        n_unsafe += int(np.count_nonzero(margin <= delta))
        r, c = np.nonzero(margin < _WORKING_MARGIN)
        cap = -(-_MAX_WORKING * margin.shape[0] // data.shape[0])  # the rows' part
        if r.size > cap:
            keep = np.sort(np.argpartition(margin[r, c], cap)[:cap])
            r, c = r[keep], c[keep]
        parts.append((r + rows.start, c, q[r, c]))
    rows, cols, q = (np.concatenate(x) for x in zip(*parts, strict=True))
    return rows, cols, np.where(q > 0, 1.0, -1.0), n_wrong, n_unsafe


class _Hinge:
    """``f`` and its gradient on a working set, over the flat ``(U, V, mu)``."""

    def __init__(self, rows, cols, signs, shape, p, mu, alpha):
        self.rows, self.cols, self.signs = rows, cols, signs
        self.m, self.n = shape
        self.p, self.alpha = p, alpha
        self.n_mu = 0 if mu is None else np.size(mu)
        self.S = sp.csr_matrix(
            (np.zeros(rows.size), (rows, cols)), shape=shape
        )  # pattern of the set; row-major sorted input keeps the order of `signs`

    def unpack(self, z):
        m, n, p = self.m, self.n, self.p
        U = z[: m * p].reshape(m, p)
        V = z[m * p : (m + n) * p].reshape(n, p)
        mu = None
        if self.n_mu == 1:
            mu = np.asarray(z[-1])
        elif self.n_mu:
            mu = z[(m + n) * p :]
        return U, V, mu

    def __call__(self, z):
        U, V, mu = self.unpack(z)
        g = np.empty(self.rows.size)
        for s in range(0, self.rows.size, _BLOCK):
            i, j = self.rows[s : s + _BLOCK], self.cols[s : s + _BLOCK]
            theta = np.einsum("ij,ij->i", U[i], V[j]) + _offset_of(mu, j)
            theta *= self.signs[s : s + _BLOCK]
            g[s : s + _BLOCK] = np.maximum(0.0, 1.0 - theta)
        value = float(g @ g) + 0.5 * self.alpha * float(z @ z)
        g *= -2.0 * self.signs
        self.S.data[:] = g
        grad = [(self.S @ V).ravel(), (self.S.T @ U).ravel()]
        if self.n_mu == 1:
            grad.append([g.sum()])
        elif self.n_mu:
            grad.append(np.bincount(self.cols, weights=g, minlength=self.n))
        grad = np.concatenate(grad)
        grad += self.alpha * z
        return value, grad


def _rescale(data, U, V, mu, rng):
    """Step 1: scale the state so that margin 1 is the right entries' quantile."""
    m, n = data.shape
    size = min(m * n, 100_000)
    i = rng.integers(0, m, size)
    j = rng.integers(0, n, size)
    q = data.q_at(i, j)
    margin = q * (np.einsum("ij,ij->i", U[i], V[j]) + _offset_of(mu, j))
    right = margin[(margin > 0) & (q != 0)]
    if not right.size:
        return U, V, mu
    s2 = 1.0 / max(float(np.quantile(right, _SCALE_QUANTILE)), 1e-12)
    s = np.sqrt(s2)
    return U * s, V * s, None if mu is None else mu * s2


def _margin_fit(data, U, V, mu, *, tau, alpha, deadline, tick=None, random_state=0):
    """The margin phase (module docstring) from ``(U, V, mu)``.

    ``data`` is a :class:`~sklearn_rrank._lpca._model._Data`; ``mu`` is None, a
    0-d array (global offset, whose sign stays opposite to ``tau``) or of shape
    (n,). Returns ``(U, V, mu, n_wrong, exact)`` in float64 (the state with the
    fewest wrong entries seen; ``n_wrong`` is None when the deadline ends the first
    pass, and the state is the start's, rescaled); ``tick(round, n_unsafe)`` is
    called every round and every L-BFGS-B iteration (with the round's last count).
    Large sparse data, when ``data`` asks for it
    (:func:`~sklearn_rrank._lpca._working_set._use_working_set`), take
    :func:`~sklearn_rrank._lpca._working_set._ws_margin_fit`, the same phase with
    blocked scans that never form an ``m x n`` array.
    """
    if _use_working_set(data, mu):  # large sparse data: scans by blocks, W only
        return _ws_margin_fit(
            data,
            U,
            V,
            mu,
            tau=tau,
            alpha=alpha,
            deadline=deadline,
            tick=tick,
            random_state=random_state,
        )
    U = np.asarray(U, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    mu = None if mu is None else np.asarray(mu, dtype=np.float64)
    U, V, mu = _rescale(data, U, V, mu, np.random.default_rng(random_state))
    best = None
    fewest = stall = 0
    for rnd in itertools.count():
        delta = _stop_delta(U.astype(data.dtype), V, mu, tau)
        found = _working_set(data, U, V, mu, delta, deadline)
        if found is None:
            break
        rows, cols, signs, n_wrong, n_unsafe = found
        if tick is not None:
            tick(rnd, n_unsafe)
        if best is None or n_wrong < best[3]:
            best = (U, V, mu, n_wrong)
        # the first round may trade wrong entries for margin: the stall counts from it
        if rnd <= 1 or n_wrong < fewest:
            fewest, stall = n_wrong, 0
        else:
            stall += 1
        if n_unsafe == 0:
            return U, V, mu, 0, True
        if stall >= _STALL_ROUNDS or deadline.expired():
            break
        hinge = _Hinge(rows, cols, signs, data.shape, U.shape[1], mu, alpha)
        z = np.concatenate([U.ravel(), V.ravel(), np.ravel([] if mu is None else mu)])
        last = [z]

        def stop(zk, last=last, rnd=rnd, n_unsafe=n_unsafe):
            last[0] = zk.copy()
            if tick is not None:  # progress events within a long round
                tick(rnd, n_unsafe)
            if deadline.expired():
                raise _Stop

        try:
            res = scipy.optimize.minimize(
                hinge,
                z,
                jac=True,
                method="L-BFGS-B",
                bounds=_offset_bounds(mu, tau, z.size),
                callback=stop,
                options={"maxiter": _INNER_ITER},
            )
            z = res.x if np.all(np.isfinite(res.x)) else last[0]
        except _Stop:  # the deadline: the last accepted iterate
            z = last[0]
        U, V, mu = (None if a is None else a.copy() for a in hinge.unpack(z))
    if best is None:  # the deadline passed during the first pass
        return U, V, mu, None, False
    U, V, mu, n_wrong = best
    return U, V, mu, n_wrong, False
