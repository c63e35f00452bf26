"""The matplotlib Displays of sklearn_rrank.plotting, on the Agg backend."""

import subprocess
import sys
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg", force=True)
import matplotlib.pyplot as plt  # noqa: E402
from sklearn.exceptions import ConvergenceWarning, NotFittedError  # noqa: E402

from sklearn_rrank import (  # noqa: E402
    NestedApprox,
    RoundingRankCV,
    RoundingRankFactorization,
    is_nested,
    nodf,
    rounding_rank_bounds,
)
from sklearn_rrank.datasets import (  # noqa: E402
    make_nested_matrix,
    make_rounding_rank_matrix,
)
from sklearn_rrank.plotting import (  # noqa: E402
    FactorizationDisplay,
    NestednessDisplay,
    RankSearchDisplay,
)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def X():
    return make_rounding_rank_matrix(30, 20, 3, random_state=0)


@pytest.fixture(scope="module")
def bounds(X):
    return rounding_rank_bounds(X, methods=("spectral", "vc", "rsvd"), random_state=0)


def fake_bounds(report, lower=2, upper=5, seconds=3.0):
    return SimpleNamespace(lower=lower, upper=upper, seconds=seconds, report=report)


# -- import and matplotlib -------------------------------------------------------------
def test_import_does_not_import_matplotlib():
    code = (
        "import sys, sklearn_rrank, sklearn_rrank.plotting; "
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_all_sorted():
    import sklearn_rrank.plotting as plotting

    assert plotting.__all__ == sorted(plotting.__all__)
    assert set(plotting.__all__) == {
        "FactorizationDisplay",
        "NestednessDisplay",
        "RankSearchDisplay",
        "method_color",
    }


@pytest.mark.parametrize(
    "draw",
    [
        lambda: RankSearchDisplay(errors={"e": ([1, 2], [3, 0])}).plot(),
        lambda: NestednessDisplay(np.eye(2), np.eye(2)).plot(),
        lambda: FactorizationDisplay(np.eye(2), np.eye(2)).plot(),
    ],
    ids=["rank_search", "nestedness", "factorization"],
)
def test_missing_matplotlib_names_the_extra(monkeypatch, draw):
    for name in list(sys.modules):
        if name == "matplotlib" or name.startswith("matplotlib."):
            monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=r'pip install "sklearn_rrank\[plot\]"'):
        draw()


# -- RankSearchDisplay -----------------------------------------------------------------
def test_rank_search_from_bounds(bounds):
    disp = RankSearchDisplay.from_bounds(bounds)
    assert len(disp.axes_) == 2  # rsvd reports errors_by_k
    assert disp.ax_ is disp.axes_[0] and disp.figure_ is disp.ax_.figure
    assert set(disp.lines_) == {"spectral", "vc", "rsvd"}
    for row in bounds.report:
        line = disp.lines_[row["method"]]
        curve = np.asarray(row["curve"], dtype=float).reshape(-1, 2)
        x, y = line.get_xdata(), line.get_ydata()
        # the curve's points, then held up to the end of the call
        np.testing.assert_allclose(x[: len(curve)], curve[:, 0])
        np.testing.assert_allclose(y[: len(curve)], curve[:, 1])
        assert y[-1] == row["bound"]
    by_k = next(r["errors_by_k"] for r in bounds.report if r["method"] == "rsvd")
    line = disp.error_lines_["rsvd"]
    np.testing.assert_array_equal(line.get_xdata(), sorted(by_k))
    np.testing.assert_array_equal(line.get_ydata(), [by_k[k] for k in sorted(by_k)])
    assert len(disp.interval_) == 2
    anytime, errors = disp.axes_
    assert anytime.get_xlabel() and anytime.get_ylabel()
    assert errors.get_xlabel() == "rank k" and errors.get_ylabel()
    # the shaded intervals span [lower - 1/2, upper + 1/2] on the rank axes
    for span, ax, dim in zip(disp.interval_, disp.axes_, (1, 0), strict=True):
        box = span.get_window_extent().transformed(ax.transData.inverted())
        lo, hi = sorted(box.get_points()[:, dim])
        assert (lo, hi) == pytest.approx((bounds.lower - 0.5, bounds.upper + 0.5))


