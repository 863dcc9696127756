"""Dark mode in a real browser (`panel serve`), light mode beside it: the page follows the reader's
`prefers-color-scheme` (Playwright's colour-scheme emulation), so every view is measured in both: it opens
in one (light or dark, alternately from view to view, so each way of opening is met) and the reader's
preference then turns to the other.

What is measured, on every view: the page's background; the contrast of every piece of text the
reader sees (headings, body text, captions, widget labels, slider titles, button text, legends,
tables), each against the background actually behind it (computed styles, walking up through Panel's
and Bokeh's shadow roots and compositing translucent backgrounds); the text Bokeh draws on its canvas
(titles, axis and tick labels, colour-bar labels, annotations), from the plot models' colours against
the plot's fill; and axe-core's report, in the scheme the view opened in. The lowest ratio per kind of text goes to
artifacts/contrast/<scheme>-<view>.json. The page each view opens on is also where its first screen is checked
at a desktop's size (tests/web/layout.py; test_ui_layout.py checks it on phones), and where, with
SDPA_SCREENSHOTS=1, the desktop's screenshots are taken."""
import json
import re
from pathlib import Path

from urllib.parse import quote

import pytest
from playwright.sync_api import Browser, Page, expect

from contrast import CONTRAST_JS, SETTLED_JS, WCAG_AA, lowest
from layout import layout_problems
from sdpa_core import hf_config, hf_published
from web.options import VIEWS
from web.tour import STEPS
from web.theme import DARK, FIGURE_DARK, LIGHT

pytestmark = pytest.mark.ui

CONTRAST_DIR = Path(__file__).resolve().parents[2] / "artifacts" / "contrast"

SCHEMES = ["light", "dark"]
DESKTOP = (1280, 900)
FIGURE_LIGHT_BG = LIGHT["--sdpa-bg"]


def open_view(page: Page, url: str, view: str, scheme: str, query: str = ""):
    page.goto(f"{url}?view={view}{query}")
    page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0 && Bokeh.documents[0].all_models.size > 50",
                           timeout=60_000)
    expect(page.locator("h1.sdpa-h1")).to_be_visible(timeout=60_000)
    if view == "questions":
        page.wait_for_selector(".katex")
    elif view != "models":
        if view == "tour":      # the step's view is covered until the reader's pick: pick, then it shows
            page.get_by_role("radio").first.check()
        page.locator("canvas").first.wait_for(timeout=60_000)
    # the plots have the scheme's colours (web/dark_figures.py), and Bokeh's widgets have their names
    page.wait_for_function("(s) => document.documentElement.dataset.sdpaFigures === s", arg=scheme)
    page.wait_for_function("() => window.__sdpaA11y === true")
    page.wait_for_function(SETTLED_JS)


