"""How fast the browser-drawn PathExplorer (``dtsgd_viz.web``) redraws when its slider
moves, and how large its saved state is, in headless Chromium on a saved page (no
kernel, as the documentation site serves it).

    python benchmarks/web_redraw.py            # about a minute on 2 cores
    python benchmarks/web_redraw.py --moves 300

Workload: tutorial 03's three runs (plain, momentum, Nesterov on its rotated quadratic,
every update recorded), of 60 updates (the tutorial's) and of 2,000. Each move sets the
slider to a random update and dispatches its ``input`` event; the time is measured in
the page with ``performance.now()`` from the event to the end of the next layout
(``getBoundingClientRect()`` forces it). The state size is the saved widget state as a
notebook stores it (its JSON plus the binary buffers in base64). Targets (issue 32):
under 30 ms a move, under 300 KB of state for the tutorials' runs.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moves", type=int, default=100)
    parser.add_argument("--updates", type=int, nargs="+", default=[60, 2000])
    args = parser.parse_args(argv)
    import dtsgd_viz

    dtsgd_viz.setup_devices(8)
    from helpers.builders import tutorial_03_runs
    from playwright.sync_api import sync_playwright
    from web.test_static_page import saved_page

    from dtsgd_viz import web

    rows = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        for n in args.updates:
            surface, recs = tutorial_03_runs(n)
            widget = web.PathExplorer(recs, surface)
            page_file = saved_page(widget, pathlib.Path(tmp) / f"p{n}.html")
            state = json.loads(page_file.read_text().split('class="dtsgd-live-state">')[1].split("</script>")[0])
            size = len(json.dumps(state).encode())
            page = browser.new_page(viewport={"width": 1000, "height": 700})
            page.goto(page_file.as_uri())
            page.wait_for_selector("div.dtsgd-live-ready", timeout=30_000)
            times = page.evaluate(
                """(moves) => {
                const s = document.querySelector('input.dv-slider'), out = [];
                const max = +s.max;
                for (let k = 0; k < moves; k++) {
                  const t0 = performance.now();
                  s.value = Math.floor(Math.random() * (max + 1));
                  s.dispatchEvent(new Event('input'));
                  document.querySelector('svg.dv-svg').getBoundingClientRect();
                  document.body.offsetHeight;
                  out.push(performance.now() - t0);
                }
                return out;
            }""",
                args.moves,
            )
            page.close()
            times.sort()
            rows.append(
                (
                    n,
                    len(widget.data["frame_index"]),
                    statistics.median(times),
                    times[int(0.95 * (len(times) - 1))],
                    size,
                )
            )
        browser.close()
    print(
        f"PathExplorer (dtsgd_viz.web) in headless Chromium, 3 runs, {args.moves} slider moves each; 2-core machine\n"
    )
    print("| updates | on the slider | redraw median | redraw p95 | saved state |")
    print("|---|---|---|---|---|")
    for n, kept, med, p95, size in rows:
        print(f"| {n} | {kept} | {med:.1f} ms | {p95:.1f} ms | {size / 1024:.0f} KB |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
