"""The browser-drawn LayoutExplorer on a saved page, opened from a file in headless
Chromium with no kernel: the dropdowns switch between the layouts Python computed and
redraw their blocks where the state puts them, hover names a block's devices and slice,
and hovering a device lights the block it holds."""

import json

import numpy as np
import pytest
from helpers.browser import browser, browser_test  # noqa: F401
from helpers.web_page import open_saved, saved_page

from dtsgd_viz.web import encode
from dtsgd_viz.web.layout import LayoutExplorer

pytestmark = pytest.mark.slow

SHAPE, MESH = (1024, 512), {"data": 4, "model": 16}


@pytest.fixture(scope="module")
def widget():
    return LayoutExplorer(SHAPE, mesh=MESH, name="W", specs=("unsharded", "model"))


@pytest.fixture(scope="module")
def page(widget, browser, tmp_path_factory):  # noqa: F811
    page = open_saved(browser, widget, tmp_path_factory.mktemp("layout"), 960, 800)
    yield page
    page.close()


def _pick(page, specs):
    for dim, spec in enumerate(specs):
        page.locator(f"select.dv-dim[data-dim='{dim}']").select_option(spec)


def _blocks(page):
    """Each drawn block: its group and its pixel rect."""
    return [
        (int(r.get_attribute("data-group")), [float(r.get_attribute(a)) for a in ("x", "y", "width", "height")])
        for r in page.locator("rect.dv-block").all()
    ]


def _hover(page, selector):
    box = page.locator(selector).bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


@browser_test
def test_it_starts_with_no_kernel_on_the_layout_asked(page, widget):
    assert page.locator("div.dtsgd-live-ready").count() == 1 and page.problems == []
    assert [s.input_value() for s in page.locator("select.dv-dim").all()] == ["unsharded", "model"]
    assert page.locator(".dv-summary-line").inner_text() == widget.data["layouts"]["unsharded, model"]["summary"]
    assert page.locator("rect.dv-block").count() == 16 and page.locator("rect.dv-device").count() == 64


@browser_test
@pytest.mark.parametrize("specs", [("data", "model"), ("model", "unsharded"), ("unsharded", "unsharded")])
def test_a_select_redraws_the_states_blocks(page, widget, specs):
    _pick(page, specs)
    entry = widget.data["layouts"][", ".join(specs)]
    rects = encode.decode(entry["rects"]).astype(float)
    g = page.locator("g.dv-tensor")
    panel, (cols, rows) = json.loads(g.get_attribute("data-panel")), json.loads(g.get_attribute("data-extent"))
    assert (cols, rows) == (SHAPE[1], SHAPE[0])
    sx, sy = panel["w"] / cols, panel["h"] / rows
    drawn = _blocks(page)
    assert [k for k, _ in drawn] == list(range(len(rects)))
    want = np.column_stack(
        [panel["x"] + rects[:, 0] * sx, panel["y"] + rects[:, 1] * sy, rects[:, 2] * sx, rects[:, 3] * sy]
    )
    np.testing.assert_allclose([r for _, r in drawn], want, atol=1e-6)
    fills = [r.get_attribute("fill") for r in page.locator("rect.dv-block").all()]
    assert fills == entry["colors"]
    # each device takes the colour of the block it holds
    group_of = encode.decode(entry["group_of"])
    cells = page.locator("rect.dv-device").all()
    assert [c.get_attribute("fill") for c in cells] == [entry["colors"][k] for k in group_of]
    assert page.locator(".dv-summary-line").inner_text() == entry["summary"]


@browser_test
def test_an_impossible_pick_says_why(page, widget):
    _pick(page, ("model", "model"))
    assert page.locator("rect.dv-block").count() == 0
    error = page.locator(".dv-error").inner_text()
    assert error == "impossible: " + widget.data["layouts"]["model, model"]["error"]
    assert "only one tensor dim" in error
    _pick(page, ("unsharded", "model"))
    assert page.locator(".dv-error").count() == 0 and page.locator("rect.dv-block").count() == 16


@browser_test
def test_hovering_a_block_names_its_devices_slice_group_and_bytes(page, widget):
    _pick(page, ("unsharded", "model"))
    entry = widget.data["layouts"]["unsharded, model"]
    _hover(page, "rect.dv-block[data-group='5']")
    tip = page.locator("div.dv-tip")
    text = tip.inner_text()
    assert tip.is_visible()
    assert entry["slices"][5] == "[0:1024, 160:192]" and "W[0:1024, 160:192]" in text
    for dev in (5, 21, 37, 53):  # model=5 on every data row
        assert f"CPU:{dev}" in text
    assert "replica group 5 (4 copies)" in text and "128 KiB per device (131,072 B" in text
    lit = page.locator(".dv-device-outline").all()
    assert sorted(int(c.get_attribute("data-device")) for c in lit) == [5, 21, 37, 53]


@browser_test
def test_hovering_a_device_lights_the_block_it_holds(page, widget):
    _pick(page, ("data", "model"))
    entry = widget.data["layouts"]["data, model"]
    k = int(encode.decode(entry["group_of"])[37])
    _hover(page, "rect.dv-device[data-device='37']")
    lit = page.locator("rect.dv-block.dv-lit").all()
    assert [int(r.get_attribute("data-group")) for r in lit] == [k]
    assert float(lit[0].get_attribute("opacity")) == 1.0
    others = {r.get_attribute("opacity") for r in page.locator("rect.dv-block:not(.dv-lit)").all()}
    assert others == {"0.4"}
    text = page.locator("div.dv-tip").inner_text()
    assert text.startswith("CPU:37 (data=2, model=5)") and entry["slices"][k] in text and "the only copy" in text
    page.mouse.move(2, 2)
    assert page.locator("rect.dv-block.dv-lit").count() == 0 and not page.locator("div.dv-tip").is_visible()


@browser_test
def test_a_layout_set_from_python_before_saving_is_the_one_shown(browser, tmp_path):  # noqa: F811
    w = LayoutExplorer((8, 4), mesh={"x": 2, "y": 2})
    w.specs = "y, x"
    page = browser.new_page(viewport={"width": 960, "height": 800})
    try:
        page.goto(saved_page(w, tmp_path / "index.html").as_uri())
        page.wait_for_selector("div.dtsgd-live-ready", timeout=20_000)
        assert [s.input_value() for s in page.locator("select.dv-dim").all()] == ["y", "x"]
        assert page.locator("rect.dv-block").count() == 4
    finally:
        page.close()
