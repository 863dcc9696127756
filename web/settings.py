"""Every setting a reader can change, declared once: its key in a link, the parameter it sets, a slider's
steps, and for the shared settings (the "All settings" drawer, and beside a view's figure) its widget, label,
caption and the views that use it.

A setting's type, default, bounds and doc are its ``param`` parameter's, on ``LabState`` (``state.py``) or
``TrainingState`` (``training_state.py``); everything else about it is here, read by the link parser
(``urlstate.py``: ``KEYS``), the state (which views use it), and the views (``views/common.py``: its widget).
Plain data, like ``options.py``.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import real_training
from .options import D_K_OPTIONS, LR_OPTIONS, SAMPLES_OPTIONS, TRAIN_D_K_OPTIONS, VIEWS


@dataclass(frozen=True)
class Setting:
    """One setting. ``widget`` (shared settings only): "choices" (a slider over ``steps``), "slider" (a float
    slider by ``step``), "int slider", "select", "checkbox", "buttons" or "number"."""

    key: str                          # in a link: ?key=value
    param: str                        # the parameter it sets
    owner: str = "lab"                # on LabState ("lab") or TrainingState ("train")
    steps: tuple | None = None        # a slider's values: a link's value snaps to the nearest
    widget: str | None = None         # None: set by a view's own controls or by the link only
    label: str = ""
    caption: str = ""
    step: float | None = None
    views: tuple[str, ...] = ()       # the views that use it (the drawer disables it in the others)


#: The views that use d_k, n, σ, ρ and the seed: every view that draws q and k itself.
DRAWS = ("playground", "variance", "saturation", "precision", "dial", "alignment")
#: ... and the rule's knobs: every view that draws them, and Train it's runs.
KNOB_VIEWS = ("playground", "variance", "saturation", "training", "dial", "alignment")

SETTINGS = (
    Setting("view", "view"),
    Setting("step", "step"),
    Setting("picks", "picks"),
    # the shared settings, in the drawer's order (what is drawn, how it is scaled, what only the Playground uses);
    # a link writes every setting in this table's order
    Setting("d_k", "d_k", steps=tuple(D_K_OPTIONS), widget="choices", label="d_k (key/query dimension)",
            caption="Width of each q and k. Arrow keys step through powers of two and the 1.5× steps between.",
            views=(*DRAWS, "answer")),
    Setting("n", "n", widget="int slider", label="n (sequence length)", caption="How many queries and keys the head sees.",
            views=DRAWS),
    Setting("sigma", "sigma", widget="slider", label="σ (std of q, k entries)", step=0.1, views=DRAWS,
            caption="Spread of every q and k entry; for independent q and k (ρ = 0) the unscaled logit std is about "
                    "σ²√d_k."),
    Setting("rho", "rho", widget="slider", label="ρ (q/k correlation)", step=0.05, views=DRAWS,
            caption="0: q and k independent; 1: each key equals its query, so the matched qᵢ·kᵢ grow like d_k (the "
                    "others like √d_k)."),
    Setting("seed", "seed", widget="number", label="Seed", caption="Draw a different random Q, K, V.", views=DRAWS),
    Setting("rule", "rule", widget="select", label="Scaling rule",
            caption="What multiplies q·k before the softmax; every plot compares it with no scaling.",
            views=("playground", "variance", "saturation", "dial")),
    Setting("alpha", "alpha", widget="slider", label="α (custom rule: d_k^-α)", step=0.05, views=KNOB_VIEWS,
            caption="Used by the rule d_k^-α: 0.5 is 1/√d_k, 1 is muP's 1/d_k."),
    Setting("temperature", "temperature", widget="slider", label="QK-norm temperature", step=0.01, views=KNOB_VIEWS,
            caption="Used by QK-norm: q and k are unit vectors, logits = cos(q, k) / temperature."),
    Setting("causal", "causal", widget="checkbox", label="Causal mask", views=("playground",),
            caption="Query i may only look at keys 0…i (as in a decoder)."),
    Setting("dtype", "dtype", widget="buttons", label="dtype", views=("playground",),
            caption="Number format of the playground's arithmetic: float16 overflows past 65504."),
    # a view's own settings, beside its figures
    Setting("query", "query"),
    Setting("samples", "samples", steps=tuple(SAMPLES_OPTIONS)),
    Setting("order", "order"),
    Setting("s", "dial_s"),
    Setting("embed", "embed"),
    Setting("preset", "preset"),
    Setting("d_model", "d_model"),
    Setting("heads", "heads"),
    Setting("init_std", "init_std"),
    Setting("layernorm", "layernorm"),
    Setting("qk_norm", "qk_norm"),
    Setting("model_scale", "model_scale"),
    Setting("config", "hf_config"),
    Setting("rule_a", "rule_a", owner="train"),
    Setting("rule_b", "rule_b", owner="train"),
    Setting("lr", "lr", owner="train", steps=tuple(LR_OPTIONS)),
    Setting("train_d_k", "d_k", owner="train", steps=tuple(TRAIN_D_K_OPTIONS)),
    Setting("train_seed", "seed", owner="train"),
    Setting("optimizer", "optimizer", owner="train"),
    Setting("real_d_k", "real_d_k", owner="train", steps=real_training.D_KS),
    Setting("real_lr", "real_lr", owner="train", steps=real_training.LRS),
    Setting("real_init", "real_init", owner="train"),
)
BY_KEY = {s.key: s for s in SETTINGS}
#: The shared settings, in the drawer's order.
SHARED_SETTINGS = tuple(s.key for s in SETTINGS if s.widget)
#: The parameters of LabState that settings set: a change to any of them refreshes the results (web/state.py).
LAB_SETTINGS = tuple(s.param for s in SETTINGS if s.owner == "lab")
#: The shared settings each view uses; the drawer disables the others and says why.
VIEW_SETTINGS = {view: {s.key for s in SETTINGS if view in s.views} for view in VIEWS if view != "tour"}
