"""Generator of noisy nested matrices (the paper's Section 5.4 experiment)."""

from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, validate_params

__all__ = ["make_nested_matrix"]


@validate_params(
    {
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "density": [Interval(Real, 0, 1, closed="both")],
        "noise": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
        "return_clean": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def make_nested_matrix(
    n_samples,
    n_features,
    *,
    density=0.5,
    noise=0.0,
    random_state=None,
    return_clean=False,
):
    """Generate a random nested binary matrix and flip some of its entries.

    The clean matrix is ``round(l r^T)`` for ``l``, ``r`` drawn uniformly from
    (0, 1) and the threshold placed so that exactly ``round(density * n_samples *
    n_features)`` entries are ones: non-negative rounding rank one, hence nested
    (Theorem "nested matrices"), with rows and columns in random order. Then
    ``round(noise * ones)`` entries chosen uniformly at random without replacement
    are flipped (0 to 1 or 1 to 0): the paper's *noise level* is the number of
    flipped entries divided by the number of non-zeros of the clean matrix.

    Parameters
    ----------
    n_samples : int
        Number of rows (the paper uses 200).
    n_features : int
        Number of columns (the paper uses 300).
    density : float, default=0.5
        Fraction of ones of the clean matrix, in [0, 1] (the paper varies 0.1..0.7).
    noise : float, default=0.0
        Noise level ``p`` = flipped entries / ones of the clean matrix (the paper
        varies 0.05..0.5). The number of flips cannot exceed the number of entries.
    random_state : int, RandomState instance or None, default=None
        Seed for reproducible output.
    return_clean : bool, default=False
        If True, also return the clean nested matrix.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), dtype uint8
        The noisy matrix.
    X_clean : ndarray of shape (n_samples, n_features), dtype uint8
        Only if ``return_clean``: the nested matrix before the flips.

    Raises
    ------
    ValueError
        If a parameter is out of range or the noise asks for more flips than there
        are entries.

    Notes
    -----
    The paper (Section 5.4) does not say how its nested matrices were drawn; this
    rank-1 construction is our choice. Exactly one threshold gives the requested
    number of ones because the products are distinct with probability one.

    References
    ----------
    Neumann, Gemulla, Miettinen, "What You Will Gain By Rounding: Theory and Algorithms
    for Rounding Rank", ICDM 2016, Section 5.1.1 (noise level) and Section 5.4.

    Examples
    --------
    >>> from sklearn_rrank import is_nested
    >>> from sklearn_rrank.datasets import make_nested_matrix
    >>> X, X_clean = make_nested_matrix(20, 30, density=0.3, noise=0.1,
    ...                                 random_state=0, return_clean=True)
    >>> int(X_clean.sum()), int((X != X_clean).sum()), is_nested(X_clean)
    (180, 18, True)
    """
    rng = check_random_state(random_state)
    m, n = n_samples, n_features
    n_ones = int(round(density * m * n))
    n_flips = int(round(noise * n_ones))
    if n_flips > m * n:
        raise ValueError(
            f"noise={noise} asks for {n_flips} flips but the matrix has only {m * n} "
            "entries."
        )
    l = rng.uniform(size=m)
    r = rng.uniform(size=n)
    products = np.outer(l, r).ravel()
    clean = np.zeros(m * n, dtype=np.uint8)
    if n_ones:
        clean[np.argpartition(-products, n_ones - 1)[:n_ones]] = 1
    X = clean.copy()
    flips = rng.choice(m * n, size=n_flips, replace=False)
    X[flips] = 1 - X[flips]
    X = X.reshape(m, n)
    if return_clean:
        return X, clean.reshape(m, n)
    return X
