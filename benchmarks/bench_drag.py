"""Drag d_k in the built site (headless Chromium) and print what a learner waits for, for one or
more builds side by side in the same run (interleaved, so machine load hits them alike).

    python benchmarks/bench_drag.py --site before=/tmp/site-before --site after=_site [--rounds 3]

`--query` picks the view (default ?view=playground) and `--handle LABEL` the slider dragged there, by
its handle's aria-label (web/a11y.py copies each slider's visible title into it; default: d_k's
"d_k (key/query dimension)"), e.g.
    python benchmarks/bench_drag.py --site now=_site --query '?view=dial' --handle 'Logit std s'

Build a "before" site from an older commit with a worktree, e.g.
    git worktree add /tmp/wt-before HEAD~3 && (cd /tmp/wt-before && python -m build.make_site --out /tmp/site-before)

Per build, each round boots the page in a fresh browser profile and then:
- step drag: 8 arrow-key presses up then 8 down on the slider (d_k unless --handle), each once the previous step has
  settled. Per step: the worker's busy time (its message handlers and timers, measured inside the
  worker), key press to redrawn plot (the first patch with new plot data applied, plus a frame),
  and the messages each way.
- fast drag: 8 presses 16 ms apart (a held key or a mouse drag), up then down; "settled" is from the
  last press until the last message from the worker is applied and no long task runs.
`--profile N` prints a cProfile of the worker's Python over one step drag per build instead (its top N by
cumulative time, then by own time).
Timings are printed, never asserted (tests count messages instead: tests/build/test_site_interaction.py).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))       # run as a script: the repository's root, for the site's build package

from tools import serve  # noqa: E402

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]
BOOT_MS = 120_000
HANDLE_LABEL = "d_k (key/query dimension)"   # the slider dragged unless --handle names another
HANDLE = '#main .noUi-handle[aria-label="%s"]'   # beside the figure (the drawer has one too)

# Runs in the worker before worker.js: times every message handler and timer callback (the worker's
# busy time) on the page's clock (timeOrigin + now), and answers {type: "bench-busy"} with them.
WORKER_PREFIX = r"""
(() => {
  const now = () => performance.timeOrigin + performance.now();
  const busy = [];
  const nativeTimeout = self.setTimeout.bind(self);
  self.setTimeout = (fn, ms, ...args) => nativeTimeout(typeof fn !== "function" ? fn : (...a) => {
    const t0 = now();
    try { return fn(...a); } finally { busy.push([t0, now(), "timer"]); }
  }, ms, ...args);
  let handler = null;
  Object.defineProperty(self, "onmessage", {configurable: true, get: () => handler, set: (fn) => { handler = fn; }});
  self.addEventListener("message", async (event) => {
    if (event.data && event.data.type === "bench-busy") {
      self.postMessage({type: "bench-busy", busy: busy.splice(0)});
      return;
    }
    if (event.data && event.data.type === "bench-py") {      // --profile: run Python, answer its result
      let result;
      try { result = String(await self.pyodide.runPythonAsync(event.data.code)); } catch (err) { result = String(err); }
      self.postMessage({type: "bench-py", result});
      return;
    }
    if (!handler) return;
    const t0 = now();
    try { await handler.call(self, event); } finally { busy.push([t0, now(), event.data && event.data.type]); }
  });
})();
"""

# Runs in the page before boot.js: wraps Worker to prepend WORKER_PREFIX and to log every message
# each way; logs key presses, redraws (a patch with plot data applied, then a frame) and long tasks.
PAGE_INIT = r"""
(() => {
  const now = () => performance.timeOrigin + performance.now();
  const log = window.__bench = {keys: [], out: [], in: [], redraws: [], longtasks: [], workers: []};
  window.addEventListener("keydown", () => log.keys.push(now()), true);
  // idle-time work (the a11y script labels in requestIdleCallback): its main-thread time
  log.idle = [];
  if (window.requestIdleCallback) {
    const nativeIdle = window.requestIdleCallback.bind(window);
    window.requestIdleCallback = (fn, opts) => nativeIdle((deadline) => {
      const t0 = now();
      try { return fn(deadline); } finally { log.idle.push([t0, now()]); }
    }, opts);
  }
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) log.longtasks.push([performance.timeOrigin + e.startTime, e.duration]);
    }).observe({type: "longtask", buffered: true});
  } catch (_) {}
  const Native = window.Worker;
  const PREFIX = %s;
  // the page starts its worker from a blob: URL (build/templates/start.js), which the page's CSP lets no
  // importScripts load: the bench's worker is PREFIX followed by that blob itself
  const blobs = new Map();
  const createObjectURL = URL.createObjectURL.bind(URL);
  URL.createObjectURL = (obj) => {
    const u = createObjectURL(obj);
    if (obj instanceof Blob) blobs.set(u, obj);
    return u;
  };
  window.Worker = class extends Native {
    constructor(url, opts) {
      const body = blobs.get(String(url)) || `importScripts(${JSON.stringify(String(url))});`;
      const src = new Blob([PREFIX, body], {type: "text/javascript"});
      super(URL.createObjectURL(src), opts);
      log.workers.push(this);
      let handler = null;
      Object.defineProperty(this, "onmessage", {configurable: true, get: () => handler,
                                                set: (fn) => { handler = fn; }});
      this.addEventListener("message", async (event) => {
        const msg = event.data || {};
        if (msg.type === "bench-busy") { log.lastBusy = msg.busy; return; }
        if (msg.type === "bench-py") { log.pyResult = msg.result; return; }
        if (msg.type === "ready") log.live = this;      // the page's worker (a later one makes the snapshot)
        const t0 = now();
        const events = msg.type === "patch" && msg.patch && msg.patch.events ? msg.patch.events : [];
        const data = events.some((e) => e.kind === "ColumnDataChanged" || e.kind === "ColumnsStreamed" ||
                                        (e.kind === "ModelChanged" && e.attr === "data"));
        if (handler) await handler.call(this, event);
        const entry = {t0, t1: now(), type: msg.type, events: events.length, data, done: !!msg.done};
        log.in.push(entry);
        if (data) requestAnimationFrame(() => log.redraws.push(now()));
      });
    }
    postMessage(msg, ...rest) {
      if (msg && msg.type !== "bench-busy") {
        log.out.push({t: now(), type: msg.type, events: msg.patch && msg.patch.events ? msg.patch.events.length : 0});
      }
      return super.postMessage(msg, ...rest);
    }
  };
})();
"""

QUIET = """async (ms) => {
  // wait until nothing came from the worker for `ms` and the last long task is over
  const now = () => performance.timeOrigin + performance.now();
  const log = window.__bench;
  for (;;) {
    const last = Math.max(0, ...log.in.map((e) => e.t1), ...log.out.map((e) => e.t),
                          ...log.longtasks.map(([s, d]) => s + d));
    if (now() - last >= ms) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}"""

BUSY = """async () => {
  const log = window.__bench;
  log.lastBusy = null;
  (log.live || log.workers[0]).postMessage({type: "bench-busy"});
  while (log.lastBusy === null) await new Promise((r) => setTimeout(r, 10));
  return log.lastBusy;
}"""


PY = """async (code) => {
  const log = window.__bench;
  log.pyResult = null;
  (log.live || log.workers[0]).postMessage({type: "bench-py", code});
  while (log.pyResult === null) await new Promise((r) => setTimeout(r, 10));
  return log.pyResult;
}"""
PROFILE_ON = "import cProfile\n_bench_profile = cProfile.Profile()\n_bench_profile.enable()"
PROFILE_OFF = """
_bench_profile.disable()
import io, pstats
_out = io.StringIO()
for _key in ("cumulative", "tottime"):  # where the time is spent, then who spends it
    pstats.Stats(_bench_profile, stream=_out).sort_stats(_key).print_stats(%d)
_out.getvalue()
"""


def overlap(intervals, start, end) -> float:
    return sum(max(0.0, min(b, end) - max(a, start)) for a, b, *_ in intervals)


def step_drag(page, key: str, steps: int) -> list[dict]:
    """`steps` presses, each after the previous step settled; one record per step."""
    page.evaluate(QUIET, 300)
    page.evaluate(BUSY)       # drop what was busy before
    marks = []
    for _ in range(steps):
        n = page.evaluate("window.__bench.keys.length")
        page.keyboard.press(key)
        page.wait_for_function(f"window.__bench.keys.length > {n}")
        page.evaluate(QUIET, 300)
        marks.append(page.evaluate(f"window.__bench.keys[{n}]"))
    end = page.evaluate("performance.timeOrigin + performance.now()")
    busy = page.evaluate(BUSY)
    log = page.evaluate("({out: __bench.out, in: __bench.in, redraws: __bench.redraws, idle: __bench.idle})")
    out = []
    for i, t in enumerate(marks):
        nxt = marks[i + 1] if i + 1 < len(marks) else end
        redraw = [r for r in log["redraws"] if t <= r < nxt]
        sent = [m["t"] for m in log["out"] if t <= m["t"] < nxt and m["type"] == "patch"]
        got = [m for m in log["in"] if t <= m["t0"] < nxt and m["data"]]
        out.append({
            "busy": overlap(busy, t, nxt),
            "idle": overlap(log["idle"], t, nxt),
            "sent": sent[0] - t if sent else None,             # key press to patch posted
            "received": got[0]["t0"] - t if got else None,     # ... to the plot data's message received
            "applied": got[0]["t1"] - t if got else None,      # ... to it applied
            "redraw": redraw[0] - t if redraw else None,
            "to_worker": sum(1 for m in log["out"] if t <= m["t"] < nxt and m["type"] == "patch"),
            "from_worker": sum(1 for m in log["in"] if t <= m["t0"] < nxt and m["type"] in ("patch", "idle")),
        })
    return out


def fast_drag(page, key: str, steps: int) -> float:
    """`steps` presses 16 ms apart; ms from the last press until the page is quiet again."""
    page.evaluate(QUIET, 300)
    for _ in range(steps):
        page.keyboard.press(key)
        page.wait_for_timeout(16)
    last = page.evaluate("window.__bench.keys[window.__bench.keys.length - 1]")
    page.evaluate(QUIET, 400)
    log = page.evaluate("({in: __bench.in, longtasks: __bench.longtasks})")
    ends = [e["t1"] for e in log["in"] if e["t1"] >= last] + [s + d for s, d in log["longtasks"] if s + d >= last]
    return max(ends, default=last) - last


def run_site(browser, url: str, steps: int, profile: int = 0, label: str = HANDLE_LABEL) -> dict:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    context.add_init_script(PAGE_INIT % json.dumps(WORKER_PREFIX))
    page = context.new_page()
    page.goto(url)
    page.wait_for_function("window.sdpaLab && (window.sdpaLab.ready || window.sdpaLab.error)", timeout=BOOT_MS)
    if page.evaluate("window.sdpaLab.error"):
        raise SystemExit(f"bench_drag: {url} failed to boot: {page.evaluate('window.sdpaLab.error')}")
    handle = page.locator(HANDLE % label)
    handle.wait_for(timeout=30_000)
    page.wait_for_timeout(1500)
    handle.focus()
    if profile:
        page.evaluate(PY, PROFILE_ON)
        step_drag(page, "ArrowRight", steps)
        print(page.evaluate(PY, PROFILE_OFF % (profile,)))
        context.close()
        return {}
    steps_out = step_drag(page, "ArrowRight", steps) + step_drag(page, "ArrowLeft", steps)
    settled = [fast_drag(page, "ArrowRight", steps), fast_drag(page, "ArrowLeft", steps)]
    context.close()
    return {"steps": steps_out, "settled": settled}


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", action="append", required=True, metavar="NAME=DIR",
                    help="a built site folder, named (repeat to compare builds)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--query", default="?view=playground", help="the page's address query (the view dragged in)")
    ap.add_argument("--handle", default=HANDLE_LABEL, metavar="LABEL",
                    help="the aria-label of the slider handle dragged, beside the figure in #main "
                         f"(default: {HANDLE_LABEL!r})")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="instead: print the N top lines of a cProfile of the worker during one step drag, per build")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()
    sites = [s.split("=", 1) for s in args.site]
    from playwright.sync_api import sync_playwright

    if args.profile:
        for name, d in sites:
            server, url = serve.start(Path(d))
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=args.chromium, args=ARGS)
                print(f"== {name}: cProfile of the worker over {args.steps} d_k steps (Python inside Pyodide)")
                run_site(browser, url + args.query, args.steps, profile=args.profile, label=args.handle)
                browser.close()
            server.shutdown()
        return 0

    servers = {name: serve.start(Path(d)) for name, d in sites}
    results = {name: {"steps": [], "settled": []} for name, _ in sites}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=ARGS)
        for r in range(args.rounds):
            for name, _ in sites:
                got = run_site(browser, servers[name][1] + args.query, args.steps, label=args.handle)
                results[name]["steps"] += got["steps"]
                results[name]["settled"] += got["settled"]
                print(f"round {r + 1} {name}: busy/step {med([s['busy'] for s in got['steps']]):.0f} ms, "
                      f"key->plot {med([s['redraw'] for s in got['steps']]):.0f} ms, "
                      f"settled {', '.join(f'{x:.0f}' for x in got['settled'])} ms", flush=True)
        browser.close()
    for server, _ in servers.values():
        server.shutdown()

    names = [n for n, _ in sites]
    rows = [
        ("worker busy per d_k step, median (ms)", lambda r: f"{med([s['busy'] for s in r['steps']]):.0f}"),
        ("key press to redrawn plot, median (ms)", lambda r: f"{med([s['redraw'] for s in r['steps']]):.0f}"),
        ("page settled after an 8-step drag, median (ms)", lambda r: f"{med(r['settled']):.0f}"),
        ("  of which: key press to patch sent (ms)", lambda r: f"{med([s['sent'] for s in r['steps']]):.0f}"),
        ("  key press to plot data received (ms)", lambda r: f"{med([s['received'] for s in r['steps']]):.0f}"),
        ("  key press to plot data applied (ms)", lambda r: f"{med([s['applied'] for s in r['steps']]):.0f}"),
        ("page's idle-time work per step (a11y labels), median (ms)",
         lambda r: f"{med([s['idle'] for s in r['steps']]):.1f}"),
        ("messages page -> worker per step, median", lambda r: f"{med([s['to_worker'] for s in r['steps']]):g}"),
        ("messages worker -> page per step, median", lambda r: f"{med([s['from_worker'] for s in r['steps']]):g}"),
    ]
    width = max(len(label) for label, _ in rows)
    print(f"\n{'':{width}}  " + "  ".join(f"{n:>10}" for n in names))
    for label, fn in rows:
        print(f"{label:{width}}  " + "  ".join(f"{fn(results[n]):>10}" for n in names))
    print(f"({args.rounds} rounds x {2 * args.steps} steps and {2 * args.rounds} fast drags per build, interleaved)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
