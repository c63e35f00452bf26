"""The BMNA solvers: nearest nested matrices by the paper's four methods.

The solvers behind :class:`~sklearn_rrank.NestedApprox` (Neumann, Gemulla,
Miettinen, ICDM 2016, Section 4): MT-style heuristics (reconstructions after Mannila
& Terzi, "Nestedness and segmented nestedness", KDD 2007: :func:`_mt`), the paper's
alternating exhaustive update NNRR1 (:func:`_nnrr1`), MT followed by NNRR1, and the
rounded rank-1 truncated SVD (:func:`_rsvd_nested`), dispatched by :func:`_bmna`;
plus exact oracles for tests (brute force over orders, an ILP with scipy's
``milp``). They take validated dense arrays and never modify their input.
"""

import time

import numpy as np
import scipy.sparse as sp

__all__ = []


# ---------------------------------------------------------------------------------
# BMNA: nearest nested matrix (solvers on validated dense arrays)
# ---------------------------------------------------------------------------------

# entries per block when prefix counts are formed row-block-wise (int32, 32 MiB)
_BLOCK_ENTRIES = 1 << 23

# the violation-elimination greedy costs O(n_samples * n_features) per flip; it runs
# only when n_samples * n_features * (estimated flips) stays below this work limit
_GREEDY_WORK_LIMIT = 4e9

# one round of the insertion local search costs O(m n (m + n)); run it below this
_LOCAL_SEARCH_WORK_LIMIT = 2e9


def _as_bool(B):
    """Dense boolean copy-free view of a validated 0/1 array."""
    B = np.asarray(B)
    return B if B.dtype == bool else B.astype(bool)


def _nested_from_order(B, order):
    """Exact nearest nested matrix among those whose rows are prefixes of ``order``.

    Our reconstruction (``NESTED_FROM_ORDER``): rows are independent, each takes the
    prefix length ``L`` minimising ``(L - P[L]) + (P[n] - P[L])`` where ``P[L]`` counts
    its ones among the first ``L`` columns of ``order`` (ties: shortest prefix).

    Parameters
    ----------
    B : ndarray of shape (m, n), bool
    order : ndarray of shape (n,), a permutation of the columns

    Returns
    -------
    N : ndarray of shape (m, n), bool
        Nested matrix; every row is a prefix of ``order``.
    cost : int
        Number of entries where ``N`` and ``B`` differ.
    """
    B = _as_bool(B)
    m, n = B.shape
    lengths = np.empty(m, dtype=np.int64)
    cost = 0
    steps = np.arange(n + 1, dtype=np.int64)
    rows_per_block = max(1, _BLOCK_ENTRIES // max(n + 1, 1))
    for start in range(0, m, rows_per_block):
        Bo = B[start : start + rows_per_block][:, order]
        P = np.zeros((Bo.shape[0], n + 1), dtype=np.int64)
        np.cumsum(Bo, axis=1, out=P[:, 1:])
        c = steps[None, :] - 2 * P + P[:, -1:]
        best = np.argmin(c, axis=1)
        lengths[start : start + Bo.shape[0]] = best
        cost += int(c[np.arange(Bo.shape[0]), best].sum())
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n)
    N = pos[None, :] < lengths[:, None]
    return N, cost


def _staircase_orders(N):
    """Row and column orders (stable, decreasing sums) making ``N`` a staircase."""
    N = _as_bool(N)
    rows = np.argsort(-N.sum(axis=1), kind="stable")
    cols = np.argsort(-N.sum(axis=0), kind="stable")
    return rows, cols


