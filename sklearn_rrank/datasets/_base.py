"""Loading a binary matrix from a file (.npz, .npy, .mtx, .csv, .tsv, .txt, .fimi)."""

import math
import os
import re
import zipfile

import numpy as np
import scipy.io
import scipy.sparse as sp

from sklearn_rrank._core import _memory
from sklearn_rrank._core._memory import gib
from sklearn_rrank._core._validation import check_binary_matrix
from sklearn_rrank.datasets._edges import FileAdvice, looks_like_edge_list

__all__ = ["load_binary_matrix"]

# float64 copies of the data that dense work holds at once (the data, L R^T, a mask):
# a dense load is refused when these and the uint8 array would not fit in memory
_DENSE_COPIES = 4
# largest .fimi column id read (ids index a CSR matrix of int64 indices)
_MAX_ID = 2**62


def _check_dense_size(shape, path, *, float64_copies=_DENSE_COPIES, dense_file=False):
    """Raise ``ValueError`` if a dense matrix of ``shape`` would not fit in memory.

    Called before any dense array of that shape is allocated. The need is the
    uint8 array (1 byte an entry) plus ``float64_copies`` float64 copies (8 bytes an
    entry each); nothing is checked when the memory available is unknown.
    ``dense_file`` marks a file that stores a dense matrix (it cannot be loaded
    sparse without reading it dense first).
    """
    entries = math.prod(int(d) for d in shape)
    uint8, float64 = entries, 8 * entries
    need = uint8 + float64_copies * float64
    avail = _memory.available_memory()
    if avail is None or need <= avail:
        return
    dims = " x ".join(str(int(d)) for d in shape)
    check = "check the file: a huge column id in a .fimi file implies a huge matrix"
    if dense_file:
        fix = (
            "the file stores a dense matrix; store it sparse (scipy.sparse.save_npz, "
            ".mtx or .fimi) and load it with sparse=True."
        )
        cli_fix = (
            "the file stores a dense matrix; store it sparse (scipy.sparse.save_npz, "
            ".mtx or .fimi), which the command line keeps sparse."
        )
    else:
        fix = f"load it with sparse=True to keep it sparse (or {check})."
        cli_fix = f"the command line works on the dense matrix ({check})."
    raise FileAdvice(
        f"{path}: a dense {dims} matrix needs {gib(uint8)} as uint8 and "
        f"{gib(float64)} per float64 copy; with the {float64_copies} float64 "
        f"cop{'y' if float64_copies == 1 else 'ies'} dense work holds that is "
        f"{gib(need)}, but only {gib(avail)} of memory are available",
        fix,
        cli_fix,
    )


def _npy_shape(fh):
    """Shape of the array in an open ``.npy`` stream, from its header only."""
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        shape, _, _ = np.lib.format.read_array_header_1_0(fh)
    else:
        shape, _, _ = np.lib.format.read_array_header_2_0(fh)
    return shape


def _npz_dense_key(path):
    """Key of the dense matrix in a ``numpy.savez`` file ('X' or the only array)."""
    with np.load(path, allow_pickle=False) as z:
        keys = list(z.keys())
    if "X" in keys:
        return "X"
    if len(keys) == 1:
        return keys[0]
    raise ValueError(
        f"{path}: .npz file has keys {keys}; expected 'X' or a single array."
    )


def _read_fimi(path):
    rows, cols = [], []
    n_rows = 0
    last_nonblank = 0
    with open(path, encoding="utf-8-sig") as fh:
        for lineno, line in enumerate(fh, start=1):
            items = line.split()
            if items:
                last_nonblank = lineno
            for item in items:
                try:
                    j = int(item)
                except ValueError:
                    raise ValueError(
                        f"{path}: line {lineno} holds {item!r}, not a column id; a "
                        ".fimi file lists one row per line as column ids."
                    ) from None
                if j < 0:
                    raise ValueError(f"{path}: line {lineno}: negative column id {j}.")
                if j >= _MAX_ID:
                    raise ValueError(
                        f"{path}: line {lineno}: column id {j} is too large (a "
                        f".fimi column id must be below 2**62)."
                    )
                rows.append(n_rows)
                cols.append(j)
            n_rows += 1
    # blank lines inside the file are empty rows; trailing blank lines are not rows
    n_rows = last_nonblank
    n_cols = max(cols) + 1 if cols else 0
    if n_rows == 0 or n_cols == 0:
        raise ValueError(
            f"{path}: the .fimi file lists no ones (it is empty or blank), so the "
            "matrix has no columns; a .fimi file lists one row of column ids per line."
        )
    _memory.check_sparse_memory((n_rows, n_cols), len(rows), path)
    X = sp.csr_matrix(
        (np.ones(len(rows)), (rows, cols)), shape=(n_rows, n_cols), dtype=np.float64
    )
    X.sum_duplicates()
    X.data[:] = 1.0
    return X


