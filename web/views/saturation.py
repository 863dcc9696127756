"""Saturation and gradients: entropy, max weight and saturated rows vs d_k for every rule, and the
gradient each query gets at the current d_k."""
from __future__ import annotations

import html
import io

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource, Range1d

import sdpa_core as sc

from ..claims import coincident_rules, gradient_summary, saturation_headline, saturation_summary
from ..figure_labels import describe
from ..options import RULE_LABELS, SAMPLES_OPTIONS, VIEW_HEADINGS
from ..state import LabState
from ..theme import CSS, control_mark, THEORY_COLOR, LEAD_STYLES, VERDICT_STYLES, make_figure, style_legend
from .common import (ANSWER, Later, beside, caption, choice_slider, control, details_html, figure_row, heading, held, rule_color,
                     rule_dash, set_data, set_html, show_headline)
from .length import Length

PLOTS = {
    "entropy": ("Entropy of each attention row", "entropy (nats)", "top_right"),
    "max_weight": ("Largest weight in each row", "max weight", "top_left"),
    "saturated": ("Saturated rows (top weight > 0.99)", "share of rows", "top_left"),
}


#: The gradient plot's fixed log axis (its floor and top): from rows that learn nothing to σ = 8 at d_k = 4096.
GRADIENT_AXIS = (1e-10, 1e6)


