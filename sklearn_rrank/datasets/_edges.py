"""Reading a graph's edge list (SNAP, KONECT, CSV pairs) as a sparse 0/1 matrix."""

import os
import re

import numpy as np
import scipy.sparse as sp

from sklearn_rrank._core import _memory

__all__ = ["FileAdvice", "load_edge_list", "looks_like_edge_list"]

# comment lines: SNAP writes '#', KONECT and Matrix Market write '%'
_COMMENTS = ("#", "%")
# KONECT's first line names the graph's kind: '% sym', '% asym' or '% bip' (bipartite)
_KONECT_HEADER = re.compile(r"^%\s*(sym|asym|bip)\b")
# separators between the fields of a line: white space, commas, semicolons
_SEPARATORS = re.compile(r"[\s,;]+")


class FileAdvice(ValueError):
    """A data file that cannot be read as asked, with the fix for each door.

    ``str()`` gives the problem and the fix in Python terms (parameters of the
    loaders); :meth:`for_cli` the same problem with the fix in command-line terms
    (options of ``rrank``), so that neither names an option the other lacks.
    """

    def __init__(self, problem, python_fix, cli_fix=None):
        self.problem = problem
        self.python_fix = python_fix
        self.cli_fix = python_fix if cli_fix is None else cli_fix
        super().__init__(f"{problem}; {python_fix}")

    def for_cli(self):
        """The message with the command line's fix."""
        return f"{self.problem}; {self.cli_fix}"


def konect_kind(path):
    """``'sym'``, ``'asym'`` or ``'bip'`` from a KONECT first line, else None."""
    try:
        with open(path, encoding="utf-8-sig") as fh:
            first = fh.readline(256)
    except (OSError, UnicodeDecodeError):
        return None
    match = _KONECT_HEADER.match(first.strip())
    return match.group(1) if match else None


def looks_like_edge_list(X):
    """True if a dense matrix read from text looks like ``i j`` pairs of node ids.

    Two to four columns (the ids, then perhaps a weight and a timestamp), the
    first two holding non-negative integers, some of them above 1: not a 0/1
    matrix, and what SNAP, KONECT and CSV edge lists hold.
    """
    X = np.asarray(X)
    if X.ndim != 2 or not 2 <= X.shape[1] <= 4 or X.dtype.kind not in "biuf":
        return False
    ids = X[:, :2]
    if not np.all(np.isfinite(ids)) or np.any(ids < 0) or np.any(ids != np.floor(ids)):
        return False
    return bool(np.any(ids > 1))


def _read_pairs(path, header):
    """The first two fields of every data line as int64 arrays, and the line count.

    Comment lines (``#``, ``%``) and blank lines are skipped; ``header`` skips the
    first other line. Further fields (weights, timestamps) are not read.
    """
    src, dst = [], []
    first = True
    with open(path, encoding="utf-8-sig") as fh:  # a byte-order mark is skipped
        for lineno, line in enumerate(fh, start=1):
            text = line.strip()
            if not text or text.startswith(_COMMENTS):
                continue
            if first and header:
                first = False
                continue
            fields = [f for f in _SEPARATORS.split(text) if f]
            if len(fields) < 2:
                raise ValueError(
                    f"{path}: line {lineno} holds {text!r}, not two node ids; an edge "
                    "list has one 'i j' pair a line."
                )
            try:
                i, j = int(fields[0]), int(fields[1])
            except ValueError:
                if first:
                    raise FileAdvice(
                        f"{path}: line {lineno} holds {text[:60]!r}, not two node "
                        "ids: it looks like a header",
                        "pass header=True to skip it.",
                        "use --header to skip it.",
                    ) from None
                raise ValueError(
                    f"{path}: line {lineno} holds {text[:60]!r}, whose first two "
                    "fields are not integer node ids."
                ) from None
            first = False
            src.append(i)
            dst.append(j)
    return np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)


