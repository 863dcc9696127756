"""Measure the built site in headless Chromium: bytes, first paint, time to interactive, slider latency.

    python build/measure_site.py [--dir _site] [--runs 15]

Serves the folder with build/serve.py (gzip, ETag, like a static host) and counts the
bytes of every response body it sends: what crossed the network, the browser's HTTP cache
included (no request routing, which would disable that cache). Cold visit: a fresh browser profile. Warm visit:
a reload once the service worker has precached everything, with the network switched off.
"""
from __future__ import annotations

import argparse
import statistics
from collections import Counter
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import serve  # noqa: E402

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]
BOOT_MS = 120_000
TIMES = """() => ({
  paint: (performance.getEntriesByName("first-contentful-paint")[0] || {}).startTime,
  interactive: window.sdpaLab.steps.interactive,
  steps: window.sdpaLab.steps,
})"""
# Move d_k one step through its Bokeh model (what dragging does) and time the patch coming back.
MOVE = """async (i) => {
  const doc = Bokeh.documents[Bokeh.documents.length - 1];
  const sliders = [...doc.all_models].filter((m) => m.constructor.__name__ === "Slider");
  const s = sliders[0];
  const n = window.sdpaLab.latencies.length;
  s.value = s.value === s.end ? s.start : Math.min(s.end, s.value + (s.step || 1));
  const t = performance.now();
  while (window.sdpaLab.latencies.length === n && performance.now() - t < 10000) await new Promise((r) => setTimeout(r, 2));
  return window.sdpaLab.latencies[n];
}"""


def visit(page, url: str) -> dict:
    page.goto(url)
    page.wait_for_function("window.sdpaLab && (window.sdpaLab.ready || window.sdpaLab.error)", timeout=BOOT_MS)
    if page.evaluate("window.sdpaLab.error"):
        raise SystemExit(f"measure: the page failed to boot: {page.evaluate('window.sdpaLab.error')}")
    return page.evaluate(TIMES)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=HERE.parent / "_site")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    server, url = serve.start(args.dir)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        serve.SiteHandler.bytes_sent = 0
        serve.SiteHandler.bodies.clear()
        cold = visit(page, url)
        boot_bytes = serve.SiteHandler.bytes_sent
        page.wait_for_function("window.sdpaLab.offlineReady", timeout=BOOT_MS)
        first_bytes = serve.SiteHandler.bytes_sent
        counts = Counter(path for path, _ in serve.SiteHandler.bodies)
        twice = sorted(path for path, n in counts.items() if n > 1)

        serve.SiteHandler.bytes_sent = 0
        context.set_offline(True)
        warm = visit(page, url)
        second_bytes = serve.SiteHandler.bytes_sent
        page.wait_for_timeout(1000)      # let the page settle before timing the slider
        latencies = [page.evaluate(MOVE, i) for i in range(args.runs)]
        browser.close()
    server.shutdown()

    total = sum(f.stat().st_size for f in args.dir.rglob("*") if f.is_file())
    print(f"site on disk:                      {total / 1e6:6.1f} MB")
    print(f"bytes served, first visit to interactive: {boot_bytes / 1e6:6.1f} MB  (gzip)")
    print(f"bytes served, first visit incl. precache: {first_bytes / 1e6:6.1f} MB  "
          f"({len(counts)} URLs, {len(twice)} downloaded more than once{': ' + ', '.join(twice) if twice else ''})")
    print(f"bytes served, second visit:        {second_bytes / 1e6:6.2f} MB  (network off)")
    print(f"first contentful paint (cold):     {cold['paint'] / 1e3:6.2f} s")
    print(f"time to interactive, cold:         {cold['interactive'] / 1e3:6.2f} s")
    print(f"time to interactive, warm:         {warm['interactive'] / 1e3:6.2f} s  (offline, from the cache)")
    print(f"slider-to-plot latency, median:    {statistics.median(latencies):6.0f} ms  "
          f"(d_k moved {len(latencies)} times; min {min(latencies):.0f}, max {max(latencies):.0f})")
    for name, visit_ in (("cold", cold), ("warm", warm)):
        steps = {k: round(v / 1e3, 2) for k, v in sorted(visit_["steps"].items(), key=lambda kv: kv[1])}
        print(f"{name} boot steps (s since navigation): {steps}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
