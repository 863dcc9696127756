"""Small building blocks shared by the views: captions, readout formatting, the shared controls."""
from __future__ import annotations

import contextlib
import functools
import html
import re

import panel as pn
import param
from bokeh.models import CustomJSTickFormatter

from ..figure_labels import describe
from ..loop import live, next_turn, prerendering
from ..options import RULE_LABELS
from ..panel_internals import escaped_html, rendered_models
from ..settings import BY_KEY, SHARED_SETTINGS
from ..state import LabState
from ..training_state import TrainingState
from ..theme import CSS, EMBED_LEAD, PHONE, RULE_COLORS, RULE_DASH, THEORY_COLOR, WRAP_BUTTONS


def held(method):
    """Run a view's redraw inside ``pn.io.hold()``: every change it makes to the Bokeh models goes
    to the browser as one message (measured: about 40 ms less slider-to-plot latency)."""
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        with pn.io.hold():
            return method(*args, **kwargs)
    return wrapper


@contextlib.contextmanager
def one_model_walk():
    """Let Bokeh walk the document's models once, at the end of the block: otherwise every change to a
    layout's children walks all of them again (7 walks of ~1,050 models when tour step 4 swaps in its view,
    a third of the worker's time there), and each root the page's template adds one more. The walk happens
    even when the block fails."""
    doc = pn.state.curdoc
    models = getattr(doc, "models", None)
    if models is None:
        yield
        return
    frozen = models.freeze()
    frozen.__enter__()
    try:
        yield
    finally:
        frozen.__exit__(None, None, None)  # the walk, even after an exception (freeze() has no finally)


def set_data(source, data: dict) -> None:
    """``source.data = data``, sending only the columns that changed when every other column is equal to
    the one shown (a rule's label on each of its rows: 1,024 strings a saturation notch, encoded one by
    one, against two numeric columns sent as buffers). Any other change replaces the whole table."""
    old = source.data
    if set(old) != set(data):
        source.data = data
        return
    same = {c for c, v in data.items() if isinstance(v, list) and isinstance(old[c], list) and v == old[c]}
    if not same:
        source.data = data
    elif len(same) < len(data):  # else nothing changed
        source.data.update({c: v for c, v in data.items() if c not in same})


def set_html(pane: pn.pane.HTML, text: str) -> None:
    """Show new text in an HTML pane by setting it on the pane's Bokeh models directly.

    Assigning ``pane.object`` makes Panel re-send every property of the pane (its stylesheets
    included, which makes Bokeh re-walk the whole model graph) and recompute its theme; a readout
    only changes its text. ``pane.object`` is kept in step, silently, so a view shown again later
    is rendered with the current text."""
    if pane.object == text:
        return
    models = rendered_models(pane)
    if not models:
        pane.object = text
        return
    with param.discard_events(pane):
        pane.object = text
    escaped = escaped_html(pane, text)
    # under `panel serve` a write straight to a model must go through unlocked() as Panel's own do: a click handled
    # after an await (its widget's debounced change still pending, under load) ran outside the session's document
    # lock, and Bokeh refused the write ("_pending_writes should be non-None"), so "Next step" did nothing
    with pn.io.unlocked():
        for model in models:
            model.text = escaped


def choice_slider(obj: param.Parameterized, name: str, options, label: str, **kwargs) -> pn.widgets.IntSlider:
    """A slider over a list of values (``obj.<name>`` takes one of ``options``) whose shown value is
    computed in the browser.

    Panel's DiscreteSlider keeps its label in a separate text model that Python rewrites after every
    move, and sends ``value_throttled`` back on a second trip: two round trips per arrow key. This is
    one Bokeh slider over the options' positions whose label comes from a formatter in the browser,
    so a step is one message each way."""
    options = list(options)
    shown = [f"{o:g}" if isinstance(o, float) else str(o) for o in options]
    fmt = CustomJSTickFormatter(args={"options": shown},
                                code="const i = Math.round(tick); return i in options ? options[i] : String(tick);")

    def position(value) -> int:
        return min(range(len(options)), key=lambda i: abs(options[i] - value))

    slider = pn.widgets.IntSlider(label=label, start=0, end=len(options) - 1, value=position(getattr(obj, name)),
                                  format=fmt, **kwargs)

    def to_state(event):
        setattr(obj, name, options[event.new])

    def to_slider(event):
        slider.value = position(event.new)

    slider.param.watch(to_state, "value")
    obj.param.watch(to_slider, name)
    return slider


