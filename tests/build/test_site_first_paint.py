"""The built site's first paint: every link shows its own view or tour step before Python is live
(the pre-render of that link, build/prerender.py first_paints, drawn by boot.js), embedded or not; once
live, the page is the link's state, drawn from the same models (adopted, not drawn again)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from sitebuild import pyodide_dist
from web.state import LabState
from web.options import VIEW_HEADINGS
from web.tour import STEPS
from web.urlstate import DEFAULT_FIRST_PAINT, first_paint_links
from web.views.tour import COVER_NOTE

pytestmark = pytest.mark.ui

# Every view's question (its <h2>), read from the page's own registry. A tour step shows its own title instead.
HEADINGS = VIEW_HEADINGS
# BokehJS has drawn the whole pre-rendered document (in slices: its roots appear one by one) and the HTML
# layer over it is gone
DRAWN_JS = "() => window.sdpaLab && sdpaLab.firstPaint && sdpaLab.htmlPaint === 'replaced'"
H2_JS = """() => { const out = []; const visit = (root) => { for (const el of root.querySelectorAll('*')) {
  if (el.tagName === 'H2' && el.getClientRects().length) out.push(el.textContent.trim());
  if (el.shadowRoot) visit(el.shadowRoot); } }; visit(document); return out; }"""


def expected_heading(key: str) -> str:
    if key.startswith("tour-"):
        return STEPS[int(key.split("-")[1]) - 1].title
    return HEADINGS[key]


def allowed_headings(key: str) -> set[str]:
    """What the link may show: its question, and on the tour the step's live view under the step's card."""
    if key.startswith("tour-"):
        return {expected_heading(key), HEADINGS[STEPS[int(key.split("-")[1]) - 1].view]}
    return {HEADINGS[key]}


# Embedded, the same pre-rendered files show with the page's chrome hidden: the default link, a view and a
# tour step past the first stand for every link (each link's own file is checked without embedding).
EMBEDDED = [DEFAULT_FIRST_PAINT, "playground", "tour-3"]


def links(embed: bool) -> dict[str, str]:
    every = first_paint_links()
    return {key: every[key] for key in EMBEDDED} if embed else every


def test_the_embedded_links_are_links_of_the_site():
    assert set(EMBEDDED) <= set(first_paint_links()) and len(set(EMBEDDED)) == 3


@pytest.mark.parametrize("embed", [False, True], ids=["page", "embed"])
def test_every_link_paints_its_own_view_before_python_is_live(site, served, browser, embed):
    """With the Python worker held back (so the first paint stays on screen), each view's and each tour
    step's link draws that view's question and no other's; embedded, without the intro and the View menu."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    context.route(re.compile(r".*/worker\.js(\?.*)?$"), lambda r: r.abort())   # boot stops before Python
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    others = {expected_heading(k) for k in first_paint_links()} | set(HEADINGS.values())
    for key, search in links(embed).items():
        page.goto(served + search + ("&embed=1" if embed else ""))
        page.wait_for_function(DRAWN_JS, timeout=60_000)
        page.wait_for_function(f"() => ({H2_JS})().length > 0", timeout=30_000)
        assert page.evaluate("sdpaLab.firstPaint") == key
        shown = page.evaluate(H2_JS)
        want = expected_heading(key)
        assert want in shown, (key, shown)
        assert not (others - allowed_headings(key)) & set(shown), (key, shown)
        # the page's title with the intro, hidden embedded (waited for: BokehJS lays the intro out a frame or two
        # after it has drawn, and under load later still)
        if embed:
            expect(page.locator("h1.sdpa-h1")).to_be_hidden()
        else:
            expect(page.locator("h1.sdpa-h1")).to_be_visible()
        assert page.evaluate("sdpaLab.ready") is False
    assert errors == []
    context.close()


HTML_LAYER_H2_JS = """() => [...document.querySelectorAll('#sdpa-html-paint h2')]
  .filter((el) => el.getClientRects().length).map((el) => el.textContent.trim())"""


