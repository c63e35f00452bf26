"""``rrank ... --plot FILE.png`` saves a picture of each command's result."""

import pytest
from _family import rrank as main

pytest.importorskip("matplotlib")


@pytest.mark.parametrize(
    "argv",
    [
        ["bounds", "digits", "--methods", "rank_one,spectral,rsvd"],
        ["factorize", "digits", "-k", "5", "--method", "rsvd"],
        ["nested", "digits", "--method", "nnrr1"],
    ],
)
def test_plot_option_writes_a_png(argv, tmp_path, capsys):
    path = tmp_path / "out.png"
    assert main([*argv, "--plot", str(path), "-q"]) == 0
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "plot saved to" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["bounds", "factorize", "nested"])
def test_help_shows_every_default(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())  # undo argparse's wrapping
    assert "(default: 0.5)" in text  # tau
    if command == "bounds":
        assert "(default: rank_one,spectral,rsvd,vc,lpca,projlp)" in text
        assert "'none': no limit" in text and "(default: 60.0)" in text


def test_factorize_warning_names_an_option_not_an_attribute(tmp_path, capsys):
    import json

    main(["factorize", "digits", "-k", "10", "--method", "lpca", "--max-iter", "2"])
    captured = capsys.readouterr()
    assert "--max-iter" in captured.err and "solver_info_" not in captured.err
    main(
        ["factorize", "digits", "-k", "10", "--method", "lpca", "--max-iter", "2"]
        + ["--json"]
    )
    out = json.loads(capsys.readouterr().out)
    assert any("--max-iter" in w for w in out["warnings"])
