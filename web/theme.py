"""Colours, figure defaults and page CSS shared by every view: one palette, one look.

Rules use the Okabe-Ito palette (distinguishable with every common colour-vision deficiency)
and also differ in dash pattern; heatmaps use viridis (perceptually uniform, readable in grey).
"""
from __future__ import annotations

from bokeh.models import (AllIndices, CDSView, ColumnDataSource, GlyphRenderer, HArea, HoverTool, Legend, LegendItem,
                          Line, Patch, Patches, Scatter, Span, UnionRenderers, VArea)
from bokeh.palettes import Viridis256
from bokeh.plotting import figure

from .figure_labels import name_figure

# Okabe & Ito (2008), "Color Universal Design".
OKABE_ITO = {
    "black": "#000000", "orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73",
    "yellow": "#F0E442", "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7",
}
RULE_COLORS = {
    "none": OKABE_ITO["vermillion"], "sqrt": OKABE_ITO["blue"], "linear": OKABE_ITO["green"],
    "alpha": OKABE_ITO["purple"], "qknorm": OKABE_ITO["orange"], "ssmax": OKABE_ITO["black"],
    "fold": OKABE_ITO["sky"],   # a training run only: no scaling, 1/√d_k folded into W_q's init
    # Okabe-Ito has no eighth colour that reads on white (its yellow is 1.2:1): Paul Tol's rose and olive
    "softcap": "#CC6677", "llama4": "#999933",
}
RULE_DASH = {"none": "solid", "sqrt": "solid", "linear": "dashed", "alpha": "dotdash", "qknorm": "dotted",
             "ssmax": "solid", "fold": "dashdot", "softcap": "dashdot", "llama4": "dotted"}
DTYPE_COLORS = {"float16": OKABE_ITO["vermillion"], "float32": OKABE_ITO["sky"], "float64": OKABE_ITO["black"]}
THEORY_COLOR = "#555555"
#: Text in vermillion on a plot (the float16 limit's label): #D55E00 is 3.9:1 on white; this is 5.3:1.
WARN_TEXT = "#B34D00"
MARK_COLOR = "#444444"
HEATMAP = Viridis256
NAN_COLOR = "#ff00ff"  # magenta: not in viridis, so an overflowed (NaN) weight cannot be mistaken

ACCENT = OKABE_ITO["blue"]
HEADER_BG = "#1d3557"
#: Inline code in captions: Panel's default (#82aaff) has a contrast of 2.3:1 on white; this is 8.4:1.
CODE_COLOR = "#1d4e89"
#: Focus rings: 3 px, 7.6:1 on white (WCAG 2.4.7 / 2.4.11).
FOCUS_COLOR = "#1d4e89"
#: Below Bootstrap's md breakpoint (where the template's navbar collapses) the layout is a phone's.
PHONE = "(max-width: 767.98px)"

