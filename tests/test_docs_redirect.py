"""docs/_extra/user_guide.html: the old one-page user guide redirects to its pages."""

import json
import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"
REDIRECT = DOCS / "_extra" / "user_guide.html"


def _section_ids(rst):
    """The ids docutils gives the section titles of an rst file."""
    lines = rst.read_text().splitlines()
    ids = []
    for title, rule in zip(lines, lines[1:], strict=False):
        if title.strip() and re.fullmatch(r"([=\-~^])\1{2,}", rule.strip()):
            if not re.fullmatch(r"([=\-~^])\1{2,}", title.strip()):
                words = re.findall(r"[a-z0-9]+", title.lower())
                ids.append("-".join(words))
    return ids


def test_redirect_targets_exist():
    text = REDIRECT.read_text()
    assert 'http-equiv="refresh" content="0; url=user_guide/index.html"' in text
    assert (DOCS / "user_guide" / "index.rst").exists()
    pages = json.loads(re.search(r"var pages = (\{.*?\});", text, re.S).group(1))
    assert pages, "no section map"
    for page, ids in pages.items():
        rst = DOCS / "user_guide" / f"{page}.rst"
        assert rst.exists(), page
        missing = set(ids) - set(_section_ids(rst))
        assert not missing, (page, missing)


def test_conf_copies_the_redirect():
    assert 'html_extra_path = ["_extra"]' in (DOCS / "conf.py").read_text()
