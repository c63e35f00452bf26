"""The family test surface: the one place where tests reach the package's internals.

Tests import public names from their public place (``sklearn_rrank``,
``sklearn_rrank.datasets``, ``sklearn_rrank.plotting``) and run the command line
through :func:`rrank`. What they need of the internals — the skeleton's objects, a
family's kernels, phases and private helpers, and the private modules whose
attributes they monkeypatch — they import from this file, so that when internals
move only this file changes. ``tests/test_import_graph.py`` fails if another test
file imports ``sklearn_rrank._...``.

Sections:

* :func:`run_family`: one method's rank search through the skeleton;
* :func:`rrank`: the ``rrank`` command line, as its console script runs it;
* :func:`swapped`: the registry with some fields replaced (``registry=`` of
  ``_run_portfolio``); :func:`bounds_with`: the result of the public door
  ``rounding_rank_bounds`` on such a registry;
* private names, grouped by family, one line each saying what it is (the name
  is the one it has in the package);
* :data:`modules`: the private modules whose attributes tests read, or patch
  where a patch is the honest tool; a machine with less memory is
  ``sklearn_rrank.config_context(memory_limit=...)``, and thresholds are
  parameters, not patched constants.
"""

import dataclasses
import functools
from importlib.metadata import entry_points
from types import SimpleNamespace

import scipy.sparse as sp

from sklearn_rrank import _bounds, _classification, _factorization
from sklearn_rrank._cli import _main as _cli
from sklearn_rrank._cli import _parser as _cli_parser
from sklearn_rrank._core import (
    _lp_engine,
    _memory,
    _progress,
    _results,
    _rounding,
    _rows,
    _separation,
    _trivial,
    _validation,
)
from sklearn_rrank._lower import _spectral, _vc, _vc_search
from sklearn_rrank._lpca import _distributed_block as _lpca_distributed_block
from sklearn_rrank._lpca import _fit as _lpca
from sklearn_rrank._lpca import _graph_start as _lpca_graph_start
from sklearn_rrank._lpca import _lbfgs as _lpca_lbfgs
from sklearn_rrank._lpca import _margin as _lpca_margin
from sklearn_rrank._lpca import _model as _lpca_model
from sklearn_rrank._lpca import _newton as _lpca_newton
from sklearn_rrank._lpca import _options as _lpca_options
from sklearn_rrank._lpca import _refine as _lpca_refine_module
from sklearn_rrank._lpca import _scan as _lpca_scan
from sklearn_rrank._lpca import _search as _lpca_search_module
from sklearn_rrank._lpca import _start as _lpca_init
from sklearn_rrank._lpca import _transform as _lpca_transform_module
from sklearn_rrank._lpca import _working_set as _lpca_working_set
from sklearn_rrank._lpca import _ws_rescue as _lpca_ws_rescue
from sklearn_rrank._nested import _bmna as _nested_bmna
from sklearn_rrank._nested import _nestedness
from sklearn_rrank._portfolio import _registry as _methods
from sklearn_rrank._portfolio import _run as _portfolio_run
from sklearn_rrank._projlp import _copied as _projlp_copied
from sklearn_rrank._projlp import _lp, _projlp
from sklearn_rrank._projlp import _search as _projlp_search_module
from sklearn_rrank._search import _bracket, _policy
from sklearn_rrank._search import _skeleton as _ranksearch
from sklearn_rrank._upper import _asso, _nuclear, _permutation_order, _rsvd
from sklearn_rrank.datasets import _base as _datasets_base
from sklearn_rrank.datasets import _fetchers as _datasets_fetchers

