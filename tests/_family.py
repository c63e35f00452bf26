"""The family test surface: one method's rank search through the skeleton.

Tests of a family's internals (its ``info`` diagnostics, phases, seeds) run its
registry search the way :func:`~sklearn_rrank.rounding_rank_bounds` does for one
method, with the data validated at this door, and get the family's
:class:`~sklearn_rrank._base.RankSearchResult` (``rank``, ``L``, ``R``,
``certified``, ``stopped_early``, ``info``). Users call
``rounding_rank_bounds(X, methods=(method,), method_params={method: {...}})``.
"""

import scipy.sparse as sp

from sklearn_rrank._methods import METHODS, check_method_params
from sklearn_rrank._ranksearch import run_rank_search
from sklearn_rrank._validation import check_binary_matrix, check_tau


def run_family(
    method,
    X,
    *,
    tau=0.5,
    time_limit=None,
    random_state=None,
    n_jobs=None,
    verbose=0,
    **params,
):
    """Run ``method``'s rank search on ``X``; ``params`` are its method_params."""
    spec = METHODS[method]
    X = check_binary_matrix(
        X, allow_missing=spec.missing, accept_sparse=True, method=method
    )
    if sp.issparse(X) and not spec.sparse:
        X = X.toarray()  # as the portfolio hands it to a dense method
    return run_rank_search(
        spec.search,
        X,
        method=method,
        tau=check_tau(tau),
        deadline=time_limit,
        random_state=random_state,
        n_jobs=n_jobs,
        verbose=verbose,
        params=check_method_params(spec, params, "search"),
    )
