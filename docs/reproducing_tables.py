"""reStructuredText tables of ``benchmarks/results/tables.json`` for reproducing.rst.

``benchmarks/reproduce_tables.py`` writes the JSON (and a Markdown rendering for the
terminal); ``docs/conf.py`` calls :func:`write_include` at build time, so the page
shows real tables that follow the JSON. Without the JSON the page says how to make it.
"""

import json
from pathlib import Path

DATA_NAMES = {"paleo": "Paleo", "apj": "APJ", "abstracts": "Abstracts"}
METHOD_NAMES = {
    "projlp": "ProjLP",
    "lpca": "L-PCA",
    "rsvd": "R-SVD",
    "tsvd": "T-SVD",
    "asso": "Asso",
}

MISSING = """\
.. note::

   The tables have not been generated in this checkout. Run
   ``python benchmarks/reproduce_tables.py`` and rebuild the documentation to
   show them here.
"""


def _fmt(value, digits=3):
    if value is None:
        return "--"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _seconds(value):
    """Seconds with three significant digits (``--`` when missing)."""
    if value is None:
        return "--"
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:.3g}" if value >= 0.1 else f"{value:.2f}"


def _ratio(ours, paper_seconds):
    if paper_seconds in (None, 0) or ours.get("seconds") is None:
        return "--"
    return f"{ours['seconds'] / paper_seconds:.2g}"


def _flag(cell):
    if cell.get("error"):
        return f" (error: {cell['error']})"
    return " (time limit)" if cell.get("hit_limit") else ""


def _by_k(table, k):
    return table.get(int(k), table.get(str(k)))


def _escape(text):
    """Text safe inside a list-table cell (no inline markup by accident)."""
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("`", "\\`")


def list_table(title, header, rows, widths=None):
    """An rst ``list-table`` directive (header row, first column as stub)."""
    lines = [f".. list-table:: {title}", "   :header-rows: 1", "   :stub-columns: 1"]
    if widths:
        lines.append("   :widths: " + " ".join(str(w) for w in widths))
    lines.append("")
    for row in [header, *rows]:
        for j, cell in enumerate(row):
            lead = "   * - " if j == 0 else "     - "
            lines.append((lead + cell).rstrip())
    lines.append("")
    return "\n".join(lines)


def render_rst(results):
    """The two tables of the paper (rank bounds, errors) as rst list-tables."""
    data = results["data"]
    out = [
        "Rank upper bounds",
        "-----------------",
        "",
        "Rounding-rank upper bounds at tau = 0.5 (the paper's Table *real:rank*); "
        "every bound of ours is certified. *Best* is the interval between our best "
        "lower bound (spectral or VC) and our best upper bound. Times in seconds; "
        "the last column is our time divided by the paper's.",
        "",
    ]
    header = ["Data", "Method", "Paper", "Ours", "Paper (s)", "Ours (s)", "Ratio"]
    rows = []
    for name, entry in data.items():
        paper = entry["paper"]
        label = DATA_NAMES.get(name, name)
        for method, ours in entry["rank"].items():
            rows.append(
                [
                    label,
                    METHOD_NAMES.get(method, method),
                    _fmt(paper["rank_upper_bounds"].get(method)),
                    _escape(_fmt(ours.get("value")) + _flag(ours)),
                    _fmt(paper["rank_seconds"].get(method)),
                    _seconds(ours.get("seconds")),
                    _ratio(ours, paper["rank_seconds"].get(method)),
                ]
            )
        low = entry["lower"]
        rows.append(
            [
                label,
                "lower bounds",
                "--",
                f"spectral {_fmt(low['spectral'].get('value'))}"
                f"{_flag(low['spectral'])}, "
                f"VC {_fmt(low['vc'].get('value'))}{_flag(low['vc'])}",
                "--",
                f"{_seconds(low['spectral'].get('seconds'))} + "
                f"{_seconds(low['vc'].get('seconds'))}",
                "--",
            ]
        )
        paper_best = [v for v in paper["rank_upper_bounds"].values() if v]
        lo, up = entry["interval"]
        rows.append(
            [
                label,
                "**best**",
                str(min(paper_best)) if paper_best else "--",
                f"**[{lo}, {_fmt(up)}]**",
                "",
                "",
                "",
            ]
        )
    out.append(list_table("Rank upper bounds", header, rows))
    out += [
        "Reconstruction errors",
        "---------------------",
        "",
        "Relative reconstruction errors (wrong entries divided by the number of ones; "
        "the paper's Table *real:err*) at the paper's ranks k, with times in seconds.",
        "",
    ]
    header = ["Method", "k", "Paper", "Ours", "Paper (s)", "Ours (s)", "Ratio"]
    for name, entry in data.items():
        paper = entry["paper"]
        rows = []
        for method, cells in entry["error"].items():
            for k, ours in cells.items():
                paper_seconds = _by_k(paper["error_seconds"][method], k)
                rows.append(
                    [
                        METHOD_NAMES.get(method, method),
                        str(k),
                        _fmt(_by_k(paper["relative_error"][method], k)),
                        _escape(_fmt(ours.get("value")) + _flag(ours)),
                        _fmt(paper_seconds),
                        _seconds(ours.get("seconds")),
                        _ratio(ours, paper_seconds),
                    ]
                )
        shape = paper.get("shape")
        title = DATA_NAMES.get(name, name)
        if shape:
            title += f" ({shape[0]} x {shape[1]})"
        out.append(list_table(title, header, rows))
    return "\n".join(out)


def write_include(results_dir, out):
    """Write the tables (or a note that they are missing) to ``out``, if changed."""
    src = Path(results_dir) / "tables.json"
    if src.exists():
        text = render_rst(json.loads(src.read_text()))
    else:
        text = MISSING
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.exists() or out.read_text() != text:
        out.write_text(text)
    return text
