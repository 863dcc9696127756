"""Softmax three ways: stable, log-space, and the textbook one that overflows on purpose."""

from __future__ import annotations

import numpy as np

from ._checks import _axis, float_array, no_nan_or_pos_inf

__all__ = ["softmax", "log_softmax", "naive_softmax"]


def compute_dtype(dtype) -> type:
    """The dtype softmaxes and their row totals are computed in: float32 for float16 input (a total
    of more than 65504 terms, or of a few large ones, would overflow half precision; PyTorch's CPU
    kernels do the same), the input's own dtype otherwise. Results are rounded back once."""
    return np.float32 if np.dtype(dtype) == np.float16 else np.dtype(dtype).type


def softmax(x, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax along ``axis``.

    Parameters
    ----------
    x : array_like of float
        Logits, non-empty. ``-inf`` entries get probability 0; a slice that is entirely ``-inf``
        (nothing to attend to) gives all zeros instead of NaN. NaN and ``+inf`` are refused
        (ValueError): no probabilities would be right.
    axis : int
        Axis along which the probabilities sum to 1.

    Notes
    -----
    ``softmax(x)_i = exp(x_i - m) / sum_j exp(x_j - m)`` with ``m = max_j x_j``: the shift
    cancels mathematically and keeps every exponent <= 0, so nothing overflows. float16 input
    is computed in float32 and rounded once, so 70000 equal logits give 1/70000 each, not 0.

    Examples
    --------
    >>> softmax(np.array([1000.0, 0.0])).round(3)
    array([1., 0.])
    """
    x, axis = _logits(x, axis)
    return softmax_inplace(x.astype(compute_dtype(x.dtype)), axis).astype(x.dtype, copy=False)


def log_softmax(x, axis: int = -1) -> np.ndarray:
    """``log(softmax(x))`` computed as ``x - logsumexp(x)``, exact even where softmax underflows to 0.

    A slice that is entirely ``-inf`` gives ``-inf`` everywhere; NaN and ``+inf`` are refused.
    float16 input is computed in float32 and rounded once.
    """
    x, axis = _logits(x, axis)
    return unchecked_log_softmax(x, axis)


def unchecked_log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """:func:`log_softmax` without the checks: NaN and inf propagate (the model's loss shows divergence so)."""
    shifted: np.ndarray = x.astype(compute_dtype(x.dtype))
    # over: -1.7e308 - 1.7e308 is -inf, and so is float16's -65504 - 65504: the right answer, rounded
    with np.errstate(over="ignore", invalid="ignore"):
        shifted -= _finite_max(shifted, axis)
        e = np.exp(shifted)
        # log(sum e) = log1p(sum of the others): the top term is exactly 1, so keep it out of the sum
        np.put_along_axis(e, np.argmax(shifted, axis=axis, keepdims=True), 0, axis=axis)
        shifted -= np.log1p(e.sum(axis=axis, keepdims=True))
        return shifted.astype(x.dtype, copy=False)


def naive_softmax(x, axis: int = -1) -> np.ndarray:
    """Textbook ``exp(x) / sum(exp(x))`` with no shift, kept to show overflow.

    ``naive_softmax([1000.0, 0.0])`` is ``[nan, 0.]``: ``exp(1000)`` is ``inf`` in float64 and
    ``inf / inf`` is NaN. In float16 it already fails at ``x > 11.09`` (``exp(x) > 65504``).
    Only the exponentials overflow on purpose: the total is accumulated like softmax's (float32
    for float16 input). Input NaN and ``+inf`` are refused, as by :func:`softmax`.
    """
    x, axis = _logits(x, axis)
    return naive_inplace(x.copy(), axis)


def _logits(x, axis):
    x = no_nan_or_pos_inf(float_array(x, "x"), "x")
    return x, _axis(x, axis, "x")


def naive_inplace(e: np.ndarray, axis: int = -1) -> np.ndarray:
    """Overwrite ``e`` with its naive (unshifted) softmax along ``axis`` (no checks; inf/NaN propagate)."""
    with np.errstate(over="ignore", invalid="ignore"):
        np.exp(e, out=e)
        total = e.sum(axis=axis, keepdims=True, dtype=compute_dtype(e.dtype))
        np.divide(e, total, out=e, casting="same_kind")
    return e


def _finite_max(x: np.ndarray, axis: int) -> np.ndarray:
    """Row maximum to shift by; 0 where the row has no finite maximum (all -inf), so exp gives 0."""
    m = x.max(axis=axis, keepdims=True)
    if not np.isfinite(m).all():
        m = np.where(np.isneginf(m), 0, m).astype(x.dtype, copy=False)
    return m


def softmax_inplace(z: np.ndarray, axis: int = -1) -> np.ndarray:
    """Overwrite the float array ``z`` with its stable softmax along ``axis`` and return it (no checks).

    Shared by :func:`softmax` and attention's masked path: all -inf slices become all zeros."""
    # over: -1.7e308 - 1.7e308 is -inf, whose weight 0 is right; invalid: +inf - +inf only when the
    # logits themselves overflowed
    with np.errstate(over="ignore", invalid="ignore"):
        z -= _finite_max(z, axis)
        np.exp(z, out=z)
    return normalize_inplace(z, axis)


def normalize_inplace(e: np.ndarray, axis: int = -1) -> np.ndarray:
    """Divide the non-negative ``e`` in place by its totals along ``axis``, accumulated in
    :func:`compute_dtype` (no overflow of float16 sums); all-zero slices stay zero."""
    total = e.sum(axis=axis, keepdims=True, dtype=compute_dtype(e.dtype))
    total[total == 0] = 1
    with np.errstate(invalid="ignore"):  # NaN rows (overflowed logits) stay NaN
        np.multiply(e, np.reciprocal(total), out=e, casting="same_kind")
    return e
