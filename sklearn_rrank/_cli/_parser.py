"""The argument parser of the ``rrank`` command: one builder per subcommand.

:func:`build_parser` takes the subcommands' handlers from
:mod:`sklearn_rrank._cli._main`
(so that this module does not import it) and returns the ``argparse`` parser whose
``--help`` texts document every option and its default.
"""

import argparse
import os

from sklearn_rrank._portfolio._registry import DEFAULT_METHODS, FIT_METHODS, METHODS
from sklearn_rrank._version import __version__

__all__ = ["build_parser"]

_TAU, _SEED = 0.5, 0
# seconds: the default budget of ``rrank bounds``, so that its run time is known
# in advance (without one, how far the rank searches go depends on the machine)
BOUNDS_TIME_LIMIT = 60.0
_FACTORIZE_METHOD = "lpca"
# the nested-approximation heuristics, with what each name stands for
_NESTED_METHODS = {
    "mt+nnrr1": "the reordering heuristic, then the alternating one from its result",
    "mt": "Mannila-Terzi-style reorderings of rows and columns",
    "nnrr1": "alternating non-negative rounding rank one",
    "rsvd": "the rounded rank-one SVD",
}


class _Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """Defaults after each option's help; the epilog keeps its line breaks."""

    def _fill_text(self, text, width, indent):
        return "".join(indent + line for line in text.splitlines(keepends=True))


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def _time_limit(text):
    """Seconds (a number >= 0), or ``none`` for no limit."""
    if text.strip().lower() == "none":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a number of seconds or 'none': {text!r}"
        ) from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds >= 0 (or 'none' for no limit), got {text}"
        )
    return value


def _output_file(text):
    # checked before any computation; numpy's savez appends .npz when missing
    parent = os.path.dirname(os.path.abspath(text))
    if not os.path.isdir(parent):
        raise argparse.ArgumentTypeError(f"directory {parent} does not exist")
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a directory; give a file name")
    return text


def _add_data_home(p):
    p.add_argument(
        "--data-home",
        default=None,
        metavar="DIR",
        help="folder of the cached data sets paleo, apj, abstracts (None: the "
        "environment variable SKLEARN_RRANK_DATA, else ~/sklearn_rrank_data)",
    )


