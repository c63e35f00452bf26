"""Result containers shared by the solver modules.

Solver modules (``_rsvd.py``, ``_projlp.py``, ``_lpca.py``, ...) take validated arrays
and return these plain containers; estimators and ``rounding_rank_bounds`` package
them. Solvers never import estimators.
"""

from dataclasses import dataclass, field

import numpy as np

__all__ = ["FactorizationResult", "RankSearchResult"]


@dataclass
class FactorizationResult:
    """Factors of a minimum-error rounding rank-k fit.

    Attributes
    ----------
    L : ndarray of shape (n_samples, k), dtype float64
        Left factor (row representations).
    R : ndarray of shape (n_features, k), dtype float64
        Right factor; ``round_tau(L @ R.T)`` approximates ``X``.
    n_iter : int
        Iterations run by the solver (0 for one-shot methods).
    converged : bool
        False when the solver stopped at ``max_iter``/a time limit or an LP did not
        end optimal; the estimator then warns.
    info : dict
        Method-specific diagnostics (e.g. ``"lp_status_counts"``).
    """

    L: np.ndarray
    R: np.ndarray
    n_iter: int = 0
    converged: bool = True
    info: dict = field(default_factory=dict)


@dataclass
class RankSearchResult:
    """Outcome of a rounding-rank upper-bound search by one method.

    Attributes
    ----------
    rank : int or None
        The upper bound (number of columns of ``L`` and ``R``, every column counted),
        or None when the method found nothing. It is certified when ``certified`` is
        True; a method may also return a bound proven by exact combinatorial
        reasoning without certified float factors (``certified=False``,
        ``info["proof"]`` names the argument, e.g. Permutation's sign-change lemma).
    L : ndarray of shape (n_samples, rank) or None
    R : ndarray of shape (n_features, rank) or None
        Certificate: ``certify_rounding(X, L, R, tau=tau)`` is True.
    certified : bool
        True iff ``rank`` is not None and the certificate was verified.
    stopped_early : bool
        True when a time limit or ``max_rank`` ended the search before success.
    info : dict
        Method-specific diagnostics (e.g. ``"errors_by_k"``, ``"n_lps"``, a message).
    """

    rank: int | None
    L: np.ndarray | None = None
    R: np.ndarray | None = None
    certified: bool = False
    stopped_early: bool = False
    info: dict = field(default_factory=dict)
