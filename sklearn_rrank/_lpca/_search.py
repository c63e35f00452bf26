"""The L-PCA rank search.

The models and solvers of logistic PCA are in :mod:`sklearn_rrank._lpca._fit` (and the
modules it names); this module holds what searches for a small certified rounding
rank with them:

* :func:`_boost`: reweighted L-PCA (the weights of unsafe entries are multiplied
  until the rounding is exact);
* :func:`_rescue`: boosting, then the LP refinement of
  :mod:`sklearn_rrank._lpca._refine`, for a fit with few failing entries;
* :func:`_polish`: fresh, longer fits below the best certified rank, by bisection;
* :func:`_lpca_search`: the family function of the rank-search skeleton
  (:func:`sklearn_rrank._search._skeleton.run_rank_search`): ascend ``k`` with warm
  starts (jumping ahead while the fits are far from exact, :func:`_next_rank`),
  rescue near misses, then polish below the bound; every candidate is certified
  by the incumbent, never here. Users reach it through
  ``rounding_rank_bounds(X, methods=("lpca",), method_params={"lpca": {...}})``.
"""

import math
import time

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

from sklearn_rrank._core._memory import dense_copy_refused, fits_in_memory
from sklearn_rrank._core._results import LogisticModel
from sklearn_rrank._lpca._fit import (
    _fit_core,
    _latent_factors,
    _model_kind,
    _resolve_solver,
)
from sklearn_rrank._lpca._model import (
    _chunks,
    _Data,
    _evaluate,
    _is_global,
    _make_parallel,
    _package,
    _stop_delta,
)
from sklearn_rrank._lpca._refine import _lpca_refine
from sklearn_rrank._lpca._start import (
    _add_column,
    _add_columns,
    _svd_init,
    _truncated_start,
)
from sklearn_rrank._search._skeleton import Incumbent

__all__ = []


# ---------------------------------------------------------------------------------
# rank search
# ---------------------------------------------------------------------------------

# per-k settings of the rank search (tuned on paleo and apj, see benchmarks/lpca.py)
_SEARCH_ALPHA = 1e-4
_SEARCH_MAX_ITER = 300
_SEARCH_TOL = 1e-5
# stop a k when the unsafe count has not dropped by 2% in 30 sweeps
_SEARCH_STALL = (30, 0.02)
# rescue (boosting, then LPs) when at most this many entries fail the certificate,
# or this fraction of the ones of X
_RESCUE_MAX_FAILED = 30
_RESCUE_FRACTION = 0.005
# boosting: rounds, weight factor per round, sweeps per round
_BOOST_ROUNDS = 4
_BOOST_FACTOR = 10.0
_BOOST_SWEEPS = 30
# within a budget the boost leaves the LPs this share of the rescue's time: on APJ
# at k=4 boosts cut by the deadline left 5-70 failing entries and no time for the
# LPs, which removed the last 5-6 in 0.1-0.6 s where a boost had run its rounds
_BOOST_SHARE = 0.8
# polish phase below the bound: only if the ascent left at most this fraction of the
# ones wrong there; sweeps, stall rule and minimal time budget (the phase gets as
# much time as the ascent took, at least this)
_POLISH_FRACTION = 0.1
_POLISH_MAX_ITER = 4000
_POLISH_STALL = (500, 0.02)
_POLISH_MIN_SECONDS = 10.0
# beyond _lpca._AUTO_NEWTON_MAX_P latent factors the fits run L-BFGS (as
# lpca_fit(solver="auto")): an iteration costs a small fraction of a Newton sweep at
# such p and does less, so it gets this many times the sweeps and the stall window
_LBFGS_SWEEP_FACTOR = 10
# an ascent fit by L-BFGS that still leaves more than this fraction of the ones
# uncertified after its first stall window is given up (the ascent jumps ahead)
_FAR_FRACTION = 0.5
# within a budget a Newton fit of the ascent that still leaves more than this
# fraction of the ones uncertified after _EARLY_SWEEPS sweeps is given up at once:
# on Abstracts (564,462 ones) the far fits at k = 2, 3, 5, 9 and 17 left 92-99.9%
# of the ones wrong after their 30 sweeps, 35-51 s each
_EARLY_SWEEPS = 5
_EARLY_FAR_FRACTION = 0.9
# on data of at least this many entries the search's default sweeps run in float32
# (every certificate stays float64): on Abstracts (6.3e7 entries) one L-BFGS fit at
# k = 100 certified in 424-491 s in float32 and not in 1824 s in float64; on APJ
# (2.4e6 entries) the search from k = 4 certified 4 in 46.6 s in float32 and in
# 80.2 s in float64 (on that AVX2 machine NumPy 2.4's tanh, exp and log took 3.6,
# 4.3 and 5.6 ms on 2.4e6 float32 entries, 19.7, 15.1 and 15.1 ms in float64)
_FLOAT32_ENTRIES = 10**6
# share of the time left that one fit of the ascent may take (limited budgets only);
# after a scout (large data) a near fit cut by it goes on with all the time then
# left, else with _CONTINUED_SHARE of it, so that a fit that still fails
# leaves time for a larger k to certify (APJ, 60 s, float32 sweeps: the fit at k = 4
# went on with all of L-PCA's share and ended with 34 entries wrong and no
# certificate, and ProjLP's 12 was the call's bound; with half, k = 5 certified
# after it and k = 4 in the second pass)
_ASCENT_SHARE = 0.3
_CONTINUED_SHARE = 0.5
# on data of at least this many entries (dense or sparse) a jump of the ascent adds
# its latent columns in one block (one gradient and one truncated SVD,
# :func:`_add_columns`) instead of one column per gradient: on Abstracts (12841 x
# 4894, 6.3e7 entries, load 4) four columns took 14.5 s one at a time and 2.8 s in
# one block; smaller data keep the one-at-a-time columns (and their results)
_BLOCK_ADD_ENTRIES = 10**7
# within a budget, on data of at least _SCOUT_MIN_ENTRIES entries, the ascent is
# first run on a random sample of about _SCOUT_ENTRIES entries (whole rows, or
# whole columns when there are more columns), on _SCOUT_SHARE of the budget; the
# ascent on X starts at the rank that certifies the sample (or the last rank the
# sample's ascent reached): the far fits below it cost a fraction of their time on
# X (planted 200,000 x 5,000: the ascent's fits at k = 2, 3, 5, 9, 10, 12, 16
# took 1466 s of a 1800 s budget and left over 92% of the ones wrong)
_SCOUT_MIN_ENTRIES = 4 * 10**7
_SCOUT_ENTRIES = 10**7
_SCOUT_SHARE = 0.25
# a sample's certified rank is at most X's, and on real data well below it: the
# ascent on X starts at this multiple of it when the sample's fit at the rank below
# it ended far and its fits at that rank run L-BFGS (Abstracts, 2044 of 12841 rows:
# the sample certified 69 after 37 stalled, in the 2100 s and 3600 s runs, where X
# needs about 100; the fit on X at 69 then ran 251-400 s with 34% of the ones
# wrong, and the fresh fit at 104 that followed certified; grown, 104 certified at
# 843 s and the polish reached 99 in 2100 s, against 104 at 1094 s ungrown).
# Within Newton's range (at most _lpca._AUTO_NEWTON_MAX_P latent factors) the start
# stays at the sample's rank: on the planted 200,000 x 5,000 matrix the sample
# certified 17, the grown start 26 ran L-BFGS from a fresh start and ended 187
# entries wrong in 1800 s, where the Newton ascent 17, 18, 20, 24 had certified 24
# (on a machine 2.4 times slower the ascent from 17 certified nothing either: 17
# cut far by its share, then 26, 39 and 62, 182 entries wrong at the deadline).
# Twice, not 1.5 times: in a 900 s run (AVX-512 machine, 2 cores) the sample
# certified 69, and the fresh fit at 104 ran 320 s of L-PCA's share to 812 entries
# wrong, no certificate; the call's bound was ProjLP's 290. A fresh fit well above
# X's rank certifies fast (133: in 157 s on a machine 2.4 times slower), and the
# polish comes down from it with warm starts (133, 120, 114, 103 in 900 s).
_SCOUT_GROWTH = 2.0
# after a scout, a far fit on X that its share cut: the next k is at least
# _JUMP_GROWTH times k (a fresh start). Twice, as the scout's growth: on Abstracts
# (900 s) X's ascent from 69 jumped by half to 104, 156, 244 and 420, each cut far
# (a fresh fit at 104 ran 320 s to 812 entries wrong), and the call's bound was
# ProjLP's 408, where fresh fits at 133 and 138 certified in 85 to 189 s
_JUMP_GROWTH = 2.0
# a fit reached by such a jump that its share cut goes on at the same k (with all
# the time left, as a near fit after a scout) if it leaves at most this fraction of
# the entries wrong that the fit it jumped from left: it is not far for its k, its
# share was short (Abstracts, 900 s, two busy processes beside it: X's ascent from
# 69, cut with 254,209 entries wrong, jumped to 138, whose fresh fit got 30% of
# what was left and was cut after 35 sweeps with 82,112 wrong (15% of the ones,
# a third of 69's); the ascent jumped on to 276 and 552, and the call's bound was
# ProjLP's 408, where fresh fits at 133 and 138 certify. With the start forced to
# 69 in a loaded run, 138 was cut at 63,299 after 39 sweeps, went on, certified at
# 443 s, and the call gave [6, 121])
_JUMP_GO_ON = 0.5
# after a scout the polish tries no rank below this fraction of the bound: one fit
# there takes much of the budget (Abstracts, k = 133: 165 s of a 341 s share on 2
# cores) and a bisection from the scout's floor (21) would try k = 77, where the
# sample's own fit at k = 69 left 44% of its ones wrong
_POLISH_DESCENT = 0.9
# a resumed search's polish (a portfolio's second pass: its deadline is the time
# left of the call) that has less than _POLISH_LAST_FITS times what its last
# certified fit took steps down by _POLISH_LAST_STEP of the descent's step, with
# all the time left: the last fit the budget allows should certify. A failed fit
# costs its share (half the time left) and the fit after it gets the other half,
# while fits closer to the rank take longer than the last one did: with less than
# three such fits' time left there is no room for a failure and a certificate
# (Abstracts, 900 s: 107 certified at 548 s, 97 failed in 165 s, and 102
# certified at the deadline, twice; with the cut fit at 102 first it certified at
# 635 s after 97 s, and 92 followed; from the certificate of 102 cut to 99
# columns, 99 certified in 124 s)
_POLISH_LAST_FITS = 3.0
_POLISH_LAST_STEP = 1 / 3
# after a scout (or resumed on such data) a polish fit gets this share of the time
# left, the next one after a failure all of it: with all of it, a rank too far below
# the bound (Abstracts, 3600 s: k = 94 below a certificate of 104, 1850 s and still
# 5,424 entries wrong) took the whole budget, where a rank between them could still
# certify (a fit at 100 from the certificate of 133 cut to 100 columns certified
# in 516 s on 2 cores)
_POLISH_SHARE = 0.5
# a polish fit that its share cuts with at most this fraction of the ones wrong goes
# on at the same k with all the time left; with more, it raises the floor (Abstracts,
# 900 s: 120 below 133 had 5,550 wrong (1%) after its half, went on and certified
# in the second pass, where raising the floor at 18,370 (3.3%) had given [6, 114]
# instead of 108; 2100 s: 94 below 104 had 59,425, 10.5%, and 99 after it
# certified; the 3600 s run's fit at 94 still had 5,424 after 1850 s)
_POLISH_GO_ON = 0.05
# seconds between two progress events inside a long fit
_TICK_SECONDS = 1.0


