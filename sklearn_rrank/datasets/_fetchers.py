"""Fetchers of the paper's real data sets: downloaded once, verified, cached.

As scikit-learn's ``fetch_*`` functions do, each fetcher reads
``<data_home>/<file>.npz`` when it is there and otherwise downloads the source
file from its public repository at a pinned commit, parses it into the binary
matrix, checks the matrix's SHA-256 and stores it in the data home.
"""

import hashlib
import http.client
import os
import tempfile
import urllib.request
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

__all__ = ["fetch_abstracts", "fetch_apj", "fetch_paleo", "get_data_home"]

# The paper's Table 2 (rounding-rank upper bounds, times) and Table 3 (relative
# reconstruction errors, times) for each data set; None where the paper has no value.
_PAPER = {
    "paleo": {
        "name_in_paper": "Paleo (NOW)",
        "shape": (124, 139),
        "rank": 123,
        "rank_upper_bounds": {"projlp": 26, "lpca": 13, "rsvd": 68},
        "rank_seconds": {"projlp": 10, "lpca": 271, "rsvd": 1},
        "relative_error": {
            "projlp": {5: 0.701, 10: 0.360, 20: 0.037},
            "lpca": {5: 0.552, 10: 0.089, 20: 0.000},
            "rsvd": {5: 0.697, 10: 0.516, 20: 0.260},
            "tsvd": {5: 0.515, 10: 0.410, 20: 0.283},
            "asso": {5: 0.793, 10: 0.706, 20: 0.602},
        },
        "error_seconds": {
            "projlp": {5: 2, 10: 2, 20: 2},
            "lpca": {5: 11, 10: 12, 20: 17},
            "rsvd": {5: 1, 10: 1, 20: 1},
            "tsvd": {5: 1, 10: 1, 20: 1},
            "asso": {5: 1, 10: 1, 20: 1},
        },
    },
    "apj": {
        "name_in_paper": "APJ",
        "shape": (2044, 1164),
        "rank": 455,
        "boolean_rank": 453,
        "rank_upper_bounds": {"projlp": 29, "lpca": 9, "rsvd": 443},
        "rank_seconds": {"projlp": 151, "lpca": 109 * 60, "rsvd": 35},
        "relative_error": {
            "projlp": {5: 0.626, 10: 0.302, 15: 0.099},
            "lpca": {5: 0.631, 10: 0.194, 15: 0.034},
            "rsvd": {5: 0.641, 10: 0.611, 15: 0.573},
            "tsvd": {5: 0.640, 10: 0.596, 15: 0.559},
            "asso": {5: 0.663, 10: 0.637, 15: 0.603},
        },
        "error_seconds": {
            "projlp": {5: 54, 10: 64, 15: 63},
            "lpca": {5: 39, 10: 235, 15: 297},
            "rsvd": {5: 1, 10: 1, 15: 1},
            "tsvd": {5: 1, 10: 1, 15: 1},
            "asso": {5: 8, 10: 17, 15: 23},
        },
    },
    "abstracts": {
        "name_in_paper": "Abstracts",
        "shape": (12841, 4894),
        "rank": 4893,
        "rank_upper_bounds": {"projlp": 449, "lpca": None, "rsvd": 4421},
        "rank_seconds": {"projlp": 437 * 3600, "lpca": None, "rsvd": 9 * 3600},
        "relative_error": {
            "projlp": {10: 1.152, 50: 1.091, 100: 0.842},
            "lpca": {10: 0.993, 50: 0.863, 100: 0.459},
            "rsvd": {10: 0.995, 50: 0.937, 100: 0.843},
            "tsvd": {10: 0.917, 50: 0.838, 100: 0.766},
            "asso": {10: 0.988, 50: 0.971, 100: 0.960},
        },
        "error_seconds": {
            "projlp": {10: 9627, 50: 27201, 100: 72956},
            "lpca": {10: 675, 50: 17849, 100: 39954},
            "rsvd": {10: 3, 50: 6, 100: 13},
            "tsvd": {10: 2, 50: 6, 100: 13},
            "asso": {10: 2366, 50: 11701, 100: 23023},
        },
    },
}

