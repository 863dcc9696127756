"""Walk the guided tour with "Next step" in the built site (headless Chromium) and print, per step, the time
from the click to the new step drawn: its prediction's text on the page and every plot of its view laid out
with a new set of plots; and to its whole view drawn, the sections below its first screen included (they
follow in a patch of their own: web/views/common.py Later). One or more builds side by side in the same run, interleaved round by round.

    python benchmarks/bench_tour.py --site before=/tmp/site-before --site after=_site [--rounds 2]

Each round boots `?view=tour&step=1` in a fresh browser profile, waits until the page is live, then presses
"Next step" seven times, each ``--read-ms`` after the previous step is drawn (a reader reads it first).
Timings are printed, never asserted.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))       # run as a script: the repository's root, for the build and web packages

from tools import serve  # noqa: E402
from web.tour import STEPS  # noqa: E402

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]
# the ids of the drawn plots, once every one has a frame of at least 50 x 50 px (else null)
PLOTS_JS = """() => { const views = [];
  const visit = (v) => { views.push(v); for (const c of (v.child_views || [])) visit(c); };
  for (const r of Bokeh.index.roots || []) visit(r);
  const figs = views.filter((v) => v.model.type === 'Figure' && v.el.isConnected && v.frame);
  if (!figs.length || !figs.every((v) => v.frame.bbox.width > 50 && v.frame.bbox.height > 50)) return null;
  return figs.map((v) => v.model.id).sort().join(','); }"""


# the new step is drawn: its plots (another set) are laid out and its prediction's text is on the page. The
# plots first: polled every frame, the text's walk through every shadow root (~14 ms at step 4) ran in each
# frame of the step and slowed the page it timed; the plots' check is ~1 ms, and the walk now runs once
# the new plots are there
DRAWN_JS = f"""([predict, before]) => {{
  const now = ({PLOTS_JS})();
  if (now === null || now === before) return false;
  const has = (root) => [...root.querySelectorAll('*')].some((e) =>
    (e.shadowRoot && has(e.shadowRoot))
    || [...e.childNodes].some((n) => n.nodeType === 3 && n.textContent.includes(predict)));
  return has(document); }}"""


# Records, from the click on, each frame at which the set of drawn plots changed: [ms since the click, ids]. The
# sections below a view's first screen (web/views/common.py Later) arrive in a patch of their own after it;
# the frame at which the set became what it is once the reader has read the step is when the whole view was drawn.
FRAMES_JS = f"""() => {{
  const t0 = performance.now(), frames = window.__frames = [];
  let last = null;
  const tick = () => {{
    const now = ({PLOTS_JS})();
    if (now !== last) {{ frames.push([performance.now() - t0, now]); last = now; }}
    if (window.__frames === frames) requestAnimationFrame(tick);
  }};
  requestAnimationFrame(tick); }}"""


def walk(browser, url: str, read_ms: int) -> tuple[list[float], list[float]]:
    """Per step: click to the step drawn (its first screen), and click to the whole view drawn."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(url + "?view=tour&step=1")
    page.wait_for_function("window.sdpaLab && (window.sdpaLab.ready || window.sdpaLab.error)", timeout=180_000)
    page.wait_for_function(f"({PLOTS_JS})() !== null", timeout=60_000)
    times, whole = [], []
    for i in range(2, len(STEPS) + 2):
        page.wait_for_timeout(read_ms)   # the reader reads the step (the page lays out the next one meanwhile)
        if i > 2:                        # the step before: when its plots became those it shows after the reading
            final = page.evaluate(PLOTS_JS)
            whole.append(next(t for t, ids in page.evaluate("window.__frames") if ids == final))
        if i > len(STEPS):
            break
        before = page.evaluate(PLOTS_JS)
        predict = STEPS[i - 1].predict
        page.evaluate(FRAMES_JS)
        start = time.perf_counter()
        page.get_by_role("button", name="Next step →").click()
        page.wait_for_function(DRAWN_JS, arg=[predict, before], timeout=120_000, polling="raf")
        times.append((time.perf_counter() - start) * 1000)
    context.close()
    return times, whole


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", action="append", required=True, metavar="NAME=DIR")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--read-ms", type=int, default=4000,
                    help="time on each step before Next, as a reader reading it (0: click as soon as it is drawn)")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()
    sites = dict(s.split("=", 1) for s in args.site)
    servers = {name: serve.start(Path(d)) for name, d in sites.items()}
    results: dict[str, list[list[float]]] = {name: [] for name in sites}
    wholes: dict[str, list[list[float]]] = {name: [] for name in sites}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=ARGS)
            for _ in range(args.rounds):
                for name, (_, url) in servers.items():
                    drawn, whole = walk(browser, url, args.read_ms)
                    results[name].append(drawn)
                    wholes[name].append(whole)
            browser.close()
    finally:
        for server, _ in servers.values():
            server.shutdown()
    names = list(sites)
    for title, table in (("Next step -> new step drawn (its question and the plots sent first)", results),
                         ("Next step -> its whole view drawn (sections below the first screen included)", wholes)):
        print(f"{title}, ms (median over rounds)")
        print(f"{'to step':<44}" + "".join(f"{n:>10}" for n in names) + ("   ratio" if len(names) == 2 else ""))
        for k in range(len(STEPS) - 1):
            meds = [statistics.median(r[k] for r in table[n]) for n in names]
            ratio = f"{meds[1] / meds[0]:8.2f}" if len(meds) == 2 else ""
            label = f"{k + 2}. {STEPS[k + 1].title}"[:43]
            print(f"{label:<44}" + "".join(f"{m:10.0f}" for m in meds) + ratio)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
