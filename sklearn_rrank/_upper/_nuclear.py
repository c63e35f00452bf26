"""Nuclear: nuclear-norm minimisation under rounding constraints (paper Section 3).

The paper's algorithm Nuclear solves

    minimise ||Y||_*  subject to  Y_ij >= tau where X_ij = 1,  Y_ij < tau where X_ij = 0

and, because the solver returned (numerically) full-rank matrices, zeroes the smallest
singular values of the solution as long as the rounding does not change (Section 5.1).
The strict inequality is made closed with a margin ``delta > 0`` (our
reconstruction): ``Y_ij >= tau + delta`` on the ones and ``Y_ij <= tau - delta`` on the
zeros. The paper used CVX with SeDuMi; here the convex program is solved by ADMM with
singular value thresholding (numpy/scipy only), and the truncated solution is turned
into a certified rounding-rank upper bound.

The nuclear norm is a loose proxy for the rank: on the identity ``I_n`` the optimum is
``I_n`` itself (rank n) although ``rrank(I_n) = 2`` (the paper's caveat, Section 3).
"""

import time
import warnings
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import scipy.linalg
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions, validate_params
from threadpoolctl import threadpool_limits

from sklearn_rrank._core._rounding import certify_rounding
from sklearn_rrank._core._validation import check_binary_matrix

__all__ = [
    "nuclear_norm_minimization",
    "truncate_rounding",
]

# residual-balancing factor of the ADMM penalty (Boyd et al. 2011, Section 3.4.1)
_MU = 10.0

# below this many entries the per-iteration SVD runs on one BLAS thread: threading a
# small SVD costs more than it gains, and much more on a loaded machine
_SINGLE_THREAD_ENTRIES = 1 << 18

# relative safety band of the greedy truncation (10 x the certificate's margin)
_SAFETY = 1e-8


#: Nuclear's parameters and their constraints, declared once for the doors
#: (:func:`nuclear_norm_minimization`, :func:`truncate_rounding`) and the registry
NUCLEAR_PARAMS = {
    "delta": [Interval(Real, 0, None, closed="neither")],
    "max_iter": [Interval(Integral, 1, None, closed="left")],
    "tol": [Interval(Real, 0, None, closed="neither")],
    "rule": [StrOptions({"prefix", "greedy"})],
}
_TAU = [Interval(Real, None, None, closed="neither")]


def _svd(A):
    """Thin SVD (LAPACK gesdd, falling back to the slower but more robust gesvd)."""
    try:
        return np.linalg.svd(A, full_matrices=False)
    except np.linalg.LinAlgError:
        return scipy.linalg.svd(A, full_matrices=False, lapack_driver="gesvd")


def _project(Y, ones, zeros, upper, lower):
    """Projection onto the constraint set: ones >= upper, zeros <= lower, rest free."""
    Z = Y.copy()
    np.maximum(Z, upper, out=Z, where=ones)
    np.minimum(Z, lower, out=Z, where=zeros)
    return Z


