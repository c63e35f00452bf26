"""A working-set L-PCA fit for large sparse data: work follows the ones and W.

A logistic sweep of :mod:`sklearn_rrank._lpca._newton` or
:mod:`sklearn_rrank._lpca._lbfgs` passes over all ``m n`` entries; on a graph of
2e4 nodes (4e8 entries, 0.02% ones) that is 2 s a pass idle and 5 to 15 s on a
busy machine, although nearly every zero lies far below the threshold once a fit
is near. This fit (our
addition) keeps the logits ``theta = U V^T + b`` (global offset ``b``, or none)
and splits the entries in two:

* the working set ``W``: all ones and the zeros near or across the threshold, each
  with its exact loss (Joachims, "Making large-scale SVM learning practical",
  1999: optimise on the entries that can change the solution, re-check the rest
  now and then);
* the far zeros, which enter in aggregate: in the logistic phase through the
  sum and the sum of squares of their logits, both from ``p x p`` Gram matrices
  over ALL ``m n`` entries, ``sum_ij theta_ij^2 = tr(U^T U V^T V) + 2 b (1^T U)
  (V^T 1) + m n b^2``, less the entries of ``W`` (the trick of implicit-feedback
  ALS: Hu, Koren and Volinsky, "Collaborative filtering for implicit feedback
  datasets", ICDM 2008); their loss is the second-order expansion of
  ``log(1 + e^theta)`` at their mean, summed (:func:`_far_zeros`), so its
  gradient in every far logit is a quadratic surrogate's, ``c1 + c2 theta``,
  whose centre follows the state. The loss over all entries is that of
  Chanpuriya et al., "Node embeddings and exact low-rank representations of
  complex networks", NeurIPS 2020, with the far zeros' part so approximated.

So one evaluation of the objective and its gradient costs
``O((nnz + |W|) p + (m + n) p^2)``. ``W`` is refreshed by a blocked float32 scan
of all logits (:mod:`sklearn_rrank._lpca._scan`) every :data:`_INNER_MIN` to
:data:`_INNER_MAX` L-BFGS-B iterations (more while few new zeros enter W); the
scan also counts the wrong and unsafe entries over all
``m n`` entries, so a stop on "exact" has checked every entry.

Two phases, as in the dense fit with ``margin_phase=True``:

1. logistic (:func:`_ws_fit_core`, the large sparse branch of ``_fit_core``):
   the objective above plus ``alpha / 2`` times the squared norm of all
   parameters, by L-BFGS-B, until the scans find the rounding exact, the wrong
   entries stall, the iterations or the deadline run out (a run after which the
   scan finds far more wrong entries, zeros outside ``W`` having crossed, is
   undone and ``W`` keeps them);
2. margin (:func:`_ws_margin_fit`, the large sparse branch of ``_margin_fit``):
   the squared hinge ``max(0, 1 - q theta)^2`` of
   :mod:`sklearn_rrank._lpca._margin`, whose far zeros (margin above 1) contribute
   exactly 0, so the objective on ``W`` is exact as long as ``W`` holds every
   entry of margin below :data:`_HINGE_LEVEL`, which each scan re-establishes.

Each phase ends when its scans find the rounding exact, at its share of the time,
or when its wrong entries have not dropped by :data:`_STALL_DROP` in
:data:`_STALL_SCANS` scans (a far fit creeps; a near one keeps falling).

A single fit (:func:`_working_set_fit`, the benchmarks' path) then hands factors
that still fail a few entries to the LP rescue on the working set
(:mod:`sklearn_rrank._lpca._ws_rescue`: row and column LPs over the entries of
each line near the threshold, the full line as the check).

Negative sampling with importance weights (Mikolov et al., NeurIPS 2013) is the
other way to let far zeros in (not measured here); the deterministic aggregate
keeps L-BFGS-B's line searches on one fixed objective between scans, which
sampling would not.

The rank search of :func:`~sklearn_rrank.rounding_rank_bounds` takes the path
by default (its ``working_set`` option; :func:`~sklearn_rrank._lpca._fit.lpca_fit`
only when asked), and then :data:`WORKING_SET_MIN_ENTRIES` and
:data:`WORKING_SET_MAX_DENSITY` decide (:func:`_use_working_set`); smaller or
denser data keep the dense sweeps. ``benchmarks/network_exact.py`` measures single
fits and the search on networks (``benchmarks/README.md``).
"""

import time
from dataclasses import dataclass

import numpy as np
import scipy.optimize
import scipy.sparse as sp
import scipy.sparse.linalg
from threadpoolctl import threadpool_limits

