"""The Real transformer view's section on real tokens: one trained head's attention over a line of Python, with
the 1/√d_k it was trained with and without it, each token labelled, and what differs from Gaussian q and k of the
same size (web/real_head.py computes, web/claims/tokens.py words it)."""
from __future__ import annotations

import html

import numpy as np
import panel as pn
from bokeh.models import ColorBar, ColumnDataSource, FixedTicker, LinearColorMapper, Range1d

from .. import real_head
from ..loop import prerendering
from ..claims import real_head_headline, twin_sentence
from ..theme import HEATMAP, NAN_COLOR, VERDICT_STYLES, make_figure
from .common import ANSWER, caption, figure_row, heading, held, show_headline
from .playground import COLORBAR_ROOM

#: How a token is written on an axis: a newline and a space made visible.
SHOWN = {"\n": "⏎", " ": "␣"}
SIDES = {"scaled": "with 1/√d_k (as trained)", "unscaled": "without the scale"}


def causal_cells(weights: np.ndarray) -> dict:
    """The map's cells: only those a causal row may attend to (key j <= query i; the rest are left blank), as
    compact arrays (int32 positions, float32 centres and weights): the Real view's first paint carries them."""
    i, j = np.tril_indices(len(weights))
    return {"i": i.astype(np.int32), "j": j.astype(np.int32), "x": (j + 0.5).astype(np.float32),
            "y": (i + 0.5).astype(np.float32), "w": weights[i, j].astype(np.float32)}


def labels(tokens: list[str]) -> dict:
    """Axis labels: each token at its cell's centre, visible even when it is a space or a newline."""
    return {i + 0.5: SHOWN.get(t, t) for i, t in enumerate(tokens)}


class RealHead(pn.viewable.Viewer):
    """A layer menu in; two labelled heatmaps (with the scale, without) and the sentences out. Its claim: pick the
    other layer and its maps and its spread against the Gaussian draws change (tests/web/test_real_head.py)."""

    def __init__(self, **params):
        super().__init__(**params)
        self.summary = pn.pane.HTML("", css_classes=ANSWER, styles=VERDICT_STYLES, sizing_mode="stretch_width",
                                    margin=(4, 10))
        self.twin = pn.pane.HTML("", css_classes=ANSWER, sizing_mode="stretch_width", margin=(0, 10))
        try:
            head = real_head.load()
        except real_head.DamagedHead as e:
            self.head, self.layer, self.maps = None, None, {}
            self.summary.object = (f"<div role='alert'>The trained head's file (web/data/real_head.json) is damaged, "
                                   f"so nothing of it is shown: {html.escape(str(e))}</div>")
            return
        self.head = head
        n = len(head["tokens"])
        self.layer = pn.widgets.RadioButtonGroup(label="Layer", options={f"layer {i + 1}": i for i in
                                                                        range(len(head["layers"]))}, value=1)
        mapper = LinearColorMapper(palette=HEATMAP, low=0, high=1, nan_color=NAN_COLOR)
        ticks = labels(head["tokens"])
        self.maps, self.sources = {}, {}
        for side, title in SIDES.items():
            src = ColumnDataSource(causal_cells(np.zeros((n, n))))
            p = make_figure(title=title, x_label="key (earlier byte)", y_label="query (byte)", height=360,
                            hover=[("query byte", "@i"), ("key byte", "@j"), ("weight", "@w{0.000}")],
                            x_range=Range1d(0, n), y_range=Range1d(n, 0), match_aspect=True, min_width=200)
            p.rect("x", "y", width=1, height=1, source=src, line_color=None,
                   fill_color={"field": "w", "transform": mapper})
            p.grid.visible = False
            for axis in (p.xaxis, p.yaxis):
                axis.ticker = FixedTicker(ticks=list(ticks))
                axis.major_label_overrides = ticks
                axis.major_label_text_font_size = "7px"
                axis.major_tick_out = 0
            if side == "unscaled":
                p.add_layout(ColorBar(color_mapper=mapper, width=10, title="weight", title_text_font_size="11px",
                                      major_label_text_font_size="11px"), "right")
            else:
                p.min_border_right = COLORBAR_ROOM
            self.maps[side], self.sources[side] = p, src
        self.layer.param.watch(self._update, "value")
        self._update()

    @held
    def _update(self, *_):
        h = real_head.layer(self.layer.value)
        for side, src in self.sources.items():
            # the site's first paint leaves the 2 x 2,016 cells out (they were 83 KB of its 14.7 MB budget, gzip):
            # the section is far below the fold, and the live page draws them
            weights = np.zeros((0, 0)) if prerendering() else h["real"][side]["weights"]
            src.data = causal_cells(weights)
        show_headline(self.summary, list(self.maps.values()), real_head_headline(h),
                      f"a trained transformer's layer {h['index'] + 1}, d_k = {h['d_k']}, causal, over {h['n']} bytes "
                      "of Python", [])
        self.twin.object = f"<p>{html.escape(twin_sentence(h))}</p>"

    def __panel__(self):
        if self.head is None:
            return pn.Column(heading("One trained head, on real text", level=3), self.summary,
                             sizing_mode="stretch_width")
        run = self.head["run"]
        text = self.head["text"]
        return pn.Column(
            heading("One trained head, on real text", level=3),
            pn.pane.HTML(f"<pre style='margin:0 10px;font-size:13px'>{html.escape(text)}</pre>",
                         sizing_mode="stretch_width"),
            self.layer,
            self.summary,
            figure_row(*self.maps.values(), basis=340),
            self.twin,
            caption(f"The model: 2 layers of one head (d_k = {self.head['d_k']}), trained with q·k/√d_k for "
                    f"{run['steps_done']} steps on CPython's standard-library source (validation loss "
                    f"{run['final_val_loss']} nats per byte), by experiments/real_transformer/export_head.py; its q and "
                    "k for this line of Python, written for the page, ship with it. Bytes are its tokens. A row is "
                    "one query over the bytes up to it (causal: the blank corner is what it may not see); the colour scale "
                    "is 0 to 1 in both maps."),
            sizing_mode="stretch_width")
