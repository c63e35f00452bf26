"""RoundingRankCV: choose the rank k of a rounding-rank factorization.

``mode="exact"`` finds the smallest k whose fit is exact and certified (a rounding-rank
upper bound); ``mode="holdout"`` picks the k with the fewest errors on held-out
*entries* (masked as missing during the fit).
"""

import dataclasses
import numbers
import time

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, MetaEstimatorMixin, TransformerMixin, clone
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.parallel import Parallel, delayed
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_rrank._core._results import RankSearchResult
from sklearn_rrank._core._validation import binarize as binarize_values
from sklearn_rrank._core._validation import (
    check_binary_values,
    check_n_jobs,
    reject_strings,
)
from sklearn_rrank._factorization import RoundingRankFactorization, _pad_columns
from sklearn_rrank._lower._spectral import _spectral_bound
from sklearn_rrank._portfolio._registry import DEFAULT_METHODS, METHODS
from sklearn_rrank._search._policy import DEFAULT_POLICY
from sklearn_rrank._search._skeleton import Deadline

__all__ = ["RoundingRankCV"]


def _fit_holdout(estimator, X, mask, k, deadline):
    """Fit ``estimator`` with n_components=k on X with ``mask`` entries missing.

    ``deadline`` is the search's :class:`~sklearn_rrank._search._skeleton.Deadline` (it
    pickles for process workers); a job that starts after it is skipped and returns
    NaN.
    """
    if deadline.expired():
        return np.nan, np.nan
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
    n_components : "auto", int or iterable of int, default="auto"
        Candidate ranks. ``"auto"``: for ``mode="exact"`` every k from the best cheap
        lower bound (spectral bound, rank 0 test) up to ``min(n_samples,
        n_features)``; for ``mode="holdout"`` 1 to ``min(n_samples, n_features, 20)``.
        An int ``K`` means ``1, ..., K``. Candidates above ``min(n_samples,
        n_features)`` are dropped.
    mode : {"holdout", "exact"}, default="holdout"
        ``"holdout"`` (cross-validation, as the name says): the k with the least mean
        error on held-out entries; the estimator must accept missing entries (the
        default L-PCA estimator does).
        ``"exact"``: the smallest k whose fit is exact on every entry and certified by
        :func:`~sklearn_rrank.certify_rounding` (an upper bound on the rounding rank).
    search : {"linear", "galloping"}, default="linear"
        Order of the exact search. ``"linear"`` with ``n_components="auto"`` and a
        :class:`~sklearn_rrank.RoundingRankFactorization` runs the method's own rank
        search from the registry — the same one
        :func:`~sklearn_rrank.rounding_rank_bounds` runs for that method, so both
        report the same k for the same seed and budget (its ``method_params`` must
        be parameters of the rank search; others raise). Otherwise (also for
        ``nonnegative=True``) ``"linear"`` fits k upward one by one and
        ``"galloping"`` runs the bracket order of the rank searches
        (:meth:`~sklearn_rrank._search._policy.SearchPolicy.candidates`): the candidates
        at indices 0, 2, 6, 14, ... until a certified one, then bisection between
        the last failed and the smallest certified candidate.
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
        Seeds the hold-out masks; in ``mode="exact"`` also the method's rank search
        when the estimator's own ``random_state`` is None, so that
        ``RoundingRankCV(random_state=s)`` reports the k that
        :func:`~sklearn_rrank.rounding_rank_bounds` with ``random_state=s`` certifies
        for the method (with None the L-PCA search's SVD starts are random and
        the k may differ between runs).
    time_limit : float or None, default=None
        Wall-clock budget in seconds of the whole ``fit`` (None: no limit). In
        ``mode="exact"`` the search keeps its best certified k when the budget ends;
        in ``mode="holdout"`` fits not started by then are skipped (their k are
        left out of ``cv_results_``). The refit is not counted.
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
        When none was (e.g. the time limit ended the search, or a method's search
        certified nothing), ``certified_`` is False, nothing is raised, and
        ``n_components_`` is the k with the fewest rounding errors seen, fitted in
        ``best_estimator_``.
    stopped_early_ : bool
        True iff ``time_limit`` ended the search before it was complete.
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
    >>> from sklearn_rrank.datasets import load_digits_binary
    >>> X = load_digits_binary().data
    >>> cv = RoundingRankCV(RoundingRankFactorization(method="rsvd"), mode="exact")
    >>> cv = cv.fit(X)
    >>> cv.n_components_, cv.certified_
    (54, True)
    """

    _parameter_constraints: dict = {
        "estimator": [None, HasMethods(["fit", "transform"])],
        "n_components": [
            StrOptions({"auto"}),
            Interval(numbers.Integral, 1, None, closed="left"),
            "array-like",
        ],
        "mode": [StrOptions({"exact", "holdout"})],
        "search": [StrOptions({"linear", "galloping"})],
        "cv": [Interval(numbers.Integral, 1, None, closed="left")],
        "holdout_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "refit": ["boolean"],
        "n_jobs": [None, numbers.Integral],
        "random_state": ["random_state"],
        "time_limit": [None, Interval(numbers.Real, 0, None, closed="neither")],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        estimator=None,
        *,
        n_components="auto",
        mode="holdout",
        search="linear",
        cv=3,
        holdout_fraction=0.1,
        refit=True,
        n_jobs=None,
        random_state=None,
        time_limit=None,
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
        self.time_limit = time_limit
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
                start = max(1, _spectral_bound(X, tau).bound)
            return list(range(start, min(m, n) + 1))
        if isinstance(self.n_components, numbers.Integral):
            return list(range(1, min(int(self.n_components), m, n) + 1))
        values = list(self.n_components)
        bad = [
            k
            for k in values
            if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1
        ]
        if not values or bad:
            raise ValueError(
                f"n_components must hold positive integers, got {self.n_components!r}"
                + (f" (offending: {bad!r})." if bad else ".")
            )
        ks = sorted({int(k) for k in values if k <= min(m, n)})
        if not ks:
            raise ValueError(
                f"every candidate in n_components={self.n_components!r} exceeds "
                f"min(n_samples, n_features) = {min(m, n)}."
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
        check_n_jobs(self.n_jobs)
        deadline = Deadline(self.time_limit)
        estimator = self._estimator()
        tau = float(estimator.get_params().get("tau", 0.5))
        reject_strings(X)
        X = validate_data(
            self, X, accept_sparse="csr", dtype=np.float64, ensure_all_finite=False
        )
        if sp.issparse(X):
            X = X.toarray()
        binarize = estimator.get_params().get("binarize")
        if binarize is not None and not np.isinf(X).any():
            X = binarize_values(X, binarize)
        check_binary_values(X, allow_missing=True)
        self.stopped_early_ = False
        if self.mode == "exact":
            self._fit_exact(X, estimator, tau, deadline)
        else:
            self._fit_holdout(X, estimator, self._candidates(X, tau), deadline)
        return self

    # -- exact mode ----------------------------------------------------------------
    def _fit_exact(self, X, estimator, tau, deadline):
        if np.isnan(X).any():
            raise ValueError(
                "mode='exact' needs a complete matrix; X holds missing entries (NaN)."
            )
        if (
            type(estimator) is RoundingRankFactorization
            and self.search == "linear"
            and isinstance(self.n_components, str)
            and not estimator.nonnegative
        ):
            self._fit_registry_search(X, estimator, tau, deadline)
        else:
            self._fit_generic(X, estimator, self._candidates(X, tau), deadline)

    def _fit_registry_search(self, X, estimator, tau, deadline):
        """The method's registry rank search, as ``rounding_rank_bounds`` runs it.

        The search starts from the lower bounds the default portfolio of
        :func:`~sklearn_rrank.rounding_rank_bounds` computes before its searches
        (the rank-one test, the spectral and the VC bound), under the same seeds,
        so that both report the same k for the method.
        """
        from sklearn_rrank._portfolio._run import RunSettings, _run_portfolio

        spec = METHODS[estimator.method]
        firsts = tuple(
            n
            for n in DEFAULT_METHODS
            if METHODS[n].lower is not None or not METHODS[n].weight
        )
        n_jobs = estimator.n_jobs if self.n_jobs is None else self.n_jobs
        t0 = time.perf_counter()
        run = _run_portfolio(
            X,
            tuple(dict.fromkeys((*firsts, spec.name))),
            tau=tau,
            deadline=deadline,
            method_params={spec.name: estimator.method_params},
            settings=RunSettings(
                n_jobs=n_jobs,
                # the estimator's seed, else this search's: RoundingRankCV(
                # random_state=s) and rounding_rank_bounds(random_state=s) then run
                # the same search
                random_state=(
                    self.random_state
                    if estimator.random_state is None
                    else estimator.random_state
                ),
                verbose=max(self.verbose - 1, 0),
            ),
        )
        res = run.results.get(spec.name)
        row = next(r for r in run.report if r["method"] == spec.name)
        if res is None:  # the lower bounds met a cheap certificate: no search ran
            res = RankSearchResult(None, info={"message": row["message"]})
        best = run.best
        fit_params = res.report.fit_params
        model = None
        info = dict(res.info)
        if best is not None and (best.method == spec.name or best.rank <= 1):
            res = dataclasses.replace(
                res, rank=best.rank, L=best.L, R=best.R, certified=True
            )
            if best.method != spec.name:  # a cheap certificate, not the method's model
                fit_params = {}
                info.pop("fit_params", None)
            else:
                model = run.best_model
        seconds = time.perf_counter() - t0
        # the report row holds both passes of the portfolio
        self.stopped_early_ = bool(row["stopped_early"] or deadline.expired())
        self.errors_ = {int(k): int(v) for k, v in row.get("errors_by_k", {}).items()}
        self.certified_ = res.rank is not None
        self.search_info_ = {
            **info,
            "errors_by_k": dict(self.errors_),
            "lower": run.lower,
        }
        if not self.certified_:
            # no certificate: report the k with the fewest errors seen (the
            # estimator's default k when the search tried none), fitted, and say so
            tried = {k: e for k, e in self.errors_.items() if k >= 1}
            k = min(tried, key=lambda k: (tried[k], k)) if tried else 1
            k = min(k, min(X.shape))
            best, _ = _fit_exact(estimator, X, k)
            self.errors_.setdefault(k, int(best.reconstruction_err_))
            self.n_components_ = k
            self.best_estimator_ = best
            self._set_cv_results()
            return
        k = int(res.rank)
        self.n_components_ = k
        self.errors_[k] = 0
        best = clone(estimator).set_params(n_components=max(k, 1))
        if fit_params:
            # the certificate's model (L-PCA: its bias), so that transform matches it
            mp = dict(best.method_params or {}, **fit_params)
            best.set_params(method_params=mp)
        validate_data(best, X, ensure_all_finite=False)  # records n_features_in_
        L = _pad_columns(np.asarray(res.L, dtype=np.float64), max(k, 1))
        R = _pad_columns(np.asarray(res.R, dtype=np.float64), max(k, 1))
        Xd = X.toarray() if sp.issparse(X) else X
        L = best._remember_training_rows(Xd, L, np.ascontiguousarray(R.T))
        best._set_factors(X, L, R, n_iter=1, info=self.search_info_, seconds=seconds)
        # the certificate's logistic model: None for factors refined by LPs or
        # certified by another method (predict_proba is then not available)
        best._logistic_model = model
        self.best_estimator_ = best
        self._set_cv_results()

    def _set_cv_results(self):
        ks = sorted(self.errors_)
        errs = np.array([self.errors_[k] for k in ks], dtype=float)
        self.cv_results_ = {
            "param_n_components": np.array(ks),
            "mean_test_error": errs,
            "std_test_error": np.zeros(len(ks)),
            "rank_test_error": _rank(errs),
        }

    def _fit_generic(self, X, estimator, candidates, deadline):
        """Fit the estimator at candidate ranks (linear or galloping order).

        The order is that of the search policy's
        :meth:`~sklearn_rrank._search._policy.SearchPolicy.candidates`; this method
        supplies "fit rank k and say whether it is certified".
        """
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

        gallop = self.search == "galloping"
        best, stopped = DEFAULT_POLICY.candidates(
            candidates, attempt, deadline, gallop=gallop
        )
        self.stopped_early_ = self.stopped_early_ or stopped
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

    # -- holdout mode --------------------------------------------------------------
    def _fit_holdout(self, X, estimator, candidates, deadline):
        method = estimator.get_params().get("method")
        if method in METHODS and not METHODS[method].missing:
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
            delayed(_fit_holdout)(estimator, X, masks[r], k, deadline) for k, r in jobs
        )
        err = np.array([o[0] for o in out]).reshape(len(candidates), self.cv)
        times = np.array([o[1] for o in out]).reshape(len(candidates), self.cv)
        done = ~np.isnan(err).any(axis=1)
        self.stopped_early_ = not done.all()
        if not done.any():
            raise ValueError(
                f"time_limit={self.time_limit} s ended the search before any "
                "candidate rank was fitted on every hold-out mask; raise time_limit."
            )
        candidates = [k for k, d in zip(candidates, done, strict=True) if d]
        err, times = err[done], times[done]
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
        return self.best_estimator_.transform(self._check_X(X))

    def _check_X(self, X):
        """Feature names and count as seen in fit; the array for best_estimator_.

        ``best_estimator_`` was fitted on the validated array, so it receives the
        validated array too.
        """
        check_is_fitted(self, "best_estimator_")
        return validate_data(
            self,
            X,
            reset=False,
            accept_sparse="csr",
            dtype=None,
            ensure_all_finite=False,
        )

    def get_feature_names_out(self, input_features=None):
        """Output feature names of ``best_estimator_``.

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Checked against the names seen in ``fit``.

        Returns
        -------
        feature_names_out : ndarray of str objects
        """
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.get_feature_names_out(input_features)

    def inverse_transform(self, X):
        """Rounded reconstruction with ``best_estimator_``."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.inverse_transform(X)

    def score(self, X, y=None):
        """Score of ``best_estimator_`` (negative relative error)."""
        return self.best_estimator_.score(self._check_X(X))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.allow_nan = self.mode == "holdout"
        tags.transformer_tags.preserves_dtype = ["float64"]
        return tags


def _rank(values):
    """1-based ranks, lowest value first, ties sharing the lowest rank."""
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), dtype=np.int32)
    ranks[order] = np.arange(1, len(values) + 1)
    for v in np.unique(values):
        idx = values == v
        ranks[idx] = ranks[idx].min()
    return ranks
