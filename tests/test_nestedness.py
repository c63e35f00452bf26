"""Tests for sklearn_rrank._nested._nestedness: NODF, nestedness temperature and the
curveball null model for NODF."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from _family import _curveball_trades, _fill_exponent, _fill_line_crossing
from _nested_strategies import binary_matrices
from hypothesis import given, settings
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_rrank import nestedness_temperature, nodf, nodf_null_model

# ---------------------------------------------------------------------------------
# NODF, nestedness temperature and the curveball null model
# ---------------------------------------------------------------------------------


def test_nodf_examples():
    assert nodf([[1, 1, 1], [1, 1, 0], [1, 0, 0]]) == (100.0, 100.0, 100.0)
    assert nodf(np.eye(3)).nodf == 0.0
    res = nodf([[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 1, 0]])
    assert_allclose(res, (500 / 9, 200 / 3, 50.0))
    assert_allclose(nodf(sp.csr_matrix(np.eye(3))), (0.0, 0.0, 0.0))
    one_row = nodf([[1, 0, 1]])
    assert np.isnan(one_row.rows) and one_row.nodf == one_row.columns


def _naive_nodf(X):
    X = np.asarray(X, dtype=float)
    X = X[np.argsort(-X.sum(1), kind="stable")][:, np.argsort(-X.sum(0), kind="stable")]

    def part(A):
        vals = []
        for i, k in itertools.combinations(range(A.shape[0]), 2):
            si, sk = A[i].sum(), A[k].sum()
            vals.append(0.0 if si <= sk or sk == 0 else 100 * (A[i] @ A[k]) / sk)
        return vals

    rows, cols = part(X), part(X.T)
    return np.mean(rows + cols)


@settings(max_examples=40, deadline=None)
@given(binary_matrices.filter(lambda X: len(X) > 1 and len(X[0]) > 1))
def test_nodf_matches_definition(X):
    assert_allclose(nodf(X).nodf, _naive_nodf(X))
    X = np.array(X)
    assert_allclose(nodf(X[::-1]).nodf, nodf(X).nodf)  # sorted first


def test_nodf_unsorted_order_matters():
    X = np.array([[1, 0, 0], [1, 1, 0], [1, 1, 1]])
    assert nodf(X).nodf == 100.0
    # rows in increasing fill score 0; the columns are already decreasing
    assert nodf(X, sort=False) == (50.0, 0.0, 100.0)


def _fill_line(x, p):
    return 1 - (1 - (1 - x) ** p) ** (1 / p)


def test_temperature_fill_line():
    from scipy.integrate import quad
    from scipy.optimize import brentq

    for fill in [0.02, 0.3, 0.5, 0.55, 0.9]:
        p = _fill_exponent(fill)
        area = quad(_fill_line, 0, 1, args=(p,))[0]
        assert_allclose(area, fill, atol=1e-8)
    assert_allclose(_fill_exponent(0.5), 1.0)
    p = _fill_exponent(0.3)
    a = np.array([-0.7, -0.2, 0.0, 0.35, 0.9])
    x = _fill_line_crossing(a, p)
    for ai, xi in zip(a, x, strict=True):
        root = brentq(lambda t, ai=ai: _fill_line(t, p) - t - ai, 0, 1)
        assert_allclose(xi, root, atol=1e-12)


def test_temperature_values():
    stair = np.tril(np.ones((10, 10)))[::-1]  # full rows on top: packed already
    assert nestedness_temperature(stair) < 0.005
    assert nestedness_temperature(stair, pack=False) < 0.005
    assert nestedness_temperature(stair[::-1], pack=False) > 50  # upside down
    rng = np.random.default_rng(0)
    rand = (rng.random((10, 10)) < 0.55).astype(int)
    t_rand = nestedness_temperature(rand)
    assert 20 < t_rand < 100
    assert nestedness_temperature(np.zeros((3, 3))) == 0.0
    assert nestedness_temperature(np.ones((3, 3))) == 0.0


def test_curveball_preserves_margins():
    rng = np.random.default_rng(0)
    X = rng.random((12, 9)) < 0.4
    M = _curveball_trades(X.copy(), 500, np.random.default_rng(1))
    assert_array_equal(M.sum(0), X.sum(0))
    assert_array_equal(M.sum(1), X.sum(1))
    assert np.count_nonzero(M != X) > 0


def test_curveball_uniform_on_permutation_matrices():
    """Margins (1, 1, 1): the six 3 x 3 permutation matrices are equally likely."""
    rng = np.random.default_rng(0)
    M = np.eye(3, dtype=bool)
    counts = {}
    for _ in range(3000):
        _curveball_trades(M, 3, rng)
        key = tuple(np.argmax(M, axis=1))
        counts[key] = counts.get(key, 0) + 1
    assert len(counts) == 6
    assert all(400 < c < 600 for c in counts.values())


def test_nodf_null_model():
    rng = np.random.default_rng(0)
    X = (rng.random((15, 20)) < 0.4).astype(int)
    res = nodf_null_model(X, n_null=30, random_state=0)
    res2 = nodf_null_model(X, n_null=30, random_state=0)
    assert_array_equal(res.null_nodf, res2.null_nodf)
    assert not np.array_equal(
        res.null_nodf, nodf_null_model(X, n_null=30, random_state=1).null_nodf
    )
    assert res.nodf == nodf(X).nodf
    assert res.null_nodf.shape == (30,)
    assert_allclose(res.z_score, (res.nodf - res.null_mean) / res.null_std)
    assert_allclose(res.null_std, np.std(res.null_nodf, ddof=1))
    n_ge = np.count_nonzero(res.null_nodf >= res.nodf)
    assert res.p_value == (1 + n_ge) / 31
    assert abs(res.z_score) < 4  # a random matrix is typical of its null model
    # a staircase is the only matrix with its margins
    fixed = nodf_null_model(np.tril(np.ones((6, 6))), n_null=5, random_state=0)
    assert fixed.p_value == 1.0 and np.isnan(fixed.z_score)
    assert_allclose(fixed.null_nodf, 100.0)
    with pytest.raises(ValueError, match="n_null"):
        nodf_null_model(X, n_null=0)
