"""Nested matrices: rounding rank one, nearest nested matrices and nestedness metrics.

A binary matrix is *nested* when its rows (equivalently its columns) form a chain under
set inclusion; after sorting rows and columns by decreasing sums it is a staircase.
The paper (Neumann, Gemulla, Miettinen, ICDM 2016, Section 4) shows that the nested
matrices are exactly those of *non-negative* rounding rank one (Theorem
"NestedMatrices") and that rounding rank one means "two nested blocks on a diagonal"
(Proposition "rrank1_eq_block_nested").

This module provides

* exact tests and certified factors: :func:`is_nested`, :func:`nested_decomposition`,
  :func:`is_rounding_rank_one`;
* the nearest nested matrix (the BMNA problem) with the paper's four methods in
  :class:`NestedApprox`: MT-style heuristics (reconstructions after Mannila & Terzi,
  2007), the paper's alternating exhaustive update NNRR1, MT followed by NNRR1, and the
  rounded rank-1 truncated SVD;
* ecological nestedness metrics: :func:`nodf`, :func:`nestedness_temperature` and a
  fixed-fixed curveball null model for NODF, :func:`nodf_null_model`.

Solver functions (leading underscore) take validated dense float64 or boolean arrays
and never modify their input.
"""

import time
import warnings
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_rrank._rounding import certify_rounding
from sklearn_rrank._validation import (
    check_binary_matrix,
    check_binary_values,
    check_tau,
)

__all__ = [
    "NODFNullModelResult",
    "NODFResult",
    "NestedApprox",
    "is_nested",
    "is_rounding_rank_one",
    "nested_decomposition",
    "nestedness_temperature",
    "nodf",
    "nodf_null_model",
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
    matter (ALGORITHMS.md 1.2, statement 3).
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

    By the paper's Theorem "NestedMatrices" a non-zero binary matrix has non-negative
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
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 4, Theorem "NestedMatrices".

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
            "(Theorem 'NestedMatrices'). Use NestedApprox for the nearest nested "
            "matrix, or is_rounding_rank_one for signed factors."
        )
    l, r = _nested_factors_validated(X, tau)
    if not certify_rounding(X, l[:, None], r[:, None], tau=tau):
        raise RuntimeError("internal error: nested factors failed certification.")
    return l, r


def _rank_one_positive_tau(X, tau):
    """Decide ``rrank_tau(X) == 1`` for ``tau > 0``; return ``(flag, l, r)``.

    Proposition "rrank1_eq_block_nested": a non-zero ``X`` has rounding rank one iff,
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

    For ``tau > 0`` this is the paper's Proposition "rrank1_eq_block_nested": a
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
    is_nested : Nested = non-negative rounding rank one (Theorem "NestedMatrices").
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
    "rrank1_eq_block_nested" and its proof in the appendix; appendix "Identity
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
        return (False, None, None) if return_factors else False
    if not certify_rounding(X, l[:, None], r[:, None], tau=tau):
        raise RuntimeError("internal error: rank-1 factors failed certification.")
    return (True, l, r) if return_factors else True


# ---------------------------------------------------------------------------------
# BMNA: nearest nested matrix (solvers on validated dense arrays)
# ---------------------------------------------------------------------------------

# entries per block when prefix counts are formed row-block-wise (int32, 32 MiB)
_BLOCK_ENTRIES = 1 << 23

# the violation-elimination greedy costs O(n_samples * n_features) per flip; it runs
# only when n_samples * n_features * (estimated flips) stays below this work limit
_GREEDY_WORK_LIMIT = 4e9

# one round of the insertion local search costs O(m n (m + n)); run it below this
_LOCAL_SEARCH_WORK_LIMIT = 2e9


def _as_bool(B):
    """Dense boolean copy-free view of a validated 0/1 array."""
    B = np.asarray(B)
    return B if B.dtype == bool else B.astype(bool)


def _nested_from_order(B, order):
    """Exact nearest nested matrix among those whose rows are prefixes of ``order``.

    ALGORITHMS.md 1.4 (``NESTED_FROM_ORDER``): rows are independent, each takes the
    prefix length ``L`` minimising ``(L - P[L]) + (P[n] - P[L])`` where ``P[L]`` counts
    its ones among the first ``L`` columns of ``order`` (ties: shortest prefix).

    Parameters
    ----------
    B : ndarray of shape (m, n), bool
    order : ndarray of shape (n,), a permutation of the columns

    Returns
    -------
    N : ndarray of shape (m, n), bool
        Nested matrix; every row is a prefix of ``order``.
    cost : int
        Number of entries where ``N`` and ``B`` differ.
    """
    B = _as_bool(B)
    m, n = B.shape
    lengths = np.empty(m, dtype=np.int64)
    cost = 0
    steps = np.arange(n + 1, dtype=np.int64)
    rows_per_block = max(1, _BLOCK_ENTRIES // max(n + 1, 1))
    for start in range(0, m, rows_per_block):
        Bo = B[start : start + rows_per_block][:, order]
        P = np.zeros((Bo.shape[0], n + 1), dtype=np.int64)
        np.cumsum(Bo, axis=1, out=P[:, 1:])
        c = steps[None, :] - 2 * P + P[:, -1:]
        best = np.argmin(c, axis=1)
        lengths[start : start + Bo.shape[0]] = best
        cost += int(c[np.arange(Bo.shape[0]), best].sum())
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    N = pos[None, :] < lengths[:, None]
    return N, cost


def _staircase_orders(N):
    """Row and column orders (stable, decreasing sums) making ``N`` a staircase."""
    N = _as_bool(N)
    rows = np.argsort(-N.sum(axis=1), kind="stable")
    cols = np.argsort(-N.sum(axis=0), kind="stable")
    return rows, cols


def _bmna_brute_force(B):
    """Exact BMNA optimum by enumerating column (or row) orders; min(m, n) <= 8.

    Every nested matrix has an order in which all rows are prefixes, so the minimum of
    :func:`_nested_from_order` over all orders is optimal (ALGORITHMS.md 1.4).
    Returns ``(N, cost)``.
    """
    import itertools

    B = _as_bool(B)
    transpose = B.shape[1] > B.shape[0]
    A = B.T if transpose else B
    m, n = A.shape
    if n > 8:
        raise ValueError(f"brute force needs min(m, n) <= 8, got {min(B.shape)}.")
    perms = np.array(list(itertools.permutations(range(n))), dtype=np.int64)
    steps = np.arange(n + 1)
    best_cost, best_perm = None, None
    for start in range(0, perms.shape[0], 5040):
        chunk = perms[start : start + 5040]
        Bo = A[:, chunk].astype(np.int64)  # (m, p, n)
        P = np.concatenate([np.zeros(Bo.shape[:2] + (1,), np.int64), Bo.cumsum(2)], 2)
        c = (steps - 2 * P + P[:, :, -1:]).min(axis=2).sum(axis=0)
        k = int(np.argmin(c))
        if best_cost is None or c[k] < best_cost:
            best_cost, best_perm = int(c[k]), chunk[k]
    N, cost = _nested_from_order(A, best_perm)
    return (N.T if transpose else N), cost


def _bmna_ilp(B, time_limit=None):
    """Exact BMNA optimum by the integer program of ALGORITHMS.md 1.4 (scipy milp).

    Binary ``N_ij`` and, for every row pair ``p < q``, a binary ``z_pq`` (1: row ``p``
    contains row ``q``); for every column ``j``: ``N_qj - N_pj + z_pq <= 1`` and
    ``N_pj - N_qj - z_pq <= 0``. Minimises ``|N - B|``. Small instances only (10 x 8
    takes a fraction of a second, 25 x 20 may not finish). Returns ``(N, cost)``.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    B = _as_bool(B)
    m, n = B.shape
    pairs = [(p, q) for p in range(m) for q in range(p + 1, m)]
    n_var = m * n + len(pairs)
    rows, cols, vals, ub = [], [], [], []
    r = 0
    for k, (p, q) in enumerate(pairs):
        z = m * n + k
        for j in range(n):
            rows += [r, r, r, r + 1, r + 1, r + 1]
            cols += [q * n + j, p * n + j, z, p * n + j, q * n + j, z]
            vals += [1, -1, 1, 1, -1, -1]
            ub += [1, 0]
            r += 2
    c = np.zeros(n_var)
    c[: m * n] = np.where(B.ravel(), -1.0, 1.0)  # |N - B| = sum(c * N) + sum(B)
    constraints = []
    if r:
        A = sp.csr_matrix((vals, (rows, cols)), shape=(r, n_var))
        constraints.append(LinearConstraint(A, -np.inf, np.array(ub, dtype=float)))
    options = {} if time_limit is None else {"time_limit": float(time_limit)}
    res = milp(
        c,
        constraints=constraints,
        integrality=np.ones(n_var),
        bounds=Bounds(0, 1),
        options=options,
    )
    if res.x is None:
        raise RuntimeError(f"milp found no solution: {res.message}")
    N = res.x[: m * n].reshape(m, n) > 0.5
    return N, int(np.count_nonzero(N != B))


