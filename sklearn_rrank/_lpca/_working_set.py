"""A working-set L-PCA fit for large sparse data: work follows the ones and W.

A logistic sweep of :mod:`sklearn_rrank._lpca._newton` or
:mod:`sklearn_rrank._lpca._lbfgs` passes over all ``m n`` entries; on a graph of
2e4 nodes (4e8 entries, 0.02% ones) that is 5 to 15 s a pass, although nearly
every zero lies far below the threshold once a fit is near. This fit (our
addition) keeps the logits ``theta = U V^T + b`` (global offset ``b``, or none)
and splits the entries in two:

* the working set ``W``: all ones and the zeros near or across the threshold, each
  with its exact loss (Joachims, "Making large-scale SVM learning practical",
  1999: optimise on the entries that can change the solution, re-check the rest
  now and then);
* the far zeros, which enter in aggregate: in the logistic phase through a
  quadratic surrogate ``s(theta) = g + c1 theta + c2 / 2 theta^2`` (the second-order
  Taylor expansion of ``log(1 + e^theta)`` at the mean logit of the far zeros),
  whose sum over ALL ``m n`` entries comes from ``p x p`` Gram matrices,
  ``sum_ij theta_ij^2 = tr(U^T U V^T V) + 2 b (1^T U)(V^T 1) + m n b^2``, and which
  is then corrected entry by entry on ``W`` (the trick of implicit-feedback ALS:
  Hu, Koren and Volinsky, "Collaborative filtering for implicit feedback
  datasets", ICDM 2008). The loss over all entries is that of Chanpuriya et al.,
  "Node embeddings and exact low-rank representations of complex networks",
  NeurIPS 2020, with the far zeros' part replaced by the surrogate.

So one evaluation of the objective and its gradient costs
``O((nnz + |W|) p + (m + n) p^2)``. ``W`` is refreshed by a blocked float32 scan
of all logits (:mod:`sklearn_rrank._lpca._scan`) every :data:`_INNER_ITER`
L-BFGS-B iterations; the scan also counts the wrong and unsafe entries over all
``m n`` entries, so a stop on "exact" has checked every entry.

Two phases, as in the dense fit with ``margin_phase=True``:

1. logistic (:func:`_ws_fit_core`, the large sparse branch of ``_fit_core``):
   the surrogate objective above plus ``alpha / 2`` times the squared norm of all
   parameters, by L-BFGS-B, until the scans find the rounding exact, the wrong
   entries stall, the iterations or the deadline run out;
2. margin (:func:`_ws_margin_fit`, the large sparse branch of ``_margin_fit``):
   the squared hinge ``max(0, 1 - q theta)^2`` of
   :mod:`sklearn_rrank._lpca._margin`, whose far zeros (margin above 1) contribute
   exactly 0, so the objective on ``W`` is exact as long as ``W`` holds every
   entry of margin below :data:`_HINGE_LEVEL`, which each scan re-establishes.

Negative sampling with importance weights (Mikolov et al., NeurIPS 2013) is the
other way to let far zeros in; the deterministic surrogate keeps L-BFGS-B's line
searches on one fixed objective between scans, which sampling would not.

:data:`WORKING_SET_MIN_ENTRIES` and :data:`WORKING_SET_MAX_DENSITY` decide when the
L-PCA fit takes this path (:func:`_use_working_set`); smaller or denser data keep
the dense sweeps, unchanged.
"""

import time

import numpy as np
import scipy.optimize
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from sklearn_rrank._lpca._model import _Data, _is_global, _package, _stop_delta
from sklearn_rrank._lpca._scan import _scan
from sklearn_rrank._lpca._start import _svd_init

__all__ = []

#: the working-set fit runs on complete sparse data with at least this many entries
#: (below, a dense pass costs a fraction of a second and the dense path is kept, so
#: every matrix of the regression panel keeps its fits)
WORKING_SET_MIN_ENTRIES = 50_000_000
#: ... and at most this fraction of ones (W holds all ones: denser data gain little)
WORKING_SET_MAX_DENSITY = 0.01

