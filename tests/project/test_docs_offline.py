"""The documentation site loads nothing from the network, so that it works opened from
files (``file://``) on a machine without internet: no page, style sheet or script of the
site names an ``http(s)://`` resource to load (hyperlinks ``<a href>`` may lead anywhere),
the tutorials' math is typeset by a MathJax the site carries (docs/hooks.py copies it from
``jupyter-server-mathjax``), and the theme uses the system fonts (``font: false``). With
Chromium, a tutorial with math is opened from its file: its math is typeset and nothing
outside ``file://`` is requested."""

import html.parser
import json
import pathlib
import re
import urllib.parse

import pytest
import yaml
from helpers.browser import ARGS, CHROMIUM, browser_test
from helpers.site import build_site

pytestmark = pytest.mark.slow  # builds the documentation site

ROOT = pathlib.Path(__file__).resolve().parents[2]
MATH_PAGE = "notebooks/03_nesterov_vs_momentum/index.html"  # the update rules, in TeX
REMOTE = re.compile(r"^\s*(?:https?:)?//", re.I)
URL_IN_TEXT = re.compile(r"""(?:https?:)?//[^\s"'`)<>\\]+""", re.I)
# names that look like addresses but are never fetched: XML namespaces (an inline SVG's
# xmlns, MathJax's MathML)
NAMESPACES = ("http://www.w3.org/",)
CSS_LOAD = re.compile(r"""@import\s+(?:url\()?\s*["']?([^"')\s;]+)|url\(\s*["']?([^"')\s]+)""", re.I)
# <link rel=...> that are no load (nothing of the kind is on the site today)
LINK_NOT_LOADED = {"canonical", "alternate", "author", "license", "next", "prev", "help", "search"}
# the theme's bundle names addresses it fetches only for what this site does not use:
# Mermaid diagrams (unpkg.com) and a repository's stars (the GitHub/GitLab API, with
# repo_url); the tests below check that those are off, and the browser test that the
# bundle fetches nothing
THEME_JS = pathlib.PurePosixPath("assets/javascripts")
# the addresses MathJax's code names that it does not fetch: links in its dialogs (About,
# Help, the font warning), licence text and XML namespaces; any other host (a CDN's) fails
NOT_FETCHED_HOSTS = {"www.mathjax.org", "www.stixfonts.org", "github.com", "www.apache.org", "www.w3.org", "exslt.org"}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built into a temporary folder (as tests/project/test_docs.py builds it)."""
    return build_site(tmp_path_factory.mktemp("site"))


def _remote(url):
    return bool(REMOTE.match(url)) and not url.strip().startswith(NAMESPACES)


def _css_loads(css):
    return [a or b for a, b in CSS_LOAD.findall(css)]


class _Loads(html.parser.HTMLParser):
    """What a page loads: attributes that fetch (``src``, ``<link href>``, ``srcset``,
    ``poster``, ``<object data>``), style sheets inline and in ``style=``, and the
    addresses written in inline scripts (MathJax's configuration, module imports)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.loads, self.scripts, self.styles, self._in = [], [], [], None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ("src", "poster", "data-src"):
            if attrs.get(name):
                self.loads.append((tag, name, attrs[name]))
        if tag == "link" and attrs.get("href"):
            rels = set((attrs.get("rel") or "").lower().split())
            if not rels or not rels <= LINK_NOT_LOADED:
                self.loads.append((tag, "href", attrs["href"]))
        if tag == "object" and attrs.get("data"):
            self.loads.append((tag, "data", attrs["data"]))
        for name in ("srcset", "imagesrcset"):
            for part in (attrs.get(name) or "").split(","):
                if part.strip():
                    self.loads.append((tag, name, part.split()[0]))
        if attrs.get("style"):
            self.styles.append(attrs["style"])
        if tag in ("script", "style"):
            self._in = tag
        if tag == "script" and (attrs.get("type") or "").endswith("json"):
            self._in, self._json = "json", []  # data, not code: only the ES modules saved in it run

    def handle_endtag(self, tag):
        if tag == "script" and self._in == "json":
            text = "".join(self._json)
            try:
                self.scripts += _saved_modules(json.loads(text))
            except ValueError:  # not JSON after all: read as text
                self.scripts.append(text)
            self._in = None
        if tag == self._in:
            self._in = None

    def handle_data(self, data):
        if self._in == "json":
            self._json.append(data)
        elif self._in == "script":
            self.scripts.append(data)
        elif self._in == "style":
            self.styles.append(data)


def _saved_modules(node):
    """The ES modules (``_esm``) in a saved widget state: the code the page runs from it
    (the arrays and pictures beside them are data, base64 full of ``//``)."""
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "_esm" and isinstance(v, str)] + [
            m for k, v in node.items() if k != "_esm" for m in _saved_modules(v)
        ]
    if isinstance(node, list):
        return [m for v in node for m in _saved_modules(v)]
    return []


