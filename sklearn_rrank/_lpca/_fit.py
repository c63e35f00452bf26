"""Logistic PCA (L-PCA) for rounding-rank factorizations.

Model (Schein, Saul and Ungar, AISTATS 2003; the paper's Section 3, "Logistic
Principal Component Analysis"): every observed entry ``X_ij`` is a Bernoulli variable
with ``P(X_ij = 1) = sigmoid(theta_ij)``, where the natural parameters (logits) are
``theta = U @ V.T + 1 mu.T``: ``U`` (m, p) latent row coordinates, ``V`` (n, p) a
basis and ``mu`` (n,) an optional column bias. The fit minimises the negative
log-likelihood of the observed entries plus ``alpha / 2`` times the squared Frobenius
norm of ``U``, ``V`` and ``mu``. Rounding the logits at 0 approximates ``X``.

Honest rank. Every column of the returned factors is counted: with the bias on,
``n_components = k`` means ``k - 1`` latent factors plus the bias column, and the
threshold ``tau`` is folded into the bias column, so that ``L = [U, 1]`` and
``R = [V, mu + tau]`` give ``L @ R.T = theta + tau``, which is ``>= tau`` exactly
where ``theta >= 0``. The paper does not say whether its L-PCA counted the bias.
Two further models (``fit_bias=False``: no bias; ``fit_bias="global"``: one scalar
offset, which costs no column because ``tau`` absorbs it) are described in
:func:`lpca_fit`; the global one expresses exactly the roundings of rank-k matrices
and is the default of the rank search
(:func:`~sklearn_rrank._lpca._search._lpca_search`, run by
``rounding_rank_bounds(X, methods=("lpca",))``). It and the reweighting rescue of
the search are our additions, not part of the paper or of Schein et al.

Solvers: ``"newton"`` (damped alternating Newton, the default), ``"lbfgs"`` (joint
objective, scipy's L-BFGS-B) and ``"mm"`` (Schein et al.'s bound-based alternating
least squares, kept for fidelity to the paper; slower). Element-wise work uses the
sigmoid through ``tanh`` and clipped exponent arguments; BLAS runs single-threaded
inside a fit and ``n_jobs`` threads work on fixed blocks of rows, so results do not
depend on ``n_jobs``.

This module holds the public doors (:func:`lpca_fit`, :func:`lpca_transform`,
:func:`lpca_row_logits`) and the solver dispatch (:func:`_fit_core`). The parts:

* :mod:`sklearn_rrank._lpca._model`: data, entry kernels, evaluation, bias models,
  likelihoods and deviances;
* :mod:`sklearn_rrank._lpca._newton`: the alternating Newton and bound (MM) sweeps,
  the sweep loop and its stopping rules, the per-row regressions of the transform;
* :mod:`sklearn_rrank._lpca._lbfgs`: the joint objective and the L-BFGS-B solver;
* :mod:`sklearn_rrank._lpca._start`: SVD warm starts and added columns;
* :mod:`sklearn_rrank._lpca._search`: the rank search;
* :mod:`sklearn_rrank._lpca._refine`: the LP refinement of the search's rescue;
* :mod:`sklearn_rrank._lpca._distributed` (client) and
  :mod:`sklearn_rrank._lpca._distributed_block` (workers): the Newton solver on a
  Dask cluster.
"""

import time
from contextlib import nullcontext
from numbers import Integral, Real

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params
from threadpoolctl import threadpool_limits

