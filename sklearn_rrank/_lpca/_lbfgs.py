"""The joint L-PCA objective and its L-BFGS-B solver (``solver="lbfgs"``).

:func:`_joint_objective` returns the objective and its gradient over all parameters
``z = [U.ravel(), V.ravel(), mu]`` in one pass over the entries (fixed runs of chunks
of rows, see :func:`_joint_task`); :func:`_lbfgs_fit` minimises it with scipy's
L-BFGS-B under the stopping rules of the sweep solvers.
"""

import math
import time

import numpy as np
import scipy.optimize

from sklearn_rrank._lpca._model import (
    _B_MIN,
    _buffer,
    _chunks,
    _count_wrong,
    _evaluate,
    _Expired,
    _kind,
    _project_offset,
    _run_chunks,
    _stop_delta,
)
from sklearn_rrank._lpca._newton import _stalled

# correction pairs kept by L-BFGS (scipy's maxcor): each costs work over all (m + n) k
# parameters per iteration; 5 beat 20 on Abstracts (benchmarks/lpca_sweep.py)
_LBFGS_MEMORY = 5


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


def _joint_task(chunks, U, V, F, q, w, n_missing, ones, delta, count_wrong=False):
    """Loss, gradient parts and unsafe entries of a run of chunks of rows.

    ``F`` is ``[V, mu] / 2`` (``V / 2`` without a bias), so that one product per
    chunk gives the half logits ``h = theta / 2 = [U, 1] @ F.T``. With
    ``t = tanh(h)``, the entry loss is ``max(-2 q h, 0) + log 2 - log(1 + |t|)``
    (since ``tanh(|q theta| / 2) = |t|`` and
    ``log1p(exp(-|q theta|)) = log(2 / (1 + |t|))``) and twice its derivative is
    ``t - q``; the factor 1/2 is applied to the small products, not to the entries.

    With ``ones`` (the CSR pattern of the ones that :class:`_Data` keeps when
    nothing is missing and at most ``_SPARSE_ONES`` of the entries are ones), the
    signs ``q`` are never read: the chunk is treated as all zeros (``q = -1``) and
    the ones are corrections gathered from, and scattered into, the chunk:
    ``sum max(-2 q h, 0) = 2 sum max(h, 0) - 2 sum_ones h`` and
    ``t - q = t + 1 - 2 [x = 1]``. This saves three passes over the entries.

    Returns the task's loss, its rows of ``2 dF/dU``, its shares of ``2 dF/dV``
    and ``2 dF/dmu`` (accumulated in place over the chunks, as the columns of one
    (n, F.shape[1]) array), its unsafe entries and, with ``count_wrong``, its
    entries rounded wrong at logit 0 (else 0). The loss of the well-classified
    entries (``|q theta| > 17`` in float32) is lost to rounding in
    ``log 2 - log(1 + |t|)``; each such entry's true loss is below ``5e-8``.
    """
    dt = U.dtype
    n, p = V.shape
    p1 = F.shape[1]  # p + 1 with a bias: G.T @ [U, 1] gives dF/dV and dF/dmu at once
    gVmu = np.zeros((n, p1), dtype=dt)
    first = chunks[0].start
    gU = np.empty((chunks[-1].stop - first, p), dtype=dt)
    Ub = np.ones((max(c.stop - c.start for c in chunks), p1), dtype=dt)
    # np.minimum/maximum against an array are several times faster than against a
    # scalar
    zeros = np.zeros(Ub.shape[0] * n, dtype=dt)
    loss, n_unsafe, n_wrong = 0.0, 0, 0
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
            if count_wrong:  # zeros with h >= 0, ones with h < 0
                np.greater_equal(half, 0.0, out=mask)
                n_wrong += int(np.count_nonzero(mask))
                n_wrong += int(np.count_nonzero(h1 < 0))
                n_wrong -= int(np.count_nonzero(h1 >= 0))
            np.maximum(half, zeros[: half.size].reshape(shape), out=a)
            relu = 2.0 * (_total(a) - float(h1.sum(dtype=np.float64)))
            n_obs = float(half.size)
        else:
            qc = q[rows]
            if count_wrong:
                n_wrong += _count_wrong(half, qc)
            np.multiply(qc, half, out=a, dtype=dt)
            np.less_equal(a, 0.5 * delta, out=mask)
            n_unsafe += int(np.count_nonzero(mask)) - int(n_missing[rows].sum())
            np.minimum(a, zeros[: a.size].reshape(shape), out=a)  # -max(-2a, 0) / 2
            relu = -2.0 * _total(a, wc)
            n_obs = float(a.size if w is None else wc.sum(dtype=np.float64))
        t = np.tanh(half, out=half)
        b = np.abs(t, out=_buffer("h", shape, dt))
        # log(1 + |t|), not log1p: |t| <= 1, so the error is that of rounding 1 + |t|
        # (1.2e-7 at most), and NumPy's float32 log is vectorised where log1p is not
        b += 1.0
        np.log(b, out=b)
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
    return loss, gU, gVmu, n_unsafe, n_wrong


