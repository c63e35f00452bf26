from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from _family import (
    BinaryData,
    Certificate,
    Deadline,
    FakeClock,
    RunSettings,
    SearchMemo,
    SearchPolicy,
    _Portfolio,
    _run_portfolio,
    bounds_with,
    modules,
    swapped,
    trivial_upper_bound,
)
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sklearn_rrank import certify_rounding, rounding_rank_bounds, spectral_lower_bound
from sklearn_rrank.datasets import make_rounding_rank_matrix


def test_spectral_edge_cases():
    # the all-zero factorization is exact: bound 0
    assert spectral_lower_bound(np.zeros((4, 5))) == 0
    assert spectral_lower_bound(np.ones((4, 5)), tau=0.0) == 0
    assert spectral_lower_bound(np.ones((4, 5)), tau=-1.0) == 0
    # otherwise at least 1
    assert spectral_lower_bound(np.ones((4, 5))) == 1
    assert spectral_lower_bound(np.zeros((4, 5)), tau=0.0) == 1
    # constant rows and columns keep the bound small
    X = np.zeros((6, 6))
    X[:, 0] = 1
    X[0, :] = 1
    assert spectral_lower_bound(X) == 1


def test_spectral_bound_on_hadamard_is_large():
    # the Sylvester-Hadamard sign matrix is the classic hard case (sigma_i^2 = n)
    H = np.array([[1.0]])
    for _ in range(5):
        H = np.block([[H, H], [H, -H]])
    X = (H > 0).astype(float)  # 32 x 32
    # d * d * 32 >= 32 * 32  <=>  d >= sqrt(32) -> d* = 6, bound 5
    assert spectral_lower_bound(X) == 5


def test_spectral_rejects_missing():
    with pytest.raises(ValueError, match="missing"):
        spectral_lower_bound(np.array([[np.nan, 1.0]]))


@pytest.mark.parametrize("tau", [0.5, 2.0, 0.0, -1.0])
def test_trivial_upper_bound_certified(rng, tau):
    X = (rng.random((7, 4)) < 0.5).astype(float)
    for Y in (X, X.T):
        L, R = trivial_upper_bound(Y, tau=tau)
        assert certify_rounding(Y, L, R, tau=tau)
        assert L.shape[1] == min(Y.shape) + (tau <= 0)


@pytest.mark.parametrize("tau", [0.5, 2.0, 0.0, -1.0])
def test_trivial_certificate_of_sparse_data_is_sparse(rng, tau):
    X = (rng.random((9, 5)) < 0.3).astype(float)
    for Y in (X, X.T):
        L, R = trivial_upper_bound(sp.csr_matrix(Y), tau=tau)
        assert sp.issparse(L) and sp.issparse(R)
        Ld, Rd = trivial_upper_bound(Y, tau=tau)  # the same values as dense factors
        np.testing.assert_array_equal(L.toarray(), Ld)
        np.testing.assert_array_equal(R.toarray(), Rd)
        assert certify_rounding(sp.csr_matrix(Y), L, R, tau=tau)
        assert certify_rounding(Y, L, R, tau=tau)
        # the sparse check is a real check: one flipped entry of Y is caught
        Z = Y.copy()
        Z[0, 0] = 1 - Z[0, 0]
        assert certify_rounding(sp.csr_matrix(Z), L, R, tau=tau, return_count=True) == (
            False,
            1,
        )
    with pytest.raises(ValueError, match="finite"):
        bad = L.copy()
        bad.data[0] = np.nan
        certify_rounding(Y, bad, R, tau=tau)


def test_identity_bounds():
    # identity matrices have rounding rank 2 for n >= 3 (paper appendix)
    res = rounding_rank_bounds(np.eye(6), methods=("spectral", "rank_one", "rsvd"))
    assert res.lower == 2 and res.lower_method == "rank_one"
    assert res.upper >= 2
    assert certify_rounding(np.eye(6), res.L, res.R)


