"""Real models: one attention head of a published model (or the reader's own) at initialisation: the
logits' spread with and without scaling, what the softmax does with it, and the √d_model bug."""
from __future__ import annotations

import html

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource, Range1d

from sdpa_core import real_models

from ..claims import VARIANT_LABELS, bug_sentence, fmt, model_headline, model_summary, pct
from ..options import MAX_D_MODEL, VIEW_HEADINGS
from ..state import LabState
from ..theme import CSS, control_mark, MARK_COLOR, OKABE_ITO, RULE_COLORS, RULE_DASH, LEAD_STYLES, VERDICT_STYLES, make_figure, style_legend
from .common import ANSWER, beside, caption, heading, held, set_html, show_headline
from .config_paste import ConfigPaste

#: The readouts table's columns after the scaling's name.
COLUMNS = ("logit std (theory)", "top weight", "tokens attended", "saturated rows")

QK_NORM_LABELS = {"none": "none", "head": "per head (ViT-22B)", "all": "over all heads (OLMo 2)"}
SCALE_LABELS = {"sqrt": "1/√d_k", "none": "none (T5)"}
#: The width figure's lines: each scaling's colour and dash (no scaling and 1/√d_k as in every other view).
WIDTH_LINES = {"unscaled": (RULE_COLORS["none"], RULE_DASH["none"]), "sqrt_d_k": (RULE_COLORS["sqrt"], RULE_DASH["sqrt"]),
               "sqrt_d_model": (OKABE_ITO["purple"], "dotted")}


def widths_for(heads: int) -> np.ndarray:
    """The widths the figure draws for a head count: heads × d_k for d_k = 8, 16, ... up to the calculator's widest."""
    d_k = 2 ** np.arange(3, 16)
    return heads * d_k[heads * d_k <= MAX_D_MODEL]


#: The width plot's fixed logit-std axis: every preset's curves (0.03 to 20 at their own width) with room
#: for the calculator's wider heads; a custom head beyond it runs off the top, which the table still gives.
LOGIT_STD_AXIS = (1e-3, 1e4)


