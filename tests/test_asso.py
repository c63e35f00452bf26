"""Tests for Asso (sklearn_rrank._upper._asso): Boolean factorisation as rounding
rank."""

import numpy as np
import pytest
import scipy.sparse as sp
from _family import THRESHOLD_GRID, _count_errors_factors, asso_fit, asso_transform
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sklearn_rrank import (
    RoundingRankFactorization,
    certify_rounding,
    rounding_rank_bounds,
)

HAND = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 1, 1]])


def boolean_product(S, B):
    """OR_l (S_il AND B_lj), computed with logical operations only."""
    S = np.asarray(S, dtype=bool)
    B = np.asarray(B, dtype=bool)
    return np.any(S[:, :, None] & B[None, :, :], axis=1)


def naive_asso(C, k, threshold, w_plus=1.0, w_minus=1.0, strict=False):
    """Literal transcription of the pseudocode of ALGORITHMS.md, Section 2.3.

    Recomputes the full gain matrix P @ Cand.T at every step (no incremental updates,
    no sparse products): the oracle for the fast implementation.
    """
    C = np.asarray(C, dtype=bool)
    m, n = C.shape
    Co = C.T.astype(float) @ C.astype(float)
    d = np.diag(Co)
    A = np.zeros((n, n))
    for i in range(n):
        if d[i] > 0:
            A[i] = Co[i] / d[i]
    cand = A > threshold if strict else A >= threshold
    covered = np.zeros((m, n), dtype=bool)
    S = np.zeros((m, k), dtype=bool)
    B = np.zeros((k, n), dtype=bool)
    for step in range(k):
        P = w_plus * (C & ~covered) - w_minus * (~C & ~covered)
        G = P @ cand.T.astype(float)
        total = np.maximum(G, 0).sum(axis=0)
        best = int(np.argmax(total))
        if total[best] <= 0:
            break
        S[:, step] = G[:, best] > 0
        B[step] = cand[best]
        covered |= np.outer(S[:, step], B[step])
    return S, B


# ---------------------------------------------------------------- hand example 2.6


def test_hand_example_threshold_06():
    res = asso_fit(HAND, 2, threshold=0.6)
    np.testing.assert_array_equal(res.R.T, [[1, 1, 0, 0], [0, 0, 1, 1]])
    np.testing.assert_array_equal(res.L, [[1, 0], [1, 1], [0, 1]])
    assert res.info["boolean_error"] == 0
    assert res.info["threshold"] == 0.6
    assert res.n_iter == 2
    assert certify_rounding(HAND, res.L, res.R, tau=0.5)


def test_hand_example_threshold_04():
    res = asso_fit(HAND, 2, threshold=0.4, orientation="columns")
    np.testing.assert_array_equal(res.R.T, [[1, 1, 1, 1], [0, 0, 0, 0]])
    np.testing.assert_array_equal(res.L, [[0, 0], [1, 0], [0, 0]])
    assert res.info["boolean_error"] == 4
    assert res.info["n_nonempty"] == 1
    assert not certify_rounding(HAND, res.L, res.R)


def test_hand_example_grid_finds_exact_fit():
    res = asso_fit(HAND, 2, orientation="columns")
    assert res.info["boolean_error"] == 0
    errors = res.info["errors_by_threshold"]
    assert {f"columns:{t:.2f}" for t in THRESHOLD_GRID} <= set(errors)
    assert errors[f"columns:{res.info['threshold']:.2f}"] == min(errors.values())
    # cross confidences are exactly 1/2: thresholds <= 1/2 merge everything
    assert errors["columns:0.50"] == 4 and errors["columns:0.55"] == 0


