import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sklearn_rrank import certify_rounding, round_matrix, rounding_error


def test_round_matrix_uses_greater_equal():
    A = np.array([[0.5, 0.4999999], [1.0, -3.0]])
    np.testing.assert_array_equal(round_matrix(A), [[1, 0], [1, 0]])
    np.testing.assert_array_equal(round_matrix(A, tau=-3.0), [[1, 1], [1, 1]])
    assert round_matrix(A).dtype == np.uint8


def test_round_matrix_rejects_nan():
    with pytest.raises(ValueError, match="NaN"):
        round_matrix([[np.nan]])


def test_rounding_error_absolute_relative_and_missing():
    X = np.array([[1, 0, 1], [0, 1, 0]])
    A = np.array([[0.9, 0.6, 0.1], [0.2, 0.5, 0.0]])
    assert rounding_error(X, A) == 2
    assert rounding_error(X, A, relative=True) == pytest.approx(2 / 3)
    Xm = X.astype(float)
    Xm[0, 1] = np.nan  # a missing entry is not counted
    assert rounding_error(Xm, A) == 1
    # a binary A is compared as it is, whatever tau
    assert rounding_error(X, X, tau=5.0) == 0
    assert rounding_error(np.zeros((2, 2)), np.ones((2, 2)), relative=True) == np.inf
    with pytest.raises(ValueError, match="shape"):
        rounding_error(X, A[:, :2])


def test_certify_rounding_hand_examples():
    X = np.array([[1, 1], [1, 0]])
    L = np.array([[2.0], [1.0]])
    assert certify_rounding(X, L, np.array([[1.0], [0.4]]))
    # an entry exactly at tau rounds to 1 but is not accepted as certified
    assert not certify_rounding(X, L, np.array([[1.0], [0.5]]))
    ok, n_failed = certify_rounding(X, L, np.array([[1.0], [0.5]]), return_count=True)
    assert not ok and n_failed == 1
    # within the relative margin of tau: rejected
    assert not certify_rounding([[1]], [[0.5 + 1e-12]], [[1.0]])
    assert certify_rounding([[1]], [[0.5 + 1e-6]], [[1.0]])
    # missing entries are not checked; sparse input works
    assert certify_rounding([[np.nan, 0.0]], [[1.0]], [[9.0], [0.0]])
    assert certify_rounding(sp.csr_matrix(X), L, np.array([[1.0], [0.4]]))


def test_certify_rounding_zero_rank_and_tau_zero():
    assert certify_rounding(np.zeros((2, 3)), np.zeros((2, 0)), np.zeros((3, 0)))
    # tau = 0: an exact zero product rounds to one and is exactly representable
    assert certify_rounding(np.ones((2, 2)), np.zeros((2, 1)), np.ones((2, 1)), tau=0)
    assert not certify_rounding(
        np.zeros((2, 2)), np.zeros((2, 1)), np.ones((2, 1)), tau=0
    )


def test_certify_rounding_bad_factors():
    X = np.eye(2)
    with pytest.raises(ValueError, match="shapes do not match"):
        certify_rounding(X, np.ones((3, 1)), np.ones((2, 1)))
    with pytest.raises(ValueError, match="finite"):
        certify_rounding(X, np.full((2, 1), np.nan), np.ones((2, 1)))


@given(
    arrays(np.float64, (5, 3), elements=st.floats(-2, 2)),
    arrays(np.float64, (4, 3), elements=st.floats(-2, 2)),
    st.sampled_from([0.5, 0.0, -0.3]),
)
def test_certify_agrees_with_round_matrix(L, R, tau):
    A = L @ R.T
    X = round_matrix(A, tau)
    scale = np.abs(L) @ np.abs(R).T + abs(tau)
    if np.all(np.abs(A - tau) > 1e-6 * scale):  # far from tau: always certified
        assert certify_rounding(X, L, R, tau=tau)
    # a certificate is never wrong: certified implies the rounding matches
    if certify_rounding(X, L, R, tau=tau):
        np.testing.assert_array_equal(round_matrix(A, tau), X)
    # flipping one entry of X can never be certified
    Y = X.copy()
    Y[0, 0] = 1 - Y[0, 0]
    assert not certify_rounding(Y, L, R, tau=tau)
