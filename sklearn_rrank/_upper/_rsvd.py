"""R-SVD: the rounded truncated SVD (paper Section 3, "Rounded SVD algorithm").

The paper computes the rank-k truncated SVD of ``B`` for k = 1, 2, ... and rounds each
one. Here one SVD is computed once and the rounding error of *every* truncation
k = 1..K is obtained by a single incremental rank-1 scan: for a block of rows the
running sum ``sum_{l <= k} s_l u_l v_l^T`` is updated by one rank-1 term per k and its
rounding compared with the data, so each entry is touched once per k while it sits in
cache. The error is not monotone in k, so the scan is exhaustive (no bisection).
"""

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.linalg.blas import dger as _dger
from scipy.sparse.linalg import svds
from sklearn.utils import check_random_state
from threadpoolctl import threadpool_limits

from sklearn_rrank._core._memory import gib, svd_bytes, svd_components_that_fit
from sklearn_rrank._core._results import FactorizationResult
from sklearn_rrank._core._rounding import _csr_ones, _row_batches
from sklearn_rrank._search._policy import DEFAULT_POLICY

__all__ = ["rsvd_error_curve", "truncated_svd"]

# above this many entries a dense SVD of all components is avoided when few are needed
_DENSE_SVD_ENTRIES = 4_000_000

# relative accuracy of ARPACK's singular values: cheaper than machine precision, and
# every bound drawn from a truncation is certified on its own
_ARPACK_TOL = 1e-10

# rows per block of the incremental scan: about 1 MiB of float64 per block
_SCAN_BLOCK_ENTRIES = 1 << 17


@dataclass(frozen=True)
class Scan:
    """How R-SVD scans the truncations of its SVD (the order of the ranks is the
    policy's: :meth:`~sklearn_rrank._search._policy.SearchPolicy.rsvd_order`).

    Attributes
    ----------
    row_entries : int, default=4194304
        Entries per block of rows of the scan from the top (float64 and a mask:
        36 MiB).
    svd_seconds : callable or None, default=None
        ``svd_seconds(m, n, K, nnz, route=route)``: the estimated seconds of the
        SVD, which no deadline stops (an SVD that does not fit the time left is
        skipped); None: :func:`_svd_seconds`.
    """

    row_entries: int = 1 << 22
    svd_seconds: Callable | None = None


#: the scan every search uses
SCAN = Scan()


def truncated_svd(X, n_components=None, *, random_state=None, route=None):
    """First ``n_components`` singular triplets of ``X`` (LAPACK, Gram or ARPACK).

    A request for at most a quarter of ``min(m, n)`` components uses ARPACK
    (:func:`scipy.sparse.linalg.svds`), accurate to 1e-10 relative in the singular
    values; otherwise small dense input gets one full LAPACK SVD (``gesdd``) and
    sparse or large input the eigenvectors of its Gram matrix (:func:`_gram_svd`);
    :func:`_svd_route` makes the choice.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features), dtype float64
    n_components : int or None
        Number of components K (None = ``min(m, n)``).
    random_state : int, RandomState instance or None
        Start vector of ARPACK.
    route : {"arpack", "gram", "gesdd"} or None
        The route (None: :func:`_svd_route`'s choice); ``"arpack"`` for many
        components when the Gram matrix would not fit in memory.

    Returns
    -------
    U : ndarray of shape (n_samples, K)
    s : ndarray of shape (K,)
    Vt : ndarray of shape (K, n_features)
    """
    m, n = X.shape
    full = min(m, n)
    K = full if n_components is None else min(int(n_components), full)
    nnz = X.count_nonzero() if sp.issparse(X) else np.count_nonzero(X)
    if nnz == 0:  # ARPACK cannot start on the zero matrix; every triplet is zero
        return _zero_triplets(m, n, K)
    route = route or _svd_route(m, n, K, sp.issparse(X))
    if route == "arpack" and K >= full:  # ARPACK finds fewer than all triplets
        route = _svd_route(m, n, K, sp.issparse(X))
    if route == "arpack":
        # Lanczos (ARPACK) for a few leading triplets, to a relative accuracy of
        # 1e-10 in the singular values (unlike a randomized SVD)
        rng = check_random_state(random_state)
        v0 = rng.uniform(-1, 1, size=min(m, n))
        U, s, Vt = svds(sp.csr_matrix(X), k=K, v0=v0, tol=_ARPACK_TOL, solver="arpack")
        order = np.argsort(s)[::-1]
        return U[:, order], s[order], Vt[order]
    with _lapack_threads():
        if route == "gram":
            return _gram_svd(X, K)
        U, s, Vt = scipy.linalg.svd(X, full_matrices=False, lapack_driver="gesdd")
    return U[:, :K], s[:K], Vt[:K]


