"""Issue 25, item 4: one L-PCA fit at a known k, idle and beside busy processes.

The target ``rrank bounds abstracts --time-limit 900`` with upper <= 100 assumes that
a single L-PCA fit certifies k = 100 in about 7 minutes. This script measures that
fit, the best case of any search (the rank is given, no other method runs, no
rank is tried in vain), with the whole budget, in one run and under two
conditions:

* ``idle``: nothing else runs;
* ``loaded``: ``--busy`` (2) processes ``python -c "while True: pass"`` run beside it.

The fit is ``lpca_fit(X, k, fit_bias=B, dtype="float32", stop_when_exact=True,
time_limit=T, n_jobs=2, random_state=seed)`` (``--seed``, 0 by default) with no
iteration limit (``max_iter=10**6``, ``tol=0``): L-BFGS from the truncated-SVD start,
float32 sweeps (as the rank search runs them on data of at least 1e6 entries), with the
global offset (``--fit-bias global``, the default fit and the rank search's model) or
the column bias (``--fit-bias column``, ``B=True``), stopped when every entry rounds
right with the certificate's margin or at ``T`` seconds (default 900; the budget counts
the SVD start too). Reported per condition: the status, iterations, seconds, the entries
still wrong (float64 count) and the independent re-check (``certify_rounding``). The
1-minute load average is recorded before and after.

Usage::

    python benchmarks/single_fit_under_load.py [--data abstracts] [-k 100]
        [--time-limit 900] [--busy 2] [--conditions idle loaded]
        [--fit-bias global|column] [--seed 0] [--data-dir DIR] [--output PATH]

Prints a table and writes ``--output`` (default
``benchmarks/results/candidates/single_fit_under_load.json``). Run it alone on the
machine (wall-clock times; the loaded condition is the point).
"""

import argparse
import time
from pathlib import Path

import numpy as np
from _common import add_data_dir, add_output, busy, data_dir, load1, record, write_json

from sklearn_rrank import certify_rounding, datasets, lpca_fit


def one_fit(X, k, time_limit, n_jobs, fit_bias, seed):
    t0 = time.monotonic()
    res = lpca_fit(
        X,
        k,
        fit_bias="global" if fit_bias == "global" else True,
        dtype="float32",
        stop_when_exact=True,
        time_limit=time_limit,
        max_iter=10**6,
        tol=0.0,
        n_jobs=n_jobs,
        random_state=seed,
    )
    seconds = time.monotonic() - t0
    P = res.L @ res.R.T
    wrong = int(np.count_nonzero((P >= 0.5) != (X == 1)))
    return {
        "status": res.info["status"],
        "n_iter": int(res.n_iter),
        "seconds": round(seconds, 1),
        "n_errors": int(res.info["n_errors"]),
        "wrong_float64": wrong,
        "certified": bool(certify_rounding(X, res.L, res.R, tau=0.5)),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="abstracts", help="data set name or file")
    parser.add_argument("-k", type=int, default=100)
    parser.add_argument("--time-limit", type=float, default=900.0)
    parser.add_argument("--busy", type=int, default=2)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--conditions", nargs="+", default=["idle", "loaded"])
    parser.add_argument("--fit-bias", choices=["column", "global"], default="global")
    parser.add_argument("--seed", type=int, default=0)
    add_data_dir(parser)
    add_output(parser, "single_fit_under_load.json")
    args = parser.parse_args()
    data_dir(args.data_dir)
    if Path(args.data).is_file():
        X = datasets.load_binary_matrix(args.data)
    else:  # a named data set (the paper's: from the data home, SKLEARN_RRANK_DATA)
        X = datasets.DATASETS[args.data]().data
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.uint8)
    rows = []
    for condition in args.conditions:
        n_busy = args.busy if condition == "loaded" else 0
        with busy(n_busy):
            time.sleep(1.0 if n_busy else 0.0)
            before = load1()
            row = one_fit(
                X, args.k, args.time_limit, args.n_jobs, args.fit_bias, args.seed
            )
        row.update(condition=condition, busy=n_busy, load_before=before)
        row["load_after"] = load1()
        rows.append(row)
        print(
            f"{condition:7s} k={args.k} {row['status']:10s} {row['n_iter']:6d} iter "
            f"{row['seconds']:7.1f} s  wrong {row['wrong_float64']:6d}  "
            f"certified {row['certified']}  "
            f"load {before:.2f} -> {row['load_after']:.2f}",
            flush=True,
        )
    out = record(
        data=args.data,
        shape=list(X.shape),
        k=args.k,
        fit_bias=args.fit_bias,
        seed=args.seed,
        time_limit=args.time_limit,
        n_jobs=args.n_jobs,
        rows=rows,
    )
    print(f"wrote {write_json(args.output, out)}")


if __name__ == "__main__":
    main()