def _mt_order(B, max_iter, N_start=None):
    """Order-based alternating heuristic for BMNA (ALGORITHMS.md 1.5 (B)).

    Start from the exact solution for the column order by decreasing sums (or from
    ``N_start``); then repeatedly re-sort the columns by the current solution's sums
    (ties broken by the data) and solve exactly for that order, do the same pass on
    the transpose, and keep the better; stop when the cost stops improving. A
    reconstruction in the spirit of Mannila & Terzi (2007), not their exact method.
    Returns ``(N, cost, n_iter, converged)``.
    """
    B = _as_bool(B)
    m, n = B.shape
    col_b = B.sum(axis=0) / (m + 1.0)
    row_b = B.sum(axis=1) / (n + 1.0)
    if N_start is None:
        N, cost = _nested_from_order(B, np.argsort(-col_b, kind="stable"))
    else:
        N = N_start
        cost = int(np.count_nonzero(N != B))
    n_iter, converged = 0, False
    for _ in range(max_iter):
        n_iter += 1
        pi = np.argsort(-(N.sum(axis=0) + col_b), kind="stable")
        N1, c1 = _nested_from_order(B, pi)
        rho = np.argsort(-(N1.sum(axis=1) + row_b), kind="stable")
        N2, c2 = _nested_from_order(B.T, rho)
        Nc, cc = (N1, c1) if c1 <= c2 else (N2.T, c2)
        if cc >= cost:
            converged = True
            break
        N, cost = Nc, cc
    return N, cost, n_iter, converged


def _mt_greedy(B, max_flips=None):
    """Violation-elimination greedy (ALGORITHMS.md 1.5 (A)); returns the flipped matrix.

    Repeatedly flips the cell whose flip removes the most "checkerboards" (2 x 2
    submatrices ``[[1, 0], [0, 1]]`` up to permutation) net of those it creates, until
    no flip strictly helps. The gain matrix is ``G = (2N - 1) * D`` with
    ``D = (C s) 1^T - H N``, where ``C = 1 - N``, ``s`` are the column sums and ``H``
    the row-row Hamming distances (this equals ``A1 - A0`` of ALGORITHMS.md 1.2).
    ``D``, ``H`` and ``C s`` are updated in O(m n) per flip instead of being recomputed
    in O(m^2 n). The result need not be nested; callers polish it with
    :func:`_nested_from_order`. A reconstruction of the idea described for Mannila &
    Terzi's method ("iteratively eliminating parts of the matrix that violate the
    nestedness"), not their published algorithm.
    """
    B = _as_bool(B)
    transpose = B.shape[0] > B.shape[1]
    A = B.T if transpose else B
    m, n = A.shape
    # every intermediate is an integer of magnitude <= 2 m n and the matrix-vector
    # product sums non-negative terms, so float32 is exact below 2**24
    dtype = np.float32 if 2 * m * n < 2**24 else np.float64
    N = A.astype(dtype)  # a copy: m <= n from here on
    if max_flips is None:
        max_flips = m * n
    s = N.sum(axis=0)
    C = 1 - N
    u = C @ s
    H = N @ C.T + C @ N.T
    D = u[:, None] - H @ N
    S = 2 * N - 1
    G = np.empty_like(D)
    n_flips = 0
    while n_flips < max_flips:
        np.multiply(S, D, out=G)
        k = int(np.argmax(G))
        if G.flat[k] <= 0:
            break
        i, a = divmod(k, n)
        old = N[i, a]
        new = 1 - old
        delta = new - old
        col = N[:, a].copy()
        dh = np.where(col == old, 1, -1).astype(dtype)
        dh[i] = 0
        du = (1 - col) * delta
        du[i] = -delta * s[a] + (1 - new) * delta
        # D_j for j != i: + du_j - dh_j * N_i(new) - [c == a] * H_ji(old) * delta
        N[i, a] = new
        S[i, a] = 2 * new - 1
        s[a] += delta
        u += du
        D += du[:, None]
        D -= np.outer(dh, N[i])
        D[:, a] -= H[:, i] * delta
        H[i, :] += dh
        H[:, i] += dh
        D[i] = u[i] - H[i] @ N
        n_flips += 1
    N = N.astype(bool)
    return N.T if transpose else N


