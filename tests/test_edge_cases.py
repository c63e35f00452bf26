"""Regression tests of the edge-case catalogue: each reproducer of a defect found by
fuzzing (crashes, memory, mutation, rounding at tau on the data's values, consistency
between doors), kept so that it cannot come back."""

import numpy as np
import pandas as pd
import pytest
import scipy.io
import scipy.sparse as sp
from _family import rrank as main

from sklearn_rrank import (
    NestedApprox,
    RoundingRankCV,
    RoundingRankFactorization,
    certify_rounding,
    config_context,
    nestedness_temperature,
    rounding_rank_bounds,
)
from sklearn_rrank.datasets import load_binary_matrix

FIT_METHODS = ("rsvd", "lpca", "projlp", "asso")


# -- 1. all-zero input reaches no ARPACK call --------------------------------------
@pytest.mark.parametrize("shape", [(3, 3), (5, 4), (12, 30)])
def test_nested_rsvd_on_all_zeros(shape):
    est = NestedApprox(method="rsvd").fit(np.zeros(shape))
    assert est.reconstruction_err_ == 0


def test_cli_nested_rsvd_on_all_zeros(tmp_path, capsys):
    path = tmp_path / "zeros.csv"
    np.savetxt(path, np.zeros((4, 5)), delimiter=",", fmt="%d")
    assert main(["nested", str(path), "--method", "rsvd"]) == 0


@pytest.mark.parametrize("method", FIT_METHODS)
def test_every_fit_on_all_zeros(method):
    est = RoundingRankFactorization(1, method=method, random_state=0)
    est.fit(np.zeros((6, 5)))
    assert est.reconstruction_err_ == 0


# -- 2. loaders: clear errors, quickly, with little memory --------------------------
def _write(tmp_path, name, text, encoding="utf-8"):
    path = tmp_path / name
    path.write_text(text, encoding=encoding)
    return path


@pytest.mark.parametrize(
    "name, text, match",
    [
        ("big.fimi", "0 100000000000000000000000000\n", "too large"),
        ("empty.fimi", "", "empty.fimi.*no ones"),
        ("blank.fimi", "\n\n  \n", "blank.fimi.*no ones"),
        (
            "header.mtx",
            "%%MatrixMarket matrix coordinate real general\n3 3 10000000000\n1 1 1\n",
            "declares 10,000,000,000 entries",
        ),
    ],
)
def test_malformed_files_raise_value_error(tmp_path, name, text, match):
    path = _write(tmp_path, name, text)
    with pytest.raises(ValueError, match=match):
        load_binary_matrix(path)


def test_sparse_loading_is_guarded_by_memory(tmp_path):
    path = _write(
        tmp_path,
        "tall.mtx",
        "%%MatrixMarket matrix coordinate real general\n1000000000 1 1\n1 1 1\n",
    )
    with config_context(memory_limit=2**30):  # the check is machine-independent
        with pytest.raises(ValueError, match="sparse 1000000000 x 1 matrix"):
            load_binary_matrix(path, sparse=True)


def test_huge_sparse_input_is_refused_at_the_door():
    X = sp.csr_matrix((np.ones(1), ([0], [5])), shape=(1, 10**9))
    with config_context(memory_limit=2**30):  # the check is machine-independent
        with pytest.raises(ValueError, match="1 x 1000000000"):
            rounding_rank_bounds(X)
        with pytest.raises(ValueError, match="1 x 1000000000"):
            RoundingRankFactorization(1, method="rsvd").fit(X)


def test_utf8_bom_csv_is_read(tmp_path):
    path = _write(tmp_path, "bom.csv", "1,0\n0,1\n", encoding="utf-8-sig")
    np.testing.assert_array_equal(load_binary_matrix(path), np.eye(2))


