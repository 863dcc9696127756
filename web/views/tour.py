"""Guided tour: one step at a time, a question, a prediction, the live view set to the step's state,
what the numbers say, and one control to try (the steps are in web/tour.py)."""
from __future__ import annotations

import html
import json

import panel as pn
import param
from bokeh.models import CustomJS

from ..loop import call_later
from ..options import VIEW_LABELS
from ..state import LabState
from ..theme import CSS, PHONE, VERDICT_STYLES
from ..figure_labels import veil
from ..grading import grade, prepared_state, recap, split_feedback, step_state, why
from ..tour import SELF_CHECK, STEPS, decode_picks, encode_picks, on_the_learners_runs, shown_choices
from ..training_state import TrainingState
from ..urlstate import apply_query, step_query
from .common import ANSWER, HEADING, caption, details_html, heading, held, lay_out_later, one_model_walk, set_html

END = ("**That was the last step.** Here: what you found, with your predictions, and a three-question "
       "self-check. The Questions view answers the common questions in short, each with a button into the view "
       "that shows it; every view keeps the settings you leave it with.")
#: Embedded (?embed=1, web/theme.py), a 700 px frame holds the step's card and its view side by side, so the
#: step's figure is on the frame's first screen; elsewhere (no variables) the tour is one column.
EMBED_TOUR = {"tour": {"flex-direction": "var(--sdpa-embed-direction, column)", "flex-wrap": "var(--sdpa-embed-wrap, nowrap)"},
              "card": {"flex": "var(--sdpa-embed-card-flex, 0 1 auto)"},
              "slot": {"flex": "var(--sdpa-embed-slot-flex, 0 1 auto)", "min-width": "0"},
              # embedded (450 px high), Previous/Next come right under the choices, before the feedback: after a pick
              # they stay in the frame however long the feedback is
              "after_nav": {"order": "var(--sdpa-embed-after-nav, 0)"}}
#: Before the reader has picked, the step's view keeps its place but is not shown (its figure would give the answer
#: away: a bar at 87%, a dot at p = 0.91, an overflow mark); ``COVER_NOTE`` says where it will be.
#: Both properties: a caption's pane sets its own visibility, which opacity covers too; BokehJS keeps a style a new
#: dict leaves out, so the picked state names both.
UNPICKED, PICKED = {"visibility": "hidden", "opacity": "0"}, {"visibility": "visible", "opacity": "1"}
COVER_NOTE = "Pick an answer first: the step's figure, which measures it, appears once you have."
CARD_STYLES = {"border-left": "4px solid #0072B2", "background": "var(--sdpa-card-bg)", "padding": "4px 4px 8px 4px", "color": "var(--sdpa-text)"}


