"""The method registry: one frozen record per method family.

Every door of the package — :class:`~sklearn_rrank.RoundingRankFactorization`,
:func:`~sklearn_rrank.rounding_rank_bounds`, :class:`~sklearn_rrank.RoundingRankCV`,
:func:`~sklearn_rrank.feature_dimension_bounds` and the ``rrank`` command line — reads
:data:`METHODS`. A record says what a family can do (a lower bound, a rank search, a
minimum-error fit, a transform), whether it accepts missing entries and non-negative
factors, which method parameters it accepts (unknown ones raise), and its place and
budget weight in the portfolio of :func:`~sklearn_rrank.rounding_rank_bounds`.

The callables follow fixed contracts, so no door filters keyword arguments:

* ``lower(X, *, tau, deadline) -> (bound, info)`` on validated data;
* ``search(X, incumbent, deadline, *, tau, random_state, n_jobs, verbose, **params)``
  (the family part of :func:`~sklearn_rrank._search._skeleton.run_rank_search`);
* ``fit(X, k, *, tau, nonnegative, max_iter, tol, deadline, random_state, n_jobs,
  verbose, **params) -> FactorizationResult`` (``max_iter`` and ``tol`` are None
  unless the family has ``uses_max_iter``; ``deadline`` is the call's
  :class:`~sklearn_rrank._search._skeleton.Deadline`, which only the families with
  ``uses_max_iter`` read: the others' fits are one-shot);
* ``transform(X, R, *, tau, nonnegative, n_jobs, **params) -> L``.
"""

import zlib
from dataclasses import dataclass, field
from numbers import Integral, Real
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import (
    Interval,
    StrOptions,
    validate_parameter_constraints,
)

from sklearn_rrank._core._results import LowerBoundResult
from sklearn_rrank._core._rounding import _count_errors_factors
from sklearn_rrank._lpca import _fit as _lpca
from sklearn_rrank._lpca import _search as _lpca_search
from sklearn_rrank._lpca import _transform as _lpca_rows
from sklearn_rrank._projlp import _projlp
from sklearn_rrank._projlp import _search as _projlp_search
from sklearn_rrank._search._policy import SearchPolicy
from sklearn_rrank._search._skeleton import ascend
from sklearn_rrank._upper import _asso, _nuclear, _permutation, _rsvd

__all__ = [
    "METHODS",
    "MethodSpec",
    "check_method_params",
    "check_method_tau",
    "method_seed",
]


@dataclass(frozen=True)
class MethodSpec:
    """What one method family offers to the doors of the package.

    Attributes
    ----------
    name : str
        The method's name at every door.
    summary : str
        One line for ``--help`` and error messages.
    lower : callable or None
        Lower bound on the rounding rank: ``lower(X, *, tau, deadline) ->
        LowerBoundResult``.
    search : callable or None
        Family part of the rank search (certified upper bounds).
    fit, transform : callable or None
        Minimum-error rounding rank-k fit and the left factor of new rows.
    missing : bool
        Accepts missing entries (NaN) in ``fit`` and ``search``.
    nonnegative : bool
        Supports non-negative factors (the non-negative rounding rank).
    fit_params, search_params : mapping of str to list
        Method parameters (``method_params``) that ``fit``/``transform`` and
        ``search`` accept, with their scikit-learn constraints (``Interval``,
        ``StrOptions``, ...): names and values are checked at every door.
    uses_max_iter, uses_random_state, uses_n_jobs : bool
        Whether ``fit`` uses the estimator's ``max_iter``/``tol``/``time_limit``,
        ``random_state``
        and ``n_jobs`` (a value given for an unused one raises).
    one_shot : bool
        ``max_iter=0`` means a one-shot fit without refinement rounds (the paper's
        ProjLP); other methods raise for it.
    cost : int
        Portfolio order: cheap methods run first.
    weight : float or callable
        Share of the remaining wall-clock budget in the portfolio (0: runs with
        the whole remaining budget, for methods that take well under a second),
        or ``weight(X)`` of the validated input when the share depends on it
        (:func:`weight_of`).
    default : bool
        Part of the default ``methods`` of ``rounding_rank_bounds``.
    sparse : bool
        ``lower``/``search`` work on CSR input without densifying (the portfolio
        hands them a sparse copy of sparse data).
    sparse_from_dense : bool
        With ``sparse``: the portfolio also hands the method a sparse copy of dense
        data with few ones (False for a method whose sparse path computes in another
        order, so that dense data keeps its results bit for bit; dense data of at
        least 1e7 entries with few ones is made sparse at the door anyway,
        :func:`~sklearn_rrank._core._validation.sparse_if_few_ones`).
    sparse_fit : bool
        ``fit`` works on CSR input without densifying (the estimator keeps sparse
        input sparse).
    probabilistic : bool
        The fit is a probability model: the estimator offers ``predict_proba``,
        ``score_samples`` and ``deviance_explained_``.
    tau : tuple or None
        Constraints on ``tau`` beyond a finite real number that the fit needs
        (checked by the estimator with :func:`check_method_tau`); its rank search
        reports "not applicable" for other ``tau``.
    """

    name: str
    summary: str
    lower: object = None
    search: object = None
    fit: object = None
    transform: object = None
    missing: bool = False
    nonnegative: bool = False
    fit_params: object = field(default_factory=lambda: MappingProxyType({}))
    search_params: object = field(default_factory=lambda: MappingProxyType({}))
    uses_max_iter: bool = False
    uses_random_state: bool = False
    uses_n_jobs: bool = False
    one_shot: bool = False
    cost: int = 0
    weight: float = 1.0
    default: bool = False
    sparse: bool = False
    sparse_from_dense: bool = True
    sparse_fit: bool = False
    probabilistic: bool = False
    tau: object = None


