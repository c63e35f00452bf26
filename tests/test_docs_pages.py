"""The hand-written documentation pages: what a reader must never find there.

Their code blocks run as doctests (``--doctest-glob`` in ``pyproject.toml``); this
module checks the text: every page parses with docutils without a warning, holds
no merge-conflict marker, no sentence cut off before a heading and no heading shown
as text; no commit hash, run diary or private module name in a user page, and no
page that a reader cannot reach.
"""

import io
import re
from collections import defaultdict
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
# words of a development diary: the project's shared data folder, a shared or busy
# computer, its load ("load_digits", "loader" or "shared between" are not)
DIARY = re.compile(
    r"\.\./shared\b|\bshared (copy|data folder|machine|computer|vm|\d+-core)\b"
    r"|\bthat other jobs shared\b|\b(lightly|heavily|un)\s+loaded\b|\bspeed and load\b"
    r"|\bloaded (machine|computer|system)\b|\b(cpu|system|machine's|computer's)"
    r"\s+load\b|\bload\s+\d|\bbusy\b|\bbusier\b"
    r"|\b\d+-core (x86-64 )?(linux )?machine\b",
    re.IGNORECASE,
)
PRIVATE = re.compile(r"sklearn_rrank(\.[a-z_]+)*\._[a-z]")


@pytest.mark.parametrize("path", USER_TEXT, ids=IDS)
def test_no_run_diary_in_user_pages(path):
    text = path.read_text()
    assert not HASH.findall(text), HASH.findall(text)
    assert not LOAD.search(text), LOAD.search(text)
    assert not DIARY.search(text), DIARY.search(text)


@pytest.mark.parametrize(
    "line",
    [
        # the development data folder beside a clone (spelled in two parts here so
        # that no file of the package or its tests names that folder)
        "with SKLEARN_RRANK_DATA=.." + "/shared/data for the project's shared copy",
        "On a shared 2-core machine the bounds took 66.8 s",
        "(9.2 s on the same machine, lightly loaded)",
        "depends on the machine's speed and load",
        "a slower or busier machine may certify a larger bound",
        "ours on a 2-core x86-64 Linux machine with 24 GB",
        "measured with load 2.5 before",
    ],
)
def test_diary_check_flags_development_words(line):
    assert DIARY.search(line) or LOAD.search(line)


@pytest.mark.parametrize(
    "line",
    [
        ">>> from sklearn.datasets import load_digits",
        "the loaders of sklearn_rrank.datasets: load_binary_matrix, load_edge_list",
        "the budget is shared between the methods",
        "the data is loaded into memory once",
        "on one machine, threads or processes; on a cluster, many machines",
    ],
)
def test_diary_check_passes_ordinary_words(line):
    assert not DIARY.search(line) and not LOAD.search(line)


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


# -- the page's structure: a docutils parse, merge markers, cut sentences ------------

# Sphinx's roles and directives, unknown to plain docutils: parsed as stand-ins so
# that docutils reports only real mistakes (the Sphinx build checks the targets)
SPHINX_ROLES = (
    "attr class data doc envvar exc file func kbd meth mod obj option program "
    "py:class py:func py:meth py:mod py:obj ref term"
).split()
SPHINX_DIRECTIVES = (
    "autoclass autofunction automodule autosummary code-block currentmodule "
    "highlight include literalinclude module only plot seealso sourcecode "
    "testcode testoutput toctree versionadded versionchanged"
).split()
# a line of Git's conflict markers; "=======" is told apart in the parsed tree
MERGE_MARKER = re.compile(r"^(<{7}|>{7}|\|{7})( |$)", re.MULTILINE)
# a line of adornment characters only: an underline, when it is not a title's
ADORNMENT = re.compile(r"^([=\-~^\"'`#*+:.])\1+$")
# the end of a finished sentence: a stop, maybe inside a bracket, quote or markup
SENTENCE_END = re.compile(r"[.!?:;]['\")\]*`’”]*$")


