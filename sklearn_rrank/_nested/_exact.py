"""Nested matrices: exact tests and certified factors.

A binary matrix is *nested* when its rows (equivalently its columns) form a chain under
set inclusion; after sorting rows and columns by decreasing sums it is a staircase.
The paper (Neumann, Gemulla, Miettinen, ICDM 2016, Section 4) shows that the nested
matrices are exactly those of *non-negative* rounding rank one (Theorem
"nested matrices") and that rounding rank one means "two nested blocks on a diagonal"
(Proposition "rounding rank one"). This module has the exact tests and their
certified factors: :func:`is_nested`, :func:`nested_decomposition`,
:func:`is_rounding_rank_one`. The nearest nested matrix is in
:mod:`sklearn_rrank._nested._approx`, the nestedness metrics in
:mod:`sklearn_rrank._nested._nestedness`.
"""

from numbers import Real

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from sklearn.utils._param_validation import validate_params

from sklearn_rrank._core._rounding import _count_uncertified
from sklearn_rrank._core._validation import (
    check_binary_matrix,
    check_tau,
)

__all__ = [
    "is_nested",
    "is_rounding_rank_one",
    "nested_decomposition",
]


# ---------------------------------------------------------------------------------
# exact tests and certified factors
# ---------------------------------------------------------------------------------


def _sums(X):
    """Row and column sums (int64) of a validated dense or CSR binary matrix."""
    rows = np.asarray(X.sum(axis=1)).ravel().round().astype(np.int64)
    cols = np.asarray(X.sum(axis=0)).ravel().round().astype(np.int64)
    return rows, cols


def _ones(X):
    """Row and column indices of the ones of a validated dense or CSR matrix."""
    if sp.issparse(X):
        coo = sp.coo_matrix(X)
        keep = coo.data != 0
        return coo.row[keep].astype(np.int64), coo.col[keep].astype(np.int64)
    i, j = np.nonzero(X)
    return i.astype(np.int64), j.astype(np.int64)


def _is_nested_validated(X):
    """Nestedness test for a validated binary matrix (dense or CSR), O(nnz + n log n).

    Sort the columns by decreasing sum (stable). ``X`` is nested iff every row is a
    prefix of that order, i.e. iff every one ``(i, j)`` has ``pos[j] < rowsum[i]``: a
    row with ``k`` ones at positions ``< k`` is exactly the first ``k`` columns. Ties in
    the column sums of a nested matrix are identical columns, so their order does not
    matter (Mannila & Terzi 2007).
    """
    row_sums, col_sums = _sums(X)
    pos = np.empty(col_sums.size, dtype=np.int64)
    pos[np.argsort(-col_sums, kind="stable")] = np.arange(col_sums.size)
    i, j = _ones(X)
    return bool(np.all(pos[j] < row_sums[i]))


