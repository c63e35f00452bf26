"""Memory available to this process, and the guard that refuses inputs too large.

One place answers "how much memory is there" for the loaders and the doors: a file
or matrix whose implied shape would not fit is refused with a ``ValueError`` in
seconds, before any large allocation.
"""

import os
import tempfile

import numpy as np

from sklearn_rrank._core._config import get_config

__all__ = [
    "available_memory",
    "check_sparse_memory",
    "fits_in_memory",
    "dense_copy_refused",
    "gib",
    "held_on_disk",
    "in_memory",
    "memory_budget",
    "svd_bytes",
    "svd_components_that_fit",
]

# float64 vectors of length m + n the methods hold at least (factors, gradients,
# scores): a matrix without room for these is refused even when its ones are few
_VECTOR_COPIES = 4


def _read_int(path):
    """The integer in a one-line file such as a cgroup limit, or None."""
    try:
        with open(path) as fh:
            return int(fh.read().strip())
    except (OSError, ValueError):  # missing, unreadable or "max"
        return None


def available_memory():
    """Bytes of memory available now, or None if unknown.

    ``MemAvailable`` of ``/proc/meminfo``, else ``sysconf`` (available, then
    physical pages), lowered to what a cgroup memory limit (a container) still
    allows, and to the ``memory_limit`` of :func:`~sklearn_rrank.set_config`.
    """
    avail = _system_memory()
    limit = get_config()["memory_limit"]
    if limit != "auto":  # the user's cap, in bytes
        avail = limit if avail is None else min(avail, limit)
    return avail


def _system_memory():
    """Bytes the operating system reports available (a cgroup's limit too), or None."""
    avail = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    for pages in ("SC_AVPHYS_PAGES", "SC_PHYS_PAGES"):
        if avail is not None:
            break
        try:
            avail = os.sysconf(pages) * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            pass
    for limit_file, usage_file in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        (
            "/sys/fs/cgroup/memory/memory.limit_in_bytes",
            "/sys/fs/cgroup/memory/memory.usage_in_bytes",
        ),
    ):
        limit = _read_int(limit_file)
        if limit is not None and limit < 2**60:  # v1 reports "no limit" as ~2**63
            left = max(limit - (_read_int(usage_file) or 0), 0)
            avail = left if avail is None else min(avail, left)
            break
    return avail if avail is not None and avail > 0 else None


# share of the available memory that one dense work array of a method may take
_DENSE_SHARE = 0.5


def fits_in_memory(n_bytes):
    """Whether a method may allocate ``n_bytes`` of dense work now.

    True when the bytes are at most half of :func:`available_memory` (or when that
    is unknown). Methods that need dense data ask this first and are skipped, with
    a message, when it says no.
    """
    avail = available_memory()
    return avail is None or n_bytes <= _DENSE_SHARE * avail


# bytes that the singular triplets of one SVD (with the Gram matrix it is computed
# from) may take: R-SVD asks for fewer components when all of them would need more
_SVD_BYTES = 1 << 30
# share of the available memory those arrays may take when it is less
_SVD_SHARE = 0.25


def memory_budget(cap, share):
    """Bytes one kind of work may take: ``cap``, and at most ``share`` of
    :func:`available_memory` when that is known."""
    avail = available_memory()
    return int(cap) if avail is None else min(int(cap), int(share * avail))


def svd_components_that_fit(m, n, K, *, lanczos=False):
    """The most singular triplets, at most ``K``, whose float64 arrays fit.

    The Gram route of an SVD of an ``m x n`` matrix holds the ``min(m, n)``-square
    Gram matrix and ``K`` singular vectors on both sides, ``8 (min(m, n)^2 + K
    (m + n))`` bytes; these may take at most ``_SVD_BYTES`` (1 GiB), and at most a
    quarter of :func:`available_memory`. A 12841 x 4894 matrix keeps all its 4894
    components; a 200,000 x 5,000 one (whose left singular vectors alone would be
    8 GB) keeps 532. With ``lanczos=True`` the count is for ARPACK, which holds no
    Gram matrix but a Lanczos basis of ``2 K + 1`` vectors of length ``min(m, n)``
    and its square work array (:func:`svd_bytes`): a square sparse matrix of 19717
    rows, whose Gram matrix alone is 2.9 GiB, keeps about 1,500.
    """
    limit = memory_budget(_SVD_BYTES, _SVD_SHARE)
    if svd_bytes(m, n, K, lanczos=lanczos) <= limit:
        return int(max(K, 0))
    lo, hi = 0, int(K)  # svd_bytes grows with K: the largest count that fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if svd_bytes(m, n, mid, lanczos=lanczos) <= limit:
            lo = mid
        else:
            hi = mid - 1
    return lo if lo > 0 and svd_bytes(m, n, lo, lanczos=lanczos) <= limit else 0


