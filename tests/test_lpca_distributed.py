"""Data-parallel L-PCA on a Dask LocalCluster equals the serial fit; X ships once.

Tolerance: from the same start the distributed and serial Newton sweeps compute the
same numbers except for the order in which sums over rows are added (per block, then
over blocks), so after 25 sweeps the loss histories agree to a relative 1e-9, the
logits ``L @ R.T`` to 1e-6 of their largest magnitude, and the roundings (hence the
error counts) are identical.

A worker that dies or restarts during the fit ends it with a RuntimeError instead of
a wait for ever (a fake client whose worker dies at a chosen call, at the end).
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


# ---- a worker that dies during the fit -----------------------------------------
# A fake client whose two "workers" keep the (real) row block actors in this process;
# one of them dies at a chosen call: the call never answers (as an actor call to a
# dead worker may not) and the scheduler forgets the worker or gives its actor up.
# The fit must raise a RuntimeError instead of waiting for ever; its futures only
# answer to waits with a timeout (distributed's TimeoutError, as a real one does).

_MAX_WAITS = 1000  # more slices than that without an answer: the fit would hang


class _FakeFuture:
    """A Dask future (or actor future) that answers ``value`` after ``n_waits``
    timed-out waits, never (``n_waits=None``) or by raising ``error``."""

    def __init__(self, value=None, n_waits=0, error=None):
        self.value, self.n_waits, self.error = value, n_waits, error
        self.waits = 0
        self.status = "finished"

    def done(self):
        return self.n_waits is not None and self.waits >= self.n_waits

    def result(self, timeout=None):
        if timeout is None:
            pytest.fail(
                "waited for a Dask future without a timeout: a dead worker hangs"
            )
        if not self.done():
            self.waits += 1
            if self.waits > _MAX_WAITS:
                pytest.fail("the fit kept waiting for a dead worker")
            raise distributed.TimeoutError(f"timed out after {timeout} s.")
        if self.error is not None:
            raise self.error
        return self.value


class _FakeActor:
    """An actor of ``cluster``'s worker ``address``: calls run here, at once."""

    def __init__(self, obj, cluster, address):
        self.obj, self.cluster, self.address = obj, cluster, address
        self.handle = None

    def __getattr__(self, name):
        method = getattr(self.obj, name)

        def call(*args):
            return self.cluster.answer(self, name, lambda: method(*args))

        return call


class _FakeCluster:
    """The client of two workers; the second one dies at the ``die_at``-th call of
    the method ``die_in`` (counting the calls to that worker; "submit": when its
    first actor is being set up). ``how`` the death shows: "gone" (the scheduler
    no longer lists the worker), "error" (still listed, as a worker restarted at the
    same address, but its actor's future has erred) or "unreachable" (the call
    raises OSError, as distributed's "Unable to contact Actor's worker"). Every
    answer comes after ``n_waits`` timed-out waits (a slow, healthy cluster)."""

    def __init__(self, die_in=None, die_at=1, how="gone", n_waits=0):
        self.die_in, self.die_at, self.how, self.n_waits = die_in, die_at, how, n_waits
        self.workers = ["tcp://127.0.0.1:1", "tcp://127.0.0.1:2"]
        self.victim = self.workers[1]
        self.n_calls = self.n_info = self.n_answers = 0
        self.dead = False
        self.cancelled = []

    def scheduler_info(self, n_workers=0):
        self.n_info += 1
        return {"workers": {w: {} for w in self.workers}}

    def scatter(self, data, workers, hash=True):
        return [_FakeFuture(d) for d in data]

    def submit(self, cls, *args, actor, workers, **kwargs):
        assert actor and workers
        args = [a.value if isinstance(a, _FakeFuture) else a for a in args]
        obj = _FakeActor(cls(*args), self, workers[0])
        if self.die_in == "submit" and workers[0] == self.victim:
            return self._die(None)
        obj.handle = _FakeFuture(obj, self.n_waits)
        return obj.handle

    def answer(self, actor, name, compute):
        assert not (self.dead and actor.address == self.victim), "call to the dead"
        self.n_answers += 1
        if name == self.die_in and actor.address == self.victim:
            self.n_calls += 1
            if self.n_calls == self.die_at:
                return self._die(actor.handle)
        return _FakeFuture(compute(), self.n_waits)

    def _die(self, handle):
        self.dead = True
        if self.how == "unreachable":
            self.workers.remove(self.victim)
            return _FakeFuture(error=OSError("Unable to contact Actor's worker"))
        if self.how == "gone":
            self.workers.remove(self.victim)
        else:
            handle.status = "error"
        return _FakeFuture(n_waits=None)

    def cancel(self, futures):
        self.cancelled += futures