#: The page's colours, light and dark, as CSS custom properties on the document's :root (TEMPLATE_CSS).
#: The page is drawn once for every reader (the static site pre-renders it), so the browser picks the
#: set from ``prefers-color-scheme``, never Python. Custom properties inherit into Panel's and Bokeh's
#: shadow roots: the page's own CSS (``CSS``, host ``styles``) reads the ``--sdpa-*`` ones, and Panel's
#: Bootstrap design reads its colours from the ``--design-*`` ones (panel/theme/css/bootstrap.css, the
#: documented way to re-colour a design), Bokeh's toolbar its icons from ``--bokeh-icon-color``.
#: Every text colour is at least 4.5:1 on the backgrounds it is used on (tests/web/test_ui_dark.py).
LIGHT = {
    "--sdpa-bg": "#ffffff", "--sdpa-text": "#1a1a1a", "--sdpa-muted": "#333333", "--sdpa-soft": "#444444",
    "--sdpa-accent": ACCENT, "--sdpa-code": CODE_COLOR, "--sdpa-focus": FOCUS_COLOR, "--sdpa-link": CODE_COLOR,
    "--sdpa-verdict-bg": "#f2f6fb", "--sdpa-card-bg": "#f7f9fc", "--sdpa-notice-bg": "#fff4ec",
    "--sdpa-rule-line": "#dddddd", "--sdpa-mark-fg": "#5a4500", "--sdpa-mark-bg": "#fff3c4",
}
DARK = {
    "--sdpa-bg": "#15181c", "--sdpa-text": "#e6e8eb", "--sdpa-muted": "#c9ced6", "--sdpa-soft": "#b9bfc8",
    "--sdpa-accent": OKABE_ITO["sky"], "--sdpa-code": "#9ec5fe", "--sdpa-focus": "#9ec5fe", "--sdpa-link": "#9ec5fe",
    "--sdpa-verdict-bg": "#1a2532", "--sdpa-card-bg": "#1a2532", "--sdpa-notice-bg": "#35241a",
    "--sdpa-rule-line": "#3a4048", "--sdpa-mark-fg": "#ffe08a", "--sdpa-mark-bg": "#3d3210",
    # Panel's design variables (read inside every component's shadow root)
    "--design-background-color": "#15181c", "--design-background-text-color": "#e6e8eb",
    "--design-surface-color": "#1f242b", "--design-surface-text-color": "#e6e8eb",
    "--design-secondary-color": "#2b3139", "--design-secondary-text-color": "#e6e8eb",
    # Bootstrap's own, for the template's document-level parts (sidebar, form controls' borders)
    "--bs-border-color": "#3a4048", "--bs-secondary-bg": "#2b3139", "--bs-tertiary-bg": "#1f242b",
    "--bs-emphasis-color": "#ffffff", "--bs-secondary-color": "#c9ced6",
    # Bokeh's toolbar icons
    "--bokeh-icon-color": "#c9ced6",
}

#: The plots' own colours (set in the browser by web/dark_figures.py: a canvas takes no CSS). Light: the
#: plot's fill only (every other colour is the figure's own). Dark: the plot is the page's background,
#: its text as the page's, ticks and grid muted.
FIGURE_LIGHT = {"background": LIGHT["--sdpa-bg"]}
FIGURE_DARK = {"background": DARK["--sdpa-bg"], "text": DARK["--sdpa-text"], "soft": DARK["--sdpa-muted"],
               "axis": "#8a929c", "grid": "#596069", "border": "#3a4048"}
#: Data colours that would vanish on the dark background, and what they become there (the reference
#: and marker greys, black for float64 and the training target, the darkened vermillion of text); every
#: other data colour stays (Okabe-Ito's are at least 3:1 on both backgrounds).
DARK_DATA = {OKABE_ITO["black"]: "#e6e8eb", THEORY_COLOR: "#a9b0b8", MARK_COLOR: "#b9bfc8", WARN_TEXT: "#F0843C"}

#: host styles (Panel panes live in shadow DOM: ``styles`` reach the pane itself, CSS classes would not)
VERDICT_STYLES = {"border-left": "5px solid " + OKABE_ITO["blue"], "background": "var(--sdpa-verdict-bg)",
                  "padding": "2px 12px", "font-size": "15.5px", "font-weight": "400", "border-radius": "3px",
                  "color": "var(--sdpa-text)"}
#: A view's first place, embedded (?embed=1, below): its question, then its headline (LEAD_STYLES), then
#: its figure beside its controls, so that a 700 x 450 frame shows all three. Elsewhere the order is the page's.
EMBED_LEAD = {"order": "var(--sdpa-embed-lead, 0)"}
#: The headline a view's figure is about: a verdict, and first (after the question) when embedded.
LEAD_STYLES = {**VERDICT_STYLES, **EMBED_LEAD}
NOTICE_STYLES = {"border-left": "5px solid " + OKABE_ITO["vermillion"], "background": "var(--sdpa-notice-bg)",
                 "padding": "2px 12px", "border-radius": "3px", "color": "var(--sdpa-text)"}


