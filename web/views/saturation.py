"""Saturation and gradients: entropy, max weight and gradient health vs d_k for every rule."""
from __future__ import annotations

import io

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource, Span

import sdpa_core as sc

from ..state import RULE_LABELS, SAMPLES_OPTIONS, LabState
from ..theme import CSS, MARK_COLOR, RULE_COLORS, RULE_DASH, THEORY_COLOR, make_figure, style_legend
from .common import caption, figure_row, heading, held

PLOTS = {
    "entropy": ("Entropy of each attention row", "entropy (nats)", "top_right"),
    "max_weight": ("Largest weight in each row", "max weight", "top_left"),
    "gradient_health": ("Gradient health: size of the softmax Jacobian", "‖diag(p) − ppᵀ‖", "bottom_left"),
}


class Saturation(pn.viewable.Viewer):
    """Monte-Carlo means with a ±1 std band for every rule; the current d_k and rule are marked."""

    lab = param.ClassSelector(class_=LabState, doc="The shared state.")

    def __init__(self, **params):
        super().__init__(**params)
        self.sources = {m: {r: ColumnDataSource({"d_k": [], "mean": [], "lo": [], "hi": []}) for r in sc.RULE_NAMES}
                        for m in PLOTS}
        self.lines, self.marks, self.figs = {}, {}, {}
        self.uniform = ColumnDataSource({"d_k": [], "y": []})
        for metric, (title, ylabel, loc) in PLOTS.items():
            p = make_figure(title=title, x_label="d_k", y_label=ylabel, height=360, x_axis_type="log",
                            hover=[("rule", "@rule"), ("d_k", "@d_k"), ("mean", "@mean{0.000}")])
            if metric == "entropy":
                p.line("d_k", "y", source=self.uniform, color=THEORY_COLOR, line_dash="dashed", line_width=1.5,
                       legend_label="uniform: log n")
            for rule in sc.RULE_NAMES:
                src = self.sources[metric][rule]
                label = RULE_LABELS[rule]
                p.varea(x="d_k", y1="lo", y2="hi", source=src, fill_color=RULE_COLORS[rule], fill_alpha=0.15,
                        legend_label=label)
                self.lines[(metric, rule)] = p.line("d_k", "mean", source=src, color=RULE_COLORS[rule], line_width=2.5,
                                                    line_dash=RULE_DASH[rule], legend_label=label)
                p.scatter("d_k", "mean", source=src, color=RULE_COLORS[rule], size=5, legend_label=label)
            mark = Span(location=64, dimension="height", line_color=MARK_COLOR, line_dash="dashed", line_width=1.5)
            p.add_layout(mark)
            style_legend(p, below=True, ncols=3)
            self.marks[metric], self.figs[metric] = mark, p
        self.samples = pn.widgets.DiscreteSlider.from_param(self.lab.param.samples, options=SAMPLES_OPTIONS,
                                                            name="Monte-Carlo samples per d_k", sizing_mode="stretch_width")
        self.download = pn.widgets.FileDownload(callback=self._csv, filename="sdpa_sweep.csv",
                                                label="Download the sweep as CSV", color="primary",
                                                variant="outline", sizing_mode="stretch_width", embed=False)
        self.note = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10), css_classes=["sdpa-caption"], stylesheets=[CSS])
        self.lab.param.watch(self._update, ["sweep"])
        self.lab.param.watch(self._update_marks, ["d_k", "rule"])
        self._update()
        self._update_marks()

    def _csv(self):
        s = self.lab.sweep
        lab = self.lab
        header = (f"# sdpa_core.sweep n={lab.n} samples={lab.sweep_samples} sigma={lab.sigma:g} rho={lab.rho:g} "
                  f"alpha={lab.alpha:g} temperature={lab.temperature:g} seed={lab.seed}\n")
        return io.StringIO(header + (s.to_csv() if s is not None else ""))

    @held
    def _update(self, *_):
        s = self.lab.sweep
        if s is None:
            return
        d = s.d_k.astype(float)
        for metric in PLOTS:
            for rule in sc.RULE_NAMES:
                m, sp = s.mean[metric][rule], s.spread[metric][rule]
                self.sources[metric][rule].data = {"d_k": d, "mean": m, "lo": m - sp, "hi": m + sp,
                                                   "rule": [RULE_LABELS[rule]] * len(d)}
        self.uniform.data = {"d_k": d, "y": np.full(len(d), np.log(self.lab.n))}
        lab = self.lab
        capped = (f" (capped from {lab.samples} to keep n² × samples bounded)"
                  if lab.sweep_samples < lab.samples else "")
        self.note.object = (f"{lab.sweep_samples} random {lab.n}×{lab.n} attention matrices per d_k{capped}; "
                            f"σ = {lab.sigma:g}, ρ = {lab.rho:g}, α = {lab.alpha:g}, QK-norm temperature "
                            f"{lab.temperature:g}, seed {lab.seed}.")

    @held
    def _update_marks(self, *_):
        for metric in PLOTS:
            self.marks[metric].location = self.lab.d_k
            for rule in sc.RULE_NAMES:
                self.lines[(metric, rule)].glyph.line_width = 4.5 if rule == self.lab.rule else 2.0

    def __panel__(self):
        figs = figure_row(*(self.figs[m] for m in PLOTS), basis=360)
        return pn.Column(
            heading("Saturation and gradients"),
            caption("The paper's claim, measured: without scaling the softmax saturates as d_k grows (entropy → 0, "
                    "max weight → 1) and its Jacobian, the only path for gradient to reach q and k, shrinks towards 0. "
                    "1/√d_k keeps all three flat; 1/d_k (muP) drifts towards uniform attention on random vectors; QK-norm "
                    "bounds every logit by 1/temperature, and on random vectors its cosines shrink like 1/√d_k."),
            self.note,
            figs,
            caption("Lines are Monte-Carlo means, bands ±1 standard deviation across samples; the chosen rule is drawn "
                    "thicker and the dashed vertical line marks the current d_k. Click a legend entry to hide a rule."),
            pn.FlexBox(pn.Column(self.samples, caption("More samples: smoother curves, slower updates."),
                                 styles={"flex": "1 1 300px"}),
                       pn.Column(self.download, caption("Every rule's mean and spread of every metric at every d_k."),
                                 styles={"flex": "1 1 300px"}),
                       sizing_mode="stretch_width"),
            sizing_mode="stretch_width")
