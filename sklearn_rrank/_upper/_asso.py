"""Asso: Boolean matrix factorisation for the Discrete Basis Problem.

Asso (Miettinen, Mielikäinen, Gionis, Das and Mannila, *The Discrete Basis Problem*,
IEEE TKDE 20(10), 2008) is a greedy heuristic that writes a binary matrix ``X`` (rows =
transactions, columns = attributes) as the Boolean product ``S o B`` of a binary usage
matrix ``S`` (n_samples, k) and a binary basis ``B`` (k, n_features). The candidate
basis vectors are the rows of the thresholded association (confidence) matrix between
the columns of ``X``; at each of the k steps the candidate and usage column that
increase the weighted cover most are added.

Why it belongs here (the paper, Section 2.4, Lemma "rrank <= Boolean rank"): for binary
``L`` and ``R`` the real product ``(L @ R.T)[i, j]`` counts the basis vectors that cover
``(i, j)``, so it is 0 where the Boolean product is 0 and at least 1 where it is 1.
Hence ``round_tau(L @ R.T) == L o R.T`` for every ``tau`` in (0, 1], and an exact
Boolean factorisation with k factors certifies ``rrank_tau(X) <= k``. The paper
(Section 5.2.3) ran Asso as a minimum-error rank-k decomposition with binary factors.

Implementation notes (after Miettinen et al. 2008): the gain matrix ``G = P @ Cand.T``
(``P`` the value of covering each cell now) is computed once per confidence threshold
with a sparse product and then updated incrementally: after a step only the rows that
use the new basis vector change, by ``-P_new @ Cand[:, b].T`` restricted to the newly
covered cells. Each step therefore costs O(|usage| * |basis vector| * n_features)
instead of O(n_samples * n_features**2).
"""

import time
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils import gen_batches
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

from sklearn_rrank._core._parallel import Parallel, delayed, effective_n_jobs
from sklearn_rrank._core._results import FactorizationResult
from sklearn_rrank._core._validation import check_binary_matrix

__all__ = ["asso_fit", "asso_transform"]

#: confidence thresholds tried when ``threshold=None``: 0.05, 0.10, ..., 1.0
THRESHOLD_GRID = tuple(np.arange(1, 21) / 20)

# orientation="auto" also tries Asso on X.T (associations between rows) up to this
# many rows (the association matrix is n_rows x n_rows)
_MAX_AUTO_ROWS = 5000

# entries of the gain matrix updated per block (32 MiB of float64)
_BLOCK_ENTRIES = 1 << 22


#: the rounding thresholds at which the Boolean product of binary factors is their
#: rounding (``round_tau(L @ R.T) == L o R.T``): ``0 < tau <= 1``
BOOLEAN_TAU = [Interval(Real, 0, 1, closed="right")]

#: Asso's parameters and their constraints, declared once for the doors
#: (:func:`asso_fit`, :func:`asso_transform`) and the registry's method parameters
ASSO_PARAMS = {
    "threshold": [Interval(Real, 0, 1, closed="right"), None],
    "bonus_covered": [Interval(Real, 0, None, closed="neither")],
    "penalty_overcovered": [Interval(Real, 0, None, closed="left")],
    "strict": ["boolean"],
    "orientation": [StrOptions({"auto", "columns", "rows"})],
}


def _association_matrix(Xs):
    """Confidences ``conf[i, j] = <x_i, x_j> / <x_i, x_i>`` between the columns.

    ``Xs`` is a CSR matrix of shape (m, n); empty columns give all-zero rows (an empty
    candidate) instead of 0/0.
    """
    co = (Xs.T @ Xs).toarray()
    d = np.diag(co).copy()
    conf = np.zeros_like(co)
    np.divide(co, d[:, None], out=conf, where=d[:, None] > 0)
    return conf


