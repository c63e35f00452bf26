import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from _family import check_binary_matrix, check_tau
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays


@pytest.mark.parametrize(
    "X",
    [
        np.array([[1, 0], [0, 1]], dtype=bool),
        np.array([[1, 0], [0, 1]], dtype=np.int64),
        np.array([[1, 0], [0, 1]], dtype=np.uint8),
        np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32),
        [[1, 0], [0, 1]],
        pd.DataFrame({"a": [1, 0], "b": [0, 1]}),
        np.array([[1, 0], [0, 1]], dtype=object),
    ],
)
def test_accepted_dense_inputs(X):
    out = check_binary_matrix(X)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, np.eye(2))


def test_sparse_input_dense_or_csr():
    X = sp.csr_matrix(np.eye(3))
    np.testing.assert_array_equal(check_binary_matrix(X), np.eye(3))
    out = check_binary_matrix(sp.coo_array(np.eye(3)), accept_sparse=True)
    assert sp.issparse(out)
    np.testing.assert_array_equal(out.toarray(), np.eye(3))


def test_non_binary_message_counts_and_shows_one():
    X = np.zeros((3, 4))
    X[1, 2] = 0.7
    X[2, 3] = 2
    with pytest.raises(
        ValueError, match=r"2 entries are not 0 or 1, e.g. X\[1, 2\] = "
    ):
        check_binary_matrix(X)
    with pytest.raises(ValueError, match=r"1 entries are not 0 or 1.*\[0, 1\] = 3"):
        check_binary_matrix(sp.csr_matrix(np.array([[0, 3], [1, 0]])))
    with pytest.raises(ValueError, match="not binary"):
        check_binary_matrix(np.array([[-1, 0]]))


def test_missing_entries():
    X = np.array([[1.0, np.nan], [0.0, 1.0]])
    with pytest.raises(ValueError, match=r"1 missing entries \(NaN\), e.g. X\[0, 1\]"):
        check_binary_matrix(X)
    with pytest.raises(ValueError, match="method='rsvd' does not support missing"):
        check_binary_matrix(X, method="rsvd")
    out = check_binary_matrix(X, allow_missing=True)
    assert np.isnan(out[0, 1]) and out[1, 1] == 1


@pytest.mark.parametrize(
    "X, err, match",
    [
        (np.array([[1.0, np.inf]]), ValueError, "infinite"),
        (np.zeros((0, 3)), ValueError, "0 sample"),
        (np.zeros((3, 0)), ValueError, "0 feature"),
        (np.array([1, 0, 1]), ValueError, "2-D"),
        (np.zeros((2, 2, 2)), ValueError, "2-D"),
        (np.array([["a", "b"]], dtype=object), TypeError, "number"),
        (np.array([["1", "x"]]), TypeError, "number"),
    ],
)
def test_bad_inputs(X, err, match):
    with pytest.raises(err, match=match):
        check_binary_matrix(X)


@pytest.mark.parametrize(
    "tau, err",
    [(np.nan, ValueError), (np.inf, ValueError), ("0.5", TypeError), (True, TypeError)],
)
def test_bad_tau(tau, err):
    with pytest.raises(err, match="tau"):
        check_tau(tau)


@given(
    arrays(
        np.float64,
        st.tuples(st.integers(1, 6), st.integers(1, 6)),
        elements=st.sampled_from([0.0, 1.0, np.nan]),
    )
)
def test_validation_never_mutates(X):
    before = X.copy()
    out = check_binary_matrix(X, allow_missing=True)
    np.testing.assert_array_equal(X, before)
    assert not np.shares_memory(out, X)
    out[...] = 5  # writing to the result must not reach the input
    np.testing.assert_array_equal(X, before)


def test_a_bunch_is_refused_with_the_fix():
    # the loaders return a Bunch; its data is what the doors take
    from sklearn_rrank import (
        NestedApprox,
        RoundingRankCV,
        RoundingRankFactorization,
        rounding_rank_bounds,
    )
    from sklearn_rrank.datasets import load_digits_binary

    bunch = load_digits_binary()
    doors = [
        lambda: rounding_rank_bounds(bunch, methods=("spectral",)),
        lambda: RoundingRankFactorization(2, method="rsvd").fit(bunch),
        lambda: RoundingRankCV(RoundingRankFactorization(method="rsvd")).fit(bunch),
        lambda: NestedApprox().fit(bunch),
        lambda: check_binary_matrix(bunch),
    ]
    for door in doors:
        with pytest.raises(TypeError, match=r"pass bunch\.data.*return_X_y=True"):
            door()
    with pytest.raises(TypeError, match="dict, not a matrix"):
        check_binary_matrix({"a": [1, 0]})