def make_figure(*, title: str, x_label: str, y_label: str, height: int = 300, tools: str = "save",
                hover: list | None = None, **kw):
    """A Bokeh figure with the page's defaults: responsive width, readable fonts, a Save button for PNG.

    The figures explain; they are not for exploring by pan and zoom (each tool was a tab stop and 30 px
    of a phone's width): Save is the toolbar's one button, and the hover tooltips need none."""
    kw.setdefault("min_width", 240)
    kw.setdefault("toolbar_location", "above")   # beside the title: no 30 px strip off a phone's width
    p = figure(title=title, height=height, sizing_mode="stretch_width", tools=tools, **kw)
    p.toolbar.logo = None
    p.toolbar.autohide = True      # the toolbar shows while the pointer is over the plot: the figure first
    p.xaxis.axis_label, p.yaxis.axis_label = x_label, y_label
    p.title.text_font_size = "14px"
    p.title.text_font_style = "bold"
    for ax in (p.xaxis, p.yaxis):
        ax.axis_label_text_font_size = "13px"
        ax.axis_label_text_font_style = "normal"
        ax.major_label_text_font_size = "12px"
    p.outline_line_color = None
    p.grid.grid_line_alpha = 0.4
    # No fill from Python: the page's background shows through from the first paint, light or dark. The
    # browser then fills the plot with the page's colour (web/dark_figures.py), so a saved PNG has one;
    # a light fill drawn first and a dark one after would leave a light hairline at the canvas's edge.
    p.background_fill_color = None
    p.border_fill_color = None
    if hover:
        p.add_tools(HoverTool(tooltips=hover, visible=False))
    lean_renderers(p)
    name_figure(p)   # role and label for screen readers, from its title, axes and (views say) its claim
    return p


def control_mark(location: float) -> Span:
    """The dashed line that marks where a view's main control is (d_k, ρ, a model's width) on a figure.

    At Bokeh's overlay level: when only the mark moves (a d_k notch leaves a sweep as it is), BokehJS
    repaints the figure's overlay canvas alone, not every glyph of the figure under it."""
    return Span(location=location, dimension="height", line_color=MARK_COLOR, line_dash="dashed", line_width=1.5,
                level="overlay")


def lean_renderers(p) -> None:
    """Every glyph the figure gets is drawn by its renderer's own glyph only.

    Bokeh's glyph methods give each renderer two more copies of its glyph (for unselected and for muted
    data) and its own "all rows" filter: six models a line. The page selects nothing (hover tools only)
    and its legends hide, never mute, so the copies are never drawn; one filter serves every renderer of
    the figure. A view of 8 rules' lines, bands and dots (saturation) sends ~300 models fewer of ~970,
    each one created, serialised and rebuilt in BokehJS when the view first shows. Likewise every data
    source of the figure shares one selection policy (stateless; each source had its own), which takes
    the saturation view from 634 to 604 models."""
    rows, policy = AllIndices(), UnionRenderers()

    def lean(attr, old, new):
        for r in new:
            if isinstance(r, GlyphRenderer) and r.muted_glyph is not None:
                r.update(nonselection_glyph=None, muted_glyph=None, view=CDSView(filter=rows))
            source = getattr(r, "data_source", None)
            if isinstance(source, ColumnDataSource) and source.selection_policy is not policy:
                source.selection_policy = policy
        for tool in p.tools:
            if isinstance(tool, HoverTool):
                tool.renderers = pointed(new)

    p.on_change("renderers", lean)


#: Glyphs that cover an area (a rule's ±1 std band): hovered, they name the row of the line they surround.
AREAS = (VArea, HArea, Patch, Patches)


def pointed(renderers) -> list:
    """The renderers a figure's hover tooltip reads its row from: every glyph but an area, and but a line whose
    source a scatter draws too. Those repeat the row of the dots they surround or join (the same source), and
    the dots are the measured points: the tooltip is read off a dot.

    BokehJS builds a tooltip view per hovered renderer (a shadow root with its stylesheets, laid out when
    drawn): "auto" gave the saturation view's sweeps one per line, band and dots of each of 8 rules, 99 in
    the view; now 51."""
    glyphs = [r for r in renderers if isinstance(r, GlyphRenderer)]
    dotted = {id(r.data_source) for r in glyphs if isinstance(r.glyph, Scatter)}
    return [r for r in glyphs if not isinstance(r.glyph, AREAS)
            and not (isinstance(r.glyph, Line) and id(r.data_source) in dotted)]