def _bmna_brute_force(B):
    """Exact BMNA optimum by enumerating column (or row) orders; min(m, n) <= 8.

    Every nested matrix has an order in which all rows are prefixes, so the minimum of
    :func:`_nested_from_order` over all orders is optimal.
    Returns ``(N, cost)``.
    """
    import itertools

    B = _as_bool(B)
    transpose = B.shape[1] > B.shape[0]
    A = B.T if transpose else B
    m, n = A.shape
    if n > 8:
        raise ValueError(f"brute force needs min(m, n) <= 8, got {min(B.shape)}.")
    perms = np.array(list(itertools.permutations(range(n))), dtype=np.int64)
    steps = np.arange(n + 1)
    best_cost, best_perm = None, None
    for start in range(0, perms.shape[0], 5040):
        chunk = perms[start : start + 5040]
        Bo = A[:, chunk].astype(np.int64)  # (m, p, n)
        P = np.concatenate([np.zeros(Bo.shape[:2] + (1,), np.int64), Bo.cumsum(2)], 2)
        c = (steps - 2 * P + P[:, :, -1:]).min(axis=2).sum(axis=0)
        k = int(np.argmin(c))
        if best_cost is None or c[k] < best_cost:
            best_cost, best_perm = int(c[k]), chunk[k]
    N, cost = _nested_from_order(A, best_perm)
    return (N.T if transpose else N), cost


