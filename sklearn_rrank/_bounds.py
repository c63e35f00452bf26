"""Lower and upper bounds on the rounding rank, and ``rounding_rank_bounds``.

Lower bounds: the spectral bound (paper Proposition "LowerBound", via the sign-rank
bound it rests on), the VC-dimension bound (:mod:`sklearn_rrank._vc`) and the exact
rank-one test (Proposition "rrank1_eq_block_nested"). Upper bounds come from the
algorithms (R-SVD, ProjLP, L-PCA, Permutation, Nuclear) and are always certified by
:func:`~sklearn_rrank.certify_rounding`.
"""

import importlib
import inspect
import time
import zlib
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg
from sklearn.utils import check_random_state

from sklearn_rrank._rounding import certify_rounding
from sklearn_rrank._validation import check_binary_matrix, check_tau

__all__ = ["RoundingRankBounds", "rounding_rank_bounds", "spectral_lower_bound"]

LOWER_METHODS = ("spectral", "vc", "rank_one")
UPPER_METHODS = ("trivial", "rsvd", "projlp", "lpca", "permutation", "nuclear")
DEFAULT_METHODS = ("spectral", "vc", "rank_one", "rsvd", "projlp", "lpca")


def _rank_zero_possible(X, tau):
    """True iff ``round_tau(0) == X``, i.e. the rank-0 factorization is exact."""
    if tau > 0:
        return not np.any(X == 1)
    return not np.any(X == 0)


def spectral_lower_bound(X, *, tau=0.5):
    """Spectral lower bound on the rounding rank from the singular values of ``2X - 1``.

    Let ``S = 2X - 1`` be the sign matrix and ``sigma_1 >= sigma_2 >= ...`` its singular
    values. Forster et al.'s bound (the lemma in the proof of the paper's Proposition
    "LowerBound", [Th. 5] of "A better linear lower bound") says that the sign rank
    ``d = srank(S)`` satisfies ``d * sum_{i <= d} sigma_i^2 >= m n``. Because
    ``d * sum_{i<=d} sigma_i^2`` grows with ``d``, ``srank(S) >= d*``, the least ``d``
    with that property. For every threshold ``tau``, ``srank(S) <= rrank_tau(X) + 1``
    (if ``round_tau(A) = X`` then ``A - (tau - eps) J`` has the sign pattern of ``S``
    for a small ``eps > 0``, and ``J`` adds at most one to the rank), hence

        ``rrank_tau(X) >= d* - 1``  for every ``tau``.

    This is the form used here. It is at most one less than the paper's statement
    ``(rrank_0 + 1) sum_{i <= rrank_0} sigma_i^2 >= m n``: the last step of the
    appendix proof of that statement compares ``sum_{i <= srank}`` with
    ``sum_{i <= rrank_0}`` in the wrong direction, so we use only what the lemma
    proves. Because the bound holds for every ``tau`` directly, no threshold change
    (Proposition "changingRoundingThreshold") is needed. The result is also at least
    1 unless the all-zero factorization is exact (``X`` all zeros for ``tau > 0``, all
    ones for ``tau <= 0``).

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary data (no missing entries).
    tau : float, default=0.5
        Rounding threshold.

    Returns
    -------
    bound : int
        A lower bound on ``rrank_tau(X)``.

    Raises
    ------
    ValueError
        If ``X`` is not binary, is empty or holds missing entries.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Proposition "LowerBound" and its proof in
    the appendix; Forster, Krause, Lokam, Mubarakzjanov, Schmitt, Simon, "Relations
    between communication complexity, linear arrangements, and computational
    complexity" (FSTTCS 2001), Theorem 5.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import spectral_lower_bound
    >>> spectral_lower_bound(np.eye(8))
    1
    >>> rng = np.random.default_rng(0)
    >>> spectral_lower_bound(rng.integers(0, 2, size=(200, 200)))
    7
    """
    tau = check_tau(tau)
    X = check_binary_matrix(X, accept_sparse=False, method="spectral")
    if _rank_zero_possible(X, tau):
        return 0
    m, n = X.shape
    sq = scipy.linalg.svdvals(2.0 * X - 1.0) ** 2
    d = np.arange(1, sq.shape[0] + 1)
    # guard the comparison against round-off in the singular values
    f = d * np.cumsum(sq) * (1 + 1e-9)
    d_star = int(np.flatnonzero(f >= m * n)[0] + 1)
    return max(d_star - 1, 1)


