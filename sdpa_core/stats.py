"""Statistics of attention distributions: how peaked a softmax row is and how much gradient it passes."""

from __future__ import annotations

import numpy as np

from ._checks import _axis, finite, float_array, probabilities, real
from .softmax import compute_dtype, log_softmax

__all__ = [
    "SATURATION",
    "entropy",
    "entropy_from_logits",
    "effective_support",
    "max_weight",
    "saturated",
    "softmax_jacobian",
    "jacobian_norm",
]

#: A row counts as saturated when its largest weight exceeds this: one key takes (almost) everything.
SATURATION = 0.99
#: softmax_jacobian's output is S times larger than p: refuse more numbers than this (1 GiB of float64).
MAX_JACOBIAN = 2**27

# Every statistic takes rows of probabilities (checked: finite, >= 0, each summing to 1 within
# round-off or all zeros) and computes in float32 for float16 input, returning p's dtype.


def entropy(p, axis: int = -1) -> np.ndarray:
    """Shannon entropy ``-sum p log p`` in nats, with ``0 log 0 = 0``.

    Uniform over S keys gives ``log S``; one-hot gives 0. An all-zero row (a query with no
    allowed key) gives 0.

    >>> float(entropy(np.full(4, 0.25))) == float(np.log(4))
    True
    """
    p = probabilities(p, "p", axis)
    return _entropy(p, axis).astype(p.dtype, copy=False)


def _entropy(p: np.ndarray, axis) -> np.ndarray:
    """Entropy of checked probabilities, in compute_dtype (float32 for float16)."""
    w: np.ndarray = p.astype(compute_dtype(p.dtype), copy=False)
    plogp = w * np.log(np.where(w > 0, w, 1))  # 0 log 0 = 0: log(1) where p = 0
    return np.subtract(0, plogp.sum(axis=axis), dtype=w.dtype)  # 0 - sum: a one-hot row gives +0, not -0


def entropy_from_logits(logits, axis: int = -1) -> np.ndarray:
    """Entropy of ``softmax(logits)`` from ``log_softmax``: exact even where weights underflow to 0."""
    z = finite(float_array(logits, "logits"), "logits")
    axis = _axis(z, axis, "logits")
    logp = log_softmax(z.astype(compute_dtype(z.dtype), copy=False), axis=axis)
    p = np.exp(logp)
    # p log p -> 0 as p -> 0: a weight that is exactly 0 (log p = -inf, or so small exp underflows)
    # adds 0, not 0 * -inf = NaN (logits [1e308, -1e308] have entropy 0); 0 - sum, so that is +0
    plogp = p * np.where(p > 0, logp, 0)
    return np.subtract(0, plogp.sum(axis=axis), dtype=p.dtype).astype(z.dtype, copy=False)


def effective_support(p, axis: int = -1) -> np.ndarray:
    """``exp(entropy)``: the number of keys a row effectively attends to (S when uniform, 1 when one-hot).

    In float16 a support above 65504 keys is ``inf``, like any float16 number that large."""
    p = probabilities(p, "p", axis)
    with np.errstate(over="ignore"):
        return np.exp(_entropy(p, axis)).astype(p.dtype)


def max_weight(p, axis: int = -1) -> np.ndarray:
    """The largest weight in each row: 1/S when uniform, 1 when saturated."""
    return probabilities(p, "p", axis).max(axis=axis)


def saturated(p, axis: int = -1, threshold: float = SATURATION) -> np.ndarray:
    """True for each row whose largest weight exceeds ``threshold`` (0.99 by default, any value in [0, 1]).

    Unlike the Jacobian's norm, the share of saturated rows only grows as attention sharpens.

    >>> saturated(np.array([[0.995, 0.005], [0.5, 0.5]])).tolist()
    [True, False]
    """
    threshold = real(threshold, "threshold", low=0.0, high=1.0)
    return above(max_weight(p, axis), threshold)


def above(top, threshold: float = SATURATION) -> np.ndarray:
    """``top > threshold`` for top weights of any float dtype (no checks), compared in float64: numpy
    would round 0.99 to float16 (0.990234) for float16 weights, and a top weight of exactly 0.990234
    would then not count as above 0.99 (to float32, 0.99 becomes 0.9900000095)."""
    return np.asarray(top, dtype=np.float64) > np.float64(threshold)


