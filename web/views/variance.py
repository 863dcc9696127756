"""Why the variance grows: the distribution of q·k at the current d_k, and its spread over all d_k."""
from __future__ import annotations

import functools

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource, Label, Range1d

import sdpa_core as sc

from ..claims import loglog_summary, variance_headline, variance_summary
from ..options import D_K_OPTIONS, HIST_SAMPLES, RULE_LABELS, VIEW_HEADINGS
from ..state import LabState
from ..theme import CSS, control_mark, LEAD_STYLES, VERDICT_STYLES, MARK_COLOR, THEORY_COLOR, legends_below, make_figure, style_legend
from ..figure_labels import describe
from .geometry import Geometry
from .common import ANSWER, Later, beside, caption, control, figure_row, heading, held, rule_color, show_headline


class Variance(pn.viewable.Viewer):
    """Histograms of q·k (unscaled and scaled) with the normal curve; log-log logit std vs d_k."""

    #: Its figures' main control and their claim (web/views/common.py: FIGURE_CLAIMS_DOC).
    MAIN_CONTROL = ("lab", "d_k", (2, 4096))
    #: Axes that follow their data on purpose, each with why (the x axes never do, unless the reader unticks
    #: "Same axes at every d_k"): the density's height is 1/width, so a fixed height would flatten the wide ones.
    FITTED = {("Raw q·k", "y_range"): "the height follows the peak; the width is the claim",
              ("After", "y_range"): "the height follows the peak; the width is the claim"}
    CLAIM = ("Drag d_k: the raw q·k histogram widens like √d_k on one x axis for every d_k; scaled by 1/√d_k it keeps its width.")

    lab = param.ClassSelector(class_=LabState, doc="The shared state.")

    def __init__(self, **params):
        super().__init__(**params)
        self.hists = {}
        # the reader's choice: one x axis for every d_k (the default: the raw histogram visibly widens as d_k
        # grows), or an axis fitted to each histogram (its shape against the normal curve in detail)
        self.fixed = pn.widgets.Checkbox(name="Same axes at every d_k", value=True)
        for side in ("unscaled", "scaled"):
            hist = ColumnDataSource({"left": [], "right": [], "density": []})
            curve = ColumnDataSource({"x": [], "pdf": []})
            p = make_figure(title="", x_label="logit value", y_label="density", height=280, x_range=Range1d(-1, 1),
                            hover=[("from", "@left{0.00}"), ("to", "@right{0.00}"), ("density", "@density{0.0000}")])
            bars = p.quad(left="left", right="right", top="density", bottom=0, source=hist, fill_alpha=0.55,
                          line_color=None, fill_color=rule_color("none"), legend_label="samples")   # no outline: a
            # white one washed a narrow histogram out, on the dark background too
            p.line("x", "pdf", source=curve, line_width=2.5, color=THEORY_COLOR, line_dash="dashed",
                   legend_label="normal (theory)")
            style_legend(p, below=True, ncols=2, widest=["samples", "normal through the cap (theory)"])
            self.hists[side] = (p, hist, curve, bars)
        self.std_sources = {r: ColumnDataSource({"d_k": [], "std": [], "lo": [], "hi": []}) for r in ("none", "rule")}
        self.theory_sources = {k: ColumnDataSource({"d_k": [], "std": []}) for k in ("none", "rule", "rho0", "rho1")}
        p = make_figure(title="Logit std vs d_k (log-log)", x_label="d_k", y_label="std of the logits",
                        height=360, x_axis_type="log", y_axis_type="log",
                        hover=[("d_k", "@d_k"), ("std", "@std{0.000}")])
        rho0 = p.line("d_k", "std", source=self.theory_sources["rho0"], color="#999999", line_dash="dotted",
                      line_width=2)
        rho1 = p.line("d_k", "std", source=self.theory_sources["rho1"], color="#999999", line_dash="dotdash",
                      line_width=2)
        self.theory_lines = {}
        self.points = {}
        for r in ("none", "rule"):
            self.theory_lines[r] = p.line("d_k", "std", source=self.theory_sources[r], color=rule_color("none"),
                                          line_width=2)
            self.points[r] = p.scatter("d_k", "std", source=self.std_sources[r], size=8, color=rule_color("none"),
                                       marker="circle" if r == "none" else "square")
        self.mark = control_mark(64)
        self.mark_label = Label(x=64, y=5, x_units="data", y_units="screen", text="current d_k",
                                text_font_size="11px", text_color=MARK_COLOR, x_offset=4,
                                background_fill_color="white", background_fill_alpha=0.85)  # readable over a line
        p.add_layout(self.mark)
        p.add_layout(self.mark_label)
        # one row for the grey reference lines, one for the two rules (line: theory, marker: Monte-Carlo)
        _, rules = legends_below(p, [("unscaled theory, ρ = 0", [rho0]), ("unscaled theory, ρ = 1", [rho1])],
                      [(name, [self.theory_lines[r], self.points[r]]) for r, name in (("none", "no scaling"),
                                                                                    ("rule", "chosen rule"))],
                      widest=["unscaled theory, ρ = 0", "unscaled theory, ρ = 1", "no scaling",
                              max(RULE_LABELS.values(), key=len)])
        self.rule_item = rules.items[1]
        self.loglog = p
        self.geometry = Geometry(lab=self.lab)
        self.summary = pn.pane.HTML("", css_classes=ANSWER, sizing_mode="stretch_width", margin=(4, 10), styles=LEAD_STYLES,
                                    stylesheets=[CSS])
        self.slopes = pn.pane.HTML("", css_classes=ANSWER, sizing_mode="stretch_width", margin=(0, 10), styles=VERDICT_STYLES)
        self.lab.param.watch(self._update_hist, ["dots"])
        self.fixed.param.watch(self._update_hist, ["value"])
        self.lab.param.watch(self._update_sweep, ["sweep", "rule"])
        self.lab.param.watch(self._update_mark, ["d_k"])
        self._update_hist()
        self._update_sweep()
        self._update_mark()

    @held
    def _update_hist(self, *_):
        d = self.lab.dots
        if d is None:
            return
        lab = self.lab
        for side in ("unscaled", "scaled"):
            p, hist, curve, bars = self.hists[side]
            h = d[side]
            hist.data = {"left": h["left"], "right": h["right"], "density": h["density"]}
            curve.data = {"x": h["x"], "pdf": h["pdf"]}
        rule = lab.rule
        for side, name in (("unscaled", "none"), ("scaled", rule)):
            lo, hi = (histogram_range(name, lab) if self.fixed.value
                      else (min(d[side]["left"][0], d[side]["x"][0]), max(d[side]["right"][-1], d[side]["x"][-1])))
            x_range = self.hists[side][0].x_range
            if (x_range.start, x_range.end) != (lo, hi):
                x_range.update(start=lo, end=hi)
        # short titles, no measured number: they fit a 320 px phone, and the tour's prediction is not on them
        self.hists["unscaled"][0].title.text = f"Raw q·k, d_k = {lab.d_k}"
        self.hists["scaled"][0].title.text = f"After {RULE_LABELS[rule]}"
        self.hists["scaled"][3].glyph.fill_color = rule_color(rule)
        theory = "normal through the cap (theory)" if sc.RULES[rule].cap is not None else "normal (theory)"
        item = self.hists["scaled"][0].legend[0].items[1]
        if item.label != {"value": theory}:
            item.label = {"value": theory}
        pooled = sc.theory_logit_std(lab.d_k, sigma=lab.sigma, rho=lab.rho, n=lab.n)
        show_headline(self.summary, [self.hists['unscaled'][0], self.hists['scaled'][0]],
            variance_headline(d, d_k=lab.d_k, rule=rule),
            f"One query with its own key, σ = {lab.sigma:g}, ρ = {lab.rho:g}, {HIST_SAMPLES} samples",
            [variance_summary(d, d_k=lab.d_k, n=lab.n, sigma=lab.sigma, rho=lab.rho, rule=rule, pooled=pooled)])

    @held
    def _update_sweep(self, *_):
        s, lab = self.lab.sweep, self.lab
        if s is None:
            return
        d = s.d_k.astype(float)
        for key, rule in (("none", "none"), ("rule", lab.rule)):
            m, sp = s.mean["logit_std"][rule], s.spread["logit_std"][rule]
            self.std_sources[key].data = {"d_k": d, "std": m, "lo": np.maximum(m - sp, 1e-12), "hi": m + sp}
            self.theory_sources[key].data = {"d_k": d, "std": s.theory_logit_std[rule]}
            for glyph in (self.theory_lines[key].glyph, self.points[key].glyph):
                glyph.line_color = rule_color(rule)
                if hasattr(glyph, "fill_color"):
                    glyph.fill_color = rule_color(rule)
        for key, rho in (("rho0", 0.0), ("rho1", 1.0)):   # the unscaled closed form at both ends of rho
            self.theory_sources[key].data = {
                "d_k": d, "std": sc.RULES["none"].theory_logit_std(s.d_k, sigma=lab.sigma, rho=rho, n=lab.n)}
        self.rule_item.label = {"value": RULE_LABELS[lab.rule]}
        self.slopes.object = loglog_summary(s, rule=lab.rule, rho=lab.rho)
        describe([self.loglog], self.slopes.object)

    @held
    def _update_mark(self, *_):
        self.mark.location = self.lab.d_k
        self.mark_label.x = self.lab.d_k
        self.mark_label.text = f"d_k = {self.lab.d_k}"

    def __panel__(self):
        hists = [self.hists["unscaled"][0], self.hists["scaled"][0]]
        controls = [control(self.lab, "d_k"), control(self.lab, "sigma"), control(self.lab, "rule"), self.fixed,
                    caption("Drag d_k: on the same axes at every d_k the raw histogram widens like √d_k; scaled by "
                            "1/√d_k it keeps its width. Each axis spans what its histogram reaches over d_k = 1 to "
                            f"{D_K_OPTIONS[-1]} at this σ and ρ; the heights follow each peak.")]
        return pn.Column(
            heading(VIEW_HEADINGS["variance"]),
            beside(hists, controls, basis=260),
            self.summary,
            caption("Each logit is a sum of d_k products qᵢkᵢ. For independent q and k (ρ = 0) with entries of "
                    "variance σ², the sum has mean 0 and variance d_k σ⁴: its standard deviation grows like √d_k, and "
                    "dividing by √d_k undoes exactly that. For a query and its own key at ρ > 0 the sum also has a "
                    "mean ρ d_k σ², which after dividing by √d_k is ρ √d_k σ² and still grows."),
            caption("Histograms of 20 000 exact samples of one query-key pair at the "
                    "current d_k (left: raw q·k, right: after the chosen rule), with the normal curve theory predicts "
                    "(mean ρ d_k σ², variance (1+ρ²) d_k σ⁴ before scaling; QK-norm uses its large-d_k limit; Gemma 2's "
                    "cap bends that normal through c·tanh(z/c), so once the logits reach the cap its curve piles up against ±c)."),
            Later(self.geometry,
                  figure_row(self.loglog),   # a bare figure here collapses the row above inside the tour
                  self.slopes,
                  caption("Spread of all n×n logits against d_k on log-log axes. At ρ = 0 the unscaled line has slope ½, "
                    "1/√d_k makes it flat and 1/d_k (muP) gives slope −½. At ρ > 0 the n matched pairs add a mean "
                    "ρ d_k σ² that takes over at large d_k: the slopes tend to 1, ½ and 0. Grey lines are the "
                    "unscaled theory for ρ = 0 and ρ = 1; the coloured lines are the same closed form at the current ρ "
                    "for no scaling and for the chosen rule, and the markers the Monte-Carlo estimate (a little below "
                    "the line at small n: each matrix's own spread is biased low); click a legend entry to hide it.")),
            sizing_mode="stretch_width")


