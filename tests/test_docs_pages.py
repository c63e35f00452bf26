"""The hand-written documentation pages: what a reader must never find there.

Their code blocks run as doctests (``docs/conftest.py``); this module checks the
text: no commit hash, load figure or private module name in a user page, and no
page that a reader cannot reach.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.rst")) + sorted((DOCS / "user_guide").glob("*.rst"))
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))
USER_TEXT = [*PAGES, *EXAMPLES, ROOT / "README.md"]
IDS = [p.relative_to(ROOT).as_posix() for p in USER_TEXT]

# a commit hash (7 to 40 hex digits with at least one letter and one digit), or a
# machine's load figure: the story of one run, which no user page tells
HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
LOAD = re.compile(r"load (average|~|of \d)|\(load \d", re.IGNORECASE)
PRIVATE = re.compile(r"sklearn_rrank(\.[a-z_]+)*\._[a-z]")


@pytest.mark.parametrize("path", USER_TEXT, ids=IDS)
def test_no_run_diary_in_user_pages(path):
    text = path.read_text()
    assert not HASH.findall(text), HASH.findall(text)
    assert not LOAD.search(text), LOAD.search(text)


@pytest.mark.parametrize("path", USER_TEXT, ids=IDS)
def test_no_private_names_in_user_pages(path):
    assert not PRIVATE.findall(path.read_text()), PRIVATE.findall(path.read_text())


def test_every_page_is_in_a_toctree():
    linked = set()
    for page in PAGES:
        text = page.read_text()
        for block in re.findall(r"\.\. toctree::\n((?:\s+.*\n?)*)", text):
            for line in block.splitlines():
                name = line.strip()
                if name and not name.startswith(":"):
                    linked.add((page.parent / name).resolve())
    missing = [
        p.relative_to(DOCS).as_posix()
        for p in PAGES
        if p.name != "index.rst" and p.with_suffix("").resolve() not in linked
    ]
    assert not missing, missing


def test_pages_with_python_show_it_as_tested_doctests():
    """Python blocks are ``>>>`` doctests, so the test suite checks their output."""
    untested = []
    for page in PAGES:
        text = page.read_text()
        for m in re.finditer(r"\.\. code-block:: python\n", text):
            untested.append(f"{page.name}:{text[: m.start()].count(chr(10)) + 1}")
    assert not untested, untested
