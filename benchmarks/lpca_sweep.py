"""Seconds per L-PCA sweep on Abstracts beside the sweep's unavoidable work (issue 13).

For k = 10, 50, 100 and both compute dtypes, times the sweeps of both solvers on
the paper's largest data set, Abstracts (12841 x 4894, 0.9% ones): L-BFGS (one
iteration: normally one evaluation of the joint objective and its gradient, plus
scipy's L-BFGS-B update) at every k, and damped alternating Newton (one sweep: a
Newton step on every row of U, then of [V, mu]) where ``lpca_fit(solver="auto")``
picks it (up to 24 latent factors).

An L-BFGS iteration costs more once its memory of ``_lpca_lbfgs._LBFGS_MEMORY`` (5)
correction pairs is full, so its sweeps are timed after that: ``--sweeps`` (20)
iterations past the first ``memory + 1``; reported are their median and mean (the
mean includes the iterations whose line search needed more than one evaluation) and
the seconds per evaluation of the objective (one pass over the data: the objective
and its gradient) with its own ratio. As a baseline in the same run, L-BFGS
is also timed with 20 correction pairs (``--lbfgs-memory``). Newton sweeps cost the
same every time: the median of ``--newton-sweeps`` (6) sweeps after the first.

Beside them, in the same run and dtype, the unavoidable work of one sweep timed
with plain numpy on the same shapes: the two m x n x k products ``U @ V.T`` and
``G.T @ U`` and one element-wise pass (``tanh``) over the m x n entries. Goal
(issue 13): a sweep within 2x of it. A joint gradient needs a third product
(``G @ V``), a Newton sweep needs the p x p curvature sums of every row and
column, so neither can reach 1x. Peak memory (``resource.getrusage``): at most
4 GB.

Usage::

    python benchmarks/lpca_sweep.py [--ks 10 50 100] [--sweeps 20] [--n-jobs 2]
        [--lbfgs-memory 5 20]

``--data paleo|apj|abstracts`` (default abstracts) picks the data set of the data
folder (``--data-dir``). Prints a table and writes ``--output`` (default
``benchmarks/results/candidates/lpca_sweep.json``). Wall-clock times on a shared
2-core machine are noisy.
"""

import argparse
import platform
import resource
import time

import numpy as np
from _common import add_data_dir, add_output, data_dir, write_json
from threadpoolctl import threadpool_limits

from sklearn_rrank._core._validation import check_binary_matrix
from sklearn_rrank._lpca import _fit as _lpca
from sklearn_rrank._lpca import _lbfgs as _lpca_lbfgs
from sklearn_rrank._lpca import _model as _lpca_model
from sklearn_rrank.datasets import fetch_abstracts, fetch_apj, fetch_paleo

LOADERS = {"abstracts": fetch_abstracts, "apj": fetch_apj, "paleo": fetch_paleo}


def peak_gb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def unavoidable(m, n, k, dtype, n_jobs, repeats=3):
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


class _CountedObjective:
    """Wraps ``_lpca_lbfgs._joint_objective`` to count its calls and their seconds."""

    def __init__(self):
        self.inner = _lpca_lbfgs._joint_objective
        self.calls, self.seconds = 0, 0.0

    def __call__(self, *args, **kwargs):
        t0 = time.perf_counter()
        out = self.inner(*args, **kwargs)
        self.seconds += time.perf_counter() - t0
        self.calls += 1
        return out


def sweep_time(data, k, dtype, solver, n_jobs, n_sweeps, memory):
    """Seconds of the steady-state sweeps of ``solver`` (see the module docstring).

    ``memory`` is the L-BFGS memory (``_lpca_lbfgs._LBFGS_MEMORY``, set for this call).
    """
    m, n = data.shape
    rng = np.random.default_rng(0)
    U = 0.1 * rng.standard_normal((m, k))
    V = 0.1 * rng.standard_normal((n, k))
    mu = np.full(n, -4.0)
    data.dtype = np.dtype(dtype)
    skip = memory + 1 if solver == "lbfgs" else 1
    stamps = []
    counted = _CountedObjective()
    default_memory = _lpca_lbfgs._LBFGS_MEMORY
    _lpca_lbfgs._joint_objective, _lpca_lbfgs._LBFGS_MEMORY = counted, memory
    t0 = time.perf_counter()
    try:
        U, V, mu, n_iter, info = _lpca._fit_core(
            data,
            U,
            V,
            mu,
            tau=0.5,
            solver=solver,
            alpha=1e-3,
            max_iter=skip + n_sweeps,
            tol=0.0,
            n_jobs=n_jobs,
            verbose=0,
            stop_when_exact=False,
            deadline=None,
            tick=lambda it, n_unsafe: stamps.append(
                (time.perf_counter(), counted.calls, counted.seconds)
            ),
        )
    finally:
        _lpca_lbfgs._joint_objective, _lpca_lbfgs._LBFGS_MEMORY = (
            counted.inner,
            default_memory,
        )
    total = time.perf_counter() - t0
    steady = stamps[skip - 1 :]
    seconds = np.diff([s[0] for s in steady])
    out = {
        "median": float(np.median(seconds)),
        "mean": float(seconds.mean()),
        "sweeps_timed": int(seconds.size),
        "sweeps": n_iter,
        "seconds_total": total,
    }
    calls = steady[-1][1] - steady[0][1]
    if calls:
        out["evaluations_per_sweep"] = calls / seconds.size
        out["seconds_per_evaluation"] = (steady[-1][2] - steady[0][2]) / calls
    return out


