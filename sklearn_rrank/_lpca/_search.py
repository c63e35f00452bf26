"""The L-PCA rank search: the L-PCA family of the bracket search.

The models and solvers of logistic PCA are in :mod:`sklearn_rrank._lpca._fit` (and the
modules it names). This module supplies what the bracket search of
:mod:`sklearn_rrank._search._bracket` asks of a family: :meth:`_LPCAFamily.fit`,
"fit L-PCA at ``k`` from this start", and :meth:`_LPCAFamily.rescue`, "reweight,
then refine by LPs, a near fit" (:mod:`sklearn_rrank._lpca._refine`). The order of
ranks, the starts, the time slices and the go-on rule are the bracket search's;
every candidate is certified by the incumbent, never here. Users reach it through
``rounding_rank_bounds(X, methods=("lpca",), method_params={"lpca": {...}})``.
"""

import math
import time
from dataclasses import dataclass, replace

import numpy as np
from sklearn.utils import check_random_state

from sklearn_rrank._core._results import LogisticModel
from sklearn_rrank._lpca._fit import (
    LPCAOptions,
    _fit_core,
    _latent_factors,
    _model_kind,
    _resolve_solver,
)
from sklearn_rrank._lpca._margin import _margin_fit
from sklearn_rrank._lpca._model import _Data, _is_global, _package
from sklearn_rrank._lpca._newton import StallRule
from sklearn_rrank._lpca._options import KERNELS, Kernels
from sklearn_rrank._lpca._refine import _boost, _lpca_refine
from sklearn_rrank._lpca._start import (
    _add_columns,
    _svd_init,
    _truncated_start,
)
from sklearn_rrank._lpca._working_set import (
    _WS_ALPHA,
    _use_working_set,
    _ws_max_factors,
    _ws_phases,
)
from sklearn_rrank._search._bracket import Family, Fit, bracket_search, ticker
from sklearn_rrank._search._policy import (
    DEFAULT_POLICY,
    WORKING_SET_POLICY,
    SearchPolicy,
    StartKind,
)
from sklearn_rrank._search._skeleton import Incumbent

__all__ = []

# the search's fits differ from lpca_fit's defaults on purpose:
# - alpha 1e-4 (lpca_fit: 1e-3): a small ridge, so that the logits can grow until
#   the rounding is exact with a margin;
# - 300 sweeps a fit (one slice; the go-on rule continues a fit whose trend is
#   good) and tol 1e-5, the relative objective decrease of a converged fit;
# - a fit stops as soon as its rounding is exact: the search wants a certificate
_SEARCH_OPTIONS = LPCAOptions(alpha=1e-4, max_iter=300, tol=1e-5, stop_when_exact=True)
# a fit ends when its unsafe entries drop by less than 2% in 30 sweeps: it has
# settled, and a further slice is better spent at another rank
_SEARCH_STALL = StallRule(window=30, fraction=0.02)
# beyond Kernels.newton_max_p latent factors the fits run L-BFGS, whose iteration
# costs a fraction of a Newton sweep and does less: this many times the sweeps
_LBFGS_SWEEP_FACTOR = 10


@dataclass(frozen=True)
class _SearchSettings:
    """The method parameters of L-PCA's rank search (see :func:`_lpca_search`).

    ``kernels`` (a :class:`~sklearn_rrank._lpca._options.Kernels`) is private:
    not a method parameter, tests hand it through the search's keywords.
    """

    start: int = 1
    max_rank: int | None = None
    refine: bool = True
    polish: bool = True
    fit_bias: object = "global"
    dtype: str = "auto"
    policy: SearchPolicy | None = None
    working_set: bool = True
    kernels: Kernels = KERNELS


