"""reStructuredText tables of the committed benchmark results, for the docs pages.

Every headline number of the documentation comes from a JSON file in
``benchmarks/results/``, written by the benchmark that measured it, and is rendered
here when the documentation is built (``docs/conf.py`` calls :func:`write_include`
and :func:`write_certify_include`); no page types such a number by hand.

* ``tables.json`` (``benchmarks/reproduce_tables.py``): the paper's two tables on
  real data, ours beside the paper's, for ``reproducing.rst``;
* ``anytime_<data>_<budget>s.json`` (``benchmarks/anytime_curves.py``, one call of
  ``rounding_rank_bounds`` per data set): the certified interval of each data set,
  for ``results.rst``;
* ``networks_1800s.json`` and ``networks_300s.json`` (``rrank bounds`` on
  each network with the budget in the name, the default methods): the network rows
  of that table (``NETWORK_RESULTS``).

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
        _computers(results),
        "",
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


def _computers(results):
    """Where the paper's times and ours were measured, as ``tables.json`` says."""
    machine = results.get("machine") or {}
    ours = ", ".join(
        part
        for part in (
            f"{machine['cpus']} cores" if machine.get("cpus") else "",
            machine.get("platform", ""),
            f"``n_jobs={machine['n_jobs']}``" if machine.get("n_jobs") else "",
            f"seed {results['seed']}" if results.get("seed") is not None else "",
        )
        if part
    )
    paper = results.get("paper_machine")
    return (
        f"Our times: {ours or 'computer not recorded'}. "
        f"The paper's times: {paper or 'computer not recorded'}."
    )


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


#: the committed runs of ``rrank bounds`` on the networks, read for their rows of the
#: "what we certify" table; a network in several files takes the largest budget
NETWORK_RESULTS = ("networks_1800s.json", "networks_300s.json")
_BUDGET = re.compile(r"networks_(?P<budget>\d+)s")
_SUMMARY = re.compile(
    r"in \[(?P<lower>\d+), (?P<upper>\d+)\].*?lower by (?P<lower_method>\w+), "
    r"certified upper by (?P<upper_method>\w+); (?P<seconds>[\d.]+) s"
)
_LOWER_METHODS = ("rank_one", "spectral", "vc")


def _network_run(entry):
    """``{lower, upper, lower_method, upper_method, wall_seconds}`` of one entry.

    The files hold one of three layouts: a ``summary`` line of ``rrank bounds``;
    ``interval`` with the report's ``rows``; or ``lower``, ``upper`` and
    ``report``. None for an entry that has neither.
    """
    if "summary" in entry:
        match = _SUMMARY.search(entry["summary"])
        if match is None:
            return None
        run = match.groupdict()
        return {
            "lower": int(run["lower"]),
            "upper": int(run["upper"]),
            "lower_method": run["lower_method"],
            "upper_method": run["upper_method"],
            "wall_seconds": float(run["seconds"]),
        }
    if "interval" in entry:
        lower, upper = entry["interval"]
    elif "lower" in entry and "upper" in entry:
        lower, upper = entry["lower"], entry["upper"]
    else:
        return None
    rows = entry.get("rows") or entry.get("report") or []
    found = {
        key: next(
            (
                row["method"]
                for row in rows
                if row.get("bound") == bound
                and (row["method"] in _LOWER_METHODS) == (key == "lower_method")
            ),
            "trivial" if key == "upper_method" else "?",
        )
        for key, bound in (("lower_method", lower), ("upper_method", upper))
    }
    return {
        "lower": lower,
        "upper": upper,
        "lower_method": entry.get("lower_method", found["lower_method"]),
        "upper_method": entry.get("upper_method", found["upper_method"]),
        "wall_seconds": entry.get("seconds"),
    }


def network_runs(results_dir, files=NETWORK_RESULTS):
    """``{network: run}`` from the ``networks_<budget>s*.json`` files in ``files``.

    Only the networks of ``CERTIFY_DATA`` are read (other keys are notes or runs of
    other code); the run with the largest budget wins. Missing files are skipped.
    """
    networks = list(CERTIFY_DATA)[3:]
    runs = {}
    for name in files:
        path = Path(results_dir) / name
        match = _BUDGET.match(name)
        if not path.exists() or match is None:
            continue
        content = json.loads(path.read_text())
        entries = content.get("runs", content)
        for network in networks:
            entry = entries.get(network)
            run = _network_run(entry) if isinstance(entry, dict) else None
            if run is None:
                continue
            run["time_limit"] = float(match["budget"])
            run["file"] = name
            if network not in runs or run["time_limit"] > runs[network]["time_limit"]:
                runs[network] = run
    return runs


def render_certify(runs, networks=None):
    """The "what we certify" table: one row per data set, measured or not.

    ``runs`` are the portfolio calls of ``anytime_curves.py`` (:func:`certify_runs`),
    ``networks`` the ``rrank bounds`` runs on the networks (:func:`network_runs`).
    """
    networks = networks or {}
    machines = sorted({run.get("machine", "not recorded") for run in runs.values()})
    methods = sorted({str(run.get("methods", "default")) for run in runs.values()})
    out = [
        "Each row is one call of ``rounding_rank_bounds`` "
        f"(methods: {', '.join(methods) or 'default'}; ``n_jobs=2``, "
        "``random_state=0``) with the budget shown, on one machine "
        f"({'; '.join(machines) or 'not recorded'}). The upper bound's factors "
        "were checked again with ``certify_rounding`` after the call. Seconds are the "
        "wall-clock time of the whole call. "
        + (
            "A network's row is one run of ``rrank bounds <network>.npz "
            "--time-limit <budget>`` with the default methods (the command calls "
            "``rounding_rank_bounds``); its shape is not recorded. An upper bound "
            "by ``trivial`` is the number of rows or columns, whichever is smaller, "
            "which needs no search. "
            if networks
            else ""
        )
        + "A row without numbers has not been measured yet; it fills in when the "
        "benchmark's JSON for that data set is committed.",
        "",
    ]
    header = ["Data", "Shape", "Certified interval", "Budget (s)", "Seconds", "JSON"]
    rows = []
    names = list(CERTIFY_DATA) + sorted(set(runs) - set(CERTIFY_DATA))
    for name in names:
        label = CERTIFY_DATA.get(name, name)
        run = runs.get(name, networks.get(name))
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
    text = render_certify(certify_runs(results_dir), network_runs(results_dir))
    return _write(out, text)


def write_include(results_dir, out):
    """Write the tables (or a note that they are missing) to ``out``, if changed."""
    src = Path(results_dir) / "tables.json"
    if src.exists():
        text = render_rst(json.loads(src.read_text()))
    else:
        text = MISSING
    return _write(out, text)
