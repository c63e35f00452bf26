"""A fixed panel of results that restructuring must not change.

The first 150 binary digits (``load_digits_binary``, 150 x 64, real rank 46) and a
planted 120 x 80 matrix of rounding rank 4. On one BLAS a value changes only with a
change of algorithm, and the commit that changes it says why (the bracket search's
slice rules moved the digits' upper bound from 9 to 8).

The values are those of BLAS kernels with fused multiply-add (OpenBLAS's SkylakeX,
Haswell and Zen kernels give them all); an L-PCA fit is a floating-point
optimisation, and without FMA (OpenBLAS's Sandybridge and Prescott kernels) the
digits' bounds come out [5, 9].
"""

import numpy as np
import pytest

from sklearn_rrank import RoundingRankFactorization, rounding_rank_bounds
from sklearn_rrank.datasets import make_rounding_rank_matrix

FITS = {
    ("rsvd", 2): 1562,
    ("rsvd", 5): 837,
    ("rsvd", 10): 361,
    ("lpca", 2): 1486,
    ("lpca", 5): 559,
    ("lpca", 10): 0,
    ("projlp", 2): 1594,
    ("projlp", 5): 569,
    ("projlp", 10): 14,
    ("asso", 2): 1712,
    ("asso", 5): 1380,
    ("asso", 10): 946,
}


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("method, k", sorted(FITS))
def test_digits150_fits(digits150, method, k):
    est = RoundingRankFactorization(k, method=method, random_state=0).fit(digits150)
    assert est.reconstruction_err_ == FITS[method, k]
    assert est.certified_ == (FITS[method, k] == 0)
    L = est.transform(digits150)
    assert (est.inverse_transform(L) != digits150).sum() <= FITS[method, k]


def test_digits150_bounds(digits150_bounds):
    res = digits150_bounds
    assert (res.lower, res.upper, res.upper_method) == (5, 8, "lpca")


def test_planted_rank_four_bounds():
    X = make_rounding_rank_matrix(120, 80, 4, random_state=0)
    # n_jobs=2: the L-PCA fits run their row blocks on two threads; the bounds do
    # not depend on n_jobs (test_lpca, test_projlp), only the time does
    res = rounding_rank_bounds(X, random_state=0, n_jobs=2)
    assert (res.lower, res.upper, res.upper_method) == (4, 4, "lpca")
    assert res.exact
    assert np.array_equal((res.L @ res.R.T >= 0.5), X == 1)