__all__ = [
    "FakeClock",
    "swapped",
    "round_matrix",
    "_blocks_received",
    "_lpca_refine",
    "_lpca_search",
    "_scan",
    "_LPCAData",
    "_lpca_fit",
    "FitLoop",
    "Kernels",
    "LPCAOptions",
    "WORKING_SET_MIN_ENTRIES",
    "_far_zeros",
    "_use_working_set",
    "_working_set_fit",
    "_working_set_of",
    "_ws_phases",
    "_WSObjective",
    "_WS_BYTES_PER_PARAMETER",
    "_ws_rescue",
    "_graph_start",
    "lpca_transform",
    "lpca_fit",
    "BOUND_METHODS",
    "DEFAULT_EPS",
    "FIT_METHODS",
    "METHODS",
    "STATUS_NAMES",
    "WarmStart",
    "_solve_public",
    "THRESHOLD_GRID",
    "BinaryData",
    "Deadline",
    "Incumbent",
    "ProgressPrinter",
    "_REMOTE",
    "_Portfolio",
    "RunSettings",
    "_merge_rows",
    "_PAPER",
    "_PARSERS",
    "_STRATEGIES",
    "_sign_change_ordering",
    "_SVDStart",
    "_ProjLPSearch",
    "_Shattering",
    "_best_upper_sets",
    "_bmna",
    "_bmna_brute_force",
    "_bmna_ilp",
    "_check_dense_size",
    "matrix_sha256",
    "_column_counts",
    "_copied_columns_factors",
    "_count_errors_factors",
    "_count_violations",
    "_curveball_trades",
    "_fill_exponent",
    "_fill_line_crossing",
    "_insertion_sweep",
    "_largest_shattered",
    "_mt_greedy",
    "_nested_from_order",
    "_nnrr1",
    "_one_feature_suffices",
    "_pair_graph",
    "_projection_matrix",
    "_projlp_search",
    "LargeInput",
    "LARGE_INPUT",
    "_check_solver",
    "alternate_separation",
    "asso_fit",
    "asso_transform",
    "available_memory",
    "check_binary_matrix",
    "check_method_params",
    "check_tau",
    "sparse_if_few_ones",
    "modules",
    "nuclear_norm_minimization",
    "projlp_fit",
    "projlp_transform",
    "rank_zero_possible",
    "rrank",
    "rsvd_error_curve",
    "run_family",
    "run_rank_search",
    "bracket_search",
    "BracketFit",
    "Certificate",
    "SearchMemo",
    "StallRule",
    "row_classes",
    "BracketFamily",
    "SearchPolicy",
    "Start",
    "StartKind",
    "separate_columns",
    "separation_basis",
    "solve_columns_feasibility",
    "solve_columns_l1",
    "solve_rows_l1",
    "trivial_upper_bound",
    "truncate_rounding",
    "truncated_svd",
]


# -- private names, by family ----------------------------------------------------
# the skeleton: validation at the door, the registry, the rank search (_validation,
# _methods, _ranksearch, _rounding, _trivial)
check_binary_matrix = _validation.check_binary_matrix  # the door's binary check
check_tau = _validation.check_tau  # the door's check of the rounding threshold
sparse_if_few_ones = _validation.sparse_if_few_ones  # large dense, few ones -> CSR
METHODS = _methods.METHODS  # the registry: method name -> MethodSpec
BOUND_METHODS = _methods.BOUND_METHODS  # registry methods with a bound or search
FIT_METHODS = _methods.FIT_METHODS  # registry methods with a rank-k fit
check_method_params = _methods.check_method_params  # method_params check of a spec
BinaryData = _ranksearch.BinaryData  # validated data and what methods ask of it
Deadline = _ranksearch.Deadline  # the one wall-clock budget of a public call
Incumbent = _ranksearch.Incumbent  # a search's best certified factorization
SearchMemo = _ranksearch.SearchMemo  # what a search keeps across its runs
run_rank_search = _ranksearch.run_rank_search  # one family's search in the skeleton
bracket_search = _bracket.bracket_search  # the bracket rank search of fit-at-k
BracketFit = _bracket.Fit  # what a family's fit at k returns
Certificate = _results.Certificate  # a certified bound, its method and factors
row_classes = _rows.row_classes  # the classes of identical rows (dense or sparse)
StallRule = _lpca_newton.StallRule  # when an L-PCA fit's rounding has stalled
BracketFamily = _bracket.Family  # what a family hands the bracket search
SearchPolicy = _policy.SearchPolicy  # every rule of the rank searches
Start = _policy.Start  # where a fit starts (a kind and a state)
StartKind = _policy.StartKind  # fresh, same, below, certificate
rank_zero_possible = _ranksearch.rank_zero_possible  # is X round_tau(0)?
_count_errors_factors = _rounding._count_errors_factors  # errors of L R^T, blocked
trivial_upper_bound = _trivial.trivial_upper_bound  # certified rank-min(m, n) factors
_run_portfolio = _portfolio_run._run_portfolio  # the bounds' portfolio, trusted
RunSettings = _portfolio_run.RunSettings  # what a portfolio hands every method
_Portfolio = _portfolio_run._Portfolio  # the state of one portfolio run
_merge_rows = _portfolio_run._merge_rows  # a method's two portfolio runs in one row