from sklearn_rrank._core._results import FactorizationResult, LogisticModel
from sklearn_rrank._core._rounding import _count_errors_factors
from sklearn_rrank._core._validation import check_binary_matrix, check_tau
from sklearn_rrank._lpca._lbfgs import _lbfgs_fit
from sklearn_rrank._lpca._margin import _margin_fit
from sklearn_rrank._lpca._model import (
    _Data,
    _evaluate,
    _make_parallel,
    _package,
    lpca_deviances,
)
from sklearn_rrank._lpca._newton import (
    FitLoop,
    StallRule,
    _MMSweep,
    _NewtonSweep,
    _sweep_loop,
)
from sklearn_rrank._lpca._options import (
    DEFAULT_ALPHA,
    FIT_MAX_ITER,
    FIT_TOL,
    KERNELS,
    LPCAOptions,
)
from sklearn_rrank._lpca._start import _init_from_factors, _svd_init
from sklearn_rrank._lpca._working_set import _use_working_set, _ws_fit_core
from sklearn_rrank._search._skeleton import Deadline

__all__ = ["lpca_fit"]


def _fit_core(
    data,
    U,
    V,
    mu,
    options,
    *,
    n_jobs,
    verbose,
    deadline,
    stall=None,
    tick=None,
):
    """Run a solver from ``(U, V, mu)``; return the state and a diagnostics dict.

    ``options`` is an :class:`LPCAOptions` (its ``tau``, ``solver``, ``alpha``,
    ``max_iter``, ``tol`` and ``stop_when_exact`` are read; the model and dtype
    are ``data``'s and the state's). ``deadline`` is a
    :class:`~sklearn_rrank._search._skeleton.Deadline` or None. Large sparse data,
    when ``data`` asks for it
    (:func:`~sklearn_rrank._lpca._working_set._use_working_set`), go to the
    working-set fit of :mod:`sklearn_rrank._lpca._working_set` (any solver but
    ``"mm"``; ``stall`` is then its own rule). The sweeps compute in
    ``data.dtype`` (float32 mode: the factors are cast down at the start and back
    to float64 at the end); ``solver="auto"`` is resolved by
    :func:`_resolve_solver`.
    """
    if options.solver != "mm" and _use_working_set(data, mu):
        # large sparse data: iterations that cost O((ones + |W|) p), not O(m n p)
        return _ws_fit_core(
            data,
            U,
            V,
            mu,
            options,
            n_jobs=n_jobs,
            deadline=deadline,
            tick=tick,
            verbose=verbose,
        )
    tau, alpha = options.tau, float(options.alpha)
    start = time.perf_counter()
    solver = _resolve_solver(options.solver, U.shape[1], options.kernels)
    if data.dtype != np.float64:
        U, V = U.astype(data.dtype), V.astype(data.dtype)
    parallel = _make_parallel(n_jobs, verbose)
    loop = FitLoop.of(
        options, stall=stall, deadline=deadline, verbose=verbose, tick=tick
    )
    # BLAS runs single-threaded: the products here are per block of rows, and
    # multithreaded BLAS on small products is slow on a busy machine; parallelism
    # comes from n_jobs
    with threadpool_limits(limits=1, user_api="blas"), parallel or nullcontext():
        if solver == "lbfgs":
            U, V, mu, history, n_iter, status, start_wrong = _lbfgs_fit(
                data, U, V, mu, loop, alpha=alpha, tau=tau, parallel=parallel
            )
        else:
            kind = _NewtonSweep if solver == "newton" else _MMSweep
            sweep = kind(
                data,
                U,
                V,
                mu,
                alpha=alpha,
                tau=tau,
                parallel=parallel,
                deadline=deadline,
            )
            U, V, mu, history, n_iter, status = _sweep_loop(
                sweep, U, V, mu, loop, data.n_observed
            )
            start_wrong = sweep.start_wrong
        n_wrong = 0
        if status == "time_limit" and n_iter == 0:
            # the deadline cut the first sweep (iteration), which changed no state:
            # the start's count (one pass over the data less after the deadline)
            n_wrong = start_wrong
        elif status != "exact":
            # in the sweeps' dtype, as the start's count: the loop left room for a
            # pass as long as that one (float64 would take longer on float32 data)
            Uc, Vc = U.astype(data.dtype, copy=False), V.astype(data.dtype, copy=False)
            _, n_wrong, _ = _evaluate(parallel, Uc, Vc, mu, data, tau)
        U, V = U.astype(np.float64), V.astype(np.float64)
        if mu is not None:
            mu = np.asarray(mu, dtype=np.float64)
    info = {
        "solver_used": solver,
        "unsafe_history": loop.unsafe_history,
        "loss": [float(v) for v in history],
        "status": status,
        "n_errors_logit": int(n_wrong),
        "seconds": time.perf_counter() - start,
    }
    return U, V, mu, n_iter, info


