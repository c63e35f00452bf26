"""Sign-change orderings of the rows, for the Permutation bound.

Orders the rows of a binary matrix so that its columns change value as few times as
possible along the order (:func:`sign_change_ordering`); the bound and its factors are
in :mod:`sklearn_rrank._upper._permutation`. The heuristics (nearest neighbour, the
Kruskal
variant of Welzl's multiplicative-weights spanning tree, the spectral order, 2-opt
segment reversals) are the standard techniques the abstract of Alon, Moran and
Yehudayoff (COLT 2016) cites, reconstructed here and **[unverified]** as their exact
algorithm.
"""

import time
from numbers import Integral

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import minimum_spanning_tree
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params
from sklearn.utils.extmath import randomized_svd

from sklearn_rrank._core._validation import check_binary_matrix
from sklearn_rrank._search._skeleton import Deadline

__all__ = ["sign_change_ordering"]

#: the ordering heuristics, in the order "best" runs them (ties keep the earlier one)
_STRATEGIES = ("identity", "spectral", "nearest_neighbor", "kruskal_mw")


# full pairwise Hamming matrix up to this many distinct rows (int32: 100 MB)
# (_sign_change_ordering's dense_distances)
_MAX_DENSE_DISTANCES = 5000
# Kruskal-MW uses every pair of rows as a candidate edge while there are at most
# _MAX_ALL_PAIRS pairs (its all_pairs) and the pairs times the columns stay below
# _MAX_ALL_PAIRS_CELLS; otherwise k nearest neighbours + MST
_MAX_ALL_PAIRS_CELLS = 20_000_000
_MAX_ALL_PAIRS = 200_000
_N_NEIGHBORS = 16
# Kruskal-MW updates the column weights after at most this many rounds of edges
_MW_ROUNDS = 64
# candidate-edge differences are kept as a sparse matrix up to this many non-zeros
_MAX_SPARSE_DIFF = 10_000_000
# candidate reversals evaluated together in one vectorised 2-opt step
_TWO_OPT_BATCH = 64


# --------------------------------------------------------------------------------------
# sign changes and the reduced matrix
# --------------------------------------------------------------------------------------


def _column_changes(Bo):
    """Number of value changes of each column of a row-ordered matrix (ints)."""
    if Bo.shape[0] < 2:
        return np.zeros(Bo.shape[1], dtype=np.int64)
    return np.count_nonzero(Bo[1:] != Bo[:-1], axis=0).astype(np.int64)


def _reduce_matrix(B):
    """Distinct rows and distinct non-constant columns up to complement.

    Identical rows can sit next to each other in any good order (no column changes
    between them), constant columns never change, and a column and its complement
    change at the same places. So the ordering problem only needs the distinct rows
    and one column of each class {column, complement} that is not constant.

    Returns
    -------
    Bu : ndarray of shape (p, q), dtype bool
        Distinct rows in order of first occurrence, reduced columns, each column
        flipped so that its entry in the first row is 0.
    inverse : ndarray of shape (m,)
        ``inverse[i]`` is the distinct row of original row ``i``.
    ones : ndarray of shape (p,)
        Number of ones of each distinct row in the original (unflipped) columns.
    """
    B = np.asarray(B, dtype=bool)
    Bu, first, inverse = np.unique(B, axis=0, return_index=True, return_inverse=True)
    # distinct rows in order of first occurrence, so "identity" keeps the given order
    by_first = np.argsort(first, kind="stable")
    relabel = np.empty_like(by_first)
    relabel[by_first] = np.arange(len(by_first))
    Bu = Bu[by_first]
    inverse = relabel[np.asarray(inverse).ravel()]
    ones = Bu.sum(axis=1)
    nonconstant = Bu.any(axis=0) & ~Bu.all(axis=0)
    Bu = Bu[:, nonconstant]
    if Bu.shape[1]:
        Bu = Bu ^ Bu[0]
        Bu = np.unique(Bu, axis=1)
    return np.ascontiguousarray(Bu), inverse, ones


def _expand_order(unique_order, inverse):
    """Order of the original rows: the runs of identical rows in ``unique_order``."""
    rank = np.empty(len(unique_order), dtype=np.int64)
    rank[unique_order] = np.arange(len(unique_order))
    return np.argsort(rank[inverse], kind="stable")


def _key(changes):
    """Lexicographic score of an ordering: (max changes, total changes)."""
    if changes.size == 0:
        return (0, 0)
    return (int(changes.max()), int(changes.sum()))


# --------------------------------------------------------------------------------------
# Hamming distances
# --------------------------------------------------------------------------------------