def _unsafe_entries(U, V, mu, data, tau):
    """Sorted row-major flat indices of the observed entries wrong or unsafe.

    The logits are formed by the chunks of rows of the sweeps (no m x n array).
    """
    delta = _stop_delta(U, V, mu, tau)
    n = data.shape[1]
    parts = []
    for rows in _chunks(*data.shape):
        theta = U[rows] @ V.T
        if mu is not None:
            theta += mu
        mask = data.q[rows] * theta <= delta
        if data.w is not None:
            mask &= data.w[rows] > 0
        parts.append(np.flatnonzero(mask) + rows.start * n)
    return np.concatenate(parts)


def _ticker(incumbent, k):
    """A sweep callback that sends a progress event about once a second."""
    last = [time.monotonic()]

    def tick(sweep, n_unsafe):
        now = time.monotonic()
        if now - last[0] >= _TICK_SECONDS:
            last[0] = now
            incumbent.event("step", k=k, error=n_unsafe, message=f"sweep {sweep}")

    return tick


def _boost(data, U, V, mu, *, tau, alpha, n_jobs, deadline, verbose, tick=None):
    """Reweighted L-PCA: multiply the weights of unsafe entries, refit, repeat.

    Weights start at 1 and every round multiplies the weight of each entry that is
    wrong or unsafe by ``_BOOST_FACTOR`` (cumulatively), then runs up to
    ``_BOOST_SWEEPS`` Newton sweeps (L-BFGS iterations, ``_LBFGS_SWEEP_FACTOR``
    times as many, beyond ``_AUTO_NEWTON_MAX_P`` latent factors; see
    :func:`_solver_budget`) that stop when the rounding is exact. Useful
    when only a handful of entries resist; returns the final state and whether it
    is exact.
    """
    # the weights differ from 1 at the entries ever unsafe only (_EntryWeights):
    # no m x n array, on sparse data as on dense; the factors in the precision of
    # the sweeps
    flat = np.empty(0, dtype=np.int64)
    values = np.empty(0, dtype=data.dtype)
    for _ in range(_BOOST_ROUNDS):
        if deadline.expired():
            break
        unsafe = _unsafe_entries(U, V, mu, data, tau)
        if not unsafe.size:
            return U, V, mu, True
        merged = np.union1d(flat, unsafe)
        grown = np.ones(merged.size, dtype=data.dtype)
        grown[np.searchsorted(merged, flat)] = values
        grown[np.searchsorted(merged, unsafe)] *= _BOOST_FACTOR
        flat, values = merged, grown
        budget = _solver_budget(U.shape[1], data.shape, _BOOST_SWEEPS, None)
        U, V, mu, _, finfo = _fit_core(
            data.reweighted(flat, values),
            U,
            V,
            mu,
            tau=tau,
            alpha=alpha,
            tol=0.0,
            **budget,
            n_jobs=n_jobs,
            verbose=max(verbose - 1, 0),
            stop_when_exact=True,
            deadline=deadline,
            tick=tick,
        )
        if finfo["status"] == "exact":
            return U, V, mu, True
    return U, V, mu, False


def _offer(incumbent, info, L, R, mu=None, *, refined=False):
    """Offer factors to ``incumbent``; an accepted certificate records its model.

    ``info["model"]`` becomes the :class:`~sklearn_rrank._core._results.LogisticModel`
    of the
    logistic fit with bias ``mu`` the factors come from, or None for factors the
    LPs ``refined`` (they have no logistic model).
    """
    ok = incumbent.offer(L, R)
    if ok:
        info["model"] = (
            None
            if refined
            else LogisticModel(
                fit_bias=info["fit_bias"],
                alpha=_SEARCH_ALPHA,
                offset=float(mu) if _is_global(mu) else None,
            )
        )
    return ok


def _rescue(
    incumbent, info, data, U, V, mu, L, R, *, tau, n_jobs, deadline, verbose, tick
):
    """Reweighting, then LP refinement, of a fit with few failing entries.

    Every candidate goes through ``incumbent.offer``. Returns ``(accepted, info,
    state)``, ``state`` the model (the fit's or the boosted one) that fails fewer
    entries.
    """
    rinfo = {"boosted": False, "errors_removed": 0, "certified": False}
    Ub, Vb, mub, _ = _boost(
        data,
        U,
        V,
        mu,
        tau=tau,
        alpha=_SEARCH_ALPHA,
        n_jobs=n_jobs,
        deadline=deadline.child(fraction=_BOOST_SHARE),
        verbose=verbose,
        tick=tick,
    )
    Lb, Rb = _package(Ub, Vb, mub, tau)
    state = (Ub, Vb, mub)
    if _offer(incumbent, info, Lb, Rb, mub):
        rinfo.update(boosted=True, certified=True)
        return True, rinfo, state
    # refine whichever of the two states fails fewer entries
    if incumbent.count_uncertified(Lb, Rb) < incumbent.count_uncertified(L, R):
        L, R = Lb, Rb
    else:
        state = (U, V, mu)
    if deadline.expired():
        return False, rinfo, state
    X = incumbent.X
    if sp.issparse(X):  # the LP engine reads dense rows and columns
        m, n = X.shape
        if dense_copy_refused(m, n) or not fits_in_memory(m * n * 8 * 2):
            rinfo["message"] = "LP refinement skipped: X would not fit dense"
            return False, rinfo, state
        X = X.toarray()
    L2, R2, refine_info = _lpca_refine(
        X, L, R, tau=tau, n_jobs=n_jobs, deadline=deadline
    )
    rinfo["errors_removed"] = refine_info["errors_removed"]
    if refine_info["certified"] and _offer(incumbent, info, L2, R2, refined=True):
        rinfo["certified"] = True
        return True, rinfo, state
    return False, rinfo, state