# L-BFGS-B iterations between two scans (the objective is fixed in between)
_INNER_ITER = 30
# logistic phase: zeros with a logit above this join W, at most _W_PER_ONE per one
# (and at least _W_MIN in all), the largest logits first
_LOGIT_LEVEL = -6.0
_W_PER_ONE = 8
_W_MIN = 200_000
# logistic phase: it ends when the wrong entries have not dropped by 1% in this
# many scans
_LOGISTIC_STALL = 4
# margin phase: zeros of margin below this join W (the hinge acts below 1), and
# the phase ends after this many scans without fewer wrong entries
_HINGE_LEVEL = 3.0
_HINGE_STALL = 10
# margin 1 of the hinge goes to this quantile of the right entries' margins
_SCALE_QUANTILE = 0.05
# entries per block of the W kernels: gathered rows that stay in the cache (3.5x
# faster than 1 << 17 at k = 48)
_BLOCK = 1 << 13


def _use_working_set(data, mu):
    """Whether the L-PCA fit of ``data`` takes the working-set path.

    Complete sparse data (``data.sparse``) of at least
    :data:`WORKING_SET_MIN_ENTRIES` entries and at most
    :data:`WORKING_SET_MAX_DENSITY` ones, with the global offset or no bias (the
    column bias keeps the dense path).
    """
    if not getattr(data, "sparse", False) or (mu is not None and not _is_global(mu)):
        return False
    m, n = data.shape
    return m * n >= WORKING_SET_MIN_ENTRIES and data.q.nnz <= (
        WORKING_SET_MAX_DENSITY * m * n
    )


class _Surrogate:
    """The quadratic ``s(theta) = g + c1 theta + c2 / 2 theta^2`` of the far zeros.

    :meth:`taylor` expands ``log(1 + e^theta)`` at a centre; :meth:`zero` is no
    surrogate (the hinge, whose far zeros cost nothing).
    """

    def __init__(self, g=0.0, c1=0.0, c2=0.0):
        self.g, self.c1, self.c2 = float(g), float(c1), float(c2)

    @classmethod
    def taylor(cls, c):
        sig = 0.5 * (1.0 + np.tanh(0.5 * c))
        c2 = sig * (1.0 - sig)
        l0 = max(c, 0.0) + np.log1p(np.exp(-abs(c)))
        return cls(l0 - sig * c + 0.5 * c2 * c * c, sig - c2 * c, c2)

    @property
    def active(self):
        return self.c2 != 0.0 or self.c1 != 0.0 or self.g != 0.0


class _WSObjective:
    """Objective and gradient over the flat ``z = (U, V[, b])`` (module docstring).

    ``rows, cols`` (row-major sorted, unique) and ``q`` (+1 at ones, -1 at zeros)
    describe ``W``; ``loss`` is ``"logistic"`` or ``"hinge"``; ``surrogate`` the
    :class:`_Surrogate` of the far zeros (summed over all ``m n`` entries through
    Gram matrices and subtracted on ``W``). ``global_offset``: ``z`` ends with
    the scalar ``b``. Everything is float64.
    """

    def __init__(self, rows, cols, q, shape, p, global_offset, alpha, loss, surrogate):
        self.rows, self.cols, self.q = rows, cols, q
        self.m, self.n = shape
        self.p, self.alpha, self.loss = p, alpha, loss
        self.global_offset = global_offset
        self.sur = surrogate
        indptr = np.zeros(self.m + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=self.m), out=indptr[1:])
        # row-major sorted unique entries: the CSR data are in the order of W
        self.S = sp.csr_matrix((np.zeros(rows.size), cols, indptr), shape=shape)
        self.n_eval = 0

    def unpack(self, z):
        m, n, p = self.m, self.n, self.p
        U = z[: m * p].reshape(m, p)
        V = z[m * p : (m + n) * p].reshape(n, p)
        b = float(z[-1]) if self.global_offset else 0.0
        return U, V, b

    def logits(self, U, V, b):
        """``theta`` on W (float64)."""
        out = np.empty(self.rows.size)
        for s in range(0, self.rows.size, _BLOCK):
            i, j = self.rows[s : s + _BLOCK], self.cols[s : s + _BLOCK]
            out[s : s + _BLOCK] = np.einsum("ij,ij->i", U[i], V[j])
        out += b
        return out

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
        theta = self.logits(U, V, b)
        loss, d = self._entry_terms(theta)
        value = float(loss.sum())
        mn = float(self.m) * self.n
        gU = np.zeros_like(U)
        gV = np.zeros_like(V)
        gb = 0.0
        sur = self.sur
        if sur.active:
            # sum of s over all entries from Gram matrices, less s on W
            value -= float(np.sum(sur.g + theta * (sur.c1 + 0.5 * sur.c2 * theta)))
            d -= sur.c1 + sur.c2 * theta
            su, sv = U.sum(axis=0), V.sum(axis=0)
            GU, GV = U.T @ U, V.T @ V
            s1 = float(su @ sv) + mn * b  # sum of theta
            s2 = float(np.sum(GU * GV)) + 2.0 * b * float(su @ sv) + mn * b * b
            value += mn * sur.g + sur.c1 * s1 + 0.5 * sur.c2 * s2
            gU += (sur.c1 + sur.c2 * b) * sv + sur.c2 * (U @ GV)
            gV += (sur.c1 + sur.c2 * b) * su + sur.c2 * (V @ GU)
            gb += sur.c1 * mn + sur.c2 * s1
        self.S.data[:] = d
        gU += self.S @ V
        gV += self.S.T @ U
        gb += float(d.sum())
        value += 0.5 * self.alpha * float(z @ z)
        parts = [gU.ravel(), gV.ravel()]
        if self.global_offset:
            parts.append([gb])
        grad = np.concatenate(parts)
        grad += self.alpha * z
        return value, grad


