"""The ``rrank`` command line (also ``python -m sklearn_rrank``).

Results go to stdout, progress to stderr; any error is one line on stderr and exit
code 2. SIGINT or SIGTERM during ``rrank bounds`` stops the methods; the bounds
reached so far are printed (and ``--output`` written) and the exit code is 130. The
command line calls only the public API.
"""

import contextlib
import json
import os
import re
import signal
import sys
import threading
import time
import warnings

import numpy as np
import scipy.sparse as sp

from sklearn_rrank._cli._real_rank import (
    _matrix_rank,
    _matrix_rank_within,
    _real_rank_plan,
)
from sklearn_rrank._core._progress import event as progress_event

__all__ = ["main"]

# the real rank is awaited at least this long (seconds), even with the budget used up
# (a small SVD takes milliseconds)
_REAL_RANK_MIN_WAIT = 0.25
# the progress line is redrawn after this many seconds without news (issue 25: never
# silent for more than about 2 s)
_HEARTBEAT = 1.5
# loading a file larger than this is announced on the progress line
_LARGE_FILE_BYTES = 20_000_000
# a process older than this many seconds when main() starts is not a fresh command
# (main() called inside a longer-lived process): its age does not count
_MAX_START = 10.0


class CLIError(Exception):
    """An error reported as one line on stderr with exit code 2."""


# file endings read as edge lists by --format auto (KONECT's files are named out.*)
_EDGE_ENDINGS = (".edges", ".edgelist", ".el")


def _edge_list_file(path):
    """True if ``--format auto`` reads ``path`` as an edge list.

    The endings of ``_EDGE_ENDINGS``, KONECT's ``out.*`` files and any file whose
    first line is KONECT's header (``% sym``, ``% asym`` or ``% bip``); other
    ``.txt``/``.csv``/``.tsv`` files are dense 0/1 matrices.
    """
    from sklearn_rrank.datasets._edges import konect_kind

    name = os.path.basename(path)
    ext = os.path.splitext(name)[1].lower()
    return ext in _EDGE_ENDINGS or name.startswith("out.") or bool(konect_kind(path))


def _edge_options_unused(opts, fmt):
    """Refuse the edge-list options for a matrix (they would be ignored silently)."""
    given = [
        option
        for option, used in (
            ("--symmetric", opts.get("symmetric")),
            ("--relabel", opts.get("relabel")),
            ("--one-based", opts.get("one_based", "auto") != "auto"),
        )
        if used
    ]
    if given:
        raise CLIError(
            f"{' and '.join(given)} {'apply' if len(given) > 1 else 'applies'} to "
            f"edge lists, but the data is read as "
            f"{fmt}; add --format edgelist if the file lists edges, or leave them out"
        )


def _load_data(spec, *, keep_sparse=False, data_home=None, args=None):
    """``(X, name)`` of a named data set or a file.

    The paper's data sets are read from ``data_home`` (downloaded there if missing).
    With ``keep_sparse``, data stored sparse (the named sets, edge lists,
    ``.fimi``, ``.mtx``, ``scipy.sparse`` ``.npz``) with fewer than 10% ones stays a
    CSR matrix, so that no dense m x n copy is made at the door; otherwise X is a
    dense array. ``args`` (the parsed options) gives ``--format``,
    ``--symmetric``, ``--one-based``, ``--header`` and ``--quiet``.
    """
    from sklearn_rrank.datasets import DATASETS, load_binary_matrix, load_edge_list
    from sklearn_rrank.datasets._catalog import load_dataset
    from sklearn_rrank.datasets._edges import FileAdvice

    opts = vars(args) if args is not None else {}
    fmt = opts.get("format") or "auto"
    if spec in DATASETS:
        if fmt == "edgelist":
            raise CLIError(
                f"{spec} is a data set, not an edge list; leave out --format"
            )
        _edge_options_unused(opts, "a data set")
        X = load_dataset(spec, data_home=data_home, sparse=keep_sparse).data
        return _dense_unless_sparse(X, keep_sparse), spec
    if not os.path.exists(spec):
        raise CLIError(
            f"unknown data set or file {spec!r}; data sets: "
            f"{', '.join(DATASETS)} (see 'rrank datasets'; or give a path to "
            ".npz/.npy/.mtx/.csv/.tsv/.txt/.fimi, or an edge list: .edges, or "
            "--format edgelist)"
        )
    name = os.path.basename(os.path.normpath(spec))
    if fmt == "auto":
        fmt = "edgelist" if _edge_list_file(spec) else "matrix"
    try:
        if fmt == "edgelist":
            one_based = {"auto": "auto", "yes": True, "no": False}[
                opts.get("one_based", "auto")
            ]
            X = load_edge_list(
                spec,
                # without --symmetric, KONECT's '% sym' header still asks for it
                symmetric=True if opts.get("symmetric") else "auto",
                one_based=one_based,
                header=bool(opts.get("header")),
                relabel=bool(opts.get("relabel")),
            )
            if opts.get("relabel"):
                X = X[0]  # the matrix; the ids are not reported
        else:
            _edge_options_unused(opts, "a matrix")
            X = load_binary_matrix(
                spec, sparse=keep_sparse, header=bool(opts.get("header"))
            )
    except FileAdvice as exc:  # the fix in the command line's terms
        raise CLIError(exc.for_cli().rstrip(".")) from None
    text = os.path.splitext(name)[1].lower() in (".csv", ".tsv", ".txt")
    if fmt == "matrix" and text and X.shape[1] == 2 and not opts.get("quiet"):
        # two columns of 0/1 may as well be edges between nodes 0 and 1: say so
        print(
            f"note: {name} is read as a {X.shape[0]} x 2 matrix of 0/1 entries; if "
            "its lines are edges (pairs of node ids), use --format edgelist",
            file=sys.stderr,
        )
    return _dense_unless_sparse(X, keep_sparse), name


