"""Result containers shared by the solver modules.

Solver modules (``_rsvd.py``, ``_projlp.py``, ``_lpca.py``, ...) take validated arrays
and return these plain containers; estimators and ``rounding_rank_bounds`` package
them. Solvers never import estimators.
"""

from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "FactorizationResult",
    "LogisticModel",
    "LowerBoundResult",
    "RankSearchResult",
    "SearchReport",
]


@dataclass(frozen=True)
class LogisticModel:
    """The logistic model behind L-PCA factors: what turns them into probabilities.

    The logits of an entry are ``theta_ij = <L_i, R_j> - tau`` (``fit_bias=True``:
    the bias is the last column of ``R``), ``<U_i, V_j>`` scaled back with the
    global ``offset`` (``fit_bias="global"``), or the latent product
    (``fit_bias=False``); see :func:`~sklearn_rrank._lpca._transform.lpca_row_logits`.

    Attributes
    ----------
    fit_bias : bool or "global"
        The bias model of the fit.
    alpha : float
        Ridge weight of the fit; new rows are fitted with it.
    offset : float or None
        The global offset ``b`` (only with ``fit_bias="global"``).
    deviance, null_deviance : float or None
        Deviance of the fit and of one Bernoulli probability per column (None when
        not computed, e.g. for a rank search's certificate).
    """

    fit_bias: bool | str
    alpha: float
    offset: float | None = None
    deviance: float | None = None
    null_deviance: float | None = None


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
        Method-specific diagnostics (e.g. ``"lp_status_counts"``); the estimator
        shows them as ``solver_info_`` and reads none of them.
    message : str
        One line on how the fit ended.
    time_limited : bool
        True when the fit's deadline stopped it.
    model : LogisticModel or None
        The probabilistic model of the factors (L-PCA), else None.
    """

    L: np.ndarray
    R: np.ndarray
    n_iter: int = 0
    converged: bool = True
    info: dict = field(default_factory=dict)
    message: str = ""
    time_limited: bool = False
    model: LogisticModel | None = None


@dataclass
class SearchReport:
    """What a rank search tells the layers above the skeleton (typed).

    :func:`~sklearn_rrank._search._skeleton.run_rank_search` builds it once from the
    family's ``info`` dict (the keys in :attr:`FAMILY_KEYS` are the whole contract
    between a family and the skeleton) and from the incumbent; the portfolio of
    :func:`~sklearn_rrank.rounding_rank_bounds` and ``RoundingRankCV`` read these
    fields, never the family's keys.

    Attributes
    ----------
    message : str
        One line on the outcome (e.g. ``"certified rank 5 (time limit reached)"``).
    curve : list of [float, int]
        ``[seconds, bound]`` at every improvement, seconds from the call's origin.
    errors_by_k : dict of int to int
        Wrong entries of the best fit tried at each ``k``.
    seconds : float
        Wall-clock seconds of the search.
    lower : int or None
        A lower bound on the rounding rank the search proved on the way (the
        rank-one test: 1 or 2), else None.
    proven_rank : int or None
        An upper bound proven without certified float factors (Permutation's
        sign-change lemma), else None.
    proof : str or None
        The argument behind ``proven_rank``.
    fit_params : dict
        Fit parameters that reproduce the certificate's model (L-PCA: its bias), for
        an estimator refitted at the certified rank.
    model : LogisticModel or None
        The probabilistic model of the certificate (L-PCA's certificates straight
        from a logistic fit), else None (also when LPs refined the factors).
    interrupted : bool
        True if a KeyboardInterrupt stopped the search.
    """

    #: keys of a family's ``info`` dict that the skeleton reads
    FAMILY_KEYS = (
        "message",
        "stopped_early",
        "lower",
        "proven_rank",
        "proof",
        "fit_params",
        "model",
    )

    message: str = ""
    curve: list = field(default_factory=list)
    errors_by_k: dict = field(default_factory=dict)
    seconds: float = 0.0
    lower: int | None = None
    proven_rank: int | None = None
    proof: str | None = None
    fit_params: dict = field(default_factory=dict)
    model: LogisticModel | None = None
    interrupted: bool = False


@dataclass
class LowerBoundResult:
    """A lower bound on the rounding rank and how its computation ended.

    Attributes
    ----------
    bound : int
        The lower bound.
    message : str
        One line on how it was found (e.g. ``"6 columns shattered"``).
    stopped_early : bool
        True when the deadline stopped the computation (the bound holds; a longer
        run may find a larger one).
    info : dict
        Method-specific diagnostics.
    """

    bound: int
    message: str = ""
    stopped_early: bool = False
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
    report : SearchReport
        The typed outcome that the layers above the skeleton read.
    """

    rank: int | None
    L: np.ndarray | None = None
    R: np.ndarray | None = None
    certified: bool = False
    stopped_early: bool = False
    info: dict = field(default_factory=dict)
    report: SearchReport = field(default_factory=SearchReport)


@dataclass(frozen=True)
class Certificate:
    """A certified rounding-rank upper bound and the method that found it.

    Attributes
    ----------
    rank : int
        The number of columns of ``L`` and ``R``.
    method : str
        The method that found it (``"trivial"`` for ``X`` itself as a factor).
    L : ndarray of shape (n_samples, rank)
    R : ndarray of shape (n_features, rank)
        ``round_tau(L @ R.T)`` equals ``X`` (checked in float64 with a margin).
    """

    rank: int
    method: str
    L: object
    R: object


@dataclass(frozen=True)
class ProvenBound:
    """An upper bound proven without factors (e.g. a rank-one test).

    Attributes
    ----------
    rank : int
    method : str
    """

    rank: int
    method: str


@dataclass(frozen=True)
class PortfolioOutcome:
    """What a portfolio run of several methods found.

    Attributes
    ----------
    lower : int
        The best lower bound.
    lower_method : str
        The method that proved it.
    best : Certificate or None
        The best certified upper bound (None: no method certified one).
    proven : ProvenBound or None
        The best upper bound proven without factors.
    report : list of dict
        One row per method (see :class:`~sklearn_rrank.RoundingRankBounds`).
    """

    lower: int
    lower_method: str
    best: Certificate | None
    proven: ProvenBound | None
    report: list