@pytest.mark.parametrize("embed", [False, True], ids=["page", "embed"])
def test_every_link_paints_its_own_view_in_html_before_any_script_runs(site, served, browser, embed):
    """With BokehJS and the Python worker held back, each link still shows its own view's question and
    headline at once, as HTML (build/html_paint.py): the default link's from index.html, another's from its
    first-paint file, never the default one meanwhile; embedded, without the intro."""
    context = browser.new_context(viewport={"width": 412, "height": 823}, service_workers="block")
    context.route(re.compile(r".*/(worker\.js|bokeh\.min\.js)(\?.*)?$"), lambda r: r.abort())
    page = context.new_page()
    others = {expected_heading(k) for k in first_paint_links()} | set(HEADINGS.values())
    for key, search in links(embed).items():
        page.goto(served + search + ("&embed=1" if embed else ""))
        page.wait_for_function(f"() => ({HTML_LAYER_H2_JS})().length > 0", timeout=30_000)
        shown = page.evaluate(HTML_LAYER_H2_JS)
        assert expected_heading(key) in shown, (key, shown)
        assert not (others - allowed_headings(key)) & set(shown), (key, shown)
        assert page.locator("#sdpa-html-paint h1.sdpa-h1").is_visible() != embed, key
        if not key.startswith("tour-") and key != "questions":     # a view's headline sentence, with its numbers
            assert page.locator("#sdpa-html-paint .sdpa-headline").first.is_visible(), key
        # its figures are drawn (build/html_figures.py), not empty boxes
        marks = page.evaluate("() => [...document.querySelectorAll('#sdpa-html-paint .sdpa-hp-figure')].filter((f) =>"
                              " f.getClientRects().length).map((f) => f.querySelectorAll('svg *').length)")
        assert not marks or max(marks) > 0, (key, marks)
        # the page does not scroll sideways on a phone (a wide table scrolls in its own box, as once live)
        assert page.evaluate("document.documentElement.scrollWidth") <= 412, key
        assert page.evaluate("window.Bokeh") is None
        # the Preview badge (above the controls) is there, and covers no text; a tour step's view, controls and
        # badge included, is covered until the reader's pick, and its card says so (web/views/tour.py COVER_NOTE)
        if key.startswith("tour-"):
            assert page.locator("#sdpa-html-paint").get_by_text(COVER_NOTE).first.is_visible(), key
            assert not page.locator("#sdpa-html-paint .sdpa-live-mark").first.is_visible(), key
        elif key != "questions":
            assert page.locator("#sdpa-html-paint .sdpa-live-mark").first.is_visible(), key
        assert page.evaluate(BADGE_OVER_TITLE_JS) == [], key
    context.close()


# The text in the HTML layer (figure titles, control labels, headings, paragraphs) that a visible Preview
# badge overlaps: each line's own extent (a Range's rects), not its block's.
BADGE_OVER_TITLE_JS = """() => {
  const meets = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  const badges = [...document.querySelectorAll('#sdpa-html-paint .sdpa-live-mark')].filter((b) => b.getClientRects().length)
    .map((b) => b.getBoundingClientRect());
  // text inside a closed <details> is not shown (Chromium still gives it boxes, where it would be when opened)
  const texts = [...document.querySelectorAll('#sdpa-html-paint :is(.sdpa-hp-title, .sdpa-hp-label, h2, h3, p)')]
    .filter((t) => !t.closest('details:not([open])'));
  return texts.filter((t) => { const range = document.createRange(); range.selectNodeContents(t);
    return [...range.getClientRects()].some((r) => r.width > 0 && badges.some((b) => meets(b, r))); })
    .map((t) => t.textContent.trim().slice(0, 60));
}"""