def weight_of(spec, X):
    """The portfolio weight of ``spec`` on the validated input ``X``."""
    return spec.weight(X) if callable(spec.weight) else spec.weight


def _rsvd_weight(X):
    """R-SVD's weight: 14 when the SVD of all ``min(m, n)`` components fits, else 1.

    A whole SVD is what R-SVD needs, and it gives back what it does not use. An
    SVD cut by memory keeps only the top components, whose truncations rounded
    exactly on none of the large networks: there it gets an ordinary share.
    """
    full = min(X.shape)
    whole = _rsvd._components_that_fit(*X.shape, full, sp.issparse(X))[0] >= full
    return 14 if whole else 1


def method_seed(random_state, method):
    """Seed of ``method`` drawn from ``random_state``, independent of other methods.

    ``rounding_rank_bounds`` and ``RoundingRankCV`` derive every method's seed this
    way, so both report the same bound for the same method and ``random_state``.
    """
    base = int(check_random_state(random_state).randint(np.iinfo(np.int32).max))
    return (base + zlib.crc32(method.encode())) % np.iinfo(np.int32).max


def check_method_params(spec, params, which):
    """Raise ``ValueError`` for method parameters ``spec`` does not accept.

    Parameters
    ----------
    spec : MethodSpec
    params : dict or None
    which : {"fit", "search"}
    """
    if params is not None and not isinstance(params, dict):
        raise TypeError(
            f"the method parameters of method {spec.name!r} must be a dict of "
            f"parameter names and values (e.g. method_params={{{spec.name!r}: "
            f"{{...}}}}), got {params!r}."
        )
    params = dict(params or {})
    constraints = spec.fit_params if which == "fit" else spec.search_params
    valid = frozenset(constraints)
    unknown = sorted(set(params) - valid)
    if unknown:
        door = "fit" if which == "fit" else "rank search"
        raise ValueError(
            f"method {spec.name!r} does not accept the method parameter(s) "
            f"{unknown} in its {door}; valid names: {sorted(valid) or 'none'}."
        )
    # values too: InvalidParameterError (a ValueError and a TypeError) names the
    # parameter and what it accepts
    validate_parameter_constraints(
        dict(constraints), params, caller_name=f"method_params[{spec.name!r}]"
    )
    return params


def check_method_tau(spec, tau, caller_name):
    """Raise ``InvalidParameterError`` if the fit of ``spec`` cannot use ``tau``."""
    if spec.tau is not None:
        validate_parameter_constraints(
            {"tau": list(spec.tau)}, {"tau": tau}, caller_name=caller_name
        )


