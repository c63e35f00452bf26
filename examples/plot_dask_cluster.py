"""
Running the LPs on a Dask cluster
=================================

ProjLP solves one small linear program per column of the data (and one per row in
``transform``). The LPs are independent, so :mod:`sklearn_rrank` hands them to joblib
in chunks; each worker builds its own HiGHS model. Any joblib backend can run them,
including `Dask <https://distributed.dask.org>`_, which spreads the work over the
machines of a cluster.

Here the cluster is a :class:`~distributed.LocalCluster` with two in-process workers
(``processes=False``), so the example runs anywhere; for a real cluster, pass the
scheduler's address to :class:`~distributed.Client` instead. Seeds are drawn before
the work is split, so the result does not depend on the backend or on ``n_jobs``: the
example checks that the Dask run gives exactly the serial result.

Dask's ``distributed`` package comes with the ``dask`` extra
(``pip install "sklearn_rrank[dask]"``). Without it this example says so, runs the
parallel part with joblib's thread backend instead and skips the task-stream figure.

The figures need matplotlib, which the ``plot`` extra installs
(``python -m pip install ".[plot]"`` in the source tree, or
``pip install "sklearn_rrank[plot]"``).
"""

# %%
# The serial reference
# --------------------
import gc
import logging
import sys
import time

import joblib
import matplotlib.pyplot as plt
import numpy as np

try:
    from distributed import Client, LocalCluster, get_task_stream
except ImportError:
    HAVE_DISTRIBUTED = False
    print(
        "distributed is not installed (pip install 'sklearn_rrank[dask]'): the "
        "parallel run below uses joblib threads instead of a Dask cluster"
    )
else:
    HAVE_DISTRIBUTED = True

from sklearn_rrank import RoundingRankFactorization, rounding_rank_bounds
from sklearn_rrank.datasets import make_rounding_rank_matrix

# ProjLP's minimum-error fit (column LPs) and transform (row LPs) on a planted matrix
# of 124 x 139 entries and rank 20, and its rank search (feasibility LPs) on a small
# one of planted rank 4.
X = make_rounding_rank_matrix(124, 139, 20, random_state=0)
X_small = make_rounding_rank_matrix(60, 50, 4, random_state=0)

t0 = time.perf_counter()
serial = RoundingRankFactorization(15, method="projlp", random_state=0).fit(X)
L_serial = serial.transform(X)
bounds_serial = rounding_rank_bounds(X_small, methods=("projlp",), random_state=0)
t_serial = time.perf_counter() - t0
print(
    f"serial: k=15 relative error {serial.relative_error_:.3f}, certified rank "
    f"{bounds_serial.upper} (planted 4) ({t_serial:.1f} s)"
)

# %%
# The same work on Dask
# ---------------------
# Inside ``joblib.parallel_config(backend="dask")`` every joblib call of the package
# is sent to the cluster's workers. ``n_jobs=2`` splits the LPs into two chunks.
# :func:`~distributed.get_task_stream` records which tasks ran where.


def parallel_run():
    dist = RoundingRankFactorization(15, method="projlp", random_state=0, n_jobs=2)
    L_dist = dist.fit(X).transform(X)
    bounds_dist = rounding_rank_bounds(
        X_small, methods=("projlp",), random_state=0, n_jobs=2
    )
    return dist, L_dist, bounds_dist


# joblib's dask backend caches the arrays it scatters by id, and its cache can report
# a KeyError when one of them is freed ("Exception ignored in ... on_destroy"), even
# after the cluster is closed, from the cluster's event-loop thread. The message is
# harmless; this hook keeps it (and only it) off the page until the end.
default_hook = sys.unraisablehook


def drop_joblib_cache_keyerror(unraisable):
    name = getattr(unraisable.object, "__qualname__", "")
    if unraisable.exc_type is KeyError and name.endswith("on_destroy"):
        return
    default_hook(unraisable)


t0 = time.perf_counter()
if HAVE_DISTRIBUTED:
    sys.unraisablehook = drop_joblib_cache_keyerror
    # closing the cluster may log an INFO record with a traceback ("Batched Comm
    # Closed"): the normal end of a connection, kept off the page
    logging.getLogger("distributed.batched").setLevel(logging.WARNING)
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False)
    client = Client(cluster)
    print(client)
    with joblib.parallel_config(backend="dask"), get_task_stream(client) as tasks:
        dist, L_dist, bounds_dist = parallel_run()
    workers = {task["worker"] for task in tasks.data}
    print(f"{len(tasks.data)} tasks (chunks of LPs) ran on {len(workers)} workers")
    client.close()
    cluster.close()
    backend = "dask"
else:
    with joblib.parallel_config(backend="threading"):
        dist, L_dist, bounds_dist = parallel_run()
    backend = "threads"
t_dist = time.perf_counter() - t0
print(
    f"{backend + ':':<7} k=15 relative error {dist.relative_error_:.3f}, certified "
    f"rank {bounds_dist.upper} ({t_dist:.1f} s)"
)

# %%
# The task stream: each bar is one chunk of LPs computed on one worker (the fit's
# column LPs and refinement rounds, the row LPs of ``transform``, then the
# feasibility LPs of the rank search). Only with ``distributed``.
if HAVE_DISTRIBUTED:
    compute = [
        (task["worker"], ss["start"], ss["stop"])
        for task in tasks.data
        for ss in task["startstops"]
        if ss["action"] == "compute"
    ]
    t_first = min(start for _, start, _ in compute)
    fig, ax = plt.subplots(figsize=(8, 2.6))
    for row, worker in enumerate(sorted(workers)):
        spans = [(a - t_first, b - a) for w, a, b in compute if w == worker]
        ax.broken_barh(spans, (row - 0.35, 0.7), color=f"C{row}")
    labels = [f"worker {i + 1}" for i in range(len(workers))]
    ax.set_yticks(range(len(workers)), labels)
    ax.set_xlabel("seconds since the first task")
    ax.set_title(f"{len(compute)} tasks (chunks of LPs) on a 2-worker Dask cluster")
    fig.tight_layout()
    plt.show()

# %%
# Identical results
# -----------------
# The factors, the embedding of the rows and the certified bound agree exactly (not
# just approximately) with the serial run.
assert np.array_equal(dist.components_, serial.components_)
assert np.array_equal(L_dist, L_serial)
assert dist.reconstruction_err_ == serial.reconstruction_err_
assert bounds_dist.upper == bounds_serial.upper
assert np.array_equal(bounds_dist.L, bounds_serial.L)
assert np.array_equal(bounds_dist.R, bounds_serial.R)
print(f"{'Dask' if HAVE_DISTRIBUTED else 'Threaded'} and serial results are identical.")

# the arrays the Dask run saw are freed by now: Python's own hook again
gc.collect()
sys.unraisablehook = default_hook

# %%
# On a machine this small the cluster adds overhead rather than speed; the point is
# that the same code scales out. Timings here are wall-clock seconds on whatever
# machine built these pages.
