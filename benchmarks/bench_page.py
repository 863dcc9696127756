"""Slider-to-plot latency of the page in a real browser (Debian's Chromium) against `panel serve`.

For each case: open the view, focus a slider handle, press → or ← (alternating, so the value
moves back and forth), and time from just before the key press until every watched plot data
source in BokehJS has received its new data and the browser has painted the next frame
(``requestAnimationFrame`` after the last ``source.change``). Prints the median and spread.

    .venv/bin/python benchmarks/bench_page.py [--repeats 25] [--only playground]

Targets: under 150 ms for the playground, under 400 ms for the sweep views.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "web"))
from panel_server import free_port, start_panel_serve  # noqa: E402
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]

# (name, query, slider's accessible name, data column whose sources must all update, target ms)
CASES = [
    ("playground: d_k", "?view=playground", "d_k (key/query dimension)", ("w", "none"), 150),
    ("playground: σ", "?view=playground", "σ (std of q, k entries)", ("w", "none"), 150),
    ("variance: d_k (histograms)", "?view=variance", "d_k (key/query dimension)", ("density",), 400),
    ("variance: σ (histograms + sweep)", "?view=variance", "σ (std of q, k entries)", ("density", "std"), 400),
    ("saturation: σ (Monte-Carlo sweep)", "?view=saturation", "σ (std of q, k entries)", ("mean",), 400),
    ("saturation: n (Monte-Carlo sweep)", "?view=saturation", "n (sequence length)", ("mean",), 400),
    ("precision: σ (float16/32/64 sweep)", "?view=precision", "σ (std of q, k entries)", ("d_k",), 400),
]

WATCH_JS = """(cols) => {
  window.__hits = new Set(); window.__last = 0; let n = 0;
  for (const doc of Bokeh.documents) for (const m of doc.all_models) {
    const data = m.data;
    if (!data || typeof data !== 'object' || !m.change) continue;
    const keys = data instanceof Map ? Array.from(data.keys()) : Object.keys(data);
    if (!cols.some(c => keys.includes(c))) continue;
    const id = m.id; n += 1;
    m.change.connect(() => requestAnimationFrame(() => { window.__hits.add(id); window.__last = performance.now(); }));
  }
  window.__watched = n;
  return n;
}"""


def measure(page, url: str, slider: str, cols, repeats: int) -> list[float]:
    page.goto(url)
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length && Bokeh.documents[0].all_models.size > 50")
    handle = page.locator(f'.noUi-handle[aria-label="{slider}"]')
    handle.wait_for()
    page.wait_for_function("() => document.readyState === 'complete'")
    watched = page.evaluate(WATCH_JS, list(cols))
    if not watched:
        raise RuntimeError(f"no data source with columns {cols} on {url}")
    handle.focus()
    times = []
    for i in range(repeats + 2):  # the first two are warm-up (first sweep, JIT)
        page.evaluate("() => { window.__hits = new Set(); window.__last = 0; }")
        t0 = page.evaluate("() => performance.now()")
        handle.press("ArrowRight" if i % 2 == 0 else "ArrowLeft")
        page.wait_for_function("() => window.__hits.size >= window.__watched", timeout=15000)
        if i >= 2:
            times.append(page.evaluate("() => window.__last") - t0)
    return times


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=25)
    ap.add_argument("--only", default="", help="run only the cases whose name contains this text")
    args = ap.parse_args(argv)
    port = free_port()
    proc = start_panel_serve(port)
    base = f"http://127.0.0.1:{port}/app"
    failed = False
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            print(f"{'case':38s} {'median':>8s} {'p10':>7s} {'p90':>7s}  target")
            for name, query, slider, cols, target in CASES:
                if args.only not in name:
                    continue
                t = sorted(measure(page, base + query, slider, cols, args.repeats))
                med = statistics.median(t)
                p10, p90 = t[len(t) // 10], t[(len(t) * 9) // 10]
                ok = med < target
                failed |= not ok
                print(f"{name:38s} {med:7.0f}ms {p10:6.0f}ms {p90:6.0f}ms  <{target} ms {'ok' if ok else 'MISSED'}")
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
