"""Benchmark of the LP engine (sklearn_rrank._projlp._lp) against scipy's linprog.

The workload is the min-error ProjLP step of the paper's medium synthetic size: a
500 x 300 matrix of planted rounding rank 60 (Section 5.2.1: factors uniform on
``[q - 1/2, q + 1/2]`` with ``q = sqrt(0.5 / k)``, ``B = round_0.5(L R^T)``),
``L = B A`` with an Achlioptas projection of width d = 60, and the L1-slack LP of
every column. It times

* the engine with 1 and with 2 jobs (threads, and loky processes), wall clock and
  CPU seconds;
* ``scipy.optimize.linprog(method="highs")`` on the same LPs (primal form), serial;

checks that both reach the same optima, prints a summary and saves ``--output``
(default ``benchmarks/results/candidates/lp_engine.json``). ``--shape M N K D`` and
``--seed`` change the workload (default 500 300 60 60, seed 0).

The "perturbed" case solves the same 300 LPs again for ``L`` with every entry
scaled by ``1 + 1e-3 z`` (``z`` standard normal, seed 1), as a round of ProjLP's
alternation would: the engine cold (every LP from nothing), the engine warm
(every LP from its own final basis of the first solve,
``sklearn_rrank._core._lp_engine.WarmStart``), both with 2 jobs, and ``linprog``;
warm with 1 and 2 jobs must agree. Timings on a shared machine are noisy: the
load average is recorded with the results.

Usage: ``python benchmarks/lp_engine.py [--repeat 2] [--linprog-columns 300]
[--shape 500 300 60 60] [--seed 0] [--output PATH]``
"""

import argparse
import os
import platform
import time
from collections import Counter

import numpy as np
from _common import add_output, write_json
from joblib import parallel_config
from scipy.optimize import linprog

from sklearn_rrank._core._lp_engine import WarmStart
from sklearn_rrank._projlp._lp import DEFAULT_EPS, _solve_public, solve_columns_l1
from sklearn_rrank._projlp._projlp import _projection_matrix

M, N, K, D, TAU = 500, 300, 60, 60, 0.5


def make_matrix(m, n, k, seed):
    """The paper's generator; sklearn_rrank.datasets' version if available."""
    try:
        from sklearn_rrank.datasets import make_rounding_rank_matrix
    except ImportError:  # pragma: no cover - fallback helper
        rng = np.random.default_rng(seed)
        q = np.sqrt(0.5 / k)
        L = rng.uniform(q - 0.5, q + 0.5, (m, k))
        R = rng.uniform(q - 0.5, q + 0.5, (n, k))
        return (L @ R.T >= 0.5).astype(np.float64), "local helper"
    X = make_rounding_rank_matrix(m, n, k, random_state=seed).astype(np.float64)
    return X, "sklearn_rrank.datasets.make_rounding_rank_matrix"


def linprog_column(L, x, tau, eps):
    """The L1-slack LP of one column in its primal form, solved by linprog/HiGHS."""
    s = np.where(x == 1, 1.0, -1.0)
    m, d = L.shape
    A_ub = np.hstack([-(s[:, None] * L), -np.eye(m)])
    b_ub = -(s * tau + eps)
    bounds = [(None, None)] * d + [(0, None)] * m
    res = linprog(
        np.r_[np.zeros(d), np.ones(m)],
        A_ub=A_ub,
        b_ub=b_ub,
        bounds=bounds,
        method="highs",
    )
    return res.fun, res.status


def timed(fn, repeat):
    """Best wall-clock and CPU seconds of ``repeat`` runs, and the last result."""
    walls, cpus, out = [], [], None
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return min(walls), min(cpus), out