def test_rank_search_old_report_without_curves():
    report = [
        {"method": "spectral", "kind": "lower", "bound": 2, "seconds": 0.1},
        {"method": "rsvd", "kind": "upper", "bound": 5, "seconds": 0.4, "curve": []},
        {"method": "lpca", "kind": "upper", "bound": None, "seconds": 1.0},
    ]
    disp = RankSearchDisplay.from_bounds(fake_bounds(report))
    assert len(disp.axes_) == 1 and set(disp.lines_) == {"spectral", "rsvd"}
    np.testing.assert_allclose(disp.lines_["rsvd"].get_xdata(), [0.4, 3.0])
    np.testing.assert_allclose(disp.lines_["rsvd"].get_ydata(), [5, 5])
    assert disp.error_lines_ == {} and disp.line_ is None


def test_rank_search_duplicate_methods_and_curve_steps():
    report = [
        {"method": "lpca", "kind": "upper", "bound": 4, "curve": [[1, 9], [2, 4]]},
        {"method": "lpca", "kind": "upper", "bound": 3, "curve": [[2.5, 3]]},
    ]
    disp = RankSearchDisplay.from_bounds(fake_bounds(report, upper=3))
    assert list(disp.lines_) == ["lpca", "lpca (2)"]
    np.testing.assert_allclose(disp.lines_["lpca"].get_ydata(), [9, 4, 4])
    assert disp.lines_["lpca"].get_drawstyle() == "steps-post"


def test_rank_search_same_result_on_given_axes(bounds):
    disp = RankSearchDisplay.from_bounds(bounds)
    fig, axes = plt.subplots(1, 2)
    disp2 = RankSearchDisplay.from_bounds(bounds, ax=axes)
    assert disp2.figure_ is fig and list(disp2.axes_) == list(axes)
    for name, line in disp.lines_.items():
        np.testing.assert_array_equal(
            line.get_xydata(), disp2.lines_[name].get_xydata()
        )
    assert [a.get_title() for a in disp.axes_] == [a.get_title() for a in axes]
    # one panel on one Axes
    _, ax = plt.subplots()
    disp3 = RankSearchDisplay.from_bounds(bounds, ax=ax, panels=["errors"])
    assert disp3.ax_ is ax and disp3.lines_ == {} and "rsvd" in disp3.error_lines_
    with pytest.raises(ValueError, match="2 matplotlib Axes"):
        disp.plot(ax=ax)
    with pytest.raises(ValueError, match="panels"):
        disp.plot(panels=["nope"])


def test_rank_search_from_estimator_exact(X):
    cv = RoundingRankCV(RoundingRankFactorization(method="rsvd"), mode="exact").fit(X)
    disp = RankSearchDisplay.from_estimator(cv)
    res = cv.cv_results_
    np.testing.assert_array_equal(disp.line_.get_xdata(), res["param_n_components"])
    np.testing.assert_array_equal(disp.line_.get_ydata(), res["mean_test_error"])
    assert disp.ax_.get_xlabel() == "rank k"
    assert disp.ax_.get_ylabel() == "wrong entries"
    labels = disp.ax_.get_legend_handles_labels()[1]
    assert f"certified k = {cv.n_components_}" in labels
    _, ax = plt.subplots()
    disp2 = RankSearchDisplay.from_estimator(cv, ax=ax)
    assert disp2.ax_ is ax and disp2.figure_ is ax.figure
    np.testing.assert_array_equal(disp2.line_.get_xydata(), disp.line_.get_xydata())


