"""Tests for sklearn_rrank._nested._exact: is_nested, nested_decomposition,
is_rounding_rank_one (paper Section 4), and the generator make_nested_matrix."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from _nested_strategies import binary_matrices
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from sklearn_rrank import (
    certify_rounding,
    is_nested,
    is_rounding_rank_one,
    nested_decomposition,
)
from sklearn_rrank.datasets import make_nested_matrix

# ---------------------------------------------------------------------------------
# helpers and oracles
# ---------------------------------------------------------------------------------


def _is_nested_pairs(X):
    """Definition: every two rows are comparable under inclusion."""
    X = np.asarray(X, dtype=bool)
    for a, b in itertools.combinations(range(X.shape[0]), 2):
        if not (np.all(X[a] <= X[b]) or np.all(X[b] <= X[a])):
            return False
    return True


def _all_binary(m, n):
    for code in range(1 << (m * n)):
        yield ((code >> np.arange(m * n)) & 1).reshape(m, n)


def _rank_one_patterns(m, n, tau, values):
    """Set of all round_tau(outer(l, r)) with l, r over a grid (codes as ints)."""
    L = np.array(list(itertools.product(values, repeat=m)))
    R = np.array(list(itertools.product(values, repeat=n)))
    weights = 1 << np.arange(m * n)
    found = set()
    for l in L:
        P = (l[:, None, None] * R.T[None, :, :]) >= tau
        found.update(np.unique(P.reshape(m * n, -1).T @ weights).tolist())
    return found


# ---------------------------------------------------------------------------------
# is_nested, nested_decomposition, is_rounding_rank_one
# ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "X, expected",
    [
        ([[1, 0], [0, 1]], False),
        ([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0]], True),
        ([[1, 1, 0, 0], [0, 0, 1, 1], [1, 1, 1, 1]], False),
        ([[0, 0], [0, 0]], True),
        ([[0, 1, 0], [1, 1, 0], [0, 1, 1]], False),
        ([[0, 1, 0], [1, 1, 0], [0, 1, 0]], True),
    ],
)
def test_is_nested_examples(X, expected):
    assert is_nested(X) is expected
    assert is_nested(sp.csr_matrix(np.array(X))) is expected
    assert is_nested(np.array(X).T) is expected  # nestedness is symmetric


def test_is_nested_exhaustive_3x3():
    for X in _all_binary(3, 3):
        assert is_nested(X) == _is_nested_pairs(X), X


@settings(max_examples=60, deadline=None)
@given(binary_matrices)
def test_is_nested_matches_definition(X):
    X = np.array(X)
    assert is_nested(X) == _is_nested_pairs(X)
    assert is_nested(sp.csr_matrix(X)) == _is_nested_pairs(X)


def test_is_nested_rejects_non_binary():
    with pytest.raises(ValueError, match="not binary"):
        is_nested([[0, 2]])
    with pytest.raises(ValueError, match="missing"):
        is_nested([[0, np.nan]])


@settings(max_examples=60, deadline=None)
@given(binary_matrices, st.sampled_from([0.5, 1.0, 3e-3, 7.0]))
def test_nested_decomposition_certified(X, tau):
    X = np.array(X)
    if not _is_nested_pairs(X):
        with pytest.raises(ValueError, match="not nested"):
            nested_decomposition(X, tau=tau)
        return
    l, r = nested_decomposition(X, tau=tau)
    assert l.shape == (X.shape[0],) and r.shape == (X.shape[1],)
    assert np.all(l >= 0) and np.all(r >= 0)
    assert certify_rounding(X, l[:, None], r[:, None], tau=tau)
    assert_array_equal(np.outer(l, r) >= tau, X.astype(bool))
    l2, r2 = nested_decomposition(sp.csr_matrix(X), tau=tau)
    assert_allclose(l2, l)
    assert_allclose(r2, r)


def test_nested_decomposition_large_margin():
    # a full staircase of size 3000: the paper's 2^-j construction would underflow
    n = 3000
    X = np.tril(np.ones((n, n), dtype=np.uint8))
    l, r = nested_decomposition(X)
    assert certify_rounding(X, l[:, None], r[:, None], margin=1e-6)


def test_nested_decomposition_tau_nonpositive():
    ones = np.ones((2, 3))
    for tau in (0.0, -1.0):
        l, r = nested_decomposition(ones, tau=tau)
        assert certify_rounding(ones, l[:, None], r[:, None], tau=tau)
        with pytest.raises(ValueError, match="only the all-ones matrix"):
            nested_decomposition([[1, 0], [1, 1]], tau=tau)


def test_nested_decomposition_zero_matrix():
    l, r = nested_decomposition(np.zeros((2, 3)))
    assert_array_equal(l, 0)
    assert_array_equal(r, 0)


def test_identity_matrices():
    # appendix "Identity Matrices Have Rounding Rank 2": I_n, n >= 3, is not rank one
    for n in range(3, 7):
        assert not is_rounding_rank_one(np.eye(n))
    # I_2 is two 1x1 nested blocks; I_1 is nested
    assert is_rounding_rank_one(np.eye(2))
    assert is_rounding_rank_one(np.eye(1))


def test_triangular_and_block_nested():
    U = np.triu(np.ones((5, 5)))
    ok, l, r = is_rounding_rank_one(U, return_factors=True)
    assert ok and np.all(l >= 0) and np.all(r >= 0)
    B1 = np.array([[1, 1, 1], [1, 0, 0]])
    B2 = np.array([[1, 1], [1, 1], [0, 1]])
    B = np.zeros((6, 6), dtype=int)
    B[:2, :3] = B1
    B[2:5, 3:5] = B2  # row 5 and column 5 stay empty
    rng = np.random.default_rng(3)
    B = B[rng.permutation(6)][:, rng.permutation(6)]
    ok, l, r = is_rounding_rank_one(B, return_factors=True)
    assert ok
    assert (l < 0).any() and (l > 0).any()
    assert certify_rounding(B, l[:, None], r[:, None])
    assert not is_nested(B)
    # a third block breaks it; a non-nested block breaks it
    B3 = np.zeros((7, 7), dtype=int)
    B3[:6, :6] = B
    B3[6, 6] = 1
    assert not is_rounding_rank_one(B3)
    C = np.zeros((4, 4), dtype=int)
    C[:2, :2] = np.eye(2)
    C[2:, 2:] = 1
    assert not is_rounding_rank_one(C)


@pytest.mark.parametrize("tau", [0.5, 0.0, -0.5])
def test_rank_one_against_grid_oracle(tau):
    """Every 3x3 matrix: True iff round_tau(l r^T) over a grid of l, r finds it."""
    values = np.array([0, 0.25, 0.5, 1, 2, 4])
    values = np.concatenate([-values[1:], values])
    found = _rank_one_patterns(3, 3, tau, values)
    weights = 1 << np.arange(9)
    for X in _all_binary(3, 3):
        rank_zero = X.sum() == (0 if tau > 0 else 9)
        expected = int(X.ravel() @ weights) in found and not rank_zero
        ok, l, r = is_rounding_rank_one(X, tau=tau, return_factors=True)
        assert ok == expected, X
        if ok:
            assert certify_rounding(X, l[:, None], r[:, None], tau=tau)
        else:
            assert l is None and r is None


@pytest.mark.parametrize("tau", [0.5, 2.0, 0.0, -0.5, -3.0])
def test_rank_one_zero_and_ones(tau):
    zeros, ones = np.zeros((3, 4)), np.ones((3, 4))
    # rank 0: zeros for tau > 0, ones for tau <= 0
    assert is_rounding_rank_one(zeros, tau=tau) is (tau <= 0)
    assert is_rounding_rank_one(ones, tau=tau) is (tau > 0)


def test_rank_one_sparse_input_and_tau_equivalence():
    rng = np.random.default_rng(0)
    for _ in range(30):
        X = (rng.random((5, 4)) < 0.4).astype(int)
        a = is_rounding_rank_one(X)
        assert is_rounding_rank_one(sp.csr_matrix(X)) == a
        assert is_rounding_rank_one(X, tau=7.5) == a
        # tau < 0 is tau > 0 on the complement
        assert is_rounding_rank_one(1 - X, tau=-0.5) == a


# ---------------------------------------------------------------------------------
# make_nested_matrix
# ---------------------------------------------------------------------------------


@pytest.mark.parametrize("density, noise", [(0.1, 0.15), (0.5, 0.5), (0.7, 0.05)])
def test_make_nested_matrix(density, noise):
    X, clean = make_nested_matrix(
        20, 30, density=density, noise=noise, random_state=0, return_clean=True
    )
    assert X.dtype == np.uint8 and X.shape == (20, 30)
    assert is_nested(clean)
    assert clean.sum() == round(density * 600)
    assert np.count_nonzero(X != clean) == round(noise * clean.sum())
    assert_array_equal(
        make_nested_matrix(20, 30, density=density, noise=noise, random_state=0), X
    )


def test_make_nested_matrix_errors():
    with pytest.raises(ValueError, match="flips"):
        make_nested_matrix(3, 3, density=1.0, noise=2.0)
    with pytest.raises(ValueError, match="density"):
        make_nested_matrix(3, 3, density=1.5)
    assert make_nested_matrix(3, 4, density=0.0).sum() == 0
