"""Reproduce the paper's synthetic study (Section 5.2; Figures 2 and 3, appendix).

Data: :func:`sklearn_rrank.datasets.make_rounding_rank_matrix` (the paper's
generator: ``B = round_0.5(L R^T)``, factor entries uniform on ``[q - 1/2, q + 1/2]``
or normal with variance 1, ``q = sqrt(mu / k)``; noise level ``p`` = flipped entries
/ ones of the noise-free matrix). One parameter is varied at a time, the others stay
at their defaults.

* **small** (n = 100 columns; m = 60..220 step 40, default 100; k = 5..30 step 5,
  default 10; mu = 0.1..0.7 step 0.1, default 0.5; p = 0.05..0.5 step 0.05, default
  0; 10 matrices per setting): rank estimates of ProjLP, Nuclear, R-SVD, L-PCA and
  Permutation, the spectral and VC lower bounds, and the planted k, with times.
  Every method runs alone through the public
  ``rounding_rank_bounds(X, methods=(method,), time_limit=...)``. Only certified
  upper bounds count as a method's rank estimate. Permutation may return a bound
  proven by its sign-change lemma without certified float64 factors
  (``certified=False``): both are recorded, the plots show the proven bound. The
  paper ran Permutation on square matrices only (not in the "vary m" panel); we also
  run it on the rectangular ones (our extension, drawn with open markers).
* **medium** (n = 300; m = 400..600 step 50, default 500; k = 40..100 step 10,
  default 60 (the paper gives no step for k); mu and p as above; 5 matrices):
  relative errors at k = planted k of ``RoundingRankFactorization`` with ProjLP
  (the package default, with alternating LP refinement), ProjLP-1
  (``method_params={"max_iter": 0}``: no alternating rounds; note that the estimator
  then re-solves the rows of ``L`` for the fitted ``R``, one more half-round, so
  this is *not* the paper's one-shot ProjLP, whose error is much higher), L-PCA,
  R-SVD and Asso, and T-SVD
  (``sklearn.decomposition.TruncatedSVD(k, algorithm="arpack")``, unrounded; squared
  Frobenius error / number of ones), with times. The planted factors' error (the
  flipped entries / ones) is recorded as a reference.

Both distributions (uniform, normal). The noise sweep also shows the default
``p = 0`` as its first point (the paper starts at 0.05). A setting that belongs to
several sweeps (the defaults) is generated and run once: every matrix has a seed
derived from its parameters and repetition index only.

Outputs in ``--output-dir`` (default ``benchmarks/results/candidates/``; ``PREFIX`` =
``synthetic`` or, with ``--quick``, ``synthetic_quick``):

* ``PREFIX_raw.csv``: one row per matrix and method; the run resumes from it (a cell
  is done when its key, the matrix parameters, repetition, method and the time
  limits, is in the file);
* ``PREFIX_raw.json``: the same rows as JSON;
* ``PREFIX_summary.csv``: mean, std and count per sweep, x value and method;
* ``PREFIX.json``: configuration, run time, the summary, the paper's qualitative
  claims evaluated on it, and every failure or timeout;
* ``PREFIX_{rank,rank_time,error,error_time}_{uniform,normal}.png``: one panel per
  varied parameter, mean with error bars of +- one standard deviation (twice the std
  wide, as in the paper).

Every method call runs in a forked child process that is killed after a hard
timeout (``--hard-timeout``; default 1.5 x the rank-search limit + 30 s for small
data, 2 x the L-PCA limit for medium data; recorded as ``timeout``, drawn as a cross
in the time plots and left out of the means); rank searches also get the soft
``time_limit`` (``--time-limit``), after which they return their best certified
bound with ``stopped_early``, and L-PCA fits get ``--fit-time-limit``. ProjLP fits
have no soft limit in the public API, only the hard one. The solver modules are
imported before forking so that no timed call pays for imports; Asso runs with one
job (its joblib process pool would be started afresh in every child), the other
methods with ``--n-jobs``. Methods run one after the other, so their timings do not
compete with each other, but they are wall-clock on a shared 2-core machine and are
noisy. Only the public API is used for the computations.

Usage::

    python benchmarks/synthetic.py --quick                 # reduced grid, < 10 min
    python benchmarks/synthetic.py --time-budget 3600      # full grid, resumable
    python benchmarks/synthetic.py --size small --distribution normal
    python benchmarks/synthetic.py --plot-only             # redo summary and plots
"""

import argparse
import csv
import json
import multiprocessing as mp
import os
import platform
import sys
import time
import traceback
import warnings
import zlib
from pathlib import Path

import numpy as np
from _common import CANDIDATES

#: the output folder (``--output-dir``)
RESULTS = CANDIDATES

