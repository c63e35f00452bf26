"""Starting points of L-PCA fits.

* :func:`_svd_init`: the truncated SVD of ``c (2X - 1)`` (centred for the column
  bias, shifted for the global offset), by a randomized SVD of an operator on
  sparse data (:func:`_svd_init_sparse`);
* :func:`_add_columns`: more latent columns along the steepest descent directions
  (the warm starts of the rank search);
* :func:`_init_from_factors`: user factors in the returned format;
* :func:`_truncated_start`: a certificate of a larger rank cut to fewer columns (the
  polish phase's warm start on large data).
"""

import time

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state
from sklearn.utils.extmath import randomized_svd
from threadpoolctl import threadpool_limits

from sklearn_rrank._lpca._model import (
    _B_MIN,
    _chunks,
    _Expired,
    _grad_hess_terms,
    _loss_terms,
    _offset_sign,
    _project_offset,
)

# ---------------------------------------------------------------------------------
# initialisation
# ---------------------------------------------------------------------------------

# scale of the saturated logits 2X - 1 used by the SVD warm start
_INIT_SCALE = 2.0
# starting magnitude of the global offset: larger than _INIT_SCALE, so that the
# shifted matrix c (2X - 1) - b is positive and its SVD carries the offset along
_GLOBAL_INIT = 4.0


def _svd_init(data, p, kind, random_state, tau=0.5, deadline=None):
    """Warm start from the truncated SVD of ``c (2X - 1)`` (missing entries 0).

    With the column bias (``kind="column"``), ``mu`` starts at the column means of
    ``c (2X - 1)`` over the observed entries, with the global offset
    (``kind="global"``) ``b`` starts at the overall mean (projected to the side
    ``tau`` needs); the SVD is taken of the centred matrix. The factors are balanced
    (``U = A sqrt(S)``, ``V = B sqrt(S)``). Directions beyond the rank of the
    matrix get small random values (zero columns would stay zero). A limited
    ``deadline`` shortens the power iterations of the randomized SVD (see
    :func:`_randomized_svd`, :func:`_svd_init_sparse`); the full SVD taken when
    ``2 p >= min(m, n)`` is not interrupted.
    """
    # BLAS on one thread, as in the sweeps: on busy cores the threads of small QR
    # factorizations wait for each other and overrun short budgets
    with threadpool_limits(limits=1, user_api="blas"):
        return _svd_start(data, p, kind, random_state, tau, deadline)


def _svd_start(data, p, kind, random_state, tau, deadline):
    """:func:`_svd_init` on the BLAS threads the caller set."""
    m, n = data.shape
    rng = check_random_state(random_state)
    if data.sparse:
        return _svd_init_sparse(data, p, kind, rng, tau, deadline)
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
        A, s, Bt = _randomized_svd(Z, p, rng, deadline)
        Bt = Bt.T
    return (*_balanced(A, s, Bt, p, rng), mu)


def _balanced(A, s, B, p, rng):
    """Balanced factors ``U = A sqrt(S)``, ``V = B sqrt(S)`` of ``p`` columns.

    Directions beyond the rank (singular values below ``1e-8`` of the largest, or
    missing) are replaced by small random columns: zero columns would stay zero.
    """
    root = np.sqrt(s)
    U, V = A * root, B * root
    small = s <= 1e-8 * max(s[0], 1.0)
    n_extra = p - s.size + int(small.sum())
    if n_extra:
        scale = 1e-2
        U = np.hstack(
            [U[:, ~small], scale * rng.standard_normal((A.shape[0], n_extra))]
        )
        V = np.hstack(
            [V[:, ~small], scale * rng.standard_normal((B.shape[0], n_extra))]
        )
    return U, V


# power iterations and oversamples of the randomized SVDs of the warm starts
_INIT_POWER_ITER = 7
_INIT_OVERSAMPLES = 10


