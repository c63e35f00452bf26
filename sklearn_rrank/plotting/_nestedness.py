"""``NestednessDisplay``: a matrix and its nearest nested matrix, in nested order."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from sklearn_rrank.plotting._base import (
    as_dense,
    binary_image,
    check_matplotlib,
    get_axes,
    method_color,
    wrong_entries_image,
)

__all__ = ["NestednessDisplay"]

REMOVED = (0.84, 0.15, 0.16)  # a one of X that the nested matrix drops: red
ADDED = (0.12, 0.47, 0.71)  # a zero of X that the nested matrix sets: blue


def nested_order(N, X=None):
    """Rows and columns by decreasing sums of ``N`` (ties: sums of ``X``, stable).

    Parameters
    ----------
    N : ndarray of shape (n_samples, n_features)
        A binary matrix (the nested approximation).
    X : ndarray of shape (n_samples, n_features) or None, default=None
        Breaks ties between equal sums of ``N``.

    Returns
    -------
    rows : ndarray of shape (n_samples,)
    cols : ndarray of shape (n_features,)
    """
    N = np.asarray(N, dtype=np.float64)
    X = np.zeros_like(N) if X is None else np.nan_to_num(np.asarray(X, float))
    rows = np.lexsort((np.arange(N.shape[0]), -X.sum(axis=1), -N.sum(axis=1)))
    cols = np.lexsort((np.arange(N.shape[1]), -X.sum(axis=0), -N.sum(axis=0)))
    return rows, cols


class NestednessDisplay:
    """A binary matrix and its nearest nested matrix, reordered into a staircase.

    Three panels with rows and columns in the nested order (rows by decreasing row
    sums, columns by decreasing column sums of the nested matrix; ties by the sums
    of the data): the data, the nested matrix, and the flipped entries (red: ones of
    the data the nested matrix removes; blue: ones it adds). The titles give NODF
    (:func:`~sklearn_rrank.nodf`) of the data and of the nested matrix; on sparse
    data the nested matrix can score lower, since NODF gives 0 to pairs with equal
    sums or an empty row or column (see the user guide, "Nestedness"). The ones
    of the nested matrix have the colour of the method that found it; large sparse
    matrices get one marker per one, as in :class:`FactorizationDisplay`.

    Use :meth:`from_estimator` rather than the constructor.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The data (0/1; NaN for missing entries).
    nested : ndarray of shape (n_samples, n_features)
        The nested approximation of ``X``.
    row_order : ndarray of shape (n_samples,) or None, default=None
        Row order of the panels; None computes the nested order.
    column_order : ndarray of shape (n_features,) or None, default=None
        Column order of the panels; None computes the nested order.
    nodf_data, nodf_nested : float or None, default=None
        NODF values for the titles; None computes them with
        :func:`~sklearn_rrank.nodf`.
    name : str or None, default=None
        Title of the figure (e.g. the data set and the method).
    method : str or None, default=None
        The method that found the nested matrix: its ones get the method's colour
        (None: black).

    Attributes
    ----------
    ax_ : matplotlib Axes
        The first panel (the data).
    axes_ : ndarray of 3 matplotlib Axes
        The panels: data, nested matrix, flips.
    figure_ : matplotlib Figure
        The figure of the panels.
    im_ : matplotlib AxesImage
        The image of the reordered data (``im_.get_array()`` is
        ``X[row_order][:, column_order]``).
    images_ : ndarray of 3 matplotlib AxesImage
        The images of the three panels.
    n_removed_, n_added_ : int
        Ones of ``X`` removed and added by the nested matrix.

    See Also
    --------
    sklearn_rrank.NestedApprox : Finds the nearest nested matrix.
    sklearn_rrank.nodf : The NODF nestedness metric.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn_rrank import NestedApprox
    >>> from sklearn_rrank.datasets import make_nested_matrix
    >>> from sklearn_rrank.plotting import NestednessDisplay
    >>> X = make_nested_matrix(30, 20, noise=0.1, random_state=0)
    >>> disp = NestednessDisplay.from_estimator(NestedApprox().fit(X), X)
    >>> len(disp.axes_)
    3
    """

    def __init__(
        self,
        X,
        nested,
        *,
        row_order=None,
        column_order=None,
        nodf_data=None,
        nodf_nested=None,
        name=None,
        method=None,
    ):
        self.X = X
        self.nested = nested
        self.row_order = row_order
        self.column_order = column_order
        self.nodf_data = nodf_data
        self.nodf_nested = nodf_nested
        self.name = name
        self.method = method

    @classmethod
    def from_estimator(cls, estimator, X, *, ax=None, name=None, data_name=None):
        """Plot ``X`` and its nested approximation by a fitted ``NestedApprox``.

        The nested approximation is ``estimator.inverse_transform(
        estimator.transform(X))``: each row's best ``l_i`` for the fitted ``r`` (a
        threshold of one fixed vector, so the result is nested). On the training data
        it differs from the fitted nested matrix at most by fewer flips (see
        :class:`~sklearn_rrank.NestedApprox`).

        Parameters
        ----------
        estimator : NestedApprox
            A fitted nested approximation.
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Binary data with the features the estimator was fitted on.
        ax : sequence of 3 matplotlib Axes or None, default=None
            Axes for the three panels; None creates a figure.
        name : str or None, default=None
            Figure title; None uses ``data_name``, the method and ``tau``.
        data_name : str or None, default=None
            Name of the data set for the default title.

        Returns
        -------
        display : NestednessDisplay
            The drawn display.
        """
        check_is_fitted(estimator, "components_")
        N = as_dense(estimator.inverse_transform(estimator.transform(X)))
        Xd = as_dense(X)
        binarize = getattr(estimator, "binarize", None)
        if binarize is not None:
            Xd = np.where(np.isnan(Xd), np.nan, (Xd > binarize).astype(np.float64))
        method = getattr(estimator, "method", None)
        if name is None:
            name = "nearest nested matrix"
            details = [method] if method else []
            tau = getattr(estimator, "tau", None)
            if tau is not None:
                details.append(f"tau = {float(tau):g}")
            if details:
                name += f" ({', '.join(details)})"
            if data_name:
                name = f"{data_name}: {name}"
        return cls(Xd, N, name=name, method=method).plot(ax=ax)

    def plot(self, ax=None):
        """Draw the display.

        Parameters
        ----------
        ax : sequence of 3 matplotlib Axes or None, default=None
            Axes for the panels data, nested matrix and flips; None creates a
            figure.

        Returns
        -------
        display : NestednessDisplay
            ``self``, with ``ax_``, ``axes_``, ``figure_``, ``im_`` and
            ``images_`` set.
        """
        plt = check_matplotlib("NestednessDisplay.plot")
        from sklearn_rrank import nodf

        X, N = as_dense(self.X), as_dense(self.nested)
        if X.shape != N.shape:
            raise ValueError(
                f"X and nested must have the same shape; got {X.shape} and {N.shape}."
            )
        rows, cols = nested_order(N, X)
        rows = rows if self.row_order is None else np.asarray(self.row_order)
        cols = cols if self.column_order is None else np.asarray(self.column_order)
        Xo, No = X[rows][:, cols], N[rows][:, cols]
        nodf_x = self.nodf_data
        if nodf_x is None and not np.isnan(X).any():
            nodf_x = nodf(X).nodf
        nodf_n = nodf(N).nodf if self.nodf_nested is None else self.nodf_nested
        fig, axes = get_axes(
            plt, ax, 3, figsize=(12, 4), caller="NestednessDisplay.plot"
        )
        x_title = "data" if nodf_x is None else f"data, NODF {nodf_x:.1f}"
        images = [
            binary_image(axes[0], Xo, title=x_title),
            binary_image(
                axes[1],
                No,
                title=f"nested, NODF {nodf_n:.1f}",
                color=method_color(self.method),
            ),
        ]
        im, removed, added = wrong_entries_image(axes[2], Xo, No, REMOVED, ADDED)
        images.append(im)
        axes[2].set_title(
            f"{removed + added} flips: {removed} ones removed (red),\n"
            f"{added} ones added (blue)",
            fontsize="medium",
        )
        for a in axes:
            a.set_xlabel("columns (by decreasing sum)")
            a.set_xticks([])
            a.set_yticks([])
        axes[0].set_ylabel("rows (by decreasing sum)")
        if self.name:
            fig.suptitle(self.name)
        self.n_removed_, self.n_added_ = removed, added
        self.ax_, self.axes_, self.figure_ = axes[0], axes, fig
        self.images_ = np.asarray(images, dtype=object)
        self.im_ = images[0]
        return self
