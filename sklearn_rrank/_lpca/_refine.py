"""The rescue of a near L-PCA fit: reweighting (:func:`_boost`), then LP refinement.

:func:`_boost` multiplies the weights of the entries that a fit leaves wrong or
unsafe and fits again; :func:`_lpca_refine` alternates the paper's L1-slack LPs
(the LP engine of :mod:`sklearn_rrank._projlp._lp`) over the columns of ``R`` and
the rows of ``L`` that hold an entry failing the certificate, keeping a new column
or row only when it fails fewer entries, so that a factorization with a few
failing entries can become certifiable at the same rank.
"""

import time
from dataclasses import replace

import numpy as np

from sklearn_rrank._core._rounding import (
    _count_errors_factors,
    _dense_block,
    _row_batches,
    _uncertified_counts,
)
from sklearn_rrank._lpca._fit import _fit_core
from sklearn_rrank._lpca._model import _chunks, _stop_delta

__all__ = []

# boosting: rounds, weight factor per round (cumulative), sweeps per round; a few
# rounds of strong reweighting fix a handful of resisting entries or fail fast
_BOOST_ROUNDS = 4
_BOOST_FACTOR = 10.0
_BOOST_SWEEPS = 30


def _unsafe_entries(U, V, mu, data, tau):
    """Sorted row-major flat indices of the observed entries wrong or unsafe.

    The logits are formed by the chunks of rows of the sweeps (no m x n array).
    """
    delta = _stop_delta(U, V, mu, tau)
    n = data.shape[1]
    parts = []
    for rows in _chunks(*data.shape, data.kernels):
        theta = U[rows] @ V.T
        if mu is not None:
            theta += mu
        mask = data.q[rows] * theta <= delta
        if data.w is not None:
            mask &= data.w[rows] > 0
        parts.append(np.flatnonzero(mask) + rows.start * n)
    return np.concatenate(parts)


def _boost(
    data, U, V, mu, options, *, sweep_factor, n_jobs, verbose, deadline, tick=None
):
    """Reweighted L-PCA: multiply the weights of unsafe entries, refit, repeat.

    Weights start at 1 and every round multiplies the weight of each entry that is
    wrong or unsafe by ``_BOOST_FACTOR`` (cumulatively), then runs up to
    ``_BOOST_SWEEPS * sweep_factor`` sweeps of ``options.solver`` that stop when
    the rounding is exact. The weights differ from 1 only at the entries ever
    unsafe (no m x n array). ``options``: the fit's
    :class:`~sklearn_rrank._lpca._fit.LPCAOptions` (its sweeps, tolerance and
    stop rule are the boost's own). Returns ``(U, V, mu, exact)``.
    """
    boost = replace(
        options, tol=0.0, max_iter=_BOOST_SWEEPS * sweep_factor, stop_when_exact=True
    )
    flat = np.empty(0, dtype=np.int64)
    values = np.empty(0, dtype=data.dtype)
    for _ in range(_BOOST_ROUNDS):
        if deadline.expired():
            break
        unsafe = _unsafe_entries(U, V, mu, data, options.tau)
        if not unsafe.size:
            return U, V, mu, True
        merged = np.union1d(flat, unsafe)
        grown = np.ones(merged.size, dtype=data.dtype)
        grown[np.searchsorted(merged, flat)] = values
        grown[np.searchsorted(merged, unsafe)] *= _BOOST_FACTOR
        flat, values = merged, grown
        U, V, mu, _, finfo = _fit_core(
            data.reweighted(flat, values),
            U,
            V,
            mu,
            boost,
            n_jobs=n_jobs,
            verbose=verbose,
            deadline=deadline,
            tick=tick,
        )
        if finfo["status"] == "exact":
            return U, V, mu, True
    return U, V, mu, False


