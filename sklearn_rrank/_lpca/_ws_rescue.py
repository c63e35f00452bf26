"""The LP rescue at scale: row and column LPs restricted to the working set.

The rescue of :func:`~sklearn_rrank._lpca._refine._lpca_refine` solves, for every
column ``j`` that holds an entry failing the certificate, the L1-slack LP of
ProjLP (Neumann, Gemulla and Miettinen, ICDM 2016, Section 3) over all ``m``
entries of the column, with ``L`` fixed, then the same for the rows. On a graph
of 2e4 nodes one such LP has 2e4 constraints although nearly all of them are far
zeros that no small change of ``R_j`` moves across the threshold.

Here the LP of column ``j`` has only the constraints of its working set ``W_j``
(Joachims, "Making large-scale SVM learning practical", 1999): the ones of the
column, its failing entries and the :data:`_NEAR_PER_ONE` zeros per one (at
least :data:`_NEAR_MIN`) of the largest logits. The check is the full column:
``L R_j`` over all ``m`` entries (``O(m k)``, a matrix-vector product), and the
entries the new ``R_j`` fails outside ``W_j`` join it for another LP (a cutting
plane), at most :data:`_CUTS` times. A new ``R_j`` is kept only when it fails
as many entries of the full column as the old one, or fewer, so the number of
failing entries never grows (a tie is kept, as in
:func:`~sklearn_rrank._lpca._refine._lpca_refine`: the LP's row has the smaller
slacks). The rows follow with ``R`` fixed. A round that does not lower the
count is followed, once and when at most :data:`_WHOLE_MAX` entries fail, by
a round of LPs over whole lines. The LPs are solved by the package's engine
(:func:`~sklearn_rrank._projlp._lp._solve_columns_l1`, HiGHS), one line at a
time, in threads; every count is the certificate's
(:func:`~sklearn_rrank.certify_rounding`'s criterion, float64 with its margin):
one float64 pass over all ``m n`` entries by blocks of rows finds the failing
entries at the start; after it the counts are kept exact by the line checks.
"""

import time

import numpy as np
import scipy.sparse as sp

from sklearn_rrank._core._lp_engine import DEFAULT_EPS
from sklearn_rrank._core._parallel import Parallel, delayed, effective_n_jobs
from sklearn_rrank._core._rounding import (
    DEFAULT_MARGIN,
    _certified_block,
    _certified_entries,
    _row_batches,
)

__all__ = []

# zeros of the largest logits per one of a line that enter its LP (at least
# _NEAR_MIN): the zeros a small change of the line's factor row can move across
_NEAR_PER_ONE = 4
_NEAR_MIN = 64
# LPs per line: the first on W, then W grown by the entries its solution fails
_CUTS = 4
# a stalled rescue tries LPs over whole lines when at most this many entries fail
_WHOLE_MAX = 1000


def _failing(F, abs_F, x, ones, tau):
    """Mask of the entries of one line (``F @ x`` against ``tau``) not certified,
    and the line's gaps ``F @ x - tau`` (``abs_F`` is ``abs(F)``)."""
    gap = F @ x - tau
    scale = abs_F @ np.abs(x)
    return ~_certified_entries(gap, scale, ones, tau, F.shape[1]), gap