def _add_common(p):
    """The options of every command that reads a data set."""
    p.add_argument(
        "data",
        help="data set name (see 'rrank datasets') or file: a matrix (.npz, .npy, "
        ".mtx, .csv/.tsv/.txt of 0/1, .fimi) or a graph's edge list (.edges, "
        "KONECT's out.* files, or any text file with --format edgelist)",
    )
    _add_data_home(p)
    p.add_argument(
        "--format",
        default="auto",
        choices=["auto", "matrix", "edgelist"],
        help="how to read a file: matrix (by its ending), edgelist (one 'i j' pair "
        "of node ids a line; '#' and '%%' lines are comments, further columns "
        "such as weights are not read), auto: edgelist for .edges, .edgelist, .el, "
        "KONECT's out.* files and files whose first line is KONECT's '%% sym', "
        "'%% asym' or '%% bip' header, else matrix (so a .txt of pairs is read "
        "as a matrix unless --format edgelist is given)",
    )
    p.add_argument(
        "--symmetric",
        action="store_true",
        help="edge lists: also add the reverse 'j i' of each edge (an undirected "
        "graph whose file lists each edge once; implied by KONECT's '%% sym' "
        "header)",
    )
    p.add_argument(
        "--one-based",
        default="auto",
        choices=["auto", "yes", "no"],
        help="edge lists: whether node ids start at 1 (KONECT) or 0 (SNAP); auto: "
        "0-based if some id is 0, else 1-based",
    )
    p.add_argument(
        "--relabel",
        action="store_true",
        help="edge lists: number only the nodes that occur, in the order of their "
        "ids (ids with gaps, as in many SNAP files, then give no empty rows and "
        "columns)",
    )
    p.add_argument(
        "--header",
        action="store_true",
        help=".csv/.tsv/.txt files and edge lists: skip the first line that is not "
        "a comment (column names)",
    )
    p.add_argument("--tau", type=float, default=_TAU, help="rounding threshold")
    p.add_argument("--n-jobs", type=int, default=None, help="parallel jobs (None: one)")
    p.add_argument("--random-state", type=int, default=_SEED, help="seed")
    p.add_argument("--json", action="store_true", help="print JSON on stdout")
    p.add_argument(
        "--output",
        type=_output_file,
        default=None,
        metavar="FILE.npz",
        help="save results to this .npz file (.npz is appended when missing; the "
        "path written is printed)",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    p.add_argument(
        "--plot",
        default=None,
        metavar="FILE.png",
        help="save a picture of the result (needs the plot extra)",
    )
    p.add_argument("-v", "--verbose", action="count", default=0, help="more output")


def _add_bounds(sub, handler):
    bound_methods = [n for n, s in METHODS.items() if s.lower or s.search]
    p = sub.add_parser(
        "bounds", help="lower and certified upper bounds", formatter_class=_Formatter
    )
    _add_common(p)
    p.add_argument(
        "--methods",
        default=",".join(DEFAULT_METHODS),
        help="comma-separated methods, run cheap first: "
        + "; ".join(f"{n}: {METHODS[n].summary}" for n in bound_methods),
    )
    p.add_argument(
        "--time-limit",
        type=_time_limit,
        default=BOUNDS_TIME_LIMIT,
        metavar="SECONDS",
        help="wall-clock budget in seconds of the whole command (reading the data, "
        "the methods, the ordinary rank); at the limit the interval reached so far "
        "is printed. 'none': no limit (the run then takes as long as the rank "
        "searches need, which depends on the machine). The ordinary (linear-algebra) "
        "rank is computed within the budget when its SVD is estimated to take at "
        "most a tenth of it",
    )
    p.set_defaults(func=handler)


def _add_factorize(sub, handler):
    p = sub.add_parser(
        "factorize",
        help="minimum-error rounding rank-k factorization",
        formatter_class=_Formatter,
    )
    _add_common(p)
    p.add_argument(
        "-k",
        "--n-components",
        type=_positive_int,
        required=True,
        default=argparse.SUPPRESS,  # required: no default to show
        help="the rank k (required)",
    )
    p.add_argument(
        "--method",
        default=_FACTORIZE_METHOD,
        choices=list(FIT_METHODS),
        help="; ".join(f"{n}: {METHODS[n].summary}" for n in FIT_METHODS),
    )
    p.add_argument(
        "--max-iter",
        type=_positive_int,
        default=None,
        help="iterations of lpca/projlp (None: the method's default)",
    )
    p.add_argument(
        "--time-limit",
        type=_time_limit,
        default=None,
        metavar="SECONDS",
        help="wall-clock budget in seconds of the lpca/projlp fit; at the limit the "
        "best factors so far are reported with a warning (None or 'none': no limit)",
    )
    p.add_argument(
        "--nonnegative", action="store_true", help="non-negative factors (projlp)"
    )
    p.set_defaults(func=handler)


def _add_nested(sub, handler):
    p = sub.add_parser(
        "nested",
        help="nearest nested matrix (BMNA: bidirectional minimum nestedness "
        "augmentation)",
        formatter_class=_Formatter,
    )
    _add_common(p)
    p.add_argument(
        "--method",
        default=next(iter(_NESTED_METHODS)),
        choices=list(_NESTED_METHODS),
        help="heuristic for the nearest nested matrix: "
        + "; ".join(f"{n}: {what}" for n, what in _NESTED_METHODS.items()),
    )
    p.set_defaults(func=handler)


def _add_datasets(sub, handler):
    p = sub.add_parser(
        "datasets",
        help="list the data sets and whether each is cached",
        formatter_class=_Formatter,
    )
    _add_data_home(p)
    p.add_argument("--json", action="store_true", help="print JSON on stdout")
    p.set_defaults(func=handler)


def build_parser(handlers):
    """The ``rrank`` parser; ``handlers`` maps each subcommand to its function."""
    methods = [n for n, s in METHODS.items() if s.lower or s.search]
    epilog = (
        "defaults (every option and its default: rrank COMMAND --help):\n"
        f"  bounds, factorize, nested: --tau {_TAU}; --random-state {_SEED}; "
        "--n-jobs None (one job)\n"
        f"  bounds:    --methods {','.join(DEFAULT_METHODS)}; --time-limit "
        f"{BOUNDS_TIME_LIMIT:g} (seconds; 'none': no limit)\n"
        f"  factorize: --method {_FACTORIZE_METHOD}; --max-iter None (the method's "
        "default); --time-limit None (no limit)\n"
        f"  nested:    --method {next(iter(_NESTED_METHODS))}\n"
        "methods (bounds --methods; factorize --method takes "
        f"{', '.join(FIT_METHODS)}):\n"
        + "".join(f"  {n:<12} {METHODS[n].summary}\n" for n in methods)
        + "nested --method (heuristics for the nearest nested matrix):\n"
        + "".join(f"  {n:<12} {what}\n" for n, what in _NESTED_METHODS.items())
    ).rstrip("\n")
    parser = argparse.ArgumentParser(
        prog="rrank",
        description="Rounding rank of binary matrices (Neumann, Gemulla, Miettinen, "
        "ICDM 2016).",
        epilog=epilog,
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=__version__)
    sub = parser.add_subparsers(dest="command", required=True)
    _add_bounds(sub, handlers["bounds"])
    _add_factorize(sub, handlers["factorize"])
    _add_nested(sub, handlers["nested"])
    _add_datasets(sub, handlers["datasets"])
    return parser