def test_upper_triangular_is_exact_rank_one():
    X = np.triu(np.ones((6, 6)))
    res = rounding_rank_bounds(X, methods=("spectral", "rank_one", "rsvd"))
    assert (res.lower, res.upper, res.exact) == (1, 1, True)
    assert res.upper_method == "rank_one"
    assert certify_rounding(X, res.L, res.R)


def test_report_rows_and_unknown_method(digits150):
    res = rounding_rank_bounds(digits150, methods="spectral,rsvd")
    assert [r["method"] for r in res.report] == ["spectral", "rsvd"]
    assert res.upper == 45 and res.upper_method == "rsvd"
    row = res.report[1]
    assert row["kind"] == "upper" and row["certified"] and row["seconds"] >= 0
    assert res.to_dict()["upper"] == 45
    with pytest.raises(ValueError, match="Unknown method"):
        rounding_rank_bounds(digits150, methods=("magic",))


def test_zero_matrix_has_rank_zero():
    res = rounding_rank_bounds(np.zeros((3, 4)), methods=("spectral", "rsvd"))
    assert (res.lower, res.upper, res.exact) == (0, 0, True)


@given(
    arrays(
        np.int8,
        st.tuples(st.integers(2, 7), st.integers(2, 7)),
        elements=st.integers(0, 1),
    ),
    st.sampled_from([0.5, 0.0]),
)
def test_every_lower_bound_at_most_certified_upper(X, tau):
    res = rounding_rank_bounds(
        X, methods=("spectral", "vc", "rank_one", "rsvd", "trivial"), tau=tau
    )
    assert res.lower <= res.upper
    assert certify_rounding(X, res.L, res.R, tau=tau)
    for row in res.report:
        assert row["status"] in ("ok", "skipped"), row
        if row["kind"] == "lower" and row["status"] == "ok":
            assert row["bound"] <= res.upper


def test_vc_row_reports_the_bound_with_complements(digits150):
    # the portfolio's "vc" row takes the best of the plain and complemented bounds
    # and says which one it is (the first 60 digits: plain 4, with complements 5)
    res = rounding_rank_bounds(digits150[:60], methods=("vc",), time_limit=10)
    (row,) = [r for r in res.report if r["method"] == "vc"]
    assert row["bound"] >= 5 and res.lower >= 5 and res.lower_method == "vc"
    assert "with complements" in row["message"]
    assert res.lower <= res.upper


def _planted_rank_two():
    rng = np.random.default_rng(0)
    L, R = rng.normal(size=(12, 2)), rng.normal(size=(10, 2))
    X = (L @ R.T >= 0.5).astype(np.uint8)
    assert certify_rounding(X, L, R, tau=0.5)
    return X, L, R


@pytest.mark.parametrize("where", ["rsvd", "vc"])
def test_keyboard_interrupt_keeps_the_bounds(where):
    # Ctrl-C inside a method: KeyboardInterrupt is raised again, carrying the
    # bounds reached so far (with what the interrupted search had certified)
    X, L, R = _planted_rank_two()

    def search(X, incumbent, deadline, **kwargs):
        assert incumbent.offer(L, R)  # certified, then the user presses Ctrl-C
        if where == "rsvd":
            raise KeyboardInterrupt
        return {}

    def lower(X, *, tau, deadline):
        raise KeyboardInterrupt

    registry = swapped(
        rsvd={"search": search},
        **({"vc": {"lower": lower}} if where == "vc" else {}),
    )
    with pytest.raises(KeyboardInterrupt) as caught:
        bounds_with(X, ("spectral", "rsvd", "vc", "lpca"), registry)
    res = caught.value.bounds
    assert res.interrupted and res.to_dict()["interrupted"]
    assert (res.upper, res.upper_method) == (2, "rsvd")
    assert certify_rounding(X, res.L, res.R, tau=0.5)
    assert 1 <= res.lower <= res.upper
    status = {row["method"]: row["status"] for row in res.report}
    if where == "rsvd":
        assert status == {
            "spectral": "ok",
            "rsvd": "interrupted",
            "vc": "interrupted",
            "lpca": "interrupted",
        }
        (row,) = [r for r in res.report if r["method"] == "rsvd"]
        assert row["bound"] == 2 and row["certified"]
        assert "certified rank 2 so far" in row["message"]
    else:
        assert status == {
            "spectral": "ok",
            "rsvd": "ok",
            "vc": "interrupted",
            "lpca": "interrupted",
        }


