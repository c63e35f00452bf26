"""RoundingRankCV: choose the rank k of a rounding-rank factorization.

``mode="exact"`` finds the smallest k whose fit is exact and certified (a rounding-rank
upper bound); ``mode="holdout"`` picks the k with the fewest errors on held-out
*entries* (masked as missing during the fit).
"""

import numbers
import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, MetaEstimatorMixin, TransformerMixin, clone
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_rrank._bounds import spectral_lower_bound
from sklearn_rrank._factorization import _METHODS, RoundingRankFactorization
from sklearn_rrank._rounding import certify_rounding
from sklearn_rrank._validation import check_binary_values

__all__ = ["RoundingRankCV"]

# methods of RoundingRankFactorization with their own warm-started rank search
_RANK_SEARCH = {"lpca": "lpca", "projlp": "projlp", "rsvd": "rsvd"}


def _fit_holdout(estimator, X, mask, k):
    """Fit ``estimator`` with n_components=k on X with ``mask`` entries missing."""
    X_train = X.copy()
    X_train[mask] = np.nan
    est = clone(estimator).set_params(n_components=k)
    t0 = time.perf_counter()
    L = est.fit_transform(X_train)
    fit_time = time.perf_counter() - t0
    rows, cols = np.nonzero(mask)
    pred = np.einsum("ij,ij->i", L[rows], est.components_.T[cols]) >= est.tau
    n_err = int(np.count_nonzero(pred != (X[rows, cols] == 1)))
    return n_err / max(rows.size, 1), fit_time


def _fit_exact(estimator, X, k):
    est = clone(estimator).set_params(n_components=k)
    t0 = time.perf_counter()
    est.fit(X)
    return est, time.perf_counter() - t0


