"""The margin phase of L-PCA: a squared hinge on a working set of entries.

Outcomes only: the working-set objective and gradient are the full hinge's, the
sparse and dense signs agree, a fit with the phase never rounds more entries
wrong than without it, its exact factors certify, a deadline stops it, and its
factors carry no logistic model.
"""

import numpy as np
import pytest
import scipy.optimize
import scipy.sparse as sp
from _family import Deadline, lpca_fit, modules
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_rrank import RoundingRankFactorization, certify_rounding
from sklearn_rrank.datasets import make_rounding_rank_matrix

margin = modules.lpca_margin
model = modules.lpca_model


def _full_hinge(X, U, V, mu, alpha):
    q = 2.0 * X - 1.0
    theta = U @ V.T + (0.0 if mu is None else mu)
    r = np.maximum(0.0, 1.0 - q * theta)
    z = np.concatenate([U.ravel(), V.ravel(), np.ravel([] if mu is None else mu)])
    return float((r * r).sum() + 0.5 * alpha * z @ z)


@pytest.mark.parametrize("offset", ["none", "global", "column"])
def test_working_set_objective_is_the_full_hinge(offset):
    rng = np.random.default_rng(0)
    m, n, p = 30, 20, 3
    X = (rng.random((m, n)) < 0.3).astype(float)
    U, V = rng.normal(size=(m, p)), rng.normal(size=(n, p))
    mu = {"none": None, "global": np.asarray(-0.5), "column": rng.normal(size=n)}
    mu = mu[offset]
    data = model._Data(X)
    rows, cols, signs, _, _ = margin._working_set(data, U, V, mu, 0.0, Deadline(None))
    hinge = margin._Hinge(rows, cols, signs, X.shape, p, mu, 0.1)
    z = np.concatenate([U.ravel(), V.ravel(), np.ravel([] if mu is None else mu)])
    value, grad = hinge(z)
    # every entry of margin below 1 is in the set: the objective is the full one
    assert value == pytest.approx(_full_hinge(X, U, V, mu, 0.1), rel=1e-10)
    error = scipy.optimize.check_grad(lambda v: hinge(v)[0], lambda v: hinge(v)[1], z)
    assert error < 1e-5 * max(1.0, np.abs(grad).max())


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10**6), st.integers(2, 15), st.integers(2, 15))
def test_sparse_signs_at_match_dense(seed, m, n):
    rng = np.random.default_rng(seed)
    X = (rng.random((m, n)) < 0.3).astype(float)
    signs = model._SparseSigns.of(sp.csr_matrix(X))
    i, j = rng.integers(0, m, 50), rng.integers(0, n, 50)
    np.testing.assert_array_equal(signs.at(i, j), (2 * X[i, j] - 1).astype(np.int8))


@pytest.mark.parametrize("fit_bias", [True, False, "global"])
def test_margin_phase_never_adds_wrong_entries(fit_bias):
    X = make_rounding_rank_matrix(60, 40, 3, random_state=1).astype(float)
    kwargs = dict(fit_bias=fit_bias, random_state=0, max_iter=5, stop_when_exact=True)
    plain = lpca_fit(X, 3, **kwargs)
    polished = lpca_fit(X, 3, margin_phase=True, **kwargs)
    assert polished.info["n_errors"] <= plain.info["n_errors"]
    if plain.info["n_errors"]:
        used = polished.info["margin_phase"]["used"]
        assert (polished.model is None) == used
        assert (
            polished.info["margin_phase"]["n_errors_before"] == (plain.info["n_errors"])
        )
    if polished.info["n_errors"] == 0:
        assert certify_rounding(X, polished.L, polished.R)


def test_margin_phase_reaches_exact_where_the_logistic_fit_stops_short():
    # a planted rank-4 matrix: a few logistic sweeps leave entries wrong, the
    # margin phase rounds every entry right, and the factors certify
    X = make_rounding_rank_matrix(120, 80, 4, random_state=0).astype(float)
    kwargs = dict(fit_bias="global", random_state=0, max_iter=3, stop_when_exact=True)
    plain = lpca_fit(X, 4, **kwargs)
    assert plain.info["n_errors"] > 0
    polished = lpca_fit(X, 4, margin_phase=True, **kwargs)
    assert polished.info["n_errors"] == 0
    assert certify_rounding(X, polished.L, polished.R)
    assert polished.model is None


def test_sparse_and_dense_signs_give_the_same_margin_phase():
    X = make_rounding_rank_matrix(50, 40, 3, random_state=2).astype(float)
    rng = np.random.default_rng(0)
    U, V, mu = rng.normal(size=(50, 3)), rng.normal(size=(40, 3)), np.asarray(-1.0)
    out = [
        margin._margin_fit(
            model._Data(Y), U, V, mu, tau=0.5, alpha=1e-4, deadline=Deadline(None)
        )
        for Y in (X, sp.csr_matrix(X))
    ]
    assert out[0][3] == out[1][3]
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])


def test_margin_phase_stops_at_the_deadline():
    X = make_rounding_rank_matrix(60, 40, 5, random_state=3).astype(float)
    data = model._Data(X)
    rng = np.random.default_rng(0)
    U, V = rng.normal(size=(60, 2)), rng.normal(size=(40, 2))
    out = margin._margin_fit(
        data, U, V, np.asarray(-1.0), tau=0.5, alpha=1e-4, deadline=Deadline(0.0)
    )
    U1, V1, mu1, n_wrong, exact = out
    # no pass completed: nothing counted, and the start's rounding is returned
    assert n_wrong is None and not exact
    np.testing.assert_array_equal(U1 @ V1.T + mu1 >= 0, U @ V.T - 1.0 >= 0)


def test_estimator_margin_phase_has_no_probability_model():
    X = make_rounding_rank_matrix(120, 80, 4, random_state=0).astype(float)
    est = RoundingRankFactorization(
        4,
        method="lpca",
        max_iter=3,
        random_state=0,
        method_params={"fit_bias": "global", "margin_phase": True},
    ).fit(X)
    assert est.reconstruction_err_ == 0
    assert est.certified_
    assert not hasattr(est, "predict_proba")


class _CountingDeadline:
    """Expires after ``n`` calls of ``expired()`` (inside an L-BFGS-B round)."""

    limited = True

    def __init__(self, n):
        self.n = n

    def expired(self):
        self.n -= 1
        return self.n < 0


def test_a_deadline_inside_a_round_keeps_the_last_iterate():
    rng = np.random.default_rng(0)
    X = (rng.random((200, 150)) < 0.3).astype(float)
    data = model._Data(X)
    U, V = rng.normal(size=(200, 3)), rng.normal(size=(150, 3))
    chunks = len(list(model._chunks(200, 150)))
    # the first pass's chunk checks, the round's check, then a few iterations
    deadline = _CountingDeadline(chunks + 1 + 3)
    out = margin._margin_fit(
        data, U, V, np.asarray(-1.0), tau=0.5, alpha=1e-4, deadline=deadline
    )
    U1, V1, mu1, n_wrong, exact = out
    assert not exact and n_wrong is not None
    theta = U1 @ V1.T + mu1
    assert n_wrong == int(np.count_nonzero((2 * X - 1) * theta < 0))