RANK_METHODS = ["lpca", "projlp", "nuclear", "rsvd", "permutation", "spectral", "vc"]
UPPER_RANK_METHODS = ["lpca", "projlp", "nuclear", "rsvd", "permutation"]
ERROR_METHODS = ["lpca", "projlp", "projlp1", "rsvd", "asso", "tsvd", "planted"]
LABELS = {
    "lpca": "L-PCA",
    "projlp": "ProjLP",
    "projlp1": "ProjLP-1 (max_iter=0)",
    "nuclear": "Nuclear",
    "rsvd": "R-SVD",
    "permutation": "Permutation (proven bound)",
    "spectral": "spectral LB",
    "vc": "VC LB",
    "planted": "planted",
    "asso": "Asso",
    "tsvd": "T-SVD (unrounded)",
}
STYLE = {
    "lpca": dict(color="tab:red", marker="o"),
    "projlp": dict(color="tab:blue", marker="s"),
    "projlp1": dict(color="tab:cyan", marker="s", linestyle="--"),
    "nuclear": dict(color="tab:green", marker="^"),
    "rsvd": dict(color="tab:orange", marker="v"),
    "permutation": dict(color="tab:purple", marker="D"),
    "spectral": dict(color="tab:gray", marker="x", linestyle=":"),
    "vc": dict(color="black", marker="+", linestyle=":"),
    "planted": dict(color="black", marker="", linestyle="--"),
    "asso": dict(color="tab:brown", marker="P"),
    "tsvd": dict(color="tab:olive", marker="*"),
}

SIZES = {
    "small": dict(
        n=100,
        default=dict(m=100, k=10, mean=0.5, noise=0.0),
        full=dict(
            m=[60, 100, 140, 180, 220],
            k=[5, 10, 15, 20, 25, 30],
            mean=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7],
            noise=[0.0] + [round(0.05 * i, 2) for i in range(1, 11)],
        ),
        quick=dict(
            m=[60, 100, 140],
            k=[5, 10, 30],
            mean=[0.1, 0.5, 0.7],
            noise=[0.0, 0.25, 0.5],
        ),
        n_matrices=dict(full=10, quick=2),
    ),
    "medium": dict(
        n=300,
        default=dict(m=500, k=60, mean=0.5, noise=0.0),
        full=dict(
            m=[400, 450, 500, 550, 600],
            k=[40, 50, 60, 70, 80, 90, 100],
            mean=[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7],
            noise=[0.0] + [round(0.05 * i, 2) for i in range(1, 11)],
        ),
        quick=dict(
            m=[400, 500],
            k=[40, 60],
            mean=[0.1, 0.5],
            noise=[0.0, 0.1],
        ),
        n_matrices=dict(full=5, quick=1),
    ),
}
PARAMS = ["m", "k", "mean", "noise"]
PARAM_LABEL = {
    "m": "rows m",
    "k": "planted rank k",
    "mean": "mean mu",
    "noise": "noise p",
}

FIELDS = [
    "size",
    "distribution",
    "m",
    "n",
    "k",
    "mean",
    "noise",
    "rep",
    "seed",
    "method",
    "time_limit",
    "status",
    "density",
    "kind",
    "bound",
    "certified",
    "estimate",
    "stopped_early",
    "rel_error",
    "n_errors",
    "seconds",
    "message",
]


# --------------------------------------------------------------------------------------
# grid
# --------------------------------------------------------------------------------------


def settings(size, mode):
    """Sweeps of one size: list of (experiment, x, params dict)."""
    spec = SIZES[size]
    out = []
    for p in PARAMS:
        for v in spec[mode][p]:
            params = dict(spec["default"], n=spec["n"])
            params[p] = v
            out.append((p, v, params))
    return out


def distinct_cells(size, mode):
    """The distinct parameter settings (shared defaults once), in sweep order."""
    seen, out = set(), []
    for _, _, params in settings(size, mode):
        key = cell_params_key(params)
        if key not in seen:
            seen.add(key)
            out.append(params)
    return out


def cell_params_key(p):
    return (
        int(p["m"]),
        int(p["n"]),
        int(p["k"]),
        f"{p['mean']:.2f}",
        f"{p['noise']:.2f}",
    )


def seed_of(size, distribution, params, rep):
    """Deterministic seed per matrix: independent of run order and resumption."""
    m, n, k, mean, noise = cell_params_key(params)
    text = f"{size}|{distribution}|{m}|{n}|{k}|{mean}|{noise}|{rep}"
    return zlib.crc32(text.encode()) & 0x7FFFFFFF


def row_key(row):
    return (
        row["size"],
        row["distribution"],
        int(row["m"]),
        int(row["n"]),
        int(row["k"]),
        f"{float(row['mean']):.2f}",
        f"{float(row['noise']):.2f}",
        int(row["rep"]),
        row["method"],
        str(row["time_limit"]),
    )


# --------------------------------------------------------------------------------------
# one method on one matrix (runs in a forked child)
# --------------------------------------------------------------------------------------