def test_orientation_auto_keeps_the_better_and_refines(digits150):
    cols = asso_fit(digits150, 10, orientation="columns")
    auto = asso_fit(digits150, 10)
    assert auto.info["boolean_error"] <= cols.info["boolean_error"]
    # the fine grid (steps of 0.01) is searched around the best coarse threshold
    assert any(
        k.endswith((".01", ".02", ".03", ".04")) or k[-1] not in "05"
        for k in auto.info["errors_by_threshold"]
    )
    errors = int(np.sum(boolean_product(auto.L, auto.R.T) != digits150))
    assert errors == auto.info["boolean_error"]


def test_strict_flag_matters_at_ties():
    # confidences of the hand example are 1 and 1/2 exactly
    non_strict = asso_fit(HAND, 2, threshold=0.5, strict=False, orientation="columns")
    strict = asso_fit(HAND, 2, threshold=0.5, strict=True, orientation="columns")
    assert non_strict.info["boolean_error"] == 4
    assert strict.info["boolean_error"] == 0
    # strict with threshold 1 leaves every candidate empty
    empty = asso_fit(HAND, 2, threshold=1.0, strict=True)
    assert empty.info["n_nonempty"] == 0
    assert not empty.L.any() and not empty.R.any()
    assert empty.info["boolean_error"] == HAND.sum()


# ------------------------------------------------------------ Boolean product lemma


@settings(max_examples=60, deadline=None)
@given(
    S=arrays(
        np.int8,
        st.tuples(st.integers(1, 7), st.integers(1, 5)),
        elements=st.integers(0, 1),
    ),
    n=st.integers(1, 7),
    seed=st.integers(0, 2**16),
    tau=st.sampled_from([0.5, 1.0, 0.01, 0.75]),
)
def test_rounding_of_real_product_is_boolean_product(S, n, seed, tau):
    B = np.random.default_rng(seed).integers(0, 2, size=(S.shape[1], n))
    real = S.astype(float) @ B.astype(float)
    np.testing.assert_array_equal(real >= tau, boolean_product(S, B))
    X = boolean_product(S, B).astype(int)
    # ... hence binary factors of an exact Boolean factorisation are a certificate,
    # except at tau = 1 where singly covered ones sit exactly on tau (no margin):
    # doubling L restores the margin without changing the rank
    L, R = S.astype(float), B.T.astype(float)
    if tau < 1:
        assert certify_rounding(X, L, R, tau=tau)
    assert certify_rounding(X, 2 * L, R, tau=tau)


# ------------------------------------------------------------ oracle comparisons


@settings(max_examples=40, deadline=None)
@given(
    X=arrays(
        np.int8,
        st.tuples(st.integers(1, 9), st.integers(1, 8)),
        elements=st.integers(0, 1),
    ),
    k=st.integers(1, 5),
    threshold=st.sampled_from([0.2, 1 / 3, 0.5, 0.6, 0.75, 1.0]),
    weights=st.sampled_from(
        [(1.0, 1.0), (2.0, 1.0), (1.0, 3.0), (1.5, 0.5), (1.0, 0.0)]
    ),
    strict=st.booleans(),
)
def test_matches_naive_pseudocode(X, k, threshold, weights, strict):
    w_plus, w_minus = weights
    res = asso_fit(
        X,
        k,
        threshold=threshold,
        bonus_covered=w_plus,
        penalty_overcovered=w_minus,
        strict=strict,
        orientation="columns",
    )
    S, B = naive_asso(X, k, threshold, w_plus, w_minus, strict)
    np.testing.assert_array_equal(res.L, S)
    np.testing.assert_array_equal(res.R, B.T)
    assert res.info["boolean_error"] == int(np.sum(boolean_product(S, B) != X))


