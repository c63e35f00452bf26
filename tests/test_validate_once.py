"""Each public call validates its binary data once (the door), not once per layer."""

import sys

import numpy as np
import pytest
from _family import modules

from sklearn_rrank import (
    RoundingRankCV,
    RoundingRankFactorization,
    rounding_rank_bounds,
)

V = modules.validation  # the door's checks, wrapped to count their calls
X = (np.random.RandomState(0).rand(30, 20) < 0.3).astype(float)


@pytest.fixture
def counter(monkeypatch):
    """Counts calls of the two binary checks, wherever a module imported them."""
    calls = []
    for name in ("check_binary_matrix", "check_binary_values"):
        original = getattr(V, name)

        def counted(*args, _original=original, **kwargs):
            calls.append(_original.__name__)
            return _original(*args, **kwargs)

        for module in list(sys.modules.values()):
            name_ = getattr(module, "__name__", "")
            # inside _validation, check_binary_matrix calls check_binary_values:
            # that is one validation, so _validation's own names stay unwrapped
            if name_.startswith("sklearn_rrank") and module is not V:
                if getattr(module, name, None) is original:
                    monkeypatch.setattr(module, name, counted)
    return calls


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("method", ["rsvd", "lpca", "projlp", "asso"])
def test_fit_and_score_validate_once(counter, method):
    est = RoundingRankFactorization(3, method=method, random_state=0)
    est.fit(X)
    assert len(counter) == 1
    counter.clear()
    est.score(X)
    assert len(counter) == 1


@pytest.mark.parametrize(
    "methods",
    [
        ("spectral",),
        ("vc",),
        ("rank_one",),
        ("rsvd",),
        ("lpca",),
        ("projlp",),
        ("nuclear",),
        ("permutation",),
        ("asso",),
        ("trivial",),
        "default",  # the default portfolio
    ],
)
def test_bounds_validate_once(counter, methods):
    kwargs = {} if methods == "default" else {"methods": methods}
    rounding_rank_bounds(X, random_state=0, **kwargs)
    assert len(counter) == 1


def test_cv_validates_once_plus_once_per_fit(counter):
    cv = RoundingRankCV(
        RoundingRankFactorization(method="rsvd"), search="galloping", mode="exact"
    )
    cv.fit(X)
    n_fits = len(cv.errors_) + 1  # every candidate fit and the final refit at most
    assert 1 <= len(counter) <= 1 + n_fits


def test_feature_dimension_bounds_validates_once(counter):
    from sklearn_rrank import feature_dimension_bounds

    feature_dimension_bounds(X, random_state=0)
    assert len(counter) == 1


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("method", ["rsvd", "lpca", "projlp", "asso"])
@pytest.mark.parametrize(
    "call", ["transform", "inverse_transform", "predict_proba", "score_samples"]
)
def test_every_estimator_method_validates_once(counter, method, call):
    est = RoundingRankFactorization(3, method=method, random_state=0).fit(X)
    if not hasattr(est, call):  # the probability model is L-PCA's only
        assert method != "lpca"
        return
    counter.clear()
    arg = est.transform(X) if call == "inverse_transform" else X
    counter.clear()
    getattr(est, call)(arg)
    # inverse_transform takes factor rows, not binary data: no binary check at all
    assert len(counter) == (0 if call == "inverse_transform" else 1)
