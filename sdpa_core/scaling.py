"""The scaling rules compared on the page: what multiplies q.k before the softmax."""
from __future__ import annotations

import math
import numbers

import numpy as np

from ._checks import finite, float_array, integer, real

__all__ = ["RULES", "RULE_NAMES", "scale_for", "logit_scale", "check_rule", "rule_name", "qk_normalize",
           "qk_normalize_backward"]

#: Rule names accepted by :func:`scale_for`; a float ``alpha`` (scale ``d_k**-alpha``) is accepted too.
RULES = ("none", "sqrt", "linear")
#: d_k up to 2**53 (every integer a float64 holds exactly) and alpha in [0, 4] keep ``d_k**-alpha``
#: within float64's range (>= 2**-212), so no scale silently rounds to 0 or overflows.
MAX_D_K = 2 ** 53
ALPHA_RANGE = (0.0, 4.0)
#: QK-norm's temperature: its logits are cos / temperature, so 1e-6 gives at most 1e6 (float32 sweeps
#: stay finite) and 1e6 makes every logit 0 to within 1e-6.
TEMPERATURE_RANGE = (1e-6, 1e6)


def scale_for(d_k, rule="sqrt") -> float:
    """The factor that multiplies ``q . k`` under a scaling rule.

    Parameters
    ----------
    d_k : int
        Key/query dimension per head, 1 <= d_k <= 2**53.
    rule : {"none", "sqrt", "linear"} or float
        ``"none"`` -> 1; ``"sqrt"`` -> ``d_k**-0.5`` (Vaswani et al. 2017); ``"linear"`` ->
        ``1/d_k`` (muP, Yang et al. 2022); a float ``alpha`` in [0, 4] -> ``d_k**-alpha``.

    Notes
    -----
    For independent zero-mean q, k with entry variances s_q^2, s_k^2,
    ``Var(q . k) = d_k s_q^2 s_k^2``, so only ``alpha = 1/2`` keeps the logits' spread fixed as d_k grows.

    Examples
    --------
    >>> scale_for(64, "sqrt")
    0.125
    """
    d_k = integer(d_k, "d_k", low=1, high=MAX_D_K)
    if isinstance(rule, str):
        if rule == "none":
            return 1.0
        if rule == "sqrt":
            return 1.0 / math.sqrt(d_k)
        if rule == "linear":
            return 1.0 / d_k
    elif isinstance(rule, numbers.Real) and not isinstance(rule, (bool, np.bool_)):
        return float(d_k) ** -real(rule, "rule (a float alpha)", low=ALPHA_RANGE[0], high=ALPHA_RANGE[1])
    else:
        raise TypeError(f"rule must be one of {', '.join(map(repr, RULES))} or a float alpha for d_k**-alpha, "
                        f"got {type(rule).__name__} {rule!r}")
    raise ValueError(f"unknown scaling rule {rule!r}: use one of {', '.join(map(repr, RULES))} "
                     f"or a float alpha for d_k**-alpha")


#: Every rule the page compares; "alpha" uses ``d_k**-alpha``, "qknorm" L2-normalises q and k
#: and divides the cosine by a temperature.
RULE_NAMES = ("none", "sqrt", "linear", "alpha", "qknorm")
RULE_LABELS = {
    "none": "no scaling",
    "sqrt": "1/√d_k",
    "linear": "1/d_k (muP)",
    "alpha": "d_k^-α",
    "qknorm": "QK-norm",
}


def check_rule(rule: str, *, alpha=0.5, temperature=0.1) -> tuple[str, float, float]:
    """Validate a page-level rule with its knobs; returns ``(rule, alpha, temperature)``.

    ``rule`` is one of :data:`RULE_NAMES`; ``alpha`` in [0, 4]; ``temperature`` in [1e-6, 1e6]
    (checked whatever the rule, so a bad knob is caught before it is used)."""
    return (rule_name(rule), real(alpha, "alpha", low=ALPHA_RANGE[0], high=ALPHA_RANGE[1]),
            real(temperature, "temperature", low=TEMPERATURE_RANGE[0], high=TEMPERATURE_RANGE[1]))


