"""Rounding primitives: ``round_matrix``, ``rounding_error`` and ``certify_rounding``.

The rounding function of the paper (Section 2, "Definitions") is
``round_tau(x) = 1`` iff ``x >= tau``. A *certificate* for ``rrank_tau(X) <= k`` is a
pair ``L`` (m, k), ``R`` (n, k) whose product rounds to ``X`` on every observed entry;
:func:`certify_rounding` checks it in float64 with a safety margin that also covers the
rounding error of the floating-point products.
"""

from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils import gen_batches
from sklearn.utils._param_validation import Interval, validate_params

from sklearn_rrank._core._validation import check_binary_matrix, check_tau

__all__ = ["certify_rounding", "round_matrix", "rounding_error"]

#: default relative safety margin of :func:`certify_rounding`
DEFAULT_MARGIN = 1e-9

# entries per block when products are formed block-wise (8 MiB of float64: a
# certificate check holds about six such arrays per block)
_BLOCK_ENTRIES = 1 << 20


def _row_batches(n_rows, n_cols, entries=None):
    """The package's one row-block policy: slices of rows of about ``entries`` each.

    Every m x n computation on data or factors (products ``L @ R.T``, error counts,
    certificates, the L-PCA chunks with their smaller ``entries``, densified rows of
    sparse data) runs over these blocks, so its memory is bounded by the block and
    never grows with ``m``. The blocks depend on the shape only, never on
    ``n_jobs``. ``entries`` defaults to ``_BLOCK_ENTRIES``.
    """
    if entries is None:
        entries = _BLOCK_ENTRIES
    if n_rows <= 0:
        return []
    return list(gen_batches(n_rows, max(1, entries // max(n_cols, 1))))


@validate_params(
    {"A": ["array-like", "sparse matrix"], "tau": [Real]},
    prefer_skip_nested_validation=True,
)
def round_matrix(A, tau=0.5):
    """Round a real matrix at threshold ``tau``.

    Parameters
    ----------
    A : array-like of shape (n_samples, n_features)
        Real matrix (float or int); ``NaN`` is not allowed.
    tau : float, default=0.5
        Rounding threshold.

    Returns
    -------
    B : ndarray of shape (n_samples, n_features), dtype uint8
        ``B[i, j] = 1`` iff ``A[i, j] >= tau`` (the paper's ``round_tau``).

    Raises
    ------
    ValueError
        If ``A`` holds NaN or is not 2-D, or ``tau`` is not finite.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 2, definition of ``round_tau``.

    Examples
    --------
    >>> from sklearn_rrank import round_matrix
    >>> round_matrix([[0.2, 0.5], [0.7, -1.0]])
    array([[0, 1],
           [1, 0]], dtype=uint8)
    """
    tau = check_tau(tau)
    A = np.asarray(A.toarray() if sp.issparse(A) else A, dtype=np.float64)
    if A.ndim != 2:
        raise ValueError(f"A must be 2-D, got shape {A.shape}.")
    if np.isnan(A).any():
        raise ValueError("A contains NaN; a real matrix to round must be complete.")
    return (A >= tau).astype(np.uint8)


def _is_binary_valued(A):
    if A.dtype == bool:
        return True
    return bool(np.all((A == 0) | (A == 1)))


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "A": ["array-like", "sparse matrix"],
        "tau": [Real],
        "relative": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def rounding_error(X, A, *, tau=0.5, relative=False):
    """Count the entries where a (rounded) matrix differs from binary data.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary data; ``NaN`` marks missing entries, which are not counted.
    A : array-like of shape (n_samples, n_features)
        Either a binary matrix (every entry 0 or 1, or dtype bool), which is compared
        with ``X`` as it is, or a real matrix, which is rounded at ``tau`` first.
    tau : float, default=0.5
        Rounding threshold for a real ``A``.
    relative : bool, default=False
        If True, divide by the number of ones of ``X`` (the paper's relative
        reconstruction error, Section 5). If ``X`` has no ones the relative error is
        0.0 when there are no errors and ``inf`` otherwise.

    Returns
    -------
    error : int or float
        Number of differing observed entries (int), or the relative error (float).

    Raises
    ------
    ValueError
        If ``X`` is not binary, or the shapes of ``X`` and ``A`` differ.

    Examples
    --------
    >>> from sklearn_rrank import rounding_error
    >>> X = [[1, 0], [1, 1]]
    >>> rounding_error(X, [[0.9, 0.6], [0.5, 0.1]])
    2
    >>> rounding_error(X, [[0.9, 0.6], [0.5, 0.1]], relative=True)
    0.6666666666666666
    """
    tau = check_tau(tau)
    X = check_binary_matrix(X, allow_missing=True, accept_sparse=False)
    A = np.asarray(A.toarray() if sp.issparse(A) else A)
    if A.shape != X.shape:
        raise ValueError(f"X has shape {X.shape} but A has shape {A.shape}.")
    A = A.astype(np.float64)
    if np.isnan(A).any():
        raise ValueError("A contains NaN.")
    B = A if _is_binary_valued(A) else (A >= tau).astype(np.float64)
    observed = ~np.isnan(X)
    n_err = int(np.count_nonzero((B != X) & observed))
    if not relative:
        return n_err
    n_ones = int(np.count_nonzero(X == 1))
    if n_ones == 0:
        return 0.0 if n_err == 0 else float("inf")
    return n_err / n_ones


def _gamma(k):
    """Worst-case relative error bound of a float64 dot product of length ``k``."""
    u = np.finfo(np.float64).eps / 2
    return (k + 2) * u / (1 - (k + 2) * u)


def _certified_entries(gap, scale, ones, tau, k, margin=DEFAULT_MARGIN, factor=1.0):
    """The one certificate kernel: which entries lie safely on their side of ``tau``.

    ``gap = L_i . R_j - tau`` and ``scale = |L_i| . |R_j|`` (arrays of one shape);
    ``ones`` is True where the entry must round to 1. An entry is certified when its
    gap exceeds ``factor * (margin * (scale + |tau|) + gamma_k * scale)`` on the
    correct side. :func:`certify_rounding` uses ``factor = 1``; the LP engine asks
    for ``factor = 2`` so that its solutions pass the certificate.
    """
    required = factor * (margin * (scale + abs(tau)) + _gamma(k) * scale)
    ok_one = (gap > required) | ((required == 0) & (gap >= 0))
    ok_zero = -gap > required
    return np.where(ones, ok_one, ok_zero)


def _as_factor(A):
    """A factor in float64: a CSR matrix if it is sparse, else an ndarray."""
    if sp.issparse(A):
        return sp.csr_matrix(A, dtype=np.float64)
    return np.asarray(A, dtype=np.float64)


def _all_finite(A):
    """True iff a factor (array or sparse) holds no NaN or infinity."""
    return bool(np.isfinite(A.data if sp.issparse(A) else A).all())


def _factor_rows(A, rows):
    """Rows ``rows`` of a factor (array or sparse) as a dense float64 array."""
    A = A[rows]
    return A.toarray() if sp.issparse(A) else np.asarray(A, dtype=np.float64)


def _dense_block(P):
    return P.toarray() if sp.issparse(P) else P


def _certified_block(Xb, Lb, R, tau, margin, abs_R):
    """Boolean mask of the entries of a row block that are certified (or missing).

    ``Lb`` and ``R`` may be sparse (the trivial certificate of sparse data): their
    products are formed sparse and densified for this block only. ``abs_R`` is
    ``abs(R)``, computed once by the callers, which loop over row blocks (an n x k
    copy per block otherwise: 180 MB for R-SVD's 4421 columns on Abstracts).
    """
    gap = _dense_block(Lb @ R.T) - tau
    scale = _dense_block(abs(Lb) @ abs_R.T)
    ok = _certified_entries(gap, scale, Xb == 1, tau, Lb.shape[1], margin)
    return ok | np.isnan(Xb)


def _uncertified_counts(X, L, R, tau, axis, margin=DEFAULT_MARGIN):
    """Observed entries per column (``axis=0``) or row (``axis=1``) not certified.

    The kernel of :func:`_count_uncertified`, by row blocks of about ``2**23``
    entries (the float64 temporaries stay small), for a validated ``X``: dense, or
    CSR (each block of rows is made dense on its own).
    """
    m, n = X.shape
    abs_R = abs(R)
    if axis == 0:
        counts = np.zeros(n, dtype=np.int64)
        for rows in _row_batches(m, n):
            Xb = _dense_block(X[rows])
            ok = _certified_block(Xb, L[rows], R, tau, margin, abs_R)
            counts += (~ok).sum(axis=0)
        return counts
    counts = np.empty(m, dtype=np.int64)
    for rows in _row_batches(m, n):
        ok = _certified_block(_dense_block(X[rows]), L[rows], R, tau, margin, abs_R)
        counts[rows] = (~ok).sum(axis=1)
    return counts


def _count_uncertified(X, L, R, tau, margin=DEFAULT_MARGIN, *, stop_early=False):
    """Number of observed entries of validated ``X`` that the factors do not certify.

    The trusted kernel behind :func:`certify_rounding`: ``X`` is a validated float64
    array or CSR matrix (NaN = missing), ``L`` and ``R`` finite float64 arrays (or
    CSR matrices) of matching shapes. With ``stop_early`` it returns as soon as one
    entry fails.
    """
    m, n = X.shape
    n_failed = 0
    abs_R = abs(R)
    for rows in _row_batches(m, n):
        Xb = _dense_block(X[rows])
        ok = _certified_block(Xb, L[rows], R, tau, margin, abs_R)
        n_failed += int(ok.size - np.count_nonzero(ok))
        if n_failed and stop_early:
            break
    return n_failed


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "L": ["array-like", "sparse matrix"],
        "R": ["array-like", "sparse matrix"],
        "tau": [Real],
        "margin": [Interval(Real, 0, 1, closed="left")],
        "return_count": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def certify_rounding(X, L, R, *, tau=0.5, margin=DEFAULT_MARGIN, return_count=False):
    """Check in float64, with a safety margin, that ``round_tau(L @ R.T) == X``.

    An entry is certified when ``L_i . R_j`` lies on the correct side of ``tau`` by more
    than ``margin * (|L_i| . |R_j| + |tau|)`` plus the worst-case floating-point error
    of the dot product (``gamma_k * |L_i| . |R_j|`` with ``gamma_k = (k + 1) u / (1 -
    (k + 1) u)``, ``u`` the unit round-off). A certified entry therefore rounds
    correctly in exact arithmetic too. Entries closer to ``tau`` than the margin are not
    accepted. Missing entries (``NaN`` in ``X``) are not checked.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary data (``NaN`` = missing).
    L : array-like or sparse matrix of shape (n_samples, k)
        Left factor.
    R : array-like or sparse matrix of shape (n_features, k)
        Right factor. Sparse factors (such as the trivial certificate of sparse
        data) are checked by blocks of rows without densifying them whole.
    tau : float, default=0.5
        Rounding threshold.
    margin : float, default=1e-9
        Relative safety margin (dimensionless).
    return_count : bool, default=False
        If True, also return the number of observed entries that are not certified.

    Returns
    -------
    certified : bool
        True iff every observed entry is certified.
    n_failed : int
        Only if ``return_count``: number of entries not certified.

    Raises
    ------
    ValueError
        If ``X`` is not binary, the factor shapes do not match ``X`` or each other, or
        the factors hold NaN or infinity.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import certify_rounding
    >>> X = np.array([[1, 1], [1, 0]])
    >>> L = np.array([[2.0], [1.0]]); R = np.array([[1.0], [0.4]])
    >>> certify_rounding(X, L, R)
    True
    >>> certify_rounding(X, L, np.array([[1.0], [0.5]]))   # 1 * 0.5 == tau: too close
    False
    """
    tau = check_tau(tau)
    X = check_binary_matrix(X, allow_missing=True, accept_sparse=True)
    L = _as_factor(L)
    R = _as_factor(R)
    m, n = X.shape
    if L.ndim != 2 or R.ndim != 2:
        raise ValueError(f"L and R must be 2-D, got shapes {L.shape} and {R.shape}.")
    if L.shape[0] != m or R.shape[0] != n or L.shape[1] != R.shape[1]:
        raise ValueError(
            f"Factor shapes do not match X of shape {X.shape}: L has shape {L.shape} "
            f"and R has shape {R.shape}; expected (m, k) and (n, k)."
        )
    if not (_all_finite(L) and _all_finite(R)):
        raise ValueError("L and R must hold finite numbers (no NaN or infinity).")
    if not 0 <= margin < 1:
        raise ValueError(f"margin must be in [0, 1), got {margin}.")
    n_failed = _count_uncertified(X, L, R, tau, margin, stop_early=not return_count)
    if return_count:
        return n_failed == 0, n_failed
    return n_failed == 0


def _csr_ones(Xb):
    """Row and column indices of the ones of a CSR block (stored zeros are not ones)."""
    one = Xb.data == 1
    rows = np.repeat(np.arange(Xb.shape[0]), np.diff(Xb.indptr))
    return rows[one], Xb.indices[one]


def _rounded_block(Lb, Rt, tau):
    """``round_tau(Lb @ Rt)`` as a boolean block: the one rounding kernel.

    Every count of rounding errors of fitted factors and every rounded
    reconstruction (``inverse_transform``) goes through this function with
    ``Rt = components_`` (C-contiguous, shape (k, n)) and the row blocks of
    :func:`_row_batches`, so the same factors give the same rounding bit for bit:
    a product that lands within a rounding error of ``tau`` is decided the same way
    in the reported error and in the reconstruction.
    """
    return (Lb @ Rt) >= tau


def _round_factors(L, Rt, tau):
    """``round_tau(L @ Rt)`` as uint8 of shape (m, n), by the blocks of the kernel."""
    m, n = L.shape[0], Rt.shape[1]
    out = np.empty((m, n), dtype=np.uint8)
    for rows in _row_batches(m, n):
        out[rows] = _rounded_block(L[rows], Rt, tau)
    return out


def _row_error_counts(X, L, Rt, tau, *, uncertified=False, margin=DEFAULT_MARGIN):
    """Rounding errors per row of ``round_tau(L @ Rt)`` against validated ``X``.

    ``X`` is a float64 array or CSR matrix (NaN = missing, not counted), ``Rt`` the
    C-contiguous (k, n) right factor. With ``uncertified`` also the observed
    entries per row that :func:`certify_rounding`'s kernel does not certify (one
    more product per block). Returns int64 arrays of shape (m,).
    """
    m, n = X.shape
    errors = np.empty(m, dtype=np.int64)
    unsafe = np.empty(m, dtype=np.int64) if uncertified else None
    if sp.issparse(X) and not uncertified and not np.isnan(X.data).any():
        # errors = row's ones + row's entries rounded to 1 - 2 (ones rounded to 1):
        # the ones are gathered from the CSR pattern, X is never densified
        for rows in _row_batches(m, n):
            B = _rounded_block(L[rows], Rt, tau)
            r, c = _csr_ones(X[rows])
            hits = np.bincount(r[B[r, c]], minlength=B.shape[0])
            n_ones = np.bincount(r, minlength=B.shape[0])
            errors[rows] = n_ones + np.count_nonzero(B, axis=1) - 2 * hits
        return errors
    abs_R = abs(Rt.T) if uncertified else None
    for rows in _row_batches(m, n):
        Xb = _dense_block(X[rows])
        ones = Xb == 1
        wrong = _rounded_block(L[rows], Rt, tau) != ones
        missing = np.isnan(Xb)
        if missing.any():
            wrong &= ~missing
        errors[rows] = np.count_nonzero(wrong, axis=1)
        if uncertified:
            ok = _certified_block(Xb, L[rows], Rt.T, tau, margin, abs_R)
            unsafe[rows] = ok.shape[1] - np.count_nonzero(ok, axis=1)
    return (errors, unsafe) if uncertified else errors


def _count_errors_factors(X, L, R, tau):
    """Number of observed entries where ``round_tau(L @ R.T)`` differs from ``X``.

    ``X`` is a validated float64 array or CSR matrix (NaN = missing). Works block-wise
    (:func:`_row_error_counts`) so that the full product is never held in memory.
    """
    Rt = np.ascontiguousarray(np.asarray(R, dtype=np.float64).T)
    return int(_row_error_counts(X, np.asarray(L, dtype=np.float64), Rt, tau).sum())
