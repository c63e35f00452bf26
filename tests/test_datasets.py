import hashlib
import os

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from sklearn_rrank import certify_rounding
from sklearn_rrank.datasets import (
    load_abstracts,
    load_apj,
    load_binary_matrix,
    load_paleo,
    make_rounding_rank_matrix,
)


@pytest.mark.parametrize(
    "loader, shape, name",
    [
        (load_paleo, (124, 139), "paleo"),
        (load_apj, (2044, 1164), "apj"),
        (load_abstracts, (12841, 4894), "abstracts"),
    ],
)
def test_bundled_data_sets(loader, shape, name):
    # the packaged copy itself: checksum, shape, number of ones, binary
    from importlib import resources

    from sklearn_rrank.datasets._base import _CHECKSUMS

    digest, n_ones = _CHECKSUMS[name]
    raw = resources.files("sklearn_rrank.datasets").joinpath(f"data/{name}.npz")
    assert hashlib.sha256(raw.read_bytes()).hexdigest() == digest
    b = loader(sparse=True)
    assert b.data.shape == shape and sp.issparse(b.data)
    assert b.data.nnz == n_ones and set(np.unique(b.data.data)) == {1}
    assert "Licence" in b.DESCR and b.licence and b.source
    assert tuple(b.paper["shape"]) == shape
    if name != "abstracts":  # the real rank of the paper's table (a full SVD)
        assert np.linalg.matrix_rank(b.data.toarray()) == b.paper["rank"]


def test_fimi_trailing_blank_lines_and_directories(tmp_path):
    (tmp_path / "t.fimi").write_text("0 2\n1\n\n\n")
    (tmp_path / "m.fimi").write_text("0 2\n\n1\n")
    assert load_binary_matrix(tmp_path / "t.fimi").shape == (2, 3)
    assert load_binary_matrix(tmp_path / "m.fimi").shape == (3, 3)  # an empty row
    with pytest.raises(ValueError, match="directory"):
        load_binary_matrix(tmp_path)


def test_huge_implied_size_is_refused_before_densifying(tmp_path):
    (tmp_path / "big.fimi").write_text("0 1000000000")
    with pytest.raises(ValueError, match="sparse=True"):
        load_binary_matrix(tmp_path / "big.fimi")
    X = load_binary_matrix(tmp_path / "big.fimi", sparse=True)
    assert X.shape == (1, 1000000001) and X.nnz == 2


def test_dense_load_and_paper_values():
    b = load_paleo()
    assert b.data.dtype == np.uint8 and b.data.shape == (124, 139)
    assert b.paper["rank_upper_bounds"] == {"projlp": 26, "lpca": 13, "rsvd": 68}
    assert b.paper["relative_error"]["rsvd"][10] == 0.516


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
    with pytest.raises(ValueError, match="not binary"):
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


def test_data_dir_is_packaged():
    import sklearn_rrank.datasets as d

    data_dir = os.path.join(os.path.dirname(d.__file__), "data")
    assert sorted(os.listdir(data_dir)) == ["abstracts.npz", "apj.npz", "paleo.npz"]