def test_rank_search_from_estimator_holdout(X):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cv = RoundingRankCV(
            RoundingRankFactorization(method="lpca", max_iter=30),
            mode="holdout",
            n_components=3,
            cv=2,
            random_state=0,
        ).fit(X)
    disp = RankSearchDisplay.from_estimator(cv)
    np.testing.assert_allclose(
        disp.line_.get_ydata(), cv.cv_results_["mean_test_error"]
    )
    assert "held-out" in disp.ax_.get_ylabel()
    assert f"chosen k = {cv.n_components_}" in disp.ax_.get_legend_handles_labels()[1]


def test_rank_search_not_fitted():
    with pytest.raises(NotFittedError):
        RankSearchDisplay.from_estimator(RoundingRankCV(mode="exact"))


# -- NestednessDisplay -----------------------------------------------------------------
@pytest.fixture(scope="module")
def nested_data():
    X = make_nested_matrix(25, 18, density=0.4, noise=0.2, random_state=0)
    return X, NestedApprox().fit(X)


def test_nestedness_display(nested_data):
    X, est = nested_data
    disp = NestednessDisplay.from_estimator(est, X)
    X = X.astype(np.int64)
    N = est.inverse_transform(est.transform(X)).astype(np.int64)
    data, nested, flips = (im.get_array() for im in disp.images_)
    # rows and columns by decreasing sums of N, ties by decreasing sums of X
    rows = np.lexsort((-X.sum(axis=1), -N.sum(axis=1)))
    cols = np.lexsort((-X.sum(axis=0), -N.sum(axis=0)))
    np.testing.assert_array_equal(data, X[rows][:, cols])
    np.testing.assert_array_equal(nested, N[rows][:, cols])
    assert is_nested(np.asarray(nested, dtype=np.uint8))
    staircase = np.asarray(nested)
    assert np.all(np.diff(staircase, axis=1) <= 0)  # ones come first in every row
    assert np.all(np.diff(staircase, axis=0) <= 0)
    # the flips panel marks exactly the differing entries
    white = np.all(np.asarray(flips) == 1.0, axis=-1)
    assert int((~white).sum()) == int((X != N).sum())
    assert disp.n_removed_ + disp.n_added_ == int((X != N).sum())
    assert f"{nodf(X).nodf:.1f}" in disp.axes_[0].get_title()
    assert f"{nodf(N).nodf:.1f}" in disp.axes_[1].get_title()
    assert disp.ax_.get_ylabel() and all(a.get_xlabel() for a in disp.axes_)


def test_nestedness_same_result_on_given_axes(nested_data):
    X, est = nested_data
    disp = NestednessDisplay.from_estimator(est, X)
    fig, axes = plt.subplots(1, 3)
    disp2 = NestednessDisplay.from_estimator(est, X, ax=axes)
    assert disp2.figure_ is fig and disp2.ax_ is axes[0]
    for a, b in zip(disp.images_, disp2.images_, strict=True):
        np.testing.assert_array_equal(a.get_array(), b.get_array())
    with pytest.raises(ValueError, match="3 matplotlib Axes"):
        disp.plot(ax=axes[0])


# -- FactorizationDisplay --------------------------------------------------------------
def test_factorization_display(X):
    est = RoundingRankFactorization(2, method="rsvd").fit(X)
    disp = FactorizationDisplay.from_estimator(est, X)
    Xhat = est.inverse_transform(est.transform(X))
    data, rec, wrong = (np.asarray(im.get_array()) for im in disp.images_)
    np.testing.assert_array_equal(data, X)
    np.testing.assert_array_equal(rec, Xhat)
    fn = (X == 1) & (Xhat == 0)
    fp = (X == 0) & (Xhat == 1)
    assert fn.any() and fp.any()
    # two different colours, white elsewhere
    np.testing.assert_allclose(wrong[fn], np.tile(wrong[fn][0], (fn.sum(), 1)))
    np.testing.assert_allclose(wrong[fp], np.tile(wrong[fp][0], (fp.sum(), 1)))
    assert not np.allclose(wrong[fn][0], wrong[fp][0])
    np.testing.assert_array_equal(wrong[~(fn | fp)], 1.0)
    assert disp.n_false_negatives_ == fn.sum() and disp.n_false_positives_ == fp.sum()
    assert disp.n_false_negatives_ + disp.n_false_positives_ == est.reconstruction_err_
    assert disp.ax_.get_ylabel() == "rows"
    assert all(a.get_xlabel() == "columns" and a.get_title() for a in disp.axes_)
    fig, axes = plt.subplots(1, 3)
    disp2 = FactorizationDisplay.from_estimator(est, X, ax=axes)
    assert disp2.figure_ is fig and list(disp2.axes_) == list(axes)
    np.testing.assert_array_equal(disp2.im_.get_array(), X)