def _rank_call(X, method, time_limit, seed, n_jobs):
    from sklearn_rrank import rounding_rank_bounds

    b = rounding_rank_bounds(
        X,
        methods=(method,),
        time_limit=time_limit,
        n_jobs=n_jobs,
        random_state=seed,
    )
    row = b.report[0]
    bound = row["bound"]
    certified = row["certified"]
    if row["kind"] == "lower" or method in ("spectral", "vc"):
        estimate = bound
        kind = "lower"
    else:
        kind = "upper"
        proven = certified or bool(row.get("proof"))
        estimate = bound if (bound is not None and proven) else None
    return {
        "kind": kind,
        "bound": bound,
        "certified": certified,
        "estimate": estimate,
        "stopped_early": bool(row["stopped_early"]),
        "seconds": float(row["seconds"]),
        "message": str(row.get("message", ""))[:200],
    }


def _error_call(X, method, k, seed, n_jobs, fit_time_limit):
    from sklearn.exceptions import ConvergenceWarning

    from sklearn_rrank import RoundingRankFactorization

    n_ones = int(X.sum())
    if method == "tsvd":
        from sklearn.decomposition import TruncatedSVD

        t0 = time.perf_counter()
        svd = TruncatedSVD(k, algorithm="arpack", random_state=seed)
        A = svd.inverse_transform(svd.fit_transform(X.astype(np.float64)))
        err = float(((X - A) ** 2).sum())
        return {
            "kind": "error",
            "rel_error": err / n_ones,
            "n_errors": None,
            "seconds": time.perf_counter() - t0,
            "message": "squared Frobenius error / ones (no rounding)",
        }
    # Asso parallelises with joblib's process pool, which a fresh child process
    # would have to start for every call: run it with one job
    n_jobs = 1 if method == "asso" else n_jobs
    params = {"method": method, "random_state": seed, "n_jobs": n_jobs}
    method_params = {}
    if method == "projlp1":
        params["method"] = "projlp"
        method_params["max_iter"] = 0
    if method == "lpca":
        # the paper's L-PCA has a column bias; the recorded results used it (the
        # estimator's default is now "global")
        method_params["fit_bias"] = True
    if method == "lpca" and fit_time_limit is not None:
        method_params["time_limit"] = fit_time_limit
    if method_params:
        params["method_params"] = method_params
    est = RoundingRankFactorization(k, **params)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConvergenceWarning)
        est.fit(X)
    seconds = time.perf_counter() - t0
    msgs = [
        str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)
    ]
    info = getattr(est, "solver_info_", None) or {}
    stop = info.get("status", info.get("stop_reason", ""))
    message = f"stop: {stop}" if stop else ""
    if msgs:
        message += " | ConvergenceWarning: " + msgs[0]
    return {
        "kind": "error",
        "rel_error": float(est.relative_error_),
        "n_errors": int(est.reconstruction_err_),
        "certified": bool(est.certified_),
        "seconds": seconds,
        "message": message[:200],
    }


def _child(conn, fn, args):
    try:
        out = ("ok", fn(*args))
    except BaseException as exc:  # report every failure to the parent
        out = (
            "error",
            f"{type(exc).__name__}: {exc} | {traceback.format_exc()[-400:]}",
        )
    try:
        conn.send(out)
    finally:
        conn.close()


def run_guarded(fn, args, timeout, guard=True):
    """Run ``fn(*args)`` in a forked child; kill it after ``timeout`` seconds.

    Returns ``(status, value, wall_seconds)`` with status "ok", "error" or "timeout".
    """
    t0 = time.perf_counter()
    if not guard:
        try:
            return "ok", fn(*args), time.perf_counter() - t0
        except Exception as exc:
            return "error", f"{type(exc).__name__}: {exc}", time.perf_counter() - t0
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, fn, args), daemon=True)
    proc.start()
    send.close()
    if recv.poll(timeout):
        try:
            status, value = recv.recv()
        except EOFError:
            status, value = "error", f"worker died (exit code {proc.exitcode})"
    else:
        status, value = "timeout", f"killed after the hard timeout of {timeout:.0f} s"
        proc.kill()
    proc.join()
    recv.close()
    return status, value, time.perf_counter() - t0


# --------------------------------------------------------------------------------------
# running the grid
# --------------------------------------------------------------------------------------


def load_raw(path):
    if not path.exists():
        return []
    with path.open() as f:
        return list(csv.DictReader(f))


