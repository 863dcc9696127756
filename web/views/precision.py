"""Half precision: where inf and NaN appear for float16/32/64, naive vs stable softmax, scale before/after."""
from __future__ import annotations

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource, Label, Range1d, Span

import sdpa_core as sc

from ..claims import broken_span, first_broken, precision_headline, precision_spread
from ..options import ORDER_LABELS, PRECISION_N, VIEW_HEADINGS
from ..state import LabState
from ..theme import CSS, control_mark, WRAP_BUTTONS, LEAD_STYLES, DTYPE_COLORS, MARK_COLOR, WARN_TEXT, legend_key, legends_below, make_figure
from .common import ANSWER, beside, caption, control, heading, held, show_headline

DTYPE_NAMES = ("float16", "float32", "float64")
KIND_DASH = {"naive": "dashed", "stable": "solid"}
KIND_MARK = {"naive": "triangle", "stable": "circle"}
DTYPE_DASH = {"float16": "solid", "float32": "dashed", "float64": "dotted"}


#: What the left plot draws for each order: what the matmul itself outputs. Scaled after it, that is the unscaled
#: product (the number that overflows float16), not the logit once divided; scaled before it, the scaled logits.
MATMUL_OUTPUT = {"none": "none", "after": "none", "before": "before"}


class Precision(pn.viewable.Viewer):
    """Largest |logit| per dtype against the float16 limit, and the share of rows that end up NaN/inf."""

    #: Its figures' main control and their claim (web/views/common.py: FIGURE_CLAIMS_DOC).
    MAIN_CONTROL = ("lab", "order", ("after", "before"))
    CLAIM = ("Scale before the matmul instead of after: the largest |logit| falls under float16's limit on a fixed axis, and the broken rows go.")

    lab = param.ClassSelector(class_=LabState, doc="The shared state.")

    def __init__(self, **params):
        super().__init__(**params)
        lab = self.lab
        self.logit_sources = {t: ColumnDataSource({"d_k": [], "y": [], "over_d_k": [], "over_y": []}) for t in DTYPE_NAMES}
        self.over_sources = {t: ColumnDataSource({"d_k": [], "y": []}) for t in DTYPE_NAMES}
        p = make_figure(title="Largest |value| the matmul outputs", x_label="d_k", y_label="max |matmul output|", height=400,
                        x_axis_type="log", y_axis_type="log", y_range=Range1d(0.3, 1e6),
                        hover=[("dtype", "@dtype"), ("d_k", "@d_k"), ("max |matmul output|", "@y{0.00}")])
        dtype_items, over_renderers = [], []
        for t in DTYPE_NAMES:
            line = p.line("d_k", "y", source=self.logit_sources[t], color=DTYPE_COLORS[t], line_width=2.5,
                          line_dash=DTYPE_DASH[t])
            dots = p.scatter("d_k", "y", source=self.logit_sources[t], color=DTYPE_COLORS[t], size=6)
            over = p.scatter("d_k", "y", source=self.over_sources[t], color=DTYPE_COLORS[t], size=14, marker="x",
                             line_width=3)
            dtype_items.append((t, [line, dots]))
            over_renderers.append(over)
        # the key shows one grey ×, drawn over the three coloured ones; clicking it hides all three
        key = legend_key(p, "scatter", color=MARK_COLOR, size=12, marker="x", line_width=3)
        p.add_layout(Span(location=sc.FLOAT16_MAX, dimension="width", line_color="#D55E00", line_width=2,
                          line_dash="dashed"))
        p.add_layout(Label(x=1, y=sc.FLOAT16_MAX, text="float16 max 65504", text_font_size="12px", text_color=WARN_TEXT,
                           x_offset=4, y_offset=4))
        legends_below(p, dtype_items, [("overflowed to inf (drawn at the top)", [*over_renderers, key])])
        self.logit_fig = p
        self.row_sources = {(t, k): ColumnDataSource({"d_k": [], "y": []}) for t in DTYPE_NAMES for k in ("naive", "stable")}
        q = make_figure(title="Rows with NaN or inf weights", x_label="d_k",
                        y_label="share of rows", height=400, x_axis_type="log", y_range=Range1d(-0.03, 1.05),
                        hover=[("d_k", "@d_k"), ("share", "@y{0%}")])
        dtype_items, kind_items = [], {k: [] for k in KIND_DASH}
        for t in DTYPE_NAMES:
            drawn = []
            for k in ("naive", "stable"):
                src = self.row_sources[(t, k)]
                line = q.line("d_k", "y", source=src, color=DTYPE_COLORS[t], line_dash=KIND_DASH[k], line_width=2.5)
                dots = q.scatter("d_k", "y", source=src, color=DTYPE_COLORS[t], marker=KIND_MARK[k], size=7)
                drawn += [line, dots]
                kind_items[k] += [line, dots]
            # a colour square over the mixed dash/marker glyphs: here colour is the dtype, dash the softmax
            dtype_items.append((t, [*drawn, legend_key(q, "scatter", color=DTYPE_COLORS[t], marker="square", size=11)]))
        for k in KIND_DASH:  # grey key glyphs drawn over the coloured ones, as on the left
            kind_items[k] += [legend_key(q, color=MARK_COLOR, line_dash=KIND_DASH[k], line_width=2.5),
                              legend_key(q, "scatter", color=MARK_COLOR, marker=KIND_MARK[k], size=7)]
        legends_below(q, dtype_items, [(f"{k} softmax", kind_items[k]) for k in KIND_DASH])
        self.row_fig = q
        for fig in (p, q):
            mark = control_mark(lab.d_k)
            fig.add_layout(mark)
            fig._sdpa_mark = mark
        self.order = pn.widgets.RadioButtonGroup.from_param(lab.param.order, label="Where the 1/√d_k scaling happens",
                                                            options={v: k for k, v in ORDER_LABELS.items()},
                                                            color="primary", variant="outline",
                                                            stylesheets=[WRAP_BUTTONS])
        self.preset = pn.widgets.Button(label="Show an overflow (σ = 4, ρ = 1)", color="primary",
                                        variant="outline")
        self.preset.on_click(lambda e: lab.param.update(sigma=4.0, rho=1.0, order="after"))
        self.summary = pn.pane.HTML("", css_classes=ANSWER, styles=LEAD_STYLES, sizing_mode="stretch_width", margin=(4, 10),
                                    stylesheets=[CSS])
        lab.param.watch(self._update, ["precision", "precision_breaks", "order"])
        lab.param.watch(self._update_mark, ["d_k"])
        self._update()

    @held
    def _update(self, *_):
        ps, lab = self.lab.precision, self.lab
        if ps is None:
            return
        d = ps.d_k.astype(float)
        order = lab.order
        first_bad = {}
        for t in DTYPE_NAMES:
            y = np.asarray(ps.max_abs_logit[t][MATMUL_OUTPUT[order]], dtype=float)
            over = ~np.isfinite(y)
            self.logit_sources[t].data = {"d_k": d[~over], "y": y[~over], "dtype": [t] * int((~over).sum())}
            self.over_sources[t].data = {"d_k": d[over], "y": np.full(int(over.sum()), sc.FLOAT16_MAX * 1.6),
                                         "dtype": [t] * int(over.sum())}
            for k in ("naive", "stable"):
                self.row_sources[(t, k)].data = {"d_k": d, "y": np.asarray(ps.nonfinite_rows[t][order][k], dtype=float)}
                first_bad[(t, k)] = first_broken(ps, t, order, k)
        msgs = []
        for t in ("float16", "float32"):
            nb, sb = first_bad[(t, "naive")], first_bad[(t, "stable")]
            if nb is None and sb is None:
                msgs.append(f"{t}: no NaN or inf up to d_k = 4096")
            else:
                nw, sw = broken_span(ps, t, order, "naive"), broken_span(ps, t, order, "stable")
                part = f"{t}: naive softmax breaks {nw}" if nb else f"{t}: naive softmax survives"
                part += f", stable softmax {sw}" if sb else ", stable softmax does not break up to d_k = 4096"
                msgs.append(part)
        show_headline(self.summary, [self.logit_fig, self.row_fig],
            precision_headline(ps, order=order),
            f"At σ = {lab.sigma:g}, ρ = {lab.rho:g}, n = {min(lab.n, PRECISION_N)}, seed {lab.seed}: one draw. "
            + (str(precision_spread(ps, lab.precision_breaks, order=order)) if lab.precision_breaks else ""),
            [f"With {ORDER_LABELS[order]}: " + "; ".join(msgs) + "."])

    @held
    def _update_mark(self, *_):
        for fig in (self.logit_fig, self.row_fig):
            fig._sdpa_mark.location = self.lab.d_k

    def __panel__(self):
        figs = [self.logit_fig, self.row_fig]
        controls = [caption("Where the 1/√d_k scaling happens"), self.order, self.preset,
                    caption("Large, aligned q and k: float16 products pass 65504 at large d_k."), control(self.lab, "d_k")]
        return pn.Column(
            heading(VIEW_HEADINGS["precision"]),
            beside(figs, controls, basis=300),
            self.summary,
            caption("float16 cannot hold a number above 65504. A softmax that takes exp in float16, as the naive one "
                    "here does, overflows from x ≈ 11.1; real kernels take exp in float32, which overflows only near "
                    "x ≈ 88.7. The same "
                    "random q and k are rounded to each dtype; the logits are computed unscaled, scaled after the "
                    "matmul ((q·kᵀ)/√d_k: the product itself can overflow) or before it ((q/√d_k)·kᵀ), then softmaxed "
                    "the naive way exp(x)/Σexp(x) or the stable way (subtract the row maximum first)."),
            caption("Left: the largest magnitude the matmul outputs (scaled after it, that is the product q·kᵀ before "
                    "the division: the number that overflows; × at the top: it overflowed to inf), with float16's limit "
                    "dashed on the same axis. Right: share of query rows whose weights contain NaN or inf; dashed = naive softmax, "
                    f"solid = stable. Uses σ, ρ and the seed from the settings, n capped at {PRECISION_N}."),
            sizing_mode="stretch_width")
