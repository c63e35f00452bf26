"""Seconds per L-PCA sweep on Abstracts beside the sweep's unavoidable work (issue 13).

For k = 10, 50, 100 and both compute dtypes, times the sweeps of both solvers on
the paper's largest data set, Abstracts (12841 x 4894, 0.9% ones): L-BFGS (one
iteration: normally one evaluation of the joint objective and its gradient) at
every k, and damped alternating Newton (one sweep: a Newton step on every row of
U, then of [V, mu]) where ``lpca_fit(solver="auto")`` picks it (up to 24 latent
factors). A sweep's time is the median of the steady-state sweeps (the first is
left out: it holds L-BFGS's initial line search; the start and end evaluations of
the fit are not sweeps). Beside it, in the same run and dtype, the unavoidable work
of one sweep timed with plain numpy on the same shapes: the two m x n x k products
``U @ V.T`` and ``G.T @ U`` and one element-wise pass (``tanh``) over the m x n
entries. Goal (issue 13): a sweep within 2x of it. A joint gradient needs a third
product (``G @ V``), a Newton sweep needs the p x p curvature sums of every row
and column, so neither can reach 1x. Peak memory (``resource.getrusage``): at most
4 GB.

Usage::

    python benchmarks/lpca_sweep.py [--ks 10 50 100] [--sweeps 6] [--n-jobs 2]

Prints a table and writes ``benchmarks/results/lpca_sweep.json``. Wall-clock times
on a shared 2-core machine are noisy.
"""

import argparse
import json
import platform
import resource
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from sklearn_rrank import _lpca
from sklearn_rrank._validation import check_binary_matrix
from sklearn_rrank.datasets import load_abstracts

RESULTS = Path(__file__).resolve().parent / "results" / "lpca_sweep.json"


def peak_gb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def unavoidable(m, n, k, dtype, n_jobs, repeats=2):
    """Best-of seconds of U @ V.T, G.T @ U and one tanh pass on the m x n entries."""
    rng = np.random.default_rng(0)
    U = rng.standard_normal((m, k)).astype(dtype)
    V = rng.standard_normal((n, k)).astype(dtype)
    theta = np.empty((m, n), dtype=dtype)
    best = {"product": np.inf, "product_t": np.inf, "elementwise": np.inf}
    with threadpool_limits(limits=n_jobs, user_api="blas"):
        for _ in range(repeats):
            t0 = time.perf_counter()
            np.matmul(U, V.T, out=theta)
            t1 = time.perf_counter()
            theta.T @ U
            t2 = time.perf_counter()
            np.tanh(theta, out=theta)
            t3 = time.perf_counter()
            best["product"] = min(best["product"], t1 - t0)
            best["product_t"] = min(best["product_t"], t2 - t1)
            best["elementwise"] = min(best["elementwise"], t3 - t2)
    del theta
    best["total"] = sum(best.values())
    return best


def sweep_time(data, k, dtype, solver, n_jobs, n_sweeps):
    """Median seconds of the steady-state sweeps (2..n) of ``solver``, and more."""
    m, n = data.shape
    rng = np.random.default_rng(0)
    U = 0.1 * rng.standard_normal((m, k))
    V = 0.1 * rng.standard_normal((n, k))
    mu = np.full(n, -4.0)
    data.dtype = np.dtype(dtype)
    stamps = []
    t0 = time.perf_counter()
    U, V, mu, n_iter, info = _lpca._fit_core(
        data,
        U,
        V,
        mu,
        tau=0.5,
        solver=solver,
        alpha=1e-3,
        max_iter=n_sweeps,
        tol=0.0,
        n_jobs=n_jobs,
        verbose=0,
        stop_when_exact=False,
        deadline=None,
        tick=lambda it, n_unsafe: stamps.append(time.perf_counter()),
    )
    total = time.perf_counter() - t0
    steady = np.diff(stamps)
    per = float(np.median(steady)) if steady.size else float("nan")
    first = stamps[0] - t0 if stamps else float("nan")
    return per, n_iter, first, total


def _row(data, k, dtype, solver, args, base):
    per, n_iter, first, total = sweep_time(
        data, k, dtype, solver, args.n_jobs, args.sweeps
    )
    return {
        "k": k,
        "dtype": dtype,
        "solver": solver,
        "seconds_per_sweep": round(per, 3),
        "seconds_first_sweep": round(first, 2),
        "sweeps": n_iter,
        "seconds_total": round(total, 2),
        "unavoidable_seconds": {key: round(v, 3) for key, v in base.items()},
        "ratio": round(per / base["total"], 2),
        "peak_gb_so_far": round(peak_gb(), 2),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", type=int, nargs="+", default=[10, 50, 100])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    parser.add_argument("--sweeps", type=int, default=6)
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    X = check_binary_matrix(load_abstracts().data, allow_missing=True, method="lpca")
    data = _lpca._Data(X)
    del X
    m, n = data.shape
    rows = []
    print(f"Abstracts {m} x {n}; n_jobs={args.n_jobs}")
    print(f"{'k':>4} {'dtype':>8} {'solver':>7} {'s/sweep':>8} {'unavoid':>8} ratio")
    for k in args.ks:
        solvers = ["lbfgs"]
        if _lpca._resolve_solver("auto", k, m, n) == "newton":
            solvers.append("newton")
        for dtype in args.dtypes:
            base = unavoidable(m, n, k, dtype, args.n_jobs)
            for solver in solvers:
                row = _row(data, k, dtype, solver, args, base)
                rows.append(row)
                print(
                    f"{k:>4} {dtype:>8} {solver:>7} {row['seconds_per_sweep']:8.3f} "
                    f"{base['total']:8.3f} {row['ratio']:.2f}",
                    flush=True,
                )
    out = {
        "data": "abstracts",
        "shape": [m, n],
        "n_jobs": args.n_jobs,
        "machine": platform.platform(),
        "peak_gb": round(peak_gb(), 2),
        "rows": rows,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(f"peak memory {out['peak_gb']:.2f} GB; saved {RESULTS}")


if __name__ == "__main__":
    main()
