"""The nearest nested matrix (the BMNA problem): :class:`NestedApprox`.

The estimator: validation, the certified factors ``l``, ``r`` of the nested matrix
and the transform. The paper's four methods (Neumann, Gemulla, Miettinen, ICDM
2016, Section 4) are the solvers of :mod:`sklearn_rrank._nested._bmna`.
"""

import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_rrank._core._rounding import certify_rounding
from sklearn_rrank._core._validation import (
    binarize,
    check_binary_values,
    reject_bunch,
)
from sklearn_rrank._nested._bmna import _best_upper_sets, _bmna, _staircase_orders
from sklearn_rrank._nested._exact import (
    _is_nested_validated,
    _nested_factors_validated,
)

__all__ = [
    "NestedApprox",
]


def _l_from_thresholds(chosen, r, tau):
    """Row factors ``l`` realising "row = {j : r_j >= v}" with a safe margin.

    ``chosen`` holds the threshold value ``v`` of each row (``nan``: empty row, ``l =
    0``). The threshold used is halfway between ``v`` and the next smaller distinct
    value of ``r`` (0 if none): ``l = tau / theta``.
    """
    l = np.zeros(chosen.shape[0])
    take = ~np.isnan(chosen)
    if take.any():
        levels = np.unique(r)
        k = np.searchsorted(levels, chosen[take])
        below = np.where(k > 0, levels[np.maximum(k - 1, 0)], 0.0)
        below = np.maximum(below, 0.0)
        l[take] = tau / ((chosen[take] + below) / 2.0)
    return l


# ---------------------------------------------------------------------------------
# the estimator
# ---------------------------------------------------------------------------------