def caption(text: str, **kw) -> pn.pane.Markdown:
    """A one-sentence explanation under a plot or control (trusted text, no maths renderer needed)."""
    return pn.pane.Markdown(text, css_classes=["sdpa-caption"], stylesheets=[CSS], disable_math=True, margin=(0, 10, 8, 10),
                            sizing_mode="stretch_width", **kw)


# Headings carry their own size and weight: in Pyodide, panes created after the first render get
# Bootstrap's full stylesheet in their shadow root (h2 at 32px/500) where `panel serve` gives 18px/700.
# A view's heading is smaller embedded (--sdpa-h2-size, web/theme.py's TEMPLATE_CSS): one line in a 700 px frame,
# so the first figure and its control fit a 450 px one.
HEADING_STYLE = {2: "font-size:var(--sdpa-h2-size, 1.3rem);font-weight:700;line-height:1.3", 3: "font-size:1.1rem;font-weight:700;line-height:1.3"}


#: What a view with figures declares on its class, read by tests/web/test_figure_axes.py:
FIGURE_CLAIMS_DOC = """``MAIN_CONTROL = (owner, parameter, (low, high))``: the control its figures answer to ("lab" for
``LabState``, "train" for ``TrainingState``) and two values across its range; the test moves it from one to the
other and fails when an axis or colour scale of a figure follows the data that move changes. ``CLAIM``: what
the figures show as it moves. ``FITTED`` (optional): ``{(title's start, axis): why}`` for an axis that follows
its data on purpose."""

#: The CSS class of a pane that states what was measured: a headline, a summary, a readouts table. The tour
#: hides these in its step's view until the reader has predicted (web/views/tour.py).
ANSWER = ["sdpa-answer"]
#: The CSS class of a heading made by :func:`heading` (a view's layout starts with its own).
HEADING = "sdpa-heading"


def heading(text: str, level: int = 2, css_margin: str = "8px 0 2px 0", **kwargs) -> pn.pane.HTML:
    """A view's question (level 2: first when embedded, web/theme.py EMBED_LEAD) or a section's (3)."""
    kwargs = {"sizing_mode": "stretch_width", "margin": (4, 10, 0, 10), "css_classes": [HEADING],
              **({"styles": EMBED_LEAD} if level == 2 else {}), **kwargs}
    return pn.pane.HTML(f"<h{level} style='margin:{css_margin};{HEADING_STYLE[level]}'>{html.escape(text)}</h{level}>",
                        **kwargs)


def figure_row(*figs, basis: int = 340, min_width: int = 250) -> pn.FlexBox:
    """Figures side by side that wrap to one per line below ``basis`` px each (phones)."""
    return pn.FlexBox(*(pn.Column(f, sizing_mode="stretch_width", styles={"flex": f"1 1 {basis}px"}, min_width=min_width)
                        for f in figs), sizing_mode="stretch_width")


class Later(pn.Column):
    """A section below its view's first screen. The first time its view goes on the live page
    (:func:`lay_out_later`) it is laid out on the loop's next turn, in a patch of its own, so that the
    figures above it are drawn first (the saturation view's length section and its sweep options are
    248 of its 604 Bokeh models; the variance view's geometry and log-log plot, Train it's example and
    sharpness sections)."""

    def __init__(self, *objects, **params):
        super().__init__(*objects, sizing_mode="stretch_width", **params)
        self.placed = False       # it has been on the page, or is on its way there
        self.waiting: list = []   # its objects until the loop's next turn

    def select(self, selector=None):
        """As a Column's, the objects waiting for the next turn included (the tour hides and shows the
        measured numbers in them in between)."""
        found = super().select(selector)
        for obj in self.waiting:
            found += obj.select(selector)
        return found

    def defer(self) -> None:
        """Go on the page empty, and be filled on the loop's next turn (web/loop.py ``next_turn``); where
        the page is not live (its boot, a pre-render), go as it is. Once only."""
        if self.placed:
            return
        self.placed = True
        if self.objects and live():
            self.waiting, self.objects = list(self.objects), []
            if not next_turn(self._fill):
                self._fill()

    def _fill(self) -> None:
        objects, self.waiting = self.waiting, []
        with one_model_walk():
            self.objects = objects


