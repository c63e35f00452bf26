"""docs/browser_check.py without a browser: the page list and the thumbnail test."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs"))
browser_check = pytest.importorskip("browser_check")


def _touch(build, rel):
    path = build / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("<html><body></body></html>")


def test_pages_lists_the_existing_main_pages(tmp_path):
    for rel in (
        "index.html",
        "install.html",
        "user_guide/index.html",
        "user_guide/lower_bounds.html",
        "auto_examples/index.html",
        "auto_examples/plot_nested_approx.html",
        "reproducing.html",
    ):
        _touch(tmp_path, rel)
    rels = [rel for _, rel in browser_check.pages(tmp_path)]
    assert rels == [
        "index.html",
        "install.html",
        "user_guide/index.html",
        "user_guide/lower_bounds.html",
        "auto_examples/index.html",
        "auto_examples/plot_nested_approx.html",
        "reproducing.html",
    ]
    names = [name for name, _ in browser_check.pages(tmp_path)]
    assert len(set(names)) == len(names)  # one screenshot per page


def test_placeholder_thumbnail_is_recognised_by_content(tmp_path):
    pytest.importorskip("PIL")
    pytest.importorskip("sphinx_gallery")
    from PIL import Image

    images = tmp_path / "_images"
    images.mkdir()
    # what sphinx-gallery writes for an example without a figure
    (images / "sphx_glr_plot_a_thumb.png").write_bytes(
        browser_check._placeholder((400, 280))
    )
    Image.new("RGB", (400, 280), (200, 30, 30)).save(
        images / "sphx_glr_plot_b_thumb.png"
    )
    found = browser_check.placeholder_thumbnails(
        tmp_path,
        ["/_images/sphx_glr_plot_a_thumb.png", "/_images/sphx_glr_plot_b_thumb.png"],
    )
    assert found == ["_images/sphx_glr_plot_a_thumb.png"]


def test_static_only_skips_the_browser(capsys, tmp_path):
    _touch(tmp_path, "index.html")
    assert browser_check.main(["--static-only", str(tmp_path)]) == 0
    assert "skipped" in capsys.readouterr().out


def _page(build, rel, body):
    path = build / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<html><body>{body}</body></html>")


def test_static_check_passes_a_clean_site(tmp_path):
    _page(
        tmp_path,
        "index.html",
        '<a href="a.html#sec">A</a> <a href="#top">top</a>'
        '<span id="top"></span> <a href="https://example.org/x.html">out</a>',
    )
    _page(
        tmp_path,
        "a.html",
        '<section id="sec"><table><tr><td>12 s</td></tr></table></section>',
    )
    assert browser_check.static_problems(tmp_path) == {}


def test_static_check_flags_a_traceback(tmp_path):
    _page(
        tmp_path,
        "auto_examples/plot_x.html",
        "<pre>Traceback (most recent call last):\n  File ...\nValueError</pre>",
    )
    problems = browser_check.static_problems(tmp_path)
    assert list(problems) == ["auto_examples/plot_x.html"]
    assert "traceback" in problems["auto_examples/plot_x.html"][0]


def test_static_check_flags_headings_and_merge_markers_shown_as_text(tmp_path):
    # docs/install.rst once rendered so: a stray marker and a too-short underline
    _page(
        tmp_path,
        "install.html",
        "<p>writes a source distribution\n=======\npure-Python wheel.</p>"
        "<p>Data sets\n==</p>",
    )
    _page(tmp_path, "faq.html", "<p>&lt;&lt;&lt;&lt;&lt;&lt;&lt; HEAD</p>")
    _page(
        tmp_path,
        "index.html",
        "<h1>Title</h1><p>a = b, and -- or ---- in a sentence.</p>"
        "<pre>=======\n-------</pre>",
    )
    problems = browser_check.static_problems(tmp_path)
    assert sorted(problems) == ["faq.html", "install.html"]
    assert "'=======', '=='" in problems["install.html"][0]
    assert "<<<<<<< HEAD" in problems["faq.html"][0]


def test_static_check_flags_typed_intervals_but_not_rendered_tables(tmp_path):
    rendered = (
        '<table class="docutils rrank-from-json"><tr><td>[6, 97]</td></tr></table>'
    )
    typed = (
        "<table><tr><th>Abstracts</th><td><strong>[1, 272]</strong></td></tr></table>"
    )
    _page(tmp_path, "results.html", rendered)
    _page(tmp_path, "reproducing.html", rendered + typed)
    problems = browser_check.static_problems(tmp_path)
    assert list(problems) == ["reproducing.html"]
    assert "[1, 272]" in problems["reproducing.html"][0]
    assert "rrank-from-json" in problems["reproducing.html"][0]


def test_static_check_flags_broken_internal_links(tmp_path):
    _page(
        tmp_path,
        "user_guide/index.html",
        '<a href="../missing.html">x</a> <a href="../index.html#nowhere">y</a>'
        ' <a href="algorithms.html">z</a> <a href="../index.html#here">w</a>',
    )
    _page(tmp_path, "user_guide/algorithms.html", "")
    _page(tmp_path, "index.html", '<h1 id="here">Home</h1>')
    problems = browser_check.static_problems(tmp_path)
    assert list(problems) == ["user_guide/index.html"]
    (message,) = problems["user_guide/index.html"]
    assert "../missing.html" in message and "../index.html#nowhere" in message
    assert "algorithms.html'" not in message and "#here" not in message


def test_main_fails_on_static_problems_without_a_browser(capsys, tmp_path):
    _page(tmp_path, "index.html", '<a href="gone.html">gone</a>')
    assert browser_check.main([str(tmp_path), "--static-only"]) == 1
    out = capsys.readouterr().out
    assert "broken internal links" in out and "FAILED" in out


def test_api_page_must_list_inherited_methods():
    rel = "generated/sklearn_rrank.RoundingRankFactorization.html"
    need = browser_check.REQUIRED[rel]
    complete = {"objects": need["objects"], "text": " ".join(need["text"])}
    assert browser_check.missing_required(rel, complete) == []
    # the page as it was before the inherited methods were listed
    own_only = {
        "objects": [o for o in need["objects"] if o.rsplit(".", 1)[1] == "fit"],
        "text": "Examples\n using",
    }
    missing = browser_check.missing_required(rel, own_only)
    assert any(m.endswith(".get_params") for m in missing)
    assert any(m.endswith(".set_output") for m in missing)
    assert not any("Examples using" in m for m in missing)  # whitespace-insensitive
    assert browser_check.missing_required("index.html", own_only) == []
