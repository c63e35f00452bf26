"""Matplotlib Displays for rank searches, nested matrices and factorizations.

The Displays follow scikit-learn's convention: a class method (``from_estimator``,
``from_bounds``) computes what to show and draws it; ``plot(ax=...)`` draws again,
possibly on other axes; the drawn objects are the attributes ``ax_``, ``axes_``,
``figure_`` and the artists (``line_``, ``lines_``, ``im_``, ...).

matplotlib comes with the ``plot`` extra (``pip install "sklearn_rrank[plot]"``).
It is imported only when a Display draws, never by ``import sklearn_rrank`` or by
importing this module; without it, drawing raises an :class:`ImportError` that names
the extra.

Every method has one colour in every Display and panel; :func:`method_color` gives
it, for plots of your own.
"""

from sklearn_rrank.plotting._base import method_color
from sklearn_rrank.plotting._factorization import FactorizationDisplay
from sklearn_rrank.plotting._nestedness import NestednessDisplay
from sklearn_rrank.plotting._rank_search import RankSearchDisplay

__all__ = [
    "FactorizationDisplay",
    "NestednessDisplay",
    "RankSearchDisplay",
    "method_color",
]