# LP engine and batched separation (_lp, _separation)
DEFAULT_EPS = _lp.DEFAULT_EPS  # the LP engine's default tolerance
STATUS_NAMES = _lp.STATUS_NAMES  # the LP engine's status codes, by name
solve_columns_feasibility = _lp.solve_columns_feasibility  # separable columns?
solve_columns_l1 = _lp.solve_columns_l1  # L1-slack LP per column, L fixed
_solve_public = _lp._solve_public  # the column LPs behind the doors (warm starts)
WarmStart = _lp_engine.WarmStart  # the LPs' bases of one round, for the next
solve_rows_l1 = _lp.solve_rows_l1  # L1-slack LP per row, R fixed
separate_columns = _separation.separate_columns  # R for fixed L, squared hinge
separation_basis = _separation.separation_basis  # the basis separate_columns uses
alternate_separation = _separation.alternate_separation  # alternating separation
_column_counts = _separation._column_counts  # rounding errors per column

# L-PCA (_lpca*, the public doors being lpca_fit_distributed and the estimator)
lpca_fit = _lpca.lpca_fit  # minimum-error rank-k fit by logistic PCA
_lpca_fit = _lpca._lpca_fit  # lpca_fit on validated data, from an options record
LPCAOptions = _lpca_options.LPCAOptions  # the options record of one L-PCA fit
Kernels = _lpca_options.Kernels  # L-PCA's block sizes and size thresholds
FitLoop = _lpca_newton.FitLoop  # how an L-PCA fit's loop runs and stops
lpca_transform = _lpca_transform_module.lpca_transform  # new rows' left factor, R fixed
_lpca_search = _lpca_search_module._lpca_search  # L-PCA's rank search
_lpca_refine = _lpca_refine_module._lpca_refine  # alternating L1-slack LPs
_blocks_received = _lpca_distributed_block._blocks_received  # unpickles counted
_LPCAData = _lpca_model._Data  # L-PCA's validated data (signs, sparse pattern)
_scan = _lpca_scan._scan  # blocked float32 scan of all logits (W, wrong counts)
WORKING_SET_MIN_ENTRIES = _lpca_working_set.WORKING_SET_MIN_ENTRIES  # its size rule
_far_zeros = _lpca_working_set._far_zeros  # far zeros' loss from their moments
_use_working_set = _lpca_working_set._use_working_set  # working set or dense path
_working_set_fit = _lpca_working_set._working_set_fit  # start + both phases on W
_working_set_of = _lpca_working_set._working_set_of  # W from a scan and the last W
_ws_phases = _lpca_working_set._ws_phases  # both phases and the LPs from a state
_WSObjective = _lpca_working_set._WSObjective  # objective on W plus Gram moments
# a working-set fit's bytes of solver state per parameter (its rank cap)
_WS_BYTES_PER_PARAMETER = _lpca_working_set._BYTES_PER_PARAMETER
# a phase of a working-set fit ends after this many scans without a drop this large
_WS_STALL_SCANS = _lpca_working_set._STALL_SCANS
_WS_STALL_DROP = _lpca_working_set._STALL_DROP
_ws_rescue = _lpca_ws_rescue._ws_rescue  # row and column LPs restricted to W
_graph_start = _lpca_graph_start._graph_start  # eigenpairs at both spectrum ends
round_matrix = _rounding.round_matrix  # round_tau(L R^T)

# RSVD (_rsvd)
truncated_svd = _rsvd.truncated_svd  # first singular triplets (LAPACK/Gram/ARPACK)
rsvd_error_curve = _rsvd.rsvd_error_curve  # rounding errors of every truncation

# Asso (_asso)
asso_fit = _asso.asso_fit  # rank-k Boolean factorization by Asso
asso_transform = _asso.asso_transform  # Boolean usage of new rows, basis fixed
THRESHOLD_GRID = _asso.THRESHOLD_GRID  # Asso's association thresholds tried

# Nuclear (_nuclear)
nuclear_norm_minimization = _nuclear.nuclear_norm_minimization  # ADMM + SVT
truncate_rounding = _nuclear.truncate_rounding  # least SVD rank still rounding to X

# ProjLP (_projlp, _projlp_search, _projlp_copied)
projlp_fit = _projlp.projlp_fit  # minimum-error rank-k fit by ProjLP
projlp_transform = _projlp.projlp_transform  # left factor of new rows, R fixed
_projection_matrix = _projlp._projection_matrix  # Achlioptas random projection
_projlp_search = _projlp_search_module._projlp_search  # ProjLP's rank search
LargeInput = _projlp.LargeInput  # ProjLP's rules for large input (phase 0, hinge)
LARGE_INPUT = _projlp.LARGE_INPUT  # the rules the fit and search use by default
_check_solver = _projlp._check_solver  # ProjLP's solver="auto" -> "lp" or "hinge"
_copied_columns_factors = _projlp_copied._copied_columns_factors  # width d + |F|
_SVDStart = _projlp_copied._SVDStart  # phase 0's start factors (truncated SVD)
_ProjLPSearch = (
    _projlp_search_module._ProjLPSearch
)  # a ProjLP search's state and phases

