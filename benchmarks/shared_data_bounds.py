"""``rounding_rank_bounds`` with a short budget on every matrix of ``../shared/data``.

One call per data set (default methods, ``n_jobs=2``, ``random_state=0``), the
certificate checked again with :func:`~sklearn_rrank.certify_rounding`, the wall
time and the 1-minute load average after each call. Abstracts is left out (see
``anytime_curves.py``). Compare two commits by running the script at each and
comparing the intervals: no interval may be wider, no wall time above the budget
by more than 10%.

Usage: ``python benchmarks/shared_data_bounds.py OUT.json [--time-limit 20]``
"""

import argparse
import json
import os
import subprocess
import time

import numpy as np
import scipy.sparse as sp

from sklearn_rrank import certify_rounding, rounding_rank_bounds

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared")
NAMES = [
    "paleo",
    "apj",
    "americas_small",
    "dblp_picked_conf",
    "digits_bin8",
    "domino",
    "emea",
    "firewall1",
    "firewall2",
    "healthcare",
    "mushroom",
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--time-limit", type=float, default=20.0)
    args = parser.parse_args()
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.abspath(__file__)),
    ).stdout.strip()
    out = {"commit": commit, "time_limit": args.time_limit, "runs": {}}
    for name in NAMES:
        X = np.load(os.path.join(DATA, "data", f"{name}.npz"))["X"]
        X = X.toarray() if sp.issparse(X) else np.asarray(X)
        t0 = time.monotonic()
        r = rounding_rank_bounds(
            X, time_limit=args.time_limit, n_jobs=2, random_state=0
        )
        row = dict(
            shape=list(X.shape),
            lower=r.lower,
            upper=r.upper,
            lower_method=r.lower_method,
            upper_method=r.upper_method,
            wall=round(time.monotonic() - t0, 2),
            certificate_rechecked=bool(certify_rounding(X, r.L, r.R, tau=r.tau)),
            load_1min=os.getloadavg()[0],
        )
        out["runs"][name] = row
        print(name, row, flush=True)
    with open(args.out, "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
