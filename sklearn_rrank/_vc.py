"""VC-dimension lower bound on the rounding rank: :func:`vc_lower_bound`.

The rows of a binary matrix ``X`` are points and its columns are concepts (column
``j`` labels row ``i`` with ``X[i, j]``); a set ``S`` of rows is *shattered* by the
columns when the columns restricted to ``S`` realise all ``2**|S|`` labelings. The
size of the largest shattered set (the VC dimension of the columns on the rows) is a
lower bound on ``rrank_tau(X)`` for every threshold ``tau``, and so is the same
quantity with rows and columns swapped. So is the VC dimension of the columns
together with their complements, less one: a set ``S`` of rows is shattered by that
class when every labeling of ``S`` or its complement is realised by a column. See
:func:`vc_lower_bound` for the proofs.

The search for the largest shattered set is exact (a depth-first branch and bound)
and can be stopped by a time limit, after which the largest shattered set found so
far is still a valid lower bound.
"""

import math
from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.utils._param_validation import Interval, validate_params
from threadpoolctl import threadpool_limits

from sklearn_rrank._ranksearch import Deadline
from sklearn_rrank._validation import check_binary_matrix, check_tau

__all__ = ["vc_lower_bound"]

# The pair-compatibility matrix (which pairs of points are shattered) is stored as a
# dense boolean matrix only up to this many distinct points (64 MiB).
_MAX_PAIR_POINTS = 8192
# rows of the pair-compatibility matrix computed per block (bounds the float32 work)
_PAIR_BLOCK = 512
# below this fraction of ones the products of the search use scipy.sparse
_SPARSE_DENSITY = 0.05
# passes over the searches: later passes resume the searches that their share of
# the time limit stopped, with the time left
_MAX_PASSES = 3
# dense class indicators (concepts x classes, float32) up to this many entries
_DENSE_INDICATOR = 1 << 20
# rows of P packed, or columns transposed, between two checks of the deadline in the
# setup (a multiple of 8: the packed blocks concatenate to the whole)
_SETUP_BLOCK = 2048


class _Timeout(Exception):
    """Raised inside the search when the deadline has passed."""


def _distinct_columns(P, axis=0, deadline=None):
    """Indices of the first occurrence of each distinct column of ``P``.

    With ``axis=1``: of each distinct row (the columns of ``P.T``, without
    transposing). ``deadline`` is checked between the two passes.
    """
    # (ceil(m / 8), n) uint8 (axis=0), equal iff columns equal; by blocks of rows
    packed = np.concatenate(
        [
            _checked(deadline, np.packbits, P[start : start + _SETUP_BLOCK], axis=axis)
            for start in range(0, P.shape[0], _SETUP_BLOCK)
        ]
    )
    _check_time(deadline)
    _, first = np.unique(packed, axis=1 - axis, return_index=True)
    return np.sort(first)


def _points_and_concepts(P, complemented=False, deadline=None, cols=None):
    """Reduce a boolean matrix (rows = points, columns = concepts) for the search.

    Only distinct columns matter. A point constant over all concepts is in no
    shattered set of size >= 1; two points that are equal, or complementary, are
    never together in a shattered set (the labelings ``(1, 0)`` and ``(0, 1)``, or
    ``(1, 1)`` and ``(0, 0)``, are missing), and shattering is invariant under
    complementing a point's labels, so each point is kept once up to complement.

    With ``complemented=True`` the class is the columns together with their
    complements: each column is kept once up to complement (complemented if
    needed so that label 1 is its minority label; the class is the kept columns
    and their complements), and constant points are kept, since a point labelled
    0 by every column is labelled 1 by every complement.

    Each pass over ``P`` is followed by a check of ``deadline`` (raising
    ``_Timeout``); ``cols``, if given, are the distinct columns of ``P`` (from
    :func:`_distinct_columns`; only without ``complemented``).

    Returns
    -------
    Q : ndarray of shape (n_points, n_concepts), dtype uint8
        Reduced matrix: distinct points (non-constant ones only, unless
        ``complemented``), each complemented if needed so that label 1 is its
        minority label, against distinct concepts (up to complement if
        ``complemented``).
    point_index : ndarray of shape (n_points,), dtype intp
        Row of ``P`` each row of ``Q`` comes from.
    n_concepts : int
        Number of columns of ``Q``.
    """
    if complemented:
        col_sum = P.sum(axis=0)
        m = P.shape[0]
        flip = (2 * col_sum > m) | ((2 * col_sum == m) & P[0])
        P = P ^ flip[None, :]
        _check_time(deadline)
        cols = None
    if cols is None:
        cols = _distinct_columns(P, deadline=deadline)
        _check_time(deadline)
    n_concepts = len(cols)
    # row sums over the distinct columns (less the repeated ones: few), then one
    # copy of the rows and columns kept
    row_sum = P.sum(axis=1, dtype=np.int64)
    repeated = np.setdiff1d(np.arange(P.shape[1]), cols)
    if len(repeated):
        row_sum -= P[:, repeated].sum(axis=1, dtype=np.int64)
    _check_time(deadline)
    if complemented:
        keep = np.arange(P.shape[0])
    else:
        keep = np.flatnonzero((row_sum > 0) & (row_sum < n_concepts))
    if len(repeated):
        C = P[np.ix_(keep, cols)]
    else:  # C is only read
        C = P[keep] if len(keep) < P.shape[0] else P
    _check_time(deadline)
    # canonical representative up to complement: label 1 is the minority label
    # (ties: the first label is 0); this keeps sparse data sparse
    row_sum = row_sum[keep]
    flip = (2 * row_sum > n_concepts) | ((2 * row_sum == n_concepts) & C[:, 0])
    C = C ^ flip[:, None]
    packed = np.packbits(C, axis=1)
    _check_time(deadline)
    _, first = np.unique(packed, axis=0, return_index=True)
    first = np.sort(first)
    _check_time(deadline)
    return C[first].view(np.uint8), keep[first], n_concepts


