"""sdpa_core: scaled dot-product attention in pure numpy, and why it divides by sqrt(d_k).

Modules, one idea each: ``softmax`` (stable, log, naive), ``attention`` (forward and backward,
PyTorch semantics), ``scaling`` (the rules), ``stats`` (entropy, saturation, Jacobian), ``draws`` (exact
random q and k), ``readouts`` (attention, gradients and row readouts per rule), ``sweeps`` (Monte-Carlo
sweeps with theory), ``histograms`` (one query's dot product), ``precision`` (float16 overflow),
``geometry`` (lengths and cosines of random vectors: why sqrt(d)), ``length`` (attention fading as the
sequence grows), ``model`` + ``train`` (a tiny trainable head); for the explainer: ``dial`` (attention as a
function of the logit std alone), ``real_models`` (published heads at initialisation), ``outputs`` (copy or
average: what softmax(.)V hands on), ``alignment`` (rho from 0 to 1).
"""

from .alignment import rho_path
from .attention import attention, attention_backward
from .dial import dial_attention, dial_expectation, settings_logit_moments, two_token_curve
from .geometry import expected_norm, random_geometry
from .length import LENGTHS, length_path
from .draws import POW2_D_K, draw_qkv, sample_gram, upstream_gradient
from .histograms import dot_histograms, dot_samples
from .precision import BREAK_DRAWS, FLOAT16_MAX, ORDERS, PrecisionSweep, first_breaks, precision_sweep
from .readouts import METRICS, query_gradient_norms, row_stats, rule_attention, rule_gradients, rule_readouts
from .sweeps import Sweep, sweep, theory_logit_std
from .model import TrainConfig, head_sharpness
from .outputs import output_similarity
from .real_models import PRESETS, head_at_init, preset_at_init
from .scaling import RULE_LABELS, RULE_NAMES, RULES, Rule, check_rule, logit_scale, qk_normalize, scale_for
from .softmax import log_softmax, naive_softmax, softmax
from .stats import (
    SATURATION,
    effective_support,
    entropy,
    entropy_from_logits,
    jacobian_norm,
    max_weight,
    saturated,
    softmax_jacobian,
)
from .train import StepResult, Trainer, train

__version__ = "0.1.0"

__all__ = [
    "attention",
    "attention_backward",
    "softmax",
    "log_softmax",
    "naive_softmax",
    "scale_for",
    "Rule",
    "RULES",
    "RULE_NAMES",
    "RULE_LABELS",
    "check_rule",
    "logit_scale",
    "qk_normalize",
    "entropy",
    "entropy_from_logits",
    "effective_support",
    "max_weight",
    "saturated",
    "SATURATION",
    "softmax_jacobian",
    "jacobian_norm",
    "POW2_D_K",
    "METRICS",
    "ORDERS",
    "FLOAT16_MAX",
    "draw_qkv",
    "random_geometry",
    "length_path",
    "LENGTHS",
    "expected_norm",
    "rule_attention",
    "rule_gradients",
    "query_gradient_norms",
    "upstream_gradient",
    "row_stats",
    "rule_readouts",
    "sample_gram",
    "sweep",
    "Sweep",
    "dot_samples",
    "dot_histograms",
    "theory_logit_std",
    "precision_sweep",
    "first_breaks",
    "BREAK_DRAWS",
    "PrecisionSweep",
    "TrainConfig",
    "head_sharpness",
    "Trainer",
    "StepResult",
    "train",
    "two_token_curve",
    "dial_attention",
    "dial_expectation",
    "settings_logit_moments",
    "output_similarity",
    "PRESETS",
    "head_at_init",
    "preset_at_init",
    "rho_path",
]