class _LPCAFamily:
    """L-PCA at rank ``k`` from a start, and the rescue of a near fit.

    Parameters
    ----------
    X : ndarray or CSR matrix of shape (n_samples, n_features)
        Validated binary data (NaN = missing).
    incumbent : Incumbent
        Progress events go through it (certification is the bracket search's).
    settings : _SearchSettings
        The search's method parameters, with ``fit_bias`` and ``dtype`` resolved
        (no "auto"); ``policy`` None: :data:`WORKING_SET_POLICY` when the fits
        take the working-set path, else the default rules (:attr:`policy`).
    tau, n_jobs, verbose
        As :func:`_lpca_search`.
    seed : int
        Seed of the fresh SVD starts.
    info : dict
        The search's diagnostics, filled per ``k``.
    """

    def __init__(self, X, incumbent, settings, *, verbose, info, tau, n_jobs, seed):
        self.X, self.incumbent, self.tau, self.seed, self.info = (
            X,
            incumbent,
            tau,
            seed,
            info,
        )
        self.data = _Data(
            X,
            dtype=settings.dtype,
            working_set=settings.working_set,
            kernels=settings.kernels,
        )
        self.kind = _model_kind(settings.fit_bias, tau)
        self.fit_bias = settings.fit_bias
        self.options = replace(_SEARCH_OPTIONS, tau=tau, kernels=settings.kernels)
        self.n_jobs, self.fit_verbose = n_jobs, max(verbose - 1, 0)
        self.verbose = verbose
        #: whether the fits take the working-set path
        self.working_set = self.kind != "column" and _use_working_set(
            self.data, np.asarray(0.0) if self.kind == "global" else None
        )
        self.policy = settings.policy
        if self.policy is None:
            # a working-set fit runs until its own stall rules end it
            self.policy = WORKING_SET_POLICY if self.working_set else DEFAULT_POLICY
        # ranks whose rescue ran the margin phase (see rescue)
        self._margin_ran = set()
        # ranks whose last working-set fit ended in the hinge or the LPs
        self._not_logistic = set()
        # ranks whose last working-set fit returned the margin phase's state: a
        # go-on there goes on in the margin phase
        self._in_margin = set()

    def bracket_family(self, refine):
        """What the bracket search asks of this family (a :class:`Family`)."""
        rescue = self.rescue if refine else None
        return Family(self.fit, rescue=rescue, accepted=self.accepted)

    def _solver(self, p):
        solver = _resolve_solver("auto", p, self.options.kernels)
        return solver, (_LBFGS_SWEEP_FACTOR if solver == "lbfgs" else 1)

    def _start(self, k, start, deadline):
        """``(U, V, mu)`` of ``k`` from ``start`` (a ``Start``), and whether all its
        columns are there (a deadline may stop the adding of columns to a smaller
        model)."""
        p = _latent_factors(k, self.kind)
        how, state = start.kind, start.state
        if how is StartKind.CERTIFICATE and self.kind == "global":
            state = _truncated_start(self.data, *state, p, self.tau)
        elif how not in (StartKind.SAME, StartKind.BELOW):
            state = _svd_init(self.data, p, self.kind, self.seed, self.tau, deadline)
        U, V, mu = state
        if U.shape[1] < p and not deadline.expired():
            # one gradient and one truncated SVD for all the new columns: a column
            # at a time costs a gradient each and outlasts short slices
            U, V, mu = _add_columns(self.data, U, V, mu, p - U.shape[1], deadline)
        return (U, V, mu), U.shape[1] >= p

    def fit(self, k, start, deadline):
        """The bracket search's "fit at ``k``": a :class:`Fit`."""
        t0 = time.monotonic()
        state, complete = self._start(k, start, deadline)
        if not complete:
            # nothing was fitted: no count to report (not "every entry wrong")
            return Fit(None, None, None, state, cut=True)
        if _use_working_set(self.data, state[2]):
            resume = start.kind is StartKind.SAME and k in self._in_margin
            return self._ws_fit(k, state, deadline, t0, logistic=not resume)
        p = _latent_factors(k, self.kind)
        solver, factor = self._solver(p)
        history = []
        options = replace(
            self.options, solver=solver, max_iter=_SEARCH_OPTIONS.max_iter * factor
        )
        U, V, mu, n_iter, finfo = _fit_core(
            self.data,
            *state,
            options,
            n_jobs=self.n_jobs,
            verbose=self.fit_verbose,
            stall=_SEARCH_STALL.scaled(factor),
            deadline=deadline,
            tick=ticker(self.incumbent, k, history, self.policy, deadline.clock),
        )
        n_wrong = finfo["n_errors_logit"]
        L, R = _package(U, V, mu, self.tau)
        self._note(k, n_iter, finfo, time.monotonic() - t0)
        return Fit(
            L,
            R,
            n_wrong,
            (U, V, mu),
            cut=finfo["status"] != "tol",
            history=history,
        )

    def _ws_fit(self, k, state, deadline, t0, logistic=True):
        """The fit at ``k`` of large sparse data on the working set: all of
        :func:`~sklearn_rrank._lpca._working_set._ws_phases` (logistic and
        margin phases, LP rescue) in the slice, so a fit that ends near is
        rescued by the LPs of its working set, not by the dense rescue; without
        the logistic phase when ``logistic`` is False (a go-on from the margin
        phase's state)."""
        history = []
        tick = ticker(self.incumbent, k, history, self.policy, deadline.clock)
        L, R, state, winfo = _ws_phases(
            self.data,
            self.X,
            state,
            tau=self.tau,
            alpha=_WS_ALPHA,
            deadline=deadline,
            n_jobs=self.n_jobs,
            rescue_limit=self.policy.rescue_limit(self.incumbent.data.n_ones),
            run=(self.seed, tick, self.fit_verbose),
            logistic=logistic,
        )
        if winfo["phase"] == "margin":
            self._in_margin.add(k)
        else:
            self._in_margin.discard(k)
        finfo = {
            "solver_used": "working_set",
            # the logistic phase's: "exact" when its model is the certificate's
            "status": winfo["logistic_status"],
            "n_errors_logit": winfo["n_wrong"],
        }
        self._note(k, winfo["n_iter"], finfo, time.monotonic() - t0)
        if winfo["n_wrong"] is None:
            # no scan counted the state before the slice ended: nothing to offer,
            # and the count is unknown, not "every entry wrong"
            return Fit(None, None, None, state, cut=True, history=history)
        # the hinge or the LPs made the factors: no logistic model (accepted)
        if winfo["logistic_status"] == "exact":
            self._not_logistic.discard(k)
        else:
            self._not_logistic.add(k)
        return Fit(L, R, winfo["n_wrong"], state, cut=winfo["cut"], history=history)

    def _note(self, k, n_iter, finfo, seconds):
        info = self.info
        info["sweeps_by_k"][k] = info["sweeps_by_k"].get(k, 0) + n_iter
        info["status_by_k"][k] = finfo["status"]
        info["solver_by_k"][k] = finfo["solver_used"]
        info["failed_by_k"][k] = finfo["n_errors_logit"]
        if self.verbose:
            print(
                f"[lpca search] k={k}: {n_iter} sweeps ({finfo['status']}), "
                f"{finfo['n_errors_logit']} wrong, {seconds:.2f}s"
            )

    def accepted(self, k, fit):
        """Record the logistic model of an accepted fit (``fit.state``)."""
        mu = fit.state[2]
        if k in self._not_logistic:
            self._no_model()
        elif _use_working_set(self.data, mu):
            self._model(mu, _WS_ALPHA)
        else:
            self._model(mu)

    def _model(self, mu, alpha=_SEARCH_OPTIONS.alpha):
        """``info["model"]``: the certificate's logistic model with bias ``mu``."""
        self.info["model"] = LogisticModel(
            fit_bias=self.fit_bias,
            alpha=alpha,
            offset=float(mu) if _is_global(mu) else None,
        )

    def _no_model(self):
        """``info["model"]`` of factors the hinge or the LPs made: no logistic
        model reproduces them."""
        self.info["model"] = None

    def rescue(self, k, fit, deadline, offer):
        """Rescue a near fit: boosting, then the margin phase, then LPs.

        Each step starts from the closest model so far and runs only while the
        fit is not certified and the slice lasts. On an unlimited slice the margin
        phase runs once per rank: it ends by its own stall rule there, and a later
        rescue at ``k`` (after a go-on) would restart it from nearly the same model.
        """
        U, V, mu = fit.state
        if _use_working_set(self.data, mu):
            return False  # the fit ran the working set's margin phase and LPs
        solver, factor = self._solver(U.shape[1])
        tick = ticker(self.incumbent, k, [], self.policy, deadline.clock)
        rinfo = self.info["rescue"].setdefault(
            k, {"boosted": False, "margin": False, "certified": False}
        )
        count = self.incumbent.count_uncertified
        Ub, Vb, mub, _ = _boost(
            self.data,
            U,
            V,
            mu,
            replace(self.options, solver=solver),
            sweep_factor=factor,
            n_jobs=self.n_jobs,
            verbose=self.fit_verbose,
            deadline=deadline,
            tick=tick,
        )
        Lb, Rb = _package(Ub, Vb, mub, self.tau)
        if offer(Lb, Rb):
            self._model(mub)
            rinfo.update(boosted=True, certified=True)
            return True
        L, R = fit.L, fit.R
        if count(Lb, Rb) < count(L, R):
            L, R, fit.state = Lb, Rb, (Ub, Vb, mub)
        if deadline.expired():
            return False
        if deadline.limited or k not in self._margin_ran:
            self._margin_ran.add(k)
            Um, Vm, mum, _, _ = _margin_fit(
                self.data,
                *fit.state,
                tau=self.tau,
                alpha=_SEARCH_OPTIONS.alpha,
                deadline=deadline,
                tick=tick,
                random_state=self.seed,
            )
            Lm, Rm = _package(Um, Vm, mum, self.tau)
            if offer(Lm, Rm):
                self._no_model()
                rinfo.update(margin=True, certified=True)
                return True
            if count(Lm, Rm) < count(L, R):
                L, R = Lm, Rm
        if deadline.expired():
            return False
        Lr, Rr, refined = _lpca_refine(
            self.X, L, R, tau=self.tau, n_jobs=self.n_jobs, deadline=deadline
        )
        rinfo["errors_removed"] = refined["errors_removed"]
        ok = refined["certified"] and offer(Lr, Rr)
        if ok:
            self._no_model()
        rinfo["certified"] = ok
        self.info["rescued_by_refinement"] |= ok
        return ok