def _read_delimited(path, delimiter, header=False):
    rows = []
    first = True
    with open(path, encoding="utf-8-sig") as fh:  # a byte-order mark is skipped
        for lineno, line in enumerate(fh, start=1):
            line = line.strip()
            if not line or line.startswith(("#", "%")):
                continue
            if first and header:
                first = False
                continue
            fields = line.split(delimiter) if delimiter else line.split()
            try:
                rows.append([float(v) for v in fields])
            except ValueError:
                bad = next(v for v in fields if not _is_number(v))
                if first:
                    raise FileAdvice(
                        f"{path}: line {lineno} holds {bad.strip()[:40]!r}, not a "
                        "number: it looks like a header",
                        "pass header=True to skip it.",
                        "use --header to skip it.",
                    ) from None
                raise ValueError(
                    f"{path}: line {lineno} holds {bad.strip()[:40]!r}, not a number."
                ) from None
            first = False
    if not rows:
        raise ValueError(f"{path}: no data rows.")
    width = {len(r) for r in rows}
    if len(width) != 1:
        raise ValueError(f"{path}: rows have different lengths {sorted(width)}.")
    return np.array(rows)


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _not_binary(exc, X, path, ext):
    """The loader's error for a file whose matrix is not 0/1: cause and fix."""
    found = re.search(r"is not binary: (.*?)\. Pass", str(exc))
    detail = found.group(1) if found else "entries other than 0 and 1"
    if ext in (".csv", ".tsv", ".txt") and looks_like_edge_list(X):
        return FileAdvice(
            f"{path} is not a 0/1 matrix ({detail}); it looks like an edge list "
            "(one 'i j' pair of node ids a line)",
            "load it with load_edge_list(path).",
            "use --format edgelist.",
        )
    return FileAdvice(
        f"{path} is not a 0/1 matrix ({detail})",
        "threshold the values first, e.g. (X > t).astype(np.uint8), or load the "
        "array yourself and give the estimators binarize=<threshold>.",
        "threshold the values and save the 0/1 matrix, e.g. numpy.savez(path, "
        "X=(X > t).astype(numpy.uint8)).",
    )