class RoundingRankCV(MetaEstimatorMixin, TransformerMixin, BaseEstimator):
    """Select the rank k of a rounding-rank factorization.

    Parameters
    ----------
    estimator : estimator object or None, default=None
        An estimator with an ``n_components`` parameter, a ``tau`` parameter and the
        attributes ``components_`` and ``certified_`` after fit (such as
        :class:`~sklearn_rrank.RoundingRankFactorization`). None means
        ``RoundingRankFactorization(method="lpca")``.
    n_components : "auto" or iterable of int, default="auto"
        Candidate ranks. ``"auto"``: for ``mode="exact"`` every k from the best cheap
        lower bound (spectral bound, rank 0 test) up to ``min(n_samples,
        n_features)``; for ``mode="holdout"`` 1 to ``min(n_samples, n_features, 20)``.
    mode : {"exact", "holdout"}, default="exact"
        ``"exact"``: the smallest k whose fit is exact on every entry and certified by
        :func:`~sklearn_rrank.certify_rounding` (an upper bound on the rounding rank).
        ``"holdout"``: the k with the least mean error on held-out entries.
    search : {"linear", "galloping"}, default="linear"
        Order of the exact search: upward one by one, or 1, 2, 4, ... until a
        certified k, then downward one by one while fits stay certified.
    cv : int, default=3
        Number of random hold-out masks (``mode="holdout"``).
    holdout_fraction : float, default=0.1
        Fraction of the observed entries held out in each mask.
    refit : bool, default=True
        Refit ``best_estimator_`` on all entries with the chosen k (``mode="holdout"``;
        in ``mode="exact"`` the certified fit itself is kept).
    n_jobs : int or None, default=None
        Parallel jobs over (k, repetition) pairs in ``mode="holdout"``; results do
        not depend on it.
    random_state : int, RandomState instance or None, default=None
        Seeds the hold-out masks.
    verbose : int, default=0
        Verbosity.

    Attributes
    ----------
    n_components_ : int
        The chosen k.
    best_estimator_ : estimator
        The fitted estimator with ``n_components_``.
    errors_ : dict
        ``k -> error``: rounding errors on all entries at every k tried (exact) or
        the mean held-out error rate (holdout).
    cv_results_ : dict of ndarrays
        GridSearchCV-style results: ``param_n_components``, ``mean_test_error``,
        ``std_test_error``, ``split{i}_test_error``, ``mean_fit_time``,
        ``std_fit_time``, ``rank_test_error``.
    certified_ : bool
        ``mode="exact"``: whether a certified k was found among the candidates.
    n_features_in_ : int
        Number of features seen during fit.

    Raises
    ------
    ValueError
        In ``mode="holdout"`` with an estimator whose method does not accept missing
        entries.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 3 (the rank search k = 1, 2, ...
    used by every method).

    Examples
    --------
    >>> from sklearn_rrank import RoundingRankCV, RoundingRankFactorization
    >>> from sklearn_rrank.datasets import load_paleo
    >>> X = load_paleo().data
    >>> cv = RoundingRankCV(RoundingRankFactorization(method="rsvd")).fit(X)
    >>> cv.n_components_, cv.certified_
    (68, True)
    """

    _parameter_constraints: dict = {
        "estimator": [None, HasMethods(["fit", "transform"])],
        "n_components": [StrOptions({"auto"}), "array-like"],
        "mode": [StrOptions({"exact", "holdout"})],
        "search": [StrOptions({"linear", "galloping"})],
        "cv": [Interval(numbers.Integral, 1, None, closed="left")],
        "holdout_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "refit": ["boolean"],
        "n_jobs": [None, numbers.Integral],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        estimator=None,
        *,
        n_components="auto",
        mode="exact",
        search="linear",
        cv=3,
        holdout_fraction=0.1,
        refit=True,
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.estimator = estimator
        self.n_components = n_components
        self.mode = mode
        self.search = search
        self.cv = cv
        self.holdout_fraction = holdout_fraction
        self.refit = refit
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def _estimator(self):
        if self.estimator is None:
            return RoundingRankFactorization(method="lpca")
        return self.estimator

    def _candidates(self, X, tau):
        m, n = X.shape
        if isinstance(self.n_components, str):
            if self.mode == "holdout":
                return list(range(1, min(m, n, 20) + 1))
            start = 1
            if not np.isnan(X).any():
                start = max(1, spectral_lower_bound(X, tau=tau))
            return list(range(start, min(m, n) + 1))
        ks = sorted({int(k) for k in self.n_components})
        if not ks or ks[0] < 1:
            raise ValueError(
                f"n_components must hold positive integers, got {self.n_components!r}."
            )
        return ks

    def fit(self, X, y=None):
        """Search the rank on binary data ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Binary data (``NaN`` = missing entry, for estimators that accept it).
        y : Ignored

        Returns
        -------
        self : object
        """
        self._validate_params()
        estimator = self._estimator()
        tau = float(estimator.get_params().get("tau", 0.5))
        X = validate_data(
            self, X, accept_sparse="csr", dtype=np.float64, ensure_all_finite=False
        )
        if sp.issparse(X):
            X = X.toarray()
        binarize = estimator.get_params().get("binarize")
        if binarize is not None:
            nan = np.isnan(X)
            X = (X > binarize).astype(np.float64)
            X[nan] = np.nan
        check_binary_values(X, allow_missing=True)
        candidates = self._candidates(X, tau)
        if self.mode == "exact":
            self._fit_exact(X, estimator, candidates, tau)
        else:
            self._fit_holdout(X, estimator, candidates)
        return self

    # -- exact mode ----------------------------------------------------------------
    def _fit_exact(self, X, estimator, candidates, tau):
        if np.isnan(X).any():
            raise ValueError(
                "mode='exact' needs a complete matrix; X holds missing entries (NaN)."
            )
        if self._delegate_rank_search(X, estimator, tau):
            return
        tried, fitted, fit_times = {}, {}, {}

        def attempt(k):
            est, secs = _fit_exact(estimator, X, k)
            tried[k] = int(getattr(est, "reconstruction_err_", -1))
            fit_times[k] = secs
            ok = bool(getattr(est, "certified_", False))
            if self.verbose:
                print(f"[RoundingRankCV] k={k}: errors {tried[k]}, certified {ok}")
            if ok:
                fitted[k] = est
            return ok

        best = None
        if self.search == "linear":
            for k in candidates:
                if attempt(k):
                    best = k
                    break
        else:  # galloping: indices 0, 1, 3, 7, ... then back down one by one
            idx, last_fail = 0, -1
            while True:
                if attempt(candidates[idx]):
                    best = candidates[idx]
                    break
                last_fail = idx
                if idx == len(candidates) - 1:
                    break
                idx = min(len(candidates) - 1, 2 * idx + 1)
            j = idx - 1
            while best is not None and j > last_fail and attempt(candidates[j]):
                best = candidates[j]
                j -= 1
        self.errors_ = dict(sorted(tried.items()))
        self.certified_ = best is not None
        if best is None:
            best = min(tried, key=lambda k: (tried[k], k))
            fitted[best], _ = _fit_exact(estimator, X, best)
        self.n_components_ = int(best)
        self.best_estimator_ = fitted[best]
        ks = sorted(tried)
        errs = np.array([tried[k] for k in ks], dtype=float)
        self.cv_results_ = {
            "param_n_components": np.array(ks),
            "mean_test_error": errs,
            "std_test_error": np.zeros(len(ks)),
            "mean_fit_time": np.array([fit_times[k] for k in ks]),
            "std_fit_time": np.zeros(len(ks)),
            "rank_test_error": _rank(errs),
        }

    def _delegate_rank_search(self, X, estimator, tau):
        """Use the method's own warm-started rank search when it has one.

        For a :class:`RoundingRankFactorization` with ``search="linear"``,
        ``n_components="auto"``, ``nonnegative=False`` and no ``method_params``,
        the search is the same one that :func:`~sklearn_rrank.rounding_rank_bounds`
        runs for that method (warm starts, refinement), so both report the same
        certified k.
        """
        if not (
            type(estimator) is RoundingRankFactorization
            and self.search == "linear"
            and isinstance(self.n_components, str)
            and estimator.method in _RANK_SEARCH
            and not estimator.nonnegative
            and not estimator.method_params
        ):
            return False
        from sklearn_rrank._bounds import _upper_bound_by

        params = estimator.get_params()
        t0 = time.perf_counter()
        res = _upper_bound_by(
            _RANK_SEARCH[estimator.method],
            X,
            tau=tau,
            time_limit=None,
            random_state=params["random_state"],
            n_jobs=params["n_jobs"] if self.n_jobs is None else self.n_jobs,
            verbose=max(self.verbose - 1, 0),
        )
        seconds = time.perf_counter() - t0
        curve = res.info.get("errors_by_k")
        if isinstance(curve, dict):
            self.errors_ = {int(k): int(v) for k, v in curve.items()}
        elif curve is not None:
            self.errors_ = {k: int(v) for k, v in enumerate(curve) if int(v) >= 0}
        else:
            self.errors_ = {}
        self.certified_ = bool(
            res.rank is not None
            and res.certified
            and certify_rounding(X, res.L, res.R, tau=tau)
        )
        if not self.certified_:
            raise ValueError(
                f"the rank search of method={estimator.method!r} certified no rank: "
                f"{res.info.get('message', 'no message')}"
            )
        k = int(res.L.shape[1])
        self.n_components_ = k
        if self.errors_ and k not in self.errors_:
            self.errors_[k] = 0
        best = clone(estimator).set_params(n_components=max(k, 1))
        if estimator.method == "lpca" and "fit_bias" in res.info:
            # the certificate's bias model, so that transform matches it
            mp = dict(best.method_params or {}, fit_bias=res.info["fit_bias"])
            best.set_params(method_params=mp)
        validate_data(best, X, ensure_all_finite=False)  # records n_features_in_
        best._set_factors(X, res.L, res.R, n_iter=1, info=res.info, seconds=seconds)
        self.best_estimator_ = best
        ks = sorted(self.errors_)
        errs = np.array([self.errors_[k] for k in ks], dtype=float)
        self.cv_results_ = {
            "param_n_components": np.array(ks),
            "mean_test_error": errs,
            "std_test_error": np.zeros(len(ks)),
            "rank_test_error": _rank(errs),
        }
        return True

    # -- holdout mode --------------------------------------------------------------
    def _fit_holdout(self, X, estimator, candidates):
        method = estimator.get_params().get("method")
        if method in _METHODS and not _METHODS[method][3]:
            raise ValueError(
                f"mode='holdout' needs an estimator that accepts missing entries; "
                f"method={method!r} does not (use 'lpca' or 'projlp')."
            )
        rng = check_random_state(self.random_state)
        observed = np.flatnonzero(~np.isnan(X).ravel())
        n_hold = max(1, int(round(self.holdout_fraction * observed.size)))
        masks = []
        for _ in range(self.cv):
            mask = np.zeros(X.size, dtype=bool)
            mask[rng.choice(observed, size=n_hold, replace=False)] = True
            masks.append(mask.reshape(X.shape))
        jobs = [(k, r) for k in candidates for r in range(self.cv)]
        out = Parallel(n_jobs=self.n_jobs, verbose=max(self.verbose - 1, 0))(
            delayed(_fit_holdout)(estimator, X, masks[r], k) for k, r in jobs
        )
        err = np.array([o[0] for o in out]).reshape(len(candidates), self.cv)
        times = np.array([o[1] for o in out]).reshape(len(candidates), self.cv)
        mean = err.mean(axis=1)
        self.cv_results_ = {
            "param_n_components": np.array(candidates),
            "mean_test_error": mean,
            "std_test_error": err.std(axis=1),
            "mean_fit_time": times.mean(axis=1),
            "std_fit_time": times.std(axis=1),
            "rank_test_error": _rank(mean),
        }
        for r in range(self.cv):
            self.cv_results_[f"split{r}_test_error"] = err[:, r]
        self.errors_ = dict(zip(candidates, mean.tolist(), strict=True))
        self.n_components_ = int(candidates[int(np.argmin(mean))])
        self.certified_ = False
        if self.refit:
            self.best_estimator_ = clone(estimator).set_params(
                n_components=self.n_components_
            )
            self.best_estimator_.fit(X)
            self.certified_ = bool(getattr(self.best_estimator_, "certified_", False))

    # -- delegation ----------------------------------------------------------------
    def transform(self, X):
        """Transform with ``best_estimator_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        L : ndarray of shape (n_samples, `n_components_`)
        """
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.transform(X)

    def inverse_transform(self, X):
        """Rounded reconstruction with ``best_estimator_``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.inverse_transform(X)

    def score(self, X, y=None):
        """Score of ``best_estimator_`` (negative relative error)."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.score(X)


def _rank(values):
    """1-based ranks, lowest value first, ties sharing the lowest rank."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), dtype=np.int32)
    ranks[order] = np.arange(1, len(values) + 1)
    for v in np.unique(values):
        idx = values == v
        ranks[idx] = ranks[idx].min()
    return ranks
