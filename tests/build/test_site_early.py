"""The main control before Python is live, in the built site (build/early_states.py, templates/early.js): with
BokehJS and the Python worker held back, the layer's slider of each early view moves its figures and its
headline, and the address follows; a link that sets the control opens on its own state, not a preview; and
once Python is live it takes over at the reader's value, with nothing in between at another."""
from __future__ import annotations

import re

import pytest

from build.early_states import EARLY_VIEWS
from sitebuild import NO_DIST, pyodide_dist

pytestmark = pytest.mark.ui

LAYER = "#sdpa-html-paint"
EARLY_JS = "() => window.sdpaLab && sdpaLab.early && sdpaLab.early.view"
MOVED_JS = "() => sdpaLab.early.moves > 0 && sdpaLab.early.at !== null"
VIEW_JS = "(key) => { const v = document.querySelector(`#sdpa-html-paint .sdpa-view-${key}`); return v && v.innerHTML; }"
LIVE_HEADLINES_JS = """() => { const out = []; const walk = (root) => { for (const e of root.querySelectorAll('*')) {
  if (e.shadowRoot) walk(e.shadowRoot);
  if (e.classList && e.classList.contains('sdpa-headline') && !e.closest('#sdpa-html-paint')) out.push(e.textContent); } };
  walk(document); return out; }"""


def held_context(browser, width=412, height=823):
    """A page whose BokehJS and worker wait until `release()`: the HTML layer is all there is meanwhile."""
    context = browser.new_context(viewport={"width": width, "height": height}, service_workers="block")
    held, gate = [], {"on": True}

    def hold(route):
        if gate["on"]:
            held.append(route)
        else:
            route.continue_()

    context.route(re.compile(r".*/(worker\.js|bokeh[a-z-]*\.min\.js)(\?.*)?$"), hold)

    def release():
        gate["on"] = False
        for route in held:
            route.continue_()
    return context, release


def test_each_early_views_control_moves_its_figures_and_headline_before_any_script_but_ours(site, served, browser):
    context, _ = held_context(browser)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    for key in EARLY_VIEWS:
        page.goto(f"{served}?view={key}", wait_until="commit")
        page.wait_for_function(EARLY_JS, timeout=30_000)
        assert page.evaluate("sdpaLab.early.view") == key and page.evaluate("window.Bokeh") is None
        before = page.evaluate(VIEW_JS, key)
        slider = page.locator(f"{LAYER} .sdpa-hp-early input[type=range]")
        assert slider.count() == 1 and slider.is_enabled(), key
        slider.focus()
        slider.press("End")              # a reader's key: the last position
        page.wait_for_function(MOVED_JS, timeout=10_000)
        early = page.evaluate("sdpaLab.early")
        assert early["index"] == int(slider.get_attribute("max")), (key, early)
        assert page.locator(f"{LAYER} .sdpa-hp-early b").text_content() == early["value"], key
        assert re.search(r"[?&]\w+=" + re.escape(early["value"]) + r"(&|$)", page.url), (key, page.url)
        after = page.evaluate(VIEW_JS, key)
        assert after != before, f"{key}: the view did not change with its control"
        assert page.evaluate("sdpaLab.ready") is False and page.evaluate("window.Bokeh") is None
        # a link that sets the control opens on that state, not on a blurred default
        page.goto(page.url, wait_until="commit")
        page.wait_for_function(EARLY_JS, timeout=30_000)
        page.wait_for_function("() => sdpaLab.early.at !== null", timeout=10_000)
        assert page.evaluate("sdpaLab.early.index") == early["index"], key
        assert page.evaluate("document.documentElement.classList.contains('sdpa-preview')") is False, key
        assert page.evaluate(VIEW_JS, key) == after, f"{key}: the link's own state is not the one the move showed"
    assert errors == []
    context.close()


def test_python_takes_over_at_the_readers_value(site, served, browser):
    """Moved before anything else arrived, the layer stays live over BokehJS's draw; once Python is live the page
    is at the reader's value (its headline the layer's), then the layer goes."""
    if pyodide_dist() is None:
        pytest.skip(NO_DIST)      # Python must go live: a build without a distribution loads it from a CDN
    context, release = held_context(browser)
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{served}?view=playground", wait_until="commit")
    page.wait_for_function(EARLY_JS, timeout=30_000)
    slider = page.locator(f"{LAYER} .sdpa-hp-early input[type=range]")
    slider.focus()
    slider.press("End")
    page.wait_for_function(MOVED_JS, timeout=10_000)
    said = page.locator(f"{LAYER} .sdpa-view-playground .sdpa-headline").first.text_content()
    value = page.evaluate("sdpaLab.early.value")
    release()
    page.wait_for_function("() => sdpaLab.htmlPaint === 'kept'", timeout=60_000)      # BokehJS drew beneath
    assert page.locator(f"{LAYER} .sdpa-view-playground .sdpa-headline").first.text_content() == said
    page.wait_for_function("() => sdpaLab.ready && sdpaLab.htmlPaint === 'replaced'", timeout=180_000)
    assert f"d_k={value}" in page.url
    page.wait_for_function(f"() => ({LIVE_HEADLINES_JS})().includes({said!r})", timeout=30_000)
    assert errors == []
    context.close()


def test_a_move_of_the_drawn_control_before_python_brings_the_layer_back_live(site, served, browser):
    """BokehJS has drawn the page (the layer went) but Python is not live: a move of the drawn slider (its model's
    value, as its handle sets it) brings the layer back at that position, live, and the address follows."""
    context = browser.new_context(viewport={"width": 412, "height": 823}, service_workers="block")
    context.route(re.compile(r".*/worker\.js(\?.*)?$"), lambda r: r.abort())     # Python never comes
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{served}?view=variance", wait_until="commit")
    page.wait_for_function("() => window.sdpaLab && sdpaLab.htmlPaint === 'replaced' && sdpaLab.early", timeout=60_000)
    label = page.evaluate("sdpaLab.early && document.querySelector('#sdpa-html-paint') === null")
    assert label, "the layer did not go when BokehJS drew"
    moved = page.evaluate("""() => { const doc = Bokeh.documents[Bokeh.documents.length - 1];
      const s = [...doc.all_models].find((m) => typeof m.title === 'string' && m.title.startsWith('d_k (') && 'start' in m.properties);
      s.value = s.end; return s.end; }""")
    page.wait_for_function("() => sdpaLab.htmlPaint === 'kept' && sdpaLab.early.at !== null && sdpaLab.early.moves > 0",
                           timeout=10_000)
    assert page.evaluate("sdpaLab.early.index") == moved
    assert page.locator(f"{LAYER} .sdpa-hp-early input[type=range]").input_value() == str(moved)
    assert "d_k=4096" in page.url and page.evaluate("sdpaLab.ready") is False
    assert page.locator(f"{LAYER} .sdpa-view-variance .sdpa-headline").first.is_visible()
    assert errors == []
    context.close()