def _lpca_refine(X, L, R, *, tau, n_rounds=3, n_jobs=None, deadline):
    """Refine a rounding factorization by alternating L1-slack LPs.

    Each round first fixes ``L`` and re-solves, for every column ``j`` with an
    entry that is wrong or not certified, the paper's L1-slack LP for ``R_j``
    (:func:`sklearn_rrank._projlp._lp.solve_columns_l1`), and then fixes ``R`` and does
    the
    same for the rows of ``L`` (:func:`sklearn_rrank._projlp._lp.solve_rows_l1`). A new
    column (row) is kept only if it has fewer entries that fail the certificate
    criterion of :func:`~sklearn_rrank.certify_rounding` than the old one, so the
    count never increases. Columns and rows without failures are not touched. The
    bias column of :func:`~sklearn_rrank._lpca._fit.lpca_fit` is an ordinary column here
    (the row LPs may change it), so the rank stays ``k``. It runs as the last step
    of the L-PCA search's rescue (``rounding_rank_bounds(X, methods=("lpca",))``
    with ``refine=True``).

    Only the columns (rows) it re-solves are read dense, so a sparse ``X`` with a
    few failing entries is refined in memory of the order of its failing columns
    and rows (a network's adjacency matrix is never made dense).

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Validated binary data (float64, ``NaN`` marks missing entries); trusted.
    L : array-like of shape (n_samples, k)
        Left factor (e.g. from :func:`~sklearn_rrank._lpca._fit.lpca_fit`).
    R : array-like of shape (n_features, k)
        Right factor.
    tau : float
        Rounding threshold.
    n_rounds : int, default=3
        Maximal number of (columns, rows) rounds; stops early when nothing fails or
        a round changes nothing.
    n_jobs : int or None, default=None
        Workers of the LP engine; results do not depend on it.
    deadline : Deadline
        The caller's deadline, handed to the LP engine as it is.

    Returns
    -------
    L : ndarray of shape (n_samples, k), dtype float64
    R : ndarray of shape (n_features, k), dtype float64
        The refined factors (new arrays; the inputs are not modified).
    info : dict
        ``"errors_before"``/``"errors_after"`` (wrong entries of
        ``round_tau(L @ R.T)``), ``"errors_removed"``, ``"uncertified_before"``/
        ``"uncertified_after"`` (entries failing the certificate criterion),
        ``"certified"``, ``"n_rounds"``, ``"n_lps"`` and ``"seconds"``.

    Raises
    ------
    ValueError
        If the factor shapes do not match ``X`` or hold non-finite numbers.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 3: the L1-slack LP of ProjLP,
    used here as a refinement of L-PCA's factors.
    """
    from sklearn_rrank._projlp._lp import _solve_columns_l1, _solve_rows_l1

    L = np.array(L, dtype=np.float64)
    R = np.array(R, dtype=np.float64)
    m, n = X.shape
    if L.ndim != 2 or R.ndim != 2 or L.shape[0] != m or R.shape != (n, L.shape[1]):
        raise ValueError(
            f"L and R must have shapes ({m}, k) and ({n}, k) to match X of shape "
            f"{X.shape}; got {L.shape} and {R.shape}."
        )
    if not (np.isfinite(L).all() and np.isfinite(R).all()):
        raise ValueError("L and R must hold finite numbers.")
    start = time.perf_counter()

    errors_before = _count_errors_factors(X, L, R, tau)
    bad_cols = _uncertified_counts(X, L, R, tau, axis=0)
    uncertified_before = int(bad_cols.sum())
    n_lps = 0
    rounds = 0
    for _ in range(n_rounds):
        if bad_cols.sum() == 0 or deadline.expired():
            break
        rounds += 1
        # columns: L fixed, by blocks of columns made dense
        failing = np.flatnonzero(bad_cols)
        for part in _row_batches(failing.size, m):
            cols = failing[part]
            Xc = _dense_block(X[:, cols])
            R_new, _, _ = _solve_columns_l1(
                L, Xc, tau=tau, n_jobs=n_jobs, deadline=deadline
            )
            n_lps += cols.size
            better = _uncertified_counts(Xc, L, R_new, tau, axis=0) <= bad_cols[cols]
            R[cols[better]] = R_new[better]
        bad_rows = _uncertified_counts(X, L, R, tau, axis=1)
        if bad_rows.sum() == 0 or deadline.expired():
            bad_cols = _uncertified_counts(X, L, R, tau, axis=0)
            break
        # rows: R fixed, by blocks of rows made dense
        failing = np.flatnonzero(bad_rows)
        for part in _row_batches(failing.size, n):
            rows = failing[part]
            Xr = _dense_block(X[rows])
            L_new, _, _ = _solve_rows_l1(
                R, Xr, tau=tau, n_jobs=n_jobs, deadline=deadline
            )
            n_lps += rows.size
            better = _uncertified_counts(Xr, L_new, R, tau, axis=1) <= bad_rows[rows]
            L[rows[better]] = L_new[better]
        total = int(bad_cols.sum())
        bad_cols = _uncertified_counts(X, L, R, tau, axis=0)
        if bad_cols.sum() >= total:
            break
    errors_after = _count_errors_factors(X, L, R, tau)
    uncertified_after = int(bad_cols.sum())
    info = {
        "errors_before": int(errors_before),
        "errors_after": int(errors_after),
        "errors_removed": int(errors_before - errors_after),
        "uncertified_before": uncertified_before,
        "uncertified_after": uncertified_after,
        "certified": uncertified_after == 0,
        "n_rounds": rounds,
        "n_lps": int(n_lps),
        "seconds": time.perf_counter() - start,
    }
    return L, R, info
