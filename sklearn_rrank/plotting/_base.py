"""Shared helpers of the Displays: lazy matplotlib import, axes, colours, images."""

import re
import zlib

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


# one colour per method, shared by every Display; red and blue are left to the lower
# bounds (never drawn as a matrix): wrong-entry panels use them for FN and FP
METHOD_COLORS = {
    # lower bounds
    "rank_one": "tab:cyan",
    "spectral": "tab:blue",
    "vc": "tab:red",
    # upper bounds and minimum-error fits
    "trivial": "0.3",  # dark grey
    "rsvd": "tab:green",
    "lpca": "tab:purple",
    "projlp": "tab:orange",
    "nuclear": "tab:brown",
    "permutation": "tab:pink",
    "asso": "tab:olive",
    "tsvd": "tab:gray",  # the unrounded baseline of the examples
    # nested approximations (NestedApprox's methods)
    "mt+nnrr1": "tab:purple",
    "mt": "tab:orange",
    "nnrr1": "tab:brown",
}
# colours of other names, picked by a hash of the name (stable across runs); none of
# them is a known method's colour
_OTHER_COLORS = ("#4b0082", "#008080", "#b8860b", "#556b2f", "#800000", "#2f4f4f")


def method_color(name):
    """The colour of a method in every Display (a matplotlib colour string).

    Known methods have fixed colours (``METHOD_COLORS``), also under their printed
    names (``"L-PCA"``, ``"R-SVD"``, ``"ProjLP"``: case and hyphens are ignored); a
    repeated name such as ``"lpca (2)"`` gets the colour of ``"lpca"``; other names
    get a colour picked by a hash of the name, the same in every run.

    Parameters
    ----------
    name : str or None
        A method name, e.g. ``"lpca"``; None gives black.

    Returns
    -------
    color : str
        A colour that matplotlib understands (e.g. ``"tab:purple"``).

    Examples
    --------
    >>> from sklearn_rrank.plotting import method_color
    >>> method_color("lpca"), method_color("L-PCA"), method_color("lpca (2)")
    ('tab:purple', 'tab:purple', 'tab:purple')
    >>> method_color("rsvd")
    'tab:green'
    """
    if name is None:
        return "black"
    base = re.sub(r" \(\d+\)$", "", str(name))
    key = base.lower().replace("-", "")
    if key in METHOD_COLORS:
        return METHOD_COLORS[key]
    return _OTHER_COLORS[zlib.crc32(base.encode()) % len(_OTHER_COLORS)]


def data_title(data_name=None, tau=None):
    """``"paleo, tau = 0.5"``-style title prefix (empty string if nothing known)."""
    parts = [str(data_name)] if data_name else []
    if tau is not None:
        parts.append(f"tau = {float(tau):g}")
    return ", ".join(parts)


# a large sparse matrix is drawn with one marker per entry (as matplotlib's spy):
# imshow's resampling would drop most of its ones
_MARKER_MIN_SIZE = 250
_MARKER_MAX_DENSITY = 0.1


def use_markers(shape, n_marked):
    """Whether ``n_marked`` entries of a ``shape`` matrix are drawn as markers."""
    size = shape[0] * shape[1]
    return (
        max(shape) > _MARKER_MIN_SIZE
        and size > 0
        and n_marked <= _MARKER_MAX_DENSITY * size
    )


def mark_entries(ax, mask, color):
    """Draw the True entries of ``mask`` as small square markers (spy style).

    The marker is about one entry wide but never below one point, so every marked
    entry stays visible. Returns the Line2D (None if nothing is marked).
    """
    rows, cols = np.nonzero(mask)
    if rows.size == 0:
        return None
    box = ax.get_position()
    fig_w, fig_h = ax.figure.get_size_inches()
    # points per entry along the tighter axis (72 points per inch)
    per_entry = min(
        box.width * fig_w * 72 / max(mask.shape[1], 1),
        box.height * fig_h * 72 / max(mask.shape[0], 1),
    )
    (line,) = ax.plot(
        cols,
        rows,
        ls="none",
        marker="s",
        ms=max(1.0, per_entry),
        mew=0,
        color=color,
    )
    return line


def binary_image(ax, A, *, title, color="black"):
    """Draw a 0/1 matrix and return the image.

    Ones are ``color``, zeros white, missing entries (NaN) light grey. Large sparse
    matrices (see :func:`use_markers`) get one marker per one on top of the
    image, so that no one is lost when the image is resampled.
    """
    from matplotlib.colors import ListedColormap

    cmap = ListedColormap(["white", color]).with_extremes(bad="0.85")
    im = ax.imshow(
        np.ma.masked_invalid(A),
        cmap=cmap,
        vmin=0,
        vmax=1,
        aspect="auto",
        interpolation="nearest",
    )
    ones = A == 1
    if use_markers(A.shape, int(np.count_nonzero(ones))):
        ax.autoscale(False)
        mark_entries(ax, ones, color)
    ax.set_title(title, fontsize="medium")
    return im


def wrong_entries_image(ax, X, Xhat, fn_color, fp_color):
    """Draw the wrong entries (see :func:`wrong_entries_rgb`); markers when sparse.

    Returns ``(image, n_false_negatives, n_false_positives)``.
    """
    rgb, fn, fp = wrong_entries_rgb(X, Xhat, fn_color, fp_color)
    im = ax.imshow(rgb, aspect="auto", interpolation="nearest")
    if use_markers(X.shape, fn + fp):
        ax.autoscale(False)
        mark_entries(ax, (X == 1) & (Xhat == 0), fn_color)
        mark_entries(ax, (X == 0) & (Xhat == 1), fp_color)
    return im, fn, fp


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
