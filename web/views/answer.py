"""The answer, in one screen: why attention divides q·k by √d_k, in two sentences with the numbers at the reader's
d_k, one figure (the same random q and k through the softmax unscaled and scaled by 1/√d_k) and the one control
that shows it (d_k); then the reader chooses the tour, the lab or the questions. The bare address opens here."""
from __future__ import annotations

import html

import panel as pn
import param
from bokeh.models import LinearColorMapper

from ..claims import answer_conditions, answer_headline, answer_why
from ..options import VIEW_HEADINGS
from ..state import LabState
from ..training_state import TrainingState
from ..theme import CSS, HEATMAP, LEAD_STYLES, NAN_COLOR
from ..urlstate import apply_query, step_query
from .common import beside, caption, control, held, heading, set_html, show_headline
from .playground import heatmap_data, heatmap_pair, size_map

#: The two maps' titles: they say which is which and that each is one draw (the sentence's weights are means).
TITLES = {"none": "unscaled", "sqrt": "÷ √d_k"}     # short: a 320 px phone gives each map ~156 px


class Answer(pn.viewable.Viewer):
    """Two heatmaps of one draw's weights, unscaled and with 1/√d_k, the d_k slider beside them, the answer above
    them, and three ways on."""

    #: Its figures' main control and their claim (web/views/common.py: FIGURE_CLAIMS_DOC).
    MAIN_CONTROL = ("lab", "d_k", (16, 1024))
    CLAIM = ("Drag d_k up: on the fixed 0-1 colour scale the unscaled map collapses to one bright cell per row, and "
             "the map scaled by 1/√d_k stays spread.")

    lab = param.ClassSelector(class_=LabState, doc="The shared state.")
    train = param.ClassSelector(class_=TrainingState, doc="The training runs (a tour link resets them too).")

    def __init__(self, **params):
        super().__init__(**params)
        self.mapper = LinearColorMapper(palette=HEATMAP, low=0, high=1, nan_color=NAN_COLOR)
        self.maps, self.sources = heatmap_pair(self.mapper, TITLES, height=230)
        self.why = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10), stylesheets=[CSS])
        self.headline = pn.pane.HTML("", styles=LEAD_STYLES, sizing_mode="stretch_width", margin=(4, 10),
                                     stylesheets=[CSS])
        self.to_tour = pn.widgets.Button(label="Take the tour: 8 steps, you predict first →", color="primary",
                                         sizing_mode="stretch_width", max_width=360, styles={"flex": "1 1 260px"},
                                         stylesheets=[":host .bk-btn { white-space: normal; }"])
        self.to_lab = pn.widgets.Button(label="Explore it in the Playground →", color="primary", variant="outline",
                                        sizing_mode="stretch_width", max_width=300, styles={"flex": "1 1 220px"})
        self.to_questions = pn.widgets.Button(label="Short answers: Questions →", color="primary", variant="outline",
                                              sizing_mode="stretch_width", max_width=300, styles={"flex": "1 1 220px"})
        self.to_tour.on_click(lambda e: self.open_tour())
        self.to_lab.on_click(lambda e: setattr(self.lab, "view", "playground"))
        self.to_questions.on_click(lambda e: setattr(self.lab, "view", "questions"))
        self.lab.param.watch(self._update, ["answer"])
        self._update()

    def open_tour(self) -> None:
        """The tour's first step as its link sets it up (its picks so far kept)."""
        apply_query(step_query(1, self.lab.picks), self.lab, self.train)

    @held
    def _update(self, *_):
        ans = self.lab.answer
        if ans is None:
            return
        n = ans["n"]
        for side, p in self.maps.items():
            src = self.sources[side]
            w = ans["maps"][side]
            if len(src.data["w"]) == n * n:
                src.data.update(w=w.ravel())
            else:
                src.data = heatmap_data(w)
            size_map(p, n)
        set_html(self.why, f"<p style='margin:4px 0;font-size:16px;line-height:1.45'>"
                           f"{html.escape(answer_why(ans['sweep']), quote=False)}</p>")
        show_headline(self.headline, list(self.maps.values()), answer_headline(ans["sweep"], samples=ans["samples"]),
                      answer_conditions(n=n, samples=ans["samples"]), [])

    def __panel__(self):
        return pn.Column(
            heading(VIEW_HEADINGS["answer"]),
            self.why,
            beside(pn.Row(*self.maps.values(), sizing_mode="stretch_width"),     # side by side on a phone too
                   [control(self.lab, "d_k"),
                    caption("One random draw of q and k, 16 × 16. Drag d_k: the left map, the softmax of q·k as it "
                            "is, turns into one bright cell per row as d_k grows; the right one, the same q and k "
                            "divided by √d_k, stays spread.")],
                   basis=170, min_width=150),    # on a phone the two maps side by side, d_k under them
            self.headline,
            pn.FlexBox(self.to_tour, self.to_lab, self.to_questions, sizing_mode="stretch_width", margin=(4, 10)),
            caption("The one line of maths: for q and k with independent entries of mean 0 and variance σ², "
                    "q·k is a sum of d_k products of variance σ⁴ each, so Var(q·k) = d_k σ⁴ and Var(q·k / √d_k) = σ⁴ "
                    "at every d_k (Vaswani et al. 2017, footnote 4)."),
            sizing_mode="stretch_width")
