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

Sparse mode (issue 28, ``--entries``): sizes given by their number of entries,
doubling from ``--entries`` (2e6) up to ``--max-entries``, ``m = sqrt(2 entries)``
rows and ``n = m / 2`` columns, planted rank 20 at ``--density`` ones (default 0.5%).
The matrix is built by blocks of rows straight into CSR (factors uniform on
[-1/2, 1/2], ``tau`` the ``1 - density`` quantile of a sample block), never dense,
and every method is handed the CSR matrix (``--input dense`` hands it the dense
array, as the rows measured before). Each row records ``peak_rss_mb`` (the child's
peak), ``loaded_rss_mb`` (its peak once the data is loaded, before the method) and
``bytes_per_entry`` (peak over entries) and ``method_mb`` (peak minus loaded); the
JSON holds the growth exponents in the entries (least squares on log-log) of the
seconds, of the peak memory and of the method's added memory, and the
plot a third panel of bytes per entry. Written to ``scaling_sparse.json`` and
``scaling_sparse.png`` (``--name``), so the rows of the dense runs stay as they were.

Usage::

    python benchmarks/scaling.py --entries 2e6 --max-entries 6.4e7   # sparse mode
    python benchmarks/scaling.py                   # 2k .. 32k (default)
    python benchmarks/scaling.py --sizes 2000 4000 8000 16000
    python benchmarks/scaling.py --quick           # 2k and 4k only
    python benchmarks/scaling.py --kinds rank_bound --update   # re-measure one kind
    python benchmarks/scaling.py --kinds --update --no-dask     # refit and replot

``--update`` replaces the rows of the sizes and kinds measured in this run in the
existing ``scaling.json`` (and keeps the others), then refits the exponents and
redraws the plot. Every row records the commit it was measured on.

Writes ``scaling.json`` and ``scaling.png`` (sparse mode: ``<name>.json`` and
``<name>.png``) in ``--output-dir`` (default ``benchmarks/results/``, which the docs
render).
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
from _common import RESULTS as REFERENCE
from _common import commit as git_commit

#: the output folder (``--output-dir``; the docs render the reference files in it)
RESULTS = REFERENCE
RANK = 20
DENSITY = 0.01
KINDS = ("rsvd_bound", "rsvd_fit", "lpca_fit", "projlp_fit", "rank_bound")
# L-PCA sweeps per fit (fixed, so the time is per-sweep work); --lpca-sweeps
LPCA_SWEEPS = 20


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


