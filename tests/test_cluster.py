"""Past one machine: the parallel parts run unchanged on a Dask cluster via joblib."""

import warnings

import numpy as np
import pytest
from _family import Kernels, LPCAOptions, _lpca_fit
from joblib import parallel_config

from sklearn_rrank import RoundingRankFactorization
from sklearn_rrank.datasets import make_rounding_rank_matrix

distributed = pytest.importorskip("dask.distributed")


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


@pytest.mark.parametrize(
    "method, params",
    [
        ("projlp", {"max_iter": 2}),  # the LP engine's column and row blocks
        ("lpca", {"max_iter": 20}),  # L-PCA's row and column blocks
    ],
)
def test_dask_backend_gives_the_serial_factors(client, method, params):
    X = make_rounding_rank_matrix(300, 200, 4, noise=0.02, random_state=0)
    # L-PCA splits its work in chunks of 2**18 entries: force several chunks
    X = np.vstack([X] * 5)

    def fit(n_jobs):
        est = RoundingRankFactorization(
            4, method=method, random_state=0, n_jobs=n_jobs, **params
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return est.fit(X)

    serial = fit(1)
    with parallel_config(backend="dask"):
        cluster = fit(2)
    np.testing.assert_array_equal(serial.components_, cluster.components_)
    assert serial.reconstruction_err_ == cluster.reconstruction_err_


def test_dask_backend_gives_the_serial_lbfgs_fit(client):
    # L-PCA's L-BFGS: runs of row chunks, one chunk per task here
    X = make_rounding_rank_matrix(300, 200, 4, noise=0.02, random_state=0)
    X = np.vstack([X] * 5).astype(np.float64)
    options = LPCAOptions(solver="lbfgs", max_iter=5, kernels=Kernels(task_chunks=1))
    serial = _lpca_fit(X, 4, options, random_state=0, n_jobs=1)
    with parallel_config(backend="dask"):
        cluster = _lpca_fit(X, 4, options, random_state=0, n_jobs=2)
    np.testing.assert_array_equal(serial.L, cluster.L)
    np.testing.assert_array_equal(serial.R, cluster.R)
    assert serial.info["loss"] == cluster.info["loss"]
