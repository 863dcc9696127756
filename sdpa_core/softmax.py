"""Softmax three ways: stable, log-space, and the textbook one that overflows on purpose."""
from __future__ import annotations

import numpy as np

from ._checks import _axis, float_array

__all__ = ["softmax", "log_softmax", "naive_softmax"]


def softmax(x, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis``.

    Parameters
    ----------
    x : array_like of float
        Logits. ``-inf`` entries get probability 0; a slice that is entirely ``-inf``
        (nothing to attend to) gives all zeros instead of NaN.
    axis : int
        Axis along which the probabilities sum to 1.

    Notes
    -----
    ``softmax(x)_i = exp(x_i - m) / sum_j exp(x_j - m)`` with ``m = max_j x_j``: the shift
    cancels mathematically and keeps every exponent <= 0, so nothing overflows.

    Examples
    --------
    >>> softmax(np.array([1000.0, 0.0])).round(3)
    array([1., 0.])
    """
    x = float_array(x, "x")
    _axis(x, axis, "x")
    return softmax_inplace(x.copy(), axis)


def log_softmax(x, axis: int = -1) -> np.ndarray:
    """``log(softmax(x))`` computed as ``x - logsumexp(x)``, exact even where softmax underflows to 0.

    A slice that is entirely ``-inf`` gives ``-inf`` everywhere.
    """
    x = float_array(x, "x")
    _axis(x, axis, "x")
    shifted = x - _finite_max(x, axis)
    e = np.exp(shifted)
    # log(sum e) = log1p(sum of the others): the top term is exactly 1, so keep it out of the sum
    np.put_along_axis(e, np.argmax(shifted, axis=axis, keepdims=True), 0, axis=axis)
    with np.errstate(invalid="ignore"):
        shifted -= np.log1p(e.sum(axis=axis, keepdims=True))
    return shifted


def naive_softmax(x, axis: int = -1) -> np.ndarray:
    """Textbook ``exp(x) / sum(exp(x))`` with no shift, kept to show overflow.

    ``naive_softmax([1000.0, 0.0])`` is ``[nan, 0.]``: ``exp(1000)`` is ``inf`` in float64 and
    ``inf / inf`` is NaN. In float16 it already fails at ``x > 11.09`` (``exp(x) > 65504``).
    """
    x = float_array(x, "x")
    _axis(x, axis, "x")
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x)
        return e / e.sum(axis=axis, keepdims=True)


def _finite_max(x: np.ndarray, axis: int) -> np.ndarray:
    """Row maximum to shift by; 0 where the row has no finite maximum (all -inf), so exp gives 0."""
    m = x.max(axis=axis, keepdims=True)
    if not np.isfinite(m).all():
        m = np.where(np.isneginf(m), 0, m).astype(x.dtype, copy=False)
    return m


def softmax_inplace(z: np.ndarray, axis: int = -1) -> np.ndarray:
    """Overwrite the float array ``z`` with its stable softmax along ``axis`` and return it (no checks).

    Shared by :func:`softmax` and attention's masked path: all -inf slices become all zeros."""
    z -= _finite_max(z, axis)
    with np.errstate(invalid="ignore"):  # +inf - +inf only when the logits themselves overflowed
        np.exp(z, out=z)
    total = z.sum(axis=axis, keepdims=True)
    total[total == 0] = 1
    z *= np.reciprocal(total)
    return z