def _asso_greedy(Xs, conf, threshold, strict, k, w_plus, w_minus, verbose=0):
    """Asso's greedy cover for one confidence threshold.

    Parameters
    ----------
    Xs : CSR matrix of shape (m, n), dtype float64
        Binary data.
    conf : ndarray of shape (n, n)
        Association matrix from :func:`_association_matrix`.
    threshold : float
        Confidence threshold; candidate ``i`` is ``conf[i] >= threshold`` (``>`` if
        ``strict``).
    strict : bool
    k : int
        Number of basis vectors.
    w_plus, w_minus : float
        Weight of a covered one and penalty of a covered zero.

    Returns
    -------
    S : ndarray of shape (m, k), dtype bool
    B : ndarray of shape (k, n), dtype bool
    error : int
        Boolean reconstruction error ``|X - S o B|``.
    n_steps : int
        Number of non-empty basis vectors (the greedy stops when no gain is positive).
    """
    m, n = Xs.shape
    cand = conf > threshold if strict else conf >= threshold
    cand_sizes = cand.sum(axis=1).astype(np.float64)
    # G[r, i] = gain of using candidate i in row r = sum_j P[r, j] cand[i, j] with
    # P = w+ on uncovered ones and -w- on uncovered zeros (nothing is covered yet).
    if cand_sizes.sum() > 0.01 * n * n:  # output nearly dense: sparse x dense product
        G = np.asarray(Xs @ cand.T.astype(np.float64))
    else:
        G = (Xs @ sp.csr_matrix(cand, dtype=np.float64).T).toarray()
    G *= w_plus + w_minus
    G -= w_minus * cand_sizes[None, :]
    total = np.maximum(G, 0.0).sum(axis=0)
    covered = np.zeros((m, n), dtype=bool)
    S = np.zeros((m, k), dtype=bool)
    B = np.zeros((k, n), dtype=bool)
    n_ones = int(Xs.count_nonzero())
    covered_ones = covered_zeros = 0
    n_steps = 0
    for step in range(k):
        best = int(np.argmax(total))
        if not total[best] > 0:
            break
        rows = np.flatnonzero(G[:, best] > 0)
        cols = np.flatnonzero(cand[best])
        S[rows, step] = True
        B[step, cols] = True
        n_steps += 1
        new = ~covered[np.ix_(rows, cols)]
        ones = Xs[rows][:, cols].toarray() != 0
        new_ones = int(np.count_nonzero(new & ones))
        covered_ones += new_ones
        covered_zeros += int(np.count_nonzero(new)) - new_ones
        # value that the newly covered cells had; they are worth 0 from now on
        P_new = np.where(new, np.where(ones, w_plus, -w_minus), 0.0)
        cand_cols_T = cand[:, cols].T.astype(np.float64)
        for chunk in gen_batches(rows.shape[0], max(1, _BLOCK_ENTRIES // max(n, 1))):
            r = rows[chunk]
            Gr = G[r]
            total -= np.maximum(Gr, 0.0).sum(axis=0)
            Gr -= P_new[chunk] @ cand_cols_T
            total += np.maximum(Gr, 0.0).sum(axis=0)
            G[r] = Gr
        covered[np.ix_(rows, cols)] = True
        if verbose >= 2:
            err = n_ones - covered_ones + covered_zeros
            print(
                f"[asso] threshold={threshold:.2f} step {step + 1}: candidate {best}, "
                f"{rows.shape[0]} rows x {cols.shape[0]} columns, error {err}"
            )
    error = n_ones - covered_ones + covered_zeros
    return S, B, error, n_steps


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "tau": BOOLEAN_TAU,
        **ASSO_PARAMS,
        "n_jobs": [Integral, None],
        "verbose": ["verbose"],
    },
    prefer_skip_nested_validation=True,
)
def asso_fit(
    X,
    n_components,
    *,
    tau=0.5,
    threshold=None,
    bonus_covered=1.0,
    penalty_overcovered=1.0,
    strict=False,
    orientation="auto",
    n_jobs=None,
    verbose=0,
):
    """Rank-k Boolean factorisation by Asso, as a rounding-rank decomposition.

    Asso builds the association matrix ``conf[i, j] = <x_i, x_j> / <x_i, x_i>`` of
    the columns ``x_i`` of ``X`` (the confidence of the rule "column i => column j"),
    takes the thresholded rows ``conf[i] >= threshold`` as candidate basis vectors, and
    for ``l = 1..k`` greedily adds the candidate, together with its best usage column,
    that increases the cover ``bonus_covered * (covered ones) - penalty_overcovered *
    (covered zeros)`` most. A data row uses a candidate iff that strictly increases the
    row's cover (cells already covered count neither way). The greedy stops early when
    no candidate has a positive gain; the remaining basis vectors stay empty.

    The factors are binary, and because ``(L @ R.T)[i, j]`` is the number of basis
    vectors covering ``(i, j)``, ``round_tau(L @ R.T)`` equals the Boolean product
    ``L o R.T`` for every ``tau`` in (0, 1] (the paper's lemma ``rrank(B) <=
    Boolean rank(B)``). An exact factorisation (``info["boolean_error"] == 0``)
    therefore certifies ``rrank_tau(X) <= info["n_nonempty"]``. (At ``tau = 1`` the
    ones covered by a single basis vector sit exactly on ``tau``, so
    :func:`~sklearn_rrank.certify_rounding`, which demands a strict margin, rejects
    the binary factors; ``2 * L`` with the same ``R`` passes.)

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary data (no missing entries). Rows are transactions, columns attributes:
        the associations are computed between columns (Asso on ``X.T`` gives a
        different factorisation). Sparse input is kept sparse.
    n_components : int
        Number of basis vectors k (>= 1).
    tau : float, default=0.5
        Rounding threshold of the decomposition; must be in (0, 1] so that the
        rounding of the real product equals the Boolean product. It does not change
        the factors.
    threshold : float or None, default=None
        Confidence threshold in (0, 1]. None tries the grid 0.05, 0.10, ..., 1.00
        and keeps the threshold with the smallest Boolean error ``|X - L o R.T|``
        (ties: fewer non-empty basis vectors, then the smaller threshold). Asso is
        very sensitive to this parameter (Miettinen et al. 2008, Section 5); the grid is
        common practice, the paper's own choice is **[unverified]**. The best grid
        value is then refined in steps of 0.01 (our addition).
    bonus_covered : float, default=1.0
        Weight ``w+`` (> 0) of each one that is covered.
    penalty_overcovered : float, default=1.0
        Weight ``w-`` (>= 0) of each zero that is covered.
    strict : bool, default=False
        If True, candidates are ``conf > threshold`` (as in the authors' C code);
        otherwise ``conf >= threshold``. The two differ only where a confidence
        equals the threshold, which is common for small counts. Which one the TKDE
        paper uses is **[unverified]** (a reconstruction).
    orientation : {"auto", "columns", "rows"}, default="auto"
        ``"columns"``: associations between columns (the original Asso);
        ``"rows"``: Asso on ``X.T``, whose factors are swapped back (a rank-k
        Boolean factorization too); ``"auto"``: both when ``X`` has at most 5000
        rows, keeping the one with fewer errors (our addition).
    n_jobs : int or None, default=None
        Parallel jobs over the thresholds of the grid (joblib). The result does not
        depend on ``n_jobs``. Each job holds a dense (n_samples, n_features) gain
        matrix.
    verbose : int, default=0
        1: one line per threshold; 2: one line per greedy step.

    Returns
    -------
    result : FactorizationResult
        ``L`` of shape (n_samples, k) (usage) and ``R`` of shape (n_features, k)
        (basis transposed), both float64 with values 0 and 1; ``n_iter`` is the
        number of non-empty basis vectors. ``info`` holds ``threshold`` (the
        confidence threshold used), ``boolean_error`` (``|X - L o R.T|``, equal to the
        rounding error of ``L @ R.T`` at ``tau``), ``n_nonempty``,
        ``errors_by_threshold`` (dict threshold -> error, for every threshold tried)
        and ``seconds``.

    Raises
    ------
    ValueError
        If ``X`` is not binary or has missing entries, ``n_components < 1``, ``tau``
        is not in (0, 1], ``threshold`` is not in (0, 1], or a weight is negative
        (or ``bonus_covered`` is 0).
    TypeError
        If a parameter has the wrong type.

    See Also
    --------
    asso_transform : Binary usage of new rows for a fixed basis.

    Notes
    -----
    Follows Miettinen et al. 2008 (a reconstruction, cross-checked against the authors'
    C code ``asso.c``). The association matrix needs O(n_features**2) memory and the
    gain matrix O(n_samples * n_features) per job. Ties between candidates go to the
    smallest index. With non-integer weights the gains are updated incrementally in
    floating point, so exact ties may be broken differently than by a from-scratch
    computation; integer (or dyadic) weights give exact arithmetic.

    References
    ----------
    Neumann, Gemulla, Miettinen. What You Will Gain By Rounding: Theory and Algorithms
    for Rounding Rank. ICDM 2016, Section 2.4 (Lemma "rrank <= Boolean rank") and
    Section 3 (Asso). Miettinen, Mielikäinen, Gionis, Das, Mannila. The Discrete Basis
    Problem. IEEE TKDE 20(10):1348-1362, 2008.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import asso_fit
    >>> X = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 1, 1]])
    >>> res = asso_fit(X, 2, threshold=0.6)
    >>> res.L
    array([[1., 0.],
           [1., 1.],
           [0., 1.]])
    >>> res.R.T
    array([[1., 1., 0., 0.],
           [0., 0., 1., 1.]])
    >>> res.info["boolean_error"]
    0
    """
    X = check_binary_matrix(X, allow_missing=False, accept_sparse=True, method="asso")
    return _asso_fit(
        X,
        int(n_components),
        tau=float(tau),
        threshold=None if threshold is None else float(threshold),
        w_plus=float(bonus_covered),
        w_minus=float(penalty_overcovered),
        strict=bool(strict),
        orientation=orientation,
        n_jobs=n_jobs,
        verbose=verbose,
    )