def _new_info(fit_bias, dtype):
    """The search's ``info`` before its first fit."""
    info = {
        "failed_by_k": {},
        "sweeps_by_k": {},
        "status_by_k": {},
        "solver_by_k": {},
        "rescue": {},
        "rescued_by_refinement": False,
        "fit_bias": fit_bias,
        # what reproduces the certificate's model (RoundingRankCV's refit)
        "fit_params": {"fit_bias": fit_bias},
    }
    if dtype != "float64":
        info["fit_params"]["dtype"] = dtype
    return info


def _sample_first(X, incumbent, deadline, settings, policy, shape, max_rank, run):
    """The bracket search on a random sample of ``X``: where ``X``'s bracket starts.

    ``shape`` is ``(axis, size)`` (:meth:`~sklearn_rrank._search._policy.
    SearchPolicy.sample_size`): ``size`` whole rows (axis 0) or columns of ``X``,
    drawn uniformly with ``run["seed"]``, get the bracket search up to its first
    certificate on ``policy.sample_share`` of the time left, certified on the
    sample (a certificate of a sample bounds nothing of ``X``: none is offered to
    ``incumbent``; its fits reach the user as steps). A sample's rounding rank is
    at most that of ``X``, and a fit there costs a fraction of one on ``X``.
    Returns the sample's record: ``"axis"``, ``"size"``, ``"rank"`` (certified on
    the sample, or None), ``"tried"``, ``"seconds"``, ``"lo"``, the largest rank
    whose fit ended on the sample without a certificate (else one below the
    first rank the search may try; a fit its slice cut is not counted), where
    ``X``'s bracket starts, and ``"first"``, the first rank ``X``'s bracket tries
    (at most the middle of its bracket): ``policy.sample_growth`` times the
    sample's certified rank, else the rank the sample's gallop was at when its
    time ended.
    """
    axis, size = shape
    t0 = time.monotonic()
    pick = np.random.RandomState(run["seed"]).choice(X.shape[axis], size, False)
    pick = np.sort(pick)
    Xs = X[pick] if axis == 0 else X[:, pick]
    label = f"sample of {size} {'rows' if axis == 0 else 'columns'}"

    def relay(event):  # the sample's fits are steps of this search, never a bound
        message = f"{label}: {event['message']}".rstrip(": ")
        if event["stage"] == "improved":
            message = f"{label}: certified"
        elif event["error"] is not None:
            message += f" ({event['error']} wrong in the sample)"
        if event["stage"] in ("step", "improved"):
            incumbent.event("step", k=event["k"], message=message)

    sample = Incumbent(
        Xs,
        incumbent.tau,
        incumbent.method,
        lower=incumbent.lower,
        cap=incumbent.bound,
        progress=relay,
        clock=incumbent.clock,
    )
    info = _new_info(settings.fit_bias, settings.dtype)
    family = _LPCAFamily(Xs, sample, settings, verbose=0, info=info, **run)
    found = bracket_search(
        sample,
        deadline.child(fraction=policy.sample_share),
        family.bracket_family(settings.refine),
        policy=policy,
        start=settings.start,
        max_rank=max_rank,
        stop_first=True,
    )
    tried, status = found["tried"], info["status_by_k"]
    # a fit its slice cut says nothing of its rank: short slices cut the
    # sample's fits far off at ranks above the rank of the data
    ended = [
        k
        for k in tried
        if k != sample.rank and status.get(k) not in (None, "time_limit")
    ]
    lo = max(ended, default=max(settings.start, incumbent.lower, 1) - 1)
    gap = policy.first_gap if sample.memo.gap is None else sample.memo.gap
    if sample.rank is None:
        first = lo + gap
    else:
        first = math.ceil(policy.sample_growth * sample.rank)
    return {
        "axis": axis,
        "size": int(size),
        "rank": sample.rank,
        "tried": list(tried),
        "seconds": time.monotonic() - t0,
        "lo": int(lo),
        "first": int(first),
    }