def _process_age():
    """Seconds since this process started (Linux ``/proc``), else 0.

    0 too when the process is older than ``_MAX_START``. The budget of ``rrank
    bounds`` is that of the whole command as the user times it: the interpreter's
    start and the imports (a few seconds on a busy machine) count too.
    """
    try:
        with open("/proc/self/stat") as fh:
            stat = fh.read()
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
        # field 22 (starttime, clock ticks after boot) is the 20th after the name
        started = int(stat.rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0
    age = uptime - started
    return age if 0.0 <= age <= _MAX_START else 0.0


def _large_file(spec):
    """True iff ``spec`` is a file of more than ``_LARGE_FILE_BYTES``."""
    try:
        return os.path.getsize(spec) > _LARGE_FILE_BYTES
    except OSError:
        return False


def _dense_unless_sparse(X, keep_sparse):
    """``X`` as loaded if it is sparse with few ones and may stay so, else dense."""
    from sklearn_rrank._core._validation import SPARSE_FRACTION

    if sp.issparse(X):
        m, n = X.shape
        if keep_sparse and X.nnz < SPARSE_FRACTION * m * n:
            return sp.csr_matrix(X)
        return X.toarray()
    return np.asarray(X)


def _progress(args):
    from sklearn_rrank._core._progress import ProgressPrinter

    if args.quiet or args.json and not args.verbose:
        return None
    from sklearn_rrank._portfolio._registry import METHODS

    # each method's bound is named a lower or an upper bound on the progress line
    kinds = {n: "lower" if s.lower else "upper" for n, s in METHODS.items()}
    kinds["rank_one"] = "lower"  # its bound is 1 or 2: proved, with no factors
    return ProgressPrinter(stream=sys.stderr, heartbeat=_HEARTBEAT, kinds=kinds)


def _require_matplotlib():
    """Fail fast (before any work) when ``--plot`` is given without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
    except ImportError:
        raise CLIError(
            "--plot needs matplotlib, which is not installed: pip install "
            '"sklearn_rrank[plot]" (or leave out --plot)'
        ) from None


def _save_plot(display_factory, path):
    """Draw a Display (needs the ``plot`` extra) and save its figure to ``path``."""
    _require_matplotlib()
    if not os.path.splitext(path)[1]:
        path += ".png"  # what matplotlib would write; report the real name
    display = display_factory()
    display.figure_.savefig(path, dpi=120, bbox_inches="tight")
    return path


@contextlib.contextmanager
def _heartbeat(args, method, k=None):
    """Progress of a one-call fit (the fit itself sends no events).

    A "start" event, then the printer's own heartbeat redraws the line with the
    elapsed time while the fit runs, and an "end" event when it returns.
    """
    printer = _progress(args)
    if printer is None:
        yield
        return
    t0 = time.monotonic()

    def event(stage, message):
        elapsed = time.monotonic() - t0
        printer(progress_event(method, stage, k=k, elapsed=elapsed, message=message))

    event("start", "fitting")
    try:
        yield
    finally:
        event("end", "fitted")
        printer.close()


@contextlib.contextmanager
def _signals(handler):
    """Install ``handler`` for SIGINT and SIGTERM; restore the old ones on exit."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set in the main thread
        return
    old = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, h in old.items():
            signal.signal(sig, h)


def _interrupt(signum, frame):
    """SIGINT and SIGTERM stop the computation like Ctrl-C (KeyboardInterrupt)."""
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _npz_path(path):
    """The file ``numpy.savez_compressed`` writes for ``path`` (it adds ``.npz``)."""
    return path if str(path).endswith(".npz") else f"{path}.npz"


def _factor_arrays(name, A):
    """The ``.npz`` arrays of a factor: ``name`` itself, or its CSR arrays.

    A sparse factor (the trivial certificate of sparse data) is written as
    ``name_data``, ``name_indices``, ``name_indptr`` and ``name_shape``, the arrays
    of ``scipy.sparse.csr_matrix((data, indices, indptr), shape=shape)``, so that
    no dense m x n array is formed (see ``docs/cli.rst``).
    """
    if not sp.issparse(A):
        return {name: A}
    A = sp.csr_matrix(A)
    return {
        f"{name}_data": A.data,
        f"{name}_indices": A.indices,
        f"{name}_indptr": A.indptr,
        f"{name}_shape": np.asarray(A.shape, dtype=np.int64),
    }


def _describe(X):
    m, n = X.shape
    ones = X.count_nonzero() if sp.issparse(X) else np.count_nonzero(X)
    density = float(ones) / (m * n) if m * n else 0.0
    return m, n, density


def _cmd_bounds(args):
    # SIGTERM, like SIGINT, stops the work as KeyboardInterrupt; once the methods
    # have started, the bounds reached so far come with it and are reported
    with _signals(_interrupt):
        res, X, name, t0, real_rank = _compute_bounds(args)
    # further signals must not cut the certificate file or the table short
    with _signals(signal.SIG_IGN):
        return _report_bounds(args, res, X, name, t0, real_rank)


def _compute_bounds(args):
    from sklearn_rrank import rounding_rank_bounds

    t0 = getattr(args, "started", None) or time.perf_counter()
    printer = _progress(args)
    if printer is not None and _large_file(args.data):  # a while: say so
        printer(progress_event("data", "start", message=f"loading {args.data}"))
    try:
        X, name = _load_data(
            args.data, keep_sparse=True, data_home=args.data_home, args=args
        )
        m, n, density = _describe(X)
    finally:
        if printer is not None:
            printer.close()
    compute_rank, kept, real_rank = _real_rank_plan(m, n, args.time_limit)
    time_limit = args.time_limit
    if time_limit is None and compute_rank:
        compute_rank, real_rank = False, _matrix_rank(X)
    elif time_limit is not None:
        # the budget is the whole command's: loading, the real rank and the methods
        time_limit = max(time_limit - (time.perf_counter() - t0) - kept, 1e-3)
    if not args.quiet and not args.json:
        budget = (
            "no time limit"
            if args.time_limit is None
            else f"time limit {args.time_limit:g} s"
        )
        print(
            f"computing the interval of the rounding rank of {name} ({m} x {n}; "
            f"{budget}) ...",
            file=sys.stderr,
        )
    try:
        res = rounding_rank_bounds(
            X,
            methods=args.methods,
            tau=args.tau,
            time_limit=time_limit,
            n_jobs=args.n_jobs,
            random_state=args.random_state,
            verbose=max(args.verbose - 1, 0),
            progress=printer,
        )
    except KeyboardInterrupt as exc:
        res = getattr(exc, "bounds", None)
        if res is None:
            raise  # interrupted before any method started: nothing to report
    finally:
        if printer is not None:
            printer.close()
    if compute_rank:  # within the seconds kept back from the methods
        if res.interrupted:
            real_rank = "not computed (interrupted)"
        else:  # what is left of the whole command's budget (at least the estimate)
            left = args.time_limit - (time.perf_counter() - t0)
            real_rank = _matrix_rank_within(X, max(left, kept, _REAL_RANK_MIN_WAIT))
    return res, X, name, t0, real_rank


def _report_bounds(args, res, X, name, t0, real_rank):
    """Write ``--output``/``--plot`` and print the result; the exit code."""
    m, n, density = _describe(X)
    status = 130 if res.interrupted else 0
    total = time.perf_counter() - t0
    out = res.to_dict()
    out.update(
        data=name,
        n_samples=m,
        n_features=n,
        density=density,
        real_rank=real_rank if isinstance(real_rank, int) else None,
        seconds=total,
    )
    if args.output:
        path = _npz_path(args.output)
        np.savez_compressed(
            path,
            **_factor_arrays("L", res.L),
            **_factor_arrays("R", res.R),
            tau=np.float64(res.tau),
        )
        out["output"] = path
    if args.plot:
        from sklearn_rrank.plotting import RankSearchDisplay

        out["plot"] = _save_plot(
            lambda: RankSearchDisplay.from_bounds(res, name=name), args.plot
        )
    if args.json:
        print(json.dumps(out, indent=2, default=_json_default))
        if res.interrupted:
            print("rrank: interrupted", file=sys.stderr)
        return status
    print(
        f"data        {name}: {m} x {n}, density {density:.4f}, ordinary "
        f"(linear-algebra) rank {real_rank}"
    )
    print(f"tau         {res.tau}")
    print(
        f"{'method':<12} {'kind':<6} {'bound':>6} {'certified':>9} {'seconds':>9}"
        "  status"
    )
    for row in res.report:
        bound = "-" if row["bound"] is None else str(row["bound"])
        cert = "" if row["certified"] is None else ("yes" if row["certified"] else "NO")
        note = f"  {row['status']}"
        if row["message"]:
            note += f" ({row['message']})"
        print(
            f"{row['method']:<12} {row['kind']:<6} {bound:>6} {cert:>9} "
            f"{row['seconds']:>9.2f}{note}"
        )
    # one legend line: what each method name in the table stands for
    from sklearn_rrank._portfolio._registry import METHODS

    legend = "; ".join(
        f"{row['method']} = {METHODS[row['method']].summary}"
        for row in res.report
        if row["method"] in METHODS
    )
    if legend:
        print(f"methods: {legend}")
    state = "exact" if res.exact else "interval"
    if res.interrupted:
        state += ", interrupted"
    limit = "" if args.time_limit is None else f" of a {args.time_limit:g} s limit"
    print(
        f"rounding rank in [{res.lower}, {res.upper}]  ({state}; lower bound by "
        f"{res.lower_method}, certified upper bound by {res.upper_method}; "
        f"{total:.2f} s{limit})"
    )
    stopped = [r["method"] for r in res.report if r["status"] == "stopped"]
    if not res.exact and not res.interrupted and stopped:
        names = ", ".join(stopped)
        if args.time_limit is None:
            print(f"not finished: {names} (see the status column)")
        else:
            print(
                f"not finished within the time limit: {names} (see the status "
                "column); a larger --time-limit (or 'none') may narrow the interval"
            )
    if res.proven_upper < res.upper:
        print(
            f"proven (not certified in float64) upper bound {res.proven_upper} by "
            f"{res.proven_upper_method}"
        )
    if args.output:
        print(f"certificate saved to {out['output']}")
    if args.plot:
        print(f"plot saved to {out['plot']}")
    if res.interrupted:
        print("rrank: interrupted", file=sys.stderr)
    return status


def _json_default(obj):
    if isinstance(obj, np.integer | np.floating | np.bool_):
        return obj.item()
    raise TypeError(f"not JSON serializable: {type(obj)}")


def _cmd_factorize(args):
    from sklearn_rrank import RoundingRankFactorization
    from sklearn_rrank._portfolio._registry import METHODS

    if not METHODS[args.method].uses_max_iter:
        given = (("--max-iter", args.max_iter), ("--time-limit", args.time_limit))
        for option, value in given:
            if value is not None:
                raise CLIError(
                    f"{option} is not used by --method {args.method} (a one-shot "
                    "method); leave it out"
                )
    X, name = _load_data(
        args.data,
        keep_sparse=METHODS[args.method].sparse_fit,
        data_home=args.data_home,
        args=args,
    )
    m, n, _ = _describe(X)
    if not args.json and not args.quiet:
        print(
            f"fitting {args.method} with k = {args.n_components} on {name} "
            f"({m} x {n}) ...",
            file=sys.stderr,
        )
    est = RoundingRankFactorization(
        args.n_components,
        method=args.method,
        tau=args.tau,
        nonnegative=args.nonnegative,
        max_iter=args.max_iter,
        time_limit=args.time_limit,
        random_state=args.random_state,
        n_jobs=args.n_jobs,
        verbose=max(args.verbose - 1, 0),
    )
    t0 = time.perf_counter()
    with (
        warnings.catch_warnings(record=True) as caught,
        _heartbeat(args, args.method, args.n_components),
    ):
        warnings.simplefilter("always")
        L = est.fit_transform(X)
    seconds = time.perf_counter() - t0
    out = {
        "data": name,
        "method": args.method,
        "n_components": est.n_components_,
        "tau": args.tau,
        "reconstruction_err": int(est.reconstruction_err_),
        "relative_error": float(est.relative_error_),
        "certified": bool(est.certified_),
        "seconds": seconds,
        "warnings": [_cli_warning(w.message, args) for w in caught],
    }
    if args.output:
        path = _npz_path(args.output)
        np.savez_compressed(path, L=L, R=est.components_.T, tau=np.float64(args.tau))
        out["output"] = path
    if args.plot:
        from sklearn_rrank.plotting import FactorizationDisplay

        out["plot"] = _save_plot(
            lambda: FactorizationDisplay.from_estimator(est, X, data_name=name),
            args.plot,
        )
    if args.json:
        print(json.dumps(out, indent=2, default=_json_default))
        return 0
    for w in out["warnings"]:
        print(f"warning: {w}", file=sys.stderr)
    print(f"data               {name}: {m} x {n}")
    print(
        f"method             {args.method}, k = {est.n_components_}, tau = {args.tau}"
    )
    print(f"errors             {est.reconstruction_err_} entries")
    print(f"relative error     {est.relative_error_:.3f}")
    print(f"exact (certified)  {'yes' if est.certified_ else 'no'}")
    print(f"seconds            {seconds:.2f}")
    if args.output:
        print(f"factors saved to   {out['output']}")
    if args.plot:
        print(f"plot saved to      {out['plot']}")
    return 0


def _cli_warning(message, args):
    """A solver warning in command-line terms (options, not Python attributes).

    A ``ConvergenceWarning`` of the estimator names Python parameters and
    attributes (``method='lpca'``, ``max_iter``, ``tol``, ``solver_info_``) that a
    command-line user cannot see or set: they become options, hints without an
    option are dropped, and the message ends with what to change on the command line.
    """
    from sklearn.exceptions import ConvergenceWarning

    from sklearn_rrank._portfolio._registry import METHODS

    text = str(message)
    if not isinstance(message, ConvergenceWarning):
        return text
    text = re.sub(r"method='([^']*)'", r"\1", text)
    text = re.sub(r"\bmax_iter=(\d+)", r"--max-iter \1", text)
    stopped_by_time = "raise time_limit" in text
    text = re.sub(
        r"\s*\((see \w+_|raise max_iter|raise time_limit|check the input)\)", "", text
    )
    text = re.sub(r";? raise time_limit", "", text)
    text = re.sub(r",? or raise tol to accept this fit", "", text)
    text = re.sub(r"\bmax_iter\b", "--max-iter", text)
    text = re.sub(r"\s*\(?\bsee (the )?\w+_\)?", "", text)  # other attributes
    text = text.rstrip(" .;")
    spec = METHODS.get(args.method)
    if stopped_by_time:
        return f"{text}; try a larger --time-limit (now {args.time_limit:g} s)"
    if spec is not None and spec.uses_max_iter:
        current = "the method's default" if args.max_iter is None else args.max_iter
        return f"{text}; try a larger --max-iter (now {current})"
    return f"{text}; try another --method or another -k"


_NODF_NOTE = """\
note: NODF (0-100) scores 0 for every pair of rows (or columns) with equal sums or
an empty one, so a nested matrix scores exactly the percentage of pairs whose sums
differ and are non-zero. The nearest nested matrix of sparse data has few non-empty
rows and columns, so its NODF can be below that of the data although it is nested;
the flips measure the fit."""


def _cmd_nested(args):
    try:
        from sklearn_rrank import NestedApprox, nodf
    except ImportError as exc:  # pragma: no cover - arrives with the nested module
        raise CLIError(f"nested approximation is not available: {exc}") from None

    X, name = _load_data(args.data, data_home=args.data_home, args=args)
    m, n, _ = _describe(X)
    est = NestedApprox(method=args.method, tau=args.tau, random_state=args.random_state)
    t0 = time.perf_counter()
    with _heartbeat(args, args.method, 1):
        est.fit(X)
    seconds = time.perf_counter() - t0
    N = est.inverse_transform(est.embedding_)
    row_sums, col_sums = N.sum(axis=1), N.sum(axis=0)
    out = {
        "data": name,
        "method": args.method,
        "flips": int(est.reconstruction_err_),
        "relative_error": float(est.relative_error_),
        "nodf_before": float(nodf(X).nodf),
        "nodf_after": float(nodf(N).nodf),
        "nested_ones": int(row_sums.sum()),
        "nested_rows": int(np.count_nonzero(row_sums)),
        "nested_columns": int(np.count_nonzero(col_sums)),
        "seconds": seconds,
    }
    if args.output:
        args.output = _npz_path(args.output)
        np.savez_compressed(
            args.output,
            nested=N,
            l=est.embedding_[:, 0],
            r=est.components_[0],
            row_order=est.row_order_,
            column_order=est.column_order_,
            tau=np.float64(args.tau),
        )
        out["output"] = args.output
    if args.plot:
        from sklearn_rrank.plotting import NestednessDisplay

        out["plot"] = _save_plot(
            lambda: NestednessDisplay.from_estimator(est, X, data_name=name),
            args.plot,
        )
    if args.json:
        print(json.dumps(out, indent=2, default=_json_default))
        return 0
    print(f"data            {name}: {m} x {n}")
    print(f"method          {args.method}")
    print(f"flips           {out['flips']} entries")
    print(f"relative error  {out['relative_error']:.3f}")
    print(
        f"nested matrix   {out['nested_ones']} ones in {out['nested_rows']} of {m} "
        f"rows and {out['nested_columns']} of {n} columns"
    )
    print(f"NODF            {out['nodf_before']:.2f} -> {out['nodf_after']:.2f}")
    print(f"seconds         {seconds:.2f}")
    if out["nodf_after"] < out["nodf_before"]:
        print(_NODF_NOTE)
    if args.output:
        print(f"saved to        {out['output']}")
    if args.plot:
        print(f"plot saved to   {out['plot']}")
    return 0


def _cmd_datasets(args):
    from sklearn_rrank.datasets._catalog import dataset_status

    rows = dataset_status(args.data_home)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        m, n = r["shape"]
        if r["cached"] is None:
            where = "built in, no download"
        elif r["cached"]:
            where = f"cached: {r['file']}"
        else:
            where = f"not cached (downloaded on first use to {r['file']})"
        print(f"{r['name']:<10} {m:>6} x {n:<6} {where}")
    return 0


def _build_parser():
    """The ``rrank`` parser (:func:`sklearn_rrank._cli._parser.build_parser`)."""
    from sklearn_rrank._cli._parser import build_parser

    return build_parser(
        {
            "bounds": _cmd_bounds,
            "factorize": _cmd_factorize,
            "nested": _cmd_nested,
            "datasets": _cmd_datasets,
        }
    )


def main(argv=None):
    """Entry point of ``rrank``; returns the exit code."""
    started = time.perf_counter() - (_process_age() if argv is None else 0.0)
    parser = _build_parser()
    args = parser.parse_args(argv)
    args.started = started  # the clock of the whole command's budget
    if getattr(args, "methods", None) is not None:
        args.methods = tuple(m.strip() for m in args.methods.split(",") if m.strip())
    try:
        if getattr(args, "plot", None):
            _require_matplotlib()  # before any work, not after a long run
        return args.func(args)
    except CLIError as exc:
        print(f"rrank: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError, FileNotFoundError, OSError) as exc:
        print(f"rrank: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # pragma: no cover
        print("rrank: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - one line, unless RRANK_DEBUG is set
        if os.environ.get("RRANK_DEBUG"):
            raise
        print(
            f"rrank: internal error: {type(exc).__name__}: {exc} (set RRANK_DEBUG=1 "
            "for the traceback; please report it)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