def _pair_graph(Q, deadline):
    """Boolean matrix ``G[u, v]``: points ``u`` and ``v`` are shattered together.

    A pair is shattered iff all four label combinations occur among the concepts;
    the four counts come from one matrix product (sparse for sparse data; exact
    in float32 for fewer than 2**24 concepts).
    """
    m, n = Q.shape
    ones = Q.sum(axis=1, dtype=np.int64)
    if ones.sum() < _SPARSE_DENSITY * m * n:
        F = sp.csr_matrix(Q, dtype=np.int32)
        FT = F.T.tocsr()
    else:
        F = Q.astype(np.float32)
        FT = F.T
    _check_time(deadline)
    G = np.zeros((m, m), dtype=bool)
    # one BLAS thread: the products are small, and threads spinning on a busy
    # machine cost more than they save
    with threadpool_limits(limits=1, user_api="blas"):
        for start in range(0, m, _PAIR_BLOCK):
            _check_time(deadline)
            stop = min(start + _PAIR_BLOCK, m)
            both = F[start:stop] @ FT  # number of concepts labelling (1, 1)
            if sp.issparse(both):
                both = both.toarray()
            ones_u = ones[start:stop, None]
            G[start:stop] = (
                (both > 0)  # (1, 1) occurs
                & (both < ones_u)  # (1, 0) occurs
                & (both < ones[None, :])  # (0, 1) occurs
                & (both > ones_u + ones[None, :] - n)  # (0, 0) occurs
            )
    np.fill_diagonal(G, False)
    return G


def _check_time(deadline):
    if deadline is not None and deadline.expired():
        raise _Timeout


def _checked(deadline, func, *args, **kw):
    """``func(*args, **kw)`` after a check of ``deadline``."""
    _check_time(deadline)
    return func(*args, **kw)


def _transposed(P, deadline):
    """``np.ascontiguousarray(P.T)`` by blocks of columns, checking ``deadline``."""
    PT = np.empty(P.shape[::-1], dtype=P.dtype)
    for start in range(0, P.shape[1], _SETUP_BLOCK):
        _check_time(deadline)
        PT[start : start + _SETUP_BLOCK] = P[:, start : start + _SETUP_BLOCK].T
    return PT


def _extensions(Q, Q_sparse, cand, code, n_classes, complemented=False):
    """Mask of the candidates ``v`` such that ``S + {v}`` is shattered.

    ``code[j]`` is the labeling of the shattered set ``S`` by concept ``j`` packed
    into an integer; ``S + {v}`` is shattered iff within every class of concepts
    with equal ``code`` the point ``v`` gets both labels. The number of ones of
    each candidate in each class is one product with the (sparse) class indicator
    matrix; ``Q_sparse`` is ``Q`` as CSR for sparse data, else None.

    With ``complemented=True`` the concepts are the columns of ``Q`` and their
    complements: class ``p`` then holds the columns with code ``p`` and the
    complements of the columns with code ``~p = n_classes - 1 - p``, in which
    ``v`` has ``size(~p) - ones(v, ~p)`` ones.

    Also returns ``room``: for each candidate, ``floor(log2(min_p min(ones,
    zeros)))`` over the classes ``p`` (-1 if ``v`` is not an extension), an
    upper bound on how many more points a shattered set containing ``S + {v}``
    can have (within each class both the concepts labelling ``v`` with 1 and
    those labelling it with 0 must realise every labeling of the further points).
    """
    n = len(code)
    sizes = np.bincount(code, minlength=n_classes)
    if Q_sparse is None and n * n_classes <= _DENSE_INDICATOR:
        # small dense case: one float32 BLAS product (exact below 2**24 concepts)
        indicator = np.zeros((n, n_classes), dtype=np.float32)
        indicator[np.arange(n), code] = 1.0
        ones = (Q[cand].astype(np.float32) @ indicator).astype(np.int64)
    else:
        indicator = sp.csr_matrix(
            (np.ones(n, dtype=np.int32), code, np.arange(n + 1)),
            shape=(n, n_classes),
        )
        if Q_sparse is not None:
            ones = (Q_sparse[cand] @ indicator).toarray()
        else:
            ones = np.asarray(Q[cand] @ indicator)
    if complemented:
        ones = ones + sizes[::-1] - ones[:, ::-1]
        sizes = sizes + sizes[::-1]
    least = np.minimum(ones, sizes - ones).min(axis=1)
    room = np.full(len(cand), -1, dtype=np.int64)
    ok = least > 0
    room[ok] = np.floor(np.log2(least[ok])).astype(np.int64)
    return ok, room