class Tour(pn.viewable.Viewer):
    """The step card above the step's live view; Previous/Next and a step list move between steps."""

    lab = param.ClassSelector(class_=LabState, doc="The shared state.")
    train = param.ClassSelector(class_=TrainingState, doc="The training runs.")
    view_for = param.Callable(doc="name -> the page's view object (shared with the full view).")

    def __init__(self, **params):
        super().__init__(**params)
        lab = self.lab
        self.title = pn.pane.HTML("", sizing_mode="stretch_width", margin=(4, 10, 0, 10))
        self.prev = pn.widgets.Button(label="← Previous step", color="primary", variant="outline", width=150,
                                      css_classes=[STEP_MOVER])
        self.next = pn.widgets.Button(label="Next step →", color="primary", width=150, css_classes=[STEP_MOVER])
        self.jump = pn.widgets.Select(name="Go to step", options={f"{i}. {s.title}": i for i, s in enumerate(STEPS, 1)},
                                      value=lab.step, sizing_mode="stretch_width", max_width=330,
                                      css_classes=[STEP_MOVER])
        self.prev.on_click(lambda e: self.go(self.lab.step - 1))
        self.next.on_click(lambda e: self.go(self.lab.step + 1))
        self.jump.param.watch(lambda e: self.go(e.new), ["value"])
        # a new step opens at its top: STEP_SCROLL_JS (install_step_scroll) scrolls to this card
        self.card = pn.Column(sizing_mode="stretch_width", margin=(0, 10, 8, 10), styles={**CARD_STYLES, **EMBED_TOUR["card"]},
                              stylesheets=[CSS, CARD_CSS], css_classes=[STEP_CARD])
        self.question = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10))
        self.predict = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10))
        # on a 320 px phone the three choices and the long "Leave the tour here: ..." label are wider than the
        # step card: the choices wrap to a second line, the label to two
        self.choices = pn.widgets.RadioBoxGroup(name="Your prediction", options={}, value=None, inline=True,
                                                margin=(0, 10, 0, 20), css_classes=[STEP_CHOICES],
                                                stylesheets=[":host .bk-input-group.bk-inline { flex-wrap: wrap; }"])
        # the first pick is final: it is what the recap scores; the view is free to explore after it
        self.choices.param.watch(self._lock, ["value"])
        self.choices.param.watch(self._update_feedback, ["value"])
        self.feedback = pn.pane.HTML("", styles={**VERDICT_STYLES, **EMBED_TOUR["after_nav"]}, sizing_mode="stretch_width",
                                     margin=(4, 10), visible=False, stylesheets=[CSS])
        self.now_try = caption("", visible=False)
        self.now_try.styles = {**self.now_try.styles, **EMBED_TOUR["after_nav"]}
        self.cover_note = caption(COVER_NOTE, visible=True)
        self.leave = pn.widgets.Button(label="Leave the tour here →", color="light", sizing_mode="stretch_width",
                                       max_width=330, styles={"flex": "1 1 240px"},
                                       stylesheets=[":host .bk-btn { white-space: normal; }"])
        self.leave.on_click(lambda e: setattr(self.lab, "view", STEPS[self.lab.step - 1].view))
        self.slot = pn.Column(sizing_mode="stretch_width", styles={**EMBED_TOUR["slot"], **UNPICKED})
        self.picks: dict[int, int] = {}     # step -> the first prediction made there, for the recap (and lab.picks)
        self._switching = False
        self._veiled = None                  # the step's view, shown inside the tour (its heading hidden)
        self.recap = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10), stylesheets=[CSS])
        self.checks = [self._check_card(c) for c in SELF_CHECK]
        # drawn on the last step only (a hidden layout still puts its labels in the page)
        self._end = [heading("What you found"), caption(END), self.recap, heading("Self-check", level=3),
                     *(card for card, _, _ in self.checks)]
        self.end = pn.Column(sizing_mode="stretch_width")
        self._shown_step = None
        self._ahead = None                   # the one-shot callback that lays out the next step's view
        lab.param.watch(self._take_picks, ["picks"])
        lab.param.watch(self._show_step, ["step", "view"])
        results = ["playground", "sweep", "dial", "gradients", "alignment", "precision", "real_model", "d_k",
                   "order"]
        lab.param.watch(self._update_feedback, [r for r in results if r in lab.param])
        self.train.param.watch(self._update_feedback, ["status"])
        self.train.param.watch(self._update_recap, ["status"])
        self._show_step()

    def _check_card(self, check):
        """One self-check question: its choices, locked once answered, graded at the question's own settings."""
        choices = pn.widgets.RadioBoxGroup(name=check.predict, options={}, value=None, inline=True,
                                           margin=(0, 10, 0, 20))
        choices.param.update(options=dict(shown_choices(check)), value=None)   # given at once, the first is picked
        out = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10))

        def reveal(event):
            right, text = grade(check, event.new, *step_state(check))   # its own settings, not the page's
            choices.disabled = event.new is not None
            mark = {True: "✓ ", False: "✗ ", None: ""}[right]
            set_html(out, f"<div role='status' aria-live='polite'>{html.escape(mark + text, quote=False)}</div>"
                     if event.new is not None else "")

        choices.param.watch(reveal, ["value"])
        card = pn.Column(pn.pane.HTML(f"<p style='margin:4px 0;font-size:15px'>{html.escape(check.predict)}</p>",
                                      sizing_mode="stretch_width", margin=(0, 10)),
                         choices, out, sizing_mode="stretch_width", margin=(0, 10, 8, 10), styles=CARD_STYLES)
        return card, choices, out

    def go(self, step: int) -> None:
        """Open ``step`` as the tour sets it up: its settings, every other setting at its default."""
        step = min(max(int(step), 1), len(STEPS))
        if step != self.lab.step or self.lab.view != "tour":
            # the step's results as prepare_ahead computed them at its settings, when it did
            with one_model_walk(), self.lab.results_from(prepared_state(STEPS[step - 1])):
                apply_query(step_query(step, encode_picks(self.picks)), self.lab, self.train)

    def _take_picks(self, *_) -> None:
        """The picks the address holds (a reload, Back, Forward) join the ones made here (the first pick of a
        step stays), and the address then holds them all: a pick is never lost and never offered again."""
        self._join_picks()
        merged = encode_picks(self.picks)
        if self.lab.picks != merged:
            self.lab.picks = merged
        i = self.lab.step
        if self.lab.view == "tour" and self._shown_step == i and i in self.picks and self.choices.value != self.picks[i]:
            self._switching = True
            try:
                self.choices.param.update(value=self.picks[i], disabled=True)
            finally:
                self._switching = False
            if self._veiled is not None:
                show_parts(self._veiled, heading=False, answers=True)
            self._cover(False)
            self._update_feedback()
            self._update_recap()

    def _join_picks(self) -> None:
        """The address's picks (``lab.picks``) into this session's; where both have one, the first made stays."""
        for i, k in decode_picks(self.lab.picks).items():
            self.picks.setdefault(i, k)

    @held
    def _show_step(self, *_):
        lab = self.lab
        if lab.view != "tour":
            if self._veiled is not None:   # the full view shows its heading and everything it measured
                show_parts(self._veiled, heading=True, answers=True)
            self._veiled = self._shown_step = None
            return
        i = lab.step
        step = STEPS[i - 1]
        self._join_picks()          # a link's picks (a reload) before the step is drawn
        if self._shown_step != i:
            self._shown_step = i
            self.title.object = (f"<div style='font-size:14px;color:var(--sdpa-muted)'>Guided tour · step {i} of {len(STEPS)}</div>"
                                 f"<h2 style='margin:2px 0;font-size:1.3rem;font-weight:700;line-height:1.3'>"
                                 f"{html.escape(step.title)}</h2>")
            self.question.object = f"<p style='margin:4px 0;font-size:15px'>{html.escape(step.question)}</p>"
            self.predict.object = (f"<p style='margin:4px 0;font-size:15px'><b>Predict first:</b> "
                                   f"{html.escape(step.predict)}</p>")
            self._switching = True
            try:
                picked = self.picks.get(i)
                self.choices.param.update(options=dict(shown_choices(step)), value=picked, disabled=picked is not None)
            finally:
                self._switching = False
            self.now_try.object = step.now_try
            self.leave.name = self.leave.label = f"Leave the tour here: the {VIEW_LABELS[step.view]} view →"
            self.prev.disabled = i == 1
            self.next.disabled = i == len(STEPS)
            if self.jump.value != i:
                self.jump.value = i
            old, layout = self._veiled, self.view_for(step.view)
            show_parts(layout, heading=False, answers=i in self.picks)   # before it is shown: nothing flashes up
            self._cover(i not in self.picks)
            lay_out_later(layout)           # what lies below the step's figures follows in a patch of its own
            self.slot.objects = [layout]
            if old is not None and old is not layout:
                show_parts(old, heading=True, answers=True)   # off the page now: as its own view shows it
            self._veiled = layout
            self.end.objects = self._end if i == len(STEPS) else []
            self._lay_out_next()
        self._update_feedback()
        self._update_recap()

    def _lay_out_next(self) -> None:
        """Prepare the next step (:meth:`prepare_ahead`) while the reader reads this one: once, ``AHEAD_MS``
        after the step is shown, and only if the reader is still on it."""
        if self._ahead is not None:
            self._ahead()
            self._ahead = None
        i = self.lab.step
        if i >= len(STEPS):
            return

        def build():
            self._ahead = None
            if self.lab.view == "tour" and self.lab.step == i:
                self.prepare_ahead(i)
        self._ahead = call_later(AHEAD_MS, build)

    def prepare_ahead(self, i: int) -> None:
        """What "Next step" from step ``i`` would otherwise do at the click:
        - lay out the next step's view (``view_for``, kept once built): building a view's figures was half of
          the Python time of a step (0.3 of 0.6 s in CPython for the saturation view, step 4);
        - grade this step and the next at their own settings (``step_state``, kept once computed): the last
          step's recap grades every step, and computing them all at its click was ~0.35 of its ~0.8 s in
          the worker."""
        self.view_for(STEPS[i].view)
        for step in STEPS[i - 1:i + 1]:
            if not on_the_learners_runs(step):
                step_state(step)

    def _lock(self, event):
        if self._switching or event.new is None:
            return
        self.picks.setdefault(self.lab.step, event.new)   # the first pick is the one the recap scores
        self.choices.disabled = True
        self._cover(False)
        self.lab.picks = encode_picks(self.picks)          # in the address: a reload keeps it
        if self._veiled is not None:
            show_parts(self._veiled, heading=False, answers=True)
        self._update_recap()

    def _cover(self, covered: bool) -> None:
        """The step's view hidden in its place until the pick (``UNPICKED``), with the note that says so."""
        styles = {**EMBED_TOUR["slot"], **(UNPICKED if covered else PICKED)}
        if self.slot.styles != styles:
            self.slot.styles = styles
        if self.cover_note.visible != covered:
            self.cover_note.visible = covered

    def _update_recap(self, *_):
        if self.lab.view != "tour" or self.lab.step != len(STEPS):
            return
        items = "".join("<li><b>{}</b>: {}</li>".format(*(html.escape(part, quote=False) for part in line.split(": ", 1)))
                        for line in recap(self.picks, self.lab, self.train))
        answer = why()
        said = f"<p style='margin:4px 0 8px;font-size:15px;line-height:1.45'>{html.escape(answer, quote=False)}</p>" if answer else ""
        set_html(self.recap, f"{said}<ul style='list-style:none;padding-left:0;margin:4px 0;font-size:15px;"
                             f"line-height:1.45'>{items}</ul>")

    def _update_feedback(self, *_):
        if self.lab.view != "tour":
            return
        step = STEPS[self.lab.step - 1]
        picked = self.choices.value
        answered = picked is not None
        if self.feedback.visible != answered:
            self.feedback.visible = answered
        if self.now_try.visible != answered:
            self.now_try.visible = answered
        right, text = grade(step, picked, self.lab, self.train)
        mark = {True: "✓ ", False: "✗ ", None: ""}[right]
        shown, more = split_feedback(mark + text)   # about 3 phone lines; the rest behind "details"
        out = f"<div role='status' aria-live='polite'>{html.escape(shown, quote=False)}</div>"
        if more:
            out += details_html("details", more)
        set_html(self.feedback, out)

    def __panel__(self):
        # a compact card, so that on a phone the step's figure and the control it names share the first screen
        # with the question: Previous/Next on one row under the choices; the feedback and "Now try" once the
        # reader has picked; the step list and "Leave the tour" after the step's view
        nav = pn.FlexBox(self.prev, self.next, sizing_mode="stretch_width", align_items="center")
        self.card.objects = [self.title, self.question, self.predict, self.choices, self.cover_note, self.feedback,
                             self.now_try, nav]
        more = pn.FlexBox(self.jump, self.leave, sizing_mode="stretch_width", align_items="end",
                          margin=(0, 10, 8, 10))
        return pn.Column(self.card, self.slot, more, self.end, sizing_mode="stretch_width", styles=EMBED_TOUR["tour"])