# Downloads come from here, unless this environment variable names a mirror (a
# site without access to GitHub, a local copy; the tests' local server)
_BASE_URL = "https://raw.githubusercontent.com"
_URL_ENV = "SKLEARN_RRANK_DATA_URL"
# seconds without an answer from the server before a download fails
_TIMEOUT = 60
_CHUNK = 1 << 16


@dataclass(frozen=True)
class _Remote:
    """Where a data set comes from and what its matrix must be.

    ``sha256`` is the SHA-256 of the matrix as C-ordered uint8 bytes
    (:func:`matrix_sha256`), ``shape`` its shape, ``n_ones`` its number of ones.
    ``url_path`` is ``owner/repository/commit/path`` below the base URL
    (:func:`_url`).
    """

    filename: str
    url_path: str
    parser: str
    shape: tuple
    n_ones: int
    sha256: str
    title: str
    what: str
    source: str
    licence: str


_REMOTE = {
    "paleo": _Remote(
        filename="paleo.npz",
        url_path=(
            "PrayagS/Seriation-in-Paleontological-Data-using-MCMC/"
            "647d0774efa1149e14af7d1c42d4db0b59fd25e1/Dataset/g10s10.txt"
        ),
        parser="dense_text",
        shape=(124, 139),
        n_ones=1978,
        sha256="023ae96fa2c1a17992dfd2e416dc7e70df1c3d25b19c1cb3813c1f32a33c3dd1",
        title="Paleo (NOW)",
        what="124 fossil sites x 139 genera; 1 = genus found at the site.",
        source=(
            "NOW (New and Old Worlds) fossil mammal database, sites x genera: file "
            "g10s10 of the paleontological seriation data of Kai Puolamaki, Mikael "
            "Fortelius and Heikki Mannila (www.cis.hut.fi/projects/patdis/paleo/), "
            "as published in the repository "
            "PrayagS/Seriation-in-Paleontological-Data-using-MCMC (Dataset/g10s10.txt; "
            "a trailing '*' marker on 11 rows is not part of the matrix)."
        ),
        licence=(
            "CC BY 2.5; attribution: data by Kai Puolamaki, Mikael Fortelius and "
            "Heikki Mannila."
        ),
    ),
    "apj": _Remote(
        filename="apj.npz",
        url_path=(
            "RoleMining/ConstrainedRM/7a8ecec5fb6b56096ea5b6b4a0a4620e55fd04e7/"
            "datasets/realWorld/apj.txt"
        ),
        parser="pairs",
        shape=(2044, 1164),
        n_ones=6841,
        sha256="2362fe27ede15ddb3fbaf45cd394c768f2b2c60570ed6fffcb21bffe6d6f7ede",
        title="APJ",
        what="2044 users x 1164 permissions; 1 = the user holds the permission.",
        source=(
            "HP Labs role-mining benchmark 'apj' (A. Ene, W. Horne, N. Milosavljevic, "
            "P. Rao, R. Schreiber, R. E. Tarjan, Fast exact and heuristic methods for "
            "role minimization problems, SACMAT 2008), as published in the repository "
            "RoleMining/ConstrainedRM (datasets/realWorld/apj.txt: one 'user "
            "permission' pair of 1-based ids a line)."
        ),
        licence=(
            "MIT (licence of the repository RoleMining/ConstrainedRM); data "
            "originally by HP Labs (Ene et al., SACMAT 2008)."
        ),
    ),
    "abstracts": _Remote(
        filename="abstracts_nsf.npz",
        url_path=(
            "rvyjidacek/experiments-cla2020/0200405ff3ded525d9746bf0b4f4592257f5fd3f/"
            "datasets/nfs.fimi"
        ),
        parser="fimi",
        shape=(12841, 4894),
        n_ones=564462,
        sha256="253ab701f39a28e36108333c90eab0cee6b396059ea2247512d2c832639954db",
        title="Abstracts",
        what=(
            "12841 abstracts x 4894 terms; 1 = the term occurs in the abstract "
            "(8 empty rows and one duplicated column, as in the source)."
        ),
        source=(
            "NSF Research Award Abstracts 1990-2003 (UCI KDD archive), documents x "
            "terms, as published in the repository rvyjidacek/experiments-cla2020 "
            "(datasets/nfs.fimi: one row a line, 0-based column ids)."
        ),
        licence=(
            "MIT (licence of the repository rvyjidacek/experiments-cla2020); data: "
            "NSF Research Award Abstracts, UCI KDD archive."
        ),
    ),
}


