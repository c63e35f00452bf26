"""Peak memory of the default runs on sparse input (issue 28, part 1).

Each case runs in its own process under ``/usr/bin/time -v`` (its "Maximum resident
set size" is the peak) with the data handed over as a ``scipy.sparse`` CSR matrix:

* ``abstracts_lpca``: ``RoundingRankFactorization(100, method="lpca", n_jobs=2,
  time_limit=T, method_params={"fit_bias": True})`` on Abstracts (12841 x 4894,
  0.9% ones);
* ``abstracts_lpca30``: the same with ``max_iter=30`` and no effective time limit
  (30 L-BFGS iterations: the errors are comparable between commits);
* ``abstracts_bounds``: ``rounding_rank_bounds`` with the default methods,
  ``time_limit=T``, ``n_jobs=2``;
* ``planted_lpca`` / ``planted_rsvd``: a planted 50000 x 5000 matrix of rank 20 at
  0.5% ones (Gaussian factors, threshold at the 99.5% quantile of a sample block,
  built by blocks of rows straight into CSR): ``RoundingRankFactorization(20,
  method="lpca", time_limit=T)`` and ``rounding_rank_bounds(methods=("rsvd",),
  time_limit=T)``;
* ``planted_fimi_bounds``: ``rrank bounds FILE.fimi --time-limit T --n-jobs 2
  --json`` on a planted 40000 x 5000 ``.fimi`` file (2e8 entries, 0.5% ones, rank
  20, the generator above), through the command line's loader;
* ``planted_fimi_vc`` / ``planted_fimi_rsvd``: the VC bound / R-SVD alone on
  that matrix, sparse as loaded (``rounding_rank_bounds(methods=("vc",),
  time_limit=T)``; ``--time-limit 0`` means no limit).

Usage::

    python benchmarks/sparse_memory.py CASE [--time-limit T]   # one case, JSON line
    python benchmarks/sparse_memory.py --all [--time-limit T]  # every case

``--all`` writes ``--output`` (default
``benchmarks/results/candidates/sparse_memory.json``; merging the cases into what is
there, keyed by case and commit), with the 1-minute load average at the start of
each run: the machine is shared and the seconds are noisy. ``--seed`` is the
``random_state`` of every call (0 by default); Abstracts is read from the data
folder (``--data-dir``). The planted ``.fimi`` file is also the long tier's
``planted_fimi`` of ``panel.py``.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import (
    FIMI_SHAPE,
    add_data_dir,
    add_output,
    commit,
    data_dir,
    load1,
    planted_fimi,
    write_json,
)

HERE = Path(__file__).resolve().parent
CASES = (
    "abstracts_lpca",
    "abstracts_lpca30",
    "abstracts_bounds",
    "planted_lpca",
    "planted_rsvd",
    "planted_fimi_bounds",
    "planted_fimi_vc",
    "planted_fimi_rsvd",
)


def _planted(path, m=50000, n=5000, k=20, density=0.005, seed=0):
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    L, R = rng.standard_normal((m, k)), rng.standard_normal((n, k))
    tau = float(np.quantile((L[:2000] @ R.T).ravel(), 1 - density))
    parts = [
        sp.csr_matrix((L[i : i + 2000] @ R.T >= tau).astype(np.uint8))
        for i in range(0, m, 2000)
    ]
    sp.save_npz(path, sp.vstack(parts).tocsr())


def _run_cli(path, time_limit, seed=0):
    """``rrank bounds PATH --json`` in this process; its JSON as a dict."""
    import contextlib
    import io

    from sklearn_rrank._cli._main import main as rrank

    argv = ["bounds", path, "--n-jobs", "2", "--json", "-q"]
    argv += ["--random-state", str(seed)]
    if time_limit is not None:
        argv += ["--time-limit", str(time_limit)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rrank(argv)
    return json.loads(out.getvalue())


def _abstracts():
    from sklearn_rrank.datasets import fetch_abstracts

    return fetch_abstracts(sparse=True).data


def run_case(case, time_limit, planted_path, seed=0):
    import warnings

    import scipy.sparse as sp

    from sklearn_rrank import RoundingRankFactorization, rounding_rank_bounds

    warnings.simplefilter("ignore")
    if case == "planted_fimi_bounds":
        t0 = time.perf_counter()
        res = _run_cli(planted_path, time_limit, seed)
        keep = ("lower", "upper", "lower_method", "upper_method")
        out = {"case": case, "shape": list(FIMI_SHAPE)}
        out.update({key: res.get(key) for key in keep})
        out["report"] = [
            [r["method"], r["status"], r["bound"], round(r["seconds"], 1)]
            for r in res.get("report", [])
        ]
        out["seconds"] = time.perf_counter() - t0
        out["time_limit"] = time_limit
        return out
    if case in ("planted_fimi_vc", "planted_fimi_rsvd"):
        from sklearn_rrank.datasets import load_binary_matrix

        X = load_binary_matrix(planted_path, sparse=True)
        t0 = time.perf_counter()
        method = case.rsplit("_", 1)[1]
        b = rounding_rank_bounds(
            X, methods=(method,), time_limit=time_limit or None, random_state=seed
        )
        (row,) = [r for r in b.report if r["method"] == method]
        return {
            "case": case,
            "shape": list(X.shape),
            "ones": int(X.nnz),
            "bound": row["bound"],
            "message": row["message"],
            "seconds": time.perf_counter() - t0,
            "time_limit": time_limit,
        }
    X = _abstracts() if case.startswith("abstracts") else sp.load_npz(planted_path)
    X = sp.csr_matrix(X)
    t0 = time.perf_counter()
    out = {"case": case, "shape": list(X.shape), "ones": int(X.nnz)}
    if case in ("abstracts_lpca", "abstracts_lpca30", "planted_lpca"):
        k = 100 if case.startswith("abstracts") else 20
        kw = {"time_limit": time_limit}
        if case == "abstracts_lpca30":
            kw = {"max_iter": 30, "time_limit": 1e5}
        # the column bias the recorded cells used (the default is now "global")
        est = RoundingRankFactorization(
            k,
            method="lpca",
            random_state=seed,
            n_jobs=2,
            method_params={"fit_bias": True},
            **kw,
        ).fit(X)
        out.update(
            errors=int(est.reconstruction_err_),
            relative_error=float(est.relative_error_),
            n_iter=int(est.n_iter_),
        )
    else:
        methods = "default" if case == "abstracts_bounds" else ("rsvd",)
        b = rounding_rank_bounds(
            X, methods=methods, time_limit=time_limit, n_jobs=2, random_state=seed
        )
        out.update(
            lower=b.lower,
            upper=b.upper,
            upper_method=b.upper_method,
            report=[
                [r["method"], r["status"], r["bound"], round(r["seconds"], 1)]
                for r in b.report
            ],
        )
    out["seconds"] = time.perf_counter() - t0
    out["time_limit"] = time_limit
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", nargs="?", choices=CASES)
    parser.add_argument("--all", action="store_true")
    parser.add_argument("--time-limit", type=float, default=120.0)
    parser.add_argument(
        "--planted", default=None, help="path of the planted .npz (.fimi cases)"
    )
    parser.add_argument(
        "--cases", default=None, help="comma-separated cases of --all (default all)"
    )
    parser.add_argument("--seed", type=int, default=0, help="random_state")
    add_data_dir(parser)
    add_output(parser, "sparse_memory.json")
    args = parser.parse_args(argv)
    data_dir(args.data_dir)
    if args.case:
        row = run_case(args.case, args.time_limit, args.planted, args.seed)
        print(json.dumps(row))
        return 0
    if not args.all:
        parser.error("give a case or --all")
    out = Path(args.output)
    results = json.loads(out.read_text()) if out.exists() else {"runs": []}
    revision = commit()
    cases = CASES if args.cases is None else tuple(args.cases.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        planted = os.path.join(tmp, "planted.npz")
        fimi = os.path.join(tmp, "planted.fimi")
        if any(not case.startswith(("abstracts", "planted_fimi")) for case in cases):
            _planted(planted)
        if any(case.startswith("planted_fimi") for case in cases):
            planted_fimi(fimi)
        for case in cases:
            load = load1()
            data = fimi if case.startswith("planted_fimi") else planted
            cmd = ["/usr/bin/time", "-v", sys.executable, __file__, case]
            cmd += ["--time-limit", str(args.time_limit), "--planted", data]
            cmd += ["--seed", str(args.seed)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            peak = re.search(
                r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr
            )
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            row.update(
                commit=revision,
                seed=args.seed,
                peak_rss_mb=int(peak.group(1)) / 1024 if peak else None,
                load_average_1min=load,
            )
            print(json.dumps(row), flush=True)
            results["runs"] = [
                r
                for r in results["runs"]
                if (r["case"], r.get("commit")) != (case, revision)
            ] + [row]
    write_json(out, results, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
