"""Does ``rrank bounds --time-limit T`` end within its budget, idle and under load?

The matrix of issue 25: random 500 x 300 and 2000 x 1000 binary files at 1% and 20%
ones, budgets of 5 and 10 seconds, each run once on an idle machine and once with
two busy processes (``python -c "while True: pass"``) beside it: 16 runs. Each run is
the whole command as a user types it (``rrank bounds FILE --time-limit T --quiet
--json``), timed from the outside; the start-up of Python and the package (``rrank
--help``, the fastest of three, timed in the same run) is measured idle and again
under each load. A run is inside its budget when ``wall <= 1.1 T + start-up``: the
rows say it for the start-up under the run's own load (``inside``) and for the idle
start-up (``inside_idle_startup``), and give the command's own seconds after its
imports (``command_seconds``, from ``--json``).

Prints a table and saves ``--output`` (default
``benchmarks/results/candidates/budget_adherence.json``).

Usage: ``python benchmarks/budget_adherence.py [--budgets 5,10] [--busy 2]
[--no-load] [--seed 0] [--output PATH]``
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from _common import add_output, busy, load1, parse_list, record, write_json


def _wall(cmd):
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True)
    return time.perf_counter() - t0, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default="5,10")
    parser.add_argument("--no-load", action="store_true", help="idle runs only")
    parser.add_argument("--busy", type=int, default=2, help="busy processes, loaded")
    parser.add_argument("--seed", type=int, default=0, help="of the random matrices")
    add_output(parser, "budget_adherence.json")
    args = parser.parse_args()
    budgets = parse_list(args.budgets, float)
    rrank = [sys.executable, "-m", "sklearn_rrank"]
    tmp = tempfile.mkdtemp()
    files = []
    rng = np.random.RandomState(args.seed)
    for m, n in ((500, 300), (2000, 1000)):
        for density in (0.01, 0.2):
            path = os.path.join(tmp, f"random_{m}x{n}_{int(density * 100)}pct.npy")
            np.save(path, (rng.rand(m, n) < density).astype(np.uint8))
            files.append(path)
    rows = []
    loads = [0] if args.no_load else [0, args.busy]
    startups = {}
    for n_busy in loads:
        with busy(n_busy):
            time.sleep(1.0 if n_busy else 0.0)
            startups[n_busy] = min(_wall([*rrank, "--help"])[0] for _ in range(3))
            startup = startups[n_busy]
            for path in files:
                for budget in budgets:
                    cmd = [*rrank, "bounds", path, "--time-limit", str(budget)]
                    wall, out = _wall([*cmd, "--quiet", "--json"])
                    ok = out.returncode == 0
                    res = json.loads(out.stdout) if ok else {}
                    row = {
                        "file": os.path.basename(path),
                        "budget": budget,
                        "busy_processes": n_busy,
                        "load_average_1min": load1(),
                        "wall_seconds": wall,
                        "startup_seconds": startup,
                        "inside": wall <= 1.1 * budget + startup,
                        "inside_idle_startup": wall <= 1.1 * budget + startups[0],
                        "command_seconds": res.get("seconds"),
                        "returncode": out.returncode,
                        "lower": res.get("lower"),
                        "upper": res.get("upper"),
                    }
                    rows.append(row)
                    print(
                        f"{row['file']:28s} T={budget:5.1f}  busy={n_busy}  "
                        f"wall {wall:6.2f} s  {'inside' if row['inside'] else 'OVER'}"
                        f" (idle start-up: "
                        f"{'inside' if row['inside_idle_startup'] else 'OVER'})"
                        f"  [{row['lower']}, {row['upper']}]",
                        flush=True,
                    )
    n_in = sum(r["inside"] for r in rows)
    n_idle = sum(r["inside_idle_startup"] for r in rows)
    ups = ", ".join(f"{s:.2f} s with {b} busy" for b, s in startups.items())
    print(
        f"start-up {ups}; {n_in} of {len(rows)} runs inside their budget "
        f"({n_idle} with the idle start-up)"
    )
    out = record(
        seed=args.seed,
        startup_seconds=startups[0],
        startup_seconds_by_busy=startups,
        rows=rows,
        inside=n_in,
        inside_idle_startup=n_idle,
    )
    print(f"saved {write_json(args.output, out)}")


if __name__ == "__main__":
    main()
