import json
import os
import re
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import scipy.sparse as sp
from _family import (
    _REMOTE,
    _build_parser,
    _cli_warning,
    _load_data,
    matrix_sha256,
    modules,
)
from _family import rrank as main

from sklearn_rrank import certify_rounding, config_context


def test_bounds_json_digits(capsys, tmp_path, digits):
    out_file = tmp_path / "cert.npz"
    code = main(
        [
            "bounds",
            "digits",
            "--methods",
            "spectral,rsvd",
            "--json",
            "--output",
            str(out_file),
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["upper"] == 54 and out["upper_method"] == "rsvd"
    assert {"lower", "upper", "exact", "report", "real_rank"} <= set(out)
    assert out["n_samples"] == 1797 and out["real_rank"] == 54
    kinds = {r["method"]: r["kind"] for r in out["report"]}
    assert kinds == {"spectral": "lower", "rsvd": "upper"}
    saved = np.load(out_file)
    assert saved["L"].shape == (1797, 54)
    assert certify_rounding(digits, saved["L"], saved["R"], tau=float(saved["tau"]))


def test_bounds_table_and_progress(capsys):
    assert main(["bounds", "digits", "--methods", "spectral,rsvd"]) == 0
    captured = capsys.readouterr()
    assert "rounding rank in [" in captured.out and "54" in captured.out
    assert "rsvd" in captured.err  # progress on stderr


def test_json_stays_json_when_lps_run(tmp_path):
    # highspy prints a banner on standard output when a process builds its first
    # HiGHS instance; it must not reach the JSON (a fresh process: the first one)
    X = (np.random.default_rng(0).random((20, 12)) < 0.4).astype(float)
    np.save(tmp_path / "x.npy", X)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "sklearn_rrank",
            "factorize",
            str(tmp_path / "x.npy"),
            "-k",
            "2",
            "--method",
            "projlp",
            "--max-iter",
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["n_components"] == 2


def test_factorize(capsys):
    assert main(["factorize", "digits", "-k", "10", "--method", "rsvd", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert round(out["relative_error"], 3) == 0.171
    assert out["certified"] is False and out["n_components"] == 10
    assert main(["factorize", "digits", "-k", "5", "--method", "rsvd"]) == 0
    assert "0.314" in capsys.readouterr().out


def test_datasets_listing(capsys, digits):
    assert main(["datasets", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == ["digits", "paleo", "apj", "abstracts"]
    # the listing loads nothing: its shape and ones of digits are the built matrix's
    assert rows[0]["shape"] == list(digits.shape) and rows[0]["cached"] is None
    assert rows[0]["n_ones"] == int(digits.sum())


def test_errors_exit_2_one_line(capsys, tmp_path):
    assert main(["bounds", "no_such_data"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rrank: error:") and err.count("\n") == 1
    bad = tmp_path / "bad.csv"
    bad.write_text("1,0\n0,3\n")
    assert main(["bounds", str(bad)]) == 2
    assert "not a 0/1 matrix" in capsys.readouterr().err
    junk = tmp_path / "junk.npy"
    junk.write_bytes(b"garbage")
    assert main(["factorize", str(junk), "-k", "2", "--method", "rsvd"]) == 2
    assert "could not be read" in capsys.readouterr().err
    assert main(["factorize", "digits", "-k", "500", "--method", "rsvd"]) == 2
    assert "n_components" in capsys.readouterr().err


def test_bad_flag_is_usage_error():
    with pytest.raises(SystemExit) as exc:
        main(["factorize", "digits", "-k", "0"])
    assert exc.value.code == 2


def test_module_entry_point():
    proc = subprocess.run(
        [sys.executable, "-m", "sklearn_rrank", "bounds", "nope"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "rrank: error" in proc.stderr


def test_output_without_npz_prints_the_file_written(capsys, tmp_path, monkeypatch):
    # numpy's savez appends .npz: the path printed (and in JSON) is the real file
    monkeypatch.chdir(tmp_path)
    argv = ["factorize", "digits", "-k", "3", "--method", "rsvd", "-q"]
    assert main([*argv, "--output", "certfile"]) == 0
    out = capsys.readouterr().out
    assert "factors saved to   certfile.npz\n" in out
    assert (tmp_path / "certfile.npz").is_file()
    assert not (tmp_path / "certfile").exists()
    assert main([*argv, "--output", "other", "--json"]) == 0
    written = json.loads(capsys.readouterr().out)["output"]
    assert written == "other.npz" and (tmp_path / written).is_file()
    cmd = ["bounds", "digits", "--methods", "spectral,rsvd", "-q"]
    assert main([*cmd, "--output", "cert"]) == 0
    assert "certificate saved to cert.npz\n" in capsys.readouterr().out
    assert sorted(np.load(tmp_path / "cert.npz").files) == ["L", "R", "tau"]


def test_sparse_trivial_certificate_is_written_as_csr_arrays(capsys, tmp_path):
    # sparse data whose best certificate is the trivial one: the .npz holds the CSR
    # arrays of L and R (docs/cli.rst), never a dense m x n factor
    import scipy.sparse as sp

    rng = np.random.default_rng(3)
    X = (rng.random((300, 40)) < 0.03).astype(np.uint8)
    sp.save_npz(tmp_path / "x.npz", sp.csr_matrix(X))
    out_file = tmp_path / "cert.npz"
    argv = ["bounds", str(tmp_path / "x.npz"), "--methods", "spectral", "-q"]
    assert main([*argv, "--json", "--output", str(out_file)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["upper_method"] == "trivial" and out["upper"] == 40
    with np.load(out_file) as f:
        assert "L" not in f.files and "R" not in f.files
        L, R = (
            sp.csr_matrix(
                (f[f"{F}_data"], f[f"{F}_indices"], f[f"{F}_indptr"]),
                shape=tuple(f[f"{F}_shape"]),
            )
            for F in ("L", "R")
        )
        tau = float(f["tau"])
    assert L.shape == (300, 40) and R.shape == (40, 40) and L.nnz == X.sum()
    assert certify_rounding(X, L, R, tau=tau)
    np.testing.assert_array_equal(((L @ R.T).toarray() >= tau).astype(np.uint8), X)


def test_output_into_a_missing_directory_is_a_usage_error(capsys, tmp_path):
    # refused before any computation, not after it
    with pytest.raises(SystemExit) as exc:
        main(["bounds", "digits", "--output", str(tmp_path / "no" / "cert")])
    assert exc.value.code == 2
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize("command", [None, "bounds", "factorize", "nested"])
def test_help_shows_every_default(command, capsys):
    import argparse

    with pytest.raises(SystemExit) as exc:
        main(["--help"] if command is None else [command, "--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # undo argparse's wrapping
    if command is None:  # the top level names the main defaults of every command
        for default in [
            "--tau 0.5",
            "--methods rank_one,spectral,rsvd,vc,lpca,projlp",
            "--time-limit 60 (seconds; 'none': no limit)",
            "--method lpca",
            "--method mt+nnrr1",
        ]:
            assert default in text, default
        return
    sub = next(
        a for a in _build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    )
    for action in sub.choices[command]._actions:
        if not action.option_strings or action.default == argparse.SUPPRESS:
            continue  # positional data, --help, required -k
        default = action.default
        if isinstance(default, str):
            default = " ".join(default.split())
        assert f"(default: {default})" in text, action.dest


def test_factorize_convergence_warning_names_options(capsys):
    argv = ["factorize", "digits", "-k", "5", "--max-iter", "1", "-q"]
    for method in ["lpca", "projlp"]:
        assert main([*argv, "--method", method]) == 0
        err = capsys.readouterr().err
        (line,) = [w for w in err.splitlines() if w.startswith("warning:")]
        assert line.endswith("try a larger --max-iter (now 1)"), line
        for python_name in ["solver_info_", "max_iter", "method=", "raise tol"]:
            assert python_name not in line, (python_name, line)


def test_convergence_warning_text_in_cli_terms():
    import argparse

    from sklearn.exceptions import ConvergenceWarning

    args = argparse.Namespace(method="rsvd", max_iter=None)
    w = ConvergenceWarning(
        "method='rsvd' did not converge (see solver_info_); the factorization may "
        "be worse (check the input)."
    )
    text = _cli_warning(w, args)
    assert "solver_info_" not in text and "method=" not in text
    assert text.endswith("try another --method or another -k")
    args = argparse.Namespace(method="lpca", max_iter=None)
    assert _cli_warning(w, args).endswith("--max-iter (now the method's default)")
    assert _cli_warning(UserWarning("as is"), args) == "as is"


def test_data_errors_are_one_line_exit_2(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for spec in ["no_such_data", "missing.fimi", str(tmp_path)]:
        assert main(["factorize", spec, "-k", "2"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("rrank: error:") and err.count("\n") == 1, err
    assert "is a directory" in err
    # a 13-byte .fimi file implying 10^9 entries: refused before densifying, in
    # command-line terms (no sparse=True, which the command line cannot pass)
    (tmp_path / "big.fimi").write_text("0 1000000000")
    with config_context(memory_limit=2**30):  # the check is machine-independent
        assert main(["bounds", "big.fimi"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rrank: error: big.fimi: a sparse 1 x 1000000001 matrix")
    assert err.count("\n") == 1 and "sparse=True" not in err


def test_unexpected_errors_are_one_line_exit_1(capsys, tmp_path, monkeypatch):
    import scipy.sparse.linalg

    import sklearn_rrank

    def crash(*args, **kwargs):
        raise scipy.sparse.linalg.ArpackError(-9999)

    monkeypatch.setattr(sklearn_rrank, "rounding_rank_bounds", crash)
    monkeypatch.delenv("RRANK_DEBUG", raising=False)
    assert main(["bounds", "digits", "-q"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("rrank: internal error: ArpackError") and "RRANK_DEBUG" in err
    assert err.count("\n") == 1 and "Traceback" not in err
    monkeypatch.setenv("RRANK_DEBUG", "1")  # asks for the traceback
    with pytest.raises(scipy.sparse.linalg.ArpackError):
        main(["bounds", "digits", "-q"])


@pytest.mark.parametrize("methods", ["rsvd", "spectral,rsvd", "rank_one,rsvd,vc"])
def test_bounds_on_an_all_zero_file_prints_no_traceback(methods, tmp_path):
    path = tmp_path / "zeros.csv"
    path.write_text("0,0,0\n0,0,0\n0,0,0\n0,0,0\n")
    proc = subprocess.run(
        [sys.executable, "-m", "sklearn_rrank", "bounds", str(path)]
        + ["--methods", methods, "-q"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1, 2)
    if proc.returncode == 0:
        assert "rounding rank in [0, 0]" in proc.stdout


def test_factorize_time_limit(capsys):
    argv = ["factorize", "digits", "-k", "5", "-q", "--time-limit", "0"]
    assert main([*argv, "--method", "projlp"]) == 0
    err = capsys.readouterr().err
    (line,) = [w for w in err.splitlines() if w.startswith("warning:")]
    assert line.endswith("try a larger --time-limit (now 0 s)"), line
    assert "time_limit" not in line
    # one-shot methods: a usage error naming the option, not a Python parameter
    for option in (["--time-limit", "5"], ["--max-iter", "3"]):
        assert main([*argv[:5], *option, "--method", "rsvd"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"rrank: error: {option[0]} is not used by --method")
        assert err.count("\n") == 1


def test_plot_without_extension_reports_the_file_written(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path = tmp_path / "pic"
    assert (
        main(
            [
                "factorize",
                "digits",
                "-k",
                "3",
                "--method",
                "rsvd",
                "-q",
                "--plot",
                str(path),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert (tmp_path / "pic.png").exists()
    assert f"plot saved to      {path}.png" in out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_prints_the_bounds_and_saves_the_certificate(tmp_path, sig, digits):
    # the signal arrives while L-PCA runs, after R-SVD certified its bound: the
    # command stops quickly, prints the interval so far and saves its certificate
    import sklearn_rrank

    root = os.path.dirname(os.path.dirname(os.path.abspath(sklearn_rrank.__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")])
    out_file = tmp_path / "c.npz"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sklearn_rrank", "bounds", "digits"]
        + ["--methods", "rsvd,lpca", "--output", str(out_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        err = []
        for line in proc.stderr:  # progress lines (stderr is not a terminal)
            err.append(line)
            if line.startswith("rsvd") and "done" in line:
                break
        assert proc.poll() is None, "".join(err)
        sent = time.monotonic()
        proc.send_signal(sig)
        stdout, rest = proc.communicate(timeout=60)
        stopped = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, "".join(err) + rest
    assert stopped < 10  # about a second on an idle machine
    assert "rrank: interrupted" in rest and "Traceback" not in rest
    match = re.search(
        r"rounding rank in \[(\d+), (\d+)\]  \(interval, interrupted", stdout
    )
    assert match, stdout
    assert re.search(r"^lpca .*interrupted", stdout, flags=re.M), stdout
    X = digits
    upper = int(match.group(2))
    assert upper < min(X.shape)  # R-SVD's certificate, not the trivial one
    with np.load(out_file) as f:
        L, R, tau = f["L"], f["R"], float(f["tau"])
    assert L.shape[1] == upper
    np.testing.assert_array_equal((L @ R.T >= tau).astype(X.dtype), X)
    assert certify_rounding(X, L, R, tau=tau)


def test_highs_banner_never_reaches_the_user():
    # the first HiGHS instance of a process prints a banner; with --quiet the
    # command prints its result on stdout and nothing on stderr
    proc = subprocess.run(
        [sys.executable, "-m", "sklearn_rrank", "bounds", "digits"]
        + ["--methods", "projlp", "--quiet", "--time-limit", "5"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert "HiGHS" not in proc.stdout
    assert proc.stdout.startswith("data        digits")


@pytest.mark.parametrize(
    "command", [["bounds", "no_such_data"], ["factorize", "no_such_data", "-k", "2"]]
)
def test_plot_without_matplotlib_fails_before_any_work(
    command, capsys, tmp_path, monkeypatch
):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails
    # data that cannot be loaded: loading first would report them instead
    code = main([*command, "--plot", str(tmp_path / "p.png")])
    assert code == 2
    err = capsys.readouterr().err
    assert "--plot needs matplotlib" in err and "sklearn_rrank[plot]" in err
    assert len(err.strip().splitlines()) == 1


def test_real_rank_is_computed_within_the_budget(capsys, tmp_path):
    cli = modules.cli

    # a small matrix's SVD (124 x 139) is computed without a measurement
    assert cli._real_rank_plan(124, 139, 1.0) == (True, 0.0, "")
    # an SVD estimated beyond a tenth of the budget is not computed at all; one
    # that fits is computed after the methods, in the seconds kept back for it
    plan = cli._real_rank_plan(1797, 64, 5.0, svd_seconds=lambda m, n: 1000.0)
    assert plan == (False, 0.0, "not computed (an SVD of about 1000.0 s)")
    plan = cli._real_rank_plan(1797, 64, 5.0, svd_seconds=lambda m, n: 0.1)
    assert plan == (True, 0.1, "")
    args = ["bounds", "digits", "--methods", "spectral", "--time-limit", "5"]
    assert main(args) == 0
    assert "ordinary (linear-algebra) rank 54" in capsys.readouterr().out
    # a rank not computed is said so, and is null in JSON: a matrix of more than
    # 4e6 entries (sparse, with a few ones)
    large = tmp_path / "large.npz"
    X = sp.random(2001, 2000, density=0.001, format="csr", random_state=0)
    X.data[:] = 1.0
    sp.save_npz(large, X)
    args = ["bounds", str(large), "--methods", "spectral", "--time-limit", "5"]
    assert main(args) == 0
    assert "rank not computed (large)" in capsys.readouterr().out
    assert main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["real_rank"] is None


def test_an_svd_past_the_budget_is_reported_not_awaited():
    # on a machine busier than the estimate measured, the command ends on time
    cli = modules.cli
    release = threading.Event()  # the SVD ends only after the wait
    try:
        got = cli._matrix_rank_within(np.eye(3), 0.05, rank=lambda X: release.wait())
    finally:
        release.set()
        # the SVD's thread restores the BLAS thread counts when it ends: let it end
        # here, not inside the next test's limits
        for thread in threading.enumerate():
            if thread.name == "rrank (real rank)":
                thread.join(timeout=10)
    assert got == "not computed (its SVD ran past the budget)"


def test_real_rank_svd_runs_on_one_blas_thread():
    # two BLAS threads spinning beside two busy processes held the command's own
    # thread back: the wait for a 0.05 s SVD took 1.23 s of a 5 s budget
    from threadpoolctl import threadpool_info

    cli = modules.cli
    seen = []

    def rank(X):
        seen.extend(
            i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"
        )
        return 7

    assert cli._matrix_rank_within(np.eye(3), 30.0, rank=rank) == 7
    assert seen and set(seen) == {1}


def _percent_of_pairs_with_different_nonzero_sums(N):
    """NODF of a nested matrix: each such pair scores 100, every other pair 0."""
    scored = total = 0
    for sums in (N.sum(axis=1), N.sum(axis=0)):
        total += len(sums) * (len(sums) - 1) // 2
        _, counts = np.unique(sums[sums > 0], return_counts=True)
        n = counts.sum()
        scored += n * (n - 1) // 2 - (counts * (counts - 1) // 2).sum()
    return 100 * scored / total


def test_nested_explains_a_lower_nodf_of_the_nested_matrix(capsys, tmp_path):
    # sparse data (about 1.8% ones): its nearest nested matrix has few non-empty
    # rows and columns, so NODF falls although the fit is nested
    rng = np.random.default_rng(0)
    X = (rng.random((400, 120)) < 0.01).astype(np.uint8)
    X[np.arange(400), rng.integers(0, 120, 400)] = 1
    data = str(tmp_path / "sparse.npz")
    np.savez(data, X=X)
    path = tmp_path / "nested.npz"
    assert main(["nested", data, "--json", "-q", "--output", str(path)]) == 0
    out = json.loads(capsys.readouterr().out)
    N = np.load(path)["nested"]
    assert out["nested_ones"] == N.sum()
    assert out["nested_rows"] == np.count_nonzero(N.sum(axis=1)) < N.shape[0]
    assert out["nested_columns"] == np.count_nonzero(N.sum(axis=0)) < N.shape[1]
    assert out["nodf_after"] == pytest.approx(
        _percent_of_pairs_with_different_nonzero_sums(N), rel=1e-12
    )
    assert out["nodf_after"] < out["nodf_before"]
    assert main(["nested", data, "-q"]) == 0
    text = capsys.readouterr().out
    assert f"in {out['nested_rows']} of 400 rows" in text
    assert "note: NODF" in text and "scores exactly the percentage" in text


def test_nested_without_a_nodf_drop_prints_no_note(capsys, tmp_path, digits150):
    np.savez(tmp_path / "digits150.npz", X=digits150)
    assert main(["nested", str(tmp_path / "digits150.npz"), "-q"]) == 0
    text = capsys.readouterr().out
    assert "nested matrix" in text and "note:" not in text


def test_sparse_data_stays_sparse_at_the_door(tmp_path, monkeypatch):
    import dataclasses

    import scipy.sparse as sp

    # a fetched data set from the data home (here a small stand-in for APJ)
    A = np.zeros((200, 50), dtype=np.uint8)
    A[np.arange(200), np.arange(200) % 50] = 1  # 2% ones
    monkeypatch.setitem(
        _REMOTE,
        "apj",
        dataclasses.replace(
            _REMOTE["apj"], shape=A.shape, n_ones=200, sha256=matrix_sha256(A)
        ),
    )
    np.savez(tmp_path / "apj.npz", X=A)
    X, _ = _load_data("apj", keep_sparse=True, data_home=tmp_path)
    assert sp.issparse(X) and np.array_equal(X.toarray(), A)
    assert not sp.issparse(_load_data("apj", data_home=tmp_path)[0])
    assert not sp.issparse(_load_data("digits", keep_sparse=True)[0])  # 32% ones
    path = tmp_path / "x.fimi"
    path.write_text("".join(f"{i % 20}\n" for i in range(40)))  # 40 x 20, 5% ones
    Xf, name = _load_data(str(path), keep_sparse=True)
    assert sp.issparse(Xf) and name == "x.fimi" and Xf.shape == (40, 20)
    assert not sp.issparse(_load_data(str(path))[0])


def test_time_limit_none_and_the_words_of_the_header(tmp_path, capsys):
    # 'none' sets no budget: the header says so and no row claims a time limit
    path = tmp_path / "x.npy"
    np.save(path, np.eye(6, dtype=np.uint8))
    argv = ["bounds", str(path), "--methods", "rank_one,spectral,vc,rsvd"]
    assert main([*argv, "--time-limit", "none"]) == 0
    captured = capsys.readouterr()
    assert "no time limit" in captured.err and "time limit" not in captured.out
    assert "limit)" not in captured.out.splitlines()[-1]
    assert main([*argv, "--time-limit", "30"]) == 0
    captured = capsys.readouterr()
    assert "time limit 30 s" in captured.err and "of a 30 s limit)" in captured.out
    for bad in ["-1", "soon", "inf"]:
        with pytest.raises(SystemExit):
            main([*argv, "--time-limit", bad])
        assert "'none'" in capsys.readouterr().err
    args = ["factorize", str(path), "-k", "2", "--method", "rsvd", "-q"]
    assert main([*args, "--time-limit", "none"]) == 0  # accepted, as no limit


def test_help_spells_out_every_method_name(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name, words in [
        ("vc", "VC-dimension lower bound"),
        ("lpca", "logistic PCA"),
        ("mt+nnrr1", "the reordering heuristic, then the alternating one"),
        ("nnrr1", "alternating non-negative rounding rank one"),
    ]:
        assert f"{name} {words}" in text, name
    assert "BMNA: bidirectional minimum nestedness augmentation" in text
