"""The Real transformer view's live toy sweep in the built site (headless Chromium): from pressing "Train the
toy here" to each of its points on the page, at each d_k of the real grid. Printed, never asserted.

    python benchmarks/bench_toy_sweep.py [--dir _site] [--d-k 16 --d-k 256]

Each width boots `?view=real&real_d_k=D` in a fresh browser profile, waits until the page is live, presses the
button and records when the sentence under it first says "k of N runs done", for every k, and when the
sweep's closing sentence is there.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))       # run as a script: the repository's root, for the build and web packages

from tools import serve  # noqa: E402
from web import real_training as rt  # noqa: E402
from web.toy_sweep import RULES  # noqa: E402

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]
# the page's captions, shadow roots included
CAPTIONS_JS = """() => { const out = []; const visit = (root) => { for (const e of root.querySelectorAll('*')) {
  if (e.shadowRoot) visit(e.shadowRoot);
  if (e.tagName === 'P' && e.className.includes('sdpa-caption')) out.push(e.textContent); } };
  visit(document); return out; }"""


def sweep(browser, url: str, d_k: int) -> list[float]:
    total = len(RULES) * len(rt.LRS)
    context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    page = context.new_page()
    page.goto(f"{url}?view=real&real_d_k={d_k}")
    page.wait_for_function("window.sdpaLab && (window.sdpaLab.ready || window.sdpaLab.error)", timeout=180_000)
    page.get_by_role("button", name="Train the toy here").click()
    start, times = time.perf_counter(), []
    for k in range(1, total + 1):
        done = "in the toy" if k == total else f"{k} of {total} runs done"
        page.wait_for_function(f"() => ({CAPTIONS_JS})().some((t) => t.includes({done!r}) || t.includes('in the toy'))",
                               timeout=600_000)
        times.append(time.perf_counter() - start)
    context.close()
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=ROOT / "_site")
    ap.add_argument("--d-k", type=int, action="append", dest="d_ks")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()
    server, url = serve.start(args.dir)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=ARGS)
            for d_k in args.d_ks or list(rt.D_KS):
                times = sweep(browser, url, d_k)
                gaps = [b - a for a, b in zip([0.0, *times], times)]
                print(f"d_k = {d_k}: first point {times[0]:.1f} s, all {len(times)} {times[-1]:.1f} s, "
                      f"gaps between points {min(gaps):.2f}-{max(gaps):.2f} s")
            browser.close()
    finally:
        server.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
