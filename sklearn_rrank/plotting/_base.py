"""Shared helpers of the Displays: lazy matplotlib import and axes handling."""

import numpy as np
import scipy.sparse as sp

INSTALL_HINT = 'pip install "sklearn_rrank[plot]"'


def check_matplotlib(caller):
    """Import and return ``matplotlib.pyplot``, or raise a clear ImportError.

    Parameters
    ----------
    caller : str
        Name shown in the error message, e.g. ``"RankSearchDisplay.plot"``.

    Returns
    -------
    plt : module
        ``matplotlib.pyplot``.
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            f"{caller} requires matplotlib, which is not installed. Install the "
            f"'plot' extra: {INSTALL_HINT}"
        ) from exc
    return plt


def get_axes(plt, ax, n_panels, *, figsize, caller):
    """Axes for ``n_panels`` panels: new ones (``ax=None``) or the ones given.

    Returns ``(figure, axes)`` with ``axes`` an object ndarray of shape
    ``(n_panels,)``.
    """
    if ax is None:
        fig, axes = plt.subplots(
            1, n_panels, figsize=figsize, squeeze=False, layout="constrained"
        )
        return fig, np.asarray(axes).ravel()
    axes = np.asarray([ax] if _is_axes(ax) else list(ax), dtype=object).ravel()
    if axes.size != n_panels or not all(_is_axes(a) for a in axes):
        raise ValueError(
            f"{caller}: ax must be None or {n_panels} matplotlib Axes (one per "
            f"panel); got {axes.size} object(s)."
        )
    return axes[0].figure, axes


def _is_axes(obj):
    from matplotlib.axes import Axes

    return isinstance(obj, Axes)


def as_dense(X):
    """``X`` (array-like, sparse or DataFrame) as a dense float64 ndarray."""
    if sp.issparse(X):
        X = X.toarray()
    return np.asarray(X, dtype=np.float64)


def binary_image(ax, A, *, title, cmap="Greys"):
    """Draw a 0/1 matrix (NaN: missing, shown light grey) and return the image."""
    import matplotlib as mpl

    cmap = mpl.colormaps[cmap].with_extremes(bad="0.85")
    im = ax.imshow(
        np.ma.masked_invalid(A),
        cmap=cmap,
        vmin=0,
        vmax=1,
        aspect="auto",
        interpolation="nearest",
    )
    ax.set_title(title, fontsize="medium")
    return im


def wrong_entries_rgb(X, Xhat, fn_color, fp_color):
    """RGB image: white, ``fn_color`` where ``X = 1, Xhat = 0``, ``fp_color`` where
    ``X = 0, Xhat = 1``; missing entries of ``X`` (NaN) light grey.

    Returns ``(rgb, n_false_negatives, n_false_positives)``.
    """
    rgb = np.ones(X.shape + (3,))
    fn = (X == 1) & (Xhat == 0)
    fp = (X == 0) & (Xhat == 1)
    rgb[np.isnan(X)] = 0.85
    rgb[fn] = fn_color
    rgb[fp] = fp_color
    return rgb, int(fn.sum()), int(fp.sum())
