"""Binary-input checks shared by every public entry point.

Every public function and estimator of :mod:`sklearn_rrank` validates its data with
:func:`check_binary_matrix` (functions) or :func:`check_binary_values` (estimators,
after :func:`sklearn.utils.validation.validate_data`). Inputs are never modified: the
returned array is a new array whenever a conversion or cast is needed, and solvers
never write into the array they receive.
"""

import numbers
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_array

from sklearn_rrank._core._memory import check_sparse_memory

__all__ = [
    "binarize",
    "check_binary_matrix",
    "check_binary_values",
    "check_n_jobs",
    "canonical_sparse",
    "check_tau",
    "object_to_float",
    "reject_bunch",
    "reject_complex",
    "reject_strings",
    "sparse_if_few_ones",
]

# data with fewer ones than this fraction of its entries is worked on sparse (the
# portfolio's R-SVD and spectral bound, the loaders, :func:`sparse_if_few_ones`)
SPARSE_FRACTION = 0.1
# a dense array of at least this many entries and few ones is taken as CSR by the
# doors whose methods work on sparse data: no float64 copy of its entries is made
SPARSE_INPUT_ENTRIES = 10**7


def _first_position(mask):
    """Return the (row, col) index of the first True entry of a dense 2-D mask."""
    flat = int(np.flatnonzero(mask.ravel())[0])
    return np.unravel_index(flat, mask.shape)


def check_binary_values(
    X, *, allow_missing=False, input_name="X", method=None, missing_methods=None
):
    """Check that a numeric 2-D array or sparse matrix holds only 0/1 (and NaN).

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
        A numeric (float, int or bool) array, already 2-D.
    allow_missing : bool, default=False
        Whether ``NaN`` entries (missing entries) are accepted.
    input_name : str, default="X"
        Name used in error messages.
    method : str or None, default=None
        Name of the method, used in the error raised for missing entries.
    missing_methods : sequence of str or None, default=None
        The methods of the calling door that accept missing entries, named in that
        error (None: the registry's methods that do).

    Raises
    ------
    ValueError
        If ``X`` holds infinity, ``NaN`` where missing entries are not allowed, or any
        value other than 0 and 1. The message says how many entries are offending and
        shows one of them (value and position).
    """
    if sp.issparse(X):
        coo = X.tocoo()
        values, rows, cols = coo.data, coo.row, coo.col
    else:
        values = np.asarray(X)
        rows = cols = None
    if values.dtype == bool:
        return

    def _where(mask):
        if rows is None:
            i, j = _first_position(mask)
        else:
            k = int(np.flatnonzero(mask)[0])
            i, j = rows[k], cols[k]
        return int(i), int(j)

    if values.dtype.kind == "f":
        inf = np.isinf(values)
        if inf.any():
            i, j = _where(inf)
            raise ValueError(
                f"{input_name} contains {int(inf.sum())} infinite entries "
                f"(e.g. {input_name}[{i}, {j}] = {values[inf].flat[0].item()}); a "
                "binary matrix holds only 0 and 1."
            )
        nan = np.isnan(values)
        if nan.any() and not allow_missing:
            i, j = _where(nan)
            where = f" method={method!r}" if method is not None else " this function"
            if missing_methods is None:
                missing_methods = ("projlp", "lpca", "nuclear")
            names = ", ".join(repr(m) for m in missing_methods)
            raise ValueError(
                f"{input_name} contains {int(nan.sum())} missing entries (NaN), e.g. "
                f"{input_name}[{i}, {j}], but{where} does not support missing "
                f"entries. Missing entries are supported by the methods {names}."
            )
        bad = ~(nan | (values == 0) | (values == 1))
    else:
        bad = (values != 0) & (values != 1)
    if bad.any():
        i, j = _where(bad)
        v = values[bad].flat[0].item()
        raise ValueError(
            f"{input_name} is not binary: {int(bad.sum())} entries are not 0 or 1, "
            f"e.g. {input_name}[{i}, {j}] = {v!r}. Pass binary data, or threshold real "
            "data first (estimators: binarize=<threshold>)."
        )