def _page_loads(page):
    parser = _Loads()
    parser.feed(page.read_text(encoding="utf-8"))
    loads = [(t, n, u) for t, n, u in parser.loads if _remote(u)]
    loads += [("style", "url", u) for css in parser.styles for u in _css_loads(css) if _remote(u)]
    loads += [("script", "inline", u) for js in parser.scripts for u in URL_IN_TEXT.findall(js) if _remote(u)]
    return loads


def _pages(site):
    return sorted(site.rglob("*.html"))


def test_no_page_loads_anything_from_the_network(site):
    pages = _pages(site)
    assert len(pages) > 10 and (site / MATH_PAGE) in pages
    remote = {str(p.relative_to(site)): loads for p in pages if (loads := _page_loads(p))}
    assert remote == {}


def test_no_style_sheet_loads_anything_from_the_network(site):
    sheets = sorted(site.rglob("*.css"))
    assert sheets
    remote = {
        str(s.relative_to(site)): loads
        for s in sheets
        if (loads := [u for u in _css_loads(s.read_text(encoding="utf-8", errors="replace")) if _remote(u)])
    }
    assert remote == {}


def test_no_script_of_the_site_names_a_remote_address(site):
    """Every script but the theme's bundle (MathJax's included) names no address outside
    its comments but links and namespaces (``NOT_FETCHED_HOSTS``): MathJax's own CDN
    fallbacks (its accessibility explorer's speech rules) are pointed at the site's copies
    by docs/hooks.py. The theme's fetching features are off."""
    scripts = [
        s
        for s in sorted(site.rglob("*.js"))
        if not pathlib.PurePosixPath(s.relative_to(site).as_posix()).is_relative_to(THEME_JS)
    ]
    assert any("mathjax" in s.as_posix() for s in scripts)
    remote = {}
    for script in scripts:
        code = re.sub(r"/\*.*?\*/", "", script.read_text(encoding="utf-8", errors="replace"), flags=re.S)
        code = re.sub(r"^\s*//.*$", "", code, flags=re.M)
        urls = [
            u
            for u in re.findall(r"https?://[^\s\"'`)]+", code)
            if urllib.parse.urlsplit(u).hostname not in NOT_FETCHED_HOSTS
        ]
        if urls:
            remote[str(script.relative_to(site))] = urls
    assert remote == {}
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert "repo_url" not in config  # the theme would ask GitHub's API for the stars
    assert config["theme"].get("font") is False  # the system fonts, no Google Fonts
    assert not [p for p in _pages(site) if 'class="mermaid"' in p.read_text(encoding="utf-8")]


def _mathjax_script(page):
    found = re.findall(r'<script\b[^>]*\bsrc="([^"]*MathJax\.js[^"]*)"', page.read_text(encoding="utf-8"))
    assert len(found) == 1, (page, found)
    return found[0]


def test_math_is_typeset_by_a_mathjax_the_site_carries(site):
    page = site / MATH_PAGE
    text = page.read_text(encoding="utf-8")
    assert r"\eta" in text and "text/x-mathjax-config" in text  # the page has math
    src = urllib.parse.urlsplit(_mathjax_script(page))
    assert not src.scheme and not src.netloc
    mathjax = (page.parent / src.path).resolve()
    assert mathjax.is_file() and mathjax.is_relative_to(site.resolve())
    root = mathjax.parent
    # the configurations it names are there (MathJax loads them from root/config/)
    configs = urllib.parse.parse_qs(src.query)["config"][0].split(",")
    assert configs and all((root / "config" / f"{c}.js").is_file() for c in configs)
    # ... the fonts the site's configuration picks, and the output's code for them
    local = (root / "config" / "local" / "dtsgd_viz.js").read_text()
    assert 'webFont: "STIX-Web"' in local and "local/dtsgd_viz" in configs
    assert list((root / "fonts" / "HTML-CSS" / "STIX-Web" / "woff").glob("*.woff"))
    assert (root / "jax" / "output" / "HTML-CSS" / "fonts" / "STIX-Web" / "fontdata.js").is_file()
    # every tutorial page finds the same MathJax
    for tutorial in sorted((site / "notebooks").glob("*/index.html")):
        assert (tutorial.parent / urllib.parse.urlsplit(_mathjax_script(tutorial)).path).resolve() == mathjax


