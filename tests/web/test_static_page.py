"""The browser-drawn PathExplorer on a saved page, opened from a file in headless Chromium
with no kernel and no widget manager (as the documentation site serves it): the slider,
hover, click and Play respond, and what the SVG draws is the recording's numbers."""

import json
import re

import numpy as np
import pytest
from helpers.browser import browser, browser_test  # noqa: F401
from helpers.builders import tutorial_03_runs
from helpers.web_page import open_saved, saved_page
from matplotlib import colors as mcolors

import dtsgd_viz
from dtsgd_viz import web
from dtsgd_viz.views.paths.loss import MEAN_LABEL
from dtsgd_viz.widgets.explorer_figure import LATER_VEIL

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs():
    return tutorial_03_runs(40)


@pytest.fixture(scope="module")
def page(runs, browser, tmp_path_factory):  # noqa: F811
    surface, recs = runs
    page = open_saved(browser, web.PathExplorer(recs, surface, step=5), tmp_path_factory.mktemp("page"), 1000, 700)
    yield page
    page.close()


def _slide(page, index):
    page.locator("input.dv-slider").evaluate("(s, i) => { s.value = i; s.dispatchEvent(new Event('input')); }", index)


def _centre(node):
    return float(node.get_attribute("cx")), float(node.get_attribute("cy"))


def _fit(box, rect, x, y):
    """The paths panel's map: the box onto the rect at one scale, y downward."""
    (x0, x1), (y0, y1) = box
    s = min(rect["w"] / (x1 - x0), rect["h"] / (y1 - y0))
    return rect["x"] + (x - x0) * s, rect["y"] + (y1 - y) * s


@browser_test
def test_it_starts_with_no_kernel_at_the_update_asked(page):
    assert page.locator("div.dtsgd-live-ready").count() == 1 and page.problems == []
    assert page.locator(".dv-label").inner_text() == "update 5 of 40"


@browser_test
@pytest.mark.parametrize("index", [0, 17, 39])
def test_the_slider_draws_the_recorded_positions_losses_and_terms(page, runs, index):
    import dtsgd_viz

    surface, recs = runs
    found = {index + 1: dtsgd_viz.findings(recs, surface, upto=index + 1)}
    _slide(page, index)
    assert page.locator(".dv-label").inner_text() == f"update {index + 1} of 40"
    g = page.locator("g.dv-paths")
    box, rect = json.loads(g.get_attribute("data-box")), json.loads(g.get_attribute("data-rect"))
    for name, rec in recs.items():
        path = np.asarray(rec.path("w"), np.float64).reshape(-1, 2)
        marker = page.locator(f"circle.dv-current[data-run={name}]")  # a ring, as every static figure draws
        assert marker.get_attribute("fill") == "none"  # open, as plot_paths' ring: never a white "start" disk
        x, y = float(marker.get_attribute("data-x")), float(marker.get_attribute("data-y"))
        np.testing.assert_allclose([x, y], path[index + 1], rtol=1e-12)  # the parameters after update n
        np.testing.assert_allclose(_centre(marker), _fit(box, rect, x, y), atol=0.01)
        loss = float(page.locator(f"circle.dv-loss-dot[data-run={name}]").get_attribute("data-loss"))
        # update n = index + 1 at k = n: the loss after n updates, at the ring (as plot_paths, findings)
        assert loss == pytest.approx(float(surface.value_np(path[index + 1].reshape(surface.shape))), rel=1e-12)
        dot = page.locator(f"circle.dv-loss-dot[data-run={name}]")
        line = page.locator("line.dv-update-line")
        assert int(dot.get_attribute("data-k")) == int(line.get_attribute("data-k")) == index + 1
        assert float(dot.get_attribute("cx")) == pytest.approx(float(line.get_attribute("x1")), abs=1e-6)
        assert found[index + 1].window[1] == index + 1  # findings(upto=n)'s window ends at that k
        # the trail grows with the slider: the points up to where update n starts, then its end
        points = page.locator(f"polyline.dv-trail[data-run={name}]").get_attribute("points").split()
        assert len(points) == index + 3
        # the arrows: the rule's terms from the recorded velocity and gradient (numpy)
        n = len(rec)
        g_ = np.asarray(rec.global_values("w", "grad"), np.float64).reshape(n, -1)[index]
        v = np.asarray(rec.global_values("w", "velocity"), np.float64).reshape(n, -1)
        hp = rec.hyperparameters
        lr, mu = float(np.asarray(hp.learning_rate).reshape(-1)[index]), float(hp.momentum)
        want = [-lr * g_]
        if mu:
            v_prev = v[index - 1] if index else np.zeros(2)
            want.insert(0, mu * (v[index] if hp.nesterov else v_prev))
        want = [w for w in want if np.any(w)]  # a zero term (mu*v_prev at update 1) draws no arrow, as the still
        got = [json.loads(a.get_attribute("data-uv")) for a in page.locator(f"line.dv-arrow[data-run={name}]").all()]
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15)
    sizes = {
        round(float(np.ptp(json.loads(c.get_attribute("data-box"))[0])), 12) for c in page.locator("g.dv-close").all()
    }
    assert len(sizes) == 1  # every run's close-up at one scale
    # the headline's mean band: findings(upto=n)'s window, on the loss panel's k axis
    band = page.locator("rect.dv-mean-band")
    assert tuple(json.loads(band.get_attribute("data-window"))) == found[index + 1].window


