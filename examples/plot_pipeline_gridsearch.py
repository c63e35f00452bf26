"""
Rounding-rank features in a Pipeline with GridSearchCV
======================================================

:class:`~sklearn_rrank.RoundingRankFactorization` is a scikit-learn transformer:
``transform`` maps each row of a binary matrix to ``n_components`` real features (the
rows of the factor ``L``). Here it turns the pixels of scikit-learn's handwritten
digits into features for a classifier, and
:class:`~sklearn.model_selection.GridSearchCV` picks the number of components.

The estimator thresholds the grey levels itself (``binarize=7.5``: a pixel is 1 where
its grey level is at least 8 of 16), so the pipeline takes the raw images. R-SVD is
the fastest method, which keeps the whole grid search under a minute.

The figures need matplotlib, which the ``plot`` extra installs
(``python -m pip install ".[plot]"`` in the source tree, or
``pip install "sklearn_rrank[plot]"``).
"""

# %%
# The pipeline and the grid
# -------------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.pipeline import make_pipeline

from sklearn_rrank import RoundingRankFactorization

digits = load_digits()
X_train, X_test, y_train, y_test = train_test_split(
    digits.data, digits.target, test_size=0.3, random_state=0
)

pipe = make_pipeline(
    RoundingRankFactorization(method="rsvd", binarize=7.5),
    LogisticRegression(max_iter=2000),
)
grid = {"roundingrankfactorization__n_components": [2, 4, 8, 16, 32]}
search = GridSearchCV(pipe, grid, cv=3).fit(X_train, y_train)

best_k = search.best_params_["roundingrankfactorization__n_components"]
print(f"best n_components: {best_k}")
print(f"cross-validated accuracy: {search.best_score_:.3f}")
print(f"accuracy on the held-out test set: {search.score(X_test, y_test):.3f}")

# %%
# Accuracy against the number of components
# -----------------------------------------
# The mean cross-validated accuracy of each candidate, with one standard deviation
# over the folds.
results = search.cv_results_
ks = np.asarray(results["param_roundingrankfactorization__n_components"], dtype=int)
mean = results["mean_test_score"]
std = results["std_test_score"]

fig, ax = plt.subplots(figsize=(6, 4))
ax.errorbar(ks, mean, yerr=std, marker="o", capsize=3)
ax.axvline(best_k, color="grey", ls=":", label=f"best k = {best_k}")
ax.set_xlabel("n_components (rounding-rank features)")
ax.set_ylabel("cross-validated accuracy")
ax.set_title("Digits: R-SVD features + logistic regression")
ax.legend()
fig.tight_layout()
plt.show()

# %%
# What the features reconstruct
# -----------------------------
# ``inverse_transform`` rounds ``L @ components_`` back to pixels: the binarized
# images as the chosen number of components sees them.
rrf = search.best_estimator_[0]
X_bin = (X_test[:8] > 7.5).astype(np.uint8)
X_hat = rrf.inverse_transform(rrf.transform(X_test[:8]))
fig, axes = plt.subplots(2, 8, figsize=(8, 2.4))
for j in range(8):
    axes[0, j].imshow(X_bin[j].reshape(8, 8), cmap="gray_r")
    axes[1, j].imshow(X_hat[j].reshape(8, 8), cmap="gray_r")
    axes[0, j].set_axis_off()
    axes[1, j].set_axis_off()
axes[0, 0].set_title("data", loc="left", fontsize="small")
axes[1, 0].set_title(f"rounded rank {best_k}", loc="left", fontsize="small")
fig.tight_layout()
plt.show()