def check_binary_matrix(
    X,
    *,
    allow_missing=False,
    accept_sparse=False,
    input_name="X",
    method=None,
):
    """Validate a binary matrix and return it as float64 (NaN marks missing entries).

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
        Binary data: a numpy array (bool, integer or float holding exactly 0/1), a
        ``scipy.sparse`` matrix or array, a pandas DataFrame, or a nested list.
    allow_missing : bool, default=False
        Whether ``NaN`` marks a missing entry. If False, ``NaN`` raises ``ValueError``.
    accept_sparse : bool, default=False
        If True a sparse input is returned as a CSR matrix of dtype float64; if False
        it is converted to a dense array.
    input_name : str, default="X"
        Name used in error messages.
    method : str or None, default=None
        Name of the calling method, used in the error for missing entries.

    Returns
    -------
    X_checked : ndarray of shape (n_samples, n_features), dtype float64, or CSR matrix
        The validated data. It never shares memory with a caller-owned array that a
        solver could modify: callers treat it as read-only.

    Raises
    ------
    TypeError
        If ``X`` cannot be converted to numbers (e.g. strings or objects).
    ValueError
        If ``X`` is empty, not 2-D, or holds values other than 0/1 (see
        :func:`check_binary_values`).

    Examples
    --------
    >>> from sklearn_rrank._core._validation import check_binary_matrix
    >>> check_binary_matrix([[1, 0], [0, True]])
    array([[1., 0.],
           [0., 1.]])
    """
    if isinstance(X, np.ndarray) and X.ndim != 2:
        raise ValueError(
            f"{input_name} must be a 2-D matrix of shape (n_samples, n_features); got "
            f"an array with {X.ndim} dimension(s) and shape {X.shape}."
        )
    reject_strings(X, input_name)
    reject_complex(X, input_name)
    if sp.issparse(X):
        check_sparse_memory(X.shape, X.nnz, input_name)
        X = canonical_sparse(X)
    try:
        X_arr = check_array(
            X,
            accept_sparse="csr" if accept_sparse else False,
            dtype=None,
            ensure_all_finite=False,
            ensure_2d=True,
            allow_nd=False,
            input_name=input_name,
        )
    except TypeError as exc:
        if sp.issparse(X) and not accept_sparse:
            X_arr = check_array(
                X.toarray(),
                dtype=None,
                ensure_all_finite=False,
                input_name=input_name,
            )
        else:
            raise TypeError(f"{input_name} must hold numbers: {exc}") from exc
    except ValueError as exc:
        msg = str(exc)
        if "could not convert" in msg or "convert" in msg and "float" in msg:
            raise TypeError(f"{input_name} must hold numbers 0/1: {msg}") from exc
        raise
    if X_arr.dtype == object:
        X_arr = object_to_float(X_arr, input_name)
    if X_arr.dtype.kind not in "biuf":
        raise TypeError(f"{input_name} must hold numbers 0/1, got dtype {X_arr.dtype}.")
    check_binary_values(
        X_arr, allow_missing=allow_missing, input_name=input_name, method=method
    )
    if sp.issparse(X_arr):
        return X_arr.astype(np.float64, copy=True)
    return np.array(X_arr, dtype=np.float64, copy=True)


def canonical_sparse(X):
    """A CSR copy of sparse ``X`` with summed duplicates and sorted indices.

    scipy sums duplicate entries (a one stored twice is a 2) and some of its
    routines (``count_nonzero``, ``sum_duplicates``) sort a matrix's indices in
    place; working on this copy keeps the caller's matrix untouched and makes the
    binary check see the values scipy's arithmetic will use.
    """
    X = sp.csr_matrix(X, copy=True)
    X.sum_duplicates()  # also sorts the indices
    return X


def sparse_if_few_ones(X, *, min_entries=SPARSE_INPUT_ENTRIES):
    """A CSR copy of a large dense array with few ones, else ``X`` itself.

    A numeric 2-D ``numpy.ndarray`` of at least ``min_entries`` entries (the
    doors use ``SPARSE_INPUT_ENTRIES``, 1e7), none of them NaN, with fewer than
    ``SPARSE_FRACTION`` (10%) of them nonzero, is returned as
    ``scipy.sparse.csr_matrix(X)`` (same values, same dtype); anything else
    (smaller arrays, missing entries, sparse matrices, lists, data frames) is
    returned unchanged. The doors of methods that work on sparse
    data call it before validation, so that such data never gets a dense float64
    copy (8 bytes per entry: 503 MB for the 12,841 x 4,894 Abstracts matrix, whose
    CSR form takes 7 MB). Smaller data stays dense, with the results of the dense
    code paths. ``X`` is not modified.
    """
    if not (isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype.kind in "biuf"):
        return X
    if X.size < min_entries:
        return X
    if np.count_nonzero(X) >= SPARSE_FRACTION * X.size:
        return X
    if X.dtype.kind == "f" and np.isnan(X).any():
        return X  # missing entries stay dense (NaN is not a sparse zero)
    return sp.csr_matrix(X)


def reject_complex(X, input_name="X"):
    """Raise ``ValueError`` (one line, scikit-learn's wording) for complex ``X``."""
    dtype = getattr(X, "dtype", None)
    if dtype is not None and np.dtype(dtype).kind == "c":
        raise ValueError(
            f"Complex data not supported: {input_name} has dtype {dtype}; binary "
            "data must be real numbers 0/1 or booleans."
        )


