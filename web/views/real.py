"""What the scale does in a real transformer: final loss against learning rate per rule, and the attention
logits' spread over training, drawn from a grid measured offline (web/real_training.py), not in the tab."""
from __future__ import annotations

import html
import math

import panel as pn
import param
from bokeh.models import ColumnDataSource, FixedTicker, Range1d

import sdpa_core as sc

from .. import real_training as rt
from ..literature import FINDINGS
from ..figure_labels import describe
from ..claims import best_sentence, failed, growth_sentence, real_headline, small_width_sentence, toy_sentence
from ..theme import CSS, RULE_COLORS, RULE_DASH, LEAD_STYLES, WRAP_BUTTONS, control_mark, make_figure, style_legend
from ..toy_sweep import STEPS, ToySweep
from ..toy_sweep import RULES as TOY_RULES
from ..training_state import OVER_SEEDS, SEEDS, TrainingState
from ..options import VIEW_HEADINGS
from .common import ANSWER, beside, caption, heading, held, set_html, show_headline
from .real_head import RealHead

RULES = tuple(r for r in rt.RULE_LABELS if r in rt.spec()["rules"])
#: How often the toy's sweep trains for its time budget (toy_sweep.BUDGET), as Train it ticks.
TICK_MS = 100
#: The toy plot's loss axis ends at this multiple of its chance loss (a run that ends above it is drawn at the top).
TOY_TOP = 1.6


def literature_html() -> str:
    """The published results beside the grid (web/literature.py): each with where it is and under what."""
    items = "".join(
        f"<li><b>{html.escape(f.source)}</b> ({html.escape(f.where)}; {html.escape(f.conditions)}): "
        f"{html.escape(f.said)} <a href='{html.escape(f.url)}' target='_blank' rel='noopener noreferrer'>{html.escape(f.url.split('//')[1])}</a>"
        f" <span class='sdpa-caption'>Here: {html.escape(f.grid)}.</span></li>" for f in FINDINGS)
    return ("<p class='sdpa-caption'>This view's grid is a small demonstration, on 2 CPU cores, of what these runs "
            f"measured at scale:</p><ul class='sdpa-literature'>{items}</ul>")


def _span(values, pad: float, log: bool = False) -> tuple[float, float]:
    """Ends of a fixed axis holding every value of the whole grid (so no control moves them)."""
    vals = [v for v in values if math.isfinite(v) and (v > 0 or not log)]
    lo, hi = min(vals), max(vals)
    return (lo / pad, hi * pad) if log else (lo - pad, hi + pad)


def _rule_lines(fig, x: str, y: str, rules, columns: tuple[str, ...], size: int) -> dict:
    """One line with markers per rule on ``fig`` (the rule's colour and dash), each from its own empty source
    with ``columns``: rule -> its ColumnDataSource."""
    sources = {}
    for rule in rules:
        src = ColumnDataSource({c: [] for c in columns})
        fig.line(x, y, source=src, color=RULE_COLORS[rule], line_dash=RULE_DASH[rule], line_width=2.5,
                 legend_label=rt.RULE_LABELS[rule])
        fig.scatter(x, y, source=src, color=RULE_COLORS[rule], size=size, legend_label=rt.RULE_LABELS[rule])
        sources[rule] = src
    return sources


def _lr_axis(fig) -> None:
    """The learning-rate axis: a tick at each rate of the grid, written as the link writes it."""
    fig.xaxis.ticker = FixedTicker(ticks=list(rt.LRS))
    fig.xaxis.major_label_overrides = {lr: f"{lr:g}" for lr in rt.LRS}