#: Bokeh 3.9 lays legend entries out in a CSS grid whose gap is ``spacing`` both ways; entries in
#: columns need more room sideways than between rows, or one label runs into the next glyph.
LEGEND_CSS = ".bk-grid { column-gap: 18px !important; row-gap: 1px !important; }"


def _style(legend, *, inside: bool):
    legend.click_policy = "hide"
    legend.label_text_font_size = "12.5px"
    legend.label_height = 16
    legend.glyph_height = 16
    legend.spacing = 1
    legend.stylesheets = [LEGEND_CSS]
    if inside:
        legend.background_fill_alpha = 0.85
        legend.padding = 4
    else:
        legend.border_line_color = None
        legend.padding = 2
        legend.margin = 2


#: The width a legend under a plot may take at the narrowest screen the page is laid out for (320 px: the figure
#: is about 300 px and its legend starts past the y-axis), and what a legend item takes: the glyph, its standoff
#: and padding, and about 5.6 px a character at the legend's 12.5 px type (measured on the 320 px screenshots).
LEGEND_BUDGET_PX, LEGEND_ITEM_PX, LEGEND_CHAR_PX = 250, 30, 5.6


def _label_text(item) -> str:
    label = item.label
    if isinstance(label, dict):
        return str(label.get("value", ""))
    return str(getattr(label, "value", label) or "")


def legend_width(labels: list[str], ncols: int) -> float:
    """The width of a legend of ``labels`` in ``ncols`` columns, filled row by row: each column as wide as its
    longest label."""
    cols = [labels[i::ncols] for i in range(ncols)]
    return sum(LEGEND_ITEM_PX + LEGEND_CHAR_PX * max((len(t) for t in col), default=0) for col in cols if col)


def fit_ncols(labels: list[str], ncols: int) -> int:
    """At most ``ncols`` columns, as many as fit the narrowest screen (LEGEND_BUDGET_PX): never a cut label."""
    while ncols > 1 and legend_width(labels, ncols) > LEGEND_BUDGET_PX:
        ncols -= 1
    return ncols


def style_legend(p, location="top_left", *, below: bool = False, ncols: int = 2, widest: list[str] | None = None):
    """Legend inside the plot at ``location``, or under it in ``ncols`` columns when ``below``
    (plots with many entries: the legend never hides data then), fewer where they would not fit a phone;
    ``widest``: the longest labels its entries can later take (a rule's name that follows the reader's pick)."""
    if p.legend and below:
        legend = p.legend[0]
        legend.location = "top_left"
        legend.ncols = fit_ncols(widest or [_label_text(i) for i in legend.items], ncols)
        p.center.remove(legend)
        p.add_layout(legend, "below")
        _style(legend, inside=False)
        return
    if p.legend:
        p.legend.location = location
        for legend in p.legend:
            _style(legend, inside=True)


def legend_key(p, kind: str = "line", **visuals):
    """A renderer that draws nothing on the plot but gives a legend entry its glyph. Bokeh 3.9 draws no
    legend glyph for a renderer without data, so it holds one NaN point (never shown, never auto-ranged)."""
    return getattr(p, kind)([float("nan")], [float("nan")], **visuals)


def legends_below(p, *groups, ncols=None, widest: list[str] | None = None):
    """One legend row per group under the plot: ``groups`` are lists of ``(label, [renderers])``.
    A row per kind of key (e.g. colour = dtype, dash = softmax) keeps each row short on a phone; ``widest`` as
    for :func:`style_legend`."""
    out = []
    for group in groups:
        legend = Legend(items=[LegendItem(label=label, renderers=list(r)) for label, r in group],
                        ncols=fit_ncols(widest or [label for label, _ in group], ncols or len(group)),
                        location="top_left")
        _style(legend, inside=False)
        p.add_layout(legend, "below")
        out.append(legend)
    return out


#: The focus ring on every control: in the panes that carry CSS, and put into every other shadow root by
#: web/a11y.py (Bokeh's buttons and the plots' Save button set "outline: none").
FOCUS_CSS = ":focus-visible { outline: 3px solid var(--sdpa-focus) !important; outline-offset: 2px; }"