def _asso_fit(
    X, k, *, tau, threshold, w_plus, w_minus, strict, orientation, n_jobs, verbose
):
    """:func:`asso_fit` on validated data and parameters; no checks."""
    t0 = time.perf_counter()
    Xs = sp.csr_matrix(X, dtype=np.float64)
    Xs.eliminate_zeros()
    if orientation == "auto":
        orients = ["columns"]
        if Xs.shape[0] <= _MAX_AUTO_ROWS:
            orients.append("rows")
    else:
        orients = [orientation]
    best = None
    errors = {}
    for orient in orients:
        Xo = Xs if orient == "columns" else sp.csr_matrix(Xs.T)
        conf = _association_matrix(Xo)
        grid = THRESHOLD_GRID if threshold is None else (threshold,)
        args = (Xo, conf, k, strict, w_plus, w_minus, n_jobs, verbose)
        runs = _asso_grid(grid, *args)
        if threshold is None:
            # refine around the best coarse threshold in steps of 0.01
            t0_best = grid[_best_index(grid, runs)]
            fine = np.round(t0_best + np.arange(-4, 5) / 100, 2)
            fine = tuple(t for t in fine if 0 < t <= 1 and t not in grid)
            grid = tuple(grid) + fine
            runs = runs + _asso_grid(fine, *args)
        for t, run in zip(grid, runs, strict=True):
            errors[f"{orient}:{float(t):.2f}"] = int(run[2])
        i = _best_index(grid, runs)
        S, B, error, n_steps = runs[i]
        if orient == "rows":  # X.T ~ S o B  <=>  X ~ B.T o S.T
            S, B = B.T, S.T
        cand = (error, n_steps, orient, float(grid[i]), S, B)
        if best is None or cand[:2] < best[:2]:
            best = cand
    error, n_steps, orient, t_best, S, B = best
    info = {
        "threshold": t_best,
        "orientation": orient,
        "boolean_error": int(error),
        "n_nonempty": int(n_steps),
        "errors_by_threshold": errors,
        "tau": tau,
        "seconds": time.perf_counter() - t0,
    }
    return FactorizationResult(
        L=S.astype(np.float64),
        R=B.T.astype(np.float64),
        n_iter=int(n_steps),
        converged=True,
        info=info,
    )