from sklearn_rrank._core._memory import memory_budget
from sklearn_rrank._lpca._graph_start import _graph_start, _is_symmetric
from sklearn_rrank._lpca._lbfgs import _offset_scale
from sklearn_rrank._lpca._model import (
    _B_MIN,
    _Data,
    _is_global,
    _package,
    _stop_delta,
)
from sklearn_rrank._lpca._options import Kernels, LPCAOptions
from sklearn_rrank._lpca._scan import _scan
from sklearn_rrank._lpca._start import _svd_init
from sklearn_rrank._lpca._ws_rescue import _ws_rescue

__all__ = []

#: the working-set fit runs on complete sparse data with at least this many entries
#: (below, a dense pass costs a fraction of a second and the dense path is kept, so
#: every matrix of the regression panel keeps its fits); ``Kernels`` holds it
WORKING_SET_MIN_ENTRIES = Kernels.working_set_entries
#: ... and at most this fraction of ones: an iteration on W costs about 6 ones k
#: against m n k for a dense sweep, no gain at 1% ones (W then holds 6% of entries)
WORKING_SET_MAX_DENSITY = 0.003

# L-BFGS-B iterations between two scans (the objective is fixed in between):
# doubled after a scan that finds at most _W_CHURN |W| new zeros, else halved
_INNER_MIN, _INNER_MAX = 10, 80
_W_CHURN = 0.01
# logistic phase: zeros with a logit above this join W, at most _W_PER_ONE per one
# (and at least _W_MIN in all; both phases), the largest logits first; an
# iteration costs O(|W| p), and the scans and the far zeros' aggregate carry the
# rest: a W as small as the ones makes more iterations in a slice than it loses
_LOGIT_LEVEL = -6.0
_W_PER_ONE = 1
_W_MIN = 200_000
# logistic phase: a run of L-BFGS-B after which the scan finds more than
# _REJECT times the wrong entries before (plus _REJECT_SLACK) is undone
_REJECT, _REJECT_SLACK = 1.5, 1000
# and the next runs between scans are a quarter as long, at least this
_INNER_REJECTED = 2
# both phases: a phase ends when its wrong entries have not dropped by a quarter in
# this many scans: a far fit creeps (a few percent in minutes) and its time is
# better spent at another rank, while a near one falls by more; counted in scans,
# a fit whose runs the scans keep short (rejections, churn in W) ends sooner
_STALL_SCANS, _STALL_DROP = 8, 0.25
# margin phase: zeros of margin below this join W (the hinge acts below 1)
_HINGE_LEVEL = 2.0
# margin 1 of the hinge goes to this quantile of the right entries' margins
_SCALE_QUANTILE = 0.05
# the logistic phase ends at this share of a fit's time at the latest: the hinge
# and the LPs finish a near fit quickly but make slow progress from a far one
_LOGISTIC_SHARE = 0.5
# the margin phase ends at this share of the time the logistic phase leaves, the
# rest goes to the LP rescue (its float64 pass over all entries costs about ten
# float32 scans; on PubMed at k = 48 the margin phase left wrong entries)
_MARGIN_SHARE = 0.85
# the penalty of a working-set fit, alone or in the rank search (the logits grow
# until the rounding is exact with a margin; network_exact.py's fits)
_WS_ALPHA = 1e-3
# entries per block of the W kernels: gathered rows that stay in the cache (3.5x
# faster than 1 << 17 at k = 48)
_BLOCK = 1 << 13
# L-BFGS-B's correction pairs (scipy's maxcor) between two scans
_LBFGS_PAIRS = 10
# bytes a fit holds per parameter: L-BFGS-B's 2 maxcor + 5 vectors and the
# objective's gradients and copies (measured with tracemalloc: benchmarks/README.md)
_BYTES_PER_PARAMETER = 350
# the largest such state of one fit: a search whose fits all fail far gallops to
# hundreds of columns, each fit then holding gigabytes
_STATE_BYTES = 3 << 29


def _use_working_set(data, mu):
    """Whether the L-PCA fit of ``data`` takes the working-set path.

    Only when asked (``data.working_set``: the ``working_set`` option, on by
    default in the rank search, off in :func:`~sklearn_rrank._lpca._fit.lpca_fit`).
    Then complete sparse data (``data.sparse``) of at least
    ``data.kernels.working_set_entries`` entries and at most
    :data:`WORKING_SET_MAX_DENSITY` ones, with the global offset or no bias (the
    column bias keeps the dense path).
    """
    if not getattr(data, "working_set", False):
        return False
    if not getattr(data, "sparse", False) or (mu is not None and not _is_global(mu)):
        return False
    m, n = data.shape
    least = getattr(data, "kernels", Kernels).working_set_entries
    return m * n >= least and data.q.nnz <= (WORKING_SET_MAX_DENSITY * m * n)