def run_matrix(size, distribution, params, rep, methods, args, done, writer, f):
    from sklearn_rrank.datasets import make_rounding_rank_matrix

    seed = seed_of(size, distribution, params, rep)
    time_limit = args.time_limit if size == "small" else args.fit_time_limit
    tl_str = "none" if time_limit is None else f"{time_limit:g}"
    base = {
        "size": size,
        "distribution": distribution,
        "m": params["m"],
        "n": params["n"],
        "k": params["k"],
        "mean": f"{params['mean']:.2f}",
        "noise": f"{params['noise']:.2f}",
        "rep": rep,
        "seed": seed,
        "time_limit": tl_str,
    }
    todo = [m for m in methods if row_key({**base, "method": m}) not in done]
    if not todo:
        return []
    X, L, R, X_clean = make_rounding_rank_matrix(
        params["m"],
        params["n"],
        params["k"],
        distribution=distribution,
        mean=params["mean"],
        noise=params["noise"],
        random_state=seed,
        return_factors=True,
    )
    density = float(X.mean())
    rows = []
    for method in todo:
        row = dict.fromkeys(FIELDS, "")
        row.update(base, method=method, density=f"{density:.4f}")
        if method == "planted":
            n_err = int(np.count_nonzero(X != X_clean))
            row.update(
                status="ok",
                kind="error",
                rel_error=n_err / max(int(X.sum()), 1),
                n_errors=n_err,
                seconds=0.0,
                message="the generating factors (their errors are the noise flips)",
            )
        else:
            if size == "small":
                fn = _rank_call
                fargs = (X, method, time_limit, seed, args.n_jobs)
                hard = args.hard_timeout or (1.5 * (time_limit or 600) + 30)
            else:
                fn = _error_call
                fargs = (X, method, params["k"], seed, args.n_jobs, time_limit)
                hard = args.hard_timeout or 2 * (time_limit or 450)
            status, value, wall = run_guarded(fn, fargs, hard, guard=not args.no_guard)
            row["status"] = status
            if status == "ok":
                row.update({k: v for k, v in value.items() if k in FIELDS})
            else:
                row["message"] = str(value)[:300]
                row["seconds"] = wall
                row["kind"] = "lower" if method in ("spectral", "vc") else ""
        for key in ("seconds", "rel_error"):
            if isinstance(row[key], float):
                row[key] = f"{row[key]:.6g}"
        row = {k: ("" if v is None else v) for k, v in row.items()}
        writer.writerow(row)
        f.flush()
        rows.append(row)
    return rows


def describe(rows):
    parts = []
    for r in rows:
        if r["status"] != "ok":
            parts.append(f"{r['method']} {r['status'].upper()}")
        elif r["kind"] == "error":
            err, sec = float(r["rel_error"]), float(r["seconds"])
            parts.append(f"{r['method']} {err:.4f} ({sec:.1f}s)")
        else:
            est = r["estimate"] if r["estimate"] != "" else "-"
            flag = "" if r["certified"] in ("True", True, "") else "*"
            early = "!" if r["stopped_early"] in ("True", True) else ""
            parts.append(
                f"{r['method']} {est}{flag}{early} ({float(r['seconds']):.1f}s)"
            )
    return ", ".join(parts)


# --------------------------------------------------------------------------------------
# summary and checks
# --------------------------------------------------------------------------------------


def typed(row):
    """A raw CSV row with numbers, booleans and None instead of strings."""
    out = {}
    for key, v in row.items():
        if v in ("", None):
            out[key] = None
        elif v in ("True", "False"):
            out[key] = v == "True"
        elif key in ("m", "n", "k", "rep", "seed", "bound", "estimate", "n_errors"):
            out[key] = int(float(v))
        elif key in ("mean", "noise", "density", "rel_error", "seconds"):
            out[key] = float(v)
        else:
            out[key] = v
    return out


def _num(v):
    if v in ("", None):
        return None
    return float(v)


def summarise(raw, sizes, distributions, mode, n_mat, time_limits):
    """Mean/std per (size, distribution, experiment, x, method) over current cells."""
    index = {}
    for r in raw:
        index.setdefault(row_key(r), []).append(r)
    summary = []
    for size in sizes:
        methods = RANK_METHODS if size == "small" else ERROR_METHODS
        tl = time_limits[size]
        for dist in distributions:
            for exp, x, params in settings(size, mode):
                ckey = (size, dist) + cell_params_key(params)
                for method in methods:
                    rows = []
                    for rep in range(n_mat[size]):
                        rows += index.get(ckey + (rep, method, tl), [])
                    if not rows:
                        continue
                    value_key = "estimate" if size == "small" else "rel_error"
                    vals = [_num(r[value_key]) for r in rows if r["status"] == "ok"]
                    vals = np.array([v for v in vals if v is not None])
                    # times of finished runs only; killed runs are reported apart
                    secs = np.array(
                        [float(r["seconds"]) for r in rows if r["status"] == "ok"]
                    )
                    killed = [float(r["seconds"]) for r in rows if r["status"] != "ok"]
                    n_cert = sum(r["certified"] == "True" for r in rows)
                    summary.append(
                        {
                            "size": size,
                            "distribution": dist,
                            "experiment": exp,
                            "x": x,
                            "m": params["m"],
                            "n": params["n"],
                            "k": params["k"],
                            "mean": params["mean"],
                            "noise": params["noise"],
                            "method": method,
                            "n_runs": len(rows),
                            "n_values": int(vals.size),
                            "n_certified": n_cert,
                            "n_stopped_early": sum(
                                r["stopped_early"] == "True" for r in rows
                            ),
                            "n_failed": sum(r["status"] != "ok" for r in rows),
                            "value_mean": float(vals.mean()) if vals.size else None,
                            "value_std": float(vals.std(ddof=1))
                            if vals.size > 1
                            else 0.0,
                            "seconds_mean": float(secs.mean()) if secs.size else None,
                            "seconds_std": float(secs.std(ddof=1))
                            if secs.size > 1
                            else 0.0,
                            "failed_seconds_max": max(killed) if killed else None,
                            "density_mean": float(
                                np.mean([float(r["density"]) for r in rows])
                            ),
                        }
                    )
    return summary


