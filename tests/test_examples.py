"""Run every gallery example (``examples/plot_*.py``) as a script.

Each example runs in a fresh interpreter with the non-interactive Agg backend, in a
temporary working directory, and must exit with status 0. The examples carry their
own checks (for instance the Dask example asserts that the cluster reproduces the
serial result exactly), so a failing assertion there fails this test. Wall-clock time
is not asserted (the gallery aims at well under 60 s per example); the timeout only
stops a hung example.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples").glob("plot_*.py"))
TIMEOUT = 300  # seconds; a safety net against hangs, not a speed requirement


def test_examples_found():
    assert len(EXAMPLES) >= 5, [p.name for p in EXAMPLES]


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(script, tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg")
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert proc.returncode == 0, (
        f"{script.name} exited with {proc.returncode}\n"
        f"--- stdout ---\n{proc.stdout[-3000:]}\n--- stderr ---\n{proc.stderr[-3000:]}"
    )
