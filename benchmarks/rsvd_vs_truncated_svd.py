"""R-SVD at a fixed k against scikit-learn's TruncatedSVD followed by a threshold.

A user who wants a rounded rank-k SVD would otherwise write::

    t = TruncatedSVD(k); L = t.fit_transform(X); B = L @ t.components_ >= 0.5

Ours (``RoundingRankFactorization(k, method="rsvd").fit(X)``) also scans the errors of
every truncation l <= k (the paper's R-SVD returns the best of them), validates the
input and counts the training error and its certificate. Both run in the same
process, alternately, ``--repeat`` times each; the best CPU and wall times are kept.
The baseline's error count is part of its timing (a user needs it to compare).

Prints a table and saves ``--output`` (default
``benchmarks/results/candidates/rsvd_vs_truncated_svd.json``).

Usage: ``python benchmarks/rsvd_vs_truncated_svd.py [--data apj,abstracts]
[--k 10,50] [--repeat 3] [--seed 0] [--data-dir DIR] [--output PATH]``
"""

import argparse
import os
import time
from functools import partial

import numpy as np
import scipy.sparse as sp
from _common import add_data_dir, add_output, data_dir, parse_list, record, write_json
from sklearn.decomposition import TruncatedSVD
from threadpoolctl import threadpool_info

from sklearn_rrank import RoundingRankFactorization
from sklearn_rrank.datasets import DATASETS


def ours(X, k, seed=0):
    est = RoundingRankFactorization(k, method="rsvd", random_state=seed).fit(X)
    return est.reconstruction_err_


def truncated_svd_threshold(X, k, seed=0):
    t = TruncatedSVD(k, random_state=seed)
    L = t.fit_transform(X)
    B = (L @ t.components_) >= 0.5
    ones = (X.toarray() if sp.issparse(X) else X) == 1
    return int(np.count_nonzero(B != ones))


def timed(f, X, k):
    c0, w0 = time.process_time(), time.perf_counter()
    errors = f(X, k)
    return time.process_time() - c0, time.perf_counter() - w0, errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="apj,abstracts")
    parser.add_argument("--k", default="10,50")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0, help="random_state of both")
    add_data_dir(parser)
    add_output(parser, "rsvd_vs_truncated_svd.json")
    args = parser.parse_args()
    data_dir(args.data_dir)
    methods = {
        "ours": partial(ours, seed=args.seed),
        "truncated_svd_threshold": partial(truncated_svd_threshold, seed=args.seed),
    }
    rows = []
    for name in parse_list(args.data, str):
        X = DATASETS[name](sparse=(name == "abstracts")).data
        for k in parse_list(args.k):
            best = {}
            for f in methods.values():
                f(X, k)  # warm-up
            for _ in range(args.repeat):
                for label, f in methods.items():
                    cpu, wall, err = timed(f, X, k)
                    old = best.get(label)
                    if old is None or cpu < old["cpu_seconds"]:
                        best[label] = {
                            "cpu_seconds": cpu,
                            "wall_seconds": wall,
                            "errors": err,
                        }
            row = {
                "data": name,
                "shape": list(X.shape),
                "k": k,
                "ours": best["ours"],
                "truncated_svd_threshold": best["truncated_svd_threshold"],
                "cpu_ratio": best["ours"]["cpu_seconds"]
                / best["truncated_svd_threshold"]["cpu_seconds"],
                "wall_ratio": best["ours"]["wall_seconds"]
                / best["truncated_svd_threshold"]["wall_seconds"],
            }
            rows.append(row)
            print(
                f"{name:10s} k={k:3d}  ours {row['ours']['cpu_seconds']:7.3f} s CPU "
                f"({row['ours']['errors']} errors)  TruncatedSVD+threshold "
                f"{row['truncated_svd_threshold']['cpu_seconds']:7.3f} s CPU "
                f"({row['truncated_svd_threshold']['errors']} errors)  ratio "
                f"{row['cpu_ratio']:.2f} (wall {row['wall_ratio']:.2f})",
                flush=True,
            )
    load = os.getloadavg()
    out = record(
        seed=args.seed,
        rows=rows,
        load_average_1_5_15=load,
        blas=[
            {k: i.get(k) for k in ("internal_api", "num_threads")}
            for i in threadpool_info()
        ],
    )
    print(f"load average {load}; saved {write_json(args.output, out, indent=2)}")


if __name__ == "__main__":
    main()
