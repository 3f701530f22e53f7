"""Every browser-drawn explorer the tutorials save (``dtsgd_viz.web``): its saved state's
size and how fast it redraws on its main control, in headless Chromium on a page built
from the executed notebook's own saved widget state (no kernel, as the documentation
site serves it).

    python benchmarks/web_explorers.py            # about 30 s on 2 cores
    python benchmarks/web_explorers.py --moves 200

Workload: the committed notebooks in ``notebooks/`` as they are. Each explorer's main
control is moved ``--moves`` times at random and timed in the page with
``performance.now()`` from the event to the end of the next layout: the update slider
(``PathExplorer``, ``ShardExplorer``), a click on a random map cell (``PhaseDiagram``:
its two paths of up to 150 updates run by the browser, then drawn), the learning-rate
slider (``CompareWidget``: its three runs rerun by the browser, then drawn), a random
layout in the dropdowns (``LayoutExplorer``). The state size is the model's saved state as the
notebook stores it (JSON, binary buffers in base64, the ES module included). Targets
(issue 32): under 30 ms a move, under 300 KB of state.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
RUNTIME = ROOT / "dtsgd_viz" / "web" / "js" / "static.js"
STATE = "application/vnd.jupyter.widget-state+json"

MOVE = {
    "dtsgd-viz-paths": """(root) => { const s = root.querySelector('input.dv-slider');
        s.value = Math.floor(Math.random() * (+s.max + 1)); s.dispatchEvent(new Event('input')); }""",
    "dtsgd-viz-shards": """(root) => { const s = root.querySelector('input.dv-slider');
        s.value = Math.floor(Math.random() * (+s.max + 1)); s.dispatchEvent(new Event('input')); }""",
    "dtsgd-viz-phase": """(root) => { const cells = root.querySelectorAll('rect[data-cell]');
        cells[Math.floor(Math.random() * cells.length)].dispatchEvent(new MouseEvent('click', {bubbles: true})); }""",
    "dtsgd-viz-compare": """(root) => { const s = root.querySelector('input[type=range]');
        s.value = +s.min + Math.random() * (+s.max - +s.min); s.dispatchEvent(new Event('input')); }""",
    "dtsgd-viz-layout": """(root) => { for (const s of root.querySelectorAll('select.dv-dim')) {
        s.selectedIndex = Math.floor(Math.random() * s.options.length); }
        const s = root.querySelector('select.dv-dim'); s.dispatchEvent(new Event('change')); }""",
}
CONTROL = {
    "dtsgd-viz-paths": "slider",
    "dtsgd-viz-shards": "slider",
    "dtsgd-viz-phase": "cell click",
    "dtsgd-viz-compare": "learning-rate slider",
    "dtsgd-viz-layout": "layout pick",
}


def saved_explorers(notebook: pathlib.Path) -> dict[str, dict]:
    nb = json.loads(notebook.read_text())
    state = nb.get("metadata", {}).get("widgets", {}).get(STATE, {}).get("state", {})
    return {k: v for k, v in state.items() if v.get("model_module") == "anywidget"}


def page_html(model_id: str, model: dict) -> str:
    saved = json.dumps({model_id: model}).replace("</", "<\\/")
    return (
        '<!doctype html><html><body style="width:980px">'
        f'<div class="dtsgd-live" data-model-id="{model_id}"></div>'
        f'<script type="application/json" class="dtsgd-live-state">{saved}</script>'
        f'<script type="module">{RUNTIME.read_text()}</script></body></html>'
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=100)
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    rows = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"])
        for notebook in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
            for model_id, model in saved_explorers(notebook).items():
                size = len(json.dumps(model).encode())
                page_file = pathlib.Path(tmp) / f"{model_id}.html"
                page_file.write_text(page_html(model_id, model))
                page = browser.new_page(viewport={"width": 1000, "height": 800})
                page.goto(page_file.as_uri())
                page.wait_for_selector("div.dtsgd-live-ready, div.dtsgd-live-failed", timeout=30_000)
                kind = page.evaluate(
                    "() => [...document.querySelector('.dtsgd-viz').classList].find((c) => c.startsWith('dtsgd-viz-'))"
                )
                times = page.evaluate(
                    """([move, moves]) => {
                    const f = eval(move), root = document.querySelector('.dtsgd-viz'), out = [];
                    for (let k = 0; k < moves; k++) {
                      const t0 = performance.now();
                      f(root);
                      root.getBoundingClientRect();
                      document.body.offsetHeight;
                      out.push(performance.now() - t0);
                    }
                    return out;
                }""",
                    [MOVE[kind], args.moves],
                )
                page.close()
                times.sort()
                rows.append(
                    (
                        notebook.stem,
                        kind.removeprefix("dtsgd-viz-"),
                        CONTROL[kind],
                        statistics.median(times),
                        times[int(0.95 * (len(times) - 1))],
                        size,
                    )
                )
        browser.close()
    print(f"The tutorials' browser-drawn explorers in headless Chromium, {args.moves} moves each; 2-core machine\n")
    print("| tutorial | explorer | control | redraw median | redraw p95 | saved state |")
    print("|---|---|---|---|---|---|")
    for nb, kind, control, med, p95, size in rows:
        print(f"| {nb} | {kind} | {control} | {med:.1f} ms | {p95:.1f} ms | {size / 1024:.0f} KB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
