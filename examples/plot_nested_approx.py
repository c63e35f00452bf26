"""
Nearest nested matrix: reordered before and after
=================================================

A binary matrix is *nested* when its rows form a chain under set inclusion; sorted by
decreasing row and column sums it is a staircase. The paper's Theorem
"nested matrices" says that the nested matrices are exactly the matrices of
*non-negative rounding rank one*: ``X = round(l r^T)`` with ``l, r >= 0``.
:class:`~sklearn_rrank.NestedApprox` uses this to find a nested matrix close to the
data (the BMNA problem of Mannila and Terzi).

The images below show the data with rows and columns reordered by the nested matrix
(the staircase order), the nested matrix in the same order, and the entries that
were flipped to get from one to the other.

The figures need matplotlib, which the ``plot`` extra installs
(``python -m pip install ".[plot]"`` in the source tree, or
``pip install "sklearn_rrank[plot]"``).
"""

# %%
# A noisy nested matrix
# ---------------------
# :func:`~sklearn_rrank.datasets.make_nested_matrix` draws a nested matrix (rows and
# columns in random order) and flips entries; the noise level is the number of flips
# divided by the number of ones of the clean matrix (the paper's Section 5.4).
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from sklearn_rrank import NestedApprox, is_nested, nodf
from sklearn_rrank.datasets import make_nested_matrix
from sklearn_rrank.plotting import NestednessDisplay

X, X_clean = make_nested_matrix(
    200, 300, density=0.3, noise=0.15, random_state=0, return_clean=True
)
est = NestedApprox(method="mt+nnrr1").fit(X)
N = est.inverse_transform(est.embedding_)
print(f"the fit is nested: {is_nested(N)}")
print(f"flips to the data:   {est.reconstruction_err_} ({est.relative_error_:.3f})")
print(f"flips of the noise:  {int((X != X_clean).sum())}")
print(f"distance to clean:   {int((N != X_clean).sum())}")

# %%
# The fit recovers the clean matrix up to a few entries although the noise flipped
# many more. Ecologists' nestedness score NODF tells a different story: it gives
# zero credit to pairs of rows (or columns) with equal sums and to empty ones, and a
# nested matrix drawn at random has many of both. So the clean nested matrix scores
# *lower* than the noisy data. NODF is a score, not a test;
# :func:`~sklearn_rrank.is_nested` is the test.
print(
    f"NODF: clean {nodf(X_clean).nodf:.1f}, noisy data {nodf(X).nodf:.1f}, "
    f"fitted {nodf(N).nodf:.1f}"
)


# %%
# :class:`~sklearn_rrank.plotting.NestednessDisplay` draws the data, the nested
# matrix (``est.inverse_transform(est.transform(X))``: every row's best ``l`` for the
# fitted ``r``) and the flipped entries, all in the staircase order, with NODF in
# the titles.
disp = NestednessDisplay.from_estimator(est, X)
disp.figure_.suptitle("Noisy nested matrix (200 x 300, density 0.3, noise 0.15)")
plt.show()

# %%
# Handwritten digits
# ------------------
# Real data are rarely nested. In scikit-learn's handwritten digits (a pixel set to 1
# where its grey level is at least 8 of 16; the first 300 images) a pixel inked in a
# faint image is not always inked in a bold one, since the strokes of different
# digits lie in different places: the nearest nested matrix differs from the data in
# a large share of its ones.
P = (load_digits().data[:300] >= 8).astype(np.uint8)
est_digits = NestedApprox(method="mt+nnrr1").fit(P)
print(
    f"digits: {est_digits.reconstruction_err_} flips, relative error "
    f"{est_digits.relative_error_:.3f}, NODF {nodf(P).nodf:.1f}"
)
disp = NestednessDisplay.from_estimator(est_digits, P)
disp.figure_.suptitle("Digits (300 images x 64 pixels)")
plt.show()
