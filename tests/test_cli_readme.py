"""The README's first command, run as a new user runs it."""

import pathlib
import re
import subprocess
import sys
import time

from _family import BOUNDS_TIME_LIMIT

# the README's last line of `rrank bounds digits`, with its numbers as patterns
LAST_LINE = re.compile(
    r"rounding rank in \[(\d+), (\d+)\]  \((interval|exact); lower bound by \w+, "
    r"certified upper bound by \w+; (\d+\.\d\d) s of a (\d+) s limit\)"
)


README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_shows_the_line_the_command_prints():
    # the README quotes the command's last line; the test below runs the command
    text = README.read_text(encoding="utf-8")
    first_block = text.split("```bash\n", 1)[1].split("```", 1)[0]
    assert first_block.splitlines()[0].endswith("&& rrank bounds digits")
    quoted = text.split("```text\n", 1)[1].split("\n", 1)[0]
    assert LAST_LINE.fullmatch(quoted), quoted
    assert f"a budget of {BOUNDS_TIME_LIMIT:g} seconds" in text


def test_readme_first_command_prints_its_interval_within_its_budget():
    # `rrank bounds digits` with no options: its default budget bounds the wall time
    # of the whole command, interpreter start and imports included (a budget
    # check, plus 10% for what no method can interrupt: the last fit's step)
    start = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "sklearn_rrank", "bounds", "digits"],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.monotonic() - start
    assert run.returncode == 0, run.stderr
    assert elapsed <= 1.1 * BOUNDS_TIME_LIMIT, (elapsed, run.stdout)
    lines = run.stdout.splitlines()
    assert lines[0].startswith(
        "data        digits: 1797 x 64, density 0.3230, ordinary (linear-algebra) "
        "rank 54"
    )
    last = next(line for line in lines if line.startswith("rounding rank in"))
    found = LAST_LINE.fullmatch(last)
    assert found, last
    lower, upper, _, seconds, limit = found.groups()
    assert 1 <= int(lower) <= int(upper) <= 54  # 54: the ordinary rank
    assert int(limit) == BOUNDS_TIME_LIMIT and float(seconds) <= elapsed
    assert "time limit 60 s" in run.stderr and "no time limit" not in run.stderr