def test_an_uninterrupted_call_is_not_marked():
    res = rounding_rank_bounds(np.eye(4), methods=("spectral", "rsvd"))
    assert not res.interrupted and res.to_dict()["interrupted"] is False


# -- sparse data stays sparse ----------------------------------------------------------


@pytest.fixture(scope="module")
def sparse_small():
    import scipy.sparse as sp

    rng = np.random.default_rng(7)
    A = rng.standard_normal((400, 3)) @ rng.standard_normal((3, 120))
    X = (A >= np.quantile(A, 0.95)).astype(np.float64)
    X[10] = X[3]  # a repeated row and column for the merged classes
    X[:, 8] = X[:, 2]
    return X, sp.csr_matrix(X)


def test_sparse_input_gives_the_dense_bounds(sparse_small):
    X, Xs = sparse_small
    methods = ("rank_one", "spectral", "rsvd")
    dense = rounding_rank_bounds(X, methods=methods, random_state=0)
    sparse = rounding_rank_bounds(Xs, methods=methods, random_state=0)
    assert (sparse.lower, sparse.upper) == (dense.lower, dense.upper)
    assert certify_rounding(Xs, sparse.L, sparse.R)


def test_dense_only_method_is_skipped_when_it_would_not_fit(sparse_small):
    from sklearn_rrank import config_context

    _, Xs = sparse_small
    # a machine whose memory holds one dense copy of X (a dense work array may take
    # half of it) and the sparse one
    with config_context(memory_limit=8 * int(np.prod(Xs.shape))):
        res = rounding_rank_bounds(Xs, methods=("rank_one", "nuclear"), random_state=0)
    row = next(r for r in res.report if r["method"] == "nuclear")
    assert row["status"] == "skipped"
    assert "needs the dense matrix" in row["message"]
    assert certify_rounding(Xs, res.L, res.R)  # the trivial fallback, from sparse
    assert res.upper_method == "trivial"
    assert sp.issparse(res.L) and sp.issparse(res.R)  # no m x n array
    assert "sparse" in repr(res)


def test_vc_runs_on_sparse_data_that_would_not_fit_dense():
    # the VC search reads the lines' supports: no dense copy, so nothing to refuse
    import scipy.sparse as sp

    from sklearn_rrank import config_context

    X = (np.random.default_rng(4).random((40, 30)) < 0.15).astype(np.float64)
    Xs = sp.csr_matrix(X)
    expected = rounding_rank_bounds(X, methods=("vc",)).lower
    # a machine whose memory holds one dense copy of X: none is made
    with config_context(memory_limit=8 * X.size):
        assert modules.memory.dense_copy_refused(*X.shape)
        res = rounding_rank_bounds(Xs, methods=("vc",))
    (row,) = [r for r in res.report if r["method"] == "vc"]
    assert row["status"] == "ok" and row["bound"] == expected == res.lower


def test_trivial_method_on_sparse_data_hands_projlp_a_sparse_certificate(sparse_small):
    X, Xs = sparse_small
    methods = ("trivial", "projlp")
    sparse = rounding_rank_bounds(Xs, methods=methods, random_state=0)
    dense = rounding_rank_bounds(X, methods=methods, random_state=0)
    rows = {r["method"]: r for r in sparse.report}
    assert rows["trivial"]["bound"] == min(X.shape) and rows["trivial"]["certified"]
    # ProjLP descends from the trivial certificate, sparse or dense alike
    assert sparse.upper == dense.upper < min(X.shape)
    assert not sp.issparse(sparse.L)
    assert certify_rounding(Xs, sparse.L, sparse.R)


