"""RoundingRankFactorization: the minimum-error rounding rank-k problem as an estimator.

The estimator validates its input once and calls the ``fit``/``transform`` of its
method's record in the registry (:mod:`sklearn_rrank._portfolio._registry`); the solver
modules
take arrays and return :class:`~sklearn_rrank._core._results.FactorizationResult`
objects.
"""

import numbers
import time
import warnings

import numpy as np
import scipy.sparse as sp
from scipy.special import expit
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_rrank._core._memory import check_sparse_memory, fits_in_memory, gib
from sklearn_rrank._core._rounding import (
    _count_uncertified,
    _round_factors,
    _row_error_counts,
)
from sklearn_rrank._core._rows import key_classes, row_keys
from sklearn_rrank._core._validation import (
    binarize,
    canonical_sparse,
    check_binary_values,
    check_n_jobs,
    object_to_float,
    reject_complex,
    reject_strings,
    sparse_if_few_ones,
)
from sklearn_rrank._lpca._transform import _lpca_row_logits
from sklearn_rrank._portfolio._registry import (
    FIT_METHODS,
    METHODS,
    check_method_params,
    check_method_tau,
)
from sklearn_rrank._search._skeleton import Deadline

__all__ = ["RoundingRankFactorization"]


def _names(methods):
    """``'a'``, ``'a' or 'b'``, ...: method names for an error message."""
    return " or ".join(repr(m) for m in methods)


def _is_probabilistic(estimator):
    """``available_if`` check: only a probability model (L-PCA) has these methods."""
    spec = METHODS.get(estimator.method)
    if spec is None or not spec.probabilistic:
        raise AttributeError(
            f"method={estimator.method!r} is not a probability model: predict_proba "
            "and score_samples are available for method='lpca' only."
        )
    if getattr(estimator, "_logistic_model", False) is None:
        raise AttributeError(
            "these factors have no logistic model: they come from L-PCA's margin "
            "phase (margin_phase=True), from LPs refining a rank search's certificate "
            "or from another method (RoundingRankCV); predict_proba and "
            "score_samples need a logistic fit of method='lpca'."
        )
    return True


def _pad_columns(F, k):
    """``F`` padded with zero columns to ``k`` columns (the rank stays at most k)."""
    if F.shape[1] >= k:
        return F
    return np.hstack([F, np.zeros((F.shape[0], k - F.shape[1]))])


def _portable_keys(X):
    """Row keys that match between dense and sparse input (training rows are found
    again in ``transform`` whatever the format)."""
    return row_keys(X if sp.issparse(X) else sp.csr_matrix(X))


def _better_rows(X, Rt, tau, L_a, L_b):
    """Per row, ``L_a``'s row unless ``L_b``'s has fewer errors (then uncertified)."""
    err_a, unc_a = _row_error_counts(X, L_a, Rt, tau, uncertified=True)
    err_b, unc_b = _row_error_counts(X, L_b, Rt, tau, uncertified=True)
    take_b = (err_b < err_a) | ((err_b == err_a) & (unc_b <= unc_a))
    if not take_b.any():
        return L_a
    L = L_a.copy()
    L[take_b] = L_b[take_b]
    return L


def _same_rows_same_factors(X, L, Rt, tau, classes, *, count=True):
    """Give identical rows one factor row: the one with fewest errors among them.

    Transform maps a row to one factor row, so the training rows that are equal must
    share it for ``reconstruction_err_`` to equal a recount through
    :meth:`RoundingRankFactorization.transform`. Without ``count`` (a method whose
    rows are a projection of the data, equal for equal rows up to round-off) each
    group takes its first row's factors, without counting errors.
    """
    first, _, inverse = classes
    if first.shape[0] == L.shape[0]:
        return L  # no repeated rows
    # only the groups whose rows do not share one factor row already are counted
    differ = np.any(L[first[inverse]] != L, axis=1)
    if not differ.any():
        return L
    if not count:
        return L[first[inverse]]
    rows = np.flatnonzero(np.isin(inverse, np.unique(inverse[differ])))
    errors, unsafe = _row_error_counts(X[rows], L[rows], Rt, tau, uncertified=True)
    order = rows[np.lexsort((unsafe, errors))]  # best rows first
    best = np.arange(L.shape[0])
    group_best = np.empty(first.shape[0], dtype=np.int64)
    group_best[inverse[order][::-1]] = order[::-1]  # the last write wins: the best
    best[rows] = group_best[inverse[rows]]
    return L[best]