def _rescues(incumbent, info, data, state, deadline, *, limit, fit, tick):
    """:func:`_rescue` of ``state`` if it fails at most ``limit`` entries.

    Within a budget the rescue is repeated from the state that fails fewer entries
    (each boost restarts its weights from the boosted model, closer than the fit)
    while that number drops, until it certifies or ``deadline`` expires. Returns
    ``(accepted, info, state)``; ``info`` is that of the last rescue, None if none
    ran.
    """
    ok, rinfo, bar = False, None, limit + 1  # rescue while below the bar
    tau = fit["tau"]
    while not ok:
        L, R = _package(*state, tau)
        n_failed = incumbent.count_uncertified(L, R)
        if n_failed >= bar:
            break
        bar = n_failed
        ok, rinfo, state = _rescue(
            incumbent,
            info,
            data,
            *state,
            L,
            R,
            tau=tau,
            n_jobs=fit["n_jobs"],
            deadline=deadline,
            verbose=fit["verbose"],
            tick=tick,
        )
        if not deadline.limited or deadline.expired():
            break
    return ok, rinfo, state


def _fit_and_rescue(
    incumbent, info, data, state, own, deadline, *, budget, near, limit, fit, tick
):
    """Fit from ``state``, offer the model, rescue a near miss; maybe fit on.

    The fit (``budget``: :func:`_solver_budget`'s solver, sweeps and stall rule,
    plus ``"tol"``; deadline ``own``) stops once at most ``near`` entries fail if
    ``near`` is given. Its model is offered and, if it fails at most ``limit``
    entries (None: never), rescued (:func:`_rescues`, deadline ``deadline``). When
    the fit stopped near and was not certified, and ``own`` has time left, the fit
    goes on without that stop, from the model that fails fewest entries (the
    rescue's, if it came closer), and the rescue is tried once more: on Paleo the
    boost does not certify the polish's near fit at k=8 (200 wrong), 3000 plain
    sweeps do. Returns a dict: ``"state"`` (the last fit's model), ``"best"``
    (the model that fails fewest entries), ``"ok"``, ``"rescued"`` (certified by
    a rescue), ``"failed"`` (the last fit's uncertified entries; its wrong
    entries when ``own`` expired with more than ``limit`` of them, a case in which
    the model is neither offered nor counted), ``"sweeps"``,
    ``"finfo"`` (the last fit's diagnostics) and ``"rescue"`` (the last
    rescue's info, None if none ran).
    """
    out = {"rescue": None, "rescued": False, "sweeps": 0}
    while True:
        U, V, mu, n_iter, finfo = _fit_core(
            data, *state, stop_when_exact=True, deadline=own, tick=tick, **budget, **fit
        )
        state = best = (U, V, mu)
        n_wrong = finfo["n_errors_logit"]
        if own.expired() and n_wrong > (0 if limit is None else limit):
            # cut by the deadline, wrong, and too far off for the rescue: neither
            # the certificate nor the count of uncertified entries (two passes over
            # the data, 14 s on 1e9 entries, both after the deadline) can change
            # what happens next; the wrong entries stand in for the uncertified
            ok, n_failed = False, n_wrong
        else:
            L, R = _package(U, V, mu, fit["tau"])
            ok = _offer(incumbent, info, L, R, mu)
            n_failed = 0 if ok else incumbent.count_uncertified(L, R)
        out["sweeps"] += n_iter
        if not ok and limit is not None and n_failed <= limit:
            ok, out["rescue"], best = _rescues(
                incumbent, info, data, best, deadline, limit=limit, fit=fit, tick=tick
            )
            out["rescued"] = ok
        if ok or near is None or own.expired():
            break
        near = None
        budget = dict(budget, stall=budget["stall"][:4])
        # from the model that fails fewest entries: the rescue's boost may have
        # come much closer than the fit (on Abstracts a polish fit at k = 120
        # stopped near with 50,052 entries wrong and its boost reached 9 unsafe
        # entries; there the deadline then ended the fit, which would otherwise
        # have gone on from the 50,052)
        state = best
    out.update(state=state, best=best, ok=ok, failed=n_failed, finfo=finfo)
    return out