# permutation (_permutation_order)
_STRATEGIES = _permutation_order._STRATEGIES  # names of the ordering strategies
_sign_change_ordering = _permutation_order._sign_change_ordering  # trusted input

# classification (_classification)
_one_feature_suffices = _classification._one_feature_suffices  # exact fd(Y) <= 1

# nested matrices (_nested_bmna, _nestedness)
_bmna = _nested_bmna._bmna  # nearest nested matrix by one of the four methods
_bmna_brute_force = _nested_bmna._bmna_brute_force  # exact, by column orders
_bmna_ilp = _nested_bmna._bmna_ilp  # exact, by an integer program
_mt_greedy = _nested_bmna._mt_greedy  # violation-elimination greedy (MT)
_nnrr1 = _nested_bmna._nnrr1  # NNRR1 alternating exhaustive updates
_best_upper_sets = _nested_bmna._best_upper_sets  # NNRR1's exhaustive update
_insertion_sweep = _nested_bmna._insertion_sweep  # one pass of column re-insertions
_nested_from_order = _nested_bmna._nested_from_order  # best nested, given an order
_count_violations = _nested_bmna._count_violations  # number of checkerboards
_curveball_trades = _nestedness._curveball_trades  # null model's curveball trades
_fill_exponent = _nestedness._fill_exponent  # temperature's fill-line exponent
_fill_line_crossing = _nestedness._fill_line_crossing  # fill line meets a diagonal

# VC lower bound (_vc, _vc_search)
_largest_shattered = _vc_search._largest_shattered  # largest shattered set of rows
_pair_graph = _vc_search._pair_graph  # pairs of points shattered together
_Shattering = _vc_search._Shattering  # resumable search for a shattered set

# progress output and data sets (_progress, _memory, datasets._base, ._fetchers)
ProgressPrinter = _progress.ProgressPrinter  # the live progress line of verbose=1
available_memory = _memory.available_memory  # bytes of memory available, or None
_check_dense_size = _datasets_base._check_dense_size  # refuse too-large dense loads
_REMOTE = _datasets_fetchers._REMOTE  # fetched data sets: URL, shape, SHA-256
_PAPER = _datasets_fetchers._PAPER  # the paper's table for the fetched data sets
_PARSERS = _datasets_fetchers._PARSERS  # source file format -> parser
matrix_sha256 = _datasets_fetchers.matrix_sha256  # SHA-256 of a matrix's entries

#: the private modules whose attributes tests monkeypatch
modules = SimpleNamespace(
    bracket=_bracket,  # the bracket rank search
    bounds=_bounds,  # rounding_rank_bounds, the door (its validation)
    portfolio=_portfolio_run,  # the portfolio (its shares, its _run_portfolio)
    cli=_cli,  # the command line (its loader, its real-rank plan)
    factorization=_factorization,  # the estimator (its METHODS)
    fetchers=_datasets_fetchers,  # the data set fetchers (their base URL, manifest)
    lpca=_lpca,  # L-PCA's public fit and transform, the solver dispatch
    lpca_distributed_block=_lpca_distributed_block,  # a Dask worker's row block
    lpca_init=_lpca_init,  # L-PCA's SVD starts and added columns
    lpca_lbfgs=_lpca_lbfgs,  # L-PCA's L-BFGS solver (its task chunks)
    lpca_margin=_lpca_margin,  # L-PCA's margin phase (squared hinge, working set)
    lpca_model=_lpca_model,  # L-PCA's data object, entry kernels, bias models
    lpca_newton=_lpca_newton,  # L-PCA's Newton/MM sweeps and stall rule
    lpca_refine=_lpca_refine_module,  # the LP refinement of the search's rescue
    lpca_search=_lpca_search_module,  # L-PCA's family of the bracket search
    memory=_memory,  # memory probe of the loaders and the command line
    methods=_methods,  # the registry (its METHODS)
    permutation_order=_permutation_order,  # the ordering strategies (their limits)
    progress=_progress,  # the progress printer (its clock, its shutil)
    projlp=_projlp,  # ProjLP's fit (separation limits, transform)
    projlp_copied=_projlp_copied,  # ProjLP's copied-columns phase (Newton steps)
    projlp_search=_projlp_search_module,  # ProjLP's rank search (truncated products)
    rsvd=_rsvd,  # RSVD (scan blocks, SVD time estimates)
    separation=_separation,  # batched separation (block sizes)
    spectral=_spectral,  # the spectral bound (its d*, its memory check)
    vc=_vc,  # the VC bound (its orientations, passes and proofs)
    vc_search=_vc_search,  # the VC bound's branch and bound and its setup steps
    validation=_validation,  # the door's checks (wrapped to count calls)
)