@browser_test
def test_a_math_page_opened_from_its_file_renders_offline(site):
    """Chromium opens the tutorial with math, the home page and the API reference from
    their files; every request outside ``file://`` (and the blank font MathJax probes
    with) is recorded and refused. The math is typeset, with the site's fonts."""
    playwright = pytest.importorskip("playwright.sync_api")
    outside = []

    def refuse(route):
        outside.append(route.request.url)
        route.abort()

    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            for rel in (MATH_PAGE, "index.html", "reference/index.html"):
                page = browser.new_page()
                page.route(re.compile(r"^(?!file:|data:|about:blank).*"), refuse)
                page.on(
                    "request",
                    lambda r: None if r.url.startswith(("file:", "data:", "about:blank")) else outside.append(r.url),
                )
                page.goto((site / rel).as_uri(), wait_until="load")
                if rel == MATH_PAGE:
                    page.wait_for_function(
                        "window.MathJax && MathJax.Hub && MathJax.Hub.queue.pending === 0"
                        " && document.querySelectorAll('.MathJax').length > 0",
                        timeout=60_000,
                    )
                    typeset = page.evaluate(
                        "[document.querySelectorAll('.MathJax').length,"
                        " document.querySelectorAll('.MathJax_Error, .MathJax_Processing').length,"
                        " document.querySelectorAll('script[type^=\"math/tex\"]').length,"
                        " [...document.fonts].filter(f => f.family.startsWith('STIXMathJax')"
                        "   && f.status === 'loaded').length]"
                    )
                    shown, errors, sources, fonts = typeset
                    assert shown == sources > 0 and errors == 0
                    assert fonts > 0  # the STIX-Web fonts, from the site's files
                page.wait_for_timeout(1000)
                page.close()
        finally:
            browser.close()
    assert outside == []


def test_each_recording_field_has_its_entry_in_the_api_reference(site):
    """(This file's site build, reused: tests/project/test_docs_api.py checks the texts.)
    mkdocstrings leaves an attribute without a docstring out of the page."""
    import ast

    source = ROOT / "dtsgd_viz" / "recording" / "recording.py"
    cls = next(n for n in ast.parse(source.read_text()).body if isinstance(n, ast.ClassDef) and n.name == "Recording")
    fields = [n.target.id for n in cls.body if isinstance(n, ast.AnnAssign)]
    index = (site / "reference" / "index.html").read_text(encoding="utf-8")
    assert len(fields) > 10
    assert [f for f in fields if f'id="dtsgd_viz.Recording.{f}"' not in index] == []


def test_a_saved_module_that_loads_from_the_network_is_found(tmp_path):
    """The JSON data blocks are read for the ES modules saved in them, not as text: a
    base64 picture's ``//`` is no address, an ``import`` from a CDN in ``_esm`` is."""
    state = {"m": {"state": {"_esm": 'import x from "https://cdn.example.org/x.js";', "png": "ab//cd+/ef=="}}}
    page = tmp_path / "p.html"
    page.write_text(f'<script type="application/json" class="dtsgd-live-state">{json.dumps(state)}</script>')
    assert _page_loads(page) == [("script", "inline", "https://cdn.example.org/x.js")]
    state["m"]["state"]["_esm"] = "export default {};"
    page.write_text(f'<script type="application/json">{json.dumps(state)}</script>')
    assert _page_loads(page) == []


