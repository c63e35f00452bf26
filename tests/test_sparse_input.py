"""Large dense data with few ones is taken as CSR at the doors of sparse methods."""

import tracemalloc

import numpy as np
import pandas as pd
import scipy.sparse as sp
from _family import sparse_if_few_ones

from sklearn_rrank import RoundingRankFactorization, rounding_rank_bounds


def _few_ones(seed, m=60, n=40, k=3):
    rng = np.random.default_rng(seed)
    # planted rank k, about 5% ones
    return (rng.standard_normal((m, k)) @ rng.standard_normal((k, n)) >= 2.6).astype(
        np.uint8
    )


def _large_few_ones(seed):
    """1e7 entries, the doors' size for CSR, with about 6% ones (10 MB as uint8)."""
    rng = np.random.default_rng(seed)
    return (
        rng.standard_normal((5000, 3)) @ rng.standard_normal((3, 2000)) >= 2.6
    ).astype(np.uint8)


def _peak_bytes(call):
    """``call()``'s result and the peak of the memory numpy allocated for it."""
    tracemalloc.start()
    try:
        out = call()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_rule_of_sparse_if_few_ones():
    X = _few_ones(0)
    assert 0 < X.mean() < 0.1
    before = X.copy()
    out = sparse_if_few_ones(X, min_entries=100)
    assert sp.issparse(out) and out.format == "csr" and out.dtype == X.dtype
    np.testing.assert_array_equal(out.toarray(), X)
    np.testing.assert_array_equal(X, before)  # not modified
    dense = (np.arange(60 * 40).reshape(60, 40) % 5 == 0).astype(np.uint8)  # 20%
    assert sparse_if_few_ones(dense, min_entries=100) is dense
    small = X[:9, :9]  # 81 entries, below 100
    assert sparse_if_few_ones(small, min_entries=100) is small
    missing = X.astype(float)
    missing[0, 0] = np.nan
    assert sparse_if_few_ones(missing, min_entries=100) is missing  # NaN stays dense
    for other in (X.tolist(), pd.DataFrame(X), sp.csr_matrix(X), X[0]):
        assert sparse_if_few_ones(other, min_entries=100) is other


def test_rule_needs_the_default_size():
    X = _few_ones(0)  # 2400 entries, far below 1e7
    assert sparse_if_few_ones(X) is X


def test_estimator_fits_large_dense_few_ones_as_sparse():
    # a dense float64 copy of X would take 8 bytes an entry (80 MB)
    X = _large_few_ones(1)
    before = X.copy()
    params = dict(method="rsvd", random_state=0)
    dense, peak = _peak_bytes(lambda: RoundingRankFactorization(3, **params).fit(X))
    assert peak < 4 * X.size
    np.testing.assert_array_equal(X, before)
    csr = RoundingRankFactorization(3, **params).fit(sp.csr_matrix(X))
    np.testing.assert_array_equal(dense.components_, csr.components_)
    assert dense.reconstruction_err_ == csr.reconstruction_err_


def test_bounds_work_on_large_dense_few_ones_sparse():
    X = _large_few_ones(3)
    dense, peak = _peak_bytes(
        lambda: rounding_rank_bounds(X, methods=("spectral",), random_state=0)
    )
    assert peak < 4 * X.size  # no float64 copy
    csr = rounding_rank_bounds(sp.csr_matrix(X), methods=("spectral",))
    assert (dense.lower, dense.upper) == (csr.lower, csr.upper)