def matrix_sha256(X):
    """SHA-256 (hex) of a matrix's entries as C-ordered uint8 bytes."""
    return hashlib.sha256(np.ascontiguousarray(X, dtype=np.uint8).tobytes()).hexdigest()


def _data_home_path(data_home=None):
    """The data home's path (``~`` expanded), without creating it."""
    if data_home is None:
        data_home = os.environ.get(
            "SKLEARN_RRANK_DATA", os.path.join("~", "sklearn_rrank_data")
        )
    return os.path.expanduser(os.fspath(data_home))


def get_data_home(data_home=None):
    """Return the folder where the fetchers cache the data sets, creating it.

    As :func:`sklearn.datasets.get_data_home`: the folder is ``data_home`` if
    given, else the environment variable ``SKLEARN_RRANK_DATA``, else
    ``~/sklearn_rrank_data``; ``~`` is expanded.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The folder; None for the default above.

    Returns
    -------
    data_home : str
        The path of the folder (created if it did not exist).

    Examples
    --------
    >>> import tempfile
    >>> from sklearn_rrank.datasets import get_data_home
    >>> home = tempfile.mkdtemp()
    >>> get_data_home(home) == home
    True
    """
    path = _data_home_path(data_home)
    os.makedirs(path, exist_ok=True)
    return path


def _url(remote, base=None):
    """Where ``remote`` is downloaded from: below ``base``, else the environment
    variable ``SKLEARN_RRANK_DATA_URL`` if set, else ``_BASE_URL``."""
    if base is None:
        base = os.environ.get(_URL_ENV) or _BASE_URL
    return f"{base.rstrip('/')}/{remote.url_path}"


def _how_to_place(remote, folder):
    m, n = remote.shape
    return (
        f"put {remote.filename} (numpy.savez, key 'X', the {m} x {n} 0/1 matrix) in "
        f"{folder}, or point data_home (rrank: --data-home, or the environment "
        "variable SKLEARN_RRANK_DATA) at a folder that holds it"
    )


def _parse_dense_text(path, shape):
    """A header line ``m n``, then one row of 0/1 a line; ``*`` markers skipped."""
    rows = []
    with open(path, encoding="utf-8-sig") as fh:
        lines = [(i, line.split()) for i, line in enumerate(fh, start=1)]
    lines = [(i, t) for i, t in lines if t]
    if not lines:
        raise ValueError(f"{path}: the file is empty.")
    header = tuple(int(v) for v in lines[0][1])
    if header != tuple(shape):
        raise ValueError(f"{path}: the header says {header}, expected {shape}.")
    for lineno, tokens in lines[1:]:
        values = [t for t in tokens if t != "*"]
        if len(values) != shape[1] or set(values) - {"0", "1"}:
            raise ValueError(
                f"{path}: line {lineno} is not a row of {shape[1]} zeros and ones."
            )
        rows.append([int(v) for v in values])
    if len(rows) != shape[0]:
        raise ValueError(f"{path}: {len(rows)} rows, expected {shape[0]}.")
    return np.array(rows, dtype=np.uint8)


def _parse_pairs(path, shape):
    """One ``row column`` pair of 1-based ids a line: the positions of the ones."""
    pairs = np.loadtxt(path, dtype=np.int64, ndmin=2)
    if pairs.shape[1] != 2:
        raise ValueError(f"{path}: expected two ids a line.")
    rows, cols = pairs[:, 0] - 1, pairs[:, 1] - 1
    if rows.min() < 0 or cols.min() < 0:
        raise ValueError(f"{path}: ids start at 1.")
    if rows.max() >= shape[0] or cols.max() >= shape[1]:
        raise ValueError(f"{path}: ids beyond the {shape[0]} x {shape[1]} matrix.")
    X = np.zeros(shape, dtype=np.uint8)
    X[rows, cols] = 1
    return X


