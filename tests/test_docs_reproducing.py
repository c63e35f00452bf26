"""The reproducing page's tables: rst list-tables generated from tables.json."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
reproducing_tables = pytest.importorskip("reproducing_tables")
docutils = pytest.importorskip("docutils")
docutils_core = pytest.importorskip("docutils.core")
# docutils 0.22 takes the writer's name as ``writer`` (``writer_name`` is deprecated)
WRITER = (
    {"writer": "html"}
    if docutils.__version_info__ >= (0, 22)
    else {"writer_name": "html"}
)

RESULTS = ROOT / "benchmarks" / "results"


def _html(rst):
    return docutils_core.publish_string(
        rst,
        **WRITER,
        settings_overrides={"report_level": 2, "halt_level": 2},
    ).decode()


@pytest.mark.skipif(
    not (RESULTS / "tables.json").exists(), reason="no benchmarks/results/tables.json"
)
def test_tables_json_renders_as_rst_tables(tmp_path):
    results = json.loads((RESULTS / "tables.json").read_text())
    text = reproducing_tables.write_include(RESULTS, tmp_path / "t.inc")
    assert (tmp_path / "t.inc").read_text() == text
    assert "|---|" not in text
    html = _html(text)  # halt_level=2: a warning of docutils raises
    # one table of rank bounds, one table of errors per data set
    assert html.count("<table") == 1 + len(results["data"])
    assert "[4, 8]" in html  # Paleo's interval


def test_missing_json_gives_a_note(tmp_path):
    text = reproducing_tables.write_include(tmp_path, tmp_path / "t.inc")
    assert "reproduce_tables.py" in text
    assert "<table" not in _html(text)


def test_cells_are_escaped_and_flagged():
    rst = reproducing_tables.list_table(
        "T", ["a", "b"], [["x*y", reproducing_tables._escape("1 (error: *boom*)")]]
    )
    html = _html(rst)
    assert "<em>" not in html.split("<table", 1)[1]
