"""The blocked full scan of a working-set L-PCA fit: every logit, never all at once.

One scan forms the logits ``theta = U V^T + b`` of all ``m n`` entries in float32,
block of rows by block of rows (a block holds about :data:`_SCAN_ENTRIES` logits,
whatever ``m`` is), and keeps only what the working-set fit
(:mod:`sklearn_rrank._lpca._working_set`) needs of them:

* the zeros whose logit lies above a given level (the candidates of the working
  set ``W``), at most a given number, the largest logits first, shared among the
  blocks in proportion to their rows;
* the number of entries rounded wrong at logit 0 and of those wrong or within
  ``delta`` of 0 (the stop check of ``stop_when_exact``);
* the sum of the zeros' logits outside the candidates (the centre of the
  surrogate of the far zeros).

Memory is ``O((m + n) k + |W|)`` plus one block per thread: the ``m x n`` matrix
is never formed. The ones are read from the CSR pattern of the data. Blocks run in
threads (``n_jobs``) with single-threaded BLAS; the blocks depend on the shape
only, so results do not depend on ``n_jobs``.
"""

from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits

from sklearn_rrank._core._parallel import Parallel, delayed, effective_n_jobs
from sklearn_rrank._core._rounding import _row_batches

__all__ = []

# logits per block of rows: 16 MB of float32, large enough for an efficient
# matrix product, small enough that two threads' blocks stay in memory cheaply
_SCAN_ENTRIES = 1 << 22
# every this many logits of a block estimate its level when too many lie above it
_SAMPLE_STEP = 64


class _ScanResult:
    """What a scan keeps: candidates ``(rows, cols, theta)`` and the counts.

    ``rows``, ``cols`` (int64) are row-major sorted zeros with logit above the
    level, ``theta`` their float32 logits; ``n_wrong`` and ``n_unsafe`` count all
    ``m n`` entries; ``far_sum`` is the float64 sum of the logits of the zeros that
    are not candidates, ``n_far`` their number.
    """

    def __init__(self, rows, cols, theta, n_wrong, n_unsafe, far_sum, n_far):
        self.rows, self.cols, self.theta = rows, cols, theta
        self.n_wrong, self.n_unsafe = int(n_wrong), int(n_unsafe)
        self.far_sum, self.n_far = float(far_sum), int(n_far)


@dataclass(frozen=True)
class _ScanJob:
    """What every block of one scan shares: float32 factors ``U`` (m, p), ``V``
    (n, p), the offset ``b``, the CSR pattern ``indptr``, ``indices`` of the ones,
    and :func:`_scan`'s ``level``, ``cap`` (all blocks), ``delta`` and
    ``deadline``."""

    U: np.ndarray
    V: np.ndarray
    b: float
    indptr: np.ndarray
    indices: np.ndarray
    level: float
    cap: int
    delta: float
    deadline: object = None


