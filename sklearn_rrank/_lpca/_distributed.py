"""Data-parallel L-PCA on a ``dask.distributed`` cluster.

The damped alternating Newton solver of :mod:`sklearn_rrank._lpca._newton` with the
rows of the data spread over Dask workers. Every worker holds a few blocks of rows of
``X`` (the pattern of the ones, CSR) and the same rows of the latent factor ``U``; both
are shipped once, when the fit starts, and stay on the worker (one Dask actor per
block).
Per sweep the client sends the small right factor ``[V, mu]`` (n x (p + 1)) to every
block and gets back sums over the block's rows:

* the ``U`` half step runs on the workers, row by row, with the serial kernel
  (:func:`~sklearn_rrank._lpca._newton._newton_block`); the blocks return the column
  losses and the count of unsafe entries;
* for the ``[V, mu]`` half step the blocks return their shares of the column
  gradients (n x (p + 1)) and of the column Hessians (n x (p + 1)(p + 2) / 2, the
  upper triangles); the client adds them up, solves the n small Newton systems and
  runs the per-column line search, which asks the blocks for column losses at the
  trial steps;
* the global offset, the objective, the stop checks, the error count of the packaged
  factors and the deviance are sums over the blocks as well.

The chunks of rows inside a block are the serial solver's chunks (blocks start at
chunk boundaries), so the ``U`` half step computes exactly what the serial one does
from the same ``V``; sums over all rows (column gradients, Hessians and losses) are
added in another order than in the serial solver, so the two fits agree to rounding
error per sweep, not bit for bit (see :func:`lpca_fit_distributed`).
"""

import asyncio
import math
import time
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import (
    HasMethods,
    Interval,
    StrOptions,
    validate_params,
)

from sklearn_rrank._core._validation import check_binary_matrix, check_tau
from sklearn_rrank._lpca._distributed_block import _LPCABlock, _RowBlock
from sklearn_rrank._lpca._fit import (
    _FIT_STALL,
    DEFAULT_ALPHA,
    FIT_MAX_ITER,
    FIT_TOL,
    _fit_message,
    _fit_result,
    _latent_factors,
    _model_kind,
)
from sklearn_rrank._lpca._model import (
    _gram_rows,
    _is_global,
    _offset_sign,
    _package,
    _pair_index,
    _penalty_rows,
    _project_offset,
    _split_bias,
    _stop_delta,
)
from sklearn_rrank._lpca._newton import (
    _ARMIJO,
    _MAX_HALVINGS,
    _MIN_RIDGE,
    FitLoop,
    _sweep_loop,
)
from sklearn_rrank._lpca._options import KERNELS, LPCAOptions
from sklearn_rrank._lpca._start import _GLOBAL_INIT, _INIT_SCALE, _init_from_factors
from sklearn_rrank._search._skeleton import Deadline

__all__ = ["lpca_fit_distributed"]

# oversampling and subspace iterations of the distributed randomized SVD warm start
# (the serial warm start uses scikit-learn's randomized_svd with the same numbers)
_SVD_OVERSAMPLES = 10
_SVD_ITER = 7

# seconds between the client's checks that the workers holding the blocks are still
# in the cluster: an actor whose worker died never answers
_POLL_SECONDS = 2.0
# how long a fit waits for a worker to join a cluster that has none at its start
_WORKER_WAIT = 30.0

# what ``result(timeout=...)`` of a Dask (actor) future raises: distributed's
# TimeoutError, asyncio's, which is the builtin one from Python 3.11 on
_TIMEOUTS = (TimeoutError, asyncio.TimeoutError)

# statuses of an actor's future once the scheduler has given the actor up (its
# worker left the cluster: "Worker holding Actor was lost")
_LOST = ("error", "lost", "cancelled")

# checks of the workers, in ``_POLL_SECONDS``, before an OSError of a call is raised
_OS_ERROR_CHECKS = 10


