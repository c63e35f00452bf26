"""The trivial certificate: ``X`` itself as a factor (rank ``min(m, n)``)."""

import numpy as np
import scipy.sparse as sp

__all__ = ["trivial_upper_bound"]


def trivial_upper_bound(X, *, tau=0.5):
    """Certified factors of rank ``min(m, n)`` (one more when ``tau <= 0``).

    ``A = c X`` with ``c = 2 tau`` rounds to ``X`` for ``tau > 0``, written as
    ``L = c X, R = I`` or ``L = I, R = c X^T``; for ``tau <= 0`` a constant column
    shifts the zeros below ``tau``.
    """
    m, n = X.shape
    if sp.issparse(X):  # the factor is dense: one m x n array, scaled in place
        X = X.toarray()
        if tau > 0:
            X *= 2 * tau
            return (X, np.eye(n)) if n <= m else (np.eye(m), X.T)
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
