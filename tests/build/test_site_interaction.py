"""The built site while a learner drags d_k: one message each way per step (counted from the
patch protocol between the page and the Python worker, never timed), no busy indicator, the
slider's shown value computed in the browser, accessible names on content built later, moves
made on the pre-rendered page kept until Python is live, and the document drawn once (the live
document adopts the pre-rendered views; anything else is drawn anew)."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sitebuild import HANDLE, NO_DIST, pyodide_dist
from web.options import D_K_OPTIONS
from web.state import LabState

pytestmark = pytest.mark.ui

BOOT_MS = 120_000
# Models drawn as Panel's LoadingSpinner (the template's busy indicator) in the live document.
BUSY_MODELS = """[...Bokeh.documents[Bokeh.documents.length - 1].all_models]
  .filter((m) => (m.stylesheets || []).some((s) => String(s && s.url !== undefined ? s.url : s).includes("loadingspinner")))
  .length"""

# Before boot.js: log every message between the page and the worker (type, number of events, and
# whether it answers the page's patch), and hold the worker's script until __releaseWorker() when
# window.__holdWorker is set.
LOG_MESSAGES = r"""
(() => {
  const log = window.__messages = [];
  const Native = window.Worker;
  window.Worker = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => {
        const m = event.data || {};
        if (m.type === "patch" || m.type === "idle") {
          log.push({dir: "in", type: m.type, done: !!m.done,
                    kinds: m.patch ? m.patch.events.map((e) => e.kind + ":" + (e.attr || "")) : [],
                    cols: m.patch ? m.patch.events.flatMap((e) => e.cols || []) : []});
        }
      });
    }
    postMessage(m, ...rest) {
      if (m && m.type === "patch") log.push({dir: "out", type: m.type, kinds: m.patch.events.map((e) => e.kind + ":" + (e.attr || ""))});
      return super.postMessage(m, ...rest);
    }
  };
  if (window.__holdWorker) {
    let release;
    const held = new Promise((resolve) => { release = resolve; });
    window.__releaseWorker = release;
    const nativeFetch = window.fetch.bind(window);
    window.fetch = (input, init) => String(input.url || input).includes("worker.js")
      ? held.then(() => nativeFetch(input, init)) : nativeFetch(input, init);
  }
})();
"""


@pytest.fixture
def live_site(site, served):
    if pyodide_dist() is None:
        pytest.skip(NO_DIST)
    return served + "?view=playground"


def open_page(browser, url: str, hold_worker: bool = False):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    if hold_worker:
        context.add_init_script("window.__holdWorker = true;")
    context.add_init_script(LOG_MESSAGES)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("console", lambda m: m.type == "error" and errors.append(f"console.error: {m.text}"))
    page.goto(url)
    return context, page, errors


def wait_ready(page):
    page.wait_for_function("window.sdpaLab && (window.sdpaLab.ready || window.sdpaLab.error)", timeout=BOOT_MS)
    assert page.evaluate("window.sdpaLab.error") is None, page.evaluate("window.sdpaLab.error")


# A sentinel: a change of no consequence made in the page (a tag on the live document's first root, which
# Python neither reads nor changes), sent to the worker as a patch of its own. The worker answers every
# patch of the page, once (patches.js sends the next only after that answer): with "idle" when nothing
# changed. Returns the log's length just before it.
SENTINEL_JS = """() => {
  const doc = Bokeh.documents[Bokeh.documents.length - 1];
  window.__sentinels = (window.__sentinels || 0) + 1;
  const at = window.__messages.length;
  doc.roots()[0].tags = ["sdpa-test-sentinel " + window.__sentinels];
  return at;
}"""
# [index of the sentinel's patch, index of its answer] in the log from `at` on, once the answer is in
SENTINEL_ANSWERED_JS = """(at) => {
  const log = window.__messages;
  const sent = log.findIndex((m, i) => i >= at && m.dir === "out" && m.kinds.includes("ModelChanged:tags"));
  const answer = sent < 0 ? -1 : log.findIndex((m, i) => i > sent && m.dir === "in" && (m.done || m.type === "idle"));
  return answer >= 0 && [sent, answer];
}"""


def round_trip(page) -> tuple[int, int]:
    """Send the sentinel and wait for the worker's answer; the messages between the page and the worker
    keep their order, so whatever Python sent before answering it has arrived by then. Returns the log
    indices of the sentinel's patch and of its answer."""
    at = page.evaluate(SENTINEL_JS)
    handle = page.wait_for_function(SENTINEL_ANSWERED_JS, arg=at, timeout=30_000)
    sent, answer = handle.json_value()
    return sent, answer


def settle(page) -> int:
    """Until Python has answered everything the page sent before now (the page's address, sent to Python
    once it is live, comes back as a patch of its own, before the sentinel's answer or in it). Returns
    the log's length then."""
    return round_trip(page)[1] + 1