class _Search:
    """Depth-first branch and bound for the largest shattered set of points.

    A node is a shattered set ``S`` with the list of candidates ``v`` (after the
    last element of ``S`` in a fixed order) such that ``S + {v}`` is shattered.
    Since every subset of a shattered set is shattered, a candidate rejected at a
    node is rejected in its whole subtree. Bounds used to cut the search:

    - a node with ``c`` candidates whose smallest class of concepts (concepts
      with the same labeling of ``S``) has ``q`` members can add at most
      ``min(c, floor(log2(q)))`` points: every class must realise all labelings
      of the added points (at the root: ``2**s <= #distinct concepts``);
    - a point labelled 1 by ``a`` concepts and 0 by ``b`` is in no shattered set
      larger than ``1 + floor(log2(min(a, b)))`` (both halves must shatter the
      rest), so points that cannot be in a set larger than the best one found are
      dropped;
    - pairs are pre-screened with one matrix product (all shattered sets are
      cliques of the graph of shattered pairs).

    With ``complemented=True`` the concepts are the columns of ``Q`` and their
    complements (``Q`` from ``_points_and_concepts(P, complemented=True)``): a
    class of concepts with labeling ``p`` of ``S`` also holds the complements of
    the columns with labeling ``~p``; every point gets both labels from ``n``
    concepts (no point cap beyond the root cap ``floor(log2(2 n))``) and every
    pair of reduced points (distinct up to complement) is shattered (no pair
    graph).
    """

    def __init__(
        self, Q, n_concepts, deadline, best_size=0, extension=None, complemented=False
    ):
        self.Q = Q
        self.complemented = complemented
        self.Q_sparse = None
        if Q.sum(dtype=np.int64) < _SPARSE_DENSITY * Q.size:
            blocks = range(0, Q.shape[0], _SETUP_BLOCK)
            self.Q_sparse = sp.vstack(
                [
                    _checked(deadline, sp.csr_matrix, Q[s : s + _SETUP_BLOCK])
                    for s in blocks
                ],
                format="csr",
                dtype=np.int32,
            )
        self.deadline = deadline
        # (size, later_deadline): once a set of this size is found, the search
        # may run until later_deadline
        self.extension = extension
        self.best_size = best_size
        self.best_set = None
        total = 2 * n_concepts if complemented else n_concepts
        self.cap = min(Q.shape[0], int(math.floor(math.log2(total))))
        if complemented:
            # each point is labelled 1 by n_concepts of the 2 n_concepts concepts
            self.point_cap = np.full(Q.shape[0], self.cap, dtype=np.int64)
        else:
            ones = Q.sum(axis=1, dtype=np.int64)
            balance = np.minimum(ones, n_concepts - ones)  # >= 1 for reduced points
            self.point_cap = 1 + np.floor(np.log2(balance)).astype(np.int64)
        self.G = None
        self.n_nodes = 0
        self.stack = None  # the depth-first stack, kept across timeouts

    def run(self):
        """Search (or resume a search stopped by the deadline) until done.

        Raises ``_Timeout`` at the deadline; the search state is kept, so a later
        call (with a later ``self.deadline``) continues where it stopped.
        """
        if self.stack is None:
            self._setup()  # a timeout here redoes the setup on the next call
        while self.stack:
            self._step()

    def _setup(self):
        m, n = self.Q.shape
        if m == 0:
            self.stack = []
            return
        self._record([0])  # every reduced point gets both labels
        if self.complemented and min(m, self.cap) >= 2:
            self._record([0, 1])  # distinct up to complement: a shattered pair
        cand = np.flatnonzero(self.point_cap > self.best_size)
        if self.best_size >= self.cap or len(cand) == 0:
            self.stack = []
            return
        degree = np.zeros(m, dtype=np.int64)
        if not self.complemented and len(cand) <= _MAX_PAIR_POINTS:
            if self.G is None:
                G = np.zeros((m, m), dtype=bool)
                G[np.ix_(cand, cand)] = _pair_graph(self.Q[cand], self.deadline)
                self.G = G
            degree = self.G.sum(axis=1)
            cand = cand[degree[cand] >= self.best_size]  # clique of size best + 1
        # most promising points first (largest cap, then pair degree): the first
        # dive finds a large set, and candidate lists stay sorted by cap
        cand = cand[np.lexsort((-degree[cand], -self.point_cap[cand]))]
        self.n_nodes += 1
        root = [[], np.zeros(n, dtype=np.int64), cand, self.point_cap[cand]]
        self.stack = [root + [self.cap, 0]]

    def _record(self, S):
        if len(S) > self.best_size:
            self.best_size = len(S)
            self.best_set = list(S)

    def _step(self):
        """Try the next candidate of the node on top of the stack.

        A node is ``[S, code, cand, limit, depth_left, i]``: the shattered set, the
        labelings of ``S`` by the concepts, the candidates, ``limit[t]`` the
        largest possible size of a shattered set containing ``S + {cand[t]}``, the
        most points that can still be added, and the next candidate to try. The
        deadline is checked before anything changes, so a search stopped by
        ``_Timeout`` resumes exactly where it was.
        """
        if self.extension is not None and self.best_size >= self.extension[0]:
            self.deadline = self.extension[1]
            self.extension = None
        _check_time(self.deadline)
        node = self.stack[-1]
        S, code, cand, limit, depth_left, i = node
        s = len(S)
        if i >= len(cand):
            self.stack.pop()
            return
        v = cand[i]
        remaining = cand[i + 1 :]
        if self.point_cap[v] <= self.best_size:
            self.stack.pop()  # candidates are sorted by decreasing point cap
            return
        if s + 1 + min(len(remaining), depth_left - 1) <= self.best_size:
            self.stack.pop()  # later candidates have even fewer successors
            return
        node[5] = i + 1
        if limit[i] <= self.best_size:
            return
        child = S + [v]
        self._record(child)
        if self.best_size >= self.cap:
            self.stack = []  # nothing larger exists
            return
        child_code = 2 * code + self.Q[v]
        n_classes = 1 << (s + 1)
        counts = np.bincount(child_code, minlength=n_classes)
        if self.complemented:
            counts = counts + counts[::-1]  # class p also holds ~p's complements
        smallest = int(counts.min())
        child_depth = int(math.floor(math.log2(smallest)))
        if child_depth == 0 or len(remaining) == 0:
            return
        keep = self.point_cap[remaining] > self.best_size
        if self.G is not None:
            keep &= self.G[v, remaining]
        remaining = remaining[keep]
        if s + 1 + min(len(remaining), child_depth) <= self.best_size:
            return
        ok, room = _extensions(
            self.Q, self.Q_sparse, remaining, child_code, n_classes, self.complemented
        )
        child_limit = s + 2 + room
        keep = ok & (child_limit > self.best_size)
        remaining, child_limit = remaining[keep], child_limit[keep]
        if s + 1 + min(len(remaining), child_depth) <= self.best_size:
            return
        self.n_nodes += 1
        self.stack.append([child, child_code, remaining, child_limit, child_depth, 0])