def _fix_line(F, abs_F, x, ones_idx, tau, deadline, whole=False):
    """A factor row for one line failing at most as many entries, or None.

    ``F`` (length, k) is the fixed factor (``abs_F`` its ``abs``), ``x`` (k,)
    the line's current row,
    ``ones_idx`` the positions of its ones; ``whole``: the LP takes every entry
    of the line (the full LP of the dense rescue). Returns ``(new_x, failing,
    n_lps)``: ``new_x`` None when no LP found a row failing at most as many
    entries of the full line as ``x``, ``failing`` the positions the kept row
    (new or old) fails.
    """
    from sklearn_rrank._projlp._lp import _solve_columns_l1

    length = F.shape[0]
    ones = np.zeros(length, dtype=bool)
    ones[ones_idx] = True
    bad, gap = _failing(F, abs_F, x, ones, tau)
    W = ones | bad
    n_near = length if whole else max(_NEAR_PER_ONE * ones_idx.size, _NEAR_MIN)
    zeros = np.flatnonzero(~W)
    if zeros.size > n_near:
        zeros = zeros[np.argpartition(-gap[zeros], n_near - 1)[:n_near]]
    W[zeros] = True
    best, n_lps = None, 0
    for _ in range(_CUTS):
        if deadline is not None and deadline.expired():
            break
        idx = np.flatnonzero(W)
        r, _, _ = _solve_columns_l1(
            F[idx], ones[idx].astype(np.float64)[:, None], tau=tau, deadline=deadline
        )
        n_lps += 1
        new_bad, gap = _failing(F, abs_F, r[0], ones, tau)  # the check: full line
        # ties go to the later LP (more constraints) and replace the old row: an
        # LP solution of equal count has smaller slacks, the way towards none
        if new_bad.sum() <= (bad if best is None else best[1]).sum():
            best = (r[0], new_bad)
        # entries outside W with a slack in the L1 LP (gap within eps of the wrong
        # side) join W as the failing ones do: the last LP is then optimal over
        # the full line, not only over W
        cut = (new_bad | (np.where(ones, gap, -gap) < DEFAULT_EPS)) & ~W
        if not new_bad.any() or not cut.any():
            break
        W |= cut
    if best is None:
        return None, np.flatnonzero(bad), n_lps
    return best[0], np.flatnonzero(best[1]), n_lps


def _fix_side(F, G, pattern, failing, tau, options):
    """Re-solve the lines of ``failing`` (rows of ``G``) with ``F`` fixed.

    ``failing`` maps a line to the positions it fails; ``pattern`` is a CSR
    matrix whose row ``t`` holds the ones of line ``t``; ``options`` is
    ``(n_jobs, deadline, whole)`` (``whole`` as in :func:`_fix_line`). ``G`` is
    changed in place where a line fails at most as many entries; ``failing`` is
    updated to the kept rows' failures. Returns the number of LPs.
    """
    n_jobs, deadline, whole = options
    lines = sorted(failing)
    abs_F = np.abs(F)

    def one(t):
        if deadline.expired():  # the line keeps its row and its failing entries
            return None, failing[t], 0
        ones_idx = pattern.indices[pattern.indptr[t] : pattern.indptr[t + 1]]
        return _fix_line(F, abs_F, G[t], ones_idx, tau, deadline, whole)

    if effective_n_jobs(n_jobs) == 1 or len(lines) <= 1:
        results = [one(t) for t in lines]
    else:
        # highspy releases the GIL in its solves; lines are independent, so the
        # result does not depend on n_jobs
        results = Parallel(n_jobs=n_jobs, prefer="threads")(
            delayed(one)(t) for t in lines
        )
    n_lps = 0
    for t, (x, bad, lps) in zip(lines, results, strict=True):
        n_lps += lps
        if x is not None:
            G[t] = x
        failing[t] = bad
    return n_lps


def _failing_entries(X, L, R, tau, deadline):
    """Row and column indices of the entries failing the certificate criterion.

    One float64 pass over all ``m n`` entries by the package's row blocks (the
    kernel of :func:`~sklearn_rrank.certify_rounding`); None when ``deadline``
    passes between two blocks (the pass costs several float32 scans).
    """
    m, n = X.shape
    abs_R = np.abs(R)
    rows, cols = [], []
    for block in _row_batches(m, n):
        if deadline.expired():
            return None
        Xb = X[block].toarray()
        ok = _certified_block(Xb, L[block], R, tau, DEFAULT_MARGIN, abs_R)
        r, c = np.nonzero(~ok)
        rows.append(r + block.start)
        cols.append(c)
    return np.concatenate(rows), np.concatenate(cols)


def _group(keys, values):
    """``{key: sorted values}`` of the pairs ``(keys, values)``."""
    order = np.lexsort((values, keys))
    keys, values = keys[order], values[order]
    cut = np.flatnonzero(np.diff(keys)) + 1
    return {
        int(part[0]): vals
        for part, vals in zip(np.split(keys, cut), np.split(values, cut), strict=True)
        if part.size
    }