def test_hundred_random_matrices_certified():
    """100 random small matrices: outputs binary, errors consistent, bounds certified.

    With the confidence threshold 1 (non-strict) every candidate i is the set of
    columns containing column i, so rows of column i never cover a zero; with a
    penalty larger than any possible gain no zero is ever covered, each step exhausts
    one candidate, and k = n_features steps give an exact Boolean factorisation,
    i.e. a certified rounding-rank bound rank <= n_nonempty.
    """
    rng = np.random.default_rng(12345)
    for _ in range(100):
        m, n = rng.integers(2, 11), rng.integers(2, 9)
        X = (rng.random((m, n)) < rng.uniform(0.1, 0.8)).astype(np.uint8)
        res = asso_fit(X, 3)
        for M in (res.L, res.R):
            assert M.dtype == np.float64
            assert set(np.unique(M)) <= {0.0, 1.0}
        err = res.info["boolean_error"]
        assert err == _count_errors_factors(X.astype(float), res.L, res.R, 0.5)
        assert err == np.sum(boolean_product(res.L, res.R.T) != X)
        assert certify_rounding(X, res.L, res.R) == (err == 0)

        exact = asso_fit(X, n, threshold=1.0, penalty_overcovered=float(m * n + 1))
        assert exact.info["boolean_error"] == 0
        kept = exact.R.any(axis=0)
        L, R = exact.L[:, kept], exact.R[:, kept]
        assert L.shape[1] == exact.info["n_nonempty"] <= n
        assert certify_rounding(X, L, R, tau=0.5)
        assert certify_rounding(X, L, R, tau=0.99)
        # rrank >= 1 whenever X has a one (tau > 0), and Asso needs at least that
        assert (L.shape[1] >= 1) == bool(X.any())


# ------------------------------------------------------------ transform


@pytest.mark.parametrize("seed", range(5))
def test_transform_reproduces_training_usage(seed):
    rng = np.random.default_rng(seed)
    X = (rng.random((30, 12)) < 0.3).astype(np.uint8)
    res = asso_fit(X, 4, bonus_covered=2.0, penalty_overcovered=1.0)
    L = asso_transform(X, res.R, bonus_covered=2.0, penalty_overcovered=1.0)
    np.testing.assert_array_equal(L, res.L)


def test_transform_new_rows():
    R = np.array([[1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 0, 0]]).T
    X_new = np.array([[1, 1, 1, 1], [1, 0, 0, 0], [1, 1, 0, 1], [0, 0, 0, 0]])
    L = asso_transform(X_new, R)
    np.testing.assert_array_equal(L, [[1, 1, 0], [0, 0, 0], [1, 0, 0], [0, 0, 0]])
    # a cheaper penalty makes row 1 use the first basis vector
    L2 = asso_transform(X_new, R, penalty_overcovered=0.5)
    np.testing.assert_array_equal(L2[1], [1, 0, 0])
    np.testing.assert_array_equal(
        asso_transform(sp.csr_matrix(X_new), R, penalty_overcovered=0.5), L2
    )


def test_transform_validation():
    R = np.array([[1, 0], [0, 1], [1, 1]])
    with pytest.raises(ValueError, match="R must have shape"):
        asso_transform(np.ones((2, 4)), R)
    with pytest.raises(ValueError, match="R is not binary"):
        asso_transform(np.ones((2, 3)), R * 0.5)
    with pytest.raises(ValueError, match="'tau' parameter"):
        asso_transform(np.ones((2, 3)), R, tau=0)


# ------------------------------------------------------------ inputs and options


def test_sparse_and_dense_agree_and_input_not_modified():
    rng = np.random.default_rng(3)
    X = (rng.random((40, 15)) < 0.2).astype(np.uint8)
    X_copy = X.copy()
    dense = asso_fit(X, 5)
    sparse = asso_fit(sp.csr_matrix(X), 5)
    np.testing.assert_array_equal(dense.L, sparse.L)
    np.testing.assert_array_equal(dense.R, sparse.R)
    np.testing.assert_array_equal(X, X_copy)


def test_n_jobs_does_not_change_result():
    rng = np.random.default_rng(4)
    X = (rng.random((25, 10)) < 0.3).astype(np.uint8)
    a = asso_fit(X, 3, n_jobs=1)
    b = asso_fit(X, 3, n_jobs=2)
    np.testing.assert_array_equal(a.L, b.L)
    np.testing.assert_array_equal(a.R, b.R)
    assert a.info["errors_by_threshold"] == b.info["errors_by_threshold"]


