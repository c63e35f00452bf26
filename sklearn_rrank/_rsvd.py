"""R-SVD: the rounded truncated SVD (paper Section 3, "Rounded SVD algorithm").

The paper computes the rank-k truncated SVD of ``B`` for k = 1, 2, ... and rounds each
one. Here one SVD is computed once and the rounding error of *every* truncation
k = 1..K is obtained by a single incremental rank-1 scan: for a block of rows the
running sum ``sum_{l <= k} s_l u_l v_l^T`` is updated by one rank-1 term per k and its
rounding compared with the data, so each entry is touched once per k while it sits in
cache. The error is not monotone in k, so the scan is exhaustive (no bisection).
"""

import time

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.linalg import svds
from sklearn.utils import check_random_state, gen_batches

from sklearn_rrank._base import FactorizationResult, RankSearchResult
from sklearn_rrank._rounding import certify_rounding

__all__ = ["rsvd_error_curve", "rsvd_fit", "rsvd_rank_upper_bound", "truncated_svd"]

# above this many entries a dense SVD of all components is avoided when few are needed
_DENSE_SVD_ENTRIES = 4_000_000

# rows per block of the incremental scan: about 256 KiB of float64 per block
_SCAN_BLOCK_ENTRIES = 1 << 15


def truncated_svd(X, n_components=None, *, random_state=None):
    """First ``n_components`` singular triplets of ``X`` (dense LAPACK or ARPACK).

    A request for at most a quarter of ``min(m, n)`` components (or at most half, for
    sparse or large input) uses ARPACK (:func:`scipy.sparse.linalg.svds`), accurate
    to machine precision; otherwise one full LAPACK SVD (``gesdd``).

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features), dtype float64
    n_components : int or None
        Number of components K (None = ``min(m, n)``).
    random_state : int, RandomState instance or None
        Start vector of ARPACK.

    Returns
    -------
    U : ndarray of shape (n_samples, K)
    s : ndarray of shape (K,)
    Vt : ndarray of shape (K, n_features)
    """
    m, n = X.shape
    full = min(m, n)
    K = full if n_components is None else min(int(n_components), full)
    if K <= full // 4 or (
        K <= full // 2 and (sp.issparse(X) or m * n > _DENSE_SVD_ENTRIES)
    ):
        # Lanczos (ARPACK) for a few leading triplets: accurate to machine precision
        # in the singular values, unlike a randomized SVD
        rng = check_random_state(random_state)
        v0 = rng.uniform(-1, 1, size=min(m, n))
        U, s, Vt = svds(sp.csr_matrix(X), k=K, v0=v0, solver="arpack")
        order = np.argsort(s)[::-1]
        return U[:, order], s[order], Vt[order]
    Xd = X.toarray() if sp.issparse(X) else X
    U, s, Vt = scipy.linalg.svd(Xd, full_matrices=False, lapack_driver="gesdd")
    return U[:, :K], s[:K], Vt[:K]


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
    m, n = X.shape
    K = s.shape[0]
    US = U * s
    errors = np.zeros(K + 1, dtype=np.int64)
    ones = X.sum() if sp.issparse(X) else np.count_nonzero(X)
    errors[0] = int(ones) if tau > 0 else int(m * n - ones)
    for rows in gen_batches(m, max(1, _SCAN_BLOCK_ENTRIES // max(n, 1))):
        Xb = X[rows].toarray() if sp.issparse(X) else X[rows]
        Xb = Xb == 1
        A = np.zeros(Xb.shape)
        for k in range(K):
            A += np.outer(US[rows, k], Vt[k])
            errors[k + 1] += np.count_nonzero((A >= tau) != Xb)
    return errors


def rsvd_fit(X, n_components, *, tau=0.5, random_state=None):
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
    U, s, Vt = truncated_svd(X, k, random_state=random_state)
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


def rsvd_rank_upper_bound(
    X, *, tau=0.5, max_rank=None, time_limit=None, random_state=None, verbose=0
):
    """Rounding-rank upper bound by R-SVD: the first exact rounded truncation.

    The paper's greedy loop k = 1, 2, ... (Section 3), computed with one SVD and one
    incremental scan. The first k with zero errors is certified with
    :func:`~sklearn_rrank.certify_rounding`; if float64 round-off makes that
    certificate fail, the scan continues with the next exact k.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features), dtype float64
        Binary data (no missing entries).
    tau : float, default=0.5
        Rounding threshold.
    max_rank : int or None, default=None
        Largest k tried (None = ``min(m, n)``).
    time_limit : float or None, default=None
        Seconds; checked between the SVD and the scan and during the certification.
    random_state : int, RandomState instance or None
        Start vector of ARPACK for large or sparse input.
    verbose : int, default=0
        Print a summary line at 1.

    Returns
    -------
    result : RankSearchResult
        ``info`` holds ``errors_by_k`` (up to the certified k) and ``svd_seconds``.
    """
    t0 = time.perf_counter()
    U, s, Vt = truncated_svd(X, max_rank, random_state=random_state)
    t_svd = time.perf_counter() - t0
    errors = rsvd_error_curve(X, U, s, Vt, tau=tau)
    info = {"svd_seconds": t_svd, "errors_by_k": errors.tolist()}
    for k in np.flatnonzero(errors == 0):
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            return RankSearchResult(rank=None, stopped_early=True, info=info)
        k = int(k)
        L = U[:, :k] * s[:k]
        R = Vt[:k].T
        if k == 0:
            L, R = np.zeros((X.shape[0], 0)), np.zeros((X.shape[1], 0))
        if certify_rounding(X, L, R, tau=tau):
            if verbose:
                print(f"[rsvd] certified rank {k} in {time.perf_counter() - t0:.2f} s")
            return RankSearchResult(rank=k, L=L, R=R, certified=True, info=info)
    info["message"] = "no truncation up to max_rank rounds exactly with a certificate"
    return RankSearchResult(rank=None, stopped_early=max_rank is not None, info=info)
