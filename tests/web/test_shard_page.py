"""The browser-drawn ShardExplorer on a saved page, opened from a file in headless Chromium
with no kernel: the cells drawn are the state's values in the state's colours (fixed over
the run, or each update's own scale), hover names the block's devices and slice and the
value under the pointer, the slider moves the update and the norm marker."""

import json

import numpy as np
import pytest
from helpers.browser import browser, browser_test  # noqa: F401
from helpers.web_page import open_saved, saved_page

import dtsgd_viz
from dtsgd_viz.web.encode import decode
from dtsgd_viz.web.shards import ShardExplorer

pytestmark = pytest.mark.slow
SURFACE = dtsgd_viz.surfaces.ShardedQuadratic((8, 16), specs=("unsharded", "model"))  # 2 replicas a block
STEPS = 12


@pytest.fixture(scope="module")
def rec():
    return dtsgd_viz.run(SURFACE, {"momentum": dict(learning_rate=0.5, momentum=0.9)}, STEPS)["momentum"]


@pytest.fixture(scope="module")
def widget(rec):
    return ShardExplorer(rec, step=4)


@pytest.fixture(scope="module")
def page(widget, browser, tmp_path_factory):  # noqa: F811
    page = open_saved(browser, widget, tmp_path_factory.mktemp("shards"), 950, 700)
    yield page
    page.close()


def _slide(page, index):
    page.locator("input.dv-slider").evaluate("(s, i) => { s.value = i; s.dispatchEvent(new Event('input')); }", index)


def _cells(page):
    """The drawn cells' colours, ``(rows, cols, 3)``, read back from the canvas."""
    got = page.locator("canvas.dv-cells").evaluate(
        "c => ({w: c.width, h: c.height,"
        " px: Array.from(c.getContext('2d').getImageData(0, 0, c.width, c.height).data)})"
    )
    return np.asarray(got["px"], np.int64).reshape(got["h"], got["w"], 4)[..., :3]


def _expected(state, index, limit):
    lut = np.array([[int(h[i : i + 2], 16) for i in (1, 3, 5)] for h in state["lut"]])
    values = decode(state["tensors"]["w"]["kinds"]["velocity"]["runs"]["recording"]["values"])[index].astype(np.float64)
    k = np.clip(np.floor((values + limit) / (2 * limit) * len(lut)), 0, len(lut) - 1).astype(int)
    return lut[k]


@browser_test
def test_the_cells_are_the_states_values_in_its_colours(page, widget):
    assert page.locator("div.dtsgd-live-ready").count() == 1 and page.problems == []
    assert page.locator(".dv-label").inner_text() == f"update 4 of {STEPS}"
    state = widget.data
    entry = state["tensors"]["w"]["kinds"]["velocity"]
    np.testing.assert_array_equal(_cells(page), _expected(state, 3, entry["fixed_limit"]))
    assert float(page.locator("canvas.dv-cells").get_attribute("data-limit")) == entry["fixed_limit"]
    page.locator("input.dv-fixed").uncheck()  # each update on its own scale
    own = decode(entry["update_limit"])[3]
    np.testing.assert_array_equal(_cells(page), _expected(state, 3, own))
    page.locator("input.dv-fixed").check()
    # the colours differ from update to update (the state is drawn, not one picture)
    _slide(page, 10)
    np.testing.assert_array_equal(_cells(page), _expected(state, 10, entry["fixed_limit"]))


@browser_test
def test_hover_names_the_blocks_devices_slice_and_the_value(page, widget, rec):
    _slide(page, 3)
    t = widget.data["tensors"]["w"]
    rect = json.loads(page.locator("g.dv-heat").get_attribute("data-rect"))
    svg = page.locator("svg.dv-svg").bounding_box()
    scale = svg["width"] / 930
    rows, cols = t["image"]
    values = rec.global_values("w", "velocity")[3]
    for b in t["blocks"]:
        x, y, w, h = b["rects"][0]
        r, c = y + h // 2, x + w // 2  # an element inside the block, a cell's middle
        px = rect["x"] + (c + 0.5) * rect["w"] / cols
        py = rect["y"] + (r + 0.5) * rect["h"] / rows
        page.mouse.move(svg["x"] + px * scale, svg["y"] + py * scale)
        text = page.locator("div.dv-tip").inner_text()
        assert b["slice"] in text and b["label"] in text, text
        for dev in b["devices"]:
            assert dev.rsplit("device:", 1)[1] in text
        assert b["bytes_text"] in text
        shown = float(text.rsplit("= ", 1)[1].replace("\u2212", "-"))
        assert shown == pytest.approx(float(values[r, c]), rel=5e-3, abs=1e-12), (b["slice"], text)
        assert f"w[{r}, {c}]" in text
    page.mouse.move(1, 1)


@browser_test
def test_the_slider_moves_the_update_and_the_norm_marker(page, widget):
    state = widget.data
    norms = decode(state["tensors"]["w"]["kinds"]["velocity"]["runs"]["recording"]["norms"])
    xs = []
    for index in (0, 6, STEPS - 1):
        _slide(page, index)
        assert page.locator(".dv-label").inner_text() == f"update {index + 1} of {STEPS}"
        assert page.locator("line.dv-update-line").get_attribute("data-update") == str(index + 1)
        assert page.locator(".dv-title").text_content() == f"velocity of 'w' after update {index + 1} of {STEPS}"
        dots = page.locator("circle.dv-norm-dot").all()
        assert len(dots) == len(state["tensors"]["w"]["blocks"])
        for q, dot in enumerate(dots):
            assert float(dot.get_attribute("data-norm")) == pytest.approx(norms[index, q], rel=1e-12)
        cx = {round(float(d.get_attribute("cx")), 6) for d in dots}
        assert len(cx) == 1
        assert cx == {round(float(page.locator("line.dv-update-line").get_attribute("x1")), 6)}
        xs.append(cx.pop())
    assert xs == sorted(xs) and xs[0] < xs[1] < xs[2]
    # another kind and variable: the grad's cells and title
    page.locator("select.dv-kind").select_option("grad")
    assert page.locator(".dv-title").text_content() == f"gradient of 'w' at update {STEPS} of {STEPS}"
    grad = decode(state["tensors"]["w"]["kinds"]["grad"]["runs"]["recording"]["values"])
    assert _cells(page).shape[:2] == grad.shape[1:]
    page.locator("select.dv-kind").select_option("velocity")
    assert np.isfinite(norms).all()


@browser_test
def test_play_walks_the_updates(page):
    _slide(page, 0)
    page.locator("button.dv-play").click()
    page.wait_for_function("() => document.querySelector('.dv-label').innerText !== 'update 1 of 12'", timeout=5_000)
    page.locator("button.dv-play").click()
    assert page.problems == []


@browser_test
def test_a_saved_page_shows_what_python_set_last(rec, browser, tmp_path):  # noqa: F811
    """A notebook that moves the explorer from Python (``explorer.update = 9``, a kind)
    saves that state: the page opens on it, as the still picture shows it."""
    widget = ShardExplorer(rec, step=2)
    widget.kind = "grad"
    widget.update = 9
    page = browser.new_page(viewport={"width": 1000, "height": 700})
    page.goto(saved_page(widget, tmp_path / "index.html").as_uri())
    page.wait_for_selector("div.dtsgd-live-ready", timeout=20_000)
    assert page.locator(".dv-label").inner_text() == f"update 9 of {STEPS}"
    assert page.locator("select.dv-kind").evaluate("s => s.value") == "grad"
    assert "update 9" in page.locator(".dv-title").text_content()
    page.close()