class NestedApprox(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Nearest nested matrix (BMNA) as a non-negative rounding rank-1 decomposition.

    Finds a nested binary matrix ``N`` close to ``X`` in Hamming distance (the
    Bidirectional Minimum Nestedness Augmentation problem of Mannila & Terzi) and
    non-negative vectors ``l``, ``r`` with ``round_tau(outer(l, r)) == N``
    (Theorem "nested matrices": nested = non-negative rounding rank one). The problem
    is NP-hard; all methods are heuristics.

    Parameters
    ----------
    method : {"mt+nnrr1", "mt", "nnrr1", "rsvd"}, default="mt+nnrr1"
        - ``"mt"``: MT-style heuristics, *reconstructions* after Mannila & Terzi
          (KDD 2007) whose exact algorithm we could not consult: an order-based
          alternating heuristic (exact best nested matrix for a column order,
          re-sorting by the solution, on rows and columns), a violation-elimination
          greedy (flip the cell that removes most 2 x 2 checkerboards) followed by the
          exact per-order polish, the better of the two, then a local search over
          re-insertions of single columns/rows in the order (our addition). The
          greedy and the local search are skipped on matrices where they would be too
          slow (see Notes).
        - ``"nnrr1"``: the paper's alternating exhaustive update: with ``r`` fixed each
          ``l_i`` is chosen among the candidates ``tau / v`` (``v`` in the values of
          ``r`` at the ones of row ``i``) or 0 (an empty row; the paper lists
          ``tau / max(r)`` for it, which would still round the largest ``r_j`` to
          one), all evaluated by sorting ``r`` once and counting prefixes (O(n log n)
          per row); then ``r`` given ``l`` likewise; stops when the error stops
          decreasing or after ``max_iter`` rounds. ``r`` starts as the column sums
          with ties broken by column index.
        - ``"mt+nnrr1"``: ``"mt"``, then ``l, r`` from the construction of Theorem
          "NestedMatrices" (distinct values of ``r`` in staircase order), then NNRR1.
        - ``"rsvd"``: round the rank-1 truncated SVD of the 0/1 data at 1/2 (for every
          ``tau``); by Perron-Frobenius the singular vectors are non-negative, so the
          result is nested.
    tau : float, default=0.5
        Rounding threshold, ``> 0`` (non-negative factors cannot produce zeros for
        ``tau <= 0``). All positive values give the same nested matrices; ``tau`` only
        scales ``l``.
    binarize : float or None, default=None
        If not None, ``X`` is replaced by ``X > binarize`` before fitting and
        transforming; otherwise ``X`` must be binary.
    max_iter : int, default=100
        Maximum number of rounds of NNRR1 (``"nnrr1"``, ``"mt+nnrr1"``) and of each
        iterative stage of MT (``"mt"``).
    random_state : int, RandomState instance or None, default=None
        Start vector of the ARPACK SVD for ``method="rsvd"``; the other methods are
        deterministic.

    Attributes
    ----------
    components_ : ndarray of shape (1, n_features)
        The non-negative ``r``: for a fitted nested matrix ``N``, ``r_j`` is the number
        of rows of ``N`` that contain column ``j``.
    embedding_ : ndarray of shape (n_samples, 1)
        The non-negative ``l`` of the training rows: ``round_tau(embedding_ @
        components_)`` is the fitted nested matrix (verified with
        :func:`~sklearn_rrank.certify_rounding`).
    reconstruction_err_ : int
        Number of entries where the fitted nested matrix differs from ``X``.
    relative_error_ : float
        ``reconstruction_err_`` divided by the number of ones of ``X`` (the paper's
        relative reconstruction error; 0 or ``inf`` if ``X`` has no ones).
    row_order_ : ndarray of shape (n_samples,)
        Rows by decreasing row sum of the fitted nested matrix (stable).
    column_order_ : ndarray of shape (n_features,)
        Columns by decreasing column sum of the fitted nested matrix (stable);
        ``N[row_order_][:, column_order_]`` is a staircase.
    n_iter_ : int
        Rounds of the last iterative stage (NNRR1 for ``"nnrr1"`` and
        ``"mt+nnrr1"``; order heuristic plus local search for ``"mt"``; 1 for
        ``"rsvd"``).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, if ``X`` has string feature names.

    See Also
    --------
    is_nested : Test for nestedness.
    nested_decomposition : Exact factors of a nested matrix.
    nodf : NODF nestedness metric.

    Notes
    -----
    ``transform`` gives, for each row, the best ``l`` with ``r`` fixed (the NNRR1 row
    update): on training rows it can only lower the error compared with the fitted
    nested matrix, so ``inverse_transform(transform(X))`` may differ from
    ``round_tau(embedding_ @ components_)``. The MT greedy costs O(m n) per flip and
    runs only when ``m * n * (errors of the order heuristic) <= 4e9``; its local
    search costs O(m n (m + n)) per round and runs when that is ``<= 2e9``.

    References
    ----------
    Neumann, Gemulla, Miettinen, "What You Will Gain By Rounding: Theory and Algorithms
    for Rounding Rank", ICDM 2016, Section 4 ("Nested Matrices", "Algorithms") and
    Section 5.4. H. Mannila, E. Terzi, "Nestedness and segmented nestedness", KDD 2007.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import NestedApprox
    >>> X = np.array([[1, 1, 1], [1, 0, 1], [1, 0, 0], [0, 1, 0]])
    >>> est = NestedApprox().fit(X)
    >>> est.reconstruction_err_
    1
    >>> est.components_
    array([[3., 1., 2.]])
    >>> est.inverse_transform(est.transform(X))
    array([[1, 1, 1],
           [1, 0, 1],
           [1, 0, 0],
           [0, 0, 0]], dtype=uint8)
    """

    _parameter_constraints: dict = {
        "method": [StrOptions({"mt+nnrr1", "mt", "nnrr1", "rsvd"})],
        "tau": [Interval(Real, 0, None, closed="neither")],
        "binarize": [None, Interval(Real, None, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        method="mt+nnrr1",
        tau=0.5,
        binarize=None,
        max_iter=100,
        random_state=None,
    ):
        self.method = method
        self.tau = tau
        self.binarize = binarize
        self.max_iter = max_iter
        self.random_state = random_state

    def _validate_binary(self, X, *, reset):
        """validate_data, then binarize or check 0/1; returns a dense bool array."""
        reject_bunch(X)
        X = validate_data(self, X, accept_sparse=("csr", "csc", "coo"), reset=reset)
        if sp.issparse(X):
            X = X.toarray()
        if self.binarize is not None:
            return np.asarray(binarize(X, self.binarize) == 1)
        check_binary_values(X, input_name="X")
        return np.asarray(X != 0)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Find a nested matrix close to ``X`` and its non-negative factors.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Binary data (or real data with ``binarize`` set).
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        B = self._validate_binary(X, reset=True)
        res = _bmna(
            B, self.method, self.max_iter, check_random_state(self.random_state)
        )
        N = res["N"]
        if not _is_nested_validated(N):
            raise RuntimeError("internal error: the result is not nested.")
        l, r = _nested_factors_validated(N, float(self.tau))
        if not certify_rounding(N, l[:, None], r[:, None], tau=self.tau):
            raise RuntimeError("internal error: the nested factors failed to certify.")
        if not res["converged"]:
            warnings.warn(
                f"NestedApprox(method={self.method!r}) stopped at max_iter="
                f"{self.max_iter} while the error was still decreasing; increase "
                "max_iter.",
                ConvergenceWarning,
                stacklevel=2,
            )
        n_err = int(np.count_nonzero(N != B))
        n_ones = int(np.count_nonzero(B))
        self.components_ = r[None, :]
        self.embedding_ = l[:, None]
        self.reconstruction_err_ = n_err
        if n_ones:
            self.relative_error_ = n_err / n_ones
        else:
            self.relative_error_ = 0.0 if n_err == 0 else float("inf")
        self.row_order_, self.column_order_ = _staircase_orders(N)
        self.n_iter_ = int(res["n_iter"])
        return self

    def transform(self, X):
        """Best non-negative ``l`` for each row of ``X`` with ``r`` fixed.

        Each row gets the upper set of ``r`` (or the empty set) closest to it in
        Hamming distance; ``l_i = tau / theta_i`` with ``theta_i`` halfway between the
        smallest ``r`` value in the set and the next smaller value of ``r``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Binary data (or real data with ``binarize`` set).

        Returns
        -------
        L : ndarray of shape (n_samples, 1), dtype float64
            Non-negative row factors.
        """
        check_is_fitted(self)
        B = self._validate_binary(X, reset=False)
        r = self.components_[0]
        chosen, _ = _best_upper_sets(B, r, r > 0)
        return _l_from_thresholds(chosen, r, float(self.tau))[:, None]

    def inverse_transform(self, X):
        """Nested binary matrix ``round_tau(X @ components_)``.

        Parameters
        ----------
        X : array-like of shape (n_samples, 1)
            Row factors, e.g. the output of :meth:`transform`.

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features), dtype uint8
            The rounded (nested) matrix.
        """
        check_is_fitted(self)
        from sklearn.utils import check_array

        L = check_array(X, dtype=np.float64, input_name="X")
        if L.shape[1] != 1:
            raise ValueError(
                f"X must have shape (n_samples, 1) (the row factors l), got {L.shape}."
            )
        return ((L @ self.components_) >= self.tau).astype(np.uint8)

    def score(self, X, y=None):
        """Negative relative error of ``inverse_transform(transform(X))`` against ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Binary data (or real data with ``binarize`` set).
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        score : float
            ``-(differing entries) / (ones of X)``; ``-inf`` if ``X`` has no ones
            and the reconstruction has some.
        """
        check_is_fitted(self)
        B = self._validate_binary(X, reset=False)
        r = self.components_[0]
        _, n_err = _best_upper_sets(B, r, r > 0)
        n_ones = int(np.count_nonzero(B))
        if n_ones == 0:
            return 0.0 if n_err == 0 else float("-inf")
        return -n_err / n_ones

    @property
    def _n_features_out(self):
        """Number of transformed output features (1: the row factor ``l``)."""
        return 1

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
