"""Default L-PCA fits converge on real data (issue 11; here the first 150 digits)."""

import warnings

import pytest
from _family import lpca_fit
from sklearn.exceptions import ConvergenceWarning

from sklearn_rrank import RoundingRankFactorization


@pytest.mark.parametrize("k", [2, 5, 10])
def test_default_fit_converges_without_warning(digits150, k):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = RoundingRankFactorization(k, method="lpca", random_state=0).fit(digits150)
    assert est.n_components == k


def test_stall_of_the_rounding_is_convergence(digits150):
    res = lpca_fit(digits150, 5, stop_when_exact=True, random_state=0)
    assert res.converged
    assert res.info["status"] in ("tol", "stalled", "exact")
    assert res.info["message"].startswith("converged")


def test_real_non_convergence_still_warns_and_says_what_to_change(digits150):
    est = RoundingRankFactorization(5, method="lpca", max_iter=2, random_state=0)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        est.fit(digits150)
    res = lpca_fit(digits150, 5, max_iter=2, random_state=0)
    assert not res.converged and res.info["status"] == "max_iter"
    assert "max_iter" in res.info["message"] and "tol" in res.info["message"]


@pytest.mark.parametrize(
    ("k", "solver", "stalls"),
    [(5, "auto", True), (30, "auto", False), (5, "lbfgs", False), (30, "newton", True)],
)
def test_stall_rule_follows_the_solver_that_runs(digits150, k, solver, stalls):
    """The stall rule ends the alternating solvers' fits only, also when "auto"
    picks L-BFGS (Abstracts k=50 stopped at 0.54 by it): here the Newton fits
    stall, the L-BFGS ones end by tol or after max_iter."""
    res = lpca_fit(digits150, k, solver=solver, random_state=0)
    assert (res.info["solver_used"] == "lbfgs") != stalls
    assert (res.info["status"] == "stalled") == stalls
