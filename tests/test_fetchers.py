"""The fetchers of the paper's data sets, against a local server and data home.

Every test writes its own small matrices in the source files' formats, serves
them from a local HTTP server on 127.0.0.1 and caches them in a temporary data
home; no test uses the outside network or files beside the repository.
"""

import dataclasses
import http.server
import os
import re
import threading

import numpy as np
import pytest
import scipy.sparse as sp
from _family import _PARSERS, _REMOTE, matrix_sha256, rrank

from sklearn_rrank.datasets import (
    fetch_abstracts,
    fetch_apj,
    fetch_paleo,
    get_data_home,
)

FETCHERS = {"paleo": fetch_paleo, "apj": fetch_apj, "abstracts": fetch_abstracts}


def _small_matrix(name):
    rng = np.random.default_rng(len(name))
    X = (rng.random((7, 5)) < 0.4).astype(np.uint8)
    X[:, 0] = X[0] = 1  # every row and column holds a one
    X[0, 1] = 0
    if name == "abstracts":
        X[3] = 0  # an empty row inside the file, as in the source
    return X


def _source_text(X, parser):
    """``X`` written in the source file's format (the inverse of the parser)."""
    if parser == "dense_text":  # header, rows of 0/1, a '*' marker on some rows
        lines = [f"{X.shape[0]} {X.shape[1]}"]
        lines += [
            " ".join(map(str, row)) + (" * " if i % 3 == 0 else " ")
            for i, row in enumerate(X)
        ]
    elif parser == "pairs":  # 1-based 'row column' pairs, column by column
        lines = [
            f"{i + 1:9d} {j + 1:10d}"
            for j in range(X.shape[1])
            for i in np.flatnonzero(X[:, j])
        ]
    else:  # fimi: 0-based column ids, one row a line
        lines = [" ".join(map(str, np.flatnonzero(row))) for row in X]
    return ("\n".join(lines) + "\n").encode()