class Real(pn.viewable.Viewer):
    """Final validation loss against learning rate, one line per rule (saturated runs ringed), and the
    logits' std over training per rule, for the reader's d_k, init and learning rate."""

    #: Its figures' main control and their claim (web/views/common.py: FIGURE_CLAIMS_DOC).
    MAIN_CONTROL = ("train", "real_d_k", (min(rt.D_KS), max(rt.D_KS)))
    CLAIM = ("Pick a wider d_k: the mark moves to where no scaling saturates at more learning rates than 1/√d_k and "
             "QK-norm's count stays low; on fixed axes the unscaled runs' losses rise and more of their points are "
             "ringed as saturated.")

    train = param.ClassSelector(class_=TrainingState, doc="Holds which cells of the grid are shown.")

    def __init__(self, **params):
        super().__init__(**params)
        self.tokens = RealHead()
        tr = self.train
        cells = [rt.cell(i, d, r, lr) for i in rt.INIT_LABELS for d in rt.D_KS for r in RULES for lr in rt.LRS]
        lo, hi = _span([c.loss for c in cells], 0.1)
        p = make_figure(title="Final loss vs learning rate", x_label="learning rate (AdamW peak)",
                        y_label="loss (nats per character)", height=300, x_axis_type="log",
                        x_range=Range1d(min(rt.LRS) / 1.6, max(rt.LRS) * 1.6), y_range=Range1d(lo, hi),
                        hover=[("rule", "@rule"), ("lr", "@lr{0.0000}"), ("loss", "@loss{0.000}"),
                               ("rows saturated at the end", "@saturated{0%}")])
        _lr_axis(p)
        self.loss_sources, self.sat_sources = {}, {}
        for rule in RULES:
            src = ColumnDataSource({"lr": [], "loss": [], "saturated": [], "rule": []})
            sat = ColumnDataSource({"lr": [], "loss": [], "saturated": [], "rule": []})
            color, label = RULE_COLORS[rule], rt.RULE_LABELS[rule]
            p.line("lr", "loss", source=src, color=color, line_dash=RULE_DASH[rule], line_width=2.5, legend_label=label)
            p.scatter("lr", "loss", source=src, color=color, size=7, legend_label=label)
            p.scatter("lr", "loss", source=sat, color=color, size=17, fill_alpha=0, line_width=2.5,
                      legend_label="ringed: saturated")
            self.loss_sources[rule], self.sat_sources[rule] = src, sat
        style_legend(p, below=True, ncols=2)
        self.loss_fig = p
        # the headline at a glance: per rule, at how many rates its rows end saturated, at each width
        n_lrs = len(rt.LRS)
        w = make_figure(title="Learning rates where rows saturate", x_label="d_k (the width of each head)",
                        y_label=f"rates of {n_lrs} that saturate", height=230, x_axis_type="log",
                        x_range=Range1d(min(rt.D_KS) / 1.8, max(rt.D_KS) * 1.8), y_range=Range1d(-0.4, n_lrs + 0.4),
                        hover=[("rule", "@rule"), ("d_k", "@d_k"), ("rates that saturate", "@count")])
        w.xaxis.ticker = FixedTicker(ticks=list(rt.D_KS))
        w.xaxis.major_label_overrides = {d: str(d) for d in rt.D_KS}
        w.yaxis.ticker = FixedTicker(ticks=list(range(n_lrs + 1)))
        self.range_sources = _rule_lines(w, "x", "count", RULES, ("x", "d_k", "count", "rule"), 8)
        style_legend(w, below=True, ncols=2)
        self.range_mark = control_mark(tr.real_d_k)
        w.add_layout(self.range_mark)
        self.range_fig = w
        stds = [s for c in cells for s in c.logit_std]
        steps = rt.spec()["eval_steps"]
        q = make_figure(title="Logits' std over training", x_label="training step",
                        y_label="logit std (log)", height=340, y_axis_type="log",
                        x_range=Range1d(0, steps[-1]), y_range=Range1d(*_span(stds, 1.5, log=True)),
                        hover=[("rule", "@rule"), ("step", "@step"), ("std", "@std{0.000}")])
        self.std_sources = _rule_lines(q, "step", "std", RULES, ("step", "std", "rule"), 6)
        style_legend(q, below=True, ncols=2)
        self.std_fig = q
        self.d_k = pn.widgets.RadioButtonGroup(label="d_k", options={str(d): d for d in rt.D_KS}, value=tr.real_d_k,
                                               color="primary", variant="outline", stylesheets=[WRAP_BUTTONS])
        self.lr = pn.widgets.RadioButtonGroup(label="learning rate", options={f"{x:g}": x for x in rt.LRS},
                                              value=tr.real_lr, color="primary", variant="outline",
                                              stylesheets=[WRAP_BUTTONS])
        self.init = pn.widgets.RadioButtonGroup(label="init", options={v: k for k, v in rt.INIT_LABELS.items()},
                                                value=tr.real_init, color="primary", variant="outline",
                                                stylesheets=[WRAP_BUTTONS])
        for widget, name in ((self.d_k, "real_d_k"), (self.lr, "real_lr"), (self.init, "real_init")):
            widget.link(tr, value=name)
            tr.param.watch(lambda e, w=widget: setattr(w, "value", e.new), [name])
        self.summary = pn.pane.HTML("", css_classes=ANSWER, styles=LEAD_STYLES, sizing_mode="stretch_width",
                                    margin=(4, 10), stylesheets=[CSS])
        # the toy of Train it, swept live over the same rates at the reader's d_k
        self.sweep = ToySweep(d_k=tr.real_d_k)
        t = make_figure(title="Toy, live: loss vs learning rate", x_label="learning rate (Adam)",
                        y_label="loss over its last 20 steps", height=300, x_axis_type="log",
                        x_range=Range1d(min(rt.LRS) / 1.6, max(rt.LRS) * 1.6),
                        y_range=Range1d(0, self.sweep.chance * TOY_TOP),
                        hover=[("rule", "@rule"), ("lr", "@lr{0.0000}"), ("loss", "@loss{0.000}")])
        _lr_axis(t)
        self.toy_sources = _rule_lines(t, "lr", "shown", TOY_RULES, ("lr", "loss", "shown", "rule"), 7)
        style_legend(t, below=True, ncols=2)
        self.toy_fig = t
        self.toy_button = pn.widgets.Button(label=f"▶ Train the toy here ({len(TOY_RULES) * len(rt.LRS)} runs)",
                                            color="primary", variant="outline")
        self.toy_button.on_click(lambda e: setattr(self.sweep, "running", not self.sweep.running))
        self.toy_text = pn.pane.HTML("", sizing_mode="stretch_width", margin=(4, 10), stylesheets=[CSS])
        self._callback, self._cleanup_registered = None, False
        tr.param.watch(lambda e: setattr(self.sweep, "d_k", e.new), ["real_d_k"])
        self.sweep.param.watch(self._on_toy, ["losses", "d_k"])   # d_k too: no runs at either width leaves losses {}
        self.sweep.param.watch(self._on_toy_running, ["running"])
        tr.param.watch(self._update, ["real_d_k", "real_lr", "real_init"])
        self._update()
        self._on_toy()

    def rows(self, d_k: int | None = None) -> dict:
        """rule -> its cells at the grid's learning rates, at the reader's init and ``d_k``."""
        tr = self.train
        return {r: [rt.cell(tr.real_init, d_k or tr.real_d_k, r, lr) for lr in rt.LRS] for r in RULES}

    @held
    def _update(self, *_):
        tr = self.train
        rows = self.rows()
        for rule, row in rows.items():
            label = rt.RULE_LABELS[rule]
            data = {"lr": list(rt.LRS), "loss": [c.loss for c in row], "saturated": [c.saturated for c in row],
                    "rule": [label] * len(row)}
            self.loss_sources[rule].data = data
            keep = [i for i, c in enumerate(row) if failed(c)]
            self.sat_sources[rule].data = {k: [v[i] for i in keep] for k, v in data.items()}
            c = rt.cell(tr.real_init, tr.real_d_k, rule, tr.real_lr)
            self.std_sources[rule].data = {"step": list(c.steps), "std": list(c.logit_std), "rule": [label] * len(c.steps)}
        # the counts at every width, each rule's points nudged sideways so that equal counts do not hide each other
        for i, rule in enumerate(RULES):
            counts = [sum(failed(c) for c in self.rows(d)[rule]) for d in rt.D_KS]
            nudge = 1 + 0.07 * (i - (len(RULES) - 1) / 2)
            self.range_sources[rule].data = {"x": [d * nudge for d in rt.D_KS], "d_k": list(rt.D_KS),
                                             "count": counts, "rule": [rt.RULE_LABELS[rule]] * len(counts)}
        self.range_mark.location = tr.real_d_k
        spec, small = rt.spec(), min(rt.D_KS)
        at_lr = {r: rt.cell(tr.real_init, tr.real_d_k, r, tr.real_lr).logit_std for r in RULES}
        details = [best_sentence(rows, list(rt.LRS), labels=rt.RULE_LABELS),
                   growth_sentence(at_lr, tuple(spec["eval_steps"]), lr=tr.real_lr, labels=rt.RULE_LABELS)]
        if "none" in rows and "sqrt" in rows:
            low = self.rows(small)
            details.append(small_width_sentence(low["none"], low["sqrt"], d_k=small))
        details.insert(0, f"Saturate: more than half the rows' top weight > {spec['saturated_above']:g} at the end of "
                          "training (the seeds' mean; where a single seed's count differs, its range follows). "
                          "The model is pre-LayerNorm, trained on CPython's standard-library source.")
        where = f"A real transformer: {rt.scope(tr.real_init)}; measured offline, the mean of {len(spec['seeds'])} seeds"
        show_headline(self.summary, [self.range_fig, self.loss_fig, self.std_fig], real_headline(rows, d_k=tr.real_d_k, labels=rt.RULE_LABELS), where,
                                             details)

    # ---- the toy's live sweep ---------------------------------------------------------------------------
    @held
    def _on_toy(self, *_):
        sweep, losses = self.sweep, self.sweep.losses
        for rule in TOY_RULES:
            lrs = [lr for lr in rt.LRS if (rule, lr) in losses]
            loss = [losses[(rule, lr)] for lr in lrs]
            top = sweep.chance * TOY_TOP * 0.98     # a loss above the axis (or not finite) is drawn at its top
            self.toy_sources[rule].data = {"lr": lrs, "loss": loss, "rule": [rt.RULE_LABELS[rule]] * len(lrs),
                                           "shown": [x if math.isfinite(x) and x < top else top for x in loss]}
        total, done = len(TOY_RULES) * len(rt.LRS), len(losses)
        if done == total:
            text = str(toy_sentence(losses, self.rows(sweep.d_k), list(rt.LRS), d_k=sweep.d_k))
        elif done:
            text = f"{done} of {total} runs done at d_k = {sweep.d_k}; each point appears as its run ends."
        else:
            text = (f"Not run yet at d_k = {sweep.d_k}: {total} runs of the toy of Train it, {STEPS} Adam steps "
                    f"each at the real grid's rates, in this tab. The toy's QK-norm is its own: cos(q, k) / "
                    f"{sc.TrainConfig().temperature:g}.")
        set_html(self.toy_text, f"<p class='sdpa-caption'>{text}</p>")
        describe([self.toy_fig], text)   # the figure's label says where the toy's runs are and what they show
        self._on_toy_running()

    def _on_toy_running(self, *_):
        sweep = self.sweep
        done = not sweep.pending()
        self.toy_button.label = ("❙❙ Pause the toy" if sweep.running else
                                 "✓ Toy trained" if done else f"▶ Train the toy here ({len(sweep.pending())} runs)")
        self.toy_button.disabled = done
        if sweep.running and self._callback is None:
            # a periodic callback works under `panel serve` and in Pyodide alike (no threads)
            self._callback = pn.state.add_periodic_callback(self._tick, period=TICK_MS, start=True)
            if not self._cleanup_registered and pn.state.curdoc is not None:
                pn.state.on_session_destroyed(lambda _ctx: self._stop())
                self._cleanup_registered = True
        elif not sweep.running and self._callback is not None:
            self._stop()

    def _stop(self):
        self.sweep.running = False
        if self._callback is not None:
            self._callback.stop()
            self._callback = None

    def _tick(self):
        if self.sweep.running:
            self.sweep.advance()

    def _toy_caption(self) -> str:
        """Where the toy of Train it and this grid differ at the smallest width, with both start spreads."""
        small, toy = min(rt.D_KS), OVER_SEEDS[16]
        start = rt.cell("gpt2", small, "none", rt.LR_DEFAULT).logit_std[0]
        return (f"The toy of Train it is worse unscaled even at d_k = 16 (higher loss in {toy['at_least']} of {SEEDS} "
                "seeds). It has one head, no LayerNorm and no depth, and its init gives q and k entries of variance "
                "about 1 at every width, so its unscaled logits start with std about √d_k = 4 there. A real head "
                f"with GPT-2's init starts far smaller: {start:.2g} here, unscaled at d_k = {small} (the logits' plot at d_k = {small}, "
                "step 0).")

    def __panel__(self):
        prov = rt.grid()["provenance"]
        controls = [caption("d_k, the width of each head"), self.d_k,
                    caption("Learning rate of the logits' plot"), self.lr,
                    caption("Initialisation"), self.init]
        return pn.Column(
            heading(VIEW_HEADINGS["real"]),
            self.summary,
            beside([self.range_fig, self.loss_fig, self.std_fig], controls, basis=300),
            heading("What large runs measured", level=3),
            pn.pane.HTML(literature_html(), sizing_mode="stretch_width", margin=(0, 10), stylesheets=[CSS]),
            heading("The same sweep on the toy, live in this tab", level=3),
            beside([self.toy_fig], [self.toy_button, self.toy_text], basis=420),
            caption("Measured offline, not in this tab: a small decoder-only transformer in PyTorch (pre-LayerNorm, "
                    "causal, AdamW with warm-up then cosine decay) trained on CPython's standard-library source by "
                    f"`{prov['command'].split(' -m ')[-1].split(' --out')[0]}` on {prov['hardware']['cpu']} "
                    f"({prov['hardware']['cpu_count']} cores, no GPU), {prov['date_utc'][:10]}. "
                    "experiments/real_transformer/README.md has the script, the grid and a larger GPU table from an "
                    "outside run. QK-norm here is LayerNorm on q and k, then 1/√d_k."),
            caption(self._toy_caption()),
            self.tokens,
            sizing_mode="stretch_width")
