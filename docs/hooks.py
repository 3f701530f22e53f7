"""MkDocs hooks for the documentation site (``mkdocs.yml``: ``hooks: [docs/hooks.py]``).

- The tutorials are the committed, executed ``notebooks/*.ipynb``: they become pages
  ``notebooks/NN_name/`` (mkdocs-jupyter renders them with their outputs; nothing runs).
- The API reference is written from ``dtsgd_viz.__all__`` at build time, so a new public
  name gets its entry without anyone editing a page: ``reference/index.md`` holds every
  function, class and constant (each under a heading whose id is its public name, such
  as ``dtsgd_viz.make_mesh``), and each public module (``reference``, ``surfaces``,
  ``widgets``, ...) a page of its own. mkdocstrings reads the sources (griffe, static
  analysis; ``docs/griffe_ext.py`` follows the lazily imported names): nothing is
  imported but the light ``dtsgd_viz`` itself.
- The browser-drawn explorers (``dtsgd_viz.web``, anywidget models) run on the page with
  no kernel: their view becomes a live div, and the page carries their saved state and
  ``dtsgd_viz/web/js/static.js``, which calls each one's ES module as a notebook would
  (no widget manager, nothing from a CDN); their still picture stays for readers
  without scripts. A kernel-drawn widget (``dtsgd_viz.widgets``) cannot run here:
  ``notebooks/build.py`` stores its last picture (a PNG) beside its view, the view is
  replaced by that picture, and the widget manager (a script from a CDN) is left out.
- The site loads nothing from the network, so that it works opened from files: the
  tutorials' math is typeset by the MathJax 2.7 that ``jupyter-server-mathjax`` ships
  (the ``docs`` extra), copied to ``assets/mathjax/``; the theme uses the system fonts
  (``mkdocs.yml``: ``font: false``); nbconvert's Mermaid loader (it imports Mermaid
  from a CDN) is left out of pages that have no diagram.
"""

from __future__ import annotations

import ast
import json
import pathlib
import re
import sys

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File
from mkdocs.utils import get_relative_url

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
PACKAGE = ROOT / "dtsgd_viz"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


# ---------------------------------------------------------------------------- pages


def tutorials():
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def on_config(config):
    """The generated pages join the navigation: the tutorials after the home page (each
    titled by its notebook's heading), the API reference last."""
    nav = list(config.nav or [])
    at = next((i + 1 for i, item in enumerate(nav) if item == {"Home": "index.md"}), 0)
    nav.insert(at, {"Tutorials": [f"notebooks/{nb.name}" for nb in tutorials()]})
    nav.append(
        {
            "API reference": [{"dtsgd_viz": "reference/index.md"}]
            + [{f"dtsgd_viz.{m}": f"reference/{m}.md"} for m in modules()]
        }
    )
    config.nav = nav
    return config


@event_priority(100)  # before mkdocs-jupyter, which claims the .ipynb files it is given
def on_files(files, config):
    for nb in tutorials():
        # a file of the repository, not of docs/ (mkdocs-jupyter reads it from its
        # src_dir: File.generated would hide the path from it)
        files.append(
            File(
                f"notebooks/{nb.name}",
                src_dir=str(ROOT),
                dest_dir=config.site_dir,
                use_directory_urls=config.use_directory_urls,
            )
        )
    for uri, text in reference_pages().items():
        files.append(File.generated(config, uri, content=text))
    for path in mathjax_files():
        rel = path.relative_to(mathjax_root()).as_posix()
        if rel in MATHJAX_PATCHES:
            files.append(File.generated(config, f"{MATHJAX_DIR}/{rel}", content=patched(path, rel)))
        else:
            files.append(File.generated(config, f"{MATHJAX_DIR}/{rel}", abs_src_path=str(path)))
    files.append(File.generated(config, f"{MATHJAX_DIR}/{MATHJAX_CONFIG}", content=MATHJAX_FONTS))
    return files


def public_names():
    """``dtsgd_viz.__all__`` of this checkout (``import dtsgd_viz`` is light: it imports no
    TensorFlow)."""
    if str(ROOT) not in sys.path:  # the package documented is the one beside mkdocs.yml
        sys.path.insert(0, str(ROOT))
    import dtsgd_viz

    if pathlib.Path(dtsgd_viz.__file__).resolve().parent != PACKAGE:
        raise RuntimeError(
            f"The API reference of {PACKAGE} needs that package; "
            f"dtsgd_viz was already imported from {dtsgd_viz.__file__}."
        )
    return list(dtsgd_viz.__all__)


def module_paths() -> dict[str, str]:
    """Public name -> dotted path of the modules ``dtsgd_viz`` exposes as attributes
    (``dtsgd_viz._MODULES``: ``reference`` is ``dtsgd_viz.theory.reference``, ...)."""
    public_names()
    import dtsgd_viz

    return {name: f"dtsgd_viz.{path}" for name, path in dtsgd_viz._MODULES.items() if name in dtsgd_viz.__all__}