def _svd_route(m, n, K, sparse):
    """The route of :func:`truncated_svd` for K triplets: arpack, gram or gesdd.

    ARPACK for at most a quarter of ``min(m, n)`` components; beyond, the Gram
    route for sparse or large input and a full ``gesdd`` for small dense input.
    The one choice behind both the SVD and its time estimate
    (:func:`_svd_seconds`), so that an estimate is of the route that runs.
    """
    if K <= min(m, n) // 4:
        return "arpack"
    if sparse or m * n > _DENSE_SVD_ENTRIES:
        return "gram"
    return "gesdd"


def _components_that_fit(m, n, K, sparse):
    """The most triplets, at most ``K``, whose SVD fits in memory, and its route.

    The route of :func:`_svd_route` when all ``K`` fit; else the larger of what
    the Gram route (its ``min(m, n)``-square Gram matrix and the triplets) and
    ARPACK (the triplets and its Lanczos basis) can hold
    (:func:`~sklearn_rrank._core._memory.svd_components_that_fit`): an SVD that
    does not fit is truncated, not skipped, and the scan certifies below it.
    """
    route = _svd_route(m, n, K, sparse)
    fit = svd_components_that_fit(m, n, K, lanczos=route == "arpack")
    if fit >= K:
        return K, route
    lanczos = svd_components_that_fit(m, n, K, lanczos=True)
    gram = svd_components_that_fit(m, n, K) if route != "arpack" else 0
    if gram > min(m, n) // 4 and gram >= lanczos:
        return gram, _svd_route(m, n, gram, sparse)
    return lanczos, "arpack"


def _lapack_threads():
    """One BLAS thread for a long LAPACK call on a busy machine, else no limit.

    With the cores busy, OpenBLAS's threads wait for each other, and a full SVD
    on two threads runs several times slower than on one. A load of at least one
    per core (:func:`_load_average`) counts as busy.
    """
    if _load_average() >= 1.0:
        return threadpool_limits(limits=1, user_api="blas")
    return contextlib.nullcontext()


def _target_svd(X, K, tau, random_state=None, route=None):
    """Triplets of the matrix that R-SVD rounds at ``tau``.

    The SVD approximates the 0/1 entries, whose midpoint is 1/2. For ``tau > 0``
    the truncations of ``2 tau X`` are rounded at ``tau`` (the singular values of
    ``X`` scaled by ``2 tau``: the same roundings as those of ``X`` at 1/2, by the
    paper's proposition on changing the rounding threshold), so a product that
    lands at ``1 - 1e-16`` for a one never meets a threshold ``tau = 1`` that sits
    on the data's own values. For ``tau <= 0`` scaling cannot move the midpoint to
    ``tau``; the truncations of ``X - 1/2 + tau`` (the halved sign matrix shifted
    to ``tau``, dense) are rounded instead. At ``tau = 0.5`` this is the SVD of
    ``X`` itself.
    """
    if tau > 0:
        U, s, Vt = truncated_svd(X, K, random_state=random_state, route=route)
        return U, s * (2.0 * tau), Vt
    Xd = X.toarray() if sp.issparse(X) else np.asarray(X)
    return truncated_svd(Xd + (tau - 0.5), K, random_state=random_state, route=route)


