"""The scaling rules compared on the page: what multiplies q.k before the softmax."""
from __future__ import annotations

import math
import numbers

import numpy as np

from ._checks import integer, real

__all__ = ["RULES", "RULE_NAMES", "scale_for", "logit_scale", "check_rule", "qk_normalize",
           "qk_normalize_backward"]

#: Rule names accepted by :func:`scale_for`; a float ``alpha`` (scale ``d_k**-alpha``) is accepted too.
RULES = ("none", "sqrt", "linear")


def scale_for(d_k, rule="sqrt") -> float:
    """The factor that multiplies ``q . k`` under a scaling rule.

    Parameters
    ----------
    d_k : int
        Key/query dimension per head (>= 1).
    rule : {"none", "sqrt", "linear"} or float
        ``"none"`` -> 1; ``"sqrt"`` -> ``d_k**-0.5`` (Vaswani et al. 2017); ``"linear"`` ->
        ``1/d_k`` (muP, Yang et al. 2022); a float ``alpha`` -> ``d_k**-alpha``.

    Notes
    -----
    For independent zero-mean q, k with entry variances s_q^2, s_k^2,
    ``Var(q . k) = d_k s_q^2 s_k^2``, so only ``alpha = 1/2`` keeps the logits' spread fixed as d_k grows.

    Examples
    --------
    >>> scale_for(64, "sqrt")
    0.125
    """
    d_k = integer(d_k, "d_k", low=1)
    if isinstance(rule, str):
        if rule == "none":
            return 1.0
        if rule == "sqrt":
            return 1.0 / math.sqrt(d_k)
        if rule == "linear":
            return 1.0 / d_k
    elif isinstance(rule, numbers.Real) and not isinstance(rule, bool):
        return d_k ** -real(rule, "alpha")
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
    """Validate a page-level rule with its knobs; returns ``(rule, alpha, temperature)``."""
    if rule not in RULE_NAMES:
        raise ValueError(f"unknown scaling rule {rule!r}: use one of {', '.join(map(repr, RULE_NAMES))}")
    return rule, real(alpha, "alpha", low=0.0, high=4.0), real(temperature, "temperature", low=0.0, low_open=True)


def logit_scale(d_k, rule: str, *, alpha=0.5, temperature=0.1) -> float:
    """The factor on the (possibly normalised) dot product: ``scale_for`` for the plain rules,
    ``d_k**-alpha`` for "alpha", ``1/temperature`` for "qknorm" (q, k are unit vectors then)."""
    rule, alpha, temperature = check_rule(rule, alpha=alpha, temperature=temperature)
    if rule == "qknorm":
        return 1.0 / temperature
    return scale_for(d_k, alpha if rule == "alpha" else rule)


def qk_normalize(x, eps: float = 1e-12):
    """``x / |x|`` over the last axis (QK-norm, Henry et al. 2020); rows of zeros stay zero.

    The norm is taken of ``x / max|x|`` in float64, so neither float16 (whose squares overflow
    past 256) nor float64 near its limits (3e200) loses a row; the result has x's dtype.

    >>> qk_normalize(np.array([[3e200, 4e200]])).tolist()
    [[0.6, 0.8]]
    """
    x = np.asarray(x)
    return (_unit(x.astype(np.float64), eps)).astype(x.dtype, copy=False)


def _unit(x: np.ndarray, eps: float) -> np.ndarray:
    peak = np.abs(x).max(axis=-1, keepdims=True)
    y = x / np.where(peak > 0, peak, 1.0)
    norm = np.sqrt((y * y).sum(axis=-1, keepdims=True))        # in [1, sqrt(E)] unless the row is 0
    return y / np.maximum(norm, eps)


def qk_normalize_backward(x, grad, eps: float = 1e-12):
    """Gradient through ``x / |x|``: ``(grad - xhat (xhat . grad)) / |x|``."""
    norm = np.maximum(np.sqrt((x * x).sum(axis=-1, keepdims=True)), eps)
    xhat = x / norm
    return (grad - xhat * (xhat * grad).sum(axis=-1, keepdims=True)) / norm