def trivial_upper_bound(X, *, tau=0.5):
    """Certified factors of rank ``min(m, n)`` (one more when ``tau <= 0``).

    ``A = c X`` with ``c = 2 tau`` rounds to ``X`` for ``tau > 0``, written as
    ``L = c X, R = I`` or ``L = I, R = c X^T``; for ``tau <= 0`` a constant column
    shifts the zeros below ``tau``.
    """
    m, n = X.shape
    if tau > 0:
        if n <= m:
            L, R = 2 * tau * X, np.eye(n)
        else:
            L, R = np.eye(m), 2 * tau * X.T
    else:
        shift = tau - 1.0
        if n <= m:
            L = np.hstack([(1.0 - shift) * X, np.ones((m, 1))])
            R = np.hstack([np.eye(n), np.full((n, 1), shift)])
        else:
            L = np.hstack([np.eye(m), np.full((m, 1), shift)])
            R = np.hstack([(1.0 - shift) * X.T, np.ones((n, 1))])
    return L, R


@dataclass
class RoundingRankBounds:
    """Combined lower and upper bounds on the rounding rank.

    Attributes
    ----------
    lower : int
        Best lower bound; ``lower_method`` names its method.
    upper : int
        Best certified upper bound; ``upper_method`` names its method.
    L : ndarray of shape (n_samples, upper)
    R : ndarray of shape (n_features, upper)
        The certificate of ``upper``: ``certify_rounding(X, L, R, tau=tau)`` holds.
    exact : bool
        True iff ``lower == upper``.
    proven_upper : int
        The best upper bound that is either certified or proven by exact
        combinatorial reasoning without certified float factors (Permutation's
        sign-change lemma); ``proven_upper <= upper``.
    proven_upper_method : str
        The method of ``proven_upper``.
    tau : float
        The rounding threshold.
    report : list of dict
        One row per method: ``method``, ``kind`` ("lower" or "upper"), ``bound`` (int or
        None), ``seconds``, ``certified`` (upper bounds), ``stopped_early`` and
        ``message``.
    """

    lower: int
    upper: int
    lower_method: str
    upper_method: str
    L: np.ndarray
    R: np.ndarray
    exact: bool
    tau: float
    report: list = field(default_factory=list)
    proven_upper: int | None = None
    proven_upper_method: str | None = None

    def to_dict(self):
        """JSON-friendly summary (without the factors)."""
        return {
            "lower": self.lower,
            "upper": self.upper,
            "lower_method": self.lower_method,
            "upper_method": self.upper_method,
            "exact": self.exact,
            "proven_upper": self.proven_upper,
            "proven_upper_method": self.proven_upper_method,
            "tau": self.tau,
            "report": self.report,
        }


# upper-bound method -> module holding its ``<method>_rank_upper_bound`` function
_UPPER_MODULES = {
    "rsvd": "sklearn_rrank._rsvd",
    "projlp": "sklearn_rrank._projlp",
    "lpca": "sklearn_rrank._lpca",
    "permutation": "sklearn_rrank._permutation",
    "nuclear": "sklearn_rrank._nuclear",
}


