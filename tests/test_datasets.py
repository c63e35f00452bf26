import os

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from _family import (
    _PAPER,
    _REMOTE,
    _check_dense_size,
    available_memory,
    matrix_sha256,
)

from sklearn_rrank import certify_rounding, config_context
from sklearn_rrank.datasets import (
    load_binary_matrix,
    load_digits_binary,
    make_rounding_rank_matrix,
)


def test_digits_binary_is_scikit_learns_digits_thresholded():
    # built from the copy scikit-learn ships: no file of this package, no download
    from sklearn.datasets import load_digits

    b = load_digits_binary()
    X = b.data
    assert isinstance(X, np.ndarray) and X.dtype == np.uint8 and X.shape == (1797, 64)
    assert np.array_equal(X, load_digits().data >= 8)
    assert int(X.sum()) == 37151 and set(np.unique(X)) == {0, 1}
    # the same matrix as digits_bin8.npz of the project's shared data folder
    assert (
        matrix_sha256(X)
        == "b025f335f2114270d2840390f597eaad0f5a68376ea897add1ff2ea6c8955bd0"
    )
    assert np.linalg.matrix_rank(X.astype(np.float64)) == 54
    assert b.target.shape == (1797,) and b.name == "digits"
    assert "scikit-learn" in b.DESCR and b.licence and b.source
    S = load_digits_binary(sparse=True).data
    assert sp.issparse(S) and S.nnz == 37151


def test_digits_binary_follows_scikit_learns_loader_conventions():
    X, y = load_digits_binary(return_X_y=True)
    b = load_digits_binary()
    assert np.array_equal(X, b.data) and np.array_equal(y, b.target)
    assert b.feature_names[:2] == ["pixel_0_0", "pixel_0_1"]
    assert len(b.feature_names) == 64 and b.frame is None
    assert b.target_names.tolist() == list(range(10))
    f = load_digits_binary(as_frame=True)
    assert list(f.data.columns) == b.feature_names and f.target.name == "target"
    assert f.frame.shape == (1797, 65) and np.array_equal(f.data.to_numpy(), X)
    Xf, yf = load_digits_binary(as_frame=True, return_X_y=True)
    assert Xf.shape == (1797, 64) and yf.shape == (1797,)
    with pytest.raises(ValueError, match="as_frame=True and sparse=True"):
        load_digits_binary(as_frame=True, sparse=True)


def test_the_package_ships_no_data_files():
    import sklearn_rrank

    root = os.path.dirname(sklearn_rrank.__file__)
    shipped = [
        os.path.join(d, f)
        for d, _, files in os.walk(root)
        for f in files
        if f.endswith((".npz", ".npy", ".fimi", ".mtx", ".txt"))
    ]
    assert shipped == []


def test_manifest_of_the_fetched_data_sets():
    # the pinned sources and the matrices they must give, against the paper's table
    for name, remote in _REMOTE.items():
        assert remote.shape == _PAPER[name]["shape"]
        assert len(remote.sha256) == 64
        commit = remote.url_path.split("/")[2]
        assert len(commit) == 40 and all(c in "0123456789abcdef" for c in commit)
    assert _REMOTE["abstracts"].filename == "abstracts_nsf.npz"
    assert _PAPER["paleo"]["rank_upper_bounds"] == {
        "projlp": 26,
        "lpca": 13,
        "rsvd": 68,
    }
    assert _PAPER["paleo"]["relative_error"]["rsvd"][10] == 0.516


def test_fimi_trailing_blank_lines_and_directories(tmp_path):
    (tmp_path / "t.fimi").write_text("0 2\n1\n\n\n")
    (tmp_path / "s.fimi").write_text("0 2\n1\n  \n\t\n")  # whitespace-only lines
    (tmp_path / "m.fimi").write_text("0 2\n\n1\n")
    (tmp_path / "w.fimi").write_text("0 2\r\n1\r\n\r\n")  # Windows line ends
    (tmp_path / "lead.fimi").write_text("\n0 2\n")
    for f in ["t.fimi", "s.fimi", "w.fimi"]:
        np.testing.assert_array_equal(
            load_binary_matrix(tmp_path / f), [[1, 0, 1], [0, 1, 0]], err_msg=f
        )
    # a blank line inside the file is an empty row, also at the start
    np.testing.assert_array_equal(
        load_binary_matrix(tmp_path / "m.fimi"), [[1, 0, 1], [0, 0, 0], [0, 1, 0]]
    )
    assert load_binary_matrix(tmp_path / "lead.fimi").shape == (2, 3)
    with pytest.raises(ValueError, match="is a directory"):
        load_binary_matrix(tmp_path)
    with pytest.raises(ValueError, match="is a directory"):
        load_binary_matrix(str(tmp_path) + os.sep)


