import numpy as np
import pytest
from _family import Deadline, SearchPolicy

from sklearn_rrank import (
    RoundingRankCV,
    RoundingRankFactorization,
    rounding_rank_bounds,
)
from sklearn_rrank.datasets import make_rounding_rank_matrix


def test_exact_linear_matches_rank_search_rsvd(digits150):
    cv = RoundingRankCV(RoundingRankFactorization(method="rsvd"), mode="exact").fit(
        digits150
    )
    assert cv.certified_ and cv.n_components_ == 45
    assert cv.errors_[45] == 0 and cv.errors_[44] > 0
    be = cv.best_estimator_
    assert be.certified_ and be.n_components_ == 45


def test_exact_generic_search_linear_and_galloping(digits150):
    ks = range(37, 52)
    lin = RoundingRankCV(
        RoundingRankFactorization(method="rsvd"), n_components=ks, mode="exact"
    ).fit(digits150)
    gal = RoundingRankCV(
        RoundingRankFactorization(method="rsvd"),
        n_components=ks,
        search="galloping",
        mode="exact",
    ).fit(digits150)
    assert lin.n_components_ == gal.n_components_ == 45
    # the bracket order: gallops 37, 39, 43 (far off), certifies 47, bisects to 45
    # and rules out 44: six fits where the linear order needs nine
    assert set(gal.errors_) == {37, 39, 43, 44, 45, 47}
    assert list(lin.errors_) == list(range(37, 46))
    assert lin.cv_results_["rank_test_error"][-1] == 1


def test_exact_reports_failure_honestly():
    X = np.eye(6)
    cv = RoundingRankCV(
        RoundingRankFactorization(method="rsvd"),
        n_components=[1, 2],
        mode="exact",
    ).fit(X)
    assert not cv.certified_
    assert not cv.best_estimator_.certified_


def test_exact_lpca_same_k_as_rounding_rank_bounds(digits150, digits150_bounds):
    # the default portfolio's upper bound on digits150 comes from L-PCA, which
    # starts from the VC bound: the CV's search starts there too (issue 25: both agree)
    est = RoundingRankFactorization(method="lpca", random_state=0)
    cv = RoundingRankCV(est, n_jobs=2, mode="exact").fit(
        digits150
    )  # n_jobs: only the time changes
    bounds = digits150_bounds
    assert bounds.upper_method == "lpca"
    assert cv.certified_ and cv.n_components_ == bounds.upper <= 9
    assert cv.search_info_["lower"] == bounds.lower == 5
    L = cv.best_estimator_.transform(digits150)
    assert np.array_equal(cv.best_estimator_.inverse_transform(L), digits150)


@pytest.mark.parametrize("own", [None, 3])
def test_exact_search_takes_the_cv_seed_when_the_estimator_has_none(own):
    # RoundingRankCV(random_state=0) and rounding_rank_bounds(random_state=0) run
    # the same search (Paleo: both 8 with L-PCA; the estimator's None seed gave 9).
    # ProjLP's projections follow the seed: its errors at every width show which
    X = make_rounding_rank_matrix(40, 30, 4, random_state=0).astype(float)
    est = RoundingRankFactorization(method="projlp", random_state=own)
    cv = RoundingRankCV(est, random_state=0, mode="exact").fit(X)
    methods = ("rank_one", "spectral", "vc", "projlp")

    def errors(seed):
        b = rounding_rank_bounds(X, methods=methods, random_state=seed)
        return next(r for r in b.report if r["method"] == "projlp")["errors_by_k"]

    assert errors(0) != errors(3)  # the seeds give different searches
    assert cv.search_info_["errors_by_k"] == errors(0 if own is None else own)


def test_holdout_needs_missing_support():
    X = np.eye(5)
    with pytest.raises(ValueError, match="missing entries"):
        RoundingRankCV(RoundingRankFactorization(method="rsvd"), mode="holdout").fit(X)