class Models(pn.viewable.Viewer):
    """Preset and fields in, a table of the head's logit std, top weight and tokens attended out."""

    #: Its figures' main control and their claim (web/views/common.py: FIGURE_CLAIMS_DOC).
    MAIN_CONTROL = ("lab", "preset", ("gpt2", "llama-2-7b"))
    CLAIM = ("Pick another model: its head's logit spread at initialisation moves against the other widths on fixed axes.")

    lab = param.ClassSelector(class_=LabState, doc="The shared state.")

    def __init__(self, **params):
        super().__init__(**params)
        lab = self.lab
        presets = {p.label: k for k, p in real_models.PRESETS.items()} | {"Custom (the fields below)": "custom"}
        self.preset = pn.widgets.Select.from_param(lab.param.preset, name="Model", options=presets, width=260)
        self.d_model = pn.widgets.IntInput.from_param(lab.param.d_model, name="d_model (width)", width=150)
        self.heads = pn.widgets.IntInput.from_param(lab.param.heads, name="heads (d_k = d_model / heads)", width=200)
        self.init_std = pn.widgets.FloatInput.from_param(lab.param.init_std, name="W_q, W_k init std", step=0.005,
                                                         width=150)
        self.layernorm = pn.widgets.Checkbox.from_param(lab.param.layernorm, name="LayerNorm'd input (rms 1)")
        self.qk_norm = pn.widgets.Select.from_param(lab.param.qk_norm, name="QK-norm",
                                                    options={v: k for k, v in QK_NORM_LABELS.items()}, width=200)
        self.scale = pn.widgets.Select.from_param(lab.param.model_scale, name="Model's scale on q·k",
                                                  options={v: k for k, v in SCALE_LABELS.items()}, width=150)
        self.table = pn.pane.HTML("", css_classes=ANSWER, sizing_mode="stretch_width", margin=(0, 10), stylesheets=[CSS])
        self.summary = pn.pane.HTML("", css_classes=ANSWER, styles=LEAD_STYLES, sizing_mode="stretch_width", margin=(4, 10))
        self.bug = pn.pane.HTML("", css_classes=ANSWER, styles=VERDICT_STYLES, sizing_mode="stretch_width", margin=(4, 10))
        self.source = caption("")
        self.width_sources = {v: ColumnDataSource({"d_model": [], "std": []}) for v in WIDTH_LINES}
        self.here = ColumnDataSource({"d_model": [], "std": []})
        p = make_figure(title="Logit std at init vs the width", x_label="d_model (heads and init std fixed)",
                        y_label="logit std", height=300, x_axis_type="log", y_axis_type="log",
                        x_range=Range1d(6, MAX_D_MODEL * 1.3), y_range=Range1d(*LOGIT_STD_AXIS),
                        hover=[("d_model", "@d_model"), ("logit std", "@std{0.000}")])
        for v, (color, dash) in WIDTH_LINES.items():
            p.line("d_model", "std", source=self.width_sources[v], color=color, line_dash=dash, line_width=2.5,
                   legend_label=VARIANT_LABELS[v])
        p.scatter("d_model", "std", source=self.here, size=11, color=MARK_COLOR, marker="circle",
                  legend_label="this model, its own scaling")
        # the head a pasted (or linked) config.json sets, with its own scaling: drawn where the reader can compare
        self.config_point = ColumnDataSource({"d_model": [], "std": []})
        p.scatter("d_model", "std", source=self.config_point, size=14, color=OKABE_ITO["vermillion"], marker="diamond",
                  line_color=MARK_COLOR, legend_label="your config.json's head")
        self.width_mark = control_mark(768)
        p.add_layout(self.width_mark)
        style_legend(p, below=True, ncols=2)
        self.width_fig = p
        self.config = ConfigPaste(lab=lab)
        lab.param.watch(self._update, ["real_model"])
        lab.param.watch(self._update_config, ["config_model"])
        self._update()
        self._update_config()

    def _update_config(self, *_):
        """The pasted config's head on the width figure: its d_model and its logit std at init, its own scaling."""
        m = self.lab.config_model
        ok = m is not None and "error" not in m
        self.config_point.data = ({"d_model": [m["head"].d_model], "std": [m["theory"]["model"]]} if ok
                                  else {"d_model": [], "std": []})

    @held
    def _update(self, *_):
        m = self.lab.real_model
        if m is None:
            return
        if "error" in m:
            self.summary.object = f"<div role='status'>{html.escape(m['error'])}</div>"
            self.table.object = self.bug.object = ""
            self.source.object = ""
            for src in (*self.width_sources.values(), self.here):
                src.data = {"d_model": [], "std": []}
            return
        self._update_widths(m)
        rows = "".join(
            f"<tr><th scope='row'>{html.escape(VARIANT_LABELS[v])}"
            f"<div class='sdpa-meaning'>× {m['factors'][v]:.3g} on q·k</div></th>"
            + "".join(f"<td data-label='{label}'>{value}</td>" for label, value in zip(COLUMNS, (
                fmt(m['theory'][v]), pct(m['mc'][v]['top_weight']), f"{m['mc'][v]['tokens_attended']:.1f}",
                pct(m['mc'][v]['saturated'])))) + "</tr>"
            for v in real_models.VARIANTS)
        self.table.object = (   # a narrow phone stacks each row's cells, each with its column's name (theme.py)
            f"<div style='overflow-x:auto'><table class='sdpa-readouts sdpa-stack'><caption>{html.escape(m.get('preset').label if 'preset' in m else 'Custom head')}"
            f": d_k = {m['d_k']}, over {m['n']} tokens, mean of {m['samples']} random heads</caption>"
            "<tr><th scope='col'>scaling</th>" + "".join(f"<th scope='col'>{c}</th>" for c in COLUMNS)
            + f"</tr>{rows}</table></div>")
        show_headline(self.summary, [self.width_fig], model_headline(m), f"d_k = {m['d_k']}, {m['n']} tokens, mean of "
                                             f"{m['samples']} random heads", [model_summary(m)])
        set_html(self.bug, html.escape(bug_sentence(m), quote=False))
        self.source.object = ("Source: " + m["preset"].source) if "preset" in m else (
            "Custom head: W_q and W_k entries ~ N(0, init std²), tokens LayerNorm'd (rms 1 per feature) or with "
            "i.i.d. entries of std 1; QK-norm normalises q and k to rms 1 per entry before the scale.")

    def _update_widths(self, m: dict) -> None:
        """The closed-form logit std of this head's family (its heads, init std, norms) at every width."""
        lab = self.lab
        p = m.get("preset")
        family = (dict(q_std=p.q_std, k_std=p.k_std, layernorm=p.layernorm, input_std=p.input_std, qk_norm=p.qk_norm,
                       scale=p.scale) if p is not None else
                  dict(q_std=lab.init_std, layernorm=lab.layernorm, qk_norm=lab.qk_norm, scale=lab.model_scale))
        widths = widths_for(m["heads"])
        std = real_models.logit_std_at_init(widths, m["heads"], **family)
        for v, src in self.width_sources.items():
            src.data = {"d_model": widths, "std": std[v]}
        self.here.data = {"d_model": [m["d_model"]], "std": [m["theory"]["model"]]}
        self.width_mark.location = m["d_model"]

    def __panel__(self):
        # the heads next to the model: what the tour's step asks the reader to change, on a phone's first screen
        fields = [self.preset, self.heads, self.d_model, self.init_std, self.scale, self.qk_norm, self.layernorm]
        return pn.Column(
            heading(VIEW_HEADINGS["models"]),
            beside(self.width_fig, fields),
            caption("The lines: this model's heads and init std at other widths (closed form). Without QK-norm, at a fixed init std, "
                    "4× the width gives 8× the unscaled logit std (d_k and both q's and k's entries grow) and 4× with "
                    "1/√d_k: the scale alone does not hold the spread fixed across widths. The dot is this model with "
                    "its own scaling; the dashed line marks its width. A config.json read in \"Your model's config.json\" is the "
                    "diamond, with its own scaling."),
            self.summary,
            self.table,
            caption("A head's d_k is d_model / heads: 64 in GPT-2 and BERT, 128 in LLaMA-2-7B. Its q = x W_q and "
                    "k = x W_k are projections of LayerNorm'd tokens by random matrices, so at initialisation the "
                    "logits' std follows from the width, the heads and the init std alone. Pick a model or type "
                    "your own; the table is a closed form (std) and a Monte-Carlo over random heads (the rest)."),

            self.bug,
            self.source,
            self.config,
            sizing_mode="stretch_width")