def _parse_fimi(path, shape):
    """One row a line, listing the 0-based column ids of its ones."""
    X = np.zeros(shape, dtype=np.uint8)
    n_rows = 0
    with open(path, encoding="utf-8-sig") as fh:
        for i, line in enumerate(fh):
            ids = [int(v) for v in line.split()]
            if not ids:
                continue  # an empty row; trailing blank lines are no rows
            if i >= shape[0] or max(ids) >= shape[1] or min(ids) < 0:
                raise ValueError(
                    f"{path}: line {i + 1} is outside the {shape[0]} x {shape[1]} "
                    "matrix."
                )
            X[i, ids] = 1
            n_rows = i + 1
    if n_rows == 0:
        raise ValueError(f"{path}: the file lists no ones.")
    return X


_PARSERS = {"dense_text": _parse_dense_text, "pairs": _parse_pairs, "fimi": _parse_fimi}


def _check_matrix(X, remote, path):
    """Raise ``OSError`` unless ``X`` is the matrix ``remote`` describes."""
    if X.shape != tuple(remote.shape) or matrix_sha256(X) != remote.sha256:
        raise OSError(
            f"{path}: the matrix (shape {X.shape}, SHA-256 {matrix_sha256(X)}) is not "
            f"the expected one (shape {remote.shape}, SHA-256 {remote.sha256}); "
            "the file is corrupted or another data set: delete it and fetch again"
        )


def _read_cached(path, remote):
    try:
        with np.load(path, allow_pickle=False) as z:
            X = z["X"]
    except (OSError, ValueError, KeyError, EOFError) as exc:
        raise OSError(
            f"{path}: could not be read as a numpy .npz file with key 'X' ({exc})"
        ) from exc
    _check_matrix(X, remote, path)
    return X.astype(np.uint8, copy=False)


def _download(remote, url, home):
    """Download ``url`` into a temporary file in ``home``; return its path.

    The temporary file is removed if the download fails or is cut short.
    """
    fd, part = tempfile.mkstemp(dir=home, prefix=f".{remote.filename}.", suffix=".part")
    try:
        with (
            os.fdopen(fd, "wb") as out,
            urllib.request.urlopen(url, timeout=_TIMEOUT) as response,
        ):
            expected = response.headers.get("Content-Length")
            received = 0
            while chunk := response.read(_CHUNK):
                out.write(chunk)
                received += len(chunk)
        if expected is not None and received != int(expected):
            raise OSError(f"received {received} of {int(expected)} bytes")
    except BaseException:
        os.remove(part)
        raise
    return part


def _fetch(name, data_home, download_if_missing):
    """The matrix of data set ``name`` from the data home, downloaded if missing."""
    remote = _REMOTE[name]
    home = _data_home_path(data_home)
    path = os.path.join(home, remote.filename)
    if os.path.exists(path):
        return _read_cached(path, remote), path
    url = _url(remote)
    if not download_if_missing:
        raise OSError(
            f"data set {name!r} is not in the data home {home} and "
            f"download_if_missing=False; {_how_to_place(remote, home)} (source: {url})"
        )
    try:
        os.makedirs(home, exist_ok=True)
        part = _download(remote, url, home)
    except (OSError, http.client.HTTPException) as exc:
        raise OSError(
            f"data set {name!r} is not in the data home {home} and could not be "
            f"downloaded from {url} ({exc}); {_how_to_place(remote, home)}"
        ) from exc
    try:
        try:
            X = _PARSERS[remote.parser](part, remote.shape)
        except (ValueError, UnicodeDecodeError) as exc:
            raise OSError(
                f"the file downloaded from {url} could not be parsed ({exc})"
            ) from exc
        _check_matrix(X, remote, url)
        fd, tmp = tempfile.mkstemp(dir=home, prefix=f".{remote.filename}.")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez_compressed(fh, X=X)
            os.replace(tmp, path)
        except BaseException:
            os.remove(tmp)
            raise
    finally:
        os.remove(part)
    return X, path


def _descr(name, url):
    remote, paper = _REMOTE[name], _PAPER[name]
    m, n = remote.shape
    return (
        f"{remote.title} data set\n{'=' * (len(remote.title) + 9)}\n\n{remote.what}"
        f"\n\nShape: {m} x {n}; ordinary (linear-algebra) rank {paper['rank']}.\n\n"
        f"Source: {remote.source}\nDownloaded from: {url}\n\n"
        f"Licence: {remote.licence}\n\n"
        f"Cached as <data_home>/{remote.filename} (numpy.savez, key 'X', uint8); "
        f"SHA-256 of the matrix's C-ordered uint8 bytes: {remote.sha256}.\n\n"
        "Used in: S. Neumann, R. Gemulla, P. Miettinen, What You Will Gain By "
        "Rounding: Theory and Algorithms for Rounding Rank, ICDM 2016 (Tables 2 and "
        "3; the values are in the 'paper' field).\n"
    )


