"""Permutation: the sign-change ordering bound of Alon, Moran and Yehudayoff.

If the rows of a binary matrix can be ordered so that every column changes value at
most ``c`` times along the order, then ``rrank_tau(X) <= c + 1`` for every ``tau``
(the *sign-change lemma*, see :func:`_permutation_search`). Such orderings
are found heuristically by :mod:`sklearn_rrank._upper._permutation_order`; this module
builds explicit factors from a Chebyshev polynomial basis (:func:`permutation_factors`)
and packages the bound with its float64 certificate when one exists
(:func:`_permutation_search`; users call
:func:`~sklearn_rrank.rounding_rank_bounds` with ``methods=("permutation",)``).

The paper (Neumann, Gemulla, Miettinen, ICDM 2016, Section 3, "Permutation
algorithm") uses the sign-rank approximation of Alon, Moran and Yehudayoff (COLT 2016)
through its Proposition "changing the rounding threshold". Only the abstract of Alon et
al. was available when this module was written: the ordering heuristics below
(nearest neighbour, the Kruskal variant of Welzl's multiplicative-weights spanning
tree, the spectral order, 2-opt segment reversals) are the standard techniques their
abstract cites, reconstructed here and **[unverified]** as their exact algorithm.
"""

from numbers import Real

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

from sklearn_rrank._core._rounding import (
    DEFAULT_MARGIN,
    _count_errors_factors,
    certify_rounding,
)
from sklearn_rrank._core._validation import check_binary_matrix, check_tau
from sklearn_rrank._upper._permutation_order import (
    _column_changes,
    _sign_change_ordering,
)

__all__ = ["permutation_factors"]

#: node placements tried by :func:`_permutation_search`, in this order
_NODE_RULES = ("uniform", "adaptive", "chebyshev")
# the bound function does not build factors whose values span more digits than this
_MAX_ATTEMPT_DIGITS = 30.0
# Chebyshev coefficients are built only while n_columns * c**2 stays below this
_MAX_COEF_WORK = 2_000_000_000


# --------------------------------------------------------------------------------------
# factors
# --------------------------------------------------------------------------------------


def _node_positions(Bo, rule):
    """Positions on [-1, 1] of the ordered rows (non-decreasing, equal rows equal).

    Positions advance only between consecutive rows that differ somewhere, so runs of
    identical rows share a node. ``"uniform"``: equal steps; ``"adaptive"``: the step
    after row ``t`` grows with the square root of the number of columns changing
    there; ``"chebyshev"``: Chebyshev points ``-cos(pi (s + 1/2) / g)`` for the ``g``
    distinct nodes.
    """
    m = Bo.shape[0]
    if m < 2:
        return np.zeros(m)
    n_diff = np.count_nonzero(Bo[1:] != Bo[:-1], axis=1)
    moves = n_diff > 0
    g = int(moves.sum()) + 1
    if g == 1:
        return np.zeros(m)
    if rule == "adaptive":
        steps = np.sqrt(n_diff.astype(np.float64))
    else:
        steps = moves.astype(np.float64)
    cum = np.concatenate([[0.0], np.cumsum(steps)])
    x = -1.0 + 2.0 * cum / cum[-1]
    if rule == "chebyshev":
        s = np.concatenate([[0], np.cumsum(moves)])
        x = -np.cos(np.pi * (s + 0.5) / g)
    return x


def _chebyshev_mulx(coef):
    """Multiply the Chebyshev series in the rows of ``coef`` by ``x``."""
    out = np.zeros_like(coef)
    out[:, 1] += coef[:, 0]
    out[:, 2:] += 0.5 * coef[:, 1:-1]
    out[:, :-1] += 0.5 * coef[:, 1:]
    return out


def _log_abs_values(x, roots_of, changes, cols):
    """``log |prod_r (x_t - r) / 2|`` for the columns ``cols``, shape (m, len(cols))."""
    out = np.zeros((len(x), len(cols)))
    for k in range(int(changes[cols].max()) if len(cols) else 0):
        sub = np.flatnonzero(changes[cols] > k)
        r = roots_of(cols[sub], k)
        out[:, sub] += np.log(np.abs(x[:, None] - r[None, :])) - np.log(2.0)
    return out


