"""``rounding_rank_bounds`` on the panel of real matrices, several seeds.

Every matrix of ``../shared/data/*.npz`` (key ``X``), ``../shared/data/panel/*.npz``
and the symmetric networks ``../shared/data/graphs/<name>.npz`` (read with
``scipy.sparse.load_npz``; the ``*_directed`` files are left out) runs through
``rounding_rank_bounds`` with the default methods, ``n_jobs=2``, one budget and each
seed. A row records the lower and upper bound, the wall seconds of the call, whether
the certificate re-checks (:func:`~sklearn_rrank.certify_rounding` on the returned
factors, and the count of entries with ``(L @ R.T >= tau) != X`` in float64), the
1-minute load average before and after the call, the process's peak resident memory
so far and each method's status, bound and seconds. The machine is shared: read the
load beside every wall time.

``--busy N`` starts ``N`` processes ``python -c "while True: pass"`` beside the run
and kills them at the end. ``--compare OLD.json NEW.json`` prints the comparison of
two runs (median upper bound per matrix, the fraction of matrices where the new one
is no worse, the geometric mean of new/old, the largest budget overrun and the
re-check failures) and, with ``--figure``, draws the upper bound per matrix.

Usage::

    python benchmarks/panel.py --label baseline [--seeds 0,1,2] [--budget 20]
        [--only paleo,apj] [--busy 2]
    python benchmarks/panel.py --compare results/panel_baseline.json \
        results/panel_bracket.json [--figure results/panel.png]
"""

import argparse
import glob
import json
import os
import platform
import resource
import subprocess
import sys
import time

import numpy as np
import scipy.sparse as sp

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "shared", "data")


def panel_files():
    """``[(name, path, kind)]`` of the panel, in a fixed order."""
    files = []
    for sub, kind in (("", "dense"), ("panel", "dense"), ("graphs", "graph")):
        for path in sorted(glob.glob(os.path.join(SHARED, sub, "*.npz"))):
            name = os.path.splitext(os.path.basename(path))[0]
            if name.endswith("_directed"):
                continue
            files.append((name, path, kind))
    return files


def load(path, kind):
    if kind == "graph":
        return sp.load_npz(path).tocsr()
    X = np.load(path)["X"]
    return X.toarray() if sp.issparse(X) else np.asarray(X)


def count_wrong(X, L, R, tau, block=2048):
    """Entries with ``(L @ R.T >= tau) != X`` in float64, by blocks of rows.

    Sparse factors (the trivial certificate of sparse data) are multiplied sparse:
    the dense product of a trivial certificate of a 20,000-node graph would be
    terabytes of work.
    """
    sparse = sp.issparse(L) or sp.issparse(R)
    if sparse and tau > 0:
        L = sp.csr_matrix(L, dtype=np.float64)
        R = sp.csr_matrix(R, dtype=np.float64)
    else:
        L = L.toarray() if sp.issparse(L) else np.asarray(L, dtype=np.float64)
        R = R.toarray() if sp.issparse(R) else np.asarray(R, dtype=np.float64)
    Xc = X.tocsr() if sp.issparse(X) else X
    wrong = 0
    for i in range(0, X.shape[0], block):
        rows = Xc[i : i + block]
        prod = L[i : i + block] @ R.T
        if sp.issparse(prod):  # tau > 0: the entries not stored are below tau
            pred = sp.csr_matrix(prod >= tau)
            truth = sp.csr_matrix(rows != 0) if sp.issparse(rows) else rows != 0
            diff = pred != truth if sp.issparse(truth) else pred.toarray() != truth
            wrong += int(diff.nnz if sp.issparse(diff) else np.count_nonzero(diff))
            continue
        rows = rows.toarray() if sp.issparse(rows) else np.asarray(rows)
        wrong += int(np.count_nonzero((prod >= tau) != (rows != 0)))
    return wrong


