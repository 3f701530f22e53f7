"""Each executed tutorial saves its browser-drawn explorers' ES modules in its widget
state, and the documentation site draws with those: they must be today's modules
(``notebooks/build.py`` rebuilds a tutorial after its explorer's module changes)."""

import json
import pathlib

import pytest

from dtsgd_viz import web
from dtsgd_viz.web.widget import BrowserWidget

ROOT = pathlib.Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
MODULES = {
    cls.__name__: cls._esm
    for cls in vars(web).values()
    if isinstance(cls, type) and issubclass(cls, BrowserWidget) and cls is not BrowserWidget
}


def _saved(notebook):
    state = json.loads(notebook.read_text()).get("metadata", {}).get("widgets", {})
    models = state.get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    return [m["state"]["_esm"] for m in models.values() if m.get("model_module") == "anywidget"]


def test_the_tutorials_save_browser_drawn_explorers():
    assert len(MODULES) == 5  # the explorers of dtsgd_viz.web
    assert sum(len(_saved(nb)) for nb in NOTEBOOKS) >= 5


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_each_saved_module_is_todays(notebook):
    for esm in _saved(notebook):
        todays = esm in MODULES.values()
        assert todays, (
            f"{notebook.name} saved an explorer module that is not today's "
            f"(rebuild it: python notebooks/build.py {notebook.stem[:2]})"
        )


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_each_saved_explorer_is_under_300_kb(notebook):
    """Issue 32's budget: what a tutorial saves per explorer (its JSON, the binary buffers
    in base64, the ES module), as benchmarks/web_explorers.py measures it."""
    state = json.loads(notebook.read_text()).get("metadata", {}).get("widgets", {})
    models = state.get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    for model_id, model in models.items():
        if model.get("model_module") == "anywidget":
            assert len(json.dumps(model).encode()) < 300 * 1024, (notebook.name, model_id)