class _Shattering:
    """A resumable search for the largest set of rows of ``P`` shattered by its
    columns (with ``complemented``: by the columns and their complements).

    The reduction (:func:`_points_and_concepts`, ``cols`` passed on) raises
    ``_Timeout`` when ``deadline`` passes.
    """

    def __init__(self, P, complemented=False, deadline=None, cols=None):
        Q, self.point_index, n_concepts = _points_and_concepts(
            P, complemented, deadline, cols
        )
        self.search = _Search(Q, n_concepts, deadline, complemented=complemented)
        _check_time(deadline)
        self.complete = False

    def run(self, deadline, best_size=0, extension=None):
        """Look for a set larger than ``best_size`` until ``deadline``.

        ``extension`` is an optional pair ``(size, later_deadline)``: once a set
        of that size is found the search may run until ``later_deadline``.
        Returns ``(size, rows, complete)``: ``rows`` are row indices of ``P``
        (None if no set larger than ``best_size`` was found, then ``size`` is
        ``best_size``); ``complete`` is False if the deadline stopped the search,
        which a later call resumes.
        """
        search = self.search
        if best_size >= search.best_size:
            search.best_size, search.best_set = best_size, None
        search.deadline, search.extension = deadline, extension
        try:
            search.run()
            self.complete = True
        except _Timeout:
            # a shattered pair needs no search once the pair graph is known
            if search.best_size < 2 and search.G is not None:
                pairs = np.argwhere(search.G)
                if len(pairs):
                    search.best_size, search.best_set = 2, list(pairs[0])
        if search.best_set is None or search.best_size <= best_size:
            return best_size, None, self.complete
        rows = np.sort(self.point_index[np.asarray(search.best_set, dtype=np.intp)])
        return search.best_size, rows, self.complete


def _largest_shattered(P, deadline, best_size=0, extension=None, complemented=False):
    """Largest set of rows of boolean ``P`` shattered by its columns.

    With ``complemented=True``: shattered by the columns and their complements.
    Only sets larger than ``best_size`` are searched for; ``extension`` is an
    optional pair ``(size, later_deadline)``: once a set of that size is found the
    search may run until ``later_deadline`` instead of ``deadline``. Returns
    ``(size, rows, complete, n_nodes)`` where ``rows`` are row indices of ``P``
    (None if no set larger than ``best_size`` was found) and ``complete`` is False
    if the deadline stopped the search.
    """
    shattering = _Shattering(P, complemented)
    size, rows, complete = shattering.run(deadline, best_size, extension)
    return size, rows, complete, shattering.search.n_nodes


def _cap(n_points, n_distinct, complemented=False):
    """Trivial upper bound on the size of a set of points shattered by concepts.

    ``n_distinct`` distinct concepts; with ``complemented=True`` the concepts and
    their complements (at most twice as many distinct ones).
    """
    n_concepts = n_distinct * (2 if complemented else 1)
    return min(n_points, int(math.floor(math.log2(n_concepts))))


