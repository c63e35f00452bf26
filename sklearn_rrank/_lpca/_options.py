"""The options record of one L-PCA fit, shared by the dense and working-set fits."""

from dataclasses import dataclass

__all__ = ["DEFAULT_ALPHA", "FIT_MAX_ITER", "FIT_TOL", "LPCAOptions"]

#: default L2 penalty on every parameter (latent factors and bias)
DEFAULT_ALPHA = 1e-3
# default sweeps and tolerance of a fit
FIT_MAX_ITER, FIT_TOL = 1000, 1e-6


@dataclass(frozen=True)
class LPCAOptions:
    """The model and solver settings of one L-PCA fit (:func:`lpca_fit`'s).

    Built once by the door from validated parameters and handed down whole, so
    that the private fit takes one record, not the door's parameter list again.

    Attributes
    ----------
    tau : float, default=0.5
    fit_bias : bool or "global", default=True
    solver : {"auto", "newton", "lbfgs", "mm"}, default="auto"
    alpha : float, default=DEFAULT_ALPHA
    max_iter : int, default=FIT_MAX_ITER
    tol : float, default=FIT_TOL
    stop_when_exact : bool, default=False
    dtype : {"float64", "float32"}, default="float64"
    margin_phase : bool, default=False
        As the parameters of :func:`lpca_fit`.
    working_set : bool, default=False
        Let large sparse data take the working-set fit
        (:mod:`sklearn_rrank._lpca._working_set`; experimental, off by default).
    """

    tau: float = 0.5
    fit_bias: object = True
    solver: str = "auto"
    alpha: float = DEFAULT_ALPHA
    max_iter: int = FIT_MAX_ITER
    tol: float = FIT_TOL
    stop_when_exact: bool = False
    dtype: str = "float64"
    margin_phase: bool = False
    working_set: bool = False