def histogram_range(rule: str, lab: LabState) -> tuple[float, float]:
    """One x range for a histogram at every d_k of the slider, at the current σ, ρ and the rule's knobs:
    the union over d_k of the theory's mean ± 4.5 std (sdpa_core's ``Rule.pair_theory``), a cosine's rule
    bounded by its largest factor (|cos| <= 1). The histogram drawn on it widens or narrows as d_k moves,
    instead of the axis following it."""
    return _histogram_range(rule, lab.sigma, lab.rho, lab.alpha, lab.temperature, lab.n)


@functools.lru_cache(maxsize=64)   # it does not depend on d_k: a drag of d_k reuses it (about 1 ms each in CPython)
def _histogram_range(rule: str, sigma: float, rho: float, alpha: float, temperature: float, n: int):
    spec = sc.RULES[rule]
    lo = hi = 0.0
    for d_k in D_K_OPTIONS:
        mean, std = spec.pair_theory(d_k, sigma=sigma, rho=rho, alpha=alpha, temperature=temperature, n=n)
        lo, hi = min(lo, mean - 4.5 * std), max(hi, mean + 4.5 * std)
    if spec.normalizes:
        top = float(np.max(np.abs(spec.scales(D_K_OPTIONS, alpha=alpha, temperature=temperature, n=n))))
        lo, hi = max(lo, -1.02 * top), min(hi, 1.02 * top)
    if spec.cap is not None:   # a soft-capped logit lies within ±cap
        lo, hi = max(lo, -1.02 * spec.cap), min(hi, 1.02 * spec.cap)
    return float(lo), float(hi)
