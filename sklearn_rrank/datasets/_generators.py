"""The paper's synthetic generator of matrices with planted rounding rank."""

import numbers

import numpy as np
from sklearn.utils import check_random_state

from sklearn_rrank._core._validation import check_tau

__all__ = ["make_rounding_rank_matrix"]


def _check_positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")
    return int(value)


def make_rounding_rank_matrix(
    n_samples,
    n_features,
    n_components,
    *,
    distribution="uniform",
    mean=0.5,
    noise=0.0,
    tau=0.5,
    random_state=None,
    return_factors=False,
):
    """Binary matrix ``round_tau(L @ R.T)`` with planted rounding rank at most k.

    The generator of the paper's Section 5.2.1. Every entry of ``L`` (m, k) and ``R``
    (n, k) is drawn i.i.d. with expected value ``q = sqrt(mean / k)``, so that
    ``E[(L R^T)_ij] = mean``: uniformly on ``[q - 1/2, q + 1/2]``
    (``distribution="uniform"``) or normally with variance 1
    (``distribution="normal"``). With noise level ``p > 0``, ``round(p * nnz)`` entries
    chosen uniformly at random (without replacement) among all ``m * n`` entries are
    flipped, where ``nnz`` is the number of ones of the noise-free matrix (the paper's
    noise level: flipped entries / non-zeros of the noise-free matrix).

    Parameters
    ----------
    n_samples : int
        Number of rows m.
    n_features : int
        Number of columns n.
    n_components : int
        Planted rank k.
    distribution : {"uniform", "normal"}, default="uniform"
        Distribution of the factor entries.
    mean : float, default=0.5
        Expected value ``mu`` of each entry of ``L @ R.T``; must be >= 0.
    noise : float, default=0.0
        Noise level p >= 0 (flipped entries / non-zeros of the noise-free matrix).
    tau : float, default=0.5
        Rounding threshold.
    random_state : int, RandomState instance or None, default=None
        Seed for reproducible output.
    return_factors : bool, default=False
        Also return ``L``, ``R`` and the noise-free matrix.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), dtype uint8
        The (noisy) binary matrix.
    L : ndarray of shape (n_samples, n_components)
        Only if ``return_factors``.
    R : ndarray of shape (n_features, n_components)
        Only if ``return_factors``.
    X_clean : ndarray of shape (n_samples, n_features), dtype uint8
        Only if ``return_factors``: ``round_tau(L @ R.T)`` before noise.

    Raises
    ------
    ValueError
        For non-positive sizes, an unknown distribution, a negative mean, or a noise
        level that asks for more flips than there are entries.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 5.2.1 "Data generation".

    Examples
    --------
    >>> from sklearn_rrank.datasets import make_rounding_rank_matrix
    >>> X, L, R, X0 = make_rounding_rank_matrix(
    ...     60, 40, 5, noise=0.1, random_state=0, return_factors=True)
    >>> X.shape, L.shape, R.shape
    ((60, 40), (60, 5), (40, 5))
    >>> int((X != X0).sum()) == round(0.1 * X0.sum())
    True
    """
    m = _check_positive_int(n_samples, "n_samples")
    n = _check_positive_int(n_features, "n_features")
    k = _check_positive_int(n_components, "n_components")
    tau = check_tau(tau)
    if distribution not in ("uniform", "normal"):
        raise ValueError(
            f"distribution must be 'uniform' or 'normal', got {distribution!r}."
        )
    if not isinstance(mean, numbers.Real) or not mean >= 0:
        raise ValueError(f"mean must be a non-negative number, got {mean!r}.")
    if not isinstance(noise, numbers.Real) or not noise >= 0:
        raise ValueError(f"noise must be a non-negative number, got {noise!r}.")
    rng = check_random_state(random_state)
    q = np.sqrt(mean / k)
    if distribution == "uniform":
        L = rng.uniform(q - 0.5, q + 0.5, size=(m, k))
        R = rng.uniform(q - 0.5, q + 0.5, size=(n, k))
    else:
        L = rng.normal(q, 1.0, size=(m, k))
        R = rng.normal(q, 1.0, size=(n, k))
    X_clean = (L @ R.T >= tau).astype(np.uint8)
    X = X_clean.copy()
    n_flips = int(round(noise * int(X_clean.sum())))
    if n_flips > m * n:
        raise ValueError(
            f"noise={noise} asks for {n_flips} flips but the matrix has only {m * n} "
            "entries."
        )
    if n_flips:
        flat = rng.choice(m * n, size=n_flips, replace=False)
        X.flat[flat] = 1 - X.flat[flat]
    if return_factors:
        return X, L, R, X_clean
    return X
