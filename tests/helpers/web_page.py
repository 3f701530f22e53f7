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