def _upper_bound_by(method, X, *, tau, time_limit, random_state, n_jobs, verbose):
    """Run one upper-bound method; returns a RankSearchResult."""
    from sklearn_rrank._base import RankSearchResult

    if method == "trivial":
        L, R = trivial_upper_bound(X, tau=tau)
        ok = certify_rounding(X, L, R, tau=tau)
        return RankSearchResult(rank=L.shape[1], L=L, R=R, certified=ok)
    if method not in _UPPER_MODULES:
        raise ValueError(f"Unknown upper-bound method {method!r}.")
    search = getattr(
        importlib.import_module(_UPPER_MODULES[method]), f"{method}_rank_upper_bound"
    )
    kwargs = {
        "tau": tau,
        "time_limit": time_limit,
        "random_state": random_state,
        "n_jobs": n_jobs,
        "verbose": verbose,
    }
    accepted = inspect.signature(search).parameters
    return search(X, **{k: v for k, v in kwargs.items() if k in accepted})


def rounding_rank_bounds(
    X,
    *,
    methods=DEFAULT_METHODS,
    tau=0.5,
    time_limit=None,
    n_jobs=None,
    random_state=None,
    verbose=0,
    progress=None,
):
    """Lower and certified upper bounds on the rounding rank of a binary matrix.

    Every requested method runs and contributes a row to ``report``; the best lower
    bound and the best *certified* upper bound are combined. An upper bound always
    exists: the trivial factorization of rank ``min(m, n)`` (plus one for
    ``tau <= 0``) is the fallback.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary data (no missing entries).
    methods : sequence of str, default=("spectral", "vc", "rank_one", "rsvd", \
"projlp", "lpca")
        Lower-bound methods ``"spectral"`` (:func:`spectral_lower_bound`), ``"vc"``
        (:func:`~sklearn_rrank.vc_lower_bound`), ``"rank_one"`` (the exact test of
        Proposition "rrank1_eq_block_nested": either a certified rank-1 factorization
        or the lower bound 2); upper-bound methods ``"rsvd"``, ``"projlp"``,
        ``"lpca"``, ``"permutation"``, ``"nuclear"`` and ``"trivial"``.
    tau : float, default=0.5
        Rounding threshold.
    time_limit : float or None, default=None
        Seconds allowed to each method that supports a limit; a method stopped by it
        reports ``stopped_early`` and contributes only what it certified.
    n_jobs : int or None, default=None
        Parallel jobs for the LP-based methods.
    random_state : int, RandomState instance or None, default=None
        Makes the randomized methods reproducible.
    verbose : int, default=0
        Verbosity passed to the methods.
    progress : callable or None, default=None
        Called as ``progress(method, row)`` after each method (used by the command
        line to print progress).

    Returns
    -------
    bounds : RoundingRankBounds

    Raises
    ------
    ValueError
        If ``X`` is not binary or holds missing entries, or a method name is unknown.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Sections 2-4.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import rounding_rank_bounds
    >>> b = rounding_rank_bounds(np.eye(5), methods=("spectral", "rank_one", "rsvd"))
    >>> b.lower, b.upper, b.upper_method
    (2, 5, 'rsvd')
    """
    tau = check_tau(tau)
    if isinstance(methods, str):
        methods = tuple(m.strip() for m in methods.split(","))
    methods = tuple(methods)
    for m in methods:
        if m not in LOWER_METHODS + UPPER_METHODS:
            raise ValueError(
                f"Unknown method {m!r}; choose from {LOWER_METHODS + UPPER_METHODS}."
            )
    X = check_binary_matrix(X, accept_sparse=False, method="rounding_rank_bounds")
    # one seed per method that does not depend on which other methods run
    base = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    seeds = {
        m: (base + zlib.crc32(m.encode())) % np.iinfo(np.int32).max for m in methods
    }
    report = []
    lower, lower_method = 0, "trivial"
    if not _rank_zero_possible(X, tau):
        lower, lower_method = 1, "trivial"
    best = None  # (rank, method, L, R)
    proven = None  # (rank, method) proven without certified factors

    def _offer_upper(rank, method, L, R):
        nonlocal best
        if best is None or rank < best[0]:
            best = (rank, method, L, R)

    if _rank_zero_possible(X, tau):
        m, n = X.shape
        _offer_upper(0, "trivial", np.zeros((m, 0)), np.zeros((n, 0)))

    for method in methods:
        t0 = time.perf_counter()
        row = {
            "method": method,
            "kind": "lower" if method in ("spectral", "vc") else "upper",
            "bound": None,
            "seconds": 0.0,
            "certified": None,
            "stopped_early": False,
            "message": "",
        }
        if method == "spectral":
            row["bound"] = spectral_lower_bound(X, tau=tau)
        elif method == "vc":
            from sklearn_rrank._vc import vc_lower_bound

            bound, info = vc_lower_bound(
                X, tau=tau, time_limit=time_limit, return_shattered=True
            )
            row["bound"] = int(bound)
            row["stopped_early"] = not info.get("complete", True)
        elif method == "rank_one":
            from sklearn_rrank._nested import is_rounding_rank_one

            if _rank_zero_possible(X, tau):
                row.update(kind="upper", bound=0, certified=True)
                row["message"] = "rounding rank is exactly 0"
            else:
                one, l, r = is_rounding_rank_one(X, tau=tau, return_factors=True)
                if one:
                    L, R = np.reshape(l, (-1, 1)), np.reshape(r, (-1, 1))
                    ok = certify_rounding(X, L, R, tau=tau)
                    row.update(kind="upper", bound=1, certified=ok)
                    if ok:
                        _offer_upper(1, method, L, R)
                        row["message"] = "rounding rank is exactly 1"
                else:
                    row.update(kind="lower", bound=2)
                    row["message"] = "not of rounding rank <= 1"
        else:
            res = _upper_bound_by(
                method,
                X,
                tau=tau,
                time_limit=time_limit,
                random_state=seeds[method],
                n_jobs=n_jobs,
                verbose=verbose,
            )
            row["stopped_early"] = bool(res.stopped_early)
            row["message"] = str(res.info.get("message", ""))
            if res.rank is not None and res.certified and res.L is not None:
                # never trust a solver's own claim: certify again here
                ok = certify_rounding(X, res.L, res.R, tau=tau)
                row.update(bound=int(res.L.shape[1]), certified=ok)
                if ok:
                    _offer_upper(int(res.L.shape[1]), method, res.L, res.R)
            elif res.rank is not None:
                row.update(bound=int(res.rank), certified=False)
                proof = res.info.get("proof")
                if proof:
                    row["proof"] = proof
                    row["message"] = f"proven by the {proof}; no certified factors"
                    if proven is None or res.rank < proven[0]:
                        proven = (int(res.rank), method)
        row["seconds"] = time.perf_counter() - t0
        if row["kind"] == "lower" and row["bound"] is not None:
            if row["bound"] > lower or (
                row["bound"] == lower and lower_method == "trivial"
            ):
                lower, lower_method = int(row["bound"]), method
        report.append(row)
        if progress is not None:
            progress(method, row)

    if best is None:
        L, R = trivial_upper_bound(X, tau=tau)
        if certify_rounding(X, L, R, tau=tau):
            best = (L.shape[1], "trivial", L, R)
            report.append(
                {
                    "method": "trivial",
                    "kind": "upper",
                    "bound": L.shape[1],
                    "seconds": 0.0,
                    "certified": True,
                    "stopped_early": False,
                    "message": "fallback: X itself as a factor",
                }
            )
        else:  # pragma: no cover - the trivial certificate is exact by construction
            raise RuntimeError("the trivial factorization could not be certified")
    upper, upper_method, L, R = best
    if proven is None or proven[0] >= upper:
        proven = (upper, upper_method)
    if lower > upper:  # pragma: no cover - would mean a wrong bound somewhere
        raise RuntimeError(
            f"lower bound {lower} ({lower_method}) exceeds the certified upper bound "
            f"{upper} ({upper_method}); please report this as a bug."
        )
    return RoundingRankBounds(
        lower=lower,
        upper=upper,
        lower_method=lower_method,
        upper_method=upper_method,
        L=L,
        R=R,
        exact=lower == upper,
        tau=tau,
        report=report,
        proven_upper=proven[0],
        proven_upper_method=proven[1],
    )
