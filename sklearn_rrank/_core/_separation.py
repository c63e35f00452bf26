"""Batched separation: a right factor for a fixed left factor, all columns at once.

For a fixed left factor ``L`` (m, d) the columns of a binary matrix ``X`` are
independent problems: column ``j`` needs ``r = R_j`` with ``<L_i, r> >= tau`` where
``X_ij = 1`` and ``< tau`` where ``X_ij = 0`` (a linear separation with offset
``tau``). The LP engine (:mod:`sklearn_rrank._projlp._lp`) decides each column exactly
but
costs one LP of ``m`` constraints per column. This module is the cheap first pass
used on large data: it minimises the squared hinge loss

    sum_i max(0, 1 - q_ij (<L_i, r_j> - tau t_j))^2,   q_ij = 2 X_ij - 1,

over ``(r_j, t_j)`` for every column at once (the offset scale ``t_j`` makes the
margin scale-free; then ``R_j = r_j / t_j``), by gradient descent with momentum in
an orthonormal basis ``U`` of ``[L, -tau]`` (thin SVD ``U diag(s) V^T``; the loss
then has curvature at most 1, so step 1 is safe). Each step is two matrix products
over a block of columns, in float32; the result is mapped back
(``R^T = V diag(1/s) W``) and every column is checked in float64 with the
certificate of :func:`~sklearn_rrank.certify_rounding`. The columns the descent
leaves can be finished by the finite Newton method of the L2-SVM
(``solver="newton"``).
A column is reported separated only if it passes that check; the others go to the
LPs or to the fallback of the caller.

This is our addition (not in the paper): the loss is the L2-SVM loss of a linear
classifier with fixed offset ``tau``, and the whitened gradient step is the classical
relaxation method for linear inequalities (S. Agmon 1954; T. S. Motzkin and I. J.
Schoenberg 1954). The number of steps, not convergence, bounds the work: a column
that is separable but not reached in ``n_iter`` steps is not reported separated.
"""

import numpy as np
import scipy.sparse as sp
from sklearn.utils import gen_batches

from sklearn_rrank._core._parallel import Parallel, delayed
from sklearn_rrank._core._rounding import _dense_block, _uncertified_counts

__all__ = ["alternate_separation", "separate_columns", "separation_basis"]

# entries of X per column block (separate_columns' block_entries): a few float32
# temporaries of this size per block and thread (16 MB each), so that the
# separation's memory does not grow with the data
_BLOCK_ENTRIES = 1 << 22
_MOMENTUM = 0.9


def _signs32(Xb):
    """The float32 signs ``2 X - 1`` of a block of ``X``, 0 where it is missing.

    Written in place into one float32 array (the block's only m x b copy besides
    the descent's product): the NumPy expression ``where(isnan(X), 0, 2 X - 1)``
    made three float64 temporaries of the block's size.
    """
    if sp.issparse(Xb):  # complete: the stored entries are the ones
        q = Xb.astype(np.float32).toarray()
        q *= 2.0
        q -= 1.0
        return q
    q = np.empty(Xb.shape, dtype=np.float32)
    np.multiply(Xb, 2.0, out=q, casting="unsafe")
    q -= 1.0
    np.nan_to_num(q, copy=False, nan=0.0)
    return q


def _separate_block(Q32, X, block, n_iter, deadline, W0=None):
    """Whitened momentum descent for the columns ``X[:, block]``; returns W (p, b).

    Minimises ``sum_i max(0, 1 - q_i (Q w)_i)^2`` per column (threshold 0: the offset
    is a column of the caller's basis). ``W0`` (p, b) is a warm start, rescaled per
    column to its best least-squares multiple (columns where that multiple is not
    positive start from the least-squares fit ``Q^T q``). A block of sparse ``X``
    is made dense here, per task, not by the caller.
    """
    q = _signs32(X[:, block])
    W = Q32.T @ q  # least-squares start: Q w = the projection of q
    if W0 is not None:
        Z = Q32 @ W0
        qz = np.einsum("ij,ij->j", q, Z)
        zz = np.einsum("ij,ij->j", Z, Z)
        warm = (qz > 0) & (zz > 0)
        W[:, warm] = W0[:, warm] * (qz[warm] / zz[warm])
        del Z
    step = np.zeros_like(W)
    for _ in range(n_iter):
        if deadline is not None and deadline.expired():
            break
        V = Q32 @ (W + _MOMENTUM * step)
        V *= q
        np.subtract(1.0, V, out=V)
        np.maximum(V, 0.0, out=V)
        V *= q  # missing entries (q = 0) drop out
        if not V.any():
            break  # every entry meets the margin
        step *= _MOMENTUM
        step += Q32.T @ V
        W += step
    return W


