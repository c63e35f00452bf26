"""L-PCA as a probability model: predict_proba, score_samples, deviance_explained_."""

import numpy as np
import pytest
import scipy.sparse as sp
from _family import lpca_transform
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_rrank import RoundingRankFactorization


def _sigmoid(t):
    return 1.0 / (1.0 + np.exp(-t))


def _loglik_by_hand(X, theta):
    """Row sums of x log p + (1 - x) log(1 - p) over the non-NaN entries.

    ``log p = -log(1 + exp(-theta))`` and ``log(1 - p) = -log(1 + exp(theta))``,
    written with ``logaddexp`` because near-separable fits have logits of hundreds.
    """
    log_p = -np.logaddexp(0.0, -theta)
    log_1mp = -np.logaddexp(0.0, theta)
    terms = np.where(X == 1, log_p, log_1mp)
    return np.where(np.isnan(X), 0.0, terms).sum(axis=1)


def _null_deviance_by_hand(X):
    total = 0.0
    for j in range(X.shape[1]):
        col = X[:, j][~np.isnan(X[:, j])]
        p = col.mean()
        for x in col:
            if (x == 1 and p > 0) or (x == 0 and p < 1):
                total += np.log(p if x == 1 else 1.0 - p)
    return -2.0 * total


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(0)
    L = rng.normal(size=(30, 2))
    R = rng.normal(size=(12, 2))
    return (L @ R.T + 0.3 * rng.normal(size=(30, 12)) >= 0).astype(np.float64)


@pytest.fixture(scope="module")
def fitted(small):
    # the bias-column model (the estimator's default is "global", tested below)
    return RoundingRankFactorization(
        3, random_state=0, method_params={"fit_bias": True}
    ).fit(small)


@pytest.mark.parametrize("tau", [0.5, 0.0, -0.5])
def test_default_model_is_the_global_offset(small, tau):
    # n_components = k expresses the roundings of rank-k matrices: no bias column
    # (at tau = 0 the offset would be 0: no bias at all)
    default = RoundingRankFactorization(3, tau=tau, random_state=0).fit(small)
    expected = "global" if tau != 0 else False
    explicit = RoundingRankFactorization(
        3, tau=tau, random_state=0, method_params={"fit_bias": expected}
    ).fit(small)
    assert default._logistic_model.fit_bias == expected
    assert_array_equal(default.components_, explicit.components_)
    assert_array_equal(default.transform(small), explicit.transform(small))
    assert_array_equal(default.predict_proba(small), explicit.predict_proba(small))


def test_predict_proba_is_sigmoid_of_transform_logits(fitted, small):
    X_new = small[:7]
    proba = fitted.predict_proba(X_new)
    L = fitted.transform(X_new)
    theta = L @ fitted.components_ - fitted.tau  # bias column carries mu + tau
    assert proba.shape == X_new.shape
    assert_allclose(proba, _sigmoid(theta), rtol=1e-12, atol=1e-15)
    assert np.all((proba >= 0) & (proba <= 1))
    # rounding the probabilities at 1/2 is the rounded reconstruction
    assert_array_equal(
        (proba >= 0.5).astype(np.uint8), fitted.inverse_transform(L).astype(np.uint8)
    )


def test_score_samples_is_the_bernoulli_log_likelihood(fitted, small):
    theta = fitted.transform(small) @ fitted.components_ - fitted.tau
    scores = fitted.score_samples(small)
    assert scores.shape == (small.shape[0],)
    assert np.all(scores <= 0)
    assert_allclose(scores, _loglik_by_hand(small, theta), rtol=1e-10)


@pytest.mark.parametrize("fit_bias", [True, False, "global"])
def test_deviance_explained_by_hand(small, fit_bias):
    # with a time limit the estimator keeps the jointly fitted rows, so the
    # logits of the fit are fit_transform(X) @ components_ (and the model's offset)
    est = RoundingRankFactorization(
        3, random_state=0, time_limit=1e6, method_params={"fit_bias": fit_bias}
    )
    L = est.fit_transform(small)
    null = _null_deviance_by_hand(small)
    assert_allclose(est.solver_info_["null_deviance"], null, rtol=1e-12)
    if fit_bias is True:
        theta = L @ est.components_ - est.tau
    elif fit_bias == "global":
        b = est.solver_info_["offset"]
        theta = (-b / est.tau) * (L @ est.components_ - est.tau)
    else:
        theta = None  # rows of L are rescaled for tau: no direct formula
    if theta is not None:
        deviance = -2.0 * _loglik_by_hand(small, theta).sum()
        assert_allclose(est.deviance_explained_, 1 - deviance / null, rtol=1e-8)
    assert 0 < est.deviance_explained_ < 1


