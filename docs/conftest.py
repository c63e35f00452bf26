"""pytest collects the code of the documentation pages as doctests.

``pyproject.toml`` adds ``docs`` and ``README.md`` to the test paths with
``--doctest-glob``, so every ``>>>`` block of ``docs/*.rst``,
``docs/user_guide/*.rst`` and the README runs under ``python -m pytest`` with its
printed output checked. Only the hand-written pages are collected: the build output
and the pages that Sphinx generates from docstrings (tested where they live) are
not, nor is ``conf.py`` (importing it prepares a build).
"""

import os

import pytest

collect_ignore = ["conf.py"]
collect_ignore_glob = ["_build/*", "generated/*", "auto_examples/*", "_extra/*"]


@pytest.fixture(autouse=True)
def _page_in_tmp_dir(request, tmp_path):
    """Run each page in an empty directory, as a reader would in a fresh one.

    Pages write files (``planted.npz``, ``cert.npz``); they go to a temporary
    directory, not into the checkout.
    """
    if request.node.__class__.__name__ != "DoctestItem":
        yield
        return
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        yield
    finally:
        os.chdir(old)