def _shift(ids, one_based, path, side="node"):
    """0-based ids; ``one_based`` is True, False or ``"auto"`` (decided by caller)."""
    if one_based:
        if ids.min() < 1:
            raise ValueError(
                f"{path}: {side} id {int(ids.min())} in a 1-based edge list (ids "
                "start at 1); pass one_based=False for 0-based ids."
            )
        return ids - 1
    if ids.min() < 0:
        raise ValueError(f"{path}: negative {side} id {int(ids.min())}.")
    return ids


def load_edge_list(
    path,
    *,
    symmetric="auto",
    one_based="auto",
    n_nodes=None,
    bipartite="auto",
    header=False,
    relabel=False,
):
    """Load a graph's edge list as its sparse 0/1 adjacency matrix.

    Reads text files of one edge a line, ``i j`` (two integer node ids separated
    by white space, a comma or a semicolon): SNAP's ``.txt`` files, KONECT's
    ``out.*`` files, ``.edges``, ``.tsv`` and ``.csv`` pairs. Lines starting with
    ``#`` (SNAP) or ``%`` (KONECT) are comments; fields after the first two
    (KONECT's weights and timestamps) are not read: every listed pair is an edge,
    whatever its weight. Entry ``A[i, j]`` is 1 iff the file lists the edge
    ``i j``; an edge listed twice is one entry, and the diagonal is zero unless
    the file lists loops ``i i``.

    Parameters
    ----------
    path : str or path-like
        The file.
    symmetric : bool or "auto", default="auto"
        Also add the reverse ``j i`` of every edge: the adjacency matrix of an
        undirected graph whose file lists each edge once (KONECT's ``% sym``
        files, SNAP's ``com-*`` files). Not with a bipartite graph. ``"auto"``:
        True iff the file's first line is KONECT's ``% sym`` header (KONECT lists
        an undirected edge once); pass True for other undirected files.
    one_based : bool or "auto", default="auto"
        Whether node ids start at 1 (KONECT) or at 0 (SNAP). ``"auto"``: 0-based
        if some id is 0, else 1-based (so a 0-based file in which node 0 has no
        edge loses an empty first row and column, which changes no rounding
        rank).
    n_nodes : int, tuple of two int, or None, default=None
        The number of nodes (the matrix is ``n_nodes x n_nodes``; for a
        bipartite graph a pair ``(n_rows, n_columns)``), for nodes without
        edges after the largest id; None: the largest id that occurs, plus one.
    bipartite : bool or "auto", default="auto"
        Whether the two ids of a line belong to two different sets of nodes
        (rows and columns numbered apart, e.g. users and items), as in KONECT's
        ``% bip`` files. ``"auto"``: True iff the file's first line is KONECT's
        ``% bip`` header.
    header : bool, default=False
        Skip the first line that is not a comment (a CSV header such as
        ``source,target``). A first line that does not start with two integers
        raises ``ValueError`` that says to pass ``header=True``.
    relabel : bool, default=False
        Number only the nodes that occur, ``0, 1, ...`` in increasing order of
        their ids (SNAP's ids often leave gaps), and also return the ids; then
        ``one_based`` and ``n_nodes`` are not used.

    Returns
    -------
    A : scipy.sparse.csr_matrix of shape (n_nodes, n_nodes), dtype uint8
        The adjacency matrix (rows: the first id of each line, columns: the
        second); for a bipartite graph of shape (n_rows, n_columns).
    ids : ndarray of shape (n_nodes,), dtype int64
        With ``relabel=True``: the file's id of each row and column. For a
        bipartite graph two arrays, ``row_ids`` and ``column_ids``.

    Raises
    ------
    FileNotFoundError
        If the file does not exist.
    ValueError
        If a line does not start with two integer ids (with a hint to pass
        ``header=True`` for a header), an id is negative (below 1 when
        ``one_based=True``) or not below ``n_nodes``, the file lists no edge,
        ``symmetric`` is asked of a bipartite graph, or the matrix would not
        fit in the memory available.

    See Also
    --------
    load_binary_matrix : dense and sparse matrix files.

    Notes
    -----
    Node ids index the rows and columns directly: ids that do not occur give
    empty rows and columns, which do not change the rounding rank (an empty row
    is the rounding of a zero row of ``L``, for ``tau > 0``).

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn_rrank.datasets import load_edge_list
    >>> path = os.path.join(tempfile.mkdtemp(), "triangle.edges")
    >>> _ = open(path, "w").write("# a directed triangle\\n0 1\\n1 2\\n2 0\\n")
    >>> load_edge_list(path).toarray()
    array([[0, 1, 0],
           [0, 0, 1],
           [1, 0, 0]], dtype=uint8)
    >>> load_edge_list(path, symmetric=True).toarray()
    array([[0, 1, 1],
           [1, 0, 1],
           [1, 1, 0]], dtype=uint8)
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        raise ValueError(f"{path} is a directory; give an edge-list file.")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"No such edge-list file: {path}")
    if one_based not in (True, False, "auto"):
        raise ValueError(f"one_based must be True, False or 'auto', got {one_based!r}.")
    if bipartite not in (True, False, "auto"):
        raise ValueError(f"bipartite must be True, False or 'auto', got {bipartite!r}.")
    if symmetric not in (True, False, "auto"):
        raise ValueError(f"symmetric must be True, False or 'auto', got {symmetric!r}.")
    kind = konect_kind(path)
    if bipartite == "auto":
        bipartite = kind == "bip"
    if symmetric == "auto":
        symmetric = kind == "sym"
    if bipartite and symmetric:
        raise ValueError(
            f"{path}: symmetric=True needs one set of nodes, but the graph is "
            "bipartite (rows and columns are different nodes); pass "
            "bipartite=False to read both ids as the same nodes."
        )
    try:
        src, dst = _read_pairs(path, header)
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"{path}: not a text file ({exc}); an edge list is text, one 'i j' "
            "pair a line."
        ) from None
    if len(src) == 0:
        raise ValueError(
            f"{path}: the file lists no edges (only comments or blank lines); an "
            "edge list has one 'i j' pair of node ids a line."
        )
    if relabel:
        if n_nodes is not None:
            raise ValueError(
                "n_nodes cannot be combined with relabel=True (which numbers only "
                "the nodes that occur); leave one of them out."
            )
        if bipartite:
            row_ids, src = np.unique(src, return_inverse=True)
            col_ids, dst = np.unique(dst, return_inverse=True)
            ids, shape = (row_ids, col_ids), (len(row_ids), len(col_ids))
        else:
            node_ids = np.unique(np.concatenate([src, dst]))
            src, dst = np.searchsorted(node_ids, src), np.searchsorted(node_ids, dst)
            ids, shape = (node_ids,), (len(node_ids), len(node_ids))
        A = _adjacency(src, dst, shape, symmetric, path)
        return (A, *ids)
    if one_based == "auto":
        low = min(src.min(), dst.min())
        one_based = bool(low >= 1) if low >= 0 else False
    if bipartite:
        src = _shift(src, one_based, path, "row")
        dst = _shift(dst, one_based, path, "column")
        found = (int(src.max()) + 1, int(dst.max()) + 1)
        if n_nodes is None:
            shape = found
        else:
            shape = tuple(int(v) for v in np.broadcast_to(n_nodes, (2,)))
    else:
        src = _shift(src, one_based, path)
        dst = _shift(dst, one_based, path)
        n = int(max(src.max(), dst.max())) + 1
        found = (n, n)
        shape = found if n_nodes is None else (int(n_nodes), int(n_nodes))
    if found[0] > shape[0] or found[1] > shape[1]:
        raise ValueError(
            f"{path}: node id {max(found) - 1} (0-based) is not below n_nodes="
            f"{n_nodes!r}; raise n_nodes or leave it None."
        )
    return _adjacency(src, dst, shape, symmetric, path)


def _adjacency(src, dst, shape, symmetric, path):
    """The CSR 0/1 matrix of the edges ``src[t] -> dst[t]`` (0-based)."""
    if symmetric:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
    _memory.check_sparse_memory(shape, len(src), path)
    A = sp.csr_matrix(
        (np.ones(len(src), dtype=np.uint8), (src, dst)), shape=shape, dtype=np.uint8
    )
    A.sum_duplicates()  # an edge listed twice is one entry
    A.data[:] = 1
    return A