@pytest.mark.parametrize("fit_bias", [True, False, "global"])
def test_per_row_regression_explains_no_less_than_the_fit(small, fit_bias):
    # the rows of score_samples are the per-row optima for the fitted components,
    # so on the training data their deviance is at most the joint fit's (up to
    # the penalty, which is tiny here)
    est = RoundingRankFactorization(
        3, random_state=0, method_params={"fit_bias": fit_bias}
    ).fit(small)
    deviance = -2.0 * est.score_samples(small).sum()
    assert deviance <= est.solver_info_["deviance"] * (1 + 1e-3)


def test_missing_entries_are_ignored(fitted, small):
    X = small[:5].copy()
    X[0, [1, 4]] = np.nan
    X[3, :] = np.nan  # a row with nothing observed: only the bias is left
    L = fitted.transform(X)
    assert np.isfinite(L).all()
    proba = fitted.predict_proba(X)
    assert np.isfinite(proba).all()
    theta = L @ fitted.components_ - fitted.tau
    assert_allclose(proba, _sigmoid(theta), rtol=1e-12, atol=1e-15)
    assert_allclose(fitted.score_samples(X), _loglik_by_hand(X, theta), rtol=1e-10)
    assert fitted.score_samples(X)[3] == 0.0
    assert_allclose(L[3, :-1], 0.0)  # nothing observed: the penalty's optimum
    # a row's regression sees its observed entries only: the same as dropping the
    # missing columns from the row and from the components
    observed = ~np.isnan(X[0])
    R = fitted.components_.T
    L0 = lpca_transform(X[:1, observed], R[observed], tau=fitted.tau)
    assert_allclose(L[0], L0[0], rtol=1e-10, atol=1e-12)


def test_fit_with_missing_entries_has_finite_deviance(small):
    X = small.copy()
    X[np.arange(0, 30, 3), np.arange(10) % 12] = np.nan
    est = RoundingRankFactorization(3, random_state=0).fit(X)
    assert np.isfinite(est.deviance_explained_)
    assert_allclose(
        est.solver_info_["null_deviance"], _null_deviance_by_hand(X), rtol=1e-12
    )
    assert np.isfinite(est.score_samples(X)).all()


def test_sparse_input(fitted, small):
    dense = fitted.predict_proba(small)
    assert_allclose(fitted.predict_proba(sp.csr_matrix(small)), dense)
    est = RoundingRankFactorization(
        3, random_state=0, method_params={"fit_bias": True}
    ).fit(sp.csr_matrix(small))
    assert_allclose(est.predict_proba(small), dense)
    default = RoundingRankFactorization(3, random_state=0)
    assert_allclose(
        default.fit(sp.csr_matrix(small)).predict_proba(small),
        default.fit(small).predict_proba(small),
    )


def test_deviance_explained_grows_with_k(digits150):
    X = digits150
    values = [
        RoundingRankFactorization(k, random_state=0).fit(X).deviance_explained_
        for k in (2, 5)
    ]
    assert 0 < values[0] < values[1] < 1


@pytest.mark.parametrize("method", ["rsvd", "projlp", "asso"])
@pytest.mark.parametrize("name", ["predict_proba", "score_samples"])
def test_other_methods_have_no_probabilities(small, method, name):
    est = RoundingRankFactorization(2, method=method, random_state=0)
    assert not hasattr(est, name)
    est.fit(small)
    assert not hasattr(est, name)
    assert not hasattr(est, "deviance_explained_")
    with pytest.raises(AttributeError) as info:
        getattr(est, name)
    assert "method='lpca'" in str(info.value.__cause__)
    assert repr(method) in str(info.value.__cause__)


def test_not_fitted(small):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        RoundingRankFactorization(2).predict_proba(small)


def test_the_estimator_reads_the_fits_typed_model_not_its_info(digits150):
    # the logistic model travels as a typed record: emptying the diagnostics
    # (solver_info_) does not change the probabilities
    X = digits150[:60, :40]
    est = RoundingRankFactorization(5, method="lpca", random_state=0).fit(X)
    P = est.predict_proba(X)
    est.solver_info_.clear()
    assert_array_equal(est.predict_proba(X), P)


def test_rounding_rank_cv_certificate_keeps_its_logistic_model():
    # RoundingRankCV's best estimator reproduces a rank search's certificate; with
    # the default global bias its probabilities need the certificate's offset,
    # which predict_proba used to miss (a ValueError)
    from sklearn_rrank import RoundingRankCV

    rng = np.random.default_rng(0)
    X = (rng.normal(size=(40, 3)) @ rng.normal(size=(3, 30)) > 0).astype(float)
    cv = RoundingRankCV(
        RoundingRankFactorization(method="lpca"), random_state=0, mode="exact"
    )
    best = cv.fit(X).best_estimator_
    assert best.certified_
    P = best.predict_proba(X)
    assert P.shape == X.shape and np.all((P >= 0) & (P <= 1))
    # a fitted estimator whose factors have no logistic model hides the methods
    best._logistic_model = None
    assert not hasattr(best, "predict_proba")
    with pytest.raises(AttributeError, match="score_samples"):
        best.score_samples(X)