def test_complex_matrix_market_is_one_line(tmp_path):
    path = tmp_path / "c.mtx"
    scipy.io.mmwrite(path, np.array([[1 + 1j, 0], [0, 1]]))
    with pytest.raises(ValueError, match="complex") as info:
        load_binary_matrix(path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "name, text",
    [
        ("big.fimi", "0 100000000000000000000000000\n"),
        ("e.fimi", ""),
        ("h.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 10000000000\n"),
    ],
)
def test_cli_bad_files_exit_2_with_one_line(tmp_path, capsys, name, text):
    path = _write(tmp_path, name, text)
    assert main(["bounds", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rrank: error:") and "\n" not in err


# -- 3. the caller's sparse matrix is never modified --------------------------------
def _messy_csr():
    """3 x 4 CSR with unsorted indices, a duplicate (1 + 0) and an explicit zero."""
    data = np.array([1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0])
    indices = np.array([3, 0, 0, 2, 1, 3, 0], dtype=np.int32)
    indptr = np.array([0, 3, 5, 7], dtype=np.int32)
    X = sp.csr_matrix((data, indices, indptr), shape=(3, 4))
    X.has_sorted_indices = False
    return X


def _snapshot(X):
    return X.data.copy(), X.indices.copy(), X.indptr.copy()


def _assert_untouched(X, snap):
    for got, want in zip(_snapshot(X), snap, strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("method", FIT_METHODS)
def test_estimator_never_modifies_sparse_input(method):
    X = _messy_csr()
    snap = _snapshot(X)
    est = RoundingRankFactorization(2, method=method, random_state=0)
    est.fit(X)
    _assert_untouched(X, snap)
    est.fit_transform(X)
    _assert_untouched(X, snap)
    est.transform(X)
    est.score(X)
    _assert_untouched(X, snap)


@pytest.mark.parametrize(
    "method", ["spectral", "vc", "rank_one", "rsvd", "lpca", "projlp", "asso"]
)
def test_bounds_never_modify_sparse_input(method):
    X = _messy_csr()
    snap = _snapshot(X)
    rounding_rank_bounds(X, methods=(method,), random_state=0)
    _assert_untouched(X, snap)


def test_other_doors_never_modify_sparse_input():
    X = _messy_csr()
    snap = _snapshot(X)
    RoundingRankCV(RoundingRankFactorization(method="rsvd"), mode="exact").fit(X)
    certify_rounding(X, np.ones((3, 1)), np.ones((4, 1)))
    NestedApprox(method="rsvd").fit(X)
    _assert_untouched(X, snap)


def test_duplicate_entries_that_sum_past_one_are_rejected():
    X = sp.csr_matrix((np.ones(2), np.array([1, 1]), np.array([0, 2, 2])), (2, 2))
    with pytest.raises(ValueError, match="not binary"):
        rounding_rank_bounds(X)


# -- 4. a threshold on the data's own values ---------------------------------------
EXTREME = [
    (np.ones((7, 9)), 1, 1.0),
    (np.array([[0, 1, 1, 1], [0, 0, 0, 0], [0, 0, 0, 1], [0, 1, 0, 1]]), 3, 1.0),
    (np.zeros((5, 21)), 1, 0.0),
    (np.ones((5, 21)), 1, 0.0),
]
# ProjLP's random projection of the identity may be singular at any tau: the
# identity cases check the SVD and L-PCA only
EYE = [(np.eye(4), 4, -0.5), (np.eye(4), 4, 2.0)]


@pytest.mark.parametrize(
    "X, k, tau, method",
    [(*case, m) for case in EXTREME for m in ("rsvd", "projlp", "lpca")]
    + [(*case, m) for case in EYE for m in ("rsvd", "lpca")],
)
def test_exact_fits_at_extreme_thresholds(X, k, tau, method):
    est = RoundingRankFactorization(k, method=method, tau=tau, random_state=0)
    L = est.fit_transform(X)
    assert est.reconstruction_err_ == 0
    np.testing.assert_array_equal(est.inverse_transform(L), X)


# Asso needs 0 < tau <= 1 (Boolean factors): it is not run at tau = 0
@pytest.mark.parametrize(
    "method, tau",
    [
        (m, t)
        for m in FIT_METHODS
        for t in (0.0, 0.25, 0.5, 1.0)
        if not (m == "asso" and t == 0.0)
    ],
)
@pytest.mark.parametrize("seed", range(4))
def test_reported_error_equals_the_recount(method, tau, seed):
    rng = np.random.RandomState(seed)
    X = (rng.rand(14, 11) < 0.35).astype(float)
    est = RoundingRankFactorization(3, method=method, tau=tau, random_state=seed)
    L = est.fit_transform(X)
    recount = int((est.inverse_transform(L) != X).sum())
    assert est.reconstruction_err_ == recount
    again = int((est.inverse_transform(est.transform(X)) != X).sum())
    assert again <= est.reconstruction_err_


# -- 5. RoundingRankCV reports instead of raising ----------------------------------
def test_cv_without_certificate_reports_best_k():
    # the candidates lie below the rounding rank of the identity (3): none certifies
    est = RoundingRankFactorization(method="rsvd")
    cv = RoundingRankCV(est, n_components=[1, 2], mode="exact").fit(np.eye(3))
    assert cv.certified_ is False
    assert cv.n_components_ == min(cv.errors_, key=lambda k: (cv.errors_[k], k))
    assert cv.best_estimator_.n_components_ == cv.n_components_


def test_cv_at_tau_one_certifies():
    cv = RoundingRankCV(RoundingRankFactorization(method="rsvd", tau=1.0), mode="exact")
    cv.fit(np.eye(3))
    assert cv.certified_ and cv.n_components_ == 3


# -- 6. transform of the training rows reproduces the fit or does better ------------
def test_asso_transform_reproduces_fit():
    X = np.array(
        [
            [0, 1, 1, 1, 0],
            [0, 0, 1, 0, 1],
            [1, 0, 1, 0, 0],
            [0, 1, 1, 0, 1],
            [0, 1, 1, 1, 0],
        ]
    )
    est = RoundingRankFactorization(5, method="asso").fit(X)
    assert est.reconstruction_err_ == 0
    assert (est.inverse_transform(est.transform(X)) != X).sum() == 0


@pytest.mark.parametrize("seed", range(6))
def test_asso_transform_never_worse_than_fit(seed):
    rng = np.random.RandomState(seed)
    X = (rng.rand(14, 15) < 0.4).astype(int)
    X[7] = X[2]  # a repeated row
    est = RoundingRankFactorization(4, method="asso").fit(X)
    errors = int((est.inverse_transform(est.transform(X)) != X).sum())
    assert errors <= est.reconstruction_err_


# -- 7. text is rejected at every door ----------------------------------------------
TEXT = [
    np.array([["1", "0"], ["0", "1"]], dtype=object),
    pd.DataFrame(np.eye(2, dtype=int)).astype(str),
]


@pytest.mark.parametrize("X", TEXT)
def test_text_rejected_at_every_door(X):
    with pytest.raises(TypeError, match="text"):
        rounding_rank_bounds(X)
    with pytest.raises(TypeError, match="text"):
        RoundingRankFactorization(1).fit(X)
    with pytest.raises(TypeError, match="text"):
        certify_rounding(X, np.ones((2, 1)), np.ones((2, 1)))


# -- 8. messages -------------------------------------------------------------------
def test_pd_na_is_a_missing_entry():
    X = np.array([[1, pd.NA], [0, 1]], dtype=object)
    with pytest.raises(ValueError, match="missing entries"):
        RoundingRankFactorization(1, method="rsvd").fit(X)
    RoundingRankFactorization(1, method="lpca", random_state=0).fit(X)


def test_missing_entry_message_names_only_estimator_methods():
    with pytest.raises(ValueError, match="missing") as info:
        RoundingRankFactorization(1, method="rsvd").fit([[1, np.nan], [0, 1]])
    assert "nuclear" not in str(info.value)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"rsvd": 3}, "must be a dict"),
        ({"rsvd": {"max_rank": -1}}, "max_rank"),
        ({"projlp": {"projection": "nope"}}, "projection"),
        ({"lpca": {"fit_bias": "zzz"}}, "fit_bias"),
        ({"nuclear": {"rule": "nope"}}, "rule"),
    ],
)
def test_bad_method_params_values_at_bounds(params, match):
    with pytest.raises((ValueError, TypeError), match=match):
        rounding_rank_bounds(np.eye(3), methods=tuple(params), method_params=params)


