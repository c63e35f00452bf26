"""Ecological nestedness metrics: NODF, nestedness temperature, a NODF null model.

:func:`nodf` (Almeida-Neto et al., Oikos 2008), :func:`nestedness_temperature`
(Atmar & Patterson 1993, computed as in Rodriguez-Girones & Santamaria, J. Biogeogr.
2006; a reconstruction) and a fixed-fixed curveball null model for NODF,
:func:`nodf_null_model` (Strona et al., Nat. Commun. 2014).
"""

from numbers import Integral
from typing import NamedTuple

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, validate_params

from sklearn_rrank._core._validation import (
    check_binary_matrix,
)

__all__ = [
    "NODFNullModelResult",
    "NODFResult",
    "nestedness_temperature",
    "nodf",
    "nodf_null_model",
]


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

    A reconstruction that follows ``vegan::nestedtemp`` (the
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
        Low for nested matrices, larger for disorder (about 100 for random
        matrices). A perfectly nested matrix does *not* in general give 0: its
        ones need not lie on the side of the smooth fill line where no
        unexpectedness is counted, so it gives a small positive value that depends
        on its shape (e.g. ``[[1, 1, 1, 1, 1, 1], [1, 0, 0, 0, 0, 0], [1, 0, 0, 0,
        0, 0]]`` gives about 10.25; R vegan's ``nestedtemp`` gives the same values
        to about 1.5e-4). A matrix of all zeros or all ones gives 0.

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
        One-sided ``(1 + #{null >= nodf}) / (1 + n_null)``: small values mean more
        nested than expected for the row and column sums.
    null_nodf : ndarray of shape (n_null,)
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
        "n_null": [Interval(Integral, 1, None, closed="left")],
        "n_trades": [None, Interval(Integral, 1, None, closed="left")],
        "burn_in": [None, Interval(Integral, 0, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def nodf_null_model(X, *, n_null=99, n_trades=None, burn_in=None, random_state=None):
    """Compare NODF with a fixed-fixed null model sampled by curveball trades.

    Null matrices keep every row sum and column sum of ``X`` (Gotelli's "fixed-fixed"
    model). They are sampled with the curveball algorithm (Strona et al. 2014;
    uniform in the limit, Carstens 2015) as one Markov chain: ``burn_in`` trades, then
    a sample every ``n_trades`` trades.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples_X, n_features)
        Binary matrix.
    n_null : int, default=99
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
    >>> res = nodf_null_model(X, n_null=19, random_state=0)
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
    null = np.empty(n_null)
    for s in range(n_null):
        _curveball_trades(M, n_trades, rng)
        null[s] = _nodf_validated(M).nodf
    mean = float(null.mean())
    std = float(null.std(ddof=1)) if n_null > 1 else float("nan")
    z = (observed - mean) / std if std > 0 else float("nan")
    p = (1 + int(np.count_nonzero(null >= observed))) / (1 + n_null)
    return NODFNullModelResult(observed, mean, std, float(z), float(p), null)
