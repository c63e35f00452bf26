"""The search for a largest shattered set behind the VC bound (``_vc``).

A depth-first branch and bound over the distinct points (rows) and concepts
(columns), optionally with the complemented concepts, with its setup (distinct
lines, the pair-compatibility graph, transposed views) checking the call's
``Deadline`` by blocks. :class:`_Shattering` is a resumable search;
:func:`_largest_shattered` runs one to its end or to the deadline. The bound itself,
its proofs and the passes over both orientations are in :mod:`sklearn_rrank._lower._vc`.
"""

import math

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

__all__ = []

# The pair-compatibility matrix (which pairs of points are shattered) is stored as a
# dense boolean matrix only up to this many distinct points (64 MiB).
_MAX_PAIR_POINTS = 8192
# rows of the pair-compatibility matrix computed per block (bounds the float32 work)
_PAIR_BLOCK = 512
# below this fraction of ones the products of the search use scipy.sparse
_SPARSE_DENSITY = 0.05
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
    transposing). ``deadline`` is checked between the two passes. A sparse ``P``
    is compared by the supports of its lines (no dense copy).
    """
    if sp.issparse(P):
        return _distinct_lines(P.tocsc() if axis == 0 else P.tocsr(), deadline)
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


def _distinct_lines(A, deadline=None):
    """First occurrence of each distinct support among the lines of compressed ``A``.

    ``A`` is CSR (its rows are the lines) or CSC (its columns), with sorted
    indices: two lines are equal iff their index arrays are.
    """
    A.sort_indices()
    indptr, indices = A.indptr, A.indices
    first = {}
    for line in range(indptr.size - 1):
        if line % _SETUP_BLOCK == 0:
            _check_time(deadline)
        first.setdefault(indices[indptr[line] : indptr[line + 1]].tobytes(), line)
    return np.sort(np.fromiter(first.values(), dtype=np.intp, count=len(first)))


def _line_sums(P, axis):
    """Ones of each line of boolean ``P`` (dense or sparse), int64 of shape (lines,)."""
    if sp.issparse(P):
        return np.asarray(P.sum(axis=axis, dtype=np.int64)).ravel()
    return P.sum(axis=axis, dtype=np.int64)


def _complement_lines(A, flip):
    """Compressed ``A`` (CSR: rows, CSC: columns) with the lines ``flip`` complemented.

    The complement of a line is the other positions of its length; only the
    flipped lines are rebuilt, so sparse data whose lines are mostly zeros stays
    sparse (label 1 is the minority label after the flip).
    """
    flipped = np.flatnonzero(flip)
    if flipped.size == 0:
        return A
    A = A.copy()
    A.sort_indices()
    length = A.shape[1] if A.format == "csr" else A.shape[0]
    lines = [A.indices[A.indptr[i] : A.indptr[i + 1]] for i in range(A.indptr.size - 1)]
    everything = np.arange(length, dtype=A.indices.dtype)
    for i in flipped:
        lines[i] = np.setdiff1d(everything, lines[i], assume_unique=True)
    lens = np.fromiter((line.size for line in lines), dtype=np.int64, count=len(lines))
    indptr = np.concatenate([[0], np.cumsum(lens)])
    indices = np.concatenate(lines) if lines else np.zeros(0, dtype=np.int32)
    data = np.ones(indices.size, dtype=A.dtype)
    return type(A)((data, indices, indptr), shape=A.shape)


def _sparse_points_and_concepts(P, complemented, deadline, cols):
    """:func:`_points_and_concepts` of a CSR boolean ``P``, on the lines' supports.

    The same reduction without a dense copy: complements are taken line by line
    (:func:`_complement_lines`) and distinct lines are found by their supports.
    Returns ``Q`` as a CSR uint8 matrix with sorted indices.
    """
    m = P.shape[0]
    if complemented:
        col_sum = _line_sums(P, 0)
        first_row = P[0].toarray().ravel().astype(bool)
        flip = (2 * col_sum > m) | ((2 * col_sum == m) & first_row)
        P = _complement_lines(P.tocsc(), flip).tocsr()
        _check_time(deadline)
        cols = None
    if cols is None:
        cols = _distinct_columns(P, deadline=deadline)
        _check_time(deadline)
    n_concepts = len(cols)
    C = P if len(cols) == P.shape[1] else P[:, cols]
    row_sum = _line_sums(C, 1)
    if complemented:
        keep = np.arange(m)
    else:
        keep = np.flatnonzero((row_sum > 0) & (row_sum < n_concepts))
        C = C[keep] if len(keep) < m else C
    _check_time(deadline)
    row_sum = row_sum[keep]
    first_col = C[:, 0].toarray().ravel().astype(bool) if n_concepts else False
    flip = (2 * row_sum > n_concepts) | ((2 * row_sum == n_concepts) & first_col)
    C = _complement_lines(sp.csr_matrix(C, dtype=np.uint8), flip)
    first = _distinct_columns(C, axis=1, deadline=deadline)
    _check_time(deadline)
    Q = C[first]
    Q.sort_indices()
    return Q, keep[first], n_concepts


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
    Q : ndarray or CSR matrix of shape (n_points, n_concepts), dtype uint8
        Reduced matrix (CSR when ``P`` is sparse): distinct points (non-constant
        ones only, unless ``complemented``), each complemented if needed so that
        label 1 is its minority label, against distinct concepts (up to complement
        if ``complemented``).
    point_index : ndarray of shape (n_points,), dtype intp
        Row of ``P`` each row of ``Q`` comes from.
    n_concepts : int
        Number of columns of ``Q``.
    """
    if sp.issparse(P):
        return _sparse_points_and_concepts(P, complemented, deadline, cols)
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
    ones = _line_sums(Q, 1)
    if sp.issparse(Q) or ones.sum() < _SPARSE_DENSITY * m * n:
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
    """``np.ascontiguousarray(P.T)`` by blocks of columns, checking ``deadline``.

    A sparse ``P`` gives the CSR matrix of its transpose.
    """
    if sp.issparse(P):
        _check_time(deadline)
        return P.T.tocsr()
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
    each candidate in each class is one product with the class indicator matrix,
    or for sparse data one ``bincount`` over the candidates' stored entries
    (:func:`_class_counts`); ``Q_sparse`` is ``Q`` as CSR for sparse data, else
    None.

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
    elif Q_sparse is not None:
        ones = _class_counts(Q_sparse, cand, code, n_classes)
    else:
        indicator = sp.csr_matrix(
            (np.ones(n, dtype=np.int32), code, np.arange(n + 1)),
            shape=(n, n_classes),
        )
        ones = np.asarray(Q[cand] @ indicator)
    if complemented:
        ones = ones + sizes[::-1] - ones[:, ::-1]
        sizes = sizes + sizes[::-1]
    least = np.minimum(ones, sizes - ones).min(axis=1)
    room = np.full(len(cand), -1, dtype=np.int64)
    ok = least > 0
    room[ok] = np.floor(np.log2(least[ok])).astype(np.int64)
    return ok, room