class Saturation(pn.viewable.Viewer):
    """Monte-Carlo means with a ±1 std band for every rule; the current d_k and rule are marked."""

    #: Its figures' main control and their claim (web/views/common.py: FIGURE_CLAIMS_DOC).
    MAIN_CONTROL = ("lab", "d_k", (2, 4096))
    CLAIM = ("Drag d_k: the mark moves along the fixed sweeps, and without scaling the sorted per-query gradients spread down towards 0 on a fixed log axis.")

    lab = param.ClassSelector(class_=LabState, doc="The shared state.")

    def __init__(self, **params):
        super().__init__(**params)
        # one source per rule for its three metrics (columns "<metric> mean", "<metric> lo", "<metric> hi"):
        # each source is three models, created, sent and rebuilt in the browser when the view first shows
        self.sources = {r: ColumnDataSource({"d_k": [], "rule": [], **{f"{m} {c}": [] for m in PLOTS
                                                                      for c in ("mean", "lo", "hi")}})
                        for r in sc.RULE_NAMES}
        self.lines, self.marks, self.figs = {}, {}, {}
        self.renderers = {r: [] for r in sc.RULE_NAMES}   # every glyph of a rule, shown or hidden together
        self.uniform = ColumnDataSource({"d_k": [], "y": []})
        for metric, (title, ylabel, loc) in PLOTS.items():
            p = make_figure(title=title, x_label="d_k", y_label=ylabel, height=360, x_axis_type="log",
                            hover=[("rule", "@rule"), ("d_k", "@d_k"), ("mean", f"@{{{metric} mean}}{{0.000}}")])
            if metric == "entropy":
                p.line("d_k", "y", source=self.uniform, color=THEORY_COLOR, line_dash="dashed", line_width=1.5,
                       legend_label="uniform: log n")
            for rule in sc.RULE_NAMES:
                src = self.sources[rule]
                label = RULE_LABELS[rule]
                band = p.varea(x="d_k", y1=f"{metric} lo", y2=f"{metric} hi", source=src, fill_color=rule_color(rule),
                               fill_alpha=0.15, legend_label=label)
                self.lines[(metric, rule)] = p.line("d_k", f"{metric} mean", source=src, color=rule_color(rule),
                                                    line_width=2.5, line_dash=rule_dash(rule), legend_label=label)
                dots = p.scatter("d_k", f"{metric} mean", source=src, color=rule_color(rule), size=5, legend_label=label)
                self.renderers[rule] += [band, self.lines[(metric, rule)], dots]
            mark = control_mark(64)
            p.add_layout(mark)
            style_legend(p, below=True, ncols=2)
            self.marks[metric], self.figs[metric] = mark, p
        self.grad_sources = {r: ColumnDataSource({"rank": [], "norm": []}) for r in sc.RULE_NAMES}
        p = make_figure(title="Gradient reaching each query", x_label="query rows, largest first (share)",
                        y_label="‖∂L/∂qᵢ‖", height=360, y_axis_type="log", y_range=Range1d(*GRADIENT_AXIS),
                        hover=[("rule", "@rule"), ("share of rows", "@rank{0%}"), ("‖∂L/∂qᵢ‖", "@norm{0.00e0}")])
        self.grad_lines = {}
        for rule in sc.RULE_NAMES:
            self.grad_lines[rule] = p.line("rank", "norm", source=self.grad_sources[rule], color=rule_color(rule),
                                           line_width=2.5, line_dash=rule_dash(rule), legend_label=RULE_LABELS[rule])
            self.renderers[rule].append(self.grad_lines[rule])
        style_legend(p, below=True, ncols=2)
        self.grad_fig = p
        self.grad_note = pn.pane.HTML("", css_classes=ANSWER, sizing_mode="stretch_width", margin=(0, 10), styles=VERDICT_STYLES,
                                     stylesheets=[CSS])
        self.samples = choice_slider(self.lab, "samples", SAMPLES_OPTIONS, "Monte-Carlo samples per d_k",
                                     sizing_mode="stretch_width")
        self.download = pn.widgets.FileDownload(callback=self._csv, filename="sdpa_sweep.csv",
                                                label="Download the sweep as CSV", color="primary",
                                                variant="outline", sizing_mode="stretch_width", embed=False)
        self.note = pn.pane.HTML("", css_classes=ANSWER, sizing_mode="stretch_width", margin=(4, 10), styles=LEAD_STYLES, stylesheets=[CSS])
        self.length = Length(lab=self.lab)
        self.lab.param.watch(self._update, ["sweep"])
        self.lab.param.watch(self._update_note, ["sweep", "rule"])
        self.lab.param.watch(self._update_gradients, ["gradients", "rule"])
        self.lab.param.watch(self._update_marks, ["d_k", "rule"])
        self._update()
        self._update_note()
        self._update_gradients()
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
        for rule in sc.RULE_NAMES:
            data = {"d_k": d, "rule": [RULE_LABELS[rule]] * len(d)}
            for metric in PLOTS:
                m, sp = s.mean[metric][rule], s.spread[metric][rule]
                data.update({f"{metric} mean": m, f"{metric} lo": m - sp, f"{metric} hi": m + sp})
            set_data(self.sources[rule], data)
        self.uniform.data = {"d_k": d, "y": np.full(len(d), np.log(self.lab.n))}

    def _update_note(self, *_):
        s, lab = self.lab.sweep, self.lab
        if s is None:
            return
        d = s.d_k.astype(float)
        capped = (f" (capped from {lab.samples} to keep n² × samples bounded)"
                  if lab.sweep_samples < lab.samples else "")
        same = coincident_rules(d, sc.RULE_NAMES, alpha=lab.alpha, temperature=lab.temperature, n=lab.n)
        show_headline(self.note, list(self.figs.values()),
            saturation_headline(s, rule=lab.rule),
            f"At σ = {lab.sigma:g}, ρ = {lab.rho:g}, n = {lab.n}",
            [saturation_summary(s, n=lab.n, sigma=lab.sigma, rho=lab.rho),
             same,
             f"{lab.sweep_samples} random {lab.n}×{lab.n} attention matrices per d_k{capped}; "
             f"α = {lab.alpha:g}, QK-norm temperature {lab.temperature:g}, seed {lab.seed}."])

    @held
    def _update_gradients(self, *_):
        g, lab = self.lab.gradients, self.lab
        if g is None:
            return
        for rule, norms in g.items():
            y = np.sort(norms)[::-1]
            # one log axis at every setting: rows below its floor (exact zeros among them) sit on the floor
            set_data(self.grad_sources[rule], {"rank": (np.arange(len(y)) + 0.5) / len(y),
                                               "norm": np.clip(y, *GRADIENT_AXIS), "rule": [RULE_LABELS[rule]] * len(y)})
        said = gradient_summary(g, rule=lab.rule, d_k=lab.d_k, n=lab.n, rho=lab.rho)
        set_html(self.grad_note, gradient_note(said))
        describe([self.grad_fig], said)   # the figure's label says what its note says

    @held
    def _update_marks(self, *_):
        # no scaling, 1/√d_k and the chosen rule are drawn; the others are one legend click away
        shown = {"none", "sqrt", self.lab.rule}
        for rule, renderers in self.renderers.items():
            for r in renderers:
                if r.visible != (rule in shown):
                    r.visible = rule in shown
        for metric in PLOTS:
            self.marks[metric].location = self.lab.d_k
            for rule in sc.RULE_NAMES:
                self.lines[(metric, rule)].glyph.line_width = 4.5 if rule == self.lab.rule else 2.0
        for rule, line in self.grad_lines.items():
            line.glyph.line_width = 4.5 if rule == self.lab.rule else 2.0

    def __panel__(self):
        figs = [self.figs[m] for m in PLOTS]
        controls = [control(self.lab, "rule"), control(self.lab, "d_k"), control(self.lab, "rho"),
                    caption("The chosen rule is drawn thicker; the dashed line marks d_k.")]
        return pn.Column(
            heading(VIEW_HEADINGS["saturation"]),
            beside(figs, controls, basis=300),
            self.note,
            caption("The paper's claim, measured on random q and k: at σ = 1, without scaling the softmax saturates as "
                    "d_k grows (the entropy falls towards 0, the max weight rises towards 1, and most rows are saturated "
                    "by d_k = 4096); with a smaller σ it takes a larger d_k, or does not happen below 4096. For independent q and k (ρ = 0) 1/√d_k keeps "
                    "the three curves flat and 1/d_k (muP) drifts towards uniform attention; QK-norm bounds every logit "
                    "by 1/temperature, and with a fixed temperature its cosines shrink like 1/√d_k, so it flattens "
                    "too. At ρ > 0 the summary above says what each rule does at the current settings."),
            caption("Lines are Monte-Carlo means, bands ±1 standard deviation across samples. No scaling, 1/√d_k and "
                    "the chosen rule are drawn (the chosen one thicker); click a legend entry to show or hide the "
                    "others. The dashed vertical line marks the current d_k."),
            self.grad_note,
            figure_row(self.grad_fig),   # a bare figure here collapses the row above inside the tour
            caption("‖∂L/∂qᵢ‖ of about 128 query rows (several draws at the current n) for one fixed random upstream "
                    "gradient, sorted from largest to smallest, on a log axis. A saturated row passes almost no "
                    "gradient (its softmax Jacobian is nearly 0). For independent q and k at large d_k that is most "
                    "rows without scaling, while the rows that still learn carry the unscaled factor, so the total "
                    "is not small; at small d_k, or when 1/√d_k saturates too (ρ > 0), the summary above says what "
                    "holds instead. The axis is the same at every setting, so a drag of d_k moves the curves, not the "
                    "axis; rows below 10⁻¹⁰ (exact zeros among them) are drawn on its floor."),
            Later(pn.FlexBox(pn.Column(self.samples, caption("More samples: smoother curves, slower updates."),
                                       styles={"flex": "1 1 300px"}),
                             pn.Column(self.download, caption("Every rule's mean and spread of every metric at every d_k."),
                                       styles={"flex": "1 1 300px"}),
                             sizing_mode="stretch_width"),
                  self.length),
            sizing_mode="stretch_width")


def gradient_note(text: str) -> str:
    """The gradient sentence in two parts: what is starved, at once; the medians and totals (the numbers the
    share is measured against) behind "details", each said once. Escaped: "<1%" is text."""
    head, sep, rest = text.partition("; ")
    if not sep:
        return html.escape(text, quote=False)
    head = html.escape(head.rstrip(".") + ".", quote=False)
    return f"<p style='margin:0'>{head}</p>" + details_html("medians and totals", rest[0].upper() + rest[1:])
