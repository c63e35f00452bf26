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

from sklearn_rrank._core._validation import check_binary_matrix, check_tau
from sklearn_rrank._lower._vc_search import (
    _check_time,
    _distinct_columns,
    _line_sums,
    _Shattering,
    _Timeout,
    _transposed,
)
from sklearn_rrank._search._skeleton import Deadline

__all__ = ["vc_lower_bound"]

# passes over the searches: later passes resume the searches that their share of
# the time limit stopped, with the time left
_MAX_PASSES = 3
# without a time limit the searches take turns by branch-and-bound steps (so the result
# does not depend on the machine): this many first, times _STEP_GROWTH per pass
_FIRST_STEPS = 2000
_STEP_GROWTH = 2
_STEP_PASSES = 12


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
    Ps = P[rows].toarray() if sp.issparse(P) else P[rows]
    code = weights @ Ps.astype(np.int64) if s else np.zeros(P.shape[1], int)
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
        stays sparse: the search reads the supports of its rows and columns.
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
    beat the best bound. Without a time limit the searches take turns by steps of
    the branch and bound (2,000 in the first pass, twice as many in each later one,
    no limit from the twelfth on), so that one that finds a large set early cuts
    the others; the result does not depend on the machine.

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


def _sparse_pattern(X):
    """The ones of sparse ``X`` as a CSR boolean matrix with sorted indices."""
    P = sp.csr_matrix(X, dtype=bool, copy=True)
    P.eliminate_zeros()
    P.sort_indices()
    return P


def _vc_bound(
    X, *, deadline=None, return_shattered=False, complements=True, search=_Shattering
):
    """:func:`vc_lower_bound` on validated ``X`` (the bound does not depend on tau).

    ``deadline`` is a :class:`~sklearn_rrank._search._skeleton.Deadline` (None: no
    limit). ``search`` makes the resumable searches (the class
    :class:`~sklearn_rrank._lower._vc_search._Shattering`, or one that records
    their turns).
    """
    deadline = Deadline.coerce(deadline)
    # sparse data stays sparse: the search reads the supports of its lines
    P = _sparse_pattern(X) if sp.issparse(X) else X.astype(bool)

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
                searchers[key] = search(views[name], comp, deadline, cols)
            steps = None
            if not deadline.limited and passes < _STEP_PASSES:
                steps = _FIRST_STEPS * _STEP_GROWTH ** (passes - 1)
            size, rows, done = searchers[key].run(
                own_deadline,
                best_size=best_bound + offset,
                extension=extension,
                max_steps=steps,
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
        passes_left = passes < (_MAX_PASSES if deadline.limited else _STEP_PASSES)
        if not queue and unfinished and passes_left:
            # time left after a pass goes to the searches stopped by their
            # shares: they resume, looking only for sets beating the best
            if not deadline.expired():
                queue = [other for other in order if other in unfinished]
                passes += 1
    complete = not unfinished and len(distinct) == 2
    if best_bound == 0 and not complete:
        # stopped before any search found a set: a row that is not constant is
        # shattered by the columns (one pass, no reduction)
        ones = _line_sums(P, 1)
        row = np.flatnonzero((ones > 0) & (ones < P.shape[1]))[:1]
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