def _joint_objective(
    z,
    data,
    p,
    kind,
    alpha,
    parallel=None,
    tau=0.5,
    counts=None,
    deadline=None,
    count_wrong=False,
):
    """Objective and gradient over ``z = [U.ravel(), V.ravel(), mu]`` (L-BFGS).

    The m x n work runs in ``data.dtype`` (float32 mode: the factors are cast down
    for it; the sums and the returned gradient are float64), in fixed runs of
    chunks of rows (see :func:`_joint_task`). If ``counts`` is a dict,
    ``counts["unsafe"]`` receives the entries that are wrong or within the stop
    margin at ``z`` (see :func:`_evaluate`), computed from the same logits, and
    with ``count_wrong`` ``counts["wrong"]`` the entries rounded wrong. A
    limited ``deadline`` is checked before each run (threads: each
    ``data.kernels.check_group`` chunks' worth) and raises
    :class:`~sklearn_rrank._lpca._model._Expired` once it has passed.
    """
    m, n = data.shape
    U, V, mu = _unpack(z, m, n, p, kind)
    dt = data.dtype
    Uw, Vw = U.astype(dt, copy=False), V.astype(dt, copy=False)
    muw = None if mu is None else mu.astype(dt, copy=False)
    delta = _stop_delta(Uw, Vw, muw, tau)
    F = Vw if mu is None else np.column_stack([Vw, np.broadcast_to(muw, n)])
    F = np.multiply(F, 0.5, dtype=dt)
    kernels = data.kernels
    chunks = _chunks(m, n, kernels)
    size = kernels.task_chunks  # chunks per task: fixed by the shape, not n_jobs
    tasks = [chunks[i : i + size] for i in range(0, len(chunks), size)]
    args = (Uw, Vw, F, data.q, data.w, data.n_missing, data.ones, delta, count_wrong)
    # the tasks return their results (no shared output array): the same on every
    # joblib backend, threads or processes of a cluster
    group = max(1, kernels.check_group // size)
    parts = _run_chunks(
        parallel, _joint_task, tasks, *args, deadline=deadline, group=group
    )
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
        if count_wrong:
            counts["wrong"] = sum(r[4] for r in parts)
    return f, grad


def _offset_scale(U, V, m, n):
    """Scale of the global offset in the L-BFGS variables.

    At the logits 0 the diagonal of the Hessian of the data term is a quarter of
    ``|V[:, c]|^2`` for a factor entry ``U[i, c]`` (``|U[:, c]|^2`` for
    ``V[j, c]``) and of ``m n`` for the global offset: with m rows the offset's
    curvature is about ``m`` times the factors' (the factors of a start share
    their singular values), an ill-conditioning that grows with the data. L-BFGS
    runs in ``z / scale`` with this scale on the offset, which then has about the
    factors' mean curvature. On a planted 10,000 x 5,000 matrix (rank 20, 0.5%
    ones, float32) the fit at k = 40 certified after 60 iterations instead of 126,
    at k = 20 after 315 instead of 429. (The same scaling of a column bias, by
    ``sqrt(typical / m)``, made the k = 20 fit with ``fit_bias=True`` worse: 30,311
    wrong entries after 250 s instead of 6,143; not done.)
    """
    typical = max(
        float(np.einsum("ij,ij->", U, U) + np.einsum("ij,ij->", V, V))
        / (2 * max(U.shape[1], 1)),
        1.0,
    )
    return min(1.0, math.sqrt(typical / (m * n)))


def _lbfgs_fit(data, U, V, mu, loop, *, alpha, tau, parallel):
    """Minimise the joint objective over ``(U, V, mu)`` with scipy's L-BFGS-B.

    ``loop`` is a :class:`~sklearn_rrank._lpca._newton.FitLoop`: the stopping
    rules are those of :func:`~sklearn_rrank._lpca._newton._sweep_loop`, checked in
    scipy's callback after every iteration (``tol`` is also scipy's ``ftol``;
    ``max_iter`` counts iterations). Returns ``(U, V, mu, history, n_iter,
    status)`` as that loop does, and the wrong entries of the start. A limited
    ``deadline`` is also checked inside every evaluation of the objective (see
    :func:`_joint_objective`); an interrupted iteration is discarded and the fit
    returns the last accepted iterate with status ``"time_limit"``; so does an
    evaluation that would not end, as long as the last one, with room for the
    count that follows the fit (one pass, as long as the start's evaluation). A
    global offset is seen by L-BFGS divided by :func:`_offset_scale` (a change of
    variables that leaves the objective and its minimiser as they are).

    The global offset keeps the side ``tau`` needs (``mu <= -_B_MIN`` for
    ``tau > 0``, ``mu >= _B_MIN`` otherwise) by evaluation at the offset clamped to
    that side: beyond it the objective is flat in the offset, plus a quadratic in
    the distance to the edge that brings the offset back (both 0 at the edge), so
    L-BFGS minimises the objective over the allowed offsets. These are not
    scipy's bounds: L-BFGS-B converts any bounds by a Python loop over all the
    parameters (scipy 1.17: 8.4 s per fit at the 2.1e6 parameters of Abstracts at
    k = 120, against 0.9 s without bounds; a 900 s run starts about ten fits there).
    """
    m, n = data.shape
    p = U.shape[1]
    kind = _kind(mu)
    max_iter, tol, stall = loop.max_iter, loop.tol, loop.stall
    stop_when_exact, deadline = loop.stop_when_exact, loop.deadline
    verbose, tick, unsafe_history = loop.verbose, loop.tick, loop.unsafe_history

    # L-BFGS sees y: the parameters z with the global offset divided by its scale
    # (see _offset_scale); the factors and a column bias are not scaled
    scale = _offset_scale(U, V, m, n) if kind == "global" else 1.0

    # the global offset's side in y (tau > 0: at most the edge, else at least it),
    # and a bound on the curvature of the objective in the offset (in y): a quarter
    # of the entries, times scale squared
    edge = None if kind != "global" else (-_B_MIN if tau > 0 else _B_MIN) / scale
    stiff = 0.25 * m * n * scale * scale

    def beyond(y):
        """Whether the offset of ``y`` is past its edge (then it is clamped)."""
        if edge is None:
            return False
        return y[-1] > edge if tau > 0 else y[-1] < edge

    def to_z(y):
        out = beyond(y)
        if scale == 1.0 and not out:
            return y
        z = y.copy()
        if out:
            z[-1] = edge
        z[-1] *= scale
        return z

    def unpack(y):
        return _unpack(to_z(y), m, n, p, kind)

    last = {}  # the last point evaluated (a copy) and its unsafe count
    # iterations and passes are timed on the deadline's clock, as the sweeps
    clock = time.monotonic if deadline is None else deadline.now
    # seconds of the last evaluation, and of the count after the loop
    timing = {"eval": 0.0, "count": 0.0}

    def fun(y, deadline=deadline, count_wrong=False):
        # a line search may evaluate more than once an iteration: an evaluation
        # that would leave no room for the count after the loop is not started
        # (the iteration is discarded, as one the deadline cuts)
        if deadline is not None and not deadline.leaves_room_for(
            timing["eval"] + timing["count"]
        ):
            raise _Expired
        began = clock()
        counts = {}
        args = (parallel, tau, counts, deadline, count_wrong)
        f, g = _joint_objective(to_z(y), data, p, kind, alpha, *args)
        timing["eval"] = clock() - began
        last["z"], last["unsafe"] = y.copy(), counts["unsafe"]
        last["wrong"] = counts.get("wrong")
        g[-1] *= scale  # the gradient in y (a fresh array)
        if beyond(y):
            # flat in the clamped offset, plus a restoring quadratic as stiff as
            # the offset's own curvature can be (in y): without it an offset that
            # had passed its edge stayed there
            d = y[-1] - edge
            f += 0.5 * stiff * d * d
            g[-1] = stiff * d
        return f, g

    z0 = np.concatenate([U.ravel(), V.ravel()] + ([] if mu is None else [np.ravel(mu)]))
    z0[-1] /= scale
    # the start's objective, not interrupted, and its wrong entries: the count
    # of a fit that the deadline cuts before its first iteration
    f0, g0 = fun(z0, None, count_wrong=True)
    start_wrong = last["wrong"]
    # a pass over the data: the fit's count of its last state, after the loop, is
    # one too (_fit_core), so every iteration leaves room for it
    timing["count"] = timing["eval"]
    history = [f0]
    # scipy evaluates the start once more: it gets this evaluation, which saves a
    # full pass over the data at every fit start
    start = {"z": z0.copy(), "fg": (f0, g0)}

    def objective(y):
        fg = start.pop("fg", None)
        if fg is not None and np.array_equal(y, start["z"]):
            return fg[0], fg[1].copy()
        return fun(y)

    state = {"status": "max_iter", "n_iter": 0, "x": z0, "t": clock()}

    def callback(intermediate_result):
        state["n_iter"] += 1
        state["x"] = intermediate_result.x.copy()
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
        # no room for another iteration as long as this one and the count after
        # the loop: stop (see _sweep_loop)
        now = clock()
        took, state["t"] = now - state["t"], now
        if deadline is not None and not deadline.leaves_room_for(
            took + timing["count"]
        ):
            state["status"] = "time_limit"
            raise StopIteration

    options = {"maxiter": max_iter, "ftol": tol, "gtol": 0.0, "maxcor": _LBFGS_MEMORY}
    try:
        res = scipy.optimize.minimize(
            objective,
            z0,
            jac=True,
            method="L-BFGS-B",
            callback=callback,
            options=options,
        )
        z = res.x
        if state["status"] == "max_iter" and res.status == 0:
            state["status"] = "tol"
    except _Expired:  # inside an iteration: back to the last accepted iterate
        z, state["status"] = state["x"], "time_limit"
    U, V, mu = (a.copy() if a is not None else None for a in unpack(z))
    if kind == "global":
        mu = _project_offset(mu, tau)
    return U, V, mu, history, state["n_iter"], state["status"], start_wrong
