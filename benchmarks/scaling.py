"""How the methods scale with the size of the matrix (issue 13).

Planted matrices from :func:`sklearn_rrank.datasets.make_rounding_rank_matrix`:
``m = 2000, 4000, 8000, 16000, 32000`` rows, ``n = m / 2`` columns, planted rank 20,
uniform factors with mean 0 and the threshold ``tau`` set so that about 1% of the
entries are ones (calibrated once on a 2000 x 1000 sample; every method then runs at
that ``tau``). For each size, each measurement runs in its own child process (so its
peak resident memory is its own, from ``resource.getrusage``) with ``n_jobs=2``:

* ``rsvd_bound``: ``rounding_rank_bounds(X, methods=("rsvd",))`` (certified bound)
  with the budget ``--budget``; its exponent uses only the sizes where R-SVD itself
  certified the bound (elsewhere it skipped the SVD or ran out of time);
* ``rsvd_fit``: ``RoundingRankFactorization(20, method="rsvd")``;
* ``lpca_fit``: ``RoundingRankFactorization(20, method="lpca", max_iter=20)``
  (fixed sweeps, so the time is per-sweep work);
* ``projlp_fit``: ``RoundingRankFactorization(20, method="projlp", max_iter=2)``
  with ``method_params={"solver": "hinge"}`` at every size (the squared-hinge
  alternation, ProjLP's default from 4 million entries; the per-row LPs of
  ``solver="lp"`` did not finish two rounds at m = 8000 within 400 s);
* ``rank_bound``: the portfolio ``rounding_rank_bounds`` (rank_one, spectral, rsvd,
  lpca, projlp; ProjLP's batched phase 0 runs from 4 million entries) with a budget
  of ``--budget`` seconds; it records the certified bound reached.

The growth exponent of each measurement is the slope of log(seconds) against
log(entries) (least squares over the sizes that finished); the rank bound runs for
its budget, so it has none. A last part runs ProjLP's
LPs under ``joblib.parallel_config(backend="dask")`` on a ``distributed.LocalCluster``
with one and with two single-threaded workers (m = 4000) and checks that both give
the factors of the serial run.

Usage::

    python benchmarks/scaling.py                   # 2k .. 32k (default)
    python benchmarks/scaling.py --sizes 2000 4000 8000 16000
    python benchmarks/scaling.py --quick           # 2k and 4k only
    python benchmarks/scaling.py --kinds rank_bound --update   # re-measure one kind
    python benchmarks/scaling.py --kinds --update --no-dask     # refit and replot

``--update`` replaces the rows of the sizes and kinds measured in this run in the
existing ``scaling.json`` (and keeps the others), then refits the exponents and
redraws the plot. Every row records the commit it was measured on.

Writes ``benchmarks/results/scaling.json`` and ``scaling.png``.
"""

import argparse
import json
import multiprocessing as mp
import os
import platform
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
RANK = 20
DENSITY = 0.01
KINDS = ("rsvd_bound", "rsvd_fit", "lpca_fit", "projlp_fit", "rank_bound")


def _calibrate_tau(seed=0):
    from sklearn_rrank.datasets import make_rounding_rank_matrix

    _, L, R, _ = make_rounding_rank_matrix(
        2000, 1000, RANK, mean=0.0, random_state=seed, return_factors=True
    )
    return float(np.quantile(L @ R.T, 1 - DENSITY))


