"""Reproduce the paper's nestedness experiment (Section 5.4, Figure "nested").

Noisy nested 200 x 300 matrices (``make_nested_matrix``): density 0.1..0.7 at noise
level 0.15, and noise level 0.05..0.5 at density 0.5, 10 matrices per setting. Each
is approximated by a nested matrix with the four methods of ``NestedApprox`` (MT,
NNRR1, MT+NNRR1, R-SVD). Recorded per matrix and method: errors (flipped entries),
relative error (errors / ones of the noisy matrix, the paper's measure), seconds
(MT+NNRR1: also without its MT part, as the paper plots it), NODF before and after.

Outputs in ``--output-dir`` (default ``benchmarks/results/candidates/``):
``nested_raw.csv`` (one row per matrix and method; the run resumes from it),
``nested.csv`` (mean and standard deviation per setting and method),
``nested.json`` (summary, qualitative checks, the large NNRR1 timing, run time),
``nested.png`` (four panels in the paper's layout: error and time against density and
against noise; error bars are +- one standard deviation, i.e. twice the std wide).

Usage::

    python benchmarks/nested.py                     # full run (resumable)
    python benchmarks/nested.py --time-budget 280   # stop after ~280 s, rerun to go on
    python benchmarks/nested.py --quick             # 3 matrices, fewer settings
    python benchmarks/nested.py --large-only        # only NNRR1 on 2000 x 3000

MT+NNRR1 reuses the MT result of the same matrix (the combination is deterministic,
so this equals ``NestedApprox(method="mt+nnrr1")``; checked on the first matrix).
Timings are wall-clock on a shared machine and are noisy.
"""

import argparse
import csv
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
from _common import CANDIDATES

from sklearn_rrank._nested._bmna import (
    _bmna,
    _nnrr1,
    _positional_r,
)
from sklearn_rrank._nested._exact import (
    is_nested,
)
from sklearn_rrank._nested._nestedness import (
    _nodf_validated,
)
from sklearn_rrank.datasets._nested_generator import make_nested_matrix

#: the output folder (``--output-dir``) and the resumable raw table in it
RESULTS = CANDIDATES
RAW = RESULTS / "nested_raw.csv"
METHODS = ["mt", "nnrr1", "mt+nnrr1", "rsvd"]
LABELS = {"mt": "MT", "nnrr1": "NNRR1", "mt+nnrr1": "MT+NNRR1", "rsvd": "R-SVD"}
FIELDS = [
    "experiment",
    "density",
    "noise",
    "rep",
    "seed",
    "method",
    "errors",
    "rel_error",
    "planted_errors",
    "planted_rel_error",
    "seconds",
    "seconds_excl_mt",
    "n_iter",
    "nodf_data",
    "nodf_result",
]


def settings(quick):
    """(experiment, density, noise) triples in the paper's ranges."""
    densities = [0.1, 0.4, 0.7] if quick else [round(0.1 * k, 1) for k in range(1, 8)]
    noises = [0.05, 0.25, 0.5] if quick else [round(0.05 * k, 2) for k in range(1, 11)]
    out = [("density", d, 0.15) for d in densities]
    out += [("noise", 0.5, p) for p in noises]
    return out


def seed_of(experiment, density, noise, rep):
    """Deterministic seed per matrix (independent of run order and resumption)."""
    base = 1000 if experiment == "density" else 2000
    return (
        base * 1000
        + int(round(density * 100)) * 1000
        + int(round(noise * 100)) * 10
        + rep
    )