def _cells(summary, size, dist):
    """{(m, n, k, mean, noise): {method: summary row}} (distinct settings)."""
    out = {}
    for s in summary:
        if s["size"] == size and s["distribution"] == dist:
            key = (s["m"], s["n"], s["k"], s["mean"], s["noise"])
            out.setdefault(key, {})[s["method"]] = s
    return out


def _means(cells, value_methods, time_methods):
    """The cells where all of ``value_methods`` have a value, the mean value per
    method over them, and the mean seconds per method over the cells where it ran."""
    complete = {
        key: c
        for key, c in cells.items()
        if all(c.get(m, {}).get("value_mean") is not None for m in value_methods)
    }
    values = {
        m: float(np.mean([c[m]["value_mean"] for c in complete.values()]))
        for m in value_methods
        if complete
    }
    seconds = {
        m: float(
            np.mean(
                [
                    c[m]["seconds_mean"]
                    for c in cells.values()
                    if c.get(m, {}).get("seconds_mean") is not None
                ]
            )
        )
        for m in time_methods
        if any(m in c for c in cells.values())
    }
    return complete, values, seconds


def checks(summary, sizes, distributions):
    """The paper's qualitative claims, evaluated per distribution."""
    out = {}
    for dist in distributions:
        res = {}
        if "small" in sizes:
            cells = _cells(summary, "small", dist)
            upper = [m for m in UPPER_RANK_METHODS]
            complete, mean_rank, mean_sec = _means(cells, upper, RANK_METHODS)
            best, second, worst = (
                {m: 0 for m in upper},
                {m: 0 for m in upper},
                {m: 0 for m in upper},
            )
            strict = {m: 0 for m in upper}
            lpca_le_projlp = 0
            perm_worse = 0
            square = 0
            for c in complete.values():
                order = sorted(upper, key=lambda m: c[m]["value_mean"])
                lo = c[order[0]]["value_mean"]
                for m in upper:
                    if c[m]["value_mean"] == lo:
                        best[m] += 1
                if c[order[1]]["value_mean"] > lo:
                    strict[order[0]] += 1
                hi = c[order[-1]]["value_mean"]
                for m in upper:
                    if c[m]["value_mean"] == hi:
                        worst[m] += 1
                ranks = sorted({c[m]["value_mean"] for m in upper})
                if len(ranks) > 1:
                    for m in upper:
                        if c[m]["value_mean"] == ranks[1]:
                            second[m] += 1
                lpca_le_projlp += c["lpca"]["value_mean"] <= c["projlp"]["value_mean"]
                if c["lpca"]["m"] == c["lpca"]["n"]:
                    square += 1
                    perm_worse += c["permutation"]["value_mean"] > max(
                        c["lpca"]["value_mean"], c["projlp"]["value_mean"]
                    )
            spectral = [
                c["spectral"]["value_mean"]
                for c in cells.values()
                if c.get("spectral", {}).get("value_mean") is not None
            ]
            planted_gap = [
                c["lpca"]["value_mean"] - key[2]
                for key, c in complete.items()
                if key[4] == 0.0
            ]
            res["rank"] = {
                "n_settings_all_methods": len(complete),
                "mean_rank_estimate": mean_rank,
                "mean_seconds": mean_sec,
                "settings_where_best (ties count for all)": best,
                "settings_where_strictly_best": strict,
                "settings_where_second_best": second,
                "rank_searches_stopped_by_time_limit": {
                    m: sum(c[m]["n_stopped_early"] for c in cells.values() if m in c)
                    for m in RANK_METHODS
                },
                "settings_where_worst": worst,
                "lpca_at_most_projlp_settings": int(lpca_le_projlp),
                "permutation_worse_than_lpca_and_projlp_square_settings": (
                    f"{perm_worse}/{square}"
                ),
                "spectral_lower_bound_mean_max": max(spectral) if spectral else None,
                "spectral_lower_bound_below_3_fraction": float(
                    np.mean(np.array(spectral) < 3)
                )
                if spectral
                else None,
                "lpca_minus_planted_k_noise_free (negative: below planted)": {
                    "min": float(min(planted_gap)) if planted_gap else None,
                    "max": float(max(planted_gap)) if planted_gap else None,
                },
                "claim_lpca_best": bool(complete) and best["lpca"] == len(complete),
                "claim_projlp_second": bool(complete)
                and sorted(mean_rank, key=mean_rank.get)[:2] == ["lpca", "projlp"],
                "claim_rsvd_worst_mean": bool(complete)
                and max((m for m in mean_rank if m != "permutation"), key=mean_rank.get)
                == "rsvd",
                "claim_rsvd_fastest_upper_method": bool(mean_sec)
                and min(
                    (m for m in mean_sec if m in UPPER_RANK_METHODS), key=mean_sec.get
                )
                == "rsvd",
                "claim_permutation_not_competitive": bool(square)
                and perm_worse == square,
            }
        if "medium" in sizes:
            cells = _cells(summary, "medium", dist)
            meths = [m for m in ERROR_METHODS if m != "planted"]
            complete, mean_err, mean_sec = _means(cells, meths, meths)
            best = {m: 0 for m in meths}
            strict = {m: 0 for m in meths}
            for c in complete.values():
                lo = min(c[m]["value_mean"] for m in meths)
                winners = [m for m in meths if c[m]["value_mean"] <= lo + 1e-12]
                for m in winners:
                    best[m] += 1
                if len(winners) == 1:
                    strict[winners[0]] += 1
            # settings where some method failed: compare the methods that ran
            lpca_best_all = sum(
                c["lpca"]["value_mean"]
                <= min(
                    c[m]["value_mean"]
                    for m in meths
                    if c.get(m, {}).get("value_mean") is not None
                )
                + 1e-12
                for c in cells.values()
                if c.get("lpca", {}).get("value_mean") is not None
            )
            res["error"] = {
                "n_settings_all_methods": len(complete),
                "mean_relative_error": mean_err,
                "mean_seconds": mean_sec,
                "settings_where_best (ties count for all)": best,
                "settings_where_strictly_best": strict,
                "lpca_best_among_methods_that_finished": (
                    f"{lpca_best_all}/{len(cells)}"
                ),
                "claim_lpca_best_error": bool(complete)
                and best["lpca"] == len(complete),
                "claim_asso_much_worse": bool(mean_err)
                and mean_err["asso"]
                > 2 * max(v for m, v in mean_err.items() if m != "asso"),
                "rsvd_faster_than_lpca_and_projlp": bool(mean_sec)
                and mean_sec.get("rsvd", np.inf)
                < min(mean_sec.get("lpca", 0), mean_sec.get("projlp", 0)),
            }
        out[dist] = res
    return out


