"""Why √d_k, geometrically: q·k = |q| |k| cos θ, with lengths that grow like √d_k and cosines that shrink
like 1/√d_k (a section of "Why the variance grows")."""
from __future__ import annotations

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource

import sdpa_core as sc

from ..claims import geometry_headline
from ..state import LabState
from ..theme import CSS, control_mark, OKABE_ITO, VERDICT_STYLES, make_figure, style_legend
from .common import ANSWER, caption, figure_row, heading, held, show_headline

#: Pairs drawn per d_k (exactly, O(1) each): each std within about 2% of its theory.
SAMPLES = 4000
#: What the figure draws: key -> (label, colour, theory key).
SERIES = {"norms_mean": ("|q| |k| (lengths' product)", OKABE_ITO["sky"], "norms_theory"),
          "cos_std": ("cos θ (its spread)", OKABE_ITO["green"], "cos_theory"),
          "dot_std": ("q·k = |q| |k| cos θ (its spread)", OKABE_ITO["vermillion"], "dot_theory")}


class Geometry(pn.viewable.Viewer):
    """Mean length, the cosine's spread and the dot product's spread of independent random q and k against
    d_k (markers: measured; lines: theory), the current d_k marked."""

    lab = param.ClassSelector(class_=LabState, doc="The shared state.")

    def __init__(self, **params):
        super().__init__(**params)
        self.sources = {k: ColumnDataSource({"d_k": [], "y": [], "theory": []}) for k in SERIES}
        p = make_figure(title="Lengths grow, angles close in", x_label="d_k", y_label="size (log)", height=340,
                        x_axis_type="log", y_axis_type="log", hover=[("d_k", "@d_k"), ("measured", "@y{0.000}"),
                                                                     ("theory", "@theory{0.000}")])
        for key, (label, color, _) in SERIES.items():
            p.line("d_k", "theory", source=self.sources[key], color=color, line_width=2.5, legend_label=label)
            p.scatter("d_k", "y", source=self.sources[key], color=color, size=7, legend_label=label)
        self.mark = control_mark(64)
        p.add_layout(self.mark)
        style_legend(p, below=True, ncols=1)
        self.fig = p
        self.summary = pn.pane.HTML("", css_classes=ANSWER, styles=VERDICT_STYLES, sizing_mode="stretch_width", margin=(4, 10),
                                    stylesheets=[CSS])
        self._geo, self._key = None, None
        self.lab.param.watch(self._update, ["sigma", "seed", "d_k"])
        self._update()

    @held
    def _update(self, *_):
        lab = self.lab
        key = (lab.sigma, lab.seed)
        if key != self._key:   # d_k only moves the mark and the sentence
            self._geo, self._key = sc.random_geometry(sc.POW2_D_K, sigma=lab.sigma, samples=SAMPLES, seed=lab.seed), key
            for k, (_, _, theory) in SERIES.items():
                self.sources[k].data = {"d_k": self._geo["d_k"].astype(float), "y": self._geo[k],
                                        "theory": self._geo[theory]}
        self.mark.location = lab.d_k
        d = int(self._geo["d_k"][int(np.argmin(np.abs(np.log(self._geo["d_k"] / lab.d_k))))])
        show_headline(self.summary, [self.fig],
            geometry_headline(self._geo, d_k=d, sigma=lab.sigma),
            f"Independent q and k (ρ = 0), σ = {lab.sigma:g}, {SAMPLES} pairs per d_k"
            + ("" if d == lab.d_k else f", the power of two nearest d_k = {lab.d_k}"), [])

    def __panel__(self):
        return pn.Column(
            heading("Why √d_k, geometrically: q·k = |q| |k| cos θ", level=3),
            self.summary,
            figure_row(self.fig),
            caption("Random vectors in d_k dimensions are long, about σ√d_k each, and nearly at right angles: the "
                    "cosine between two independent ones has mean 0 and spread exactly 1/√d_k. On these log axes the "
                    "slopes add up: the lengths' product grows like σ²d_k (slope 1), the cosine shrinks like 1/√d_k "
                    "(slope −½), so q·k spreads like σ²√d_k (slope ½): the lengths grow faster than the angles close "
                    "in, and dividing by √d_k cancels the difference. Markers: measured; lines: theory (|q| has the "
                    "mean of a chi distribution)."),
            sizing_mode="stretch_width")