def _newton_column(Q, x, n_iter, deadline, w0=None):
    """Finite Newton method for one column's squared hinge (Keerthi, DeCoste 2005).

    ``Q`` (m, p) is the float64 orthonormal basis, ``x`` the column (NaN: missing).
    Each step solves the least-squares problem of the active entries (those below
    the margin) and takes the best point on the segment to it (line search by
    halving). The normal equations of the active entries are updated with the rows
    that enter or leave the active set, not rebuilt. ``w0`` (p,) is a warm start,
    rescaled like in :func:`_separate_block`. Returns ``w`` (p,).
    """
    observed = ~np.isnan(x)
    q = np.where(observed, 2.0 * np.nan_to_num(x) - 1.0, 0.0)
    w = Q.T @ q
    if w0 is not None:
        z = Q @ w0
        qz, zz = float(q @ z), float(z @ z)
        if qz > 0 and zz > 0:
            w = w0 * (qz / zz)
    p = Q.shape[1]
    H = np.zeros((p, p))
    H[np.diag_indices_from(H)] = 1e-10 * Q.shape[0]  # ridge: H stays regular
    b = np.zeros(p)
    active = np.zeros(q.shape, dtype=bool)

    def loss(w_):
        margin = q * (Q @ w_)
        v = np.maximum(1.0 - margin, 0.0) * observed
        return float(v @ v), margin

    f, margin = loss(w)
    for _ in range(n_iter):
        if f == 0.0 or (deadline is not None and deadline.expired()):
            break
        new_active = observed & (margin < 1.0)
        for rows, sign in ((new_active & ~active, 1.0), (active & ~new_active, -1.0)):
            if rows.any():
                Qr = Q[rows]
                H += sign * (Qr.T @ Qr)
                b += sign * (Qr.T @ q[rows])
        active = new_active
        try:
            target = np.linalg.solve(H, b)
        except np.linalg.LinAlgError:  # pragma: no cover - the ridge keeps H regular
            break
        t, improved = 1.0, False
        for _ in range(30):
            trial = w + t * (target - w)
            f_trial, margin_trial = loss(trial)
            if f_trial < f:
                w, f, margin, improved = trial, f_trial, margin_trial, True
                break
            t *= 0.5
        if not improved:
            break
    return w


def separation_basis(L, tau):
    """The orthonormal basis that :func:`separate_columns` computes for ``L``.

    Pass it as ``basis`` to calls with the same ``L`` and ``tau`` (and other
    columns) to compute the SVD once.
    """
    tau = float(tau)
    La = np.hstack([L, np.full((L.shape[0], 1), -tau)]) if tau != 0 else L
    return _basis(La)


def _basis(La):
    """Thin SVD ``La = U diag(s) Vt`` and the mask of the directions kept."""
    U, s, Vt = np.linalg.svd(La, full_matrices=False)
    keep = s > 1e-10 * max(s.max(initial=0.0), 1e-300)
    return U, s, Vt, keep


def _column_counts(X, L, R, tau):
    """Uncertified observed entries per column of ``X`` for ``(L, R)``.

    A transposed view (the row step of :func:`alternate_separation`) is counted in
    the layout of its base array, by rows; so is the CSC transpose of CSR data.
    """
    if sp.issparse(X):
        if X.format == "csc":
            return _uncertified_counts(X.T, R, L, tau, axis=1)
        return _uncertified_counts(X.tocsr(), L, R, tau, axis=0)
    if not X.flags.c_contiguous and X.T.flags.c_contiguous:
        return _uncertified_counts(X.T, R, L, tau, axis=1)
    return _uncertified_counts(X, L, R, tau, axis=0)