def softmax_jacobian(p) -> np.ndarray:
    """``d softmax / d logits = diag(p) - p p^T`` over the last axis: (..., S) -> (..., S, S).

    It vanishes when p is one-hot: a saturated softmax passes no gradient to its logits.
    """
    p = probabilities(p, "p")
    if p.size * p.shape[-1] > MAX_JACOBIAN:
        raise ValueError(
            f"p of shape {p.shape} would need a Jacobian of {p.size * p.shape[-1]} numbers "
            f"(more than {MAX_JACOBIAN}); jacobian_norm gives its norm in O(S)"
        )
    jac = -p[..., :, None] * p[..., None, :]
    idx = np.arange(p.shape[-1])
    jac[..., idx, idx] += p
    return jac


def jacobian_norm(p) -> np.ndarray:
    """Frobenius norm of the softmax Jacobian ``diag(p) - p p^T`` of each row, (..., S) -> (...).

    Notes
    -----
    ``||diag(p) - p p^T||_F^2 = sum p^2 - 2 sum p^3 + (sum p^2)^2``, in O(S) per row. Near a
    one-hot row those terms are ~1 and cancel to ~eps^2 (p = [1 - 1e-9, 1e-9] would give 0, not
    2e-9), so it is evaluated as :func:`jacobian_norm_from` does, with the top weight kept apart and
    ``1 - top`` taken as the sum of the others: right to round-off for saturated rows too.
    It is 0 for a one-hot row, but it is not a "gradient health" score: it peaks at a two-way
    tie (0.5) and is small for flat rows too, ``sqrt(S - 1) / S`` when uniform (0.24 for S = 16,
    0.12 for S = 64). The gradient that reaches q and k also carries the scale factor: see
    ``sdpa_core.rule_gradients``.

    >>> float(jacobian_norm(np.array([0.5, 0.5])))
    0.5
    """
    p = probabilities(p, "p")
    return rows_jacobian_norm(p).astype(p.dtype, copy=False)


def rows_jacobian_norm(p: np.ndarray) -> np.ndarray:
    """:func:`jacobian_norm` of checked probabilities, in compute_dtype (float32 for float16)."""
    w: np.ndarray = p.astype(compute_dtype(p.dtype)).reshape(-1, p.shape[-1])  # a copy: its top weights are zeroed
    rows = np.arange(len(w))
    at = w.argmax(axis=-1)
    top = w[rows, at]
    w[rows, at] = 0  # the others (a tie keeps its twin here)
    rest = w.sum(axis=-1)
    w /= np.where(rest > 0, rest, 1)[:, None]  # the others relative to their sum: <= 1
    w2 = w * w
    # the top's entry a (1 - a) with 1 - a read as the sum of the others, as it is for a distribution:
    # a softmax row [1 - 1e-20, 1e-20] is stored as [1.0, 1e-20], and its Jacobian's norm is 2e-20
    norm = jacobian_norm_from(top, top * rest, rest, w2.sum(axis=-1), (w2 * w).sum(axis=-1))
    return norm.reshape(p.shape[:-1])


def jacobian_norm_from(top, diag, rest, v2, v3):
    """``||diag(p) - p p^T||_F`` of rows given by parts (no checks; broadcasts): ``top`` the top weight
    ``a``, ``diag`` its Jacobian entry ``a (1 - a) = a r``, ``rest`` the sum ``r`` of the other weights, and
    ``v2``, ``v3`` the sums of squares and cubes of the others divided by ``r`` (0 when ``r`` is 0)::

        ||J||^2 = diag^2 + r^2 (v2 (1 + 2 a^2 + r^2 v2) - 2 r v3)

    (expand ``sum_i p_i^2 (1 - p_i)^2 + sum_{i != j} p_i^2 p_j^2`` with the top term apart). No
    term cancels: each other weight is at most ``min(a, 1 - a) <= 1/2``, so ``2 r v3 <= v2``; and
    scaling by ``r`` plus ``hypot`` keeps a saturated row's norm (2e-27, whose square underflows
    float32) instead of rounding it to 0, which the textbook form does far earlier (its O(1) terms
    cancel to round-off).
    """
    b = v2 * (1 + 2 * top * top + rest * rest * v2) - 2 * rest * v3
    return np.hypot(diag, rest * np.sqrt(np.maximum(b, 0)))
