"""Saturated at initialisation versus sharp after learning: each run's head at step 0 and now (a section of
"Train it"). Both can be one-hot; they differ in where the weight sits and in which weights still get gradient."""
from __future__ import annotations

import math

import panel as pn
import param
from bokeh.models import ColumnDataSource, FactorRange, Range1d, Span
from bokeh.transform import dodge

from ..claims import LOGIT_GROWTH_SOURCES, LOW_ENTROPY, entropy_share, fmt_grad
from ..training_state import TrainingState
from ..theme import CSS, OKABE_ITO, THEORY_COLOR, VERDICT_STYLES, WRAP_BUTTONS, legend_key, legends_below, make_figure
from .common import ANSWER, beside, caption, heading, held, rule_color, show_headline

#: While the runs play, the "now" bars follow every this many steps (each measure is about one training
#: step's work per run); a pause, a Step or a reset measures at once.
REFRESH_EVERY = 50
#: The gradient plot's log axis, the same at every d_k and step: a smaller norm is drawn at its floor (hovering
#: gives its value); trained heads' norms run from about 1e-5 (d_k = 1024, unscaled) to a few units.
FLOOR, TOP = 1e-12, 1e3
WHEN = ("step 0", "now")
#: Which gradient the second figure shows: the median example's, or the batch's mean-loss gradient.
GRADIENTS = {"median example": "example", "whole batch": "batch"}