@browser_test
def test_hover_names_a_point_and_a_click_shows_its_update(page, runs):
    surface, recs = runs
    _slide(page, 0)
    rec = recs["nesterov"]
    path = np.asarray(rec.path("w"), np.float64).reshape(-1, 2)
    g = page.locator("g.dv-paths")
    box, rect = json.loads(g.get_attribute("data-box")), json.loads(g.get_attribute("data-rect"))
    k = 12
    sx, sy = _fit(box, rect, *path[k])
    svg = page.locator("svg.dv-svg").bounding_box()
    scale = svg["width"] / 930
    page.mouse.move(svg["x"] + sx * scale, svg["y"] + sy * scale)
    tip = page.locator("div.dv-tip")
    text = tip.inner_text()
    assert tip.is_visible() and f"after {k} updates" in text, text
    loss = float(surface.value_np(path[k].reshape(surface.shape)))
    shown = float(re.search(r"loss ([-\d.e\u2212]+)", text).group(1).replace("\u2212", "-"))
    assert shown == pytest.approx(loss, rel=5e-3)  # 3 significant digits
    page.mouse.click(svg["x"] + sx * scale, svg["y"] + sy * scale)
    # the update whose ring is at the point clicked: after k updates is update k
    shown = int(re.fullmatch(r"update (\d+) of 40", page.locator(".dv-label").inner_text()).group(1))
    clicked = int(re.search(r"after (\d+) update", text).group(1))
    assert shown == clicked or page.locator("div.dv-tip").inner_text() != text
    # clicking the ring of the update shown keeps it there
    for _ in range(3):
        marker = page.locator("circle.dv-current[data-run=nesterov]")
        mx, my = _centre(marker)
        page.mouse.move(svg["x"] + mx * scale, svg["y"] + my * scale)
        page.mouse.click(svg["x"] + mx * scale, svg["y"] + my * scale)
    assert page.locator(".dv-label").inner_text() == f"update {shown} of 40"


@browser_test
def test_play_walks_the_updates_and_a_second_click_pauses(page):
    _slide(page, 0)
    page.locator("button.dv-play").click()
    page.wait_for_function("() => document.querySelector('.dv-label').innerText !== 'update 1 of 40'", timeout=5_000)
    page.locator("button.dv-play").click()
    paused = page.locator(".dv-label").inner_text()
    page.wait_for_timeout(400)
    assert page.locator(".dv-label").inner_text() == paused


@browser_test
def test_a_saved_page_opens_on_the_update_python_set_last(runs, browser, tmp_path):  # noqa: F811
    surface, recs = runs
    widget = web.PathExplorer(recs, surface, step=5)
    widget.update = 31  # as a notebook cell after the display does
    page = browser.new_page(viewport={"width": 1000, "height": 700})
    page.goto(saved_page(widget, tmp_path / "index.html").as_uri())
    page.wait_for_selector("div.dtsgd-live-ready", timeout=20_000)
    assert page.locator(".dv-label").inner_text() == "update 31 of 40"
    page.close()


@browser_test
def test_the_close_up_zoom_is_the_stills_shared_zoom(page, runs):
    """The title's ×N is the paths' span over the close-ups' (views.update.zoom's shared
    zoom, the still's caption), written as zoom.times writes it; no box on the paths
    marks where the close-ups look (they share one scale); each length bar carries its number."""
    from dtsgd_viz.views.update.zoom import span_text

    for index in (0, 20, 39):
        _slide(page, index)
        (x0, x1), (y0, y1) = json.loads(page.locator("g.dv-paths").get_attribute("data-box"))
        span = np.ptp(json.loads(page.locator("g.dv-close").first.get_attribute("data-box"))[0])
        factor = max(x1 - x0, y1 - y0) / span
        title = page.locator(".dv-close-title")
        assert float(title.get_attribute("data-zoom")) == pytest.approx(factor, rel=1e-9)
        assert f"every panel spans {span_text(factor)} of the paths' width" in title.text_content()
        assert page.locator("rect.dv-zoom-box").count() == 0
        bars = page.locator("rect.dv-bar").all()
        values = page.locator("text.dv-bar-value").all()
        assert len(bars) == len(values) > 0
        for bar, value in zip(bars, values):
            said = float(value.text_content().replace("\u2212", "-"))
            assert said == pytest.approx(float(bar.get_attribute("data-value")), rel=5e-3)
    # the bars' key: one swatch per run in the colour its bars are edged in; filled as the still's bars (the
    # momentum term solid, the gradient's its tint, the step open)
    keys = {k.get_attribute("data-run"): k.get_attribute("fill") for k in page.locator("rect.dv-bar-key").all()}
    bars = page.locator("rect.dv-bar").all()
    assert keys == {b.get_attribute("data-run"): b.get_attribute("stroke") for b in bars}
    for b in bars:
        run, term, fill = b.get_attribute("data-run"), b.get_attribute("data-term"), b.get_attribute("fill")
        assert fill == {"step": "white", "gradient": fill if fill != keys[run] else None}.get(term, keys[run]), b
    assert page.locator("text.dv-bar-units").count() == 1


@browser_test
@pytest.mark.parametrize("index", [4, 19])
def test_a_close_up_too_small_at_the_shared_zoom_is_drawn_again_in_an_inset(page, runs, index):
    """As the still (``zoom.draw_inset``): a run whose update ``zoom.shared_zoom`` insets is drawn
    again over its own box, marked with the share of the paths' width it spans (1/N), its
    arrows the recorded terms, a dotted box round what it enlarges; the others draw no inset."""
    from dtsgd_viz.views.paths.frames import panel_at
    from dtsgd_viz.views.paths.scene import build_scene
    from dtsgd_viz.views.update.geometry import zoom_factor
    from dtsgd_viz.views.update.zoom import shared_zoom, span_text

    surface, recs = runs
    scene = build_scene(recs, surface, None)
    own, _, insets = shared_zoom({k: panel_at(scene, k, index, True) for k in recs}, scene.box)
    assert insets  # the runs here have one at these updates
    _slide(page, index)
    for name in recs:
        close = page.locator(f"g.dv-close[data-run={name}]")
        inset = close.locator("g.dv-inset")
        assert inset.count() == (1 if name in insets else 0), (index, name, insets)
        assert close.locator("rect.dv-inset-box").count() == inset.count()
        if name not in insets:
            continue
        np.testing.assert_allclose(json.loads(inset.get_attribute("data-box")), own[name].box, rtol=1e-9)
        said = inset.locator("text.dv-inset-zoom").text_content()
        assert said == span_text(zoom_factor(scene.box, own[name].box)), (name, said)
        main = [json.loads(a.get_attribute("data-uv")) for a in close.locator("line.dv-arrow").all()]
        again = [json.loads(a.get_attribute("data-uv")) for a in inset.locator("line.dv-inset-arrow").all()]
        np.testing.assert_allclose(again, main, rtol=1e-12)  # the same terms, closer
        # its box inside its close-up, in the upper right corner (the update in the lower left stays clear)
        rect, panel_rect = json.loads(inset.get_attribute("data-rect")), json.loads(close.get_attribute("data-rect"))
        assert (
            rect["x"] > panel_rect["x"] + panel_rect["w"] / 3
            and rect["x"] + rect["w"] <= panel_rect["x"] + panel_rect["w"]
        )
        assert rect["y"] >= panel_rect["y"] and rect["y"] + rect["h"] < panel_rect["y"] + panel_rect["h"] * 2 / 3
        box = close.locator("rect.dv-inset-box")
        bx, by = float(box.get_attribute("x")), float(box.get_attribute("y"))
        assert bx + float(box.get_attribute("width")) < rect["x"] and by > rect["y"] + rect["h"]  # clear of it
        leader = close.locator("line.dv-inset-leader")  # from the box's upper right to the inset's lower left
        ends = [float(leader.get_attribute(a)) for a in ("x1", "y1", "x2", "y2")]
        np.testing.assert_allclose(ends, [bx + float(box.get_attribute("width")), by, rect["x"], rect["y"] + rect["h"]])
    assert page.locator("text.dv-close-small").count() == 0  # no "too small" words: the inset shows it


@browser_test
def test_the_keys_name_the_close_ups_marks_and_the_bars_without_overlapping(page):
    """Under the close-ups the still's key words (``views.update.plot.close_up_marks``), one per mark;
    the bars' key entries and the close-ups' key entries each clear of the others."""
    from dtsgd_viz.views.update.plot import close_up_marks

    _slide(page, 19)
    entries = page.locator("g.dv-close-key-entry").all()
    assert [e.locator("text").text_content() for e in entries] == list(close_up_marks())
    assert [e.get_attribute("data-mark") for e in entries] == ["before", "after", "step", "trail"]
    assert entries[3].locator("circle").count() == entries[3].locator("line").count() > 0  # the path's dots, as drawn
    # the paths' key rings the update shown in each run's colour, as drawn (grey is plain's alone)
    from dtsgd_viz.views.core import style

    # plain's thin path in its white casing, along the same points as its line
    casing, line = page.locator("polyline.dv-casing[data-run=plain]"), page.locator("polyline.dv-trail[data-run=plain]")
    assert casing.get_attribute("points") == line.get_attribute("points") and casing.get_attribute("stroke") == "white"
    rings = [r.get_attribute("stroke") for r in page.locator("circle.dv-ring-key").all()]
    assert [mcolors.to_hex(c) for c in rings] == [
        mcolors.to_hex(style.RULE_LOOKS[k].color) for k in ("plain", "momentum", "nesterov")
    ]
    # a dot at each point of a close-up's path before the white disk (a panel's and its inset's)
    paths, dots = page.locator("polyline.dv-close-path").all(), page.locator("circle.dv-close-dot").all()
    xy = [[tuple(map(float, p.split(","))) for p in (ln.get_attribute("points") or "").split()] for ln in paths]
    got = [(float(d.get_attribute("cx") or "nan"), float(d.get_attribute("cy") or "nan")) for d in dots]
    assert paths and sorted(got) == sorted(p for pts in xy for p in pts[:-1])

    def boxes(selector):
        return [page.locator(selector).nth(i).bounding_box() for i in range(page.locator(selector).count())]

    def clear(a, b):
        return (
            a["x"] + a["width"] <= b["x"]
            or b["x"] + b["width"] <= a["x"]
            or (a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])
        )

    swatches = boxes("rect.dv-bar-key")
    names = [
        page.locator("rect.dv-bar-key").nth(i).locator("xpath=following-sibling::*[1]") for i in range(len(swatches))
    ]
    words = [n.bounding_box() for n in names]
    assert len(swatches) == 3
    for i, w in enumerate(words):
        for j, s in enumerate(swatches):
            if i != j:
                assert clear(w, s), (i, j, w, s)  # no run's name runs into another's swatch
    keys = [e.bounding_box() for e in entries]
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            assert clear(a, b), (a, b)


@browser_test
def test_the_loss_panel_rings_the_update_shown_and_term_names_have_a_halo(page, runs):
    """The loss after the update shown in the ring every still draws there (``style.ROLE_LOOKS
    ["current"]``: a white face, the run's colour, its size and width), never a filled dot; the
    close-ups' term names in a white halo under their letters."""
    from dtsgd_viz.views.core import style
    from dtsgd_viz.web.look import look_data

    surface, recs = runs
    ring = look_data(style.ROLE_LOOKS["current"])
    colors = {
        n: look_data(lk, style.optimizer_colors(list(recs))[n])["color"] for n, lk in style.run_looks(recs).items()
    }
    _slide(page, 19)
    for name in recs:
        dot = page.locator(f"circle.dv-loss-dot[data-run={name}]")
        assert dot.get_attribute("fill") == "none" and dot.get_attribute("stroke") == colors[name]  # open, as stills
        assert float(dot.get_attribute("r")) == pytest.approx(ring["size"] / 2)
        assert float(dot.get_attribute("stroke-width")) == pytest.approx(ring["width"])
    labels = page.locator("text.dv-term-label").all()
    assert labels
    for t in labels:
        assert t.get_attribute("paint-order") == "stroke" and t.get_attribute("stroke") == "white"
    found = dtsgd_viz.findings(recs, surface, upto=20)  # each run's mean over the band, as a bar in its colour
    assert page.locator("text.dv-mean-key").text_content() == MEAN_LABEL  # named as the stills name it
    band = json.loads(page.locator("rect.dv-mean-band").get_attribute("data-window"))
    assert tuple(band) == found.window
    for name in recs:
        bar = page.locator(f"line.dv-mean[data-run={name}]")
        assert float(bar.get_attribute("data-mean")) == pytest.approx(found.tail_loss[name], rel=1e-9)
        assert bar.get_attribute("stroke") == colors[name] and bar.get_attribute("y1") == bar.get_attribute("y2")
        # from the band's start to just short of the ring at the update shown: no tick through the ring
        dot, x2 = page.locator(f"circle.dv-loss-dot[data-run={name}]"), float(bar.get_attribute("x2") or "nan")
        gap = float(dot.get_attribute("cx") or "nan") - x2
        assert ring["size"] / 2 < gap < ring["size"] / 2 + 4 and float(bar.get_attribute("x1") or "nan") < x2
    # the loss after update 20 under a white veil from the update line on, as the paths after it are pale
    veil, line = page.locator("rect.dv-loss-later"), page.locator("line.dv-update-line")
    assert float(veil.get_attribute("x")) == pytest.approx(float(line.get_attribute("x1")))
    assert float(veil.get_attribute("opacity")) == LATER_VEIL and float(veil.get_attribute("width")) > 0
    # over it all the headline at update 20, as findings says it, over the settings line
    assert page.locator(".dv-headline").text_content() == found.headline()
    assert page.locator(".dv-settings").text_content().startswith(surface.label + " · lr ")


@browser_test
@pytest.mark.parametrize("index", [0, 19, 39])
def test_the_close_ups_draw_each_term_and_the_step_as_an_arrow_with_a_head(page, runs, index):
    """As the still (``plot_update``): one arrow with a filled head per non-zero term, tip to
    tail from where the update starts, in the term's colour and at its recorded length on the
    close-up's scale; a term's name beside each arrow long enough to carry it; and, where
    two are drawn, the thin step they add up to in the run's colour."""
    from matplotlib.colors import to_hex

    from dtsgd_viz.views.update.panel import term_color
    from dtsgd_viz.web.paths import TERM_NAMES

    surface, recs = runs
    _slide(page, index)
    for name, rec in recs.items():
        n = len(rec)
        g_ = np.asarray(rec.global_values("w", "grad"), np.float64).reshape(n, -1)[index]
        v = np.asarray(rec.global_values("w", "velocity"), np.float64).reshape(n, -1)
        hp = rec.hyperparameters
        lr, mu = float(np.asarray(hp.learning_rate).reshape(-1)[index]), float(hp.momentum)
        terms = {"gradient": -lr * g_}
        if mu:
            v_prev = v[index - 1] if index else np.zeros(2)
            terms = {("lookahead" if hp.nesterov else "momentum"): mu * (v[index] if hp.nesterov else v_prev), **terms}
        close = page.locator(f"g.dv-close[data-run={name}]")
        box, rect = json.loads(close.get_attribute("data-box")), json.loads(close.get_attribute("data-rect"))
        scale = rect["w"] / np.ptp(box[0])
        drawn = close.locator("g.dv-arrow-g").all()
        want = {t: u for t, u in terms.items() if np.any(u)}  # a zero term draws nothing
        assert [a.get_attribute("data-term") for a in drawn] == list(want), (name, index)
        color = close.locator("circle.dv-next").get_attribute("stroke")  # the run's colour, as its ring
        labels = {t.get_attribute("data-term"): t.text_content() for t in close.locator("text.dv-term-label").all()}
        for a, (t, u) in zip(drawn, want.items()):
            line, head = a.locator("line.dv-arrow"), a.locator("polygon.dv-head")
            assert line.get_attribute("stroke") == to_hex(term_color(t, color))  # the run's colour, its tint for g
            assert head.count() == 1 and head.get_attribute("fill") == line.get_attribute("stroke")
            np.testing.assert_allclose(json.loads(line.get_attribute("data-uv")), u, rtol=1e-9, atol=1e-15)
            tip = [float(c) for c in head.get_attribute("points").split()[0].split(",")]
            tail = [float(line.get_attribute("x1")), float(line.get_attribute("y1"))]
            assert np.hypot(tip[0] - tail[0], tip[1] - tail[1]) == pytest.approx(np.hypot(*u) * scale, rel=1e-6)
            if np.hypot(*u) * scale >= 7 * len(TERM_NAMES[t]) + 12:  # long enough to carry its name
                assert labels.get(t) == TERM_NAMES[t]
        step = close.locator("line.dv-step")
        assert step.count() == (1 if len(want) > 1 else 0)
        if len(want) > 1:
            np.testing.assert_allclose(
                json.loads(step.get_attribute("data-uv")), sum(terms.values()), rtol=1e-9, atol=1e-15
            )
            assert step.get_attribute("stroke") == color  # the run's colour, thin, no head of its own
