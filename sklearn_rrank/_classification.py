"""Linear separability of labels and the feature dimension of multi-label problems.

The paper's Theorem "characterization of rounding rank" reads a rounding-rank
decomposition ``Y = round_tau(L R^T)`` as ``n`` linear classification problems solved
without error: the rows of ``L`` are data points with ``d`` features and the rows of
``R`` the weights of the classifiers (hyperplanes with offset ``tau``). Its Corollary
"rounding rank bounds the number of features" (stated informally) concludes that the
rounding rank bounds from below the number of features that perfect linear
classification needs. This module makes that statement
exact for the usual classifiers *with an intercept* (:func:`feature_dimension_bounds`)
and answers, for given features, which labels are linearly separable
(:func:`linear_separability`), both on the LP engine of
:mod:`sklearn_rrank._projlp._lp`.
"""

import numbers
from dataclasses import dataclass, field

import numpy as np
from sklearn.utils import check_array, check_random_state
from sklearn.utils._param_validation import Interval, validate_params

from sklearn_rrank._core._validation import check_binary_matrix, check_n_jobs, check_tau
from sklearn_rrank._lower._spectral import _sign_rank_lower_bound
from sklearn_rrank._projlp._lp import DEFAULT_EPS, STATUS_NAMES, _solve_public
from sklearn_rrank._search._skeleton import Deadline

# largest number of distinct rows for which the sign-change ordering is tried
_MAX_ORDER_ROWS = 5000
# largest m'^2 n' for the exact test of fd(Y) <= 1
_MAX_CHAIN_WORK = 5 * 10**8

__all__ = [
    "LinearSeparabilityResult",
    "feature_dimension_bounds",
    "linear_separability",
]


@dataclass
class LinearSeparabilityResult:
    """Per-label outcome of :func:`linear_separability`.

    Attributes
    ----------
    separable : ndarray of shape (n_labels,), dtype bool
        True if label ``j`` is strictly linearly separable by the features (with an
        intercept if ``fit_intercept``), certified in float64.
    coef_ : ndarray of shape (n_labels, n_features), dtype float64
        Weights ``w_j``. For a separable label, ``round_tau(X w_j + b_j)`` reproduces
        the observed labels exactly; otherwise ``w_j`` minimises the L1 slack
        (hinge-type) loss of the separation LP.
    intercept_ : ndarray of shape (n_labels,), dtype float64
        Intercepts ``b_j`` (zeros if ``fit_intercept=False``).
    n_errors : ndarray of shape (n_labels,), dtype int64
        Observed samples misclassified by ``round_tau(X w_j + b_j)``.
    status : ndarray of shape (n_labels,), dtype str
        LP status per label (see :mod:`sklearn_rrank._projlp._lp`).
    tau : float
        Threshold of the decision rule ``predict 1 iff X w + b >= tau``.
    info : dict
        Diagnostics.
    """

    separable: np.ndarray
    coef_: np.ndarray
    intercept_: np.ndarray
    n_errors: np.ndarray
    status: np.ndarray
    tau: float = 0.0
    info: dict = field(default_factory=dict)

    def predict(self, X):
        """Labels ``round_tau(X coef_.T + intercept_)`` of samples ``X``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        Y : ndarray of shape (n_samples, n_labels), dtype uint8
        """
        X = check_array(X, dtype=np.float64)
        return (X @ self.coef_.T + self.intercept_ >= self.tau).astype(np.uint8)


def _check_labels(Y, allow_missing):
    Y_arr = np.asarray(Y) if not hasattr(Y, "toarray") else Y
    if getattr(Y_arr, "ndim", 2) == 1:
        Y_arr = np.asarray(Y_arr).reshape(-1, 1)
    return check_binary_matrix(
        Y_arr, allow_missing=allow_missing, accept_sparse=False, input_name="Y"
    )