def _lpca_search(
    X, incumbent, deadline, *, tau, random_state, n_jobs, verbose, **params
):
    """L-PCA's rank search: the family of ``methods=("lpca",)`` (trusts its input).

    Users run it through :func:`~sklearn_rrank.rounding_rank_bounds` with
    ``methods=("lpca",)``; ``time_limit`` (the whole search's wall clock),
    ``random_state`` (the seed of the randomized SVD starts), ``n_jobs`` (threads of
    L-PCA and of the LP engine; the result does not depend on it) and ``verbose``
    (one line per fit if ``>= 1``, one line per sweep if ``>= 2``) come from there;
    ``X`` is a validated float64 array or CSR matrix (NaN = missing). ``params``
    are the method parameters below (the fields of :class:`_SearchSettings`).

    The ranks are chosen by the bracket search
    (:func:`~sklearn_rrank._search._bracket.bracket_search`: gallop while fits are
    far off, then bisect below the best certificate, each fit on a slice of the
    time left). Under a time limit, on dense-path data of at least four times
    ``policy.sample_entries`` entries, the bracket search runs first on a random
    sample of whole rows (:func:`_sample_first`), and the data's bracket starts
    where the sample put it, each fit on at least ``policy.sample_slice_share``
    of the time left. A fit at ``k`` (damped Newton up to 24 latent factors, L-BFGS
    beyond with ten times the sweeps; ``alpha=1e-4``) starts from the best
    certificate cut to ``k`` columns (:func:`~sklearn_rrank._lpca._start.
    _truncated_start`, global offset only), from the nearest failed fit below with
    latent columns added along the gradient, or from the truncated SVD; it stops
    when its rounding is exact with a margin, when the objective decrease falls
    below 1e-5, when the unsafe entries drop by less than 2% in 30 sweeps, after
    300 sweeps or at its slice. A near fit (at most ``max(30, 0.005 * ones)``
    uncertified entries) is rescued if ``refine``: reweighted L-PCA
    (:func:`~sklearn_rrank._lpca._refine._boost`), the margin phase (a squared
    hinge on a working set, :func:`~sklearn_rrank._lpca._margin._margin_fit`),
    then :func:`~sklearn_rrank._lpca._refine._lpca_refine` (alternating L1-slack
    LPs).

    Method parameters (``method_params={"lpca": {...}}``)
    -----------------------------------------------------
    start : int, default=1
        Smallest ``k`` tried (a portfolio's second pass resumes there).
    max_rank : int or None, default=None
        Largest ``k`` tried; None means the trivial rank. On the working set
        (``working_set``) no ``k`` is tried whose fit would hold more than 1.5 GiB
        (or half the memory available) of solver state: about 350 bytes per
        parameter, ``(m + n) k`` parameters (PubMed, 19717 x 19717: ``k <= 116``).
    refine : bool, default=True
        Whether to rescue near fits (reweighting and LP refinement).
    polish : bool, default=True
        Whether to bisect below the first certified ``k`` (False: stop there).
    fit_bias : bool or "global", default="global"
        The model of :func:`~sklearn_rrank._lpca._fit.lpca_fit`. The default, one
        scalar offset that uses no column, expresses exactly the roundings at
        ``tau`` of rank-``k`` matrices; ``False`` (no bias) expresses sign patterns
        of rank-``k`` logits and ``True`` (``k - 1`` factors plus a bias column)
        fewer still. With ``tau = 0`` "global" falls back to False.
    dtype : {"auto", "float64", "float32"}, default="auto"
        Precision of the sweeps (as in :func:`~sklearn_rrank._lpca._fit.lpca_fit`);
        the factors, and every certificate, stay float64. ``"auto"``: float32 on
        data of at least ``1e6`` entries.
    working_set : bool, default=True
        Fit large sparse data (at least 5e7 entries, at most 0.3% ones) by the
        working-set fit of :mod:`sklearn_rrank._lpca._working_set`: each fit
        runs its logistic and margin phases and the LPs of its working set in
        its slice (no dense rescue), and the search's slices follow
        ``WORKING_SET_POLICY``. Other data keep the dense sweeps; False: dense
        sweeps whatever the data (``benchmarks/README.md`` has the
        measurements of both).
    policy : SearchPolicy or None, default=None
        The rules of the rank search (:mod:`sklearn_rrank._search._policy`);
        None: the default rules, or ``WORKING_SET_POLICY`` (each fit's slice at
        least a third of the time left) when the fits take the working-set path.
        A candidate rule is compared on the benchmark panel by handing another
        instance.

    Returns
    -------
    info : dict (the ``info`` of the RankSearchResult)
        ``"failed_by_k"`` (wrong entries of the last fit at each ``k``; None
        when its slice ended before a working-set scan counted them),
        ``"seconds_by_k"``, ``"sweeps_by_k"``, ``"status_by_k"``,
        ``"solver_by_k"``, ``"rescue"`` (per rescued ``k``: ``"boosted"``, ``"margin"``,
        ``"errors_removed"``, ``"certified"``), ``"rescued_by_refinement"``,
        ``"tried"`` (the ranks in order), ``"fit_bias"``, ``"fit_params"`` (what
        reproduces the certificate's model), ``"model"``, ``"stopped_early"`` and
        ``"message"``.

    Notes
    -----
    The search does not prove that smaller ``k`` are impossible; the rank is an
    upper bound.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 3, "L-PCA": run L-PCA for
    ``k = 1, 2, ...`` and check whether ``round(L R^T) = B``; Schein, Saul and
    Ungar (AISTATS 2003).
    """
    m, n = X.shape
    settings = _SearchSettings(**params)
    fit_bias, dtype = settings.fit_bias, settings.dtype
    if dtype == "auto":
        big = m * n >= settings.kernels.float32_entries
        dtype = "float32" if big else "float64"
    if fit_bias == "global" and tau == 0:
        fit_bias = False
    settings = replace(settings, fit_bias=fit_bias, dtype=dtype)
    seed = check_random_state(random_state).randint(np.iinfo(np.int32).max)
    info = _new_info(fit_bias, dtype)
    run = {"tau": tau, "n_jobs": n_jobs, "seed": seed}
    family = _LPCAFamily(X, incumbent, settings, verbose=verbose, info=info, **run)
    max_rank, capped = settings.max_rank, False
    if family.working_set:
        # the fits' solver state grows with the rank (_ws_max_factors)
        cap = _ws_max_factors(m, n)
        capped = max_rank is None or cap < max_rank
        max_rank = cap if capped else max_rank
    start, gap = settings.start, None
    memo = incumbent.memo
    shape = family.policy.sample_size(m, n, deadline.limited)
    resumed = memo.cut or memo.failed or memo.gap is not None
    if shape is not None and not family.working_set and not resumed:
        # the working-set fit follows the ones, not m n; a resumed run goes on
        # from its own bracket
        share = max(family.policy.slice_share, family.policy.sample_slice_share)
        family.policy = replace(family.policy, slice_share=share)
        info["sample"] = _sample_first(
            X, incumbent, deadline, settings, family.policy, shape, max_rank, run
        )
        lo, first = info["sample"]["lo"], info["sample"]["first"]
        start, gap = lo + 1, first - lo
    found = bracket_search(
        incumbent,
        deadline,
        family.bracket_family(settings.refine),
        policy=family.policy,
        start=start,
        max_rank=max_rank,
        stop_first=not settings.polish,
        gap=gap,
    )
    info.update(found)
    if incumbent.rank is not None:
        info["message"] = (
            f"certified rank {incumbent.rank}; the rank search tried ranks "
            f"{', '.join(map(str, found['tried']))}"
        )
    elif found["reason"] == "max_rank" and capped:
        info["message"] = (
            f"no certificate up to rank {max_rank}, the largest whose working-set "
            "fit's solver state fits in memory"
        )
    elif found["reason"] == "max_rank":
        info["message"] = f"no certificate up to max_rank={settings.max_rank}"
    elif found["reason"] == "time limit":
        info["message"] = "no certificate before the time limit"
    else:
        info["message"] = f"no certificate below {incumbent.limit_text()}"
    if found["reason"] == "unproven":
        k = found["unproven"]
        info["message"] += (
            f"; the fit at {k} stopped at its time with "
            f"{incumbent.errors_by_k.get(k)} entries wrong, not proven"
        )
    if "sample" in info:
        sample = info["sample"]
        side = "rows" if sample["axis"] == 0 else "columns"
        found = "nothing" if sample["rank"] is None else f"rank {sample['rank']}"
        info["message"] += (
            f"; first a sample of {sample['size']} {side} (certified {found} "
            f"there in {sample['seconds']:.0f} s) put the first fit at "
            f"{sample['first']}"
        )
    return info