def luminance(colour: str) -> float:
    def channel(v: float) -> float:
        v /= 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4
    r, g, b = (int(colour[i:i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


# every view, the tour's last step (its recap of the reader's findings and the self-check), and the Real models
# view with a config read (its sentences, table and list of fields: DeepSeek-V3's, the longest)
PAGES = [(view, "") for view in VIEWS] + [("tour", f"&step={len(STEPS)}"), ("models", "&config=" + quote(
    hf_config.to_link(hf_config.read_config(hf_published.PUBLISHED["deepseek-v3"].config))))]


def _suffix(query: str) -> str:
    return "" if not query else "-config" if "config=" in query else "-last-step"


@pytest.mark.parametrize("view, query, first", [(v, q, SCHEMES[i % 2]) for i, (v, q) in enumerate(PAGES)],
                         ids=[v + _suffix(q) for v, q in PAGES])
def test_every_view_keeps_its_first_screen_reads_at_4_5_to_1_and_axe_finds_nothing(browser: Browser, app_url, shots,
                                                                                 view, query, first):
    """The view opens in a browser that prefers ``first`` at a desktop's 1280 x 900: its question, first figure
    and the control beside it are on the first screen and no text crosses its edge (tests/web/layout.py, the
    check test_ui_layout.py makes on a phone). Then in light and in dark (the preference turns to the other
    scheme, as a reader's system can switch it): the page's background is the scheme's, every text on screen
    (in the DOM and on the plots' canvas) has a contrast of at least 4.5:1 against what is behind it, and
    axe-core reports no moderate, serious or critical violation (in the scheme the view opened in). With
    SDPA_SCREENSHOTS=1, a screenshot of the first screen in each scheme goes to artifacts/screenshots/layout/."""
    from axe_playwright_python.sync_playwright import Axe
    context = browser.new_context(color_scheme=first, viewport={"width": DESKTOP[0], "height": DESKTOP[1]})
    try:
        page = context.new_page()
        problems = []
        for scheme in (first, SCHEMES[1 - SCHEMES.index(first)]):
            if scheme == first:
                open_view(page, app_url, view, scheme, query)
                if _suffix(query) != "-last-step":
                    problems += layout_problems(page, view, DESKTOP)
            else:
                page.emulate_media(color_scheme=scheme)
                page.wait_for_function("(s) => document.documentElement.dataset.sdpaFigures === s", arg=scheme)
                page.wait_for_function(SETTLED_JS)
            if view == "tour" and query:
                expect(page.get_by_text("Self-check", exact=True)).to_be_visible(timeout=30_000)
            elif query:       # the config's head is drawn: its sentence, table and fields are on the page
                expect(page.get_by_text(re.compile("head multiplies q·k by")).first).to_be_visible(timeout=30_000)
            if _suffix(query) != "-last-step":
                shots.take(page, f"layout/{view}{_suffix(query)}-{DESKTOP[0]}x{DESKTOP[1]}-{scheme}.png")
            found = page.evaluate(CONTRAST_JS)
            expected = {"light": LIGHT, "dark": DARK}[scheme]["--sdpa-bg"]
            assert found["page"] == expected, f"{view}: the page's background in {scheme} is {found['page']}, not {expected}"
            assert (luminance(found["page"]) < 0.02) == (scheme == "dark")
            assert len(found["texts"]) > 10 and (view in ("models", "questions") or len(found["canvas"]) >= 3), found
            # the lowest ratio of each kind of text, for the record
            CONTRAST_DIR.mkdir(parents=True, exist_ok=True)
            (CONTRAST_DIR / f"{scheme}-{view}{_suffix(query)}.json").write_text(json.dumps(
                {"page": found["page"], "dom": lowest(found["texts"]), "canvas": lowest(found["canvas"])}, indent=1,
                ensure_ascii=False))
            low = [t for t in found["texts"] + found["canvas"] if t["ratio"] < WCAG_AA]
            if low:
                problems.append(f"{scheme} {view}: text under {WCAG_AA}:1: {low[:8]}")
            # axe in the scheme the view opened in: light on every other view, dark on the rest (its colour
            # contrast rule is a second opinion beside the measurement above, which covers both)
            if scheme == first:
                results = Axe().run(page)
                bad = [(v["id"], v["impact"], [n["target"] for n in v["nodes"][:3]])
                       for v in results.response["violations"] if v["impact"] in ("moderate", "serious", "critical")]
                if bad:
                    problems.append(f"{scheme} {view}: axe: {bad}")
        assert problems == []
    finally:
        context.close()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_settings_drawer_and_a_notice_read_too(browser: Browser, app_url, scheme):
    """What no view shows by itself: the "All settings" drawer open (its greyed-out settings are inactive,
    exempt) and the notice a corrected link brings, with its Dismiss button."""
    from axe_playwright_python.sync_playwright import Axe
    context = browser.new_context(color_scheme=scheme, viewport={"width": 1280, "height": 900})
    page = context.new_page()
    open_view(page, app_url, "playground", scheme, "&d_k=-5&rho=abc")
    expect(page.get_by_text("Some settings in the link were corrected:")).to_be_visible()
    page.click("#sidebar-toggle")
    expect(page.locator("#sidebar")).to_have_class(re.compile(r"\bshow\b"))
    expect(page.locator('#sidebar .noUi-handle[aria-label="d_k (key/query dimension)"]')).to_be_visible()
    page.wait_for_function("(s) => document.documentElement.dataset.sdpaFigures === s", arg=scheme)
    page.wait_for_function(SETTLED_JS)
    found = page.evaluate(CONTRAST_JS)
    kinds = {t["kind"] for t in found["texts"]}
    assert {"slider title", "widget label", "button"} <= kinds, kinds
    assert any(t["text"].startswith("Some settings in the link were corrected") for t in found["texts"])
    assert any(t["text"].startswith("Playground") and t["kind"] == "heading" for t in found["texts"])
    low = [t for t in found["texts"] + found["canvas"] if t["ratio"] < WCAG_AA]
    assert low == [], f"{scheme}: text under {WCAG_AA}:1: {low[:8]}"
    results = Axe().run(page)
    bad = [(v["id"], v["impact"], [n["target"] for n in v["nodes"][:3]]) for v in results.response["violations"]
           if v["impact"] in ("moderate", "serious", "critical")]
    assert bad == [], f"{scheme}: {bad}"
    CONTRAST_DIR.mkdir(parents=True, exist_ok=True)
    (CONTRAST_DIR / f"{scheme}-drawer-and-notice.json").write_text(json.dumps(
        {"page": found["page"], "dom": lowest(found["texts"]), "canvas": lowest(found["canvas"])}, indent=1,
        ensure_ascii=False))
    if scheme == "dark":
        page.screenshot(path=str(Path(__file__).resolve().parents[2] / "artifacts" / "screenshots" / "dark"
                                 / "drawer-and-notice-1280x900.png"))
    context.close()


# The plots' colours as BokehJS has them, and what the page has sent to Python about them.
PLOT_COLOURS_JS = """() => {
  const out = [];
  for (const doc of Bokeh.documents) for (const p of doc.all_models) {
    if (!(p.properties && 'border_fill_color' in p.properties && 'outline_line_color' in p.properties)) continue;
    const axis = [...p.left, ...p.below].find((m) => 'axis_label_text_color' in m.properties);
    out.push({id: p.id, fill: p.border_fill_color, frame: p.background_fill_color,
              axis: axis ? axis.axis_label_text_color : null, title: p.title ? p.title.text_color : null});
  }
  return out;
}"""
COLOUR_ATTRS = ("border_fill_color", "background_fill_color", "axis_label_text_color", "major_label_text_color",
                "text_color", "label_text_color", "grid_line_color")


def test_the_plots_follow_a_change_of_scheme_without_a_message_to_python(browser: Browser, app_url):
    """Switching the system's scheme while the page is open re-colours every plot, those of a view built
    afterwards too, and back; none of it is sent to Python (the page sends Panel its changes over the
    websocket: no frame names a colour property)."""
    context = browser.new_context(color_scheme="light", viewport={"width": 1280, "height": 900})
    page = context.new_page()
    sent = []
    page.on("websocket", lambda ws: ws.on("framesent", lambda payload: sent.append(str(payload))))
    open_view(page, app_url, "playground", "light")
    light = page.evaluate(PLOT_COLOURS_JS)
    assert light and all(p["fill"] == FIGURE_LIGHT_BG and p["frame"] == FIGURE_LIGHT_BG for p in light), light
    page.emulate_media(color_scheme="dark")
    page.wait_for_function("() => document.documentElement.dataset.sdpaFigures === 'dark'")
    dark = page.evaluate(PLOT_COLOURS_JS)
    assert all(p["fill"] == FIGURE_DARK["background"] and p["axis"] == FIGURE_DARK["text"]
               and p["title"] == FIGURE_DARK["text"] for p in dark), dark
    # a view built now (its figures arrive in a patch from Python) is drawn dark too
    page.locator("#main select").first.select_option(label="Half precision")
    expect(page.locator("h2").get_by_text("Half precision", exact=False).first).to_be_visible(timeout=30_000)
    page.wait_for_function(f"() => ({PLOT_COLOURS_JS})().length > {len(dark)}")
    later = page.evaluate(PLOT_COLOURS_JS)
    assert all(p["fill"] == FIGURE_DARK["background"] and p["axis"] == FIGURE_DARK["text"] for p in later), later
    page.emulate_media(color_scheme="light")
    page.wait_for_function("() => document.documentElement.dataset.sdpaFigures === 'light'")
    back = {p["id"]: p for p in page.evaluate(PLOT_COLOURS_JS)}
    for p in light:    # Python's own colours again
        assert back[p["id"]] == p
    assert all(p["fill"] == FIGURE_LIGHT_BG for p in back.values())
    colour_frames = [f[:200] for f in sent if any(attr in f for attr in COLOUR_ATTRS)]
    assert sent and colour_frames == []
    context.close()