def _factors(m, n, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(-0.5, 0.5, (m, RANK)), rng.uniform(-0.5, 0.5, (n, RANK))


def _calibrate_sparse_tau(density, seed=0):
    """The ``1 - density`` quantile of the products of a 2000 x 1000 sample."""
    L, R = _factors(2000, 1000, seed)
    return float(np.quantile(L @ R.T, 1 - density))


def _make_sparse(m, n, tau, path, seed=0):
    """Planted ``round_tau(L R^T)`` built by blocks of rows straight into CSR."""
    import scipy.sparse as sp

    from sklearn_rrank._core._rounding import _row_batches

    L, R = _factors(m, n, seed)
    indptr = [np.zeros(1, dtype=np.int64)]
    indices = []
    nnz = 0
    for rows in _row_batches(m, n):
        r, c = np.nonzero(L[rows] @ R.T >= tau)
        indices.append(c.astype(np.int32))
        counts = np.bincount(r, minlength=rows.stop - rows.start)
        indptr.append(nnz + np.cumsum(counts))
        nnz += c.size
    indices = np.concatenate(indices)
    X = sp.csr_matrix(
        (np.ones(nnz, dtype=np.uint8), indices, np.concatenate(indptr)), shape=(m, n)
    )
    sp.save_npz(path, X)
    return nnz / (m * n)


def _measure(kind, path, tau, budget, queue, input_kind="legacy", sweeps=LPCA_SWEEPS):
    import warnings

    import scipy.sparse as sp

    from sklearn_rrank import RoundingRankFactorization, rounding_rank_bounds

    warnings.simplefilter("ignore")
    Xs = sp.load_npz(path)
    if input_kind == "sparse":
        X = Xs.tocsr()
    elif input_kind == "dense" or kind != "rsvd_bound":
        X = Xs.toarray().astype(np.uint8)
    else:
        X = Xs
    del Xs
    loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
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
            "lpca": {"max_iter": sweeps},
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
    out["loaded_rss_mb"] = loaded
    queue.put(out)


def _run_child(
    kind, path, tau, budget, timeout, input_kind="legacy", sweeps=LPCA_SWEEPS
):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    p = ctx.Process(
        target=_measure, args=(kind, path, tau, budget, queue, input_kind, sweeps)
    )
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


def _slope(xs, ys):
    """Least-squares slope of log(y) against log(x) (None with fewer than 2 points)."""
    ok = [(x, y) for x, y in zip(xs, ys, strict=True) if y]
    if len(ok) < 2:
        return None
    return float(
        np.polyfit(np.log([x for x, _ in ok]), np.log([y for _, y in ok]), 1)[0]
    )


def _sparse_sizes(first, last):
    """``(m, n)`` with ``m n`` doubling from ``first`` entries up to ``last``."""
    sizes, entries = [], float(first)
    while entries <= float(last) * 1.0001:
        m = int(round(np.sqrt(2 * entries)))
        sizes.append((m, m // 2))
        entries *= 2
    return sizes


def _sparse_mode(args):
    """Sizes doubling in entries, sparse input: seconds, peak memory, bytes/entry."""
    name = args.name
    old = {}
    if args.update and (RESULTS / f"{name}.json").exists():
        old = json.loads((RESULTS / f"{name}.json").read_text())
    commit = git_commit()
    tau = _calibrate_sparse_tau(args.density)
    print(f"tau = {tau:.4f} (about {args.density:.1%} ones)", flush=True)
    rows = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for m, n in _sparse_sizes(args.entries, args.max_entries):
            if args.total and time.perf_counter() - started > args.total:
                print(f"stopping before m = {m}: --total {args.total:g} s used")
                break
            path = os.path.join(tmp, f"X{m}.npz")
            density = _make_sparse(m, n, tau, path)
            for kind in args.kinds:
                out = _run_child(
                    kind,
                    path,
                    tau,
                    args.budget,
                    args.timeout,
                    args.input,
                    args.lpca_sweeps,
                )
                row = {"m": m, "n": n, "entries": m * n, "density": density}
                row.update(kind=kind, input=args.input, **out, commit=commit)
                if "peak_rss_mb" in row:
                    row["bytes_per_entry"] = row["peak_rss_mb"] * 2**20 / (m * n)
                    # what the method added to the process holding the data
                    row["method_mb"] = row["peak_rss_mb"] - row["loaded_rss_mb"]
                if kind == "rank_bound":
                    row["budget"] = args.budget
                if kind == "lpca_fit":
                    row["max_iter"] = args.lpca_sweeps
                rows.append(row)
                print(json.dumps(row), flush=True)
            os.remove(path)
    new = {(r["m"], r["kind"]) for r in rows}
    kept = [r for r in old.get("rows", []) if (r["m"], r["kind"]) not in new]
    rows = sorted(kept + rows, key=lambda r: (r["entries"], KINDS.index(r["kind"])))
    time_exp, mem_exp, added_exp = {}, {}, {}
    for kind in KINDS:
        rs = [r for r in rows if r["kind"] == kind and r.get("status") == "ok"]
        if not rs:
            continue
        if kind != "rank_bound":  # the rank bound runs for its budget
            time_exp[kind] = _slope(
                [r["entries"] for r in rs],
                [r["seconds"] if _completed(r) else None for r in rs],
            )
        mem_exp[kind] = _slope(
            [r["entries"] for r in rs], [r["peak_rss_mb"] for r in rs]
        )
        added_exp[kind] = _slope(
            [r["entries"] for r in rs], [max(r["method_mb"], 1.0) for r in rs]
        )
    result = {
        "tau": tau,
        "rank": RANK,
        "density": args.density,
        "input": args.input,
        "lpca_sweeps": args.lpca_sweeps,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_average_at_end": os.getloadavg(),
        "python": sys.version.split()[0],
        "rows": rows,
        "growth_exponent_in_entries": time_exp,
        "memory_exponent_in_entries": mem_exp,
        # the same for the memory the method added once the data was loaded
        "method_memory_exponent_in_entries": added_exp,
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2))
    print("seconds ~ entries^p:", json.dumps(time_exp))
    print("peak memory ~ entries^p:", json.dumps(mem_exp))
    print("memory added by the method ~ entries^p:", json.dumps(added_exp))
    _sparse_plot(rows, time_exp, mem_exp, RESULTS / f"{name}.png", args.density)
    return 0


def _sparse_plot(rows, time_exp, mem_exp, path, density):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
        return
    fig, (ax, mem, per) = plt.subplots(1, 3, figsize=(15, 4))
    for kind in KINDS:
        rs = [r for r in rows if r["kind"] == kind and r.get("status") == "ok"]
        if not rs:
            continue
        x = [r["entries"] for r in rs]
        done = [r for r in rs if _completed(r)]
        p = time_exp.get(kind)
        if kind != "rank_bound" and done:
            ax.loglog(
                [r["entries"] for r in done],
                [r["seconds"] for r in done],
                "o-",
                label=kind if p is None else f"{kind} (p = {p:.2f})",
            )
        q = mem_exp.get(kind)
        mem.loglog(
            x,
            [r["peak_rss_mb"] / 1024 for r in rs],
            "o-",
            label=kind if q is None else f"{kind} (p = {q:.2f})",
        )
        per.loglog(x, [r["bytes_per_entry"] for r in rs], "o-", label=kind)
    ax.set(xlabel="entries m x n", ylabel="seconds", title="Time (sparse input)")
    mem.set(
        xlabel="entries m x n",
        ylabel="peak resident memory (GB)",
        title=f"Peak memory, rank {RANK}, {density:.1%} ones",
    )
    per.set(xlabel="entries m x n", ylabel="bytes per entry", title="Memory per entry")
    for a in (ax, mem, per):
        a.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


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
    parser.add_argument(
        "--entries", type=float, help="sparse mode: first size in entries (2e6)"
    )
    parser.add_argument(
        "--max-entries", type=float, default=6.4e7, help="sparse mode: last size"
    )
    parser.add_argument("--density", type=float, default=0.005, help="sparse mode")
    parser.add_argument("--input", choices=("sparse", "dense"), default="sparse")
    parser.add_argument("--name", default="scaling_sparse", help="sparse mode output")
    parser.add_argument("--lpca-sweeps", type=int, default=LPCA_SWEEPS)
    parser.add_argument(
        "--total", type=float, default=None, help="sparse mode: no new size after s"
    )
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=REFERENCE,
        help="default benchmarks/results/, whose scaling*.json and .png the docs show",
    )
    args = parser.parse_args(argv)
    global RESULTS
    RESULTS = args.output_dir
    if args.entries is not None:
        return _sparse_mode(args)
    sizes = [2000, 4000] if args.quick else args.sizes
    kinds = list(KINDS)
    old = {}
    if args.update and (RESULTS / "scaling.json").exists():
        old = json.loads((RESULTS / "scaling.json").read_text())
    commit = git_commit()
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
    RESULTS.mkdir(parents=True, exist_ok=True)
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
