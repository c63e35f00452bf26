"""Open the built documentation in headless Chromium and check what a reader sees.

Usage::

    python docs/browser_check.py [BUILD_DIR]     # default: docs/_build/html
    python docs/browser_check.py --no-figures [BUILD_DIR]   # plot_gallery=0 builds
    python docs/browser_check.py --static-only [BUILD_DIR]  # the HTML text only

Serves ``BUILD_DIR`` on a localhost port and opens the main pages (index, install,
getting started, every user-guide page, the gallery index and one example, the API
index and two class pages, the command line, reproducing, changelog, citation) in
headless Chromium at 1280 px width, saves a screenshot of each to
``docs/_build/screenshots/`` and fails (exit status 1) if, after the page has loaded
and MathJax has typeset it,

* an image is missing (not loaded, or ``naturalWidth`` 0),
* a gallery thumbnail is sphinx-gallery's placeholder (``no_image.png``: the example
  was not run, or made no figure; ``--no-figures`` allows it, for builds with
  ``-D plot_gallery=0``),
* math is shown as raw TeX: visible text outside code blocks contains ``\\(``,
  ``\\[``, ``$$``, ``\\frac`` or ``\\operatorname``,
* a Markdown table is shown as text: a ``<pre>`` block has a ``|---|`` rule line, or
* a page title is clipped: the ``h1`` text is wider than the heading's box or runs
  past the right edge of the article, or
* an API page lacks what a scikit-learn user looks for (``REQUIRED``): the
  ``RoundingRankFactorization`` page must document the inherited methods
  ``get_params``, ``set_params``, ``set_output``, ``get_feature_names_out`` and
  ``fit_transform`` and show its "Examples using" gallery.

Before the browser runs, every HTML page of the build is read as text (this part
needs no browser and always runs), and the check fails if a page

* shows a Python traceback (``Traceback (most recent call last)``: an example or a
  generated include that failed while the page was built),
* shows a heading or a merge-conflict marker as text: a paragraph holds a line of
  ``=`` or ``-`` only (a stray ``=======``, or an underline too short to make a
  title) or a line starting with ``<<<<<<<`` or ``>>>>>>>``,
* has a table with an interval-like cell (``[4, 8]``) that was not rendered from a
  benchmark's JSON: tables rendered by ``docs/reproducing_tables.py`` carry the class
  ``rrank-from-json``; any other table with such a number was typed by hand and goes
  stale, or
* links to a page or an anchor of the build that does not exist.

The pages are checked by a small script that the server appends to each HTML page; it
writes its findings into the page, and Chromium's ``--dump-dom`` hands them back.
Without Chromium (``chromium``, ``chromium-browser`` or ``google-chrome`` on the
PATH, or ``/usr/bin/chromium``), or with ``--static-only``, the browser's check is
skipped with a message and the exit status is the static check's. No network access
is used: Chromium runs with background networking, updates and sync off, on a fresh
profile.
"""

import functools
import html
import html.parser
import http.server
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.parse
from pathlib import Path

DOCS = Path(__file__).resolve().parent
SHOTS = DOCS / "_build" / "screenshots"
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
BUDGET_MS = 15000  # virtual time for loading, MathJax and the check
RAW_TEX = ("\\(", "\\)", "\\[", "\\]", "$$", "\\frac", "\\operatorname")
WINDOW = "--window-size=1280,1600"
# pages every build has (the user-guide pages and a gallery example are added)
PAGES = (
    "index.html",
    "install.html",
    "getting_started.html",
    "choosing.html",
    "data.html",
    "faq.html",
    "results.html",
    "auto_examples/index.html",
    "api.html",
    "generated/sklearn_rrank.RoundingRankFactorization.html",
    "generated/sklearn_rrank.plotting.FactorizationDisplay.html",
    "cli.html",
    "reproducing.html",
    "changelog.html",
    "citation.html",
)
# what some pages must show: documented objects (the ``id`` of a ``dt.sig``
# signature) and visible text
_RRF = "sklearn_rrank.RoundingRankFactorization"
REQUIRED = {
    f"generated/{_RRF}.html": {
        "objects": [
            f"{_RRF}.{m}"
            for m in (
                "fit",
                "get_params",
                "set_params",
                "set_output",
                "get_feature_names_out",
                "fit_transform",
            )
        ],
        "text": ["Examples using"],  # the class name is in <code>
    },
}