def _scan_block(rows, job):
    """One block (slice ``rows``) of :func:`_scan` for the :class:`_ScanJob` ``job``:
    its candidates and counts (None: the deadline passed before it started)."""
    if job.deadline is not None and job.deadline.expired():
        return None
    indptr, level, delta = job.indptr, job.level, job.delta
    theta = job.U[rows] @ job.V.T
    if job.b:
        theta += np.float32(job.b)
    lo, hi = indptr[rows.start], indptr[rows.stop]
    r1 = np.repeat(
        np.arange(rows.stop - rows.start), np.diff(indptr[rows.start : rows.stop + 1])
    )
    c1 = job.indices[lo:hi]
    at_ones = theta[r1, c1]
    n_wrong = int(np.count_nonzero(at_ones < 0))
    n_unsafe = int(np.count_nonzero(at_ones <= delta))
    ones_sum = float(at_ones.sum(dtype=np.float64))
    theta[r1, c1] = -np.inf  # the ones are no zeros
    # the block's share of the cap
    cap = -(-job.cap * (rows.stop - rows.start) // job.U.shape[0])
    counted = level <= -delta  # the unsafe zeros are then all above the level
    above = np.count_nonzero(theta > level)
    if above > 2 * cap:
        # raise the level to about the cap-th largest logit, estimated on every
        # _SAMPLE_STEP-th entry: listing all the entries above a low level costs
        # far more than the scan (most zeros lie above it early in a fit)
        sample = theta.ravel()[::_SAMPLE_STEP]
        want = min(sample.size - 1, max(0, 2 * cap // _SAMPLE_STEP))
        level = max(
            level, float(np.partition(sample, sample.size - 1 - want)[-1 - want])
        )
        counted = counted and level <= -delta
    r, c = np.nonzero(theta > level)
    vals = theta[r, c]
    if counted:  # three passes over the block in all, not five
        n_wrong += int(np.count_nonzero(vals >= 0))
        n_unsafe += int(np.count_nonzero(vals >= -delta))
    else:
        n_wrong += int(np.count_nonzero(theta >= 0))
        n_unsafe += int(np.count_nonzero(theta >= -delta))
    if r.size > cap:
        keep = np.sort(np.argpartition(-vals, cap - 1)[:cap]) if cap else []
        r, c, vals = r[keep], c[keep], vals[keep]
    return r + rows.start, c, vals, n_wrong, n_unsafe, ones_sum


def _scan(
    U,
    V,
    b,
    ones,
    *,
    level,
    cap,
    delta,
    n_jobs=None,
    block_entries=None,
    deadline=None,
):
    """One full scan of the logits ``U V^T + b`` (module docstring).

    Parameters
    ----------
    U : ndarray of shape (m, p)
    V : ndarray of shape (n, p)
        Factors; cast to float32 for the scan.
    b : float
        Global offset of every logit (0 for none).
    ones : CSR matrix or _SparseSigns of shape (m, n)
        The ones of the data: its ``indptr`` and ``indices`` (a CSR pattern) are
        read.
    level : float
        Zeros with a logit above ``level`` are candidates.
    cap : int
        At most this many candidates (about; each block keeps its share).
    delta : float
        Unsafe margin: an entry within ``delta`` of logit 0 (or wrong) is unsafe.
    n_jobs : int or None
        Threads over the blocks.
    block_entries : int or None
        Logits per block (default :data:`_SCAN_ENTRIES`).
    deadline : Deadline or None
        Checked before every block: a scan the deadline cuts counts nothing.

    Returns
    -------
    result : _ScanResult or None
        None when the deadline cut the scan.
    """
    m, n = U.shape[0], V.shape[0]
    U32 = np.ascontiguousarray(U, dtype=np.float32)
    V32 = np.ascontiguousarray(V, dtype=np.float32)
    indptr = ones.indptr
    blocks = _row_batches(m, n, block_entries or _SCAN_ENTRIES)
    job = _ScanJob(
        U32, V32, float(b), indptr, ones.indices, level, int(cap), delta, deadline
    )
    with threadpool_limits(limits=1, user_api="blas"):
        if effective_n_jobs(n_jobs) == 1 or len(blocks) == 1:
            parts = [_scan_block(rows, job) for rows in blocks]
        else:
            parts = Parallel(n_jobs=n_jobs, prefer="threads")(
                delayed(_scan_block)(rows, job) for rows in blocks
            )
    if any(p is None for p in parts):
        return None
    rows, cols, theta = (np.concatenate([p[i] for p in parts]) for i in range(3))
    # the zeros' logits outside the candidates: the sum of all logits (float64,
    # from the column sums of the factors) less the ones' and the candidates'
    total = float(np.asarray(U, np.float64).sum(0) @ np.asarray(V, np.float64).sum(0))
    total += float(b) * m * n
    ones_sum = sum(p[5] for p in parts)
    far_sum = total - ones_sum - float(theta.sum(dtype=np.float64))
    n_far = m * n - int(indptr[-1]) - rows.size
    return _ScanResult(
        rows.astype(np.int64),
        cols.astype(np.int64),
        theta,
        sum(p[3] for p in parts),
        sum(p[4] for p in parts),
        far_sum,
        n_far,
    )
