"""``rrank ... --plot FILE.png`` saves a picture of each command's result."""

import pytest

from sklearn_rrank._cli import main

pytest.importorskip("matplotlib")


@pytest.mark.parametrize(
    "argv",
    [
        ["bounds", "paleo", "--methods", "rank_one,spectral,rsvd"],
        ["factorize", "paleo", "-k", "5", "--method", "rsvd"],
        ["nested", "paleo", "--method", "nnrr1"],
    ],
)
def test_plot_option_writes_a_png(argv, tmp_path, capsys):
    path = tmp_path / "out.png"
    assert main([*argv, "--plot", str(path), "-q"]) == 0
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "plot saved to" in capsys.readouterr().out