def _stand_in_directive(parse_content):
    from docutils import nodes
    from docutils.parsers.rst import Directive, directives

    class StandIn(Directive):
        has_content = True
        optional_arguments = 10
        final_argument_whitespace = True
        option_spec = defaultdict(lambda: directives.unchanged)

        def run(self):
            node = nodes.container()
            if parse_content and self.content:
                content = self.content
                if parse_content == "glossary":
                    content = _one_term_per_entry(content)
                self.state.nested_parse(content, self.content_offset, node)
            return [node]

    return StandIn


def _one_term_per_entry(content):
    """A glossary's lines with the several terms of one entry on one line.

    Sphinx allows an entry to start with several term lines; a plain definition
    list does not.
    """
    from docutils.statemachine import StringList

    lines, sources = [], []
    for i, line in enumerate(content):
        term = line.strip() and not line[:1].isspace()
        before = lines[-1] if lines else ""
        if term and before.strip() and not before[:1].isspace():
            lines[-1] = f"{before} / {line}"
            continue
        lines.append(line)
        sources.append(content.items[i])
    return StringList(lines, items=sources)


def _register_sphinx_stand_ins():
    from docutils import nodes
    from docutils.parsers.rst import directives, roles

    for name in SPHINX_ROLES:
        roles.register_generic_role(name, nodes.literal)
    for name in SPHINX_DIRECTIVES:
        directives.register_directive(name, _stand_in_directive(parse_content=False))
    # the glossary's text is read like any other: a definition list of terms
    directives.register_directive("glossary", _stand_in_directive("glossary"))


def _blocks(node):
    """The titles and body elements of ``node`` in reading order (lists whole)."""
    from docutils import nodes

    for child in node.children:
        if isinstance(child, nodes.section):
            yield from _blocks(child)
        elif isinstance(child, nodes.title):
            yield child
        elif isinstance(child, nodes.container):
            yield from _blocks(child)
        else:
            yield child


def rst_problems(text, name="page.rst"):
    """What a reader would see broken in the reST ``text``, as a list of messages.

    docutils warnings and errors, a Git conflict marker, a heading rendered as text
    (a line of ``=`` or ``-`` inside a paragraph: a stray ``=======`` or an
    underline too short to make a title), and a paragraph that ends without a stop
    right before a heading or at the end of the page (a sentence cut off).
    """
    pytest.importorskip("docutils")
    from docutils import nodes
    from docutils.core import publish_doctree

    _register_sphinx_stand_ins()
    problems = []
    for m in MERGE_MARKER.finditer(text):
        line = text[: m.start()].count("\n") + 1
        problems.append(f"{name}:{line}: merge-conflict marker {m.group(0)!r}")
    warnings = io.StringIO()
    doctree = publish_doctree(
        text,
        source_path=name,
        settings_overrides={
            "report_level": 2,
            "halt_level": 5,
            "warning_stream": warnings,
            "file_insertion_enabled": False,
            "raw_enabled": False,
            "input_encoding": "unicode",
        },
    )
    problems += [w for w in warnings.getvalue().splitlines() if w.strip()]
    for para in doctree.findall(nodes.paragraph):
        for line in para.astext().splitlines():
            if ADORNMENT.match(line.strip()):
                problems.append(
                    f"{name}:{para.line}: a heading or marker shown as text: "
                    f"{line.strip()!r} inside a paragraph"
                )
    blocks = [*_blocks(doctree), None]
    for block, after in zip(blocks[:-1], blocks[1:], strict=True):
        if not isinstance(block, nodes.paragraph):
            continue
        if after is not None and not isinstance(after, nodes.title):
            continue
        end = block.astext().rstrip()
        if end and not SENTENCE_END.search(end):
            where = "the end of the page" if after is None else "a heading"
            problems.append(
                f"{name}:{block.line}: a sentence cut off before {where}: "
                f"...{end[-60:]!r}"
            )
    return problems