def _ws_max_factors(m, n):
    """The most latent factors of a working-set fit of an ``m x n`` matrix.

    Its solver state, :data:`_BYTES_PER_PARAMETER` bytes per parameter over
    ``(m + n) p`` parameters, stays within :data:`_STATE_BYTES` (1.5 GiB) and
    half the memory available
    (:func:`~sklearn_rrank._core._memory.memory_budget`); at least 1.
    """
    budget = memory_budget(_STATE_BYTES, 0.5)
    return max(1, budget // (_BYTES_PER_PARAMETER * (m + n)))


def _far_zeros(n_far, s1, s2):
    """The far zeros' aggregate loss and its derivatives in their logits' sums.

    With ``n_far`` far zeros whose logits have sum ``s1`` and sum of squares
    ``s2`` (mean ``mu = s1 / n_far``, variance ``v = s2 / n_far - mu^2``), their
    loss ``sum log(1 + e^theta)`` is taken as ``n_far (f(mu) + f2(mu) v / 2)``
    with ``f(t) = log(1 + e^t)`` and ``f2`` its second derivative (the
    second-order expansion of each term at the mean, summed: the delta method).
    Returns ``(value, c1, c2)``: the derivative of the value in every far logit
    is ``c1 + c2 theta``, a quadratic surrogate whose centre follows the state
    (a Taylor expansion at a fixed centre pulls the zeros back to it: on Cora at
    k = 8 its fit stayed at 9,700 wrong entries after 150 iterations).
    """
    if n_far <= 0:
        return 0.0, 0.0, 0.0
    mu = s1 / n_far
    v = max(s2 / n_far - mu * mu, 0.0)
    sig = 0.5 * (1.0 + np.tanh(0.5 * mu))
    f2 = sig * (1.0 - sig)
    f3 = f2 * (1.0 - 2.0 * sig)
    value = n_far * (max(mu, 0.0) + np.log1p(np.exp(-abs(mu))) + 0.5 * f2 * v)
    # d value / d s1 = f1(mu) + f3(mu) v / 2 - mu f2(mu), d value / d s2 = f2 / 2
    return float(value), float(sig + 0.5 * f3 * v - mu * f2), float(f2)


class _WSObjective:
    """Objective and gradient over the flat ``z = (U, V[, b])`` (module docstring).

    ``rows, cols`` (row-major sorted, unique) and ``q`` (+1 at ones, -1 at zeros)
    describe ``W``; ``loss`` is ``"logistic"`` (the far zeros enter by
    :func:`_far_zeros`, their logits' sums being those over all ``m n`` entries,
    from Gram matrices, less those on ``W``) or ``"hinge"`` (the far zeros cost
    0). ``global_offset``: ``z`` ends with the scalar ``b``. The parameters,
    the losses and their sums are float64; the logits on W and the two sparse
    products of the gradient are computed from float32 copies of ``U`` and
    ``V`` (the precision of the scans), which halves the bytes these gathers move.
    """

    def __init__(self, rows, cols, q, shape, p, global_offset, alpha, loss):
        self.rows, self.cols, self.q = rows, cols, q
        self.m, self.n = shape
        self.p, self.alpha, self.loss = p, alpha, loss
        self.global_offset = global_offset
        # the logistic loss counts the far zeros (in aggregate); the hinge's are 0
        self.far = loss == "logistic"
        indptr = np.zeros(self.m + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=self.m), out=indptr[1:])
        # row-major sorted unique entries: the CSR data are in the order of W
        self.S = sp.csr_matrix(
            (np.zeros(rows.size, dtype=np.float32), cols, indptr), shape=shape
        )
        self.n_eval = 0
        # the value at the first point evaluated (L-BFGS-B's start)
        self.first_value = None

    def offset_curvature(self):
        """A bound on the second derivative of the objective in the offset."""
        if self.loss == "hinge":
            return 2.0 * self.rows.size
        return 0.25 * float(self.m) * self.n

    def unpack(self, z):
        m, n, p = self.m, self.n, self.p
        U = z[: m * p].reshape(m, p)
        V = z[m * p : (m + n) * p].reshape(n, p)
        b = float(z[-1]) if self.global_offset else 0.0
        return U, V, b

    def logits(self, U, V, b):
        """``theta`` on W (float64) from float32 ``U`` and ``V``."""
        return _logits_at(U, V, b, self.rows, self.cols)

    def _entry_terms(self, theta):
        """Exact losses and derivatives of the entries of W."""
        q = self.q
        if self.loss == "hinge":
            r = np.maximum(0.0, 1.0 - q * theta)
            return r * r, -2.0 * q * r
        mq = -q * theta
        loss = np.maximum(mq, 0.0) + np.log1p(np.exp(-np.abs(mq)))
        # d/dtheta log(1 + exp(-q theta)) = -q sigmoid(-q theta)
        grad = -q * 0.5 * (1.0 + np.tanh(0.5 * mq))
        return loss, grad

    def __call__(self, z):
        self.n_eval += 1
        U, V, b = self.unpack(z)
        U32, V32 = U.astype(np.float32), V.astype(np.float32)
        theta = self.logits(U32, V32, b)
        loss, d = self._entry_terms(theta)
        value = float(loss.sum())
        mn = float(self.m) * self.n
        gU = np.zeros_like(U)
        gV = np.zeros_like(V)
        gb = 0.0
        if self.far:
            # the far zeros: all entries less W, their logits' sums from Gram
            # matrices (Hu, Koren and Volinsky's trick) less those on W
            su, sv = U.sum(axis=0), V.sum(axis=0)
            GU, GV = U.T @ U, V.T @ V
            s1 = float(su @ sv) + mn * b  # sum of all logits
            s2 = float(np.sum(GU * GV)) + 2.0 * b * float(su @ sv) + mn * b * b
            far, c1, c2 = _far_zeros(
                mn - self.rows.size, s1 - float(theta.sum()), s2 - float(theta @ theta)
            )
            value += far
            d -= c1 + c2 * theta  # the sums over all entries count W too
            gU += (c1 + c2 * b) * sv + c2 * (U @ GV)
            gV += (c1 + c2 * b) * su + c2 * (V @ GU)
            gb += c1 * mn + c2 * s1
        self.S.data[:] = d
        gU += self.S @ V32
        gV += self.S.T @ U32
        gb += float(d.sum())
        value += 0.5 * self.alpha * float(z @ z)
        if self.n_eval == 1:
            self.first_value = value
        parts = [gU.ravel(), gV.ravel()]
        if self.global_offset:
            parts.append([gb])
        grad = np.concatenate(parts)
        grad += self.alpha * z
        return value, grad


