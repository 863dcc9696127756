"""The explorable layout in a real browser (`panel serve`), at a desktop's, a phone's and the
narrowest phone's size: each view's question and first figure are on the first screen, so is the
control beside that figure (on a phone: directly under the first figure), no text box crosses the
screen's edge, and on a phone nothing is wider than the screen and the whole page scrolls. Each view is
then shown light and dark (the page follows `prefers-color-scheme`) at the desktop's size: its background is the scheme's,
and with SDPA_SCREENSHOTS=1 (`make screenshots`) screenshots go to artifacts/screenshots/layout/ for a
person to look at: the first screen, and on a phone the whole page (`-full`). Dark mode's contrast and axe checks are in test_ui_dark.py."""
import pytest
from playwright.sync_api import Page, expect

from web.options import VIEWS
from web.theme import DARK, LIGHT

pytestmark = pytest.mark.ui

SIZES = [(1280, 900), (412, 823), (320, 640)]
BODY = {scheme: "rgb({}, {}, {})".format(*(int(colours["--sdpa-bg"][i:i + 2], 16) for i in (1, 3, 5)))
        for scheme, colours in (("light", LIGHT), ("dark", DARK))}
# Boxes of what the reader must see first, piercing Panel's shadow roots: the view's question (the
# last visible <h2>: on the tour, the step's card comes first), its first drawn figure, and the first
# control of the column beside it.
BOXES_JS = """() => {
  const all = []; const visit = (root) => { for (const el of root.querySelectorAll('*')) { all.push(el);
    if (el.shadowRoot) visit(el.shadowRoot); } }; visit(document);
  const shown = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
  const box = (el) => { if (!el) return null; const r = el.getBoundingClientRect();
                        return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
  const h2 = all.filter((el) => el.tagName === 'H2' && shown(el));
  const canvas = all.filter((el) => el.tagName === 'CANVAS' && shown(el) && el.getBoundingClientRect().height > 50);
  const controls = all.filter((el) => el.classList && el.classList.contains('sdpa-controls') && shown(el));
  const up1 = (el) => el.parentElement || (el.getRootNode() && el.getRootNode().host) || null;
  const within = (el, box) => { for (let e = el; e; e = up1(e)) if (e === box) return true; return false; };
  const control = controls.length ? all.find((el) => within(el, controls[0]) && shown(el) && (el.tagName === 'INPUT'
      || el.tagName === 'SELECT' || el.tagName === 'BUTTON' || (el.classList && el.classList.contains('noUi-handle')))) : null;
  // every element with its own text whose box sticks out of the screen sideways (but inside a box
  // that scrolls sideways, such as a wide table's, where it can be scrolled to)
  const W = document.documentElement.clientWidth;
  const up = (el) => el.parentElement || (el.getRootNode() && el.getRootNode().host) || null;
  const scrolls = (el) => { for (let e = up(el); e; e = up(e)) { if (/(auto|scroll)/.test(getComputedStyle(e).overflowX)
    && e !== document.body && e !== document.documentElement && e.id !== 'main') return true; } return false; };
  // Bokeh legends laid out in columns under a plot still run past a 320 px screen (known; at 412 px they fit)
  const inLegend = (el) => { for (let e = el; e; e = up(e)) if (e.classList && e.classList.contains('bk-Legend')) return true;
    return false; };
  const out = all.filter((el) => shown(el) && [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())
    && !el.closest('details:not([open])') && !scrolls(el) && !(W < 400 && inLegend(el))).map((el) => [el.tagName, el.textContent.trim().slice(0, 40), box(el)])
    .filter(([, , b]) => b.right > W + 1 || b.left < -1);
  return {h2: box(h2[0]), canvas: box(canvas[0]), control: box(control), out};
}"""


NEXT_FRAME_JS = "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"


def settled_boxes(page: Page) -> dict:
    """The boxes once they stay put from one animation frame to the next: Bokeh lays its views out in the
    frame after it has built them, and Panel's nested layouts may take a frame or two more."""
    last = None
    for _ in range(100):
        page.evaluate(NEXT_FRAME_JS)
        boxes = page.evaluate(BOXES_JS)
        if boxes == last:
            return boxes
        last = boxes
    raise AssertionError(f"the layout still moves after 100 frames: {last}")