def _lpca_search(
    X,
    incumbent,
    deadline,
    *,
    tau,
    random_state,
    n_jobs,
    verbose,
    start=1,
    max_rank=None,
    refine=True,
    polish=True,
    fit_bias="global",
    dtype="auto",
    retry_unstarted=True,
):
    """L-PCA's rank search: the family of ``methods=("lpca",)`` (trusts its input).

    Users run it through :func:`~sklearn_rrank.rounding_rank_bounds` with
    ``methods=("lpca",)``; ``time_limit`` (the whole search's wall clock),
    ``random_state`` (the seed of the randomized SVD of the first start and of the
    polish phase's fresh starts), ``n_jobs`` (threads of L-PCA and of the LP
    engine; the result does not depend on it) and ``verbose`` (one line per ``k``
    if ``>= 1``, one line per sweep if ``>= 2``) come from there; ``X`` is a
    validated float64 array or CSR matrix (NaN = missing, not constrained).

    For ``k = start, start + 1, ...`` (from ``max(start, incumbent.lower, 1)``,
    while ``incumbent.worth_trying(k)`` and ``k <= max_rank``) fit L-PCA with ``k``
    columns in all (see :func:`~sklearn_rrank._lpca._fit.lpca_fit` for how the columns
    are counted), warm-started from the previous ``k`` with latent columns added
    one at a time along the steepest rank-one descent direction (on data of at
    least 1e7 entries, dense or sparse, all of a jump's columns at once, along the
    top singular pairs of one gradient) (the first ``k``
    continues a model an earlier run left at ``k`` in ``incumbent.memo``, or starts
    from the truncated SVD); see :func:`_ascent_step`. While a fit leaves more than
    10% of the ones uncertified, the next ``k`` jumps ahead by half the distance
    climbed so far (``k - start + 1``; never past the known bound), so that a bound
    near ``b`` takes about ``log b / log 1.5`` far fits instead of ``b`` (our
    addition; the paper ascends one at a time; with a limited budget by the whole
    distance, see :func:`_next_rank`). Each fit (damped Newton with
    ``alpha=1e-4``, smaller than ``lpca_fit``'s default) stops as soon as its
    rounding is exact with a margin, when the objective stalls (relative decrease
    below 1e-5 in a sweep), when the number of wrong entries has not dropped by 2%
    in 30 sweeps, or after 300 sweeps. Beyond 24 latent factors these fits, and
    those of the rescue and the polish below, run L-BFGS instead, as
    ``lpca_fit(solver="auto")`` does, with ten times the sweeps and the stall
    window; such an ascent fit also stops when more than half of the ones are
    still uncertified after its first window (300 iterations). Within a budget
    one ascent fit gets at most 30% of the time left (all of it at the last rank
    below the known bound, and after a scout, below, a near fit cut short). Every
    candidate goes through ``incumbent.offer`` (the one certification,
    :func:`~sklearn_rrank.certify_rounding`'s kernel, margin 1e-9), never here.
    If only a few entries fail (at most ``max(30, 0.005 * number of ones)``) and
    ``refine`` is True, a rescue is tried
    (:func:`_rescue`): reweighted L-PCA (the weights of the failing entries are
    multiplied by 10 per round, up to 4 rounds of 30 sweeps), then
    :func:`~sklearn_rrank._lpca._refine._lpca_refine` (alternating L1-slack LPs).
    Within a budget (only there, so that unlimited results stay as they were):
    on data of at least 4e7 entries a search that begins at its default ``start``
    first runs this ascent on a random sample of whole rows (columns, if there are
    more columns) of about 1e7 entries, on a quarter of the time left, with its
    own certification (:func:`_scout`: a certificate of the sample bounds nothing
    of ``X`` and is never offered); the ascent on ``X`` then starts at the rank
    that certified the sample, twice it if the sample's fit at the rank below
    ended far (not cut by its share: the sample's rank is at most ``X``'s, and on
    real data well below it) and the fits at that rank run L-BFGS (beyond 24
    latent factors), else at the last rank the sample's ascent fitted (below the
    known bound; at the rank its gallop left from a fit cut far off if its last
    fit came near after that gallop), and the polish
    phase bisects above the sample's last far rank (of a fit that ended, not cut
    by its share), never below 90% of the bound (nor below a rank whose fit a
    deadline cut: that fit goes on first; in a second pass with less than three
    times the seconds of the last certified fit left, the next fit gets all of it
    and lies at 96.7% of the bound or above), with all the time left (else
    with the time the ascent took, below; a fit gets half of it unless the fit
    before it failed or it is the only rank left, goes on with all of it if that
    half cut it with at most 5% of the ones wrong, and else raises the floor), each
    of its fits starting from the
    best known certificate cut to its ``k`` columns (global offset only; see
    :func:`_polish`), and a search resumed at a rank whose fit an earlier run's
    deadline cut (a portfolio's second pass) continues that fit with all the time
    left and then polishes below it as after a scout (all on data of at least 4e7
    entries; on smaller data too, but with fresh starts and retrying the ranks
    whose fits a deadline cut while at most half of the ones failed); one resumed
    right below the bound with no cut fit to continue polishes at once;
    within a budget (any data), an ascent fit that its share cuts while at most
    10% of the ones fail goes on at the same ``k`` (once per ``k``) with all the
    time left after a scout, else with half of it (a larger ``k`` may then still
    certify), and so does one reached by a jump after a scout that leaves at most
    half the entries wrong that the fit it jumped from left;
    an ascent step that its share stops while its latent columns are added or
    before its fit's first sweep goes on once at the same ``k`` with all the time
    left, from where it stopped, and if stopped again ends the ascent (its model is
    kept for a second pass; the scout's ascent on its sample ends at once);
    an ascent fit that still leaves more than half of the ones uncertified after
    its first stall window stops (Newton fits too); after a fit that leaves more
    than 90% of them uncertified the next ``k`` starts from the truncated SVD
    (not from that fit with columns added: on a planted 200,000 x 5,000 matrix
    such warm starts still left 92% of the ones wrong at k = 16); at the last
    rank below the known bound and in the polish phase, a fit stops as soon as at
    most 10% of the ones fail and is then rescued, the boost taking at most 80%
    of the time left (the LPs get the rest), again and again from the model that
    fails fewer
    entries while that number drops, and if that fails goes on from that model;
    a rescue the deadline stops leaves that
    model for a later pass (``incumbent.memo``). The first certified ``k`` is an
    upper bound: ``rrank_tau(X) <= k``. If
    ``polish`` is True, the ranks below it (below another method's bound only if
    the ascent came up to it, :func:`_polish_wanted`) are then bisected with more
    effort
    (:func:`_polish`), above the largest ``k`` where the forward search left more
    than 10% of the ones wrong: each tried ``k`` (the midpoint; ``k - 1`` when no
    rank was skipped) gets a fresh SVD start, up to 4000 sweeps (stopped when the
    wrong entries drop by less than 2% in 500 sweeps) and the rescue; success
    lowers the bound, failure raises the floor, and the phase ends once
    ``incumbent.done``. Within a budget the polish phase gets as much time as the
    forward search took (at least 10 s, a child deadline). Every ``k`` is
    recorded with ``incumbent.record``; long fits send a progress event about
    once a second.

    Method parameters (``method_params={"lpca": {...}}``)
    -----------------------------------------------------
    start : int, default=1
        First ``k`` tried.
    max_rank : int or None, default=None
        Last ``k`` tried; None means ``min(n_samples, n_features) + 1``.
    refine : bool, default=True
        Whether to try the rescue (reweighting and LP refinement) when few entries
        fail.
    polish : bool, default=True
        Whether to run the polish phase below the first certified ``k`` (or below
        the known bound when the ascent reached it without a certificate).
    fit_bias : bool or "global", default="global"
        The model of :func:`~sklearn_rrank._lpca._fit.lpca_fit`. The default, one
        scalar offset that uses no column, expresses exactly the roundings at
        ``tau`` of rank-``k`` matrices; ``False`` (no bias) expresses sign patterns
        of rank-``k`` logits and ``True`` (``k - 1`` factors plus a bias column)
        fewer still, so the default can certify the smallest ranks (measured in
        ``benchmarks/lpca.py``: paleo 9, apj 4 with "global"; 10 and 5 with False;
        10 and 5 with True). With ``tau = 0`` "global" falls back to False (the
        offset would have to be 0).
    dtype : {"auto", "float64", "float32"}, default="auto"
        Precision of the sweeps (as in :func:`~sklearn_rrank._lpca._fit.lpca_fit`); the
        factors, and every certificate, stay float64. ``"auto"``: float32 on data
        of at least ``1e6`` entries, float64 below. On Abstracts one L-BFGS fit
        at k = 100 certified in 424-491 s in float32 (the paper reproduction,
        docs "Reproducing the paper"); in float64 it ran 1824 s without (2 cores,
        load 1-3).

    ``retry_unstarted`` (default True; not a method parameter) is False for the
    scout's ascent on its sample only: see the once-more rule above.

    Returns
    -------
    info : dict (the ``info`` of the RankSearchResult)
        ``"failed_by_k"`` (entries failing the certificate after the fit, before
        any rescue; for a fit its deadline cut with more wrong entries than the
        rescue takes, the wrong entries; the skeleton adds ``"errors_by_k"``, the
        wrong entries of the last fit at each ``k`` of the ascent and of the
        polish phase, 0 where a fit certified (after its rescue, if any)),
        ``"seconds_by_k"``, ``"sweeps_by_k"``, ``"status_by_k"``,
        ``"solver_by_k"`` (``"newton"`` or ``"lbfgs"``),
        ``"rescued_by_refinement"`` (True if the returned certificate needed the
        rescue), ``"rescue"`` (per ``k`` where it ran: ``"boosted"`` (reweighting
        made it exact), errors removed by the LPs, ``"certified"``), ``"polish"``
        (per ``k`` tried in the polish phase: sweeps, status, errors,
        ``"certified"``, ``"rescued"``, seconds), ``"fit_bias"``,
        ``"fit_params"`` (what reproduces the certificate's model),
        ``"stopped_early"`` (time limit or ``max_rank`` reached first) and
        ``"message"``.

    Notes
    -----
    The search does not prove that smaller ``k`` are impossible; the rank is an
    upper bound. Timing for the paper's data sets is in ``benchmarks/lpca.py``.

    References
    ----------
    Neumann, Gemulla, Miettinen (ICDM 2016), Section 3, "L-PCA": run L-PCA for
    ``k = 1, 2, ...`` and check whether ``round(L R^T) = B``; Schein, Saul and
    Ungar (AISTATS 2003).
    """
    m, n = X.shape
    if max_rank is None:
        max_rank = min(m, n) + 1
    if dtype == "auto":
        dtype = "float32" if m * n >= _FLOAT32_ENTRIES else "float64"
    data = _Data(X, dtype=dtype)
    n_ones = incumbent.data.n_ones
    rescue_limit = max(_RESCUE_MAX_FAILED, int(_RESCUE_FRACTION * n_ones))
    if fit_bias == "global" and tau == 0:
        fit_bias = False
    kind = _model_kind(fit_bias, tau)
    rng = check_random_state(random_state)
    # seeds drawn up front: the first start, and the fresh starts of the polish phase
    seeds = rng.randint(np.iinfo(np.int32).max, size=2)
    info = _search_info(fit_bias)
    if dtype != "float64":
        info["fit_params"]["dtype"] = dtype
    fit = dict(tau=tau, alpha=_SEARCH_ALPHA, n_jobs=n_jobs, verbose=verbose)
    began = time.monotonic()
    k = first = max(int(start), int(incumbent.lower), 1)
    floor = first - 1  # the polish phase bisects above it
    long_fits = False  # after a scout, or resumed on data a scout would sample
    if start == 1:  # not a search resumed above its start (a portfolio's second pass)
        scout = _scout(
            X,
            incumbent,
            deadline,
            first=first,
            max_rank=max_rank,
            seed=rng.randint(np.iinfo(np.int32).max),
            fit=fit,
            fit_bias=fit_bias,
            dtype=dtype,
        )
        if scout is not None:
            info["scout"] = scout
            long_fits = True
            floor = max(first - 1, scout["floor"])
            k = first = max(first, scout["start"])
    reason = "max_rank"
    state = None
    continued = {}  # rank -> the share of the time left its cut fit goes on with
    jumped_from = {}  # rank reached by a jump -> the wrong entries of the fit before
    at_top = incumbent.bound is not None and k + 1 >= incumbent.bound
    resumed = start > 1 and deadline.limited and (k in incumbent.memo or at_top)
    if resumed:
        # a search resumed (a portfolio's second pass): below it the polish
        # descends with all the time left; on data that a scout would sample, as
        # after a scout
        long_fits = m * n >= _SCOUT_MIN_ENTRIES
        floor = max(int(incumbent.lower), 1) - 1
        if k in incumbent.memo:
            # at a fit an earlier run's deadline cut: it goes on with all the time
            # left (on Abstracts, 900 s, the polish fit at k = 120 went on in the
            # second pass and certified; with the floor at 119 the search then
            # ended; on APJ, 60 s, the fit at k = 5 certified with 11 s left and
            # k = 4 was not tried)
            continued[k] = 1.0
        else:
            # right below the bound with no fit to continue: the ascent's fit would
            # be a polish fit from a fresh start (on Abstracts, 900 s, the second
            # pass fitted k = 119 for 194 s below L-PCA's 120 and certified it with
            # 170 s left, no polish after it: [6, 119], where cut polish fits that
            # went on in the second pass gave 108); the polish comes down at once
            reason = "bound"
    while k <= max_rank and reason != "bound":
        if not incumbent.worth_trying(k):
            reason = "bound"
            break
        if deadline.expired():
            reason = "time limit"
            break
        state, ok, n_failed = _ascent_step(
            incumbent,
            data,
            info,
            deadline,
            state,
            k=k,
            kind=kind,
            seed=seeds[0],
            n_ones=n_ones,
            rescue_limit=rescue_limit if refine else None,
            fit=fit,
            share=continued.get(k, _ASCENT_SHARE),
        )
        if ok:
            reason = "certified"
            break
        if n_failed is None or (
            info["status_by_k"][k] == "time_limit" and not info["sweeps_by_k"][k]
        ):
            # its share passed while latent columns were added or before the fit's
            # first sweep: the fit says nothing about k, and a larger k would get
            # less time still (on a planted 10,000 x 5,000 matrix the ascent went
            # on to k = 64, 128 and 256 without a sweep, 35 s of a 120 s budget).
            # The same k goes on once, from where it stopped, with all the time
            # left (APJ, 60 s, two busy processes beside it: the two columns of
            # the gallop 4 -> 6 outlasted the step's share, the ascent ended with
            # 10 s of L-PCA's share unused and ProjLP's 12 was the call's bound,
            # where the same step in time certified 6, then 5); then the ascent
            # ends, its model in the memo, where a second pass resumes.
            # The scout's ascent on a sample ends there (``retry_unstarted``
            # False): it is to find a start cheaply, and on Abstracts, 900 s, the
            # retry took its sample from 133 to 262 and X's ascent started at 261
            # (certified at 394 s, where the start at 133 had certified at 340 s)
            if (
                retry_unstarted
                and deadline.limited
                and k not in continued
                and not deadline.expired()
            ):
                continued[k] = 1.0
                incumbent.memo.pop(k, None)  # it goes on from ``state``
                continue
            reason = "time limit"
            break
        if (
            deadline.limited
            and k not in continued
            and info["status_by_k"][k] == "time_limit"
            and (
                n_failed <= _POLISH_FRACTION * n_ones
                or n_failed <= _JUMP_GO_ON * jumped_from.get(k, -1)
            )
        ):
            # within a budget, a near fit that its share cut goes on at the same k
            # (its model is in the memo), with all the time left after a scout
            # (the planted 200,000 x 5,000 matrix: such fits went on at k + 1, one
            # column per share, k = 24 to 29, 8.9% to 6% of the ones wrong, no
            # certificate), else with _CONTINUED_SHARE of it (APJ, 60 s,
            # two busy processes beside it: k = 6 went on from 139 entries wrong
            # and certified)
            continued[k] = 1.0 if long_fits else _CONTINUED_SHARE
            state = None
            continue
        # after a scout, a far fit that its share cut: the sample's rank was low for
        # X (Abstracts, 1800 s: the ascent on X started at 69, and its fits at 69,
        # 70, 72, 76, 84, 100, 132 and 196, each from the last with columns added
        # and cut by its share, all left 16% to 36% of the ones wrong; a fresh
        # start at 133 left 0.7% after 82 s in a 900 s run)
        jump = (
            long_fits
            and info["status_by_k"][k] == "time_limit"
            and n_failed > _POLISH_FRACTION * n_ones
        )
        k = _next_rank(
            k,
            first,
            n_failed,
            n_ones,
            incumbent,
            max_rank,
            gallop=deadline.limited,
            jump=jump,
        )
        if jump:
            jumped_from[k] = n_failed
        if deadline.limited and (n_failed > _EARLY_FAR_FRACTION * n_ones or jump):
            # within a budget a hopeless fit (or a cut one after a scout) hands
            # nothing on: the next k starts from the truncated SVD, not from it with
            # columns added
            state = None
    polish_cut = False
    if polish and _polish_wanted(incumbent, reason):
        # within a budget the longer fits get about the time the ascent took; without
        # one they are bounded by their sweeps only, so that the result does not
        # depend on the machine's speed or load (random_state makes it reproducible)
        budget = max(_POLISH_MIN_SECONDS, time.monotonic() - began)
        descend = long_fits or resumed
        if descend:
            # after a scout the ascent on X is short (on Abstracts one fit, k = 133,
            # certified at once) and a polish fit is longer than it: within the
            # ascent's time the fit at k = 101 was cut after about 110 s, with 126 s
            # of L-PCA's share of a 900 s budget unused
            budget = None
        polish_cut = _polish(
            incumbent,
            data,
            info,
            deadline.child(seconds=budget)
            if deadline.limited and budget is not None
            else deadline,
            kind=kind,
            tau=tau,
            start=floor + 1,
            seed=seeds[1],
            n_ones=n_ones,
            rescue_limit=rescue_limit,
            fit=fit,
            max_rank=max_rank,
            descent=_POLISH_DESCENT if descend else None,
            truncate=long_fits,
            retry_cut=resumed,
            share=_POLISH_SHARE if long_fits else None,
        )
    _conclude(info, incumbent, deadline, reason, max_rank, polish_cut=polish_cut)
    return info