def _count_violations(B):
    """Number of checkerboards (2 x 2 submatrices [[1, 0], [0, 1]] up to order).

    ALGORITHMS.md 1.2: with ``C = 1 - B`` and ``M = C B^T``, a one at ``(i, a)`` lies in
    ``(M C)_ia`` checkerboards and a zero in ``(M^T B)_ia``; each checkerboard has four
    cells. ``B`` is nested iff the count is 0.
    """
    Bi = _as_bool(B).astype(np.int64)
    C = 1 - Bi
    M = C @ Bi.T
    counts = np.where(Bi == 1, M @ C, M.T @ Bi)
    return int(counts.sum()) // 4


def _polish(B, N):
    """Exact best nested matrix for the orders implied by ``N`` (columns and rows)."""
    rows, cols = _staircase_orders(N)
    N1, c1 = _nested_from_order(B, cols)
    N2, c2 = _nested_from_order(B.T, rows)
    return (N1, c1) if c1 <= c2 else (N2.T, c2)


def _insertion_sweep(B, order, cost):
    """One pass of column re-insertion moves, each evaluated exactly in O(m n).

    For each column ``j`` (in the current order): remove it, and for every insertion
    position ``p`` compute the exact BMNA cost of the resulting order at once. With
    ``P`` the prefix counts of the order without ``j``, ``b = B[:, j]`` and ``T`` the
    row sums, a row of prefix length ``L <= p`` costs ``L + T - 2 P[L]`` and one of
    length ``K + 1 > p`` costs ``K + 1 + T - 2 P[K] - 2 b``; prefix minima of the first
    and suffix minima of the second give every position in O(m n). The column moves to
    the best position when that strictly lowers the cost. Returns
    ``(order, cost, improved)``.
    """
    m, n = B.shape
    Bi = B.astype(np.int64)
    steps = np.arange(n, dtype=np.int64)
    improved = False
    for j in order.copy():
        sigma = order[order != j]
        P = np.zeros((m, n), dtype=np.int64)
        np.cumsum(Bi[:, sigma], axis=1, out=P[:, 1:])
        b = Bi[:, j][:, None]
        base = steps + P[:, -1:] + b - 2 * P  # L + T - 2 P[L]
        left = np.minimum.accumulate(base, axis=1)
        right = np.minimum.accumulate((base + 1 - 2 * b)[:, ::-1], axis=1)[:, ::-1]
        total = np.minimum(left, right).sum(axis=0)
        p = int(np.argmin(total))
        if total[p] < cost:
            order = np.insert(sigma, p, j)
            cost = int(total[p])
            improved = True
    return order, cost, improved


def _insertion_local_search(B, N, max_rounds):
    """Local search over orders: alternate column and row re-insertion sweeps.

    Each round takes the staircase order of the current nested matrix, solves it
    exactly (:func:`_nested_from_order`), improves the order by
    :func:`_insertion_sweep`, and does the same on the transpose (rows). Stops when a
    round changes nothing. Never increases the cost. Returns ``(N, cost, n_rounds)``.
    """
    cost = int(np.count_nonzero(N != B))
    n_rounds = 0
    for _ in range(max_rounds):
        n_rounds += 1
        improved = False
        for transpose in (False, True):
            A, cur = (B.T, N.T) if transpose else (B, N)
            order = _staircase_orders(cur)[1]
            _, c = _nested_from_order(A, order)
            order, c, _ = _insertion_sweep(A, order, c)
            if c < cost:
                Nn, cost = _nested_from_order(A, order)
                N = Nn.T if transpose else Nn
                improved = True
        if not improved:
            break
    return N, cost, n_rounds


def _mt(B, max_iter):
    """MT-style BMNA heuristics (reconstructions after Mannila & Terzi, 2007).

    (B) :func:`_mt_order` from the data; (A) :func:`_mt_greedy`, polished by the exact
    per-order solver (:func:`_polish`) and continued with :func:`_mt_order`; the
    better result is then improved by :func:`_insertion_local_search` (our addition:
    exact per-order solutions over re-insertion moves of the order). (A) costs
    O(m n) per flip and runs only if ``m * n * cost_B`` is below
    ``_GREEDY_WORK_LIMIT``; the local search costs O(m n (m + n)) per round and runs
    only if that is below ``_LOCAL_SEARCH_WORK_LIMIT``. Returns ``(N, cost, info)``.
    """
    B = _as_bool(B)
    m, n = B.shape
    N, cost, n_iter, conv = _mt_order(B, max_iter)
    info = {"order_cost": cost, "greedy_cost": None, "local_search_cost": None}
    if cost > 0 and float(m) * n * cost <= _GREEDY_WORK_LIMIT:
        Ng = _mt_greedy(B)
        Np, _ = _polish(B, Ng)
        Ng, cg, it_g, conv_g = _mt_order(B, max_iter, N_start=Np)
        info["greedy_cost"] = cg
        if cg < cost:
            N, cost, n_iter, conv = Ng, cg, it_g, conv_g
    if cost > 0 and float(m) * n * (m + n) <= _LOCAL_SEARCH_WORK_LIMIT:
        N, cost, n_rounds = _insertion_local_search(B, N, max_iter)
        info["local_search_cost"] = cost
        n_iter += n_rounds
        conv = conv and n_rounds < max_iter
    info.update(n_iter=n_iter, converged=conv)
    return N, cost, info


