"""``rounding_rank_bounds`` with no time limit on the small shared matrices.

    python benchmarks/unlimited_bounds.py CODE OUT.json [MAX_ENTRIES] [TIMEOUT] [SEED]

Every matrix of ``../shared/data`` and ``../shared/data/panel`` with at most
MAX_ENTRIES entries (default 3e5), smallest first, each in its own subprocess with
CODE (a checkout of the package) first on ``sys.path``, killed after TIMEOUT
seconds (default 240; reported as ``timeout``). Two checkouts run side by side by
starting two of these at once. One JSON line per matrix is printed as it ends (the
load average with it), and OUT.json holds them all.
"""

import glob
import json
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "shared", "data")

CHILD = """
import json, sys, time
import numpy as np
sys.path.insert(0, sys.argv[1])
from sklearn_rrank import rounding_rank_bounds
X = np.load(sys.argv[2])["X"]
t = time.perf_counter()
b = rounding_rank_bounds(X, random_state=int(sys.argv[3]))
seconds = time.perf_counter() - t
print(json.dumps({"lower": int(b.lower), "upper": int(b.upper), "seconds": seconds,
                  "upper_method": b.upper_method}))
"""


def main():
    code, out = sys.argv[1], sys.argv[2]
    max_entries = int(float(sys.argv[3])) if len(sys.argv) > 3 else 300_000
    timeout = float(sys.argv[4]) if len(sys.argv) > 4 else 240.0
    seed = int(sys.argv[5]) if len(sys.argv) > 5 else 0
    files = []
    for f in glob.glob(f"{SHARED}/*.npz") + glob.glob(f"{SHARED}/panel/*.npz"):
        size = np.load(f)["X"].size
        if size <= max_entries:
            files.append((size, f))
    runs = []
    for size, f in sorted(files):
        args = [sys.executable, "-c", CHILD, code, f, str(seed)]
        t = time.perf_counter()
        try:
            p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
            if p.returncode == 0:
                r = json.loads(p.stdout.strip().splitlines()[-1])
            else:
                r = {"error": p.stderr[-500:]}
        except subprocess.TimeoutExpired:
            r = {"timeout": timeout}
        r.update(
            name=os.path.relpath(f, SHARED),
            entries=size,
            wall=time.perf_counter() - t,
            load=os.getloadavg()[0],
        )
        runs.append(r)
        print(json.dumps(r), flush=True)
        with open(out, "w") as fh:
            record = {"code": code, "seed": seed, "timeout": timeout, "runs": runs}
            json.dump(record, fh, indent=1)


if __name__ == "__main__":
    main()