@pytest.mark.parametrize("how", ["gone", "error", "unreachable"])
@pytest.mark.parametrize(
    "die_in, die_at",
    [("col_counts", 1), ("ztzq", 3), ("u_step", 2), ("v_grad", 4), ("finish", 1)],
)
def test_a_dead_worker_raises_instead_of_hanging(X, die_in, die_at, how):
    cluster = _FakeCluster(die_in, die_at, how)
    with pytest.raises(
        RuntimeError, match=r"worker holding row block 1 .*died or rest"
    ):
        lpca_fit_distributed(X, K, client=cluster, max_iter=5, n_blocks=2)
    assert cluster.dead and cluster.n_calls == die_at  # it died where asked
    assert cluster.cancelled  # the fit released its blocks


@pytest.mark.parametrize("how", ["gone", "unreachable"])
def test_a_worker_dead_before_its_block_is_set_up_raises(X, how):
    cluster = _FakeCluster("submit", how=how)
    with pytest.raises(RuntimeError, match=r"worker chosen for row block 1 .*died"):
        lpca_fit_distributed(X, K, client=cluster, max_iter=5, n_blocks=2)
    assert len(cluster.cancelled) == 2 + 4  # both actors and the scattered data


def test_a_slow_healthy_cluster_is_waited_for(X):
    # every answer takes 3 slices of waiting: the workers are checked, the fit goes
    # on and ends as with a cluster that answers at once
    fast = lpca_fit_distributed(
        X, K, client=_FakeCluster(), max_iter=3, n_blocks=2, random_state=0
    )
    slow_cluster = _FakeCluster(n_waits=3)
    slow = lpca_fit_distributed(
        X, K, client=slow_cluster, max_iter=3, n_blocks=2, random_state=0
    )
    assert slow.n_iter == fast.n_iter == 3
    np.testing.assert_array_equal(slow.L, fast.L)
    np.testing.assert_array_equal(slow.R, fast.R)
    # the workers were checked while the fit waited for each answer
    assert slow_cluster.n_info > slow_cluster.n_answers > 10


class _JoiningCluster(_FakeCluster):
    """No worker at the start of the fit; ``wait_for_workers`` lets both join (a
    cluster starting, or restarting a worker) or, if ``joins`` is False, times
    out as distributed's does."""

    def __init__(self, joins):
        super().__init__()
        self.joining, self.workers, self.joins = self.workers, [], joins
        self.waited = []

    def wait_for_workers(self, n_workers, timeout=None):
        self.waited.append(timeout)
        if not self.joins:
            raise TimeoutError(f"only 0 of {n_workers} workers joined")
        self.workers = self.joining


def test_a_fit_waits_for_workers_to_join(X):
    params = dict(max_iter=3, n_blocks=2, random_state=0)
    ready = lpca_fit_distributed(X, K, client=_FakeCluster(), **params)
    cluster = _JoiningCluster(joins=True)
    late = lpca_fit_distributed(X, K, client=cluster, **params)
    assert len(cluster.waited) == 1 and cluster.waited[0] > 0
    np.testing.assert_array_equal(late.L, ready.L)
    cluster = _JoiningCluster(joins=False)
    with pytest.raises(ValueError, match=r"no workers .*cluster\.scale"):
        lpca_fit_distributed(X, K, client=cluster, **params)
