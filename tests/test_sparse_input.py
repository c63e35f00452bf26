"""Large dense data with few ones is taken as CSR at the doors of sparse methods."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from _family import modules, sparse_if_few_ones

from sklearn_rrank import RoundingRankFactorization, rounding_rank_bounds


def _few_ones(seed, m=60, n=40, k=3):
    rng = np.random.default_rng(seed)
    # planted rank k, about 5% ones
    return (rng.standard_normal((m, k)) @ rng.standard_normal((k, n)) >= 2.6).astype(
        np.uint8
    )


@pytest.fixture
def small_threshold(monkeypatch):
    monkeypatch.setattr(modules.validation, "SPARSE_INPUT_ENTRIES", 100)


def _spy(mp, module, name):
    """Wrap ``module.name`` (a door's validation step); returns, per call, whether
    its data argument was sparse."""
    seen, inner = [], getattr(module, name)

    def wrapper(*args, **kwargs):
        seen.append(
            sp.issparse(args[1] if module is modules.factorization else args[0])
        )
        return inner(*args, **kwargs)

    mp.setattr(module, name, wrapper)
    return seen


def test_rule_of_sparse_if_few_ones(small_threshold):
    X = _few_ones(0)
    assert 0 < X.mean() < 0.1
    before = X.copy()
    out = sparse_if_few_ones(X)
    assert sp.issparse(out) and out.format == "csr" and out.dtype == X.dtype
    np.testing.assert_array_equal(out.toarray(), X)
    np.testing.assert_array_equal(X, before)  # not modified
    dense = (np.arange(60 * 40).reshape(60, 40) % 5 == 0).astype(np.uint8)  # 20%
    assert sparse_if_few_ones(dense) is dense
    small = X[:9, :9]  # 81 entries, below the (patched) 100
    assert sparse_if_few_ones(small) is small
    missing = X.astype(float)
    missing[0, 0] = np.nan
    assert sparse_if_few_ones(missing) is missing  # NaN stays dense
    for other in (X.tolist(), pd.DataFrame(X), sp.csr_matrix(X), X[0]):
        assert sparse_if_few_ones(other) is other


def test_rule_needs_the_default_size():
    X = _few_ones(0)  # 2400 entries, far below 1e7
    assert sparse_if_few_ones(X) is X


@pytest.mark.parametrize("method", ["lpca", "rsvd"])
def test_estimator_fits_large_dense_few_ones_as_sparse(small_threshold, method):
    X = _few_ones(1)
    params = dict(method=method, random_state=0)
    with pytest.MonkeyPatch.context() as mp:
        seen = _spy(mp, modules.factorization, "validate_data")
        dense = RoundingRankFactorization(3, **params).fit(X)
    assert seen == [True]
    csr = RoundingRankFactorization(3, **params).fit(sp.csr_matrix(X))
    np.testing.assert_array_equal(dense.components_, csr.components_)
    assert dense.reconstruction_err_ == csr.reconstruction_err_
    np.testing.assert_array_equal(dense.transform(X), csr.transform(sp.csr_matrix(X)))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_estimator_keeps_dense_data_dense_for_dense_methods(small_threshold):
    X = _few_ones(2)
    with pytest.MonkeyPatch.context() as mp:
        seen = _spy(mp, modules.factorization, "validate_data")
        RoundingRankFactorization(2, method="asso").fit(X)
        # binarize works on the dense values
        RoundingRankFactorization(2, method="lpca", binarize=0.5, max_iter=3).fit(X)
    assert seen == [False, False]


def test_bounds_work_on_large_dense_few_ones_sparse(small_threshold):
    X = _few_ones(3)
    methods = ("rank_one", "spectral", "rsvd", "lpca")
    with pytest.MonkeyPatch.context() as mp:
        seen = _spy(mp, modules.bounds, "check_binary_matrix")
        dense = rounding_rank_bounds(X, methods=methods, random_state=0)
        rounding_rank_bounds(X, methods=("nuclear",), random_state=0)
    assert seen == [True, False]  # nuclear works on dense data only
    csr = rounding_rank_bounds(sp.csr_matrix(X), methods=methods, random_state=0)
    assert (dense.lower, dense.upper) == (csr.lower, csr.upper)
