"""sklearn_rrank: the rounding rank of binary matrices, scikit-learn compatible.

Implements the algorithms of Neumann, Gemulla and Miettinen, "What You Will Gain By
Rounding: Theory and Algorithms for Rounding Rank" (ICDM 2016).
"""

from sklearn_rrank._bounds import (
    RoundingRankBounds,
    rounding_rank_bounds,
    spectral_lower_bound,
)
from sklearn_rrank._classification import (
    LinearSeparabilityResult,
    feature_dimension_bounds,
    linear_separability,
)
from sklearn_rrank._core._config import config_context, get_config, set_config
from sklearn_rrank._core._rounding import certify_rounding, round_matrix, rounding_error
from sklearn_rrank._factorization import RoundingRankFactorization
from sklearn_rrank._lower._vc import vc_lower_bound
from sklearn_rrank._lpca._distributed import lpca_fit_distributed
from sklearn_rrank._lpca._fit import lpca_fit
from sklearn_rrank._lpca._transform import lpca_transform
from sklearn_rrank._nested._approx import (
    NestedApprox,
)
from sklearn_rrank._nested._exact import (
    is_nested,
    is_rounding_rank_one,
    nested_decomposition,
)
from sklearn_rrank._nested._nestedness import (
    NODFNullModelResult,
    NODFResult,
    nestedness_temperature,
    nodf,
    nodf_null_model,
)
from sklearn_rrank._projlp._projlp import projlp_fit, projlp_transform
from sklearn_rrank._rank_cv import RoundingRankCV
from sklearn_rrank._upper._asso import asso_fit, asso_transform
from sklearn_rrank._upper._permutation import permutation_factors
from sklearn_rrank._upper._permutation_order import sign_change_ordering
from sklearn_rrank._version import __version__

__all__ = [
    "LinearSeparabilityResult",
    "NODFNullModelResult",
    "NODFResult",
    "NestedApprox",
    "RoundingRankBounds",
    "RoundingRankCV",
    "RoundingRankFactorization",
    "__version__",
    "asso_fit",
    "asso_transform",
    "certify_rounding",
    "config_context",
    "feature_dimension_bounds",
    "get_config",
    "is_nested",
    "is_rounding_rank_one",
    "linear_separability",
    "lpca_fit",
    "lpca_fit_distributed",
    "lpca_transform",
    "nested_decomposition",
    "nestedness_temperature",
    "nodf",
    "nodf_null_model",
    "permutation_factors",
    "projlp_fit",
    "projlp_transform",
    "round_matrix",
    "rounding_error",
    "rounding_rank_bounds",
    "set_config",
    "sign_change_ordering",
    "spectral_lower_bound",
    "vc_lower_bound",
]