# -- method parameter constraints (scikit-learn style), declared once per family ------
_POSITIVE_INT = [Interval(Integral, 1, None, closed="left")]
_NONNEG_INT = [Interval(Integral, 0, None, closed="left")]
_NONNEG_REAL = [Interval(Real, 0, None, closed="left")]
_LPCA_FIT = {
    "fit_bias": ["boolean", StrOptions({"global"})],
    "solver": [StrOptions({"auto", "newton", "lbfgs", "mm"})],
    "alpha": _NONNEG_REAL,
    "init": [tuple, list, None],
    "dtype": [StrOptions({"float64", "float32"})],
    "margin_phase": ["boolean"],
}
_LPCA_SEARCH = {
    "start": _POSITIVE_INT,
    "max_rank": [*_POSITIVE_INT, None],
    "refine": ["boolean"],
    "polish": ["boolean"],
    "fit_bias": ["boolean", StrOptions({"global"})],
    "dtype": [StrOptions({"auto", "float64", "float32"})],
    "policy": [SearchPolicy, None],
    "working_set": ["boolean"],
}
_PROJLP_FIT = _projlp.PROJLP_PARAMS
_PROJLP_SEARCH = {
    **{k: _projlp.PROJLP_PARAMS[k] for k in ("projection", "eps")},
    "nested": ["boolean"],
    "max_rank": [*_POSITIVE_INT, None],
    "refine": ["boolean"],
    "refine_iter": _NONNEG_INT,
    "n_retries": _NONNEG_INT,
    "nonnegative": ["boolean"],
    "policy": [SearchPolicy, None],
}
_PERMUTATION_SEARCH = {
    "orientation": [StrOptions({"rows", "columns", "both"})],
    "strategy": [
        StrOptions({"best", "identity", "spectral", "nearest_neighbor", "kruskal_mw"})
    ],
}


# -- lower bounds ---------------------------------------------------------------------
def _spectral_lower(X, *, tau, deadline):
    from sklearn_rrank._lower._spectral import _spectral_bound

    return _spectral_bound(X, tau, deadline)


def _vc_lower(X, *, tau, deadline):
    from sklearn_rrank._lower._vc import _vc_bound

    # sparse X stays sparse: the search reads the supports of its lines
    bound, info = _vc_bound(X, deadline=deadline, return_shattered=True)
    complete = bool(info.get("complete", True))
    # which of the four bounds won: plain VC, or VC with complements less one
    lines = info["orientation"]
    if info["complemented"]:
        source = f"{len(info['shattered'])} {lines} shattered with complements"
    else:
        source = f"{len(info['shattered'])} {lines} shattered"
    message = source if complete else f"{source} so far; the search did not finish"
    return LowerBoundResult(
        int(bound),
        message=message,
        stopped_early=not complete,
        info={"orientation": lines, "complemented": bool(info["complemented"])},
    )


def _rank_one_search(X, incumbent, deadline, *, tau, **_):
    """The exact test of Proposition "rounding rank one" (rank 1 or >= 2)."""
    from sklearn_rrank._nested._exact import _rank_one_factors

    one, l, r = _rank_one_factors(X, tau)
    if one:
        incumbent.offer(np.reshape(l, (-1, 1)), np.reshape(r, (-1, 1)))
        return {"message": "rounding rank is exactly 1", "lower": 1}
    return {"message": "not of rounding rank <= 1", "lower": 2}


def _trivial_search(X, incumbent, deadline, *, tau, **_):
    from sklearn_rrank._core._trivial import trivial_upper_bound

    L, R = trivial_upper_bound(X, tau=tau)
    incumbent.offer(L, R)
    return {"message": "X itself as a factor"}


# -- fits and transforms: explicit adapters to the solver modules ----------------------
# every fit takes the full contract (tau, nonnegative, max_iter, tol, random_state,
# n_jobs, verbose) and the method's own parameters; the estimator has already raised
# for a value the method cannot use


def _given(**kwargs):
    """The keyword arguments that are not None (None means the method's default)."""
    return {key: v for key, v in kwargs.items() if v is not None}


def _rsvd_fit(X, k, *, tau, random_state, **_):
    return _rsvd._rsvd_fit(X, k, tau=tau, random_state=random_state)


def _lpca_default_fit_bias(tau):
    """The estimator's L-PCA model: ``"global"`` (``False`` at ``tau = 0``).

    One scalar offset that uses no column: the fits of ``n_components = k`` express
    exactly the roundings at ``tau`` of rank-``k`` matrices, as the rank search's
    fits do (a bias column would leave ``k - 1`` latent factors: on a planted
    rank-20 matrix of 10,000 x 5,000, 150 s of fitting left 4.6% of the ones wrong
    with it and 0.02% without). With ``tau = 0`` the offset must be 0.
    """
    return "global" if tau != 0 else False


