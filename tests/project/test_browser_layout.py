"""LayoutExplorer in a real JupyterLab (headless Chromium, as tests/project/test_browser.py drives
it): picking a mesh dim for a tensor dim in the widget's dropdown redraws the blocks.

The notebook is written here (one cell, no TensorFlow: a hypothetical layout), so the
test costs one small kernel in the browser tests' shared JupyterLab."""

import re
import time

import nbformat
from helpers.browser import _image_sources, _open_notebook, browser, browser_test, lab  # noqa: F401

CELL = (
    "from dtsgd_viz.widgets import LayoutExplorer\n"
    'explorer = LayoutExplorer((8, 8), mesh={"batch": 2, "model": 4})\n'
    "explorer"
)


def _table_rows(page):
    """The rows of the explorer's layout_table (block, slices, local shape, devices)."""
    return page.eval_on_selector_all(
        ".widget-html table",
        "ts => ts.filter(t => t.innerText.includes('slices')).flatMap(t => [...t.rows])"
        ".map(r => [...r.querySelectorAll('td')].map(c => c.innerText.trim()))"
        ".filter(r => r.length === 4)",
    )


def _run_the_cell(page, tries=4):
    """Shift+Enter in the cell until its prompt shows it ran or runs: a key press sent
    while JupyterLab is still settling can be lost (seen on a loaded machine)."""
    prompt = page.locator(".jp-CodeCell .jp-InputArea-prompt").first
    for _ in range(tries):
        page.locator(".jp-CodeCell .jp-InputArea-editor").first.click()
        page.keyboard.press("Shift+Enter")
        try:
            page.wait_for_function(
                "e => /\\[(\\*|\\d+)\\]/.test(e.innerText)", arg=prompt.element_handle(), timeout=15_000
            )
            return
        except Exception:  # noqa: BLE001 - not taken: press again
            continue
    raise AssertionError("the notebook cell never started running")


def _wait_for(condition, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


@browser_test
def test_layout_explorer_dropdown_changes_the_blocks(browser, lab, tmp_path):  # noqa: F811
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELL)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    with lab.folder("layout") as work:
        nbformat.write(nb, work / "layout.ipynb")
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        try:
            _drive(page, lab.url(work / "layout.ipynb"))
        except Exception:
            page.screenshot(path=str(tmp_path / "failed.png"))  # what the page showed
            raise
        finally:
            page.close()


def _drive(page, url):
    _open_notebook(page, url)
    _run_the_cell(page)
    page.wait_for_selector(".jp-OutputArea .widget-html table", timeout=120_000)
    page.wait_for_function("() => !document.body.innerText.includes('Loading widget')", timeout=60_000)
    # the starting layout: unsharded, one block held by all eight devices
    rows = _wait_for(lambda: _table_rows(page), 60, "the layout table")
    assert len(rows) == 1 and rows[0][1] == "[0:8, 0:8]", rows
    before = _image_sources(page)
    # tensor dim 1 -> mesh dim 'model' (the variable picker, hidden for one variable,
    # comes first: the dim-1 picker is the last dropdown)
    page.locator(".widget-dropdown select").last.select_option(label="model")
    rows = _wait_for(lambda: (r := _table_rows(page)) and len(r) == 4 and r, 60, "four blocks in the layout table")
    assert [r[1] for r in rows] == [f"[0:8, {2 * j}:{2 * j + 2}]" for j in range(4)]
    # each block on the two 'batch' devices of its 'model' column
    assert [re.findall(r"CPU:\d+", r[3]) for r in rows] == [[f"CPU:{j}", f"CPU:{j + 4}"] for j in range(4)]
    _wait_for(lambda: _image_sources(page) != before, 60, "the layout picture to change")
    summary = page.locator(".widget-html").filter(has_text="blocks of").first.inner_text()
    assert "4 blocks of (8, 2), 2 copies each" in summary, summary
