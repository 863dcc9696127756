"""Statistics of attention distributions: how peaked a softmax row is and how much gradient it passes."""
from __future__ import annotations

import numpy as np

from ._checks import _axis, finite, float_array, probabilities
from .softmax import log_softmax

__all__ = ["entropy", "entropy_from_logits", "effective_support", "max_weight",
           "softmax_jacobian", "gradient_health"]


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


def softmax_jacobian(p) -> np.ndarray:
    """``d softmax / d logits = diag(p) - p p^T`` over the last axis: (..., S) -> (..., S, S).

    It vanishes when p is one-hot: a saturated softmax passes no gradient to its logits.
    """
    p = probabilities(p, "p")
    jac = -p[..., :, None] * p[..., None, :]
    idx = np.arange(p.shape[-1])
    jac[..., idx, idx] += p
    return jac


def gradient_health(p) -> np.ndarray:
    """Frobenius norm of the softmax Jacobian of each row, (..., S) -> (...).

    Notes
    -----
    ``||diag(p) - p p^T||_F^2 = sum p^2 - 2 sum p^3 + (sum p^2)^2``, computed in O(S) per row.
    ``sqrt(S - 1) / S`` for a uniform row (about ``1/sqrt(S)``), 0 for a one-hot row.
    Average it over rows (``.mean()``) for one number per distribution.
    """
    p = probabilities(p, "p")
    p2 = (p * p).sum(axis=-1)
    p3 = (p * p * p).sum(axis=-1)
    return np.sqrt(np.maximum(p2 - 2 * p3 + p2 * p2, 0))
