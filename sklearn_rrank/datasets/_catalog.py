"""The named data sets of the command line: ``digits`` and the paper's three."""

import os

from sklearn_rrank.datasets._digits import load_digits_binary
from sklearn_rrank.datasets._fetchers import (
    _REMOTE,
    _data_home_path,
    _url,
    fetch_abstracts,
    fetch_apj,
    fetch_paleo,
)

__all__ = ["DATASETS", "dataset_status", "load_dataset"]

#: data set name -> loader (the names the ``rrank`` command line accepts)
DATASETS = {
    "digits": load_digits_binary,
    "paleo": fetch_paleo,
    "apj": fetch_apj,
    "abstracts": fetch_abstracts,
}

# digits: shape and ones of load_digits_binary() (built in, never cached)
_DIGITS = {"shape": (1797, 64), "n_ones": 37151}


def load_dataset(name, *, data_home=None, sparse=False):
    """The Bunch of data set ``name``; the paper's sets come from ``data_home``."""
    if name not in DATASETS:
        raise ValueError(
            f"unknown data set {name!r}; the data sets are {', '.join(DATASETS)}."
        )
    if name in _REMOTE:
        return DATASETS[name](data_home=data_home, sparse=sparse)
    return DATASETS[name](sparse=sparse)


def dataset_status(data_home=None):
    """One dict a data set: name, shape, ones, whether and where it is cached.

    Nothing is loaded or downloaded: ``cached`` is whether the data home holds the
    file (None for ``digits``, which is built from scikit-learn's data).
    """
    home = _data_home_path(data_home)
    rows = [
        {
            "name": "digits",
            "shape": _DIGITS["shape"],
            "n_ones": _DIGITS["n_ones"],
            "cached": None,
            "file": None,
            "source": "scikit-learn's load_digits, pixel >= 8 as 1 (built in)",
            "licence": "BSD-3-Clause (as shipped with scikit-learn)",
        }
    ]
    for name, remote in _REMOTE.items():
        path = os.path.join(home, remote.filename)
        rows.append(
            {
                "name": name,
                "shape": remote.shape,
                "n_ones": remote.n_ones,
                "cached": os.path.isfile(path),
                "file": path,
                "source": _url(remote),
                "licence": remote.licence,
            }
        )
    return rows
