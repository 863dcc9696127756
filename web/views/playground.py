"""Playground: one attention head on random Q, K, V, unscaled beside the chosen rule."""
from __future__ import annotations

import html

import numpy as np
import panel as pn
import param
from bokeh.models import ColorBar, ColumnDataSource, FixedTicker, LinearColorMapper, Range1d

from ..claims import conditions, fmt, fmt_sci, headline, pct, readout_rows, split_verdict
from ..options import MAP_TITLES, RULE_LABELS, VIEW_HEADINGS
from ..state import LabState
from ..theme import LEAD_STYLES, CSS, HEATMAP, NAN_COLOR, make_figure, style_legend
from .common import (ANSWER, beside, caption, control, figure_row, heading, held, rule_color,
                     set_html, show_headline, swatch)


def heatmap_data(weights: np.ndarray) -> dict:
    n = weights.shape[0]
    i, j = np.divmod(np.arange(n * n), n)
    return {"i": i, "j": j, "x": j + 0.5, "y": i + 0.5, "w": weights.ravel()}


def size_map(p, n: int) -> None:
    """A weight map's axes for n x n weights: the ranges, and its key axis labelled at the first, the middle and
    the last key only (cell centres), so that no labels collide in an 80 px wide map ("0 5 1015" at 320 px)."""
    p.x_range.end = n  # Bokeh sends nothing when a property is set to the value it has
    p.y_range.start = n
    keys = sorted({0, n // 2, n - 1})
    ticks = [j + 0.5 for j in keys]
    if p.xaxis.ticker.ticks != ticks:
        p.xaxis.ticker.ticks = ticks
        p.xaxis.major_label_overrides = {j + 0.5: str(j) for j in keys}


def key_ticker(p) -> None:
    """The key axis of a weight map on a fixed ticker that :func:`size_map` fills."""
    p.xaxis.ticker = FixedTicker(ticks=[])


#: The room the right map's colour bar and its labels take (px), left free beside the left map too.
COLORBAR_ROOM = 58


def heatmap_pair(mapper, sides, *, height: int) -> tuple[dict, dict]:
    """Two weight maps side by side on one colour scale (``mapper``, 0 to 1): ``sides`` maps a side's key to its
    title; the last side carries the colour bar, the first leaves as much room at its right, so both frames are
    equally wide. Returns ``(figures, sources)`` by side."""
    maps, sources = {}, {}
    keys = list(sides)
    for side in keys:
        src = ColumnDataSource(heatmap_data(np.zeros((2, 2))))
        p = make_figure(title=sides[side], x_label="key j", y_label="query i", height=height,
                        hover=[("query i", "@i"), ("key j", "@j"), ("weight", "@w{0.0000}")],
                        x_range=Range1d(0, 2), y_range=Range1d(2, 0), match_aspect=True, min_width=140)
        p.rect("x", "y", width=1, height=1, source=src, line_color=None, fill_color={"field": "w", "transform": mapper})
        p.grid.visible = False
        key_ticker(p)
        if side == keys[-1]:   # one shared scale, 0 to 1 at every setting: its colour bar once, at the right
            p.add_layout(ColorBar(color_mapper=mapper, width=10, title="weight", title_text_font_size="11px",
                                  major_label_text_font_size="11px"), "right")
        else:
            p.min_border_right = COLORBAR_ROOM
        maps[side], sources[side] = p, src
    return maps, sources


class Playground(pn.viewable.Viewer):
    """Heatmaps, one query's weights and the readouts, for no scaling and the chosen rule."""

    #: Its figures' main control and their claim (web/views/common.py: FIGURE_CLAIMS_DOC).
    MAIN_CONTROL = ("lab", "d_k", (2, 4096))
    CLAIM = ("Drag d_k up: the unscaled map collapses to one bright cell per row on the fixed 0-1 colour scale; the default rule's (1/√d_k) stays spread.")

    lab = param.ClassSelector(class_=LabState, doc="The shared state.")

    def __init__(self, **params):
        super().__init__(**params)
        self.mapper = LinearColorMapper(palette=HEATMAP, low=0, high=1, nan_color=NAN_COLOR)
        self.maps, self.map_sources = heatmap_pair(self.mapper, {"none": "", "rule": ""}, height=264)
        self.bar_source = ColumnDataSource({"x0": [], "x1": [], "none": [], "rule": []})
        p = make_figure(title="", x_label="key j", y_label="attention weight", height=260,
                        hover=[("key j", "@x0{0}"), ("no scaling", "@none{0.000}"), ("chosen rule", "@rule{0.000}")],
                        y_range=Range1d(0, 1.02))
        self.bar_none = p.vbar(x="x0", top="none", width=0.4, source=self.bar_source, color=rule_color("none"),
                               legend_label="no scaling")
        self.bar_rule = p.vbar(x="x1", top="rule", width=0.4, source=self.bar_source, color=rule_color("sqrt"),
                               legend_label="chosen rule")
        style_legend(p, below=True, ncols=2, widest=["no scaling", max(RULE_LABELS.values(), key=len)])
        p.xgrid.visible = False
        self.bars = p
        self.query_slider = pn.widgets.IntSlider.from_param(self.lab.param.query, name="Query row i shown in the bar chart",
                                                            end=self.lab.n - 1, sizing_mode="stretch_width")
        self.readouts = pn.pane.HTML("", css_classes=ANSWER, sizing_mode="stretch_width", margin=(0, 10), stylesheets=[CSS])
        self.verdict = pn.pane.HTML("", css_classes=ANSWER, styles=LEAD_STYLES, sizing_mode="stretch_width", margin=(4, 10),
                                    stylesheets=[CSS])
        # the three settings that move the heatmaps, beside them (every other one: "All settings")
        self.controls = [
            control(self.lab, "d_k"), control(self.lab, "rho"), control(self.lab, "rule"),
            caption("Drag d_k up (at σ = 1, ρ = 0): the left map, no scaling, collapses to one bright cell per row. "
                    "Watch whether the right one, the rule you chose, does too; the sentence above says which at the "
                    "current settings. "
                    "n, σ, the mask and the dtype are under ☰ All settings."),
        ]
        self.lab.param.watch(self._update, ["playground"])
        self.lab.param.watch(self._update_bars, ["query"])
        self._update()

    @held
    def _update(self, *_):
        res, lab = self.lab.playground, self.lab
        n = lab.n
        for side in ("none", "rule"):
            p, r, src = self.maps[side], res[side], self.map_sources[side]
            if len(src.data["w"]) == n * n:
                # same grid: only the weights change, so send one column instead of five
                src.data.update(w=r["weights"].ravel())
            else:
                src.data = heatmap_data(r["weights"])
            size_map(p, n)
            # a title that changes re-lays out its figure on the page's main thread (~15-25 ms a step in
            # the built site): the scale, which follows d_k, is shown in the readouts' column heads instead.
            # The rule's name alone: "no scaling: weights" was cut to "no scaling: weig" at 320 px
            title = MAP_TITLES[r['rule']]
            if p.title.text != title:
                p.title.text = title
        if self.query_slider.end != n - 1:
            self.query_slider.end = n - 1
        self.bar_rule.glyph.fill_color = self.bar_rule.glyph.line_color = rule_color(res["rule"]["rule"])
        self.bars.legend.items[1].label = {"value": RULE_LABELS[res["rule"]["rule"]]}
        self._update_bars()
        set_html(self.readouts, self._table(res))  # text only: no re-sent stylesheets, no model-graph walk
        weights, gradient = split_verdict(lab.verdict)
        where = conditions(d_k=lab.d_k, rho=lab.rho, causal=lab.causal, dtype=lab.dtype, sigma=lab.sigma)
        show_headline(self.verdict, [*self.maps.values(), self.bars], headline(res, n=n, dtype=lab.dtype), f"At {where}, n = {n}",
                                             [weights, gradient])

    @held
    def _update_bars(self, *_):
        res, q = self.lab.playground, min(self.lab.query, self.lab.n - 1)
        n = res["none"]["weights"].shape[0]
        heights = {"none": np.nan_to_num(res["none"]["weights"][q]), "rule": np.nan_to_num(res["rule"]["weights"][q])}
        if len(self.bar_source.data["x0"]) == n:
            self.bar_source.data.update(heights)  # same keys: send the two height columns only
        else:
            x = np.arange(n)
            self.bar_source.data = {"x0": x - 0.2, "x1": x + 0.2, **heights}
        self.bars.title.text = f"Weights of query {q} over the keys"

    def _table(self, res) -> str:
        n, causal = self.lab.n, self.lab.causal
        rule = res["rule"]["rule"]
        scales = {side: f"<div class='sdpa-meaning'>scale {html.escape(fmt(res[side]['scale']))}</div>"
                  for side in ("none", "rule")}
        head = (f"<tr><th scope='col'>readout</th><th scope='col'>{swatch('none')}no scaling{scales['none']}</th>"
                f"<th scope='col'>{swatch(rule)}{RULE_LABELS[rule]}{scales['rule']}</th></tr>")
        body = "".join(
            f"<tr><th scope='row'>{name}<div class='sdpa-meaning'>{meaning}</div></th>"
            f"<td>{html.escape(_cell(key, res['none']['stats'], n))}</td>"
            f"<td>{html.escape(_cell(key, res['rule']['stats'], n))}</td></tr>"
            for name, key, meaning in readout_rows(n, causal, self.lab.dtype))
        return (f"<div style='overflow-x:auto'><table class='sdpa-readouts'><caption>Readouts, averaged over the {n} queries"
                f"{' (causal mask)' if causal else ''}</caption>{head}{body}</table></div>")

    def __panel__(self):
        # side by side even on a phone: the comparison is the point
        maps = figure_row(self.maps["none"], self.maps["rule"], basis=150, min_width=140)
        lower = pn.FlexBox(
            pn.Column(self.query_slider, self.bars,
                      caption("One row of each heatmap as bars: a saturated softmax puts almost all of it on one key."),
                      sizing_mode="stretch_width", styles={"flex": "1 1 340px"}, min_width=250),
            pn.Column(self.readouts,
                      caption("Gradients are ∂L/∂q for one fixed random upstream gradient ∂L/∂o (the chain rule "
                              "includes the scale: ∂L/∂qᵢ = scale · Σⱼ ∂L/∂zᵢⱼ kⱼ). A saturated row's softmax "
                              "Jacobian diag(p) − ppᵀ is nearly 0, so that query gets almost no gradient; the rows "
                              "that are not saturated get the unscaled factor, so the total can be larger."),
                      sizing_mode="stretch_width", styles={"flex": "1 1 340px"}, min_width=250),
            sizing_mode="stretch_width")
        return pn.Column(
            heading(VIEW_HEADINGS["playground"]),
            beside(maps, self.controls, basis=640),
            self.verdict,
            caption("Random Q and K go through the softmax unscaled (left) and with the chosen rule (right): weights "
                    "softmax(scale · qᵢ·kⱼ), one row per query, on one shared viridis scale (magenta marks NaN from "
                    "overflow). Hover a cell for its value; the save tool exports a PNG."),
            lower,
            sizing_mode="stretch_width")


def _cell(key: str, stats: dict, n: int) -> str:
    """One readout cell: shares as percentages, gradients with their magnitude down to their round-off
    size, counts as "k of n"."""
    value = stats[key]
    if key in ("saturated", "out_copies"):
        return pct(value)
    if key == "grad_starved":
        return "–" if value is None else f"{value} of {n}"
    if key.startswith("grad_"):
        return fmt_sci(value, floor=stats.get("grad_floor", 0.0))
    return fmt(value)
