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

Prints a line per run and saves ``--output`` (default
``benchmarks/results/candidates/rsvd_budget.json``).

Usage: ``python benchmarks/rsvd_budget.py [--budgets 60,200,400] [--busy 2]
[--no-load] [--rows 16000] [--output PATH]``
"""

import argparse
import json
import os
import tempfile
import time

import numpy as np
import scipy.sparse as sp
from _common import add_output, busy, load1, parse_list, record, write_json
from scaling import _calibrate_sparse_tau, _make_sparse

from sklearn_rrank import rounding_rank_bounds
from sklearn_rrank._upper import _rsvd


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default="60,200,400")
    parser.add_argument("--no-load", action="store_true", help="idle runs only")
    parser.add_argument("--busy", type=int, default=2, help="busy processes, loaded")
    parser.add_argument("--rows", type=int, default=16000)
    add_output(parser, "rsvd_budget.json")
    args = parser.parse_args()
    path = os.path.join(tempfile.mkdtemp(), "planted.npz")
    _make_sparse(args.rows, args.rows // 2, _calibrate_sparse_tau(0.005), path)
    X = sp.load_npz(path).astype(np.float64).tocsr()
    seen = {}
    estimate, target_svd = _rsvd._svd_seconds, _rsvd._target_svd

    def spy_estimate(*a, **kw):
        seen["estimate"] = estimate(*a, **kw)
        seen["load_per_core_at_estimate"] = _rsvd._load_average()
        return seen["estimate"]

    def spy_svd(*a, **kw):
        t0 = time.perf_counter()
        out = target_svd(*a, **kw)
        seen["svd_seconds"] = time.perf_counter() - t0
        return out

    _rsvd._svd_seconds, _rsvd._target_svd = spy_estimate, spy_svd
    rows = []
    for n_busy in [0] if args.no_load else [0, args.busy]:
        with busy(n_busy):
            if n_busy:
                time.sleep(20)  # let the busy processes take the cores
            for T in parse_list(args.budgets, float):
                seen.clear()
                load0 = load1()
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
                    "load_1min_before": load0,
                    "load_1min_after": load1(),
                    **{k: round(v, 2) for k, v in seen.items()},
                }
                rows.append(rec)
                print(json.dumps(rec), flush=True)
    out = record(shape=list(X.shape), nnz=int(X.nnz), runs=rows)
    print("saved", write_json(args.output, out))


if __name__ == "__main__":
    main()