# ---------------------------------------------------------------------------------
# public functions
# ---------------------------------------------------------------------------------

_SOLVERS = ("auto", "newton", "lbfgs", "mm")


def _resolve_solver(solver, p, kernels=KERNELS):
    """The solver that ``"auto"`` stands for with ``p`` latent factors: Newton up to
    ``kernels.newton_max_p``, L-BFGS beyond."""
    if solver != "auto":
        return solver
    return "newton" if p <= kernels.newton_max_p else "lbfgs"


def _model_kind(fit_bias, tau):
    """``"column"``, ``"none"`` or ``"global"`` from the ``fit_bias`` parameter."""
    if isinstance(fit_bias, str):
        if tau == 0:
            raise ValueError(
                'fit_bias="global" needs tau != 0 (with tau = 0 the offset must be 0; '
                "use fit_bias=False)."
            )
        return "global"
    return "column" if fit_bias else "none"


def _latent_factors(k, kind):
    """The free latent factors of a rank-``k`` model of ``kind``.

    ``k``, less the column that holds the offsets of a ``"column"`` model.
    """
    return k - 1 if kind == "column" else k


def _fit_message(info, max_iter, tol):
    """One line on how a fit stopped; for a non-converged fit, what to change."""
    status = info["status"]
    if status == "exact":
        return "converged: every entry rounded correctly with a margin"
    if status == "tol":
        return f"converged: relative objective decrease below tol={tol:g}"
    if status == "stalled":
        return "converged: the wrong entries stopped dropping (stall of the rounding)"
    loss = info["loss"]
    rel = (loss[-2] - loss[-1]) / max(abs(loss[-1]), 1e-300) if len(loss) > 1 else 0
    if status == "time_limit":
        return (
            f"stopped by the time limit with a relative objective decrease of "
            f"{rel:.1e} per sweep; raise time_limit"
        )
    return (
        f"stopped after max_iter={max_iter} sweeps with a relative objective "
        f"decrease of {rel:.1e} per sweep (tol={tol:g}) and the wrong entries still "
        f"dropping; raise max_iter, or raise tol to accept this fit"
    )