def lay_out_later(layout) -> None:
    """Before ``layout`` goes on the page: its :class:`Later` sections that were not on it yet follow on
    the loop's next turn."""
    for section in layout.select(Later):
        section.defer()


def live_mark() -> pn.pane.HTML:
    """The first paint's "Preview" badge, on a line of its own above a section's controls (``beside``):
    they do not move anything yet. The pre-rendered page shows it; its numbers are this view's at its
    default settings, which the badge's tooltip and the boot panel say in words (build/templates/boot.js).
    The live document keeps the line, empty, so nothing moves when the badge goes, as soon as Python has
    drawn the link's own settings (boot.js adopts or redraws). Above the controls, not over a figure: a
    figure's title or a control's label would be under it at some width."""
    says = html.escape(PREVIEW_SAYS, quote=True)
    badge = f"<span class='sdpa-live-mark' role='status' title=\"{says}\" aria-label=\"{says}\">⟳ Preview</span>"
    # live: an empty span, not "": Bokeh leaves a default value out of the document, and boot.js adopts the
    # drawn document only when each of its attributes is still in the live one
    return pn.pane.HTML(badge if prerendering() else "<span></span>", stylesheets=[CSS], height=22, margin=(0, 10),
                        sizing_mode="stretch_width", styles={"text-align": "right"})


#: What the Preview badge means, for its tooltip and screen readers.
PREVIEW_SAYS = "Preview at this view's default settings: live in a moment"


#: Where a section's controls go among its figures (CSS ``order`` on the flex items' own hosts): after every
#: figure on a desktop, so they sit at the row's right; right after the first figure on a phone, so the
#: figure and what moves it share the first screen.
CONTROLS_ORDER = f":host {{ order: 3; }} @media {PHONE} {{ :host {{ order: 1; }} }}"


def beside(figures, controls: list, *, basis: int = 560, min_width: int = 250) -> pn.FlexBox:
    """One figure, or several (a list), with the controls that move them: to their right on a desktop,
    directly under the first figure on a phone (``basis``: each figure's width before the row wraps)."""
    figures = list(figures) if isinstance(figures, (list, tuple)) else [figures]
    # embedded (web/theme.py: --sdpa-embed-basis), at most 380 px each: a 700 px frame holds a figure and its controls
    flex = f"3 1 min({basis}px, var(--sdpa-embed-basis, {basis}px))"
    first = pn.Column(figures[0], sizing_mode="stretch_width", min_width=min_width, styles={"flex": flex})
    rest = [pn.Column(f, sizing_mode="stretch_width", min_width=min_width, styles={"flex": flex, "order": "2"})
            for f in figures[1:]]
    return pn.FlexBox(
        first, *rest,
        pn.Column(live_mark(), *controls, sizing_mode="stretch_width", min_width=220, styles={"flex": "1 1 240px"},
                  css_classes=["sdpa-controls"], stylesheets=[CSS, CONTROLS_ORDER]),
        sizing_mode="stretch_width")


#: The numbers a headline turns on: shares, "9.1 of 16" tokens, a std and the number it is compared with,
#: the d_k where something starts or stops.
EMPHASIS = re.compile(r"(&lt;1%|&gt;99%|\d+(?:\.\d+)?%|\d+(?:\.\d+)? of \d+|(?<=std )[\d.e+-]+\d|[\d.e+-]+\d(?= with )"
                      r"|(?<=from d_k = )\d+|(?<=up to d_k = )\d+)")


def details_html(summary: str, text: str) -> str:
    """Text behind an expander, as the headlines' details look (escaped: "<1%" stays text)."""
    return (f"<details class='sdpa-details'><summary>{html.escape(summary, quote=False)}</summary>"
            f"<p>{html.escape(text, quote=False)}</p></details>")


def headline_html(headline: str, conditions: str, details: list[str]) -> str:
    """A view's point in one sentence, its numbers emphasised, then the conditions it holds under and
    the rest of what was measured behind an expander (escaped text: "<1%" stays text)."""
    head = EMPHASIS.sub(r"<b>\1</b>", html.escape(headline, quote=False))
    more = "".join(f"<p>{html.escape(d, quote=False)}</p>" for d in details if d)
    return (f"<p class='sdpa-headline'>{head}</p><details class='sdpa-details'><summary>{html.escape(conditions)}"
            f"{' · details' if more else ''}</summary>{more}</details>")