def _lpca_fit(
    X, k, *, tau, max_iter, tol, deadline, random_state, n_jobs, verbose, **params
):
    # the contract's nonnegative is False here: the doors refuse it for L-PCA
    params.pop("nonnegative")
    kw = _given(max_iter=max_iter, tol=tol)
    params.setdefault("fit_bias", _lpca_default_fit_bias(tau))
    init = params.pop("init", None)
    options = _lpca.LPCAOptions(tau=tau, stop_when_exact=True, **kw, **params)
    return _lpca._lpca_fit(
        X,
        k,
        options,
        init=init,
        random_state=random_state,
        n_jobs=n_jobs,
        verbose=verbose,
        deadline=deadline,
    )


def _lpca_transform(X, R, *, tau, n_jobs, fit_bias=None, alpha=None, **_):
    kw = _given(alpha=alpha)
    if fit_bias is None:
        fit_bias = _lpca_default_fit_bias(tau)
    # the bias model of the fit: a bias column iff fit_bias is True
    return _lpca_rows._lpca_transform(
        X, R, tau=tau, fit_bias_column=fit_bias is True, n_jobs=n_jobs, **kw
    )


def _projlp_fit(X, k, *, deadline, random_state, n_jobs, verbose, **options):
    # the contract's tau, nonnegative, max_iter and tol and the method's own
    # parameters are the fit's options (None: the fit's default)
    options = _projlp.ProjLPFitOptions(**_given(**options))
    return _projlp._projlp_fit(
        X,
        k,
        options,
        deadline=deadline,
        random_state=random_state,
        n_jobs=n_jobs,
        verbose=verbose,
    )


def _projlp_transform(X, R, *, tau, nonnegative, n_jobs, eps=None, solver=None, **_):
    kw = _given(eps=eps, solver=solver)
    return _projlp._projlp_transform(
        X, R, tau=tau, nonnegative=nonnegative, n_jobs=n_jobs, **kw
    )


def _asso_fit(X, k, *, tau, n_jobs, verbose, **params):
    # Asso takes no nonnegative, max_iter, tol, deadline or random_state: the
    # rest of the contract stays in params, unused
    return _asso._asso_fit(
        X,
        k,
        tau=tau,
        threshold=params.get("threshold"),
        w_plus=params.get("bonus_covered", 1.0),
        w_minus=params.get("penalty_overcovered", 1.0),
        strict=params.get("strict", False),
        orientation=params.get("orientation", "auto"),
        n_jobs=n_jobs,
        verbose=verbose,
    )


def _asso_transform(X, R, *, tau, bonus_covered=1.0, penalty_overcovered=1.0, **_):
    return _asso._asso_transform(
        X, R, w_plus=bonus_covered, w_minus=penalty_overcovered
    )


def _fit_search(fit):
    """Rank search of a family that only has a fit: k = lower, lower + 1, ..."""

    def search(X, incumbent, deadline, *, tau, random_state, n_jobs, verbose, **params):
        nonnegative = params.pop("nonnegative", False)

        def try_rank(k, warm):
            res = fit(
                X,
                k,
                tau=tau,
                nonnegative=nonnegative,
                max_iter=None,
                tol=None,
                deadline=deadline,
                random_state=random_state,
                n_jobs=n_jobs,
                verbose=max(verbose - 1, 0),
                **params,
            )
            return res.L, res.R, _count_errors_factors(X, res.L, res.R, tau), None

        reason = ascend(incumbent, deadline, try_rank, stop=min(X.shape))
        return {"message": f"ascent ended: {reason}", "stopped_early": reason == "stop"}

    return search


def _asso_search(X, incumbent, deadline, *, tau, **kwargs):
    if not any(c.is_satisfied_by(tau) for c in _asso.BOOLEAN_TAU):
        return {"message": "Asso needs 0 < tau <= 1 (Boolean factors)"}
    return _fit_search(_asso_fit)(X, incumbent, deadline, tau=tau, **kwargs)