def modules():
    """The public names that are modules: each gets a page."""
    return sorted(module_paths())


def reference_pages():
    mods = modules()
    members = sorted((n for n in public_names() if n not in mods), key=str.lower)
    index = [
        "# API reference",
        "",
        "Every name that `dtsgd_viz.__all__` lists, generated from the docstrings. "
        "`import dtsgd_viz` is light: the names that need TensorFlow, matplotlib or "
        "ipywidgets import them on first use.",
        "",
        "Modules, each on a page of its own: " + ", ".join(f"[`dtsgd_viz.{m}`]({m}.md)" for m in mods) + ".",
        "",
        "::: dtsgd_viz",
        "    options:",
        "      show_root_heading: false",
        "      show_root_toc_entry: false",
        "      heading_level: 2",
        "      members_order: alphabetical",
        f"      members: {json.dumps(members)}",
        "",
    ]
    pages = {"reference/index.md": "\n".join(index)}
    for mod in mods:
        pages[f"reference/{mod}.md"] = "\n".join(
            [
                f"::: {module_paths()[mod]}",
                "    options:",
                "      show_root_heading: true",
                "      show_root_full_path: true",
                "      heading_level: 1",
                f"      members: {json.dumps(module_members(mod))}",
                "",
            ]
        )
    return pages


def module_members(mod):
    """A module's public members: its ``__all__``, or else the functions and classes it
    defines whose names do not start with an underscore (read from the source)."""
    rel = module_paths()[mod].split(".")[1:]
    path = PACKAGE.joinpath(*rel, "__init__.py")
    if not path.exists():
        path = PACKAGE.joinpath(*rel[:-1], f"{rel[-1]}.py")
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return [
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_")
    ]


# ---------------------------------------------------------------------------- offline

MATHJAX_DIR = "assets/mathjax"  # where the site keeps MathJax (mkdocs.yml: custom_mathjax_url)


def mathjax_root() -> pathlib.Path:
    """The MathJax 2.7 files that ``jupyter-server-mathjax`` ships (``MathJax.js``,
    ``config/``, ``jax/``, ``fonts/``, ...)."""
    try:
        import jupyter_server_mathjax
    except ImportError as e:
        raise RuntimeError(
            "The tutorials' math needs MathJax from jupyter-server-mathjax: pip install -e '.[docs]'"
        ) from e
    return pathlib.Path(jupyter_server_mathjax.__file__).resolve().parent / "static"


# jupyter-server-mathjax ships the STIX-Web fonts only (MathJax's default, TeX, is left
# out): the site's configuration, which custom_mathjax_url names after the others
# ("config=...,local/dtsgd_viz"), makes the HTML-CSS output use them, as Jupyter does
MATHJAX_CONFIG = "config/local/dtsgd_viz.js"
MATHJAX_FONTS = """MathJax.Hub.Config({
  "HTML-CSS": {availableFonts: [], preferredFont: null, webFont: "STIX-Web", imageFont: null}
});
MathJax.Ajax.loadComplete("[MathJax]/config/local/dtsgd_viz.js");
"""


# The speech rule engine of MathJax's accessibility explorer (loaded only when a reader
# turns the explorer on in MathJax's menu) fetches its rules and an XPath polyfill from a
# CDN: here it takes the copies beside it (extensions/a11y/mathmaps/, wgxpath.install.js).
MATHJAX_PATCHES = {
    "extensions/a11y/mathjax-sre.js": [
        (
            'sre.Variables.url="https://cdn.jsdelivr.net/npm/speech-rule-engine@"'
            '+sre.Variables.VERSION+"/lib/mathmaps"',
            'sre.Variables.url=MathJax.Ajax.fileURL("[a11y]/mathmaps")',
        ),
        (
            'sre.Variables.WGXpath="https://cdn.jsdelivr.net/npm/wicked-good-xpath@1.3.0/dist/wgxpath.install.js"',
            'sre.Variables.WGXpath=MathJax.Ajax.fileURL("[a11y]/wgxpath.install.js")',
        ),
    ],
}


def patched(path: pathlib.Path, rel: str) -> str:
    text = path.read_text(encoding="utf-8")
    for old, new in MATHJAX_PATCHES[rel]:
        if old not in text:  # another MathJax: look again at what it fetches
            raise RuntimeError(f"MathJax's {rel} no longer holds {old!r}")
        text = text.replace(old, new)
    return text


def mathjax_files():
    root = mathjax_root()
    return sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


_MATHJAX_SRC = re.compile(r'(<script\b[^>]*\bsrc=")(' + re.escape(MATHJAX_DIR) + r'/[^"]*)"')
# nbconvert's loader of Mermaid (it imports Mermaid from a CDN when a page has a diagram)
_MERMAID = re.compile(
    r'<script type="module">\s*document\.addEventListener\("DOMContentLoaded",'
    r"[^<]*?\.jp-Mermaid > pre\.mermaid.*?</script>",
    re.S,
)
_MERMAID_DIAGRAM = re.compile(r'class="[^"]*\bjp-Mermaid\b')