def answer_panes(layout) -> list:
    """Every pane in a view's layout that states a measured number (``ANSWER``)."""
    return [pane for pane in layout.select(pn.pane.HTML) if ANSWER[0] in (pane.css_classes or [])]


def show_parts(layout, *, heading: bool, answers: bool) -> None:
    """Show or hide a view's own heading (the first object of its layout) and its ``ANSWER`` panes. Inside the
    tour the step's title is the heading, and until the reader has predicted nothing states a measured
    number: the prediction is made from the question and the figure, not read off the page."""
    parts = [(pane, answers) for pane in answer_panes(layout)]
    if layout.objects and HEADING in (layout.objects[0].css_classes or []):
        parts.append((layout.objects[0], heading))
    for pane, shown in parts:
        if pane.visible != shown:
            pane.visible = shown
    veil([pane.object for pane in layout.select(pn.pane.Bokeh)], hidden=not answers)   # the labels say it too


#: Scrolls the page to the step card's top: Panel's header bar is not sticky, so the card's own top is
#: the step's.
#: The CSS classes of the tour's card and of the controls that open another step (web/views/tour.py).
STEP_CARD, STEP_MOVER = "sdpa-step-card", "sdpa-step-mover"
#: The CSS class of the step's choices: on a phone a pick scrolls them to the top of the screen, so that the feedback
#: under them, the step's figure and the control "Now try" names share the screen the reader sees next.
STEP_CHOICES = "sdpa-step-choices"