def _offset_bounds(b, tau, size):
    """L-BFGS-B bounds: the global offset (last) keeps the sign opposite to tau."""
    if b is None:
        return None
    lo, hi = np.full(size, -np.inf), np.full(size, np.inf)
    if tau > 0:
        hi[-1] = -1e-3
    else:
        lo[-1] = 1e-3
    return scipy.optimize.Bounds(lo, hi)


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


def _working_set_of(data, found):
    """``W`` = the ones and the scan's candidates: row-major sorted arrays."""
    m, n = data.shape
    ones_flat = data.q.ones_flat()[1]
    flat = np.concatenate([ones_flat, found.rows * n + found.cols])
    q = np.concatenate([np.ones(ones_flat.size), -np.ones(found.rows.size)])
    order = np.argsort(flat, kind="stable")
    flat, q = flat[order], q[order]
    return flat // n, flat % n, q


def _lbfgs(obj, z, bounds, deadline, max_iter):
    """Run L-BFGS-B on ``obj`` from ``z``; the iterate and iterations done.

    A deadline passed in the callback keeps the last accepted iterate.
    """
    last = [z, 0]

    def callback(zk):
        last[0] = zk.copy()
        last[1] += 1
        if deadline.expired():
            raise _Stop

    # BLAS on one thread: L-BFGS-B's own vector work on (m + n) p variables is slow
    # with threads on a busy machine (10x measured on Cora at load 7)
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            res = scipy.optimize.minimize(
                obj,
                z,
                jac=True,
                method="L-BFGS-B",
                bounds=bounds,
                callback=callback,
                options={"maxiter": max_iter, "maxcor": 10},
            )
        if np.all(np.isfinite(res.x)):
            return res.x, int(res.nit), float(res.fun)
    except _Stop:
        pass
    return last[0], last[1], None


class _Log:
    """The history of a working-set fit: one row per scan."""

    def __init__(self, phase, tick=None):
        self.phase, self.tick = phase, tick
        self.start = time.perf_counter()
        self.rows = []

    def add(self, n_iter, found, w_size, scan_seconds):
        self.rows.append(
            {
                "phase": self.phase,
                "seconds": round(time.perf_counter() - self.start, 3),
                "iterations": int(n_iter),
                "n_wrong": found.n_wrong,
                "n_unsafe": found.n_unsafe,
                "w_size": int(w_size),
                "scan_seconds": round(scan_seconds, 3),
            }
        )
        if self.tick is not None:
            self.tick(len(self.rows) - 1, found.n_unsafe)


def _do_scan(data, U, V, b, *, level, cap, tau, n_jobs):
    t0 = time.perf_counter()
    mu = None if b is None else np.asarray(b)
    delta = _stop_delta(U.astype(np.float32), V, mu, tau)
    q = data.q
    found = _scan(
        U,
        V,
        0.0 if b is None else float(b),
        q.indptr,
        q.indices,
        level=level,
        cap=cap,
        delta=delta,
        n_jobs=n_jobs,
    )
    return found, time.perf_counter() - t0