def perturbed_case(L, X, repeat, linprog_columns, scale=1e-3):
    """Warm vs cold vs linprog on the LPs of ``X`` for a perturbed ``L``."""
    kw = dict(tau=TAU, eps=DEFAULT_EPS, nonnegative=False, feasibility=False)
    kw["deadline"] = None
    cols = np.arange(X.shape[1])
    first = WarmStart(X.shape[1])
    _solve_public(L, X, cols, warm=first, n_jobs=2, **kw)
    L2 = L * (1.0 + scale * np.random.default_rng(1).standard_normal(L.shape))

    def warm(n_jobs):
        start = WarmStart(X.shape[1])
        start.rows, start.bases = first.rows, first.bases.copy()
        return _solve_public(L2, X, cols, warm=start, n_jobs=n_jobs, **kw)

    wall_c, cpu_c, (Rc, sc, oc, _) = timed(
        lambda: _solve_public(L2, X, cols, n_jobs=2, **kw), repeat
    )
    wall_w, cpu_w, (Rw, sw, ow, _) = timed(lambda: warm(2), repeat)
    _, _, (Rw1, _, ow1, _) = timed(lambda: warm(1), 1)
    sel = np.arange(min(linprog_columns, X.shape[1]))
    w0, c0 = time.perf_counter(), time.process_time()
    ref = np.array([linprog_column(L2, X[:, j], TAU, DEFAULT_EPS)[0] for j in sel])
    wall_lp = (time.perf_counter() - w0) * X.shape[1] / sel.size
    cpu_lp = (time.process_time() - c0) * X.shape[1] / sel.size
    rel = np.abs(ow[sel] - ref) / np.maximum(1.0, np.abs(ref))
    return {
        "perturbation": f"L * (1 + {scale:g} z), z standard normal (seed 1)",
        "engine_cold_2_jobs": {"wall_s": wall_c, "cpu_s": cpu_c},
        "engine_warm_2_jobs": {"wall_s": wall_w, "cpu_s": cpu_w},
        "linprog_highs_serial": {"wall_s": wall_lp, "cpu_s": cpu_lp},
        "warm_over_cold_wall": wall_c / wall_w,
        "warm_over_linprog_wall": wall_lp / wall_w,
        "cold_over_linprog_wall": wall_lp / wall_c,
        "all_optimal_warm": bool(np.all(sw == "optimal")),
        "all_optimal_cold": bool(np.all(sc == "optimal")),
        "warm_1_vs_2_jobs_identical": bool(
            np.array_equal(Rw, Rw1) and np.array_equal(ow, ow1)
        ),
        "max_relative_objective_difference_warm_vs_linprog": float(rel.max()),
        "max_objective_difference_warm_vs_cold": float(np.abs(ow - oc).max()),
        "goal_engine_ge_10x_linprog_2_jobs": wall_lp / wall_w >= 10,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--linprog-columns", type=int, default=None)
    parser.add_argument(
        "--shape", type=int, nargs=4, default=[M, N, K, D], metavar=("M", "N", "K", "D")
    )
    parser.add_argument("--seed", type=int, default=0)
    add_output(parser, "lp_engine.json")
    args = parser.parse_args()
    m, n, k, d = args.shape
    if args.linprog_columns is None:
        args.linprog_columns = n

    X, generator = make_matrix(m, n, k, seed=args.seed)
    A = _projection_matrix(n, d, "sparse", False, seed=args.seed)
    L = X @ A
    load_before = os.getloadavg()

    wall1, cpu1, (R1, s1, o1) = timed(
        lambda: solve_columns_l1(L, X, tau=TAU, n_jobs=1), args.repeat
    )
    wall2, cpu2, (R2, s2, o2) = timed(
        lambda: solve_columns_l1(L, X, tau=TAU, n_jobs=2), args.repeat
    )
    identical = bool(np.array_equal(R1, R2) and np.array_equal(o1, o2))
    with parallel_config(backend="loky"):
        solve_columns_l1(L[:, :2], X[:, :4], n_jobs=2)  # start the workers
        wall_p, cpu_p, (R3, _, _) = timed(
            lambda: solve_columns_l1(L, X, tau=TAU, n_jobs=2), args.repeat
        )
    identical = identical and bool(np.array_equal(R1, R3))

    cols = np.arange(min(args.linprog_columns, n))
    w0, c0 = time.perf_counter(), time.process_time()
    ref = [linprog_column(L, X[:, j], TAU, DEFAULT_EPS) for j in cols]
    wall_lp = time.perf_counter() - w0
    cpu_lp = time.process_time() - c0
    ref_obj = np.array([r[0] for r in ref])
    scale = n / cols.size  # extrapolate if only a subset was timed
    rel = np.abs(o1[cols] - ref_obj) / np.maximum(1.0, np.abs(ref_obj))

    perturbed = perturbed_case(L, X, args.repeat, args.linprog_columns)

    results = {
        "workload": {
            "n_samples": m,
            "n_features": n,
            "planted_rank": k,
            "d": d,
            "tau": TAU,
            "eps": DEFAULT_EPS,
            "generator": generator,
            "projection": f"sparse Achlioptas (density 1/3), seed {args.seed}",
            "n_lps": n,
        },
        "engine_1_job": {"wall_s": wall1, "cpu_s": cpu1},
        "engine_2_jobs_threads": {"wall_s": wall2, "cpu_s": cpu2},
        "engine_2_jobs_loky": {"wall_s": wall_p, "cpu_s_parent_only": cpu_p},
        "speedup_1_to_2_jobs": wall1 / wall2,
        "results_identical_1_vs_2_jobs_threads_and_loky": identical,
        "engine_status_counts": dict(Counter(s1.tolist())),
        "linprog_highs_serial": {
            "columns_timed": int(cols.size),
            "wall_s": wall_lp * scale,
            "cpu_s": cpu_lp * scale,
            "all_optimal": bool(all(r[1] == 0 for r in ref)),
        },
        "speedup_vs_linprog": {
            "engine_1_job_wall": wall_lp * scale / wall1,
            "engine_1_job_cpu": cpu_lp * scale / cpu1,
            "engine_2_jobs_wall": wall_lp * scale / wall2,
        },
        "max_relative_objective_difference": float(rel.max()),
        "same_lps_perturbed": perturbed,
        "goals": {
            "engine_2_jobs_wall_le_2.5s": wall2 <= 2.5,
            "engine_ge_5x_faster_than_linprog_serial": wall_lp * scale / wall2 >= 5,
            "speedup_1_to_2_jobs_ge_1.8": wall1 / wall2 >= 1.8,
        },
        "machine": {
            "cpu_count": os.cpu_count(),
            "load_average_before": load_before,
            "load_average_after": os.getloadavg(),
            "python": platform.python_version(),
            "note": "shared machine; other jobs were running, timings are noisy",
        },
        "repeat": args.repeat,
    }
    print(f"LP engine benchmark: {n} L1-slack LPs, m={m}, d={d} ({generator})")
    print(f"  engine, 1 job          : {wall1:7.2f} s wall  {cpu1:7.2f} s CPU")
    print(f"  engine, 2 jobs (thr.)  : {wall2:7.2f} s wall  {cpu2:7.2f} s CPU")
    print(f"  engine, 2 jobs (loky)  : {wall_p:7.2f} s wall")
    print(
        f"  speed-up 1 -> 2 jobs   : {wall1 / wall2:7.2f} x  (identical: {identical})"
    )
    print(
        f"  linprog(highs), serial : {wall_lp * scale:7.2f} s wall  "
        f"{cpu_lp * scale:7.2f} s CPU  ({cols.size} columns timed)"
    )
    sp = results["speedup_vs_linprog"]
    print(
        f"  engine vs linprog      : {sp['engine_1_job_wall']:.2f} x (1 job, wall), "
        f"{sp['engine_1_job_cpu']:.2f} x (1 job, CPU), "
        f"{sp['engine_2_jobs_wall']:.2f} x (2 jobs, wall)"
    )
    print(f"  max rel. objective diff: {rel.max():.2e}")
    pc = perturbed
    print(
        "  perturbed L, 2 jobs    : "
        f"warm {pc['engine_warm_2_jobs']['wall_s']:.2f} s, "
        f"cold {pc['engine_cold_2_jobs']['wall_s']:.2f} s, "
        f"linprog {pc['linprog_highs_serial']['wall_s']:.2f} s wall: warm "
        f"{pc['warm_over_cold_wall']:.2f} x cold, "
        f"{pc['warm_over_linprog_wall']:.2f} x linprog "
        f"(1 vs 2 jobs identical: {pc['warm_1_vs_2_jobs_identical']})"
    )
    print(f"  load average before/after: {load_before} / {os.getloadavg()}")
    print(f"saved {write_json(args.output, results, indent=2)}")


if __name__ == "__main__":
    main()