def _nested_factors_validated(X, tau):
    """Non-negative ``l, r`` with ``round_tau(outer(l, r)) == X`` for a nested ``X``.

    ``X`` is a validated nested binary matrix (dense or CSR) and ``tau > 0``.
    ``r_j`` is the column sum ("degree") of column ``j``. Row ``i`` is the set of
    columns with ``r_j >= v_i`` where ``v_i`` is the smallest degree in the row; the
    next smaller degree value ``w_i`` (0 if none) is below every other column, so the
    threshold ``theta_i = (v_i + w_i) / 2`` separates them and ``l_i = tau / theta_i``.
    Empty rows get ``l_i = 0``. Ones then have ``l_i r_j >= tau (1 + 1 / (2 m))`` and
    zeros ``l_i r_j <= tau (1 - 1 / (2 m))``: a margin far above float64 round-off.
    """
    row_sums, col_sums = _sums(X)
    r = col_sums.astype(np.float64)
    m = row_sums.size
    l = np.zeros(m, dtype=np.float64)
    i, j = _ones(X)
    if i.size == 0:
        return l, r
    # smallest degree in each non-empty row
    v = np.full(m, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(v, i, col_sums[j])
    nonempty = row_sums > 0
    levels = np.unique(col_sums)  # ascending distinct degrees (all >= 0)
    k = np.searchsorted(levels, v[nonempty])  # levels[k] == v
    below = np.where(k > 0, levels[np.maximum(k - 1, 0)], 0)
    theta = (v[nonempty] + below) / 2.0
    l[nonempty] = tau / theta
    return l, r


@validate_params(
    {"X": ["array-like", "sparse matrix"]},
    prefer_skip_nested_validation=True,
)
def is_nested(X):
    """Test whether a binary matrix is nested.

    ``X`` is nested when for every two rows one row's set of ones contains the other's
    (the rows form a chain; then the columns do too). Equivalently, after sorting rows
    and columns by decreasing sums ``X`` is a staircase ("directly nested" in the
    paper). Empty rows and columns are nested with everything; the zero matrix is
    nested.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary matrix (bool, integer or float holding only 0/1); sparse input is
        tested without densifying.

    Returns
    -------
    nested : bool
        True iff ``X`` is nested.

    Raises
    ------
    ValueError
        If ``X`` is not a 2-D binary matrix or contains NaN.

    See Also
    --------
    nested_decomposition : Non-negative rank-1 factors of a nested matrix.
    is_rounding_rank_one : Test for rounding rank one (signed factors).

    Notes
    -----
    Runs in O(nnz + n_features log n_features) time: ``X`` is nested iff every row is a
    prefix of the columns sorted by decreasing sum.

    References
    ----------
    Neumann, Gemulla, Miettinen, "What You Will Gain By Rounding: Theory and Algorithms
    for Rounding Rank", ICDM 2016, Section 4 (definition of nested matrices).

    Examples
    --------
    >>> from sklearn_rrank import is_nested
    >>> is_nested([[1, 1, 1], [1, 1, 0], [1, 0, 0]])
    True
    >>> is_nested([[1, 0], [0, 1]])
    False
    """
    X = check_binary_matrix(X, accept_sparse=True)
    return _is_nested_validated(X)


@validate_params(
    {"X": ["array-like", "sparse matrix"], "tau": [Real]},
    prefer_skip_nested_validation=True,
)
def nested_decomposition(X, *, tau=0.5):
    """Non-negative rank-1 factors ``l, r`` with ``round_tau(outer(l, r)) == X``.

    By the paper's Theorem "nested matrices" a non-zero binary matrix has non-negative
    rounding rank one iff it is nested. This function builds such factors: ``r`` holds
    the column sums of ``X`` and ``l_i = tau / theta_i``, where ``theta_i`` lies halfway
    between the smallest column sum inside row ``i`` and the next smaller column-sum
    value (0 if none); empty rows get ``l_i = 0``. (The proof in the paper uses powers
    of two, which overflow float64 beyond about 1000 columns; this construction gives
    the same matrix with a relative margin of at least ``1 / (2 n_samples)``.) The
    result is verified with :func:`~sklearn_rrank.certify_rounding`.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Nested binary matrix.
    tau : float, default=0.5
        Rounding threshold. With non-negative factors every product is ``>= 0``, so for
        ``tau <= 0`` every entry rounds to 1: only the all-ones matrix has a
        decomposition then (``l = 0``, ``r = 0``), any other ``X`` raises.

    Returns
    -------
    l : ndarray of shape (n_samples,), dtype float64
        Non-negative row factor.
    r : ndarray of shape (n_features,), dtype float64
        Non-negative column factor (the column sums of ``X`` when ``tau > 0``).

    Raises
    ------
    ValueError
        If ``X`` is not binary, not nested, or ``tau <= 0`` and ``X`` is not all ones.
    RuntimeError
        If the factors fail :func:`~sklearn_rrank.certify_rounding` (not expected).

    See Also
    --------
    is_nested, is_rounding_rank_one

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 4, Theorem "nested matrices".

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import nested_decomposition, round_matrix
    >>> X = np.array([[1, 1, 0], [1, 0, 0], [0, 0, 0]])
    >>> l, r = nested_decomposition(X)
    >>> r
    array([2., 1., 0.])
    >>> round_matrix(np.outer(l, r))
    array([[1, 1, 0],
           [1, 0, 0],
           [0, 0, 0]], dtype=uint8)
    """
    tau = check_tau(tau)
    X = check_binary_matrix(X, accept_sparse=True)
    m, n = X.shape
    if tau <= 0:
        row_sums, _ = _sums(X)
        if np.all(row_sums == n):
            return np.zeros(m), np.zeros(n)
        raise ValueError(
            f"tau={tau} <= 0: non-negative factors give products >= 0 >= tau, so every "
            "entry rounds to 1 and only the all-ones matrix has a non-negative rank-1 "
            "decomposition. Use tau > 0 (all positive thresholds are equivalent)."
        )
    if not _is_nested_validated(X):
        raise ValueError(
            "X is not nested (two rows whose sets of ones are not contained in one "
            "another), so it has no non-negative rounding rank-1 decomposition "
            "(Theorem 'nested matrices'). Use NestedApprox for the nearest nested "
            "matrix, or is_rounding_rank_one for signed factors."
        )
    l, r = _nested_factors_validated(X, tau)
    if _count_uncertified(X, l[:, None], r[:, None], tau, stop_early=True):
        raise RuntimeError("internal error: nested factors failed certification.")
    return l, r


def _rank_one_positive_tau(X, tau):
    """Decide ``rrank_tau(X) == 1`` for ``tau > 0``; return ``(flag, l, r)``.

    Proposition "rounding rank one": a non-zero ``X`` has rounding rank one iff,
    after permutations, it is block-diagonal with two nested blocks (one may be
    empty). Zero rows and columns can join either block, so the test is: the bipartite
    graph of the ones has at most two connected components with an edge, and each of
    them is nested. Block 1 gets non-negative factors, block 2 negated ones (the cross
    blocks then have products ``<= 0 < tau``).
    """
    m, n = X.shape
    row_sums, col_sums = _sums(X)
    rows = np.flatnonzero(row_sums > 0)
    cols = np.flatnonzero(col_sums > 0)
    if rows.size == 0:
        return False, None, None  # the zero matrix has rounding rank 0
    Xs = sp.csr_matrix(X)[rows][:, cols]
    Xs.eliminate_zeros()
    graph = sp.bmat([[None, Xs], [Xs.T, None]], format="csr")
    n_comp, labels = connected_components(graph, directed=False)
    if n_comp > 2:
        return False, None, None
    l = np.zeros(m)
    r = np.zeros(n)
    for c in range(n_comp):
        sub_rows = rows[labels[: rows.size] == c]
        sub_cols = cols[labels[rows.size :] == c]
        sub = sp.csr_matrix(X)[sub_rows][:, sub_cols]
        if not _is_nested_validated(sub):
            return False, None, None
        lc, rc = _nested_factors_validated(sub, tau)
        sign = 1.0 if c == 0 else -1.0
        l[sub_rows] = sign * lc
        r[sub_cols] = sign * rc
    return True, l, r


def _rank_one_zero_tau(X):
    """Decide ``rrank_0(X) == 1``; return ``(flag, l, r)`` (derivation in Notes).

    With ``tau = 0`` a row with ``l_i = 0`` is all ones, a row with ``l_i > 0`` is
    ``P = {j : r_j >= 0}`` and a row with ``l_i < 0`` is ``Q = {j : r_j <= 0}``, where
    ``P | Q`` is every column. Conversely any such ``P, Q`` are realised by ``r = +1``
    on ``P - Q``, ``-1`` on ``Q - P`` and ``0`` on ``P & Q``.
    """
    Xd = X.toarray() if sp.issparse(X) else np.asarray(X)
    Xb = Xd.astype(bool)
    m, n = Xb.shape
    full = Xb.all(axis=1)
    if full.all():
        return False, None, None  # all ones: rounding rank 0 at tau = 0
    distinct, inverse = np.unique(Xb[~full], axis=0, return_inverse=True)
    inverse = np.asarray(inverse).ravel()
    if distinct.shape[0] > 2:
        return False, None, None
    P = distinct[0]
    Q = distinct[1] if distinct.shape[0] == 2 else ~P
    if not np.all(P | Q):
        return False, None, None
    r = np.where(P & ~Q, 1.0, np.where(Q & ~P, -1.0, 0.0))
    l = np.zeros(m)
    l[~full] = np.where(inverse == 0, 1.0, -1.0)
    return True, l, r


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "tau": [Real],
        "return_factors": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def is_rounding_rank_one(X, *, tau=0.5, return_factors=False):
    """Test whether a binary matrix has rounding rank exactly one.

    For ``tau > 0`` this is the paper's Proposition "rounding rank one": a
    non-zero ``X`` has ``rrank_tau(X) = 1`` iff, after permuting rows and columns, it is
    block-diagonal with two nested blocks (one of them possibly empty). Zero rows and
    columns may join either block, so the test checks that the ones form at most two
    connected components (as a bipartite graph) and that each is nested. Thresholds
    ``tau <= 0`` are outside the proposition; see Notes for the (derived) rules used.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary matrix.
    tau : float, default=0.5
        Rounding threshold, ``round_tau(x) = 1`` iff ``x >= tau``.
    return_factors : bool, default=False
        If True, also return signed factors ``l, r`` with
        ``round_tau(outer(l, r)) == X``, verified with
        :func:`~sklearn_rrank.certify_rounding` (``None, None`` when the answer is
        False). Use ``l[:, None], r[:, None]`` as a rank-1 certificate ``L, R``.

    Returns
    -------
    rank_one : bool
        True iff ``rrank_tau(X) == 1``. Matrices of rounding rank **0** give False: the
        zero matrix for ``tau > 0``, the all-ones matrix for ``tau <= 0``.
    l : ndarray of shape (n_samples,) or None
        Only if ``return_factors``: row factor.
    r : ndarray of shape (n_features,) or None
        Only if ``return_factors``: column factor.

    Raises
    ------
    ValueError
        If ``X`` is not a binary matrix or ``tau`` is not finite.
    RuntimeError
        If the constructed factors fail certification (not expected).

    See Also
    --------
    is_nested : Nested = non-negative rounding rank one (Theorem "nested matrices").
    nested_decomposition : Non-negative factors of a nested matrix.

    Notes
    -----
    All ``tau > 0`` are equivalent (scaling). For ``tau = 0`` a rank-1 matrix
    ``round_0(l r^T)`` has rows of three kinds: all ones (``l_i = 0``), ``P = {j :
    r_j >= 0}`` (``l_i > 0``) and ``Q = {j : r_j <= 0}`` (``l_i < 0``) with ``P | Q``
    all columns; so ``rrank_0(X) = 1`` iff ``X`` is not all ones and its rows other than
    all-ones rows take at most two distinct values whose union is every column (one
    value alone always works). For ``tau < 0``, ``round_tau(A) = X`` iff ``1 - X`` is
    the strict rounding ``[-A > |tau|]``, and strict and non-strict rounding at a
    positive threshold give the same ranks (rescale by ``1 + eps``), so
    ``rrank_tau(X) = rrank_|tau|(1 - X)``; the factors are those of the complement,
    negated and scaled by a factor slightly above 1. These ``tau <= 0`` rules are
    derived here, not stated in the paper.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 4, Proposition
    "rounding rank one" and its proof in the appendix; appendix "Identity
    Matrices Have Rounding Rank 2".

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import is_rounding_rank_one
    >>> is_rounding_rank_one(np.eye(2))        # two 1x1 nested blocks
    True
    >>> is_rounding_rank_one(np.eye(3))        # three blocks: rounding rank 2
    False
    >>> ok, l, r = is_rounding_rank_one(np.eye(2), return_factors=True)
    >>> np.outer(l, r) >= 0.5
    array([[ True, False],
           [False,  True]])
    """
    tau = check_tau(tau)
    X = check_binary_matrix(X, accept_sparse=True)
    ok, l, r = _rank_one_factors(X, tau)
    if not ok:
        return (False, None, None) if return_factors else False
    return (True, l, r) if return_factors else True


def _rank_one_factors(X, tau):
    """:func:`is_rounding_rank_one` on validated ``X``: ``(ok, l, r)``, certified."""
    if tau > 0:
        ok, l, r = _rank_one_positive_tau(X, tau)
    elif tau == 0:
        ok, l, r = _rank_one_zero_tau(X)
    else:
        t = -tau
        Xd = X.toarray() if sp.issparse(X) else X
        Y = 1.0 - Xd
        ok, l, r = _rank_one_positive_tau(Y, t)
        if ok:
            # entries of Y that are 0 have l_i r_j < t; scale by c > 1 that keeps them
            # <= t after negation while the ones of Y (products >= t) move above t.
            prod = np.outer(l, r)
            below = prod[(Y == 0) & (prod > 0)]
            c = np.sqrt(t / below.max()) if below.size else 2.0
            l = -c * l
    if not ok:
        return False, None, None
    if _count_uncertified(X, l[:, None], r[:, None], tau, stop_early=True):
        raise RuntimeError("internal error: rank-1 factors failed certification.")
    return True, l, r
