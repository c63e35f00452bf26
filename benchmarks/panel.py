"""``rounding_rank_bounds`` on the panel of real matrices, by tier, side by side.

The panel is every matrix of the shared data folder (``--data-dir``): ``*.npz`` (key
``X``), ``panel/*.npz`` and the symmetric networks ``graphs/<name>.npz`` (the
``*_directed`` files are left out), 44 matrices, plus the planted 40000 x 5000
``.fimi`` file of ``sparse_memory.py`` (2e8 entries, written once into
``--work-dir``). Each call is ``rounding_rank_bounds(X, time_limit=T, n_jobs=2,
random_state=seed)`` with the default methods, in its own process. Tiers:

=========  ========  =====  ===========================================================
tier       budget    seeds  matrices
=========  ========  =====  ===========================================================
20         20 s      0-2    all 44
120        120 s     0      the ten largest (pubmed, ca-hepph, p2p-gnutella04,
                            abstracts_nsf, wiki-vote, americas_large, ca-grqc,
                            facebook, citeseer, cora)
600        600 s     0      abstracts_nsf, americas_large, planted_fimi, and the three
                            largest networks (pubmed, ca-hepph, p2p-gnutella04), as
                            ``rrank`` loads them (CSR below 10% ones); about an hour
unlimited  no limit  0      the 23 of ``*.npz`` and ``panel/*.npz`` with at most 3e5
                            entries; a call is stopped after ``--timeout`` (240 s)
=========  ========  =====  ===========================================================

A row records the bounds and the method of each, the wall seconds of the call and its
overrun of the budget, whether the certificate re-checks
(:func:`~sklearn_rrank.certify_rounding`, and the count of entries with
``(L @ R.T >= tau) != X`` in float64), the 1-minute load average before and after,
the call's peak resident memory, each method's status, bound, seconds and message,
and the wrong entries of the rank searches by k. The machine is shared: read the load
beside every wall time.

Two versions side by side: ``--revisions OLD NEW`` takes two git revisions (or folders
holding ``sklearn_rrank``: a worktree, an unpacked archive), runs the tier for both at
the same time (each on ``--n-jobs`` threads, so both see the same load; ``--busy N``
starts N busy processes beside each) and compares them. A candidate policy that lives on
a branch is one revision; a candidate policy (fields of ``SearchPolicy``) is a
configuration of one revision: ``--revisions main main --side-params '{}'
'{"policy": {"retry_share": null}}'`` runs main's search policy against the one
without step 8, at the same time.

Landing rule. A change to the search lands when, run side by side with main on
**every** tier (20, 120 and 600; and the unlimited tier when it acts without a time
limit):

1. its median upper bound (over the seeds) is no worse on at least 80% of the
   matrices,
2. the geometric mean of its median upper bounds over main's is at most 1,
3. no call overruns its budget by more than 10%,
4. every certificate re-checks.

A tier of one seed is a data point: a matrix worse there is traced before the rule
is read as met. ``--compare`` prints the four criteria and whether they are met.

Usage::

    python benchmarks/panel.py --tier 20 [--seeds 0,1,2] [--only paleo,apj]
        [--busy 2] [--label candidate] [--output PATH]
    python benchmarks/panel.py --tier 600 --revisions main wt-policy
    python benchmarks/panel.py --compare benchmarks/results/panel.json NEW.json
        [--figure panel.png]

By default a run is written to ``benchmarks/results/candidates/`` (ignored by
git); ``benchmarks/results/panel.json`` holds the reference run of each tier.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from _common import (
    CANDIDATES,
    FIMI_SHAPE,
    ROOT,
    add_data_dir,
    busy,
    checkout,
    commit,
    data_dir,
    load1,
    machine,
    parse_list,
    planted_fimi,
    write_json,
)

HERE = Path(__file__).resolve().parent
LARGEST_TEN = (
    "pubmed",
    "ca-hepph",
    "p2p-gnutella04",
    "abstracts_nsf",
    "wiki-vote",
    "americas_large",
    "ca-grqc",
    "facebook",
    "citeseer",
    "cora",
)
LONG = (
    "abstracts_nsf",
    "americas_large",
    "planted_fimi",
    "pubmed",
    "ca-hepph",
    "p2p-gnutella04",
)
#: tier -> budget (None: no limit), seeds, matrices (None: every panel matrix),
#: whether data with few ones is passed as CSR (as ``rrank`` loads it), and the
#: largest matrix in entries
TIERS = {
    "20": dict(budget=20.0, seeds=(0, 1, 2), names=None, csr=False, max_entries=None),
    "120": dict(
        budget=120.0, seeds=(0,), names=LARGEST_TEN, csr=False, max_entries=None
    ),
    "600": dict(budget=600.0, seeds=(0,), names=LONG, csr=True, max_entries=None),
    "unlimited": dict(budget=None, seeds=(0,), names=None, csr=False, max_entries=3e5),
}
#: the landing rule's thresholds (see the module docstring)
NO_WORSE_FRACTION = 0.8
MAX_OVERRUN = 0.10
SPARSE_FRACTION = 0.1  # the command line's rule for keeping data CSR


def panel_files(root, work_dir, with_fimi=True):
    """``{name: (path, kind)}`` of the panel, in a fixed order."""
    files = {}
    for sub, kind in (("", "dense"), ("panel", "dense"), ("graphs", "graph")):
        for path in sorted((root / sub).glob("*.npz")):
            if not path.stem.endswith("_directed"):
                files[path.stem] = (path, kind)
    if with_fimi:
        files["planted_fimi"] = (Path(work_dir) / "planted_40000x5000.fimi", "fimi")
    return files


def load(path, kind, csr=False):
    """The matrix of a panel file; with ``csr``, CSR below 10% ones."""
    if kind == "fimi":
        from sklearn_rrank.datasets import load_binary_matrix

        return load_binary_matrix(planted_fimi(path), sparse=True).tocsr()
    if kind == "graph":
        return sp.load_npz(path).tocsr()
    with np.load(path, allow_pickle=False) as z:
        X = z["X"]
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    if csr and np.count_nonzero(X) < SPARSE_FRACTION * X.size:
        return sp.csr_matrix(X)
    return X


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


def one_call(path, kind, seed, budget, csr, n_jobs, params=None):
    """One ``rounding_rank_bounds`` call and its checks, as a row (child process)."""
    import resource

    import sklearn_rrank
    from sklearn_rrank import certify_rounding, rounding_rank_bounds

    X = load(path, kind, csr)
    t0 = time.monotonic()
    r = rounding_rank_bounds(
        X, time_limit=budget, n_jobs=n_jobs, random_state=seed, **_kwargs(params)
    )
    wall = time.monotonic() - t0
    return dict(
        package=os.path.dirname(sklearn_rrank.__file__),
        shape=list(X.shape),
        sparse=sp.issparse(X),
        lower=int(r.lower),
        upper=int(r.upper),
        upper_method=r.upper_method,
        lower_method=r.lower_method,
        wall_seconds=round(wall, 2),
        overrun=None if budget is None else round(wall / budget - 1.0, 4),
        certificate_rechecked=bool(certify_rounding(X, r.L, r.R, tau=r.tau)),
        float64_wrong=count_wrong(X, r.L, r.R, r.tau),
        peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
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


def _kwargs(params):
    """Keyword arguments of ``rounding_rank_bounds`` from ``--params``' JSON.

    A ``"policy"`` entry holds fields of ``SearchPolicy``: the policy they make is
    handed to the searches that take one (the ``method_params`` of L-PCA, ProjLP
    and R-SVD).
    """
    params = dict(params or {})
    fields = params.pop("policy", None)
    if fields is not None:
        from sklearn_rrank._search._policy import SearchPolicy

        policy = SearchPolicy(**fields)
        method_params = dict(params.get("method_params") or {})
        for method in ("lpca", "projlp", "rsvd"):
            method_params[method] = {**method_params.get(method, {}), "policy": policy}
        params["method_params"] = method_params
    return params


def _child(args):
    budget = None if args.child_budget == "none" else float(args.child_budget)
    row = one_call(
        Path(args.child_path), args.child_kind, args.child_seed, budget,
        args.child_csr, args.n_jobs, json.loads(args.params or "{}"),
    )  # fmt: skip
    print(json.dumps(row), flush=True)


def _tier(args):
    tier = dict(TIERS[args.tier])
    if args.budget is not None:
        tier["budget"] = args.budget if args.budget > 0 else None
    if args.seeds is not None:
        tier["seeds"] = tuple(parse_list(args.seeds))
    if args.only:
        tier["names"] = tuple(parse_list(args.only, str))
    if args.max_entries is not None:
        tier["max_entries"] = args.max_entries
    return tier


def _entries(path, kind):
    if kind == "fimi":
        return FIMI_SHAPE[0] * FIMI_SHAPE[1]
    if kind == "graph":
        return int(np.prod(sp.load_npz(path).shape))
    with np.load(path, allow_pickle=False) as z:
        return int(np.prod(z["X"].shape))


def run(args):
    """Run one tier with the package of ``args.code`` (this checkout by default)."""
    root = data_dir(args.data_dir)
    tier = _tier(args)
    code = Path(args.code).resolve() if args.code else ROOT
    names = tier["names"]
    files = panel_files(root, args.work_dir, with_fimi=names is not None)
    if names is not None:
        missing = [n for n in names if n not in files]
        if missing:
            raise SystemExit(f"not in the panel of {root}: {', '.join(missing)}")
        files = {n: files[n] for n in files if n in names}
    if tier["max_entries"] is not None:
        files = {
            n: f
            for n, f in sorted(files.items(), key=lambda kv: _entries(*kv[1]))
            if f[1] != "graph" and _entries(*f) <= tier["max_entries"]
        }
    out_path = args.output or CANDIDATES / f"panel_{args.label}_{args.tier}.json"
    out = {
        "label": args.label,
        "tier": args.tier,
        "commit": commit(code),
        # a run of another version (a ``git archive``) names its folder here
        "package_path": str(code / "sklearn_rrank"),
        "budget": tier["budget"],
        "seeds": list(tier["seeds"]),
        "busy_processes": args.busy,
        "n_jobs": args.n_jobs,
        "params": json.loads(args.params or "{}"),
        "machine": machine(),
        "runs": [],
    }
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(code), str(HERE)]))
    budget = "none" if tier["budget"] is None else str(tier["budget"])
    timeout = args.timeout if tier["budget"] is None else None
    with busy(args.busy):
        for name, (path, kind) in files.items():
            if kind == "fimi":
                planted_fimi(path)
            for seed in tier["seeds"]:
                cmd = [sys.executable, __file__, "--n-jobs", str(args.n_jobs)]
                cmd += ["--child", str(path), kind, str(seed), budget]
                cmd += ["--child-csr"] if tier["csr"] else []
                cmd += ["--params", args.params] if args.params else []
                row = {"name": name, "kind": kind, "seed": seed}
                row["load_1min_before"] = load1()
                try:
                    proc = subprocess.run(
                        cmd, env=env, capture_output=True, text=True, timeout=timeout
                    )
                except subprocess.TimeoutExpired:
                    row["timeout"] = timeout
                else:
                    if proc.returncode == 0:
                        row.update(json.loads(proc.stdout.strip().splitlines()[-1]))
                    else:
                        row["error"] = proc.stderr[-1000:]
                row["load_1min_after"] = load1()
                out["runs"].append(row)
                brief = {
                    k: v for k, v in row.items() if k not in ("methods", "errors_by_k")
                }
                print(json.dumps(brief), flush=True)
                write_json(out_path, out)
    print("saved", out_path, flush=True)
    return out_path


def side_by_side(args):
    """Run the tier for two revisions at the same time, then compare them."""
    work = Path(args.work_dir)
    procs, outputs = [], []
    sides = zip(
        ("old", "new"), args.revisions, args.side_params or (None, None), strict=True
    )
    for side, rev, params in sides:
        tag = Path(rev).name if Path(rev).is_dir() else rev.replace("/", "_")
        dest = None if Path(rev).is_dir() else work / f"src_{side}_{tag}"
        if dest is not None and dest.exists():
            shutil.rmtree(dest)  # the archive of an earlier run
        code = checkout(rev, dest)
        label = f"{args.label}_{side}_{tag}"
        output = CANDIDATES / f"panel_{label}_{args.tier}.json"
        cmd = [sys.executable, __file__, "--tier", args.tier, "--label", label]
        cmd += ["--code", str(code), "--output", str(output)]
        cmd += ["--work-dir", str(work), "--n-jobs", str(args.n_jobs)]
        cmd += ["--busy", str(args.busy), "--timeout", str(args.timeout)]
        cmd += ["--params", params] if params else []
        for flag in ("budget", "seeds", "only", "max_entries", "data_dir"):
            value = getattr(args, flag)
            if value is not None:
                cmd += [f"--{flag.replace('_', '-')}", str(value)]
        procs.append(subprocess.Popen(cmd))
        outputs.append(output)
    codes = [p.wait() for p in procs]
    if any(codes):
        raise SystemExit(f"a side of the comparison failed: exit codes {codes}")
    return compare(*outputs, figure=args.figure)


def _read_run(path, tier=None):
    with open(path) as fh:
        res = json.load(fh)
    if "tiers" in res:  # the reference file: one run per tier
        if tier not in res["tiers"]:
            raise SystemExit(f"{path} has no run of tier {tier!r}")
        return res["tiers"][tier]
    return res


def _by_matrix(res):
    d = {}
    for row in res["runs"]:
        if "upper" in row:
            d.setdefault(row["name"], []).append(row)
    return d


def _failures(runs):
    return sum(
        (not r.get("certificate_rechecked", True)) or r.get("float64_wrong", 0) > 0
        for r in runs
        if "upper" in r
    )


def _max_overrun(runs):
    overruns = [r["overrun"] for r in runs if r.get("overrun") is not None]
    return max(overruns) if overruns else None


def _load_range(runs):
    before = [r["load_1min_before"] for r in runs if "load_1min_before" in r]
    after = [r["load_1min_after"] for r in runs if "load_1min_after" in r]
    return [min(before + after), max(before + after)] if before + after else None


def compare(old_path, new_path, figure=None):
    """Compare two runs of one tier by the landing rule; print and return it."""
    if "tiers" in json.loads(Path(new_path).read_text()):
        raise SystemExit("give the reference file first, the new run second")
    new = _read_run(new_path)
    old = _read_run(old_path, new.get("tier"))
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
    fraction = no_worse / max(len(names), 1)
    geomean = float(np.exp(np.mean(np.log(ratios)))) if ratios else None
    overrun = _max_overrun(new["runs"])
    failures = _failures(new["runs"])
    rule = {
        "no_worse_at_least_80%": fraction >= NO_WORSE_FRACTION,
        "geometric_mean_at_most_1": geomean is not None and geomean <= 1.0,
        "overrun_at_most_10%": overrun is None or overrun <= MAX_OVERRUN,
        "every_certificate_rechecks": failures == 0,
    }
    summary = dict(
        tier=new.get("tier"),
        matrices=len(names),
        no_worse_fraction=fraction,
        geometric_mean_new_over_old=geomean,
        max_overrun_new=overrun,
        max_overrun_old=_max_overrun(old["runs"]),
        recheck_failures_new=failures,
        recheck_failures_old=_failures(old["runs"]),
        not_finished_new=sum("upper" not in r for r in new["runs"]),
        not_finished_old=sum("upper" not in r for r in old["runs"]),
        load_1min_new=_load_range(new["runs"]),
        load_1min_old=_load_range(old["runs"]),
        landing_rule=rule,
        lands_on_this_tier=all(rule.values()),
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tier", choices=sorted(TIERS), default="20")
    parser.add_argument("--label", default="run")
    parser.add_argument("--seeds", default=None, help="e.g. 0,1,2 (default: tier's)")
    parser.add_argument(
        "--budget", type=float, default=None, help="seconds (default: tier's; 0: none)"
    )
    parser.add_argument("--only", default=None, help="comma-separated matrix names")
    parser.add_argument("--max-entries", type=float, default=None)
    parser.add_argument("--timeout", type=float, default=240.0, help="unlimited: s")
    parser.add_argument("--busy", type=int, default=0, help="busy processes beside")
    parser.add_argument("--n-jobs", type=int, default=2)
    add_data_dir(parser)
    parser.add_argument(
        "--work-dir",
        default=str(CANDIDATES / "work"),
        help="the planted .fimi file and the revisions' archives",
    )
    parser.add_argument("--code", default=None, help="folder holding sklearn_rrank")
    parser.add_argument("--output", type=Path, default=None)
    parser.add_argument("--revisions", nargs=2, metavar=("OLD", "NEW"))
    parser.add_argument("--compare", nargs=2, metavar=("OLD", "NEW"))
    parser.add_argument("--figure", default=None)
    parser.add_argument("--child", nargs=4, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--child-csr", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--params",
        default=None,
        help="JSON of more keyword arguments of rounding_rank_bounds, e.g. "
        '\'{"method_params": {"lpca": {"fit_bias": true}}}\'; a "policy" entry '
        "holds SearchPolicy fields for L-PCA's and ProjLP's searches, e.g. "
        '\'{"policy": {"retry_share": null}}\'',
    )
    parser.add_argument(
        "--side-params",
        nargs=2,
        metavar=("OLD", "NEW"),
        default=None,
        help="with --revisions: --params of each side (two configurations of one "
        "revision compare as --revisions main main --side-params '{}' JSON)",
    )
    args = parser.parse_args(argv)
    if args.child:
        path, kind, seed, budget = args.child
        args.child_path, args.child_kind = path, kind
        args.child_seed, args.child_budget = int(seed), budget
        _child(args)
    elif args.compare:
        compare(*args.compare, figure=args.figure)
    elif args.revisions:
        side_by_side(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