def _gram_svd(X, K):
    """Leading K triplets from the eigenvectors of the smaller Gram matrix.

    ``X^T X`` (or ``X X^T``) is formed with sparse products when ``X`` is sparse and
    its top ``K`` eigenpairs come from LAPACK's ``syevr`` (all of them: ``syevd``
    through :func:`numpy.linalg.eigh`, which lets other threads, the progress
    line's, run meanwhile); the other side follows as
    ``X V / s``: on sparse input much faster than a dense ``gesdd``. The singular
    values below
    ``sqrt(eps) * s_1`` lose relative accuracy (the Gram matrix squares them), but
    the truncations ``X V_k V_k^T`` stay orthogonal projections of ``X``, and every
    bound drawn from them is certified on its own.
    """
    m, n = X.shape
    Xs = sp.csr_matrix(X) if sp.issparse(X) else X
    transpose = m < n
    A = Xs.T if transpose else Xs  # the tall side: A is (big, small)
    G = A.T @ A
    G = G.toarray() if sp.issparse(G) else np.asarray(G)
    small = G.shape[0]
    if K == small:
        # all of them: numpy's eigh (syevd) releases the GIL, so the progress line
        # goes on during it (scipy's holds it); it copies G
        w, V = np.linalg.eigh(G)
    else:
        # G is this function's own array: LAPACK may work in it, in Fortran order
        # (a C-ordered G would be copied); G is symmetric, so G.T is the same matrix
        w, V = scipy.linalg.eigh(
            G if G.flags.f_contiguous else G.T,
            subset_by_index=[small - K, small - 1],
            overwrite_a=True,
        )
    # freed before the other side is formed (numpy's eigh of all components
    # copies G once more)
    del G
    order = np.argsort(w)[::-1]
    # one C-ordered copy in the new order (A @ V copied the Fortran-ordered V again);
    # "clip" is not "raise", which buffers ``out`` (the indices are all valid)
    w, V = w[order], np.take(V, order, axis=1, out=np.empty(V.shape), mode="clip")
    s = np.sqrt(np.clip(w, 0.0, None))
    B = np.asarray(A @ V)
    B /= np.where(s > 0, s, np.inf)  # in place; components with s = 0 become 0
    if transpose:  # A = X^T: V spans the rows' side
        return V, s, B.T
    return B, s, V.T


def rsvd_error_curve(X, U, s, Vt, *, tau=0.5):
    """Rounding errors of every truncation k = 1..K by one incremental scan.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
        Binary data (float64, complete).
    U, s, Vt : ndarrays of shapes (n_samples, K), (K,), (K, n_features)
        Singular triplets, e.g. from :func:`truncated_svd`.
    tau : float, default=0.5
        Rounding threshold.

    Returns
    -------
    errors : ndarray of shape (K + 1,), dtype int64
        ``errors[k]`` is the number of entries where ``round_tau`` of the rank-k
        truncation differs from ``X``; ``errors[0]`` is for the zero matrix.
    """
    return _error_curve(X, U, s, Vt, tau)


def _error_curve(X, U, s, Vt, tau, deadline=None):
    """:func:`rsvd_error_curve` on trusted input; None if ``deadline`` expires."""
    m, n = X.shape
    K = s.shape[0]
    US = U * s
    errors = np.zeros(K + 1, dtype=np.int64)
    ones = X.sum() if sp.issparse(X) else np.count_nonzero(X)
    errors[0] = int(ones) if tau > 0 else int(m * n - ones)
    Vt = np.ascontiguousarray(Vt)
    block = max(1, _SCAN_BLOCK_ENTRIES // max(n, 1))
    wrong = np.empty((block, n), dtype=bool)
    # each rank-1 update is BLAS dger in place on the block (one pass); OpenBLAS
    # threads make dger on a 1 MiB block ~20x slower, so the scan runs on one
    # errors = ones + #(A >= tau) - 2 #(ones where A >= tau): the ones are gathered
    # by their flat positions in the block, so X is never densified
    with threadpool_limits(limits=1, user_api="blas"):
        for rows in _row_batches(m, n, _SCAN_BLOCK_ENTRIES):
            at_ones = _flat_ones(X, rows, n)
            A = np.zeros((at_ones[1], n))
            flat = A.reshape(-1)
            at_ones = at_ones[0]
            w = wrong[: A.shape[0]]
            if deadline is not None and deadline.expired():
                return None  # checked every block of rows (about 0.1 s of work)
            Ub = np.ascontiguousarray(US[rows])
            for k in range(K):
                _dger(1.0, Vt[k], Ub[:, k], a=A.T, overwrite_a=1)  # A += u_k v_k^T
                np.greater_equal(A, tau, out=w)
                hits = np.count_nonzero(flat[at_ones] >= tau)
                errors[k + 1] += at_ones.shape[0] + np.count_nonzero(w) - 2 * hits
    return errors


def _flat_ones(X, rows, n):
    """Flat positions of the ones of ``X[rows]`` in a C-ordered block, and its rows."""
    if sp.issparse(X):
        Xb = X[rows]
        r, c = _csr_ones(Xb)
        return r * n + c, Xb.shape[0]
    Xb = X[rows]
    return np.flatnonzero(Xb == 1), Xb.shape[0]


def _rsvd_fit(X, n_components, *, tau=0.5, random_state=None):
    """Minimum-error rounding rank-k by R-SVD: the best rounded truncation l <= k.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features), dtype float64
        Binary data (no missing entries).
    n_components : int
        The rank k.
    tau : float, default=0.5
        Rounding threshold.
    random_state : int, RandomState instance or None
        Start vector of ARPACK for large or sparse input.

    Returns
    -------
    result : FactorizationResult
        ``L = U_l diag(s_l)`` and ``R = V_l`` padded with zero columns to k columns,
        where l <= k has the fewest rounding errors (the paper, Section 3: "compute the
        truncated rank-l SVD for all l = 1..k and return the rounded matrix with the
        smallest error"). ``info`` holds ``errors_by_k`` and ``best_rank``.
    """
    m, n = X.shape
    k = int(n_components)
    U, s, Vt = _target_svd(X, k, tau, random_state=random_state)
    errors = rsvd_error_curve(X, U, s, Vt, tau=tau)
    best = int(np.argmin(errors[1:]) + 1) if errors.shape[0] > 1 else 0
    if errors[0] < errors[best]:
        best = 0
    L = np.zeros((m, k))
    R = np.zeros((n, k))
    L[:, :best] = U[:, :best] * s[:best]
    R[:, :best] = Vt[:best].T
    info = {"errors_by_k": errors.tolist(), "best_rank": best, "Vt": Vt}
    return FactorizationResult(L=L, R=R, n_iter=0, converged=True, info=info)


def _zero_triplets(m, n, K):
    return np.zeros((m, K)), np.zeros(K), np.zeros((K, n))


def _gemm_rate():
    """Floating-point operations per second of a float64 GEMM on this machine.

    The better of two 1000 x 1000 products (about 2e9 operations each, a few tens of
    milliseconds), so a passing load does not make the estimate absurd.
    """
    a = np.ones((1000, 1000))
    best = np.inf
    for _ in range(2):
        t0 = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - t0)
    return 2e9 / max(best, 1e-6)