def separate_columns(
    L,
    X,
    *,
    tau=0.5,
    n_iter=100,
    solver="descent",
    deadline=None,
    n_jobs=None,
    basis=None,
    init=None,
    block_entries=_BLOCK_ENTRIES,
):
    """Right factor for a fixed ``L`` by batched squared-hinge descent, checked.

    The offset is learned with the direction: every column solves the homogeneous
    problem ``q_i (<L_i, r> - tau t) >= 1`` for ``(r, t)`` (the left factor extended
    by the column ``-tau``), so the margin is scale-free, and ``R_j = r / t`` where
    ``t > 0`` (``t = 1`` for ``tau = 0``).

    Parameters
    ----------
    L : ndarray of shape (n_samples, d), dtype float64
        Fixed left factor (finite).
    X : ndarray or sparse matrix of shape (n_samples, n_features), dtype float64
        Validated binary data; ``NaN`` marks missing entries (no constraint). A
        sparse ``X`` (CSR or CSC, complete: the stored entries are the ones) is
        made dense one block of columns at a time (whole with
        ``solver="newton"``, which is meant for a few columns).
    tau : float, default=0.5
        Rounding threshold.
    n_iter : int, default=100
        ``"descent"``: steps per column block (each step: two products of the
        block); ``"newton"``: Newton steps per column.
    solver : {"descent", "newton"}, default="descent"
        ``"descent"``: whitened gradient descent with momentum on blocks of columns
        (float32 products; cheap per column, slow to finish hard columns).
        ``"newton"``: the finite Newton method of the L2-SVM (S. S. Keerthi, D.
        DeCoste, JMLR 2005) per column in float64, each step a least-squares
        solve on the entries below the margin (costly per column, few steps): for
        the few columns the descent leaves.
    deadline : Deadline or None, default=None
        Checked between steps; at expiry every block returns what it has.
    n_jobs : int or None, default=None
        Column blocks run in parallel threads; the blocks do not depend on
        ``n_jobs``, so neither does the result.
    basis : tuple or None, default=None
        ``separation_basis(L, tau)``, to reuse across calls with the same ``L``.
    init : ndarray of shape (n_features, d) or None, default=None
        A right factor to start from (warm start). Every column keeps ``init``'s
        row where it leaves no more uncertified entries than the new one, so the
        result is never worse than ``init``, column by column.
    block_entries : int, default=4194304
        Entries of ``X`` per column block of the descent: a few float32
        temporaries of this size per block and thread (16 MB each), so that the
        memory does not grow with the data.

    Returns
    -------
    R : ndarray of shape (n_features, d), dtype float64
        ``R_j`` for every column (the descent's iterate; certified only where
        ``separated`` is True).
    separated : ndarray of shape (n_features,), dtype bool
        True for the columns whose every observed entry is certified in float64
        with the margin of :func:`~sklearn_rrank.certify_rounding`.
    """
    R, counts = _separate(
        L,
        X,
        tau=tau,
        n_iter=n_iter,
        solver=solver,
        deadline=deadline,
        n_jobs=n_jobs,
        basis=basis,
        init=init,
        block_entries=block_entries,
    )
    return R, counts == 0


