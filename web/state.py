"""The page's shared state: every sidebar control as a documented parameter, and every result the views
show computed from them (``LabState``). The two training runs are in ``training_state.py``, the choices and
bounds in ``options.py``, what else each setting is (link key, widget, views) in ``settings.py``.

No widgets and no Panel in this module (Panel's to-do/DataStore pattern): views build widgets
with ``from_param`` and read the results; tests drive these objects directly.
All maths comes from ``sdpa_core``; this module only chooses what to compute and bounds the work.
"""
from __future__ import annotations

import time
from contextlib import contextmanager

import param

import sdpa_core as sc
from sdpa_core import real_models

from .loop import next_turn
from .options import (MAX_D_MODEL, DIAL_S_MAX, D_K_OPTIONS, DTYPES, KNOB_WORDS, LR_OPTIONS, MAX_D_K, MAX_N,
                      MAX_TRAIN_STEPS, ONLY_PLAYGROUND, ORDER_LABELS, PRECISION_N, RULE_LABELS,
                      SAMPLES_OPTIONS, TRAIN_D_K_OPTIONS, VIEW_LABELS, VIEWS, WHY_UNUSED, nearest_option)
from .results import MODEL_FIELDS, RESULTS, effective_samples
from .settings import LAB_SETTINGS, SHARED_SETTINGS, VIEW_SETTINGS
from .tour import STEPS, picks_pattern

# Importers of the page's state (web/page.py, web/urlstate.py, the views, the tests) may take these from here.
__all__ = ["LabState", "D_K_OPTIONS", "DTYPES", "LR_OPTIONS", "MAX_TRAIN_STEPS", "ORDER_LABELS",
           "PRECISION_N", "RULE_LABELS", "SAMPLES_OPTIONS", "TRAIN_D_K_OPTIONS", "VIEW_LABELS", "VIEWS",
           "nearest_option"]