def _scout(X, incumbent, deadline, *, first, max_rank, seed, fit, fit_bias, dtype):
    """The ascent on a random sample of ``X``: where the ascent on ``X`` starts.

    Within a limited ``deadline`` and on data of at least ``_SCOUT_MIN_ENTRIES``
    entries only (else None): ``size`` whole rows of ``X`` (whole columns if ``X``
    has more columns than rows), about ``_SCOUT_ENTRIES`` entries and at most a
    quarter of them, drawn uniformly from ``seed``, get the search's ascent from
    ``first`` (no polish) on ``_SCOUT_SHARE`` of the time left, with their own
    certification: a certificate of the sample bounds nothing of ``X``, so none is
    offered to ``incumbent``, and the sample's progress reaches the user as steps.
    A rounding rank of a sample of rows (columns) is at most that of ``X``, and the
    far fits on the sample stand in for those on ``X`` (a heuristic: these are
    local fits). Returns the sample's record: ``"axis"`` (0: rows), ``"size"``,
    ``"rank"`` (certified on the sample, or None), ``"failed_by_k"``,
    ``"seconds"`` and ``"start"``, the rank where the ascent on ``X`` starts
    (the sample's certified rank, times ``_SCOUT_GROWTH`` rounded up if the
    sample's fit at the largest rank below it ended rather than being cut by its
    share and the certified rank lies beyond Newton's range (its fits run L-BFGS),
    else the last rank its ascent fitted (a fit cut before its first sweep is not
    counted), or, if that fit ended (the scout's share did not cut it) with more
    than ``_POLISH_FRACTION`` of the sample's ones wrong, the rank the sample's
    ascent would have gone to next (:func:`_next_rank`, the gallop), or, if that
    fit came near (at most that fraction wrong) at a rank the ascent galloped to
    from a fit the share cut far off, that cut rank; below the known bound and at
    most ``max_rank``), and
    ``"floor"``, the largest rank at which the sample's fit ended (not cut by its
    share) with more than ``_POLISH_FRACTION`` of its ones wrong (``first - 1`` if
    none): the polish phase on ``X`` searches above it, the ranks the scout
    skipped included.
    """
    m, n = X.shape
    axis = 0 if m >= n else 1
    long, short = (m, n) if axis == 0 else (n, m)
    size = -(-_SCOUT_ENTRIES // short)
    if not deadline.limited or m * n < _SCOUT_MIN_ENTRIES or 4 * size > long:
        return None
    t0 = time.monotonic()
    pick = np.sort(np.random.RandomState(seed).choice(long, size, replace=False))
    Xs = X[pick] if axis == 0 else X[:, pick]
    if sp.issparse(Xs):
        Xs = sp.csr_matrix(Xs)
    label = f"scout on {size} {'rows' if axis == 0 else 'columns'}"

    def relay(event):  # the sample's fits as steps of this search, never a bound
        # the sample's wrong entries go in the message, not as the error at k: the
        # progress line shows the least error at k, and the sample's 0 at k = 69
        # stood for X's count through a 400 s fit on X at 69 (Abstracts, 3600 s)
        if event["stage"] == "step":
            message = f"{label}: {event['message']}".rstrip(": ")
            if event["error"] is not None:
                message += f" ({event['error']} wrong in the sample)"
            incumbent.event("step", k=event["k"], message=message)

    sample = Incumbent(Xs, fit["tau"], incumbent.method, cap=incumbent.bound)
    sample.progress = relay
    found = _lpca_search(
        Xs,
        sample,
        deadline.child(fraction=_SCOUT_SHARE),
        tau=fit["tau"],
        random_state=seed,
        n_jobs=fit["n_jobs"],
        verbose=0,
        start=first,
        max_rank=max_rank,
        polish=False,
        fit_bias=fit_bias,
        dtype=dtype,
        retry_unstarted=False,
    )
    tried = found["failed_by_k"]
    fitted = [k for k in tried if found["sweeps_by_k"][k]]  # not cut before a sweep
    start = max(fitted, default=first)
    far = _POLISH_FRACTION * max(sample.data.n_ones, 1)
    if (
        sample.rank is None
        and fitted
        and found["status_by_k"][start] != "time_limit"
        and tried[start] > far
    ):
        # the sample's last fit ended far off (not cut by the scout's share): X's
        # ascent starts where the sample's would have gone next (its gallop), not
        # at that rank, where X's fit (more rows) would be far off too. A fit the
        # share cut far off (or before its first sweep) says little: X's ascent
        # starts at it, and if X's fit there is cut far off too, the ascent jumps
        # to twice the rank (:func:`_next_rank`). Abstracts, 900 s, two busy
        # processes beside it: the share cut the sample's fits at 69 (41% of its
        # ones wrong) and at 133 (22%, seconds after it began); the jump from 133 put X
        # at 266, where 133 certifies; an earlier rule started X at the jump from a
        # cut far fit, after two runs in which X's ascent started at 69 and jumped
        # by half to 104, 156, 244, 420 and 772, each cut far ([6, 408]); with X's
        # fit at 69 and the jump to twice the rank, an idle run forced to start X
        # at 69 went 69, 138 and gave [6, 110]
        start = _next_rank(
            start,
            first,
            tried[start],
            sample.data.n_ones,
            sample,
            max_rank,
            gallop=True,
        )
    elif sample.rank is None and fitted and tried[start] <= far:
        # the sample's last fit came near (not certified): if its ascent got there
        # by a gallop from a fit that the scout's share cut far off, X's ascent
        # starts at that cut rank, where the gallop left (Abstracts, 900 s, two
        # busy processes beside it: the share cut the sample's fit at 133 far off,
        # the gallop's fit at 261 came near, X's ascent started at 261, certified
        # it at 392 s and the call gave [6, 199]; runs that started X at 133
        # certified 133 at 340-398 s and gave 116-126, among them one with the
        # same sample path under this rule: [6, 116])
        # back over the near fits of the k + 1 steps to where the gallop landed
        landing = start
        while landing - 1 in tried and tried[landing - 1] <= far:
            landing -= 1
        prev = max((j for j in tried if j < landing), default=None)
        if (
            prev is not None
            and landing > prev + 1
            and found["status_by_k"][prev] == "time_limit"
            and tried[prev] > far
            and found["sweeps_by_k"][prev]
        ):
            start = prev
    if sample.rank is not None:
        start = sample.rank
        # grown only when the sample's fit at the rank below it ended (far), not
        # when its share cut it: a certificate after a jump from a cut fit says
        # little of the sample's rank (Abstracts, 900 s: the fit at 69 was cut, 133
        # certified, and X's ascent from 200 certified 200, where 133 had certified)
        below = [k for k in fitted if k < sample.rank]
        kind = _model_kind(fit_bias, fit["tau"])
        p = _latent_factors(sample.rank, kind)
        if (
            below
            and found["status_by_k"][max(below)] != "time_limit"
            and _resolve_solver("auto", p, m, n) == "lbfgs"
        ):
            start = math.ceil(_SCOUT_GROWTH * sample.rank)
    if incumbent.bound is not None:  # never at or above the known bound
        start = max(first, min(start, incumbent.bound - 1))
    start = min(start, max_rank)
    # a fit its share cut says nothing of its rank: on Abstracts (900 s) the sample's
    # fits at k = 37, 69 and 133 were cut with 62%, 44% and 22% of its ones wrong,
    # and with them as the floor the polish had no rank left below 133
    ended = [k for k in fitted if found["status_by_k"][k] != "time_limit"]
    floor = max((k for k in ended if tried[k] > far), default=first - 1)
    record = {
        "axis": axis,
        "size": size,
        "rank": sample.rank,
        "failed_by_k": dict(tried),
        "seconds": time.monotonic() - t0,
        "start": int(start),
        "floor": int(min(floor, start - 1)),
    }
    if fit["verbose"]:
        print(
            f"[lpca search] {label}: certified {sample.rank}, tried "
            f"{sorted(tried)}, {record['seconds']:.2f}s; the ascent starts at {start}"
        )
    return record


def _polish_wanted(incumbent, reason):
    """Whether the polish phase runs after an ascent that ended for ``reason``.

    Below this search's own certificate, or below another method's bound (the
    cap) once the ascent has come up to it (``reason == "bound"``). Not when the
    ascent ended early, far below a cap and without a certificate: on Abstracts
    the ascent stopped at k = 7 below R-SVD's 4421 and the polish bisected at
    k = 2214, an L-BFGS fit with 40 million parameters (its history alone 6 GB)
    that could not finish in the time left.
    """
    if incumbent.bound is None or incumbent.done:
        return False
    return incumbent.rank is not None or reason == "bound"


def _search_info(fit_bias):
    """The empty diagnostics of one search (filled per ``k`` and phase)."""
    return {
        "failed_by_k": {},
        "seconds_by_k": {},
        "sweeps_by_k": {},
        "status_by_k": {},
        "solver_by_k": {},
        "rescue": {},
        "rescued_by_refinement": False,
        "polish": {},
        "fit_bias": fit_bias,
        # the fit parameters that reproduce the certificate's model (RoundingRankCV
        # hands them to the refitted estimator so that transform matches it)
        "fit_params": {"fit_bias": fit_bias},
    }


def _ascent_step(
    incumbent,
    data,
    info,
    deadline,
    state,
    *,
    k,
    kind,
    seed,
    n_ones,
    rescue_limit,
    fit,
    share=_ASCENT_SHARE,
):
    """One ``k`` of the ascent: warm start, fit, offer, rescue of a near miss.

    ``state`` is the model of the previous ``k`` (None at the first ``k``: the
    model an earlier run left at ``k`` in ``incumbent.memo``, else a fresh SVD
    start from ``seed``); latent columns are added one at a time (on data of at
    least ``_BLOCK_ADD_ENTRIES`` entries all at once). The rescue runs when at
    most ``rescue_limit`` entries fail (None: never; within a budget, at the last
    rank below the known bound, when at most ``_POLISH_FRACTION`` of the ones do,
    and the fit stops there: :func:`_fit_and_rescue`). Returns the fitted
    model, whether a certificate was accepted and the uncertified entries (None
    when this ``k``'s share of the deadline passed before its latent columns were
    all added: each costs an SVD of the gradient, on Abstracts several seconds;
    the ascent then goes on once at the same ``k`` from the returned model, with
    all the time left, as a larger ``k`` needs more columns still).
    """
    tau, verbose = fit["tau"], fit["verbose"]
    t0 = time.monotonic()
    p = _latent_factors(k, kind)
    # within a budget no single k of the ascent (its start included) takes more
    # than a share of what is left: a hopeless k must not spend the whole budget;
    # the last rank below the known bound shares only with its rescue, which it
    # gets when any near fit (as in the polish phase)
    limited = deadline.limited
    last = incumbent.bound == k + 1
    own = deadline.child(fraction=1.0 if last else share)
    near = None
    if last and limited and rescue_limit is not None:
        near = rescue_limit = max(rescue_limit, int(_POLISH_FRACTION * n_ones))
    if state is None:
        # an earlier run of this search in the same call left a model at k:
        # continue it (a portfolio's second pass), else a fresh SVD start
        state = incumbent.memo.pop(k, None) or _svd_init(
            data, p, kind, seed, tau, deadline=own
        )
    U, V, mu = state
    block = data.shape[0] * data.shape[1] >= _BLOCK_ADD_ENTRIES
    while U.shape[1] < p:  # one column (large dense data: all) per step
        if own.expired():  # each step costs an SVD of the gradient: stop
            return (U, V, mu), False, None
        if block:
            U, V, mu = _add_columns(data, U, V, mu, p - U.shape[1], own)
        else:
            U, V, mu = _add_column(data, U, V, mu, own)
    tick = _ticker(incumbent, k)
    budget = _solver_budget(
        p,
        data.shape,
        _SEARCH_MAX_ITER,
        _SEARCH_STALL,
        _FAR_FRACTION * n_ones,
        limited=limited,
        near=near,
        hopeless=_EARLY_FAR_FRACTION * n_ones,
    )
    res = _fit_and_rescue(
        incumbent,
        info,
        data,
        (U, V, mu),
        own,
        deadline,
        budget=dict(budget, tol=_SEARCH_TOL),
        near=near,
        limit=rescue_limit,
        fit=fit,
        tick=tick,
    )
    ok, n_failed, n_iter, finfo = res["ok"], res["failed"], res["sweeps"], res["finfo"]
    rescued = res["rescued"]
    info["failed_by_k"][k] = int(n_failed)
    info["sweeps_by_k"][k] = n_iter
    info["status_by_k"][k] = finfo["status"]
    info["solver_by_k"][k] = finfo["solver_used"]
    if res["rescue"] is not None:
        info["rescue"][k] = res["rescue"]
    info["seconds_by_k"][k] = time.monotonic() - t0
    # the best fit at k: a certified one (rescued or not) has no wrong entries
    incumbent.record(k, 0 if ok else finfo["n_errors_logit"], message=finfo["status"])
    if verbose:
        print(
            f"[lpca search] k={k}: {n_iter} sweeps ({finfo['status']}), "
            f"{finfo['n_errors_logit']} wrong, {n_failed} uncertified, "
            f"certified={ok}{' (rescued)' if rescued else ''}, "
            f"{info['seconds_by_k'][k]:.2f}s"
        )
    if ok:
        info["rescued_by_refinement"] = rescued
    elif finfo["status"] == "time_limit" or (limited and res["rescue"] is not None):
        # cut short: a longer fit continues it (within a budget, a rescue that
        # ran until the deadline too: from the model that fails fewest entries)
        incumbent.memo[k] = res["best"]
    return res["state"], ok, n_failed


def _conclude(info, incumbent, deadline, reason, max_rank, *, polish_cut=False):
    """Set ``info["stopped_early"]`` and ``info["message"]`` at the end.

    The search stopped early if it certified nothing before the time limit or
    ``max_rank``, if the deadline expired before the bounds met, or if the polish
    phase's own share of the time (``polish_cut``) ended with ranks left to try:
    a portfolio's second pass then resumes it (on Paleo, 60 s, the polish fit at
    k = 8 was cut with 54 entries wrong and the call ended after 19 s).
    """
    stopped = reason in ("max_rank", "time limit") and incumbent.rank is None
    info["stopped_early"] = (
        stopped or polish_cut or (deadline.expired() and not incumbent.done)
    )
    if incumbent.rank is not None:
        info["message"] = f"certified rank {incumbent.rank}"
        if info["polish"]:
            info["message"] += (
                f" (longer fits tried the ranks {sorted(info['polish'])})"
            )
    elif reason == "bound":
        info["message"] = f"no certificate below {incumbent.limit_text()}"
    elif reason == "max_rank":
        info["message"] = f"no certificate up to max_rank={max_rank}"
    else:
        info["message"] = "no certificate before the time limit"


def _solver_budget(
    p, shape, max_iter, stall, far=None, *, limited=False, near=None, hopeless=None
):
    """Solver, sweeps and stall rule of a search fit with ``p`` latent factors.

    Newton up to ``_AUTO_NEWTON_MAX_P`` latent factors with ``max_iter`` sweeps and
    the ``stall`` window ``(window, fraction)``; L-BFGS beyond, with
    ``_LBFGS_SWEEP_FACTOR`` times both. If ``far`` is given, an L-BFGS fit (any
    fit if ``limited``: within a budget) also stops when more than ``far`` entries
    are still uncertified after the first window; if ``near`` is given, any fit
    stops once at most ``near`` entries are; if ``hopeless`` is given and
    ``limited``, a Newton fit stops when more than ``hopeless`` entries are still
    uncertified after ``_EARLY_SWEEPS`` sweeps (not L-BFGS: its early counts of
    unsafe entries run far above the wrong ones; on Abstracts at k = 133, 58% of
    the ones were wrong after 50 iterations and over 90% unsafe) (see
    :func:`sklearn_rrank._lpca._newton._stalled`). ``stall`` None: no stall rule.
    """
    solver = _resolve_solver("auto", p, *shape)
    factor = _LBFGS_SWEEP_FACTOR if solver == "lbfgs" else 1
    max_iter *= factor
    if stall is not None:
        stall = (stall[0] * factor, stall[1])
        if far is not None and (limited or solver == "lbfgs"):
            stall = (*stall[:2], 0.0, far)
        if near is not None:
            stall = (*stall[:2], 0.0, stall[3] if len(stall) > 3 else np.inf, near)
        if hopeless is not None and limited and solver == "newton":
            # the rules it does not use are padded (no rate, no far, no near)
            stall = (*stall, *(0.0, np.inf, -1)[len(stall) - 2 :])
            stall = (*stall, (_EARLY_SWEEPS * factor, hopeless))
    return {"solver": solver, "max_iter": max_iter, "stall": stall}


def _next_rank(
    k, first, n_failed, n_ones, incumbent, max_rank, gallop=False, jump=False
):
    """The next ``k`` of the ascent: ``k + 1``, or a jump while ``k`` is far off.

    A fit that leaves more than ``_POLISH_FRACTION`` of the ones uncertified is far
    from exact: the ascent then grows ``k`` by half the distance it has already
    climbed (``k - first + 1``), so that a bound of ``b`` takes about
    ``log(b) / log(1.5)`` far fits instead of ``b``; with ``gallop`` (a limited
    budget) by the whole distance (``first, first + 1, first + 3, first + 7, ...``,
    about ``log2(b)`` far fits), so that a share of a budget reaches the ranks a
    single default fit certifies; with ``jump`` (after a scout, a far fit its share
    cut) to at least ``_JUMP_GROWTH`` times ``k`` (``69, 138, 276, ...``: the
    ascent then starts high, and the polish comes down from the first certificate
    with warm starts).
    The jump never passes the known bound (less one) or ``max_rank``; the polish
    phase bisects the ranks it skipped.
    """
    step = 1
    if n_failed > _POLISH_FRACTION * max(n_ones, 1):
        climbed = k - first + 1
        step = max(1, climbed if gallop else climbed // 2)
        if jump:
            step = max(step, math.ceil((_JUMP_GROWTH - 1) * k))
    top = max_rank if incumbent.bound is None else min(max_rank, incumbent.bound - 1)
    return max(k + 1, min(k + step, top))


def _polish(
    incumbent,
    data,
    info,
    deadline,
    *,
    kind,
    tau,
    start,
    seed,
    n_ones,
    rescue_limit,
    fit,
    max_rank,
    descent=None,
    truncate=False,
    retry_cut=False,
    share=None,
):
    """Bisect the ranks below the bound with longer fits.

    The ranks tried lie above the floor, the largest ``k`` at which the ascent left
    more than ``_POLISH_FRACTION`` of the ones wrong (``start - 1`` if none), and
    below ``min(bound, max_rank + 1)``: ``k`` is the midpoint of the floor and
    that top, so with no gap it is ``bound - 1``. Each ``k`` continues the last
    model fitted at ``k`` in this call if the deadline cut it short
    (``incumbent.memo``) or gets a fresh SVD start,
    up to ``_POLISH_MAX_ITER`` sweeps (stall window ``_POLISH_STALL``) and the
    rescue (within a budget: the fit stops once at most ``_POLISH_FRACTION`` of the
    ones fail, is rescued, and goes on if that failed; :func:`_fit_and_rescue`);
    a certified ``k`` lowers the bound, a failed one raises the floor (with
    ``retry_cut``, a fit an earlier deadline cut raises it only if it left more
    than half of the ones wrong: a search resumed in a second pass). Stops when
    no rank is left between them, when ``deadline`` (the phase's share) expires
    or when the bound meets the lower bound; returns True only if the deadline
    stopped it with ranks left to try (a fit it cut, or a next rank) or, within a
    budget and without ``retry_cut``, if ranks below the top are left whose fits a
    deadline cut with at most half of the ones wrong (a resumed search retries
    them). With
    ``descent`` (a fraction), no ``k`` lies below ``descent`` times the top: a
    cautious bisection, for data
    where one fit takes much of the budget; it never passes a rank above the
    floor whose fit a deadline cut (its model in the memo: that fit goes on first),
    and with ``retry_cut`` and within a budget, when less than
    ``_POLISH_LAST_FITS`` times the seconds of the last certified fit are left,
    the step below the top is ``_POLISH_LAST_STEP`` of the descent's and the fit
    gets all the time left. With ``truncate`` (and the global
    offset), a ``k`` not in the memo starts from the best known certificate cut to
    ``k`` columns (:func:`~sklearn_rrank._lpca._start._truncated_start`) instead of
    the fresh SVD start: on Abstracts that start left 2.7 times fewer entries wrong
    after 200 iterations at k = 100 (12,104 from a certificate of rank 120, against
    32,713). With ``share`` (a fraction), a fit gets that share of the phase's time
    left unless it is the only rank left or the fit before it failed (then all of
    it): a fit its share cuts with at most ``_POLISH_GO_ON`` of the ones wrong goes
    on at the same ``k`` with all the time left, any other failed fit raises the
    floor, and the next ``k`` lies between it and the bound.
    """
    far = _POLISH_FRACTION * max(n_ones, 1)
    # within a budget any near fit is rescued, and the fit stops once near
    limited = deadline.limited
    limit = max(rescue_limit, int(far)) if limited else rescue_limit
    near = limit if limited else None
    # with retry_cut, a fit a deadline cut (its model kept in the memo) raises the
    # floor only if it left more than half of the ones wrong: on APJ, 60 s, the
    # ascent's share cut k = 4 with 17% of them wrong after 4.5 s; in the second
    # pass a longer fit goes on from it
    half = _FAR_FRACTION * max(n_ones, 1)
    hopeless = half if retry_cut else -1
    floor = max(
        (
            k
            for k, e in incumbent.errors_by_k.items()
            if k >= start and e > far and (k not in incumbent.memo or e > hopeless)
        ),
        default=start - 1,
    )
    # ranks below the top whose fits a deadline cut (the models in the memo) while
    # at most half of the ones failed: a later pass (retry_cut) goes on with them
    # (APJ, 60 s: the ascent's share cut k = 4 with 710 of 6,902 ones wrong, just
    # above the floor's 10%; 5 certified, no rank was left for the polish, and the
    # search ended as done, so the second pass gave its 21 s to VC and the result
    # was [3, 5] where runs with the fit at 4 near certified 4)
    retry = half if limited and not retry_cut else -1
    failed = False  # the last fit of this phase failed: the next gets all the time
    again = None  # a rank whose fit its share cut near: it goes on next
    # seconds of the last fit that certified (the ascent's at the bound, if any)
    took = info["seconds_by_k"].get(incumbent.rank)
    while not incumbent.done:
        top = min(incumbent.bound, max_rank + 1)
        if top - floor <= 1:
            return any(
                start <= k < top and k in incumbent.memo and e <= retry
                for k, e in incumbent.errors_by_k.items()
            )
        if deadline.expired():
            return True
        own = deadline
        last = (
            descent is not None
            and retry_cut
            and limited
            and took is not None
            and deadline.remaining() < _POLISH_LAST_FITS * took
        )
        if share is not None and not failed and not last and top - floor > 2:
            own = deadline.child(fraction=share)
        if again is not None:
            # the same k, not wherever the rules below would now put the next fit:
            # in a second pass on Abstracts (900 s, two busy processes beside it)
            # the share cut the fit at k = 120 below 126 with 9 entries unsafe,
            # less than three times the last certified fit's seconds were then
            # left, and the short last step put the next fit at 122, cut at the
            # deadline: [6, 126]
            k, again = again, None
        else:
            k = (floor + top) // 2
            if descent is not None:
                step = 1 - (1 - descent) * (_POLISH_LAST_STEP if last else 1)
                k = min(top - 1, max(k, math.ceil(step * top)))
                # not below a rank whose fit a deadline cut (Abstracts, 900 s: the
                # first pass's share cut 102 below 113 after 21 s, and the second
                # pass descended from 107 to 97, failed, and certified 102 at the
                # deadline)
                k = max([k, *(j for j in incumbent.memo if floor < j < top)])
        if not incumbent.worth_trying(k):
            break
        t0 = time.monotonic()
        p = _latent_factors(k, kind)
        # continue the last model fitted at k (the ascent's, warm-started from
        # k - 1, or an earlier longer fit's), else (truncate) the best certificate
        # cut to k columns, else a fresh SVD start
        state = incumbent.memo.pop(k, None)
        if state is None and truncate and kind == "global":
            factors = incumbent.best_factors()
            if factors is not None:
                state = _truncated_start(data, *factors, p, tau)
        U, V, mu = state or _svd_init(data, p, kind, seed, tau, deadline=own)
        tick = _ticker(incumbent, k)
        res = _fit_and_rescue(
            incumbent,
            info,
            data,
            (U, V, mu),
            own,
            own,
            budget=dict(
                _solver_budget(
                    p, data.shape, _POLISH_MAX_ITER, _POLISH_STALL, near=near
                ),
                tol=0.0,
            ),
            near=near,
            limit=limit,
            fit=fit,
            tick=tick,
        )
        ok, rescued, finfo, n_iter = (
            res["ok"],
            res["rescued"],
            res["finfo"],
            res["sweeps"],
        )
        info["polish"][k] = {
            "sweeps": n_iter,
            "status": finfo["status"],
            "errors": finfo["n_errors_logit"],
            "certified": bool(ok),
            "rescued": rescued,
            "seconds": time.monotonic() - t0,
        }
        # in errors_by_k as the ascent's fits (a k both tried: the last fit at k)
        incumbent.record(k, 0 if ok else finfo["n_errors_logit"], message="polish")
        if fit["verbose"]:
            print(
                f"[lpca search] polish k={k}: {n_iter} sweeps ({finfo['status']}), "
                f"{finfo['n_errors_logit']} wrong, certified={ok}"
            )
        if not ok:
            if finfo["status"] == "time_limit" or (
                limited and res["rescue"] is not None
            ):
                incumbent.memo[k] = res["best"]
            if deadline.expired():
                return True  # cut at k (its model kept): a later pass goes on
            failed = True
            if own is not deadline and own.expired():
                parallel = _make_parallel(fit["n_jobs"], 0)
                _, n_wrong, _ = _evaluate(parallel, *res["best"], data, tau)
                if n_wrong <= _POLISH_GO_ON * n_ones:
                    # cut by its share while near: the same k with all the time
                    incumbent.memo[k] = res["best"]
                    again = k
                    continue
            floor = k
            continue
        failed = False
        took = time.monotonic() - t0
        info["rescued_by_refinement"] = rescued
    return False