def _ws_rescue(X, L, R, *, tau, deadline, n_rounds=10, n_jobs=None):
    """Repair a near rounding factorization of a large sparse ``X`` by small LPs.

    Alternates the column LPs (``L`` fixed) and the row LPs (``R`` fixed), each
    restricted to the line's working set (module docstring), over the lines that
    hold an entry failing the certificate criterion of
    :func:`~sklearn_rrank.certify_rounding`; stops when none fails, a round
    does not lower their number, after ``n_rounds`` rounds or at the deadline.
    One float64 pass over all ``m n`` entries finds the failing entries; after
    it every count is exact from the checks of the changed lines (a new column
    ``R_j`` changes the entries of column ``j`` only, and its check covers them
    all).

    Parameters
    ----------
    X : CSR matrix of shape (m, n)
        Validated complete binary data (ones stored, any dtype); trusted.
    L : ndarray of shape (m, k)
    R : ndarray of shape (n, k)
        Factors with ``round_tau(L @ R.T)`` near ``X`` (float64; not modified).
    tau : float
        Rounding threshold.
    deadline : Deadline
        Checked before every LP and handed to the LP engine.
    n_rounds : int, default=10
        Rounds of (columns, rows).
    n_jobs : int or None, default=None
        Threads over the lines; results do not depend on it.

    Returns
    -------
    L : ndarray of shape (m, k), float64
    R : ndarray of shape (n, k), float64
        New arrays.
    info : dict
        ``"uncertified_before"``, ``"uncertified_after"`` (entries failing the
        certificate criterion over all ``m n`` entries; both None when the
        deadline cut the first pass, and the factors are the inputs'),
        ``"certified"``,
        ``"n_rounds"``, ``"n_lps"`` and ``"seconds"``.

    References
    ----------
    Neumann, Gemulla, Miettinen, "What you will gain by rounding: theory and
    algorithms for rounding rank", ICDM 2016 (the L1-slack LP); Joachims, 1999
    (working sets).
    """
    start = time.perf_counter()
    X = sp.csr_matrix(X, dtype=np.float64)
    X.data[:] = 1.0
    XT = sp.csr_matrix(X.T)
    L = np.array(L, dtype=np.float64)
    R = np.array(R, dtype=np.float64)
    found = _failing_entries(X, L, R, tau, deadline)
    if found is None:
        info = {"uncertified_before": None, "uncertified_after": None}
        info.update(certified=False, n_rounds=0, n_lps=0)
        info["seconds"] = time.perf_counter() - start
        return L, R, info
    rows, cols = found
    before = total = rows.size
    rounds = n_lps = 0
    whole = False
    for _ in range(n_rounds):
        if total == 0 or deadline.expired():
            break
        rounds += 1
        by_col = _group(cols, rows)
        n_lps += _fix_side(L, R, XT, by_col, tau, (n_jobs, deadline, whole))
        cols = np.concatenate([np.full(v.size, j) for j, v in by_col.items()])
        rows = np.concatenate(list(by_col.values()))
        if rows.size == 0 or deadline.expired():
            break
        by_row = _group(rows, cols)
        n_lps += _fix_side(R, L, X, by_row, tau, (n_jobs, deadline, whole))
        rows = np.concatenate([np.full(v.size, i) for i, v in by_row.items()])
        cols = np.concatenate(list(by_row.values()))
        last, total = total, rows.size
        if total >= last:
            if whole or total > _WHOLE_MAX:
                break
            # the restricted LPs stalled: once, the few failing lines get the
            # LPs of all their entries (a degenerate LP's vertex on W differs)
            whole = True
    total = rows.size
    info = {
        "uncertified_before": int(before),
        "uncertified_after": int(total),
        "certified": total == 0,
        "n_rounds": rounds,
        "n_lps": int(n_lps),
        "seconds": time.perf_counter() - start,
    }
    return L, R, info
