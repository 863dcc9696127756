"""The page's choices and bounds: views, slider steps, dtypes, work caps, why a view ignores a setting.

Plain data (no Panel, no maths), shared by the state objects (``state.py``, ``training_state.py``),
the settings (``settings.py``), the link parser (``urlstate.py``) and the views.
"""
from __future__ import annotations

import math

import sdpa_core as sc

#: Every view of the page, in menu order, declared here once: its link key (`?view=`), its menu label and the
#: name of its class in web/views/<key>.py (the page imports it when the view is first shown).
VIEW_REGISTRY = {
    "answer": ("The answer", "Answer"),
    "tour": ("Guided tour", "Tour"),
    "playground": ("Playground", "Playground"),
    "dial": ("Logit dial", "Dial"),
    "variance": ("Why the variance grows", "Variance"),
    "saturation": ("Saturation & gradients", "Saturation"),
    "alignment": ("As q and k align", "Alignment"),
    "training": ("Train it", "Training"),
    "real": ("Real transformer", "Real"),
    "precision": ("Half precision", "Precision"),
    "models": ("Real models", "Models"),
    "questions": ("Questions", "Questions"),
}
VIEWS = tuple(VIEW_REGISTRY)
#: Each view's question, its <h2> (a tour step shows its own title above the view's).
VIEW_HEADINGS = {
    "answer": "The answer, in one screen",
    "playground": "Playground: what happens to one head's attention as d_k grows?",
    "dial": "The logit dial: how does the logits' spread decide how peaked attention is?",
    "variance": "Why does the spread of q·k grow with d_k?",
    "saturation": "Saturation and gradients: which rules keep the softmax from saturating as d_k grows?",
    "alignment": "As q and k align, does 1/√d_k still keep attention spread?",
    "training": "Train it: does this tiny model learn slower without scaling?",
    "real": "What the scale does in a real transformer",
    "precision": "Half precision: at which d_k do inf and NaN appear?",
    "models": "Real models: how peaked is a real head's attention at initialisation?",
    "questions": "Questions",
}
VIEW_LABELS = {view: label for view, (label, _) in VIEW_REGISTRY.items()}
#: The views a tour step can show (every view but the tour itself and the questions).
TOUR_VIEWS = tuple(v for v in VIEWS if v not in ("tour", "questions", "answer"))
#: The answer view's fixed draw (web/results.py "answer"): only d_k moves there, so the sentence it states is one
#: reader's control away from the figure. Its top weights are means over this many draws.
ANSWER_N, ANSWER_SAMPLES = 16, 64
#: d_k choices: every power of two and the 1.5x step between, so 2**k is one arrow-key press away.
D_K_OPTIONS = sorted({2 ** k for k in range(13)} | {3 * 2 ** k for k in range(11)})
TRAIN_D_K_OPTIONS = [2 ** k for k in range(2, 13)]
LR_OPTIONS = [0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0]
SAMPLES_OPTIONS = [8, 16, 32, 64, 128, 256]
DTYPES = ("float64", "float32", "float16")
ORDER_LABELS = {"none": "no scaling", "after": "scale after q·kᵀ", "before": "scale q before the matmul"}
RULE_LABELS = sc.RULE_LABELS                    # name -> label, from the rule registry
#: What a training run can use: every rule, or no scaling with 1/√d_k folded into W_q's initialisation
#: (as T5 does): the same logits at step 0 as 1/√d_k, a different run after it.
FOLD = "fold"
TRAIN_RULES = (*sc.RULE_NAMES, FOLD)
TRAIN_RULE_LABELS = {**RULE_LABELS, FOLD: "none, W_q init ÷ √d_k (T5)"}
OPTIMIZER_LABELS = {"adam": "Adam", "sgd": "SGD"}

#: Set by the site build's pre-render (build/prerender.py): the page as the static site shows it, drawn
#: in CPython (web/page.py static_site, web/loop.py prerendering).
STATIC_SITE_ENV = "SDPA_LAB_STATIC_SITE"

#: Bounds that keep every setting interactive (numpy on one core, or Pyodide in a tab).
MAX_N = 64
MAX_D_K = 4096
MAX_PLAYGROUND_WORK = MAX_N * MAX_N * MAX_D_K   # n * n * d_k for one matmul
SWEEP_BUDGET = 65536                            # samples * n * n per d_k and rule
PRECISION_N = 16                                 # float16 matmuls are not BLAS: keep the sweep at n <= 16
HIST_SAMPLES = 20000
MAX_TRAIN_STEPS = 1500
DIAL_S_MAX = 30.0                                # the logit dial's range: 0 (uniform) to deep saturation
RHO_STEPS = 21                                   # ρ = 0, 0.05, ..., 1 in the alignment view
ALIGN_SAMPLES = 16                               # Monte-Carlo samples per ρ and rule there
MAX_D_MODEL = 16384                              # the real-models calculator's widest model
MODEL_N = 128                                    # tokens per sequence in its Monte-Carlo (fewer for very wide heads)
MODEL_SAMPLES = 8                                # independent heads averaged there
ALIGN_MAP_RULES = ("sqrt", "linear", "qknorm")   # its heatmaps: Vaswani's rule and the two alternatives
#: A heatmap's title: its rule's name, short enough for a map 100 px wide on a 320 px phone (14 px bold;
#: muP is named in the captions).
MAP_TITLES = {**RULE_LABELS, "linear": "1/d_k", "ssmax": "SSMax", "softcap": f"cap {sc.RULES['softcap'].cap:g}",
              "llama4": "Llama 4"}
LENGTH_SAMPLES = 128                             # queries per sequence length in the length section (~0.1 s): at
#                                                 64 the default state's SSMax move was unclear, 256 cost 0.12 s more
LENGTH_RULES = ("none", "sqrt", "ssmax")         # always drawn there, with the chosen rule
GRADIENT_ROWS = 128                              # query rows pooled for the per-query gradient plot (~30 ms at d_k = 1024)

#: Why a view ignores a shared setting, where "the view does not use it" would not say enough.
WHY_UNUSED = {
    ("training", "d_k"): "Train it has its own d_k (next to the plots).",
    ("training", "seed"): "Train it has its own seed (next to the plots).",
    ("training", "rule"): "Train it compares the two rules chosen next to the plots.",
    ("training", "n"): "The trained head sees 8 keys per example.",
    ("training", "sigma"): "The trained head's q and k come from its weights, not from σ.",
    ("training", "rho"): "The trained head's q and k come from its weights, not from ρ.",
    ("precision", "rule"): "The half-precision view compares 1/√d_k before and after the matmul with no scaling.",
    ("precision", "dtype"): "The half-precision view shows all three dtypes at once.",
    ("alignment", "rule"): "This view draws every rule side by side.",
    ("models", "d_k"): "The calculator takes d_k from d_model and the number of heads (next to the table).",
}
#: How the sidebar names each knob of a rule (sdpa_core.Rule.knobs).
KNOB_WORDS = {"alpha": "α", "temperature": "the temperature"}
ONLY_PLAYGROUND = {"causal": "Only the Playground applies the causal mask.",
                    "dtype": "Only the Playground computes in a chosen dtype (Half precision compares all three)."}


def nearest_option(value: float, options) -> int:
    """The option closest to ``value`` on a log scale (d_k choices are geometric)."""
    value = max(float(value), 1e-12)
    return min(options, key=lambda o: (abs(math.log(o) - math.log(value)), o))
