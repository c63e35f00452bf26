"""The options record of one L-PCA fit, shared by the dense and working-set fits."""

from dataclasses import dataclass, field

__all__ = [
    "DEFAULT_ALPHA",
    "FIT_MAX_ITER",
    "FIT_TOL",
    "KERNELS",
    "Kernels",
    "LPCAOptions",
]

#: default L2 penalty on every parameter (latent factors and bias)
DEFAULT_ALPHA = 1e-3
# default sweeps and tolerance of a fit
FIT_MAX_ITER, FIT_TOL = 1000, 1e-6


@dataclass(frozen=True)
class Kernels:
    """How the kernels of an L-PCA fit cut their work, and the sizes that pick a path.

    The defaults are the package's; tests hand smaller blocks (many chunks on small
    data) through :class:`LPCAOptions` or the search's private ``kernels=``.
    Blocks are fixed by the data shape and these sizes only, never by ``n_jobs``,
    so results do not depend on the number of workers.

    Attributes
    ----------
    chunk_entries : int, default=2**18
        Matrix entries per chunk of rows: a chunk's float64 buffers fit in cache
        and the threads get many chunks.
    gram_rows : int, default=32
        Least rows per chunk of the per-row Gram matrices ``h @ (F_a F_b)`` of the
        Newton and bound updates: fewer make each a memory-bound pass.
    check_group : int, default=32
        Chunks run in threads between two checks of a limited deadline (in the
        calling thread): a fraction of a second of a Newton half step; serially
        the deadline is checked before every chunk.
    task_chunks : int, default=16
        Chunks of rows per task of the joint objective (L-BFGS), each task summing
        its share of ``V``'s gradient in place.
    newton_max_p : int, default=24
        ``solver="auto"`` runs Newton up to this many latent factors, L-BFGS beyond:
        a Newton half step costs ``O(m n p^2 / 2)`` for its ``p x p`` systems, an
        L-BFGS iteration ``O(m n p)``.
    float32_entries : int, default=10**6
        The rank search sweeps in float32 on data of at least this many entries
        (``dtype="auto"``): the element-wise kernels take about a quarter of the
        float64 time; certificates stay float64.
    truncated_sample : int, default=2**21
        Entries (in evenly spaced blocks of whole rows) on which a truncated
        certificate's scale is chosen: a pass over all entries would cost seconds
        on 1e9 entries.
    working_set_entries : int, default=5 * 10**7
        With the ``working_set`` option, complete sparse data of at least this
        many entries take the working-set fit
        (:mod:`sklearn_rrank._lpca._working_set`): below, a dense pass costs a
        fraction of a second and the dense path is kept.
    """

    chunk_entries: int = 1 << 18
    gram_rows: int = 32
    check_group: int = 32
    task_chunks: int = 16
    newton_max_p: int = 24
    float32_entries: int = 10**6
    truncated_sample: int = 1 << 21
    working_set_entries: int = 50_000_000


#: the package's kernels
KERNELS = Kernels()


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
    kernels : Kernels, default=KERNELS
        Block sizes and size thresholds of the kernels (private: not a parameter
        of :func:`lpca_fit`).
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
    kernels: Kernels = field(default=KERNELS, repr=False)