def _binding_mask(Bb, tau):
    """Entries whose magnitude must reach ``margin * |tau|``: ones, zeros or all."""
    if tau > 0:
        return Bb
    if tau < 0:
        return ~Bb
    return np.ones_like(Bb)


def _range_digits(logabs, binding):
    """Per column: log10 of the largest value over the smallest binding value."""
    has = binding.any(axis=0)
    ref = np.where(
        has, np.where(binding, logabs, np.inf).min(axis=0), logabs.max(axis=0)
    )
    return ref, (logabs.max(axis=0) - ref) / np.log(10.0)


def _poly_factors(Bo, tau, margin, rule, max_digits=None):
    """Chebyshev factors for the row-ordered validated matrix ``Bo`` (a reconstruction).

    Column ``j`` gets the polynomial ``sigma_j s_j prod_r (x - r) / 2`` with one root
    ``r`` at the midpoint of every gap where the column changes, written in the
    Chebyshev basis; row ``t`` gets ``(T_0(x_t), ..., T_c(x_t))``. Signs and scales
    come from the exact product form (logarithms of the factors), not from the
    expanded series. Returns ``U`` (m, c+1) in the given row order, ``V`` (n, c+1)
    and diagnostics, or ``(None, None, info)`` with ``info["message"]`` when the
    factors are not built: the scales would over- or underflow, or (``max_digits``
    given) the 16 columns with the most changes already span more than
    ``max_digits`` decimal digits, far beyond what float64 factors can certify.
    """
    m, n = Bo.shape
    Bb = Bo == 1
    changes = _column_changes(Bb)
    c = int(changes.max()) if n else 0
    info = {"max_changes": c, "nodes": rule, "changes": changes}
    x = _node_positions(Bb, rule)
    mids = 0.5 * (x[:-1] + x[1:])
    gap = np.nonzero((Bb[1:] != Bb[:-1]).T)[1]  # sorted by column, then gap
    start = np.concatenate([[0], np.cumsum(changes)])

    def roots_of(cols, k):
        return mids[gap[start[cols] + k]]

    binding = _binding_mask(Bb, tau)
    if max_digits is not None and n:
        top = np.argsort(changes, kind="stable")[-16:]
        _, digits = _range_digits(
            _log_abs_values(x, roots_of, changes, top), binding[:, top]
        )
        if digits.max() > max_digits:
            info["dynamic_range_digits"] = float(digits.max())
            info["message"] = (
                f"not attempted: with c_max = {c} the column polynomials span at "
                f"least {digits.max():.0f} decimal digits, far beyond float64"
            )
            return None, None, info
    if n * c * c > _MAX_COEF_WORK:
        info["message"] = (
            f"c_max = {c} is too large to build the Chebyshev coefficients "
            f"(n_features * c_max**2 = {n * c * c:.3g})"
        )
        return None, None, info
    U = np.polynomial.chebyshev.chebvander(x, c)
    coef = np.zeros((n, c + 1))
    coef[:, 0] = 1.0
    for k in range(c):
        cols = np.flatnonzero(changes > k)
        r = roots_of(cols, k)
        coef[cols] = 0.5 * (_chebyshev_mulx(coef[cols]) - r[:, None] * coef[cols])
    logabs = _log_abs_values(x, roots_of, changes, np.arange(n))
    # x_0 lies left of every root, so prod_r (x_0 - r) has the sign (-1)**c_j;
    # sigma_j makes the first row positive on a one and negative on a zero
    target = np.where(Bb[0], 1.0, -1.0) if m else np.ones(n)
    sigma = target * np.where(changes % 2 == 0, 1.0, -1.0)
    ref, spread = _range_digits(logabs, binding)
    log_target = np.log(margin * abs(tau)) if tau != 0 else 0.0
    log_scale = log_target - ref
    info["dynamic_range_digits"] = float(spread.max()) if n else 0.0
    if n and np.abs(log_scale).max() > 700:
        info["message"] = (
            "the column scales over- or underflow float64 "
            f"(dynamic range {info['dynamic_range_digits']:.1f} digits)"
        )
        return None, None, info
    V = (sigma * np.exp(log_scale))[:, None] * coef
    return U, V, info


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "order": ["array-like"],
        "tau": [Real],
        "margin": [Interval(Real, 1, None, closed="neither")],
        "nodes": [StrOptions(set(_NODE_RULES))],
    },
    prefer_skip_nested_validation=True,
)
def permutation_factors(X, order, *, tau=0.5, margin=2.0, nodes="uniform"):
    """Polynomial factors realising ``X`` from a row order (the sign-change lemma).

    Row ``i`` at position ``t`` of the order gets the node ``x_t`` in [-1, 1] and the
    row ``L_i = (T_0(x_t), ..., T_c(x_t))`` of Chebyshev polynomials, ``c`` being the
    maximum number of changes per column of ``X[order]``. Column ``j`` gets the
    Chebyshev coefficients ``R_j`` of ``p_j(x) = sigma_j s_j prod_r (x - r) / 2``,
    with one root ``r`` at the midpoint of each gap where the column changes, the sign
    ``sigma_j`` fixed by the first row and the scale ``s_j > 0`` chosen so that the
    binding entries (the ones if ``tau > 0``, the zeros if ``tau < 0``) have
    ``|L_i . R_j| >= margin * |tau|``. In exact arithmetic ``round_tau(L @ R.T) == X``.

    In float64 the values ``p_j(x_t)`` span a dynamic range that grows quickly with
    ``c`` (near a root they are tiny, far from all roots large); once it passes about
    9 decimal digits (the relative margin 1e-9 of the certificate) the float factors
    fail :func:`certify_rounding`, and past 13-15 digits they misround entries
    (a reconstruction). On random halfspace matrices this happened from
    ``c`` of about 10 on; paleo (c = 20) spans 18 digits and apj (c = 7) about 14.
    ``info`` reports the range and the outcome of the check.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary data (no missing entries).
    order : array-like of shape (n_samples,)
        A permutation of ``range(n_samples)``, e.g. from
        :func:`sign_change_ordering`.
    tau : float, default=0.5
        Rounding threshold.
    margin : float, default=2.0
        Factor (> 1) by which binding entries exceed ``|tau|`` in exact arithmetic.
    nodes : {"uniform", "adaptive", "chebyshev"}, default="uniform"
        Node placement on [-1, 1]; runs of identical rows always share a node.
        ``"uniform"``: equal steps; ``"adaptive"``: steps proportional to the square
        root of the number of columns changing in the gap; ``"chebyshev"``:
        Chebyshev points.

    Returns
    -------
    L : ndarray of shape (n_samples, c + 1), dtype float64
        Chebyshev basis at the nodes of the rows (entries in [-1, 1]).
    R : ndarray of shape (n_features, c + 1), dtype float64
        Chebyshev coefficients of the column polynomials.
    info : dict
        ``"max_changes"`` (c), ``"changes"`` (per column), ``"nodes"``,
        ``"dynamic_range_digits"`` (largest over the columns of
        ``log10(max_t |p_j(x_t)| / min_binding |p_j(x_t)|)``), ``"n_errors"`` (entries
        where ``round_tau(L @ R.T)`` differs from ``X`` in float64), ``"certified"``
        and ``"n_uncertified"`` (:func:`certify_rounding` with margin 1e-9).

    Raises
    ------
    ValueError
        If ``X`` is not binary, ``order`` is not a permutation of the rows, ``margin``
        is not above 1, or the scales of the columns do not fit float64 (dynamic range
        beyond about 300 digits).

    References
    ----------
    N. Alon, S. Moran, A. Yehudayoff. Sign rank versus VC dimension. COLT 2016 (the
    moment-curve construction). Neumann, Gemulla, Miettinen (ICDM 2016), Section 3,
    "Permutation algorithm", and Proposition "changing the rounding threshold".

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank._upper._permutation import permutation_factors
    >>> X = np.eye(4, dtype=int)
    >>> L, R, info = permutation_factors(X, np.arange(4))
    >>> L.shape, R.shape, info["max_changes"], info["certified"]
    ((4, 3), (4, 3), 2, True)
    >>> bool(((L @ R.T >= 0.5) == X).all())
    True
    """
    tau = check_tau(tau)
    B = check_binary_matrix(X, method="permutation")
    m = B.shape[0]
    order = np.asarray(order)
    if (
        order.shape != (m,)
        or order.dtype.kind not in "iu"
        or not np.array_equal(np.sort(order), np.arange(m))
    ):
        raise ValueError(
            f"order must be a permutation of range({m}) (one integer per row of X)."
        )
    U, V, info = _poly_factors(B[order], tau, margin, nodes)
    if U is None:
        raise ValueError(f"Cannot build float64 factors: {info['message']}")
    L = np.empty_like(U)
    L[order] = U
    info["n_errors"] = _count_errors_factors(B, L, V, tau)
    ok, n_bad = certify_rounding(
        B, L, V, tau=tau, margin=DEFAULT_MARGIN, return_count=True
    )
    info["certified"] = bool(ok)
    info["n_uncertified"] = int(n_bad)
    return L, V, info