def offline(html: str, page_url: str) -> str:
    """A tutorial page that loads nothing from the network: MathJax from the site (the
    configured ``custom_mathjax_url`` is relative to the site's root, made relative to
    the page here), and no Mermaid loader when the page has no diagram.

    >>> offline('<script src="assets/mathjax/MathJax.js?config=X"> </script>', "notebooks/01_a/")
    '<script src="../../assets/mathjax/MathJax.js?config=X"> </script>'
    """
    html = _MATHJAX_SRC.sub(lambda m: f'{m.group(1)}{get_relative_url(m.group(2), page_url or ".")}"', html)
    if not _MERMAID_DIAGRAM.search(html):
        html = _MERMAID.sub("", html)
    return html


# ---------------------------------------------------------------------------- widgets

_VIEW = re.compile(r'<script type="application/vnd\.jupyter\.widget-view\+json">\s*(\{.*?\})\s*</script>', re.S)
_STATE = re.compile(r'<script type="application/vnd\.jupyter\.widget-state\+json">.*?</script>', re.S)
# nbconvert's loader of the widget manager (it fetches it from a CDN when the page loads)
_MANAGER = re.compile(r"<script>\s*\(function\(\)\s*\{\s*function addWidgetsRenderer.*?</script>", re.S)


def widget_pictures(notebook_path):
    """``{model_id: base64 PNG}`` of the widget views that carry their last picture."""
    nb = json.loads(pathlib.Path(notebook_path).read_text())
    pictures = {}
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET_VIEW in data and "image/png" in data:
                png = data["image/png"]
                pictures[data[WIDGET_VIEW]["model_id"]] = "".join(png) if isinstance(png, list) else png
    return pictures


LIVE_RUNTIME = pathlib.Path(__file__).parents[1] / "dtsgd_viz" / "web" / "js" / "static.js"


def live_models(notebook_path):
    """``{model_id: saved model}`` of the notebook's browser-drawn explorers
    (``dtsgd_viz.web``: anywidget models, their ES module in their state)."""
    nb = json.loads(pathlib.Path(notebook_path).read_text())
    state = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    return {k: v for k, v in state.items() if v.get("model_module") == "anywidget" and "_esm" in v.get("state", {})}


def live_page(html, models):
    """``html`` with each browser-drawn explorer's view replaced by a live div (and its
    still picture, shown where scripts do not run), the explorers' saved state and the
    runtime that draws them with no kernel (``dtsgd_viz/web/js/static.js``)."""
    used = {}

    def live(match):
        model_id = json.loads(match.group(1)).get("model_id")
        if model_id not in models:
            return match.group(0)
        used[model_id] = models[model_id]
        return f'<div class="dtsgd-live" data-model-id="{model_id}"></div>'

    html = _VIEW.sub(live, html)
    if used:
        payload = json.dumps(used).replace("</", "<\\/")
        html += (
            f'<script type="application/json" class="dtsgd-live-state">{payload}</script>'
            f'<script type="module">{LIVE_RUNTIME.read_text()}</script>'
        )
    return html


def on_page_content(html, page, config, files):
    src = page.file.abs_src_path or ""
    if not src.endswith(".ipynb"):
        return html
    pictures = widget_pictures(src)
    models = live_models(src)

    def picture(match):
        model_id = json.loads(match.group(1)).get("model_id")
        if model_id not in pictures:
            return match.group(0)
        still = (
            f'<img class="widget-snapshot" src="data:image/png;base64,{pictures[model_id]}" '
            'alt="The widget as the notebook left it (it needs a live kernel to move)">'
        )
        return still + match.group(0) if model_id in models else still

    html = live_page(_VIEW.sub(picture, html), models)
    if not _VIEW.search(html):  # no kernel-drawn view left: no widget manager, no widget state
        html = _MANAGER.sub("", _STATE.sub("", html))
    return offline(site_links(html), page.url)


_NOTEBOOK_LINK = re.compile(r'href="(\d\d_[A-Za-z0-9_]+)\.ipynb(#[^"]*)?"')
_DOCS_LINK = re.compile(r'href="\.\./docs/([A-Za-z0-9_/-]+)\.md(#[^"]*)?"')


def site_links(html: str) -> str:
    """A tutorial's links as the notebooks folder has them, made the site's: a tutorial
    page is ``notebooks/NN_name/``, a docs page ``name/`` at the site root.

    >>> site_links('<a href="02_mesh_layouts.ipynb">02</a> <a href="../docs/glossary.md#block">b</a>')
    '<a href="../02_mesh_layouts/">02</a> <a href="../../glossary/#block">b</a>'
    """
    html = _NOTEBOOK_LINK.sub(lambda m: f'href="../{m.group(1)}/{m.group(2) or ""}"', html)
    return _DOCS_LINK.sub(lambda m: f'href="../../{m.group(1)}/{m.group(2) or ""}"', html)
