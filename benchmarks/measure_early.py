"""Measure, on Lighthouse's mobile profile, how soon a cold link's main control answers: from navigation to the
control being live, and to the figure changed after a key press (one notch; before Python: build/early_states.py),
with the bytes the page had received whole by then. Prints figures; asserts nothing.

    python benchmarks/measure_early.py [--dir _site] [--baseline OTHER_SITE] [--links "?view=playground" ...]

Lighthouse's mobile throttling: 1.6 Mbps down, 750 Kbps up, 150 ms round trip, CPU slowed 4x (headless Chromium,
412 x 823 at 1.75x). Each link is opened in a fresh profile. Bytes: the page's finished responses as Resource
Timing counts them (transfer sizes, gzip where the server compresses), the worker's own downloads not included
(they run beside, sharing the throttled link). A build without early states (--baseline, e.g. the commit before) answers only once Python is live:
its figure is the time to live, measured the same way (up to --live-timeout seconds).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))       # run as a script: the repository's root, for the tools package

from tools import serve  # noqa: E402

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]
# what had arrived whole: the page and every finished response (Resource Timing; the worker's downloads are the
# worker's own entries, not counted here, nor is a response still arriving)
DONE_BYTES = """() => performance.getEntriesByType("navigation").concat(performance.getEntriesByType("resource"))
  .reduce((n, e) => n + (e.transferSize || 0), 0)"""
MOBILE = {"offline": False, "latency": 150, "downloadThroughput": 1.6e6 / 8, "uploadThroughput": 750e3 / 8}
LINKS = ["?view=answer", "?view=playground", "?view=variance&d_k=1024", "?view=saturation", "?view=dial"]


def one(browser, url: str, live_timeout: float) -> dict:
    context = browser.new_context(viewport={"width": 412, "height": 823}, device_scale_factor=1.75,
                                  is_mobile=True, has_touch=True, service_workers="block")
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", MOBILE)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": 4})
    serve.SiteHandler.bytes_sent = 0
    page.goto(url, wait_until="commit")
    out = {}
    try:
        page.wait_for_function("() => window.sdpaLab && (sdpaLab.early || sdpaLab.ready)", timeout=live_timeout * 1000)
        if page.evaluate("!!sdpaLab.early"):
            slider = page.locator("#sdpa-html-paint .sdpa-hp-early input[type=range]")
            slider.focus()
            slider.press("ArrowRight")      # a reader's first notch
            page.wait_for_function("() => sdpaLab.early.at !== null && sdpaLab.early.moves > 0", timeout=60_000)
            out = {"how": "before Python", "live_ms": page.evaluate("sdpaLab.early.attached"),
                   "answer_ms": page.evaluate("sdpaLab.early.at"), "bytes": page.evaluate(DONE_BYTES)}
        else:
            page.wait_for_function("() => sdpaLab.ready", timeout=live_timeout * 1000)
            t = page.evaluate("sdpaLab.steps.interactive")
            out = {"how": "once Python is live", "live_ms": t, "answer_ms": t, "bytes": page.evaluate(DONE_BYTES)}
    except Exception as err:      # noqa: BLE001 - a figure not reached is printed as such
        out = {"how": f"not reached ({type(err).__name__})", "live_ms": None, "answer_ms": None, "bytes": 0}
    context.close()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=ROOT / "_site")
    ap.add_argument("--baseline", type=Path, default=None)
    ap.add_argument("--links", nargs="*", default=LINKS)
    ap.add_argument("--live-timeout", type=float, default=150.0)
    args = ap.parse_args()
    sites = [("this build", args.dir)] + ([("baseline", args.baseline)] if args.baseline else [])
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        print("link | build | control answers | control live (ms) | figure changed (ms) | page bytes received by then")
        for link in args.links:
            for name, folder in sites:
                server, url = serve.start(folder)
                try:
                    r = one(browser, url + link, args.live_timeout)
                finally:
                    server.shutdown()
                fmt = lambda v: "-" if v is None else f"{v:,.0f}"    # noqa: E731
                print(f"{link} | {name} | {r['how']} | {fmt(r['live_ms'])} | {fmt(r['answer_ms'])} | {r['bytes']:,}")
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