CSS = """
body { font-size: 16px; line-height: 1.5; }
.sdpa-intro { max-width: 70em; }
.sdpa-intro p { margin: 0.3em 0; }
.sdpa-caption { color: var(--sdpa-muted); font-size: 14px; margin: 2px 0 10px 0; max-width: 70em; }
.sdpa-caption p { margin: 0; }
.sdpa-verdict { font-size: 17px; font-weight: 600; border-left: 5px solid var(--sdpa-accent);
                padding: 6px 12px; background: var(--sdpa-verdict-bg); }
.sdpa-notice { border-left: 5px solid #D55E00; background: var(--sdpa-notice-bg); padding: 6px 12px; }
table.sdpa-readouts { border-collapse: collapse; font-size: 15px; width: 100%; }
table.sdpa-readouts th, table.sdpa-readouts td { padding: 4px 8px; border-bottom: 1px solid var(--sdpa-rule-line);
                                                 text-align: right; }
table.sdpa-readouts th:first-child, table.sdpa-readouts td:first-child { text-align: left; }
table.sdpa-readouts caption { text-align: left; font-weight: 600; padding: 4px 0; color: inherit; }
table.sdpa-readouts th { font-weight: 600; }
table.sdpa-readouts th[scope=col] { white-space: nowrap; }
/* a 320 px phone: the table fits inside the tour's step card too (8 px each side took it 9 px past the screen) */
@media (max-width: 360px) { table.sdpa-readouts th, table.sdpa-readouts td { padding: 4px 4px; } }
/* a phone: column headings wrap between words and the figures take 14 px, so the dial's and the models' tables
   fit the screen's width instead of hiding columns behind a sideways scroll */
@media (max-width: 600px) {
  table.sdpa-readouts { font-size: 14px; }
  table.sdpa-readouts th[scope=col] { white-space: normal; }
  table.sdpa-readouts th, table.sdpa-readouts td { padding: 4px 5px; }
}
/* a table of more columns than a phone holds (sdpa-stack): each row a block, each figure on a line with its
   column's name (the cell's data-label), the heading row hidden (its names are on every cell) */
@media (max-width: 480px) {
  table.sdpa-stack tr:first-of-type:has(th[scope=col]) { display: none; }
  table.sdpa-stack tr, table.sdpa-stack th[scope=row], table.sdpa-stack td { display: block; width: auto; }
  table.sdpa-stack th[scope=row] { border-bottom: 0; padding-top: 8px; }
  table.sdpa-stack td { text-align: right; border-bottom: 0; padding: 1px 5px; }
  table.sdpa-stack td::before { content: attr(data-label); float: left; color: var(--sdpa-soft); }
  table.sdpa-stack tr { border-bottom: 1px solid var(--sdpa-rule-line); }
}
.sdpa-meaning { font-weight: normal; font-size: 13px; color: var(--sdpa-soft); }
.sdpa-swatch { display: inline-block; width: 0.9em; height: 0.9em; border-radius: 2px; vertical-align: -0.1em; margin-right: 4px; }
.sdpa-status { font-size: 15px; }
code { color: var(--sdpa-code); }
a { color: var(--sdpa-link); }
.sdpa-muted { color: var(--sdpa-muted); font-size: 14px; }
.sdpa-headline { font-size: 17px; font-weight: 400; line-height: 1.45; margin: 4px 0 2px 0; max-width: 46em; }
.sdpa-headline b { font-weight: 700; color: var(--sdpa-accent); }
.sdpa-details { font-size: 14px; color: var(--sdpa-muted); margin: 0 0 6px 0; max-width: 70em; }
.sdpa-details summary { cursor: pointer; color: var(--sdpa-soft); }
.sdpa-details p { margin: 4px 0; }
.sdpa-live-mark { display: inline-block; font-size: 13px; color: var(--sdpa-mark-fg); background: var(--sdpa-mark-bg);
                  border-radius: 3px; padding: 1px 8px; }
.sdpa-h1 { font-size: 1.15rem; font-weight: 700; margin: 2px 0; line-height: 1.3; }
.sdpa-about summary { cursor: pointer; font-size: 14px; color: var(--sdpa-link); }
.sdpa-about p { margin: 0.3em 0; font-size: 15px; max-width: 70em; }
""" + FOCUS_CSS