#: A new step opens at its top, in the browser at the click or the pick (no round trip): a phone kept the
#: old scroll position and opened the next step in its middle. One listener on the document, not Panel's
#: js_on_click/jscallback: each of those is a link Panel looks for in the whole document (~1,000 models
#: at the saturation step) at every layout change, about an eighth of a step's time in the worker.
STEP_SCROLL_JS = """
if (!window.__sdpaStepScroll) {
  window.__sdpaStepScroll = true;
  const CARD = %(card)s, MOVER = %(mover)s, CHOICES = %(choices)s, PHONE = %(phone)s;
  const has = (el, cls) => el != null && el.classList != null && el.classList.contains(cls);
  function card() {                 // the card's view, through Bokeh's views (the page is in shadow roots)
    const stack = [...((window.Bokeh && Bokeh.index && Bokeh.index.roots) || [])];
    while (stack.length) {
      const v = stack.pop();
      if (v.el != null && has(v.el, CARD)) return v.el;
      stack.push(...(v.child_views || []));
    }
    return null;
  }
  const follow = (event) => {      // a click on a step button, or a pick in the step list (both composed)
    const picked = event.type === 'input' && event.composedPath().find((el) => has(el, CHOICES));
    if (picked) {                    // a prediction, on a phone: its choices to the top, the feedback and figure below
      if (window.matchMedia(PHONE).matches) picked.scrollIntoView({block: 'start', behavior: 'instant'});
      return;
    }
    if (!event.composedPath().some((el) => has(el, MOVER))) return;
    const el = card();
    if (el != null) el.scrollIntoView({block: 'start', behavior: 'instant'});
  };
  document.addEventListener('click', follow, true);
  document.addEventListener('input', follow, true);
}
"""


def install_step_scroll(doc) -> None:
    """Attach STEP_SCROLL_JS to a Bokeh document (no-op when there is none)."""
    if doc is not None:
        doc.js_on_event("document_ready", CustomJS(code=STEP_SCROLL_JS % {
            "card": json.dumps(STEP_CARD), "mover": json.dumps(STEP_MOVER), "choices": json.dumps(STEP_CHOICES),
            "phone": json.dumps(PHONE)}))


#: How long after a step is shown the next step's view is laid out (the tour's ``_lay_out_next``): after the step's
#: own figures are drawn, while the reader reads its question (a view takes 0.2-1 s of the worker to build).
AHEAD_MS = 1500
#: Tighter spacing inside the step card on a phone: its question, its choices and Next fit above the figure.
CARD_CSS = f"@media {PHONE} {{ :host {{ padding: 2px 2px 6px 2px !important; }} }}"

