"""L-PCA for new rows: the left factor of rows for a fixed right factor.

:func:`lpca_transform` (the public door) fits every row by an L2-penalised logistic
regression on the columns' fixed coordinates; :func:`lpca_row_logits` gives the
logits of such rows. Both share the model kinds and defaults of :mod:`._fit`.
"""

from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions, validate_params
from threadpoolctl import threadpool_limits

from sklearn_rrank._core._validation import check_binary_matrix, check_tau
from sklearn_rrank._lpca._fit import DEFAULT_ALPHA, _model_kind
from sklearn_rrank._lpca._model import (
    _B_MIN,
    _Data,
    _logits_of,
    _make_parallel,
    _offset_sign,
    _package,
    row_log_likelihood,
)
from sklearn_rrank._lpca._newton import _transform_loop

__all__ = ["lpca_row_logits", "lpca_transform"]

# default sweeps and tolerance of the per-row problems of transform
TRANSFORM_MAX_ITER, TRANSFORM_TOL = 100, 1e-8


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "R": ["array-like"],
        "tau": [Real],
        "fit_bias_column": ["boolean", StrOptions({"global"})],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "n_jobs": [Integral, None],
    },
    prefer_skip_nested_validation=True,
)
def lpca_transform(
    X,
    R,
    *,
    tau=0.5,
    fit_bias_column=True,
    alpha=DEFAULT_ALPHA,
    max_iter=TRANSFORM_MAX_ITER,
    tol=TRANSFORM_TOL,
    n_jobs=None,
):
    """Row representations of new data for a fixed right factor (logistic regression).

    Every row of ``X`` is fitted by an L2-penalised logistic regression on the rows
    of ``R`` (damped Newton, all rows in one batched solve per step, backtracking per
    row). ``fit_bias_column`` says which model of :func:`lpca_fit` produced ``R``
    (its ``fit_bias``). True: the last column of ``R`` is the bias column, the
    logits are ``L[:, :-1] @ R[:, :-1].T + R[:, -1] - tau`` and ``L[:, -1]`` stays
    fixed at 1. False: the logits are ``L @ R.T`` and each row of ``L`` is rescaled
    for ``tau`` as in :func:`lpca_fit`. ``"global"``: each row gets its own
    intercept ``c_i`` (sign opposite to ``tau``'s, ``|c_i| >= 1e-3``), the logits
    are ``a_i @ R.T + c_i`` and ``L_i = a_i tau / -c_i``, which uses no extra
    column. In all cases ``round_tau(L @ R.T)`` is the rounding of the fitted
    logits at 0.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary data; ``NaN`` marks missing entries (weight 0).
    R : array-like of shape (n_features, k)
        Fixed right factor, e.g. ``lpca_fit(...).R``.
    tau : float, default=0.5
        Rounding threshold (the one used to fit ``R``).
    fit_bias_column : bool or "global", default=True
        The ``fit_bias`` of the :func:`lpca_fit` call that produced ``R``: True if
        its last column is the bias column (``mu + tau``).
    alpha : float, default=1e-3
        L2 penalty on the fitted coordinates.
    max_iter : int, default=100
        Maximal number of Newton steps.
    tol : float, default=1e-8
        Stop when the objective decreases by less than ``tol`` times its value.
    n_jobs : int or None, default=None
        Number of threads; results do not depend on it.

    Returns
    -------
    L : ndarray of shape (n_samples, k), dtype float64
        Row representations; with ``fit_bias_column`` the last column is 1.

    Raises
    ------
    ValueError
        If ``X`` is not binary or ``R`` does not match ``X``.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 3 (L-PCA); Collins, Dasgupta
    and Schapire (NIPS 2001) for the per-row logistic regressions.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import lpca_fit, lpca_transform
    >>> X = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 0]])
    >>> R = lpca_fit(X, 2, random_state=0).R
    >>> L = lpca_transform([[1, 1, 1], [1, 0, 0]], R)
    >>> ((L @ R.T) >= 0.5).astype(int)
    array([[1, 1, 1],
           [1, 0, 0]])
    """
    X = check_binary_matrix(X, allow_missing=True, accept_sparse=True, method="lpca")
    return _lpca_transform(
        X,
        R,
        tau=check_tau(tau),
        fit_bias_column=fit_bias_column,
        alpha=alpha,
        max_iter=max_iter,
        tol=tol,
        n_jobs=n_jobs,
    )


def _lpca_transform(
    X,
    R,
    *,
    tau=0.5,
    fit_bias_column=True,
    alpha=DEFAULT_ALPHA,
    max_iter=TRANSFORM_MAX_ITER,
    tol=TRANSFORM_TOL,
    n_jobs=None,
):
    """:func:`lpca_transform` on validated data; checks only ``R``."""
    R = np.asarray(R, dtype=np.float64)
    m, n = X.shape
    if R.ndim != 2 or R.shape[0] != n or R.shape[1] < 1:
        raise ValueError(
            f"R must have shape ({n}, k) with k >= 1 to match X with {n} columns; "
            f"got {R.shape}."
        )
    if not np.isfinite(R).all():
        raise ValueError("R must hold finite numbers.")
    kind = _model_kind(fit_bias_column, tau)
    bound = None
    if kind == "column":
        F, offset = R[:, :-1], R[:, -1] - tau
        P = np.zeros((m, F.shape[1]))
    elif kind == "none":
        F, offset = R, None
        P = np.zeros((m, F.shape[1]))
    else:
        # features [R, 1]; the last parameter is the row intercept c_i
        F, offset = np.hstack([R, np.ones((n, 1))]), None
        P = np.zeros((m, F.shape[1]))
        P[:, -1] = _offset_sign(tau)
        bound = (-np.inf, -_B_MIN) if tau > 0 else (_B_MIN, np.inf)
    P = _fit_rows(X, P, F, offset, alpha, max_iter, tol, n_jobs, bound)
    if kind == "column":
        return np.hstack([P, np.ones((m, 1))])
    if kind == "global":
        return P[:, :-1] * (tau / -P[:, -1])[:, None]
    L, _ = _package(P, F, None, tau)
    return L


