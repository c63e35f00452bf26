"""Check the fetchers' parsers against the project's shared copies of the data.

No network is needed: for Paleo, APJ and Abstracts the matrix in
``../shared/data/<file>.npz`` is written in its source file's format (Paleo: a
``m n`` header and rows of 0/1, a trailing ``*`` marker on every 11th row (the
source has it on 11 rows); APJ: 1-based ``user permission`` pairs; Abstracts: one
line of 0-based column ids per row, empty rows as blank lines), parsed back by the
parser its fetcher uses, and compared with the copy and with the fetcher's pinned shape,
number of ones and SHA-256. Then each fetcher reads the shared folder as its data
home. Run from the repository root::

    python benchmarks/fetch_parsers_roundtrip.py [--data-dir ../shared/data]
"""

import argparse
import os
import tempfile

import numpy as np
from _common import add_data_dir, data_dir

from sklearn_rrank.datasets import DATASETS
from sklearn_rrank.datasets._fetchers import _PARSERS, _REMOTE, matrix_sha256


def write_source(X, parser, path):
    """Write ``X`` in the source format that ``parser`` reads."""
    with open(path, "w") as fh:
        if parser == "dense_text":
            fh.write(f"{X.shape[0]} {X.shape[1]}\n")
            for i, row in enumerate(X):
                marker = "* " if i % 11 == 0 else ""
                fh.write(" ".join(map(str, row)) + " " + marker + "\n")
        elif parser == "pairs":
            for j in range(X.shape[1]):
                for i in np.flatnonzero(X[:, j]):
                    fh.write(f"{i + 1:9d} {j + 1:10d}\n")
        else:
            for row in X:
                fh.write(" ".join(map(str, np.flatnonzero(row))) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_data_dir(parser)
    args = parser.parse_args()
    args.data_home = data_dir(args.data_dir)
    with tempfile.TemporaryDirectory() as tmp:
        for name, remote in _REMOTE.items():
            with np.load(args.data_home / remote.filename) as z:
                X = z["X"]
            path = os.path.join(tmp, name)
            write_source(X, remote.parser, path)
            Y = _PARSERS[remote.parser](path, remote.shape)
            fetched = DATASETS[name](data_home=args.data_home).data
            print(
                f"{name:<10} parse == copy: {np.array_equal(X, Y)}  "
                f"SHA-256 pinned: {matrix_sha256(Y) == remote.sha256}  "
                f"ones {int(Y.sum())} (pinned {remote.n_ones})  "
                f"fetcher == copy: {np.array_equal(fetched, X)}"
            )


if __name__ == "__main__":
    main()
