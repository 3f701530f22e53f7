"""The documentation site builds from the repository with warnings as errors
(``mkdocs build --strict``, as ``make docs``), every tutorial page holds the figures its
notebook stores, widgets included, and every public name has a reference entry."""

import inspect
import json
import pathlib
import re

import pytest
from helpers.site import build_site

pytestmark = pytest.mark.slow  # builds the documentation site

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
EMBEDDED_PNG = re.compile(r'<img\b[^>]*\bsrc="data:image/png;base64,')


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site, built into a temporary folder (nothing is written to the checkout)."""
    return build_site(tmp_path_factory.mktemp("site"))


def _outputs(notebook):
    nb = json.loads(notebook.read_text())
    return [out for cell in nb["cells"] for out in cell.get("outputs", [])]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_each_tutorial_page_holds_its_figures(site, notebook):
    outputs = _outputs(notebook)
    figures = sum("image/png" in out.get("data", {}) for out in outputs)
    widgets = [out for out in outputs if WIDGET_VIEW in out.get("data", {})]
    # every widget view carries its last picture (notebooks/build.py stores it)
    assert all("image/png" in out["data"] for out in widgets), notebook.name
    page = (site / "notebooks" / notebook.stem / "index.html").read_text()
    assert len(EMBEDDED_PNG.findall(page)) == figures
    # a static page shows the widgets' pictures: no view waiting for a widget manager
    assert WIDGET_VIEW not in page and "addWidgetsRenderer" not in page
    assert page.count('class="widget-snapshot"') == len(widgets)
    # the browser-drawn explorers (anywidget) are live divs, with their saved state and the runtime
    state = json.loads(notebook.read_text())["metadata"].get("widgets", {})
    models = state.get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    live = [w for w in widgets if models.get(w["data"][WIDGET_VIEW]["model_id"], {}).get("model_module") == "anywidget"]
    drawn = re.findall(r'<div class="dtsgd-live" data-model-id="([^"]+)">', page)
    assert sorted(drawn) == sorted(w["data"][WIDGET_VIEW]["model_id"] for w in live)
    assert ('class="dtsgd-live-state"' in page) == bool(live)


_HREF = re.compile(r'href="([^"#:]+)(?:#[^"]*)?"')


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_each_tutorial_pages_links_lead_to_pages_of_the_site(site, notebook):
    """The notebooks link each other (``02_mesh_layouts.ipynb``) and the glossary
    (``../docs/glossary.md``) as the notebooks folder has them; on the site those links
    must lead to the site's pages (docs/hooks.py rewrites them)."""
    here = site / "notebooks" / notebook.stem
    page = (here / "index.html").read_text()
    links = [h for h in _HREF.findall(page) if not h.startswith(("http", "//", "data"))]
    inbound = [h for h in links if h.endswith("/") or h.endswith(".html")]
    assert any("glossary" in h for h in inbound), notebook.name
    broken = [
        h for h in inbound if not ((here / h / "index.html") if h.endswith("/") else (here / h)).resolve().exists()
    ]
    assert broken == []
    assert not [h for h in links if h.endswith((".ipynb", ".md"))]


def _module_members(module):
    """A public module's names: its ``__all__``, or the functions and classes it defines."""
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return [
        name
        for name, obj in vars(module).items()
        if not name.startswith("_")
        and (inspect.isfunction(obj) or inspect.isclass(obj))
        and obj.__module__ == module.__name__
    ]


def test_each_public_name_has_a_reference_entry(site):
    import dtsgd_viz

    index = (site / "reference" / "index.html").read_text()
    for name in dtsgd_viz.__all__:
        obj = getattr(dtsgd_viz, name)
        if inspect.ismodule(obj):
            page = (site / "reference" / name / "index.html").read_text()
            path = obj.__name__  # dtsgd_viz.reference is dtsgd_viz.theory.reference
            assert f'id="{path}"' in page, name
            for member in _module_members(obj):
                assert f'id="{path}.{member}"' in page, f"{path}.{member}"
        else:
            assert f'id="dtsgd_viz.{name}"' in index, name


def test_the_design_benchmark_and_upstream_pages_are_there(site):
    for page, words in [
        ("design", "stale-velocity"),
        ("benchmarks", "benchmarks/overhead.py"),
        ("upstream", "stale_velocity.py"),
    ]:
        assert words in (site / page / "index.html").read_text(), page
    # the reproduction script is published beside the page that explains it
    assert (site / "upstream" / "stale_velocity.py").is_file()
