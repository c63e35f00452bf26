"""
How many features does a linear multi-label classifier need?
============================================================

Read a rounding rank decomposition ``Y = round(L R^T)`` of a label matrix ``Y``
(samples x labels) as machine learning: the rows of ``L`` are feature vectors of the
samples and the rows of ``R`` are the weights of one linear classifier per label, and
together they classify every label of every sample correctly (the paper's Theorem
"characterization of rounding rank" and Corollary "rounding rank bounds the number of
features", Section 2). So bounds on the rounding rank of ``Y`` bound the number of
features that *any* family of linear classifiers needs to fit the labels perfectly,
whatever the features are.

:func:`~sklearn_rrank.feature_dimension_bounds` makes this exact for classifiers with
an intercept: the fewest features ``fd(Y)`` satisfies
``rrank(Y) - 1 <= fd(Y) <= rrank(Y)``, and it computes lower and upper bounds on
``fd(Y)`` from the labels alone. This example applies it to a synthetic multi-label
problem from scikit-learn and checks the bounds against features learned from the
labels.

The figures need matplotlib, which the ``plot`` extra installs
(``python -m pip install ".[plot]"`` in the source tree, or
``pip install "sklearn_rrank[plot]"``).
"""

# %%
# A multi-label problem
# ---------------------
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_multilabel_classification
from sklearn.exceptions import ConvergenceWarning

from sklearn_rrank import (
    RoundingRankFactorization,
    feature_dimension_bounds,
    linear_separability,
    rounding_rank_bounds,
)

X, Y = make_multilabel_classification(
    n_samples=300, n_features=20, n_classes=12, n_labels=3, random_state=0
)
n_labels = Y.shape[1]
print(f"{Y.shape[0]} samples, {n_labels} labels, {X.shape[1]} given features")

# %%
# Bounds on the number of features
# --------------------------------
# From the labels alone. The rounding-rank bounds give a second bracket through
# ``rrank(Y) - 1 <= fd(Y) <= rrank(Y)``; both brackets are valid, so we intersect
# them.
fd_lower, fd_upper = feature_dimension_bounds(Y, random_state=0)
print(f"feature_dimension_bounds:     {fd_lower} <= fd(Y) <= {fd_upper}")

bounds = rounding_rank_bounds(
    Y, methods=("spectral", "vc", "rank_one", "projlp", "lpca"), random_state=0
)
print(
    f"rounding rank bounds:         {bounds.lower} <= rrank(Y) <= {bounds.upper} "
    f"(lower by {bounds.lower_method}, upper by {bounds.upper_method})"
)
lower = max(fd_lower, bounds.lower - 1)
upper = min(fd_upper, bounds.upper)
print(f"together:                     {lower} <= fd(Y) <= {upper}")

# %%
# The upper bound is constructive: the left factor of the certified decomposition is
# a set of ``bounds.upper`` features on which every label is linearly separable.
res = linear_separability(bounds.L, Y)
print(
    f"{bounds.L.shape[1]} certified features separate "
    f"{int(res.separable.sum())} of {n_labels} labels"
)

# %%
# Features learned from the labels
# --------------------------------
# For each number of features ``d``, fit an L-PCA factorization of ``Y`` with ``d``
# columns and count the labels that linear classifiers (with intercepts) separate
# perfectly on those ``d`` features. Below the lower bound no choice of features can
# separate all labels; at the upper bound some choice is certified to.
d_values = np.arange(1, n_labels + 1)
separated = []
for d in d_values:
    with warnings.catch_warnings():
        # at small d the L-PCA iterations may stop at max_iter with a warning; the
        # features are still valid, and only their separability is counted here
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = RoundingRankFactorization(d, method="lpca", random_state=0)
        L = est.fit_transform(Y)
    separated.append(int(linear_separability(L, Y).separable.sum()))
print(dict(zip(d_values.tolist(), separated, strict=True)))

# %%
# The features that come with the data are another matter: the bounds are about
# the *best possible* features. Here the 20 given features (word counts of the
# generator) do not separate a single label perfectly.
print(
    "given features separate", int(linear_separability(X, Y).separable.sum()), "labels"
)

# %%
fig, ax = plt.subplots(figsize=(8, 4.5))
ax.axvspan(
    0.5,
    lower - 0.5,
    color="0.85",
    label=f"d < {lower}: no features separate all labels",
)
ax.axhline(n_labels, color="0.5", ls="--", lw=1)
ax.plot(d_values, separated, "o-", label="L-PCA features of Y (d columns)")
ax.plot(
    [bounds.L.shape[1]],
    [int(res.separable.sum())],
    "*",
    ms=16,
    color="tab:red",
    label=f"certified: {bounds.L.shape[1]} features separate all labels",
)
ax.set_xticks(d_values)
ax.set_xlim(0.5, n_labels + 0.5)
ax.set_ylim(-0.5, n_labels + 0.8)
ax.set_xlabel("number of features d")
ax.set_ylabel("labels classified perfectly")
ax.set_title(
    f"Feature dimension of a {n_labels}-label problem: {lower} <= fd <= {upper}"
)
ax.legend(loc="lower right", fontsize="small")
fig.tight_layout()
plt.show()