# --------------------------------------------------------------------------------------
# plots
# --------------------------------------------------------------------------------------


def plot(summary, size, dist, what, path, mode):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    rows = [s for s in summary if s["size"] == size and s["distribution"] == dist]
    if not rows:
        return False
    if size == "small":
        methods = RANK_METHODS
        ylabel = "rank estimate" if what == "value" else "seconds"
    else:
        methods = [m for m in ERROR_METHODS if m != "asso"]
        if what != "value":
            methods = [m for m in ERROR_METHODS if m != "planted"]
        ylabel = "relative error" if what == "value" else "seconds"
    fig, axes = plt.subplots(1, 4, figsize=(17, 4.2))
    handles = {}
    for ax, exp in zip(axes, PARAMS, strict=True):
        name = ("Rank" if size == "small" else "Error") if what == "value" else "Time"
        ax.set_title(f"{name}, vary {exp}")
        for method in methods:
            sel = [s for s in rows if s["experiment"] == exp and s["method"] == method]
            failed = [s for s in sel if s["n_failed"]]
            if what != "value" and failed:
                ax.plot(
                    [s["x"] for s in failed],
                    [s["failed_seconds_max"] for s in failed],
                    linestyle="",
                    marker="x",
                    ms=9,
                    mew=2,
                    color=STYLE[method]["color"],
                )
                handles["killed"] = Line2D(
                    [],
                    [],
                    linestyle="",
                    marker="x",
                    ms=9,
                    mew=2,
                    color="black",
                    label="killed at the hard timeout (method's color)",
                )
            key = "value_mean" if what == "value" else "seconds_mean"
            sel = [s for s in sel if s[key] is not None]
            if not sel:
                continue
            x = np.array([s["x"] for s in sel], dtype=float)
            if what == "value":
                y = np.array([s["value_mean"] for s in sel])
                e = np.array([s["value_std"] for s in sel])
            else:
                y = np.array([s["seconds_mean"] for s in sel])
                e = np.array([s["seconds_std"] for s in sel])
            st = dict(STYLE[method])
            st.setdefault("linestyle", "-")
            lower = np.minimum(e, 0.95 * y) if what != "value" else e
            kw = dict(ms=4, capsize=2, lw=1.2, label=LABELS[method])
            if method == "permutation" and exp == "m":
                # rectangular matrices: our extension, open markers
                square = np.array([s["m"] == s["n"] for s in sel])
                h = ax.errorbar(
                    x, y, yerr=[lower, e], mfc="none", **st, **{**kw, "label": None}
                )
                handles["permutation_rect"] = Line2D(
                    [],
                    [],
                    mfc="none",
                    **{k: v for k, v in st.items()},
                    label="Permutation, rectangular (our extension)",
                )
                if square.any():
                    ax.plot(
                        x[square],
                        y[square],
                        linestyle="",
                        **{k: v for k, v in st.items() if k != "linestyle"},
                    )
                continue
            h = ax.errorbar(x, y, yerr=[lower, e], **st, **kw)
            handles.setdefault(method, h)
        if size == "small" and what == "value":
            sel = [
                s
                for s in rows
                if s["experiment"] == exp and s["method"] == "lpca" and s["noise"] == 0
            ]
            if sel:
                xs = [s["x"] for s in sel]
                ks = [s["k"] for s in sel]
                (h,) = ax.plot(xs, ks, "k--", lw=1, label="planted k (noise-free)")
                handles["planted_k"] = h
        grid = SIZES[size][mode][exp]
        pad = 0.05 * (max(grid) - min(grid))
        ax.set_xlim(min(grid) - pad, max(grid) + pad)
        ax.set_xlabel(PARAM_LABEL[exp])
        ax.set_ylabel(ylabel)
        if what != "value":
            ax.set_yscale("log")
        ax.grid(alpha=0.3)
    order = [m for m in methods if m in handles] + [
        m for m in ("permutation_rect", "planted_k", "killed") if m in handles
    ]
    fig.legend(
        [handles[m] for m in order],
        [handles[m].get_label() for m in order],
        loc="upper center",
        ncol=min(len(order), 5),
        fontsize=9,
        frameon=False,
    )
    n_mat = max(s["n_runs"] for s in rows)
    kind = {
        ("small", "value"): "Estimated rounding rank (certified upper bounds; "
        "Permutation: bound proven by the sign-change lemma)",
        ("small", "seconds"): "Running time of the rank estimates",
        ("medium", "value"): "Relative reconstruction error at k = planted k "
        "(Asso omitted, see JSON)",
        ("medium", "seconds"): "Running time of the rank-k decompositions",
    }[(size, what)]
    fig.text(
        0.5,
        0.005,
        f"{kind}; {size} data, {dist} factors, {mode} grid, up to {n_mat} matrices "
        "per point, error bars +- 1 std",
        ha="center",
        fontsize=9,
    )
    fig.tight_layout(rect=(0, 0.04, 1, 0.86))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# --------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------