def _bmna_ilp(B, time_limit=None):
    """Exact BMNA optimum by an integer program (scipy milp).

    Binary ``N_ij`` and, for every row pair ``p < q``, a binary ``z_pq`` (1: row ``p``
    contains row ``q``); for every column ``j``: ``N_qj - N_pj + z_pq <= 1`` and
    ``N_pj - N_qj - z_pq <= 0``. Minimises ``|N - B|``. Small instances only (10 x 8
    takes a fraction of a second, 25 x 20 may not finish). Returns ``(N, cost)``.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    B = _as_bool(B)
    m, n = B.shape
    pairs = [(p, q) for p in range(m) for q in range(p + 1, m)]
    n_var = m * n + len(pairs)
    rows, cols, vals, ub = [], [], [], []
    r = 0
    for k, (p, q) in enumerate(pairs):
        z = m * n + k
        for j in range(n):
            rows += [r, r, r, r + 1, r + 1, r + 1]
            cols += [q * n + j, p * n + j, z, p * n + j, q * n + j, z]
            vals += [1, -1, 1, 1, -1, -1]
            ub += [1, 0]
            r += 2
    c = np.zeros(n_var)
    c[: m * n] = np.where(B.ravel(), -1.0, 1.0)  # |N - B| = sum(c * N) + sum(B)
    constraints = []
    if r:
        A = sp.csr_matrix((vals, (rows, cols)), shape=(r, n_var))
        constraints.append(LinearConstraint(A, -np.inf, np.array(ub, dtype=float)))
    options = {} if time_limit is None else {"time_limit": float(time_limit)}
    res = milp(
        c,
        constraints=constraints,
        integrality=np.ones(n_var),
        bounds=Bounds(0, 1),
        options=options,
    )
    if res.x is None:
        raise RuntimeError(f"milp found no solution: {res.message}")
    N = res.x[: m * n].reshape(m, n) > 0.5
    return N, int(np.count_nonzero(N != B))


def _mt_order(B, max_iter, N_start=None):
    """Order-based alternating heuristic for BMNA (after Mannila & Terzi 2007; a
    reconstruction).

    Start from the exact solution for the column order by decreasing sums (or from
    ``N_start``); then repeatedly re-sort the columns by the current solution's sums
    (ties broken by the data) and solve exactly for that order, do the same pass on
    the transpose, and keep the better; stop when the cost stops improving. A
    reconstruction in the spirit of Mannila & Terzi (2007), not their exact method.
    Returns ``(N, cost, n_iter, converged)``.
    """
    B = _as_bool(B)
    m, n = B.shape
    col_b = B.sum(axis=0) / (m + 1.0)
    row_b = B.sum(axis=1) / (n + 1.0)
    if N_start is None:
        N, cost = _nested_from_order(B, np.argsort(-col_b, kind="stable"))
    else:
        N = N_start
        cost = int(np.count_nonzero(N != B))
    n_iter, converged = 0, False
    for _ in range(max_iter):
        n_iter += 1
        pi = np.argsort(-(N.sum(axis=0) + col_b), kind="stable")
        N1, c1 = _nested_from_order(B, pi)
        rho = np.argsort(-(N1.sum(axis=1) + row_b), kind="stable")
        N2, c2 = _nested_from_order(B.T, rho)
        Nc, cc = (N1, c1) if c1 <= c2 else (N2.T, c2)
        if cc >= cost:
            converged = True
            break
        N, cost = Nc, cc
    return N, cost, n_iter, converged


def _mt_greedy(B, max_flips=None):
    """Violation-elimination greedy (after Mannila & Terzi 2007; a reconstruction);
    returns the flipped matrix.

    Repeatedly flips the cell whose flip removes the most "checkerboards" (2 x 2
    submatrices ``[[1, 0], [0, 1]]`` up to permutation) net of those it creates, until
    no flip strictly helps. The gain matrix is ``G = (2N - 1) * D`` with
    ``D = (C s) 1^T - H N``, where ``C = 1 - N``, ``s`` are the column sums and ``H``
    the row-row Hamming distances (this equals ``A1 - A0`` of the violation count).
    ``D``, ``H`` and ``C s`` are updated in O(m n) per flip instead of being recomputed
    in O(m^2 n). The result need not be nested; callers polish it with
    :func:`_nested_from_order`. A reconstruction of the idea described for Mannila &
    Terzi's method ("iteratively eliminating parts of the matrix that violate the
    nestedness"), not their published algorithm.
    """
    B = _as_bool(B)
    transpose = B.shape[0] > B.shape[1]
    A = B.T if transpose else B
    m, n = A.shape
    # every intermediate is an integer of magnitude <= 2 m n and the matrix-vector
    # product sums non-negative terms, so float32 is exact below 2**24
    dtype = np.float32 if 2 * m * n < 2**24 else np.float64
    N = A.astype(dtype)  # a copy: m <= n from here on
    if max_flips is None:
        max_flips = m * n
    s = N.sum(axis=0)
    C = 1 - N
    u = C @ s
    H = N @ C.T + C @ N.T
    D = u[:, None] - H @ N
    S = 2 * N - 1
    G = np.empty_like(D)
    n_flips = 0
    while n_flips < max_flips:
        np.multiply(S, D, out=G)
        k = int(np.argmax(G))
        if G.flat[k] <= 0:
            break
        i, a = divmod(k, n)
        old = N[i, a]
        new = 1 - old
        delta = new - old
        col = N[:, a].copy()
        dh = np.where(col == old, 1, -1).astype(dtype)
        dh[i] = 0
        du = (1 - col) * delta
        du[i] = -delta * s[a] + (1 - new) * delta
        # D_j for j != i: + du_j - dh_j * N_i(new) - [c == a] * H_ji(old) * delta
        N[i, a] = new
        S[i, a] = 2 * new - 1
        s[a] += delta
        u += du
        D += du[:, None]
        D -= np.outer(dh, N[i])
        D[:, a] -= H[:, i] * delta
        H[i, :] += dh
        H[:, i] += dh
        D[i] = u[i] - H[i] @ N
        n_flips += 1
    N = N.astype(bool)
    return N.T if transpose else N


def _count_violations(B):
    """Number of checkerboards (2 x 2 submatrices [[1, 0], [0, 1]] up to order).

    The violation count: with ``C = 1 - B`` and ``M = C B^T``, a one at ``(i, a)`` lies
    in ``(M C)_ia`` checkerboards and a zero in ``(M^T B)_ia``; each checkerboard has
    four cells. ``B`` is nested iff the count is 0.
    """
    Bi = _as_bool(B).astype(np.int64)
    C = 1 - Bi
    M = C @ Bi.T
    counts = np.where(Bi == 1, M @ C, M.T @ Bi)
    return int(counts.sum()) // 4


def _polish(B, N):
    """Exact best nested matrix for the orders implied by ``N`` (columns and rows)."""
    rows, cols = _staircase_orders(N)
    N1, c1 = _nested_from_order(B, cols)
    N2, c2 = _nested_from_order(B.T, rows)
    return (N1, c1) if c1 <= c2 else (N2.T, c2)


def _insertion_sweep(B, order, cost):
    """One pass of column re-insertion moves, each evaluated exactly in O(m n).

    For each column ``j`` (in the current order): remove it, and for every insertion
    position ``p`` compute the exact BMNA cost of the resulting order at once. With
    ``P`` the prefix counts of the order without ``j``, ``b = B[:, j]`` and ``T`` the
    row sums, a row of prefix length ``L <= p`` costs ``L + T - 2 P[L]`` and one of
    length ``K + 1 > p`` costs ``K + 1 + T - 2 P[K] - 2 b``; prefix minima of the first
    and suffix minima of the second give every position in O(m n). The column moves to
    the best position when that strictly lowers the cost. Returns
    ``(order, cost, improved)``.
    """
    m, n = B.shape
    Bi = B.astype(np.int64)
    steps = np.arange(n, dtype=np.int64)
    improved = False
    for j in order.copy():
        sigma = order[order != j]
        P = np.zeros((m, n), dtype=np.int64)
        np.cumsum(Bi[:, sigma], axis=1, out=P[:, 1:])
        b = Bi[:, j][:, None]
        base = steps + P[:, -1:] + b - 2 * P  # L + T - 2 P[L]
        left = np.minimum.accumulate(base, axis=1)
        right = np.minimum.accumulate((base + 1 - 2 * b)[:, ::-1], axis=1)[:, ::-1]
        total = np.minimum(left, right).sum(axis=0)
        p = int(np.argmin(total))
        if total[p] < cost:
            order = np.insert(sigma, p, j)
            cost = int(total[p])
            improved = True
    return order, cost, improved


def _insertion_local_search(B, N, max_rounds):
    """Local search over orders: alternate column and row re-insertion sweeps.

    Each round takes the staircase order of the current nested matrix, solves it
    exactly (:func:`_nested_from_order`), improves the order by
    :func:`_insertion_sweep`, and does the same on the transpose (rows). Stops when a
    round changes nothing. Never increases the cost. Returns ``(N, cost, n_rounds)``.
    """
    cost = int(np.count_nonzero(N != B))
    n_rounds = 0
    for _ in range(max_rounds):
        n_rounds += 1
        improved = False
        for transpose in (False, True):
            A, cur = (B.T, N.T) if transpose else (B, N)
            order = _staircase_orders(cur)[1]
            _, c = _nested_from_order(A, order)
            order, c, _ = _insertion_sweep(A, order, c)
            if c < cost:
                Nn, cost = _nested_from_order(A, order)
                N = Nn.T if transpose else Nn
                improved = True
        if not improved:
            break
    return N, cost, n_rounds


def _mt(B, max_iter):
    """MT-style BMNA heuristics (reconstructions after Mannila & Terzi, 2007).

    (B) :func:`_mt_order` from the data; (A) :func:`_mt_greedy`, polished by the exact
    per-order solver (:func:`_polish`) and continued with :func:`_mt_order`; the
    better result is then improved by :func:`_insertion_local_search` (our addition:
    exact per-order solutions over re-insertion moves of the order). (A) costs
    O(m n) per flip and runs only if ``m * n * cost_B`` is below
    ``_GREEDY_WORK_LIMIT``; the local search costs O(m n (m + n)) per round and runs
    only if that is below ``_LOCAL_SEARCH_WORK_LIMIT``. Returns ``(N, cost, info)``.
    """
    B = _as_bool(B)
    m, n = B.shape
    N, cost, n_iter, conv = _mt_order(B, max_iter)
    info = {"order_cost": cost, "greedy_cost": None, "local_search_cost": None}
    if cost > 0 and float(m) * n * cost <= _GREEDY_WORK_LIMIT:
        Ng = _mt_greedy(B)
        Np, _ = _polish(B, Ng)
        Ng, cg, it_g, conv_g = _mt_order(B, max_iter, N_start=Np)
        info["greedy_cost"] = cg
        if cg < cost:
            N, cost, n_iter, conv = Ng, cg, it_g, conv_g
    if cost > 0 and float(m) * n * (m + n) <= _LOCAL_SEARCH_WORK_LIMIT:
        N, cost, n_rounds = _insertion_local_search(B, N, max_iter)
        info["local_search_cost"] = cost
        n_iter += n_rounds
        conv = conv and n_rounds < max_iter
    info.update(n_iter=n_iter, converged=conv)
    return N, cost, info


def _best_upper_sets(B, values, eligible):
    """Exhaustive update of NNRR1: the best upper set of ``values`` for every row.

    Row ``i`` may become ``{j : values_j >= v}`` for any eligible value ``v`` (the
    candidates ``tau / v`` of the paper's Section 4 with ``v`` among the row's ones;
    every other threshold is dominated) or the empty set. One stable sort of
    ``values`` (O(n log n)) and prefix counts of the row in that order (O(n) per row)
    evaluate all candidates; ties in ``values`` move together. Equal costs keep the
    smallest set. The current set of a row (any upper set of eligible values) is among
    the candidates, so the error never increases.

    Parameters
    ----------
    B : ndarray of shape (m, n), bool
    values : ndarray of shape (n,), float
    eligible : ndarray of shape (n,), bool
        Columns that may be included (an upper set of ``values``).

    Returns
    -------
    chosen : ndarray of shape (m,), float
        The threshold value ``v`` of each row (``nan`` for an empty row).
    cost : int
        Total number of differing entries after the update.
    """
    m, n = B.shape
    order = np.argsort(-values, kind="stable")
    n_elig = int(np.count_nonzero(eligible))
    order = order[:n_elig]
    sorted_vals = values[order]
    row_sums = B.sum(axis=1, dtype=np.int64)
    chosen = np.full(m, np.nan)
    if n_elig == 0:
        return chosen, int(row_sums.sum())
    ends = np.flatnonzero(np.r_[sorted_vals[1:] != sorted_vals[:-1], True])
    sizes = ends + 1
    cost = 0
    rows_per_block = max(1, _BLOCK_ENTRIES // max(n_elig, 1))
    for start in range(0, m, rows_per_block):
        stop = min(start + rows_per_block, m)
        P = np.cumsum(B[start:stop][:, order], axis=1, dtype=np.int32)[:, ends]
        c = sizes[None, :] - 2 * P.astype(np.int64)  # cost minus the row sum
        best = np.argmin(c, axis=1)
        cbest = c[np.arange(stop - start), best]
        take = cbest < 0  # strictly better than the empty row
        chosen[start:stop][take] = sorted_vals[ends[best[take]]]
        cost += int(row_sums[start:stop].sum() + np.minimum(cbest, 0).sum())
    return chosen, cost


def _nnrr1(B, r_init, max_iter, start_cost=None):
    """NNRR1: alternating exhaustive updates of ``l`` and ``r`` (paper, Section 4).

    The state is kept combinatorially and exactly: ``r`` (columns) and row thresholds
    ``t_i = tau / l_i`` (``inf`` for ``l_i = 0``), with ``N_ij = [r_j >= t_i]``. The
    update of ``l`` given ``r`` picks for each row the best upper set of ``r``; the
    update of ``r`` given ``l`` picks for each column the best set of rows with
    ``t_i <= r_j``, i.e. ``r_j`` equal to one of the row thresholds (``tau / l_i``) or
    0. Comparisons only, no products, so no rounding issue. One iteration is an
    ``l``-update followed by an ``r``-update; stop when an iteration does not lower
    the error or after ``max_iter`` iterations.

    Returns ``(N, cost, n_iter, converged)``.
    """
    B = _as_bool(B)
    Bt = np.ascontiguousarray(B.T)
    r = np.asarray(r_init, dtype=np.float64)
    prev = np.inf if start_cost is None else start_cost
    n_iter, converged = 0, False
    t = None
    for _ in range(max_iter):
        n_iter += 1
        chosen, _ = _best_upper_sets(B, r, r > 0)
        t_new = np.where(np.isnan(chosen), np.inf, chosen)
        chosen, cost = _best_upper_sets(Bt, -t_new, np.isfinite(t_new))
        r_new = np.where(np.isnan(chosen), 0.0, -chosen)
        if cost >= prev:
            converged = True
            if t is None:  # first iteration did not beat the start: keep its result
                t, r = t_new, r_new
            break
        t, r, prev = t_new, r_new, cost
    N = r[None, :] >= t[:, None]
    return N, int(np.count_nonzero(N != B)), n_iter, converged


def _positional_r(N):
    """Distinct column values realising nested ``N`` (Theorem "nested matrices").

    Columns sorted by decreasing sum (stable) get ``n, n-1, ..., 1``: the order of the
    paper's ``r'_j = 2^-j`` without its underflow. Used to start NNRR1 from MT.
    """
    n = N.shape[1]
    _, cols = _staircase_orders(N)
    r = np.empty(n)
    r[cols] = np.arange(n, 0, -1, dtype=np.float64)
    return r


def _rsvd_nested(B, random_state):
    """Round the rank-1 truncated SVD ``sigma u v^T`` at 1/2 (paper, Section 4).

    The SVD approximates the 0/1 entries, so it is rounded at 1/2, the paper's
    threshold, whatever the ``tau`` of the caller (which only rescales ``l``).

    By Perron-Frobenius ``u, v`` can be taken non-negative (entries of the wrong sign
    are round-off and are clipped to 0), so the rounded matrix is nested. The SVD is
    :func:`~sklearn_rrank._upper._rsvd.truncated_svd` (ARPACK with a start vector drawn
    from ``random_state``, or LAPACK for small inputs; the zero matrix gives the
    zero triplet). Returns ``(N, cost)``.
    """
    from sklearn_rrank._upper._rsvd import truncated_svd

    B = _as_bool(B)
    # the package's one SVD chooser (ARPACK for large inputs, LAPACK for small
    # ones; the zero matrix gives zero triplets instead of an ARPACK error)
    U, s, Vt = truncated_svd(B.astype(np.float64), 1, random_state=random_state)
    u, sigma, v = U[:, 0], s[0], Vt[0]
    if u.sum() + v.sum() < 0:
        u, v = -u, -v
    l = sigma * np.clip(u, 0, None)
    r = np.clip(v, 0, None)
    N = np.outer(l, r) >= 0.5
    return N, int(np.count_nonzero(N != B))


def _bmna(B, method, max_iter=100, random_state=None):
    """Nearest nested matrix of validated ``B`` by one of the paper's four methods.

    Returns a dict with ``N`` (bool), ``cost``, ``n_iter``, ``converged`` and timings
    ``seconds`` (total), ``seconds_mt`` and ``seconds_nnrr1`` (the paper reports
    MT+NNRR1 without the MT part).
    """
    B = _as_bool(B)
    out = {"seconds_mt": 0.0, "seconds_nnrr1": 0.0, "converged": True}
    t0 = time.perf_counter()
    if method in ("mt", "mt+nnrr1"):
        N, cost, info = _mt(B, max_iter)
        out.update(n_iter=info["n_iter"], converged=info["converged"])
        out["seconds_mt"] = time.perf_counter() - t0
        if method == "mt+nnrr1":
            t1 = time.perf_counter()
            N, cost, n_iter, conv = _nnrr1(
                B, _positional_r(N), max_iter, start_cost=cost
            )
            out.update(n_iter=n_iter, converged=conv)
            out["seconds_nnrr1"] = time.perf_counter() - t1
    elif method == "nnrr1":
        N, cost, n_iter, conv = _nnrr1(B, _positional_r(B), max_iter)
        out.update(n_iter=n_iter, converged=conv)
        out["seconds_nnrr1"] = time.perf_counter() - t0
    elif method == "rsvd":
        N, cost = _rsvd_nested(B, random_state)
        out["n_iter"] = 1
    else:  # pragma: no cover - guarded by parameter validation
        raise ValueError(f"unknown method {method!r}")
    out["seconds"] = time.perf_counter() - t0
    out["N"], out["cost"] = N, cost
    return out