def _fit_rows(X, P, F, offset, alpha, max_iter, tol, n_jobs, bound=None):
    """Row coordinates ``P`` of the penalised logistic regressions on fixed ``F``."""
    if not F.shape[1]:
        return P
    data = _Data(X)
    args = (data, P, F, offset, float(alpha), int(max_iter), float(tol), bound)
    parallel = _make_parallel(n_jobs, 0)
    with threadpool_limits(limits=1, user_api="blas"):
        if parallel is None:
            return _transform_loop(None, *args)
        with parallel:
            return _transform_loop(parallel, *args)


def _row_model(X, R, tau, fit_bias, offset, alpha, max_iter, tol, n_jobs):
    """``(P, F, bias)`` with the logits of the rows of ``X`` equal ``P F^T + bias``.

    Trusts ``X`` (validated) and ``tau`` (checked).
    """
    R = np.asarray(R, dtype=np.float64)
    kind = _model_kind(fit_bias, tau)
    if kind == "column":
        F, bias = R[:, :-1], R[:, -1] - tau
    elif kind == "none":
        F, bias = R, None
    else:
        if offset is None or float(offset) * tau >= 0:
            raise ValueError(
                "fit_bias='global' needs the fit's global offset (of the sign "
                f"opposite to tau={tau!r}); got offset={offset!r}."
            )
        F, bias = R / np.sqrt(tau / -float(offset)), np.asarray(float(offset))
    P = np.zeros((X.shape[0], F.shape[1]))
    P = _fit_rows(X, P, F, bias, alpha, max_iter, tol, n_jobs)
    return P, F, bias


# Newton steps and tolerance of the per-row regressions of lpca_row_logits
ROW_MAX_ITER = 100
ROW_TOL = 1e-8


def lpca_row_logits(
    X,
    R,
    *,
    tau=0.5,
    fit_bias=True,
    offset=None,
    alpha=DEFAULT_ALPHA,
    max_iter=ROW_MAX_ITER,
    tol=ROW_TOL,
    n_jobs=None,
    return_log_likelihood=False,
):
    """Logits of new rows under a fitted L-PCA model (the model's ``R`` fixed).

    Every row gets the coordinates ``u_i`` of an L2-penalised logistic regression
    (the regression of :func:`lpca_transform`, missing entries weight 0) with the
    fitted model's bias fixed, and the logits are those of the fitted model:
    ``fit_bias=True``: ``u_i V^T + mu`` with ``R = [V, mu + tau]`` (so the logits
    are ``lpca_transform(X, R) @ R.T - tau``); ``fit_bias=False``: ``u_i R^T``
    (``R = V``; unlike :func:`lpca_transform`, no row is rescaled for ``tau``);
    ``fit_bias="global"``: ``u_i V^T + b`` with ``b = offset`` (the fit's
    ``info["offset"]``) and ``V = R / s``, ``s^2 = tau / -b``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        Binary data; ``NaN`` marks missing entries (weight 0).
    R : ndarray of shape (n_features, k)
        Right factor of :func:`lpca_fit`.
    tau : float, default=0.5
        Rounding threshold of the fit.
    fit_bias : bool or "global", default=True
        The fit's ``fit_bias``.
    offset : float or None, default=None
        The global offset ``b`` (required for ``fit_bias="global"``).
    alpha : float, default=1e-3
        L2 penalty on the row coordinates.
    max_iter : int, default=100
        Maximal number of Newton steps.
    tol : float, default=1e-8
        Stop when the objective decreases by less than ``tol`` times its value.
    n_jobs : int or None, default=None
        Number of threads; results do not depend on it.
    return_log_likelihood : bool, default=False
        Return the log-likelihood of every row (see :func:`row_log_likelihood`)
        instead of the logits, without forming all logits at once.

    Returns
    -------
    theta : ndarray of shape (n_samples, n_features), dtype float64
        Logits: ``P(X_ij = 1) = sigmoid(theta_ij)``, for missing entries too.
        With ``return_log_likelihood``, an ndarray of shape (n_samples,) instead.
    """
    X = check_binary_matrix(X, allow_missing=True, method="lpca")
    return _lpca_row_logits(
        X,
        R,
        tau=check_tau(tau),
        fit_bias=fit_bias,
        offset=offset,
        alpha=alpha,
        max_iter=max_iter,
        tol=tol,
        n_jobs=n_jobs,
        return_log_likelihood=return_log_likelihood,
    )


def _lpca_row_logits(
    X,
    R,
    *,
    tau,
    fit_bias,
    offset,
    alpha,
    n_jobs,
    return_log_likelihood,
    max_iter=ROW_MAX_ITER,
    tol=ROW_TOL,
):
    """:func:`lpca_row_logits` on validated ``X`` and a checked ``tau``; no checks."""
    P, F, bias = _row_model(X, R, tau, fit_bias, offset, alpha, max_iter, tol, n_jobs)
    if return_log_likelihood:
        return row_log_likelihood(X, P, F, bias)
    return _logits_of(P, F, bias)