@pytest.fixture
def one_gib():
    """At most 1 GiB counts as available (the check is machine-independent)."""
    with config_context(memory_limit=2**30):
        yield


def test_huge_implied_size_is_refused_before_densifying(tmp_path, one_gib):
    (tmp_path / "big.fimi").write_text("0 1000000000")  # 13 bytes, 1 x 10^9
    with pytest.raises(ValueError) as exc:
        load_binary_matrix(tmp_path / "big.fimi")
    msg = str(exc.value)
    # refused from the ids alone, before any array of that shape: even sparse, the
    # float64 vectors per row and column would not fit
    assert "1 x 1000000001" in msg and "vectors per row and column" in msg
    # kept sparse it needs no dense array, but every method holds float64
    # vectors per row and column (factors, scores): 8 GB each, refused too
    with pytest.raises(ValueError, match="sparse 1 x 1000000001 matrix"):
        load_binary_matrix(tmp_path / "big.fimi", sparse=True)
    (tmp_path / "wide.fimi").write_text("0 1000000")  # 1 x 10^6 fits sparse
    X = load_binary_matrix(tmp_path / "wide.fimi", sparse=True)
    assert sp.issparse(X) and X.shape == (1, 1000001) and X.nnz == 2


def test_every_densifying_format_is_checked(tmp_path, one_gib):
    # sparse files whose shape implies 10^9 entries: refused dense, kept sparse
    big = sp.csr_matrix(([1.0], ([0], [10**9 - 1])), shape=(1, 10**9))
    sp.save_npz(tmp_path / "s.npz", big)
    scipy.io.mmwrite(tmp_path / "s.mtx", big.tocoo())
    for f in ["s.npz", "s.mtx"]:
        with pytest.raises(ValueError, match="1 x 1000000000"):
            load_binary_matrix(tmp_path / f)
        with pytest.raises(ValueError, match="vectors per row and column"):
            load_binary_matrix(tmp_path / f, sparse=True)
    # a compressed dense .npz inflates: refused from its header, before reading
    np.savez_compressed(tmp_path / "d.npz", X=np.zeros((20_000, 10_000), np.uint8))
    assert (tmp_path / "d.npz").stat().st_size < 2**20
    with pytest.raises(ValueError, match="20000 x 10000.*stores a dense matrix"):
        load_binary_matrix(tmp_path / "d.npz")
    # a .npy and a dense Matrix Market file: their headers tell the shape
    with open(tmp_path / "d.npy", "wb") as fh:
        np.lib.format.write_array_header_1_0(
            fh, {"descr": "|u1", "fortran_order": False, "shape": (40_000, 40_000)}
        )
    (tmp_path / "d.mtx").write_text(
        "%%MatrixMarket matrix array real general\n40000 40000\n1\n"
    )
    for f in ["d.npy", "d.mtx"]:
        with pytest.raises(ValueError, match="40000 x 40000"):
            load_binary_matrix(tmp_path / f)
        with pytest.raises(ValueError, match="40000 x 40000"):
            load_binary_matrix(tmp_path / f, sparse=True)  # read dense anyway
    # small files pass the check
    np.save(tmp_path / "ok.npy", np.eye(3, dtype=np.uint8))
    np.testing.assert_array_equal(load_binary_matrix(tmp_path / "ok.npy"), np.eye(3))


def test_available_memory_is_a_positive_number_or_unknown():
    avail = available_memory()
    assert avail is None or (isinstance(avail, int) and avail > 0)
    # a file that fits in what the machine has is refused under a smaller limit
    _check_dense_size((100, 100), "x.fimi")
    with config_context(memory_limit=10_000):
        with pytest.raises(ValueError, match="100 x 100"):
            _check_dense_size((100, 100), "x.fimi")


