"""The logit dial: for n keys, one number, the spread s of the logits, decides how peaked attention is; d_k,
σ and every scaling rule only move s (at ρ = 0)."""
from __future__ import annotations

import html

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource, LinearColorMapper, Range1d, Span

import sdpa_core as sc

from ..claims import dial_headline, dial_summary, settings_sentence
from ..options import RULE_LABELS, VIEW_HEADINGS
from ..state import LabState
from ..theme import (CSS, HEATMAP, MARK_COLOR, NAN_COLOR, OKABE_ITO, THEORY_COLOR, LEAD_STYLES, make_figure,
                     style_legend)
from .common import ANSWER, beside, caption, figure_row, heading, held, rule_color, set_html, show_headline
from .playground import heatmap_data

X_MAX = 12.0
#: The gradient plot's fixed log axis: s = 0 gives about 0.1-0.6 at every n; s = 30 down to 1e-15.
GRADIENT_AXIS = (1e-12, 10.0)


class Dial(pn.viewable.Viewer):
    """The two-token softmax with its operating point, a heatmap, and the per-query gradient spread, all
    driven by one slider; the sidebar's settings are read out as the s they give."""

    #: Its figures' main control and their claim (web/views/common.py: FIGURE_CLAIMS_DOC).
    MAIN_CONTROL = ("lab", "dial_s", (0.5, 30.0))
    CLAIM = ("Turn s up: the first key's weight climbs the sigmoid, each row's top weight nears 1 and the gradients fall, on fixed axes.")

    lab = param.ClassSelector(class_=LabState, doc="The shared state.")

    def __init__(self, **params):
        super().__init__(**params)
        lab = self.lab
        self.slider = pn.widgets.FloatSlider.from_param(lab.param.dial_s, name="Logit std s", step=0.1,
                                                        sizing_mode="stretch_width")
        x = np.linspace(-X_MAX, X_MAX, 241)
        p, slope = sc.two_token_curve(x)
        curve = ColumnDataSource({"x": x, "p": p, "slope": slope})
        self.point = ColumnDataSource({"x": [0.0], "p": [0.5], "slope": [0.25]})
        f = make_figure(title="Two keys: the first one's weight", x_label="logit gap x",
                        y_label="weight p, slope p(1 − p)", height=320, y_range=Range1d(-0.02, 1.05),
                        x_range=Range1d(-X_MAX, X_MAX), hover=[("x", "@x{0.00}"), ("p", "@p{0.0000}"),
                                                              ("slope", "@slope{0.0000}")])
        f.line("x", "p", source=curve, line_width=2.5, color=OKABE_ITO["blue"], legend_label="p = 1/(1 + e^−x)")
        f.line("x", "slope", source=curve, line_width=2.5, color=OKABE_ITO["vermillion"], line_dash="dashed",
               legend_label="slope p(1 − p)")
        f.scatter("x", "p", source=self.point, size=12, color=OKABE_ITO["blue"], line_color="black",
                  legend_label="a typical row's top two")
        f.scatter("x", "slope", source=self.point, size=12, color=OKABE_ITO["vermillion"], line_color="black")
        style_legend(f, below=True, ncols=1)   # one column: a phone is 320 px wide
        self.curve_fig = f
        self.mapper = LinearColorMapper(palette=HEATMAP, low=0, high=1, nan_color=NAN_COLOR)
        self.map_source = ColumnDataSource(heatmap_data(np.zeros((2, 2))))
        m = make_figure(title="", x_label="key j", y_label="query i", height=320,
                        hover=[("query i", "@i"), ("key j", "@j"), ("weight", "@w{0.0000}")],
                        x_range=Range1d(0, 2), y_range=Range1d(2, 0))
        m.rect("x", "y", width=1, height=1, source=self.map_source, line_color=None,
               fill_color={"field": "w", "transform": self.mapper})
        m.grid.visible = False
        self.map_fig = m
        self.grad_source = ColumnDataSource({"query": [], "norm": []})
        g = make_figure(title="Gradient at each query's logits", x_label="query i", y_label="‖∂L/∂zᵢ‖",
                        height=320, y_axis_type="log", y_range=Range1d(*GRADIENT_AXIS),
                        hover=[("query i", "@query"), ("‖∂L/∂zᵢ‖", "@norm{0.00e0}")])
        g.scatter("query", "norm", source=self.grad_source, size=8, color=OKABE_ITO["vermillion"])
        self.reference = Span(location=1.0, dimension="width", line_color=THEORY_COLOR, line_dash="dashed",
                              line_width=1.5)
        self.starved = Span(location=1e-3, dimension="width", line_color=MARK_COLOR, line_dash="dotted", line_width=1.5)
        g.add_layout(self.reference)
        g.add_layout(self.starved)
        self.grad_fig = g
        self.summary = pn.pane.HTML("", css_classes=ANSWER, styles=LEAD_STYLES, sizing_mode="stretch_width", margin=(4, 10))
        self.settings = pn.pane.HTML("", css_classes=ANSWER, sizing_mode="stretch_width", margin=(0, 10), stylesheets=[CSS])
        self.to_rule = pn.widgets.Button(label="Set the dial to the rule's s", color="primary", variant="outline")
        self.to_none = pn.widgets.Button(label="Set the dial to the unscaled s", color="primary", variant="outline")
        self.to_rule.on_click(lambda e: self._go("rule"))
        self.to_none.on_click(lambda e: self._go("none"))
        lab.param.watch(self._update, ["dial"])
        lab.param.watch(self._update_settings, ["settings_moments"])
        self._update()
        self._update_settings()

    def _go(self, side: str) -> None:
        moments = self.lab.settings_moments
        if moments:
            rule = self.lab.rule if side == "rule" else "none"
            s = moments.get(rule, moments["none"])["s"]
            self.lab.dial_s = float(min(max(round(s, 1), 0.0), self.lab.param.dial_s.bounds[1]))

    @held
    def _update(self, *_):
        d, lab = self.lab.dial, self.lab
        if d is None:
            return
        n = d["weights"].shape[0]
        if len(self.map_source.data["w"]) == n * n:
            self.map_source.data.update(w=d["weights"].ravel())
        else:
            self.map_source.data = heatmap_data(d["weights"])
        self.map_fig.x_range.end = n
        self.map_fig.y_range.start = n
        self.map_fig.title.text = f"Attention at s = {lab.dial_s:g}"
        gap = float(np.clip(d["median_gap"], -X_MAX, X_MAX)) if np.isfinite(d["median_gap"]) else 0.0
        self.point.data = {"x": [gap], "p": [d["two_token_p"]], "slope": [d["two_token_slope"]]}
        norms = np.asarray(d["grad_norms"], dtype=float)
        # one axis at every s: a drag moves the dots down, not the axis; those below its floor sit on it
        self.grad_source.data = {"query": np.arange(n), "norm": np.clip(norms, *GRADIENT_AXIS)}
        self.reference.location = d["grad_reference"]
        self.starved.location = 1e-3 * d["grad_reference"]
        show_headline(self.summary, [self.curve_fig, self.map_fig, self.grad_fig], dial_headline(d, s=lab.dial_s, n=n),
                                             f"n = {n} keys, logits s × one fixed random matrix",
                                             [dial_summary(d, s=lab.dial_s, n=n)])

    @held
    def _update_settings(self, *_):
        lab, moments = self.lab, self.lab.settings_moments
        if not moments:
            return
        self.to_rule.disabled = lab.rule == "none"
        self.to_rule.label = f"Set the dial to {RULE_LABELS[lab.rule]}'s s"
        rows = "".join(
            f"<tr><th scope='row'><span class='sdpa-swatch' style='background:{rule_color(r)}'></span>"
            f"{html.escape(RULE_LABELS[r])}</th><td>{m['s']:.3g}</td><td>{m['m']:.3g}</td></tr>"
            for r, m in moments.items())
        table = (f"<div style='overflow-x:auto'><table class='sdpa-readouts'>"   # a phone scrolls the table
                 f"<caption>Where the sidebar's settings put the logits</caption>"
                 f"<tr><th scope='col'>rule</th><th scope='col'>s (unmatched pairs)</th>"
                 f"<th scope='col'>m (own key's mean)</th></tr>{rows}</table></div>"
                 f"<p style='font-size:14px;margin:4px 0'>"
                 f"{html.escape(settings_sentence(moments, d_k=lab.d_k, sigma=lab.sigma, rho=lab.rho, rule=lab.rule))}"
                 f"</p>")
        set_html(self.settings, table)

    def __panel__(self):
        return pn.Column(
            heading(VIEW_HEADINGS["dial"]),
            beside([self.curve_fig, self.map_fig],
                   [self.slider, caption("Move s and watch how much of each row its top key takes.")], basis=260),
            self.summary,
            caption("A softmax only sees its logits. For a given number of keys n, their spread s (standard "
                    "deviation) decides how peaked it is: at s ≈ 0 every key gets the same weight; as s grows, the "
                    "top key's logit stands further above the rest and takes almost all of it (more keys need a "
                    "larger s for that). The gradient reaching q is the one reaching the logits times the rule's "
                    "factor (∂L/∂qᵢ = factor · Σⱼ ∂L/∂zᵢⱼ kⱼ), which the dial leaves out. Here the logits are s "
                    "times one fixed random matrix, so moving the dial rescales one picture."),
            figure_row(self.grad_fig),
            caption("Two keys (first plot): logits x and 0. Past x ≈ 5 the first key's weight is above 99% and the "
                    "slope p(1 − p), by which a two-key softmax multiplies the gradient reaching its logits, is near "
                    "0; the dots mark a typical row's gap between its top two logits, as if they were its only keys. "
                    "With n keys the gradient goes through the whole Jacobian diag(p) − ppᵀ instead: the gradient "
                    "plot measures it, each query's ‖∂L/∂zᵢ‖ for one fixed random ∂L/∂p (log scale); dashed: the "
                    "median at s = 1, dotted (when in range): 1/1000 of it."),
            heading("Where do d_k, σ and the rule put you?", level=3),
            self.settings,
            pn.FlexBox(self.to_none, self.to_rule, sizing_mode="stretch_width"),
            sizing_mode="stretch_width")