@pytest.mark.parametrize(
    "method, params, match",
    [
        ("lpca", {"dtype": "int8"}, "dtype"),
        ("lpca", {"solver": "zzz"}, "solver"),
        ("lpca", {"alpha": -1}, "alpha"),
        ("projlp", {"eps": -1.0}, "eps"),
        ("asso", {"threshold": 2.0}, "threshold"),
    ],
)
def test_bad_method_params_values_at_the_estimator(method, params, match):
    est = RoundingRankFactorization(1, method=method, method_params=params)
    with pytest.raises((ValueError, TypeError), match=match):
        est.fit(np.eye(3))


def test_bounds_repr_shows_shapes_not_factors():
    rng = np.random.RandomState(0)
    res = rounding_rank_bounds(rng.randint(0, 2, (30, 30)), methods=("rsvd",))
    text = repr(res)
    assert len(text) < 400 and f"L=<array {res.L.shape}>" in text


# -- 9. nestedness temperature of a perfectly nested matrix -------------------------
def test_temperature_of_a_nested_matrix_is_not_zero():
    X = [[1, 1, 1, 1, 1, 1], [1, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0]]
    assert nestedness_temperature(X) == pytest.approx(10.2539, abs=1e-3)


# -- the documented one-shot ProjLP is reachable from the estimator -----------------
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_projlp_one_shot_from_the_estimator():
    rng = np.random.RandomState(0)
    X = (rng.rand(20, 15) < 0.4).astype(float)
    one_shot = RoundingRankFactorization(3, method="projlp", max_iter=0, random_state=0)
    refined = RoundingRankFactorization(3, method="projlp", random_state=0)
    assert one_shot.fit(X).reconstruction_err_ >= refined.fit(X).reconstruction_err_