def rule_name(rule) -> str:
    """``rule`` if it is one of :data:`RULE_NAMES`, else a TypeError/ValueError listing them."""
    if not isinstance(rule, str):
        raise TypeError(f"rule must be a string, one of {', '.join(map(repr, RULE_NAMES))}; "
                        f"got {type(rule).__name__} {rule!r}")
    if rule not in RULE_NAMES:
        raise ValueError(f"unknown scaling rule {rule!r}: use one of {', '.join(map(repr, RULE_NAMES))}")
    return rule


def logit_scale(d_k, rule: str, *, alpha=0.5, temperature=0.1) -> float:
    """The factor on the (possibly normalised) dot product: ``scale_for`` for the plain rules,
    ``d_k**-alpha`` for "alpha", ``1/temperature`` for "qknorm" (q, k are unit vectors then).
    ``d_k`` is checked for every rule (1 <= d_k <= 2**53)."""
    rule, alpha, temperature = check_rule(rule, alpha=alpha, temperature=temperature)
    d_k = integer(d_k, "d_k", low=1, high=MAX_D_K)
    if rule == "qknorm":
        return 1.0 / temperature
    return scale_for(d_k, alpha if rule == "alpha" else rule)


def qk_normalize(x, eps: float = 1e-12):
    """``x / |x|`` over the last axis (QK-norm, Henry et al. 2020); rows of zeros stay zero.

    The norm is taken of ``x / max|x|`` in float64, so neither float16 (whose squares overflow
    past 256) nor float64 near its limits (3e200) or at 1e-300 loses a row; the result has x's
    dtype. ``x`` must be a non-empty float array with finite entries; ``eps`` in (0, 1] only
    guards rows of zeros (every other row's norm, taken after dividing by its max, is >= 1).

    >>> qk_normalize(np.array([[3e200, 4e200]])).tolist()
    [[0.6, 0.8]]
    """
    x = finite(float_array(x, "x"), "x", "it has no direction")
    eps = real(eps, "eps", low=0.0, low_open=True, high=1.0)
    return (_unit(x.astype(np.float64), eps)).astype(x.dtype, copy=False)


def _unit(x: np.ndarray, eps: float) -> np.ndarray:
    peak = np.abs(x).max(axis=-1, keepdims=True)
    y = x / np.where(peak > 0, peak, 1.0)
    norm = np.sqrt((y * y).sum(axis=-1, keepdims=True))        # in [1, sqrt(E)] unless the row is 0
    return y / np.maximum(norm, eps)


def qk_normalize_backward(x, grad, eps: float = 1e-12):
    """Gradient through ``x / |x|``: ``(grad - xhat (xhat . grad)) / |x|`` (no checks).

    Computed in float64 with the norm taken as ``max|x| * |x / max|x||`` (like :func:`qk_normalize`),
    so a float16 row longer than 256 does not come back as a zero gradient; the result has the
    dtype of ``x`` and ``grad`` combined (past 65504 a float16 gradient is inf)."""
    x, grad = np.asarray(x), np.asarray(grad)
    x64, g64 = x.astype(np.float64, copy=False), grad.astype(np.float64, copy=False)
    peak = np.abs(x64).max(axis=-1, keepdims=True)
    y = x64 / np.where(peak > 0, peak, 1.0)                       # |y| <= 1: its squares cannot overflow
    rel = np.sqrt(np.einsum("...i,...i->...", y, y))[..., None]  # |x| / max|x|, in [1, sqrt(E)] unless 0
    xhat = y / np.maximum(rel, eps)                               # as qk_normalize computes it
    with np.errstate(over="ignore", invalid="ignore"):  # an inf upstream gradient stays non-finite
        out = g64 - xhat * np.einsum("...i,...i->...", xhat, g64)[..., None]
        out /= np.maximum(peak * rel, eps)
        return out.astype(np.result_type(x, grad), copy=False)
