"""Tests of the VC-dimension lower bound (``sklearn_rrank._lower._vc``)."""

import itertools
import time

import numpy as np
import pytest
import scipy.sparse as sp
from _family import Deadline, _largest_shattered, _pair_graph, _Shattering, modules
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from sklearn_rrank import certify_rounding, vc_lower_bound
from sklearn_rrank.datasets import load_digits_binary


def _shattered(P, S):
    """Brute-force test: do the columns of ``P`` realise all labelings of ``S``?"""
    return len({tuple(col) for col in np.asarray(P)[list(S)].T}) == 2 ** len(S)


def _shattered_with_complements(P, S):
    """Brute force: do the columns of ``P`` or their complements realise them all?"""
    labelings = {tuple(col) for col in np.asarray(P, dtype=int)[list(S)].T}
    labelings |= {tuple(1 - np.array(col)) for col in labelings}
    return len(labelings) == 2 ** len(S)


def _vc_rows(P, shattered=_shattered):
    """Largest set of rows shattered by the columns, by trying every subset."""
    best = 0
    for s in range(1, P.shape[0] + 1):
        if not any(shattered(P, S) for S in itertools.combinations(range(len(P)), s)):
            break  # subsets of shattered sets are shattered: no larger set either
        best = s
    return best


def _vcc_rows(P):
    """Largest set of rows shattered by the columns and their complements."""
    return _vc_rows(P, _shattered_with_complements)


def _check_info(X, bound, info):
    """The returned set really is shattered, with valid witnesses."""
    X = np.asarray(X)
    P = X if info["orientation"] == "rows" else X.T
    S = info["shattered"]
    comp = info["complemented"]
    size = bound + 1 if comp else bound
    assert len(S) == size == len(set(S.tolist()))
    if comp:
        assert _shattered_with_complements(P, S)
    else:
        assert _shattered(P, S)
    w, flipped = info["witnesses"], info["witness_complemented"]
    assert w.shape == flipped.shape == (2**size,)
    assert comp or not flipped.any()
    for p, (j, f) in enumerate(zip(w, flipped, strict=True)):
        labels = np.array([(p >> t) & 1 for t in range(size)])
        np.testing.assert_array_equal(P[S, j], 1 - labels if f else labels)


def _expected_bound(X):
    """The bound by brute force: plain VC and VC with complements less one."""
    X = np.asarray(X)
    return max(_vc_rows(X), _vc_rows(X.T), _vcc_rows(X) - 1, _vcc_rows(X.T) - 1)


def _all_binary_rows(d):
    return np.array([[(i >> t) & 1 for t in range(d)] for i in range(2**d)])


# ---------------------------------------------------------------- hand checks


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_identity_has_vc_dimension_one(n):
    bound, info = vc_lower_bound(np.eye(n), complements=False, return_shattered=True)
    assert bound == 1
    assert info["complete"] and not info["complemented"]
    _check_info(np.eye(n), bound, info)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8])
def test_identity_with_complements(n):
    # three rows are shattered by the e_j and their complements once a fourth
    # column gives the constant labelings: the bound 2 = rrank_0.5(I_n), n >= 3
    bound, info = vc_lower_bound(np.eye(n), return_shattered=True)
    assert bound == (2 if n >= 4 else 1)
    assert info["complete"]
    assert info["complemented"] == (n >= 4)
    _check_info(np.eye(n), bound, info)


@pytest.mark.parametrize("d", [1, 2, 3, 4, 5])
def test_all_binary_rows(d):
    # the 2**d rows label the d columns in all possible ways: the d columns are
    # shattered by the rows; the d columns shatter only 1 row (d < 2**2 would
    # not even allow 2), so the bound comes from the "columns" orientation
    X = _all_binary_rows(d)
    bound, info = vc_lower_bound(X, return_shattered=True)
    assert bound == d
    assert info["complete"]
    assert info["orientation"] == "columns"
    np.testing.assert_array_equal(info["shattered"], np.arange(d))
    _check_info(X, bound, info)
    # ... and rrank_0.5 <= d is certified by L = X, R = identity: the bound is tight
    assert certify_rounding(X, X.astype(float), np.eye(d), tau=0.5)
    # transposing swaps the orientations
    bound_t, info_t = vc_lower_bound(X.T, return_shattered=True)
    assert bound_t == d and info_t["orientation"] == "rows"