def _declarations(colours: dict) -> str:
    return " ".join(f"{name}: {value};" for name, value in colours.items())


#: The page's colours on the document's :root, and the dark set under the reader's preference.
COLOUR_CSS = """
:root { %(light)s }
@media (prefers-color-scheme: dark) {
  :root { color-scheme: dark; %(dark)s }
}
""" % {"light": _declarations(LIGHT), "dark": _declarations(DARK)}


#: Document-level CSS for the template's own (non-shadow) layout: on a phone the settings stack
#: above the views instead of squeezing them, and the page scrolls as a whole.
TEMPLATE_CSS = COLOUR_CSS + """
/* Room for Panel's busy spinner (measured: 52x30 px) before BokehJS draws it and while the static
   site swaps its pre-rendered page for the live one: on a phone it sits on a line of its own, and
   the header would grow and shrink by it (layout shifts). */
#header .pn-busy-container { min-width: 52px; min-height: 30px; }
/* the settings drawer's button says what it opens */
#sidebar-toggle::after { content: "All settings"; font-size: 14px; color: #fff; margin-left: 6px; }
#sidebar-toggle { display: inline-flex !important; align-items: center; border-color: rgba(255,255,255,.5); }
#sidebar-toggle:focus-visible, #header a:focus-visible { outline: 3px solid #fff !important; outline-offset: 2px; }
.sdpa-skip { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap;
             background: #fff; color: #1d3557; }
.sdpa-skip:focus { left: 8px; top: 8px; width: auto; height: auto; clip: auto; z-index: 2000; background: #fff;
                   color: #1d3557; padding: 6px 12px; }
/* ?embed=1 (web/page.py EMBED_JS): the view alone, for an <iframe> */
html.sdpa-embed #header, html.sdpa-embed #sidebar, html.sdpa-embed #sidebar-toggle { display: none !important; }
html.sdpa-embed #main { padding: 4px !important; }
html.sdpa-embed { --sdpa-h2-size: 1.05rem;   /* the view's heading (web/views/common.py) */
                  --sdpa-embed-lead: -1;    /* its question and headline first (EMBED_LEAD) */
                  --sdpa-embed-basis: 380px;    /* its figure and its controls side by side (common.beside) */
                  /* a tour step's card beside its view (web/views/tour.py EMBED_TOUR) */
                  --sdpa-embed-direction: row; --sdpa-embed-wrap: wrap;
                  --sdpa-embed-card-flex: 1 1 250px; --sdpa-embed-slot-flex: 2 1 400px;
                  --sdpa-embed-after-nav: 1;   /* Previous/Next under the choices, the feedback after them */ }
@media %(phone)s {
  html, body { height: auto !important; overflow: auto !important; }
  /* the template's #container is .vh-100.overflow-hidden: without this nothing below the fold scrolls */
  #container { height: auto !important; min-height: 100vh; overflow: visible !important; }
  #content { display: block !important; height: auto !important; overflow: visible !important; }
  #sidebar { max-width: 100%% !important; width: 100%% !important; height: auto !important;
             border-right: none !important; border-bottom: 1px solid #ccc; padding: 8px 4px !important; }
  #main { overflow: visible !important; padding: 6px 4px 16px 4px !important; width: 100%% !important; }
  /* one line of header on a phone: the short name (the page's question is its <h1>) */
  #header { flex-wrap: nowrap !important; padding-top: 4px !important; padding-bottom: 4px !important; }
  .navbar .app-header .title { font-size: 0 !important; white-space: nowrap !important; }
  .navbar .app-header .title::before { content: "SDPA Lab"; font-size: 1.05rem; }
  /* collapsed from the first paint (web/page.py's PHONE_SIDEBAR_JS then syncs Bootstrap's toggle) */
  #sidebar.collapse.show:not(.sdpa-phone-ready) { display: none !important; }
}
""" % {"phone": PHONE}

#: Button groups wrap onto several lines on a phone instead of running off the screen.
WRAP_BUTTONS = ":host .bk-btn-group { flex-wrap: wrap; } :host .bk-btn { flex: 1 1 auto; }"