def _nnm_admm(X, tau, delta, max_iter, tol, deadline=None, verbose=0):
    """ADMM with singular value thresholding for the constrained nuclear norm problem.

    Scaled-form ADMM on ``min ||Y||_* + I_C(Z)`` s.t. ``Y = Z`` (a reconstruction after
    Boyd et al. 2011): ``Y = SVT(Z - W, 1/rho)``, ``Z = P_C(Y + W)``, ``W += Y - Z``,
    with the stopping rule of Boyd et al. (2011, Section 3.3.1, ``eps_rel = tol``,
    ``eps_abs = tol / 10``) and residual balancing of ``rho`` (Section 3.4.1).

    ``X`` is validated float64 (NaN = missing, unconstrained). Returns ``Y`` (the
    thresholded, low-rank iterate, feasible up to the primal residual), ``Z`` (its
    projection onto the constraints, exactly feasible) and an info dict. A
    :class:`~sklearn_rrank._search._skeleton.Deadline` (or None) is checked every
    iteration.
    """
    t0 = time.perf_counter()
    m, n = X.shape
    ones = X == 1
    zeros = X == 0
    upper, lower = tau + delta, tau - delta
    eps_rel = tol
    eps_abs = tol / 10.0
    sqrt_mn = np.sqrt(m * n)

    Z = _project(np.full((m, n), tau), ones, zeros, upper, lower)
    W = np.zeros((m, n))
    norm_Z = np.linalg.norm(Z, 2)
    rho = 1.0 / norm_Z if norm_Z > 0 else 1.0
    converged = stopped_by_time = False
    Y = Z
    s = np.zeros(0)
    r_norm = s_norm = np.inf
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        U, sv, Vt = _svd(Z - W)
        sv = sv - 1.0 / rho
        rank = int(np.count_nonzero(sv > 0))
        s = sv[:rank]
        Y = (U[:, :rank] * s) @ Vt[:rank]
        Z_old = Z
        Z = _project(Y + W, ones, zeros, upper, lower)
        W += Y - Z
        r_norm = np.linalg.norm(Y - Z)
        s_norm = rho * np.linalg.norm(Z - Z_old)
        eps_pri = sqrt_mn * eps_abs + eps_rel * max(
            np.linalg.norm(Y), np.linalg.norm(Z)
        )
        eps_dual = sqrt_mn * eps_abs + eps_rel * rho * np.linalg.norm(W)
        if verbose >= 2 and (n_iter == 1 or n_iter % 100 == 0):
            print(
                f"[nuclear] iter {n_iter}: nuclear norm {s.sum():.6g}, rank {rank}, "
                f"primal res {r_norm:.2e}, dual res {s_norm:.2e}, rho {rho:.3g}"
            )
        if r_norm <= eps_pri and s_norm <= eps_dual:
            converged = True
            break
        if deadline is not None and deadline.expired():
            stopped_by_time = True
            break
        if r_norm > _MU * s_norm:
            rho *= 2.0
            W /= 2.0
        elif s_norm > _MU * r_norm:
            rho /= 2.0
            W *= 2.0
    violation = np.concatenate(
        [np.maximum(upper - Y[ones], 0.0), np.maximum(Y[zeros] - lower, 0.0)]
    )
    info = {
        "nuclear_norm": float(s.sum()),
        "singular_values": s.copy(),
        "admm_rank": int(s.shape[0]),
        "n_iter": int(n_iter),
        "converged": converged,
        "stopped_by_time": stopped_by_time,
        "primal_residual": float(r_norm),
        "dual_residual": float(s_norm),
        "max_violation": float(violation.max()) if violation.size else 0.0,
        "rho": float(rho),
        "seconds": time.perf_counter() - t0,
    }
    if verbose >= 1:
        print(
            f"[nuclear] ADMM {'converged' if converged else 'stopped'} after {n_iter} "
            f"iterations ({info['seconds']:.2f} s): nuclear norm "
            f"{info['nuclear_norm']:.6g}, rank {info['admm_rank']}, max violation "
            f"{info['max_violation']:.2e}"
        )
    return Y, Z, info


