"""
Anytime bounds under a budget
=============================

:func:`~sklearn_rrank.rounding_rank_bounds` runs a portfolio of methods under one
time budget. Each lower-bound method can only raise the best lower bound and each
upper-bound method (a rank search whose factors are certified to round to the data
exactly) can only lower the best upper bound; the report records *when* each bound
improved. These anytime curves show what a shorter budget would have given.

This example runs the spectral and VC-dimension lower bounds and the R-SVD and
L-PCA rank searches on scikit-learn's handwritten digits (1797 images x 64 pixels, a
pixel set to 1 where its grey level is at least 8 of 16) with a budget of 10
seconds, and draws them with :class:`~sklearn_rrank.plotting.RankSearchDisplay`.
The budget is wall-clock time, so a slower computer, or one that runs other work at
the same time, may certify a larger upper bound.

The figures need matplotlib, which the ``plot`` extra installs
(``python -m pip install ".[plot]"`` in the source tree, or
``pip install "sklearn_rrank[plot]"``).
"""

# %%
# Bounds under a budget
# ---------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from sklearn_rrank import rounding_rank_bounds
from sklearn_rrank.plotting import RankSearchDisplay

X = (load_digits().data >= 8).astype(np.uint8)
print(f"digits: {X.shape[0]} x {X.shape[1]}, {int(X.sum())} ones")

bounds = rounding_rank_bounds(
    X, methods=("spectral", "vc", "rsvd", "lpca"), time_limit=10, random_state=0
)
print(
    f"rounding rank in [{bounds.lower}, {bounds.upper}] after {bounds.seconds:.1f} s "
    f"(lower by {bounds.lower_method}, upper by {bounds.upper_method})"
)
for row in bounds.report:
    curve = row.get("curve") or []
    print(
        f"{row['method']:<9} {row['kind']:<6} bound {row['bound']!s:>5}  "
        f"{len(curve)} improvement(s)  {row.get('status', '')} {row['message']}"
    )

# %%
# The anytime curves
# ------------------
# Left: each method's bound against the seconds since the start of the call (dashed:
# lower bounds, solid: upper bounds; a marker at each improvement), with the final
# certified interval shaded; the bound axis is logarithmic above 1. Right: the wrong
# entries of the rank search at every rank k it tried, zoomed to the ranks near the
# interval (``k_range="full"`` shows all); the k where the curve reaches zero (and
# the factors are certified) is the method's upper bound. A method whose report has
# no curve shows its final bound as a single point.
disp = RankSearchDisplay.from_bounds(bounds, name="digits")
plt.show()
