"""scikit-learn's estimator checks for every estimator, with fast settings."""

import pytest
from _family import METHODS
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_rrank import RoundingRankCV, RoundingRankFactorization

# INIT_PARAMS: fast settings for the checks (binarize=0.0 because the checks feed
# real-valued data)
ESTIMATORS = [RoundingRankFactorization(2, method="rsvd", binarize=0.0)]
ESTIMATORS += [
    RoundingRankFactorization(2, method="projlp", binarize=0.0, random_state=0),
    RoundingRankFactorization(
        2, method="lpca", binarize=0.0, random_state=0, max_iter=300
    ),
    RoundingRankFactorization(2, method="asso", binarize=0.0),
    RoundingRankCV(
        RoundingRankFactorization(method="rsvd", binarize=0.0),
        n_components=[1, 2],
        mode="exact",
    ),
    RoundingRankCV(
        RoundingRankFactorization(method="lpca", binarize=0.0, random_state=0),
        n_components=[1, 2],
        mode="holdout",
        cv=2,
        random_state=0,
    ),
]

# scikit-learn's sparse-input checks read classifier tags whenever an estimator has
# predict_proba and expect probabilities of shape (n_samples, n_classes); L-PCA's
# predict_proba is a probability per entry, of the shape of X, and the estimator is
# no classifier (tests/test_lpca_proba.py checks sparse input instead)
_PROBA_NOT_A_CLASSIFIER = (
    "predict_proba gives a probability per entry (shape of X), not per class"
)
EXPECTED_FAILED_CHECKS = {
    "lpca": {
        "check_estimator_sparse_array": _PROBA_NOT_A_CLASSIFIER,
        "check_estimator_sparse_matrix": _PROBA_NOT_A_CLASSIFIER,
    }
}


@parametrize_with_checks(
    ESTIMATORS,
    expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS.get(
        getattr(est, "method", None), {}
    ),
)
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_all_methods_have_their_solver():
    for method in ["rsvd", "projlp", "lpca", "asso"]:
        assert callable(METHODS[method].fit), method


@pytest.mark.parametrize("n_components", [0, -1, 2.5, "2"])
def test_bad_n_components(n_components):
    import numpy as np

    with pytest.raises((ValueError, TypeError), match="n_components"):
        RoundingRankFactorization(n_components, method="rsvd").fit(np.eye(3))