@validate_params(
    {
        "X": ["array-like", "sparse matrix"],
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "tau": [Real],
        "fit_bias": ["boolean", StrOptions({"global"})],
        "solver": [StrOptions(set(_SOLVERS))],
        "dtype": [StrOptions({"float64", "float32"})],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "init": [tuple, list, None],
        "random_state": ["random_state"],
        "n_jobs": [Integral, None],
        "verbose": ["verbose"],
        "stop_when_exact": ["boolean"],
        "time_limit": [Interval(Real, 0, None, closed="left"), None],
        "margin_phase": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def lpca_fit(
    X,
    n_components,
    *,
    tau=0.5,
    fit_bias=True,
    solver="auto",
    alpha=DEFAULT_ALPHA,
    max_iter=FIT_MAX_ITER,
    tol=FIT_TOL,
    init=None,
    random_state=None,
    n_jobs=None,
    verbose=0,
    stop_when_exact=False,
    time_limit=None,
    dtype="float64",
    margin_phase=False,
):
    """Logistic PCA of a binary matrix, returned as a rounding rank-k factorization.

    Fits ``P(X_ij = 1) = sigmoid(theta_ij)`` with logits
    ``theta = U V^T + 1 mu^T`` by minimising the negative log-likelihood of the
    observed entries plus ``alpha / 2 (|U|^2 + |V|^2 + |mu|^2)``, and returns factors
    ``L``, ``R`` with exactly ``n_components`` columns such that
    ``round_tau(L @ R.T)`` is the model's rounding at logit 0 (``theta >= 0``).

    **Honest rank**: every column is counted. With ``fit_bias=True`` (the L-PCA of
    Schein et al. with its bias) the model has
    ``n_components - 1`` latent factors plus the column bias, returned as
    ``L = [U, 1]`` and ``R = [V, mu + tau]`` (so ``L @ R.T = theta + tau``: the
    threshold ``tau`` is folded into the bias column at no extra rank; any ``tau``
    works). With ``fit_bias=False`` there are ``n_components`` latent factors and
    ``R = V``; row ``i`` of ``L`` is ``c_i U_i`` with a per-row scale ``c_i > 0``
    (which does not change the rank) chosen so that logits keep their side of
    ``tau``: for ``tau > 0`` the row's smallest positive logit is scaled to
    ``2 tau``, for ``tau < 0`` its largest negative logit is scaled to ``2 tau``, and
    for ``tau = 0`` nothing is scaled. This is exact except, for ``tau > 0``, logits
    that are exactly 0 (rounded to 1 at logit 0, but ``0 < tau``).
    With ``fit_bias="global"`` (needs ``tau != 0``) the logits are
    ``theta = U V^T + b`` with ``n_components`` latent factors and one scalar offset
    ``b`` whose sign is opposite to ``tau``'s (``|b| >= 1e-3``); then
    ``L = s U``, ``R = s V`` with ``s^2 = tau / -b``, so that
    ``L @ R.T >= tau`` exactly where ``theta >= 0``. The scalar costs no column: these
    models express exactly the roundings at ``tau`` of rank-``k`` matrices, more than
    ``fit_bias=False`` (sign patterns of rank-``k`` logits) and ``fit_bias=True``
    (``k - 1`` factors plus a bias column), so they can certify smaller ranks.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary data; ``NaN`` marks missing entries, which get weight 0 (they do not
        influence the fit).
    n_components : int
        Number ``k >= 1`` of columns of ``L`` and ``R``, the bias column included.
    tau : float, default=0.5
        Rounding threshold of the returned factorization.
    fit_bias : bool or "global", default=True
        True: a column bias ``mu`` (it uses one of the ``n_components`` columns);
        False: no bias; ``"global"``: one scalar offset that uses no column (see
        above).
    solver : {"auto", "newton", "lbfgs", "mm"}, default="auto"
        ``"auto"``: ``"newton"`` up to 24 latent factors, ``"lbfgs"`` beyond (a
        Newton sweep solves one ``p x p`` system per row and column and costs
        ``O(m n p^2)``, an L-BFGS iteration ``O(m n p)``; on Abstracts, 12841 x
        4894, the Newton systems dominate from ``p`` of a few tens, see
        ``benchmarks/lpca_sweep.py``). ``"newton"``: damped alternating Newton.
        Given ``V`` and ``mu`` the rows of
        ``U`` are independent problems; one Newton step is taken for all of them
        with one batched solve of ``p x p`` systems, with a backtracking line search
        per row (a row whose step fails keeps its parameters); then the same for the
        rows of ``[V, mu]``. The objective never increases. ``"lbfgs"``: the joint
        objective over all parameters with scipy's L-BFGS-B (useful for large ``k``,
        where the ``k x k`` systems get expensive). ``"mm"``: Schein, Saul and
        Ungar's alternating updates that maximise the Jaakkola-Jordan bound (monotone
        and faithful to the original L-PCA, but much slower to converge).
    alpha : float, default=1e-3
        L2 penalty on every parameter. It keeps the optimum finite on separable
        data and the Newton systems well conditioned.
    max_iter : int, default=1000
        Maximal number of sweeps (one update of ``U`` and one of ``[V, mu]``;
        L-BFGS iterations for ``"lbfgs"``).
    tol : float, default=1e-6
        Stop when the objective decreases by less than ``tol`` times its value in a
        sweep (for ``"lbfgs"``: scipy's ``ftol``). The fit has also converged
        (status ``"stalled"``) when the rounding stalls: the observed entries that
        are wrong (or within the stop margin) have not dropped by 1% of their
        number, nor by ``1e-5`` of the observed entries, in 50 sweeps (near
        separable data let the logits grow for many sweeps without changing the
        rounding).
    init : tuple (L, R) or None, default=None
        Warm start in the returned format (e.g. the factors of an earlier fit).
        With ``fit_bias=True`` the last column of ``L`` must be a nonzero constant.
        With ``fit_bias="global"`` any factors work: the start is
        ``theta = c (L R^T - tau)`` (``c >= 1`` keeps ``|b| >= 1e-3``), whose signs
        are the rounding of ``(L, R)``, e.g. a certificate of another method.
        With ``fit_bias=False`` the start is ``theta = L R^T``. None: truncated SVD
        of ``2 (2X - 1)`` (missing entries 0), column-centred with the column bias,
        shifted by the starting offset ``b = -4 sign(tau)`` with the global one
        (Schein et al. start from random values instead).
    random_state : int, RandomState instance or None, default=None
        Seed of the randomized SVD of the warm start.
    n_jobs : int or None, default=None
        Number of threads working on blocks of rows; results do not depend on it.
        Inside the fit BLAS runs single-threaded.
    verbose : int, default=0
        Print one line per sweep if ``verbose >= 2``.
    stop_when_exact : bool, default=False
        Stop as soon as every observed entry is rounded correctly with a margin
        (``|theta_ij| > 1e-6 (1 + |L_i| |R_j| + |tau|)`` on the right side), checked
        before every half sweep at no extra cost. The caller certifies the result
        with :func:`~sklearn_rrank.certify_rounding`.
    time_limit : float or None, default=None
        Stop after this many seconds, counted from the start of the call (the
        SVD start included). The deadline is checked between the chunks of rows
        of every pass; a sweep (L-BFGS: iteration) that it interrupts is
        discarded, so the result is the state after the last complete one and
        ``info["status"]`` is ``"time_limit"``.
    dtype : {"float64", "float32"}, default="float64"
        Precision of the sweeps' ``m x n`` work (logits, gradients, losses).
        ``"float32"`` halves the memory traffic and makes the element-wise
        functions several times faster on large data; the returned factors, the
        error count and every certificate are computed in float64. The stop check
        of ``stop_when_exact`` then adds float32's rounding bound to its relative
        margin: ``1e-6 + (p + 4) eps`` with ``eps`` float32's machine epsilon and
        ``p`` the latent factors (1.3e-5 at ``p = 100``).
    margin_phase : bool, default=False
        When the logistic fit leaves entries wrong, go on with the margin phase
        (:mod:`~sklearn_rrank._lpca._margin`, our addition): a squared hinge
        ``max(0, 1 - q theta)^2`` plus the same ridge, minimised by L-BFGS-B on a
        working set of the entries of small margin, re-chosen by one pass over
        all entries per round, until the rounding is exact, it stops improving or
        the time limit. Its factors are returned when they round fewer entries
        wrong; they have no logistic model (``model`` is None, ``info["loss"]``
        and the deviances are those of the logistic fit). With a ``time_limit``
        the logistic fit ends at half of it at the latest. Use it to reach an
        exact rounding at a given rank.

    Returns
    -------
    result : FactorizationResult
        ``L`` of shape (n_samples, n_components) and ``R`` of shape
        (n_features, n_components), float64; ``n_iter`` sweeps; ``converged`` is
        True when the tolerance, the stall of the rounding or exactness stopped the
        fit. ``info`` holds ``"message"`` (how the fit stopped; when it did not
        converge, which parameter to change),
        ``"loss"`` (objective after each sweep, starting with the initial value),
        ``"n_errors"`` (observed entries where ``round_tau(L @ R.T)`` differs from
        ``X``), ``"status"`` (``"tol"``, ``"stalled"``, ``"exact"``, ``"max_iter"``
        or ``"time_limit"``), ``"solver"``, ``"alpha"``, ``"fit_bias"``, ``"n_latent"``
        (latent factors: ``n_components - 1`` with the column bias, else
        ``n_components``), ``"offset"`` (the global offset ``b``, only for
        ``fit_bias="global"``), ``"n_errors_logit"`` (wrong signs of the logits;
        equals ``"n_errors"`` except for exactly-zero logits without a bias),
        ``"unsafe_history"`` (newton only: entries wrong or within the stop margin,
        once per sweep), ``"deviance"`` and ``"null_deviance"`` (see
        :func:`lpca_deviances`; of the fitted logits ``theta``, without the
        penalty), ``"seconds"`` and, with ``margin_phase``, ``"margin_phase"``
        (``"used"``: whether its factors were returned, ``"n_errors_before"``,
        ``"seconds"``).

    Raises
    ------
    ValueError
        If ``X`` is not binary, a parameter is out of range, or ``init`` does not
        match.

    See Also
    --------
    lpca_transform : Logistic regression of new rows on fixed ``R``.
    sklearn_rrank.rounding_rank_bounds : Rank search with certificates
        (``methods=("lpca",)``).

    Notes
    -----
    The paper (Section 3) does not say whether its L-PCA counted the bias in the
    rank; here it always is counted. Each Newton sweep costs
    ``O(m n p^2 + (m + n) p^3)`` with ``p`` the number of latent factors.

    References
    ----------
    Neumann, Gemulla, Miettinen, "What You Will Gain By Rounding: Theory and
    Algorithms for Rounding Rank", ICDM 2016, Section 3, "Logistic Principal
    Component Analysis (L-PCA)". A. I. Schein, L. K. Saul, L. H. Ungar, "A
    Generalized Linear Model for Principal Component Analysis of Binary Data",
    AISTATS 2003. M. Collins, S. Dasgupta, R. E. Schapire, "A Generalization of
    Principal Components Analysis to the Exponential Family", NIPS 2001
    (alternating convex fits).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_rrank import lpca_fit
    >>> X = np.array([[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 0]])
    >>> res = lpca_fit(X, 2, random_state=0)
    >>> res.L.shape, res.R.shape, res.info["n_errors"]
    ((4, 2), (3, 2), 0)
    """
    deadline = Deadline(time_limit)  # the budget counts from the door
    # sparse X stays sparse: the fit reads its ones as a CSR pattern
    X = check_binary_matrix(X, allow_missing=True, accept_sparse=True, method="lpca")
    options = LPCAOptions(
        tau=check_tau(tau),
        fit_bias=fit_bias,
        solver=solver,
        alpha=float(alpha),
        max_iter=int(max_iter),
        tol=float(tol),
        stop_when_exact=bool(stop_when_exact),
        dtype=dtype,
        margin_phase=bool(margin_phase),
    )
    return _lpca_fit(
        X,
        n_components,
        options,
        init=init,
        random_state=random_state,
        n_jobs=n_jobs,
        verbose=verbose,
        deadline=deadline,
    )


def _lpca_fit(
    X,
    n_components,
    options=None,
    *,
    init=None,
    random_state=None,
    n_jobs=None,
    verbose=0,
    deadline=None,
):
    """:func:`lpca_fit` on validated data (float64, NaN = missing); no checks.

    ``options`` is an :class:`LPCAOptions` (None: the defaults); ``deadline`` is
    the call's :class:`~sklearn_rrank._search._skeleton.Deadline` (None: no
    limit); it reaches the leaves.
    """
    opts = LPCAOptions() if options is None else options
    tau, fit_bias, solver, alpha = opts.tau, opts.fit_bias, opts.solver, opts.alpha
    max_iter, tol, dtype = opts.max_iter, opts.tol, opts.dtype
    m, n = X.shape
    k = int(n_components)
    kind = _model_kind(fit_bias, tau)
    p = _latent_factors(k, kind)
    deadline = Deadline() if deadline is None else deadline
    data = _Data(X, dtype=dtype, working_set=opts.working_set, kernels=opts.kernels)
    if init is None:
        rng = check_random_state(random_state)
        U, V, mu = _svd_init(data, p, kind, rng, tau, deadline=deadline)
    else:
        if len(init) != 2:
            raise ValueError("init must be a pair (L, R) or None.")
        U, V, mu = _init_from_factors(init[0], init[1], kind, tau, m, n, k)
    U, V, mu, n_iter, info = _fit_core(
        data,
        U,
        V,
        mu,
        opts,
        n_jobs=n_jobs,
        verbose=verbose,
        # with the margin phase the logistic fit has a share of the time limit
        deadline=(
            deadline.child(fraction=_LOGISTIC_SHARE) if opts.margin_phase else deadline
        ),
        # the stall of the rounding ends the alternating solvers' fits only: L-BFGS
        # moves all parameters at once and its rounding may rest for 50 iterations
        # and then drop again (Abstracts, k=50: stalled at a relative error of 0.54)
        stall=_FIT_STALL
        if _resolve_solver(solver, p, opts.kernels) != "lbfgs"
        else None,
    )
    deviance, null_deviance = lpca_deviances(X, U, V, mu)
    margin = None
    if opts.margin_phase and info["n_errors_logit"] > 0 and not deadline.expired():
        t0 = time.perf_counter()
        Um, Vm, mum, n_wrong, _ = _margin_fit(
            data, U, V, mu, tau=tau, alpha=float(alpha), deadline=deadline
        )
        margin = {
            "used": n_wrong is not None and n_wrong < info["n_errors_logit"],
            "n_errors_before": info["n_errors_logit"],
            "seconds": time.perf_counter() - t0,
        }
        if margin["used"]:
            U, V, mu = Um, Vm, mum
            info["n_errors_logit"] = n_wrong
            info["status"] = "exact" if n_wrong == 0 else info["status"]
    L, R = _package(U, V, mu, tau)
    info.update(
        n_errors=_count_errors_factors(X, L, R, tau),
        deviance=deviance,
        null_deviance=null_deviance,
        solver=solver,
        dtype=str(np.dtype(dtype)),
        alpha=float(alpha),
        fit_bias=fit_bias if kind == "global" else bool(fit_bias),
        n_latent=p,
    )
    if kind == "global":
        info["offset"] = float(mu)
    if margin is not None:
        info["margin_phase"] = margin
    info["message"] = _fit_message(info, max_iter, tol)
    if verbose:
        print(
            f"[lpca] k={k}: {n_iter} sweeps, status {info['status']}, "
            f"{info['n_errors']} wrong entries, {info['seconds']:.2f}s"
        )
    return _fit_result(L, R, n_iter, info)


def _fit_result(L, R, n_iter, info):
    """The typed record of an L-PCA fit (serial or distributed) from its ``info``."""
    return FactorizationResult(
        L=L,
        R=R,
        n_iter=n_iter,
        converged=info["status"] in ("tol", "exact", "stalled"),
        info=info,
        message=info["message"],
        time_limited=info["status"] == "time_limit",
        # factors of the margin phase have hinge logits, no logistic model
        model=None
        if info.get("margin_phase", {}).get("used")
        else LogisticModel(
            fit_bias=info["fit_bias"],
            alpha=info["alpha"],
            offset=info.get("offset"),
            deviance=info["deviance"],
            null_deviance=info["null_deviance"],
        ),
    )


# with margin_phase and a time limit, the logistic fit ends at this fraction of it,
# so that the margin phase always gets time (a logistic fit rarely ends by itself)
_LOGISTIC_SHARE = 0.5
# lpca_fit has stalled when the entries wrong or within the stop margin have not
# dropped by 1% of their number nor by 1e-5 of the entries in 50 sweeps
_FIT_STALL = StallRule(window=50, fraction=0.01, rate=1e-5)
