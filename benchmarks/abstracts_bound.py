"""The certified rounding-rank bound of Abstracts from one ``rrank bounds`` run.

Runs, alone on the machine::

    /usr/bin/time -v rrank bounds abstracts --methods rank_one,spectral,rsvd,projlp \
        --time-limit T --n-jobs 2 --output cert.npz --json

then loads the saved factors again and checks them independently: the exact
product in float64 and the count of wrong entries (not the package's own
certificate only). From the curve of certified bounds it reads the first time the
bound is at most 4421 (R-SVD in the paper) and at most 449 (ProjLP in the paper,
437 hours). Peak resident memory is the one ``/usr/bin/time -v`` reports.

Usage::

    python benchmarks/abstracts_bound.py [--time-limit 3000] [--n-jobs 2]

Prints a summary and writes ``benchmarks/results/abstracts_bound.json``.
"""

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from sklearn_rrank import certify_rounding
from sklearn_rrank.datasets import fetch_abstracts

RESULTS = Path(__file__).resolve().parent / "results" / "abstracts_bound.json"
PAPER = {"rsvd": 4421, "projlp": 449, "projlp_hours": 437}


def first_time_at_most(report, bound):
    """Seconds since the start of the run at which a certified bound <= ``bound``.

    The curve of every method holds ``[seconds since the start, bound]`` pairs.
    """
    times = [
        t
        for entry in report
        if entry["kind"] == "upper"
        for t, b in entry.get("curve", [])
        if b <= bound
    ]
    return min(times) if times else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=3000.0)
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cert = Path(tmp) / "cert.npz"
        command = [
            "rrank",
            "bounds",
            "abstracts",
            "--methods",
            "rank_one,spectral,rsvd,projlp",
            "--time-limit",
            str(args.time_limit),
            "--n-jobs",
            str(args.n_jobs),
            "--output",
            str(cert),
            "--json",
        ]
        t0 = time.perf_counter()
        run = subprocess.run(
            ["/usr/bin/time", "-v", *command], capture_output=True, text=True
        )
        wall = time.perf_counter() - t0
        if run.returncode != 0:
            sys.exit(f"rrank failed ({run.returncode}):\n{run.stderr[-2000:]}")
        out = json.loads(run.stdout[run.stdout.index("{") :])
        peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", run.stderr)
        with np.load(cert) as saved:
            L, R = saved["L"], saved["R"]
    X = fetch_abstracts().data.astype(np.float64)
    wrong = int(np.count_nonzero((L @ R.T >= out["tau"]) != (X == 1)))
    out.update(
        data="abstracts",
        n_samples=X.shape[0],
        n_features=X.shape[1],
        command=" ".join(command[:-3] + ["--output", "cert.npz", "--json"]),
        peak_rss_kb=int(peak.group(1)) if peak else None,
        wall_seconds=round(wall, 2),
        first_at_most_4421=first_time_at_most(out["report"], PAPER["rsvd"]),
        first_at_most_449=first_time_at_most(out["report"], PAPER["projlp"]),
        paper=PAPER,
        machine=f"{os.cpu_count()} cores, {platform.machine()}, run alone",
        commit=subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=Path(__file__).parent,
        ).stdout.strip(),
        verified={
            "factor_width": int(L.shape[1]),
            "wrong_entries_float64": wrong,
            "certify_rounding": bool(certify_rounding(X, L, R, tau=out["tau"])),
        },
    )
    RESULTS.write_text(json.dumps(out, indent=1) + "\n")
    print(
        f"bound {out['upper']} ({out['upper_method']}), lower {out['lower']}; "
        f"<= 4421 at {out['first_at_most_4421']} s, <= 449 at "
        f"{out['first_at_most_449']} s; peak {out['peak_rss_kb']} kB; "
        f"verified: {out['verified']}; saved {RESULTS}"
    )


if __name__ == "__main__":
    main()