def run_matrix(experiment, density, noise, rep, check=False):
    seed = seed_of(experiment, density, noise, rep)
    X, clean = make_nested_matrix(
        200, 300, density=density, noise=noise, random_state=seed, return_clean=True
    )
    B = X.astype(bool)
    n_ones = int(B.sum())
    planted = int(np.count_nonzero(X != clean))
    nodf_data = _nodf_validated(B).nodf
    rows = []
    results = {}
    for method in ["mt", "nnrr1", "rsvd"]:
        res = _bmna(B, method, 100, seed)
        results[method] = (
            res["N"],
            res["cost"],
            res["seconds"],
            res["seconds"],
            res["n_iter"],
        )
    # MT+NNRR1 from the MT result just computed
    N_mt, c_mt, s_mt = results["mt"][0], results["mt"][1], results["mt"][2]
    t0 = time.perf_counter()
    N, c, n_iter, _ = _nnrr1(B, _positional_r(N_mt), 100, start_cost=c_mt)
    s_nn = time.perf_counter() - t0
    results["mt+nnrr1"] = (N, c, s_mt + s_nn, s_nn, n_iter)
    if check:
        ref = _bmna(B, "mt+nnrr1", 100, seed)
        assert ref["cost"] == c and np.array_equal(ref["N"], N)
    for method in METHODS:
        N, cost, seconds, seconds_excl, n_iter = results[method]
        assert is_nested(N) and cost == np.count_nonzero(N != B)
        rows.append(
            {
                "experiment": experiment,
                "density": density,
                "noise": noise,
                "rep": rep,
                "seed": seed,
                "method": method,
                "errors": cost,
                "rel_error": cost / n_ones,
                "planted_errors": planted,
                "planted_rel_error": planted / n_ones,
                "seconds": round(seconds, 4),
                "seconds_excl_mt": round(seconds_excl, 4),
                "n_iter": n_iter,
                "nodf_data": round(nodf_data, 4),
                "nodf_result": round(_nodf_validated(N).nodf, 4),
            }
        )
    return rows


def load_raw():
    if not RAW.exists():
        return []
    with RAW.open() as f:
        return list(csv.DictReader(f))


def summarise(raw):
    """Mean and std per (experiment, density, noise, method)."""
    groups = {}
    for r in raw:
        key = (r["experiment"], float(r["density"]), float(r["noise"]), r["method"])
        groups.setdefault(key, []).append(r)
    summary = []
    for (exp, d, p, method), rs in sorted(groups.items()):
        rel = np.array([float(r["rel_error"]) for r in rs])
        sec = np.array([float(r["seconds"]) for r in rs])
        sec_x = np.array([float(r["seconds_excl_mt"]) for r in rs])
        planted = np.array([float(r["planted_rel_error"]) for r in rs])
        summary.append(
            {
                "experiment": exp,
                "density": d,
                "noise": p,
                "method": method,
                "n_matrices": len(rs),
                "rel_error_mean": rel.mean(),
                "rel_error_std": rel.std(ddof=1) if len(rs) > 1 else 0.0,
                "seconds_mean": sec.mean(),
                "seconds_std": sec.std(ddof=1) if len(rs) > 1 else 0.0,
                "seconds_excl_mt_mean": sec_x.mean(),
                "seconds_excl_mt_std": sec_x.std(ddof=1) if len(rs) > 1 else 0.0,
                "planted_rel_error_mean": planted.mean(),
            }
        )
    return summary