def test_without_javascript_the_default_link_still_reads(site, served, browser):
    """index.html alone, no script run at all: the default view's question, text and figure boxes."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, java_script_enabled=False)
    page = context.new_page()
    page.goto(served)
    key = DEFAULT_FIRST_PAINT
    assert expected_heading(key) in page.evaluate(HTML_LAYER_H2_JS)
    assert page.locator("#sdpa-html-paint .sdpa-hp-figure").count() >= 1
    context.close()


def test_a_partly_parsed_layer_is_not_shown(site, served, browser):
    """The browser paints a page while it is still parsing it, and a row laid out before its last
    children arrive moves when they do (a layout shift of 0.03 at 1280 px, under load). So the layer
    shows only once its last child (html_paint.END) is parsed: index.html cut just before it shows
    nothing of the layer; whole, it shows the figures."""
    page_html = (site.root / "index.html").read_text()
    end = page_html.index('<i class="sdpa-hp-end"')
    context = browser.new_context(viewport={"width": 1280, "height": 900}, java_script_enabled=False)
    page = context.new_page()
    shown = "() => getComputedStyle(document.querySelector('#sdpa-html-paint .sdpa-hp-figure')).visibility"
    for body, visibility in ((page_html[:end], "hidden"), (page_html, "visible")):
        page.route(served, lambda route, _request, body=body: route.fulfill(body=body, content_type="text/html"))
        page.goto(served)
        assert page.evaluate(shown) == visibility
        page.unroute(served)
    context.close()


def test_the_html_layer_goes_once_bokeh_has_drawn(site, served, browser):
    """Once BokehJS has drawn the link's document, the HTML layer is gone (boot.js), and the layout shift
    from navigation until then stays under 0.1 (Lighthouse's "good"). Measured 0.036 at 1280x900 on the
    tour's first step, the same with and without the layer: BokehJS's own first layout of the header row."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    context.route(re.compile(r".*/worker\.js(\?.*)?$"), lambda r: r.abort())
    context.add_init_script("window.__shifts = []; new PerformanceObserver((l) => l.getEntries().forEach("
                            "(e) => window.__shifts.push(e.value))).observe({type: 'layout-shift', buffered: true});")
    page = context.new_page()
    for key in ("tour-1", "saturation"):
        page.goto(served + first_paint_links()[key])
        page.wait_for_function("() => window.sdpaLab && sdpaLab.htmlPaint === 'replaced'", timeout=60_000)
        assert page.locator("#sdpa-html-paint").count() == 0
        assert expected_heading(key) in page.evaluate(H2_JS)
        assert sum(page.evaluate("window.__shifts")) < 0.1, key
    context.close()


# Records the preview notice each time one is put on the page (it is gone again once the page is live), and
# whether what it blurs was hidden from screen readers meanwhile (every HTML layer and drawn root: aria-hidden)
PREVIEW_SEEN_JS = """window.__previews = []; window.__readable = []; new MutationObserver(() => {
  const n = document.getElementById('sdpa-preview');
  if (n && !window.__previews.includes(n.textContent)) window.__previews.push(n.textContent);
  if (n) for (const el of document.querySelectorAll('#main #sdpa-html-paint, #main [data-root-id]'))
    if (el.getAttribute('aria-hidden') !== 'true' && !window.__readable.includes(el.id || el.dataset.rootId))
      window.__readable.push(el.id || el.dataset.rootId); })
  .observe(document, {childList: true, subtree: true, attributes: true});"""


@pytest.mark.parametrize("link, key, shown, preview", [
    ("?view=precision&d_k=512", "precision", "d_k (key/query dimension): 512", ["d_k"]),
    ("?view=tour&step=6&d_k=1024", "tour-6", "d_k (key/query dimension): 1024", ["d_k"]),
    ("?view=dial&embed=1&s=4", "dial", "Logit std s: 4", ["s"]),
    ("?view=dial", "dial", f"Logit std s: {LabState.param.dial_s.default:g}", None),
])
def test_ready_means_the_links_state_is_drawn(site, served, browser, link, key, shown, preview):
    """Booted cold, the page is ready only once the link's own settings are drawn; the live document
    adopts the pre-rendered views of the link (the page is drawn once). Until then a link with settings
    shows the default-settings paint as a named, blurred preview; a plain view link is no preview."""
    if pyodide_dist() is None:
        pytest.skip("needs a Pyodide 0.29.3 distribution: set PYODIDE_DIST=<folder with pyodide-lock.json>")
    context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    context.add_init_script(PREVIEW_SEEN_JS)
    page = context.new_page()
    page.goto(served + link)
    page.wait_for_function("() => window.sdpaLab && (sdpaLab.ready || sdpaLab.error)", timeout=120_000)
    lab = page.evaluate("() => ({ready: sdpaLab.ready, error: sdpaLab.error, first: sdpaLab.firstPaint, adopted: sdpaLab.adopted})")
    assert lab["error"] is None and lab["first"] == key, lab
    assert lab["adopted"] is not None, lab       # the pre-render of this link was kept, not drawn again
    # at the moment it is ready, the link's value is on the page already (no later patch brings it)
    # (a tour step's view is covered until the reader's pick: its value is there, not shown)
    value = page.locator("#main").get_by_text(shown, exact=True).first
    assert (value.count() > 0) if key.startswith("tour-") else value.is_visible(), link
    assert not page.locator(".sdpa-live-mark").first.is_visible()
    state = page.evaluate("""() => ({keys: sdpaLab.preview, ended: typeof sdpaLab.previewEnded, seen: window.__previews,
        note: document.getElementById('sdpa-preview') !== null,
        classed: document.documentElement.classList.contains('sdpa-preview')})""")
    assert state["keys"] == preview and not state["note"] and not state["classed"], state
    if preview:
        assert state["ended"] == "number" and len(state["seen"]) == 1, state
        assert f"{preview[0]} = " in state["seen"][0] and state["seen"][0].startswith("Preview at"), state
        # the blurred state was not read to a screen reader (issue 55), and once live nothing stays hidden
        assert page.evaluate("window.__readable") == []
        assert page.evaluate("document.querySelectorAll('#main [aria-hidden=true]').length") == 0
    else:
        assert state["ended"] == "undefined" and state["seen"] == [], state
    context.close()


def test_the_first_paint_follows_a_dark_preference(site, served, browser):
    """A reader whose system prefers dark gets the first paint dark, before Python is live: the page's
    colours are CSS (web/theme.py) and the plots' are set in the browser (web/dark_figures.py), so the
    one pre-render serves both. Every text on it reads at 4.5:1 or more, the plots' too."""
    from contrast import CONTRAST_JS, SETTLED_JS, WCAG_AA
    from web.theme import DARK
    context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block",
                                  color_scheme="dark")
    context.route(re.compile(r".*/worker\.js(\?.*)?$"), lambda r: r.abort())   # boot stops before Python
    page = context.new_page()
    for key in ("playground", "precision", "tour-3"):
        page.goto(served + first_paint_links()[key])
        page.wait_for_function(DRAWN_JS, timeout=60_000)
        page.wait_for_function(f"() => ({H2_JS})().length > 0", timeout=30_000)
        page.wait_for_function("() => document.documentElement.dataset.sdpaFigures === 'dark'", timeout=30_000)
        page.wait_for_function(SETTLED_JS, timeout=30_000)
        found = page.evaluate(CONTRAST_JS)
        assert found["page"] == DARK["--sdpa-bg"], key
        assert len(found["canvas"]) >= 3, key
        # buttons too: they once measured 3.96-4.19:1 before Python was live, under Panel's loading veil (gone)
        low = [t for t in found["texts"] + found["canvas"] if t["ratio"] < WCAG_AA]
        assert low == [], (key, low[:8])
        assert page.evaluate("sdpaLab.ready") is False
        # nothing lies over the page until Python is live (Panel's loading veil dimmed it to half its contrast)
        veil = page.evaluate("() => getComputedStyle(document.body, '::after').backgroundColor")
        assert veil == "rgba(0, 0, 0, 0)", veil
        folder = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots" / "dark"
        folder.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(folder / f"site-first-paint-{key}-1280x900.png"))
    context.close()


