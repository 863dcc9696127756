"""Measure the built site in headless Chromium: bytes, first paint, time to interactive, layout shift, slider latency.

    python benchmarks/measure_site.py [--dir _site] [--runs 15] [--baseline OTHER_SITE] [--boots 3]

With --baseline, both sites are measured in the same run, their boots interleaved (cold then warm,
one site then the other, --boots times), and printed side by side with the ratio new/baseline:
build the commit to compare against into its own folder first, e.g.
`git worktree add /tmp/wt-base <commit>` and `python -m build.make_site --out /tmp/site-base` there.
Layout shift: the sum of every layout-shift entry from navigation until the page is live (no input
happens), at 1280x900, and once per site as Lighthouse's mobile run sees it (412x823 at 1.75x,
CPU slowed 4x).

Serves the folder with tools/serve.py (gzip, ETag, like a static host) and counts the
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))       # run as a script: the repository's root, for the build package

from tools import serve  # noqa: E402

HERE = Path(__file__).resolve().parent

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]
BOOT_MS = 120_000
TIMES = """() => ({
  paint: (performance.getEntriesByName("first-contentful-paint")[0] || {}).startTime,
  interactive: window.sdpaLab.steps.interactive,
  steps: window.sdpaLab.steps,
  boot: window.sdpaLab.boot,
  cls: (window.__sdpaShifts || []).reduce((a, b) => a + b, 0),
})"""
# Every layout shift from navigation on (an init script: it runs before the page's own scripts).
SHIFTS = """
window.__sdpaShifts = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) window.__sdpaShifts.push(e.value);
}).observe({type: "layout-shift", buffered: true});
"""
# A site that saves a memory snapshot after the first visit (templates/worker.js): until it has
# (or has given up), a reload would not restore from it. Builds without snapshots pass at once.
SNAPSHOT_SAVED = "!('snapshot' in window.sdpaLab) || (sdpaLab.snapshot !== null && sdpaLab.snapshot.state !== 'making')"
SETTLE = "new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))"
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


def visit(page, url: str, reload: bool = False) -> dict:
    page.reload() if reload else page.goto(url)
    try:
        page.wait_for_function("window.sdpaLab && (window.sdpaLab.ready || window.sdpaLab.error)", timeout=BOOT_MS)
    except Exception as err:
        state = page.evaluate("window.sdpaLab && {steps: sdpaLab.steps, stalled: sdpaLab.stalled, boot: sdpaLab.boot, "
                              "snapshotFailure: sdpaLab.snapshotFailure}")
        raise SystemExit(f"measure: {url} ({'warm' if reload else 'cold'}) not live within {BOOT_MS / 1e3:.0f} s: "
                         f"{state}") from err
    if page.evaluate("window.sdpaLab.error"):
        raise SystemExit(f"measure: the page failed to boot: {page.evaluate('window.sdpaLab.error')}")
    page.evaluate(SETTLE)
    return page.evaluate(TIMES)


def boot_pair(browser, directory: Path) -> dict:
    """One cold visit (fresh profile) and, once the service worker holds every file, one warm visit
    with the network off; bytes are response bodies counted by tools/serve.py."""
    server, url = serve.start(directory)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(SHIFTS)
    try:
        page = context.new_page()
        serve.SiteHandler.bytes_sent = 0
        serve.SiteHandler.bodies.clear()
        cold = visit(page, url)
        boot_bytes = serve.SiteHandler.bytes_sent
        page.wait_for_function("window.sdpaLab.offlineReady", timeout=BOOT_MS)
        first_bytes = serve.SiteHandler.bytes_sent
        page.wait_for_function(SNAPSHOT_SAVED, timeout=BOOT_MS)
        context.set_offline(True)
        warm = visit(page, url, reload=True)
    finally:
        context.close()
        server.shutdown()
    return {"cold": cold, "warm": warm, "boot_bytes": boot_bytes, "first_bytes": first_bytes}


def mobile_shift(browser, directory: Path) -> float:
    """Layout shift of one cold visit as Lighthouse's mobile run makes it: a phone viewport, CPU slowed 4x."""
    server, url = serve.start(directory)
    context = browser.new_context(viewport={"width": 412, "height": 823}, device_scale_factor=1.75,
                                  is_mobile=True, has_touch=True, service_workers="block")
    context.add_init_script(SHIFTS)
    try:
        page = context.new_page()
        context.new_cdp_session(page).send("Emulation.setCPUThrottlingRate", {"rate": 4})
        return visit(page, url)["cls"]
    finally:
        context.close()
        server.shutdown()


def compare(args) -> int:
    """--baseline: both sites, boots interleaved, side by side."""
    from playwright.sync_api import sync_playwright
    sites = {"baseline": args.baseline, "this": args.dir}
    runs: dict[str, list[dict]] = {name: [] for name in sites}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=ARGS)
        for _ in range(args.boots):
            for name, directory in sites.items():
                runs[name].append(boot_pair(browser, directory))
        mobile = {name: mobile_shift(browser, directory) for name, directory in sites.items()}
        browser.close()

    def median(name, get):
        return statistics.median(get(r) for r in runs[name])

    rows = [
        ("first visit incl. precache, MB (gzip)", lambda r: r["first_bytes"] / 1e6, "{:.2f}"),
        ("bytes to interactive, MB", lambda r: r["boot_bytes"] / 1e6, "{:.2f}"),
        ("first contentful paint (cold), s", lambda r: r["cold"]["paint"] / 1e3, "{:.2f}"),
        ("time to interactive, cold, s", lambda r: r["cold"]["interactive"] / 1e3, "{:.2f}"),
        ("time to interactive, warm (offline), s", lambda r: r["warm"]["interactive"] / 1e3, "{:.2f}"),
        ("layout shift, cold, 1280x900", lambda r: r["cold"]["cls"], "{:.3f}"),
    ]
    print(f"{args.boots} boots each, interleaved; medians (min in brackets)")
    print(f"{'':42s} {'baseline':>16s} {'this':>16s} {'ratio':>6s}")
    for label, get, fmt in rows:
        cells = []
        for name in sites:
            cells.append(f"{fmt.format(median(name, get))} ({fmt.format(min(get(r) for r in runs[name]))})")
        base = median("baseline", get)
        ratio = f"{median('this', get) / base:.2f}" if base else "-"
        print(f"{label:42s} {cells[0]:>16s} {cells[1]:>16s} {ratio:>6s}")
    print(f"{'layout shift, cold, mobile (412x823, 4x CPU)':42s} {mobile['baseline']:>16.3f} {mobile['this']:>16.3f}")
    for name in sites:
        for kind in ("cold", "warm"):
            steps = runs[name][-1][kind]["steps"]
            steps = {k: round(v / 1e3, 2) for k, v in sorted(steps.items(), key=lambda kv: kv[1])}
            how = f", from {runs[name][-1][kind]['boot']}" if runs[name][-1][kind].get("boot") else ""
            print(f"{name} {kind} boot steps, last run (s since navigation{how}): {steps}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/measure_site.py", description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=HERE.parent / "_site")
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    ap.add_argument("--baseline", type=Path, help="another built site to measure in the same run, side by side")
    ap.add_argument("--boots", type=int, default=3, help="with --baseline: cold+warm boots per site")
    args = ap.parse_args()
    if args.baseline:
        return compare(args)
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
        page.wait_for_function(SNAPSHOT_SAVED, timeout=BOOT_MS)
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
