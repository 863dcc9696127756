"""The first screen of a view, measured in the browser: shared by the layout test at a phone's widths
(tests/web/test_ui_layout.py) and the every-view test at a desktop's (tests/web/test_ui_dark.py)."""
from playwright.sync_api import Page

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
  const up = (el) => el.parentElement || (el.getRootNode() && el.getRootNode().host) || null;   // through shadow roots
  const within = (el, box) => { for (let e = el; e; e = up(e)) if (e === box) return true; return false; };
  const control = controls.length ? all.find((el) => within(el, controls[0]) && shown(el) && (el.tagName === 'INPUT'
      || el.tagName === 'SELECT' || el.tagName === 'BUTTON' || (el.classList && el.classList.contains('noUi-handle')))) : null;
  // every element with its own text whose box sticks out of the screen sideways (but inside a box
  // that scrolls sideways, such as a wide table's, where it can be scrolled to)
  const W = document.documentElement.clientWidth;
  const scrolls = (el) => { for (let e = up(el); e; e = up(e)) { if (/(auto|scroll)/.test(getComputedStyle(e).overflowX)
    && e !== document.body && e !== document.documentElement && e.id !== 'main') return true; } return false; };
  // Bokeh legends laid out in columns under a plot still run past a 320 px screen (known; at 412 px they fit)
  const inLegend = (el) => { for (let e = el; e; e = up(e)) if (e.classList && e.classList.contains('bk-Legend')) return true;
    return false; };
  const out = all.filter((el) => shown(el) && [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim())
    && !el.closest('details:not([open])') && !scrolls(el) && !(W < 400 && inLegend(el))).map((el) => [el.tagName, el.textContent.trim().slice(0, 40), box(el)])
    .filter(([, , b]) => b.right > W + 1 || b.left < -1);
  // every figure of the view, scrolled to or not, inside the screen sideways (a legend too wide for a phone
  // widens its figure's canvas past the edge, as the sharpness section's did at 320 px)
  const wide = all.filter((el) => el.tagName === 'CANVAS' && shown(el) && !scrolls(el))
    .map((el) => box(el)).filter((b) => b.right > W + 1 || b.left < -1);
  // formulas (KaTeX) wider than the box that scrolls them sideways: cut on the screen unless the reader scrolls
  const formulas = all.filter((el) => el.classList && el.classList.contains('katex-display') && shown(el))
    .filter((el) => { for (let e = up(el); e; e = up(e)) if (/(auto|scroll)/.test(getComputedStyle(e).overflowX))
      return e.scrollWidth > e.clientWidth + 1; return el.getBoundingClientRect().right > W + 1; })
    .map((el) => el.textContent.trim().slice(0, 40));
  return {h2: box(h2[0]), canvas: box(canvas[0]), control: box(control), out, wide, formulas};
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


def layout_problems(page: Page, view: str, size: tuple[int, int]) -> list[str]:
    """What is wrong with the first screen of ``view`` at ``size`` (the viewport's), the page scrolled to its top:
    its question, first figure and the control beside that figure are on it (on a phone the control comes
    directly under the figure), no text crosses the screen's edge, no figure of the view (below the first screen
    too) runs past it, and on a phone nothing is wider than the screen and the whole page scrolls."""
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
    if b["formulas"]:
        problems.append(f"{view}: a formula is wider than the screen (it scrolls sideways): {b['formulas'][:3]}")
    if b["wide"]:
        problems.append(f"{view}: a figure runs past the screen's edge: {b['wide'][:3]}")
    if width < 1000:     # a phone: the whole page scrolls, and nothing is wider than the screen
        wide = page.evaluate("() => document.documentElement.scrollWidth")
        if wide > width + 2:
            problems.append(f"{view}: the page is {wide} px wide at {width} px")
        tall = page.evaluate("() => document.scrollingElement.scrollHeight")
        # (the answer is one screen by design: on a 412 px phone its page can be shorter than that)
        if tall < max(1500, 1.5 * height) and view != "answer":
            problems.append(f"{view}: the page does not scroll at {width} px (document {tall} px tall)")
    problems += heatmap_problems(page, view) + title_problems(page, view)
    return problems


# the heatmaps (figures whose y axis is "query i") shown: the top and width of each one's box, and whether its
# title's text, in its own font, fits in the figure (less 30 px for the Save button beside it)
HEATMAPS_JS = """() => { const views = [];
  const visit = (v) => { views.push(v); for (const c of (v.child_views || [])) visit(c); };
  for (const r of Bokeh.index.roots || []) visit(r);
  const ctx = document.createElement('canvas').getContext('2d');
  return views.filter((v) => v.model.type === 'Figure' && v.el.isConnected && v.el.offsetParent !== null
                       && (v.model.left || []).some((a) => a.axis_label === 'query i'))
    .map((v) => { const r = v.el.getBoundingClientRect(), t = v.model.title;
      ctx.font = `${t.text_font_style} ${t.text_font_size} ${t.text_font}`;
      return {title: t.text, top: Math.round(r.top), width: Math.round(r.width),
              fits: ctx.measureText(t.text).width <= r.width - 30}; }); }"""


# every figure shown: its title, and whether the title's text, in its own font, fits in the figure's width
# less 30 px for the Save button beside it (heatmaps or not; hidden sections are skipped)
TITLES_JS = """() => { const views = [];
  const visit = (v) => { views.push(v); for (const c of (v.child_views || [])) visit(c); };
  for (const r of Bokeh.index.roots || []) visit(r);
  const ctx = document.createElement('canvas').getContext('2d');
  return views.filter((v) => v.model.type === 'Figure' && v.el.isConnected && v.el.offsetParent !== null
                       && v.model.title && v.model.title.text)
    .map((v) => { const r = v.el.getBoundingClientRect(), t = v.model.title;
      ctx.font = `${t.text_font_style} ${t.text_font_size} ${t.text_font}`;
      return {title: t.text, width: Math.round(r.width), fits: ctx.measureText(t.text).width <= r.width - 30}; })
    .filter((f) => !f.fits); }"""


def title_problems(page: Page, view: str) -> list[str]:
    """No figure's title is cut at this width ("no scaling: weig" at 320 px was one)."""
    return [f"{view}: the figure titled {f['title']!r} is cut ({f['width']} px wide)" for f in page.evaluate(TITLES_JS)]


def heatmap_problems(page: Page, view: str) -> list[str]:
    """Heatmaps are compared with each other: those of a view share one row at equal widths (on a phone too),
    and no map's title is cut."""
    maps = page.evaluate(HEATMAPS_JS)
    out = [f"{view}: the map titled {m['title']!r} is cut ({m['width']} px wide)" for m in maps if not m["fits"]]
    if len({m["top"] for m in maps}) > 1 or (maps and max(m["width"] for m in maps) > 1.1 * min(m["width"] for m in maps)):
        out.append(f"{view}: its heatmaps are not side by side at equal widths: {maps}")
    return out
