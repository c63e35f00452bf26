"""Anytime curves of ``rounding_rank_bounds`` on the paper's data sets.

One call of ``rounding_rank_bounds`` (default methods, ``n_jobs=2``, ``random_state``
from ``--seed``, 0 by default) per data set and budget, optionally with busy processes
(``python -c "while True: pass"``) beside it. Records every method's curve (the
``[seconds, bound]`` pairs of its report row), the certified interval over time (the
best lower and upper bound reached by each second), the final interval, the wall time
and the 1-minute load average at the end, and checks the certificate again with
:func:`~sklearn_rrank.certify_rounding`.

Saves ``anytime_<data>_<budget>s[_loaded].json`` in ``--output-dir`` (default
``benchmarks/results/``, which the docs' "What we certify" table reads) and, with
``--figure PATH``, the curve (the package's ``RankSearchDisplay``).

Usage: ``python benchmarks/anytime_curves.py --data apj --time-limit 60 [--busy 2]
[--methods lpca] [--seed 0] [--data-dir DIR]``; ``--file graphs/cora.npz`` (relative
to the data folder, or any path) runs a matrix file
instead (read sparse by ``load_binary_matrix``; the file's stem names the run, which
the docs' "What we certify" table shows in its row).
"""

import argparse
import time
from pathlib import Path

from _common import RESULTS, add_data_dir, busy, data_dir, load1, record, write_json

from sklearn_rrank import certify_rounding, rounding_rank_bounds
from sklearn_rrank.datasets import fetch_abstracts, fetch_apj, fetch_paleo

LOADERS = {"paleo": fetch_paleo, "apj": fetch_apj, "abstracts": fetch_abstracts}


def interval_curve(report):
    """``[seconds, lower, upper]`` at every change of the certified interval."""
    events = []
    for row in report:
        kind = row["kind"]
        for t, b in row.get("curve", []):
            events.append((t, kind, b, row.get("certified")))
    lower, upper, out = 0, None, []
    for t, kind, b, certified in sorted(events, key=lambda e: e[0]):
        if kind == "lower" and b > lower:
            lower = b
        elif kind == "upper" and certified is not False:
            upper = b if upper is None else min(upper, b)
        else:
            continue
        out.append([round(t, 3), lower, upper])
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=sorted(LOADERS), default="apj")
    parser.add_argument("--file", help="a matrix file instead of --data")
    parser.add_argument("--time-limit", type=float, default=60.0)
    parser.add_argument("--busy", type=int, default=0, help="busy processes beside")
    parser.add_argument("--seed", type=int, default=0)
    add_data_dir(parser)
    parser.add_argument("--output-dir", type=Path, default=RESULTS)
    parser.add_argument("--figure", type=Path, default=None, help="PNG of the curve")
    parser.add_argument(
        "--methods",
        default="default",
        help="comma-separated methods of rounding_rank_bounds (default: its default)",
    )
    args = parser.parse_args()
    methods = "default" if args.methods == "default" else tuple(args.methods.split(","))
    root = data_dir(args.data_dir)
    if args.file:
        from sklearn_rrank.datasets import load_binary_matrix

        path = root / args.file if (root / args.file).exists() else Path(args.file)
        X, args.data = load_binary_matrix(path, sparse=True), path.stem
    else:
        X = LOADERS[args.data]().data
    with busy(args.busy):
        load_before = load1()
        t0 = time.perf_counter()
        res = rounding_rank_bounds(
            X,
            methods=methods,
            time_limit=args.time_limit,
            n_jobs=2,
            random_state=args.seed,
        )
        wall = time.perf_counter() - t0
        load_after = load1()
    ok = bool(certify_rounding(X, res.L, res.R, tau=res.tau))
    out = record(
        data=args.data,
        shape=list(X.shape),
        time_limit=args.time_limit,
        methods=list(methods) if methods != "default" else "default",
        seed=args.seed,
        busy_processes=args.busy,
        load_1min_before=load_before,
        load_1min_after=load_after,
    )
    out.update(
        {
            "wall_seconds": wall,
            "lower": res.lower,
            "lower_method": res.lower_method,
            "upper": res.upper,
            "upper_method": res.upper_method,
            "certificate_rechecked": ok,
            "interval_curve": interval_curve(res.report),
            "report": res.report,
        }
    )
    stem = (
        f"anytime_{args.data}_{args.time_limit:g}s"
        + ("" if methods == "default" else "_" + "_".join(methods))
        + ("_loaded" if args.busy else "")
    )
    write_json(args.output_dir / (stem + ".json"), out)
    print(
        f"{args.data}: [{res.lower}, {res.upper}] ({res.lower_method}, "
        f"{res.upper_method}) in {wall:.1f} s of {args.time_limit:g} s; busy "
        f"{args.busy}, load {load_before:.1f} -> {load_after:.1f}; certificate "
        f"re-checked: {ok}"
    )
    for t, lo, up in out["interval_curve"]:
        print(f"  {t:8.1f} s  [{lo}, {up}]")
    if args.figure:
        import matplotlib

        matplotlib.use("Agg")
        from sklearn_rrank.plotting import RankSearchDisplay

        disp = RankSearchDisplay.from_bounds(res, name=args.data)
        disp.figure_.savefig(args.figure, dpi=100, bbox_inches="tight")


if __name__ == "__main__":
    main()
