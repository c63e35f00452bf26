"""The trivial certificate: ``X`` itself as a factor (rank ``min(m, n)``)."""

import numpy as np
import scipy.sparse as sp

__all__ = ["trivial_upper_bound"]


def trivial_rank(shape, tau):
    """The rank of :func:`trivial_upper_bound` for ``shape``: ``min(m, n)``, one
    more when ``tau <= 0`` (its constant column)."""
    return min(shape) + (1 if tau <= 0 else 0)


def trivial_upper_bound(X, *, tau=0.5):
    """Certified factors of rank ``min(m, n)`` (one more when ``tau <= 0``).

    ``A = c X`` with ``c = 2 tau`` rounds to ``X`` for ``tau > 0``, written as
    ``L = c X, R = I`` or ``L = I, R = c X^T``; for ``tau <= 0`` a constant column
    shifts the zeros below ``tau``.

    Sparse ``X`` gives sparse factors (CSR, float64): the scaled ones of ``X`` and a
    sparse identity, so the certificate takes memory in the ones and ``m + n``,
    never ``m n`` (a dense ``L`` of a 200,000 x 5,000 matrix alone is 8 GB). The
    certificate kernel (:func:`~sklearn_rrank.certify_rounding`) checks it by row
    blocks. Dense ``X`` gives dense factors.
    """
    m, n = X.shape
    if sp.issparse(X):
        return _sparse_factors(sp.csr_matrix(X, dtype=np.float64), tau)
    if tau > 0:
        if n <= m:
            L, R = 2 * tau * X, np.eye(n)
        else:
            L, R = np.eye(m), 2 * tau * X.T
    else:
        shift = tau - 1.0
        if n <= m:
            L = np.hstack([(1.0 - shift) * X, np.ones((m, 1))])
            R = np.hstack([np.eye(n), np.full((n, 1), shift)])
        else:
            L = np.hstack([np.eye(m), np.full((m, 1), shift)])
            R = np.hstack([(1.0 - shift) * X.T, np.ones((n, 1))])
    return L, R


def _sparse_factors(X, tau):
    """:func:`trivial_upper_bound` of a CSR ``X``: CSR factors, the same values."""
    m, n = X.shape
    Xt = X if n <= m else X.T.tocsr()  # the side that is the data, as (rows, k)
    I = sp.identity(min(m, n), dtype=np.float64, format="csr")
    if tau > 0:
        data, other = 2 * tau * Xt, I
    else:
        shift = tau - 1.0
        ones = sp.csr_matrix(np.ones((Xt.shape[0], 1)))
        data = sp.hstack([(1.0 - shift) * Xt, ones], format="csr")
        other = sp.hstack(
            [I, sp.csr_matrix(np.full((I.shape[0], 1), shift))], format="csr"
        )
    return (data, other) if n <= m else (other, data)