def test_factorization_missing_entries_not_counted():
    X = np.array([[1.0, 0.0], [np.nan, 1.0]])
    Xhat = np.array([[0.0, 1.0], [1.0, 1.0]])
    disp = FactorizationDisplay(X, Xhat).plot()
    assert (disp.n_false_negatives_, disp.n_false_positives_) == (1, 1)
    with pytest.raises(ValueError, match="same shape"):
        FactorizationDisplay(X, Xhat[:1]).plot()


# -- shared colours, bound axis, zoom, sparse markers -------------------------------
def test_method_colors_shared_by_every_display_and_panel(X, bounds):
    from matplotlib.colors import to_rgb

    from sklearn_rrank.plotting import method_color

    disp = RankSearchDisplay.from_bounds(bounds)
    for name, line in disp.lines_.items():
        assert to_rgb(line.get_color()) == to_rgb(method_color(name))
    for name, line in disp.error_lines_.items():
        assert to_rgb(line.get_color()) == to_rgb(disp.lines_[name].get_color())
    # every method has its own colour; a repeated name keeps its method's colour
    names = ["trivial", "rank_one", "spectral", "vc", "rsvd", "lpca", "projlp"]
    names += ["nuclear", "permutation", "asso"]
    assert len({to_rgb(method_color(n)) for n in names}) == len(names)
    assert method_color("lpca (2)") == method_color("lpca")
    assert method_color("L-PCA") == method_color("lpca")
    assert method_color("R-SVD") == method_color("rsvd")
    assert method_color("ProjLP") == method_color("projlp")
    assert method_color("someone else's") == method_color("someone else's")
    known = {to_rgb(method_color(n)) for n in names}
    others = {to_rgb(method_color(f"method {i}")) for i in range(50)}
    assert len(others) > 1 and not others & known
    # the reconstruction of a factorization has the colour of its method's curves
    est = RoundingRankFactorization(2, method="rsvd").fit(X)
    fact = FactorizationDisplay.from_estimator(est, X)
    rec = fact.images_[1]
    assert rec.cmap(1.0)[:3] == pytest.approx(to_rgb(method_color("rsvd")))
    assert rec.cmap(0.0)[:3] == pytest.approx((1.0, 1.0, 1.0))
    cv = RoundingRankCV(RoundingRankFactorization(method="rsvd"), mode="exact").fit(X)
    line = RankSearchDisplay.from_estimator(cv).line_
    assert to_rgb(line.get_color()) == to_rgb(method_color("rsvd"))
    nested = NestedApprox().fit(X)
    nd = NestednessDisplay.from_estimator(nested, X)
    assert nd.images_[1].cmap(1.0)[:3] == pytest.approx(
        to_rgb(method_color(nested.method))
    )