# --------------------------------------------------------------------------------------
# the bound
# --------------------------------------------------------------------------------------


def _permutation_search(
    B,
    incumbent,
    deadline,
    *,
    tau,
    random_state=None,
    n_jobs=None,
    verbose=0,
    orientation="both",
    strategy="best",
):
    """Permutation's rank search: the family of ``methods=("permutation",)``.

    Trusts its input. The bound ``c_max + 1`` of a sign-change ordering
    (:func:`~sklearn_rrank.sign_change_ordering`, the better of the rows' and the
    columns' orders with ``orientation="both"``; ``strategy`` picks the heuristic)
    is proven by the sign-change lemma whether or not the float64 factors certify;
    it is returned as ``info["proven_rank"]``, and the factors are offered to the
    incumbent (which certifies them).

    **Sign-change lemma.** If the rows of ``X`` can be ordered so that every column
    changes value at most ``c`` times between consecutive rows, then
    ``rrank_tau(X) <= c + 1`` for every ``tau``. The same holds with the roles of rows
    and columns exchanged (apply the lemma to ``X.T`` and swap the factors).

    *Proof.* Give the row at position ``t`` of the order a real node ``x_t`` with
    ``x_0 < x_1 < ... < x_{m-1}``. For column ``j``, place one root ``r`` strictly
    between ``x_t`` and ``x_{t+1}`` for each ``t`` where the column changes; there are
    at most ``c`` roots. Let ``q_j(x) = sigma_j prod_r (x - r)`` with ``sigma_j`` in
    {+1, -1} chosen so that ``q_j(x_0) > 0`` if ``X[order[0], j] = 1`` and
    ``q_j(x_0) < 0`` otherwise. The roots are simple, so ``q_j`` changes sign at each
    root and nowhere else: between ``x_t`` and ``x_{t+1}`` it changes sign exactly
    when the column changes value. By induction on ``t``, ``q_j(x_t) > 0`` where
    ``X[order[t], j] = 1`` and ``q_j(x_t) < 0`` where it is 0. Multiply ``q_j`` by
    ``s_j > 0``: for ``tau > 0`` take ``s_j`` so large that ``s_j q_j(x_t) >= tau`` on
    the ones (zeros stay negative, hence below ``tau``); for ``tau < 0`` so large
    that ``s_j q_j(x_t) < tau`` on the zeros; for ``tau = 0`` any ``s_j``. Every
    ``s_j q_j`` has degree at most ``c``, so ``s_j q_j(x) = sum_d R_jd phi_d(x)``
    (``d = 0, ..., c``) for any basis ``phi_0, ..., phi_c`` of the polynomials of
    degree ``<= c``, and ``A = L R^T`` with ``L_td = phi_d(x_t)`` has rank at most
    ``c + 1`` and ``round_tau(A) = X``.
    The bound depends only on the integer ``c``, counted exactly; no floating-point
    computation enters it. (This is the moment-curve construction behind the sign-rank
    upper bounds of Alon, Moran and Yehudayoff; the paper moves from sign rank to
    rounding rank with Proposition "changing the rounding threshold", while the scaling
    by ``s_j`` above gives ``c + 1`` directly for every ``tau``.) Since ``c`` is at most
    the number of distinct rows minus one, the better orientation never gives more
    than ``min(m, n)``. The bound is not the rounding rank: the identity ``I_4`` has
    bound 3 (the identity order has changes ``[1, 2, 2, 1]``,
    and no order does better), while ``rrank_tau(I_n) = 2`` for ``n >= 3`` and
    ``tau > 0`` (the paper's appendix, "Identity Matrices Have Rounding Rank 2").

    **Certificate.** The factors of :func:`permutation_factors` (Chebyshev basis on
    nodes in [-1, 1]) are checked with :func:`certify_rounding` (margin 1e-9); the
    node placements "uniform", "adaptive" and "chebyshev" are tried in turn. The
    values of the column polynomials span a dynamic range that grows quickly with
    ``c``, so for large ``c`` no float64 factors pass. Then the bound is still returned
    (it is proven by the lemma) as ``info["proven_rank"]``, which
    :func:`~sklearn_rrank.rounding_rank_bounds` reports as ``proven_upper``, with
    ``info["message"]`` saying why. ``info["proof"] = "sign-change lemma"`` marks the
    bound as proven by exact combinatorics in every case; ``certified`` is strictly
    about the float64 factors.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 3, "Permutation algorithm";
    N. Alon, S. Moran, A. Yehudayoff, "Sign rank versus VC dimension", COLT 2016.
    """
    rng = check_random_state(random_state)
    sides = ("rows", "columns") if orientation == "both" else (orientation,)
    seeds = rng.randint(0, 2**31 - 1, size=len(sides))
    candidates = []
    orderings = {}
    stopped = False
    for side, seed in zip(sides, seeds, strict=True):
        M = B if side == "rows" else B.T
        if candidates and deadline.expired():
            stopped = True
            break
        order, c, results, cut = _sign_change_ordering(
            M,
            strategy,
            None,
            np.random.RandomState(seed),
            deadline,
            verbose=verbose,
        )
        stopped |= cut
        orderings[side] = results
        candidates.append((c, side, order))
    c_best = min(c for c, _, _ in candidates)
    info = {
        "proof": "sign-change lemma",
        "max_changes": c_best,
        "orderings": orderings,
    }
    certified = False
    messages = []
    for c, side, order in candidates:
        if c != c_best:
            continue
        if not info.get("orientation"):
            info["orientation"], info["order"] = side, order
        M = B if side == "rows" else B.T
        for rule in _NODE_RULES:
            if deadline.expired():
                stopped = True
                messages.append("time limit reached before the factors were built")
                break
            U, V, finfo = _poly_factors(
                M[order], tau, 2.0, rule, max_digits=_MAX_ATTEMPT_DIGITS
            )
            if U is None:
                messages.append(f"{side}: {finfo['message']}")
                break
            Lf = np.empty_like(U)
            Lf[order] = U
            if side == "columns":
                Lf, V = V, Lf
            n_bad = incumbent.count_uncertified(Lf, V)
            ok = n_bad == 0
            if ok:
                incumbent.offer(Lf, V)
            digits = finfo["dynamic_range_digits"]
            if "nodes" not in info or ok:
                info.update(
                    orientation=side,
                    order=order,
                    nodes=rule,
                    dynamic_range_digits=digits,
                    n_uncertified=int(n_bad),
                    n_errors=_count_errors_factors(B, Lf, V, tau),
                )
            if ok:
                certified = True
                break
            messages.append(
                f"{side}/{rule} nodes: {n_bad} entries not certified (dynamic range "
                f"{digits:.1f} digits)"
            )
        if certified or stopped:
            break
    rank = c_best + 1
    info["proven_rank"] = rank
    if certified:
        info["message"] = (
            f"bound {rank} proven by the sign-change lemma; float64 factors certified"
        )
    else:
        info["message"] = (
            f"bound {rank} proven by the sign-change lemma (exact integer counting); "
            "no certified float64 factors: " + "; ".join(messages)
        )
    info["stopped_early"] = stopped
    return info
