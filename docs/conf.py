"""Sphinx configuration of the sklearn_rrank documentation.

Build with ``python -m sphinx -W -b html docs docs/_build/html`` after installing the
``docs`` extra (``pip install ".[docs]"``); add ``-D plot_gallery=0`` to build the
gallery pages without running the examples. No network access is needed, neither to
build nor to read the pages: intersphinx is off and MathJax is served from the
built site (copied from the ``django-static-mathjax`` package of the docs extra).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import sklearn_rrank

DOCS = Path(__file__).resolve().parent

# -- project -----------------------------------------------------------------------
project = "sklearn_rrank"
author = "The sklearn_rrank developers"
copyright = "2026, The sklearn_rrank developers"
version = sklearn_rrank.__version__
release = sklearn_rrank.__version__

# -- extensions --------------------------------------------------------------------
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
root_doc = "index"
default_role = "literal"

# autosummary writes one page per public name to docs/generated/
autosummary_generate = True
autosummary_generate_overwrite = True
autosummary_imported_members = True
autodoc_default_options = {"inherited-members": False}
# the class template lists inherited methods too (get_params, set_output, ...) but
# not the tuple methods that the NamedTuple results inherit
autosummary_context = {"hidden_tuple_methods": ["count", "index"]}
autodoc_typehints = "none"

# numpydoc renders the docstrings; the method tables come from our class template
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_attributes_as_param_list = True

# -- HTML --------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"sklearn_rrank {release}"
# _static: our CSS; generated/_static: MathJax, filled by _copy_mathjax below
html_static_path = ["_static", "generated/_static"]
html_css_files = ["custom.css"]
# user_guide.html: the old one-page user guide's address, redirecting to its pages
html_extra_path = ["_extra"]
# "On this page" lists methods as "fit", not "RoundingRankFactorization.fit"
toc_object_entries_show_parents = "hide"
html_theme_options = {
    "navbar_end": ["navbar-icon-links"],
    "show_prev_next": False,
    "navigation_with_keys": False,
}
html_sidebars = {
    "index": [],
    "cli": [],
    "reproducing": [],
    "choosing": [],
    "results": [],
}
html_show_sourcelink = False

# -- sphinx-gallery ----------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": "plot_",
    "within_subsection_order": "FileNameSortKey",
    "download_all_examples": False,
    "remove_config_comments": True,
    "show_memory": False,
    # the execution-times page loads jQuery and DataTables from CDNs: not offline
    "write_computation_times": False,
    "matplotlib_animations": False,
    "reference_url": {"sklearn_rrank": None},
    "doc_module": ("sklearn_rrank",),
    # "Examples using this class/function" on the API pages: the minigallery
    # directive of docs/_templates/autosummary/ reads these files
    "backreferences_dir": "generated/backreferences",
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
}

# intersphinx is deliberately not used: the build must work without network access.


# -- MathJax without a CDN ---------------------------------------------------------
def _copy_mathjax():
    """Copy MathJax 3 (TeX input, SVG output: one file, no fonts) into the site.

    The file comes from the ``django-static-mathjax`` package (a plain copy of the
    MathJax distribution; it needs no Django), installed by the ``docs`` extra. It
    goes to ``docs/generated/_static/mathjax/`` (not under version control), which
    Sphinx copies to ``_static/`` of the built site; pages load it from there.
    """
    from importlib.resources import files

    try:
        src = files("mathjax") / "static" / "mathjax" / "es5" / "tex-svg.js"
        if not src.is_file():
            raise FileNotFoundError(str(src))
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise RuntimeError(
            "MathJax for the offline documentation is missing: install the docs "
            'extra (pip install ".[docs]"), which provides django-static-mathjax.'
        ) from exc
    out = DOCS / "generated" / "_static" / "mathjax"
    out.mkdir(parents=True, exist_ok=True)
    dest = out / "tex-svg.js"
    if not dest.exists() or dest.stat().st_size != src.stat().st_size:
        with src.open("rb") as fin, dest.open("wb") as fout:
            shutil.copyfileobj(fin, fout)


_copy_mathjax()
# execution-times pages of older builds (they load scripts from CDNs)
for _stale in (
    DOCS / "sg_execution_times.rst",
    DOCS / "auto_examples" / "sg_execution_times.rst",
):
    _stale.unlink(missing_ok=True)
mathjax_path = "mathjax/tex-svg.js"


# -- generated inputs --------------------------------------------------------------
def _write_cli_help():
    """Write the ``--help`` text of every ``rrank`` command for ``cli.rst``.

    The command line's own parser produces the text, so the page cannot drift from
    the code. Files go to ``docs/generated/cli/`` (not under version control).
    """
    out = DOCS / "generated" / "cli"
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, COLUMNS="88")
    for name, args in {
        "rrank": [],
        "bounds": ["bounds"],
        "factorize": ["factorize"],
        "nested": ["nested"],
        "datasets": ["datasets"],
    }.items():
        text = subprocess.run(
            [sys.executable, "-m", "sklearn_rrank", *args, "--help"],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        ).stdout
        path = out / f"{name}.txt"
        if not path.exists() or path.read_text() != text:
            path.write_text(text)


_write_cli_help()


def _write_reproducing_tables():
    """Render the benchmarks' JSON as rst tables for reproducing.rst and results.rst.

    ``benchmarks/reproduce_tables.py`` and ``benchmarks/anytime_curves.py`` write the
    JSON; ``docs/reproducing_tables.py`` turns it into list-tables in
    ``docs/generated/*.inc`` (not under version control). Without the JSON the
    pages say how to generate it.
    """
    sys.path.insert(0, str(DOCS))
    try:
        import reproducing_tables
    finally:
        sys.path.remove(str(DOCS))
    results = DOCS.parent / "benchmarks" / "results"
    reproducing_tables.write_include(
        results, DOCS / "generated" / "reproducing_tables.inc"
    )
    reproducing_tables.write_certify_include(
        results, DOCS / "generated" / "certify_table.inc"
    )


_write_reproducing_tables()


def _documented_names():
    """``(module, name)`` pairs listed in the autosummary tables of ``api.rst``."""
    names, module, in_table = set(), None, False
    for line in (DOCS / "api.rst").read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith((".. currentmodule::", ".. module::")):
            module, in_table = stripped.split("::", 1)[1].strip(), False
        elif stripped.startswith(".. autosummary::"):
            in_table = True
        elif in_table and line.startswith("   ") and stripped:
            if not stripped.startswith(":"):
                names.add((module, stripped))
        elif stripped and not line.startswith(" "):
            in_table = False
    return names


def _check_api_complete(app):
    """Warn (an error under ``-W``) for a public name missing from ``api.rst``."""
    import importlib

    from sphinx.util import logging

    logger = logging.getLogger("sklearn_rrank.docs")
    documented = _documented_names()
    for modname in (
        "sklearn_rrank",
        "sklearn_rrank.datasets",
        "sklearn_rrank.plotting",
    ):
        module = importlib.import_module(modname)
        for name in getattr(module, "__all__", []):
            if name.startswith("__"):
                continue
            if (modname, name) not in documented:
                logger.warning(
                    f"public name {modname}.{name} is not listed in docs/api.rst",
                    location="api",
                )


# Labels of scikit-learn's own documentation that the docstrings of inherited methods
# (set_output, get_metadata_routing) refer to: linked to scikit-learn's site, since
# intersphinx (which would need the network) is off.
SKLEARN_DOCS = "https://scikit-learn.org/stable/"
SKLEARN_LABELS = {  # label: (page, link text when the reference gives none)
    "metadata_routing": ("metadata_routing.html", "metadata routing"),
    "df_output_transform": ("modules/df_output_transform.html", "set_output API"),
    "sphx_glr_auto_examples_miscellaneous_plot_set_output.py": (
        "auto_examples/miscellaneous/plot_set_output.html",
        "scikit-learn's set_output example",
    ),
}


def _sklearn_reference(app, env, node, contnode):
    """Resolve a ``:ref:`` to scikit-learn's documentation as an external link.

    Only the labels in ``SKLEARN_LABELS`` are resolved; any other missing label
    still warns (an error under ``-W``).
    """
    from docutils import nodes

    if node.get("reftype") != "ref" or node.get("reftarget") not in SKLEARN_LABELS:
        return None
    page, title = SKLEARN_LABELS[node["reftarget"]]
    ref = nodes.reference("", "", internal=False, refuri=SKLEARN_DOCS + page)
    ref += contnode if node.get("refexplicit") else nodes.inline("", title)
    return ref


def setup(app):
    app.connect("builder-inited", _check_api_complete)
    app.connect("missing-reference", _sklearn_reference)
