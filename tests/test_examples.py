"""Run every gallery example (``examples/plot_*.py``) as a script.

Each example runs in a fresh interpreter with the non-interactive Agg backend, in a
temporary working directory, and must exit with status 0. The examples carry their
own checks (for instance the Dask example asserts that the cluster reproduces the
serial result exactly), so a failing assertion there fails this test. Wall-clock time
is not asserted (the gallery aims at under 20 s per example on two free cores); the
timeout only stops a hung example.
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


def _run(script, cwd, **env):
    """Run one example script with the Agg backend (and ``env`` added)."""
    return subprocess.run(
        [sys.executable, str(script)],
        cwd=cwd,
        env=dict(os.environ, MPLBACKEND="Agg", **env),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(script, tmp_path):
    proc = _run(script, tmp_path)
    assert proc.returncode == 0, (
        f"{script.name} exited with {proc.returncode}\n"
        f"--- stdout ---\n{proc.stdout[-3000:]}\n--- stderr ---\n{proc.stderr[-3000:]}"
    )


def test_dask_example_without_distributed(tmp_path):
    """Without ``distributed`` the Dask example says so and runs on joblib threads."""
    script = next(p for p in EXAMPLES if p.stem == "plot_dask_cluster")
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "distributed.py").write_text(
        "raise ImportError('distributed is blocked for this test')\n"
    )
    path = os.pathsep.join(
        [str(blocker), str(Path(__file__).resolve().parents[1])]
        + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    )
    proc = _run(script, tmp_path, PYTHONPATH=path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "distributed is not installed" in proc.stdout
    assert "Threaded and serial results are identical." in proc.stdout


@pytest.mark.parametrize("script", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_says_it_needs_the_plot_extra(script):
    """Every example draws with matplotlib: its header names the ``plot`` extra."""
    header = script.read_text().split('"""')[1]
    assert "``plot`` extra" in header and "[plot]" in header, script.name
