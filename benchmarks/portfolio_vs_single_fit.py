"""Issue 25, item 4: the portfolio never loses to a single fit, and agrees with CV.

For each data set (Paleo and APJ by default), in one run:

* ``rounding_rank_bounds(X, time_limit=T, n_jobs=2, random_state=0)``: the
  portfolio's interval with a budget of ``T`` seconds (default 60);
* for each factorization method of the default portfolio (``rsvd``, ``lpca``,
  ``projlp``), the smallest ``k`` in ``{2, 3, 4, 5, 6, 8, 10, 12}`` at which a default
  ``RoundingRankFactorization(k, method=..., random_state=0)`` fit (no budget)
  certifies (its factors round to ``X`` exactly, re-checked with
  :func:`~sklearn_rrank.certify_rounding`), and the fit's seconds;
* ``RoundingRankCV(random_state=0)`` (exact mode, no budget) fitted on ``X``:
  ``n_components_``, beside ``rounding_rank_bounds(X, random_state=0, n_jobs=2)``
  without a budget.

The checks: the portfolio's upper bound (60 s) is at most the smallest single-fit
``k``; CV's ``n_components_`` equals the upper bound of the unlimited call. Every
certificate is re-verified. The 1-minute load average is recorded at the start and
the end.

``random_state`` is ``--seed`` (0 by default) in every call.

Usage: ``python benchmarks/portfolio_vs_single_fit.py [--data paleo apj]
[--time-limit 60] [--seed 0] [--data-dir DIR] [--output PATH]``; writes
``benchmarks/results/candidates/portfolio_vs_single_fit.json`` by default.
"""

import argparse
import json
import time
import warnings

from _common import add_data_dir, add_output, data_dir, load1, write_json
from _common import record as run_record

from sklearn_rrank import (
    RoundingRankCV,
    RoundingRankFactorization,
    certify_rounding,
    rounding_rank_bounds,
)
from sklearn_rrank.datasets import load_binary_matrix

KS = (2, 3, 4, 5, 6, 8, 10, 12)
METHODS = ("rsvd", "lpca", "projlp")


def _single_fits(X, method, seed):
    """The smallest k in KS whose default fit certifies, with the seconds per k."""
    tried = []
    for k in KS:
        if k >= min(X.shape):
            break
        t0 = time.perf_counter()
        est = RoundingRankFactorization(k, method=method, random_state=seed)
        L = est.fit_transform(X)
        seconds = time.perf_counter() - t0
        exact = bool(certify_rounding(X, L, est.components_.T))
        tried.append({"k": k, "certified": exact, "seconds": round(seconds, 2)})
        if exact:
            return k, tried
    return None, tried


def _run(name, time_limit, seed):
    X = load_binary_matrix(data_dir() / f"{name}.npz")
    record = {"data": name, "shape": list(X.shape), "load_start": load1()}
    t0 = time.perf_counter()
    res = rounding_rank_bounds(X, time_limit=time_limit, n_jobs=2, random_state=seed)
    record["portfolio"] = {
        "interval": [int(res.lower), int(res.upper)],
        "upper_method": res.upper_method,
        "seconds": round(time.perf_counter() - t0, 2),
        "certificate_verified": bool(certify_rounding(X, res.L, res.R))
        if res.L is not None
        else None,
    }
    print(name, "portfolio", record["portfolio"], flush=True)
    record["single_fits"] = {}
    for method in METHODS:
        k, tried = _single_fits(X, method, seed)
        record["single_fits"][method] = {"smallest_certified_k": k, "tried": tried}
        print(name, method, k, tried, flush=True)
    t0 = time.perf_counter()
    full = rounding_rank_bounds(X, n_jobs=2, random_state=seed)
    record["bounds_unlimited"] = {
        "interval": [int(full.lower), int(full.upper)],
        "upper_method": full.upper_method,
        "seconds": round(time.perf_counter() - t0, 2),
    }
    print(name, "bounds without a budget", record["bounds_unlimited"], flush=True)
    t0 = time.perf_counter()
    cv = RoundingRankCV(random_state=seed, n_jobs=2).fit(X)
    record["cv"] = {
        "n_components": int(cv.n_components_),
        "seconds": round(time.perf_counter() - t0, 2),
    }
    print(name, "cv", record["cv"], flush=True)
    single = [
        v["smallest_certified_k"]
        for v in record["single_fits"].values()
        if v["smallest_certified_k"] is not None
    ]
    lo, hi = record["portfolio"]["interval"]
    record["never_worse_than_single_fit"] = (not single) or hi <= min(single)
    record["cv_in_interval"] = lo <= record["cv"]["n_components"] <= hi
    record["cv_agrees_with_bounds"] = (
        record["cv"]["n_components"] == record["bounds_unlimited"]["interval"][1]
    )
    record["load_end"] = load1()
    return record


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", nargs="+", default=["paleo", "apj"])
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    add_data_dir(parser)
    add_output(parser, "portfolio_vs_single_fit.json")
    args = parser.parse_args(argv)
    data_dir(args.data_dir)
    warnings.simplefilter("ignore")
    records = [_run(name, args.time_limit, args.seed) for name in args.data]
    out = run_record(time_limit=args.time_limit, seed=args.seed, records=records)
    write_json(args.output, out)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
