"""Hypothesis strategies shared by the tests of the nested-matrix modules.

Used by ``test_nested.py``, ``test_nested_approx.py`` and ``test_nestedness.py``.
"""

from hypothesis import strategies as st

binary_matrices = st.integers(1, 6).flatmap(
    lambda m: st.integers(1, 6).flatmap(
        lambda n: st.lists(
            st.lists(st.integers(0, 1), min_size=n, max_size=n),
            min_size=m,
            max_size=m,
        )
    )
)