def test_binary_data_merges_sparse_rows_like_dense(sparse_small):
    X, Xs = sparse_small
    dense, sparse = BinaryData(X), BinaryData(Xs)
    for a, b in zip(dense.unique_rows, sparse.unique_rows, strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(dense.unique_columns, sparse.unique_columns, strict=True):
        np.testing.assert_array_equal(a, b)
    assert sparse.unique_rows[0].size < X.shape[0]
    assert sparse.unique_columns[0].size < X.shape[1]


def test_spectral_all_values_skipped_when_dense_would_not_fit():
    from sklearn_rrank import config_context

    # too many entries for LAPACK at once and too few columns for leading values:
    # all values need the dense matrix, which a machine with the memory of one
    # copy of X does not hold three times
    X = sp.random(30000, 9, density=0.3, format="csr", random_state=0)
    X.data[:] = 1.0
    found = modules.spectral._spectral_bound(X, 0.5)
    assert (found.bound, found.stopped_early) == (2, False)
    with config_context(memory_limit=8 * int(np.prod(X.shape))):
        found = modules.spectral._spectral_bound(X, 0.5)
    assert (found.bound, found.stopped_early) == (1, True)
    assert found.message.startswith("memory")


def test_rsvd_keeps_the_components_that_fit_in_memory(sparse_small):
    from sklearn_rrank import config_context

    X, Xs = sparse_small
    m, n = X.shape
    full = rounding_rank_bounds(Xs, methods=("rsvd",), random_state=0)
    keep = full.upper + 2
    assert full.upper_method == "rsvd" and keep < n
    # a machine where the Gram matrix and `keep` components on both sides are the
    # quarter of the memory an SVD may take
    svd = 8 * (n * n + keep * (m + n))
    with config_context(memory_limit=4 * svd):
        part = rounding_rank_bounds(Xs, methods=("rsvd",), random_state=0)
    row = part.report[0]
    # the Gram route's `keep`, or more by ARPACK, which needs no Gram matrix
    kept = int(row["message"].split("the SVD keeps ")[1].split()[0])
    assert kept >= keep, row["message"]
    assert part.upper_method == "rsvd" and part.upper == full.upper
    assert certify_rounding(Xs, part.L, part.R)
    # no component fits: data with few ones (whose sparse arrays fit) on a machine
    # with the memory of 6 float64 vectors of length m + n
    few = sp.csr_matrix(X * (np.random.default_rng(0).random(X.shape) < 0.05))
    with config_context(memory_limit=6 * 8 * (m + n)):
        none = rounding_rank_bounds(few, methods=("rsvd",), random_state=0)
    assert none.report[0]["message"].startswith("skipped: ")
    assert none.upper_method == "trivial" and sp.issparse(none.L)


def test_rsvd_cut_by_memory_gets_an_ordinary_share(sparse_small):
    # a whole SVD is R-SVD's large share (it gives back what it does not use); an
    # SVD that memory cuts to its top components gets the share of L-PCA or less
    from sklearn_rrank import config_context

    X, Xs = sparse_small
    m, n = X.shape

    def rsvd_budget():
        res = rounding_rank_bounds(
            Xs, methods=("rsvd", "lpca"), time_limit=4.0, random_state=0
        )
        rows = {row["method"]: row for row in res.report}
        return rows["rsvd"]["budget"] / 4.0

    assert rsvd_budget() > 0.6  # most of the budget: about 14 / 17 of it
    # a machine where an SVD may take the Gram matrix and 2 components
    svd = 8 * (n * n + 2 * (m + n))
    with config_context(memory_limit=4 * svd):
        assert rsvd_budget() < 0.3  # about 1 / 4 of it


def test_large_sparse_data_gets_no_dense_copy(sparse_small):
    from sklearn_rrank import config_context

    memory = modules.memory

    # past 2 GiB no dense copy is made, whatever the memory (arithmetic only)
    assert "dense copy of sparse data" in memory.dense_copy_refused(2**14, 2**14 + 1)
    X, Xs = sparse_small
    # a machine whose memory holds one dense copy of X: a dense work array may take
    # half of it
    for method in ("nuclear", "projlp"):  # the portfolio's copy; their own
        with config_context(memory_limit=8 * X.size):
            res = rounding_rank_bounds(Xs, methods=("rank_one", method), random_state=0)
        row = next(r for r in res.report if r["method"] == method)
        assert "needs the dense matrix" in row["message"], row
        assert res.upper_method == "trivial" and res.lower_method != "vc"
    # dense input is the dense matrix already: ProjLP runs
    with config_context(memory_limit=8 * X.size):
        dense = rounding_rank_bounds(X, methods=("rank_one", "projlp"), random_state=0)
    assert dense.upper_method == "projlp"


def test_projlp_on_sparse_data_densifies_only_the_merged_rows(sparse_small):
    # ProjLP takes the CSR matrix from the portfolio (no dense copy of X) and
    # gives the bound and certificate of the dense input
    X, Xs = sparse_small
    dense = rounding_rank_bounds(X, methods=("projlp",), random_state=0)
    sparse = rounding_rank_bounds(Xs, methods=("projlp",), random_state=0)
    assert sparse.upper == dense.upper < min(X.shape)
    np.testing.assert_array_equal(sparse.L, dense.L)
    np.testing.assert_array_equal(sparse.R, dense.R)


def test_portfolio_holds_the_best_certificate_only(sparse_small):
    X, _ = sparse_small
    run = _run_portfolio(
        X,
        ("trivial", "rsvd", "projlp"),
        tau=0.5,
        deadline=Deadline(),
        settings=RunSettings(random_state=0),
    )
    rank, method = run.best.rank, run.best.method
    assert rank < min(X.shape) and method in ("rsvd", "projlp")
    held = {name: res.L is not None for name, res in run.results.items()}
    assert held == {"trivial": False, "rsvd": method == "rsvd", "projlp": True}


def test_second_pass_resumes_a_search_where_it_stopped():
    # above the largest failed fit the search kept (its bracket's lower end), else
    # the rank of the fit the deadline cut short, else above the last rank tried,
    # always below the best certificate (Abstracts: R-SVD certified 4421 while
    # L-PCA stopped at k = 13; it resumed at 4420 and spent minutes on an SVD start)
    resume = SearchPolicy().resume_rank
    tried = {6: 9, 7: 8, 9: 7, 13: 5}
    assert resume(4420, {6: "f", 9: "f"}, {13: "cut"}, tried) == 10
    assert resume(4420, {}, {13: "cut"}, tried) == 13
    assert resume(4420, {}, {}, tried) == 14
    assert resume(4, {}, {}, {3: 9, 4: 8, 5: 0}) == 4  # APJ: L-PCA certified 5
    assert resume(4, {}, {4: "cut"}, {3: 9, 4: 8, 5: 0}) == 4
    # ca-HepPh: the bracket closed at (30, 31] with the fit at 30 cut again
    assert resume(30, {29: "f", 30: "f"}, {30: "cut"}, {29: 8, 30: 2, 31: 0}) == 30
    assert resume(2, {}, {}, {}) == 2
    # the portfolio's top: below its best certificate, else below the trivial rank
    # (1e9 entries: R-SVD found none)
    run = object.__new__(_Portfolio)
    spec = modules.methods.METHODS["lpca"]
    run.policy, run.memos = SearchPolicy(), {}
    run.best = Certificate(3, "rsvd", None, None)
    assert run._resume(spec, {"errors_by_k": {}}) == 2
    run.best, run.tau, run.data = None, 0.5, BinaryData(np.zeros((9, 7)))
    assert run._resume(spec, {"errors_by_k": {2: 9, 3: 9}}) == 4
    assert run._resume(spec, {"errors_by_k": {}}) == 6
    run.tau = 0.0
    assert run._resume(spec, {"errors_by_k": {}}) == 7


def test_second_pass_gives_no_share_to_a_lower_bound_that_would_not_run_again():
    # Abstracts, 900 s: VC's share of the second pass (86 s) was below its first
    # budget (115 s), so it did not run, and the call ended 114 s early while
    # L-PCA's polish fit was cut at 3/4 of the time left
    run = object.__new__(_Portfolio)
    run.deadline, run.lower_cap = Deadline(100.0), None
    lpca, vc = modules.methods.METHODS["lpca"], modules.methods.METHODS["vc"]
    assert (lpca.weight, vc.weight) == (3, 1)
    run.weights = {"lpca": 3, "vc": 1}
    rows = {"lpca": {"budget": 300.0}, "vc": {"budget": 30.0}}  # 100 / 4 < 30
    assert run._second_weights(lpca, [lpca, vc], rows) == 3
    assert run._second_weights(vc, [vc], rows) == 1
    rows["vc"]["budget"] = 20.0  # a quarter of the time left is more: it runs
    assert run._second_weights(lpca, [lpca, vc], rows) == 4
    # a capped lower bound (large data) takes nothing from the searches: it runs
    # last, on what they leave
    run.lower_cap = 5.0
    assert run._second_weights(lpca, [lpca, vc], rows) == 3
    assert run._second_weights(vc, [vc], rows) == 1


@pytest.mark.parametrize("size", ["small", "large", "large_short_cap"])
def test_lower_bound_share_is_capped_on_large_data(size):
    # Abstracts (6.3e7 entries), 900 s: VC's share was 118 s for the bound it had
    # after 30 s, while L-PCA needed 110-150 s per step of its descent; from 4e7
    # entries a lower bound's first share is at most 5% of the budget, but at
    # least 10 s
    vc, lpca = [], []
    clock = FakeClock()

    def lower(X, *, tau, deadline):
        vc.append(deadline.remaining())
        if len(vc) == 1:  # the first pass runs to the end of its share
            clock.advance(deadline.remaining())
        return modules.methods.LowerBoundResult(2, stopped_early=len(vc) == 1)

    def search(X, incumbent, deadline, *, tau, **kwargs):
        lpca.append(deadline.remaining())
        return {"message": "nothing"}

    registry = swapped(vc={"lower": lower}, lpca={"search": search})
    X = make_rounding_rank_matrix(40, 30, 3, random_state=2).astype(float)
    policy = SearchPolicy()
    if size != "small":  # the 40 x 30 matrix stands in for a large one
        policy = replace(policy, portfolio_capped_lower_entries=X.size)
    if size == "large_short_cap":  # a 4 s budget stands in for a long one
        policy = replace(policy, portfolio_lower_cap_min=0.1)
    # 4 s less the reserve (10%): 3.6 s to share
    run = _run_portfolio(
        X,
        ("vc", "lpca"),
        tau=0.5,
        deadline=Deadline(4.0, clock=clock),
        policy=policy,
        registry=registry,
    )
    assert run.lower == 2 and len(lpca) == 1
    if size == "large_short_cap":  # 5% of the budget, the rest to L-PCA
        assert vc[0] <= 0.05 * 4.0 and lpca[0] > 3.0
    else:  # the weights: VC 1 of 4 (0.9 s; below the cap's 10 s minimum)
        assert vc[0] > 0.6 and lpca[0] < 3.0
    # the second pass: VC again on what L-PCA left, more than its first share
    assert len(vc) == 2 and vc[1] > vc[0]


def test_a_search_with_a_cut_polish_fit_holds_a_share_of_the_first_pass():
    # APJ, 60 s, two busy processes: L-PCA certified 6 and its share cut the fit
    # at 5; ProjLP, last, took all the time left and found nothing below 6, where
    # L-PCA's second pass (when ProjLP ended early) certified 5 in 3-4 s
    run = object.__new__(_Portfolio)
    lpca, projlp = (modules.methods.METHODS[name] for name in ("lpca", "projlp"))
    run.weights = {"lpca": lpca.weight, "projlp": projlp.weight}
    run.report = [{"method": "lpca", "status": "stopped"}]
    run.best, run.memos = (
        Certificate(6, "lpca", None, None),
        {"lpca": SearchMemo(cut={5: "cut"})},
    )
    assert run._held([lpca]) == lpca.weight
    # not held: no fit cut below the bound, another method's certificate (on
    # americas_small, 20 s, L-PCA's ascent was cut with nothing certified, and
    # ProjLP on half the time gave 19 where on all of it it gave 11), a search
    # that ended, no certificate at all, a search that does not resume
    run.memos = {"lpca": SearchMemo(cut={6: "cut"})}
    assert run._held([lpca]) == 0
    run.best, run.memos = (
        Certificate(6, "rsvd", None, None),
        {"lpca": SearchMemo(cut={5: "cut"})},
    )
    assert run._held([lpca]) == 0
    run.best, run.report[0]["status"] = Certificate(6, "lpca", None, None), "ok"
    assert run._held([lpca]) == 0
    run.best, run.report[0]["status"] = None, "stopped"
    assert run._held([lpca]) == 0
    run.best, run.report = Certificate(6, "projlp", None, None), [{"method": "projlp"}]
    run.report[0]["status"], run.memos = (
        "stopped",
        {"projlp": SearchMemo(cut={5: "cut"})},
    )
    assert run._held([projlp]) == 0


def test_the_last_method_leaves_a_held_share_to_the_second_pass():
    # L-PCA (certified, a fit cut below it) holds its weight in the first pass:
    # ProjLP, after it, gets its weighted share of the time left, not all of it,
    # and L-PCA's second pass resumes at the cut fit's rank
    X = make_rounding_rank_matrix(40, 30, 3, random_state=2)
    lpca_calls, projlp_budgets = [], []

    def certify_then_cut(X, incumbent, deadline, **kw):
        lpca_calls.append(kw.get("start"))
        if len(lpca_calls) == 1:  # the trivial certificate, and a fit cut below it
            incumbent.offer(X.copy(), np.eye(X.shape[1]))
            incumbent.memo.cut[X.shape[1] - 1] = "cut"
            return {"stopped_early": True, "message": "cut"}
        return {"message": "nothing"}

    def nothing(X, incumbent, deadline, **kw):
        projlp_budgets.append(deadline.remaining())
        return {"message": "nothing"}

    registry = swapped(lpca={"search": certify_then_cut}, projlp={"search": nothing})
    run = _run_portfolio(
        X, ("lpca", "projlp"), tau=0.5, deadline=Deadline(4.0), registry=registry
    )
    assert (run.best.rank, run.best.method) == (X.shape[1], "lpca")
    # 4 s less the reserve: ProjLP got about half of the 3.5 s, not all of it
    assert len(projlp_budgets) == 1 and 1.2 < projlp_budgets[0] < 2.2
    assert lpca_calls == [None, X.shape[1] - 1]


def test_second_pass_runs_without_any_certificate():
    # the 1e9-entry run ended after 735 s of 1800: no method had certified, and the
    # second pass was skipped; now the stopped search gets the time left
    X = make_rounding_rank_matrix(40, 30, 3, random_state=2)
    starts = []
    search = modules.lpca_search._lpca_search
    clock = FakeClock()

    def slow_then_nothing(X, incumbent, deadline, **kw):
        starts.append(kw.get("start", 1))
        if len(starts) == 1:  # the first pass: stopped by its share, nothing found
            clock.advance(deadline.remaining())
            return {"stopped_early": True, "message": "no certificate"}
        return search(X, incumbent, deadline, **kw)

    # a method after it that finds nothing at once (ProjLP skipped at 1e9)
    registry = swapped(
        lpca={"search": slow_then_nothing}, projlp={"search": lambda *a, **k: {}}
    )
    run = _run_portfolio(
        X,
        ("lpca", "projlp"),
        tau=0.5,
        deadline=Deadline(8.0, clock=clock),
        settings=RunSettings(random_state=0),
        registry=registry,
    )
    assert len(starts) == 2
    assert run.best.method == "lpca" and certify_rounding(X, run.best.L, run.best.R)


def test_a_large_certificate_is_held_on_disk_while_later_methods_run():
    # issue 28: on Abstracts R-SVD's certificate (0.63 GB) sat beside ProjLP's
    # working set; it is now a read-only map of an anonymous file until the end, and
    # the result's factors are in memory again, with the same values
    X = make_rounding_rank_matrix(40, 30, 3, random_state=2).astype(float)
    seen = []

    def recorded(search):
        def run(X, incumbent, deadline, **kw):
            seen.append(incumbent.cap_factors)
            return search(X, incumbent, deadline, **kw)

        return run

    methods = modules.methods.METHODS
    registry = swapped(
        **{
            name: {"search": recorded(methods[name].search)}
            for name in ("rsvd", "lpca")
        }
    )
    kw = dict(tau=0.5, deadline=Deadline(None), registry=registry)
    kw["settings"] = RunSettings(random_state=0)
    plain = _run_portfolio(X, ("rsvd", "lpca"), **kw).best
    assert seen[1] is not None and not isinstance(seen[1][0], np.memmap)
    seen.clear()
    held = _run_portfolio(X, ("rsvd", "lpca"), hold_bytes=0, **kw).best
    assert seen[0] is None  # R-SVD ran first, then L-PCA got the mapped certificate
    assert all(isinstance(A, np.memmap) and not A.flags.writeable for A in seen[1])
    assert held.rank == plain.rank
    for A, B in ((held.L, plain.L), (held.R, plain.R)):
        assert type(A) is np.ndarray and A.flags.writeable
        np.testing.assert_array_equal(A, B)
    assert certify_rounding(X, held.L, held.R)


def test_held_on_disk_keeps_small_and_sparse_factors_as_they_are():
    L, R = np.ones((3, 2)), sp.csr_matrix(np.ones((4, 2)))
    assert modules.memory.held_on_disk(L, R) == (L, R)


class _CopyInterrupted(sp.csr_matrix):
    """CSR data whose dense copy is interrupted (Ctrl-C while it is made).

    Only the instance marked ``interrupt`` raises: its slices, which methods make
    dense by blocks, do not.
    """

    interrupt = False

    def toarray(self, *args, **kwargs):
        if self.interrupt:
            raise KeyboardInterrupt
        return super().toarray(*args, **kwargs)


def test_interrupt_while_a_method_starts_marks_it():
    # Ctrl-C after a method's report row exists but before its own handler runs
    # (here: while the portfolio makes the dense copy the nuclear-norm method
    # needs) still marks that method "interrupted"
    X, _, _ = _planted_rank_two()
    Xs = _CopyInterrupted(sp.csr_matrix(X, dtype=np.float64))
    Xs.interrupt = True
    methods = ("rank_one", "rsvd", "nuclear")
    with pytest.raises(KeyboardInterrupt) as caught:
        _run_portfolio(Xs, methods, tau=0.5, deadline=Deadline())
    status = {row["method"]: row["status"] for row in caught.value.portfolio.report}
    assert status == {"rank_one": "ok", "rsvd": "ok", "nuclear": "interrupted"}
