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
    best = results["data"]["paleo"]["interval"]
    assert f"[{best[0]}, {best[1]}]" in html  # Paleo's interval, from the JSON
    assert html.count('class="rrank-from-json') == html.count("<table")


def _run(data, budget, **extra):
    return {
        "data": data,
        "shape": [10, 8],
        "time_limit": budget,
        "busy_processes": 0,
        "machine": "x86_64, 2 cores",
        "wall_seconds": budget - 1.5,
        "lower": 2,
        "lower_method": "vc",
        "upper": 5,
        "upper_method": "lpca",
        "certificate_rechecked": True,
        **extra,
    }


def test_certify_table_comes_from_the_anytime_json(tmp_path):
    (tmp_path / "anytime_paleo_20s.json").write_text(json.dumps(_run("paleo", 20.0)))
    better = _run("paleo", 60.0, upper=4)
    (tmp_path / "anytime_paleo_60s.json").write_text(json.dumps(better))
    loaded = _run("apj", 60.0, busy_processes=2)
    (tmp_path / "anytime_apj_60s_loaded.json").write_text(json.dumps(loaded))
    (tmp_path / "anytime_apj_60s_abc1234.json").write_text(json.dumps(_run("apj", 9)))
    runs = reproducing_tables.certify_runs(tmp_path)
    assert list(runs) == ["paleo"]  # no loaded run, no copy with a suffix
    assert runs["paleo"]["time_limit"] == 60.0  # the largest budget
    text = reproducing_tables.write_certify_include(tmp_path, tmp_path / "c.inc")
    html = _html(text)
    assert html.count("<table") == 1 and 'class="rrank-from-json' in html
    assert "[2, 4] (vc, lpca)" in html and "[2, 5]" not in html
    assert "x86_64, 2 cores" in html
    # every data set has a row; the unmeasured ones say so
    for label in reproducing_tables.CERTIFY_DATA.values():
        assert f'<th class="stub">{label}</th>' in html or label in html
    assert html.count("not measured yet") == len(reproducing_tables.CERTIFY_DATA) - 1


def test_committed_certify_table_renders(tmp_path):
    text = reproducing_tables.write_certify_include(RESULTS, tmp_path / "c.inc")
    html = _html(text)
    assert html.count("<table") == 1


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


def test_network_rows_come_from_the_networks_json(tmp_path):
    # the three layouts of the committed files: a summary line of ``rrank bounds``,
    # an interval with the report's rows, and lower/upper with the report
    summary = {
        "what": "a note, not a network",
        "pubmed": {
            "summary": "rounding rank in [4, 19717]  (interval; lower by vc, "
            "certified upper by trivial; 1770.01 s)"
        },
        "cora": {
            "summary": "rounding rank in [3, 9]  (interval; lower by vc, "
            "certified upper by lpca; 1790.5 s)"
        },
    }
    rows = {
        "runs": {
            "cora": {
                "interval": [4, 8],
                "seconds": 291.5,
                "rows": [
                    {"method": "rank_one", "bound": 2},
                    {"method": "vc", "bound": 4},
                    {"method": "rsvd", "bound": 1689},
                    {"method": "lpca", "bound": 8},
                ],
            },
            "cora_alone": {"interval": [1, 2], "seconds": 1.0, "rows": []},
        }
    }
    report = {
        "runs": {
            "citeseer": {
                "lower": 4,
                "upper": 1670,
                "upper_method": "projlp",
                "seconds": 295.6,
                "report": [{"method": "vc", "bound": 4}],
            }
        }
    }
    (tmp_path / "networks_1800s.json").write_text(json.dumps(summary))
    (tmp_path / "networks_300s_x.json").write_text(json.dumps(rows))
    (tmp_path / "networks_300s_y.json").write_text(json.dumps(report))
    files = ("networks_1800s.json", "networks_300s_x.json", "networks_300s_y.json")
    runs = reproducing_tables.network_runs(tmp_path, files=(*files, "gone.json"))
    assert sorted(runs) == ["citeseer", "cora", "pubmed"]
    assert runs["pubmed"] == {
        "lower": 4,
        "upper": 19717,
        "lower_method": "vc",
        "upper_method": "trivial",
        "wall_seconds": 1770.01,
        "time_limit": 1800.0,
        "file": "networks_1800s.json",
    }
    assert runs["cora"]["time_limit"] == 1800.0  # the largest budget wins
    runs = reproducing_tables.network_runs(tmp_path, files=files[1:])
    assert (runs["cora"]["lower_method"], runs["cora"]["upper_method"]) == (
        "vc",
        "lpca",
    )
    assert (runs["citeseer"]["lower_method"], runs["citeseer"]["upper"]) == ("vc", 1670)
    html = _html(reproducing_tables.render_certify({}, runs))
    assert html.count("<table") == 1 and 'class="rrank-from-json' in html
    assert "[4, 8] (vc, lpca)" in html and "networks_300s_x.json" in html
    assert "[4, 1670] (vc, projlp)" in html and "rrank bounds" in html
    assert html.count("not measured yet") == len(reproducing_tables.CERTIFY_DATA) - 2


def test_committed_network_rows_are_measured():
    runs = reproducing_tables.network_runs(RESULTS)
    for name in reproducing_tables.NETWORK_RESULTS:
        assert (RESULTS / name).exists(), name  # the docs read it: keep it
    assert {"cora", "citeseer", "pubmed", "ca-hepph"} <= set(runs)
    for run in runs.values():
        assert 1 <= run["lower"] <= run["upper"]
        assert run["lower_method"] != "?"