def show_headline(pane: pn.pane.HTML, figs, headline: str, conditions: str, details: list[str]) -> None:
    """Show a section's headline (:func:`headline_html`) and name its figures with it for screen readers
    (web/figure_labels.py): each figure's label is its title, its axes and this sentence."""
    set_html(pane, headline_html(headline, conditions, details))
    describe(figs, headline)


def rule_color(rule: str) -> str:
    """The rule's colour in the page's palette (web/theme.py); grey for a rule registered in sdpa_core
    that has no colour there yet, so a new rule shows up instead of breaking the page."""
    return RULE_COLORS.get(rule, THEORY_COLOR)


def rule_dash(rule: str) -> str:
    """The rule's dash pattern (web/theme.py); "dashdot" for a rule without one."""
    return RULE_DASH.get(rule, "dashdot")


def swatch(rule: str) -> str:
    return f"<span class='sdpa-swatch' style='background:{rule_color(rule)}'></span>"


def rule_options() -> dict:
    """Select options: readable label -> rule name."""
    return {RULE_LABELS[r]: r for r in RULE_LABELS}


def control(lab: LabState, key: str):
    """A new widget for one shared setting, as web/settings.py declares it (its label names the setting alike
    everywhere). The settings drawer has one of each; a view puts beside its figure the two or three that move it.
    Sliders that trigger Monte-Carlo sweeps follow the throttled value (on release); d_k follows the drag,
    since every view updates cheaply for it."""
    s = BY_KEY[key]
    p = lab.param[s.param]
    if s.widget == "choices":
        return choice_slider(lab, s.param, list(s.steps), s.label, sizing_mode="stretch_width")
    if s.widget == "select":
        return pn.widgets.Select.from_param(p, name=s.label, options=rule_options(), sizing_mode="stretch_width",
                                            description=None)
    if s.widget == "checkbox":
        return pn.widgets.Checkbox.from_param(p, name=s.label)
    if s.widget == "buttons":
        return pn.widgets.RadioButtonGroup.from_param(p, label=s.label, options=list(p.objects), color="primary",
                                                      variant="outline", sizing_mode="stretch_width",
                                                      stylesheets=[WRAP_BUTTONS])
    if s.widget == "number":
        return pn.widgets.IntInput.from_param(p, name=s.label, sizing_mode="stretch_width")
    if s.widget == "int slider":
        return pn.widgets.IntSlider.from_param(p, name=s.label, throttled=True, sizing_mode="stretch_width")
    if s.widget == "slider":
        return pn.widgets.FloatSlider.from_param(p, name=s.label, step=s.step, throttled=True,
                                                 sizing_mode="stretch_width")
    raise ValueError(f"{key} is not a shared setting (web/settings.py gives it no widget)")


def shared_controls(lab: LabState, train: TrainingState | None = None) -> pn.Column:
    """The controls every view shares (sidebar), each with its caption (web/settings.py). A setting the
    current view does not use is disabled, and its caption says why."""
    w = {key: control(lab, key) for key in SHARED_SETTINGS}
    captions = {key: BY_KEY[key].caption for key in SHARED_SETTINGS}
    items = [heading("All settings", css_margin="4px 0", sizing_mode="fixed", margin=(0, 10))]
    notes = {}
    for key in SHARED_SETTINGS:
        if key == "dtype":
            items.append(pn.pane.HTML("<div style='font-size:14px'>dtype (playground arithmetic)</div>",
                                      margin=(6, 10, 0, 10)))
        notes[key] = caption(captions[key])
        items += [w[key], notes[key]]

    def follow_view(*_):
        unused = lab.unused_settings(train)
        for key in SHARED_SETTINGS:
            off = key in unused
            text = f"*Not used in this view.* {unused[key]}" if off else captions[key]
            if w[key].disabled != off:
                w[key].disabled = off
            if notes[key].object != text:
                notes[key].object = text

    lab.param.watch(follow_view, ["view", "step", "rule"])   # a tour step shows another view
    if train is not None:
        train.param.watch(follow_view, ["rule_a", "rule_b"])
    follow_view()
    col = pn.Column(*items, sizing_mode="stretch_width")
    col.widgets, col.notes = w, notes
    return col
