"""``Parallel`` and ``delayed`` for the thread pools of the numeric kernels.

The kernels (LP chunks, Newton columns, L-PCA row chunks, Asso thresholds) read no
scikit-learn configuration, so they use joblib's own ``Parallel``: scikit-learn's
wrapper runs every task inside ``warnings.catch_warnings()``, which is not
thread-safe before Python 3.14; with ``prefer="threads"`` it corrupts the process's
warning filters (the user's filters are lost, every later task warns that
``delayed`` should be used with ``Parallel``). joblib's backends (threads, loky,
Dask through :func:`joblib.parallel_config`) are unchanged. Code that fits an
estimator inside a task (:mod:`sklearn_rrank._rank_cv`) keeps scikit-learn's
``Parallel``, which carries the configuration to the workers.
"""

from joblib import Parallel, delayed, effective_n_jobs

__all__ = ["Parallel", "delayed", "effective_n_jobs"]
