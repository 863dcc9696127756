"""Statistics of attention distributions: how peaked a softmax row is and how much gradient it passes."""
from __future__ import annotations

import numpy as np

from ._checks import _axis, finite, float_array, probabilities
from .softmax import log_softmax

__all__ = ["SATURATION", "entropy", "entropy_from_logits", "effective_support", "max_weight", "saturated",
           "softmax_jacobian", "jacobian_norm"]

#: A row counts as saturated when its largest weight exceeds this: one key takes (almost) everything.
SATURATION = 0.99


def entropy(p, axis: int = -1) -> np.ndarray:
    """Shannon entropy ``-sum p log p`` in nats, with ``0 log 0 = 0``.

    Uniform over S keys gives ``log S``; one-hot gives 0. An all-zero row (a query with no
    allowed key) gives 0.

    >>> float(entropy(np.full(4, 0.25))) == float(np.log(4))
    True
    """
    p = probabilities(p, "p", axis)
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0)
    return -plogp.sum(axis=axis)


def entropy_from_logits(logits, axis: int = -1) -> np.ndarray:
    """Entropy of ``softmax(logits)`` from ``log_softmax``: exact even where weights underflow to 0."""
    z = finite(float_array(logits, "logits"), "logits")
    _axis(z, axis, "logits")
    logp = log_softmax(z, axis=axis)
    return -(np.exp(logp) * logp).sum(axis=axis)


def effective_support(p, axis: int = -1) -> np.ndarray:
    """``exp(entropy)``: the number of keys a row effectively attends to (S when uniform, 1 when one-hot)."""
    return np.exp(entropy(p, axis))


def max_weight(p, axis: int = -1) -> np.ndarray:
    """The largest weight in each row: 1/S when uniform, 1 when saturated."""
    return probabilities(p, "p", axis).max(axis=axis)


def saturated(p, axis: int = -1, threshold: float = SATURATION) -> np.ndarray:
    """True for each row whose largest weight exceeds ``threshold`` (0.99 by default).

    Unlike the Jacobian's norm, the share of saturated rows only grows as attention sharpens.

    >>> saturated(np.array([[0.995, 0.005], [0.5, 0.5]])).tolist()
    [True, False]
    """
    return max_weight(p, axis) > threshold


def softmax_jacobian(p) -> np.ndarray:
    """``d softmax / d logits = diag(p) - p p^T`` over the last axis: (..., S) -> (..., S, S).

    It vanishes when p is one-hot: a saturated softmax passes no gradient to its logits.
    """
    p = probabilities(p, "p")
    jac = -p[..., :, None] * p[..., None, :]
    idx = np.arange(p.shape[-1])
    jac[..., idx, idx] += p
    return jac


def jacobian_norm(p) -> np.ndarray:
    """Frobenius norm of the softmax Jacobian ``diag(p) - p p^T`` of each row, (..., S) -> (...).

    Notes
    -----
    ``||diag(p) - p p^T||_F^2 = sum p^2 - 2 sum p^3 + (sum p^2)^2``, computed in O(S) per row.
    It is 0 for a one-hot row, but it is not a "gradient health" score: it peaks at a two-way
    tie (0.5) and is small for flat rows too, ``sqrt(S - 1) / S`` when uniform (0.24 for S = 16,
    0.12 for S = 64). The gradient that reaches q and k also carries the scale factor: see
    ``sdpa_core.rule_gradients``.

    >>> float(jacobian_norm(np.array([0.5, 0.5])))
    0.5
    """
    p = probabilities(p, "p")
    p2 = (p * p).sum(axis=-1)
    p3 = (p * p * p).sum(axis=-1)
    return np.sqrt(np.maximum(p2 - 2 * p3 + p2 * p2, 0))