@pytest.mark.parametrize("shape", [(1, 1), (1, 5), (4, 1), (3, 4)])
@pytest.mark.parametrize("value", [0, 1])
def test_constant_matrix_gives_zero(shape, value):
    X = np.full(shape, value)
    bound, info = vc_lower_bound(X, return_shattered=True)
    assert bound == 0 and isinstance(bound, int)
    assert info["complete"]
    assert info["sizes"] == {"rows": 0, "columns": 0}
    assert info["shattered"].shape == (0,)
    # the empty set is shattered by the (single) concept: one witness
    assert info["witnesses"].shape == (1,)


def test_known_small_matrices():
    # two points, all four labelings: VC 2 (rows); columns orientation: 4
    # points and only 2 concepts -> 1
    X = np.array([[0, 0, 1, 1], [0, 1, 0, 1]])
    assert vc_lower_bound(X) == 2
    # upper triangular (rounding rank 1): VC 1 in both orientations
    assert vc_lower_bound(np.triu(np.ones((6, 6)))) == 1
    # duplicate and complementary rows never shatter together
    X = np.array([[0, 1, 0, 1], [1, 0, 1, 0], [0, 1, 0, 1]])
    assert vc_lower_bound(X) == 1


def test_return_types_and_info_keys():
    bound, info = vc_lower_bound(np.eye(4), return_shattered=True)
    assert type(bound) is int
    assert set(info) == {
        "orientation",
        "complemented",
        "shattered",
        "witnesses",
        "witness_complemented",
        "sizes",
        "complemented_sizes",
        "complete",
        "seconds",
        "n_nodes",
    }
    assert info["seconds"] >= 0
    assert type(vc_lower_bound(np.eye(4))) is int


# ---------------------------------------------------------- brute-force oracle


@settings(max_examples=60, deadline=None)
@given(
    arrays(
        np.uint8,
        st.tuples(st.integers(1, 7), st.integers(1, 7)),
        elements=st.integers(0, 1),
    )
)
def test_matches_brute_force(X):
    bound, info = vc_lower_bound(X, return_shattered=True)
    assert bound == _expected_bound(X)
    assert info["complete"]
    _check_info(X, bound, info)
    plain, info = vc_lower_bound(X, complements=False, return_shattered=True)
    assert plain == max(_vc_rows(X), _vc_rows(X.T)) <= bound
    assert info["complete"] and not info["complemented"]
    _check_info(X, plain, info)


@settings(max_examples=25, deadline=None)
@given(
    m=st.integers(1, 11),
    n=st.integers(1, 120),
    density=st.sampled_from([0.02, 0.2, 0.5]),
    seed=st.integers(0, 2**32 - 1),
    hint=st.integers(0, 4),
)
@pytest.mark.parametrize("complemented", [False, True])
def test_search_matches_brute_force_on_rows(m, n, density, seed, hint, complemented):
    # more columns than the public oracle allows (deeper searches, the sparse
    # code path for density 0.02) and the "beat this size" hint
    rng = np.random.default_rng(seed)
    P = rng.random((m, n)) < density
    if rng.random() < 0.3:
        P[rng.integers(m)] = rng.random() < 0.5  # a constant row
    shattered = _shattered_with_complements if complemented else _shattered
    exact = _vc_rows(P, shattered)
    size, rows, complete, _ = _largest_shattered(
        P, None, best_size=hint, complemented=complemented
    )
    assert complete
    assert size == max(exact, hint)
    if exact > hint:
        assert len(rows) == exact and shattered(P, rows)
    else:
        assert rows is None


@pytest.mark.parametrize("complemented", [False, True])
def test_stopped_search_resumes_to_the_same_result(complemented):
    # many tiny time slices, each resuming the depth-first search where the last
    # one stopped, reach the same result as one uninterrupted search
    P = np.random.default_rng(5).random((16, 120)) < 0.4
    size, _, complete, nodes = _largest_shattered(P, None, complemented=complemented)
    assert complete
    shattering = _Shattering(P, complemented)
    n_calls, done, slice_ = 0, False, 0.002
    while not done:
        found, rows, done = shattering.run(Deadline(slice_))
        if shattering.search.stack is None:
            slice_ *= 2  # the setup (pair graph) starts again: give it more time
        n_calls += 1
        assert n_calls < 100_000
    assert shattering.search.best_size == size
    assert shattering.search.n_nodes == nodes
    assert n_calls > 1
    shattered = _shattered_with_complements if complemented else _shattered
    assert shattered(P, shattering.point_index[shattering.search.best_set])