# how each browser-drawn explorer's main control is moved on the built site (by its root's class)
MOVE = {
    "dtsgd-viz-layout": "select.dv-dim",
    "dtsgd-viz-paths": "input.dv-slider",
    "dtsgd-viz-shards": "input.dv-slider",
    "dtsgd-viz-compare": "input[type=range]",
    "dtsgd-viz-phase": "rect[data-cell]",
}
LIVE = ("02_mesh_layouts", "03_nesterov_vs_momentum", "05_recordings", "09_your_own_model")


@browser_test
def test_each_tutorials_explorers_are_live_on_the_site_opened_from_files(site):
    """Chromium opens each tutorial page with browser-drawn explorers from its file, with
    no kernel and nothing outside ``file://``: every explorer draws; its slider (or
    dropdown) redraws it; on 03 a clicked phase cell and a dragged start run tf-keras'
    rule in the page, equal to numpy's ``theory.reference`` to 1e-12."""
    import numpy as np

    from dtsgd_viz import surfaces
    from dtsgd_viz.theory import reference

    playwright = pytest.importorskip("playwright.sync_api")
    outside, problems = [], []
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            for stem in LIVE:
                page = browser.new_page(viewport={"width": 1200, "height": 900})
                page.route(
                    re.compile(r"^(?!file:|data:|about:blank).*"), lambda r: (outside.append(r.request.url), r.abort())
                )
                page.on("pageerror", lambda e: problems.append(str(e)))
                page.goto((site / "notebooks" / stem / "index.html").as_uri(), wait_until="load")
                live = page.locator("div.dtsgd-live")
                page.wait_for_function(
                    "n => document.querySelectorAll('div.dtsgd-live-ready, div.dtsgd-live-failed').length === n",
                    arg=live.count(),
                    timeout=60_000,
                )
                assert live.count() >= 1 and page.locator("div.dtsgd-live-failed").count() == 0, stem
                # MathJax typesets after the load and moves what is below the math: wait for it
                page.wait_for_function(
                    "!window.MathJax || (MathJax.Hub && MathJax.Hub.queue.pending === 0)", timeout=60_000
                )
                for k in range(live.count()):  # every explorer on the page redraws on its control
                    explorer = live.nth(k)
                    kind = next(c for c in explorer.get_attribute("class").split() if c in MOVE)
                    explorer.scroll_into_view_if_needed()
                    before = explorer.locator("svg").first.inner_html()
                    node = explorer.locator(MOVE[kind]).first
                    if kind == "dtsgd-viz-layout":
                        options = node.locator("option").all_text_contents()
                        node.select_option(index=(options.index(node.evaluate("s => s.value")) + 1) % len(options))
                    elif kind == "dtsgd-viz-phase":
                        explorer.locator('rect[data-cell="3,3"]').click()
                    else:
                        node.evaluate(
                            "(s) => { s.value = s.min; s.dispatchEvent(new Event('input'));"
                            " s.dispatchEvent(new Event('change')); }"
                        )
                    assert explorer.locator("svg").first.inner_html() != before, (stem, kind)
                if stem == "03_nesterov_vs_momentum":
                    surface = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)
                    lrs, mus = np.geomspace(1e-3, 0.2, 24), np.linspace(0.0, 0.95, 20)
                    phase = page.locator(".dtsgd-viz-phase")
                    phase.scroll_into_view_if_needed()
                    phase.locator('rect[data-cell="15,14"]').click()
                    box = phase.locator("circle.dv-start").bounding_box()
                    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
                    page.mouse.down()
                    page.mouse.move(box["x"] + 40, box["y"] + 30, steps=4)
                    page.mouse.up()
                    got = page.evaluate(
                        "() => Object.fromEntries(Object.entries(document.querySelector('.dtsgd-viz-phase')"
                        ".dtsgdRule.paths()).map(([k, v]) => [k, Array.from(v.path)]))"
                    )
                    start = np.asarray(got["momentum"][:2])
                    assert np.linalg.norm(start - surface.default_start) > 0.1  # the drag moved it
                    grad = lambda w, h=surface.hessian: w @ h.T  # noqa: E731
                    for rule, nesterov in (("momentum", False), ("nesterov", True)):
                        want = reference.run(grad, start, 150, lrs[15], mus[14], nesterov)
                        np.testing.assert_allclose(np.reshape(got[rule], (-1, 2)), want, rtol=1e-12, atol=1e-12)
                page.close()
        finally:
            browser.close()
    assert outside == [] and problems == []