def _witnesses(P, rows, complemented=False):
    """For each labeling ``p`` of ``rows``, the first column of ``P`` realising it.

    Labeling ``p`` gives ``rows[t]`` the label ``(p >> t) & 1``. Raises
    ``AssertionError`` if some labeling is not realised (the set is not shattered).
    Returns ``(first, flipped)``: ``flipped[p]`` is True if labeling ``p`` is
    realised by the complement of column ``first[p]`` (only if ``complemented``:
    columns realising ``p`` themselves are preferred).
    """
    s = len(rows)
    weights = np.left_shift(1, np.arange(s, dtype=np.int64))
    code = weights @ P[rows].astype(np.int64) if s else np.zeros(P.shape[1], int)
    first = np.full(1 << s, -1, dtype=np.intp)
    # reverse order so that the first occurrence wins
    first[code[::-1]] = np.arange(P.shape[1] - 1, -1, -1)
    flipped = np.zeros(1 << s, dtype=bool)
    if complemented:
        # the complement of a column with code c has code ~c = 2**s - 1 - c
        first_c = first[::-1]
        flipped = (first < 0) & (first_c >= 0)
        first = np.where(flipped, first_c, first)
    if (first < 0).any():  # pragma: no cover - would be a bug in the search
        raise AssertionError("internal error: the returned set is not shattered")
    return first, flipped


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "tau": [Real],
        "time_limit": [Interval(Real, 0, None, closed="left"), None],
        "return_shattered": ["boolean"],
        "complements": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def vc_lower_bound(
    X, *, tau=0.5, time_limit=None, return_shattered=False, complements=True
):
    """Lower bound on the rounding rank from the VC dimension of rows and columns.

    Each column of ``X`` is read as a labeling of the rows (a concept on the set of
    rows); a set ``S`` of rows is *shattered* if the columns restricted to ``S``
    realise all ``2**|S|`` labelings, i.e. ``X[S, :]`` has ``2**|S|`` distinct
    columns. The largest shattered set (the VC dimension of the columns on the
    rows) is a lower bound on ``rrank_tau(X)``, and so is the same quantity with
    rows and columns swapped. With ``complements=True`` (the default) the columns
    together with their complements (``1 - X[:, j]``) are searched as well: the
    largest set ``S`` they shatter (every labeling of ``S`` or its complement is
    a column of ``X[S, :]``) proves ``rrank_tau(X) >= |S| - 1``, and again with
    rows and columns swapped. The largest of these (up to four) bounds is
    returned::

        bound = max(VC(cols), VC(rows), VCc(cols) - 1, VCc(rows) - 1)

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary matrix (0/1, bool, int or float; no missing entries). Sparse input
        is converted to a dense boolean array (one byte per entry).
    tau : float, default=0.5
        Rounding threshold. The bound holds for every finite ``tau`` (see Notes),
        so ``tau`` is only validated; the result does not depend on it.
    time_limit : float or None, default=None
        Time budget in seconds for both searches together (``None``: no limit).
        When it runs out, the largest shattered set found so far is returned and
        ``info["complete"]`` is False; the value is still a valid lower bound.
        The preprocessing and the last node started may overrun it slightly.
    return_shattered : bool, default=False
        If True, also return a dictionary describing the shattered set.
    complements : bool, default=True
        Also search the sets shattered by the columns (rows) together with their
        complements (the bound ``|S| - 1``). False gives the plain bound only,
        ``max(VC(cols), VC(rows))``, with the whole time limit for it.

    Returns
    -------
    bound : int
        The largest bound found, ``<= rrank_tau(X)``: the size of the largest
        shattered set found, less one if it is shattered only with complements.
        It is the exact maximum of the (up to four) bounds if the searches
        completed.
    info : dict
        Only if ``return_shattered`` is True. Keys:

        - ``"orientation"``: ``"rows"`` if the shattered set is a set of rows
          (shattered by the columns), ``"columns"`` if it is a set of columns
          (shattered by the rows).
        - ``"complemented"``: bool, True if the bound comes from a set shattered
          by the lines together with their complements (then ``bound =
          len(shattered) - 1``); False for the plain bound (``bound =
          len(shattered)``). Ties go to the plain bound.
        - ``"shattered"``: ndarray of int, sorted indices of the shattered rows or
          columns (empty if ``bound == 0`` from the plain class).
        - ``"witnesses"``: ndarray of shape ``(2**len(shattered),)``; entry ``p``
          is the index of a column (orientation ``"rows"``) or row
          (``"columns"``) that realises labeling ``p``, i.e. gives the ``t``-th
          shattered index the label ``(p >> t) & 1``, or whose complement does
          (see the next key): a certificate that can be checked directly.
        - ``"witness_complemented"``: bool ndarray of shape
          ``(2**len(shattered),)``, True where the complement of the witness
          line realises the labeling (all False unless ``"complemented"``).
        - ``"sizes"``: dict ``{"rows": int or None, "columns": int or None}``, the
          largest set found in each orientation by the plain class. A search
          only looks for sets that beat the best bound found before it; its
          entry is None if it was skipped (its trivial upper bound ``min(#lines,
          floor(log2(#distinct other lines)))`` cannot beat the best bound) or
          found no set that beats it.
        - ``"complemented_sizes"``: the same for the sets shattered with
          complements (set sizes, i.e. one more than the bounds they prove; the
          trivial upper bound uses ``2 #distinct other lines``).
        - ``"complete"``: bool, False if the time limit stopped a search before it
          proved that no larger shattered set exists.
        - ``"seconds"``: float, wall-clock time used.
        - ``"n_nodes"``: int, search nodes visited.

    Raises
    ------
    ValueError
        If ``X`` is empty, not 2-D, not binary or holds missing entries, or if
        ``tau`` is not finite or ``time_limit`` is negative.
    TypeError
        If ``X`` does not hold numbers or ``tau`` is not a real number.

    See Also
    --------
    sklearn_rrank.certify_rounding : check an upper-bound certificate.

    Notes
    -----
    **Claim.** For every finite ``tau`` and every binary ``X``,
    ``rrank_tau(X) >= VC(columns on rows)`` and ``rrank_tau(X) >= VC(rows on
    columns)``; the VC dimension of a class with at least one concept is at least
    0 (the empty set is shattered), so constant matrices give 0. Moreover
    ``rrank_tau(X) >= VCc(columns on rows) - 1`` and ``rrank_tau(X) >= VCc(rows
    on columns) - 1``, where ``VCc`` is the VC dimension of the columns (rows)
    together with their complements.

    **Proof.** Let ``X = round_tau(L R^T)`` with ``L`` of shape (m, d), ``R`` of
    shape (n, d), ``d = rrank_tau(X)``. Row ``i`` is the point ``x_i = L[i]`` of
    ``R^d`` and column ``j`` the concept ``h_j = {x : <x, c_j> >= tau}`` with
    ``c_j = R[j]``, since ``X[i, j] = 1`` iff ``<x_i, c_j> >= tau``. A set of rows
    shattered by the columns is a set of ``|S|`` distinct points shattered by the
    class ``H = {h_c : c in R^d}``, so it suffices to show that no ``d + 1``
    points ``x_1, ..., x_{d+1}`` (repetitions allowed) are shattered by ``H``.

    *Case tau = 0* (homogeneous closed half-spaces, and ``h_0 = R^d``): the points
    are linearly dependent, ``sum_i a_i x_i = 0`` with ``a != 0``; negate ``a`` if
    needed so that ``P = {i : a_i > 0}`` is non-empty, and let
    ``N = {i : a_i < 0}``. The labeling "0 on ``P``, 1 on ``N``" (anything
    elsewhere) is not realised: it would need ``<x_i, c> < 0`` on ``P`` and
    ``>= 0`` on ``N``, so ``0 = sum_i a_i <x_i, c> < 0``.

    *Case tau != 0* (the issue's Radon argument): ``x_1, ..., x_{d+1}`` and the
    origin are ``d + 2`` points of ``R^d``, so by Radon's theorem they split into
    two parts ``A`` (containing the origin) and ``B`` with intersecting convex
    hulls; ``B`` consists of some of the ``x_i`` and is non-empty. For
    ``tau > 0``, ``h_c`` is a closed half-space (or empty, if ``c = 0``) that does
    not contain the origin, and its complement ``{<x, c> < tau}`` is convex. If a
    concept gave label 1 to ``B`` and 0 to ``A`` minus the origin, then
    ``conv(B)`` would lie in ``h_c`` and ``conv(A)`` in its complement (which
    contains the origin), contradicting ``conv(A) & conv(B) != {}``. For
    ``tau < 0`` the same holds for the complements: ``{<x, c> < tau}`` is an
    open half-space (or empty) not containing the origin and ``h_c`` is convex,
    so the labeling "0 on ``B``, 1 on ``A`` minus the origin" is not realised.
    (Equivalently, the VC dimension of a class equals that of its complements.)
    In both cases some labeling of ``x_1, ..., x_{d+1}`` is missing, so
    ``VC(H) <= d``. Algebraic check of both signs: write the affine dependence
    as ``sum_{i>=0} a_i x_i = 0``, ``sum_{i>=0} a_i = 0`` with ``x_0 = 0`` (not
    all of ``a_1, ..., a_{d+1}`` are 0); for ``f(x) = <x, c> - tau`` it gives
    ``sum_{i>=1} a_i f(x_i) = tau * a_0``. Choose the sign of ``a`` with
    ``tau * a_0 >= 0`` and suppose a concept labels ``P = {i >= 1 : a_i > 0}``
    with 0 (``f < 0``) and ``N = {i >= 1 : a_i < 0}`` with 1 (``f >= 0``). Every
    term on the left is then ``<= 0``, and ``< 0`` on ``P``. If ``P`` is
    non-empty the left side is negative; if ``P`` is empty then ``N`` is not,
    ``a_0 = -sum_{i>=1} a_i > 0``, hence ``tau > 0`` and the right side is
    positive. Either way the labeling is not realised.

    For rows and columns swapped, ``X^T = round_tau(R L^T)`` has the same rounding
    rank and the same argument applies. This proves the plain bound for every
    ``tau``.

    **Proof with complements.** With ``x_i`` and ``h_j`` as above, the complement
    of the concept of column ``j`` is ``{x : <x, c_j> < tau} = {x : <x, -c_j> >
    -tau}``, an open affine half-space (``R^d`` or empty if ``c_j = 0``). Let
    ``G`` be the class of all closed and all open affine half-spaces ``{x : <x,
    w> >= b}``, ``{x : <x, w> > b}`` (``w`` in ``R^d``, ``b`` real; ``w = 0``
    gives ``R^d`` and the empty set). Every ``h_j`` and every complement is in
    ``G``, and every member of ``G`` is convex with a convex complement (the
    complement is again in ``G``). No ``d + 2`` points ``y_1, ..., y_{d+2}`` of
    ``R^d`` are shattered by ``G``: if two coincide, no set separates them;
    otherwise Radon's theorem splits them into two non-empty parts ``I`` and
    ``J`` with ``conv(I) & conv(J) != {}``, and a set ``g`` in ``G`` with label 1
    on ``I`` and 0 on ``J`` would give ``conv(I)`` inside ``g`` and ``conv(J)``
    inside its complement, which are disjoint. So ``VC(G) <= d + 1``. A set
    ``S`` of rows shattered by the columns and their complements is a set of
    ``|S|`` points ``x_i`` shattered by a subclass of ``G`` (two rows of ``S``
    with the same point would get the same label from every concept, so the
    points are distinct when ``|S| >= 2``), hence ``|S| <= d + 1``, i.e.
    ``rrank_tau(X) >= |S| - 1``; the same holds for ``X^T``. The offset by one
    is the price of the complements: they have the threshold ``-tau`` and so
    leave the fixed-offset class of the plain bound, whose VC dimension is at
    most ``d``. The complemented bound beats the plain one only when ``VCc >=
    VC + 2``. Example: for the ``n x n`` identity, ``n >= 4``, the plain bound
    is 1, while rows ``{0, 1, 2}`` are shattered by the columns and their
    complements (labelings with at most one 1 by columns ``e_j``, with at most
    one 0 by their complements, using a fourth column for the constant ones),
    so the bound is 2, which is ``rrank_0.5`` (for ``n >= 3``). The bounds are
    not attained in general.

    **Search.** Exact depth-first branch and bound over sets of points:
    duplicate columns are removed (only distinct concepts matter); constant points
    are dropped and points are identified up to complement (equal or
    complementary points are never shattered together); a set is extended only
    by points that keep it shattered (a subset of a shattered set is shattered,
    so rejected points stay rejected in the subtree; pairs are pre-screened with
    one matrix product); and a branch is cut when ``|S| + min(#candidates,
    floor(log2(q)))`` cannot beat the best set, ``q`` being the size of the
    smallest class of concepts with equal labels on ``S`` (each class must
    realise every labeling of the points still to be added; at the root this is
    ``2**s <= #distinct concepts``); a point labelled 1 by ``a`` and 0 by ``b``
    distinct concepts is in no shattered set larger than
    ``1 + floor(log2(min(a, b)))``, so it is dropped once that cannot beat the
    best set. Deeper in the tree the same holds per class: a candidate ``v``
    that gets ``a`` ones and ``b`` zeros in the sparsest class of ``S`` is in no
    shattered set larger than ``|S| + 1 + floor(log2(min(a, b)))``.

    For the class with complements each column is kept once up to complement,
    and the search runs on the kept columns: a class of concepts with labeling
    ``p`` of ``S`` holds the columns labelling ``S`` with ``p`` and the
    complements of those labelling it with ``~p``; constant points are kept (a
    point labelled 0 by all columns is labelled 1 by all complements), and no
    pair graph is needed (any two points distinct up to complement are
    shattered).

    The searches (plain rows, plain columns, then, with ``complements``, the
    same with complements) are ordered by their trivial upper bounds on the
    bound they can prove (plain first on ties). Each one only looks for a set
    that beats the best bound so far and is skipped when its trivial upper
    bound cannot; under a time limit it gets an equal share of the time left
    with the later searches that could still beat the best bound, and may run
    to the end of the time limit once it finds a set that none of them can beat.
    Time left after a pass goes to the searches stopped by their shares: they
    resume where they stopped (at most twice), now looking only for sets that
    beat the best bound.

    References
    ----------
    .. [1] S. Neumann, R. Gemulla, P. Miettinen. What You Will Gain By Rounding:
       Theory and Algorithms for Rounding Rank. ICDM 2016, Section 3
       (geometric view: rows as points, columns as affine hyperplanes with
       offset ``tau``).
    .. [2] N. Alon, S. Moran, A. Yehudayoff. Sign rank versus VC dimension.
       COLT 2016 (sign rank is at least the VC dimension).
    .. [3] J. Radon. Mengen konvexer Koerper, die einen gemeinsamen Punkt
       enthalten. Math. Ann. 83, 1921 (used for the complements: affine
       half-spaces, open or closed, have VC dimension ``d + 1`` in ``R^d``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import vc_lower_bound
    >>> vc_lower_bound(np.eye(3))
    1
    >>> all_rows = [[(i >> t) & 1 for t in range(3)] for i in range(8)]
    >>> bound, info = vc_lower_bound(all_rows, return_shattered=True)
    >>> bound, info["orientation"], info["shattered"].tolist()
    (3, 'columns', [0, 1, 2])
    >>> bound, info = vc_lower_bound(np.eye(5), return_shattered=True)
    >>> bound, info["complemented"], info["shattered"].tolist()
    (2, True, [0, 1, 2])
    >>> vc_lower_bound(np.eye(5), complements=False)
    1
    """
    check_tau(tau)
    X = check_binary_matrix(X, accept_sparse=True, input_name="X")
    return _vc_bound(
        X,
        deadline=Deadline(time_limit),
        return_shattered=return_shattered,
        complements=complements,
    )