# sparse ARPACK: Lanczos steps per component at tol 1e-10, restarts included
# (calibrated on PubMed's SVDs of 200 and 1575 components: within a factor 2 of
# both), and basis vectors per component (scipy's svds: ncv = 2 K + 1)
_ARPACK_STEPS = 60.0
_ARPACK_BASIS = 2.0


def _svd_seconds(m, n, K, nnz=None, route=None):
    """Rough seconds of :func:`truncated_svd` for K components (for the budget).

    A dense ``gesdd`` costs about ``4 m n^2 + 22 n^3`` operations (``n = min(m, n)``),
    the Gram path about ``2 m n^2 + 9 n^3`` (``4 nnz n + 9 n^3`` for sparse input
    with ``nnz`` stored entries; ``9 n^3`` is calibrated on the Gram SVD of a
    sparse 16000 x 8000 matrix, ``benchmarks/rsvd_budget.py``), ARPACK a
    few sweeps of K vectors; on sparse input ARPACK's steps each multiply by
    ``X`` and ``X^T`` (``4 nnz``) and orthogonalise against its basis of
    ``2 K`` vectors of length ``min(m, n)`` (``_ARPACK_BASIS``), so its cost
    follows ``nnz``, not ``m n`` (see :data:`_ARPACK_STEPS`); LAPACK reaches
    a fraction of the GEMM rate, taken as a half here.
    """
    a, b = max(m, n), min(m, n)
    route = route or _svd_route(m, n, K, nnz is not None)
    if route == "arpack" and nnz is not None:
        flops = _ARPACK_STEPS * K * (4.0 * nnz + 2.0 * _ARPACK_BASIS * b * K)
    elif route == "arpack":
        flops = 20.0 * a * b * K
    elif route == "gram":
        return _gram_svd_seconds(m, n, nnz)
    else:
        flops = 4.0 * a * b * b + 22.0 * b**3
    return flops / (_gemm_rate() / 2) * _load_factor()


def _gram_svd_seconds(m, n, nnz=None):
    """Rough seconds of :func:`_gram_svd` (see :func:`_svd_seconds`)."""
    a, b = max(m, n), min(m, n)
    product = 4.0 * nnz * b if nnz is not None else 2.0 * a * b * b
    return (product + 9.0 * b**3) / (_gemm_rate() / 2) * _load_factor()