def _run_admm(X, tau, delta, max_iter, tol, deadline=None, verbose=0):
    """:func:`_nnm_admm`, on one BLAS thread for small matrices."""
    if X.size <= _SINGLE_THREAD_ENTRIES:
        with threadpool_limits(limits=1, user_api="blas"):
            return _nnm_admm(X, tau, delta, max_iter, tol, deadline, verbose)
    return _nnm_admm(X, tau, delta, max_iter, tol, deadline, verbose)


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "tau": _TAU,
        **{k: NUCLEAR_PARAMS[k] for k in ("delta", "max_iter", "tol")},
        "verbose": ["verbose"],
    },
    prefer_skip_nested_validation=True,
)
def nuclear_norm_minimization(
    X, *, tau=0.5, delta=0.5, max_iter=5000, tol=1e-5, verbose=0
):
    """Minimise the nuclear norm of a matrix whose rounding is ``X`` (ADMM + SVT).

    Solves ``min ||Y||_*`` subject to ``Y_ij >= tau + delta`` where ``X_ij = 1`` and
    ``Y_ij <= tau - delta`` where ``X_ij = 0`` (missing entries are unconstrained) by
    ADMM with singular value thresholding. The problem is always feasible (e.g.
    ``tau + delta * (2 X - 1)``). Its dual is ``max <W, tau J + delta S>`` subject to
    ``||W||_2 <= 1`` and ``S o W >= 0`` with ``S = 2 X - 1`` (nuclear-norm duality).

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary data; ``NaN`` marks missing entries, whose constraints are dropped.
        Sparse input is densified (the method is dense).
    tau : float, default=0.5
        Rounding threshold.
    delta : float, default=0.5
        Margin (> 0) that replaces the paper's strict inequality ``Y_ij < tau``. With
        ``tau = 0`` the solution scales linearly in ``delta``; otherwise the ratio
        ``delta / |tau|`` changes the solution. The paper does not state its choice
        (**[unverified]**); 0.5 with ``tau = 0.5`` makes ``X`` itself feasible.
    max_iter : int, default=5000
        Maximum number of ADMM iterations (one thin SVD each).
    tol : float, default=1e-5
        Relative tolerance ``eps_rel`` of the stopping rule of Boyd et al. (2011,
        Section 3.3.1); the absolute tolerance is ``tol / 10`` per entry.
    verbose : int, default=0
        1: a summary line; 2: a line every 100 iterations.

    Returns
    -------
    Y : ndarray of shape (n_samples, n_features), dtype float64
        The singular-value-thresholded ADMM iterate: low rank, and feasible up to the
        primal residual (``info["max_violation"]``); ``round_tau(Y) == X`` holds as
        long as the violation is below ``delta``.
    info : dict
        ``nuclear_norm`` (of ``Y``), ``singular_values`` (the positive singular values
        of ``Y``), ``admm_rank``, ``n_iter``, ``converged``, ``primal_residual``,
        ``dual_residual``, ``max_violation``, ``rho`` and ``seconds``.

    Raises
    ------
    ValueError
        If ``X`` is not binary, or ``delta``, ``tol`` or ``max_iter`` are not
        positive (``InvalidParameterError``, also a ``TypeError``, naming the
        parameter).

    Warns
    -----
    ConvergenceWarning
        If ADMM stops at ``max_iter`` before the stopping rule holds.

    References
    ----------
    Neumann, Gemulla, Miettinen. ICDM 2016, Section 3 ("Nuclear norm algorithm").
    Boyd, Parikh, Chu, Peleato, Eckstein. Distributed Optimization and Statistical
    Learning via the Alternating Direction Method of Multipliers. Found. Trends ML
    3(1), 2011. Cai, Candès, Shen. A singular value thresholding algorithm for matrix
    completion. SIAM J. Optim. 20(4), 2010.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank._upper._nuclear import nuclear_norm_minimization
    >>> Y, info = nuclear_norm_minimization(np.eye(3))
    >>> round(info["nuclear_norm"], 4)
    3.0
    >>> bool(((Y >= 0.5) == np.eye(3)).all())
    True
    """
    X = check_binary_matrix(X, allow_missing=True, method="nuclear")
    Y, _, info = _run_admm(
        X, float(tau), float(delta), int(max_iter), float(tol), verbose=verbose
    )
    if not info["converged"]:
        warnings.warn(
            f"Nuclear-norm ADMM did not converge in max_iter={max_iter} iterations "
            f"(primal residual {info['primal_residual']:.2e}, dual residual "
            f"{info['dual_residual']:.2e}); increase max_iter or tol.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return Y, info


def _rounds_to(A, ones, observed, tau):
    return not np.any(((A >= tau) != ones) & observed)


def _truncate(Y, X, tau, rule, accept=None):
    """Core of :func:`truncate_rounding` on validated float64 arrays.

    ``accept(L, R)`` decides whether a candidate is kept (default: it certifies);
    the rank search passes the incumbent's ``offer`` so that certification happens
    once, in the skeleton.
    """
    if accept is None:

        def accept(L, R):
            return certify_rounding(X, L, R, tau=tau)

    m, n = X.shape
    U, s, Vt = _svd(Y)
    K = int(np.count_nonzero(s > 0))
    U, s, Vt = U[:, :K], s[:K], Vt[:K]
    ones = X == 1
    observed = ~np.isnan(X)

    def factors(idx):
        root = np.sqrt(s[idx])
        return U[:, idx] * root, Vt[idx].T * root

    if rule == "prefix":
        A = np.zeros((m, n))
        for r in range(K + 1):
            if r > 0:
                A += s[r - 1] * np.outer(U[:, r - 1], Vt[r - 1])
            if _rounds_to(A, ones, observed, tau):
                L, R = factors(np.arange(r))
                if accept(L, R):
                    return r, L, R
        return None, None, None
    # greedy drop: from the smallest singular value upwards, drop a component for
    # good when the rounding stays exact without it. A drop is accepted only if every
    # entry stays clear of tau by a safety band that dominates the margin of
    # certify_rounding (|L_i|.|R_j| <= ||L_i|| ||R_j|| for any subset of components),
    # so that the final certificate does not fail on an entry left exactly at tau.
    A = (U * s) @ Vt
    if not _rounds_to(A, ones, observed, tau):
        return None, None, None
    row_norm = np.sqrt((U * U) @ s)
    col_norm = np.sqrt((Vt * Vt).T @ s)
    band = _SAFETY * (np.outer(row_norm, col_norm) + abs(tau))
    keep = np.ones(K, dtype=bool)
    for i in range(K - 1, -1, -1):
        A_try = A - s[i] * np.outer(U[:, i], Vt[i])
        gap = A_try - tau
        clear = np.where(ones, gap > band, -gap > band) | ~observed
        if clear.all():
            A = A_try
            keep[i] = False
    L, R = factors(np.flatnonzero(keep))
    if accept(L, R):
        return int(keep.sum()), L, R
    return _truncate(Y, X, tau, "prefix", accept)  # pragma: no cover (safety net)


@validate_params(
    {
        "Y": ["array-like"],
        "X": ["array-like", "sparse matrix"],
        "tau": _TAU,
        "rule": NUCLEAR_PARAMS["rule"],
    },
    prefer_skip_nested_validation=True,
)
def truncate_rounding(Y, X, tau=0.5, rule="prefix"):
    """Truncate the SVD of ``Y`` to the least rank whose rounding is still ``X``.

    The paper's step after Nuclear (Section 5.1): "zeroing the smallest singular values
    of the returned matrix that did not affect the result of the rounding". Two readings
    (which one the paper used is **[unverified]**):

    * ``"prefix"``: the smallest ``r`` such that the rank-``r`` truncated SVD of ``Y``
      rounds to ``X`` and its factors pass :func:`~sklearn_rrank.certify_rounding`.
      The rounding is not monotone in ``r``, so ``r`` is scanned upwards from 0 (no
      bisection), one rank-1 update per step.
    * ``"greedy"``: starting from all components, drop components from the smallest
      singular value upwards, each for good if the rounding stays exact (with every
      entry at least ``1e-8`` times its scale away from ``tau``, so that the result
      passes the certificate); should the final certificate still fail, the prefix
      rule is used instead.

    Parameters
    ----------
    Y : array-like of shape (n_samples, n_features)
        Real matrix, e.g. from :func:`nuclear_norm_minimization`.
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary data; ``NaN`` (missing) entries are not checked.
    tau : float, default=0.5
        Rounding threshold.
    rule : {"prefix", "greedy"}, default="prefix"
        Truncation rule.

    Returns
    -------
    rank : int or None
        The rank ``r`` of the certified truncation, or None if none was certified
        (e.g. ``Y`` itself does not round to ``X``).
    L : ndarray of shape (n_samples, rank) or None
    R : ndarray of shape (n_features, rank) or None
        Balanced factors ``U_r diag(sqrt(s_r))`` and ``V_r diag(sqrt(s_r))`` of the
        kept components; ``certify_rounding(X, L, R, tau=tau)`` is True.

    Raises
    ------
    ValueError
        If ``X`` is not binary, the shapes differ, ``Y`` is not finite, or ``rule``
        is unknown.

    References
    ----------
    Neumann, Gemulla, Miettinen. ICDM 2016, Section 5.1 (implementation of Nuclear).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank._upper._nuclear import truncate_rounding
    >>> X = np.array([[1, 1, 0], [1, 0, 0]])
    >>> Y = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    >>> rank, L, R = truncate_rounding(Y, X)
    >>> rank
    1
    """
    tau = float(tau)
    X = check_binary_matrix(X, allow_missing=True, method="nuclear")
    Y = np.asarray(Y, dtype=np.float64)
    if Y.shape != X.shape:
        raise ValueError(f"Y has shape {Y.shape} but X has shape {X.shape}.")
    if not np.isfinite(Y).all():
        raise ValueError("Y must hold finite numbers (no NaN or infinity).")
    return _truncate(Y, X, tau, rule)


@dataclass(frozen=True)
class _NuclearSettings:
    """The method parameters of Nuclear's rank search (:data:`NUCLEAR_PARAMS`)."""

    delta: float = 0.5
    max_iter: int = 5000
    tol: float = 1e-5
    rule: str = "prefix"


def _nuclear_search(
    X, incumbent, deadline, *, tau, random_state=None, n_jobs=None, verbose=0, **params
):
    """Nuclear's rank search: the family of ``methods=("nuclear",)``; trusts X.

    Runs :func:`nuclear_norm_minimization` (ADMM) on the call's deadline and then
    :func:`truncate_rounding` on its solution. The bound is the rank of the certified
    truncation. If the ADMM iterate does not round to ``X`` (not converged far
    enough), the truncation is tried on its projection onto the constraints, which is
    exactly feasible but usually of higher rank; ``info["source"]`` says which matrix
    gave the bound (``"admm"``, ``"projection"`` or None when neither certified).
    When the deadline ends ADMM the current iterate is truncated (any certified
    truncation is still a valid bound).

    Method parameters (``method_params={"nuclear": {...}}``, the fields of
    :class:`_NuclearSettings`): ``delta`` (0.5, the constraints' margin, see
    :func:`nuclear_norm_minimization`), ``max_iter`` (5000 ADMM iterations),
    ``tol`` (1e-5, relative ADMM tolerance) and ``rule`` (``"prefix"`` or
    ``"greedy"``, see :func:`truncate_rounding`). ``random_state`` and ``n_jobs``
    are not read (ADMM is deterministic and runs in one thread). Returns the
    ``info`` dict: the ADMM diagnostics plus ``source``, ``rule`` and
    ``admm_seconds``.

    References
    ----------
    Neumann, Gemulla, Miettinen. ICDM 2016, Section 3 ("Nuclear norm algorithm") and
    Section 5.1; Cai, Candes, Shen (SIAM J. Optim. 2010), singular value thresholding.
    """
    settings = _NuclearSettings(**params)
    rule = settings.rule
    Y, Z, info = _run_admm(
        X,
        tau,
        settings.delta,
        settings.max_iter,
        settings.tol,
        deadline=deadline,
        verbose=verbose,
    )
    info["admm_seconds"] = info.pop("seconds")
    info["rule"] = rule
    rank, _, _ = _truncate(Y, X, tau, rule, incumbent.offer)
    info["source"] = "admm"
    if rank is None:
        rank, _, _ = _truncate(Z, X, tau, rule, incumbent.offer)
        info["source"] = "projection"
    if rank is None:
        info["source"] = None
        info["stopped_early"] = bool(info["stopped_by_time"])
        info["message"] = (
            "no truncation of the ADMM solution (or of its projection onto the "
            "constraints) rounds to X with a float64 certificate below the known bound"
        )
    return info