def _separate(
    L, X, *, tau, n_iter, solver, deadline, n_jobs, basis, init, block_entries
):
    """:func:`separate_columns`, returning the uncertified entries per column."""
    if solver not in ("descent", "newton"):
        raise ValueError(f"solver must be 'descent' or 'newton', got {solver!r}.")
    m, n = X.shape
    d = L.shape[1]
    tau = float(tau)
    if d + (tau != 0) == 0 or n == 0 or m == 0:
        R = np.zeros((n, d))
        return R, _column_counts(X, L, R, tau)
    U, s, Vt, keep = separation_basis(L, tau) if basis is None else basis
    W0 = None
    if init is not None:  # La @ [r; 1] = U_keep @ (s Vt [r; 1])
        coef0 = np.hstack([init, np.ones((n, 1))]) if tau != 0 else init
        W0 = s[keep, None] * (Vt[keep] @ coef0.T)
    if solver == "newton":
        Q = np.ascontiguousarray(U[:, keep])
        Xd = _dense_block(X)  # Newton is for the few columns the descent leaves
        Ws = Parallel(n_jobs=n_jobs, prefer="threads")(
            delayed(_newton_column)(
                Q, Xd[:, j], n_iter, deadline, None if W0 is None else W0[:, j]
            )
            for j in range(n)
        )
        W = np.column_stack(Ws)
    else:
        Q32 = np.ascontiguousarray(U[:, keep], dtype=np.float32)
        W032 = None if W0 is None else W0.astype(np.float32)
        blocks = list(gen_batches(n, max(1, block_entries // max(m, 1))))
        # sparse X is read by blocks of columns: CSC (the row step's X.T already is)
        Xc = X.tocsc() if sp.issparse(X) else X
        Ws = Parallel(n_jobs=n_jobs, prefer="threads")(
            delayed(_separate_block)(
                Q32, Xc, b, n_iter, deadline, None if W032 is None else W032[:, b]
            )
            for b in blocks
        )
        W = np.hstack(Ws).astype(np.float64)  # La @ coef = U_keep @ W
    coef = (Vt[keep].T @ (W / s[keep, None])).T  # (n, d or d + 1)
    if tau != 0:
        t = coef[:, d]
        R = np.where(t[:, None] > 0, coef[:, :d] / np.where(t > 0, t, 1.0)[:, None], 0)
        # if L spans the constants (L e = 1), an offset of either sign needs no
        # rescaling: L (r + tau (1 - t) e) - tau = L r - tau t (for t <= 0)
        bad = t <= 0
        if bad.any():
            e = np.linalg.lstsq(L, np.ones(m), rcond=None)[0]
            if np.allclose(L @ e, 1.0, rtol=0, atol=1e-9):
                R[bad] = coef[bad, :d] + tau * (1.0 - t[bad])[:, None] * e
    else:
        R = coef
    counts = _column_counts(X, L, R, tau)
    if init is not None:
        old = _column_counts(X, L, init, tau)
        keep_old = old <= counts
        R[keep_old] = init[keep_old]
        counts = np.minimum(old, counts)
    return R, counts


def alternate_separation(
    L,
    X,
    *,
    tau=0.5,
    n_rounds=3,
    n_iter=100,
    tol=0.0,
    deadline=None,
    n_jobs=None,
    init=None,
    callback=None,
    block_entries=_BLOCK_ENTRIES,
):
    """Alternating squared-hinge separation of the columns and the rows of ``X``.

    Starts with ``R`` for the fixed ``L`` (:func:`separate_columns`); then each
    round solves the rows for the fixed ``R`` (the same problem on ``X^T``, warm
    started from ``L``) and the columns for the new ``L`` (warm started from
    ``R``). Every row and every column keeps its previous factor row where the new
    one leaves more uncertified entries, so the number of uncertified entries never
    increases. It is the alternating refinement of ProjLP (paper, Section 3) with
    the squared hinge of the L2-SVM in place of the L1-slack LPs: our addition for
    large matrices, where one LP per row and per column costs hours.

    Parameters
    ----------
    L : ndarray of shape (n_samples, d), dtype float64
        Starting left factor (e.g. a random projection ``X A``).
    X : ndarray or sparse matrix of shape (n_samples, n_features), dtype float64
        Validated binary data; ``NaN`` marks missing entries (no constraint). A
        sparse ``X`` (CSR or CSC, complete: the stored entries are the ones) is
        made dense one block of columns (rows in the row step) at a time.
    tau : float, default=0.5
        Rounding threshold.
    n_rounds : int, default=3
        Most row-and-column rounds after the first column step.
    n_iter : int, default=100
        Descent steps of every row or column step.
    tol : float, default=0.0
        Stop when a round removes at most ``tol`` times the uncertified entries
        before it (0: stop only when a round removes none).
    deadline : Deadline or None, default=None
        Checked between and inside the steps.
    n_jobs : int or None, default=None
        Threads for the blocks; the result does not depend on it.
    init : ndarray of shape (n_features, d) or None, default=None
        Warm start of the first column step (see :func:`separate_columns`).
    callback : callable or None, default=None
        Called after every step as ``callback(step, uncertified)``: ``step`` is
        ``"columns"`` or ``"rows"`` and ``uncertified`` the uncertified entries
        after it (a step on a matrix of 6e7 entries takes tens of seconds: the
        caller's progress report).
    block_entries : int, default=4194304
        Entries per block of columns (rows in the row step); see
        :func:`separate_columns`.

    Returns
    -------
    L : ndarray of shape (n_samples, d), dtype float64
    R : ndarray of shape (n_features, d), dtype float64
    counts : ndarray of shape (n_features,), dtype int64
        Uncertified observed entries of every column for ``(L, R)`` (0: the column
        is separated, certified with the margin of
        :func:`~sklearn_rrank.certify_rounding`).
    history : list of int
        Total uncertified entries after the first step and after every round.
    """
    kw = dict(tau=tau, n_iter=n_iter, solver="descent", deadline=deadline)
    kw.update(n_jobs=n_jobs, basis=None, block_entries=block_entries)
    R, counts = _separate(L, X, init=init, **kw)
    history = [int(counts.sum())]
    if callback is not None:
        callback("columns", history[-1])
    for _ in range(n_rounds):
        if history[-1] == 0 or (deadline is not None and deadline.expired()):
            break
        L, row_counts = _separate(R, X.T, init=L, **kw)
        if callback is not None:
            callback("rows", int(row_counts.sum()))
        R, counts = _separate(L, X, init=R, **kw)
        history.append(int(counts.sum()))
        if callback is not None:
            callback("columns", history[-1])
        if history[-2] - history[-1] <= tol * history[-2]:
            break
    return L, R, counts, history