class LabState(param.Parameterized):
    """Controls shared by all views, and the results that depend on them."""

    view = param.Selector(default="tour", objects=list(VIEWS), doc="Which view of the page is shown.")
    step = param.Integer(default=1, bounds=(1, len(STEPS)), doc="The guided tour's step (1-based).")
    picks = param.String(default="", regex=f"^{picks_pattern()}$", doc="The guided tour's predictions made so far (web/tour.py encode_picks): "
                                         "kept in the address, so a reload neither loses a pick nor offers it again.")
    embed = param.Boolean(default=False, doc="Embedded in another page (an <iframe>): one view, no header or "
                                              "sidebar. Read from the link when the page opens.")
    playing = param.Boolean(default=False, doc="True while the alignment view sweeps ρ from 0 to 1.")
    dial_s = param.Number(default=2.0, bounds=(0.0, DIAL_S_MAX),
                          doc="The logit dial: standard deviation s of the logits the softmax sees.")
    d_k = param.Integer(default=64, bounds=(1, MAX_D_K),
                        doc="Key/query dimension per head: the length of each q and k vector.")
    n = param.Integer(default=16, bounds=(2, MAX_N), doc="Sequence length: number of queries and keys.")
    sigma = param.Number(default=1.0, bounds=(0.1, 8.0), doc="Standard deviation of every entry of q and k.")
    rho = param.Number(default=0.0, bounds=(0.0, 1.0),
                       doc="Correlation between each query and its own key (k_i = ρ q_i + √(1-ρ²) z_i).")
    seed = param.Integer(default=0, bounds=(0, 99999), doc="Random seed for q, k and v.")
    rule = param.Selector(default="sqrt", objects=list(sc.RULE_NAMES),
                          doc="Scaling rule applied to q·k before the softmax (compared with no scaling).")
    alpha = param.Number(default=0.5, bounds=(0.0, 1.5), doc="Exponent of the custom rule: scale = d_k^-α.")
    temperature = param.Number(default=0.1, bounds=(0.02, 2.0),
                               doc="QK-norm temperature: logits = cos(q, k) / temperature.")
    causal = param.Boolean(default=False, doc="Causal mask: query i only sees keys j ≤ i.")
    dtype = param.Selector(default="float64", objects=list(DTYPES),
                           doc="Floating-point type the playground computes in.")
    query = param.Integer(default=0, bounds=(0, MAX_N - 1), doc="Which query's weights the bar chart shows.")
    samples = param.Integer(default=32, bounds=(min(SAMPLES_OPTIONS), max(SAMPLES_OPTIONS)),
                            doc="Monte-Carlo samples per d_k in the sweeps.")
    order = param.Selector(default="none", objects=list(sc.ORDERS),
                           doc="Half precision: scale the logits after the matmul, before it, or not at all.")

    # the real-models calculator (models view): a published model's head, or the reader's own
    preset = param.Selector(default="gpt2", objects=[*real_models.PRESETS, "custom"],
                            doc="A published model (sdpa_core.real_models.PRESETS), or 'custom': the fields below.")
    d_model = param.Integer(default=768, bounds=(2, MAX_D_MODEL), doc="Model width (calculator).")
    heads = param.Integer(default=12, bounds=(1, 256), doc="Attention heads; d_k = d_model / heads (calculator).")
    init_std = param.Number(default=0.02, bounds=(1e-4, 1.0), doc="Std of W_q's and W_k's entries (calculator).")
    layernorm = param.Boolean(default=True, doc="The attention's input is LayerNorm'd: rms 1 per feature "
                                                "(calculator); else i.i.d. entries of std 1.")
    qk_norm = param.Selector(default="none", objects=list(real_models.QK_NORMS),
                             doc="QK-norm: none, per head (ViT-22B) or over all heads (OLMo 2) (calculator).")
    model_scale = param.Selector(default="sqrt", objects=list(real_models.MODEL_SCALES),
                                 doc="The model's factor on q·k: 1/√d_k, or none (T5) (calculator).")

    hf_config = param.String(default="", doc="The fields of a config.json that set one head's scale, as compact "
                                             "JSON (sdpa_core.hf_config.to_link); '' for none (models view).")

    # derived (read-only for views)
    real_model = param.Dict(default=None, doc="sdpa_core.head_at_init for the calculator's head, or "
                                              "{'error': message} when heads does not divide d_model.")
    config_model = param.Dict(default=None, doc="The head ``hf_config`` sets at initialisation: {'head': "
                                                "ConfigHead, **head_at_init}, {'error': message}, or None.")
    playground = param.Dict(default=None, doc="Both sides of the playground: weights, logits, readouts, gradients "
                                              "(computed while the playground is shown: web/results.py).")
    verdict = param.String(default="", doc="Plain sentences comparing no scaling with the chosen rule "
                                           "(published together with ``playground``).")
    answer = param.Dict(default=None, doc="The answer view at d_k: a sweep over its draws without scaling and with "
                                          "1/√d_k, and one draw's weights for its heatmaps (web/results.py).")
    dial = param.Dict(default=None, doc="The logit dial at s: weights, entropy, gradient spread, two-token curve.")
    settings_moments = param.Dict(default=None, doc="Where the sidebar's settings put the logits: s and the "
                                                    "matched-pair offset, unscaled and with the rule (dial view).")
    alignment = param.Dict(default=None, doc="Every rule's readouts for ρ from 0 to 1 (alignment view).")
    aligned_maps = param.Dict(default=None, doc="Rule -> (n, n) weights of one draw at the current ρ (alignment view).")
    gradients = param.Dict(default=None, doc="Rule -> ||dL/dq_i|| of GRADIENT_ROWS query rows (saturation view).")
    length = param.Dict(default=None, doc="sdpa_core.length_path: top weight and entropy against n for no scaling, "
                                          "1/√d_k, SSMax and the chosen rule (saturation view).")
    dots = param.Dict(default=None, doc="Histogram data of q·k at the current d_k (variance view).")
    sweep = param.Parameter(default=None, doc="sdpa_core.Sweep over all d_k and rules (variance/saturation views).")
    sweep_samples = param.Integer(default=0, doc="Samples actually used by the sweep (after the work cap).")
    precision = param.Parameter(default=None, doc="sdpa_core.PrecisionSweep (half-precision view).")
    precision_breaks = param.Dict(default=None, doc="sdpa_core.first_breaks at the half-precision view's settings "
                                                    "and order: where float16 first breaks in other draws.")
    timings = param.Dict(default={}, doc="Seconds spent on the last computation of each result.")

    def __init__(self, **params):
        self._keys: dict[str, tuple] = {}   # what each of RESULTS was last computed for
        self._values: dict[str, dict] = {}  # and the parameters it set then
        self._donor: LabState | None = None
        self._later_due = False             # a turn of the page's loop will compute the later results
        super().__init__(**params)
        self._refresh_lazy()

    # ---- playground -------------------------------------------------------------------------
    @param.depends("n", watch=True, on_init=True)
    def _clamp_query(self):
        if self.query > self.n - 1:
            self.query = self.n - 1

    # ---- the real-models calculator ---------------------------------------------------------------
    _model_fields = MODEL_FIELDS

    @param.depends("preset", watch=True, on_init=True)
    def _follow_preset(self):
        """A preset fills the fields; editing a field afterwards makes the head "custom"."""
        if self.preset != "custom":
            p = real_models.PRESETS[self.preset]
            fields = {"d_model": p.d_model, "heads": p.heads, "init_std": p.q_std, "layernorm": p.layernorm,
                      "qk_norm": p.qk_norm, "model_scale": p.scale}
            self.param.update(**{k: v for k, v in fields.items() if getattr(self, k) != v})

    @param.depends(*_model_fields, watch=True)
    def _leave_preset(self):
        if self.preset != "custom":
            p = real_models.PRESETS[self.preset]
            if (self.d_model, self.heads, self.init_std, self.layernorm, self.qk_norm, self.model_scale) != (
                    p.d_model, p.heads, p.q_std, p.layernorm, p.qk_norm, p.scale):
                self.preset = "custom"

    @property
    def shown(self) -> str:
        """The view on screen: the tour shows its step's view."""
        return STEPS[self.step - 1].view if self.view == "tour" else self.view

    def unused_settings(self, train=None) -> dict[str, str]:
        """Sidebar settings the current view ignores, each with the reason shown next to it (``train``: the
        page's ``TrainingState``, whose runs' rules decide which knobs Train it uses)."""
        view = self.shown
        used = VIEW_SETTINGS[view]
        rules = ({train.rule_a, train.rule_b} & set(sc.RULES) if (view == "training" and train is not None)
                 else {self.rule})
        if view in ("saturation", "alignment"):
            rules = set(sc.RULE_NAMES)   # every rule is plotted there
        out = {}
        for name in SHARED_SETTINGS:
            if name not in used:
                out[name] = (WHY_UNUSED.get((view, name)) or
                             ("Each question's button sets every setting it needs." if view == "questions" else None) or
                             ONLY_PLAYGROUND.get(name) or f"The {VIEW_LABELS[view]} view does not use it.")
            elif name in sc.scaling.KNOBS and not any(name in sc.RULES[r].knobs for r in rules):
                users = [RULE_LABELS[r] for r, rule in sc.RULES.items() if name in rule.knobs]
                out[name] = f"Only {' and '.join(users)} uses {KNOB_WORDS[name]}."
        return out

    # ---- lazily computed sweeps: only for the view that shows them -----------------------------
    @param.depends(*LAB_SETTINGS, watch=True)     # every setting: a result whose key reads a new one follows it
    def _refresh_lazy(self):
        shown = self.shown
        later = False
        for name, result in RESULTS.items():
            if shown in result.views:
                if result.later and not self._held_by_donor(name):
                    later = True
                else:
                    self._refresh(name)
        if later and not self._later_due:
            self._later_due = next_turn(self._refresh_later)
            if not self._later_due:
                self._refresh_later()

    def _refresh_later(self) -> None:
        """The results drawn below the first screen (``Result.later``), for the settings of now."""
        self._later_due = False
        shown = self.shown
        for name, result in RESULTS.items():
            if result.later and shown in result.views:
                self._refresh(name)

    def _held_by_donor(self, name: str) -> bool:
        held = self._donor.computed(name) if self._donor is not None else None
        return held is not None and held[0] == RESULTS[name].key(self)

    def _refresh(self, name: str) -> None:
        """Compute ``RESULTS[name]`` unless the settings it reads are those it was computed for; its
        parameters and its time (``timings``) are set in one update. Inside :meth:`results_from`, a result
        the donor holds for the same settings is taken from it instead (its time stays the last computed)."""
        result = RESULTS[name]
        key = result.key(self)
        if self._keys.get(name) == key:
            return
        held = self._donor.computed(name) if self._donor is not None else None
        if held is not None and held[0] == key:
            self._keys[name], self._values[name] = held
            self.param.update(**held[1])
            return
        t0 = time.perf_counter()
        values = result.compute(self)
        self._keys[name], self._values[name] = key, values
        self.param.update(**values, timings={**self.timings, name: time.perf_counter() - t0})

    def computed(self, name: str) -> tuple[tuple, dict] | None:
        """``(the settings it was computed for, the parameters it set)`` of ``RESULTS[name]``, or None if this
        state has not computed it."""
        return (self._keys[name], self._values[name]) if name in self._values else None

    @contextmanager
    def results_from(self, donor: LabState | None):
        """Within the block, take from ``donor`` (another state, read only) every result it computed for
        the settings this state needs, instead of computing it again: the tour grades a step at its own
        settings while the reader reads the step before (web/grading.py step_state), so "Next step" to
        those settings needs none of its views' sweeps computed at the click. The results are shared, never
        changed in place (as every view treats them)."""
        self._donor = donor
        try:
            yield
        finally:
            self._donor = None

    def effective_samples(self) -> int:
        """Samples per d_k after the work cap (samples * n * n <= SWEEP_BUDGET)."""
        return effective_samples(self)