def step(page, key: str) -> list[dict]:
    """Press `key` on the focused slider; the messages of that step once the worker has answered, and a
    sentinel sent after that answer has been answered with "idle": nothing else followed the step."""
    n = settle(page)
    page.keyboard.press(key)
    # the answer to the page's patch closes the step; then a sentinel proves that nothing else follows it
    page.wait_for_function(f"window.__messages.slice({n}).some((m) => m.dir === 'in' && (m.done || m.type === 'idle'))",
                           timeout=30_000)
    sent, answer = round_trip(page)
    log = page.evaluate("window.__messages")
    assert log[answer]["type"] == "idle", log[n:]     # a change of Python's left after the step would ride on it
    return log[n:sent] + log[sent + 1:answer]


def test_a_d_k_step_is_one_message_each_way(live_site, browser):
    """Each arrow key on d_k sends one patch to the worker (the value and value_throttled together),
    and the worker answers with one patch holding every change of the step (plots, readouts, address)
    and saying the page's patch is done; the slider's shown value comes from the browser."""
    context, page, errors = open_page(browser, live_site)
    wait_ready(page)
    handle = page.locator(HANDLE)
    handle.focus()
    at = D_K_OPTIONS.index(LabState.param.d_k.default)
    for key, move in (("ArrowRight", 1), ("ArrowRight", 1), ("ArrowLeft", -1)):
        messages = step(page, key)
        at += move
        out = [m for m in messages if m["dir"] == "out"]
        back = [m for m in messages if m["dir"] == "in"]
        assert len(out) == 1, messages
        assert {"ModelChanged:value"} <= set(out[0]["kinds"]), out
        assert len(back) == 1 and back[0]["type"] == "patch" and back[0]["done"], messages
        assert "ColumnDataChanged:data" in back[0]["kinds"], back      # the heatmaps' weights
        expect(handle).to_have_attribute("aria-valuetext", str(D_K_OPTIONS[at]))
        assert f"d_k={D_K_OPTIONS[at]}" in page.url
    # no busy indicator, and nothing about one in the messages
    assert page.locator(".pn-busy-container").count() == 0
    assert page.evaluate(BUSY_MODELS) == 0
    assert errors == [], errors
    context.close()


def test_a_d_k_step_answers_with_the_plots_beside_the_slider_then_the_section_below(site, served, browser):
    """In the saturation view the answer to a d_k step carries the plots beside the slider and the gradient
    plot (its "norm" column); the length section below them (its "y" columns) follows in one patch of its
    own, unasked (web/results.py: its result is ``later``), and nothing after it."""
    if pyodide_dist() is None:
        pytest.skip(NO_DIST)
    context, page, errors = open_page(browser, served + "?view=saturation")
    wait_ready(page)
    page.locator(HANDLE).focus()
    n = settle(page)
    page.keyboard.press("ArrowRight")
    # the answer to the page's patch, then the later patch: conditions, in the order Python sends them
    page.wait_for_function(f"""() => {{
      const log = window.__messages.slice({n});
      const done = log.findIndex((m) => m.dir === "in" && m.done);
      return done >= 0 && log.slice(done + 1).some((m) => m.dir === "in" && m.type === "patch");
    }}""", timeout=30_000)
    sent, answer = round_trip(page)
    log = page.evaluate("window.__messages")
    assert log[answer]["type"] == "idle", log[n:]           # nothing followed the later patch
    back = [m for m in log[n:sent] + log[sent + 1:answer] if m["dir"] == "in"]
    assert [m["done"] for m in back] == [True, False], back
    assert "norm" in back[0]["cols"] and "y" not in back[0]["cols"], back   # gradients first, no length curve
    assert "y" in back[1]["cols"] and "norm" not in back[1]["cols"], back   # the length section's curves
    assert errors == [], errors
    context.close()


def test_content_built_later_gets_accessible_names(live_site, browser):
    """The labelling script relabels only what changed, and still names the slider handles of a view
    built after the page went live, and follows the d_k slider's shown value."""
    context, page, errors = open_page(browser, live_site)
    wait_ready(page)
    page.locator("#main select").first.select_option(label="Saturation & gradients")   # the View menu
    expect(page.locator('.noUi-handle[aria-label="Monte-Carlo samples per d_k"]')).to_have_attribute(
        "aria-valuetext", str(LabState.param.samples.default), timeout=30_000)
    handle = page.locator(HANDLE)
    handle.focus()
    step(page, "ArrowRight")
    want = D_K_OPTIONS[D_K_OPTIONS.index(LabState.param.d_k.default) + 1]
    expect(handle).to_have_attribute("aria-valuetext", str(want))
    assert errors == [], errors
    context.close()


