"""scikit-learn end to end: Pipeline, GridSearchCV, pickling, clone, set_output."""

import pickle
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from sklearn_rrank import RoundingRankFactorization
from sklearn_rrank.datasets import make_rounding_rank_matrix

METHODS = ["rsvd", "lpca", "projlp", "asso"]


@pytest.fixture(scope="module")
def data():
    return make_rounding_rank_matrix(80, 30, 3, random_state=0)


@pytest.mark.parametrize("method", METHODS)
def test_pickle_roundtrip_same_predictions(method, data):
    est = RoundingRankFactorization(3, method=method, random_state=0).fit(data)
    est2 = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(est.transform(data), est2.transform(data))
    np.testing.assert_array_equal(
        est.inverse_transform(est.transform(data)),
        est2.inverse_transform(est2.transform(data)),
    )


@pytest.mark.parametrize("method", METHODS)
def test_clone_and_params(method):
    est = RoundingRankFactorization(4, method=method, tau=0.3, random_state=1)
    c = clone(est)
    assert c.get_params() == est.get_params()


def test_pipeline_with_classifier(data):
    y = data[:, 0]
    X = data[:, 1:]
    pipe = make_pipeline(
        RoundingRankFactorization(3, method="rsvd"), LogisticRegression()
    )
    pipe.fit(X, y)
    assert pipe.predict(X).shape == (80,)


def test_grid_search_uses_score(data):
    grid = GridSearchCV(
        RoundingRankFactorization(method="rsvd"),
        {"n_components": [1, 2, 3, 4]},
        cv=3,
    ).fit(data)
    assert grid.best_params_["n_components"] in (1, 2, 3, 4)
    assert np.all(grid.cv_results_["mean_test_score"] <= 0)


def test_set_output_pandas_and_feature_names(data):
    est = RoundingRankFactorization(3, method="rsvd").set_output(transform="pandas")
    df = pd.DataFrame(data, columns=[f"f{i}" for i in range(30)])
    out = est.fit_transform(df)
    assert isinstance(out, pd.DataFrame)
    assert list(out.columns) == [
        "roundingrankfactorization0",
        "roundingrankfactorization1",
        "roundingrankfactorization2",
    ]
    assert list(est.feature_names_in_) == list(df.columns)


@pytest.mark.parametrize("method", ["rsvd", "lpca"])
def test_sparse_and_dataframe_input_same_as_dense(method, data):
    kw = dict(method=method, random_state=0)
    dense = RoundingRankFactorization(3, **kw).fit(data)
    sparse = RoundingRankFactorization(3, **kw).fit(sp.csr_matrix(data))
    frame = RoundingRankFactorization(3, **kw).fit(pd.DataFrame(data))
    assert dense.reconstruction_err_ == frame.reconstruction_err_
    assert abs(dense.reconstruction_err_ - sparse.reconstruction_err_) <= 0


def test_binarize_and_bad_input(data):
    real = data + 0.3 * np.random.default_rng(0).random(data.shape)
    est = RoundingRankFactorization(2, method="rsvd", binarize=0.5).fit(real)
    assert est.n_components_ == 2
    with pytest.raises(ValueError, match="not binary"):
        RoundingRankFactorization(2, method="rsvd").fit(real)
    with pytest.raises(ValueError, match="missing entries"):
        X = data.astype(float)
        X[0, 0] = np.nan
        RoundingRankFactorization(2, method="rsvd").fit(X)
    with pytest.raises(ValueError, match="n_components=40 must be at most"):
        RoundingRankFactorization(40, method="rsvd").fit(data)
    with pytest.raises(ValueError, match="nonnegative"):
        RoundingRankFactorization(2, method="rsvd", nonnegative=True).fit(data)


def test_input_not_modified(data):
    X = data.astype(float)
    X[0, 1] = np.nan
    before = X.copy()
    RoundingRankFactorization(2, method="lpca", random_state=0).fit(X)
    np.testing.assert_array_equal(X, before)


def test_threaded_fits_keep_the_users_warning_filters():
    # Asso runs its thresholds in a thread pool. A task that touches the global
    # warning filters (scikit-learn's Parallel wraps each in catch_warnings) races
    # with the others and can lose the caller's filters; a short switch interval
    # makes the threads interleave often enough for such a race to show in 20 fits.
    X = make_rounding_rank_matrix(60, 40, 3, random_state=0)
    interval = sys.getswitchinterval()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", message="a filter of the caller")
        filters = list(warnings.filters)
        sys.setswitchinterval(1e-6)
        try:
            for _ in range(20):
                RoundingRankFactorization(3, method="asso", n_jobs=2).fit(X)
        finally:
            sys.setswitchinterval(interval)
        assert warnings.filters == filters
    assert [str(w.message) for w in caught] == []