def _best_upper_sets(B, values, eligible):
    """Exhaustive update of NNRR1: the best upper set of ``values`` for every row.

    Row ``i`` may become ``{j : values_j >= v}`` for any eligible value ``v`` (the
    candidates ``tau / v`` of the paper's Section 4 with ``v`` among the row's ones;
    every other threshold is dominated) or the empty set. One stable sort of
    ``values`` (O(n log n)) and prefix counts of the row in that order (O(n) per row)
    evaluate all candidates; ties in ``values`` move together. Equal costs keep the
    smallest set. The current set of a row (any upper set of eligible values) is among
    the candidates, so the error never increases.

    Parameters
    ----------
    B : ndarray of shape (m, n), bool
    values : ndarray of shape (n,), float
    eligible : ndarray of shape (n,), bool
        Columns that may be included (an upper set of ``values``).

    Returns
    -------
    chosen : ndarray of shape (m,), float
        The threshold value ``v`` of each row (``nan`` for an empty row).
    cost : int
        Total number of differing entries after the update.
    """
    m, n = B.shape
    order = np.argsort(-values, kind="stable")
    n_elig = int(np.count_nonzero(eligible))
    order = order[:n_elig]
    sorted_vals = values[order]
    row_sums = B.sum(axis=1, dtype=np.int64)
    chosen = np.full(m, np.nan)
    if n_elig == 0:
        return chosen, int(row_sums.sum())
    ends = np.flatnonzero(np.r_[sorted_vals[1:] != sorted_vals[:-1], True])
    sizes = ends + 1
    cost = 0
    rows_per_block = max(1, _BLOCK_ENTRIES // max(n_elig, 1))
    for start in range(0, m, rows_per_block):
        stop = min(start + rows_per_block, m)
        P = np.cumsum(B[start:stop][:, order], axis=1, dtype=np.int32)[:, ends]
        c = sizes[None, :] - 2 * P.astype(np.int64)  # cost minus the row sum
        best = np.argmin(c, axis=1)
        cbest = c[np.arange(stop - start), best]
        take = cbest < 0  # strictly better than the empty row
        chosen[start:stop][take] = sorted_vals[ends[best[take]]]
        cost += int(row_sums[start:stop].sum() + np.minimum(cbest, 0).sum())
    return chosen, cost


def _nnrr1(B, r_init, max_iter, start_cost=None):
    """NNRR1: alternating exhaustive updates of ``l`` and ``r`` (paper, Section 4).

    The state is kept combinatorially and exactly: ``r`` (columns) and row thresholds
    ``t_i = tau / l_i`` (``inf`` for ``l_i = 0``), with ``N_ij = [r_j >= t_i]``. The
    update of ``l`` given ``r`` picks for each row the best upper set of ``r``; the
    update of ``r`` given ``l`` picks for each column the best set of rows with
    ``t_i <= r_j``, i.e. ``r_j`` equal to one of the row thresholds (``tau / l_i``) or
    0. Comparisons only, no products, so no rounding issue. One iteration is an
    ``l``-update followed by an ``r``-update; stop when an iteration does not lower
    the error or after ``max_iter`` iterations.

    Returns ``(N, cost, n_iter, converged)``.
    """
    B = _as_bool(B)
    Bt = np.ascontiguousarray(B.T)
    r = np.asarray(r_init, dtype=np.float64)
    prev = np.inf if start_cost is None else start_cost
    n_iter, converged = 0, False
    t = None
    for _ in range(max_iter):
        n_iter += 1
        chosen, _ = _best_upper_sets(B, r, r > 0)
        t_new = np.where(np.isnan(chosen), np.inf, chosen)
        chosen, cost = _best_upper_sets(Bt, -t_new, np.isfinite(t_new))
        r_new = np.where(np.isnan(chosen), 0.0, -chosen)
        if cost >= prev:
            converged = True
            if t is None:  # first iteration did not beat the start: keep its result
                t, r = t_new, r_new
            break
        t, r, prev = t_new, r_new, cost
    N = r[None, :] >= t[:, None]
    return N, int(np.count_nonzero(N != B)), n_iter, converged


def _positional_r(N):
    """Distinct column values realising nested ``N`` (Theorem "NestedMatrices").

    Columns sorted by decreasing sum (stable) get ``n, n-1, ..., 1``: the order of the
    paper's ``r'_j = 2^-j`` without its underflow. Used to start NNRR1 from MT.
    """
    n = N.shape[1]
    _, cols = _staircase_orders(N)
    r = np.empty(n)
    r[cols] = np.arange(n, 0, -1, dtype=np.float64)
    return r


def _rsvd_nested(B, random_state):
    """Round the rank-1 truncated SVD ``sigma u v^T`` at 1/2 (paper, Section 4).

    The SVD approximates the 0/1 entries, so it is rounded at 1/2, the paper's
    threshold, whatever the ``tau`` of the caller (which only rescales ``l``).

    By Perron-Frobenius ``u, v`` can be taken non-negative (entries of the wrong sign
    are round-off and are clipped to 0), so the rounded matrix is nested. ARPACK
    (``scipy.sparse.linalg.svds``, start vector drawn from ``random_state``); dense
    LAPACK when a side has fewer than 3 entries. Returns ``(N, cost)``.
    """
    from scipy.sparse.linalg import svds

    B = _as_bool(B)
    m, n = B.shape
    A = B.astype(np.float64)
    if min(m, n) < 3:
        U, s, Vt = np.linalg.svd(A, full_matrices=False)
        u, sigma, v = U[:, 0], s[0], Vt[0]
    else:
        rng = check_random_state(random_state)
        v0 = rng.uniform(0.5, 1.5, size=min(m, n))
        U, s, Vt = svds(A, k=1, v0=v0, solver="arpack")
        u, sigma, v = U[:, 0], s[0], Vt[0]
    if u.sum() + v.sum() < 0:
        u, v = -u, -v
    l = sigma * np.clip(u, 0, None)
    r = np.clip(v, 0, None)
    N = np.outer(l, r) >= 0.5
    return N, int(np.count_nonzero(N != B))


def _bmna(B, method, max_iter=100, random_state=None):
    """Nearest nested matrix of validated ``B`` by one of the paper's four methods.

    Returns a dict with ``N`` (bool), ``cost``, ``n_iter``, ``converged`` and timings
    ``seconds`` (total), ``seconds_mt`` and ``seconds_nnrr1`` (the paper reports
    MT+NNRR1 without the MT part).
    """
    B = _as_bool(B)
    out = {"seconds_mt": 0.0, "seconds_nnrr1": 0.0, "converged": True}
    t0 = time.perf_counter()
    if method in ("mt", "mt+nnrr1"):
        N, cost, info = _mt(B, max_iter)
        out.update(n_iter=info["n_iter"], converged=info["converged"])
        out["seconds_mt"] = time.perf_counter() - t0
        if method == "mt+nnrr1":
            t1 = time.perf_counter()
            N, cost, n_iter, conv = _nnrr1(
                B, _positional_r(N), max_iter, start_cost=cost
            )
            out.update(n_iter=n_iter, converged=conv)
            out["seconds_nnrr1"] = time.perf_counter() - t1
    elif method == "nnrr1":
        N, cost, n_iter, conv = _nnrr1(B, _positional_r(B), max_iter)
        out.update(n_iter=n_iter, converged=conv)
        out["seconds_nnrr1"] = time.perf_counter() - t0
    elif method == "rsvd":
        N, cost = _rsvd_nested(B, random_state)
        out["n_iter"] = 1
    else:  # pragma: no cover - guarded by parameter validation
        raise ValueError(f"unknown method {method!r}")
    out["seconds"] = time.perf_counter() - t0
    out["N"], out["cost"] = N, cost
    return out


def _l_from_thresholds(chosen, r, tau):
    """Row factors ``l`` realising "row = {j : r_j >= v}" with a safe margin.

    ``chosen`` holds the threshold value ``v`` of each row (``nan``: empty row, ``l =
    0``). The threshold used is halfway between ``v`` and the next smaller distinct
    value of ``r`` (0 if none): ``l = tau / theta``.
    """
    l = np.zeros(chosen.shape[0])
    take = ~np.isnan(chosen)
    if take.any():
        levels = np.unique(r)
        k = np.searchsorted(levels, chosen[take])
        below = np.where(k > 0, levels[np.maximum(k - 1, 0)], 0.0)
        below = np.maximum(below, 0.0)
        l[take] = tau / ((chosen[take] + below) / 2.0)
    return l


# ---------------------------------------------------------------------------------
# the estimator
# ---------------------------------------------------------------------------------


class NestedApprox(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Nearest nested matrix (BMNA) as a non-negative rounding rank-1 decomposition.

    Finds a nested binary matrix ``N`` close to ``X`` in Hamming distance (the
    Bidirectional Minimum Nestedness Augmentation problem of Mannila & Terzi) and
    non-negative vectors ``l``, ``r`` with ``round_tau(outer(l, r)) == N``
    (Theorem "NestedMatrices": nested = non-negative rounding rank one). The problem
    is NP-hard; all methods are heuristics.

    Parameters
    ----------
    method : {"mt+nnrr1", "mt", "nnrr1", "rsvd"}, default="mt+nnrr1"
        - ``"mt"``: MT-style heuristics, *reconstructions* after Mannila & Terzi
          (KDD 2007) whose exact algorithm we could not consult: an order-based
          alternating heuristic (exact best nested matrix for a column order,
          re-sorting by the solution, on rows and columns), a violation-elimination
          greedy (flip the cell that removes most 2 x 2 checkerboards) followed by the
          exact per-order polish, the better of the two, then a local search over
          re-insertions of single columns/rows in the order (our addition). The
          greedy and the local search are skipped on matrices where they would be too
          slow (see Notes).
        - ``"nnrr1"``: the paper's alternating exhaustive update: with ``r`` fixed each
          ``l_i`` is chosen among the candidates ``tau / v`` (``v`` in the values of
          ``r`` at the ones of row ``i``) or 0 (an empty row; the paper lists
          ``tau / max(r)`` for it, which would still round the largest ``r_j`` to
          one), all evaluated by sorting ``r`` once and counting prefixes (O(n log n)
          per row); then ``r`` given ``l`` likewise; stops when the error stops
          decreasing or after ``max_iter`` rounds. ``r`` starts as the column sums
          with ties broken by column index.
        - ``"mt+nnrr1"``: ``"mt"``, then ``l, r`` from the construction of Theorem
          "NestedMatrices" (distinct values of ``r`` in staircase order), then NNRR1.
        - ``"rsvd"``: round the rank-1 truncated SVD of the 0/1 data at 1/2 (for every
          ``tau``); by Perron-Frobenius the singular vectors are non-negative, so the
          result is nested.
    tau : float, default=0.5
        Rounding threshold, ``> 0`` (non-negative factors cannot produce zeros for
        ``tau <= 0``). All positive values give the same nested matrices; ``tau`` only
        scales ``l``.
    binarize : float or None, default=None
        If not None, ``X`` is replaced by ``X > binarize`` before fitting and
        transforming; otherwise ``X`` must be binary.
    max_iter : int, default=100
        Maximum number of rounds of NNRR1 (``"nnrr1"``, ``"mt+nnrr1"``) and of each
        iterative stage of MT (``"mt"``).
    random_state : int, RandomState instance or None, default=None
        Start vector of the ARPACK SVD for ``method="rsvd"``; the other methods are
        deterministic.

    Attributes
    ----------
    components_ : ndarray of shape (1, n_features)
        The non-negative ``r``: for a fitted nested matrix ``N``, ``r_j`` is the number
        of rows of ``N`` that contain column ``j``.
    embedding_ : ndarray of shape (n_samples, 1)
        The non-negative ``l`` of the training rows: ``round_tau(embedding_ @
        components_)`` is the fitted nested matrix (verified with
        :func:`~sklearn_rrank.certify_rounding`).
    reconstruction_err_ : int
        Number of entries where the fitted nested matrix differs from ``X``.
    relative_error_ : float
        ``reconstruction_err_`` divided by the number of ones of ``X`` (the paper's
        relative reconstruction error; 0 or ``inf`` if ``X`` has no ones).
    row_order_ : ndarray of shape (n_samples,)
        Rows by decreasing row sum of the fitted nested matrix (stable).
    column_order_ : ndarray of shape (n_features,)
        Columns by decreasing column sum of the fitted nested matrix (stable);
        ``N[row_order_][:, column_order_]`` is a staircase.
    n_iter_ : int
        Rounds of the last iterative stage (NNRR1 for ``"nnrr1"`` and
        ``"mt+nnrr1"``; order heuristic plus local search for ``"mt"``; 1 for
        ``"rsvd"``).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, if ``X`` has string feature names.

    See Also
    --------
    is_nested : Test for nestedness.
    nested_decomposition : Exact factors of a nested matrix.
    nodf : NODF nestedness metric.

    Notes
    -----
    ``transform`` gives, for each row, the best ``l`` with ``r`` fixed (the NNRR1 row
    update): on training rows it can only lower the error compared with the fitted
    nested matrix, so ``inverse_transform(transform(X))`` may differ from
    ``round_tau(embedding_ @ components_)``. The MT greedy costs O(m n) per flip and
    runs only when ``m * n * (errors of the order heuristic) <= 4e9``; its local
    search costs O(m n (m + n)) per round and runs when that is ``<= 2e9``.

    References
    ----------
    Neumann, Gemulla, Miettinen, "What You Will Gain By Rounding: Theory and Algorithms
    for Rounding Rank", ICDM 2016, Section 4 ("Nested Matrices", "Algorithms") and
    Section 5.4. H. Mannila, E. Terzi, "Nestedness and segmented nestedness", KDD 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import NestedApprox
    >>> X = np.array([[1, 1, 1], [1, 0, 1], [1, 0, 0], [0, 1, 0]])
    >>> est = NestedApprox().fit(X)
    >>> est.reconstruction_err_
    1
    >>> est.components_
    array([[3., 1., 2.]])
    >>> est.inverse_transform(est.transform(X))
    array([[1, 1, 1],
           [1, 0, 1],
           [1, 0, 0],
           [0, 0, 0]], dtype=uint8)
    """

    _parameter_constraints: dict = {
        "method": [StrOptions({"mt+nnrr1", "mt", "nnrr1", "rsvd"})],
        "tau": [Interval(Real, 0, None, closed="neither")],
        "binarize": [None, Interval(Real, None, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        method="mt+nnrr1",
        tau=0.5,
        binarize=None,
        max_iter=100,
        random_state=None,
    ):
        self.method = method
        self.tau = tau
        self.binarize = binarize
        self.max_iter = max_iter
        self.random_state = random_state

    def _validate_binary(self, X, *, reset):
        """validate_data, then binarize or check 0/1; returns a dense bool array."""
        X = validate_data(self, X, accept_sparse=("csr", "csc", "coo"), reset=reset)
        if sp.issparse(X):
            X = X.toarray()
        if self.binarize is not None:
            return np.asarray(X > self.binarize)
        check_binary_values(X, input_name="X")
        return np.asarray(X != 0)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Find a nested matrix close to ``X`` and its non-negative factors.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Binary data (or real data with ``binarize`` set).
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        B = self._validate_binary(X, reset=True)
        res = _bmna(
            B, self.method, self.max_iter, check_random_state(self.random_state)
        )
        N = res["N"]
        if not _is_nested_validated(N):
            raise RuntimeError("internal error: the result is not nested.")
        l, r = _nested_factors_validated(N, float(self.tau))
        if not certify_rounding(N, l[:, None], r[:, None], tau=self.tau):
            raise RuntimeError("internal error: the nested factors failed to certify.")
        if not res["converged"]:
            warnings.warn(
                f"NestedApprox(method={self.method!r}) stopped at max_iter="
                f"{self.max_iter} while the error was still decreasing; increase "
                "max_iter.",
                ConvergenceWarning,
                stacklevel=2,
            )
        n_err = int(np.count_nonzero(N != B))
        n_ones = int(np.count_nonzero(B))
        self.components_ = r[None, :]
        self.embedding_ = l[:, None]
        self.reconstruction_err_ = n_err
        if n_ones:
            self.relative_error_ = n_err / n_ones
        else:
            self.relative_error_ = 0.0 if n_err == 0 else float("inf")
        self.row_order_, self.column_order_ = _staircase_orders(N)
        self.n_iter_ = int(res["n_iter"])
        return self

    def transform(self, X):
        """Best non-negative ``l`` for each row of ``X`` with ``r`` fixed.

        Each row gets the upper set of ``r`` (or the empty set) closest to it in
        Hamming distance; ``l_i = tau / theta_i`` with ``theta_i`` halfway between the
        smallest ``r`` value in the set and the next smaller value of ``r``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Binary data (or real data with ``binarize`` set).

        Returns
        -------
        L : ndarray of shape (n_samples, 1), dtype float64
            Non-negative row factors.
        """
        check_is_fitted(self)
        B = self._validate_binary(X, reset=False)
        r = self.components_[0]
        chosen, _ = _best_upper_sets(B, r, r > 0)
        return _l_from_thresholds(chosen, r, float(self.tau))[:, None]

    def inverse_transform(self, X):
        """Nested binary matrix ``round_tau(X @ components_)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, 1)
            Row factors, e.g. the output of :meth:`transform`.

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features), dtype uint8
            The rounded (nested) matrix.
        """
        check_is_fitted(self)
        from sklearn.utils import check_array

        L = check_array(X, dtype=np.float64, input_name="X")
        if L.shape[1] != 1:
            raise ValueError(
                f"X must have shape (n_samples, 1) (the row factors l), got {L.shape}."
            )
        return ((L @ self.components_) >= self.tau).astype(np.uint8)

    def score(self, X, y=None):
        """Negative relative error of ``inverse_transform(transform(X))`` against ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Binary data (or real data with ``binarize`` set).
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        score : float
            ``-(differing entries) / (ones of X)``; ``-inf`` if ``X`` has no ones
            and the reconstruction has some.
        """
        check_is_fitted(self)
        B = self._validate_binary(X, reset=False)
        r = self.components_[0]
        _, n_err = _best_upper_sets(B, r, r > 0)
        n_ones = int(np.count_nonzero(B))
        if n_ones == 0:
            return 0.0 if n_err == 0 else float("-inf")
        return -n_err / n_ones

    @property
    def _n_features_out(self):
        """Number of transformed output features (1: the row factor ``l``)."""
        return 1

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


# ---------------------------------------------------------------------------------
# ecological nestedness metrics
# ---------------------------------------------------------------------------------


class NODFResult(NamedTuple):
    """NODF of a matrix and its row and column parts (0-100 scale).

    Attributes
    ----------
    nodf : float
        Mean paired nestedness over all row pairs and column pairs.
    rows : float
        Mean over row pairs (``nan`` with fewer than two rows).
    columns : float
        Mean over column pairs (``nan`` with fewer than two columns).
    """

    nodf: float
    rows: float
    columns: float


def _paired_nestedness_sum(B):
    """Sum over item pairs (rows of ``B``, in order) of the NODF paired nestedness.

    For items ``i`` above ``k``: 0 unless ``sum_i > sum_k > 0`` (decreasing fill),
    otherwise ``100 |R_i & R_k| / |R_k|``.
    """
    sums = B.sum(axis=1)
    overlap = B @ B.T
    upper = np.triu(np.ones(overlap.shape, dtype=bool), k=1)
    mask = upper & (sums[:, None] > sums[None, :]) & (sums[None, :] > 0)
    denom = np.broadcast_to(sums[None, :], overlap.shape)
    return float(np.sum(100.0 * overlap[mask] / denom[mask]))


def _nodf_validated(B, sort=True):
    B = np.asarray(B, dtype=np.float64)
    if sort:
        B = B[np.argsort(-B.sum(axis=1), kind="stable")]
        B = B[:, np.argsort(-B.sum(axis=0), kind="stable")]
    m, n = B.shape
    row_pairs, col_pairs = m * (m - 1) / 2, n * (n - 1) / 2
    pr = _paired_nestedness_sum(B)
    pc = _paired_nestedness_sum(B.T)
    rows = pr / row_pairs if row_pairs else float("nan")
    cols = pc / col_pairs if col_pairs else float("nan")
    total = (pr + pc) / (row_pairs + col_pairs) if row_pairs + col_pairs else np.nan
    return NODFResult(float(total), float(rows), float(cols))


@validate_params(
    {"X": ["array-like", "sparse matrix"], "sort": ["boolean"]},
    prefer_skip_nested_validation=True,
)
def nodf(X, *, sort=True):
    """NODF nestedness metric (Almeida-Neto et al., 2008) on the 0-100 scale.

    Rows and columns are first sorted by decreasing sums (stable; ``sort=True``, the
    original definition, as ``vegan::nestednodf(order=TRUE)``). For each pair of rows
    ``i`` above ``k`` the paired nestedness is 0 if ``sum_i <= sum_k`` or ``sum_k = 0``
    ("decreasing fill" fails) and ``100 |R_i & R_k| / |R_k|`` otherwise; likewise for
    column pairs. NODF is the mean over all row and column pairs.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary matrix (rows: e.g. sites, columns: species).
    sort : bool, default=True
        Sort rows and columns by decreasing sums first. If False, the given order is
        used.

    Returns
    -------
    result : NODFResult
        Named tuple ``(nodf, rows, columns)``: the overall value and its row and
        column parts, each in [0, 100]; a part without pairs is ``nan``.

    Raises
    ------
    ValueError
        If ``X`` is not a binary matrix.

    Notes
    -----
    A nested matrix scores 100 only if its row sums are distinct and positive and
    its column sums too: equal sums (e.g. duplicate rows) contribute 0. Do not use
    NODF as a test of nestedness; use :func:`is_nested`. Runs in O(m^2 n + n^2 m).

    References
    ----------
    M. Almeida-Neto, P. Guimaraes, P. R. Guimaraes Jr, R. D. Loyola, W. Ulrich, "A
    consistent metric for nestedness analysis in ecological systems: reconciling
    concept and measurement", Oikos 117:1227-1239, 2008.

    Examples
    --------
    >>> from sklearn_rrank import nodf
    >>> res = nodf([[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 1, 0]])
    >>> round(res.nodf, 2), round(res.rows, 2), round(res.columns, 2)
    (55.56, 66.67, 50.0)
    """
    B = check_binary_matrix(X, accept_sparse=False)
    return _nodf_validated(B, sort=sort)


def _fill_exponent(fill):
    """Solve ``integral_0^1 f(x; p) dx = fill`` for the fill-line exponent ``p``.

    With ``f(x; p) = 1 - (1 - (1 - x)^p)^(1/p)`` the integral has the closed form
    ``1 - Gamma(1 + 1/p)^2 / Gamma(1 + 2/p)`` (a Beta integral), which decreases from 1
    (``p -> 0``) to 0 (``p -> inf``); ``p = 1`` gives ``fill = 1/2``.
    """
    from scipy.optimize import brentq
    from scipy.special import gammaln

    def area(log_p):
        q = np.exp(-log_p)
        return -np.expm1(2 * gammaln(1 + q) - gammaln(1 + 2 * q)) - fill

    lo, hi = -5.0, 5.0
    while area(lo) < 0:
        lo -= 5.0
    while area(hi) > 0:
        hi += 5.0
    return float(np.exp(brentq(area, lo, hi, xtol=1e-14)))


def _fill_line_crossing(a, p):
    """``x`` in [0, 1] with ``f(x; p) = x + a`` (vectorised bisection, |a| <= 1).

    ``g(x) = f(x; p) - x - a`` decreases from ``1 - a >= 0`` to ``-1 - a <= 0``.
    """
    lo = np.zeros_like(a)
    hi = np.ones_like(a)
    for _ in range(60):
        mid = (lo + hi) / 2
        with np.errstate(over="ignore", under="ignore"):
            f = 1 - (1 - (1 - mid) ** p) ** (1 / p)
        right = f - mid - a > 0
        lo = np.where(right, mid, lo)
        hi = np.where(right, hi, mid)
    return (lo + hi) / 2


def _rank_ordinal(score):
    """Ranks 1..n of ``score`` (ascending), ties by position (deterministic)."""
    ranks = np.empty(score.size)
    ranks[np.argsort(score, kind="stable")] = np.arange(1, score.size + 1)
    return ranks


def _pack_temperature(B):
    """Row and column orders that pack ones to the top-left (vegan's heuristic).

    Follows the packing of ``vegan::nestedtemp`` (an interpretation of Rodriguez-
    Girones & Santamaria 2006): start from the marginal-total ranks, then eight times
    re-rank the columns given the row ranks and the rows given the column ranks by a
    score that rewards ones at low ranks and zeros at high ranks. Ties are broken by
    position (vegan breaks them at random).
    """
    from scipy.stats import rankdata

    m, n = B.shape

    def col_ranks(row_rank):
        w = row_rank[:, None]
        s = -np.sum((B * w) ** 2, axis=0)
        t = -np.sum((m - (1 - B) * w + 1) ** 2, axis=0)
        return _rank_ordinal(s + t)

    def row_ranks(col_rank):
        w = col_rank[None, :]
        s = -np.sum((B * w) ** 2, axis=1)
        t = -np.sum((n - (1 - B) * w + 1) ** 2, axis=1)
        return _rank_ordinal(s + t)

    if n >= m:
        ri = rankdata(-B.sum(axis=1), method="average")
    else:
        ri = row_ranks(rankdata(-B.sum(axis=0), method="average"))
    for _ in range(8):
        cj = col_ranks(ri)
        ri = row_ranks(cj)
    if n < m:
        cj = col_ranks(ri)
    return np.argsort(ri, kind="stable"), np.argsort(cj, kind="stable")


@validate_params(
    {"X": ["array-like", "sparse matrix"], "pack": ["boolean"]},
    prefer_skip_nested_validation=True,
)
def nestedness_temperature(X, *, pack=True):
    """Nestedness temperature (Atmar & Patterson, 1993) as computed by vegan.

    The computation of ALGORITHMS.md 7.2, which follows ``vegan::nestedtemp`` (the
    fill line of Rodriguez-Girones & Santamaria, 2006): (1) pack the matrix (see
    ``pack``); (2) put cell ``(i, j)`` at ``((i - 1/2) / m, (j - 1/2) / n)`` in the
    unit square; (3) with ``fill`` the fraction of ones, the fill line is ``y = 1 -
    (1 - (1 - x)^p)^(1/p)`` with ``p`` chosen so that the area below it is ``fill``;
    (4) along the diagonal through each cell find the crossing ``x*`` with the fill
    line; the unexpectedness is ``u = (r_i - x*) / (1 - |r_i - c_j|)``, kept only for
    ones beyond the line (``u > 0``) and zeros before it (``u < 0``); (5) ``T = 100
    sum(u^2) / (m n) / 0.04145``. Not BINMATNEST: its genetic-algorithm packing is
    not reproduced, so values depend on the packing heuristic.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary matrix.
    pack : bool, default=True
        Reorder rows and columns by vegan's packing heuristic first (ties broken by
        position). If False, the given order is used.

    Returns
    -------
    temperature : float
        0 for a perfectly packed nested matrix, larger for disorder (about 100 for
        random matrices). A matrix of all zeros or all ones gives 0.

    Raises
    ------
    ValueError
        If ``X`` is not a binary matrix.

    References
    ----------
    W. Atmar, B. D. Patterson, "The measure of order and disorder in the distribution
    of species in fragmented habitat", Oecologia 96:373-382, 1993.
    M. A. Rodriguez-Girones, L. Santamaria, "A new algorithm to calculate the
    nestedness temperature of presence-absence matrices", J. Biogeography
    33:924-935, 2006. J. Oksanen et al., R package vegan, function ``nestedtemp``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import nestedness_temperature
    >>> X = np.tril(np.ones((10, 10)))
    >>> print(f"{nestedness_temperature(X):.2f}")
    0.00
    """
    B = check_binary_matrix(X, accept_sparse=False)
    m, n = B.shape
    fill = float(B.mean())
    if fill in (0.0, 1.0):
        return 0.0
    if pack:
        rows, cols = _pack_temperature(B)
        B = B[rows][:, cols]
    p = _fill_exponent(fill)
    r = (np.arange(1, m + 1) - 0.5) / m
    c = (np.arange(1, n + 1) - 0.5) / n
    a = c[None, :] - r[:, None]
    x_star = _fill_line_crossing(a, p)
    u = (r[:, None] - x_star) / (1 - np.abs(a))
    ones = B == 1
    u[ones & (u < 0)] = 0.0
    u[~ones & (u > 0)] = 0.0
    return float(100.0 * np.sum(u**2) / (m * n) / 0.04145)


class NODFNullModelResult(NamedTuple):
    """NODF of a matrix compared with a fixed-fixed (curveball) null model.

    Attributes
    ----------
    nodf : float
        Observed NODF (0-100).
    null_mean : float
        Mean NODF of the null matrices.
    null_std : float
        Standard deviation (ddof=1) of the null NODF values.
    z_score : float
        ``(nodf - null_mean) / null_std`` (``nan`` when ``null_std`` is 0).
    p_value : float
        One-sided ``(1 + #{null >= nodf}) / (1 + n_samples)``: small values mean more
        nested than expected for the row and column sums.
    null_nodf : ndarray of shape (n_samples,)
        NODF of each null matrix.
    """

    nodf: float
    null_mean: float
    null_std: float
    z_score: float
    p_value: float
    null_nodf: np.ndarray


def _curveball_trades(M, n_trades, rng):
    """Apply ``n_trades`` curveball trades to the boolean matrix ``M`` in place.

    A trade picks two distinct rows, pools the columns where exactly one of them has a
    one, shuffles the pool and deals it back in the original counts: row and column
    sums are preserved (Strona et al. 2014).
    """
    m = M.shape[0]
    if m < 2 or n_trades <= 0:
        return M
    first = rng.integers(0, m, size=n_trades)
    second = rng.integers(0, m - 1, size=n_trades)
    second += second >= first
    for i, k in zip(first, second, strict=True):
        ri, rk = M[i], M[k]
        only_i = np.flatnonzero(ri & ~rk)
        if only_i.size == 0:
            continue
        only_k = np.flatnonzero(rk & ~ri)
        if only_k.size == 0:
            continue
        pool = np.concatenate([only_i, only_k])
        rng.shuffle(pool)
        M[i, pool] = False
        M[k, pool] = False
        M[i, pool[: only_i.size]] = True
        M[k, pool[only_i.size :]] = True
    return M


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "n_trades": [None, Interval(Integral, 1, None, closed="left")],
        "burn_in": [None, Interval(Integral, 0, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def nodf_null_model(X, *, n_samples=99, n_trades=None, burn_in=None, random_state=None):
    """Compare NODF with a fixed-fixed null model sampled by curveball trades.

    Null matrices keep every row sum and column sum of ``X`` (Gotelli's "fixed-fixed"
    model). They are sampled with the curveball algorithm (Strona et al. 2014;
    uniform in the limit, Carstens 2015) as one Markov chain: ``burn_in`` trades, then
    a sample every ``n_trades`` trades.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples_X, n_features)
        Binary matrix.
    n_samples : int, default=99
        Number of null matrices.
    n_trades : int or None, default=None
        Trades between consecutive samples (thinning); None means
        ``5 * n_samples_X`` (our choice: the recommended number could not be
        verified; check mixing, e.g. with the lag-1 autocorrelation of
        ``null_nodf``).
    burn_in : int or None, default=None
        Trades before the first sample; None means ``10 * n_trades``.
    random_state : int, RandomState instance or None, default=None
        Seed of the chain (a ``numpy.random.Generator`` is derived from it).

    Returns
    -------
    result : NODFNullModelResult
        Named tuple ``(nodf, null_mean, null_std, z_score, p_value, null_nodf)``.

    Raises
    ------
    ValueError
        If ``X`` is not binary or a parameter is out of range.

    References
    ----------
    G. Strona, D. Nappo, F. Boccacci, S. Fattorini, J. San-Miguel-Ayanz, "A fast and
    unbiased procedure to randomize ecological binary matrices with fixed row and
    column totals", Nature Communications 5:4114, 2014. C. J. Carstens, "Proof of
    uniform sampling of binary matrices with fixed row sums and column sums for the
    fast curveball algorithm", Phys. Rev. E 91:042812, 2015. N. J. Gotelli, "Null
    model analysis of species co-occurrence patterns", Ecology 81:2606-2621, 2000.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import nodf_null_model
    >>> X = np.tril(np.ones((8, 8)))
    >>> res = nodf_null_model(X, n_samples=19, random_state=0)
    >>> round(res.nodf, 1), res.p_value      # a staircase is the only such matrix
    (100.0, 1.0)
    """
    B = check_binary_matrix(X, accept_sparse=False)
    m = B.shape[0]
    if n_trades is None:
        n_trades = 5 * m
    if burn_in is None:
        burn_in = 10 * n_trades
    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
    rng = np.random.default_rng(seed)
    observed = _nodf_validated(B).nodf
    M = B.astype(bool)
    _curveball_trades(M, burn_in, rng)
    null = np.empty(n_samples)
    for s in range(n_samples):
        _curveball_trades(M, n_trades, rng)
        null[s] = _nodf_validated(M).nodf
    mean = float(null.mean())
    std = float(null.std(ddof=1)) if n_samples > 1 else float("nan")
    z = (observed - mean) / std if std > 0 else float("nan")
    p = (1 + int(np.count_nonzero(null >= observed))) / (1 + n_samples)
    return NODFNullModelResult(observed, mean, std, float(z), float(p), null)