def _vc_bound(X, *, deadline=None, return_shattered=False, complements=True):
    """:func:`vc_lower_bound` on validated ``X`` (the bound does not depend on tau).

    ``deadline`` is a :class:`~sklearn_rrank._ranksearch.Deadline` (None: no limit).
    """
    deadline = Deadline.coerce(deadline)
    P = (X != 0).toarray() if sp.issparse(X) else X.astype(bool)

    # the columns' view (a transposed copy) is made when a search needs it
    views = {"rows": P, "columns": None}
    n_points = {"rows": P.shape[0], "columns": P.shape[1]}
    # the distinct concepts of each view (the distinct columns and rows of P):
    # the caps, and the reductions of the plain searches; every step of the setup
    # is followed by a check of the deadline
    distinct = {}
    try:
        distinct["rows"] = _distinct_columns(P, deadline=deadline)
        _check_time(deadline)
        distinct["columns"] = _distinct_columns(P, axis=1, deadline=deadline)
        _check_time(deadline)
    except _Timeout:
        pass
    # a search is (orientation, complemented); a set of size s shattered by the
    # complemented class proves the bound s - 1, so its cap (in bound units) and
    # the size it must beat are shifted by one
    searches = []
    if len(distinct) == 2:  # else stopped before the caps were known
        searches = [(name, False) for name in views]
        if complements:
            searches += [(name, True) for name in views]
    caps = {
        (name, c): _cap(n_points[name], len(distinct[name]), c) - int(c)
        for name, c in searches
    }
    order = sorted(searches, key=lambda key: -caps[key])  # stable: plain first

    sizes = {"rows": None, "columns": None}
    complemented_sizes = {"rows": None, "columns": None}
    best_key = order[0] if order else ("rows", False)
    best_bound, best_set = 0, np.zeros(0, dtype=np.intp)
    if best_key[1]:
        best_key = (best_key[0], False)  # bound 0: the empty set, plain class
    searchers = {}  # key -> _Shattering, kept so that a stopped search resumes
    queue, unfinished, passes = list(order), set(), 1
    while queue:
        key = queue.pop(0)
        name, comp = key
        record = complemented_sizes if comp else sizes
        if best_bound >= caps[key]:
            # this search cannot beat the current best (exactly 0 if cap 0)
            unfinished.discard(key)
            if caps[key] + int(comp) == 0:
                record[name] = 0
            continue
        offset = int(comp)
        own_deadline, extension = deadline, None
        later = [caps[other] for other in queue if caps[other] > best_bound]
        if deadline.limited and later:
            # leave a fair share of the budget to the later searches, unless a set
            # is found that none of them can beat
            own_deadline = deadline.child(fraction=1 / (1 + len(later)))
            extension = (max(later) + offset, deadline)
        try:
            if views[name] is None:
                views[name] = _transposed(P, deadline)
            if key not in searchers:
                # the reduction is checked against the whole deadline, not the
                # share: once made, it serves every later pass
                cols = None if comp else distinct[name]
                searchers[key] = _Shattering(views[name], comp, deadline, cols)
            size, rows, done = searchers[key].run(
                own_deadline, best_size=best_bound + offset, extension=extension
            )
        except _Timeout:  # stopped in the reduction by the deadline: the end
            size, rows, done = best_bound + offset, None, False
        if done:
            unfinished.discard(key)
        else:
            unfinished.add(key)
        if rows is not None:
            best_bound, best_key, best_set = size - offset, key, rows
            record[name] = size
        elif best_bound == 0 and not comp:
            record[name] = 0
        if not queue and unfinished and passes < _MAX_PASSES:
            # time left after a pass goes to the searches stopped by their
            # shares: they resume, looking only for sets beating the best
            if not deadline.expired():
                queue = [other for other in order if other in unfinished]
                passes += 1
    complete = not unfinished and len(distinct) == 2
    if best_bound == 0 and not complete:
        # stopped before any search found a set: a row that is not constant is
        # shattered by the columns (one pass, no reduction)
        row = np.flatnonzero(P.any(axis=1) & ~P.all(axis=1))[:1]
        if len(row):
            best_bound, best_key, best_set = 1, ("rows", False), row
            sizes["rows"] = 1
    n_nodes = sum(sh.search.n_nodes for sh in searchers.values())
    if not return_shattered:
        return int(best_bound)
    name, comp = best_key
    view = P.T if views[name] is None else views[name]  # best_set empty if None
    witnesses, flipped = _witnesses(view, best_set, comp)
    info = {
        "orientation": name,
        "complemented": bool(comp),
        "shattered": best_set,
        "witnesses": witnesses,
        "witness_complemented": flipped,
        "sizes": sizes,
        "complemented_sizes": complemented_sizes,
        "complete": bool(complete),
        "seconds": deadline.elapsed(),
        "n_nodes": int(n_nodes),
    }
    return int(best_bound), info