class RoundingRankFactorization(
    ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator
):
    """Minimum-error rounding rank-k factorization of a binary matrix.

    Finds ``L`` (n_samples, k) and ``R`` (n_features, k) such that
    ``round_tau(L @ R.T)`` differs from ``X`` in as few entries as possible (the
    paper's minimum-error rounding rank-k problem), with one of the paper's
    algorithms. The training reconstruction is checked with
    :func:`~sklearn_rrank.certify_rounding`: ``certified_`` is True only when it is
    exact and verified in float64 with a margin, in which case
    ``rrank_tau(X) <= n_components``.

    Parameters
    ----------
    n_components : int, default=2
        The rank k: the number of columns of ``L`` and ``R``, every column counted
        (for ``method="lpca"`` with a bias, the bias is one of the k columns).
    method : {"lpca", "projlp", "rsvd", "asso"}, default="lpca"
        ``"lpca"``: logistic PCA (Schein et al. 2003) rounded; ``"projlp"``:
        Achlioptas projection ``L = X A`` and the L1-slack LP per column;
        ``"rsvd"``: the best rounded truncated SVD of rank <= k; ``"asso"``: the
        Boolean factorization of Miettinen et al. (binary factors). Paper Section 3.
    tau : float, default=0.5
        Rounding threshold: ``round_tau(x) = 1`` iff ``x >= tau``.
    binarize : float or None, default=None
        If not None, real input is turned into ``X > binarize`` before fitting
        (``NaN`` stays missing). If None, the input must be binary.
    nonnegative : bool, default=False
        Keep ``L`` and ``R`` non-negative (the non-negative rounding rank); supported
        by ``"projlp"``.
    max_iter : int or None, default=None
        Iteration limit of the iterative methods ``"lpca"`` and ``"projlp"`` (None =
        the method's default). ``max_iter=0`` is for ``"projlp"`` only: the paper's
        one-shot ProjLP, without the refinement rounds (``"lpca"`` raises
        ``ValueError`` for it). Setting it for ``"rsvd"`` or ``"asso"`` (one-shot
        methods) raises ``ValueError``.
    tol : float or None, default=None
        Relative tolerance of ``"lpca"`` and ``"projlp"`` (None = the method's
        default); setting it for ``"rsvd"`` or ``"asso"`` raises ``ValueError``.
    time_limit : float or None, default=None
        Wall-clock budget of the fit in seconds for ``"lpca"`` and ``"projlp"``
        (None: no limit). At the limit the solver returns the best factors it has
        (fewest rounding errors seen for ``"projlp"``, the last sweep for
        ``"lpca"``), ``solver_info_`` records the stop and a ``ConvergenceWarning``
        says so. With a time limit the fitted training rows are kept, whether or
        not the limit was reached: they are not solved again by ``transform``
        (which has no deadline, and which otherwise makes ``fit_transform(X)``
        equal ``fit(X).transform(X)``).
        Setting it for ``"rsvd"`` or ``"asso"`` (one-shot methods) raises
        ``ValueError``.
    method_params : dict or None, default=None
        Extra parameters of the method's solver: ``"lpca"``: ``fit_bias``
        (default ``"global"``, ``False`` at ``tau = 0``: one scalar offset that
        uses no column, so ``n_components = k`` expresses exactly the roundings at
        ``tau`` of rank-``k`` matrices, as in the rank search; ``True`` is Schein
        et al.'s bias column, which leaves ``k - 1`` latent factors; see
        :func:`~sklearn_rrank.lpca_fit`),
        ``solver``, ``alpha``, ``init``, ``dtype`` (``"float32"`` computes the
        sweeps in float32; the returned factors and the error count are float64;
        :meth:`transform` always computes in float64); ``"projlp"``:
        ``projection``, ``eps``, ``solver`` (``"auto"``, ``"lp"`` or ``"hinge"``);
        ``"asso"``: ``threshold``, ``bonus_covered``, ``penalty_overcovered``,
        ``strict``, ``orientation``; ``"rsvd"``: none. Unknown names raise
        ``ValueError`` listing the valid ones.
    random_state : int, RandomState instance or None, default=None
        Makes randomized methods reproducible (not used by ``"asso"``, which is
        deterministic).
    n_jobs : int or None, default=None
        Parallel jobs of ``"lpca"``, ``"projlp"`` and ``"asso"``; results do not
        depend on it. ``"rsvd"`` does not use it (LAPACK's own threads).
    verbose : int, default=0
        Verbosity.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        ``R.T``.
    n_components_ : int
        The rank k of the factorization.
    reconstruction_err_ : int
        Rounding errors on the training data (entries).
    relative_error_ : float
        ``reconstruction_err_`` divided by the number of ones of the training data.
    certified_ : bool
        True iff the training reconstruction is exact and certified.
    n_iter_ : int
        Iterations run by the solver (1 for one-shot methods such as R-SVD).
    deviance_explained_ : float
        Only for ``method="lpca"``: ``1 - D(model) / D(null)``, the fraction of the
        null deviance that the fitted logits explain on the training data (as
        logistic PCA reports it). ``D`` is the Bernoulli deviance over the
        observed entries, ``-2 sum log sigmoid((2 X_ij - 1) theta_ij)`` (the
        saturated model of binary data has log-likelihood 0); the null model
        gives every column the mean of its observed entries. ``theta`` are the
        jointly fitted logits, without the penalty; NaN if the null deviance is 0
        (every column constant).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit (only for DataFrames with string names).

    See Also
    --------
    sklearn_rrank.rounding_rank_bounds : certified bounds on the rounding rank.
    sklearn.decomposition.PCA : whose ``score_samples`` is the Gaussian analogue.
    sklearn.decomposition.TruncatedSVD : the unrounded baseline (T-SVD).

    References
    ----------
    S. Neumann, R. Gemulla, P. Miettinen. What You Will Gain By Rounding: Theory and
    Algorithms for Rounding Rank. ICDM 2016, Sections 3 and 5.

    Examples
    --------
    >>> from sklearn_rrank import RoundingRankFactorization
    >>> from sklearn_rrank.datasets import load_digits_binary
    >>> X = load_digits_binary().data
    >>> est = RoundingRankFactorization(10, method="rsvd").fit(X)
    >>> round(est.relative_error_, 3)
    0.171
    >>> est.transform(X).shape
    (1797, 10)
    """

    _parameter_constraints: dict = {
        "n_components": [Interval(numbers.Integral, 1, None, closed="left")],
        "method": [StrOptions(set(FIT_METHODS))],
        "tau": [Interval(numbers.Real, None, None, closed="neither")],
        "binarize": [None, Interval(numbers.Real, None, None, closed="neither")],
        "nonnegative": ["boolean"],
        "max_iter": [None, Interval(numbers.Integral, 0, None, closed="left")],
        "tol": [None, Interval(numbers.Real, 0, None, closed="left")],
        "time_limit": [None, Interval(numbers.Real, 0, None, closed="left")],
        "method_params": [None, dict],
        "random_state": ["random_state"],
        "n_jobs": [None, numbers.Integral],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        n_components=2,
        *,
        method="lpca",
        tau=0.5,
        binarize=None,
        nonnegative=False,
        max_iter=None,
        tol=None,
        time_limit=None,
        method_params=None,
        random_state=None,
        n_jobs=None,
        verbose=0,
    ):
        self.n_components = n_components
        self.method = method
        self.tau = tau
        self.binarize = binarize
        self.nonnegative = nonnegative
        self.max_iter = max_iter
        self.tol = tol
        self.time_limit = time_limit
        self.method_params = method_params
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.verbose = verbose

    # -- helpers -----------------------------------------------------------------
    def _allows_missing(self):
        return METHODS[self.method].missing

    def _validate_X(self, X, reset):
        reject_strings(X)
        reject_complex(X)
        if isinstance(X, np.ndarray) and X.dtype == object:
            X = object_to_float(X)
        if METHODS[self.method].sparse_fit and self.binarize is None:
            # large dense data with few ones is fitted sparse (no float64 copy)
            X = sparse_if_few_ones(X)
        X = validate_data(
            self,
            X,
            reset=reset,
            accept_sparse="csr",
            dtype=np.float64,
            ensure_all_finite=False,
        )
        if sp.issparse(X):  # a copy: scipy sorts indices in place
            check_sparse_memory(X.shape, X.nnz, "X")
            X = canonical_sparse(X)
        if self.binarize is not None:
            if sp.issparse(X) or not np.isinf(X).any():
                X = binarize(X, self.binarize)
        check_binary_values(
            X,
            allow_missing=self._allows_missing(),
            method=self.method,
            missing_methods=[m for m in FIT_METHODS if METHODS[m].missing],
        )
        if sp.issparse(X) and not METHODS[self.method].sparse_fit:
            m, n = X.shape
            if not fits_in_memory(8 * m * n):
                raise ValueError(
                    f"method={self.method!r} works on the dense matrix, which needs "
                    f"{gib(8 * m * n)} here and does not fit in the memory available; "
                    "use a method that keeps sparse X sparse "
                    f"({_names(m for m in FIT_METHODS if METHODS[m].sparse_fit)})."
                )
            X = X.toarray()
        return X

    def _solver_kwargs(self, deadline=None):
        """Keyword arguments of the registry's fit/transform, checked once.

        ``deadline`` is the fit's :class:`~sklearn_rrank._search._skeleton.Deadline`
        (made
        from ``time_limit`` when the fit starts; None: no limit).
        """
        spec = METHODS[self.method]
        if not spec.uses_max_iter:
            for name in ("max_iter", "tol", "time_limit"):
                if getattr(self, name) is not None:
                    raise ValueError(
                        f"{name}={getattr(self, name)!r} is not used by "
                        f"method={self.method!r} (a one-shot method); leave it None."
                    )
        if self.max_iter == 0 and not spec.one_shot:
            able = _names(m for m in FIT_METHODS if METHODS[m].one_shot)
            raise ValueError(
                f"max_iter=0 is not supported by method={self.method!r}: it means a "
                f"one-shot fit without refinement rounds (the paper's ProjLP; "
                f"method={able}); use max_iter >= 1 or None."
            )
        check_n_jobs(self.n_jobs)
        check_method_tau(
            spec, self.tau, f"{type(self).__name__}(method={self.method!r})"
        )
        return {
            "tau": float(self.tau),
            "nonnegative": bool(self.nonnegative),
            "max_iter": self.max_iter,
            "tol": self.tol,
            "deadline": Deadline() if deadline is None else deadline,
            "random_state": self.random_state,
            "n_jobs": self.n_jobs,
            "verbose": self.verbose,
            **check_method_params(spec, self.method_params, "fit"),
        }

    def _transform_kwargs(self, kwargs):
        keep = {"tau", "nonnegative", "n_jobs"} | set(self.method_params or {})
        return {k: v for k, v in kwargs.items() if k in keep}

    # -- fitting -----------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the factorization to binary data ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Binary data (``NaN`` = missing entry for ``"lpca"`` and ``"projlp"``).
            The methods that fit sparse data (``"lpca"``, ``"rsvd"``) take a dense
            array of at least ``1e7`` entries with fewer than 10% ones (no NaN, and
            ``binarize=None``) as its CSR matrix: no float64 copy of its entries is
            made, and the fit is that of the CSR input.
        y : Ignored
            Not used, present for API consistency.

        Returns
        -------
        self : object
            The fitted estimator.

        Raises
        ------
        ValueError
            If ``X`` is not binary (and ``binarize`` is None), holds missing entries
            the method does not support, or ``n_components`` exceeds
            ``min(n_samples, n_features)``.
        """
        self._fit(X)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None):
        """Fit to ``X`` and return the left factor ``L``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Binary data.
        y : Ignored
            Not used, present for API consistency.

        Returns
        -------
        L : ndarray of shape (n_samples, n_components)
            Row representations of the training data.
        """
        return self._fit(X)

    def _fit(self, X):
        deadline = Deadline(self.time_limit)  # the budget counts from here
        if isinstance(self.n_components, bool):
            raise TypeError(
                f"n_components must be an integer >= 1, got {self.n_components!r}."
            )
        X = self._validate_X(X, reset=True)
        m, n = X.shape
        k = self.n_components
        if k > min(m, n):
            raise ValueError(
                f"n_components={k} must be at most min(n_samples, n_features) = "
                f"{min(m, n)} (n_samples = {m}, n_features = {n})."
            )
        spec = METHODS[self.method]
        if self.nonnegative and not spec.nonnegative:
            raise ValueError(
                f"nonnegative=True is not supported by method={self.method!r}; use "
                f"{_names(m for m in FIT_METHODS if METHODS[m].nonnegative)}."
            )
        t0 = time.perf_counter()
        kwargs = self._solver_kwargs(deadline)
        result = spec.fit(X, k, **kwargs)
        # a method that fits sparse data also transforms it (the rows stay sparse)
        Xd = X.toarray() if sp.issparse(X) and not spec.sparse_fit else X
        R = _pad_columns(np.asarray(result.R, dtype=np.float64), k)
        L = _pad_columns(np.asarray(result.L, dtype=np.float64), k)
        Rt = np.ascontiguousarray(R.T)
        tau = float(self.tau)
        # Each training row keeps the better (fewer errors, then fewer uncertified
        # entries) of its fitted row and the row transform() gives it, so that
        # transform of the training rows reproduces the fit or does better, and
        # fit_transform(X) equals fit(X).transform(X). With a budget the row
        # problems of transform (which has no deadline) are not solved here: on
        # Abstracts, k=100, they took minutes after an L-PCA fit within its limit.
        # max_iter=0 is the paper's one-shot method: its rows stay as fitted
        one_shot = self.max_iter == 0
        if spec.transform is not None and self.time_limit is None and not one_shot:
            L_t = np.asarray(
                spec.transform(Xd, R, **self._transform_kwargs(kwargs)),
                dtype=np.float64,
            )
            L = _better_rows(Xd, Rt, tau, L_t, L)
        L = self._remember_training_rows(Xd, L, Rt, count=spec.transform is not None)
        self._set_factors(
            Xd,
            L,
            R,
            n_iter=result.n_iter,
            info=result.info,
            seconds=time.perf_counter() - t0,
        )
        self._logistic_model = result.model
        if result.model is not None:
            null = result.model.null_deviance
            self.deviance_explained_ = (
                1.0 - result.model.deviance / null if null > 0 else float("nan")
            )
        if not result.converged:
            if result.time_limited:
                hint = "raise time_limit"
            elif spec.uses_max_iter:
                hint = "raise max_iter"
            else:
                hint = "check the input"
            warnings.warn(
                f"method={self.method!r} did not converge or an LP did not end "
                f"optimal ({result.message or 'no details'}); the "
                f"factorization may be worse than the method can do ({hint}).",
                ConvergenceWarning,
                stacklevel=3,
            )
        return L

    def _remember_training_rows(self, X, L, Rt, *, count=True):
        """Give equal training rows one factor row and keep them for ``transform``.

        ``transform`` of a row equal to a training row starts from its fitted row
        (see :meth:`transform`); returns the factor rows ``L`` after sharing.
        """
        keys = _portable_keys(X)
        classes = key_classes(keys)
        L = _same_rows_same_factors(X, L, Rt, float(self.tau), classes, count=count)
        self._training_rows = (
            dict(zip(map(bytes, keys), range(X.shape[0]), strict=True)),
            L.copy(),
        )
        return L

    def _set_factors(self, X, L, R, *, n_iter, info, seconds):
        """Store fitted factors and their training error and certificate.

        The error is counted by the rounding kernel of :meth:`inverse_transform`
        (same factors, same blocks), so it equals a recount of
        ``inverse_transform(L)`` against ``X`` exactly.
        """
        m, n = X.shape
        k = self.n_components
        L = _pad_columns(np.asarray(L, dtype=np.float64), k)
        R = _pad_columns(np.asarray(R, dtype=np.float64), k)
        if L.shape != (m, k) or R.shape != (n, k):  # pragma: no cover - solver bug
            raise RuntimeError(
                f"solver {self.method!r} returned factors of shapes {L.shape} and "
                f"{R.shape}; expected {(m, k)} and {(n, k)}."
            )
        self.components_ = np.ascontiguousarray(R.T)
        self.n_components_ = k
        self.n_iter_ = max(1, int(n_iter))
        self.solver_info_ = info
        self.fit_seconds_ = seconds
        tau = float(self.tau)
        errors = _row_error_counts(X, L, self.components_, tau)
        self.reconstruction_err_ = int(errors.sum())
        n_ones = int(X.sum()) if sp.issparse(X) else int(np.count_nonzero(X == 1))
        self.relative_error_ = (
            self.reconstruction_err_ / n_ones
            if n_ones
            else (0.0 if self.reconstruction_err_ == 0 else float("inf"))
        )
        self.certified_ = bool(
            self.reconstruction_err_ == 0
            and _count_uncertified(X, L, R, tau, stop_early=True) == 0
        )
        return L

    # -- transforming --------------------------------------------------------------
    def transform(self, X):
        """Left factor ``L`` for new rows, with ``components_`` fixed.

        ``"rsvd"`` projects (``L = X @ components_.T``, as the SVD does); ``"projlp"``
        solves the L1-slack LP of every row; ``"lpca"`` fits a logistic regression per
        row; ``"asso"`` picks a binary usage of the basis per row (greedy). A row
        equal to a training row gets the better of that and its fitted row (fewer
        rounding errors; a tie keeps the fitted row), so ``transform`` of the
        training data reproduces the fit or does better. Rows are matched by a
        fingerprint of their entries (three random integer weightings, exact in
        float64).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Binary data.

        Returns
        -------
        L : ndarray of shape (n_samples, n_components)
        """
        check_is_fitted(self)
        return self._transform(self._validate_X(X, reset=False))

    def _transform(self, X):
        """:meth:`transform` of validated ``X``."""
        R = self.components_.T
        spec = METHODS[self.method]
        if spec.transform is None:
            Xp = X if sp.issparse(X) else np.nan_to_num(X)
            L = np.asarray(Xp @ R, dtype=np.float64)
        else:
            X = X.toarray() if sp.issparse(X) and not spec.sparse_fit else X
            kwargs = self._transform_kwargs(self._solver_kwargs())
            L = np.asarray(spec.transform(X, R, **kwargs), dtype=np.float64)
        index, L_train = getattr(self, "_training_rows", ({}, None))
        if not index:
            return L
        keys = _portable_keys(X)
        match = np.array([index.get(bytes(key), -1) for key in keys], dtype=np.int64)
        seen = match >= 0
        if not seen.any():
            return L
        L_seen = L.copy()
        L_seen[seen] = L_train[match[seen]]
        return _better_rows(X, self.components_, float(self.tau), L, L_seen)

    def _row_logits(self, X, return_log_likelihood=False):
        """Logits (or row log-likelihoods) of the fitted L-PCA model for ``X``."""
        check_is_fitted(self)
        X = self._validate_X(X, reset=False)
        if sp.issparse(X):  # the logits are an m x n array anyway
            X = X.toarray()
        model = self._logistic_model
        if model.fit_bias is True:
            # the logits of transform's rows (a training row keeps its fitted row
            # when that is better), so that predict_proba rounds like
            # inverse_transform(transform(X))
            theta = self._transform(X) @ self.components_ - float(self.tau)
            if not return_log_likelihood:
                return theta
            nll = np.where(X == 1, np.logaddexp(0.0, -theta), np.logaddexp(0.0, theta))
            return -np.where(np.isnan(X), 0.0, nll).sum(axis=1)
        return _lpca_row_logits(
            X,
            self.components_.T,
            tau=float(self.tau),
            fit_bias=model.fit_bias,
            offset=model.offset,
            alpha=model.alpha,
            n_jobs=self.n_jobs,
            return_log_likelihood=return_log_likelihood,
        )

    @available_if(_is_probabilistic)
    def predict_proba(self, X):
        """Probability ``P(X_ij = 1)`` of every entry under the fitted L-PCA model.

        Available for ``method="lpca"`` only (other methods raise
        ``AttributeError``: they have no probability model). Every row of ``X`` gets
        its coordinates by the logistic regression of :meth:`transform` on the
        fixed components (missing entries are ignored), and the probabilities are
        the sigmoid of the model's logits ``theta``. With the default
        ``fit_bias="global"`` they are the latent product plus the fitted global
        offset; with ``fit_bias=True``,
        ``theta = transform(X) @ components_ - tau`` (the bias column carries
        ``mu + tau``); with ``fit_bias=False`` the logits are ``u_i @ components_``
        before the per-row rescaling of :meth:`transform`.
        With ``fit_bias=True``, rounding the probabilities at 1/2 gives
        ``inverse_transform(transform(X))``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Binary data; ``NaN`` entries are missing (ignored by the regression;
            they get a predicted probability like every other entry).

        Returns
        -------
        proba : ndarray of shape (n_samples, n_features)
            ``sigmoid(theta)``, float64: exactly 1 for logits above about 37 and 0
            below about -710, where float64 cannot tell the difference.

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_rrank import RoundingRankFactorization
        >>> X = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 0]])
        >>> est = RoundingRankFactorization(2, random_state=0).fit(X)
        >>> proba = est.predict_proba([[1, np.nan, 0]])
        >>> proba.shape, bool(proba[0, 0] > 0.5 > proba[0, 2])
        ((1, 3), True)
        >>> est.score_samples([[1, np.nan, 0]]).shape
        (1,)
        """
        return expit(self._row_logits(X))

    @available_if(_is_probabilistic)
    def score_samples(self, X):
        """Bernoulli log-likelihood of every row of ``X`` (nats).

        Available for ``method="lpca"`` only. The log-likelihood of row ``i`` is
        ``sum_j log P(X_ij | theta_ij)`` over its observed entries (``NaN``
        entries are ignored), with the logits ``theta`` of :meth:`predict_proba`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Binary data (``NaN`` = missing).

        Returns
        -------
        log_likelihood : ndarray of shape (n_samples,)
            At most 0; ``-2 * log_likelihood.sum()`` is the deviance of ``X``.
        """
        return self._row_logits(X, return_log_likelihood=True)

    def inverse_transform(self, X):
        """Rounded reconstruction ``round_tau(L @ components_)``.

        Computed by the same rounding kernel (same row blocks) as
        ``reconstruction_err_``, so the training error equals a recount of
        ``inverse_transform(fit_transform(X))`` against ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_components)
            Left factor ``L`` (e.g. from :meth:`transform`).

        Returns
        -------
        X_binary : ndarray of shape (n_samples, n_features), dtype uint8
        """
        check_is_fitted(self)
        L = np.asarray(X, dtype=np.float64)
        if L.ndim != 2 or L.shape[1] != self.n_components_:
            raise ValueError(
                f"inverse_transform expects shape (n_samples, {self.n_components_}), "
                f"got {L.shape}."
            )
        if not np.isfinite(L).all():
            raise ValueError("inverse_transform expects finite numbers (no NaN).")
        return _round_factors(L, self.components_, float(self.tau))

    def score(self, X, y=None):
        """Negative relative error of the reconstruction of ``X`` (higher is better).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Binary data (``NaN`` entries are not counted).
        y : Ignored

        Returns
        -------
        score : float
            ``-(rounding errors / number of ones of X)`` of
            ``inverse_transform(transform(X))``.
        """
        check_is_fitted(self)
        Xv = self._validate_X(X, reset=False)
        L = self._transform(Xv)
        n_err = int(_row_error_counts(Xv, L, self.components_, float(self.tau)).sum())
        n_ones = int(Xv.sum()) if sp.issparse(Xv) else int(np.count_nonzero(Xv == 1))
        if n_ones == 0:
            return 0.0 if n_err == 0 else -float(n_err)
        return -n_err / n_ones

    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = self.method in METHODS and self._allows_missing()
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags
