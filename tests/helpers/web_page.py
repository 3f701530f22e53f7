"""A saved page holding a browser-drawn explorer's state as the docs site writes it
(``docs/hooks.py``: a live div, the state as JSON with base64 buffers, the kernel-free
runtime ``js/static.js``), for headless Chromium to open from a file."""

import base64
import json

from dtsgd_viz.web.widget import JS


def saved_page(widget, path):
    """A page holding ``widget``'s saved state as the docs site writes it."""
    from ipywidgets.widgets.widget import _remove_buffers

    st, paths, bufs = _remove_buffers(widget.get_state())
    buffers = [
        {"path": p, "data": base64.b64encode(bytes(b)).decode(), "encoding": "base64"} for p, b in zip(paths, bufs)
    ]
    saved = json.dumps({widget.model_id: {"state": st, "buffers": buffers}}).replace("</", "<\\/")
    path.write_text(
        '<!doctype html><html><body style="width:980px">'
        f'<div><div class="dtsgd-live" data-model-id="{widget.model_id}">'
        f'</div></div><script type="application/json" class="dtsgd-live-state">{saved}</script>'
        f'<script type="module">{(JS / "static.js").read_text()}</script></body></html>'
    )
    return path


def open_saved(browser, widget, folder, width=1000, height=700):
    """``widget``'s saved page in ``folder``, opened in a new page of ``browser`` and drawn
    (or failed); ``page.problems`` collects its page errors and console errors."""
    page = browser.new_page(viewport={"width": width, "height": height})
    problems = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.goto(saved_page(widget, folder / "index.html").as_uri())
    page.wait_for_selector("div.dtsgd-live-ready, div.dtsgd-live-failed", timeout=20_000)
    page.problems = problems
    return page