def _largest(rows):
    """The row of largest norm among the candidates ``rows`` (1 x p arrays)."""
    return max(rows, key=lambda t: float(_penalty_rows(t).max(initial=0)))


class _Blocks:
    """The client's handle on the row blocks: calls every actor and waits.

    ``workers[i]`` is the address of the worker holding block ``i`` and
    ``handles[i]`` the future of its actor. The results are awaited in slices of
    ``_POLL_SECONDS``; between two slices the blocks not yet answered are checked
    (see :func:`_wait_all`), so the fit stops with a RuntimeError, instead of
    waiting for ever, when a worker holding a block dies or restarts.
    """

    def __init__(self, actors, client, workers, handles):
        self.actors, self.client = actors, client
        self.workers, self.handles = workers, handles

    def call(self, name, *args):
        for i, handle in enumerate(self.handles):  # local: no call to the scheduler
            if handle.status in _LOST:
                raise _lost_block(i, self.workers[i])
        futures = [getattr(a, name)(*args) for a in self.actors]
        return _wait_all(futures, self.client, self.workers, self.handles)

    def total(self, name, *args):
        """Sum of the (array or number) results of every block."""
        return _add(self.call(name, *args))


def _lost_block(i, address, setup=False):
    """The error of a fit whose row block ``i`` lost its worker ``address``."""
    what = "chosen for" if setup else "holding"
    return RuntimeError(
        f"The Dask worker {what} row block {i} ({address}) died or restarted (was "
        "its memory limit too small?); the distributed L-PCA fit cannot go on "
        "without the block's rows."
    )


def _live_workers(client):
    """The addresses of the client's workers, as the scheduler knows them now."""
    try:  # recent clients list only the first few workers unless asked for all
        info = client.scheduler_info(n_workers=-1)
    except TypeError:
        info = client.scheduler_info()
    return set(info["workers"])


def _wait_all(futures, client, workers, handles=None):
    """The results of ``futures`` (Dask futures or actor futures), in order.

    Never waits for ever on a lost worker: each future is awaited in slices of
    ``_POLL_SECONDS`` and, after a slice without an answer (or an OSError, which
    an actor call raises when it cannot reach its worker), a RuntimeError is raised
    if the worker ``workers[i]`` of a future not yet done has left the cluster or,
    with ``handles`` (the actors' futures), its actor was given up by the
    scheduler. A healthy call is waited for as long as it takes.
    """
    out = []
    for i, f in enumerate(futures):
        while True:
            try:
                out.append(f.result(timeout=_POLL_SECONDS))
                break
            except _TIMEOUTS:
                lost = _lost_worker(futures, i, client, workers, handles)
                if lost is not None:
                    raise lost from None
            except OSError as exc:  # e.g. "Unable to contact Actor's worker"
                # the scheduler may drop the worker a moment after its comms broke
                for _ in range(_OS_ERROR_CHECKS):
                    lost = _lost_worker(futures, i, client, workers, handles)
                    if lost is not None:
                        raise lost from exc
                    time.sleep(_POLL_SECONDS / _OS_ERROR_CHECKS)
                raise
    return out


def _lost_worker(futures, first, client, workers, handles):
    """The RuntimeError to raise if the worker of ``futures[first]`` or of a later
    future not yet done has left the cluster or, with ``handles``, its actor was
    given up by the scheduler; None if they are all still there."""
    pending = [first] + [
        j for j in range(first + 1, len(futures)) if not futures[j].done()
    ]
    if handles is not None:  # local: no call to the scheduler
        for j in pending:
            if handles[j].status in _LOST:
                return _lost_block(j, workers[j])
    live = _live_workers(client)
    for j in pending:
        if workers[j] not in live:
            return _lost_block(j, workers[j], setup=handles is None)
    return None


def _add(parts):
    """Sum of numbers, arrays or tuples of them, added in block order."""
    if isinstance(parts[0], tuple):
        return tuple(_add(list(col)) for col in zip(*parts, strict=True))
    out = parts[0]
    for r in parts[1:]:
        out = out + r
    return out


