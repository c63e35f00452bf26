import numpy as np
import pytest
import scipy.sparse as sp

from sklearn_rrank import RoundingRankFactorization, certify_rounding, round_matrix
from sklearn_rrank._rsvd import rsvd_error_curve, rsvd_rank_upper_bound, truncated_svd


def _brute_force_curve(X, tau):
    U, s, Vt = np.linalg.svd(X, full_matrices=False)
    out = [int(np.count_nonzero(round_matrix(np.zeros_like(X), tau) != X))]
    for k in range(1, s.size + 1):
        A = (U[:, :k] * s[:k]) @ Vt[:k]
        out.append(int(np.count_nonzero(round_matrix(A, tau) != X)))
    return np.array(out)


@pytest.mark.parametrize("tau", [0.5, 0.2, -0.1])
def test_error_curve_matches_brute_force(rng, tau):
    X = (rng.random((37, 23)) < 0.3).astype(float)
    U, s, Vt = truncated_svd(X)
    np.testing.assert_array_equal(
        rsvd_error_curve(X, U, s, Vt, tau=tau), _brute_force_curve(X, tau)
    )


def test_paleo_matches_paper(paleo):
    # paper Table 2 (R-SVD upper bound 68) and Table 3 (R-SVD errors 0.697/0.516/0.260)
    X = paleo.astype(float)
    res = rsvd_rank_upper_bound(X)
    assert res.rank == 68 and res.certified
    assert certify_rounding(X, res.L, res.R)
    errors = np.array(res.info["errors_by_k"])
    for k, rel in [(5, 0.697), (10, 0.516), (20, 0.260)]:
        assert round(errors[k] / X.sum(), 3) == rel
        est = RoundingRankFactorization(k, method="rsvd").fit(paleo)
        assert round(est.relative_error_, 3) == rel


def test_error_not_monotone_on_apj(apj):
    # the reason the scan is exhaustive: on APJ the error rises from k = 1 to k = 2
    errors = np.array(rsvd_rank_upper_bound(apj.astype(float)).info["errors_by_k"])
    assert errors[2] > errors[1]
    assert np.flatnonzero(errors == 0)[0] == 443


def test_sparse_input_gives_same_bound(rng):
    X = (rng.random((40, 30)) < 0.2).astype(float)
    dense = rsvd_rank_upper_bound(X)
    sparse = rsvd_rank_upper_bound(sp.csr_matrix(X))
    assert dense.rank == sparse.rank


def test_arpack_sparse_svd_path(rng):
    X = sp.random(200, 150, density=0.05, random_state=0, format="csr")
    X.data[:] = 1.0
    U, s, Vt = truncated_svd(X, 10, random_state=0)
    s_exact = np.linalg.svd(X.toarray(), compute_uv=False)[:10]
    np.testing.assert_allclose(s, s_exact, rtol=1e-8)


def test_estimator_picks_best_truncation_and_pads(rng):
    X = (rng.random((30, 20)) < 0.4).astype(np.uint8)
    est = RoundingRankFactorization(6, method="rsvd").fit(X)
    curve = np.array(est.solver_info_["errors_by_k"])
    assert est.reconstruction_err_ == curve[: 6 + 1].min()
    assert est.components_.shape == (6, 20)
    L = est.transform(X)
    assert L.shape == (30, 6)