def _row(data, k, dtype, solver, memory, args, base):
    n_sweeps = args.sweeps if solver == "lbfgs" else args.newton_sweeps
    t = sweep_time(data, k, dtype, solver, args.n_jobs, n_sweeps, memory)
    row = {
        "k": k,
        "dtype": dtype,
        "solver": solver,
        "seconds_per_sweep": round(t["median"], 3),
        "seconds_per_sweep_mean": round(t["mean"], 3),
        "sweeps_timed": t["sweeps_timed"],
        "seconds_total": round(t["seconds_total"], 2),
        "unavoidable_seconds": {key: round(v, 3) for key, v in base.items()},
        "ratio": round(t["median"] / base["total"], 2),
        "ratio_mean": round(t["mean"] / base["total"], 2),
        "peak_gb_so_far": round(peak_gb(), 2),
    }
    if solver == "lbfgs":
        row["lbfgs_memory"] = memory
        row["evaluations_per_sweep"] = round(t["evaluations_per_sweep"], 2)
        row["seconds_per_evaluation"] = round(t["seconds_per_evaluation"], 3)
        # the pass over the data alone (objective and gradient), without scipy's
        # update and the line search's extra evaluations
        row["ratio_per_evaluation"] = round(
            t["seconds_per_evaluation"] / base["total"], 2
        )
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", type=int, nargs="+", default=[10, 50, 100])
    parser.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    parser.add_argument("--sweeps", type=int, default=20)
    parser.add_argument("--newton-sweeps", type=int, default=6)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument(
        "--lbfgs-memory",
        type=int,
        nargs="+",
        default=[_lpca_lbfgs._LBFGS_MEMORY, 20],
        help="L-BFGS memories to time (default: ours, and 20 as the baseline)",
    )
    parser.add_argument("--data", choices=sorted(LOADERS), default="abstracts")
    add_data_dir(parser)
    add_output(parser, "lpca_sweep.json")
    args = parser.parse_args()
    data_dir(args.data_dir)
    X = LOADERS[args.data]().data
    X = check_binary_matrix(X, allow_missing=True, method="lpca")
    data = _lpca_model._Data(X)
    del X
    m, n = data.shape
    rows = []
    print(f"{args.data} {m} x {n}; n_jobs={args.n_jobs}")
    print(
        f"{'k':>4} {'dtype':>8} {'solver':>10} {'s/sweep':>8} {'mean':>8} "
        f"{'unavoid':>8} ratio (mean) [per evaluation]"
    )
    for k in args.ks:
        solvers = [("lbfgs", memory) for memory in args.lbfgs_memory]
        if _lpca._resolve_solver("auto", k) == "newton":
            solvers.append(("newton", None))
        for dtype in args.dtypes:
            base = unavoidable(m, n, k, dtype, args.n_jobs)
            for solver, memory in solvers:
                row = _row(data, k, dtype, solver, memory, args, base)
                rows.append(row)
                name = solver if memory is None else f"{solver}({memory})"
                print(
                    f"{k:>4} {dtype:>8} {name:>10} {row['seconds_per_sweep']:8.3f} "
                    f"{row['seconds_per_sweep_mean']:8.3f} {base['total']:8.3f} "
                    f"{row['ratio']:.2f} ({row['ratio_mean']:.2f})"
                    + (
                        f" [{row['ratio_per_evaluation']:.2f}]"
                        if solver == "lbfgs"
                        else ""
                    ),
                    flush=True,
                )
    out = {
        "data": args.data,
        "shape": [m, n],
        "n_jobs": args.n_jobs,
        "machine": platform.platform(),
        "peak_gb": round(peak_gb(), 2),
        "rows": rows,
    }
    path = write_json(args.output, out, indent=2)
    print(f"peak memory {out['peak_gb']:.2f} GB; saved {path}")


if __name__ == "__main__":
    main()
