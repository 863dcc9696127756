"""A long session in the built site: d_k slider steps with view switches, each step answered by Python
before the next. `make test` runs 300 steps switching every 25 (two rounds of the views, a few minutes);
SDPA_LONG_SESSION_STEPS=2000 SDPA_LONG_SESSION_PER_VIEW=100 gives the full session (about 20 minutes on a
shared 2-core machine). Every step must be answered and the page must stay free of
errors; how the heaps grow is printed (the page's JS heap after a collection, the worker's wasm
memory, Python's tracked objects, the document's models), never asserted: growth is for a reader to
judge, and its size varies with the machine."""
from __future__ import annotations

import os

import pytest

from sitebuild import HANDLE, require_pyodide_dist
from web.options import VIEW_LABELS, VIEWS

pytestmark = [pytest.mark.ui, pytest.mark.slow]

BOOT_MS = 120_000
STEPS = int(os.environ.get("SDPA_LONG_SESSION_STEPS", "300"))
PER_VIEW = int(os.environ.get("SDPA_LONG_SESSION_PER_VIEW", "25"))
# Before boot.js: count Python's answers to the page's patches (a patch marked done, or "idle").
COUNT_ANSWERS = r"""
(() => {
  window.__answers = 0;
  const Native = window.Worker;
  window.Worker = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => {
        const m = event.data || {};
        if (m.type === "idle" || (m.type === "patch" && m.done)) window.__answers += 1;
      });
    }
  };
})();
"""


def python_worker(page):
    found = [w for w in page.workers if w.evaluate("typeof self.pyodide === 'object'")]
    assert len(found) == 1, [w.url for w in page.workers]
    return found[0]


def measure(page, cdp) -> dict:
    cdp.send("HeapProfiler.collectGarbage")
    worker = python_worker(page)
    return {
        "page JS heap (MB)": cdp.send("Runtime.getHeapUsage")["usedSize"] / 1e6,
        "wasm memory (MB)": worker.evaluate("self.pyodide._module.HEAP8.buffer.byteLength") / 1e6,
        "Python objects": worker.evaluate("self.pyodide.runPython('import gc\\ngc.collect()\\nlen(gc.get_objects())')"),
        "document models": page.evaluate("Bokeh.documents[Bokeh.documents.length - 1].all_models.size"),
    }


def test_two_thousand_slider_steps_with_view_switches(site, served, browser):
    require_pyodide_dist()
    context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    context.add_init_script(COUNT_ANSWERS)
    errors = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
        page.on("console", lambda m: m.type == "error" and errors.append(f"console.error: {m.text}"))
        page.goto(served + "?view=playground")
        page.wait_for_function("window.sdpaLab && (sdpaLab.ready || sdpaLab.error)", timeout=BOOT_MS)
        assert page.evaluate("sdpaLab.error") is None, page.evaluate("sdpaLab.error")
        # the snapshot's second Python finishes first: it is not the session's memory
        page.wait_for_function("sdpaLab.snapshot && sdpaLab.snapshot.state !== 'making'", timeout=240_000)
        cdp = context.new_cdp_session(page)
        rows = [(0, "playground", measure(page, cdp))]
        steps, direction, views_seen = 0, 1, []
        cycle = [v for v in VIEWS if v != "tour"]
        at = 0
        while steps < STEPS:
            view = cycle[at % len(cycle)]
            at += 1
            if at > 1:
                page.locator("#main select").first.select_option(label=VIEW_LABELS[view])
                page.wait_for_function(f"location.search.includes('view={view}')", timeout=30_000)
            handle = page.locator(HANDLE)
            if handle.count() == 0:
                continue            # a view without the d_k slider: switched through
            if handle.count() > 1:
                handle = handle.first
            views_seen.append(view)
            for _ in range(min(PER_VIEW, STEPS - steps)):
                now, top, bottom = (float(handle.get_attribute(a)) for a in ("aria-valuenow", "aria-valuemax", "aria-valuemin"))
                if (direction > 0 and now >= top) or (direction < 0 and now <= bottom):
                    direction = -direction
                answers = page.evaluate("window.__answers")
                handle.press("ArrowRight" if direction > 0 else "ArrowLeft")
                page.wait_for_function(f"window.__answers > {answers}", timeout=60_000)
                steps += 1
                if steps % 500 == 0:
                    rows.append((steps, view, measure(page, cdp)))
        assert errors == [], errors
        assert page.evaluate("sdpaLab.error") is None
        keys = list(rows[0][2])
        print(f"\n{STEPS} d_k steps over {len(views_seen)} view visits ({', '.join(sorted(set(views_seen)))})")
        print("steps | view | " + " | ".join(keys))
        for n, view, row in rows:
            print(f"{n} | {view} | " + " | ".join(f"{row[k]:.1f}" if isinstance(row[k], float) else str(row[k]) for k in keys))
        first, last = rows[0][2], rows[-1][2]
        print("growth | | " + " | ".join(f"{last[k] - first[k]:+.1f}" if isinstance(last[k], float) else f"{last[k] - first[k]:+d}"
                                        for k in keys))
    finally:
        context.close()