def _class_counts(Q_sparse, cand, code, n_classes):
    """``ones[t, p]``: the stored entries of row ``cand[t]`` of the CSR matrix
    ``Q_sparse`` in columns ``j`` with ``code[j] == p``; int64 of shape
    ``(len(cand), n_classes)``.

    One ``bincount`` over the candidates' stored entries: the product with a sparse
    class indicator gives the same counts with a fixed scipy overhead per call,
    which dominated the exact search.
    """
    indptr, indices = Q_sparse.indptr, Q_sparse.indices
    starts = indptr[cand].astype(np.int64)
    lens = indptr[cand + 1] - starts
    # positions of the candidates' stored entries in ``indices``, row after row
    shift = np.repeat(starts - (np.cumsum(lens) - lens), lens)
    columns = indices[shift + np.arange(shift.size)]
    rows = np.repeat(np.arange(len(cand), dtype=np.int64), lens)
    flat = np.bincount(
        rows * n_classes + code[columns], minlength=len(cand) * n_classes
    )
    return flat.reshape(len(cand), n_classes)


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
        if sp.issparse(Q):  # reduced from sparse data: rows are read one at a time
            self.Q_sparse = sp.csr_matrix(Q, dtype=np.int32)
        elif Q.sum(dtype=np.int64) < _SPARSE_DENSITY * Q.size:
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
            ones = _line_sums(Q, 1)
            balance = np.minimum(ones, n_concepts - ones)  # >= 1 for reduced points
            self.point_cap = 1 + np.floor(np.log2(balance)).astype(np.int64)
        # the pair graph among the root's candidates, and each point's place in it
        # (-1: not a root candidate); None when it is not stored
        self.G, self.G_pos = None, None
        self.n_nodes = 0
        self.stack = None  # the depth-first stack, kept across timeouts

    def run(self, max_steps=None):
        """Search (or resume a search stopped by the deadline) until done.

        Raises ``_Timeout`` at the deadline, or after ``max_steps`` steps (None: no
        limit); the search state is kept, so a later call (with a later
        ``self.deadline``) continues where it stopped.
        """
        if self.stack is None:
            self._setup()  # a timeout here redoes the setup on the next call
        steps = 0
        while self.stack:
            if max_steps is not None and steps >= max_steps:
                raise _Timeout
            self._step()
            steps += 1

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
                G_pos = np.full(m, -1, dtype=np.intp)
                G_pos[cand] = np.arange(len(cand))
                self.G = _pair_graph(self.Q[cand], self.deadline)
                self.G_pos, self.G_points = G_pos, cand
            inside = self.G_pos >= 0
            degree[inside] = self.G.sum(axis=1)[self.G_pos[inside]]
            cand = cand[degree[cand] >= self.best_size]  # clique of size best + 1
        # most promising points first (largest cap, then pair degree): the first
        # dive finds a large set, and candidate lists stay sorted by cap
        cand = cand[np.lexsort((-degree[cand], -self.point_cap[cand]))]
        self.n_nodes += 1
        root = [[], np.zeros(n, dtype=np.int64), cand, self.point_cap[cand]]
        self.stack = [root + [self.cap, 0]]

    def _row(self, v):
        """Row ``v`` of ``Q`` as a dense uint8 vector."""
        if self.Q_sparse is None or not sp.issparse(self.Q):
            return self.Q[v]
        row = np.zeros(self.Q.shape[1], dtype=np.uint8)
        indptr = self.Q_sparse.indptr
        row[self.Q_sparse.indices[indptr[v] : indptr[v + 1]]] = 1
        return row

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
        child_code = 2 * code + self._row(v)
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
            keep &= self.G[self.G_pos[v], self.G_pos[remaining]]
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

    def run(self, deadline, best_size=0, extension=None, max_steps=None):
        """Look for a set larger than ``best_size`` until ``deadline``.

        ``extension`` is an optional pair ``(size, later_deadline)``: once a set
        of that size is found the search may run until ``later_deadline``. With
        ``max_steps``, the search also stops (resumably) after that many steps.
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
            search.run(max_steps)
            self.complete = True
        except _Timeout:
            # a shattered pair needs no search once the pair graph is known
            if search.best_size < 2 and search.G is not None:
                pairs = np.argwhere(search.G)
                if len(pairs):
                    pair = search.G_points[pairs[0]]
                    search.best_size, search.best_set = 2, list(pair)
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
