"""Does R-SVD keep its budget on a large sparse matrix, idle and under load?

R-SVD's SVD cannot be stopped once it runs, so the search estimates its time and
skips it when it does not fit (``sklearn_rrank._upper._rsvd._svd_seconds``). On a
planted
16,000 x 8,000 matrix at 0.5% ones (``benchmarks/scaling.py``'s generator),
``rounding_rank_bounds(X, methods=("rsvd",), time_limit=T)`` ran 591.7 s on a
60 s budget before the estimate and the SVD followed one route
(``_svd_route``): the estimate was of the Gram route, the SVD ran ARPACK for
2925 components. Each budget is run once idle and once with two busy processes
(``python -c "while True: pass"``) beside it; the record gives the wall time of the
call, the SVD's estimate and its measured seconds (read by wrapping the two private
functions), the message and the load.

Prints a line per run and saves ``benchmarks/results/rsvd_budget.json``.

Usage: ``python benchmarks/rsvd_budget.py [--budgets 60,200,400] [--no-load]``
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from budget_adherence import _busy  # noqa: E402
from scaling import _calibrate_sparse_tau, _make_sparse  # noqa: E402

from sklearn_rrank import rounding_rank_bounds  # noqa: E402
from sklearn_rrank._upper import _rsvd  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default="60,200,400")
    parser.add_argument("--no-load", action="store_true", help="idle runs only")
    parser.add_argument("--rows", type=int, default=16000)
    args = parser.parse_args()
    path = os.path.join(tempfile.mkdtemp(), "planted.npz")
    _make_sparse(args.rows, args.rows // 2, _calibrate_sparse_tau(0.005), path)
    X = sp.load_npz(path).astype(np.float64).tocsr()
    seen = {}
    estimate, target_svd = _rsvd._svd_seconds, _rsvd._target_svd

    def spy_estimate(*a):
        seen["estimate"] = estimate(*a)
        seen["load_per_core_at_estimate"] = _rsvd._load_average()
        return seen["estimate"]

    def spy_svd(*a, **kw):
        t0 = time.perf_counter()
        out = target_svd(*a, **kw)
        seen["svd_seconds"] = time.perf_counter() - t0
        return out

    _rsvd._svd_seconds, _rsvd._target_svd = spy_estimate, spy_svd
    rows = []
    for n_busy in [0] if args.no_load else [0, 2]:
        procs = _busy(n_busy)
        try:
            if n_busy:
                time.sleep(20)  # let the busy processes take the cores
            for T in (float(b) for b in args.budgets.split(",")):
                seen.clear()
                load0 = os.getloadavg()[0]
                t0 = time.perf_counter()
                b = rounding_rank_bounds(X, methods=("rsvd",), time_limit=T)
                wall = time.perf_counter() - t0
                row = next(r for r in b.report if r["method"] == "rsvd")
                rec = {
                    "busy_processes": n_busy,
                    "time_limit": T,
                    "wall_seconds": round(wall, 2),
                    "inside_budget": wall <= 1.1 * T,
                    "interval": [int(b.lower), int(b.upper)],
                    "message": row["message"],
                    "load_1min_before": round(load0, 2),
                    "load_1min_after": round(os.getloadavg()[0], 2),
                    **{k: round(v, 2) for k, v in seen.items()},
                }
                rows.append(rec)
                print(json.dumps(rec), flush=True)
        finally:
            for p in procs:
                p.kill()
    out = {
        "shape": list(X.shape),
        "nnz": int(X.nnz),
        "machine": f"{os.cpu_count()} cores",
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip(),
        "runs": rows,
    }
    dest = os.path.join(os.path.dirname(__file__), "results", "rsvd_budget.json")
    with open(dest, "w") as f:
        json.dump(out, f, indent=1)
    print("saved", dest)


if __name__ == "__main__":
    main()