def load_binary_matrix(path, *, sparse=False, header=False):
    """Load a binary matrix from a file.

    Formats by file ending: ``.npz`` (``numpy.savez`` with key ``X`` or a single
    array, or a ``scipy.sparse.save_npz`` file), ``.npy``, ``.mtx`` (Matrix Market),
    ``.csv``/``.tsv``/``.txt`` (dense 0/1, comma-, tab- or space-separated; lines
    starting with ``#`` or ``%`` are skipped), ``.fimi`` (one row per line,
    listing the 0-based column ids of its ones; a blank line inside the file is an
    all-zero row, blank lines at its end are ignored). Edge lists of graphs are
    read by :func:`load_edge_list`.

    Before a dense array is allocated, its size is checked against the memory
    available (``MemAvailable``, or a container's memory limit): the uint8 array
    (1 byte an entry) plus the float64 copies the methods work on (8 bytes an entry
    each, four for a dense result). A file whose ids or header imply a matrix too
    large for that (e.g. the 13-byte ``.fimi`` file ``0 1000000000``, 1 x 10^9)
    raises ``ValueError`` naming the shape and the bytes needed; ``sparse=True``
    keeps sparse formats (``.fimi``, ``.mtx`` coordinate, ``scipy.sparse`` ``.npz``)
    sparse without any dense allocation.

    Parameters
    ----------
    path : str or path-like
        The file.
    sparse : bool, default=False
        Return a CSR matrix (float64) instead of a dense uint8 array.
    header : bool, default=False
        ``.csv``/``.tsv``/``.txt``: skip the first line that is not a comment (a
        header of column names). A first line that is not numbers raises
        ``ValueError`` that says to pass ``header=True``.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), dtype uint8, or CSR matrix

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    ValueError
        If the ending is unknown, the file is malformed, the matrix is not binary
        (a text file of ``i j`` pairs of node ids is named as an edge list, to be
        read with :func:`load_edge_list`), ``path`` is a directory, or the dense
        matrix (``sparse=False``, or a file that stores a dense matrix) would not
        fit in the memory available.

    See Also
    --------
    load_edge_list : a graph's edge list as its sparse adjacency matrix.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn_rrank.datasets import load_binary_matrix
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "x.fimi")
    >>> _ = open(p, "w").write("0 2\\n1\\n")
    >>> load_binary_matrix(p)
    array([[1, 0, 1],
           [0, 1, 0]], dtype=uint8)
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise ValueError(f"{path} is a directory; give a data file.")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No such data file: {path}")
    ext = os.path.splitext(path)[1].lower()
    # a file holding a dense matrix is read dense and validated as float64 (one
    # copy) even for sparse=True; densifying sparse data needs the full dense work
    dense_file_copies = 1 if sparse else _DENSE_COPIES
    try:
        if ext == ".npz":
            try:
                X = sp.load_npz(path)
            except (ValueError, KeyError, OSError):
                key = _npz_dense_key(path)
                with zipfile.ZipFile(path) as zf, zf.open(f"{key}.npy") as fh:
                    shape = _npy_shape(fh)  # a compressed file may inflate a lot
                _check_dense_size(
                    shape, path, float64_copies=dense_file_copies, dense_file=True
                )
                with np.load(path, allow_pickle=False) as z:
                    X = z[key]
        elif ext == ".npy":
            with open(path, "rb") as fh:
                shape = _npy_shape(fh)
            _check_dense_size(
                shape, path, float64_copies=dense_file_copies, dense_file=True
            )
            X = np.load(path, allow_pickle=False)
        elif ext == ".mtx":
            m, n, entries, layout, field, _ = scipy.io.mminfo(path)
            if field == "complex":
                raise ValueError(
                    f"{path}: the Matrix Market file holds complex numbers; a binary "
                    "matrix holds real 0/1 entries (field real, integer or pattern)."
                )
            if layout == "array":  # dense Matrix Market
                _check_dense_size(
                    (m, n), path, float64_copies=dense_file_copies, dense_file=True
                )
            else:  # the header's entry count sizes scipy's arrays: check it first
                if entries > m * n:
                    raise ValueError(
                        f"{path}: the header declares {entries:,} entries for a "
                        f"{m} x {n} matrix, more than its {m * n:,} cells."
                    )
                _memory.check_sparse_memory((m, n), entries, path)
            X = scipy.io.mmread(path)
        elif ext in (".csv", ".tsv", ".txt"):
            X = _read_delimited(path, {".csv": ",", ".tsv": "\t"}.get(ext), header)
        elif ext == ".fimi":
            X = _read_fimi(path)
        else:
            raise ValueError(
                f"{path}: unknown file ending {ext!r}; use .npz, .npy, .mtx, .csv, "
                ".tsv, .txt or .fimi."
            )
    except zipfile.BadZipFile as exc:
        raise ValueError(
            f"{path}: could not be read ({exc}): a .npz file is a zip archive, and "
            "this one is cut short or another format; save the matrix again with "
            "numpy.savez (key X) or scipy.sparse.save_npz."
        ) from exc
    except (OSError, EOFError, KeyError) as exc:
        raise ValueError(f"{path}: could not be read ({exc}).") from exc
    except ValueError as exc:
        if str(exc).startswith(path):
            raise
        if "allow_pickle" in str(exc):  # never suggested: unpickling runs code
            raise ValueError(
                f"{path}: could not be read: the array holds Python objects, not "
                "numbers; save the 0/1 matrix as numbers, e.g. numpy.savez(path, "
                "X=X.astype(numpy.uint8))."
            ) from exc
        raise ValueError(f"{path}: could not be read ({exc}).") from exc
    if 0 in X.shape:
        raise ValueError(f"{path}: the file holds an empty {X.shape} matrix.")
    if sp.issparse(X) and not sparse:
        _check_dense_size(X.shape, path)
    try:
        X = check_binary_matrix(
            X, accept_sparse=True, input_name=os.path.basename(path)
        )
    except ValueError as exc:
        if "is not binary" not in str(exc):
            raise
        raise _not_binary(exc, X, path, ext) from None
    if sparse:
        return sp.csr_matrix(X)
    if sp.issparse(X):
        return X.astype(np.uint8).toarray()
    return X.astype(np.uint8)