# -- static checks of the built pages (no browser) -----------------------------------
#: the class of the tables that docs/reproducing_tables.py renders from JSON
FROM_JSON = "rrank-from-json"
TRACEBACK = "Traceback (most recent call last)"
INTERVAL = re.compile(r"\[\s*\d+\s*,\s*\d+\s*\]")
# a line of a paragraph that is an underline or a Git conflict marker
AS_TEXT = re.compile(r"^\s*(={2,}|-{4,}|~{4,}|\^{4,}|<{7}.*|>{7}.*)\s*$", re.MULTILINE)


class _PageParser(html.parser.HTMLParser):
    """The ids, the links and the hand-typed table cells of one HTML page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.links, self.typed_cells, self.text = set(), [], [], []
        self.as_text = []  # paragraph lines that were meant as markup
        self._para = None  # text of the open paragraph
        self._tables = []  # for each open table: rendered from JSON?
        self._cell = None  # text of the open cell of a hand-typed table

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("name"):
            self.ids.add(attrs["name"])
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        if tag == "table":
            classes = (attrs.get("class") or "").split()
            inherited = bool(self._tables) and self._tables[-1]
            self._tables.append(FROM_JSON in classes or inherited)
        elif tag in ("td", "th") and self._tables and not self._tables[-1]:
            self._cell = []
        if tag == "p":
            self._para = []

    def handle_endtag(self, tag):
        if tag == "p" and self._para is not None:
            found = AS_TEXT.findall("".join(self._para))
            self.as_text += [line.strip() for line in found]
            self._para = None
        if tag == "table" and self._tables:
            self._tables.pop()
        elif tag in ("td", "th") and self._cell is not None:
            text = " ".join("".join(self._cell).split())
            if INTERVAL.search(text):
                self.typed_cells.append(text)
            self._cell = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)
        if self._para is not None:
            self._para.append(data)


def parse_page(text):
    """A :class:`_PageParser` fed with the HTML ``text``."""
    parser = _PageParser()
    parser.feed(text)
    parser.close()
    return parser


def _internal_target(href):
    """``(path, fragment)`` of a link within the site, or None for other links."""
    parts = urllib.parse.urlsplit(href)
    if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
        return None
    return urllib.parse.unquote(parts.path), urllib.parse.unquote(parts.fragment)


def static_problems(build):
    """``{relative page: [problems]}`` for every HTML page of ``build``.

    Tracebacks, numbers in tables not rendered from JSON, and internal links to a
    missing file or to a missing anchor of an existing page.
    """
    build = Path(build)
    parsed = {}
    for path in sorted(build.rglob("*.html")):
        rel = path.relative_to(build).as_posix()
        if rel.startswith(("_static/", "_sources/", "_modules/", "_images/")):
            continue
        parsed[rel] = parse_page(path.read_text(errors="replace"))
    out = {}
    for rel, page in parsed.items():
        problems = []
        if TRACEBACK in "".join(page.text):
            problems.append("shows a Python traceback")
        if page.as_text:
            problems.append(
                f"a heading or merge-conflict marker shown as text: {page.as_text[:3]}"
            )
        if page.typed_cells:
            problems.append(
                "table numbers not rendered from a benchmark's JSON (no class "
                f"{FROM_JSON!r}): {page.typed_cells[:3]}"
            )
        broken = []
        for href in page.links:
            target = _internal_target(href)
            if target is None:
                continue
            path, fragment = target
            if path:
                file = (build / rel).parent / path
                if file.is_dir():
                    file = file / "index.html"
                if not file.exists():
                    broken.append(href)
                    continue
                other = file.resolve().relative_to(build.resolve()).as_posix()
            else:
                other = rel
            if fragment and other in parsed and fragment not in parsed[other].ids:
                broken.append(href)
        if broken:
            problems.append(f"broken internal links: {sorted(set(broken))[:5]}")
        if problems:
            out[rel] = problems
    return out


# Appended to every HTML page served: load every image now (no lazy loading), wait
# for the page, the images and MathJax, then write the findings into the page.
CHECK_SCRIPT = r"""
<script>
(function () {
  document.querySelectorAll("img").forEach(function (img) { img.loading = "eager"; });
  function done() {
    var broken = [], placeholders = [], thumbs = [];
    document.querySelectorAll("img").forEach(function (img) {
      var src = img.getAttribute("src") || "";
      if (!img.complete || img.naturalWidth === 0) { broken.push(src); }
      if (/no_image\.png$/.test(src)) { placeholders.push(src); }
      if (/_thumb\.png$/.test(src)) {
        thumbs.push(new URL(src, location.href).pathname);
      }
    });
    // a Markdown table rule (|---|---|) inside a <pre>: a table shown as text
    var markdown = [];
    var rule = /^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?\s*$/m;
    document.querySelectorAll("pre").forEach(function (pre) {
      var m = rule.exec(pre.textContent);
      if (m) { markdown.push(m[0].trim()); }
    });
    // a title wider than its box, or running past the right edge of the article
    var clipped = [];
    document.querySelectorAll("h1").forEach(function (h) {
      var range = document.createRange();
      range.selectNodeContents(h);
      var text = range.getBoundingClientRect(), box = h.getBoundingClientRect();
      var article = h.closest("article, main") || document.body;
      var right = article.getBoundingClientRect().right;
      if (h.scrollWidth > h.clientWidth + 1 || text.right > box.right + 1 ||
          text.right > right + 1) {
        clipped.push(h.textContent.replace("#", "").trim() + " (text " +
          Math.round(text.width) + " px, heading " + Math.round(box.width) + " px)");
      }
    });
    var objects = [];
    document.querySelectorAll("dt.sig[id]").forEach(function (dt) {
      objects.push(dt.id);
    });
    var clone = document.body.cloneNode(true);
    clone.querySelectorAll("pre, code, script, style, mjx-container, .highlight")
      .forEach(function (el) { el.remove(); });
    var out = document.createElement("pre");
    out.id = "browser-check-result";
    out.style.display = "none";
    out.textContent = JSON.stringify({
      images: document.querySelectorAll("img").length,
      broken: broken,
      placeholders: placeholders,
      thumbs: thumbs,
      markdown: markdown,
      clipped: clipped,
      objects: objects,
      viewport: window.innerWidth,
      math: document.querySelectorAll("mjx-container").length,
      mathjax: !!(window.MathJax && window.MathJax.version),
      text: clone.innerText || clone.textContent
    });
    document.body.appendChild(out);
  }
  window.addEventListener("load", function () {
    var mj = window.MathJax && window.MathJax.startup && window.MathJax.startup.promise;
    Promise.resolve(mj).then(function () { setTimeout(done, 200); }, done);
  });
})();
</script>
"""


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Static files; HTML pages get the check script appended."""

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        if path.suffix != ".html" or not path.is_file():
            return super().send_head()
        body = path.read_bytes()
        body = body.replace(b"</body>", CHECK_SCRIPT.encode() + b"</body>", 1)
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass


def find_browser():
    """Path of a Chromium executable, or None."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def pages(build):
    """``(name, relative path)`` of the pages to check (those that exist)."""
    rels = list(PAGES)
    guide = sorted((build / "user_guide").glob("*.html"))
    rels[3:3] = [p.relative_to(build).as_posix() for p in guide]
    gallery = sorted((build / "auto_examples").glob("plot_*.html"))
    preferred = build / "auto_examples" / "plot_nested_approx.html"
    example = preferred if preferred.exists() else (gallery[0] if gallery else None)
    if example is not None:
        rels.insert(
            rels.index("auto_examples/index.html") + 1,
            example.relative_to(build).as_posix(),
        )
    out = []
    for rel in rels:
        if (build / rel).exists():
            name = rel.removesuffix(".html").replace("/", "_")
            out.append((name, rel))
    return out


def run_browser(browser, args, timeout=120):
    """Run Chromium with a fresh profile; return its stdout."""
    with tempfile.TemporaryDirectory(prefix="rrank-chromium-") as profile:
        proc = subprocess.run(
            [browser, *FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    return proc.stdout


_PLACEHOLDERS = {}


def _placeholder(size, cache=_PLACEHOLDERS):
    """Bytes of sphinx-gallery's ``no_image.png`` scaled to ``size`` as it does it.

    Without figures (``plot_gallery=0``, or an example that draws nothing)
    sphinx-gallery writes this scaled placeholder under the example's own thumbnail
    name, so the file name alone does not tell. None if sphinx-gallery is missing.
    """
    if size not in cache:
        try:
            import sphinx_gallery
            from sphinx_gallery.gen_rst import scale_image
        except ImportError:
            cache[size] = None
            return None
        src = Path(sphinx_gallery.__file__).parent / "_static" / "no_image.png"
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "thumb.png"
            scale_image(str(src), str(out), *size)
            cache[size] = out.read_bytes()
    return cache[size]


def placeholder_thumbnails(build, paths):
    """Those of the thumbnails (URL paths) that are sphinx-gallery's placeholder."""
    try:
        from PIL import Image
    except ImportError:
        return []
    out = []
    for path in sorted(set(paths)):
        file = build / path.lstrip("/")
        if not file.is_file():
            continue
        with Image.open(file) as img:
            size = img.size
        if file.read_bytes() == _placeholder(size):
            out.append(path.lstrip("/"))
    return out


