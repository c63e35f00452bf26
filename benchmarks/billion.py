"""The 1e9-entry targets of issue 28, each run under ``/usr/bin/time -v``.

The matrix: planted 200,000 x 5,000 at 0.5% ones, rank 20 (the generator
``_make_sparse`` of ``benchmarks/scaling.py``: uniform factors on [-1/2, 1/2], the
threshold the 99.5% quantile of a 2000 x 1000 sample), written once as a
``scipy.sparse`` ``.npz`` outside the repository (``--data``; made if missing).

* ``bounds``: ``rrank bounds DATA --time-limit T --n-jobs 2 --json`` (target: a
  certified upper bound <= 40 within 30 minutes, under 4 GB);
* ``lpca``: ``RoundingRankFactorization(20, method="lpca", time_limit=T,
  n_jobs=2)`` fitted on the CSR matrix (target: relative error <= 0.05 within 30
  minutes, under 4 GB); ``--method-params '{"fit_bias": "global"}'`` passes the
  method's parameters (``method_params``).

Usage::

    python benchmarks/billion.py bounds --data /work/bigdata/planted_200k_5k.npz
    python benchmarks/billion.py lpca --data /work/bigdata/planted_200k_5k.npz

``bounds`` runs on any data file (``--n-jobs None`` leaves rrank's default), e.g. the
Abstracts target ``--data abstracts_nsf.npz --time-limit 600`` (a relative path that
exists in the data folder, ``--data-dir``, is read from there). ``--seed`` is the
``random_state`` of both cases (0 by default).

``bounds --certificate PATH`` also writes the certificate (``rrank --output``) and
re-checks it in a separate process (``_recheck``: ``certify_rounding`` on the data
file and the saved factors), recorded as ``"recheck"``.

Each run appends a record to ``--output`` (default
``benchmarks/results/candidates/billion.json``): the commit, the
1-minute load average at the start and at the end, the wall-clock seconds, the peak
resident memory (``Maximum resident set size``) and the result.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from _common import add_data_dir, add_output, commit, data_dir, load1, write_json

HERE = Path(__file__).resolve().parent
M, N, DENSITY = 200_000, 5_000, 0.005


def _make(path):
    sys.path.insert(0, str(HERE))
    import scaling

    tau = scaling._calibrate_sparse_tau(DENSITY)
    scaling._make_sparse(M, N, tau, path)


def _lpca(data, time_limit, method_params=None, seed=0):
    """Child: fit L-PCA on the CSR matrix, print one JSON line."""
    import warnings

    import scipy.sparse as sp

    from sklearn_rrank import RoundingRankFactorization

    warnings.simplefilter("ignore")
    X = sp.load_npz(data).tocsr()
    t0 = time.perf_counter()
    est = RoundingRankFactorization(
        20,
        method="lpca",
        time_limit=time_limit,
        n_jobs=2,
        random_state=seed,
        method_params=method_params,
    ).fit(X)
    print(
        json.dumps(
            {
                "errors": int(est.reconstruction_err_),
                "relative_error": float(est.relative_error_),
                "n_iter": int(est.n_iter_),
                "fit_seconds": time.perf_counter() - t0,
            }
        )
    )


def _recheck(data, certificate):
    """Child: certify the saved factors against the data file, print one JSON line."""
    import numpy as np
    import scipy.sparse as sp

    from sklearn_rrank import certify_rounding
    from sklearn_rrank.datasets import load_binary_matrix

    # any data file rrank reads (a dense .npz such as abstracts_nsf.npz too), kept
    # sparse where it is stored sparse
    X = load_binary_matrix(data, sparse=True)
    with np.load(certificate) as z:
        factors = []
        for name in ("L", "R"):
            if name in z:
                factors.append(z[name])
            else:
                factors.append(
                    sp.csr_matrix(
                        (z[f"{name}_data"], z[f"{name}_indices"], z[f"{name}_indptr"]),
                        shape=tuple(z[f"{name}_shape"]),
                    )
                )
        tau = float(z["tau"])
    t0 = time.perf_counter()
    ok = bool(certify_rounding(X, *factors, tau=tau))
    rank = int(factors[0].shape[1])
    print(
        json.dumps({"certified": ok, "rank": rank, "seconds": time.perf_counter() - t0})
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("case", choices=("bounds", "lpca", "_lpca_child", "_recheck"))
    parser.add_argument("--data", required=True)
    parser.add_argument("--time-limit", type=float, default=1800.0)
    parser.add_argument("--n-jobs", default="2", help="bounds: rrank's --n-jobs")
    parser.add_argument(
        "--method-params", default=None, help="lpca: JSON of the method's parameters"
    )
    parser.add_argument(
        "--certificate",
        default=None,
        help="bounds: write the certificate here (.npz) and re-check it",
    )
    parser.add_argument("--seed", type=int, default=0, help="random_state")
    add_data_dir(parser)
    add_output(parser, "billion.json")
    args = parser.parse_args(argv)
    root = data_dir(args.data_dir)
    if not os.path.isabs(args.data) and (root / args.data).exists():
        args.data = str(root / args.data)
    if args.case == "_recheck":
        _recheck(args.data, args.certificate)
        return 0
    if args.case == "_lpca_child":
        params = json.loads(args.method_params) if args.method_params else None
        _lpca(args.data, args.time_limit, params, args.seed)
        return 0
    if not os.path.exists(args.data):
        _make(args.data)
    if args.case == "bounds":
        cmd = [sys.executable, "-m", "sklearn_rrank", "bounds", args.data]
        cmd += ["--time-limit", str(args.time_limit), "--json", "-q"]
        cmd += ["--random-state", str(args.seed)]
        cmd += ["--n-jobs", args.n_jobs] if args.n_jobs != "None" else []
        cmd += ["--output", args.certificate] if args.certificate else []
    else:
        cmd = [sys.executable, __file__, "_lpca_child", "--data", args.data]
        cmd += ["--time-limit", str(args.time_limit), "--seed", str(args.seed)]
        if args.method_params:
            cmd += ["--method-params", args.method_params]
    record = {"case": args.case, "commit": commit(), "data": args.data}
    record["command"] = " ".join(cmd[1:])
    record["seed"] = args.seed
    record["load_start"] = load1()
    t0 = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True)
    record["seconds"] = time.perf_counter() - t0
    record["load_end"] = load1()
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    record["peak_rss_mb"] = int(peak.group(1)) / 1024 if peak else None
    record["exit_code"] = proc.returncode
    record["time_limit"] = args.time_limit
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        out = {"stdout": proc.stdout[-2000:], "stderr": proc.stderr[-2000:]}
    if args.case == "bounds" and "report" in out:
        out = {
            key: out[key]
            for key in ("lower", "upper", "lower_method", "upper_method", "seconds")
        } | {
            "report": [
                [
                    r["method"],
                    r["status"],
                    r["bound"],
                    round(r["seconds"], 1),
                    r["message"][:200],
                    r.get("errors_by_k", {}),
                ]
                for r in out["report"]
            ]
        }
    record["result"] = out
    if args.case == "bounds" and args.certificate and proc.returncode == 0:
        check = subprocess.run(
            [sys.executable, __file__, "_recheck", "--data", args.data]
            + ["--certificate", args.certificate],
            capture_output=True,
            text=True,
        )
        try:
            record["recheck"] = json.loads(check.stdout)
        except json.JSONDecodeError:
            record["recheck"] = {"stderr": check.stderr[-2000:]}
    out_path = Path(args.output)
    runs = json.loads(out_path.read_text())["runs"] if out_path.exists() else []
    runs.append(record)
    write_json(out_path, {"runs": runs})
    print(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