def _load_factor():
    """How much slower a long LAPACK call may run than the rate measured just now.

    The GEMM probe sees the load of one moment; an SVD that cannot be stopped runs
    for seconds while other processes come and go. The estimate is scaled by the
    load per core (:func:`_load_average`), when it exceeds 1, so that such a call
    is skipped rather than overrun its budget.
    """
    return max(1.0, _load_average())


def _load_average(loadavg=None):
    """Processes wanting a core per core: the larger of now and the last minute.

    The 1-minute load average lags behind processes started a few seconds
    before a call. Where ``/proc`` exists, the
    threads of other processes runnable at this moment count as well, plus one for
    this process (its own BLAS threads, which spin for a while after a product,
    are not a load). 0 where the platform tells neither. ``loadavg`` reads the
    load averages (None: :func:`os.getloadavg`; a test hands a fixed reading).
    """
    cores = max(os.cpu_count() or 1, 1)
    try:
        average = (loadavg or os.getloadavg)()[0]
    except (AttributeError, OSError):
        average = 0.0
    return max(average, _runnable_elsewhere() + 1.0) / cores


def _runnable_elsewhere():
    """Threads of other processes runnable now (Linux ``/proc``; else -1)."""
    try:
        with open("/proc/loadavg") as f:
            total = int(f.read().split()[3].split("/")[0])
        own = 0
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/stat") as f:
                own += f.read().rsplit(")", 1)[1].split()[0] == "R"
    except (OSError, ValueError, IndexError):
        return -1
    return max(total - own, 0)


def _offer_truncation(incumbent, U, s, Vt, k):
    m, n = U.shape[0], Vt.shape[1]
    if k == 0:
        return incumbent.offer(np.zeros((m, 0)), np.zeros((n, 0)))
    if np.all(s[:k] == 1.0):  # the scan's U already holds U S: no m x k copy
        return incumbent.offer(U[:, :k], Vt[:k].T)
    return incumbent.offer(U[:, :k] * s[:k], Vt[:k].T)


def _scan_exhaustive(X, incumbent, deadline, U, s, Vt, tau):
    """Error of every truncation (:func:`rsvd_error_curve`), then certify zeros.

    Returns None (nothing recorded or certified) if the deadline ends the scan.
    """
    errors = _error_curve(X, U, s, Vt, tau, deadline)
    if errors is None:
        return None
    for k, e in enumerate(errors):
        incumbent.errors_by_k[k] = int(e)
    for k in np.flatnonzero(errors == 0):
        if _offer_truncation(incumbent, U, s, Vt, int(k)):
            break
    return errors


