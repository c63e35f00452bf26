"""Data-parallel L-PCA on a Dask LocalCluster equals the serial fit; X ships once.

Tolerance: from the same start the distributed and serial Newton sweeps compute the
same numbers except for the order in which sums over rows are added (per block, then
over blocks), so after 25 sweeps the loss histories agree to a relative 1e-9, the
logits ``L @ R.T`` to 1e-6 of their largest magnitude, and the roundings (hence the
error counts) are identical.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from _family import _blocks_received, lpca_fit
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_rrank import certify_rounding, lpca_fit_distributed
from sklearn_rrank.datasets import make_rounding_rank_matrix

distributed = pytest.importorskip("dask.distributed")

K = 5
N_SWEEPS = 25


@pytest.fixture(scope="module")
def client():
    with (
        distributed.LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            memory_limit="1GB",
            processes=True,
            dashboard_address=None,
        ) as cluster,
        distributed.Client(cluster) as c,
    ):
        yield c


@pytest.fixture(scope="module")
def X():
    # 3000 x 300: 4 serial chunks of rows, split into 3 blocks below
    X = make_rounding_rank_matrix(3000, 300, K, noise=0.01, random_state=0)
    return sp.csr_matrix(X)


def _start(m, n, fit_bias, seed=0):
    rng = np.random.RandomState(seed)
    L = rng.standard_normal((m, K))
    R = rng.standard_normal((n, K))
    if fit_bias is True:
        L[:, -1] = 1.0
    return L, R


def _n_actors(dask_worker):
    return len(dask_worker.state.actors)


@pytest.mark.parametrize("fit_bias", [True, False, "global"])
def test_distributed_fit_equals_the_serial_fit(client, X, fit_bias):
    init = _start(*X.shape, fit_bias)
    serial = lpca_fit(
        X, K, fit_bias=fit_bias, solver="newton", max_iter=N_SWEEPS, init=init
    )
    dist = lpca_fit_distributed(
        X, K, client=client, fit_bias=fit_bias, max_iter=N_SWEEPS, init=init, n_blocks=3
    )
    assert dist.info["n_blocks"] == 3 and dist.info["n_workers"] == 2
    assert dist.n_iter == serial.n_iter
    assert dist.info["status"] == serial.info["status"]
    np.testing.assert_allclose(dist.info["loss"], serial.info["loss"], rtol=1e-9)
    A, B = serial.L @ serial.R.T, dist.L @ dist.R.T
    np.testing.assert_allclose(B, A, rtol=0, atol=1e-6 * np.abs(A).max())
    np.testing.assert_array_equal(B >= 0.5, A >= 0.5)
    assert dist.info["n_errors"] == serial.info["n_errors"]
    assert dist.info["n_errors_logit"] == serial.info["n_errors_logit"]
    np.testing.assert_allclose(dist.info["deviance"], serial.info["deviance"], 1e-9)
    assert dist.info["null_deviance"] == pytest.approx(serial.info["null_deviance"])


def test_bias_only_model_equals_the_serial_fit(client, X):
    # k = 1 with the column bias: no latent factor, only the column half step
    serial = lpca_fit(X, 1, solver="newton", max_iter=10, random_state=0)
    dist = lpca_fit_distributed(X, 1, client=client, max_iter=10, random_state=0)
    np.testing.assert_allclose(dist.info["loss"], serial.info["loss"], rtol=1e-9)
    np.testing.assert_allclose(dist.R, serial.R, atol=1e-6 * np.abs(serial.R).max())
    assert dist.info["n_errors"] == serial.info["n_errors"]


def test_stored_zeros_are_zeros(client, X):
    Xz = X.copy()
    Xz.data[::7] = 0  # explicit zeros in the CSR pattern
    dense = Xz.toarray()
    a = lpca_fit_distributed(Xz, K, client=client, max_iter=3, random_state=0)
    b = lpca_fit_distributed(dense, K, client=client, max_iter=3, random_state=0)
    assert Xz.nnz == X.nnz  # the caller's matrix is untouched
    np.testing.assert_array_equal(a.L, b.L)
    assert a.info["n_errors"] == b.info["n_errors"]


def test_x_is_shipped_once(client, X):
    before = client.run(_blocks_received)
    res = lpca_fit_distributed(X, K, client=client, max_iter=10, n_blocks=3)
    after = client.run(_blocks_received)
    assert res.n_iter == 10
    # each block was unpickled on its worker once, for all 10 sweeps, warm start
    # and error count: blocks 0 and 2 on the first worker, block 1 on the second
    received = sorted(after[w] - before[w] for w in after)
    assert received == [1, 2]
    # and the blocks were released after the fit
    assert client.run(_n_actors) == dict.fromkeys(after, 0)


def test_default_start_reaches_an_exact_certified_rounding(client):
    X = make_rounding_rank_matrix(2000, 200, 3, random_state=1)
    res = lpca_fit_distributed(
        X,
        6,
        client=client,
        fit_bias="global",
        random_state=0,
        max_iter=300,
        stop_when_exact=True,
        certify=True,
    )
    assert res.info["status"] == "exact"
    assert res.info["n_errors"] == 0 and res.info["n_uncertified"] == 0
    assert certify_rounding(X, res.L, res.R, tau=0.5)


def test_time_limit_stops_after_one_sweep(client, X):
    res = lpca_fit_distributed(X, K, client=client, time_limit=0, random_state=0)
    assert res.n_iter == 1 and res.info["status"] == "time_limit"
    assert not res.converged and "time limit" in res.info["message"]


def test_inputs_are_validated_at_the_door(client, X):
    with pytest.raises(InvalidParameterError, match="client"):
        lpca_fit_distributed(X, K, client="tcp://127.0.0.1:8786")
    with pytest.raises(InvalidParameterError, match="n_components"):
        lpca_fit_distributed(X, 0, client=client)
    Xm = X.toarray().astype(float)
    Xm[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN|missing"):
        lpca_fit_distributed(Xm, K, client=client)
    with pytest.raises(ValueError, match="not binary|0/1|binary"):
        lpca_fit_distributed(2 * X, K, client=client)
    with pytest.raises(ValueError, match="init must be a pair"):
        lpca_fit_distributed(
            X, K, client=client, init=(np.ones((3, K)), np.ones((300, K)))
        )