def test_anytime_bound_axis_is_symlog_by_default():
    report = [
        {"method": "trivial", "kind": "upper", "bound": 300, "curve": [[0.1, 300]]},
        {"method": "vc", "kind": "lower", "bound": 3, "curve": [[0.2, 3]]},
        {"method": "lpca", "kind": "upper", "bound": 6, "curve": [[1, 9], [2, 6]]},
    ]
    disp = RankSearchDisplay.from_bounds(fake_bounds(report, lower=3, upper=6))
    anytime = disp.axes_[0]
    assert anytime.get_yscale() == "symlog"
    ticks = [t for t in anytime.get_yticks() if anytime.get_ylim()[0] <= t]
    assert ticks[:5] == [0, 1, 2, 4, 8] and ticks[-1] >= 256
    assert anytime.get_ylim()[1] > 300  # the highest bound stays inside
    labels = [t.get_text() for t in anytime.get_yticklabels()]
    assert "256" in labels  # plain numbers, not powers of 2
    linear = RankSearchDisplay.from_bounds(
        fake_bounds(report, lower=3, upper=6), bound_scale="linear"
    )
    assert linear.axes_[0].get_yscale() == "linear"
    with pytest.raises(ValueError, match="bound_scale"):
        disp.plot(bound_scale="log10")


def test_errors_panel_zooms_to_the_ranks_that_matter():
    k = np.arange(0, 101)
    report = [
        {
            "method": "rsvd",
            "kind": "upper",
            "bound": 80,
            "curve": [[0.1, 80]],
            "errors_by_k": {int(i): int(1000 - 10 * i) for i in k},
        },
        {
            "method": "lpca",
            "kind": "upper",
            "bound": 6,
            "curve": [[1, 6]],
            "errors_by_k": {4: 300, 5: 100, 7: 0, 6: 0},
        },
    ]
    bounds = fake_bounds(report, lower=3, upper=6)
    errors = RankSearchDisplay.from_bounds(bounds, panels=["errors"]).ax_
    lo, hi = errors.get_xlim()
    assert lo <= 2 and 8 <= hi <= 13  # the interval [3, 6] and lpca's 4..7
    # the error axis fits the ranks shown, not rsvd's error at k = 100
    assert errors.get_ylim()[1] == pytest.approx(1.05 * 1000)
    full = RankSearchDisplay.from_bounds(bounds, panels=["errors"], k_range="full")
    assert full.ax_.get_xlim()[1] >= 100
    given = RankSearchDisplay.from_bounds(bounds, panels=["errors"], k_range=(2, 20))
    assert given.ax_.get_xlim() == (2, 20)
    with pytest.raises(ValueError, match="k_range"):
        given.plot(k_range="all")


def test_titles_name_the_data_and_tau(X, bounds):
    disp = RankSearchDisplay.from_bounds(bounds, name="toy")
    assert all(a.get_title().startswith("toy, tau = 0.5: ") for a in disp.axes_)
    est = RoundingRankFactorization(2, method="rsvd", tau=0.25).fit(X)
    fact = FactorizationDisplay.from_estimator(est, X, data_name="toy")
    assert fact.figure_._suptitle.get_text() == "toy: rsvd, k = 2, tau = 0.25"


def test_sparse_matrices_drawn_with_markers():
    rng = np.random.default_rng(0)
    X = (rng.random((600, 400)) < 0.002).astype(np.float64)
    Xhat = X.copy()
    Xhat[np.nonzero(X)[0][:3], np.nonzero(X)[1][:3]] = 0  # three false negatives
    disp = FactorizationDisplay(X, Xhat, method="lpca").plot()
    data_markers = disp.axes_[0].get_lines()
    assert len(data_markers) == 1
    np.testing.assert_array_equal(
        np.sort(data_markers[0].get_ydata()), np.sort(np.nonzero(X)[0])
    )
    assert data_markers[0].get_markersize() >= 1.0
    wrong = disp.axes_[2].get_lines()
    assert len(wrong) == 1 and len(wrong[0].get_xdata()) == 3
    np.testing.assert_array_equal(disp.im_.get_array(), X)  # the image stays
    # small or dense matrices: the image alone
    small = FactorizationDisplay(X[:20, :20], Xhat[:20, :20]).plot()
    assert small.axes_[0].get_lines() == []