def _make(m, tau, path, seed=0):
    import scipy.sparse as sp

    from sklearn_rrank.datasets import make_rounding_rank_matrix

    X = make_rounding_rank_matrix(m, m // 2, RANK, mean=0.0, tau=tau, random_state=seed)
    sp.save_npz(path, sp.csr_matrix(X))
    return float(X.mean())


def _measure(kind, path, tau, budget, queue):
    import warnings

    import scipy.sparse as sp

    from sklearn_rrank import RoundingRankFactorization, rounding_rank_bounds

    warnings.simplefilter("ignore")
    Xs = sp.load_npz(path)
    X = Xs.toarray().astype(np.uint8) if kind != "rsvd_bound" else Xs
    t0 = time.perf_counter()
    out = {}
    if kind == "rsvd_bound":
        b = rounding_rank_bounds(X, methods=("rsvd",), tau=tau, time_limit=budget)
        out.update(bound=b.upper, method=b.upper_method)
    elif kind == "rank_bound":
        b = rounding_rank_bounds(
            X,
            methods=("rank_one", "spectral", "rsvd", "lpca", "projlp"),
            tau=tau,
            time_limit=budget,
            n_jobs=2,
            random_state=0,
        )
        out.update(lower=b.lower, upper=b.upper, method=b.upper_method)
    else:
        method = kind.split("_")[0]
        # ProjLP: the squared-hinge alternation (the default from 4 million entries)
        # at every size, so that every size does the same kind of work
        extra = {
            "lpca": {"max_iter": 20},
            "projlp": {"max_iter": 2, "method_params": {"solver": "hinge"}},
        }.get(method, {})
        est = RoundingRankFactorization(
            RANK,
            method=method,
            tau=tau,
            random_state=0,
            n_jobs=None if method == "rsvd" else 2,
            **extra,
        ).fit(X)
        out.update(relative_error=float(est.relative_error_), n_iter=int(est.n_iter_))
    out["seconds"] = time.perf_counter() - t0
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queue.put(out)


def _run_child(kind, path, tau, budget, timeout):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    p = ctx.Process(target=_measure, args=(kind, path, tau, budget, queue))
    t0 = time.perf_counter()
    p.start()
    p.join(timeout)
    if p.is_alive():
        p.kill()
        p.join()
        return {"status": "timeout", "seconds": time.perf_counter() - t0}
    if p.exitcode != 0 or queue.empty():
        return {"status": f"failed (exit {p.exitcode})"}
    out = queue.get()
    out["status"] = "ok"
    return out


def _dask_part(path, tau):
    import warnings

    import joblib
    import scipy.sparse as sp
    from distributed import Client, LocalCluster

    from sklearn_rrank import RoundingRankFactorization

    warnings.simplefilter("ignore")
    X = sp.load_npz(path).toarray().astype(np.uint8)

    def fit():
        est = RoundingRankFactorization(
            RANK,
            method="projlp",
            tau=tau,
            random_state=0,
            n_jobs=2,
            max_iter=1,
            method_params={"solver": "lp"},  # the LPs are what runs on the workers
        )
        t0 = time.perf_counter()
        est.fit(X)
        return est.components_, time.perf_counter() - t0

    ref, t_serial = fit()
    out = {"serial_seconds": t_serial}
    for workers in (1, 2):
        with (
            LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
            ) as cluster,
            Client(cluster),
            joblib.parallel_config(backend="dask"),
        ):
            comp, secs = fit()
        out[f"dask_{workers}_workers_seconds"] = secs
        out[f"dask_{workers}_workers_identical"] = bool(np.array_equal(comp, ref))
    return out


def _commit():
    import subprocess

    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=HERE,
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _completed(row):
    """Whether a row's time is the method's whole work (not cut by the budget).

    R-SVD's bound runs under ``--budget`` like the portfolio: where it skipped the
    SVD or found no certificate in time, the trivial bound stands and its time
    says nothing of R-SVD's growth.
    """
    if row.get("status") != "ok":
        return False
    return row["kind"] != "rsvd_bound" or row.get("method") == "rsvd"