@pytest.mark.parametrize("density, n", [(0.02, 300), (0.5, 6)])
def test_pair_graph_matches_brute_force(density, n):
    # sparse (scipy.sparse) and dense (float32 BLAS) code paths
    rng = np.random.default_rng(3)
    Q = (rng.random((25, n)) < density).astype(np.uint8)
    G = _pair_graph(Q, None)
    expected = np.array(
        [[u != v and _shattered(Q, (u, v)) for v in range(25)] for u in range(25)]
    )
    np.testing.assert_array_equal(G, expected)
    assert 0 < G.sum() < 25 * 24


# ------------------------------------------------- below a certified upper bound


@settings(max_examples=20, deadline=None)
@given(
    m=st.integers(2, 30),
    n=st.integers(2, 30),
    k=st.integers(1, 4),
    tau=st.sampled_from([0.5, 0.0, -0.7, 2.0]),
    seed=st.integers(0, 2**32 - 1),
)
def test_never_exceeds_certified_rank(m, n, k, tau, seed):
    rng = np.random.default_rng(seed)
    L = rng.normal(size=(m, k))
    R = rng.normal(size=(n, k))
    X = (L @ R.T >= tau).astype(np.uint8)
    if not certify_rounding(X, L, R, tau=tau):
        return  # an entry too close to tau: no certificate, nothing to compare
    bound, info = vc_lower_bound(X, tau=tau, return_shattered=True)
    assert info["complete"]
    assert bound <= k
    _check_info(X, bound, info)
    # each of the four searches alone stays below the certified rank
    for P in (X.astype(bool), X.T.astype(bool)):
        assert _largest_shattered(P, None)[0] <= k
        assert _largest_shattered(P, None, complemented=True)[0] - 1 <= k


@settings(max_examples=25, deadline=None)
@given(
    m=st.integers(1, 9),
    n=st.integers(1, 9),
    density=st.sampled_from([0.1, 0.3, 0.5]),
    seed=st.integers(0, 2**32 - 1),
)
def test_never_exceeds_the_real_rank(m, n, density, seed):
    # round_0.5(X) = X: rrank_0.5(X) <= rank(X), a certified upper bound
    X = (np.random.default_rng(seed).random((m, n)) < density).astype(np.uint8)
    bound = vc_lower_bound(X)
    assert bound <= np.linalg.matrix_rank(X)
    assert bound == _expected_bound(X)


def test_real_data_with_complements():
    # the first 60 binary digits: columns 2, 3, 19, 20, 50, 54 are shattered by the
    # rows and their complements: rrank >= 5, where the plain VC dimension gives 4
    X = load_digits_binary().data[:60]
    bound, info = vc_lower_bound(X, time_limit=10, return_shattered=True)
    assert bound >= 5
    _check_info(X, bound, info)
    assert vc_lower_bound(X, complements=False) == 4


# -------------------------------------------------------------- invariances