# -- the command line --------------------------------------------------------------
_build_parser = _cli._build_parser  # the rrank argument parser
_cli_warning = _cli._cli_warning  # one-line warnings of the command line
_load_data = _cli._load_data  # the command line's data loader
BOUNDS_TIME_LIMIT = _cli_parser.BOUNDS_TIME_LIMIT  # rrank bounds' default budget (s)


@functools.cache
def _console_script(name):
    (entry,) = entry_points(group="console_scripts", name=name)
    return entry.load()


def rrank(argv=None):
    """Run the ``rrank`` command line on ``argv`` and return its exit code.

    The function run is the one the installed ``rrank`` console script runs (its
    entry point, ``[project.scripts]`` in ``pyproject.toml``).
    """
    return _console_script("rrank")(argv)


# -- one family's rank search -------------------------------------------------------
def run_family(
    method,
    X,
    *,
    tau=0.5,
    time_limit=None,
    random_state=None,
    n_jobs=None,
    verbose=0,
    progress=None,
    private=None,
    **params,
):
    """Run ``method``'s rank search on ``X``; ``params`` are its method_params.

    ``private`` (a dict or None) holds keywords of the family's search function
    that are not method parameters (``{"large": LargeInput(entries=0)}``: ProjLP's
    phase 0 on small input); ``progress`` receives the search's events.

    The search runs the way :func:`~sklearn_rrank.rounding_rank_bounds` runs it
    for one method, with the data validated at this door, and returns the
    family's ``RankSearchResult`` (``rank``, ``L``, ``R``, ``certified``,
    ``stopped_early``, ``info``). Users call
    ``rounding_rank_bounds(X, methods=(method,), method_params={method: {...}})``.
    """
    spec = METHODS[method]
    X = check_binary_matrix(
        X, allow_missing=spec.missing, accept_sparse=True, method=method
    )
    if sp.issparse(X) and not spec.sparse:
        X = X.toarray()  # as the portfolio hands it to a dense method
    search = spec.search
    if private:
        search = functools.partial(search, **private)
    return run_rank_search(
        search,
        X,
        method=method,
        tau=check_tau(tau),
        deadline=time_limit,
        random_state=random_state,
        n_jobs=n_jobs,
        verbose=verbose,
        progress=progress,
        params=check_method_params(spec, params, "search"),
    )


def swapped(**changes):
    """A copy of the method registry with fields of some entries replaced.

    ``swapped(lpca={"search": fake})``: ``_methods.METHODS`` with ``lpca``'s
    ``search`` replaced, to hand to ``_run_portfolio(..., registry=...)``.
    """
    table = dict(modules.methods.METHODS)
    for name, fields in changes.items():
        table[name] = dataclasses.replace(table[name], **fields)
    return table


class FakeClock:
    r"""A monotonic clock that only the fake work moves (no sleeping): hand it to
    ``Deadline(seconds, clock=...)``; a fake method ``advance``\ s it."""

    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def advance(self, seconds):
        self.t += seconds


def bounds_with(
    X, methods, registry, *, tau=0.5, time_limit=None, clock=None, **kwargs
):
    """:func:`~sklearn_rrank.rounding_rank_bounds` run on another ``registry``.

    ``bounds_with(X, ("rsvd", "lpca"), swapped(lpca={"search": fake}))``: ``X``
    and ``tau`` checked as the door checks them, then the door's own result
    (``_bounds._bounds_result``, a ``RoundingRankBounds``; on Ctrl-C its
    ``KeyboardInterrupt`` carries it as ``.bounds``) from the portfolio of
    ``registry`` (:func:`swapped`). ``kwargs``: ``random_state``, ``n_jobs``,
    ``verbose``, ``progress``, ``method_params``; ``clock`` (a :class:`FakeClock`)
    is the deadline's clock.
    """
    X = check_binary_matrix(X, accept_sparse=True, method="rounding_rank_bounds")
    return _bounds._bounds_result(
        X,
        tuple(methods),
        tau=check_tau(tau),
        deadline=Deadline(time_limit, clock=clock),
        time_limit=time_limit,
        registry=registry,
        **kwargs,
    )