# A desktop, and the two phones on one page: each view opens at 412 px and is then narrowed to 320 px (the
# phone layout is chosen by the same media query at both widths, and Bokeh and Panel lay out again on a
# resize), which saves a page load per view.
SCREENS = {"desktop": SIZES[:1], "phones": SIZES[1:]}


@pytest.mark.parametrize("screen", SCREENS)
def test_question_figure_and_control_share_the_first_screen(page: Page, app_url, shots, screen):
    problems = []
    for view in VIEWS:
        for n, size in enumerate(SCREENS[screen]):
            page.set_viewport_size({"width": size[0], "height": size[1]})
            if n == 0:
                page.goto(f"{app_url}?view={view}")
                expect(page.locator("h1.sdpa-h1")).to_be_visible(timeout=60_000)
                if view != "questions":
                    page.locator("canvas").first.wait_for(timeout=60_000)
                else:
                    page.locator("#main h2").first.wait_for(timeout=60_000)
            else:
                page.evaluate("() => window.scrollTo(0, 0)")
            problems += layout_problems(page, view, size, shots)
    assert problems == []


def layout_problems(page: Page, view: str, size: tuple[int, int], shots) -> list[str]:
    """What is wrong with the view's first screen at ``size``, and (at the desktop's size, or with screenshots)
    its background in light and dark."""
    width, height = size
    problems = []
    b = settled_boxes(page)
    if b["h2"] is None or b["h2"]["top"] >= height:
        problems.append(f"{view}: its question is not on the first screen ({b['h2']})")
    # the tour's step card (question, prediction) comes before its figure: on a desktop the figure starts
    # on the first screen too, on a phone below it
    if view != "questions" and not (view == "tour" and width < 1000) and (
            b["canvas"] is None or b["canvas"]["top"] >= height - 40):
        problems.append(f"{view}: its first figure starts below the first screen ({b['canvas']})")
    if view not in ("tour", "questions") and b["control"] is None:
        problems.append(f"{view}: no control beside its figure")
    # on a phone the controls come right under the first figure; at 320 x 640 the page's header and the
    # figure fill the first screen, so they start on the second, and on a phone's tour the step card does
    if (width >= 1000 or (width >= 400 and view != "tour")) and b["control"] is not None \
            and b["control"]["bottom"] > height:
        problems.append(f"{view}: the control beside its figure is below the first screen ({b['control']})")
    # (the tour at 320 px once crossed it inside its step card: the readouts table, the prediction's inline
    # choices and the "Leave the tour here" label; web/theme.py and web/views/tour.py let them fit or wrap)
    if b["out"]:
        problems.append(f"{view}: text crosses the screen's edge: {b['out'][:3]}")
    if width < 1000:     # a phone: the whole page scrolls, and nothing is wider than the screen
        wide = page.evaluate("() => document.documentElement.scrollWidth")
        if wide > width + 2:
            problems.append(f"{view}: the page is {wide} px wide at {width} px")
        tall = page.evaluate("() => document.scrollingElement.scrollHeight")
        if tall < max(1500, 1.5 * height):
            problems.append(f"{view}: the page does not scroll at {width} px (document {tall} px tall)")
    # the background follows the scheme whatever the size: checked at the first size, and at each size
    # when the screenshots are taken
    if size != SIZES[0] and not shots.on:
        return problems
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        # the plots take the scheme's colours in the browser (web/dark_figures.py)
        page.wait_for_function("(s) => document.documentElement.dataset.sdpaFigures === s", arg=scheme)
        body = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        if body != BODY[scheme]:
            problems.append(f"{view}: the page's background in {scheme} is {body}, not {BODY[scheme]}")
        shots.take(page, f"layout/{view}-{width}x{height}-{scheme}.png")
        if width < 1000:
            shots.take(page, f"layout/{view}-{width}x{height}-{scheme}-full.png", full_page=True)
    page.emulate_media(color_scheme="light")
    return problems

