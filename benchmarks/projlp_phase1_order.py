"""ProjLP's phase 1: the paper's linear scan of widths against the bracket order.

With nested projections (``L_d = X A[:, :d]``) a column feasible at width ``d``
stays feasible at every larger width, so each merged column ``j`` has a least
feasible width ``d_j`` and phase 1 ends at ``max_j d_j`` whatever order of
widths it tries. This benchmark computes every ``d_j`` of one projection (all
columns solved at every width until feasible) and then counts, on these exact
``d_j``, the LPs each order would solve:

* **scan** (the package's phase 1, with a simpler queue: the package orders the
  failed columns by their failure counts): ``d = 1, 2, ...``; at each width the
  columns not yet feasible in queue order, up to the first infeasible one, which
  moves to the front of the queue.
* **bracket** (:meth:`sklearn_rrank._search._policy.SearchPolicy.next_rank`):
  gallop from ``lo = 0`` (the gap doubles after each failed width) and bisect below the
  smallest feasible width, ``hi`` the trivial width ``min(m', n')``; at a width the
  columns not known feasible at a smaller width, in the same queue order, up to
  the first infeasible one (a column known infeasible at a width at least as
  large fails without an LP).

Both orders find the same width; the LP counts and the sum of the LPs' widths (a
cost proxy) compare their work. Reads the data folder (``--data-dir``, else
``SKLEARN_RRANK_DATA``, else ``../shared/data``); writes ``--output`` (default
``benchmarks/results/candidates/projlp_phase1_order.json``).

Usage: ``python benchmarks/projlp_phase1_order.py [--only a,b] [--seeds 0,1,2]``
(the eleven default matrices with three seeds: about 6 minutes on 2 cores; a larger
one such as ``panel/mammals_europe`` takes about 10 minutes per seed).
"""

import argparse
import time

import numpy as np
from _common import (
    add_data_dir,
    add_output,
    data_dir,
    load1,
    machine,
    parse_list,
    write_json,
)
from sklearn.utils import check_random_state
from sklearn.utils.parallel import Parallel

from sklearn_rrank._core._lp_engine import DEFAULT_EPS
from sklearn_rrank._projlp._projlp import _Projection
from sklearn_rrank._projlp._search import _ProjLPSearch
from sklearn_rrank._search._policy import DEFAULT_POLICY
from sklearn_rrank._search._skeleton import Deadline, Incumbent

SMALL = [
    "paleo",
    "domino",
    "healthcare",
    "firewall2",
    "firewall1",
    "dblp_picked_conf",
    "panel/paleo_g2s2",
    "panel/paleo_g5s5",
    "panel/paleo_g10s2",
    "panel/iris",
    "panel/ecoli",
]


def least_widths(X, seed):
    """Each merged column's least feasible width for one nested projection."""
    incumbent = Incumbent(X, 0.5, "projlp")
    search = _ProjLPSearch.merged(
        X,
        incumbent,
        Deadline(None),
        tau=0.5,
        eps=DEFAULT_EPS,
        nonnegative=False,
        projection="dense",
        n_jobs=1,
        verbose=0,
        rng=check_random_state(seed),
        nested=True,
    )
    n_u = search.Xu.shape[1]
    width = np.full(n_u, np.iinfo(np.int64).max)
    with Parallel(n_jobs=1, prefer="threads") as parallel:
        search.parallel = parallel
        proj = _Projection(search.X0u, "dense", False, search.rng)
        for d in range(1, min(search.Xu.shape) + 2):
            cols = np.flatnonzero(width > d)
            if cols.size == 0:
                break
            _, feasible, _ = search.attempt(
                proj.left(d), cols, stop_at_first_infeasible=False
            )
            width[cols[feasible]] = d
    return width, min(search.Xu.shape)


def scan(width):
    """LPs and summed widths of the linear scan on the least widths ``width``."""
    queue, solved = list(range(width.size)), np.zeros(width.size, bool)
    n_lps = cost = 0
    d = 0
    while not solved.all():
        d += 1
        for j in [j for j in queue if not solved[j]]:
            n_lps, cost = n_lps + 1, cost + d
            if width[j] <= d:
                solved[j] = True
            else:
                queue.remove(j)
                queue.insert(0, j)
                break
    return {"rank": d, "n_lps": n_lps, "lp_width_sum": cost, "widths_tried": d}


def bracket(width, trivial):
    """LPs and summed widths of the bracket order on the least widths ``width``."""
    queue = list(range(width.size))
    feasible_at = np.full(width.size, np.iinfo(np.int64).max)
    infeasible_at = np.zeros(width.size, dtype=np.int64)
    lo, hi, gap, n_lps, cost, tried = 0, trivial, 1, 0, 0, 0
    while (d := DEFAULT_POLICY.next_rank(lo, hi, gap)) is not None:
        tried += 1
        ok = True
        for j in list(queue):
            if feasible_at[j] <= d:
                continue
            if infeasible_at[j] >= d:
                ok = False
            else:
                n_lps, cost = n_lps + 1, cost + d
                if width[j] <= d:
                    feasible_at[j] = d
                    continue
                infeasible_at[j] = d
                ok = False
            queue.remove(j)
            queue.insert(0, j)
            break
        if ok:
            hi = d
        else:
            lo, gap = d, 2 * gap
    return {"rank": hi, "n_lps": n_lps, "lp_width_sum": cost, "widths_tried": tried}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=None)
    parser.add_argument("--seeds", default="0,1,2")
    add_data_dir(parser)
    add_output(parser, "projlp_phase1_order.json")
    args = parser.parse_args()
    root = data_dir(args.data_dir)
    names = parse_list(args.only, str) if args.only else SMALL
    seeds = parse_list(args.seeds)
    rows = []
    out = {
        "description": __doc__.splitlines()[0],
        "machine": machine(),
        "load_before": load1(),
        "rows": rows,
    }
    for name in names:
        X = np.load(root / f"{name}.npz")["X"].astype(np.float64)
        for seed in seeds:
            t0 = time.perf_counter()
            width, trivial = least_widths(X, seed)
            row = {
                "matrix": name,
                "seed": seed,
                "merged_columns": int(width.size),
                "max_width": int(width.max()),
                "scan": scan(width),
                "bracket": bracket(width, trivial),
                "seconds_least_widths": round(time.perf_counter() - t0, 2),
            }
            rows.append(row)
            print(
                f"{name} seed {seed}: width {row['max_width']}, LPs scan "
                f"{row['scan']['n_lps']} / bracket {row['bracket']['n_lps']}, "
                f"width sums {row['scan']['lp_width_sum']} / "
                f"{row['bracket']['lp_width_sum']}",
                flush=True,
            )
            write_json(args.output, out)  # row by row


if __name__ == "__main__":
    main()
