"""A start for symmetric data (graphs): eigenvectors at both ends of the spectrum.

The SVD start (:func:`~sklearn_rrank._lpca._start._svd_init`) of a symmetric
``X`` takes the singular pairs of the shifted ``c (2X - 1) - b``, whose largest
one is nearly the constant and costs one of the ``k`` columns, and ranks the rest
by magnitude. The adjacency matrix of a graph has informative eigenvalues at both
ends: the largest (communities) and the most negative (bipartite-like structure,
which a positive semidefinite fit cannot express). Chanpuriya et al., "Node
embeddings and exact low-rank representations of complex networks" (NeurIPS 2020)
show that an indefinite ``U V^T`` of small rank reproduces such graphs exactly.

:func:`_graph_start` takes the ``ceil(k/2)`` largest and ``floor(k/2)`` smallest
(algebraic) eigenpairs ``A q = lambda q`` (``scipy.sparse.linalg.eigsh``,
``which="BE"``), ``U = Q sqrt(s |Lambda|)``, ``V = U sign(Lambda)``, so that
``U V^T = s Q Lambda Q^T``, a rank-``k`` approximation of ``s X``, and the global
offset ``b = -s tau``: the logits ``s (X_k - tau)`` round as ``X_k`` does at
``tau``, and ``s = 2 c`` (``c`` the SVD start's scale) gives them the SVD start's
``+-c`` at exact entries.
"""

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from threadpoolctl import threadpool_limits

from sklearn_rrank._lpca._model import _project_offset
from sklearn_rrank._lpca._start import _INIT_SCALE

__all__ = []

# eigsh tolerance: a start needs directions, not digits, and a loose tolerance
# ends the Lanczos iteration sooner
_EIG_TOL = 1e-3


def _is_symmetric(X):
    """Whether the sparse ``X`` is square with ``X == X.T`` (as a pattern of ones)."""
    if not sp.issparse(X) or X.shape[0] != X.shape[1]:
        return False
    A = sp.csr_matrix(X, dtype=bool)
    return (A != A.T).nnz == 0


def _graph_start(X, k, tau, random_state):
    """``(U, V, mu)`` of the graph start for the symmetric sparse binary ``X``.

    Parameters
    ----------
    X : sparse matrix of shape (n, n)
        Symmetric binary data (``X == X.T``; not checked here, see
        :func:`_is_symmetric`).
    k : int
        Latent columns, ``1 <= k < n - 1``.
    tau : float
        Rounding threshold; the global offset ``mu`` is ``-2 c tau`` kept on the
        side ``tau`` needs.
    random_state : int
        Seed of the start vector of the Lanczos iteration (reproducible starts).

    Returns
    -------
    U, V : ndarray of shape (n, k), float64
    mu : ndarray of shape (), float64
        The global offset.

    Raises
    ------
    scipy.sparse.linalg.ArpackNoConvergence
        When the Lanczos iteration does not converge (the caller falls back to
        the SVD start).
    """
    n = X.shape[0]
    A = sp.csr_matrix(X, dtype=np.float64)
    A.data[:] = 1.0
    v0 = np.random.default_rng(random_state).standard_normal(n)
    with threadpool_limits(limits=1, user_api="blas"):
        lam, Q = sla.eigsh(A, k=k, which="BE", tol=_EIG_TOL, v0=v0)
    s = 2.0 * _INIT_SCALE
    U = Q * np.sqrt(s * np.abs(lam))
    V = U * np.where(lam < 0, -1.0, 1.0)
    # a zero eigenvalue gives a zero column pair, whose gradient stays zero
    small = np.abs(lam) <= 1e-8 * max(float(np.abs(lam).max()), 1.0)
    if small.any():
        rng = np.random.default_rng(random_state)
        U[:, small] = 1e-2 * rng.standard_normal((n, int(small.sum())))
        V[:, small] = 1e-2 * rng.standard_normal((n, int(small.sum())))
    return U, V, _project_offset(-s * tau, tau)