def _exponent(sizes, seconds):
    ok = [(s, t) for s, t in zip(sizes, seconds, strict=True) if t]
    if len(ok) < 2:
        return None
    x = np.log([s for s, _ in ok])
    y = np.log([t for _, t in ok])
    return float(np.polyfit(x, y, 1)[0])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=[2000, 4000, 8000, 16000, 32000]
    )
    parser.add_argument("--quick", action="store_true", help="2k and 4k only")
    parser.add_argument("--budget", type=float, default=120.0, help="rank bound s")
    parser.add_argument("--timeout", type=float, default=900.0, help="per child s")
    parser.add_argument("--no-dask", action="store_true")
    parser.add_argument(
        "--kinds",
        nargs="*",
        choices=KINDS,
        default=list(KINDS),
        help="measurements to run (none: with --update, refit and replot only)",
    )
    parser.add_argument(
        "--update", action="store_true", help="merge into the existing scaling.json"
    )
    args = parser.parse_args(argv)
    sizes = [2000, 4000] if args.quick else args.sizes
    kinds = list(KINDS)
    old = {}
    if args.update and (RESULTS / "scaling.json").exists():
        old = json.loads((RESULTS / "scaling.json").read_text())
    commit = _commit()
    tau = _calibrate_tau()
    print(f"tau = {tau:.4f} (about {DENSITY:.0%} ones)", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for m in sizes if args.kinds else []:
            path = os.path.join(tmp, f"X{m}.npz")
            density = _make(m, tau, path)
            for kind in args.kinds:
                out = _run_child(kind, path, tau, args.budget, args.timeout)
                row = {"m": m, "n": m // 2, "entries": m * (m // 2), "density": density}
                row.update(kind=kind, **out, commit=commit)
                if kind == "rank_bound":
                    row["budget"] = args.budget
                rows.append(row)
                print(json.dumps(row), flush=True)
        new = {(r["m"], r["kind"]) for r in rows}
        kept = [r for r in old.get("rows", []) if (r["m"], r["kind"]) not in new]
        rows = sorted(kept + rows, key=lambda r: (r["m"], kinds.index(r["kind"])))
        dask = old.get("dask")
        if not args.no_dask:
            path = os.path.join(tmp, "X4000.npz")
            if not os.path.exists(path):
                _make(4000, tau, path)
            dask = _dask_part(path, tau)
            print("dask:", json.dumps(dask), flush=True)
    exponents = {}
    for kind in kinds[:-1]:  # not the budgeted rank bound
        rs = [r for r in rows if r["kind"] == kind]
        exponents[kind] = _exponent(
            [r["entries"] for r in rs],
            [r["seconds"] if _completed(r) else None for r in rs],
        )
    result = {
        "tau": tau,
        "rank": RANK,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "python": sys.version.split()[0],
        "rows": rows,
        "growth_exponent_in_entries": exponents,
        "dask": dask,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "scaling.json").write_text(json.dumps(result, indent=2))
    print("growth exponents (seconds ~ entries^p):", json.dumps(exponents))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, (ax, mem) = plt.subplots(1, 2, figsize=(11, 4))
        for kind in kinds:
            rs = [r for r in rows if r["kind"] == kind and r.get("status") == "ok"]
            if not rs:
                continue
            x = [r["entries"] for r in rs]
            p = exponents.get(kind)
            done = [r for r in rs if _completed(r)]
            if kind != "rank_bound" and done:  # the rank bound runs for its budget
                label = kind if p is None else f"{kind} (p = {p:.2f})"
                ax.loglog(
                    [r["entries"] for r in done],
                    [r["seconds"] for r in done],
                    "o-",
                    label=label,
                )
            mem.loglog(x, [r["peak_rss_mb"] / 1024 for r in rs], "o-", label=kind)
        ax.set_xlabel("entries m x n")
        ax.set_ylabel("seconds")
        ax.set_title(f"Time, planted rank-{RANK} matrices (~1% ones)")
        ax.legend(fontsize=8)
        mem.set_xlabel("entries m x n")
        mem.set_ylabel("peak resident memory (GB)")
        mem.set_title("Peak memory of each measurement (own process)")
        mem.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(RESULTS / "scaling.png", dpi=120)
    except ImportError:
        print("matplotlib not installed: no plot")
    return 0


if __name__ == "__main__":
    sys.exit(main())