def test_moves_on_the_pre_rendered_page_are_kept(live_site, browser):
    """d_k moved twice on the pre-rendered page, before Python runs, is d_k in Python once it is live:
    the live slider, the address (written by Python) and the first message to the worker carry it."""
    context, page, errors = open_page(browser, live_site, hold_worker=True)
    handle = page.locator('#main .noUi-handle[aria-label="d_k (key/query dimension)"]')   # beside the heatmaps
    handle.wait_for(timeout=30_000)
    handle.focus()
    handle.press("ArrowRight")
    handle.press("ArrowRight")
    assert page.evaluate("window.sdpaLab.ready") is False
    page.evaluate("window.__releaseWorker()")
    wait_ready(page)
    want = D_K_OPTIONS[D_K_OPTIONS.index(LabState.param.d_k.default) + 2]
    page.wait_for_function(f"location.search.includes('d_k={want}')", timeout=30_000)
    expect(page.locator(HANDLE)).to_have_attribute("aria-valuetext", str(want))
    assert page.evaluate("window.sdpaLab.earlyMoves") >= 1
    assert errors == [], errors
    context.close()


# Mark every root view BokehJS has drawn (the pre-rendered page), once it has drawn them all (in slices,
# one root after another).
MARK_DRAWN = """() => {
  const roots = window.Bokeh && Bokeh.index && Bokeh.index.roots;
  if (!window.sdpaLab || !sdpaLab.painted || !roots || !roots.length) return false;
  window.__drawn = new Set(roots);
  return roots.length;
}"""


def test_the_live_document_adopts_the_pre_rendered_views(live_site, browser):
    """The page is drawn once: the views BokehJS drew from the pre-rendered document are the live
    page's views (the same objects, none removed), only a few attributes change (numbers from
    Pyodide's numpy, Panel's names), and the page reacts to d_k afterwards."""
    context, page, errors = open_page(browser, live_site, hold_worker=True)
    page.wait_for_function(MARK_DRAWN, timeout=30_000)
    drawn = page.evaluate("window.__drawn.size")
    page.evaluate("window.__releaseWorker()")
    wait_ready(page)
    adopted = page.evaluate("window.sdpaLab.adopted")
    assert adopted is not None, "the live document was drawn again instead of adopting the pre-rendered one"
    assert adopted["models"] > 100
    # a few values, not a new page: most are Panel's own names (its counter differs between the two runs)
    assert adopted["changed"] - adopted["attrs"].get("name", 0) <= adopted["models"] // 20, adopted
    assert page.evaluate("Bokeh.documents.length") == 1
    assert page.evaluate("Bokeh.index.roots.every((v) => window.__drawn.has(v))") is True
    assert page.evaluate("Bokeh.index.roots.length") == drawn
    handle = page.locator(HANDLE)
    handle.focus()
    messages = step(page, "ArrowRight")
    assert any(m["dir"] == "in" and m["type"] == "patch" for m in messages), messages
    want = D_K_OPTIONS[D_K_OPTIONS.index(LabState.param.d_k.default) + 1]
    expect(handle).to_have_attribute("aria-valuetext", str(want))
    assert errors == [], errors
    context.close()


def test_a_pre_render_that_differs_is_drawn_anew(live_site, browser):
    """When the pre-rendered document is not the live one (here one model renamed in the page's JSON,
    as a page from another build would be), the page draws the live document instead, keeps the moves
    made before Python was live (matched by slider, not by id), and works."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    context.add_init_script("window.__holdWorker = true;")
    context.add_init_script(LOG_MESSAGES)

    def rename_one_model(route):
        html = route.fetch().text()
        assert html.count('"id":"p1000002"') == 1, "the pre-render's ids changed: pick another model here"
        route.fulfill(body=html.replace('"p1000002"', '"p1999999"'), content_type="text/html")

    context.route(lambda url: url.split("?")[0].endswith("/"), rename_one_model)

    def rename_in_first_paint(route):      # the link's own pre-render (first/<key>.json) differs alike
        body = route.fetch().text()
        # (its document is a JSON string inside the file: quotes escaped)
        assert body.count('\\"p1000002\\"') >= 1, "the pre-render's ids changed: pick another model here"
        route.fulfill(body=body.replace('\\"p1000002\\"', '\\"p1999999\\"'), content_type="application/json")

    context.route("**/first/*.json", rename_in_first_paint)   # its hash fails: the default page is drawn
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("console", lambda m: m.type == "error" and errors.append(f"console.error: {m.text}"))
    page.goto(live_site)
    handle = page.locator('#main .noUi-handle[aria-label="d_k (key/query dimension)"]')   # beside the heatmaps
    handle.wait_for(timeout=30_000)
    handle.focus()
    handle.press("ArrowRight")
    handle.press("ArrowRight")
    page.evaluate("window.__releaseWorker()")
    wait_ready(page)
    assert page.evaluate("window.sdpaLab.adopted") is None
    assert page.evaluate("window.sdpaLab.earlyMoves") >= 1
    at = D_K_OPTIONS.index(LabState.param.d_k.default)
    page.wait_for_function(f"location.search.includes('d_k={D_K_OPTIONS[at + 2]}')", timeout=30_000)
    handle = page.locator(HANDLE)
    handle.focus()
    step(page, "ArrowRight")
    expect(handle).to_have_attribute("aria-valuetext", str(D_K_OPTIONS[at + 3]))
    # the browser reports the tampered first/<key>.json's failed hash, as it should; nothing else
    assert [e for e in errors if "integrity" not in e] == [], errors
    context.close()