def _hamming_rows(Bf, sizes, rows):
    """Hamming distances between the rows ``rows`` of ``Bf`` and all rows (int32).

    ``Bf`` is the 0/1 matrix as float32 (exact: partial sums of 0/1 products stay
    integers below 2**24 for fewer than 16.7 million columns).
    """
    G = Bf[rows] @ Bf.T
    D = sizes[rows, None] + sizes[None, :] - 2.0 * G
    return np.rint(D).astype(np.int32)


def _hamming_matrix(Bf, sizes):
    p = Bf.shape[0]
    D = np.empty((p, p), dtype=np.int32)
    step = max(1, 4_000_000 // max(p, 1))
    for start in range(0, p, step):
        rows = np.arange(start, min(p, start + step))
        D[rows] = _hamming_rows(Bf, sizes, rows)
    return D


# --------------------------------------------------------------------------------------
# ordering heuristics (all on the reduced matrix, distinct rows)
# --------------------------------------------------------------------------------------


def _order_identity(Bu, ones, rng, D, deadline):
    return np.arange(Bu.shape[0])


def _order_spectral(Bu, ones, rng, D, deadline):
    """Rows sorted by the first left singular vector of the column-centred matrix."""
    p, q = Bu.shape
    if p < 3 or q == 0:
        return np.arange(p)
    C = Bu.astype(np.float64)
    C -= C.mean(axis=0)
    if min(p, q) <= 60:
        u = np.linalg.svd(C, full_matrices=False)[0][:, 0]
    else:
        seed = int(rng.integers(0, 2**31 - 1))
        u = randomized_svd(C, 1, n_oversamples=10, n_iter=7, random_state=seed)[0]
        u = u[:, 0]
    return np.argsort(u, kind="stable")


def _order_nearest_neighbor(Bu, ones, rng, D, deadline):
    """Greedy path: start at the row with fewest ones, go to the nearest unvisited."""
    p = Bu.shape[0]
    if p < 3:
        return np.arange(p)
    if D is None:
        Bf = Bu.astype(np.float32)
        sizes = Bf.sum(axis=1)
    order = np.empty(p, dtype=np.int64)
    visited = np.zeros(p, dtype=bool)
    current = int(np.argmin(ones))
    big = np.iinfo(np.int32).max
    for t in range(p):
        order[t] = current
        visited[current] = True
        if t == p - 1:
            break
        row = D[current] if D is not None else _hamming_rows(Bf, sizes, [current])[0]
        dist = np.where(visited, big, row)
        current = int(np.argmin(dist))
    return order


def _candidate_edges(Bu, D, all_pairs=_MAX_ALL_PAIRS):
    """Candidate tree edges for Kruskal-MW: all pairs, or k-NN plus a Hamming MST."""
    p, q = Bu.shape
    n_pairs = p * (p - 1) // 2
    if n_pairs <= all_pairs and n_pairs * max(q, 1) <= _MAX_ALL_PAIRS_CELLS:
        a, b = np.triu_indices(p, k=1)
        return a.astype(np.int64), b.astype(np.int64)
    k = min(p - 1, _N_NEIGHBORS)
    if D is None:
        Bf = Bu.astype(np.float32)
        sizes = Bf.sum(axis=1)
    heads, tails = [], []
    step = max(1, 4_000_000 // p)
    for start in range(0, p, step):
        rows = np.arange(start, min(p, start + step))
        Dr = D[rows] if D is not None else _hamming_rows(Bf, sizes, rows)
        Dr = Dr.astype(np.int64)
        Dr[np.arange(len(rows)), rows] = np.iinfo(np.int64).max
        nn = np.argpartition(Dr, k - 1, axis=1)[:, :k]
        heads.append(np.repeat(rows, k))
        tails.append(nn.ravel())
    a = np.concatenate(heads)
    b = np.concatenate(tails)
    if D is not None:
        # distinct rows have distance >= 1, so no edge is lost as an implicit zero
        mst = minimum_spanning_tree(D).tocoo()
        a = np.concatenate([a, mst.row])
        b = np.concatenate([b, mst.col])
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    pairs = np.unique(lo * p + hi)
    return (pairs // p).astype(np.int64), (pairs % p).astype(np.int64)


class _EdgeCosts:
    """Weighted Hamming costs ``sum_j w_j [B_aj != B_bj]`` of the candidate edges.

    When the differences of all candidate edges have few non-zeros they are kept as a
    sparse matrix (one sparse product per evaluation); otherwise they are recomputed
    from the rows, in chunks, at every evaluation.
    """

    def __init__(self, Bu, a, b, D):
        self.Bu, self.a, self.b = Bu, a, b
        self.diff = None
        nnz = int(D[a, b].sum()) if D is not None else None
        if nnz is not None and nnz <= _MAX_SPARSE_DIFF:
            blocks = [
                sp.csr_matrix((Bu[a[sl]] != Bu[b[sl]]).astype(np.float32))
                for sl in self._chunks(len(a))
            ]
            self.diff = sp.vstack(blocks, format="csr")

    def _chunks(self, n):
        step = max(1, 2_000_000 // max(self.Bu.shape[1], 1))
        return [slice(start, start + step) for start in range(0, n, step)]

    def __call__(self, idx, w):
        if self.diff is not None:
            return (self.diff @ w)[idx]
        a, b = self.a[idx], self.b[idx]
        out = np.empty(len(idx))
        for sl in self._chunks(len(idx)):
            out[sl] = (self.Bu[a[sl]] != self.Bu[b[sl]]).astype(np.float32) @ w
        return out


def _order_kruskal_mw(Bu, ones, rng, D, deadline, all_pairs=_MAX_ALL_PAIRS):
    """Kruskal variant of Welzl's multiplicative-weights spanning tree, DFS preorder.

    Each column (a "range") has a weight, initially 1. An edge between two rows
    costs the total weight of the columns in which they differ. The cheapest edge
    joining two components is added to the tree and the weights of the columns it
    crosses are doubled, so later edges avoid crossing the same columns again. The
    depth-first preorder of the tree crosses each column at most twice as often as
    the tree does (a reconstruction).

    Two approximations keep this affordable on large inputs: the weights are updated
    after rounds of ``ceil((p - 1) / 64)`` edges (so exactly after every edge for up
    to 65 distinct rows), a column's weight being doubled once per edge of the round
    that crosses it; and when all pairs of rows would be too many, the candidate
    edges are the 16 nearest neighbours of each row plus a minimum Hamming spanning
    tree.
    """
    p, q = Bu.shape
    if p < 3 or q == 0:
        return np.arange(p)
    a, b = _candidate_edges(Bu, D, all_pairs)
    edge_costs = _EdgeCosts(Bu, a, b, D)
    log_w = np.zeros(q)
    alive = np.ones(len(a), dtype=bool)
    comp = np.arange(p)
    members = [[i] for i in range(p)]
    adjacency = [[] for _ in range(p)]
    per_round = -(-(p - 1) // _MW_ROUNDS)
    n_tree = 0
    while n_tree < p - 1 and alive.any():
        if deadline.expired():
            break
        idx = np.flatnonzero(alive)
        w = np.exp2(log_w - log_w.max()).astype(np.float32)
        cost = edge_costs(idx, w)
        taken = []
        for e in idx[np.argsort(cost, kind="stable")]:
            u, v = int(a[e]), int(b[e])
            cu, cv = comp[u], comp[v]
            if cu == cv:
                continue
            if len(members[cu]) < len(members[cv]):
                cu, cv = cv, cu
            comp[members[cv]] = cu
            members[cu].extend(members[cv])
            members[cv] = []
            adjacency[u].append(v)
            adjacency[v].append(u)
            taken.append(e)
            if len(taken) == per_round:
                break
        if not taken:
            break
        n_tree += len(taken)
        taken = np.asarray(taken)
        log_w += np.count_nonzero(Bu[a[taken]] != Bu[b[taken]], axis=0)
        alive &= comp[a] != comp[b]
    # depth-first preorder of every tree of the forest, roots by fewest ones
    order = np.empty(p, dtype=np.int64)
    seen = np.zeros(p, dtype=bool)
    pos = 0
    for root in np.argsort(ones, kind="stable"):
        if seen[root]:
            continue
        stack = [int(root)]
        seen[root] = True
        while stack:
            node = stack.pop()
            order[pos] = node
            pos += 1
            for nb in reversed(adjacency[node]):
                if not seen[nb]:
                    seen[nb] = True
                    stack.append(nb)
    return order


_ORDERINGS = {
    "identity": _order_identity,
    "spectral": _order_spectral,
    "nearest_neighbor": _order_nearest_neighbor,
    "kruskal_mw": _order_kruskal_mw,
}


def _score_key(changes):
    """Local-search score: (max, number of columns at the max, total)."""
    top = changes.max()
    return (int(top), int(np.count_nonzero(changes == top)), int(changes.sum()))


def _two_opt(Bu, order, n_moves, rng, deadline):
    """Segment-reversal local search lowering (max, #columns at max, total changes).

    Reversing ``order[i..j]`` changes only the two boundary adjacencies, so a move is
    evaluated in O(q). Moves are drawn in batches of 64 (half of them with an end at a
    change of a column that attains the maximum), evaluated together, and the best
    improving move of each batch is applied.
    """
    p, q = Bu.shape
    order = np.array(order, dtype=np.int64)
    if p < 3 or q == 0 or n_moves <= 0:
        return order
    Bo = Bu[order]
    changes = _column_changes(Bo).astype(np.int32)
    score = _score_key(changes)
    hot = None
    size = _TWO_OPT_BATCH
    half = size // 2
    for _ in range(-(-n_moves // size)):
        if deadline.expired():
            break
        if hot is None:  # gaps where a column attaining the maximum changes
            cols = np.flatnonzero(changes == score[0])
            hot = np.flatnonzero((Bo[1:, cols] != Bo[:-1, cols]).any(axis=1))
        i = rng.integers(0, p - 1, size=size)
        j = rng.integers(i + 1, p, size=size)
        if hot.size:
            t = rng.choice(hot, size=half)
            other = rng.integers(0, p, size=half)
            # left end just after the change (i = t + 1) or right end at it (j = t)
            left = rng.random(half) < 0.5
            i1 = np.where(left, t + 1, np.minimum(other, t))
            j1 = np.where(left, np.maximum(other, t + 1), t)
            ok = i1 < j1
            i[:half] = np.where(ok, i1, i[:half])
            j[:half] = np.where(ok, j1, j[:half])
        keep = ~((i == 0) & (j == p - 1))
        if not keep.all():
            i, j = i[keep], j[keep]
            if not i.size:
                continue
        Bi, Bj = Bo[i], Bo[j]
        Bl = Bo[np.maximum(i - 1, 0)]
        Br = Bo[np.minimum(j + 1, p - 1)]
        # bool.view(int8) is free; differences of 0/1 stay in int8
        dl = (Bl != Bj).view(np.int8) - (Bl != Bi).view(np.int8)
        dr = (Bi != Br).view(np.int8) - (Bj != Br).view(np.int8)
        dl *= (i > 0).astype(np.int8)[:, None]
        dr *= (j < p - 1).astype(np.int8)[:, None]
        new = changes + dl
        new += dr
        top = new.max(axis=1)
        n_top = np.count_nonzero(new == top[:, None], axis=1)
        total = new.sum(axis=1)
        best = np.lexsort((total, n_top, top))[0]
        cand = (int(top[best]), int(n_top[best]), int(total[best]))
        if cand < score:
            lo, hi = int(i[best]), int(j[best])
            order[lo : hi + 1] = order[lo : hi + 1][::-1].copy()
            Bo[lo : hi + 1] = Bo[lo : hi + 1][::-1].copy()
            changes = new[best]
            score = cand
            hot = None
    return order


def _sign_change_ordering(
    B,
    strategy,
    n_2opt,
    rng,
    deadline,
    verbose=0,
    *,
    dense_distances=_MAX_DENSE_DISTANCES,
    all_pairs=_MAX_ALL_PAIRS,
):
    """Ordering of the rows of a validated matrix; see :func:`sign_change_ordering`.

    ``deadline`` (a :class:`~sklearn_rrank._search._skeleton.Deadline`) is checked
    between
    the strategies and inside their loops. The pairwise distances are held as one
    matrix up to ``dense_distances`` distinct rows (else computed by blocks of
    rows), and Kruskal-MW takes every pair of rows as a candidate edge up to
    ``all_pairs`` pairs (else k nearest neighbours and a spanning tree).

    Returns
    -------
    order : ndarray of shape (m,)
    max_changes : int
    results : dict
        ``{strategy: (max_changes, total_changes)}`` for every strategy that ran.
    stopped : bool
        True when the deadline cut the search short.
    """
    m = B.shape[0]
    Bu, inverse, ones = _reduce_matrix(B)
    p = Bu.shape[0]
    strategies = _STRATEGIES if strategy == "best" else (strategy,)
    seeds = rng.randint(0, 2**31 - 1, size=len(strategies))
    if n_2opt is None:
        n_2opt = 100 * p
    D = None
    if p <= dense_distances and any(
        s in ("nearest_neighbor", "kruskal_mw") for s in strategies
    ):
        Bf = Bu.astype(np.float32)
        D = _hamming_matrix(Bf, Bf.sum(axis=1))
    results = {}
    best_key, best_order = None, None
    stopped = False
    for name, seed in zip(strategies, seeds, strict=True):
        if best_order is not None and deadline.expired():
            stopped = True
            break
        sub_rng = np.random.default_rng(seed)
        start = time.perf_counter()
        kw = {"all_pairs": all_pairs} if name == "kruskal_mw" else {}
        order = _ORDERINGS[name](Bu, ones, sub_rng, D, deadline, **kw)
        order = _two_opt(Bu, order, n_2opt, sub_rng, deadline)
        key = _key(_column_changes(Bu[order]))
        results[name] = key
        if verbose >= 2:
            print(
                f"[permutation] {name}: max changes {key[0]}, total {key[1]} "
                f"({time.perf_counter() - start:.2f} s)"
            )
        if best_key is None or key < best_key:
            best_key, best_order = key, order
        if deadline.expired():
            stopped = True
    full_order = _expand_order(best_order, inverse) if m else best_order
    return full_order, best_key[0], results, stopped


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "strategy": [StrOptions({"best", *_STRATEGIES})],
        "n_2opt": [Interval(Integral, 0, None, closed="left"), None],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def sign_change_ordering(X, *, strategy="best", n_2opt=None, random_state=None):
    """Order the rows so that the maximum number of changes per column is small.

    The number of *sign changes* of column ``j`` along an order of the rows is the
    number of consecutive rows (in that order) whose entries in column ``j`` differ.
    By the sign-change lemma (see ``_permutation._permutation_search``), an order with
    at most ``c`` changes in every column proves ``rrank_tau(X) <= c + 1``. Finding
    the best order is a bottleneck-TSP-like problem; this function uses heuristics,
    each followed by a 2-opt local search (random segment reversals, evaluated in
    batches):

    - ``"identity"``: the rows as given (identical rows grouped at their first
      occurrence, which never adds a change);
    - ``"spectral"``: rows sorted by the first left singular vector of the
      column-centred matrix (at most one change per column for one-dimensional
      halfspace matrices ``[P Q^T >= t]``, as measured in the notes);
    - ``"nearest_neighbor"``: a greedy Hamming-distance path from the row with the
      fewest ones;
    - ``"kruskal_mw"``: the Kruskal variant of Welzl's multiplicative-weights spanning
      tree (the technique Alon, Moran and Yehudayoff cite), visited in depth-first
      preorder;
    - ``"best"``: all of the above; the order with the lexicographically smallest
      (maximum, total) number of changes is kept.

    The search works on the distinct rows and on one column of each class {column,
    complement} that is not constant (this does not change any change count);
    identical rows are placed next to each other.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary data (no missing entries).
    strategy : {"best", "identity", "spectral", "nearest_neighbor", "kruskal_mw"}, \
default="best"
        Ordering heuristic.
    n_2opt : int or None, default=None
        Number of candidate segment reversals of the 2-opt search per strategy;
        None means 100 times the number of distinct rows, 0 disables the search.
    random_state : int, RandomState instance or None, default=None
        Seeds the spectral start vector and the 2-opt moves.

    Returns
    -------
    order : ndarray of shape (n_samples,), dtype int64
        A permutation of ``range(n_samples)``: ``X[order]`` is the ordered matrix.
    max_changes : int
        Maximum over the columns of the number of changes of ``X[order]``.

    Raises
    ------
    ValueError
        If ``X`` is not binary or holds missing entries, or a parameter is invalid.

    See Also
    --------
    rounding_rank_bounds : With ``methods=("permutation",)``, the rank bound an
        order proves.

    Notes
    -----
    Cost: O(p^2 q) for the Hamming distances of the ``p`` distinct rows and ``q``
    reduced columns, O(q) per 2-opt candidate, and for Kruskal-MW the sum over the
    tree edges of the non-zeros of the crossed columns of the candidate-edge
    difference matrix. The heuristics are reconstructions,
    **[unverified]** as the exact algorithm of Alon et al.

    References
    ----------
    N. Alon, S. Moran, A. Yehudayoff. Sign rank versus VC dimension. COLT 2016.
    E. Welzl. On spanning trees with low crossing numbers. 1992.
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 3, "Permutation algorithm".

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import sign_change_ordering
    >>> X = np.array([[1, 1, 0], [0, 0, 1], [1, 0, 0], [0, 0, 0]])
    >>> order, max_changes = sign_change_ordering(X, random_state=0)
    >>> int(max_changes)
    1
    >>> X[order].tolist()
    [[1, 1, 0], [1, 0, 0], [0, 0, 0], [0, 0, 1]]
    """
    B = check_binary_matrix(X, method="permutation")
    rng = check_random_state(random_state)
    order, max_changes, _, _ = _sign_change_ordering(
        B, strategy, n_2opt, rng, deadline=Deadline()
    )
    return order, max_changes
