"""Sequence length: the top weight and the entropy of attention rows against n, where a fixed d_k scaling
fades and SSMax's s·ln n does not (a section of "Saturation & gradients")."""
from __future__ import annotations

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource, Range1d

import sdpa_core as sc

from ..claims import length_details, length_factors, length_headline
from ..options import LENGTH_SAMPLES, RULE_LABELS
from ..state import LabState
from ..theme import CSS, control_mark, THEORY_COLOR, VERDICT_STYLES, make_figure, style_legend
from .common import ANSWER, beside, caption, control, heading, held, rule_color, rule_dash, set_data, show_headline

#: What the two figures draw: metric -> (title, y label, y axis type).
PLOTS = {"top_weight": ("Top weight of a row", "top weight (log)", "log"),
         "entropy_ratio": ("Entropy as a share of log n", "entropy / log n", "linear")}
#: Each plot's y axis, the same at every d_k, σ and ρ: a top weight lies between 1/n (n up to 4096) and 1, an
#: entropy's share of log n between 0 and 1.
Y_RANGES = {"top_weight": (1.5e-4, 1.5), "entropy_ratio": (-0.02, 1.05)}


class Length(pn.viewable.Viewer):
    """Top weight and entropy / log n against n (log axis) for every rule of ``lab.length``; uniform attention
    (1/n and 1) dashed, the page's n marked."""

    lab = param.ClassSelector(class_=LabState, doc="The shared state.")

    def __init__(self, **params):
        super().__init__(**params)
        rules = (*dict.fromkeys(("none", "sqrt", "ssmax")), *(r for r in sc.RULE_NAMES if r not in ("none", "sqrt", "ssmax")))
        self.sources = {m: {r: ColumnDataSource({"n": [], "y": [], "rule": []}) for r in rules} for m in PLOTS}
        self.uniform = {m: ColumnDataSource({"n": [], "y": []}) for m in PLOTS}
        self.lines, self.marks, self.figs = {}, {}, {}
        for metric, (title, ylabel, y_type) in PLOTS.items():
            p = make_figure(title=title, x_label="sequence length n (keys per query)", y_label=ylabel, height=340,
                            x_axis_type="log", y_axis_type=y_type, y_range=Range1d(*Y_RANGES[metric]),
                            hover=[("rule", "@rule"), ("n", "@n"), ("mean", "@y{0.000}")])
            p.line("n", "y", source=self.uniform[metric], color=THEORY_COLOR, line_dash="dashed", line_width=1.5,
                   legend_label="uniform: 1/n" if metric == "top_weight" else "uniform: 1")
            for rule in rules:
                self.lines[(metric, rule)] = p.line("n", "y", source=self.sources[metric][rule], color=rule_color(rule),
                                                    line_width=2.5, line_dash=rule_dash(rule),
                                                    legend_label=RULE_LABELS[rule])
            mark = control_mark(16)
            p.add_layout(mark)
            style_legend(p, below=True, ncols=2)
            self.marks[metric], self.figs[metric] = mark, p
        self.summary = pn.pane.HTML("", css_classes=ANSWER, styles=VERDICT_STYLES, sizing_mode="stretch_width", margin=(4, 10),
                                    stylesheets=[CSS])
        self.lab.param.watch(self._update, ["length"])
        self.lab.param.watch(self._update_mark, ["n"])
        self._update()
        self._update_mark()

    @held
    def _update(self, *_):
        path, lab = self.lab.length, self.lab
        if path is None:
            return
        n = path["n"].astype(float)
        for metric in PLOTS:
            for rule, src in self.sources[metric].items():
                drawn = rule in path["rules"]
                set_data(src, {"n": n, "y": path[metric][rule], "rule": [RULE_LABELS[rule]] * len(n)} if drawn
                         else {"n": [], "y": [], "rule": []})
                line = self.lines[(metric, rule)]
                line.visible = drawn
                line.glyph.line_width = 4.5 if rule == lab.rule else 2.0
            self.uniform[metric].data = {"n": n, "y": 1 / n if metric == "top_weight" else np.ones_like(n)}
            for item in self.figs[metric].legend[0].items:   # no entry for a rule that is not drawn
                item.visible = all(r.visible for r in item.renderers)
        show_headline(self.summary, list(self.figs.values()),
            length_headline(path),
            f"d_k = {path['d_k']}, σ = {lab.sigma:g}, ρ = {lab.rho:g}; every query sees all n keys (no mask)",
            [*length_details(path, rho=lab.rho), *length_factors(path),
             f"{LENGTH_SAMPLES} queries compared with the first n of the same {int(n[-1])} keys (exact draws), "
             f"seed {lab.seed}; SSMax's s = {sc.scaling.SSMAX_S:g}, so at n = 16 its factor is "
             f"{sc.scaling.SSMAX_S * np.log(16):.2f}× 1/√d_k."])

    @held
    def _update_mark(self, *_):
        for mark in self.marks.values():
            mark.location = self.lab.n

    def __panel__(self):
        # the view's rule, d_k and ρ controls sit above, beside its first figure (one of each on a page)
        controls = [control(self.lab, "n"),
                    caption("The dashed vertical line marks n, the sequence length the rest of the page uses. The "
                            "curves follow the rule, d_k and ρ set above; the chosen rule is drawn thicker.")]
        return pn.Column(
            heading("Longer sequences: does attention fade as n grows, whatever the d_k scaling?", level=3),
            self.summary,
            beside([self.figs[m] for m in PLOTS], controls, basis=300),
            caption("A query compared with more keys spreads itself thinner: with the logits' spread fixed, as "
                    "1/√d_k fixes it, the top weight falls as n grows and the entropy approaches log n, its value "
                    "for uniform attention, unless the logits are so spread (σ ≳ 2) or one key so aligned (ρ near "
                    "1) that it still wins at n = 4096: the sentence above says which at these settings. This is "
                    "\"attention fading\". Dividing by √d_k cannot prevent it, "
                    "because √d_k does not change with n. SSMax (Nakanishi 2025, \"Scalable-Softmax Is Superior for "
                    "Attention\") multiplies the logits by s·ln n, with s learnt per head (fixed here); Chiang & "
                    "Cholak (2022, \"Overcoming a Theoretical Limitation of Self-Attention\") scale them by log n. "
                    "A factor that grows with n holds the top weight up: the sentence above says how far at these "
                    "settings. No scaling, 1/√d_k, SSMax and the chosen rule are drawn."),
            sizing_mode="stretch_width")