def test_load_binary_matrix_formats(tmp_path):
    X = np.array([[1, 0, 1], [0, 0, 1]], dtype=np.uint8)
    np.savez(tmp_path / "a.npz", X=X)
    np.save(tmp_path / "b.npy", X)
    sp.save_npz(tmp_path / "c.npz", sp.csr_matrix(X))
    scipy.io.mmwrite(tmp_path / "d.mtx", sp.coo_matrix(X))
    np.savetxt(tmp_path / "e.csv", X, fmt="%d", delimiter=",")
    np.savetxt(tmp_path / "f.tsv", X, fmt="%d", delimiter="\t")
    np.savetxt(tmp_path / "g.txt", X, fmt="%d")
    (tmp_path / "h.fimi").write_text("0 2\n2\n")
    for f in ["a.npz", "b.npy", "c.npz", "d.mtx", "e.csv", "f.tsv", "g.txt", "h.fimi"]:
        out = load_binary_matrix(tmp_path / f)
        np.testing.assert_array_equal(out, X, err_msg=f)
        assert sp.issparse(load_binary_matrix(tmp_path / f, sparse=True))


def test_load_binary_matrix_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_binary_matrix(tmp_path / "missing.npz")
    (tmp_path / "x.xlsx").write_text("")
    with pytest.raises(ValueError, match="unknown file ending"):
        load_binary_matrix(tmp_path / "x.xlsx")
    (tmp_path / "bad.csv").write_text("1,0\n1,a\n")
    with pytest.raises(ValueError, match="line 2"):
        load_binary_matrix(tmp_path / "bad.csv")
    (tmp_path / "ragged.csv").write_text("1,0\n1\n")
    with pytest.raises(ValueError, match="different lengths"):
        load_binary_matrix(tmp_path / "ragged.csv")
    (tmp_path / "two.csv").write_text("1,2\n0,1\n")
    with pytest.raises(ValueError, match="not a 0/1 matrix"):
        load_binary_matrix(tmp_path / "two.csv")
    (tmp_path / "bad.fimi").write_text("0 x\n")
    with pytest.raises(ValueError, match="not a column id"):
        load_binary_matrix(tmp_path / "bad.fimi")
    (tmp_path / "junk.npz").write_bytes(b"not a zip file")
    with pytest.raises(ValueError, match="could not be read"):
        load_binary_matrix(tmp_path / "junk.npz")


@pytest.mark.parametrize("distribution", ["uniform", "normal"])
def test_make_rounding_rank_matrix(distribution, global_random_seed):
    X, L, R, X0 = make_rounding_rank_matrix(
        50,
        30,
        4,
        distribution=distribution,
        noise=0.2,
        random_state=global_random_seed,
        return_factors=True,
    )
    assert X.shape == (50, 30) and L.shape == (50, 4) and R.shape == (30, 4)
    np.testing.assert_array_equal(X0, (L @ R.T >= 0.5).astype(np.uint8))
    assert int((X != X0).sum()) == round(0.2 * X0.sum())
    X2 = make_rounding_rank_matrix(
        50,
        30,
        4,
        distribution=distribution,
        noise=0.2,
        random_state=global_random_seed,
    )
    np.testing.assert_array_equal(X, X2)
    assert certify_rounding(X0, L, R) or np.any(np.isclose(L @ R.T, 0.5))


def test_make_rounding_rank_matrix_mean():
    # E[(L R^T)_ij] = mean, so about half the entries exceed 0.5 at mean 0.5
    X, L, R, _ = make_rounding_rank_matrix(
        400, 300, 10, mean=0.5, random_state=0, return_factors=True
    )
    assert abs((L @ R.T).mean() - 0.5) < 0.05


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"n_samples": 0}, "n_samples"),
        ({"n_components": 1.5}, "n_components"),
        ({"distribution": "cauchy"}, "distribution"),
        ({"mean": -1}, "mean"),
        ({"noise": -0.1}, "noise"),
        ({"noise": 1e6}, "flips"),
    ],
)
def test_make_rounding_rank_matrix_errors(kwargs, match):
    params = {"n_samples": 10, "n_features": 8, "n_components": 2, **kwargs}
    with pytest.raises(ValueError, match=match):
        make_rounding_rank_matrix(**params)