class Sharpness(pn.viewable.Viewer):
    """Each run's attention entropy (share of log n_keys) and weight on the right key at step 0 and now, and the
    gradient reaching W_q beside the one reaching W_v; a measured headline, the logit growth split into lengths
    and angles, and where large models' logit growth comes from, with sources."""

    train = param.ClassSelector(class_=TrainingState, doc="The two runs.")
    gradient = param.Selector(default="example", objects=list(GRADIENTS.values()),
                              doc="The median example's gradient or the whole batch's.")

    def __init__(self, **params):
        super().__init__(**params)
        factors = [(f"run {k.upper()}", w) for k in ("a", "b") for w in WHEN]
        self.source = ColumnDataSource({k: [] for k in ("x", "colour", "alpha", "entropy", "nats", "target",
                                                        "label", "label_y", "q", "v", "q_text", "v_text")})
        p = make_figure(title="Attention entropy and weight on the right key", x_label="",
                        y_label="share (entropy: of log n)", height=300, x_range=FactorRange(*factors),
                        y_range=Range1d(0, 1.05),
                        hover=[("", "@x"), ("entropy", "@nats (@entropy{0%} of log n)"),
                               ("weight on the right key", "@target{0%}")])
        # the bar a little left of its category's centre, its printed height over it, the diamond to its right
        bar_x, target_x = dodge("x", -0.12, range=p.x_range), dodge("x", 0.3, range=p.x_range)
        bars = p.vbar(x=bar_x, top="entropy", width=0.55, source=self.source, fill_color="colour",
                      line_color="colour", fill_alpha="alpha")
        target = p.scatter(target_x, "target", source=self.source, marker="diamond", size=15, color=OKABE_ITO["black"])
        p.text(bar_x, "label_y", text="label", source=self.source, text_font_size="11px", text_align="center",
               text_baseline="bottom", text_color=OKABE_ITO["black"])
        p.add_layout(Span(location=LOW_ENTROPY, dimension="width", line_color=THEORY_COLOR, line_dash="dotted",
                          line_width=1.5))
        p.xgrid.visible = False
        p.xaxis.major_label_text_font_size = "12px"
        bar_key = legend_key(p, "scatter", marker="square", size=12, color=THEORY_COLOR, alpha=0.7)
        # one entry per row: side by side the two need about 330 px, wider than a 320 px phone's figure
        legends_below(p, [("entropy ÷ log n", [bars, bar_key])], [("weight on the right key", [target])])
        self.entropy_fig = p

        g = make_figure(title="Gradient reaching W_q and W_v", x_label="", y_label="gradient norm (log)",
                        height=300, x_range=FactorRange(*factors), y_axis_type="log", y_range=Range1d(FLOOR, TOP),
                        hover=[("", "@x"), ("W_q (where to look)", "@q_text"), ("W_v (what to read)", "@v_text")])
        g.segment(x0="x", y0="q", x1="x", y1="v", source=self.source, line_color=THEORY_COLOR, line_width=1.5)
        g.scatter("x", "v", source=self.source, marker="square", size=12, fill_color="colour", line_color="colour")
        # hollow, so a triangle over a square of about the same size leaves both visible
        g.scatter("x", "q", source=self.source, marker="triangle", size=13, fill_alpha=0, line_color="colour",
                  line_width=2)
        g.xgrid.visible = False
        g.xaxis.major_label_text_font_size = "12px"
        keys = [legend_key(g, "scatter", marker="square", size=11, color=OKABE_ITO["black"]),
                legend_key(g, "scatter", marker="triangle", size=11, fill_alpha=0, line_color=OKABE_ITO["black"],
                           line_width=2)]
        legends_below(g, [("W_v: what to read", [keys[0]])], [("W_q: where to look", [keys[1]])])
        self.gradient_fig = g

        self.which = pn.widgets.RadioButtonGroup.from_param(self.param.gradient, name="Gradient of", description=None,
                                                            options=GRADIENTS, color="primary", variant="outline",
                                                            sizing_mode="stretch_width", stylesheets=[WRAP_BUTTONS])
        self.run_btn = pn.widgets.Button(label="Train both runs", color="primary", variant="outline", width=170)
        self.run_btn.on_click(lambda e: setattr(self.train, "running", not self.train.running))
        self.summary = pn.pane.HTML("", css_classes=ANSWER, styles=VERDICT_STYLES, sizing_mode="stretch_width", margin=(4, 10),
                                    stylesheets=[CSS])
        self._measured_at = -REFRESH_EVERY
        self.train.param.watch(lambda *_: self.refresh(force=True), ["version"])
        self.train.param.watch(self._on_running, ["running"])
        self.param.watch(lambda *_: self.refresh(force=True), ["gradient"])
        self.refresh(force=True)

    def _on_running(self, *_):
        self.run_btn.label = "Pause both runs" if self.train.running else "Train both runs"
        if not self.train.running:
            self.refresh(force=True)

    @held
    def refresh(self, force: bool = False):
        """Measure both heads now and redraw (while playing, at most every ``REFRESH_EVERY`` steps)."""
        tr = self.train
        if not force and tr.running and tr.steps_done - self._measured_at < REFRESH_EVERY:
            return
        self._measured_at = tr.steps_done
        s = tr.sharpness()
        data: dict[str, list] = {k: [] for k in self.source.data}
        for k in ("a", "b"):
            colour = rule_color(tr.rule_a if k == "a" else tr.rule_b)
            for when, m in zip(WHEN, (s[k]["initial"], s[k]["now"])):
                q, v = self._gradients(m)
                data["x"].append((f"run {k.upper()}", when))
                data["colour"].append(colour)
                data["alpha"].append(0.35 if when == "step 0" else 0.9)
                data["entropy"].append(_finite(m["entropy_fraction"]))
                data["nats"].append(f"{m['entropy']:.3g} nats" if math.isfinite(m["entropy"]) else "NaN")
                data["target"].append(_finite(m["target_weight"]))
                data["label"].append(entropy_share(m["entropy_fraction"]))   # the bar's height, printed over it
                data["label_y"].append(_finite(m["entropy_fraction"]) + 0.02)
                data["q"].append(_floor(q))
                data["v"].append(_floor(v))
                data["q_text"].append(fmt_grad(q))
                data["v_text"].append(fmt_grad(v))
        self.source.data = data
        n = tr.trainers["a"].config.n_keys
        steps = max(s[k]["step"] for k in s)
        # short titles: a 320 px phone's figure is about 280 px wide (14 px bold)
        self.entropy_fig.title.text = f"Entropy, right-key weight (step {steps})"
        self.entropy_fig.yaxis.axis_label = f"share (entropy: of log {n})"
        self.gradient_fig.title.text = ("Median example's" if self.gradient == "example"
                                        else "Whole batch's") + f" gradient (step {steps})"
        show_headline(self.summary, [self.entropy_fig, self.gradient_fig], *tr.sharpness_summary())

    def _gradients(self, m: dict) -> tuple[float, float]:
        if self.gradient == "example":
            return m["q_path"], m["value_path"]
        return m["grad_norms"]["Wq"], m["grad_norms"]["Wv"]

    def __panel__(self):
        examples = len(self.train.trainers["a"].probe.target)
        controls = [pn.pane.HTML("<div style='font-size:14px'>Gradient of</div>", margin=(6, 10, 0, 10)), self.which,
                    self.run_btn,
                    caption(f"Both runs' heads, measured on the same {examples} held-out examples at step 0 and now. "
                            "The gradient of the median example shows what a typical row passes back; the whole "
                            "batch's is what the optimizer steps on.")]
        return pn.Column(
            heading("Saturated at initialisation, or sharp after learning?", level=3),
            beside([self.entropy_fig, self.gradient_fig], controls, basis=300),
            self.summary,
            caption("Both a saturated head and a sharp one put almost all of each row's weight on one key. A "
                    "saturated head does so at step 0, on whichever key its random weights favour: the softmax's slope "
                    "is almost 0 there, so a typical row passes little gradient to W_q and W_k (where to look; the "
                    "sentence above says how little at these settings), "
                    "while W_v (what to read at that key) still gets its share. A sharp head got there by learning, on the key that holds the "
                    "answer, which is what this task needs. Bars: entropy as a share of log n (faint: step 0); "
                    f"dotted: {LOW_ENTROPY:.0%} of log n, below which a head counts as saturated or sharp; "
                    "diamonds: the weight on the right key. Hollow triangles: W_q's gradient norm, squares: W_v's "
                    f"(drawn at {FLOOR:g} when smaller)."),
            caption(LOGIT_GROWTH_SOURCES),
            sizing_mode="stretch_width")


def _finite(x: float) -> float:
    return x if math.isfinite(x) else float("nan")


def _floor(x: float) -> float:
    return min(max(x, FLOOR), TOP) if math.isfinite(x) else float("nan")
