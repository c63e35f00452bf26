"""``RankSearchDisplay``: anytime bound curves and error against the rank k."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from sklearn_rrank.plotting._base import (
    check_matplotlib,
    data_title,
    get_axes,
    method_color,
)

__all__ = ["RankSearchDisplay"]

_PANELS = ("anytime", "errors")


class RankSearchDisplay:
    """Rank-search visualization: anytime bounds and error against the rank k.

    Two panels, each drawn when its data is present:

    - ``"anytime"``: each method's bound against wall-clock seconds (a step curve
      that rises for lower bounds and falls for upper bounds, one marker per
      improvement), with the final certified interval ``[lower, upper]`` shaded; the
      bound axis is symmetric-logarithmic by default (linear up to 1, then
      logarithmic), because a trivial or R-SVD upper bound can be a hundred times
      the interval;
    - ``"errors"``: the number of wrong entries (or the held-out error) against the
      rank ``k``, with ``[lower, upper]`` shaded and the chosen ``k`` marked; by
      default zoomed to the ranks that matter (see :meth:`plot`).

    Every method has one colour in both panels and in the other Displays.

    Use :meth:`from_estimator` (a fitted :class:`~sklearn_rrank.RoundingRankCV`:
    errors panel only) or :meth:`from_bounds` (a
    :class:`~sklearn_rrank.RoundingRankBounds`: both panels) rather than the
    constructor. The constructor only stores the data; :meth:`plot` draws it.

    Parameters
    ----------
    curves : dict or None, default=None
        ``{name: {"kind": "lower" or "upper", "seconds": array, "bound": array}}``:
        the anytime curves, ``bound[i]`` known from ``seconds[i]`` on.
    errors : dict or None, default=None
        ``{name: (k_values, errors)}``: error against the rank k.
    lower, upper : int or None, default=None
        The certified interval of the rounding rank, shaded when both are given.
    n_components : int or None, default=None
        The chosen rank (from :class:`~sklearn_rrank.RoundingRankCV`), marked on the
        errors panel.
    certified : bool or None, default=None
        Whether ``n_components`` is certified exact.
    seconds : float or None, default=None
        Duration of the whole run; anytime curves are extended up to it.
    error_label : str, default="wrong entries"
        Label of the y-axis of the errors panel.
    name : str or None, default=None
        Title prefix (e.g. the data set).
    tau : float or None, default=None
        Rounding threshold, shown in the titles.

    Attributes
    ----------
    ax_ : matplotlib Axes
        The first panel drawn (the anytime panel when drawn, else the errors panel).
    axes_ : ndarray of matplotlib Axes
        All panels drawn, in the order ``("anytime", "errors")``.
    figure_ : matplotlib Figure
        The figure of the panels.
    lines_ : dict of matplotlib Line2D
        ``{name: line}`` of the anytime curves.
    error_lines_ : dict of matplotlib Line2D
        ``{name: line}`` of the error curves.
    line_ : matplotlib Line2D or None
        The error curve when there is exactly one (as from :meth:`from_estimator`).
    interval_ : list of matplotlib artists
        The shaded certified intervals (one per panel drawn, if any).

    See Also
    --------
    sklearn_rrank.rounding_rank_bounds : Produces the anytime curves.
    sklearn_rrank.RoundingRankCV : Produces the error against k.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn_rrank import rounding_rank_bounds
    >>> from sklearn_rrank.datasets import make_rounding_rank_matrix
    >>> from sklearn_rrank.plotting import RankSearchDisplay
    >>> X = make_rounding_rank_matrix(30, 20, 2, random_state=0)
    >>> bounds = rounding_rank_bounds(X, methods=("spectral", "rsvd"))
    >>> disp = RankSearchDisplay.from_bounds(bounds)
    >>> sorted(disp.lines_)
    ['rsvd', 'spectral']
    """

    def __init__(
        self,
        *,
        curves=None,
        errors=None,
        lower=None,
        upper=None,
        n_components=None,
        certified=None,
        seconds=None,
        error_label="wrong entries",
        name=None,
        tau=None,
    ):
        self.curves = curves
        self.errors = errors
        self.lower = lower
        self.upper = upper
        self.n_components = n_components
        self.certified = certified
        self.seconds = seconds
        self.error_label = error_label
        self.name = name
        self.tau = tau

    # -----------------------------------------------------------------------------
    # constructors
    # -----------------------------------------------------------------------------
    @classmethod
    def from_estimator(cls, estimator, *, ax=None, name=None, k_range="zoom"):
        """Plot the error against k of a fitted :class:`~sklearn_rrank.RoundingRankCV`.

        Reads ``cv_results_["param_n_components"]`` and
        ``cv_results_["mean_test_error"]`` (wrong entries in ``mode="exact"``, the
        mean held-out error rate in ``mode="holdout"``) and marks
        ``n_components_``.

        Parameters
        ----------
        estimator : RoundingRankCV
            A fitted rank search.
        ax : matplotlib Axes or None, default=None
            Axes to draw on; None creates a figure.
        name : str or None, default=None
            Title prefix (e.g. the data set).
        k_range : "zoom", "full" or (float, float), default="zoom"
            Rank axis of the errors panel, see :meth:`plot`.

        Returns
        -------
        display : RankSearchDisplay
            The drawn display.
        """
        check_is_fitted(estimator, ["cv_results_", "n_components_"])
        res = estimator.cv_results_
        k = np.asarray(res["param_n_components"], dtype=np.float64)
        err = np.asarray(res["mean_test_error"], dtype=np.float64)
        order = np.argsort(k, kind="stable")
        holdout = getattr(estimator, "mode", "exact") == "holdout"
        certified = getattr(estimator, "certified_", None)
        inner = getattr(estimator, "estimator", None)
        params = inner.get_params() if hasattr(inner, "get_params") else {}
        label = params.get("method") or ("mean error" if holdout else "errors")
        disp = cls(
            errors={label: (k[order], err[order])},
            n_components=int(estimator.n_components_),
            certified=None if holdout else bool(certified),
            error_label="mean held-out error rate" if holdout else "wrong entries",
            name=name,
            tau=params.get("tau"),
        )
        return disp.plot(ax=ax, k_range=k_range)

    @classmethod
    def from_bounds(
        cls,
        bounds,
        *,
        ax=None,
        panels=None,
        name=None,
        bound_scale="symlog",
        k_range="zoom",
    ):
        """Plot the anytime curves of :func:`~sklearn_rrank.rounding_rank_bounds`.

        Each row of ``bounds.report`` with a ``curve`` (``[seconds, bound]`` pairs,
        seconds since the start of the call) gives one step curve. A row without
        ``curve`` (older results) or with an empty one but a final ``bound`` is drawn
        as one point at its own ``seconds``, so only the final bounds show. Rows with
        ``errors_by_k`` (rank searches) give the errors panel.

        Parameters
        ----------
        bounds : RoundingRankBounds
            The result of :func:`~sklearn_rrank.rounding_rank_bounds`.
        ax : matplotlib Axes, sequence of Axes or None, default=None
            One Axes per panel drawn; None creates a figure.
        panels : sequence of {"anytime", "errors"} or None, default=None
            Panels to draw; None draws every panel that has data.
        name : str or None, default=None
            Title prefix (e.g. the data set).
        bound_scale : {"symlog", "linear"}, default="symlog"
            Scale of the bound axis of the anytime panel, see :meth:`plot`.
        k_range : "zoom", "full" or (float, float), default="zoom"
            Rank axis of the errors panel, see :meth:`plot`.

        Returns
        -------
        display : RankSearchDisplay
            The drawn display.
        """
        curves, errors = {}, {}
        for row in getattr(bounds, "report", None) or []:
            method = _unique(str(row.get("method", "?")), curves, errors)
            points = [p for p in (row.get("curve") or []) if p[1] is not None]
            if not points and row.get("bound") is not None:
                points = [[float(row.get("seconds") or 0.0), row["bound"]]]
            if points:
                pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
                curves[method] = {
                    "kind": row.get("kind", "upper"),
                    "seconds": pts[:, 0],
                    "bound": pts[:, 1],
                }
            by_k = row.get("errors_by_k") or {}
            if by_k:
                ks = np.array(sorted(int(k) for k in by_k), dtype=np.float64)
                errs = np.array([by_k[k] for k in sorted(by_k, key=int)], float)
                errors[method] = (ks, errs)
        disp = cls(
            curves=curves,
            errors=errors,
            lower=getattr(bounds, "lower", None),
            upper=getattr(bounds, "upper", None),
            seconds=getattr(bounds, "seconds", None),
            name=name,
            tau=getattr(bounds, "tau", None),
        )
        return disp.plot(ax=ax, panels=panels, bound_scale=bound_scale, k_range=k_range)

    # -----------------------------------------------------------------------------
    # drawing
    # -----------------------------------------------------------------------------
    def plot(self, ax=None, *, panels=None, bound_scale="symlog", k_range="zoom"):
        """Draw the display.

        Parameters
        ----------
        ax : matplotlib Axes, sequence of Axes or None, default=None
            One Axes per panel drawn; None creates a figure with one panel per
            element of ``panels``.
        panels : sequence of {"anytime", "errors"} or None, default=None
            Panels to draw, in this order; None draws every panel that has data
            (the anytime panel alone if neither has data).
        bound_scale : {"symlog", "linear"}, default="symlog"
            Scale of the bound axis of the anytime panel. ``"symlog"`` is linear
            from 0 to 1 and logarithmic (base 2) above, with ticks at 0, 1, 2, 4,
            8, ..., so that a bound of a few hundred does not squeeze the
            interval.
        k_range : "zoom", "full" or (float, float), default="zoom"
            Rank axis of the errors panel. ``"zoom"``: the ranks that matter, i.e.
            the certified interval, the chosen ``n_components`` and every rank a
            method tried up to twice the upper bound (every tried rank when there
            is no upper bound), with a margin of one rank; a method that computes
            the error of every rank at once (R-SVD) is drawn in full but shown only
            there. ``"full"``: every rank with data. A pair: these limits. The
            error axis is scaled to the ranks shown.

        Returns
        -------
        display : RankSearchDisplay
            ``self``, with the attributes ``ax_``, ``axes_``, ``figure_`` and the
            artists set.
        """
        plt = check_matplotlib("RankSearchDisplay.plot")
        if panels is None:
            data = (self.curves, self.errors)
            panels = [p for p, d in zip(_PANELS, data, strict=True) if d]
            panels = panels or ["anytime"]
        elif isinstance(panels, str):
            panels = [panels]
        panels = list(panels)
        bad = [p for p in panels if p not in _PANELS]
        if bad or not panels or len(set(panels)) != len(panels):
            raise ValueError(
                f"panels must be distinct values of {_PANELS}; got {panels!r}."
            )
        if bound_scale not in ("symlog", "linear"):
            raise ValueError(
                f"bound_scale must be 'symlog' or 'linear'; got {bound_scale!r}."
            )
        if isinstance(k_range, str):
            if k_range not in ("zoom", "full"):
                raise ValueError(
                    "k_range must be 'zoom', 'full' or a pair (k_min, k_max); got "
                    f"{k_range!r}."
                )
        elif np.shape(k_range) != (2,):
            raise ValueError(
                f"k_range must be 'zoom', 'full' or a pair (k_min, k_max); got "
                f"{k_range!r}."
            )
        fig, axes = get_axes(
            plt,
            ax,
            len(panels),
            figsize=(6.4 * len(panels), 4.5),
            caller="RankSearchDisplay.plot",
        )
        self.lines_, self.error_lines_, self.interval_ = {}, {}, []
        for panel, a in zip(panels, axes, strict=True):
            if panel == "anytime":
                self._plot_anytime(a, bound_scale)
            else:
                self._plot_errors(a, k_range)
        self.line_ = (
            next(iter(self.error_lines_.values()))
            if len(self.error_lines_) == 1
            else None
        )
        self.ax_, self.axes_, self.figure_ = axes[0], axes, fig
        return self

    def _has_interval(self):
        return self.lower is not None and self.upper is not None

    def _title(self, text):
        prefix = data_title(self.name, self.tau)
        return f"{prefix}: {text}" if prefix else text

    def _shade_interval(self, ax, *, vertical):
        """Shade [lower, upper] (bounds on the y axis, or on the x axis)."""
        if not self._has_interval():
            return
        span = (ax.axvspan if vertical else ax.axhspan)(
            self.lower - 0.5,
            self.upper + 0.5,
            color="tab:green",
            alpha=0.12,
            lw=0,
            label=f"certified interval [{self.lower}, {self.upper}]",
        )
        self.interval_.append(span)

    def _plot_anytime(self, ax, bound_scale="symlog"):
        curves = self.curves or {}
        self._shade_interval(ax, vertical=False)
        end = self.seconds
        if end is None and curves:
            end = max(float(c["seconds"][-1]) for c in curves.values())
        for name, c in curves.items():
            t = np.asarray(c["seconds"], dtype=np.float64)
            b = np.asarray(c["bound"], dtype=np.float64)
            if end is not None and t.size and end > t[-1]:
                t, b = np.append(t, end), np.append(b, b[-1])
            lower = c.get("kind") == "lower"
            (line,) = ax.plot(
                t,
                b,
                drawstyle="steps-post",
                ls="--" if lower else "-",
                color=method_color(name),
                label=f"{name} ({'lower' if lower else 'upper'})",
            )
            n = len(c["seconds"])
            ax.plot(t[:n], b[:n], "v" if lower else "^", color=line.get_color(), ms=5)
            self.lines_[name] = line
        if curves and end:
            # the time axis starts with the call (a little room for markers at 0)
            ax.set_xlim(left=-0.02 * end)
        if bound_scale == "symlog":
            _symlog_rank_axis(ax, curves, self.upper)
        ax.set_xlabel("seconds since the start")
        ax.set_ylabel("bound on the rounding rank")
        ax.set_title(self._title("anytime bounds"), fontsize="medium")
        if curves or self._has_interval():
            # beside the panel: the curves span the whole time axis, and a high
            # trivial or R-SVD bound leaves no free corner inside
            ax.legend(
                fontsize="small",
                loc="upper left",
                bbox_to_anchor=(1.01, 1.0),
                borderaxespad=0,
            )

    def _plot_errors(self, ax, k_range="zoom"):
        errors = self.errors or {}
        self._shade_interval(ax, vertical=True)
        lo, hi = self._k_limits(k_range)
        for name, (k, err) in errors.items():
            k = np.asarray(k, dtype=np.float64)
            shown = np.count_nonzero((k >= lo) & (k <= hi))
            (line,) = ax.plot(
                k,
                np.asarray(err, dtype=np.float64),
                marker="." if shown <= 40 else None,
                color=method_color(name),
                label=name,
            )
            self.error_lines_[name] = line
        if self.n_components is not None:
            what = "certified" if self.certified else "chosen"
            ax.axvline(
                self.n_components,
                color="k",
                ls=":",
                lw=1,
                label=f"{what} k = {self.n_components}",
            )
        from matplotlib.ticker import MaxNLocator

        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # ranks are integers
        ax.set_xlabel("rank k")
        ax.set_ylabel(self.error_label)
        if np.isfinite(lo) and np.isfinite(hi):
            ax.set_xlim(lo, hi)
            top = [
                float(np.nanmax(e[(k >= lo) & (k <= hi)]))
                for k, e in (
                    (np.asarray(k, float), np.asarray(e, float))
                    for k, e in errors.values()
                )
                if np.any((k >= lo) & (k <= hi) & np.isfinite(e))
            ]
            if top and max(top) > 0:
                ax.set_ylim(0, 1.05 * max(top))
        ax.set_ylim(bottom=0)
        ax.set_title(self._title(f"{self.error_label} against k"), fontsize="medium")
        if errors or self._has_interval() or self.n_components is not None:
            ax.legend(fontsize="small")

    def _k_limits(self, k_range):
        """Limits of the rank axis of the errors panel (infinite: autoscale)."""
        if not isinstance(k_range, str):
            return float(k_range[0]), float(k_range[1])
        tried = [
            np.asarray(k, dtype=np.float64) for k, _ in (self.errors or {}).values()
        ]
        tried = [k[np.isfinite(k)] for k in tried]
        marks = [self.lower, self.upper, self.n_components]
        marks = [float(v) for v in marks if v is not None]
        if k_range == "full" or not (marks or any(k.size for k in tried)):
            return -np.inf, np.inf
        if self.upper is not None:
            cap = max(2 * self.upper, self.upper + 1)
            tried = [k[k <= cap] for k in tried]
        values = np.concatenate([np.asarray(marks), *tried])
        # a margin of one rank, but no room for negative ranks
        lo = max(float(values.min()) - 1, min(float(values.min()), 0.0) - 0.5)
        return lo, float(values.max()) + 1


def _symlog_rank_axis(ax, curves, upper):
    """Symmetric-log bound axis (linear on [0, 1]) with ticks 0, 1, 2, 4, 8, ..."""
    from matplotlib.ticker import FixedLocator, NullFormatter, StrMethodFormatter

    top = max(
        [float(np.nanmax(c["bound"])) for c in curves.values() if len(c["bound"])]
        + [float(upper or 1)]
    )
    ax.set_yscale("symlog", linthresh=1, base=2, linscale=0.5)
    ticks = [0.0, 1.0]
    while ticks[-1] < top:
        ticks.append(2 * ticks[-1])
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_major_formatter(StrMethodFormatter("{x:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_ylim(-0.2, top * 1.3 + 0.5)


def _unique(name, *taken):
    """``name``, or ``name (2)``, ... if already a key of one of ``taken``."""
    out, i = name, 1
    while any(out in t for t in taken):
        i += 1
        out = f"{name} ({i})"
    return out
