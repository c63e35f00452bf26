"""
Minimum-error factorizations at k = 5 and 10
============================================

The paper's Table 3 compares the relative reconstruction error of each method on real
data at a few ranks k. This example computes the same comparison on scikit-learn's
handwritten digits (1797 images x 64 pixels, a pixel set to 1 where its grey level
is at least 8 of 16) with :class:`~sklearn_rrank.RoundingRankFactorization`, at
k = 5 and 10. ``benchmarks/reproduce_tables.py`` runs the paper's own data sets;
:doc:`../reproducing` shows its tables.

T-SVD is scikit-learn's :class:`~sklearn.decomposition.TruncatedSVD` *without*
rounding; as in the paper, its error is the squared Frobenius distance to the data
divided by the number of ones. For the rounded methods that measure is exactly the
number of wrong entries divided by the number of ones.

The figures need matplotlib, which the ``plot`` extra installs
(``python -m pip install ".[plot]"`` in the source tree, or
``pip install "sklearn_rrank[plot]"``).
"""

# %%
# Fits
# ----
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import TruncatedSVD
from sklearn.exceptions import ConvergenceWarning

from sklearn_rrank import RoundingRankFactorization
from sklearn_rrank.plotting import FactorizationDisplay, method_color

X = (load_digits().data >= 8).astype(np.uint8)
n_ones = int(X.sum())
print(f"digits: {X.shape[0]} x {X.shape[1]}, {n_ones} ones")

k_values = (5, 10)
errors = {}
seconds = {}

# %%
# R-SVD returns the best rounded truncated SVD of rank at most k. One fit at the
# largest k computes the rounding error of every truncation up to it
# (``solver_info_``), so every k comes from the same SVD.
t0 = time.perf_counter()
est = RoundingRankFactorization(max(k_values), method="rsvd").fit(X)
curve = np.asarray(est.solver_info_["errors_by_k"])
errors["rsvd"] = [curve[1 : k + 1].min() / n_ones for k in k_values]
seconds["rsvd"] = time.perf_counter() - t0

# %%
# ProjLP (L1-slack LPs on two threads), L-PCA and Asso fit each k. To keep this page
# fast, two iterative methods get smaller budgets than their defaults: ProjLP runs one
# round of its alternating LP refinement (default 50; ``max_iter=0`` would be the
# paper's one-shot ProjLP), and L-PCA at most 30 Newton sweeps (default 1000; the
# estimator's L-PCA stops as soon as its rounding is exact), computed in float32
# (the factors and the error count stay float64). Both warn with a
# :class:`~sklearn.exceptions.ConvergenceWarning` when the budget runs out; the
# factors are still valid, only possibly worse than with more rounds. Asso gets one
# confidence threshold, 0.5, instead of its default search over a grid of
# thresholds, which is several times faster.
params = {
    "projlp": {"max_iter": 1},
    "lpca": {"max_iter": 30, "method_params": {"dtype": "float32"}},
    "asso": {"method_params": {"threshold": 0.5}},
}
for method, extra in params.items():
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        errors[method] = [
            RoundingRankFactorization(
                k, method=method, random_state=0, n_jobs=2, **extra
            )
            .fit(X)
            .relative_error_
            for k in k_values
        ]
    seconds[method] = time.perf_counter() - t0

# %%
# T-SVD: the unrounded baseline. One exact (ARPACK) truncated SVD at the largest k
# gives the best rank-k approximation for every smaller k too: its first k
# components.
t0 = time.perf_counter()
Xf = X.astype(np.float64)
svd = TruncatedSVD(n_components=max(k_values), algorithm="arpack", random_state=0)
Z = svd.fit_transform(Xf)
errors["tsvd"] = [
    float(((Xf - Z[:, :k] @ svd.components_[:k]) ** 2).sum()) / n_ones for k in k_values
]
seconds["tsvd"] = time.perf_counter() - t0

# %%
# The errors side by side.
names = {
    "projlp": "ProjLP",
    "lpca": "L-PCA",
    "rsvd": "R-SVD",
    "tsvd": "T-SVD",
    "asso": "Asso",
}
print(f"{'method':<8}" + "".join(f"{'k=' + str(k):>8}" for k in k_values) + "   s")
for method, name in names.items():
    cells = "".join(f"{errors[method][i]:>8.3f}" for i in range(len(k_values)))
    print(f"{name:<8}{cells} {seconds[method]:>5.1f}")

# %%
# One bar per method and k.
fig, ax = plt.subplots(figsize=(8, 4.5))
width = 0.16
x = np.arange(len(k_values))
for i, (method, name) in enumerate(names.items()):
    pos = x + (i - 2) * width
    bars = ax.bar(pos, errors[method], width, label=name, color=method_color(method))
    ax.bar_label(bars, fmt="%.2f", rotation=90, padding=2, fontsize=7)
ax.set_xticks(x, [f"k = {k}" for k in k_values])
ax.set_ylim(0, 1.0)
ax.set_ylabel("relative error (errors / ones)")
ax.set_title("Digits: minimum-error rounding rank-k factorizations")
ax.legend(fontsize="small", ncol=3)
fig.tight_layout()
plt.show()

# %%
# Where the errors are
# --------------------
# :class:`~sklearn_rrank.plotting.FactorizationDisplay` shows the data, the rounded
# reconstruction ``round(L R^T)`` and its wrong entries: ones that the
# factorization misses (false negatives, red) and zeros it sets (false positives,
# blue). Here for R-SVD at k = 5.
est5 = RoundingRankFactorization(5, method="rsvd").fit(X)
disp = FactorizationDisplay.from_estimator(est5, X, data_name="digits")
plt.show()