@validate_params(
    {
        "X": ["array-like"],
        "Y": ["array-like", "sparse matrix"],
        "fit_intercept": ["boolean"],
        "tau": [numbers.Real],
        "eps": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "n_jobs": [numbers.Integral, None],
        "time_limit": [Interval(numbers.Real, 0, None, closed="left"), None],
    },
    prefer_skip_nested_validation=True,
)
def linear_separability(
    X, Y, *, fit_intercept=True, tau=0.0, eps=None, n_jobs=None, time_limit=None
):
    """Which labels are linearly separable by the given features, with their weights.

    Label ``j`` (column ``j`` of ``Y``) is *separable* if there are ``w_j`` and
    ``b_j`` (``b_j = 0`` without intercept) with ``X_i w_j + b_j > tau`` for every
    positive sample and ``X_i w_j + b_j < tau`` for every negative one; the decision
    rule ``round_tau(X_i w_j + b_j)`` then classifies every sample correctly. With an
    intercept (or ``tau != 0``) this is the same as exact classification by
    ``round_tau``; without intercept and with ``tau = 0`` a positive sample on the
    hyperplane (e.g. at the origin) is not accepted, because it could not be certified
    in floating point. Decided per label with the feasibility LP of the paper's
    Section 3 (one LP per label, ``X`` or ``[X, 1]`` in the role of ``L``) and
    certified in float64; missing labels (``NaN``) are ignored.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Real features (finite).
    Y : array-like of shape (n_samples, n_labels) or (n_samples,)
        Binary labels; ``NaN`` marks a missing label.
    fit_intercept : bool, default=True
        Whether every classifier has an intercept ``b_j``.
    tau : float, default=0.0
        Threshold of the decision rule. Irrelevant for separability when
        ``fit_intercept`` is True (the intercept absorbs it).
    eps : float or None, default=None
        Separation margin of the LP. None: 1.0 when the problem is scale invariant
        (``fit_intercept`` or ``tau == 0``: any margin can be reached by scaling
        ``(w, b)``), else the engine default 1e-6.
    n_jobs : int or None, default=None
        Parallel LP workers; the result does not depend on it.
    time_limit : float or None, default=None
        Wall-clock limit in seconds; unsolved labels are reported non-separable
        with a status other than ``"optimal"``.

    Returns
    -------
    result : LinearSeparabilityResult
        ``separable``, ``coef_``, ``intercept_``, ``n_errors``, ``status`` per label.

    Raises
    ------
    ValueError
        If ``Y`` is not binary or the numbers of samples differ.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Theorem "characterization of rounding rank"
    and Section 3 (the feasibility LP of ProjLP).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import linear_separability
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> Y = np.array([[0, 1], [0, 0], [1, 1], [1, 0]])   # label 1 is XOR-like
    >>> res = linear_separability(X, Y)
    >>> res.separable.tolist()
    [True, False]
    >>> res.predict(X)[:, 0].tolist()
    [0, 0, 1, 1]
    """
    X = check_array(X, dtype=np.float64, input_name="X")
    Y = _check_labels(Y, allow_missing=True)
    tau = check_tau(tau)
    if X.shape[0] != Y.shape[0]:
        raise ValueError(
            f"X has {X.shape[0]} samples but Y has {Y.shape[0]}; they must match."
        )
    fit_intercept = bool(fit_intercept)
    scale_free = fit_intercept or tau == 0.0
    eps = (1.0 if scale_free else DEFAULT_EPS) if eps is None else float(eps)
    F = np.hstack([X, np.ones((X.shape[0], 1))]) if fit_intercept else X
    # with an intercept the threshold is absorbed: solve at threshold 0
    lp_tau = 0.0 if fit_intercept else tau
    W, status, objective, separable = _solve_public(
        F,
        Y,
        np.arange(Y.shape[1]),
        feasibility=True,
        tau=lp_tau,
        eps=eps,
        nonnegative=False,
        n_jobs=n_jobs,
        deadline=Deadline(time_limit),
    )
    if fit_intercept:
        coef, intercept = W[:, :-1], W[:, -1] + tau
    else:
        coef, intercept = W, np.zeros(Y.shape[1])
    decision = X @ coef.T + intercept >= tau
    observed = ~np.isnan(Y)
    n_errors = np.count_nonzero((decision != (Y == 1)) & observed, axis=0)
    return LinearSeparabilityResult(
        separable=separable,
        coef_=coef,
        intercept_=intercept,
        n_errors=n_errors.astype(np.int64),
        status=status,
        tau=tau,
        info={"eps": eps, "lp_objective": objective, "status_names": STATUS_NAMES},
    )


def _one_feature_suffices(Yu):
    """Exact test of ``fd(Y) <= 1`` for distinct rows ``Yu`` (0/1 floats).

    One feature with intercepts places the points on a line and makes every label a
    threshold in one of the two directions, i.e. monotone along the order of the
    points. Hence ``fd <= 1`` iff some row ``r0`` (the first point) makes the rows of
    ``Yu XOR r0`` a chain under inclusion: XOR with ``r0`` turns every monotone column
    into ``0...01...1``, and conversely a chain gives the order.
    """
    B = Yu.astype(bool)
    for r0 in B:
        Z = B ^ r0
        Z = Z[np.argsort(Z.sum(axis=1), kind="stable")]
        if not np.any(Z[:-1] & ~Z[1:]):
            return True
    return False


