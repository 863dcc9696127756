"""Train it: two runs of sdpa_core's tiny attention model, identical except for the scaling rule."""
from __future__ import annotations

import io
import math

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource, Range1d, Span

from ..options import LR_OPTIONS, OPTIMIZER_LABELS, TRAIN_D_K_OPTIONS, TRAIN_RULE_LABELS, TRAIN_RULES, VIEW_HEADINGS
from ..training_state import TrainingState
from ..theme import LEAD_STYLES, OKABE_ITO, THEORY_COLOR, legend_key, legends_below, make_figure, style_legend
from ..claims import example_sentence
from ..figure_labels import describe
from .. import real_training
from .common import ANSWER, Later, beside, caption, choice_slider, figure_row, heading, held, rule_color
from .sharpness import Sharpness

RUN_DASH = {"a": "solid", "b": "dashed"}
TICK_MS = 120
#: Steps of both runs computed ahead when the view is first built outside the tour.
AHEAD = 50

#: The longest name a run's legend entry can take: its legends are laid out for it (theme.fit_ncols).
LONGEST_RULE_LABEL = max(TRAIN_RULE_LABELS.values(), key=len)


class Training(pn.viewable.Viewer):
    """Play / pause / step / reset, streaming loss and accuracy curves, and one example's attention."""

    #: Its figures' main control and their claim (web/views/common.py: FIGURE_CLAIMS_DOC).
    MAIN_CONTROL = ("train", "d_k", (16, 1024))
    CLAIM = ("Train at a larger d_k: the unscaled run's loss stays high against 1/√d_k's on fixed loss and accuracy axes.")

    train = param.ClassSelector(class_=TrainingState, doc="The two runs.")

    def __init__(self, **params):
        super().__init__(**params)
        tr = self.train
        self.curves = {k: ColumnDataSource({"step": [], "loss": [], "accuracy": []}) for k in ("a", "b")}
        # explicit ranges, grown as the runs stream in: an empty plot still has axes
        self.steps_range = Range1d(0, 100)
        self.loss_fig = make_figure(title="Training loss (cross-entropy)", x_label="step", y_label="loss", height=300,
                                    hover=[("step", "@step"), ("loss", "@loss{0.000}")], x_range=self.steps_range,
                                    y_range=Range1d(0, 2.6))
        self.acc_fig = make_figure(title="Batch accuracy", x_label="step", y_label="accuracy", height=300,
                                   hover=[("step", "@step"), ("accuracy", "@accuracy{0%}")], y_range=Range1d(0, 1.02),
                                   x_range=self.steps_range)
        self.loss_lines, self.acc_lines, self.keys = {}, {}, {}
        for k in ("a", "b"):
            self.loss_lines[k] = self.loss_fig.line("step", "loss", source=self.curves[k], line_width=2.5,
                                                    line_dash=RUN_DASH[k])
            self.acc_lines[k] = self.acc_fig.line("step", "accuracy", source=self.curves[k], line_width=2.5,
                                                  line_dash=RUN_DASH[k])
            # the curves start empty; these keys keep each legend entry's line visible before Play
            self.keys[k] = [legend_key(f, line_width=2.5, line_dash=RUN_DASH[k]) for f in (self.loss_fig, self.acc_fig)]
        for fig, lines, keys in ((self.loss_fig, self.loss_lines, 0), (self.acc_fig, self.acc_lines, 1)):
            legends_below(fig, [(f"run {k.upper()}", [lines[k], self.keys[k][keys]]) for k in ("a", "b")],
                          widest=[f"run {k}: {LONGEST_RULE_LABEL}" for k in "AB"])
        self.chance = Span(location=math.log(8), dimension="width", line_color=THEORY_COLOR, line_dash="dotted",
                           line_width=1.5)
        self.loss_fig.add_layout(self.chance)
        self.acc_fig.add_layout(Span(location=1 / 8, dimension="width", line_color=THEORY_COLOR, line_dash="dotted",
                                     line_width=1.5))
        self.example_source = ColumnDataSource({"x0": [], "x1": [], "a": [], "b": []})
        self.target_source = ColumnDataSource({"x": [], "y": []})
        p = make_figure(title="Attention of one fixed example", x_label="key j", y_label="weight", height=300,
                        hover=[("key", "@x0{0}"), ("run A", "@a{0.000}"), ("run B", "@b{0.000}")],
                        y_range=Range1d(0, 1.1))
        self.ex_bars = {
            "a": p.vbar(x="x0", top="a", width=0.4, source=self.example_source, legend_label="run A"),
            "b": p.vbar(x="x1", top="b", width=0.4, source=self.example_source, legend_label="run B",
                        hatch_pattern="/", hatch_color="white", hatch_alpha=0.6),
        }
        p.scatter("x", "y", source=self.target_source, marker="inverted_triangle", size=14, color=OKABE_ITO["black"],
                  legend_label="the key to find")
        p.xgrid.visible = False
        style_legend(p, below=True, ncols=2,   # three entries do not fit in one row on a phone
                     widest=[f"run {k}: {LONGEST_RULE_LABEL}" for k in "AB"] + ["the key to find"])
        self.example_fig = p

        runs = {TRAIN_RULE_LABELS[r]: r for r in TRAIN_RULES}
        self.rule_a = pn.widgets.Select.from_param(tr.param.rule_a, name="Run A: scaling rule", options=runs,
                                                   sizing_mode="stretch_width")
        self.rule_b = pn.widgets.Select.from_param(tr.param.rule_b, name="Run B: scaling rule", options=runs,
                                                   sizing_mode="stretch_width")
        self.optimizer = pn.widgets.RadioButtonGroup.from_param(tr.param.optimizer, name="Optimizer",
                                                                options={v: k for k, v in OPTIMIZER_LABELS.items()},
                                                                color="primary", variant="outline")
        self.lr = choice_slider(tr, "lr", LR_OPTIONS, "Learning rate", sizing_mode="stretch_width")
        self.d_k = choice_slider(tr, "d_k", TRAIN_D_K_OPTIONS, "d_k of the trained head", sizing_mode="stretch_width")
        self.seed = pn.widgets.IntInput.from_param(tr.param.seed, name="Seed (data and initial weights)",
                                                   sizing_mode="stretch_width")
        self.play = pn.widgets.Button(label="▶ Play", color="primary", width=110)
        self.step_btn = pn.widgets.Button(label="Step ×10", color="default", width=110)
        self.reset_btn = pn.widgets.Button(label="Reset", color="default", width=110)
        self.download = pn.widgets.FileDownload(callback=lambda: io.StringIO(tr.history_csv()),
                                                filename="sdpa_training.csv", label="Download curves as CSV",
                                                color="primary", variant="outline", embed=False, width=220)
        self.status = pn.pane.HTML("", css_classes=ANSWER, styles=LEAD_STYLES, sizing_mode="stretch_width", margin=(4, 10))
        self.play.on_click(self._toggle)
        self.step_btn.on_click(lambda e: (setattr(self, "_played", True), self._advance(10)))
        self.reset_btn.on_click(lambda e: tr.reset())
        tr.param.watch(self._on_reset, ["version"])
        tr.param.watch(self._on_running, ["running"])
        tr.param.watch(self._on_status, ["status"])
        self._callback = None
        self._cleanup_registered = False
        self.sharpness = Sharpness(train=tr)
        self._played = False       # the reader has pressed Play or Step (from then on a reset starts empty)
        self._ahead_cb = None      # computes the first steps after a moved setting, a tick at a time
        self._built = False
        self._on_reset()
        self._built = True

    # ---- animation ---------------------------------------------------------------------------
    def _toggle(self, *_):
        self._played = True
        self.train.running = not self.train.running

    def _on_running(self, *_):
        running = self.train.running
        self.play.label = "❙❙ Pause" if running else "▶ Play"
        if running and self.train.finished:
            self.train.running = False
            return
        if running and self._callback is None:
            # a periodic callback works under `panel serve` and in Pyodide alike (no threads)
            self._callback = pn.state.add_periodic_callback(self._tick, period=TICK_MS, start=True)
            if not self._cleanup_registered and pn.state.curdoc is not None:
                # a closed tab must not keep training on the server (a core for ~20 s otherwise)
                pn.state.on_session_destroyed(self._session_closed)
                self._cleanup_registered = True
        elif not running and self._callback is not None:
            self._callback.stop()
            self._callback = None

    def _session_closed(self, _context):
        self.train.running = False
        if self._callback is not None:
            self._callback.stop()
            self._callback = None

    def _tick(self):
        if not self.train.running:
            return
        self._advance(None)

    @held
    def _advance(self, steps):
        new = self.train.advance(steps, budget=0.04)
        for k, pts in new.items():
            if pts["step"]:
                self.curves[k].stream(pts)
        self._grow_ranges()
        self._update_example()
        self.sharpness.refresh(force=steps is not None)

    def _grow_ranges(self):
        tr = self.train
        steps = tr.steps_done
        if steps > self.steps_range.end:
            self.steps_range.end = min(float(max(100, steps * 1.5)), 1500.0)
        losses = [x for t in tr.trainers.values() for x in t.history["loss"][-50:] if math.isfinite(x)]
        top = max([tr.trainers["a"].chance_loss * 1.25, *losses])
        if top > self.loss_fig.y_range.end:
            self.loss_fig.y_range.end = top * 1.05

    def stop(self):
        """Stop the animation (used when the view is hidden or the session ends)."""
        self.train.running = False

    # ---- redraw ------------------------------------------------------------------------------
    @held
    def _on_reset(self, *_):
        tr = self.train
        for k in ("a", "b"):
            self.curves[k].data = {"step": [], "loss": [], "accuracy": []}
            color = rule_color(tr.rule_a if k == "a" else tr.rule_b)
            for line in (self.loss_lines[k], self.acc_lines[k], *self.keys[k]):
                line.glyph.line_color = color
            self.ex_bars[k].glyph.fill_color = self.ex_bars[k].glyph.line_color = color
            label = {"value": f"run {k.upper()}: {tr.label(k)}"}
            for fig in (self.loss_fig, self.acc_fig, self.example_fig):
                for item in fig.legend.items:
                    if item.renderers[0] in (self.loss_lines[k], self.acc_lines[k], self.ex_bars[k]):
                        item.label = label
        self.chance.location = tr.trainers["a"].chance_loss
        self.steps_range.end = 100
        self.loss_fig.y_range.end = tr.trainers["a"].chance_loss * 1.25
        self._update_example()
        self._on_status()
        self._on_running()
        self._run_ahead()

    def _run_ahead(self):
        """Train it opens on a run under way, not on empty plots: until the reader first presses Play or Step,
        the first AHEAD steps of both runs are computed, and Play goes on from there. When the view is built
        (its first paint too) they are computed at once (about 0.4 s of CPython at the defaults); after a moved
        setting, a tick at a time, so that the slider's own redraw is not held up (at d_k = 1024 the 50 steps
        took 2.4 s of the built site's worker, measured by benchmarks/bench_drag.py). Not inside the tour,
        whose training step asks for a prediction before any curve is shown."""
        tr = self.train
        if self._played or tr.steps_done != 0 or (tr.lab is not None and tr.lab.view != "training"):
            return
        if not self._built:
            self._advance(AHEAD)
        elif self._ahead_cb is None:
            self._ahead_cb = pn.state.add_periodic_callback(self._ahead_tick, period=TICK_MS, start=True)

    def _ahead_tick(self):
        tr = self.train
        if self._played or tr.running or tr.steps_done >= AHEAD:
            if self._ahead_cb is not None:
                self._ahead_cb.stop()
                self._ahead_cb = None
            return
        self._advance(min(AHEAD - tr.steps_done, tr.steps_within(0.04)))   # what fits a tick, up to AHEAD

    def _update_example(self):
        ex = self.train.example()
        wa, target = ex["a"]
        wb, _ = ex["b"]
        x = np.arange(len(wa))
        self.example_source.data = {"x0": x - 0.2, "x1": x + 0.2, "a": wa, "b": wb}
        self.target_source.data = {"x": [target], "y": [1.05]}
        describe([self.example_fig], example_sentence(float(wa[target]), float(wb[target]), target=target,
                                                      step=self.train.steps_done))

    def _on_status(self, *_):
        self.status.object = self.train.status
        describe([self.loss_fig, self.acc_fig], self.train.status)   # the runs' figures say where the runs are

    def __panel__(self):
        # Play first: on a phone the controls come right under the loss plot, and Play is what moves it
        controls = [pn.FlexBox(self.play, self.step_btn, self.reset_btn, sizing_mode="stretch_width"),
                    self.rule_a, self.rule_b, self.d_k, self.optimizer, self.lr, self.seed,
                    caption(f"The view opens with the first {AHEAD} steps run; press Play to go on. Both runs start "
                            "from the same weights and batches; only the rule differs. "
                            "Changing a setting resets them. Scale or initialisation? Pick “none, W_q init ÷ √d_k "
                            "(T5)” for one run and 1/√d_k for the other, then switch the optimizer.")]
        figs = [self.loss_fig, self.acc_fig]
        return pn.Column(
            heading(VIEW_HEADINGS["training"]),
            beside(figs, controls, basis=300),
            self.status,
            caption("A one-head attention model learns to retrieve: it sees 8 keys with class labels and a noisy copy "
                    "of one key as the query, and must output that key's label, which it can only do by attending to "
                    "it. Play trains a few steps every tick (at most 1500 steps); Step ×10 advances by hand; a run "
                    "whose loss becomes NaN or infinite stops with a message and the other keeps going. The optimizer's step "
                    "size applies to both runs; too large and a run diverges."),
            caption(real_training.toy_against_real()),
            self.download,
            caption("Loss and accuracy of each batch before its update; dotted lines are chance (log 8 and 1/8). "
                    "Run B is dashed."),
            Later(figure_row(self.example_fig),   # a bare figure here collapses the row above inside the tour
                  caption("The attention weights of one fixed example as training goes on; the triangle marks the key "
                          "that holds the answer. A healthy run moves its weight there."),
                  self.sharpness),
            sizing_mode="stretch_width")