def _best_index(grid, runs):
    """Fewest errors, then fewest basis vectors, then the smallest threshold."""
    return min(range(len(grid)), key=lambda i: (runs[i][2], runs[i][3], grid[i]))


def _asso_grid(grid, Xs, conf, k, strict, w_plus, w_minus, n_jobs, verbose):
    """Greedy Asso runs for every threshold of ``grid`` (shared candidate sets once)."""
    # The candidate sets are nested in the threshold, so two thresholds give the same
    # candidates (and the same greedy run) iff they keep the same number of entries.
    sizes = [int(np.count_nonzero(conf > t if strict else conf >= t)) for t in grid]
    distinct = {}
    for t, size in zip(grid, sizes, strict=True):
        distinct.setdefault(size, t)
    todo = list(distinct.values())
    if effective_n_jobs(n_jobs) == 1 or len(todo) == 1:
        done = [
            _asso_greedy(Xs, conf, t, strict, k, w_plus, w_minus, verbose) for t in todo
        ]
    else:
        # threads: the work is sparse and dense products that release the GIL, and
        # no data is copied to worker processes
        done = Parallel(n_jobs=n_jobs, prefer="threads", verbose=max(verbose - 1, 0))(
            delayed(_asso_greedy)(Xs, conf, t, strict, k, w_plus, w_minus, 0)
            for t in todo
        )
    by_size = dict(zip(distinct, done, strict=True))
    runs = [by_size[size] for size in sizes]
    if verbose >= 1:
        for t, run in zip(grid, runs, strict=True):
            print(f"[asso] threshold={t:.2f}: error {run[2]}, {run[3]} basis vectors")
    return runs


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "R": ["array-like"],
        "tau": BOOLEAN_TAU,
        "bonus_covered": ASSO_PARAMS["bonus_covered"],
        "penalty_overcovered": ASSO_PARAMS["penalty_overcovered"],
    },
    prefer_skip_nested_validation=True,
)
def asso_transform(X, R, *, tau=0.5, bonus_covered=1.0, penalty_overcovered=1.0):
    """Binary usage of new rows for a fixed Asso basis.

    Greedy in basis order, as Asso itself assigns usage: for ``l = 1..k`` each row uses
    basis vector ``l`` iff that strictly increases the row's cover ``bonus_covered *
    (newly covered ones) - penalty_overcovered * (newly covered zeros)``, given the
    cells already covered by the basis vectors it uses among ``1..l-1``. On the
    training data this reproduces the usage ``L`` returned by :func:`asso_fit` (for
    integer weights, exactly). It is a heuristic, not the exact best usage per row
    (which is a set-cover-like problem with 2**k choices).

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary data (no missing entries).
    R : array-like of shape (n_features, k)
        Binary basis, transposed (``asso_fit(...).R``).
    tau : float, default=0.5
        Rounding threshold; must be in (0, 1] (see :func:`asso_fit`).
    bonus_covered : float, default=1.0
        Weight ``w+`` (> 0) of a covered one.
    penalty_overcovered : float, default=1.0
        Weight ``w-`` (>= 0) of a covered zero.

    Returns
    -------
    L : ndarray of shape (n_samples, k), dtype float64
        Binary usage; ``round_tau(L @ R.T)`` is the Boolean product ``L o R.T``.

    Raises
    ------
    ValueError
        If ``X`` or ``R`` is not binary, the shapes do not match, ``tau`` is not in
        (0, 1] or a weight is invalid.

    References
    ----------
    Miettinen et al., The Discrete Basis Problem, IEEE TKDE 2008 (the usage step of
    Asso). Miettinen et al. 2008, Section 4.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import asso_transform
    >>> R = np.array([[1, 1, 0, 0], [0, 0, 1, 1]]).T
    >>> asso_transform([[1, 1, 1, 0], [0, 0, 0, 1]], R)
    array([[1., 0.],
           [0., 0.]])
    """
    X = check_binary_matrix(X, allow_missing=False, accept_sparse=True, method="asso")
    R = check_binary_matrix(R, allow_missing=False, input_name="R")
    if R.shape[0] != X.shape[1]:
        raise ValueError(
            f"R must have shape (n_features, k) = ({X.shape[1]}, k), got shape "
            f"{R.shape}."
        )
    return _asso_transform(
        X, R, w_plus=float(bonus_covered), w_minus=float(penalty_overcovered)
    )


def _asso_transform(X, R, *, w_plus, w_minus):
    """:func:`asso_transform` on validated ``X`` and binary ``R`` of matching shape."""
    m, n = X.shape
    Xs = sp.csc_matrix(X, dtype=np.float64)
    k = R.shape[1]
    L = np.zeros((m, k))
    covered = np.zeros((m, n), dtype=bool)
    for step in range(k):
        cols = np.flatnonzero(R[:, step])
        if cols.shape[0] == 0:
            continue
        ones = Xs[:, cols].toarray() != 0
        new = ~covered[:, cols]
        gain = w_plus * np.count_nonzero(new & ones, axis=1) - w_minus * (
            np.count_nonzero(new & ~ones, axis=1)
        )
        rows = np.flatnonzero(gain > 0)
        L[rows, step] = 1.0
        covered[np.ix_(rows, cols)] = True
    return L
