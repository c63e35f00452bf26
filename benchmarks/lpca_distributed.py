"""Data-parallel L-PCA on Dask: 1 against 2 workers on a large planted sparse matrix.

Builds a planted rounding-rank-20 matrix (the generator of the paper's Section 5.2.1,
uniform factors with mean 0, threshold at the quantile that gives the density) row
block by row block as CSR, never dense, then runs
:func:`sklearn_rrank.lpca_fit_distributed` (k = 20 with the column bias, default warm
start) on a ``LocalCluster`` of 1 and of 2 single-threaded worker processes, a few
sweeps each. Records the set-up time (split, shipping of the blocks, warm start), the
seconds per sweep, the relative error, the peak resident memory of the client and of
every worker (``VmHWM``), the CPU seconds of every worker during the fit (how the
work was split, whatever the load) and the machine load (``uptime``) before and after.
Writes ``--output`` (default ``benchmarks/results/candidates/lpca_distributed.json``;
the reference run is ``benchmarks/results/lpca_distributed.json``, which
``docs/cluster.rst`` cites).

Run: ``python benchmarks/lpca_distributed.py [--rows 200000] [--cols 5000]
[--density 0.005] [--sweeps 3] [--seed 0]`` (cap memory with ``ulimit -v`` in a
subshell).
"""

import argparse
import json
import resource
import subprocess
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from _common import CANDIDATES, write_json

RANK = 20


def planted(m, n, density, seed=0, block=2000):
    """CSR ``round_tau(L R^T)`` with uniform factors of mean 0; ``tau`` is the
    ``1 - density`` quantile of a sample of the entries."""
    rng = np.random.RandomState(seed)
    L = rng.uniform(-0.5, 0.5, (m, RANK))
    R = rng.uniform(-0.5, 0.5, (n, RANK))
    sample = L[rng.randint(m, size=2000)] @ R.T
    tau = float(np.quantile(sample, 1 - density))
    parts = [sp.csr_matrix(L[i : i + block] @ R.T >= tau) for i in range(0, m, block)]
    return sp.vstack(parts, format="csr").astype(np.float64), tau


def _peak_rss_mb():
    """Peak resident memory of this process (``VmHWM``: unlike ``ru_maxrss`` it is
    not inherited across the fork and exec that start a worker)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _cpu_seconds():
    """User plus system CPU seconds of this process (reset in a started worker)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def run(X, n_workers, sweeps, memory_limit):
    from distributed import Client, LocalCluster

    from sklearn_rrank import lpca_fit_distributed

    with (
        LocalCluster(
            n_workers=n_workers,
            threads_per_worker=1,
            processes=True,
            memory_limit=memory_limit,
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        load_before = _uptime()
        cpu_before = client.run(_cpu_seconds)
        start = time.perf_counter()
        res = lpca_fit_distributed(
            X, RANK, client=client, max_iter=sweeps, tol=0.0, random_state=0
        )
        seconds = time.perf_counter() - start
        workers_mb = sorted(client.run(_peak_rss_mb).values())
        cpu_after = client.run(_cpu_seconds)
        workers_cpu = sorted(cpu_after[w] - cpu_before[w] for w in cpu_after)
        load_after = _uptime()
    return {
        "n_workers": n_workers,
        "sweeps": res.n_iter,
        "seconds_total": round(seconds, 2),
        "seconds_setup": round(res.info["seconds_setup"], 2),
        "seconds_per_sweep": round(res.info["seconds_per_sweep"], 2),
        "n_errors": res.info["n_errors"],
        "relative_error": res.info["n_errors"] / max(X.nnz, 1),
        "loss": [round(v, 1) for v in res.info["loss"]],
        "peak_rss_mb_workers": [round(v) for v in workers_mb],
        "peak_rss_mb_client": round(_peak_rss_mb()),
        "cpu_seconds_workers": [round(v, 1) for v in workers_cpu],
        "uptime_before": load_before,
        "uptime_after": load_after,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200000)
    parser.add_argument("--cols", type=int, default=5000)
    parser.add_argument("--density", type=float, default=0.005)
    parser.add_argument("--sweeps", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--memory-limit", default="6GB")
    parser.add_argument("--seed", type=int, default=0, help="of the planted matrix")
    parser.add_argument(
        "--output", "--out", default=str(CANDIDATES / "lpca_distributed.json")
    )
    args = parser.parse_args(argv)
    t = time.perf_counter()
    X, tau = planted(args.rows, args.cols, args.density, seed=args.seed)
    report = {
        "matrix": {
            "rows": args.rows,
            "cols": args.cols,
            "entries": args.rows * args.cols,
            "ones": int(X.nnz),
            "density": X.nnz / (args.rows * args.cols),
            "planted_rank": RANK,
            "seed": args.seed,
            "tau": tau,
            "seconds_to_build": round(time.perf_counter() - t, 1),
        },
        "fit": {"n_components": RANK, "fit_bias": True, "solver": "newton"},
        "cores": len(__import__("os").sched_getaffinity(0)),
        "runs": [],
    }
    print(json.dumps(report["matrix"]), flush=True)
    for n_workers in args.workers:
        row = run(X, n_workers, args.sweeps, args.memory_limit)
        report["runs"].append(row)
        print(json.dumps(row), flush=True)
    write_json(args.output, report, indent=2)
    return report


if __name__ == "__main__":
    main()