def markdown_problems(text, name="README.md"):
    """Git conflict markers and sentences cut off before a heading in Markdown."""
    problems = []
    fenced = False
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        if MERGE_MARKER.match(line) or line == "=" * 7:
            problems.append(f"{name}:{i + 1}: merge-conflict marker {line!r}")
        if line.startswith("#") and i >= 2 and not lines[i - 1].strip():
            last = lines[i - 2].rstrip()
            prose = last and not re.match(r"\s*([-*+|<>]|\d+\.|```|#|!\[)", last)
            if prose and not SENTENCE_END.search(last):
                problems.append(
                    f"{name}:{i - 1}: a sentence cut off before a heading: {last!r}"
                )
    if fenced:
        problems.append(f"{name}: a code fence is never closed")
    return problems


@pytest.mark.parametrize("path", PAGES, ids=[p.name for p in PAGES])
def test_page_parses_cleanly(path):
    problems = rst_problems(path.read_text(), path.relative_to(ROOT).as_posix())
    assert not problems, problems


def test_readme_has_no_merge_marker_or_cut_sentence():
    readme = ROOT / "README.md"
    assert not markdown_problems(readme.read_text()), markdown_problems(
        readme.read_text()
    )


GOOD_PAGE = """\
=====
Title
=====

A paragraph
that ends.

Section
=======

=====  =====
a      b
=====  =====
1      2
=====  =====

- a list item without a stop

Last words (in brackets).
"""


@pytest.mark.parametrize(
    "bad, expected",
    [
        # the broken merge of docs/install.rst: a stray marker in a paragraph
        (
            GOOD_PAGE.replace("that ends.", "that\n=======\nends."),
            "shown as text",
        ),
        (GOOD_PAGE + "\n<<<<<<< HEAD\n", "merge-conflict marker"),
        (GOOD_PAGE + "\n>>>>>>> branch\n", "merge-conflict marker"),
        # a heading whose underline is too short to make a title
        (GOOD_PAGE + "\nData sets\n==", "shown as text"),
        # a sentence cut off before a heading, and at the end of the page
        (
            GOOD_PAGE.replace("that ends.", "writes a source and a"),
            "cut off before a heading",
        ),
        (
            GOOD_PAGE.replace("(in brackets).", "(in brackets) and"),
            "cut off before the end of the page",
        ),
        # docutils' own complaints
        (GOOD_PAGE + "\nShort title\n=====\n\nText.\n", "underline too short"),
        (GOOD_PAGE + "\n.. no-such-directive::\n", "no-such-directive"),
        (GOOD_PAGE + "\n- item\ntext.\n", "without a blank line"),
    ],
)
def test_page_check_fails_on_a_broken_page(bad, expected):
    assert rst_problems(GOOD_PAGE) == []
    problems = rst_problems(bad)
    assert any(expected in p for p in problems), problems


def test_page_check_reads_glossary_and_sphinx_markup():
    page = GOOD_PAGE + (
        "\n.. glossary::\n   :sorted:\n\n   term\n   other term\n"
        "      A definition, see :func:`f`.\n"
        "\n.. code-block:: python\n\n   x = 1\n"
    )
    assert rst_problems(page) == []
    cut = page.replace("see :func:`f`.", "see :func:`f` and\n\n   other\n      x")
    assert rst_problems(cut + "\nNext\n====\n\nText.\n") == []


def test_markdown_check_fails_on_a_broken_readme():
    good = "# Title\n\nSome text.\n\n## Next\n\n- item\n\n## Last\n"
    assert markdown_problems(good) == []
    assert markdown_problems(good.replace("Some text.", "Some text\n=======\n"))
    assert markdown_problems(good.replace("Some text.", "writes a source and a"))
    assert markdown_problems(good + "```python\nx\n")
