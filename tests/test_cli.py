import json
import subprocess
import sys

import numpy as np
import pytest

from sklearn_rrank import certify_rounding
from sklearn_rrank._cli import main


def test_bounds_json_paleo(capsys, tmp_path):
    out_file = tmp_path / "cert.npz"
    code = main(
        [
            "bounds",
            "paleo",
            "--methods",
            "spectral,rsvd",
            "--json",
            "--output",
            str(out_file),
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["upper"] == 68 and out["upper_method"] == "rsvd"
    assert {"lower", "upper", "exact", "report", "real_rank"} <= set(out)
    assert out["n_samples"] == 124 and out["real_rank"] == 123
    kinds = {r["method"]: r["kind"] for r in out["report"]}
    assert kinds == {"spectral": "lower", "rsvd": "upper"}
    saved = np.load(out_file)
    from sklearn_rrank.datasets import load_paleo

    assert saved["L"].shape == (124, 68)
    assert certify_rounding(
        load_paleo().data, saved["L"], saved["R"], tau=float(saved["tau"])
    )


def test_bounds_table_and_progress(capsys):
    assert main(["bounds", "paleo", "--methods", "spectral,rsvd"]) == 0
    captured = capsys.readouterr()
    assert "rounding rank in [" in captured.out and "68" in captured.out
    assert "rsvd" in captured.err  # progress on stderr


def test_factorize(capsys):
    assert main(["factorize", "paleo", "-k", "10", "--method", "rsvd", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert round(out["relative_error"], 3) == 0.516
    assert out["certified"] is False and out["n_components"] == 10
    assert main(["factorize", "paleo", "-k", "5", "--method", "rsvd"]) == 0
    assert "0.697" in capsys.readouterr().out


def test_datasets_listing(capsys):
    assert main(["datasets", "--json"]) == 0
    names = [r["name"] for r in json.loads(capsys.readouterr().out)]
    assert names == ["paleo", "apj", "abstracts"]


def test_errors_exit_2_one_line(capsys, tmp_path):
    assert main(["bounds", "no_such_data"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rrank: error:") and err.count("\n") == 1
    bad = tmp_path / "bad.csv"
    bad.write_text("1,0\n0,3\n")
    assert main(["bounds", str(bad)]) == 2
    assert "not binary" in capsys.readouterr().err
    junk = tmp_path / "junk.npy"
    junk.write_bytes(b"garbage")
    assert main(["factorize", str(junk), "-k", "2", "--method", "rsvd"]) == 2
    assert "could not be read" in capsys.readouterr().err
    assert main(["factorize", "paleo", "-k", "500", "--method", "rsvd"]) == 2
    assert "n_components" in capsys.readouterr().err


def test_bad_flag_is_usage_error():
    with pytest.raises(SystemExit) as exc:
        main(["factorize", "paleo", "-k", "0"])
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
