"""Alternating solvers of L-PCA: damped Newton and Schein et al.'s bound updates.

Given one factor, the rows of the other are independent problems: a half step
updates all of them in fixed chunks of rows (:func:`_newton_block`,
:func:`_mm_block`), a sweep is a half step on ``U`` and one on ``[V, mu]`` (plus the
global offset), and :func:`_sweep_loop` runs sweeps until a stopping rule holds.
The per-row logistic regressions of ``lpca_transform`` (:func:`_transform_loop`)
use the same Newton kernel.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from sklearn_rrank._lpca._model import (
    _buffer,
    _chunks,
    _count_unsafe,
    _eval_chunk,
    _evaluate,
    _Expired,
    _grad_hess_terms,
    _gram_batched,
    _gram_chunks,
    _is_global,
    _loss_terms,
    _mm_weights,
    _objective,
    _pair_index,
    _penalty_rows,
    _project_offset,
    _run_chunks,
    _split_bias,
    _stop_delta,
    _with_bias,
)

# Armijo constant and maximal number of step halvings in the backtracking line search
_ARMIJO = 1e-4
_MAX_HALVINGS = 30
# ridge added to the Newton systems when alpha = 0
_MIN_RIDGE = 1e-10
# chunks of a Newton block whose parts are held at once (each part a vector over
# the other side of the matrix)
_REDUCE_GROUP = 64


@dataclass(frozen=True, eq=False)
class _HalfStep:
    """What every chunk of one Newton half step reads (:func:`_newton_chunk`).

    Attributes
    ----------
    P : ndarray of shape (rows, p)
        The parameters updated (``U``, or ``[V, mu]``), in the sweeps' dtype.
    F : ndarray of shape (cols, p)
        The fixed factor.
    offset : ndarray of shape (cols,), 0-d array or None
        Added to every row's logits.
    q, w, n_missing
        The signs, observation weights and missing entries per row of this side
        (:meth:`_Data.side`).
    alpha : float
        L2 penalty.
    pairs : tuple
        ``(a, b, FF)``: the upper-triangle indices and the pair products of ``F``.
    delta : float or None
        Stop margin of the unsafe count; None: not counted.
    row_loss : ndarray of shape (rows,)
        The current data losses of all rows.
    """

    P: np.ndarray
    F: np.ndarray
    offset: object
    q: object
    w: object
    n_missing: np.ndarray
    alpha: float
    pairs: tuple
    delta: object
    row_loss: np.ndarray


def _newton_chunk(rows, step):
    """One damped Newton step for the rows ``rows`` of ``step`` (a :class:`_HalfStep`).

    The objective of row ``i`` is ``sum_j w_ij l(theta_ij) + alpha / 2 |P_i|^2`` with
    ``theta_i = F P_i + offset``; the rows are independent problems. All ``p x p``
    Newton systems of the chunk are solved in one batched call (in float64); the
    step is then halved per row until the Armijo rule holds, and a row whose step
    never passes keeps its parameters, so no row objective increases. The chunk's
    ``theta``, gradient, curvature and loss work in per-thread buffers of ``P``'s
    dtype (float64, or float32 in the float32 mode).

    Returns the new rows of ``P``, their data losses, the column sums of the new
    entry losses, and the number of unsafe entries (see :func:`_count_unsafe`) at
    the *old* parameters (-1 if ``delta`` is None).
    """
    P, F, offset, alpha = step.P, step.F, step.offset, step.alpha
    q, w, n_missing, delta = step.q, step.w, step.n_missing, step.delta
    pairs, row_loss = step.pairs, step.row_loss
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


def _newton_block(
    parallel, P, F, offset, data, transpose, alpha, delta, row_loss, deadline=None
):
    """Damped Newton step on every row of ``P``; see :func:`_newton_chunk`.

    Returns the new ``P``, the new data losses of its rows, the data losses of the
    other side (columns of the chunks) and the unsafe count at the old ``P``.
    Raises :class:`~sklearn_rrank._lpca._model._Expired` if a limited ``deadline``
    passes (checked as in :func:`~sklearn_rrank._lpca._model._run_chunks`).
    """
    q, w, n_missing = data.side(transpose)
    chunks = _gram_chunks(P.shape[0], F.shape[0], data.kernels)
    a, b = _pair_index(P.shape[1])
    pairs = (a, b, F[:, a] * F[:, b])
    step = _HalfStep(P, F, offset, q, w, n_missing, alpha, pairs, delta, row_loss)
    checks = dict(deadline=deadline, group=data.kernels.check_group)
    newP, new_loss, other_loss, n_unsafe = [], [], None, 0
    # each part holds a vector over the other side: the chunks run in groups whose
    # parts are summed (in chunk order) before the next group, so that the
    # vectors of all chunks of a tall matrix are never held at once
    for g in range(0, len(chunks), _REDUCE_GROUP):
        group = chunks[g : g + _REDUCE_GROUP]
        for r in _run_chunks(parallel, _newton_chunk, group, step, **checks):
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


def _mm_block(parallel, P, F, offset, data, transpose, alpha, deadline=None):
    """Schein et al. bound update of every row of ``P``; see :func:`_mm_chunk`."""
    q, w, _ = data.side(transpose)
    chunks = _gram_chunks(P.shape[0], F.shape[0], data.kernels)
    args = (P, F, offset, q, w, alpha)
    checks = dict(deadline=deadline, group=data.kernels.check_group)
    parts = _run_chunks(parallel, _mm_chunk, chunks, *args, **checks)
    return np.concatenate(parts, axis=0)


def _offset_chunk(rows, U, V, b, q, w):
    theta = U[rows] @ V.T
    theta += b
    g, h = _grad_hess_terms(theta, q[rows])
    if w is not None:
        wc = w[rows]  # one block: boost weights are formed per read
        g *= wc
        h *= wc
    return g.sum(), h.sum()


def _offset_loss_chunk(rows, U, V, b, q, w):
    theta = U[rows] @ V.T
    theta += b
    terms = _loss_terms(theta, q[rows])
    if w is not None:
        terms *= w[rows]
    return terms.sum(axis=1)


def _offset_step(parallel, U, V, b, data, alpha, tau, row_loss, deadline=None):
    """Damped, projected Newton step on the global offset ``b`` (U and V fixed).

    The step is halved until the projected Armijo rule holds; if it never does,
    ``b`` is kept. Returns the new ``b`` and the per-row data losses there.
    """
    chunks = _chunks(*data.shape, data.kernels)
    args = (U, V, b, data.q, data.w)
    checks = dict(deadline=deadline, group=data.kernels.check_group)
    parts = _run_chunks(parallel, _offset_chunk, chunks, *args, **checks)
    grad = sum(r[0] for r in parts) + alpha * float(b)
    hess = sum(r[1] for r in parts) + max(alpha, _MIN_RIDGE)
    f0 = float(row_loss.sum()) + 0.5 * alpha * float(b) ** 2
    step = 1.0
    for _ in range(_MAX_HALVINGS):
        trial = _project_offset(float(b) - step * grad / hess, tau)
        change = float(trial) - float(b)
        if change == 0.0:
            break
        args = (U, V, trial, data.q, data.w)
        parts = _run_chunks(parallel, _offset_loss_chunk, chunks, *args, **checks)
        losses = np.concatenate(parts)
        ft = float(losses.sum()) + 0.5 * alpha * float(trial) ** 2
        if ft <= f0 + _ARMIJO * grad * change:
            return trial, losses
        step *= 0.5
    return b, row_loss


def _offset_mm_step(parallel, U, V, b, data, alpha, tau, deadline=None):
    """Schein-style bound update of the global offset (closed form, projected)."""
    chunks = _chunks(*data.shape, data.kernels)

    def chunk(rows):
        theta = U[rows] @ V.T
        theta += b
        T = _mm_weights(theta)
        q = data.q[rows]
        if data.w is not None:
            wc = data.w[rows]  # one block: boost weights are formed per read
            T *= wc
            q = q * wc
        return float(np.sum(q) - np.sum(T * theta)), float(T.sum())

    parts = _run_chunks(
        parallel, chunk, chunks, deadline=deadline, group=data.kernels.check_group
    )
    num = sum(r[0] for r in parts) + float(b) * sum(r[1] for r in parts)
    den = sum(r[1] for r in parts) + max(2.0 * alpha, _MIN_RIDGE)
    return _project_offset(num / den, tau)


# ---------------------------------------------------------------------------------
# the fitting loops: one sweep loop shared by the alternating solvers
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class StallRule:
    """When a fit's rounding has stalled.

    The entries wrong or within the stop margin (the unsafe count) have stalled
    when, over the last ``window`` sweeps, they have dropped neither by
    ``fraction`` of their count at the window's start nor by ``rate`` times the
    observed entries: more sweeps of the same fit will not make it exact.

    Attributes
    ----------
    window : int
        Sweeps.
    fraction : float
        Of the count at the window's start.
    rate : float, default=0.0
        Of the observed entries.
    """

    window: int
    fraction: float
    rate: float = 0.0

    def scaled(self, factor):
        """The rule over ``factor`` times the sweeps (L-BFGS iterations do less)."""
        return replace(self, window=self.window * factor)

    def stalled(self, counts, n_observed):
        """Whether ``counts`` (the unsafe count after each sweep) have stalled."""
        if len(counts) <= self.window:
            return False
        window = counts[-self.window - 1 :]
        drop = window[0] - min(window[1:])
        floor = max(self.fraction * window[0], self.rate * n_observed)
        return drop < floor or drop <= 0


@dataclass(frozen=True, eq=False)
class FitLoop:
    """How the loop of one fit runs and stops (:func:`_sweep_loop`, L-BFGS's).

    Attributes
    ----------
    max_iter : int
        Sweeps (L-BFGS: iterations).
    tol : float
        Relative objective decrease below which the fit has converged.
    stop_when_exact : bool
        Stop once no observed entry is wrong or within the stop margin.
    stall : StallRule or None, default=None
        When the rounding has stalled; None: never.
    deadline : Deadline or None, default=None
        The fit's :class:`~sklearn_rrank._search._skeleton.Deadline`.
    verbose : int, default=0
        One line per sweep if ``>= 2``.
    tick : callable or None, default=None
        ``tick(sweep_number, n_unsafe)`` after every sweep (progress reports).
    unsafe_history : list, default=[]
        Receives the unsafe count of the start and of every sweep.
    """

    max_iter: int
    tol: float
    stop_when_exact: bool
    stall: StallRule | None = None
    deadline: object = None
    verbose: int = 0
    tick: Callable | None = None
    unsafe_history: list = field(default_factory=list)

    @classmethod
    def of(cls, options, **kwargs):
        """The loop of an :class:`~sklearn_rrank._lpca._options.LPCAOptions`."""
        return cls(options.max_iter, options.tol, options.stop_when_exact, **kwargs)


def _stalled(counts, stall, n_observed):
    """``stall.stalled(counts, n_observed)``; False without a rule (None)."""
    return stall is not None and stall.stalled(counts, n_observed)


class _NewtonSweep:
    """One damped alternating Newton sweep: all rows of U, then of [V, mu] (+ b).

    Data losses are carried along per row and per column, so each half step costs
    one gradient/Hessian pass and one loss pass (plus the halvings of the rows that
    need them). Each half step also reports the entry counts of the state it starts
    from, so the exactness check is free and done twice per sweep. A limited
    ``deadline`` is checked between the chunks of the passes (the start's
    evaluation excepted); once it has passed a sweep raises
    :class:`~sklearn_rrank._lpca._model._Expired` and changes no state.
    ``pass_seconds`` is the time of the start's evaluation on the deadline's
    clock: one pass over the data, as long as the count that ends a fit.
    """

    def __init__(self, data, U, V, mu, *, alpha, tau, parallel, deadline=None):
        self.data, self.alpha, self.tau, self.parallel = data, alpha, tau, parallel
        self.deadline = deadline
        clock = _clock(deadline)
        began = clock()
        self.row_loss, n_wrong, n_unsafe = _evaluate(parallel, U, V, mu, data, tau)
        self.pass_seconds = clock() - began
        self.start = (_objective(self.row_loss, U, V, mu, alpha), n_unsafe)
        self.start_wrong = n_wrong  # the wrong entries of the start (see _fit_core)

    def __call__(self, U, V, mu, stop_when_exact):
        data, alpha, tau, parallel = self.data, self.alpha, self.tau, self.parallel
        deadline = self.deadline
        if U.shape[1]:
            delta = _stop_delta(U, V, mu, tau)
            U_new, _, col_loss, n_unsafe = _newton_block(
                parallel, U, V, mu, data, False, alpha, delta, self.row_loss, deadline
            )
            if stop_when_exact and n_unsafe == 0:
                return U, V, mu, _objective(self.row_loss, U, V, mu, alpha), 0
            U = U_new
        else:
            col_loss, _, _ = _evaluate(
                parallel, U, V, mu, data, tau, transpose=True, deadline=deadline
            )
        delta = _stop_delta(U, V, mu, tau)
        P, F, offset = _with_bias(U, V, mu)
        P_new, _, row_loss, n_unsafe = _newton_block(
            parallel, P, F, offset, data, True, alpha, delta, col_loss, deadline
        )
        if stop_when_exact and n_unsafe == 0:
            return U, V, mu, _objective(col_loss, U, V, mu, alpha), 0
        V, mu = _split_bias(P_new, mu)
        if _is_global(mu):
            mu, row_loss = _offset_step(
                parallel, U, V, mu, data, alpha, tau, row_loss, deadline
            )
        self.row_loss = row_loss
        return U, V, mu, _objective(row_loss, U, V, mu, alpha), n_unsafe


class _MMSweep:
    """Schein et al.'s alternating bound updates (U, then [V, mu]); monotone.

    ``deadline`` and ``pass_seconds`` as in :class:`_NewtonSweep`.
    """

    def __init__(self, data, U, V, mu, *, alpha, tau, parallel, deadline=None):
        self.data, self.alpha, self.tau, self.parallel = data, alpha, tau, parallel
        self.deadline = deadline
        clock = _clock(deadline)
        began = clock()
        losses, n_wrong, n_unsafe = _evaluate(parallel, U, V, mu, data, tau)
        self.pass_seconds = clock() - began
        self.start = (_objective(losses, U, V, mu, alpha), n_unsafe)
        self.start_wrong = n_wrong

    def __call__(self, U, V, mu, stop_when_exact):
        data, alpha, tau, parallel = self.data, self.alpha, self.tau, self.parallel
        deadline = self.deadline
        if U.shape[1]:
            U = _mm_block(parallel, U, V, mu, data, False, alpha, deadline)
        P, F, offset = _with_bias(U, V, mu)
        P = _mm_block(parallel, P, F, offset, data, True, alpha, deadline)
        V, mu = _split_bias(P, mu)
        if _is_global(mu):
            mu = _offset_mm_step(parallel, U, V, mu, data, alpha, tau, deadline)
        losses, _, n_unsafe = _evaluate(
            parallel, U, V, mu, data, tau, deadline=deadline
        )
        return U, V, mu, _objective(losses, U, V, mu, alpha), n_unsafe


def _clock(deadline):
    """The clock that times sweeps and passes: the deadline's (a test's fake clock
    needs no sleep), else :func:`time.monotonic`."""
    return time.monotonic if deadline is None else deadline.now


def _sweep_loop(sweep, U, V, mu, loop, n_observed):
    """Run ``sweep`` until a stopping rule of ``loop`` (a :class:`FitLoop`) holds.

    The loop of every sweep solver. Rules, checked after each sweep in this
    order: ``"exact"`` (with ``stop_when_exact``, no observed entry wrong or
    within the stop margin), ``"tol"`` (relative objective decrease below
    ``tol``), ``"stalled"`` (the ``stall`` rule over ``n_observed`` entries),
    ``"time_limit"`` (the deadline leaves no room for another sweep as long as the
    last one and the final count of the fit, one pass as long as the start's
    evaluation, ``sweep.pass_seconds``; :meth:`Deadline.leaves_room_for`), else
    ``"max_iter"``. A sweep that
    the deadline interrupts (it raises
    :class:`~sklearn_rrank._lpca._model._Expired`, see :class:`_NewtonSweep`)
    also ends with ``"time_limit"``, at the state that sweep started from.
    ``loop.tick(sweep_number, n_unsafe)`` is called after every sweep (progress
    reports). The unsafe counts are appended to ``loop.unsafe_history``.

    Returns ``(U, V, mu, history, n_iter, status)``: ``history`` the objective of
    the start and after each sweep.
    """
    max_iter, tol, stall = loop.max_iter, loop.tol, loop.stall
    stop_when_exact, deadline = loop.stop_when_exact, loop.deadline
    verbose, tick, unsafe_history = loop.verbose, loop.tick, loop.unsafe_history
    clock = _clock(deadline)
    objective, n_unsafe = sweep.start
    history = [objective]
    unsafe_history.append(n_unsafe)
    if stop_when_exact and n_unsafe == 0:
        return U, V, mu, history, 0, "exact"
    status, n_iter = "max_iter", 0
    for it in range(1, max_iter + 1):
        began = clock()
        try:
            U, V, mu, objective, n_unsafe = sweep(U, V, mu, stop_when_exact)
        except _Expired:
            status = "time_limit"
            break
        took = clock() - began
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
        # the fit's count of its last state follows the loop: room for it too
        if deadline is not None and not deadline.leaves_room_for(
            took + sweep.pass_seconds
        ):
            status = "time_limit"
            break
    return U, V, mu, history, n_iter, status


def _transform_loop(parallel, data, P, F, offset, alpha, max_iter, tol, bound=None):
    """Newton steps on all rows of ``P`` (``F`` fixed) until the objective stalls."""
    q, w, n_missing = data.side(False)
    chunks = _gram_chunks(P.shape[0], F.shape[0], data.kernels)
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