def _scan_blocked(X, incumbent, deadline, U, s, Vt, tau, bounds, scan=SCAN):
    """Scan from the top: ``A -= U_b S_b V_b^T`` one block of components at a time.

    The boundaries are ``bounds``, ``K, K - block, ..., 0`` (the policy's
    :meth:`~sklearn_rrank._search._policy.SearchPolicy.rsvd_order`). Every block of
    rows (the row
    blocks of :func:`~sklearn_rrank._core._rounding._row_batches`, at most
    ``scan.row_entries`` entries) starts from its rank-K truncation and subtracts
    blocks of components while its rounding stays exact, down to the highest
    boundary at which some earlier block of rows already failed; the ones are read
    from ``X``'s CSR pattern when it is sparse, so only the block is ever dense. The
    lowest boundary exact for every row is thus the one above the highest failing
    boundary (``bottom``); the entries wrong at ``bottom`` are then followed component
    by component up to the next boundary to find the least exact ``k`` there, which
    is certified (if that fails, the lowest exact boundary is). On large matrices
    this finds the least ``k`` of the last stretch of exact truncations, which is the
    paper's first exact ``k`` unless the error curve returns to zero and rises again
    below it (the exhaustive scan of small inputs sees every ``k``). When the
    deadline comes close before every block of rows is scanned, nothing is
    certified. Memory: the triplets and one block of rows (float64 and a mask).
    """
    m, n = X.shape
    K = s.shape[0]
    US = U
    US *= s  # in place: U is this search's own array (saves an m x K copy)
    s = np.ones_like(s)  # the truncations below are US[:, :k] @ Vt[:k]
    fail = -1  # index into bounds of the highest failing boundary (-1: none yet)
    wrong_at_fail = []  # (rows, cols, values, targets) of the entries wrong there
    batches = _row_batches(m, n, scan.row_entries)
    t0 = time.perf_counter()
    for i, rows in enumerate(batches):
        if i and deadline.limited:
            per_batch = (time.perf_counter() - t0) / i
            # the rest of the scan and a certificate (two products) must fit
            if deadline.remaining() < (len(batches) - i + 2) * per_batch:
                return "time limit"
        at_ones, size = _flat_ones(X, rows, n)
        ones = np.zeros(size * n, dtype=bool)
        ones[at_ones] = True
        ones = ones.reshape(size, n)
        Ub = US[rows]
        A = Ub @ Vt
        wrong = np.empty_like(ones)
        j = 0
        while True:
            np.greater_equal(A, tau, out=wrong)
            np.not_equal(wrong, ones, out=wrong)
            if np.count_nonzero(wrong):
                if fail == -1 or j < fail:  # a higher failing boundary
                    fail, wrong_at_fail = j, []
                if j == fail:
                    r, c = np.nonzero(wrong)
                    wrong_at_fail.append((r + rows.start, c, A[r, c], ones[r, c]))
                break
            if j + 1 == len(bounds) or (fail != -1 and j + 1 > fail):
                break  # exact down to 0, or down to the boundary known to fail
            top, bottom = bounds[j], bounds[j + 1]
            A -= Ub[:, bottom:top] @ Vt[bottom:top]
            j += 1
        if fail == 0:  # the rank-K truncation is not exact: stop at once
            incumbent.record(K, None, message=f"R-SVD scan k={K}: not exact")
            return "the rank-K truncation is not exact"
    if fail == -1:
        _offer_truncation(incumbent, U, s, Vt, 0)
        return "certified"
    lowest_exact, bottom = bounds[fail - 1], bounds[fail]
    incumbent.record(lowest_exact, 0, message=f"R-SVD scan k={lowest_exact}")
    rows_ = np.concatenate([w[0] for w in wrong_at_fail])
    cols = np.concatenate([w[1] for w in wrong_at_fail])
    vals = np.concatenate([w[2] for w in wrong_at_fail])
    target = np.concatenate([w[3] for w in wrong_at_fail])
    incumbent.record(bottom, int(vals.size), message=f"R-SVD scan k={bottom}")
    # the least exact k in (bottom, top]: follow the entries wrong at bottom
    for k in range(bottom, lowest_exact):
        vals += US[rows_, k] * Vt[k, cols]
        if np.all((vals >= tau) == target):
            if _offer_truncation(incumbent, U, s, Vt, k + 1):
                return "certified"
    _offer_truncation(incumbent, U, s, Vt, lowest_exact)
    return "certified"


