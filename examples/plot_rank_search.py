"""
Rank search: error against k for every method
=============================================

The rounding rank of a binary matrix cannot be computed exactly in general (it is
NP-hard), so :mod:`sklearn_rrank` brackets it. Lower bounds come from the spectrum of
the sign matrix, from the VC dimension of the rows and columns, and from an exact
test for rounding rank one; upper bounds come from the algorithms of the paper, and
every upper bound is *certified*: its factors round to the data exactly, checked in
float64 with a safety margin.

This example runs all of them on a planted matrix of 150 x 120 entries, made by
:func:`~sklearn_rrank.datasets.make_rounding_rank_matrix` from random factors with 6
columns (so its rounding rank is at most 6), and plots, for R-SVD, L-PCA and
ProjLP, the relative error of the minimum-error rounding rank-k factorization
against k. The certified upper bound of
each method is the k where its own rank search reaches zero errors; the best lower
bound is the k below which no method can ever be exact.

The figures need matplotlib, which the ``plot`` extra installs
(``python -m pip install ".[plot]"`` in the source tree, or
``pip install "sklearn_rrank[plot]"``).
"""

# %%
# Bounds on the rounding rank
# ---------------------------
# :func:`~sklearn_rrank.rounding_rank_bounds` runs every requested method and keeps
# the best lower bound and the best certified upper bound. ``time_limit`` is the
# wall-clock budget of the whole call (here 8 s, to build this page quickly), shared
# by the methods; a method stopped by it contributes only what it certified by then,
# so on a slower machine its bound can come out larger.
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_rrank import (
    RoundingRankFactorization,
    certify_rounding,
    rounding_rank_bounds,
)
from sklearn_rrank.datasets import make_rounding_rank_matrix
from sklearn_rrank.plotting import RankSearchDisplay

X = make_rounding_rank_matrix(150, 120, 6, random_state=0)
n_ones = int(X.sum())
print(f"planted matrix: {X.shape[0]} x {X.shape[1]}, {n_ones} ones")

bounds = rounding_rank_bounds(
    X,
    methods=("spectral", "vc", "rank_one", "rsvd", "projlp", "lpca"),
    time_limit=8,
    random_state=0,
)
print(f"{'method':<10} {'kind':<6} {'bound':>5} {'certified':>9} {'seconds':>8}")
for row in bounds.report:
    cert = "" if row["certified"] is None else str(row["certified"])
    note = "  (stopped by the time limit)" if row["stopped_early"] else ""
    print(
        f"{row['method']:<10} {row['kind']:<6} {row['bound']!s:>5} {cert:>9} "
        f"{row['seconds']:>8.2f}{note}"
    )
print(
    f"rounding rank in [{bounds.lower}, {bounds.upper}] "
    f"(lower by {bounds.lower_method}, upper by {bounds.upper_method})"
)

# %%
# The certificate is a pair of factors; anyone can check it again.
print(bounds.L.shape, bounds.R.shape, certify_rounding(X, bounds.L, bounds.R))

# %%
# :class:`~sklearn_rrank.plotting.RankSearchDisplay` draws the report: each
# method's bound against time (left; the shaded band is the certified interval) and
# the wrong entries that each rank search met at every k it tried (right).
RankSearchDisplay.from_bounds(bounds, name="planted")
plt.show()

# %%
# Error against k
# ---------------
# For each k, :class:`~sklearn_rrank.RoundingRankFactorization` solves the
# minimum-error rounding rank-k problem with the chosen method: R-SVD rounds the
# truncated SVD; ProjLP solves one small LP per column and then refines its factors
# by alternating LPs (3 rounds here, 50 by default, to keep this page fast); L-PCA
# fits a logistic PCA (here told to stop as soon as its rounding is exact, which does
# not change an error of zero but saves time at large k). The relative error is the
# number of wrongly reconstructed entries divided by the number of ones (the paper's
# measure).
upper = {
    row["method"]: row["bound"]
    for row in bounds.report
    if row["kind"] == "upper" and row["certified"]
}
# R-SVD up to its certified rank (at most 60); the others up to a little beyond
# their certified rank (ProjLP, whose fits take longest, at every third k)
ks = {
    "rsvd": np.arange(1, min(upper.get("rsvd", 60), 60) + 1),
    "projlp": np.arange(1, min(upper.get("projlp", 25), 30) + 3, 3),
    "lpca": np.arange(1, min(upper.get("lpca", 15), 20) + 3),
}
curves = {}

# R-SVD at k returns the best rounded truncation of rank <= k; one fit at the largest
# k records the error of every truncation (``solver_info_["errors_by_k"]``).
t0 = time.perf_counter()
est = RoundingRankFactorization(ks["rsvd"][-1], method="rsvd").fit(X)
by_k = np.asarray(est.solver_info_["errors_by_k"][1:])
curves["rsvd"] = np.minimum.accumulate(by_k) / n_ones
print(f"rsvd    k = 1..{ks['rsvd'][-1]}: {time.perf_counter() - t0:.1f} s")

params = {
    "projlp": {"max_iter": 3},
    "lpca": {},
}
for method in ("projlp", "lpca"):
    k_values = ks[method]
    t0 = time.perf_counter()
    errors = []
    for k in k_values:
        with warnings.catch_warnings():
            # ProjLP's LP refinement stops at its round limit (max_iter) with a
            # warning; its factors are still valid.
            warnings.simplefilter("ignore", ConvergenceWarning)
            est = RoundingRankFactorization(
                k, method=method, random_state=0, **params.get(method, {})
            ).fit(X)
        errors.append(est.relative_error_)
    curves[method] = np.array(errors)
    print(f"{method:<7} k = 1..{k_values[-1]}: {time.perf_counter() - t0:.1f} s")

# %%
# The plot: one curve per method, drawn by a
# :class:`~sklearn_rrank.plotting.RankSearchDisplay` built from the curves. The
# bounds are ranks, i.e. values of k: the shaded band is the certified interval
# ``[lower, upper]`` (left of it *every* method must make errors), and each method's
# certified upper bound from its rank search is marked with a diamond on the x-axis
# in the method's colour. The
# rank search and the minimum-error fits are separate runs (the search warm-starts
# from one k to the next and solves feasibility LPs), so a curve need not reach zero
# exactly at its method's certified rank. ProjLP draws a new random projection for
# every k, so its curve need not be monotone.
labels = {"rsvd": "R-SVD", "projlp": "ProjLP", "lpca": "L-PCA"}

disp = RankSearchDisplay(
    errors={labels[m]: (k_values, curves[m]) for m, k_values in ks.items()},
    lower=bounds.lower,
    upper=bounds.upper,
    error_label="relative error (errors / ones)",
    name="planted",
).plot()
ax = disp.ax_
for method, line in zip(ks, disp.error_lines_.values(), strict=True):
    if method in upper:
        k_up = upper[method]
        ax.axvline(k_up, color=line.get_color(), ls=":", lw=1)
        ax.plot(
            [k_up],
            [0],
            "D",
            color=line.get_color(),
            clip_on=False,
            label=f"{labels[method]} certified rank {k_up}",
        )
ax.set_xlim(0, ks["rsvd"][-1] + 2)
ax.set_title("Planted rank 6: minimum-error rounding rank-k and certified bounds")
ax.legend(fontsize="small", ncol=2)
plt.show()

# %%
# The rounded SVD needs more dimensions than the methods that aim at the rounding
# directly, although it is the best *unrounded* rank-k approximation; the paper
# observed the same on real data (Section 5.3).
print({method: upper.get(method) for method in labels})