@validate_params(
    {
        "Y": ["array-like", "sparse matrix"],
        "time_limit": [Interval(numbers.Real, 0, None, closed="neither"), None],
        "random_state": ["random_state"],
        "n_jobs": [numbers.Integral, None],
        "verbose": ["verbose"],
        "tau": [numbers.Real],
        "methods": ["array-like", str],
    },
    prefer_skip_nested_validation=True,
)
def feature_dimension_bounds(
    Y,
    *,
    time_limit=None,
    random_state=None,
    n_jobs=None,
    verbose=0,
    tau=0.5,
    methods=("lpca", "projlp"),
):
    """Bounds on the fewest features that classify every label of ``Y`` perfectly.

    Let ``fd(Y)`` be the least ``p >= 0`` such that there are feature vectors
    ``x_1, ..., x_m`` in ``R^p`` and linear classifiers with intercepts
    ``(w_j, b_j)`` with ``Y_ij = 1`` iff ``<x_i, w_j> + b_j >= 0`` for all ``i, j``
    (every label of the multi-label problem ``Y`` classified without error). This is
    the exact form, for classifiers with an intercept, of the paper's Corollary
    "rounding rank bounds the number of features" (stated informally there).

    **Relations** (``S' = [2Y - 1, 1]`` is the sign matrix of ``Y`` with an all-ones
    column appended; ``srank`` is the sign rank):

    1. ``fd(Y) = srank(S') - 1`` exactly.
    2. ``rrank_tau(Y) - 1 <= fd(Y) <= rrank_tau(Y)`` for every threshold ``tau``.
       Both inequalities are attained: ``fd(I_n) = 2 = rrank_{0.5}(I_n)`` for
       ``n >= 3``, while the 5 x 4 matrix of the labels of the points
       ``-0.5, 0.5, ..., 3.5`` under ``x >= 0, x <= 1, x >= 2, x <= 3`` has
       ``fd = 1`` but rounding rank 2 for every ``tau`` (the test-suite checks both).

    *Proof.* Strictness is free: for finite point sets ``>= 0`` can be replaced by
    ``> 0`` by adding half the smallest negative margin to ``b_j``.

    (2, right) If ``round_tau(L R^T) = Y`` with ``k`` columns, take ``x_i = L_i``,
    ``w_j = R_j``, ``b_j = -tau``: ``k`` features suffice.
    (2, left) Given ``p`` features, ``L = [X, 1]`` and ``R = [W, b + tau]`` give
    ``L_i R_j = <x_i, w_j> + b_j + tau >= tau`` iff ``Y_ij = 1``: rank ``p + 1``.
    (1, ``<=``) Given a strict affine realisation in ``R^p``, put
    ``z_i = (x_i, 1)``, ``v_j = (w_j, b_j)`` and ``v_{n+1} = e_{p+1}``: the matrix
    ``[<z_i, v_j>]`` has rank ``<= p + 1`` and sign pattern ``S'``.
    (1, ``>=``) Let ``sign(Z V^T) = S'`` with ``k`` columns and ``u = v_{n+1}``. Then
    ``<z_i, u> > 0`` for all ``i``, so ``z_i' = z_i / <z_i, u>`` lies on the affine
    hyperplane ``H = {z : <z, u> = 1}`` with the same signs. Write
    ``H = {z_0 + B t : t in R^(k-1)}`` with ``B`` a basis of ``u``'s orthogonal
    complement and ``z_i' = z_0 + B t_i``; then
    ``<z_i', v_j> = <t_i, B^T v_j> + <z_0, v_j>``: ``k - 1`` features with intercepts
    ``b_j = <z_0, v_j>``. Hence ``fd(Y) <= srank(S') - 1``.

    **Computed bounds.** Constant labels need no features (``w = 0``) and identical
    rows can share a feature vector, so the bounds are computed on the distinct rows
    (``m'``) of the non-constant labels (``n'``).

    * Lower: Forster et al.'s theorem ``d sum_{i<=d} sigma_i^2 >= m n`` for
      ``d = srank`` (the lemma behind the paper's Proposition "spectral lower
      bound") applied to ``S'``, minus one by (1); ``fd >= 1`` if some label is not
      constant; and an exact test of ``fd <= 1``: one feature puts the points on a
      line where every label is a threshold, i.e. monotone along the order of the
      points, so ``fd(Y) <= 1`` iff for some row ``r0`` the rows of ``Y XOR r0`` form
      a chain under inclusion (cost ``O(m'^2 n')``).
    * Upper: ``min(n', m' - 1)`` (the labels themselves as features; ``m'`` points in
      general position in ``R^(m'-1)``). The sign-change bound: if the rows can be
      ordered so that every label changes at most ``c`` times along the order, then
      ``fd(Y) <= c`` (put the points at ``x_i = (t_i, t_i^2, ..., t_i^c)`` for
      increasing ``t_i``; label ``j`` is the sign of a polynomial of degree ``<= c``
      with a root between consecutive changes, i.e. of ``<x_i, w_j> + b_j``); the
      order comes from :func:`~sklearn_rrank.sign_change_ordering`. And
      ``rrank_tau(Y)`` by (2), with certified bounds from
      :func:`~sklearn_rrank._projlp._search._projlp_search` and
      :func:`~sklearn_rrank._lpca._search._lpca_search`.
    * A second lower bound: a set of ``s`` rows shattered by the labels
      (:func:`~sklearn_rrank.vc_lower_bound`) needs ``d + 1 >= s``, because affine
      half-spaces in ``R^d`` have VC dimension ``d + 1``; so ``fd(Y) >= s - 1``.

    Parameters
    ----------
    Y : array-like of shape (n_samples, n_labels)
        Binary label matrix (no missing entries).
    time_limit : float or None, default=None
        Wall-clock budget in seconds of the whole call: the VC search gets at most
        a fifth of what is left when it starts, the L-PCA and ProjLP rank searches
        share the rest as in :func:`~sklearn_rrank.rounding_rank_bounds`.
    random_state : int, RandomState instance or None, default=None
        Seed of the upper-bound search.
    n_jobs : int or None, default=None
        Parallel LP workers.
    verbose : int, default=0
        Verbosity of the upper-bound search.
    tau : float, default=0.5
        Threshold of the rounding-rank search used for the upper bound (any ``tau``
        gives a valid bound).
    methods : sequence of str, default=("lpca", "projlp")
        Rank searches of :func:`~sklearn_rrank.rounding_rank_bounds` whose certified
        bounds give the upper bound (any method with a rank search: ``"rsvd"``,
        ``"lpca"``, ``"projlp"``, ``"nuclear"``, ``"permutation"``, ``"asso"``,
        ``"rank_one"``, ``"trivial"``).

    Returns
    -------
    lower : int
        ``lower <= fd(Y)``.
    upper : int
        ``fd(Y) <= upper``.

    Raises
    ------
    ValueError
        If ``Y`` is not binary or holds missing entries.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 2: Theorem "characterization of
    rounding rank", Corollary "rounding rank bounds the number of features",
    Proposition "spectral lower bound"; J. Forster, M. Krause, S. V. Lokam, R.
    Mubarakzjanov, N. Schmitt, H. U. Simon, "Relations between communication
    complexity, linear arrangements, and computational complexity", FSTTCS 2001.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import feature_dimension_bounds
    >>> feature_dimension_bounds(np.eye(5), random_state=0)
    (2, 2)
    """
    from sklearn_rrank._bounds import _check_methods
    from sklearn_rrank._portfolio._registry import METHODS

    deadline = Deadline(time_limit)
    methods = _check_methods(
        methods, tuple(n for n, s in METHODS.items() if s.search is not None)
    )
    Y = _check_labels(Y, allow_missing=False)
    tau = check_tau(tau)
    check_n_jobs(n_jobs)
    if isinstance(verbose, bool) or not isinstance(verbose, numbers.Integral):
        raise ValueError(f"verbose must be an integer, got {verbose!r}.")
    constant = np.all(Y == Y[:1], axis=0)
    Yn = Y[:, ~constant]
    if Yn.shape[1] == 0:
        return 0, 0
    Yu = np.unique(Yn, axis=0)
    m_u, n_u = Yu.shape
    upper = min(n_u, m_u - 1)
    # S' = [2Y - 1, 1] is the sign matrix of [Y, 1]
    d_star, _ = _sign_rank_lower_bound(np.hstack([Yu, np.ones((m_u, 1))]), deadline)
    lower = max(1, d_star - 1)
    if lower == 1 and m_u * m_u * n_u <= _MAX_CHAIN_WORK:
        if _one_feature_suffices(Yu):
            return 1, 1
        lower = 2
    if upper > lower and m_u <= _MAX_ORDER_ROWS:
        from sklearn_rrank._upper._permutation_order import _sign_change_ordering

        _, max_changes, _, _ = _sign_change_ordering(
            Yu, "best", None, check_random_state(random_state), deadline=deadline
        )
        upper = min(upper, int(max_changes))
    if upper > lower and not deadline.expired():
        # affine half-spaces in R^d have VC dimension d + 1, so fd >= VC - 1
        from sklearn_rrank._lower._vc import _vc_bound

        vc = _vc_bound(
            Yu,
            deadline=deadline.child(fraction=0.2),
            complements=False,
        )
        lower = max(lower, vc - 1)
    if upper > lower:
        # certified rounding-rank upper bounds (fd <= rrank), the portfolio of
        # rounding_rank_bounds on the remaining budget; it stops at fd's lower bound
        from sklearn_rrank._portfolio._run import _portfolio

        best = _portfolio(
            Yu,
            methods,
            tau=tau,
            deadline=deadline,
            lower=lower,
            n_jobs=n_jobs,
            random_state=random_state,
            verbose=verbose,
        ).best
        if best is not None:
            upper = min(upper, int(best.rank))
    return int(lower), int(upper)
