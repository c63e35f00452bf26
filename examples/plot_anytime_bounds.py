"""
Anytime bounds on APJ
=====================

:func:`~sklearn_rrank.rounding_rank_bounds` runs a portfolio of methods under one
time budget. Each lower-bound method can only raise the best lower bound and each
upper-bound method (a rank search whose factors are certified to round to the data
exactly) can only lower the best upper bound; the report records *when* each bound
improved. These anytime curves show what a shorter budget would have given.

This example runs the spectral and VC-dimension lower bounds and the R-SVD and L-PCA
rank searches on the APJ role-mining data (2044 users x 1164 permissions) with a
budget of 60 seconds, and draws them with
:class:`~sklearn_rrank.plotting.RankSearchDisplay`.
"""

# %%
# Bounds under a budget
# ---------------------
import matplotlib.pyplot as plt

from sklearn_rrank import rounding_rank_bounds
from sklearn_rrank.datasets import load_apj
from sklearn_rrank.plotting import RankSearchDisplay

X = load_apj().data
print(f"APJ: {X.shape[0]} x {X.shape[1]}, {int(X.sum())} ones")

bounds = rounding_rank_bounds(
    X, methods=("spectral", "vc", "rsvd", "lpca"), time_limit=60, random_state=0
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
# certified interval shaded. Right: the wrong entries of each rank search at every
# rank k it tried; the k where a curve reaches zero (and the factors are certified)
# is that method's upper bound. A method whose report has no curve (results of older
# versions) shows its final bound as a single point.
disp = RankSearchDisplay.from_bounds(bounds, name="APJ")
plt.show()
