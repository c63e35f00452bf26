"""The spectral lower bound on the rounding rank (the paper's spectral lower bound).

The bound rests on Forster's sign-rank bound for the sign matrix ``2 X - 1``: with its
squared singular values ``sq`` (descending), the least ``d`` with ``d * sum_{i <= d}
sq_i >= m n`` is a lower bound ``d*`` on the sign rank, and the rounding rank is at
least ``d* - 1``. Large matrices get a few leading values from ARPACK, growing until
``d*`` is shown, within the deadline.
"""

import numbers
import time

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, svds
from sklearn.utils._param_validation import validate_params

from sklearn_rrank._core._memory import fits_in_memory
from sklearn_rrank._core._results import LowerBoundResult
from sklearn_rrank._core._validation import check_binary_matrix, check_tau
from sklearn_rrank._search._skeleton import Deadline, rank_zero_possible

__all__ = ["spectral_lower_bound"]

# above this many entries the bound starts from a few leading singular values (ARPACK,
# anytime) instead of a full LAPACK SVD, which grows as m n min(m, n)
_DENSE_SPECTRAL_ENTRIES = 250_000
# float64 m x n arrays that all singular values need (2X - 1 and LAPACK's work)
_FULL_SVD_COPIES = 3


def _forster_d_star(sq, n_entries):
    """Least ``d`` with ``d * sum_{i<=d} sq_i >= n_entries``, or None past ``len(sq)``.

    ``sq`` are the squared singular values of a sign matrix in decreasing order (a
    prefix of them is enough). Forster et al.'s theorem makes ``d*`` a lower bound on
    the sign rank. The one kernel of the spectral bound, also used by
    :func:`~sklearn_rrank.feature_dimension_bounds`.
    """
    d = np.arange(1, sq.shape[0] + 1)
    f = d * np.cumsum(sq) * (1 + 1e-9)  # guard the comparison against round-off
    hit = np.flatnonzero(f >= n_entries)
    return int(hit[0] + 1) if hit.size else None


def _sign_operator(X):
    """``S = 2X - 1`` as a linear operator (X dense or sparse, complete)."""
    m, n = X.shape
    Xs = sp.csr_matrix(X)
    XsT = Xs.T.tocsr()
    return LinearOperator(
        (m, n),
        matvec=lambda v: 2 * (Xs @ v) - np.sum(v),
        rmatvec=lambda u: 2 * (XsT @ u) - np.sum(u),
        dtype=np.float64,
    )


def _sign_rank_lower_bound(X, deadline=None):
    """Forster's ``d*`` for ``S = 2X - 1``, computed as cheaply as possible.

    Small matrices get all singular values (LAPACK). Large ones get the leading
    ``K = 8, 32, 128, ...`` singular values by ARPACK on the operator ``2X - 1``
    (sparse products) until ``d* <= K`` is found or the deadline passes; if it is
    not found, ``d* > K`` and ``K + 1`` is returned, still a valid lower bound.

    Returns
    -------
    d_star : int
    exact : bool
        False when only the weaker ``K + 1`` could be shown.
    """
    m, n = X.shape
    if m * n <= _DENSE_SPECTRAL_ENTRIES:
        Xd = X.toarray() if sp.issparse(X) else X
        sq = scipy.linalg.svdvals(2.0 * Xd - 1.0) ** 2
        return _forster_d_star(sq, m * n), True
    deadline = Deadline.coerce(deadline)
    op = _sign_operator(X)
    K, best = 8, 1
    rng = np.random.RandomState(0)
    last = 0.0  # seconds of the last ARPACK call
    while K < min(m, n) - 1:
        rem = deadline.remaining()
        # a call for 4 times the values costs about 16 times the last one
        if deadline.expired() or (rem is not None and 16 * last > rem):
            return best, False
        v0 = rng.uniform(-1, 1, size=min(m, n))
        t0 = time.perf_counter()
        s = svds(op, k=K, v0=v0, return_singular_vectors=False, solver="arpack")
        last = time.perf_counter() - t0
        d = _forster_d_star(np.sort(s)[::-1] ** 2, m * n)
        if d is not None:
            return d, True
        best = K + 1
        K *= 4
    if deadline.limited:
        return best, False  # all values of a large matrix: not within a budget
    if not fits_in_memory(_FULL_SVD_COPIES * 8 * m * n):
        return best, False  # all values need the dense matrix: it does not fit
    Xd = X.toarray() if sp.issparse(X) else X
    sq = scipy.linalg.svdvals(2.0 * Xd - 1.0) ** 2
    return _forster_d_star(sq, m * n), True