def _rescale(data, U, V, b, rng):
    """Scale the state so that hinge margin 1 is the right entries' quantile.

    As the dense margin phase (:mod:`sklearn_rrank._lpca._margin`, step 1): margin
    1 goes to the :data:`_SCALE_QUANTILE` quantile of the margins of the right
    entries of a uniform sample; the rounding does not change.
    """
    m, n = data.shape
    size = min(m * n, 100_000)
    i = rng.integers(0, m, size)
    j = rng.integers(0, n, size)
    q = data.q_at(i, j).astype(np.float64)
    margin = q * (np.einsum("ij,ij->i", U[i], V[j]) + (b or 0.0))
    right = margin[margin > 0]
    if not right.size:
        return U, V, b
    s2 = 1.0 / max(float(np.quantile(right, _SCALE_QUANTILE)), 1e-12)
    s = np.sqrt(s2)
    return U * s, V * s, None if b is None else b * s2


class _Stop(Exception):
    """Raised in the L-BFGS-B callback when the deadline has passed."""


def _flat(U, V, b):
    return np.concatenate([U.ravel(), V.ravel(), [] if b is None else [float(b)]])


def _logits_at(U, V, b, rows, cols):
    """``theta`` at the entries ``(rows, cols)`` (float64), by cache-sized blocks."""
    out = np.empty(rows.size)
    for s in range(0, rows.size, _BLOCK):
        i, j = rows[s : s + _BLOCK], cols[s : s + _BLOCK]
        out[s : s + _BLOCK] = np.einsum("ij,ij->i", U[i], V[j])
    out += b or 0.0
    return out


def _in_sorted(a, b):
    """Whether each entry of the sorted ``a`` is in the sorted ``b`` (both unique).

    A binary search per entry: ``np.isin`` and ``np.union1d`` hash or sort both
    arrays again, seconds at the millions of entries of ``W``.
    """
    if not b.size:
        return np.zeros(a.size, dtype=bool)
    pos = np.minimum(np.searchsorted(b, a), b.size - 1)
    return b[pos] == a


