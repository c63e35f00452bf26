"""Tests of linear_separability and feature_dimension_bounds."""

import itertools

import numpy as np
import pytest
from _family import _one_feature_suffices
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from sklearn_rrank import (
    feature_dimension_bounds,
    is_rounding_rank_one,
    linear_separability,
)

# the labels of the points -0.5, 0.5, ..., 3.5 under x >= 0, x <= 1, x >= 2, x <= 3
POINTS_1D = np.array([[-0.5], [0.5], [1.5], [2.5], [3.5]])
Y_1D = np.array([[0, 1, 0, 1], [1, 1, 0, 1], [1, 0, 0, 1], [1, 0, 1, 1], [1, 0, 1, 0]])


def _separable_by_linprog(X, y):
    """Strict affine separability of one label, by scipy's LP (margin 1)."""
    s = np.where(y == 1, 1.0, -1.0)
    F = np.hstack([X, np.ones((X.shape[0], 1))])
    res = linprog(
        np.zeros(F.shape[1]),
        A_ub=-(s[:, None] * F),
        b_ub=-np.ones(len(y)),
        bounds=[(None, None)] * F.shape[1],
    )
    return res.status == 0


def _fd_at_most_one_brute_force(Y):
    """fd(Y) <= 1 iff some order of the distinct rows makes every column monotone."""
    rows = np.unique(Y, axis=0)
    for perm in itertools.permutations(range(len(rows))):
        changes = np.abs(np.diff(rows[list(perm)], axis=0)).sum(axis=0)
        if changes.max(initial=0) <= 1:
            return True
    return False


# -- linear_separability ------------------------------------------------------------
def test_separability_small_examples():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    Y = np.array([[0, 1], [0, 0], [1, 1], [1, 0]])
    res = linear_separability(X, Y)
    assert res.separable.tolist() == [True, False]
    assert res.n_errors[0] == 0 and res.n_errors[1] >= 1
    np.testing.assert_array_equal(res.predict(X)[:, 0], Y[:, 0])
    assert res.coef_.shape == (2, 1) and res.intercept_.shape == (2,)
    # a 1-D label vector is one label
    one = linear_separability(X, Y[:, 0])
    assert one.separable.tolist() == [True]


def test_separability_matches_linprog_on_random_points():
    rng = np.random.default_rng(0)
    for _ in range(10):
        X = rng.standard_normal((15, 2))
        w = rng.standard_normal((2, 3))
        Y = np.hstack(
            [(X @ w + 0.3 >= 0).astype(int), (rng.random((15, 3)) < 0.5).astype(int)]
        )
        res = linear_separability(X, Y)
        for j in range(Y.shape[1]):
            assert res.separable[j] == _separable_by_linprog(X, Y[:, j])
            if res.separable[j]:
                np.testing.assert_array_equal(res.predict(X)[:, j], Y[:, j])
        assert res.separable[:3].all()


def test_separability_without_intercept_and_missing_labels():
    X = np.array([[1.0], [2.0], [3.0]])
    Y = np.array([[0, 0], [1, 1], [1, np.nan]])
    res = linear_separability(X, Y, fit_intercept=False, tau=0.5)
    assert res.separable.tolist() == [True, True]  # the missing label is ignored
    assert (res.intercept_ == 0).all()
    assert res.predict(X)[:2, 1].tolist() == [0, 1]
    # with the third label observed as 0 the second label is not separable
    Y[2, 1] = 0
    assert not linear_separability(X, Y, fit_intercept=False, tau=0.5).separable[1]
    # without intercept at tau = 0 only homogeneous separations exist
    res0 = linear_separability(X, Y[:, :1], fit_intercept=False, tau=0.0)
    assert res0.separable.tolist() == [False]


def test_separability_validation():
    with pytest.raises(ValueError, match="samples"):
        linear_separability(np.ones((3, 2)), np.ones((4, 1)))
    with pytest.raises(ValueError, match="not binary"):
        linear_separability(np.ones((3, 2)), np.full((3, 1), 2))
    with pytest.raises(ValueError, match="eps"):
        linear_separability(np.ones((3, 2)), np.ones((3, 1)), eps=0.0)


# -- feature_dimension_bounds -------------------------------------------------------
def test_constant_labels_need_no_features():
    Y = np.array([[1, 0], [1, 0], [1, 0]])
    assert feature_dimension_bounds(Y) == (0, 0)


def test_identity_needs_two_features():
    # fd(I_n) = 2 = rrank_0.5(I_n) for n >= 3: the right inequality of (2) is tight
    for n in (3, 6):
        assert feature_dimension_bounds(np.eye(n), random_state=0) == (2, 2)
    assert feature_dimension_bounds(np.eye(2), random_state=0) == (1, 1)


def test_one_feature_below_every_rounding_rank():
    # fd(Y_1D) = 1 while rrank_tau(Y_1D) = 2 for every tau: the left inequality of
    # (2) is tight and fd is not min_tau rrank_tau
    res = linear_separability(POINTS_1D, Y_1D)
    assert res.separable.all()  # one feature with intercepts classifies all labels
    assert feature_dimension_bounds(Y_1D, random_state=0) == (1, 1)
    for tau in (0.5, 0.0, -0.5):
        assert not is_rounding_rank_one(Y_1D, tau=tau)


def test_bounds_bracket_the_truth_on_planted_affine_labels():
    rng = np.random.default_rng(1)
    for p in (1, 2, 3):
        X = rng.standard_normal((25, p))
        Y = (X @ rng.standard_normal((p, 12)) + rng.standard_normal(12) >= 0).astype(
            int
        )
        lower, upper = feature_dimension_bounds(Y, random_state=0)
        assert lower <= p  # the planted features prove fd <= p
        assert lower <= upper
        assert linear_separability(X, Y).separable.all()


def test_one_feature_test_matches_brute_force():
    rng = np.random.default_rng(2)
    seen = set()
    for _ in range(150):
        m, n = rng.integers(2, 6), rng.integers(1, 5)
        Y = (rng.random((m, n)) < 0.5).astype(float)
        expected = _fd_at_most_one_brute_force(Y)
        assert _one_feature_suffices(np.unique(Y, axis=0)) == expected
        seen.add(expected)
    assert seen == {True, False}


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 8), st.integers(1, 6))
def test_property_lower_le_upper(seed, m, n):
    rng = np.random.default_rng(seed)
    Y = (rng.random((m, n)) < 0.5).astype(int)
    lower, upper = feature_dimension_bounds(Y, random_state=0)
    assert 0 <= lower <= upper <= max(n, 1)
    if _fd_at_most_one_brute_force(Y):
        assert lower <= 1
    else:
        assert lower >= 2
