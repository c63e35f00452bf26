"""reStructuredText tables of the committed benchmark results, for the docs pages.

Every headline number of the documentation comes from a JSON file in
``benchmarks/results/``, written by the benchmark that measured it, and is rendered
here when the documentation is built (``docs/conf.py`` calls :func:`write_include`
and :func:`write_certify_include`); no page types such a number by hand.

* ``tables.json`` (``benchmarks/reproduce_tables.py``): the paper's two tables on
  real data, ours beside the paper's, for ``reproducing.rst``;
* ``anytime_<data>_<budget>s.json`` (``benchmarks/anytime_curves.py``, one call of
  ``rounding_rank_bounds`` per data set): the certified interval of each data set,
  for ``results.rst``.

Every rendered table carries the class ``rrank-from-json``;
``docs/browser_check.py`` flags interval-like numbers in tables without it.
"""

import json
import re
from pathlib import Path

#: the class of every table rendered from a benchmark's JSON (browser_check.py)
TABLE_CLASS = "rrank-from-json"

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
    lines = [
        f".. list-table:: {title}",
        "   :header-rows: 1",
        "   :stub-columns: 1",
        f"   :class: {TABLE_CLASS}",
    ]
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
        "Rounding-rank upper bounds at tau = 0.5 (the paper's Table *real:rank*, "
        "Section 5.3); every bound of ours is certified. Each method ran alone with "
        f"{_limits(results)}. *Best of these cells* is the interval between the "
        "best lower bound (spectral or VC) and the best upper bound of the rows "
        "above it; the portfolio of the page *What we certify* shares one budget "
        "between the methods instead. Times in seconds; the last column is our "
        "time divided by the paper's.",
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
                "**best of these cells**",
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


def _limits(results):
    """The per-method time limits of ``tables.json`` in words."""
    limits = dict(results.get("limits", {}))
    default = limits.pop("default", None)
    parts = []
    if default is not None:
        parts.append(f"a time limit of {default:.0f} s")
    parts += [
        f"{DATA_NAMES.get(name, name)} {value:.0f} s" for name, value in limits.items()
    ]
    return ", ".join(parts) if parts else "no time limit"


def _write(out, text):
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if not out.exists() or out.read_text() != text:
        out.write_text(text)
    return text


# -- what we certify ------------------------------------------------------------------
#: data sets of the "what we certify" table, in its order: the paper's three, then
#: the networks of the shared data (their rows wait for the benchmark until measured)
CERTIFY_DATA = {
    "paleo": "Paleo",
    "apj": "APJ",
    "abstracts": "Abstracts",
    "cora": "Cora",
    "citeseer": "CiteSeer",
    "pubmed": "PubMed",
    "ca-hepph": "ca-HepPh",
    "ca-grqc": "ca-GrQc",
    "facebook": "Facebook",
    "p2p-gnutella04": "p2p-Gnutella04",
    "wiki-vote": "wiki-Vote",
}
_ANYTIME = re.compile(r"anytime_(?P<data>[a-z0-9-]+)_(?P<budget>\d+)s\.json")


def certify_runs(results_dir):
    """``{data: run}`` from the ``anytime_<data>_<budget>s.json`` files.

    One run per data set, the one with the largest budget; runs with busy
    processes beside them (``_loaded`` files) are left out.
    """
    runs = {}
    for path in sorted(Path(results_dir).glob("anytime_*.json")):
        match = _ANYTIME.fullmatch(path.name)
        if match is None:
            continue
        run = json.loads(path.read_text())
        if run.get("busy_processes", 0):
            continue
        run["file"] = path.name
        name = match["data"]
        if name not in runs or run["time_limit"] > runs[name]["time_limit"]:
            runs[name] = run
    return runs


def render_certify(runs):
    """The "what we certify" table: one row per data set, measured or not."""
    machines = sorted({run.get("machine", "not recorded") for run in runs.values()})
    methods = sorted({str(run.get("methods", "default")) for run in runs.values()})
    out = [
        "Each row is one call of ``rounding_rank_bounds`` "
        f"(methods: {', '.join(methods) or 'default'}; ``n_jobs=2``, "
        "``random_state=0``) with the budget shown, on one machine "
        f"({'; '.join(machines) or 'not recorded'}). The upper bound's factors "
        "were checked again with ``certify_rounding`` after the call. Seconds are the "
        "wall-clock time of the whole call. A row without numbers has not been "
        "measured yet; it fills in when the benchmark's JSON for that data set is "
        "committed.",
        "",
    ]
    header = ["Data", "Shape", "Certified interval", "Budget (s)", "Seconds", "JSON"]
    rows = []
    names = list(CERTIFY_DATA) + sorted(set(runs) - set(CERTIFY_DATA))
    for name in names:
        label = CERTIFY_DATA.get(name, name)
        run = runs.get(name)
        if run is None:
            rows.append([label, "--", "not measured yet", "--", "--", "--"])
            continue
        shape = run.get("shape")
        checked = run.get("certificate_rechecked")
        interval = (
            f"[{run['lower']}, {run['upper']}] "
            f"({run.get('lower_method', '?')}, {run.get('upper_method', '?')})"
        )
        if checked is False:
            interval += " (certificate check failed)"
        rows.append(
            [
                label,
                f"{shape[0]} x {shape[1]}" if shape else "--",
                interval,
                f"{run['time_limit']:.0f}",
                _seconds(run.get("wall_seconds")),
                f"``{run['file']}``",
            ]
        )
    out.append(list_table("What we certify", header, rows))
    return "\n".join(out)


def write_certify_include(results_dir, out):
    """Write the "what we certify" table to ``out``, if changed."""
    return _write(out, render_certify(certify_runs(results_dir)))


def write_include(results_dir, out):
    """Write the tables (or a note that they are missing) to ``out``, if changed."""
    src = Path(results_dir) / "tables.json"
    if src.exists():
        text = render_rst(json.loads(src.read_text()))
    else:
        text = MISSING
    return _write(out, text)