def test_empty_columns_and_zero_matrix():
    X = np.array([[1, 0, 1], [1, 0, 0], [0, 0, 1]])
    res = asso_fit(X, 3, threshold=0.5)
    assert not res.R[1].any()  # the empty column is in no basis vector
    zero = asso_fit(np.zeros((3, 4)), 2)
    assert zero.info["boolean_error"] == 0 and zero.info["n_nonempty"] == 0
    assert zero.L.shape == (3, 2) and zero.R.shape == (4, 2)


def test_more_components_than_needed_leaves_empty_vectors():
    res = asso_fit(HAND, 5, threshold=0.6)
    assert res.info["n_nonempty"] == 2
    assert not res.R[:, 2:].any() and not res.L[:, 2:].any()


def test_verbose_prints(capsys):
    asso_fit(HAND, 2, threshold=0.6, verbose=2)
    out = capsys.readouterr().out
    assert "[asso] threshold=0.60 step 1" in out
    assert "[asso] threshold=0.60: error 0" in out


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"tau": 0.0}, ValueError, "'tau' parameter"),
        ({"tau": 1.5}, ValueError, "'tau' parameter"),
        ({"tau": -0.5}, ValueError, "'tau' parameter"),
        ({"tau": "a"}, TypeError, "'tau' parameter"),
        ({"threshold": 0.0}, ValueError, "threshold"),
        ({"threshold": 1.01}, ValueError, "threshold"),
        ({"threshold": "0.5"}, TypeError, "threshold"),
        ({"bonus_covered": 0.0}, ValueError, "bonus_covered"),
        ({"penalty_overcovered": -1.0}, ValueError, "penalty_overcovered"),
        ({"penalty_overcovered": np.inf}, ValueError, "penalty_overcovered"),
    ],
)
def test_parameter_validation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        asso_fit(HAND, 2, **kwargs)


def test_data_validation():
    with pytest.raises(ValueError, match="'n_components' parameter"):
        asso_fit(HAND, 0)
    with pytest.raises(TypeError, match="'n_components' parameter"):
        asso_fit(HAND, 2.0)
    with pytest.raises(ValueError, match="not binary"):
        asso_fit(HAND * 2, 2)
    with pytest.raises(ValueError, match="missing"):
        asso_fit(np.where(HAND == 1, np.nan, 0.0), 2)


@pytest.mark.parametrize(
    "params",
    [
        {"threshold": 1.5},
        {"bonus_covered": 0.0},
        {"penalty_overcovered": -1.0},
        {"strict": "yes"},
        {"orientation": "diagonal"},
    ],
)
def test_every_door_names_the_bad_method_parameter(params):
    # ASSO_PARAMS is declared once: asso_fit, method_params of the bounds and of
    # the estimator all reject the value and name the parameter
    (name,) = params
    with pytest.raises((ValueError, TypeError), match=f"'{name}' parameter"):
        asso_fit(HAND, 2, **params)
    with pytest.raises((ValueError, TypeError), match=f"'{name}' parameter"):
        rounding_rank_bounds(HAND, methods=("asso",), method_params={"asso": params})
    est = RoundingRankFactorization(2, method="asso", method_params=params)
    with pytest.raises((ValueError, TypeError), match=f"'{name}' parameter"):
        est.fit(HAND)


@pytest.mark.parametrize("tau", [0.0, 1.5, -0.5])
def test_estimator_rejects_a_tau_asso_cannot_use(tau):
    est = RoundingRankFactorization(2, method="asso", tau=tau)
    with pytest.raises(ValueError, match="'tau' parameter of RoundingRankFact"):
        est.fit(HAND)
    # the bounds portfolio skips Asso at such a tau, with a message
    b = rounding_rank_bounds(HAND, methods=("asso",), tau=tau)
    assert "Asso needs 0 < tau <= 1" in b.report[0]["message"]