def test_holdout_picks_planted_rank():
    # the check: k within 2 of the planted 8 for at least 4 of 5 seeds
    picks = []
    for seed in range(5):
        X = make_rounding_rank_matrix(200, 150, 8, noise=0.05, random_state=seed)
        cv = RoundingRankCV(
            RoundingRankFactorization(method="lpca", random_state=0),
            mode="holdout",
            n_components=range(4, 14),
            cv=2,
            random_state=seed,
            n_jobs=2,  # results do not depend on it (tested below); 88 s -> 50 s
        ).fit(X)
        assert cv.cv_results_["mean_test_error"].shape == (10,)
        assert "split1_test_error" in cv.cv_results_
        picks.append(cv.n_components_)
    assert sum(abs(k - 8) <= 2 for k in picks) >= 4, picks


def test_holdout_results_independent_of_n_jobs():
    X = make_rounding_rank_matrix(60, 40, 3, random_state=0)
    kw = dict(mode="holdout", n_components=[1, 2, 3, 4], cv=2, random_state=0)
    est = RoundingRankFactorization(method="lpca", random_state=0)
    a = RoundingRankCV(est, n_jobs=1, **kw).fit(X)
    b = RoundingRankCV(est, n_jobs=2, **kw).fit(X)
    np.testing.assert_array_equal(
        a.cv_results_["mean_test_error"], b.cv_results_["mean_test_error"]
    )


def test_exact_nonnegative_keeps_factors_nonnegative():
    # the generic search is used (not the unconstrained rank search of ProjLP)
    X = np.triu(np.ones((8, 8)))
    est = RoundingRankFactorization(method="projlp", nonnegative=True, random_state=0)
    cv = RoundingRankCV(est, mode="exact").fit(X)
    assert cv.certified_ and cv.n_components_ <= 8
    be = cv.best_estimator_
    assert np.all(be.components_ >= 0)
    assert np.all(be.transform(X) >= -1e-12)


@pytest.mark.parametrize(
    "order, certified, best, tries",
    [
        ("linear", {4, 7, 8, 9, 10}, 4, [1, 2, 3, 4]),
        # the bracket order: indices 0, 2, 6 (a gallop), then bisection
        ("galloping", set(range(4, 11)), 4, [1, 3, 7, 5, 4]),
        ("galloping", set(range(6, 11)), 6, [1, 3, 7, 5, 6]),
        # nothing certified: the last candidate is tried too
        ("galloping", set(), None, [1, 3, 7, 9, 10]),
    ],
)
def test_candidates_orders(order, certified, best, tries):
    seen = []

    def try_k(k):
        seen.append(k)
        return k in certified

    found, stopped = SearchPolicy().candidates(
        list(range(1, 11)), try_k, Deadline(None), gallop=order == "galloping"
    )
    assert (found, stopped, seen) == (best, False, tries)


@pytest.mark.parametrize("order", ["linear", "galloping"])
def test_candidates_tries_one_rank_after_the_deadline(order):
    seen = []
    found, stopped = SearchPolicy().candidates(
        [3, 5, 9],
        lambda k: seen.append(k) or False,
        Deadline(0.0),
        gallop=order == "galloping",
    )
    assert (found, stopped, seen) == (None, True, [3])


def test_policy_orders_projlp_phase0_and_rsvd_ranks():
    # phase 0 descends to 97% of a width every column separates, always below it
    policy = SearchPolicy()
    assert [policy.descent_width(w) for w in (100, 10, 2)] == [97, 9, 1]
    assert SearchPolicy(phase0_descent=0.5).descent_width(100) == 50
    # R-SVD: every k while m n K <= 4e9, else boundaries from the top by 64
    assert policy.rsvd_order(1000, 1000, 4000) is None
    assert policy.rsvd_order(1000, 1000, 4001)[:2] == [4001, 3937]
    assert SearchPolicy(rsvd_block=2).rsvd_order(1000, 1000, 5000)[-3:] == [4, 2, 0]
