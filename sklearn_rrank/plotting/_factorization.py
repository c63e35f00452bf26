"""``FactorizationDisplay``: data, its rounded reconstruction and the wrong entries."""

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

__all__ = ["FactorizationDisplay"]

FALSE_NEGATIVE = (0.84, 0.15, 0.16)  # a one of X reconstructed as 0: red
FALSE_POSITIVE = (0.12, 0.47, 0.71)  # a zero of X reconstructed as 1: blue


class FactorizationDisplay:
    """A binary matrix, its reconstruction ``round_tau(L R^T)`` and the errors.

    Three panels in the original row and column order: the data ``X``, the rounded
    reconstruction, and the wrong entries: false negatives (ones of ``X``
    reconstructed as 0) in red and false positives (zeros reconstructed as 1) in
    blue. Missing entries of ``X`` (NaN) are light grey and never counted. The ones
    of the reconstruction have the method's colour, the one of its curves in
    :class:`RankSearchDisplay`. Large sparse matrices are drawn with one marker per
    one (as :func:`matplotlib.pyplot.spy` does), so that no one disappears when
    the image is scaled down.

    Use :meth:`from_estimator` rather than the constructor.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
        The data (0/1; NaN for missing entries).
    reconstruction : ndarray of shape (n_samples, n_features)
        The 0/1 reconstruction.
    name : str or None, default=None
        Title of the figure (e.g. the data set, method, rank and threshold).
    method : str or None, default=None
        The method that made the reconstruction: its ones get the method's colour
        (None: black).

    Attributes
    ----------
    ax_ : matplotlib Axes
        The first panel (the data).
    axes_ : ndarray of 3 matplotlib Axes
        The panels: data, reconstruction, wrong entries.
    figure_ : matplotlib Figure
        The figure of the panels.
    im_ : matplotlib AxesImage
        The image of the data (``im_.get_array()`` is ``X``).
    images_ : ndarray of 3 matplotlib AxesImage
        The images of the three panels (``get_array()`` gives the matrices; the
        markers of sparse matrices are extra lines on the same Axes).
    n_false_negatives_, n_false_positives_ : int
        Counts of the two kinds of wrong entries.

    See Also
    --------
    sklearn_rrank.RoundingRankFactorization : The factorizations shown here.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn_rrank import RoundingRankFactorization
    >>> from sklearn_rrank.datasets import make_rounding_rank_matrix
    >>> from sklearn_rrank.plotting import FactorizationDisplay
    >>> X = make_rounding_rank_matrix(30, 20, 3, random_state=0)
    >>> est = RoundingRankFactorization(2, method="rsvd").fit(X)
    >>> disp = FactorizationDisplay.from_estimator(est, X)
    >>> disp.n_false_negatives_ + disp.n_false_positives_ == est.reconstruction_err_
    True
    """

    def __init__(self, X, reconstruction, *, name=None, method=None):
        self.X = X
        self.reconstruction = reconstruction
        self.name = name
        self.method = method

    @classmethod
    def from_estimator(cls, estimator, X, *, ax=None, name=None, data_name=None):
        """Plot a fitted :class:`~sklearn_rrank.RoundingRankFactorization` on ``X``.

        The reconstruction is ``estimator.inverse_transform(estimator.transform(X))``,
        i.e. ``round_tau(L R^T)``.

        Parameters
        ----------
        estimator : RoundingRankFactorization
            A fitted factorization.
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Binary data with the features the estimator was fitted on.
        ax : sequence of 3 matplotlib Axes or None, default=None
            Axes for the three panels; None creates a figure.
        name : str or None, default=None
            Figure title; None uses ``data_name``, the method, the rank and the
            threshold ``tau``.
        data_name : str or None, default=None
            Name of the data set for the default title.

        Returns
        -------
        display : FactorizationDisplay
            The drawn display.
        """
        check_is_fitted(estimator, "components_")
        Xhat = as_dense(estimator.inverse_transform(estimator.transform(X)))
        method = getattr(estimator, "method", None)
        if name is None:
            k = np.shape(estimator.components_)[0]
            name = f"{method}, k = {k}" if method else f"k = {k}"
            tau = getattr(estimator, "tau", None)
            if tau is not None:
                name += f", tau = {float(tau):g}"
            if data_name:
                name = f"{data_name}: {name}"
        return cls(as_dense(X), Xhat, name=name, method=method).plot(ax=ax)

    def plot(self, ax=None):
        """Draw the display.

        Parameters
        ----------
        ax : sequence of 3 matplotlib Axes or None, default=None
            Axes for the panels data, reconstruction and wrong entries; None creates
            a figure.

        Returns
        -------
        display : FactorizationDisplay
            ``self``, with ``ax_``, ``axes_``, ``figure_``, ``im_`` and ``images_``
            set.
        """
        plt = check_matplotlib("FactorizationDisplay.plot")
        X, Xhat = as_dense(self.X), as_dense(self.reconstruction)
        if X.shape != Xhat.shape:
            raise ValueError(
                "X and reconstruction must have the same shape; got "
                f"{X.shape} and {Xhat.shape}."
            )
        fig, axes = get_axes(
            plt, ax, 3, figsize=(12, 4), caller="FactorizationDisplay.plot"
        )
        images = [
            binary_image(axes[0], X, title="data X"),
            binary_image(
                axes[1],
                Xhat,
                title=r"reconstruction round$_\tau(LR^T)$",
                color=method_color(self.method),
            ),
        ]
        im, fn, fp = wrong_entries_image(
            axes[2], X, Xhat, FALSE_NEGATIVE, FALSE_POSITIVE
        )
        images.append(im)
        axes[2].set_title(
            f"{fn + fp} wrong: {fn} false negatives (red),\n"
            f"{fp} false positives (blue)",
            fontsize="medium",
        )
        for a in axes:
            a.set_xlabel("columns")
        axes[0].set_ylabel("rows")
        if self.name:
            fig.suptitle(self.name)
        self.n_false_negatives_, self.n_false_positives_ = fn, fp
        self.ax_, self.axes_, self.figure_ = axes[0], axes, fig
        self.images_ = np.asarray(images, dtype=object)
        self.im_ = images[0]
        return self
