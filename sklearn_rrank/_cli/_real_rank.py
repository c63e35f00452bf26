"""The ordinary (linear-algebra) rank line of ``rrank bounds``: whether to compute
it within the budget, and computing it in a thread the command does not wait for
beyond its time."""

import threading
import time

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

# above this many entries the real rank (a full SVD) is not computed
_REAL_RANK_ENTRIES = 4_000_000
# under --time-limit, the real rank is computed only if its estimated time is at most
# this fraction of the budget (the time is kept back from the methods)
_REAL_RANK_SHARE = 0.1
# SVDs of fewer operations are computed without estimating their time
_SMALL_SVD_FLOPS = 2e8


def _svd_seconds(m, n):
    """Estimated seconds of the singular values of an ``m x n`` matrix, now.

    The machine's speed is measured on a small SVD (the fastest of three, a few
    milliseconds each), so that a busy machine gives a longer estimate; the count
    of operations is that of the bidiagonalization (``4 q p**2 - 4 p**3 / 3``,
    ``p = min(m, n)``, ``q = max(m, n)``), with a safety factor of 1.5. Small
    SVDs give 0 without a measurement.
    """
    p, q = min(m, n), max(m, n)
    flops = 4 * q * p**2 - 4 * p**3 / 3
    if flops <= _SMALL_SVD_FLOPS:
        return 0.0  # well under a second anywhere: not worth measuring
    size = 256
    A = np.random.default_rng(0).random((size, size))
    fastest = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        np.linalg.svd(A, compute_uv=False)
        fastest = min(fastest, time.perf_counter() - start)
    rate = (8 / 3) * size**3 / max(fastest, 1e-6)
    return 1.5 * flops / rate


def _matrix_rank(X):
    """The real rank of a matrix small enough for a full SVD (see _real_rank_plan)."""
    X = X.toarray() if sp.issparse(X) else X
    return int(np.linalg.matrix_rank(X.astype(np.float64)))


def _matrix_rank_within(X, seconds, rank=_matrix_rank):
    """The real rank, or a note if its SVD does not end within ``seconds``.

    The SVD (``rank(X)``) runs in a daemon thread (LAPACK cannot be stopped): on a
    machine busier than its estimate assumed, the command reports it as not
    computed and ends on time, leaving the thread to the process's exit.
    """
    out = []

    def run():
        # one BLAS thread: on a busy machine, spinning BLAS threads would hold back
        # the command's own thread and so its deadline
        with threadpool_limits(limits=1, user_api="blas"):
            out.append(rank(X))

    thread = threading.Thread(target=run, daemon=True, name="rrank (real rank)")
    thread.start()
    thread.join(max(seconds, 0.0))
    return out[0] if out else "not computed (its SVD ran past the budget)"


def _real_rank_plan(m, n, time_limit, svd_seconds=_svd_seconds):
    """``(compute, seconds kept back, note)`` for the real-rank line.

    ``svd_seconds(m, n)`` estimates the SVD's seconds on this machine now.
    """
    if m * n > _REAL_RANK_ENTRIES:
        # a full SVD of a large matrix would delay the first progress line
        return False, 0.0, "not computed (large)"
    if time_limit is None:
        return True, 0.0, ""
    seconds = svd_seconds(m, n)
    if seconds > _REAL_RANK_SHARE * time_limit:
        return False, 0.0, f"not computed (an SVD of about {seconds:.1f} s)"
    return True, seconds, ""