def _randomized_svd(Z, p, random_state, deadline=None):
    """``randomized_svd(Z, p, n_iter=7)`` cut to the time a limited deadline leaves.

    A dense randomized SVD cannot be interrupted: with a limited ``deadline`` one
    product of ``Z`` with as many columns as its samples is timed, and the power
    iterations are cut to what fits in the time left at ``2 n_iter + 2`` such
    products (none if even one would not: a range from one product). Without a
    limit, or when all fit, the result is ``randomized_svd``'s; the probe costs one
    product. BLAS runs single-threaded, as in the sweeps, so that the SVD takes
    the modelled ``2 n_iter + 2`` probes also on busy cores.
    """
    n_iter = _INIT_POWER_ITER
    with threadpool_limits(limits=1, user_api="blas"):
        if deadline is not None and deadline.limited:
            size = min(p + _INIT_OVERSAMPLES, *Z.shape)
            t0 = time.monotonic()
            Z @ np.ones((Z.shape[1], size), dtype=Z.dtype)
            per_product = max(time.monotonic() - t0, 1e-9)
            fits = (deadline.remaining() / per_product - 2.0) // 2.0
            n_iter = int(min(max(fits, 0), n_iter))
        return randomized_svd(
            Z,
            p,
            n_oversamples=_INIT_OVERSAMPLES,
            n_iter=n_iter,
            random_state=random_state,
        )