def run(args):
    import sklearn_rrank
    from sklearn_rrank import certify_rounding, rounding_rank_bounds

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        cwd=HERE,
    ).stdout.strip()
    seeds = [int(s) for s in args.seeds.split(",")]
    only = set(args.only.split(",")) if args.only else None
    out_path = os.path.join(HERE, "results", f"panel_{args.label}.json")
    out = {
        "label": args.label,
        "commit": commit,
        # a run of another version (a ``git archive`` on PYTHONPATH) names it here
        "package_path": os.path.dirname(sklearn_rrank.__file__),
        "budget": args.budget,
        "seeds": seeds,
        "busy_processes": args.busy,
        "n_jobs": 2,
        "machine": f"{platform.node()} {os.cpu_count()} cores (shared)",
        "runs": [],
    }
    busy = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(args.busy)
    ]
    try:
        for name, path, kind in panel_files():
            if only is not None and name not in only:
                continue
            X = load(path, kind)
            for seed in seeds:
                load_before = os.getloadavg()[0]
                t0 = time.monotonic()
                r = rounding_rank_bounds(
                    X, time_limit=args.budget, n_jobs=2, random_state=seed
                )
                wall = time.monotonic() - t0
                rechecked = bool(certify_rounding(X, r.L, r.R, tau=r.tau))
                row = dict(
                    name=name,
                    kind=kind,
                    shape=list(X.shape),
                    seed=seed,
                    lower=int(r.lower),
                    upper=int(r.upper),
                    upper_method=r.upper_method,
                    lower_method=r.lower_method,
                    wall_seconds=round(wall, 2),
                    overrun=round(wall / args.budget - 1.0, 4),
                    certificate_rechecked=rechecked,
                    float64_wrong=count_wrong(X, r.L, r.R, r.tau),
                    load_1min_before=load_before,
                    load_1min_after=os.getloadavg()[0],
                    # the process's peak so far (one matrix per process: its own)
                    peak_rss_mb=round(
                        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1
                    ),
                    methods=[
                        [m["method"], m["status"], m["bound"], round(m["seconds"], 1)]
                        + [m["message"][:240]]
                        for m in r.report
                    ],
                    # wrong entries of the last fit at each k, of the rank searches
                    errors_by_k={
                        m["method"]: {str(k): v for k, v in m["errors_by_k"].items()}
                        for m in r.report
                        if m.get("errors_by_k")
                    },
                )
                out["runs"].append(row)
                print(json.dumps(row), flush=True)
                with open(out_path, "w") as fh:
                    json.dump(out, fh, indent=1)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    print("saved", out_path)


def _by_matrix(res):
    d = {}
    for row in res["runs"]:
        d.setdefault(row["name"], []).append(row)
    return d


def compare(old_path, new_path, figure=None):
    with open(old_path) as fh:
        old = json.load(fh)
    with open(new_path) as fh:
        new = json.load(fh)
    o, n = _by_matrix(old), _by_matrix(new)
    names = [k for k in o if k in n]
    lines = [
        f"{'matrix':24s} {'old up':>8s} {'new up':>8s} {'old lo':>7s} {'new lo':>7s}"
    ]
    ratios, no_worse = [], 0
    for k in names:
        ou = float(np.median([r["upper"] for r in o[k]]))
        nu = float(np.median([r["upper"] for r in n[k]]))
        ol = float(np.median([r["lower"] for r in o[k]]))
        nl = float(np.median([r["lower"] for r in n[k]]))
        ratios.append(nu / ou)
        no_worse += nu <= ou
        flag = "" if nu <= ou else "  worse"
        lines.append(f"{k:24s} {ou:8.1f} {nu:8.1f} {ol:7.1f} {nl:7.1f}{flag}")
    runs = new["runs"]
    summary = dict(
        matrices=len(names),
        no_worse_fraction=no_worse / max(len(names), 1),
        geometric_mean_new_over_old=float(np.exp(np.mean(np.log(ratios)))),
        max_overrun_new=max(r["overrun"] for r in runs),
        max_overrun_old=max(r["overrun"] for r in old["runs"]),
        recheck_failures_new=sum(
            (not r["certificate_rechecked"]) or r["float64_wrong"] > 0 for r in runs
        ),
        recheck_failures_old=sum(
            (not r["certificate_rechecked"]) or r["float64_wrong"] > 0
            for r in old["runs"]
        ),
        load_1min_new=[
            min(r["load_1min_before"] for r in runs),
            max(r["load_1min_after"] for r in runs),
        ],
        load_1min_old=[
            min(r["load_1min_before"] for r in old["runs"]),
            max(r["load_1min_after"] for r in old["runs"]),
        ],
    )
    print("\n".join(lines))
    print(json.dumps(summary, indent=1))
    if figure:
        _figure(o, n, names, figure, old.get("label"), new.get("label"))
    return summary


def _figure(o, n, names, path, old_label, new_label):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = np.arange(len(names))
    fig, ax = plt.subplots(figsize=(max(8, 0.32 * len(names)), 4.5))
    for shift, d, label, color in (
        (-0.15, o, old_label or "old", "tab:gray"),
        (0.15, n, new_label or "new", "tab:blue"),
    ):
        ups = [[r["upper"] for r in d[k]] for k in names]
        med = [np.median(u) for u in ups]
        lo = [np.median(u) - min(u) for u in ups]
        hi = [max(u) - np.median(u) for u in ups]
        ax.errorbar(
            x + shift,
            med,
            yerr=[lo, hi],
            fmt="o",
            ms=4,
            capsize=2,
            color=color,
            label=f"{label} (median, seed range)",
        )
    ax.set_yscale("log")
    ax.set_xticks(x)
    ax.set_xticklabels(names, rotation=75, fontsize=7)
    ax.set_ylabel("certified upper bound (rank)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="run")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--budget", type=float, default=20.0)
    parser.add_argument("--only", default=None, help="comma-separated names")
    parser.add_argument("--busy", type=int, default=0)
    parser.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"))
    parser.add_argument("--figure", default=None)
    args = parser.parse_args()
    if args.compare:
        compare(*args.compare, figure=args.figure)
    else:
        run(args)


if __name__ == "__main__":
    main()
