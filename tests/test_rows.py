"""Identical rows: the one helper every merge of equal rows uses."""

import numpy as np
import scipy.sparse as sp
from _family import row_classes
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays


def _brute_force(X):
    """Classes by comparing every row with the first rows of the classes so far."""
    first, owner = [], []
    for i, row in enumerate(X):
        for c, j in enumerate(first):
            if np.array_equal(row, X[j], equal_nan=True):
                owner.append(c)
                break
        else:
            owner.append(len(first))
            first.append(i)
    counts = np.bincount(owner, minlength=len(first)).astype(float)
    return np.array(first), counts, np.array(owner)


_entries = st.sampled_from([0.0, 1.0, np.nan])


@given(
    arrays(
        np.float64, st.tuples(st.integers(0, 12), st.integers(0, 5)), elements=_entries
    )
)
def test_row_classes_are_those_of_a_brute_force_comparison(X):
    expected = _brute_force(X)
    for given_X in (X, sp.csr_matrix(X)):
        first, counts, owner = row_classes(given_X)
        np.testing.assert_array_equal(first, expected[0].astype(np.int64))
        np.testing.assert_array_equal(counts, expected[1])
        np.testing.assert_array_equal(owner, expected[2].astype(np.int64))


def test_a_prefix_splits_equal_rows_and_explicit_zeros_do_not():
    X = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    prefix = np.array([[0.5], [0.5], [2.0]])
    first, counts, owner = row_classes(X, prefix=prefix)
    assert first.tolist() == [0, 2] and owner.tolist() == [0, 0, 1]
    S = sp.csr_matrix(([1.0, 0.0], ([0, 1], [0, 0])), shape=(2, 2))  # a stored 0
    assert row_classes(S)[2].tolist() == [0, 1]
    assert row_classes(sp.csr_matrix(np.eye(2)[[0, 0]]))[2].tolist() == [0, 0]