def _svd_init_sparse(data, p, kind, rng, tau, deadline=None):
    """:func:`_svd_init` for sparse signs: ``c (2X - 1) - mu`` as an operator.

    Complete data only, so ``Z = 2c X - 1 s^T`` with ``s = c + mu`` (``mu`` the column
    means of ``c (2X - 1)``, the global offset, or 0): a sparse matrix plus a rank-one
    term. Its top ``p`` singular triplets come from a randomized SVD (Halko et al.,
    ``p + 10`` samples, 7 QR-normalised power iterations, fewer once a limited
    ``deadline`` has passed) whose products use the CSR pattern of the ones, so
    memory grows with the ones and ``(m + n) p``. The result equals the dense warm
    start up to floating-point rounding (another order of summation), not bit for
    bit.
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
        if deadline is not None and deadline.expired():
            break  # the sampled range is a (rougher) start too
        Q, _ = np.linalg.qr(Q)
        Q, _ = np.linalg.qr(rmatmat(Q))
        Q = matmat(Q)
    Q, _ = np.linalg.qr(Q)
    Ab, sv, Bt = np.linalg.svd(rmatmat(Q).T, full_matrices=False)
    A, sv, B = (Q @ Ab)[:, :p], sv[:p], Bt[:p].T
    return (*_balanced(A, sv, B, p, rng), mu)


def _add_columns(data, U, V, mu, r, deadline=None):
    """Add ``r`` latent columns along the top ``r`` singular pairs of the gradient.

    One gradient and one truncated SVD for all ``r`` columns (a column at a time
    costs ``r`` of each): each pair ``(a_j, b_j)`` of the negative gradient is
    scaled by its own Newton step along ``t a_j b_j^T`` (clipped to
    ``[1e-2, 1e2]``). The pairs are orthogonal, so the block is the
    steepest rank-``r`` direction at the current model, not the ``r`` successive
    rank-one steps (each taken after the previous). On dense data the pairs come
    from :func:`_randomized_svd` (cut to the time ``deadline`` leaves); on sparse
    data from :func:`_top_gradient_pairs`, by chunks of rows (no m x n array),
    whose passes a limited ``deadline`` cuts: then no column is added and the
    factors come back as they were (a rank search's fit reports its start
    incomplete).
    """
    if data.sparse:
        try:
            A, s, B, curvature = _top_gradient_pairs(data, U, V, mu, r, deadline)
        except _Expired:
            return U, V, mu
    else:
        A, s, B, curvature = _dense_gradient_pairs(data, U, V, mu, r, deadline)
    t = np.clip(s / np.maximum(curvature, 1e-12), 1e-2, 1e2)
    root = np.sqrt(t)
    return np.hstack([U, A * root]), np.hstack([V, B * root]), mu


def _dense_gradient_pairs(data, U, V, mu, r, deadline):
    """Top ``r`` singular pairs of ``-g`` (dense data) and the curvature along each."""
    m, n = data.shape
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
        else _randomized_svd(-g, r, 0, deadline)
    )
    A, s, B = A[:, :r], s[:r], Bt[:r].T
    curvature = np.array(
        [float((A[:, j] * A[:, j]) @ h @ (B[:, j] * B[:, j])) for j in range(r)]
    )
    return A, s, B, curvature


def _gradient_blocks(data, U, V, mu, curvature=False, deadline=None):
    """``(rows, g)`` (``(rows, g, h)`` with ``curvature``) by the chunks of the data.

    ``g`` and ``h`` are the first and second derivatives of the entry losses at the
    logits ``U V^T + mu`` (:func:`_grad_hess_terms`), one chunk of rows at a time.
    A limited ``deadline`` is checked before every chunk and raises
    :class:`~sklearn_rrank._lpca._model._Expired` once it has passed.
    """
    limited = deadline is not None and deadline.limited
    for rows in _chunks(*data.shape, data.kernels):
        if limited and deadline.expired():
            raise _Expired
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


# power iterations for the top singular pair of a sparse gradient (a heuristic new
# column): every product recomputes the gradient, so fewer than the dense SVD's 7
_ADD_COLUMN_POWER_ITER = 2


def _top_gradient_pairs(data, U, V, mu, r, deadline=None):
    """Top ``r`` singular pairs of ``-g`` and the curvature along each, by chunks.

    The sparse-data counterpart of the dense SVD in :func:`_add_columns`: ``g`` is
    recomputed chunk by chunk in every product of a randomized power iteration
    (``r`` vectors plus 10 samples, ``_ADD_COLUMN_POWER_ITER`` iterations, fewer
    when one would not end, with the two passes that follow it, before
    ``deadline``), so no m x n array is held, and the passes
    over the data do not grow with ``r``; every pass is cut by a limited
    ``deadline`` (:func:`_gradient_blocks` raises
    :class:`~sklearn_rrank._lpca._model._Expired`). Returns
    ``(A, sigma, B, curvature)``:
    the pairs as the columns of ``A`` (m, r) and ``B`` (n, r), the singular
    values (r,), and ``(A[:, j] * A[:, j]) @ h @ (B[:, j] * B[:, j])`` for each
    ``j``.
    """
    m, n = data.shape
    rng = np.random.RandomState(0)
    size = min(r + _INIT_OVERSAMPLES, m, n)

    def matmat(G):  # -g @ G
        out = np.empty((m, G.shape[1]))
        for rows, g in _gradient_blocks(data, U, V, mu, deadline=deadline):
            np.matmul(g, -G, out=out[rows])
        return out

    def rmatmat(Q):  # -g.T @ Q
        out = np.zeros((n, Q.shape[1]))
        for rows, g in _gradient_blocks(data, U, V, mu, deadline=deadline):
            out -= g.T @ Q[rows]
        return out

    t0 = time.monotonic()
    Q = matmat(rng.standard_normal((n, size)))
    one_pass = time.monotonic() - t0
    for _ in range(_ADD_COLUMN_POWER_ITER):
        # an iteration is two passes over the data and the end two more: one that
        # would not end before the deadline is not started (the sampled range is a
        # rougher direction too)
        if deadline is not None and deadline.limited:
            if deadline.remaining() < 4 * one_pass:
                break
        Q, _ = np.linalg.qr(Q)
        Q, _ = np.linalg.qr(rmatmat(Q))
        Q = matmat(Q)
    Q, _ = np.linalg.qr(Q)
    Ab, sv, Bt = np.linalg.svd(rmatmat(Q).T, full_matrices=False)
    r = min(r, sv.size)
    A, B = Q @ Ab[:, :r], Bt[:r].T
    B2 = B * B
    curvature = np.zeros(r)
    blocks = _gradient_blocks(data, U, V, mu, curvature=True, deadline=deadline)
    for rows, _, h in blocks:
        curvature += np.sum((A[rows] * A[rows]) * (h @ B2), axis=0)
    return A, sv[:r], B, curvature


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


# the scales of a truncated certificate tried: powers of 2 from 1, up or down
_TRUNCATED_MAX_STEPS = 12
# evenly spaced blocks of rows on which the scale is chosen (data.kernels'
# truncated_sample entries in all): a pass over all entries costs seconds on 1e9
_TRUNCATED_BLOCKS = 8


def _truncated_start(data, L, R, p, tau):
    """Global-offset model of ``p`` columns from a certificate ``(L, R)`` of more.

    ``theta = c (M_p - tau)``, ``M_p`` the best rank-``p`` approximation of ``L R^T``
    (Eckart-Young; from the QR factorizations of ``L`` and ``R`` and the SVD of the
    ``k x k`` product of their triangles, no ``m x n`` array), balanced as
    :func:`_svd_init`'s factors, with the offset ``b = -c tau``. The data loss is
    convex in the scale ``c > 0`` (the logits are linear in it): ``c`` walks by
    factors of 2 from 1 (at most ``_TRUNCATED_MAX_STEPS`` steps) while the loss of
    a sample drops (all the entries of up to ``_TRUNCATED_BLOCKS`` evenly spaced
    blocks of whole rows, ``kernels.truncated_sample`` entries in all, every entry
    on small data), and stays at least ``_B_MIN / |tau|``. ``tau`` must not be 0
    (the global model needs the offset). Our addition (the paper starts every
    L-PCA fit afresh): measured on Abstracts (float32, L-BFGS, 2 cores), a fit at
    k = 100 from a certificate of rank 120 cut so left 12,104 entries wrong after
    200 iterations, against 32,713 from :func:`_svd_init`; at k = 108, 308 after
    100 iterations.
    """
    m, n = data.shape
    if sp.issparse(L):
        L = L.toarray()
    if sp.issparse(R):
        R = R.toarray()
    with threadpool_limits(limits=1, user_api="blas"):
        QL, TL = np.linalg.qr(np.asarray(L, dtype=np.float64))
        QR, TR = np.linalg.qr(np.asarray(R, dtype=np.float64))
        A, s, Bt = np.linalg.svd(TL @ TR.T)
        U0 = QL @ (A[:, :p] * np.sqrt(s[:p]))
        V0 = QR @ (Bt[:p].T * np.sqrt(s[:p]))
        # the sample: M_p - tau, the signs and the weights of whole blocks of rows
        q, w, _ = data.side(False)
        size = max(1, min(m, data.kernels.truncated_sample // max(n, 1)))
        per = -(-size // _TRUNCATED_BLOCKS)
        firsts = np.unique(np.linspace(0, m - per, _TRUNCATED_BLOCKS).astype(int))
        blocks = [slice(a, a + per) for a in firsts] if per < m else [slice(0, m)]
        logits = np.vstack([U0[b] @ V0.T for b in blocks]) - tau
    signs = np.vstack([q[b] for b in blocks])
    weights = None if w is None else np.vstack([w[b] for b in blocks])
    least = _B_MIN / abs(tau)

    def loss(c):
        terms = _loss_terms(c * logits, signs)
        if weights is not None:
            terms *= weights
        return float(terms.sum())

    c = max(1.0, least)
    best = loss(c)
    for factor in (2.0, 0.5):
        steps = 0
        while steps < _TRUNCATED_MAX_STEPS and c * factor >= least:
            value = loss(c * factor)
            if value >= best:
                break
            c, best, steps = c * factor, value, steps + 1
        if steps:
            break  # the loss dropped this way: it rises the other way
    root = np.sqrt(c)
    return U0 * root, V0 * root, np.asarray(-c * tau)