def _rsvd_search(
    X,
    incumbent,
    deadline,
    *,
    tau,
    random_state=None,
    n_jobs=None,
    verbose=0,
    max_rank=None,
    policy=None,
    scan=SCAN,
):
    """R-SVD's rank search: the family of ``methods=("rsvd",)``.

    Trusts its input (``X`` a validated float64 array or CSR matrix, no missing
    entries; parameters checked). The paper's greedy loop k = 1, 2, ... (Section 3,
    "Rounded SVD algorithm"), computed with one SVD and a scan over the truncations,
    in the order of the policy's
    :meth:`~sklearn_rrank._search._policy.SearchPolicy.rsvd_order`.
    Small inputs (``m n K <= 4e9``) get the exhaustive incremental scan of
    :func:`rsvd_error_curve` (the error of every ``k``); larger ones an anytime
    blocked scan from the top (see :func:`_scan_blocked`: the rank-K truncation is
    certified first, then 64 components fewer at a time while the truncations stay
    exact, and the least exact ``k`` of the last exact block). Every candidate goes
    through ``incumbent.offer`` (certified with the kernel of
    :func:`~sklearn_rrank.certify_rounding`); a truncation whose certificate fails is
    skipped and the scan goes on. With a limited ``deadline`` the SVD is skipped when
    its estimated time exceeds the time left, and the scan stops at the deadline
    keeping what it certified. Only truncations below ``incumbent.bound`` are tried.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Validated binary data.
    incumbent : Incumbent
        The skeleton's incumbent (bounds, certification, events).
    deadline : Deadline
        The call's deadline.
    tau : float
        Rounding threshold.
    random_state : int, RandomState instance or None
        Start vector of ARPACK for large or sparse input.
    n_jobs, verbose : ignored
        Part of the family-search signature.
    max_rank : int or None
        Largest k tried (None = ``min(m, n)``): a ``method_params`` of ``"rsvd"``.
    policy : SearchPolicy or None
        The order of the ranks scanned
        (:meth:`~sklearn_rrank._search._policy.SearchPolicy.rsvd_order`), a
        ``method_params`` of ``"rsvd"`` as of ``"lpca"`` and ``"projlp"``; None:
        the default rules.

    Other Parameters
    ----------------
    scan : Scan, default=SCAN
        How the truncations are scanned (not a method parameter: the package's
        searches use the default; a test hands smaller blocks).

    Returns
    -------
    info : dict
        Diagnostics: ``scan``, ``svd_route`` (``"arpack"``, ``"gram"`` or
        ``"gesdd"``: the SVD's route, of which the estimate is),
        ``svd_seconds`` (``svd_seconds_estimate`` with a limited deadline),
        ``message`` and ``stopped_early`` when the SVD was skipped, the scan was
        cut by the deadline or ``max_rank`` ended it without a certificate. The
        skeleton adds ``errors_by_k`` (dict ``k -> wrong entries``
        for the ``k`` scanned) and ``curve``.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 3, "Rounded SVD algorithm", and
    Table 2 (R-SVD bounds: Paleo 68, APJ 443, Abstracts 4421).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import rounding_rank_bounds
    >>> b = rounding_rank_bounds(np.eye(4), methods=("rsvd",))
    >>> b.upper, b.upper_method
    (4, 'rsvd')
    """
    m, n = X.shape
    full = min(m, n)
    K = full if max_rank is None else min(int(max_rank), full)
    if incumbent.bound is not None:
        K = min(K, incumbent.bound - 1)  # only truncations below the bound help
    if K < max(incumbent.lower, 1):
        return {"message": f"no rank below {incumbent.limit_text()} to try"}
    info = {}
    # at tau <= 0 the SVD is of a dense shifted copy (:func:`_target_svd`)
    sparse = sp.issparse(X) and tau > 0
    fit, route = _components_that_fit(m, n, K, sparse)
    if fit < K:  # the singular vectors of all K components would not fit
        need = svd_bytes(m, n, K, lanczos=_svd_route(m, n, K, sparse) == "arpack")
        info["memory"] = f"{K} components need {gib(need)}"
        if fit < max(incumbent.lower, 1):
            return info | {"message": f"skipped: {info['memory']}"}
        K = fit
        info["memory"] += f"; the SVD keeps {K} ({route})"
    info["svd_route"] = route
    if deadline.limited:
        seconds = scan.svd_seconds or _svd_seconds
        estimate = seconds(m, n, K, X.nnz if sparse else None, route=route)
        info["svd_seconds_estimate"] = estimate
        if estimate > deadline.remaining():
            info["message"] = (
                f"skipped: the SVD of {K} components needs about {estimate:.0f} s, "
                f"{deadline.remaining():.0f} s were left"
            )
            info["stopped_early"] = True
            return info
    incumbent.event("step", message=f"SVD of {K} components")
    t0 = time.perf_counter()
    U, s, Vt = _target_svd(X, K, tau, random_state=random_state, route=route)
    info["svd_seconds"] = time.perf_counter() - t0
    policy = DEFAULT_POLICY if policy is None else policy
    bounds = policy.rsvd_order(m, n, K)
    if bounds is None:
        info["scan"] = "exhaustive"
        if _scan_exhaustive(X, incumbent, deadline, U, s, Vt, tau) is None:
            info["stopped_early"] = True
    else:
        info["scan"] = f"blocked ({policy.rsvd_block} components per block)"
        reason = _scan_blocked(X, incumbent, deadline, U, s, Vt, tau, bounds, scan)
        if reason == "time limit":
            info["stopped_early"] = True
    if incumbent.rank is None:
        info["message"] = (
            f"no truncation up to k={K} rounds exactly with a certificate"
            if not info.get("stopped_early")
            else "time limit reached during the scan"
        )
        # max_rank (not the known bound) cut the scan short
        limited = max_rank is not None and int(max_rank) < full
        info["stopped_early"] = info.get("stopped_early", False) or limited
    if "memory" in info:
        done = info.get("message", f"certified rank {incumbent.rank}")
        info["message"] = f"{done} ({info['memory']})"
    return info