def plot(summary, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
    panels = [
        ("density", "rel_error", "(a) Error, vary density", "density"),
        ("noise", "rel_error", "(b) Error, vary noise level", "noise level"),
        ("density", "seconds", "(c) Time, vary density", "density"),
        ("noise", "seconds", "(d) Time, vary noise", "noise level"),
    ]
    for ax, (exp, what, title, xlabel) in zip(axes, panels, strict=True):
        xkey = "density" if exp == "density" else "noise"
        for method in METHODS:
            rows = [
                s for s in summary if s["experiment"] == exp and s["method"] == method
            ]
            if not rows:
                continue
            x = [s[xkey] for s in rows]
            # the paper's time panels show MT+NNRR1 without the MT part
            key = "seconds_excl_mt" if what == "seconds" else what
            y = np.array([s[f"{key}_mean"] for s in rows])
            e = np.array([s[f"{key}_std"] for s in rows])
            lower = np.minimum(e, 0.9 * y) if what == "seconds" else e  # log scale
            style = {"mt": "--s", "mt+nnrr1": "-o"}.get(method, "-o")
            ax.errorbar(
                x,
                y,
                yerr=[lower, e],
                fmt=style,
                ms=3,
                capsize=2,
                label=LABELS[method],
            )
        if what == "rel_error":
            rows = [
                s for s in summary if s["experiment"] == exp and s["method"] == "mt"
            ]
            ax.plot(
                [s[xkey] for s in rows],
                [s["planted_rel_error_mean"] for s in rows],
                "k:",
                label="planted noise",
            )
            ax.set_ylabel("relative error")
        else:
            ax.set_yscale("log")
            ax.set_ylabel("seconds (MT+NNRR1 without MT)")
        ax.set_title(title)
        ax.set_xlabel(xlabel)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def large_timing(n_runs=1):
    """NNRR1 on a 2000 x 3000 nested matrix, density 0.3, noise 0.1."""
    from sklearn_rrank._nested._approx import NestedApprox

    X = make_nested_matrix(2000, 3000, density=0.3, noise=0.1, random_state=0)
    out = []
    for _ in range(n_runs):
        t0 = time.perf_counter()
        est = NestedApprox(method="nnrr1").fit(X)
        out.append(time.perf_counter() - t0)
    return {
        "shape": [2000, 3000],
        "density": 0.3,
        "noise": 0.1,
        "method": "nnrr1 (NestedApprox.fit: validation, NNRR1, certificate)",
        "seconds": [round(s, 3) for s in out],
        "relative_error": est.relative_error_,
        "n_iter": est.n_iter_,
        "under_30s": bool(max(out) < 30),
    }


def checks(summary):
    """The paper's qualitative claims, evaluated on the averaged results."""

    def mean_of(method, key):
        vals = [s[key] for s in summary if s["method"] == method]
        return float(np.mean(vals)) if vals else float("nan")

    def by_setting(method):
        return {
            (s["experiment"], s["density"], s["noise"]): s
            for s in summary
            if s["method"] == method
        }

    err = {m: mean_of(m, "rel_error_mean") for m in METHODS}
    sec = {m: mean_of(m, "seconds_mean") for m in METHODS}
    svd, mt, nn = by_setting("rsvd"), by_setting("mt"), by_setting("nnrr1")
    # R-SVD worse than the better of MT and NNRR1 beyond the error bars (+- std)
    separated = [
        svd[k]["rel_error_mean"] - svd[k]["rel_error_std"]
        > max(
            mt[k]["rel_error_mean"] + mt[k]["rel_error_std"],
            nn[k]["rel_error_mean"] + nn[k]["rel_error_std"],
        )
        for k in svd
        if k in mt and k in nn
    ]
    gap = [
        (nn[k]["rel_error_mean"] - mt[k]["rel_error_mean"]) / mt[k]["rel_error_mean"]
        for k in mt
        if k in nn
    ]
    return {
        "mean_rel_error": err,
        "mean_seconds": sec,
        "nnrr1_vs_mt_relative_gap_max": float(max(gap)) if gap else None,
        "mt_and_nnrr1_close (NNRR1 within 5% of MT in every setting)": bool(
            gap and max(gap) < 0.05
        ),
        "mt_at_least_as_good_as_nnrr1_in_every_setting": bool(gap and min(gap) >= 0),
        "mt+nnrr1_no_better_than_mt (mean within 1%)": bool(
            err["mt+nnrr1"] >= 0.99 * err["mt"]
        ),
        "rsvd_worse_beyond_error_bars_in_every_setting": bool(
            separated and all(separated)
        ),
        "mt_slowest": bool(sec["mt"] >= max(sec["nnrr1"], sec["rsvd"])),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="reduced setting")
    parser.add_argument("--n-matrices", type=int, default=None)
    parser.add_argument(
        "--time-budget",
        type=float,
        default=None,
        help="stop starting new matrices after this many seconds",
    )
    parser.add_argument("--large-only", action="store_true")
    parser.add_argument("--skip-large", action="store_true")
    parser.add_argument("--fresh", action="store_true", help="discard nested_raw.csv")
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=CANDIDATES,
        help="nested.json, nested.csv, nested.png and nested_raw.csv (default: "
        "benchmarks/results/candidates/; the reference is results/nested.json)",
    )
    args = parser.parse_args()
    global RESULTS, RAW
    RESULTS, RAW = args.output_dir, args.output_dir / "nested_raw.csv"
    RESULTS.mkdir(parents=True, exist_ok=True)
    n_mat = args.n_matrices or (3 if args.quick else 10)
    summary_json = RESULTS / "nested.json"
    previous = json.loads(summary_json.read_text()) if summary_json.exists() else {}

    if args.large_only:
        previous["large_nnrr1"] = large_timing(n_runs=3)
        summary_json.write_text(json.dumps(previous, indent=2))
        print(json.dumps(previous["large_nnrr1"], indent=2))
        return

    if args.fresh and RAW.exists():
        RAW.unlink()
    raw = load_raw()
    done = {
        (r["experiment"], float(r["density"]), float(r["noise"]), int(r["rep"]))
        for r in raw
    }
    start = time.perf_counter()
    new_file = not RAW.exists()
    complete = True
    with RAW.open("a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS)
        if new_file:
            writer.writeheader()
        first = True
        for exp, d, p in settings(args.quick):
            for rep in range(n_mat):
                if (exp, d, p, rep) in done:
                    continue
                if args.time_budget and time.perf_counter() - start > args.time_budget:
                    complete = False
                    break
                rows = run_matrix(exp, d, p, rep, check=first)
                first = False
                writer.writerows(rows)
                f.flush()
                print(
                    f"{exp:8s} density={d:.2f} noise={p:.2f} rep={rep}: "
                    + ", ".join(
                        f"{LABELS[r['method']]} {r['rel_error']:.4f} "
                        f"({r['seconds']:.2f}s)"
                        for r in rows
                    ),
                    flush=True,
                )
            if not complete:
                break
    elapsed = time.perf_counter() - start
    raw = load_raw()
    wanted = {(e, d, p) for e, d, p in settings(args.quick)}
    raw = [
        r
        for r in raw
        if (r["experiment"], float(r["density"]), float(r["noise"])) in wanted
        and int(r["rep"]) < n_mat
    ]
    summary = summarise(raw)
    with (RESULTS / "nested.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(summary[0]))
        writer.writeheader()
        writer.writerows(summary)
    plot(summary, RESULTS / "nested.png")
    total_seconds = sum(float(r["seconds"]) for r in raw if r["method"] != "mt+nnrr1")
    total_seconds += sum(
        float(r["seconds_excl_mt"]) for r in raw if r["method"] == "mt+nnrr1"
    )
    out = {
        "setting": "quick" if args.quick else "full",
        "n_matrices_per_setting": n_mat,
        "n_matrices_done": len(raw) // len(METHODS),
        "n_matrices_planned": len(wanted) * n_mat,
        "complete": complete and len(raw) // len(METHODS) == len(wanted) * n_mat,
        "solver_seconds_total": round(total_seconds, 1),
        "wall_seconds_this_invocation": round(elapsed, 1),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (shared)",
        "checks": checks(summary),
    }
    if "large_nnrr1" in previous:
        out["large_nnrr1"] = previous["large_nnrr1"]
    if not args.skip_large and "large_nnrr1" not in out:
        out["large_nnrr1"] = large_timing()
    summary_json.write_text(json.dumps(out, indent=2))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
