"""
Choosing the rank with RoundingRankCV
=====================================

:class:`~sklearn_rrank.RoundingRankCV` chooses ``n_components`` for a
rounding-rank factorization in one of two ways:

* ``mode="exact"``: the smallest k whose fit rounds to the data exactly, with
  factors certified by :func:`~sklearn_rrank.certify_rounding`, an upper bound on the
  rounding rank;
* ``mode="holdout"``: hide random entries, fit with them missing and keep the k that
  predicts the hidden entries best. On noisy data the exact rank models the noise
  too; the held-out error finds the structure instead.

Both run here on planted matrices from
:func:`~sklearn_rrank.datasets.make_rounding_rank_matrix`, of rounding rank at most 4,
once without noise and once with 5% of the entries flipped.

The figures need matplotlib, which the ``plot`` extra installs
(``python -m pip install ".[plot]"`` in the source tree, or
``pip install "sklearn_rrank[plot]"``).
"""

# %%
# Exact mode: the smallest certified rank
# ---------------------------------------
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.exceptions import ConvergenceWarning

from sklearn_rrank import RoundingRankCV, RoundingRankFactorization
from sklearn_rrank.datasets import make_rounding_rank_matrix

X = make_rounding_rank_matrix(120, 80, 4, random_state=0)
exact = RoundingRankCV(
    RoundingRankFactorization(method="lpca"), mode="exact", random_state=0
).fit(X)
print(f"smallest certified rank: {exact.n_components_} (certified: {exact.certified_})")

# %%
# Holdout mode: the rank that predicts hidden entries
# ---------------------------------------------------
# 10% of the entries are hidden in each of two repetitions; each k from 1 to 8 is
# fitted with them missing (``NaN``), and its error rate on them is recorded. The
# fits are capped at 30 sweeps to keep this page fast; they warn that they could
# go on, which is ignored here.
X_noisy = make_rounding_rank_matrix(120, 80, 4, noise=0.05, random_state=0)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", ConvergenceWarning)
    holdout = RoundingRankCV(
        RoundingRankFactorization(method="lpca", max_iter=30),
        n_components=8,
        mode="holdout",
        cv=2,
        random_state=0,
    ).fit(X_noisy)
print(f"rank chosen on the noisy matrix: {holdout.n_components_}")

# %%
# The held-out error against k: it falls while k adds structure, and rises again
# once the extra dimensions start to fit the noise.
res = holdout.cv_results_
ks = np.asarray(res["param_n_components"], dtype=int)
fig, ax = plt.subplots(figsize=(6, 4))
ax.errorbar(
    ks, res["mean_test_error"], yerr=res["std_test_error"], marker="o", capsize=3
)
ax.axvline(
    holdout.n_components_,
    color="grey",
    ls=":",
    label=f"chosen k = {holdout.n_components_}",
)
ax.set_xlabel("n_components")
ax.set_ylabel("error rate on held-out entries")
ax.set_title("Planted rank 4, 5% noise")
ax.legend()
fig.tight_layout()
plt.show()