def _w_cap(data):
    return max(_W_MIN, _W_PER_ONE * data.q.nnz)


def _ws_fit_core(
    data,
    U,
    V,
    mu,
    *,
    tau,
    alpha,
    max_iter,
    tol,
    n_jobs,
    stop_when_exact,
    deadline,
    tick=None,
    verbose=0,
):
    """The logistic phase on the working set; the return of ``_fit_core``.

    ``(U, V, mu, n_iter, info)`` in float64 with ``info`` as ``_fit_core``'s
    (``"loss"`` holds the surrogate objective after each run of L-BFGS-B, whose
    surrogate changes with ``W``) plus ``"working_set"``: one row per scan
    (seconds, iterations, wrong and unsafe entries, ``|W|``, seconds of the scan).
    ``tol``: the phase ends when a run of L-BFGS-B lowers its objective by less
    than ``tol`` times its value and the wrong entries did not drop.
    """
    start = time.perf_counter()
    U = np.asarray(U, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    b = None if mu is None else float(mu)
    log = _Log("logistic", tick)
    n_iter, status, history = 0, "max_iter", []
    best = stall = None
    cap = _w_cap(data)
    while True:
        found, secs = _do_scan(
            data, U, V, b, level=_LOGIT_LEVEL, cap=cap, tau=tau, n_jobs=n_jobs
        )
        rows, cols, q = _working_set_of(data, found)
        log.add(n_iter, found, rows.size, secs)
        if verbose >= 2:
            print(f"[lpca-ws] {log.rows[-1]}")
        n_wrong = found.n_wrong
        if best is None or n_wrong < 0.99 * best:
            best, stall = n_wrong, 0
        else:
            stall += 1
        if found.n_unsafe == 0 and stop_when_exact:
            status = "exact"
            break
        if stall >= _LOGISTIC_STALL:
            status = "stalled"
            break
        if n_iter >= max_iter:
            break
        if deadline.expired():
            status = "time_limit"
            break
        # the surrogate's centre: the mean logit of the zeros outside W
        centre = found.far_sum / max(found.n_far, 1)
        obj = _WSObjective(
            rows,
            cols,
            q,
            data.shape,
            U.shape[1],
            b is not None,
            alpha,
            "logistic",
            _Surrogate.taylor(centre),
        )
        z0 = _flat(U, V, b)
        f0 = obj(z0)[0]
        bounds = _offset_bounds(b, tau, z0.size)
        z, it, f1 = _lbfgs(
            obj, z0, bounds, deadline, min(_INNER_ITER, max_iter - n_iter)
        )
        n_iter += it
        U, V, b = obj.unpack(z)
        U, V = U.copy(), V.copy()
        if f1 is not None:
            history.append(f1)
            if abs(f0 - f1) <= tol * max(abs(f1), 1e-300) and stall:
                status = "tol"
                # one more scan counts the state; the loop ends after it
                max_iter = n_iter
    mu = None if b is None else np.asarray(b)
    info = {
        "solver_used": "working_set",
        "unsafe_history": [r["n_unsafe"] for r in log.rows],
        "loss": [float(v) for v in history] or [float("nan")],
        "status": status,
        "n_errors_logit": int(found.n_wrong),
        "seconds": time.perf_counter() - start,
        "working_set": log.rows,
    }
    return U, V, mu, n_iter, info


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
    n_jobs=None,
    history=None,
):
    """The margin phase on the working set; the return of ``_margin_fit``.

    ``(U, V, mu, n_wrong, exact)``: the state with the fewest wrong entries seen
    (``n_wrong`` None when the deadline passed before the first scan). The hinge's
    far zeros cost exactly 0, so no surrogate: W holds the ones and the zeros of
    margin below :data:`_HINGE_LEVEL` (at most the cap of the logistic phase).
    ``history``: a list that gets one row per scan (as ``_ws_fit_core``'s
    ``info["working_set"]``).
    """
    U = np.asarray(U, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    mu = None if mu is None else np.asarray(mu, dtype=np.float64)
    b = None if mu is None else float(mu)
    U, V, b = _rescale(data, U, V, b, np.random.default_rng(random_state))
    log = _Log("margin", tick)
    if history is not None:
        log.rows = history
    best = None
    fewest = stall = n_iter = 0
    cap = _w_cap(data)
    for rnd in range(1 << 30):
        if deadline.expired():
            break
        found, secs = _do_scan(
            data, U, V, b, level=-_HINGE_LEVEL, cap=cap, tau=tau, n_jobs=n_jobs
        )
        rows, cols, q = _working_set_of(data, found)
        log.add(n_iter, found, rows.size, secs)
        n_wrong = found.n_wrong
        if best is None or n_wrong < best[3]:
            best = (U, V, b, n_wrong)
        if rnd <= 1 or n_wrong < fewest:
            fewest, stall = n_wrong, 0
        else:
            stall += 1
        if found.n_unsafe == 0:
            return U, V, None if b is None else np.asarray(b), 0, True
        if stall >= _HINGE_STALL or deadline.expired():
            break
        obj = _WSObjective(
            rows,
            cols,
            q,
            data.shape,
            U.shape[1],
            b is not None,
            alpha,
            "hinge",
            _Surrogate(),
        )
        z0 = _flat(U, V, b)
        bounds = _offset_bounds(b, tau, z0.size)
        z, it, _ = _lbfgs(obj, z0, bounds, deadline, _INNER_ITER)
        n_iter += it
        U, V, b = obj.unpack(z)
        U, V = U.copy(), V.copy()
    if best is None:
        return U, V, None if b is None else np.asarray(b), None, False
    U, V, b, n_wrong = best
    return U, V, None if b is None else np.asarray(b), n_wrong, False


def _working_set_fit(
    X,
    k,
    *,
    tau=0.5,
    alpha=1e-3,
    deadline,
    random_state=0,
    n_jobs=None,
    logistic_share=0.5,
    verbose=0,
):
    """One rank-``k`` fit of a large sparse binary ``X`` with the global offset.

    The SVD start of :func:`~sklearn_rrank._lpca._start._svd_init`, the logistic
    phase (:func:`_ws_fit_core`, ending at ``logistic_share`` of the time left at
    the latest) and, unless it is exact, the margin phase
    (:func:`_ws_margin_fit`). ``X`` is a validated complete CSR matrix; the
    working-set path is taken whatever its size (the benchmarks use it on small
    graphs too). Returns ``(L, R, info)``: factors packaged at ``tau`` (float64,
    not certified here) and ``info`` with ``"start_seconds"``, ``"n_iter"``,
    ``"n_wrong"`` (the last scan's count, float32), ``"exact"`` and
    ``"working_set"`` (one row per scan of both phases).
    """
    t0 = time.perf_counter()
    data = _Data(X, dtype=np.float32)
    U, V, mu = _svd_init(data, k, "global", random_state, tau, deadline=deadline)
    start_seconds = time.perf_counter() - t0
    U, V, mu, n_iter, info = _ws_fit_core(
        data,
        U,
        V,
        mu,
        tau=tau,
        alpha=alpha,
        max_iter=1 << 30,
        tol=0.0,
        n_jobs=n_jobs,
        stop_when_exact=True,
        deadline=deadline.child(fraction=logistic_share),
        verbose=verbose,
    )
    rows = list(info["working_set"])
    n_wrong, exact = info["n_errors_logit"], info["status"] == "exact"
    if not exact and not deadline.expired():
        margin_rows = []
        Um, Vm, mum, nm, exact = _ws_margin_fit(
            data,
            U,
            V,
            mu,
            tau=tau,
            alpha=alpha,
            deadline=deadline,
            random_state=random_state,
            n_jobs=n_jobs,
            history=margin_rows,
        )
        rows += margin_rows
        if nm is not None and nm < n_wrong:
            U, V, mu, n_wrong = Um, Vm, mum, nm
        if margin_rows:  # the iterations before the last scan of the phase
            n_iter += margin_rows[-1]["iterations"]
    L, R = _package(U, V, mu, tau)
    return (
        L,
        R,
        {
            "start_seconds": start_seconds,
            "n_iter": int(n_iter),
            "n_wrong": int(n_wrong),
            "exact": bool(exact),
            "working_set": rows,
            "logistic_status": info["status"],
        },
    )