def missing_required(rel, result):
    """What page ``rel`` must show (``REQUIRED``) but ``result`` lacks (strings)."""
    need = REQUIRED.get(rel, {})
    objects = set(result.get("objects", []))
    text = " ".join(result.get("text", "").split())
    missing = [
        f"no entry for {name}"
        for name in need.get("objects", [])
        if name not in objects
    ]
    missing += [f"no text {t!r}" for t in need.get("text", []) if t not in text]
    return missing


def check_page(browser, url, shot, build, figures=True, rel=""):
    """Problems found on one page (a list of strings; empty if fine)."""
    # one Chromium run writes the screenshot and prints the DOM, both taken after
    # the virtual time budget (page, images, MathJax and the check script)
    args = [
        f"--virtual-time-budget={BUDGET_MS}",
        WINDOW,
        f"--screenshot={shot}",
        "--dump-dom",
        url,
    ]
    dom = run_browser(browser, args)
    if not dom.strip() and not shot.exists():
        # Chromium exited without output (a crashed run, not a page fault): once more
        dom = run_browser(browser, args)
    problems = []
    if not shot.exists() or shot.stat().st_size == 0:
        problems.append("no screenshot was written")
    m = re.search(r'<pre id="browser-check-result"[^>]*>(.*?)</pre>', dom, re.S)
    if m is None:
        return problems + ["the check script did not finish (page did not load?)"]
    result = json.loads(html.unescape(m.group(1)))
    if result["broken"]:
        problems.append(f"images not shown: {result['broken']}")
    placeholders = result["placeholders"] + placeholder_thumbnails(
        build, result["thumbs"]
    )
    if placeholders and figures:
        problems.append(f"placeholder thumbnails (no figure): {placeholders}")
    if result["markdown"]:
        problems.append(f"Markdown table shown as text: {result['markdown'][0]!r}")
    if result["clipped"]:
        problems.append(
            f"clipped title at {result['viewport']} px: {'; '.join(result['clipped'])}"
        )
    missing = missing_required(rel, result)
    if missing:
        problems.append(f"API page incomplete: {'; '.join(missing)}")
    raw = sorted({tex for tex in RAW_TEX if tex in result["text"]})
    if raw:
        where = result["text"].find(raw[0])
        snippet = " ".join(result["text"][max(where - 60, 0) : where + 60].split())
        problems.append(f"raw TeX visible ({', '.join(raw)}): ...{snippet}...")
    print(
        f"  {result['images']} image(s), {result['math']} formula(s) typeset, "
        f"MathJax loaded: {result['mathjax']}"
    )
    return problems


def main(argv=None):
    """Run the check; return the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    figures = "--no-figures" not in argv
    static_only = "--static-only" in argv
    argv = [a for a in argv if a not in ("--no-figures", "--static-only")]
    build = Path(argv[0]).resolve() if argv else DOCS / "_build" / "html"
    if not (build / "index.html").exists():
        print(f"browser check failed: {build / 'index.html'} not found (build first)")
        return 1
    static = static_problems(build)
    for rel, problems in static.items():
        print(rel)
        for p in problems:
            print(f"  FAIL: {p}")
    print(
        f"static check of {sum(1 for _ in build.rglob('*.html'))} pages:",
        "FAILED" if static else "passed",
    )
    browser = None if static_only else find_browser()
    if browser is None:
        if static_only:
            print("browser check skipped: --static-only")
        else:
            print(
                "browser check skipped: Chromium not found (apt-get install chromium)"
            )
        return 1 if static else 0
    SHOTS.mkdir(parents=True, exist_ok=True)
    handler = functools.partial(_Handler, directory=str(build))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    failed = False
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/"
        for name, rel in pages(build):
            shot = SHOTS / f"{name}.png"
            shot.unlink(missing_ok=True)
            print(f"{rel} -> {shot.relative_to(DOCS.parent)}")
            problems = check_page(browser, base + rel, shot, build, figures, rel)
            for p in problems:
                print(f"  FAIL: {p}")
            failed |= bool(problems)
    finally:
        server.shutdown()
        server.server_close()
    print("browser check:", "FAILED" if failed else "passed")
    return 1 if failed or static else 0


if __name__ == "__main__":
    sys.exit(main())