@settings(max_examples=20, deadline=None)
@given(
    m=st.integers(1, 12),
    n=st.integers(1, 12),
    seed=st.integers(0, 2**32 - 1),
)
def test_invariant_under_permutation_duplication_transpose(m, n, seed):
    rng = np.random.default_rng(seed)
    X = (rng.random((m, n)) < rng.uniform(0.2, 0.8)).astype(np.uint8)
    bound = vc_lower_bound(X)
    Y = X[rng.permutation(m)][:, rng.permutation(n)]
    Y = np.vstack([Y, Y[: max(1, m // 2)]])
    Y = np.hstack([Y, Y[:, : max(1, n // 3)]])
    assert vc_lower_bound(Y) == bound
    assert vc_lower_bound(X.T) == bound


def test_tau_does_not_change_the_bound():
    X = _all_binary_rows(3)
    assert {vc_lower_bound(X, tau=t) for t in (0.5, 0, -1.5, 3)} == {3}


def test_sparse_dataframe_and_bool_inputs():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = (rng.random((20, 30)) < 0.3).astype(np.uint8)
    expected = vc_lower_bound(X)
    assert vc_lower_bound(sp.csr_matrix(X)) == expected
    assert vc_lower_bound(pd.DataFrame(X)) == expected
    assert vc_lower_bound(X.astype(bool)) == expected
    assert vc_lower_bound(X.astype(float).tolist()) == expected


def test_input_not_modified():
    rng = np.random.default_rng(1)
    X = (rng.random((15, 10)) < 0.5).astype(np.uint8)
    X_copy = X.copy()
    vc_lower_bound(X, return_shattered=True)
    np.testing.assert_array_equal(X, X_copy)


# --------------------------------------------------------------- time limit


def _hard_instance():
    # 40 random points against 1000 random concepts: shattered sets of size 8
    # exist and the exact search cannot finish in a fraction of a second
    return (np.random.default_rng(0).random((40, 1000)) < 0.5).astype(np.uint8)


@pytest.mark.parametrize("time_limit", [0.0, 0.3])
def test_time_limit_is_honoured(time_limit):
    X = _hard_instance()
    start = time.perf_counter()
    bound, info = vc_lower_bound(X, time_limit=time_limit, return_shattered=True)
    elapsed = time.perf_counter() - start
    # generous slack for a busy machine; the unlimited search takes far longer
    assert elapsed < time_limit + 2.0
    assert not info["complete"]
    assert bound >= 1
    _check_info(X, bound, info)


def test_time_limit_none_and_large_limit_complete():
    X = np.eye(6)
    assert vc_lower_bound(X, time_limit=None, return_shattered=True)[1]["complete"]
    assert vc_lower_bound(X, time_limit=100, return_shattered=True)[1]["complete"]


# --------------------------------------------------------------- bad inputs


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"tau": "a"}, TypeError, "tau"),
        ({"tau": float("nan")}, ValueError, "tau"),
        ({"tau": np.inf}, ValueError, "tau"),
        ({"time_limit": -1}, ValueError, "time_limit"),
        ({"time_limit": "1"}, ValueError, "time_limit"),
        ({"return_shattered": "yes"}, ValueError, "return_shattered"),
        ({"complements": 1}, ValueError, "complements"),
    ],
)
def test_bad_parameters(kwargs, error, match):
    with pytest.raises(error, match=match):
        vc_lower_bound(np.eye(3), **kwargs)


@pytest.mark.parametrize(
    "X, match",
    [
        (np.array([[0, 2], [1, 0]]), "not binary"),
        (np.array([[0.0, np.nan], [1.0, 0.0]]), "missing"),
        (np.zeros((0, 3)), "0 sample"),
        (np.zeros(3), "2-D|2D"),
    ],
)
def test_bad_matrices(X, match):
    with pytest.raises(ValueError, match=match):
        vc_lower_bound(X)


def test_deadline_checks_stop_setup_and_search(monkeypatch, counting_deadline):
    # a deadline expiring after N checks, for N from 0 to all the checks of the
    # complete search: no setup step or search step starts after it has expired,
    # it is checked only a few times more (once per search left, once for another
    # pass), and the bound found so far comes with a valid shattered set
    _vc = modules.vc

    X = (np.random.default_rng(3).random((24, 300)) < 0.3).astype(np.uint8)
    counter = counting_deadline()
    full, info = _vc._vc_bound(X, deadline=counter, return_shattered=True)
    assert info["complete"] and full >= 2
    n_checks = counter.calls
    assert n_checks > 20

    late = []
    for module in (_vc, modules.vc_search):  # the bound and its search's setup
        for name in ("_distinct_columns", "_pair_graph", "_extensions"):
            if not hasattr(module, name):
                continue
            original = getattr(module, name)

            def spy(*args, _original=original, _name=name, **kw):
                if deadline.passed():
                    late.append(_name)
                return _original(*args, **kw)

            monkeypatch.setattr(module, name, spy)
    for n in sorted({0, 1, 2, 3, 5, 8, n_checks // 3, n_checks // 2, n_checks - 2}):
        deadline = counting_deadline(n)
        bound, info = _vc._vc_bound(X, deadline=deadline, return_shattered=True)
        assert not late
        assert deadline.calls <= n + 6
        assert not info["complete"]
        assert 1 <= bound <= full
        _check_info(X, bound, info)


def test_class_counts_equal_the_product_with_the_class_indicator():
    # the sparse search counts a candidate's ones per class with one bincount over
    # its stored entries; the product with the class indicator it replaced
    class_counts = modules.vc_search._class_counts
    rng = np.random.RandomState(0)
    for _ in range(200):
        m, n = rng.randint(1, 40), rng.randint(1, 60)
        Q = (rng.rand(m, n) < 0.3 * rng.rand()).astype(np.uint8)
        n_classes = 1 << rng.randint(0, 5)
        code = rng.randint(0, n_classes, n)
        cand = rng.choice(m, rng.randint(0, m + 1), replace=False)
        indicator = np.zeros((n, n_classes), dtype=np.int64)
        indicator[np.arange(n), code] = 1
        got = class_counts(sp.csr_matrix(Q, dtype=np.int32), cand, code, n_classes)
        np.testing.assert_array_equal(got, Q[cand].astype(np.int64) @ indicator)


def test_a_search_stopped_by_steps_resumes_to_the_same_set():
    # the first 250 binary digits: the columns with complements shatter 7 rows
    X = load_digits_binary().data[:250].astype(bool)
    whole = _Shattering(X.T.copy(), True).run(Deadline(None))
    sliced = _Shattering(X.T.copy(), True)
    runs = 0
    while True:
        runs += 1
        size, rows, done = sliced.run(Deadline(None), max_steps=500)
        if done:
            break
    assert runs > 1 and done
    assert size == whole[0] == 7 and np.array_equal(rows, whole[1])


def test_without_a_time_limit_the_searches_take_turns_by_steps():
    # the first 50 binary digits: neither search with complements ends within its
    # first steps; they take turns, each running again with twice the steps
    vc = modules.vc
    calls = []

    class Recorded(_Shattering):  # the searches, with their turns recorded
        def run(self, deadline, best_size=0, extension=None, max_steps=None):
            out = super().run(deadline, best_size, extension, max_steps)
            calls.append((self.search.complemented, best_size, max_steps, out[2]))
            return out

    X = load_digits_binary().data[:50].astype(bool)
    bound, info = vc._vc_bound(X, return_shattered=True, search=Recorded)
    assert bound == vc_lower_bound(X)  # the searches are the package's own
    assert bound == 4 and info["complete"] and info["orientation"] == "rows"
    assert list(info["shattered"]) == [1, 2, 3, 4]
    first = vc._FIRST_STEPS
    assert [c[2] for c in calls[:4]] == [first] * 4  # the first pass: every search
    assert [c[3] for c in calls[2:4]] == [False, False]  # with complements: not done
    # their second turns, with twice the steps, complete them (for a 6: bound 5)
    assert calls[4:] == [(True, 5, 2 * first, True)] * 2
    # within a time limit the searches run by their shares of it, not by steps
    calls.clear()
    vc._vc_bound(X, deadline=Deadline(2), search=Recorded)
    assert calls and all(c[2] is None for c in calls)


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(1, 25),
    n=st.integers(1, 25),
    density=st.sampled_from([0.03, 0.2, 0.5, 0.9]),
    seed=st.integers(0, 2**32 - 1),
    complements=st.booleans(),
)
def test_sparse_input_is_searched_sparse_with_the_dense_result(
    m, n, density, seed, complements
):
    # the search reads the supports of a sparse matrix's lines (no dense copy):
    # same bound, same shattered set and witnesses as on the dense matrix, with
    # constant and majority lines (complemented line by line) among them
    rng = np.random.default_rng(seed)
    X = (rng.random((m, n)) < density).astype(np.float64)
    X[rng.integers(m)] = 1.0
    dense = vc_lower_bound(X, return_shattered=True, complements=complements)
    sparse = vc_lower_bound(
        sp.csr_matrix(X), return_shattered=True, complements=complements
    )
    assert sparse[0] == dense[0]
    for key in ("orientation", "complemented", "complete"):
        assert sparse[1][key] == dense[1][key]
    for key in ("shattered", "witnesses", "witness_complemented"):
        np.testing.assert_array_equal(sparse[1][key], dense[1][key])
    _check_info(X, sparse[0], sparse[1])


def test_sparse_search_makes_no_dense_copy(monkeypatch):
    # a sparse matrix's reduction and search never densify it (only single lines,
    # the few shattered rows, and blocks of the pair graph)
    X = sp.random(300, 200, density=0.03, random_state=3, format="csr")
    X.data[:] = 1.0
    expected = vc_lower_bound(X.toarray())
    shapes = []
    original = sp.csr_matrix.toarray

    def spy(self, *args, **kw):
        shapes.append(self.shape)
        return original(self, *args, **kw)

    monkeypatch.setattr(sp.csr_matrix, "toarray", spy)
    assert vc_lower_bound(X) == expected
    assert shapes and X.shape not in shapes and X.shape[::-1] not in shapes
