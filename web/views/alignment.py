"""As q and k align: ρ from 0 (independent, as at initialisation) to 1 (each key equals its query, as
training can make them), with every rule side by side. The modern reason the question is still asked."""
from __future__ import annotations

import html

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource, LinearColorMapper, Range1d

import sdpa_core as sc

from ..claims import alignment_headline, alignment_summary, flat_maps
from ..options import ALIGN_MAP_RULES, ALIGN_SAMPLES, MAP_TITLES, RULE_LABELS, VIEW_HEADINGS
from ..state import LabState
from ..theme import CSS, control_mark, HEATMAP, NAN_COLOR, LEAD_STYLES, make_figure, style_legend
from .common import (ANSWER, beside, caption, control, figure_row, heading, held, rule_color, rule_dash,
                     set_html, show_headline)
from .playground import heatmap_data, key_ticker, size_map

TICK_MS = 400
RHO_STEP = 0.05


class Alignment(pn.viewable.Viewer):
    """Tokens attended and saturated rows against ρ for every rule, with heatmaps at the current ρ; Play
    sweeps ρ from 0 to 1."""

    #: Its figures' main control and their claim (web/views/common.py: FIGURE_CLAIMS_DOC).
    MAIN_CONTROL = ("lab", "rho", (0.0, 1.0))
    CLAIM = ("Move ρ: the mark moves along curves drawn for every ρ, and the heatmaps collapse on the fixed 0-1 colour scale as q and k align.")

    lab = param.ClassSelector(class_=LabState, doc="The shared state.")

    def __init__(self, **params):
        super().__init__(**params)
        lab = self.lab
        self.sources = {r: ColumnDataSource({"rho": [], "tokens": [], "saturated": []}) for r in sc.RULE_NAMES}
        self.figs, self.marks = {}, []
        for metric, title, ylabel in (("tokens", "Tokens attended (exp entropy)", "tokens attended"),
                                      ("saturated", "Saturated rows (top weight > 0.99)", "share of rows")):
            p = make_figure(title=title, x_label="ρ (q/k correlation)", y_label=ylabel, height=320,
                            x_range=Range1d(0, 1), hover=[("ρ", "@rho{0.00}"), (ylabel, f"@{metric}{{0.00}}")])
            for rule in sc.RULE_NAMES:
                p.line("rho", metric, source=self.sources[rule], color=rule_color(rule), line_dash=rule_dash(rule),
                       line_width=2.5, legend_label=RULE_LABELS[rule])
            mark = control_mark(lab.rho)
            p.add_layout(mark)
            self.marks.append(mark)
            style_legend(p, below=True, ncols=2)
            self.figs[metric] = p
        self.mapper = LinearColorMapper(palette=HEATMAP, low=0, high=1, nan_color=NAN_COLOR)
        self.map_sources, self.maps = {}, {}
        for rule in ALIGN_MAP_RULES:
            src = ColumnDataSource(heatmap_data(np.zeros((2, 2))))
            m = make_figure(title=MAP_TITLES[rule], x_label="key j", y_label="query i", height=240, min_width=80,
                            hover=[("query i", "@i"), ("key j", "@j"), ("weight", "@w{0.0000}")],
                            x_range=Range1d(0, 2), y_range=Range1d(2, 0))
            m.rect("x", "y", width=1, height=1, source=src, line_color=None,
                   fill_color={"field": "w", "transform": self.mapper})
            m.grid.visible = False
            key_ticker(m)
            self.map_sources[rule], self.maps[rule] = src, m
        self.play = pn.widgets.Toggle(name="▶ Play: sweep ρ from 0 to 1", button_type="primary", width=260)
        self.play.param.watch(self._toggle, ["value"])
        self.rho = pn.widgets.FloatSlider.from_param(lab.param.rho, name="ρ (q/k correlation)", step=0.05,
                                                     sizing_mode="stretch_width")
        self.summary = pn.pane.HTML("", css_classes=ANSWER, styles=LEAD_STYLES, sizing_mode="stretch_width", margin=(4, 10),
                                    stylesheets=[CSS])
        self.flat = pn.pane.HTML("", sizing_mode="stretch_width", margin=(0, 10), css_classes=["sdpa-caption"],
                                 stylesheets=[CSS])
        self._callback = None
        lab.param.watch(self._update_curves, ["alignment"])
        lab.param.watch(self._update_now, ["rho", "alignment"])
        lab.param.watch(self._follow_playing, ["playing"])
        self._update_curves()
        self._update_now()

    # ---- animation --------------------------------------------------------------------------------
    def _toggle(self, event):
        if self.lab.playing != event.new:
            self.lab.playing = event.new

    def _follow_playing(self, *_):
        playing = self.lab.playing
        if self.play.value != playing:
            self.play.value = playing
        self.play.name = "❚❚ Pause" if playing else "▶ Play: sweep ρ from 0 to 1"
        if playing and self._callback is None:
            if self.lab.rho >= 1.0:
                self.lab.rho = 0.0
            self._callback = pn.state.add_periodic_callback(self._tick, period=TICK_MS)
            doc = pn.state.curdoc
            if doc is not None and getattr(doc, "session_context", None) is not None:
                doc.on_session_destroyed(lambda ctx: self._stop())
        elif not playing:
            self._stop()

    def _stop(self):
        if self._callback is not None:
            self._callback.stop()
            self._callback = None
        if self.lab.playing:
            self.lab.playing = False

    def _tick(self):
        nxt = round(min(1.0, self.lab.rho + RHO_STEP), 2)
        self.lab.rho = nxt
        if nxt >= 1.0:
            self._stop()

    # ---- drawing -----------------------------------------------------------------------------------
    @held
    def _update_curves(self, *_):
        path = self.lab.alignment
        if path is None:
            return
        for rule in sc.RULE_NAMES:
            self.sources[rule].data = {"rho": path["rho"], "tokens": path["effective_support"][rule],
                                       "saturated": path["saturated"][rule]}

    @held
    def _update_now(self, *_):
        lab = self.lab
        for mark in self.marks:
            mark.location = lab.rho
        maps = lab.aligned_maps
        if maps is not None:
            n = lab.n
            for rule in ALIGN_MAP_RULES:
                w = maps[rule]
                src = self.map_sources[rule]
                if len(src.data["w"]) == n * n:
                    src.data.update(w=w.ravel())
                else:
                    src.data = heatmap_data(w)
                size_map(self.maps[rule], n)
            set_html(self.flat, html.escape(flat_maps(maps, n=n), quote=False))
        if lab.alignment is not None:
            show_headline(self.summary, [*self.figs.values(), *self.maps.values()],
                alignment_headline(lab.alignment, rho=lab.rho, n=lab.n),
                f"At d_k = {lab.d_k}, σ = {lab.sigma:g}, n = {lab.n}, {ALIGN_SAMPLES} draws per ρ",
                [alignment_summary(lab.alignment, d_k=lab.d_k, n=lab.n, sigma=lab.sigma, rho=lab.rho,
                                   temperature=lab.temperature, alpha=lab.alpha)])

    def __panel__(self):
        return pn.Column(
            heading(VIEW_HEADINGS["alignment"]),
            # the three maps in one row at equal widths, even on a phone: they are compared with each other
            # (stacked, with Play and ρ between them, the phone reader never saw two at once)
            beside(figure_row(*(self.maps[r] for r in ALIGN_MAP_RULES), basis=100, min_width=80),
                   [self.play, self.rho, control(self.lab, "d_k"),
                    caption("Press Play, or drag ρ: the maps sharpen as each key lines up with its query.")],
                   basis=200, min_width=200),
            self.flat,
            self.summary,
            caption("At initialisation q and k are independent (ρ = 0), and 1/√d_k keeps the logits' spread at σ². "
                    "Training aligns each query with the keys it should find: with k = ρq + √(1 − ρ²)z, a query's logit "
                    "with its own key gains a mean ρσ²d_k, which grows like d_k, not √d_k. Press Play to sweep ρ."),
            caption("One draw of q, k at the current ρ under each rule, on one viridis scale (1/√d_k, muP's 1/d_k, "
                    "QK-norm with the sidebar's temperature)."),
            figure_row(self.figs["tokens"], self.figs["saturated"]),
            caption("Monte-Carlo means over ρ at the sidebar's d_k, σ and n, for every rule; the dashed line marks the "
                    "current ρ."),
            sizing_mode="stretch_width")