METHODS = MappingProxyType(
    {
        spec.name: spec
        for spec in (
            MethodSpec(
                "trivial",
                "X itself as a factor: rank min(m, n) (+1 for tau <= 0)",
                search=_trivial_search,
                missing=False,
                cost=0,
                weight=0,
                sparse=True,  # sparse data gives CSR factors: no m x n array
                sparse_from_dense=False,
            ),
            MethodSpec(
                "rank_one",
                "exact rank-one test (the paper's Proposition 'rounding rank one')",
                search=_rank_one_search,
                sparse=True,
                cost=0,
                weight=0,
                default=True,
            ),
            MethodSpec(
                "spectral",
                "spectral lower bound (Forster et al.; the paper's Proposition "
                "'spectral lower bound')",
                lower=_spectral_lower,
                sparse=True,
                cost=1,
                weight=0,
                default=True,
            ),
            MethodSpec(
                "vc",
                "VC-dimension lower bound (largest shattered set, also with "
                "complements: VC - 1)",
                lower=_vc_lower,
                sparse=True,
                cost=3,
                weight=1,
                default=True,
            ),
            MethodSpec(
                "rsvd",
                "rounded truncated SVD (R-SVD)",
                search=_rsvd._rsvd_search,
                fit=_rsvd_fit,
                sparse=True,
                sparse_fit=True,
                search_params=MappingProxyType(
                    {"max_rank": [*_POSITIVE_INT, None], "policy": [SearchPolicy, None]}
                ),
                uses_random_state=True,
                cost=2,
                weight=_rsvd_weight,
                default=True,
            ),
            MethodSpec(
                "lpca",
                "logistic PCA, rounded (L-PCA; Schein et al. 2003)",
                search=_lpca_search._lpca_search,
                fit=_lpca_fit,
                transform=_lpca_transform,
                probabilistic=True,
                missing=True,
                sparse=True,
                sparse_from_dense=False,
                sparse_fit=True,
                fit_params=MappingProxyType(_LPCA_FIT),
                search_params=MappingProxyType(_LPCA_SEARCH),
                uses_max_iter=True,
                uses_random_state=True,
                uses_n_jobs=True,
                cost=4,
                weight=3,
                default=True,
            ),
            MethodSpec(
                "projlp",
                "random projection (Achlioptas), then linear programs (ProjLP)",
                search=_projlp_search._projlp_search,
                fit=_projlp_fit,
                transform=_projlp_transform,
                missing=True,
                nonnegative=True,
                fit_params=MappingProxyType(_PROJLP_FIT),
                search_params=MappingProxyType(_PROJLP_SEARCH),
                uses_max_iter=True,
                uses_random_state=True,
                uses_n_jobs=True,
                one_shot=True,
                cost=5,
                weight=3,
                default=True,
                sparse=True,  # densifies only the merged rows of sparse data
                sparse_from_dense=False,
            ),
            MethodSpec(
                "nuclear",
                "nuclear-norm minimisation (ADMM) + truncation (Nuclear)",
                search=_nuclear._nuclear_search,
                missing=True,
                search_params=MappingProxyType(_nuclear.NUCLEAR_PARAMS),
                cost=6,
                weight=1,
            ),
            MethodSpec(
                "permutation",
                "sign-change ordering + polynomial factors (Permutation)",
                search=_permutation._permutation_search,
                search_params=MappingProxyType(_PERMUTATION_SEARCH),
                cost=7,
                weight=1,
            ),
            MethodSpec(
                "asso",
                "Boolean matrix factorization (Asso; Miettinen et al. 2008)",
                search=_asso_search,
                fit=_asso_fit,
                transform=_asso_transform,
                fit_params=MappingProxyType(_asso.ASSO_PARAMS),
                search_params=MappingProxyType(_asso.ASSO_PARAMS),
                tau=tuple(_asso.BOOLEAN_TAU),
                uses_n_jobs=True,
                cost=8,
                weight=1,
            ),
        )
    }
)

#: methods with a minimum-error fit (the estimator's ``method``)
FIT_METHODS = tuple(name for name, s in METHODS.items() if s.fit is not None)
#: methods of ``rounding_rank_bounds`` (a lower bound or a rank search)
BOUND_METHODS = tuple(
    name for name, s in METHODS.items() if s.lower is not None or s.search is not None
)
#: the default ``methods`` of ``rounding_rank_bounds``, in portfolio order
DEFAULT_METHODS = tuple(
    sorted((n for n, s in METHODS.items() if s.default), key=lambda n: METHODS[n].cost)
)