def _assign_blocks(m, n, n_blocks):
    """Row ranges of the blocks: runs of whole chunks of the serial warm start
    (:func:`~sklearn_rrank._lpca._model._chunks`) and of the serial ``U`` half step
    (:func:`~sklearn_rrank._lpca._model._gram_chunks`)."""
    size = math.lcm(max(1, KERNELS.chunk_entries // max(n, 1)), _gram_rows(n))
    n_chunks = -(-m // size)
    n_blocks = max(1, min(n_blocks, n_chunks))
    bounds = (np.arange(n_blocks + 1) * n_chunks // n_blocks) * size
    bounds[-1] = m
    return [(int(bounds[i]), int(bounds[i + 1])) for i in range(n_blocks)]


def _P_of(V, mu):
    """``(P, offset)`` of the column half step (see ``_lpca_model._with_bias``)."""
    if mu is None or _is_global(mu):
        return V, mu
    return np.hstack([V, mu[:, None]]), None


class _DistributedNewtonSweep:
    """:class:`~sklearn_rrank._lpca._newton._NewtonSweep`, ``U`` and ``X`` on workers.

    ``__call__`` takes and returns the state like the serial sweep (``U`` is this
    object: the rows live on the workers).
    """

    def __init__(self, blocks, V, mu, *, alpha, tau, stats):
        self.blocks, self.alpha, self.tau = blocks, alpha, tau
        self.usq, self.top = stats
        delta = _stop_delta(self.top, V, mu, tau)
        began = time.monotonic()
        parts = blocks.call("evaluate", V, mu, delta)
        # one pass over the blocks, as long as the count of "finish" after the loop
        self.pass_seconds = time.monotonic() - began
        self.loss = sum(r[0] for r in parts)
        self.start = (self._objective(self.loss, V, mu), sum(r[2] for r in parts))

    def _objective(self, loss, V, mu):
        extra = float(np.sum(V * V, dtype=np.float64))
        if mu is not None:
            extra += float(np.sum(mu * mu))
        return float(loss) + 0.5 * self.alpha * (self.usq + extra)

    def __call__(self, U, V, mu, stop_when_exact):
        blocks, alpha, tau = self.blocks, self.alpha, self.tau
        p = self.top.shape[1]
        if p:
            delta = _stop_delta(self.top, V, mu, tau)
            parts = blocks.call("u_step", V, mu, alpha, delta)
            n_unsafe = sum(r[1] for r in parts)
            if stop_when_exact and n_unsafe == 0:
                return U, V, mu, self._objective(self.loss, V, mu), 0
            col_loss = _add([r[0] for r in parts])
            self.usq = sum(r[2] for r in parts)
            self.top = _largest([r[3] for r in parts])
        else:
            col_loss = blocks.total("col_losses", V, mu)
        delta = _stop_delta(self.top, V, mu, tau)
        P, offset = _P_of(V, mu)
        P_new, row_loss, n_unsafe = self._column_step(
            P, offset, delta, col_loss, stop_when_exact
        )
        if P_new is None:
            return U, V, mu, self._objective(col_loss.sum(), V, mu), 0
        V, mu = _split_bias(P_new, mu)
        if _is_global(mu):
            mu, row_loss = self._offset_step(V, mu, row_loss)
        self.loss = row_loss
        return U, V, mu, self._objective(row_loss, V, mu), n_unsafe

    def _column_step(self, P, offset, delta, col_loss, stop_when_exact):
        """:func:`~sklearn_rrank._lpca._newton._newton_chunk` for all columns at once,
        with the sums over rows gathered from the blocks.

        Returns ``(P_new, data loss, n_unsafe)``; ``P_new`` is None when no entry
        is unsafe at ``P`` and ``stop_when_exact`` (the caller stops there).
        """
        blocks, alpha = self.blocks, self.alpha
        n, p1 = P.shape
        G, Hf, n_unsafe = blocks.total("v_grad", P, offset, delta)
        if n_unsafe == 0 and stop_when_exact:
            return None, None, 0
        a, b = _pair_index(p1)
        f0 = col_loss + 0.5 * alpha * _penalty_rows(P)
        grad = G + alpha * P
        H = np.empty((n, p1, p1))
        H[:, a, b] = Hf
        H[:, b, a] = Hf
        diag = np.arange(p1)
        H[:, diag, diag] += max(alpha, _MIN_RIDGE)
        D = -np.linalg.solve(H, grad[:, :, None])[:, :, 0]
        slope = np.einsum("ij,ij->i", grad, D)
        movable = slope < -1e-15 * (np.abs(f0) + 1.0)
        new_loss = blocks.total("v_trial", P, D, offset)
        trial = P + D
        ok = movable & (
            new_loss + 0.5 * alpha * _penalty_rows(trial) <= f0 + _ARMIJO * slope
        )
        if ok.all():
            # the blocks kept the row losses of the full step: nothing to send
            return trial, blocks.total("v_commit", None, None, None, None), n_unsafe
        newP = np.where(ok[:, None], trial, P)
        steps = np.where(ok, 1.0, 0.0)
        active = np.flatnonzero(movable & ~ok)
        step = 0.5
        for _ in range(_MAX_HALVINGS):
            if active.size == 0:
                break
            trial = P[active] + step * D[active]
            tl = blocks.total("v_losses", P[active], D[active], active, step, offset)
            ft = tl + 0.5 * alpha * _penalty_rows(trial)
            good = ft <= f0[active] + _ARMIJO * step * slope[active]
            acc = active[good]
            newP[acc] = trial[good]
            steps[acc] = step
            active = active[~good]
            step *= 0.5
        return newP, blocks.total("v_commit", P, D, steps, offset), n_unsafe

    def _offset_step(self, V, b, row_loss):
        """:func:`~sklearn_rrank._lpca._newton._offset_step`, sums over the blocks."""
        alpha, tau = self.alpha, self.tau
        g, h = self.blocks.total("offset_grad", V, b)
        grad = g + alpha * float(b)
        hess = h + max(alpha, _MIN_RIDGE)
        f0 = float(row_loss) + 0.5 * alpha * float(b) ** 2
        step = 1.0
        for _ in range(_MAX_HALVINGS):
            trial = _project_offset(float(b) - step * grad / hess, tau)
            change = float(trial) - float(b)
            if change == 0.0:
                break
            loss = self.blocks.total("offset_losses", V, trial)
            if loss + 0.5 * alpha * float(trial) ** 2 <= f0 + _ARMIJO * grad * change:
                self.blocks.call("offset_commit")
                return trial, loss
            step *= 0.5
        return b, row_loss


def _svd_start(blocks, n, m, p, kind, tau, rng, col_counts):
    """Distributed randomized SVD warm start of ``2 (2X - 1)`` (centred as in
    :func:`~sklearn_rrank._lpca._start._svd_init`); ``U`` is set on the blocks.

    ``Z = 4 X - 1 c^T`` with ``c = 2 + mu`` is never formed: the blocks apply it
    to ``n x l`` matrices through the sparse ``X``. Returns ``V, mu`` and the stats
    of ``U``.
    """
    mu = None
    if kind == "column":
        mu = _INIT_SCALE * (2.0 * col_counts - m) / max(m, 1)
    elif kind == "global":
        mu = _project_offset(_GLOBAL_INIT * _offset_sign(tau), tau)
    c = np.full(n, _INIT_SCALE) + (0.0 if mu is None else mu)
    seed = int(rng.randint(2**31))
    if p == 0:
        return np.zeros((n, 0)), mu, None
    ell = min(p + _SVD_OVERSAMPLES, n, m)
    Q, _ = np.linalg.qr(rng.standard_normal((n, ell)))
    for _ in range(_SVD_ITER):
        Q, _ = np.linalg.qr(blocks.total("ztzq", Q, c))
    evals, W = np.linalg.eigh(blocks.total("gram", Q, c))
    order = np.argsort(evals)[::-1][:p]
    s = np.sqrt(np.maximum(evals[order], 0.0))
    W = W[:, order]
    small = s <= 1e-8 * max(s[0], 1.0) if s.size else np.zeros(0, bool)
    keep = ~small
    keep[s.size :] = False
    n_extra = p - int(keep.sum())
    root = np.sqrt(s[keep])
    M = W[:, keep] / root
    V = (Q @ W[:, keep]) * root
    if n_extra:
        V = np.hstack([V, 1e-2 * rng.standard_normal((n, n_extra))])
    return V, mu, (M, n_extra, seed)


def _null_deviance(n1, m):
    """Deviance of one Bernoulli probability per column (see ``lpca_deviances``)."""
    n0 = m - n1
    with np.errstate(divide="ignore", invalid="ignore"):
        prob = n1 / m
        loglik = np.where(n1 > 0, n1 * np.log(prob), 0.0) + np.where(
            n0 > 0, n0 * np.log1p(-prob), 0.0
        )
    return -2.0 * float(loglik.sum())


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "client": [HasMethods(["scatter", "submit", "scheduler_info"])],
        "tau": [Real],
        "fit_bias": ["boolean", StrOptions({"global"})],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "init": [tuple, list, None],
        "random_state": ["random_state"],
        "n_blocks": [Interval(Integral, 1, None, closed="left"), None],
        "verbose": ["verbose"],
        "stop_when_exact": ["boolean"],
        "time_limit": [Interval(Real, 0, None, closed="left"), None],
        "certify": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def lpca_fit_distributed(
    X,
    n_components,
    *,
    client,
    tau=0.5,
    fit_bias=True,
    alpha=DEFAULT_ALPHA,
    max_iter=FIT_MAX_ITER,
    tol=FIT_TOL,
    init=None,
    random_state=None,
    n_blocks=None,
    verbose=0,
    stop_when_exact=False,
    time_limit=None,
    certify=False,
):
    """Data-parallel logistic PCA on a ``dask.distributed`` cluster.

    The model, the objective, the solver (damped alternating Newton) and the
    returned factors are those of :func:`~sklearn_rrank._lpca._fit.lpca_fit` with
    ``solver="newton"``; the rows of ``X`` and of the latent factor ``U`` are split
    into blocks that live on the Dask workers for the whole fit.

    What is distributed: each block of rows of ``X`` (the CSR pattern of its ones)
    is sent to one worker once, when the fit starts, and kept there in a Dask actor
    with the same rows of ``U``. Per sweep the client broadcasts the right factor
    ``[V, mu]`` (``n_features x n_components`` floats) to every block; the blocks
    update their rows of ``U`` (the serial row kernel) and return per-column sums:
    losses, gradients (``n_features x n_components``) and the upper triangles of the
    Hessians (``n_features x n_components (n_components + 1) / 2``); the client solves
    the ``n_features`` small Newton systems and runs the line search, which asks the
    blocks for column losses. The warm start (a randomized SVD applied through the
    sparse blocks), the stop checks, the error count of the packaged factors and the
    deviance are sums over the blocks too. What is not: ``X`` is validated on the
    client, which also holds ``R`` and receives the final ``L``
    (``n_samples x n_components``).

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary data (0/1, no missing entries); dense input is converted to CSR
        before it is split, and only the CSR blocks are sent.
    n_components : int
        Number ``k >= 1`` of columns of ``L`` and ``R``, the bias column included.
    client : distributed.Client
        A client of a running Dask cluster (``Client("tcp://host:8786")`` or a
        ``LocalCluster``); its workers at call time receive the blocks.
    tau : float, default=0.5
        Rounding threshold of the returned factorization.
    fit_bias : bool or "global", default=True
        As in :func:`~sklearn_rrank._lpca._fit.lpca_fit`: a column bias (one of the
        ``n_components`` columns), no bias, or one scalar offset.
    alpha : float, default=1e-3
        L2 penalty on every parameter.
    max_iter : int, default=1000
        Maximal number of sweeps.
    tol : float, default=1e-6
        Stop when the objective decreases by less than ``tol`` times its value in a
        sweep; the fit also stops when the rounding stalls, as the serial fit does.
    init : tuple (L, R) or None, default=None
        Warm start in the returned format (see
        :func:`~sklearn_rrank._lpca._fit.lpca_fit`); ``L`` is split and sent with the
        blocks. None: a randomized SVD (``n_components + 10`` directions, 7
        subspace iterations) of the same centred matrix ``2 (2X - 1)`` as the serial
        warm start, computed on the blocks without forming it.
    random_state : int, RandomState instance or None, default=None
        Seed of the warm start.
    n_blocks : int or None, default=None
        Number of row blocks (at most the number of chunks of 2**18 entries);
        None: one per worker. Blocks are given to the workers in turn.
    verbose : int, default=0
        Print one line per sweep if ``verbose >= 2`` and a summary if ``>= 1``.
    stop_when_exact : bool, default=False
        Stop as soon as every entry is rounded correctly with the margin of
        :func:`~sklearn_rrank._lpca._fit.lpca_fit`.
    time_limit : float or None, default=None
        Stop after this many seconds from the call (the split, the shipping of
        the blocks and the warm start count; checked once per sweep, so at least
        one sweep runs, plus the final error count).
    certify : bool, default=False
        Also count, per block, the entries that
        :func:`~sklearn_rrank.certify_rounding`'s kernel does not certify for the
        returned factors (``info["n_uncertified"]``; 0 means certified). This
        densifies each block in batches of 2**23 entries.

    Returns
    -------
    result : FactorizationResult
        ``L`` of shape (n_samples, n_components) and ``R`` of shape (n_features,
        n_components), float64; ``n_iter`` sweeps; ``converged``; ``info`` with the
        keys of :func:`~sklearn_rrank._lpca._fit.lpca_fit` (``"n_errors"``,
        ``"loss"``, ``"status"``, ``"message"``, ``"deviance"``, ...) plus
        ``"n_blocks"``, ``"n_workers"``, ``"seconds_setup"`` (validation, split and
        shipping of the blocks, warm start), ``"seconds_per_sweep"`` and, with
        ``certify``, ``"n_uncertified"``.

    Raises
    ------
    ValueError
        If ``X`` is not binary or has missing entries, a parameter is out of range,
        ``init`` does not match, or the client has no workers (after waiting
        30 s for one to join).
    RuntimeError
        If a worker holding a block (or chosen for one) dies or restarts during the
        fit: the fit cannot go on without the block's rows. While it waits for the
        workers, the client checks every few seconds that they are still in the
        cluster, so a lost worker ends the fit instead of hanging it.

    See Also
    --------
    sklearn_rrank._lpca._fit.lpca_fit : The serial fit.

    Notes
    -----
    Equality with the serial fit: from the same start, the ``U`` half step of a
    block computes exactly what the serial one does for these rows, but the sums
    over rows that the column half step needs are added in another order (per
    block, then over blocks), so the factors differ from ``lpca_fit(...,
    solver="newton")`` by rounding errors that the alternating steps carry along;
    ``tests/test_lpca_distributed.py`` checks that, after 25 sweeps on planted
    matrices, the logits agree to a relative ``1e-6`` and the rounding errors are the
    same. Only float64 is supported (no ``dtype="float32"`` mode) and no missing
    entries.

    References
    ----------
    Neumann, Gemulla, Miettinen, "What You Will Gain By Rounding: Theory and
    Algorithms for Rounding Rank", ICDM 2016, Section 3 (L-PCA). A. I. Schein, L.
    K. Saul, L. H. Ungar, AISTATS 2003.

    Examples
    --------
    >>> from distributed import Client, LocalCluster
    >>> from sklearn_rrank import lpca_fit_distributed
    >>> from sklearn_rrank.datasets import make_rounding_rank_matrix
    >>> X = make_rounding_rank_matrix(200, 30, 3, random_state=0)
    >>> with (
    ...     LocalCluster(
    ...         n_workers=1,
    ...         threads_per_worker=1,
    ...         processes=False,  # an in-process worker: no nanny, no process to die
    ...         memory_limit=0,  # nor pausing on this whole process' memory
    ...         dashboard_address=None,
    ...     ) as cl,
    ...     Client(cl) as client,
    ... ):
    ...     res = lpca_fit_distributed(X, 4, client=client, random_state=0)
    >>> res.L.shape, res.R.shape, res.info["n_blocks"]
    ((200, 4), (30, 4), 1)
    """
    deadline = Deadline(time_limit)  # the budget counts from the door
    X = check_binary_matrix(X, accept_sparse=True, method="lpca")
    options = LPCAOptions(
        tau=check_tau(tau),
        fit_bias=fit_bias,
        solver="newton",
        alpha=float(alpha),
        max_iter=int(max_iter),
        tol=float(tol),
        stop_when_exact=bool(stop_when_exact),
    )
    return _lpca_fit_distributed(
        X,
        n_components,
        options,
        client=client,
        init=init,
        random_state=random_state,
        n_blocks=n_blocks,
        verbose=verbose,
        deadline=deadline,
        certify=certify,
    )


def _worker_addresses(client):
    """The sorted addresses of all the client's workers; raises if there are none
    after ``_WORKER_WAIT`` seconds."""
    workers = sorted(_live_workers(client))
    wait = getattr(client, "wait_for_workers", None)
    if not workers and wait is not None:
        # a cluster that is starting, or restarting a worker its nanny lost
        try:
            wait(1, timeout=_WORKER_WAIT)
        except _TIMEOUTS:
            pass
        workers = sorted(_live_workers(client))
    if not workers:
        raise ValueError(
            f"The Dask client has no workers (none joined within {_WORKER_WAIT:g} "
            "s): start some (cluster.scale(n)) or pass the client of a running "
            "cluster."
        )
    return workers


def _ship_blocks(client, X, ranges, workers, U0, p, column):
    """Send the row blocks of ``X`` (and of ``U0``) to the workers in turn.

    Each block becomes one :class:`_LPCABlock` actor on its worker. Returns the
    :class:`_Blocks` and every future to cancel when the fit ends.
    """
    futures, scattered, holders = [], [], []
    try:  # a lost worker raises a RuntimeError, not a KeyError or a wait for ever
        for i, (lo, hi) in enumerate(ranges):
            holders.append(workers[i % len(workers)])
            where = holders[-1:]
            block = _RowBlock(sp.csr_matrix(X[lo:hi]), lo)
            U = None if U0 is None else U0[lo:hi]
            try:
                fut, ufut = client.scatter([block, U], workers=where, hash=False)
            except (KeyError, OSError, *_TIMEOUTS) as exc:  # KeyError: it left
                if where[0] not in _live_workers(client):
                    raise _lost_block(i, where[0], setup=True) from exc
                raise
            scattered += [fut, ufut]
            futures.append(
                client.submit(
                    _LPCABlock,
                    fut,
                    ufut,
                    p,
                    column,
                    actor=True,
                    workers=where,
                    allow_other_workers=False,
                    pure=False,
                )
            )
        actors = _wait_all(futures, client, holders)
    except BaseException:
        client.cancel(futures + scattered)
        raise
    return _Blocks(actors, client, holders, futures), futures + scattered


def _fit_info(parts, history, status, col_counts, m, **fields):
    """The ``info`` of :func:`lpca_fit_distributed` from the blocks' ``finish``."""
    return {
        "solver_used": "newton",
        "loss": [float(v) for v in history],
        "status": status,
        "n_errors_logit": int(sum(r[1] for r in parts)) if status != "exact" else 0,
        "n_errors": int(sum(r[3] for r in parts)),
        "deviance": 2.0 * float(sum(r[2] for r in parts)),
        "null_deviance": _null_deviance(col_counts, m),
        "solver": "newton",
        "dtype": "float64",
        **fields,
    }


def _lpca_fit_distributed(
    X,
    n_components,
    options,
    *,
    client,
    init,
    random_state,
    n_blocks,
    verbose,
    deadline,
    certify,
):
    """:func:`lpca_fit_distributed` on validated data; no checks.

    ``options`` is an :class:`~sklearn_rrank._lpca._options.LPCAOptions` (its
    ``tau``, ``fit_bias``, ``alpha``, ``max_iter``, ``tol`` and
    ``stop_when_exact`` are read: the solver is Newton in float64); ``deadline``
    is the call's :class:`~sklearn_rrank._search._skeleton.Deadline`.
    """
    tau, fit_bias, alpha = options.tau, options.fit_bias, options.alpha
    max_iter, tol = options.max_iter, options.tol
    start = time.perf_counter()
    m, n = X.shape
    k = int(n_components)
    kind = _model_kind(fit_bias, tau)
    p = _latent_factors(k, kind)
    workers = _worker_addresses(client)
    U0 = V = mu = None
    if init is not None:
        if len(init) != 2:
            raise ValueError("init must be a pair (L, R) or None.")
        U0, V, mu = _init_from_factors(init[0], init[1], kind, tau, m, n, k)
    X = sp.csr_matrix(X)
    X.eliminate_zeros()  # the blocks read every stored entry as a one
    ranges = _assign_blocks(m, n, len(workers) if n_blocks is None else n_blocks)
    blocks, futures = _ship_blocks(client, X, ranges, workers, U0, p, kind == "column")
    try:
        col_counts = blocks.total("col_counts")
        if init is None:
            rng = check_random_state(random_state)
            V, mu, factor = _svd_start(blocks, n, m, p, kind, tau, rng, col_counts)
            if p:
                M, n_extra, seed = factor
                blocks.call("set_svd_factor", M, n_extra, seed)
        parts = blocks.call("stats")
        stats = (sum(r[0] for r in parts), _largest([r[1] for r in parts]))
        setup = time.perf_counter() - start
        sweep = _DistributedNewtonSweep(
            blocks, V, mu, alpha=alpha, tau=tau, stats=stats
        )
        loop_start = time.perf_counter()
        loop = FitLoop.of(options, stall=_FIT_STALL, deadline=deadline, verbose=verbose)
        _, V, mu, history, n_iter, status = _sweep_loop(
            sweep, sweep, V, mu, loop, m * n
        )
        loop_seconds = time.perf_counter() - loop_start
        R = _package(np.zeros((1, p)), V, mu, tau)[1]
        Rt = np.ascontiguousarray(R.T)
        parts = blocks.call(
            "finish", V, mu, tau, Rt, _stop_delta(sweep.top, V, mu, tau), certify
        )
    finally:
        del blocks
        client.cancel(futures)
    info = _fit_info(
        parts,
        history,
        status,
        col_counts,
        m,
        alpha=alpha,
        fit_bias=fit_bias if kind == "global" else bool(fit_bias),
        n_latent=p,
        n_blocks=len(ranges),
        n_workers=len(workers),
        seconds_setup=setup,
        seconds_per_sweep=loop_seconds / max(n_iter, 1),
        seconds=time.perf_counter() - start,
    )
    if certify:
        info["n_uncertified"] = int(sum(r[4] for r in parts))
    if kind == "global":
        info["offset"] = float(mu)
    info["message"] = _fit_message(info, max_iter, tol)
    if verbose:
        print(
            f"[lpca-dask] k={k}: {n_iter} sweeps on {len(ranges)} blocks, status "
            f"{status}, {info['n_errors']} wrong entries, {info['seconds']:.2f}s"
        )
    return _fit_result(np.vstack([r[0] for r in parts]), R, n_iter, info)