def _working_set_of(data, found, previous=None, limit=np.inf, state=None):
    """``W``: the ones, the scan's candidates and the zeros of the last ``W``.

    Returns ``(rows, cols, q, zeros, n_new)``: row-major sorted arrays of ``W``,
    the flat indices of its zeros and how many of them were not in
    ``previous`` (the flat zeros of the last ``W``). The last ``W``'s zeros stay,
    up to ``limit`` zeros in all: beyond, those of the largest logits at
    ``state = (U, V, b)`` (a zero that leaves ``W`` while it is near comes
    back across the threshold at the next scan: on PubMed at k = 48 every
    reset of ``W`` to the scan's candidates was followed by millions of wrong
    entries).
    """
    m, n = data.shape
    ones_flat = data.q.ones_flat()[1]
    zeros = found.rows * n + found.cols  # sorted
    n_new = zeros.size
    if previous is not None and previous.size:
        n_new = zeros.size - int(np.count_nonzero(_in_sorted(zeros, previous)))
        old = previous[~_in_sorted(previous, zeros)]
        room = int(max(limit - zeros.size, 0)) if np.isfinite(limit) else old.size
        if old.size > room:
            theta = _logits_at(*state[:2], state[2], old // n, old % n)
            old = (
                np.sort(old[np.argpartition(-theta, room - 1)[:room]])
                if room
                else old[:0]
            )
        # two sorted runs of distinct values: a stable sort merges them in O(size)
        zeros = np.sort(np.concatenate([zeros, old]), kind="stable")
    flat = np.concatenate([ones_flat, zeros])
    q = np.concatenate([np.ones(ones_flat.size), -np.ones(zeros.size)])
    order = np.argsort(flat, kind="stable")
    flat, q = flat[order], q[order]
    return flat // n, flat % n, q, zeros, n_new


def _lbfgs(obj, z, tau, deadline, max_iter):
    """Run L-BFGS-B on ``obj`` from ``z``; ``(z, iterations, value or None)``.

    As the dense solver (:func:`~sklearn_rrank._lpca._lbfgs._lbfgs_fit`), L-BFGS
    sees the global offset divided by
    :func:`~sklearn_rrank._lpca._lbfgs._offset_scale` (its curvature is ``m``
    times the factors'), and keeps it on the side ``tau`` needs by evaluating at
    the offset clamped to its edge plus a restoring quadratic beyond, not by
    scipy's bounds (whose Python loop over all parameters costs seconds at 1e6
    parameters). A deadline passed in the callback keeps the last accepted iterate.
    """
    scale, edge = 1.0, None
    if obj.global_offset:
        U, V, _ = obj.unpack(z)
        scale = _offset_scale(U, V, obj.m, obj.n)
        edge = (-_B_MIN if tau > 0 else _B_MIN) / scale
    stiff = obj.offset_curvature() * scale * scale

    def to_z(y):
        z = y.copy()
        if edge is not None:
            z[-1] = (min(y[-1], edge) if tau > 0 else max(y[-1], edge)) * scale
        return z

    def fun(y):
        f, g = obj(to_z(y))
        if edge is None:
            return f, g
        g[-1] *= scale
        d = y[-1] - edge
        if (d > 0) if tau > 0 else (d < 0):
            f += 0.5 * stiff * d * d
            g[-1] = stiff * d
        return f, g

    y0 = z.copy()
    if edge is not None:
        y0[-1] /= scale
    last = [y0, 0]

    def callback(yk):
        last[0] = yk.copy()
        last[1] += 1
        if deadline.expired():
            raise _Stop

    # BLAS on one thread: L-BFGS-B's own vector work on (m + n) p variables is small,
    # and BLAS threads that spin beside other work slow it down
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            res = scipy.optimize.minimize(
                fun,
                y0,
                jac=True,
                method="L-BFGS-B",
                callback=callback,
                options={"maxiter": max_iter, "maxcor": _LBFGS_PAIRS},
            )
        if np.all(np.isfinite(res.x)):
            return to_z(res.x), int(res.nit), float(res.fun)
    except _Stop:
        pass
    return to_z(last[0]), last[1], None


class _Log:
    """The history of a working-set fit: one row per scan."""

    def __init__(self, phase, tick=None):
        self.phase, self.tick = phase, tick
        self.start = time.perf_counter()
        self.cpu = time.process_time()
        self.rows = []

    def add(self, n_iter, found, w_size, scan_seconds):
        self.rows.append(
            {
                "phase": self.phase,
                "seconds": round(time.perf_counter() - self.start, 3),
                # CPU seconds of all threads: the work, whatever the load
                "cpu_seconds": round(time.process_time() - self.cpu, 3),
                "iterations": int(n_iter),
                "n_wrong": found.n_wrong,
                "n_unsafe": found.n_unsafe,
                "w_size": int(w_size),
                "scan_seconds": round(scan_seconds, 3),
            }
        )
        if self.tick is not None:
            self.tick(len(self.rows) - 1, found.n_unsafe)


def _do_scan(data, U, V, b, *, level, cap, tau, n_jobs, deadline=None):
    """A full scan of the state (``_scan``'s result, None if the deadline cut it)
    and its seconds."""
    t0 = time.perf_counter()
    mu = None if b is None else np.asarray(b)
    delta = _stop_delta(U.astype(np.float32), V, mu, tau)
    q = data.q
    found = _scan(
        U,
        V,
        0.0 if b is None else float(b),
        q,
        level=level,
        cap=cap,
        delta=delta,
        n_jobs=n_jobs,
        deadline=deadline,
    )
    return found, time.perf_counter() - t0


def _w_cap(data):
    return max(_W_MIN, _W_PER_ONE * data.q.nnz)


def _ws_fit_core(data, U, V, mu, options, *, n_jobs, deadline, tick=None, verbose=0):
    """The logistic phase on the working set; the return of ``_fit_core``.

    ``options`` is the fit's :class:`~sklearn_rrank._lpca._fit.LPCAOptions` (its
    ``tau``, ``alpha``, ``max_iter``, ``tol`` and ``stop_when_exact`` are read).

    ``(U, V, mu, n_iter, info)`` in float64 with ``info`` as ``_fit_core``'s
    (``"loss"`` holds the objective after each run of L-BFGS-B, which changes
    with ``W``) plus ``"working_set"``: one row per scan
    (seconds, iterations, wrong and unsafe entries, ``|W|``, seconds of the scan).
    ``tol``: the phase ends when a run of L-BFGS-B lowers its objective by less
    than ``tol`` times its value and the wrong entries did not drop.
    """
    tau, alpha, max_iter = options.tau, float(options.alpha), options.max_iter
    tol, stop_when_exact = options.tol, options.stop_when_exact
    start = time.perf_counter()
    U = np.asarray(U, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    b = None if mu is None else float(mu)
    log = _Log("logistic", tick)
    n_iter, status, history = 0, "max_iter", []
    best = since = zeros = kept = None
    cap, inner = _w_cap(data), _INNER_MIN
    found = secs = None
    while True:
        if found is not None and not deadline.leaves_room_for(secs):
            # no time for the scan that would count this state: the last counted
            U, V, b = kept[:3]
            status = "time_limit"
            break
        latest, secs = _do_scan(
            data,
            U,
            V,
            b,
            level=_LOGIT_LEVEL,
            cap=cap,
            tau=tau,
            n_jobs=n_jobs,
            deadline=deadline,
        )
        if latest is None:  # the deadline cut the scan
            if kept is not None:
                U, V, b = kept[:3]
            status = "time_limit"
            break
        found = latest
        n_wrong = found.n_wrong
        rejected = kept is not None and n_wrong > _REJECT * kept[3] + _REJECT_SLACK
        # after a rejected run, W keeps all its zeros and gains those that crossed
        rows, cols, q, zeros, n_new = _working_set_of(
            data, found, zeros, np.inf if rejected else 3 * cap, (U, V, b)
        )
        log.add(n_iter, found, rows.size, secs)
        if verbose >= 2:
            print(f"[lpca-ws] {log.rows[-1]}")
        if best is None or n_wrong < (1 - _STALL_DROP) * best:
            best, since = n_wrong, len(log.rows)
        if found.n_unsafe == 0 and stop_when_exact:
            status = "exact"
            break
        if rejected:
            # the far zeros' aggregate failed (zeros outside W crossed): back to
            # the last state, shorter runs between scans
            U, V, b = kept[:3]
            inner = max(_INNER_REJECTED, inner // 4)
        else:
            kept = (U, V, b, n_wrong)
            # few new zeros in W: the aggregate held, scan less often
            if n_new <= _W_CHURN * rows.size:
                inner = min(2 * inner, _INNER_MAX)
            else:
                inner = max(inner // 2, min(inner, _INNER_MIN))
        if len(log.rows) - since >= _STALL_SCANS:
            status = "stalled"
            break
        if n_iter >= max_iter:
            break
        if deadline.expired():
            status = "time_limit"
            break
        obj = _WSObjective(
            rows,
            cols,
            q,
            data.shape,
            U.shape[1],
            b is not None,
            alpha,
            "logistic",
        )
        z0 = _flat(U, V, b)
        z, it, f1 = _lbfgs(obj, z0, tau, deadline, min(inner, max_iter - n_iter))
        f0 = obj.first_value  # L-BFGS-B starts at z0: no evaluation of its own
        n_iter += it
        U, V, b = obj.unpack(z)
        U, V = U.copy(), V.copy()
        if f1 is not None:
            history.append(f1)
            if abs(f0 - f1) <= tol * max(abs(f1), 1e-300) and since < len(log.rows):
                status = "tol"
                # one more scan counts the state; the loop ends after it
                max_iter = n_iter
    mu = None if b is None else np.asarray(b)
    info = {
        "solver_used": "working_set",
        "unsafe_history": [r["n_unsafe"] for r in log.rows],
        "loss": [float(v) for v in history] or [float("nan")],
        "status": status,
        # the count of the state returned: a rejected run's state was undone, and
        # with no scan finished nothing was counted (every observed entry may fail)
        "n_errors_logit": int(
            0 if status == "exact" else (data.n_observed if kept is None else kept[3])
        ),
        "seconds": time.perf_counter() - start,
        "working_set": log.rows,
    }
    return U, V, mu, n_iter, info


@dataclass(frozen=True)
class _MarginRun:
    """How :func:`_working_set_fit` runs :func:`_ws_margin_fit`: ``n_jobs``
    threads of the scans and ``history``, a list that gets one row per scan (or
    None)."""

    n_jobs: object = None
    history: list = None


def _ws_margin_fit(
    data,
    U,
    V,
    mu,
    *,
    tau,
    alpha,
    deadline,
    tick=None,
    random_state=0,
    run=None,
):
    """The margin phase on the working set; the return of ``_margin_fit``.

    ``(U, V, mu, n_wrong, exact)``: the state with the fewest wrong entries seen
    (``n_wrong`` None when the deadline passed before the first scan). The hinge's
    far zeros cost exactly 0, so no surrogate: W holds the ones and the zeros of
    margin below :data:`_HINGE_LEVEL` (at most the cap of the logistic phase).
    ``run``: a :class:`_MarginRun` (threads of the scans, a list that gets one
    row per scan as ``_ws_fit_core``'s ``info["working_set"]``), or None.
    """
    run = run or _MarginRun()
    n_jobs, history = run.n_jobs, run.history
    U = np.asarray(U, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    mu = None if mu is None else np.asarray(mu, dtype=np.float64)
    b = None if mu is None else float(mu)
    U, V, b = _rescale(data, U, V, b, np.random.default_rng(random_state))
    log = _Log("margin", tick)
    if history is not None:
        log.rows = history
    best = None
    ref = since = n_iter = 0
    cap, inner, zeros = _w_cap(data), _INNER_MIN, None
    secs = 0.0
    for rnd in range(1 << 30):
        if deadline.expired() or not deadline.leaves_room_for(secs):
            break
        found, secs = _do_scan(
            data,
            U,
            V,
            b,
            level=-_HINGE_LEVEL,
            cap=cap,
            tau=tau,
            n_jobs=n_jobs,
            deadline=deadline,
        )
        if found is None:  # the deadline cut the scan
            break
        rows, cols, q, zeros, n_new = _working_set_of(
            data, found, zeros, 3 * cap, (U, V, b)
        )
        log.add(n_iter, found, rows.size, secs)
        n_wrong = found.n_wrong
        if best is None or n_wrong < best[3]:
            best = (U, V, b, n_wrong)
        # the first run of the hinge moves far from the start: the count after it
        # is the first reference
        if rnd <= 1 or n_wrong < (1 - _STALL_DROP) * ref:
            ref, since = n_wrong, rnd
        if found.n_unsafe == 0:
            return U, V, None if b is None else np.asarray(b), 0, True
        if rnd - since >= _STALL_SCANS or deadline.expired():
            break
        if n_new <= _W_CHURN * rows.size:
            inner = min(2 * inner, _INNER_MAX)
        else:
            inner = max(inner // 2, _INNER_MIN)
        obj = _WSObjective(
            rows,
            cols,
            q,
            data.shape,
            U.shape[1],
            b is not None,
            alpha,
            "hinge",
        )
        z0 = _flat(U, V, b)
        z, it, _ = _lbfgs(obj, z0, tau, deadline, inner)
        n_iter += it
        U, V, b = obj.unpack(z)
        U, V = U.copy(), V.copy()
    if best is None:
        return U, V, None if b is None else np.asarray(b), None, False
    U, V, b, n_wrong = best
    return U, V, None if b is None else np.asarray(b), n_wrong, False


def _ws_phases(
    data,
    X,
    state,
    *,
    tau,
    alpha,
    deadline,
    n_jobs=None,
    logistic_share=_LOGISTIC_SHARE,
    rescue_limit=None,
    run=None,
    logistic=True,
):
    """The phases of a working-set fit from the start ``state = (U, V, mu)``.

    The logistic phase (:func:`_ws_fit_core`, ending at ``logistic_share`` of the
    time left at the latest; skipped when ``logistic`` is False, so that a fit
    going on from the margin phase's state goes on in that phase), unless it is
    exact the margin phase
    (:func:`_ws_margin_fit`, ending at :data:`_MARGIN_SHARE` of the time left at
    the latest) and, unless that is exact and when at most ``rescue_limit``
    entries are wrong (None: whatever their number), the LP rescue on the
    working set (:func:`~sklearn_rrank._lpca._ws_rescue._ws_rescue`) in the time
    left: its LPs fix a near fit, and a far one would spend the time left on them.
    ``data`` is the :class:`~sklearn_rrank._lpca._model._Data` of the validated
    complete CSR ``X``; ``run``: ``(random_state, tick, verbose)`` or None.

    Returns ``(L, R, state, info)``: factors packaged at ``tau`` (float64, not
    certified here), the logits' state ``(U, V, mu)`` of the logistic or margin
    phase whose factors the rescue started from, and ``info`` with
    ``"n_iter"``, ``"n_wrong"`` (the last count: a scan's, float32, or the
    rescue's, float64 with the certificate's margin; None when the deadline
    passed before any scan counted the state), ``"exact"``,
    ``"working_set"`` (one row per scan of both phases), ``"logistic_status"``,
    ``"rescue"`` (the rescue's info, or None), ``"phase"`` (``"logistic"`` or
    ``"margin"``: the phase whose state is returned) and ``"cut"`` (not exact,
    and the last phase or the rescue ended at its time, not by its own rules:
    more time may help).
    """
    random_state, tick, verbose = run or (0, None, 0)
    options = LPCAOptions(
        tau=tau, alpha=alpha, max_iter=1 << 30, tol=0.0, stop_when_exact=True
    )
    phase, status = "logistic", "skipped"
    U, V, mu = state
    n_iter, rows, exact, n_wrong, cut = 0, [], False, None, False
    if logistic:
        U, V, mu, n_iter, info = _ws_fit_core(
            data,
            *state,
            options,
            n_jobs=n_jobs,
            deadline=deadline.child(fraction=logistic_share),
            tick=tick,
            verbose=verbose,
        )
        rows, status = list(info["working_set"]), info["status"]
        exact = status == "exact"
        # None: no scan counted the logistic phase's state (its deadline passed)
        n_wrong = info["n_errors_logit"] if rows else None
        # whether the last phase run ended at its time, not by its own rules
        cut = status == "time_limit"
    if not exact and not deadline.expired():
        margin_rows = []
        margin_deadline = deadline.child(fraction=_MARGIN_SHARE)
        Um, Vm, mum, nm, exact = _ws_margin_fit(
            data,
            U,
            V,
            mu,
            tau=tau,
            alpha=alpha,
            deadline=margin_deadline,
            tick=tick,
            random_state=random_state,
            run=_MarginRun(n_jobs, margin_rows),
        )
        cut = margin_deadline.expired()
        rows += margin_rows
        if nm is not None and (exact or n_wrong is None or nm < n_wrong):
            U, V, mu, n_wrong, phase = Um, Vm, mum, nm, "margin"
        if margin_rows:  # the iterations before the last scan of the phase
            n_iter += margin_rows[-1]["iterations"]
    L, R = _package(U, V, mu, tau)
    rescue = None
    near = n_wrong is not None and (rescue_limit is None or n_wrong <= rescue_limit)
    if not exact and near and not deadline.expired():
        L, R, rescue = _ws_rescue(X, L, R, tau=tau, deadline=deadline, n_jobs=n_jobs)
        if rescue["uncertified_after"] is not None:
            n_wrong, exact = rescue["uncertified_after"], rescue["certified"]
    cut = not exact and (cut or deadline.expired())
    return (
        L,
        R,
        (U, V, mu),
        {
            "n_iter": int(n_iter),
            "n_wrong": None if n_wrong is None else int(n_wrong),
            "exact": bool(exact),
            "working_set": rows,
            "logistic_status": status,
            "rescue": rescue,
            "phase": phase,
            "cut": bool(cut),
        },
    )


def _working_set_fit(
    X,
    k,
    *,
    tau=0.5,
    alpha=_WS_ALPHA,
    deadline,
    random_state=0,
    n_jobs=None,
    logistic_share=_LOGISTIC_SHARE,
    rescue_limit=None,
    verbose=0,
    start="svd",
):
    """One rank-``k`` fit of a large sparse binary ``X`` with the global offset.

    The start (``start="svd"``: :func:`~sklearn_rrank._lpca._start._svd_init`;
    ``"graph"``: :func:`~sklearn_rrank._lpca._graph_start._graph_start` when
    ``X`` is symmetric, else the SVD start), then :func:`_ws_phases`. ``X`` is a
    validated complete CSR matrix; the working-set path is taken whatever its
    size (the benchmarks use it on small graphs too). Returns ``(L, R, info)``:
    factors packaged at ``tau`` (float64, not certified here) and the info of
    :func:`_ws_phases` with ``"start_seconds"``.
    """
    t0 = time.perf_counter()
    data = _Data(X, dtype=np.float32)
    U = None
    if start == "graph" and _is_symmetric(X) and 0 < k < X.shape[0] - 1:
        try:
            U, V, mu = _graph_start(X, k, tau, random_state)
        except scipy.sparse.linalg.ArpackNoConvergence:
            U = None
    if U is None:
        U, V, mu = _svd_init(data, k, "global", random_state, tau, deadline=deadline)
    start_seconds = time.perf_counter() - t0
    L, R, _, info = _ws_phases(
        data,
        X,
        (U, V, mu),
        tau=tau,
        alpha=alpha,
        deadline=deadline,
        n_jobs=n_jobs,
        logistic_share=logistic_share,
        rescue_limit=rescue_limit,
        run=(random_state, None, verbose),
    )
    return L, R, {"start_seconds": start_seconds, **info}