def preload():
    """Import every solver module before forking, so no timed call pays for imports."""
    import scipy.sparse.linalg  # noqa: F401
    import sklearn.decomposition  # noqa: F401

    import sklearn_rrank  # noqa: F401
    from sklearn_rrank import (  # noqa: F401
        _lower,
        _lpca,
        _nested,
        _portfolio,
        _projlp,
        _search,
        _upper,
    )
    from sklearn_rrank.datasets import make_rounding_rank_matrix  # noqa: F401


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="reduced grid (<10 min)")
    parser.add_argument("--size", choices=["small", "medium", "both"], default="both")
    parser.add_argument(
        "--distribution", choices=["uniform", "normal", "both"], default=None
    )
    parser.add_argument("--n-matrices", type=int, default=None)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument(
        "--time-limit",
        type=float,
        default=None,
        help="soft time limit (s) of each rank search (default 60; quick 8)",
    )
    parser.add_argument(
        "--fit-time-limit",
        type=float,
        default=None,
        help="soft limit (s) of L-PCA fits on medium data (default 450; quick 20)",
    )
    parser.add_argument(
        "--hard-timeout",
        type=float,
        default=None,
        help="kill a method call after this many seconds (default: small "
        "1.5 * time limit + 30, medium 2 * fit time limit)",
    )
    parser.add_argument(
        "--time-budget",
        type=float,
        default=None,
        help="stop starting new matrices after this many seconds (rerun to go on)",
    )
    parser.add_argument("--no-guard", action="store_true", help="run in-process")
    parser.add_argument("--plot-only", action="store_true")
    parser.add_argument("--fresh", action="store_true", help="discard the raw CSV")
    parser.add_argument("--output-dir", type=Path, default=CANDIDATES)
    args = parser.parse_args()
    global RESULTS
    RESULTS = args.output_dir

    mode = "quick" if args.quick else "full"
    prefix = "synthetic_quick" if args.quick else "synthetic"
    if args.time_limit is None:
        args.time_limit = 8.0 if args.quick else 60.0
    if args.fit_time_limit is None:
        args.fit_time_limit = 20.0 if args.quick else 450.0
    sizes = ["small", "medium"] if args.size == "both" else [args.size]
    dist_arg = args.distribution or ("uniform" if args.quick else "both")
    distributions = ["uniform", "normal"] if dist_arg == "both" else [dist_arg]
    n_mat = {
        s: args.n_matrices or SIZES[s]["n_matrices"][mode] for s in ("small", "medium")
    }
    time_limits = {
        "small": f"{args.time_limit:g}",
        "medium": f"{args.fit_time_limit:g}",
    }

    RESULTS.mkdir(parents=True, exist_ok=True)
    preload()
    raw_path = RESULTS / f"{prefix}_raw.csv"
    if args.fresh and raw_path.exists():
        raw_path.unlink()
    raw = load_raw(raw_path)
    done = {row_key(r) for r in raw}
    start = time.perf_counter()
    complete = True
    n_new = 0
    if not args.plot_only:
        new_file = not raw_path.exists()
        with raw_path.open("a", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=FIELDS)
            if new_file:
                writer.writeheader()
            for size in sizes:
                methods = RANK_METHODS if size == "small" else ERROR_METHODS
                for dist in distributions:
                    for params in distinct_cells(size, mode):
                        for rep in range(n_mat[size]):
                            if (
                                args.time_budget
                                and time.perf_counter() - start > args.time_budget
                            ):
                                complete = False
                                break
                            rows = run_matrix(
                                size, dist, params, rep, methods, args, done, writer, f
                            )
                            if rows:
                                n_new += 1
                                print(
                                    f"[{time.perf_counter() - start:7.1f}s] {size} "
                                    f"{dist} m={params['m']} k={params['k']} "
                                    f"mu={params['mean']} p={params['noise']} "
                                    f"rep={rep}: {describe(rows)}",
                                    flush=True,
                                )
                        if not complete:
                            break
                    if not complete:
                        break
                if not complete:
                    break
    elapsed = time.perf_counter() - start

    raw = load_raw(raw_path)
    summary = summarise(raw, sizes, distributions, mode, n_mat, time_limits)
    if summary:
        with (RESULTS / f"{prefix}_summary.csv").open("w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(summary[0]))
            writer.writeheader()
            writer.writerows(summary)
    (RESULTS / f"{prefix}_raw.json").write_text(
        json.dumps([typed(r) for r in raw], indent=1)
    )
    pngs = []
    for size in sizes:
        for dist in distributions:
            for what in ("value", "seconds"):
                name = {"small": "rank", "medium": "error"}[size]
                if what == "seconds":
                    name += "_time"
                path = RESULTS / f"{prefix}_{name}_{dist}.png"
                if plot(summary, size, dist, what, path, mode):
                    pngs.append(path.name)
    planned = {
        s: len(distinct_cells(s, mode)) * n_mat[s] * len(distributions) for s in sizes
    }
    current_keys = set()
    for size in sizes:
        for dist in distributions:
            for params in distinct_cells(size, mode):
                for rep in range(n_mat[size]):
                    current_keys.add((size, dist) + cell_params_key(params) + (rep,))
    cur = [r for r in raw if row_key(r)[:8] in current_keys]
    failures = [
        {
            k: r[k]
            for k in (
                "size",
                "distribution",
                "m",
                "k",
                "mean",
                "noise",
                "rep",
                "method",
                "status",
                "message",
            )
        }
        for r in cur
        if r["status"] != "ok"
    ]
    uncertified = [
        {
            k: r[k]
            for k in (
                "size",
                "distribution",
                "m",
                "k",
                "mean",
                "noise",
                "rep",
                "method",
                "bound",
                "certified",
                "message",
            )
        }
        for r in cur
        if r["kind"] == "upper"
        and r["certified"] == "False"
        and r["method"] != "permutation"
    ]
    asso = [
        s["value_mean"]
        for s in summary
        if s["method"] == "asso" and s["value_mean"] is not None
    ]
    json_path = RESULTS / f"{prefix}.json"
    history = []
    if json_path.exists() and not args.fresh:
        try:
            history = json.loads(json_path.read_text()).get("invocations", [])
        except (json.JSONDecodeError, AttributeError):
            history = []
    if not args.plot_only:
        history.append(
            {
                "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
                "seconds": round(elapsed, 1),
                "matrices_computed": n_new,
                "argv": " ".join(sys.argv[1:]),
            }
        )
    out = {
        "setting": mode,
        "sizes": sizes,
        "distributions": distributions,
        "grid": {s: SIZES[s][mode] for s in sizes},
        "defaults": {s: dict(SIZES[s]["default"], n=SIZES[s]["n"]) for s in sizes},
        "n_matrices_per_setting": n_mat,
        "matrices_done": {
            s: len({row_key(r)[:8] for r in cur if r["size"] == s}) for s in sizes
        },
        "matrices_planned": planned,
        "complete": all(
            len({row_key(r)[:8] for r in cur if r["size"] == s}) == planned[s]
            for s in sizes
        ),
        "time_limit_rank_search_s": args.time_limit,
        "time_limit_lpca_fit_s": args.fit_time_limit,
        "hard_timeout_s": args.hard_timeout,
        "n_jobs": args.n_jobs,
        "invocations": history,
        "sum_of_method_seconds": round(sum(float(r["seconds"]) for r in cur), 1),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared, noisy)",
        "checks": checks(summary, sizes, distributions),
        "asso_mean_relative_error (omitted from the error plots)": float(np.mean(asso))
        if asso
        else None,
        "failures_and_timeouts": failures,
        "uncertified_non_permutation_bounds": uncertified,
        "pngs": pngs,
        "summary": summary,
    }
    json_path.write_text(json.dumps(out, indent=2, default=str))
    print(
        json.dumps(
            {k: out[k] for k in out if k not in ("summary", "grid")},
            indent=2,
            default=str,
        )
    )


if __name__ == "__main__":
    main()