def object_to_float(X, input_name="X"):
    """Convert an object array of numbers to float64; ``None``/``pd.NA`` -> NaN.

    Raises ``TypeError`` naming the first entry that is not a number.
    """
    flat = X.ravel()
    out = np.empty(flat.shape, dtype=np.float64)
    for i, v in enumerate(flat):
        if v is None or (type(v).__name__ in ("NAType", "NaTType")):
            out[i] = np.nan
            continue
        if isinstance(v, (bool, np.bool_, numbers.Real)):
            out[i] = float(v)
            continue
        pos = np.unravel_index(i, X.shape)
        raise TypeError(
            f"{input_name} has object dtype with an entry that is not a number: "
            f"{input_name}{list(map(int, pos))} = {v!r} (type {type(v).__name__}); "
            "a float() argument must be a string or a real number."
        )
    return out.reshape(X.shape)


def binarize(X, threshold):
    """``X > threshold`` as float64, keeping NaN (missing) entries: the one binarize.

    Used by every estimator's ``binarize`` parameter. Sparse input stays CSR for a
    threshold >= 0 (its zeros stay 0); a negative threshold makes the zeros ones.
    """
    if sp.issparse(X):
        X = X.tocsr(copy=True).astype(np.float64)
        if threshold < 0:
            X = X.toarray()
        else:
            X.data = (X.data > threshold).astype(np.float64)
            X.eliminate_zeros()
            return X
    X = np.asarray(X, dtype=np.float64)
    out = (X > threshold).astype(np.float64)
    out[np.isnan(X)] = np.nan
    return out


def check_tau(tau):
    """Validate the rounding threshold ``tau`` and return it as a float.

    Raises
    ------
    TypeError
        If ``tau`` is not a real number.
    ValueError
        If ``tau`` is NaN or infinite.
    """
    if isinstance(tau, bool) or not isinstance(tau, numbers.Real):
        raise TypeError(f"tau must be a real number, got {tau!r}.")
    tau = float(tau)
    if not np.isfinite(tau):
        raise ValueError(f"tau must be finite, got {tau}.")
    return tau


def check_n_jobs(n_jobs):
    """Validate ``n_jobs``: None or a non-zero integer (joblib's convention).

    Raises
    ------
    TypeError
        If ``n_jobs`` is not None or an integer (e.g. ``1.5``, ``"2"``, ``True``).
    ValueError
        If ``n_jobs`` is 0.
    """
    if n_jobs is None:
        return None
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, numbers.Integral):
        raise TypeError(
            f"n_jobs must be None or a non-zero integer (-1 = all cores), got "
            f"{n_jobs!r}."
        )
    if n_jobs == 0:
        raise ValueError("n_jobs must be None or a non-zero integer, got 0.")
    return int(n_jobs)


def reject_bunch(X, input_name="X"):
    """Raise ``TypeError`` if ``X`` is a data set's ``Bunch`` (or another mapping).

    The loaders return a :class:`sklearn.utils.Bunch`, a dict whose ``data`` key
    holds the matrix; passing the Bunch itself is a common slip that scikit-learn's
    checks report only deep in a traceback.
    """
    if not isinstance(X, Mapping):
        return
    if "data" in X:
        raise TypeError(
            f"{input_name} is a {type(X).__name__} (a data set with its "
            f"description), not a matrix; pass bunch.data, or load it with "
            "return_X_y=True, e.g. X, _ = load_digits_binary(return_X_y=True)."
        )
    raise TypeError(
        f"{input_name} is a {type(X).__name__}, not a matrix; pass a 2-D array, "
        "a scipy.sparse matrix or a pandas DataFrame of 0/1 values."
    )


def reject_strings(X, input_name="X"):
    """Raise ``TypeError`` if ``X`` holds strings (e.g. ``'0'``/``'1'``).

    Every door rejects text entries the same way: binary data is numbers 0/1 (or
    booleans). Checked on arrays, nested lists and DataFrames without copying
    numeric data. A data set's ``Bunch`` is rejected first (:func:`reject_bunch`).
    """
    reject_bunch(X, input_name)
    if sp.issparse(X):
        return
    dtypes = getattr(X, "dtypes", None)
    if dtypes is not None:  # a DataFrame: only object/string columns need a look
        cols = [c for c, dt in zip(X.columns, dtypes, strict=True) if dt.kind in "OSU"]
        values = [X[c].to_numpy() for c in cols]
    else:
        arr = X if isinstance(X, np.ndarray) else None
        if arr is None:
            try:
                arr = np.asarray(X, dtype=object)
            except (TypeError, ValueError):
                return  # ragged input: check_array reports it
        if arr.dtype.kind in "SU":
            raise TypeError(
                f"{input_name} holds text (dtype {arr.dtype}); binary data must be "
                "numbers 0/1 or booleans, e.g. X.astype(int)."
            )
        values = [arr] if arr.dtype == object else []
    for v in values:
        flat = np.asarray(v, dtype=object).ravel()
        if any(isinstance(x, (str, bytes)) for x in flat):
            raise TypeError(
                f"{input_name} holds text entries; binary data must be numbers 0/1 "
                "or booleans, e.g. X.astype(int)."
            )