def svd_bytes(m, n, K, *, lanczos=False):
    """Bytes of the float64 arrays of an SVD of ``K`` triplets of an ``m x n`` matrix.

    The triplets (``K (m + n)``) and the Gram matrix (``min(m, n)^2``), or with
    ``lanczos`` ARPACK's basis of ``2 K + 1`` vectors of length ``min(m, n)`` and
    its ``(2 K + 1)^2`` work array instead of the Gram matrix.
    """
    small, K = min(m, n), int(K)
    if not lanczos:
        return 8 * (small * small + K * (m + n))
    ncv = min(2 * K + 1, small)
    return 8 * (K * (m + n) + ncv * small + ncv * ncv)


# the largest dense float64 copy made of sparse data (2 GiB, 2.7e8 entries): sparse
# data past that stays sparse whatever the machine, and dense-only steps are skipped
_DENSE_COPY_BYTES = 1 << 31


def dense_copy_refused(m, n):
    """Why an ``m x n`` float64 copy of sparse data is not made, or None if it is.

    The copy is refused when it exceeds ``_DENSE_COPY_BYTES`` (2 GiB) or does not
    fit in memory (:func:`fits_in_memory`); the text starts with "needs the dense
    matrix" and names the bytes.
    """
    need = 8 * int(m) * int(n)
    if need > _DENSE_COPY_BYTES:
        return (
            f"needs the dense matrix ({gib(need)}), more than a dense copy of sparse "
            f"data may take ({gib(_DENSE_COPY_BYTES)})"
        )
    if not fits_in_memory(need):
        return (
            f"needs the dense matrix ({gib(need)}), which does not fit in the memory "
            "available"
        )
    return None


def gib(n_bytes):
    return f"{n_bytes:,} bytes ({n_bytes / 2**30:.1f} GiB)"


def check_sparse_memory(shape, nnz, name):
    """Raise ``ValueError`` if a sparse ``shape`` matrix with ``nnz`` ones won't fit.

    The need is the CSR arrays (an 8-byte row pointer per row, 12 bytes per
    stored entry) plus ``_VECTOR_COPIES`` float64 vectors of length ``m + n``
    (every method holds factors and scores of every row and column). Nothing is
    checked when the memory available is unknown.

    Parameters
    ----------
    shape : tuple of int
        ``(m, n)``, as declared (a file header) or held.
    nnz : int
        Stored entries.
    name : str
        The file or input named in the error.
    """
    m, n = (int(d) for d in shape)
    need = 8 * (m + 1) + 12 * int(nnz) + _VECTOR_COPIES * 8 * (m + n)
    avail = available_memory()
    if avail is None or need <= avail:
        return
    raise ValueError(
        f"{name}: a sparse {m} x {n} matrix with {int(nnz):,} stored entries needs at "
        f"least {gib(need)} (its CSR arrays and {_VECTOR_COPIES} float64 vectors per "
        f"row and column), but only {gib(avail)} of memory are available."
    )


# a certificate whose dense factors take at least this many bytes is held on disk
# while the portfolio runs other methods (see held_on_disk)
_HOLD_ON_DISK_BYTES = 256 * 2**20


def held_on_disk(L, R, min_bytes=_HOLD_ON_DISK_BYTES):
    """``(L, R)``, as read-only memory maps of an anonymous file when they are large.

    The portfolio of :func:`~sklearn_rrank.rounding_rank_bounds` holds its best
    certificate while the later methods run; held in memory, a large one (R-SVD's
    of rank 4421 on Abstracts is 0.63 GB of float64) sits beside the working set
    of the methods after it. Dense factors of at least ``min_bytes`` (256 MiB)
    together are written to a temporary file that has no
    name (deleted when the maps are; :func:`tempfile.TemporaryFile`) and mapped
    back read-only: the methods that read the certificate page it in, and the
    operating system can drop those pages. The values are the same bytes, so
    the certificate holds as checked. Sparse or small factors, or a failed write
    (no space left), are returned as they are. :func:`in_memory` loads them back.
    """
    if not all(isinstance(A, np.ndarray) for A in (L, R)):
        return L, R
    if L.nbytes + R.nbytes < min_bytes:
        return L, R
    try:
        return tuple(_mapped_copy(A) for A in (L, R))
    except OSError:
        return L, R


def _mapped_copy(A):
    with tempfile.TemporaryFile() as f:
        A.tofile(f)  # C order, whatever A's layout (a view is written, not copied)
        f.flush()
        # the map keeps the file alive after it is closed here
        return np.memmap(f, dtype=A.dtype, mode="r", shape=A.shape, order="C")


def in_memory(A):
    """``A`` as an in-memory array if :func:`held_on_disk` mapped it, else ``A``."""
    return np.array(A) if isinstance(A, np.memmap) else A