def _spectral_bound(X, tau, deadline=None):
    """The spectral lower bound on validated complete ``X`` (see below)."""
    if rank_zero_possible(X, tau):
        return LowerBoundResult(0, message="rounding rank 0")
    d_star, exact = _sign_rank_lower_bound(X, deadline)
    message = ""
    if not exact:
        why = "time limit" if Deadline.coerce(deadline).limited else "memory"
        message = f"{why}: d* > {d_star - 1} shown with leading values"
    return LowerBoundResult(
        max(d_star - 1, 1), message=message, stopped_early=not exact
    )


@validate_params(
    {"X": ["array-like", "sparse matrix"], "tau": [numbers.Real]},
    prefer_skip_nested_validation=True,
)
def spectral_lower_bound(X, *, tau=0.5):
    """Spectral lower bound on the rounding rank from the singular values of ``2X - 1``.

    Let ``S = 2X - 1`` be the sign matrix and ``sigma_1 >= sigma_2 >= ...`` its singular
    values. Forster et al.'s bound (the lemma in the proof of the paper's Proposition
    "LowerBound", [Th. 5] of "A better linear lower bound") says that the sign rank
    ``d = srank(S)`` satisfies ``d * sum_{i <= d} sigma_i^2 >= m n``. Because
    ``d * sum_{i<=d} sigma_i^2`` grows with ``d``, ``srank(S) >= d*``, the least ``d``
    with that property. For every threshold ``tau``, ``srank(S) <= rrank_tau(X) + 1``
    (if ``round_tau(A) = X`` then ``A - (tau - eps) J`` has the sign pattern of ``S``
    for a small ``eps > 0``, and ``J`` adds at most one to the rank), hence

        ``rrank_tau(X) >= d* - 1``  for every ``tau``.

    This is the form used here. It is at most one less than the paper's statement
    ``(rrank_0 + 1) sum_{i <= rrank_0} sigma_i^2 >= m n``: the last step of the
    appendix proof of that statement compares ``sum_{i <= srank}`` with
    ``sum_{i <= rrank_0}`` in the wrong direction, so we use only what the lemma
    proves. Because the bound holds for every ``tau`` directly, no threshold change
    (Proposition "changing the rounding threshold") is needed. The result is also at
    least 1 unless the all-zero factorization is exact (``X`` all zeros for
    ``tau > 0``, all ones for ``tau <= 0``).

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary data (no missing entries).
    tau : float, default=0.5
        Rounding threshold.

    Returns
    -------
    bound : int
        A lower bound on ``rrank_tau(X)``.

    Notes
    -----
    Matrices of more than 4 million entries use only the leading singular values
    (ARPACK on ``2X - 1`` with sparse products, ``K = 8, 32, 128, ...`` values until
    ``d*`` is among them): a prefix of the singular values decides ``d*`` exactly
    whenever ``d* <= K``.

    Raises
    ------
    ValueError
        If ``X`` is not binary, is empty or holds missing entries.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Proposition "spectral lower bound" and
    its proof in the appendix; Forster, Krause, Lokam, Mubarakzjanov, Schmitt, Simon,
    "Relations between communication complexity, linear arrangements, and computational
    complexity" (FSTTCS 2001), Theorem 5.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import spectral_lower_bound
    >>> spectral_lower_bound(np.eye(8))
    1
    >>> rng = np.random.default_rng(0)
    >>> spectral_lower_bound(rng.integers(0, 2, size=(200, 200)))
    7
    """
    tau = check_tau(tau)
    X = check_binary_matrix(X, accept_sparse=True, method="spectral")
    return _spectral_bound(X, tau).bound
