"""Our L-PCA against PyPI ``logisticpca`` on APJ: rounding errors, deviance, CPU.

The two are different models (see the user guide, "L-PCA"): ours fits free factors
``theta = U V^T + 1 mu^T`` (Schein et al. 2003) with a small L2 penalty;
``logisticpca`` 0.4 fits the projection of Landgraf and Lee (2020),
``theta = 1 mu^T + (m Q - 1 mu^T) U U^T`` with ``Q = 2X - 1``, ``m = 4`` and
orthonormal ``U``, by majorization (one eigendecomposition of an n x n matrix per
iteration). Both get ``k`` latent factors and a column bias: ours is run with
``n_components = k + 1`` (the bias column counts in our ``n_components``).

Each fit gets a fixed iteration budget (ours: ``--sweeps`` Newton sweeps,
``logisticpca``: ``--mm-iter`` MM iterations), not a time limit, so the numbers do
not depend on the machine's load; the CPU seconds (process time of this process,
all threads) do. Recorded per fit: wrong entries of the rounding at tau = 1/2
(``theta >= 0``) and relative error (divided by the number of ones), the training
Bernoulli deviance, whether the fit converged, CPU and wall seconds.

Usage (``logisticpca`` is not a dependency of sklearn_rrank; install it yourself)::

    pip install logisticpca
    python benchmarks/lpca_vs_logisticpca.py [--k 5 10] [--sweeps 30] [--mm-iter 10]

Writes ``--output`` (default
``benchmarks/results/candidates/lpca_vs_logisticpca.json``). ``--data paleo|apj``
picks the data set (APJ by default) of the data folder (``--data-dir``); ``--seed``
is our fit's ``random_state``.
"""

import argparse
import json
import os
import platform
import time
import warnings
from importlib.metadata import version

import numpy as np
from _common import add_data_dir, add_output, data_dir, write_json
from scipy.special import log_expit
from sklearn.exceptions import ConvergenceWarning

from sklearn_rrank import RoundingRankFactorization
from sklearn_rrank.datasets import fetch_apj, fetch_paleo

LOADERS = {"apj": fetch_apj, "paleo": fetch_paleo}


def deviance(X, theta):
    """Bernoulli deviance ``-2 sum log P(X | theta)`` of a 0/1 matrix (nats)."""
    q = 2.0 * X - 1.0
    return float(-2.0 * log_expit(q * theta).sum())


def _timed(fit):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fit()
    return out, time.process_time() - c0, time.perf_counter() - t0


def ours(X, k, sweeps, n_jobs, seed=0):
    """Our L-PCA with k latent factors and a column bias."""

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return RoundingRankFactorization(
                k + 1,
                method="lpca",
                max_iter=sweeps,
                random_state=seed,
                n_jobs=n_jobs,
                method_params={"fit_bias": True},
            ).fit(X)

    est, cpu, wall = _timed(fit)
    info = est.solver_info_
    return {
        "package": "sklearn_rrank",
        "n_components": k + 1,
        "errors": int(est.reconstruction_err_),
        "relative_error": round(float(est.relative_error_), 4),
        "deviance": round(float(info["deviance"]), 1),
        "iterations": int(est.n_iter_),
        "status": info["status"],
        "cpu_seconds": round(cpu, 2),
        "wall_seconds": round(wall, 2),
    }


def theirs(X, k, mm_iter):
    """``logisticpca.LogisticPCA`` with k components (and its column bias)."""
    from logisticpca import LogisticPCA

    est, cpu, wall = _timed(
        lambda: LogisticPCA(n_components=k, max_iter=mm_iter).fit(X)
    )
    theta = est.Theta_
    errors = int(np.count_nonzero((theta >= 0) != (X > 0)))
    hist = est.loss_history_
    return {
        "package": f"logisticpca {version('logisticpca')}",
        "n_components": k,
        "errors": errors,
        "relative_error": round(errors / float(X.sum()), 4),
        "deviance": round(deviance(X, theta), 1),
        "iterations": int(est.n_iter_),
        "status": est.termination_reason_,
        "last_relative_decrease": round(float((hist[-2] - hist[-1]) / hist[-2]), 4),
        "cpu_seconds": round(cpu, 2),
        "wall_seconds": round(wall, 2),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, nargs="+", default=[5, 10])
    parser.add_argument("--sweeps", type=int, default=30)
    parser.add_argument("--mm-iter", type=int, default=10)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--data", choices=sorted(LOADERS), default="apj")
    parser.add_argument("--seed", type=int, default=0)
    add_data_dir(parser)
    add_output(parser, "lpca_vs_logisticpca.json")
    args = parser.parse_args(argv)
    data_dir(args.data_dir)
    load = list(os.getloadavg())
    X = LOADERS[args.data]().data
    X = np.asarray(X.toarray() if hasattr(X, "toarray") else X, dtype=np.float64)
    rows = []
    for k in args.k:
        mine = ours(X, k, args.sweeps, args.n_jobs, args.seed)
        for row in (mine, theirs(X, k, args.mm_iter)):
            row = {"data": args.data, "k_latent": k, "seed": args.seed, **row}
            print(json.dumps(row))
            rows.append(row)
    out = {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_at_start": load,
            "n_jobs": args.n_jobs,
            "note": "CPU seconds of this process on a shared machine; noisy",
        },
        "budgets": {"our_sweeps": args.sweeps, "logisticpca_mm_iter": args.mm_iter},
        "runs": rows,
    }
    print(f"written to {write_json(args.output, out)}")


if __name__ == "__main__":
    main()