class _Server:
    """A local HTTP server of ``files`` (URL path -> bytes); ``cut`` paths are
    sent with a Content-Length larger than what is sent."""

    def __init__(self):
        self.files, self.cut, self.requests = {}, set(), []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests.append(self.path)
                body = server.files.get(self.path)
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                extra = 1000 if self.path in server.cut else 0
                self.send_header("Content-Length", str(len(body) + extra))
                self.end_headers()
                self.wfile.write(body[: len(body) // 2] if extra else body)
                if extra:
                    self.close_connection = True

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, args=(0.05,), daemon=True
        )
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(monkeypatch):
    """The local server, set as the fetchers' base URL (no proxy in the way)."""
    for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    srv = _Server()
    monkeypatch.setenv("SKLEARN_RRANK_DATA_URL", srv.url)
    yield srv
    srv.close()


@pytest.fixture
def no_mirror(monkeypatch):
    monkeypatch.delenv("SKLEARN_RRANK_DATA_URL", raising=False)


def test_the_data_url_is_github_unless_a_mirror_is_set(
    tmp_path, monkeypatch, no_mirror
):
    path = _REMOTE["paleo"].url_path
    github = f"https://raw.githubusercontent.com/{path}"
    assert github in fetch_paleo.__doc__  # the docs show the default
    assert "SKLEARN_RRANK_DATA_URL" in fetch_paleo.__doc__
    for mirror in ("http://mirror.example/data", "http://mirror.example/data/"):
        monkeypatch.setenv("SKLEARN_RRANK_DATA_URL", mirror)
        # download_if_missing=False names the address it would download from
        url = f"http://mirror.example/data/{path}"
        with pytest.raises(OSError, match=re.escape(f"(source: {url})")):
            fetch_paleo(data_home=tmp_path, download_if_missing=False)
    monkeypatch.setenv("SKLEARN_RRANK_DATA_URL", "")  # empty: not set
    with pytest.raises(OSError, match=re.escape(f"(source: {github})")):
        fetch_paleo(data_home=tmp_path, download_if_missing=False)


@pytest.fixture
def small(monkeypatch):
    """Each data set's manifest entry switched to a small matrix; name -> matrix."""
    out = {}
    for name, remote in _REMOTE.items():
        X = _small_matrix(name)
        small_remote = dataclasses.replace(
            remote, shape=X.shape, n_ones=int(X.sum()), sha256=matrix_sha256(X)
        )
        monkeypatch.setitem(_REMOTE, name, small_remote)
        out[name] = X
    return out


@pytest.fixture
def home(tmp_path, monkeypatch):
    """An empty temporary data home, also the default one (no ~ touched)."""
    path = tmp_path / "data_home"
    monkeypatch.setenv("SKLEARN_RRANK_DATA", str(path))
    return path


def _serve(server, name, text):
    server.files["/" + _REMOTE[name].url_path] = text


@pytest.mark.parametrize("name", list(FETCHERS))
def test_parsers_invert_the_source_formats(name, tmp_path):
    remote = _REMOTE[name]
    X = _small_matrix(name)
    path = tmp_path / "source"
    path.write_bytes(_source_text(X, remote.parser))
    assert np.array_equal(_PARSERS[remote.parser](str(path), X.shape), X)


@pytest.mark.parametrize("name", list(FETCHERS))
def test_download_parse_verify_and_cache(name, server, small, home):
    X = small[name]
    _serve(server, name, _source_text(X, _REMOTE[name].parser))
    bunch = FETCHERS[name](data_home=home)
    assert bunch.data.dtype == np.uint8 and np.array_equal(bunch.data, X)
    assert bunch.url == server.url + "/" + _REMOTE[name].url_path
    assert bunch.filename == str(home / _REMOTE[name].filename)
    assert bunch.url in bunch.DESCR and bunch.licence in bunch.DESCR
    # only the verified matrix lands in the cache (key X), no partial file
    assert sorted(os.listdir(home)) == [_REMOTE[name].filename]
    with np.load(home / _REMOTE[name].filename) as z:
        assert np.array_equal(z["X"], X)
    # the second call reads the cache, with no request
    n_requests = len(server.requests)
    S = FETCHERS[name](sparse=True).data  # the default data home: the env variable
    assert sp.issparse(S) and np.array_equal(S.toarray(), X)
    assert len(server.requests) == n_requests


def test_the_descriptions_credit_the_sources():
    assert "Puolamaki" in fetch_paleo.__doc__ and "CC BY 2.5" in fetch_paleo.__doc__
    remote = _REMOTE["paleo"]
    for who in ("Puolamaki", "Fortelius", "Mannila", "CC BY 2.5"):
        assert who in remote.licence
    for who in ("HP Labs", "Ene", "SACMAT 2008"):
        assert who in _REMOTE["apj"].source
    assert "HP Labs" in _REMOTE["apj"].licence
    assert "UCI" in _REMOTE["abstracts"].licence


def test_checksum_mismatch_leaves_nothing_in_the_cache(server, small, home):
    other = small["paleo"].copy()
    other[0, 1] = 1  # one entry differs
    _serve(server, "paleo", _source_text(other, "dense_text"))
    with pytest.raises(OSError, match="SHA-256"):
        fetch_paleo(data_home=home)
    assert os.listdir(home) == []


def test_missing_file_names_the_url_the_file_and_the_folder(server, small, home):
    with pytest.raises(OSError) as info:
        fetch_apj(data_home=home)
    msg = str(info.value)
    assert "404" in msg and server.url + "/" + _REMOTE["apj"].url_path in msg
    assert "apj.npz" in msg and str(home) in msg and "\n" not in msg
    assert os.listdir(home) == []


def test_interrupted_download_leaves_no_partial_file(server, small, home):
    _serve(server, "abstracts", _source_text(small["abstracts"], "fimi"))
    server.cut.add("/" + _REMOTE["abstracts"].url_path)
    with pytest.raises(OSError, match="could not be downloaded"):
        fetch_abstracts(data_home=home)
    assert os.listdir(home) == []


def test_no_download_when_not_allowed(server, small, home):
    _serve(server, "paleo", _source_text(small["paleo"], "dense_text"))
    with pytest.raises(OSError, match="download_if_missing=False"):
        fetch_paleo(data_home=home, download_if_missing=False)
    assert server.requests == [] and not home.exists()


def test_a_file_placed_by_hand_is_read_and_verified(small, home, monkeypatch):
    # the file names of the shared data folder: data_home may point at it
    monkeypatch.setenv("SKLEARN_RRANK_DATA_URL", "http://127.0.0.1:9")
    home.mkdir()
    np.savez(home / "abstracts_nsf.npz", X=small["abstracts"].astype(bool))
    b = fetch_abstracts(data_home=home, download_if_missing=False)
    assert b.data.dtype == np.uint8 and np.array_equal(b.data, small["abstracts"])
    np.savez(home / "paleo.npz", X=small["paleo"][:, ::-1])
    with pytest.raises(OSError, match="SHA-256.*delete it"):
        fetch_paleo(data_home=home)
    np.savez(home / "apj.npz", Y=small["apj"])
    with pytest.raises(OSError, match="key 'X'"):
        fetch_apj(data_home=home)


@pytest.mark.parametrize("name", list(FETCHERS))
def test_return_x_y_gives_the_matrix_and_no_target(name, small, home, monkeypatch):
    # scikit-learn's convention (data, target); these data sets have no target
    monkeypatch.setenv("SKLEARN_RRANK_DATA_URL", "http://127.0.0.1:9")
    home.mkdir()
    np.savez(home / _REMOTE[name].filename, X=small[name])
    X, y = FETCHERS[name](data_home=home, return_X_y=True)
    assert y is None and np.array_equal(X, small[name])
    X, y = FETCHERS[name](data_home=home, return_X_y=True, sparse=True)
    assert sp.issparse(X) and np.array_equal(X.toarray(), small[name])
    assert FETCHERS[name](data_home=home).target is None


def test_get_data_home(tmp_path, monkeypatch):
    monkeypatch.setenv("SKLEARN_RRANK_DATA", str(tmp_path / "env"))
    assert get_data_home() == str(tmp_path / "env") and (tmp_path / "env").is_dir()
    assert get_data_home(tmp_path / "given") == str(tmp_path / "given")
    monkeypatch.delenv("SKLEARN_RRANK_DATA")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert get_data_home() == str(tmp_path / "sklearn_rrank_data")


def test_cli_without_the_file_fails_with_one_line(small, home, monkeypatch, capsys):
    monkeypatch.setenv("SKLEARN_RRANK_DATA_URL", "http://127.0.0.1:9")
    assert rrank(["bounds", "paleo", "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "put paleo.npz" in err and str(home) in err


def test_cli_reads_the_data_home(small, home, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SKLEARN_RRANK_DATA_URL", "http://127.0.0.1:9")
    other = tmp_path / "other"
    other.mkdir()
    np.savez(other / "paleo.npz", X=small["paleo"])
    argv = ["bounds", "paleo", "--methods", "spectral,rsvd", "--json", "-q"]
    assert rrank([*argv, "--data-home", str(other)]) == 0
    assert '"n_samples": 7' in capsys.readouterr().out
    assert rrank(["datasets", "--data-home", str(other)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out] == ["digits", "paleo", "apj", "abstracts"]
    assert "built in" in out[0] and f"cached: {other / 'paleo.npz'}" in out[1]
    assert "not cached" in out[2]
    assert rrank(["datasets"]) == 0  # the default data home: the env variable
    assert str(home / "paleo.npz") in capsys.readouterr().out
