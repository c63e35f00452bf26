"""Helpers the benchmark scripts share: data folder, run record, busy load, JSON.

Not part of the package. A script imports it as ``from _common import ...`` (Python
puts the script's folder first on ``sys.path``) before it imports ``sklearn_rrank``:
the import puts this checkout's package first on ``sys.path``, so a script measures
the code beside it, not an installed copy, unless ``PYTHONPATH`` names a folder
holding ``sklearn_rrank`` (how ``panel.py`` runs another revision).

* :func:`data_dir` and :func:`add_data_dir`: the shared data folder, from
  ``--data-dir``, else the environment variable ``SKLEARN_RRANK_DATA``, else
  ``../shared/data`` beside the repository; it is exported as
  ``SKLEARN_RRANK_DATA`` so the package's fetchers and child processes read it too.
* :func:`output_path` and :func:`add_output`: where a run is written. By default a
  script writes to ``benchmarks/results/candidates/`` (ignored by git); a reference
  run is written to ``benchmarks/results/`` on purpose with ``--output``.
* :func:`commit`, :func:`load1`, :func:`peak_rss_mb`, :func:`record`: what a run
  records beside its numbers (the machine is shared: read the load beside every
  wall time).
* :func:`busy`: processes ``python -c "while True: pass"`` beside a run.
* :func:`checkout`: a git revision (or a folder) as a folder holding
  ``sklearn_rrank``, for two versions run side by side at the same load.
* :func:`planted_fimi`: the planted 40000 x 5000 ``.fimi`` file (2e8 entries).
"""

import contextlib
import json
import os
import platform
import resource
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
CANDIDATES = RESULTS / "candidates"
#: shape of the planted ``.fimi`` matrix (rank 20, 0.5% ones)
FIMI_SHAPE = (40000, 5000)


def _this_checkout_first():
    named = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    if not any(p and (Path(p) / "sklearn_rrank").is_dir() for p in named):
        sys.path.insert(1, str(ROOT))


_this_checkout_first()


def data_dir(path=None):
    """The shared data folder (``path``, ``SKLEARN_RRANK_DATA`` or ../shared/data).

    The folder is exported as ``SKLEARN_RRANK_DATA`` for the package's fetchers.
    """
    if path is None:
        path = os.environ.get("SKLEARN_RRANK_DATA") or ROOT.parent / "shared" / "data"
    path = Path(path).expanduser().resolve()
    os.environ["SKLEARN_RRANK_DATA"] = str(path)
    return path


def add_data_dir(parser):
    """Add ``--data-dir`` to an argparse parser."""
    parser.add_argument(
        "--data-dir",
        default=None,
        help="shared data folder (default: $SKLEARN_RRANK_DATA, else ../shared/data "
        "beside the repository)",
    )


def add_output(parser, name):
    """Add ``--output`` (default ``results/candidates/<name>``) to a parser."""
    parser.add_argument(
        "--output",
        type=Path,
        default=CANDIDATES / name,
        help=f"JSON written (default: benchmarks/results/candidates/{name}; "
        f"the reference run is benchmarks/results/{name})",
    )


def output_path(path):
    """``path`` as a Path whose folder exists."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def parse_list(text, kind=int):
    """``"0,1,2"`` as ``[0, 1, 2]`` (``kind`` converts each item)."""
    return [kind(item) for item in str(text).split(",") if item.strip()]


def commit(cwd=HERE):
    """Short hash of the checkout at ``cwd`` (None outside git)."""
    try:
        return subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=cwd,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def load1():
    """The 1-minute load average, rounded to 0.01."""
    return round(os.getloadavg()[0], 2)


def peak_rss_mb():
    """Peak resident memory of this process so far, in MiB."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def machine():
    """Host, architecture and cores, for the record."""
    return f"{platform.node()} {platform.machine()}, {os.cpu_count()} cores (shared)"


def record(**fields):
    """The fields every run file starts with, then ``fields``."""
    return {"commit": commit(), "machine": machine(), **fields}


def write_json(path, obj, indent=1):
    """Write ``obj`` as JSON to ``path`` (its folder created), numpy scalars too."""

    def default(value):
        if isinstance(value, np.generic | np.ndarray):
            return value.tolist()
        if isinstance(value, Path):
            return str(value)
        raise TypeError(f"not JSON serializable: {type(value).__name__}")

    path = output_path(path)
    path.write_text(json.dumps(obj, indent=indent, default=default) + "\n")
    return path


@contextlib.contextmanager
def busy(n):
    """Run ``n`` processes ``python -c "while True: pass"`` for the block's time."""
    procs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)
    ]
    try:
        yield procs
    finally:
        for p in procs:
            p.kill()
            p.wait()


def checkout(rev, dest=None):
    """A folder holding ``sklearn_rrank`` at git revision ``rev``.

    A folder that exists is returned as it is (a worktree or an unpacked archive);
    otherwise ``git archive rev`` of the repository is unpacked into ``dest`` (a new
    temporary folder by default).
    """
    if Path(rev).is_dir():
        return Path(rev).resolve()
    dest = Path(dest or tempfile.mkdtemp(prefix=f"rrank_{rev}_"))
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile() as tar:
        subprocess.run(
            ["git", "archive", "--format=tar", rev, "sklearn_rrank"],
            cwd=ROOT,
            stdout=tar,
            check=True,
        )
        tar.seek(0)
        with tarfile.open(fileobj=tar) as archive:
            archive.extractall(dest)  # our own repository's archive
    return dest


def planted_fimi(path, m=FIMI_SHAPE[0], n=FIMI_SHAPE[1], k=20, density=0.005):
    """Write the planted ``m x n`` matrix (rank ``k``, seed 0) as a ``.fimi`` file.

    Gaussian factors, threshold at the ``1 - density`` quantile of a sample block,
    rows written by blocks of 2000. An existing file is kept.
    """
    path = Path(path)
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    L, R = rng.standard_normal((m, k)), rng.standard_normal((n, k))
    tau = float(np.quantile((L[:2000] @ R.T).ravel(), 1 - density))
    part = path.with_suffix(".part")
    with open(part, "w") as f:
        for i in range(0, m, 2000):
            for row in L[i : i + 2000] @ R.T >= tau:
                f.write(" ".join(map(str, np.flatnonzero(row))) + "\n")
    part.rename(path)
    return path