# Until the page is live: what covers the preview. The heading's centre is the heading (no veil over it), and
# the boot panel shows the step under way alone.
PREVIEW_JS = """() => { const deep = (root) => { const hit = root.querySelector('h1.sdpa-h1'); if (hit) return hit;
    for (const el of root.querySelectorAll('*')) if (el.shadowRoot) { const h = deep(el.shadowRoot); if (h) return h; }
    return null; };
  const h = deep(document); if (!h) return {headingOnTop: false};
  const r = h.getBoundingClientRect(); const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  let on = false;       // the element found there is the heading or a shadow host holding it, not the body under a veil
  for (let e = h; e && e !== document.body; e = e.parentNode || e.host) if (e === hit) on = true;
  const panel = document.querySelector('#sdpa-boot');
  return {veiled: document.body.classList.contains('pn-loading'), headingOnTop: on,
          steps: panel ? [...panel.querySelectorAll('li')].filter((li) => li.getClientRects().length).length : null,
          panel: panel ? panel.getBoundingClientRect().height : null}; }"""


def test_until_live_the_preview_is_not_veiled_and_the_boot_panel_keeps_to_one_line_of_steps(site, served, browser):
    """With the Python worker held back (the boot waits at its first step), the preview reads in full: Panel's
    loading veil (a spinner and a half-transparent layer over everything) is gone from the page, so the first
    heading is what lies at its centre; the boot panel shows one step, in at most a quarter of the screen's
    height, at a desktop's size and two phones' (one page, resized)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    context.route(re.compile(r".*/worker\.js(\?.*)?$"), lambda route: None)     # never answered: still booting
    page = context.new_page()
    page.goto(served)
    page.wait_for_function("() => document.querySelector('#sdpa-boot li.sdpa-current') !== null", timeout=30_000)
    for width, height in ((1280, 900), (412, 823), (320, 640)):
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_function(f"() => ({PREVIEW_JS})().headingOnTop", timeout=30_000)
        seen = page.evaluate(PREVIEW_JS)
        assert not seen["veiled"] and seen["steps"] == 1, (width, seen)
        assert 0 < seen["panel"] <= height / 4, (width, seen)
    context.close()