def _fetch_bunch(name, data_home, download_if_missing, sparse, return_X_y):
    X, path = _fetch(name, data_home, download_if_missing)
    remote, url = _REMOTE[name], _url(_REMOTE[name])
    data = sp.csr_matrix(X) if sparse else X
    if return_X_y:
        return data, None  # scikit-learn's (data, target); these sets have no target
    return Bunch(
        data=data,
        target=None,
        DESCR=_descr(name, url),
        source=remote.source,
        url=url,
        licence=remote.licence,
        paper=_PAPER[name],
        name=name,
        filename=path,
    )


_FETCH_DOC = """Fetch the {title} data set: {what}

Looks for ``<data_home>/{filename}``; if it is not there, downloads
``{url}`` (the source file at a pinned commit), parses it, checks the
matrix's SHA-256 and stores it there (``numpy.savez``, key ``X``). A file
placed there by hand (e.g. ``data_home`` pointing at a folder that holds
``{filename}``) is read the same way and verified by the same SHA-256. The
environment variable ``SKLEARN_RRANK_DATA_URL`` replaces
``https://raw.githubusercontent.com`` in that address with a mirror that holds
the same paths.

Source: {source}

Licence: {licence}

Parameters
----------
data_home : str or path-like, default=None
    The folder of the cached files; None: the environment variable
    ``SKLEARN_RRANK_DATA``, else ``~/sklearn_rrank_data``
    (:func:`get_data_home`).
download_if_missing : bool, default=True
    Download the data set when it is not in ``data_home``; if False, raise
    ``OSError`` instead.
sparse : bool, default=False
    Return ``data`` as a CSR matrix (uint8) instead of a dense array.
return_X_y : bool, default=False
    Return the tuple ``(data, target)`` instead of a Bunch, as scikit-learn's
    loaders do; ``target`` is None (the data set has no target):
    ``X, _ = {func}(return_X_y=True)``.

Returns
-------
bunch : sklearn.utils.Bunch
    ``data`` (ndarray of shape {shape}, dtype uint8, or CSR matrix),
    ``target`` (None), ``DESCR``, ``source``, ``url``, ``licence``, ``name``,
    ``filename`` (the cached file) and ``paper`` (the paper's Table 2/3
    values).
(data, target) : tuple
    With ``return_X_y=True``; ``target`` is None.

Raises
------
OSError
    If the file is not in ``data_home`` and cannot be downloaded (no network,
    HTTP error, download cut short, or ``download_if_missing=False``): the
    message names the URL, the file and the folder to put it in. Also if the
    cached or downloaded matrix does not have the expected shape and SHA-256.

Examples
--------
>>> from sklearn_rrank.datasets import {func}
>>> bunch = {func}()  # doctest: +SKIP
>>> bunch.data.shape  # doctest: +SKIP
{shape}
"""


def fetch_paleo(
    *, data_home=None, download_if_missing=True, sparse=False, return_X_y=False
):
    return _fetch_bunch("paleo", data_home, download_if_missing, sparse, return_X_y)


def fetch_apj(
    *, data_home=None, download_if_missing=True, sparse=False, return_X_y=False
):
    return _fetch_bunch("apj", data_home, download_if_missing, sparse, return_X_y)


def fetch_abstracts(
    *, data_home=None, download_if_missing=True, sparse=False, return_X_y=False
):
    return _fetch_bunch("abstracts", data_home, download_if_missing, sparse, return_X_y)


for _func, _name in [
    (fetch_paleo, "paleo"),
    (fetch_apj, "apj"),
    (fetch_abstracts, "abstracts"),
]:
    _r = _REMOTE[_name]
    _func.__doc__ = _FETCH_DOC.format(
        title=_r.title,
        what=_r.what,
        filename=_r.filename,
        url=_url(_r, _BASE_URL),  # the docs show the default, not this machine's
        source=_r.source,
        licence=_r.licence,
        shape=_r.shape,
        func=_func.__name__,
    )
del _func, _name, _r
