"""Scaled dot-product attention with PyTorch's semantics, and its hand-written backward.

Shapes (numpy broadcasting over the leading dims ``...``)::

    q (..., L, E)   k (..., S, E)   v (..., S, Ev)   mask broadcastable to (..., L, S)
    out (..., L, Ev)   weights (..., L, S)
"""

from __future__ import annotations

import math

import numpy as np

from ._checks import FLOAT_DTYPES, _asarray, boolean, finite, float_array, no_nan_or_pos_inf, real
from .softmax import compute_dtype, normalize_inplace, softmax_inplace

__all__ = ["attention", "attention_backward", "logits", "matmul"]


def attention(q, k, v, *, scale=None, mask=None, causal=False, softcap=None):
    """``softmax(q @ k^T * scale + mask) @ v``, exactly as ``torch.nn.functional.scaled_dot_product_attention``.

    Parameters
    ----------
    q, k, v : array_like of float, shapes (..., L, E), (..., S, E), (..., S, Ev)
        Queries, keys and values; leading dims broadcast. Every dim must be >= 1 (no empty
        arrays) and every entry finite. Computed in their common floating dtype: in float16
        the logits are rounded to half precision, so they overflow (past 65504) exactly where
        real hardware would; the softmax and its sums then run in float32, as PyTorch's CPU
        kernels do, and the results are rounded to half once.
    scale : float, optional
        Multiplies the logits. ``None`` means ``1/sqrt(E)``; any finite real is used as given
        (applied in float64 to q, then rounded to q's dtype).
    mask : array_like, optional
        Boolean (True = this query may attend to this key) or float (added to the scaled
        logits; ``-inf`` forbids, NaN and ``+inf`` are refused), broadcastable to (..., L, S).
        A float mask of any float dtype is cast to the dtype the logits are computed in
        (float32 for float16 q) and checked there: an entry that becomes ``+inf`` (1e39 for
        float32 q) is refused; one that becomes ``-inf`` forbids its key.
    causal : bool
        Query ``i`` attends to keys ``j <= i`` (top-left aligned, also when L != S).
        Combined with ``mask``, a key must be allowed by both.
    softcap : float, optional
        A cap c > 0 on the scaled logits, ``c tanh(z / c)`` before the mask (Gemma 2's
        ``attn_logit_softcapping``; FlashAttention's ``softcap``). torch's SDPA has no such
        argument: it is the eager attention of transformers' Gemma 2. A logit that overflowed
        to inf is capped to c like any other. None: no cap.

    Returns
    -------
    out : ndarray (..., L, Ev)
    weights : ndarray (..., L, S)
        Each row sums to 1, or is all zeros when its query may attend to no key (its output
        row is then zero too; no NaN, no warning). A row whose logits overflowed to ``inf``
        is NaN: the overflow shows instead of a wrong number.

    Raises
    ------
    TypeError
        Non-float q, k or v, a mask that is neither boolean nor float, a non-real scale, a
        numpy masked array (its mask would be lost).
    ValueError
        Empty or non-finite inputs, mismatched shapes, a non-finite scale, a mask entry past the
        compute dtype's range.

    Notes
    -----
    ``weights = softmax(scale * q k^T + mask)``, ``out = weights v``. With ``scale = 1/sqrt(E)``
    the logits of independent unit-variance q, k have variance 1 whatever E is.

    Examples
    --------
    >>> q = k = v = np.eye(2)
    >>> out, w = attention(q, k, v)
    >>> w.round(3)
    array([[0.67, 0.33],
           [0.33, 0.67]])
    """
    q, k, v, scale, allowed, bias = _prepare(q, k, v, scale, mask, causal)
    weights = _weights(q, k, scale, allowed, bias, _softcap(softcap))  # (..., L, S) in compute_dtype
    with np.errstate(over="ignore", invalid="ignore"):  # float16: results past 65504 round to inf
        out = (weights @ v.astype(weights.dtype, copy=False)).astype(v.dtype, copy=False)
        return out, weights.astype(q.dtype, copy=False)


def attention_backward(q, k, v, grad_out, *, scale=None, mask=None, causal=False, softcap=None):
    """Gradients of ``sum(attention(q, k, v, ...)[0] * grad_out)`` with respect to q, k and v.

    Same arguments as :func:`attention`, plus ``grad_out``: the output's shape (..., L, Ev), or
    a shape that broadcasts to it without changing it (``(1, 1)`` or a scalar ``1.0`` means the
    gradient of ``sum(out)``); finite. A grad_out that would broadcast the output to a larger
    shape is refused: that is the gradient of a different loss.
    Returns ``(dq, dk, dv)`` with the shapes of q, k and v (broadcast dims summed back), in
    their dtype (float16 inputs: computed in float32, rounded once).

    Notes
    -----
    With ``W = softmax(Z)``, ``Z = scale * q k^T + mask``, ``out = W v`` and ``G = grad_out``::

        dv = W^T G
        dW = G v^T
        dZ = W * (dW - rowsum(W * dW))        # softmax's Jacobian, diag(w) - w w^T, row by row
        dq = scale * dZ k,   dk = scale * dZ^T q

    Masked entries have ``W = 0``, so no gradient flows through them.

    A gradient past the dtype's range comes out inf or NaN, as PyTorch's does, and no numpy warning is
    raised: float16 results past 65504, or in float64 grad_out and v both near 1e200 (``dW = G v^T`` is
    then 1e400, inf, and ``dW - rowsum(W * dW)`` is inf - inf = NaN). Scale them down first to see
    finite numbers: every gradient is linear in grad_out, and dq, dk are linear in v.
    """
    return _attention_backward(q, k, v, grad_out, scale, mask, causal, softcap)


def _attention_backward(q, k, v, grad_out, scale, mask, causal, softcap, dq_only=False):
    """:func:`attention_backward`; with ``dq_only``, ``(dq, None, None)``: dk and dv are not computed (two
    of the four products), for a caller that reads only the queries' gradient."""
    q, k, v, scale, allowed, bias = _prepare(q, k, v, scale, mask, causal)
    out_shape = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2]) + (q.shape[-2], v.shape[-1])
    grad_out = finite(float_array(grad_out, "grad_out", min_ndim=0), "grad_out", "its gradients would be too")
    try:
        fits = np.broadcast_shapes(grad_out.shape, out_shape) == out_shape
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(
            f"grad_out must have the output's shape {out_shape} (or broadcast to it), got {grad_out.shape}"
        )
    softcap = _softcap(softcap)
    w = _weights(q, k, scale, allowed, bias, softcap)  # in compute_dtype: float32 for float16
    slope = None if softcap is None else cap_slope(q, k, scale, softcap, w.dtype)
    return _backward_from_weights(q, k, v, w, np.broadcast_to(grad_out, out_shape), scale, slope, dq_only)


def _softcap(softcap) -> float | None:
    """``softcap`` checked: None (no cap) or a finite real > 0."""
    return None if softcap is None else real(softcap, "softcap", low=0.0, low_open=True)


def cap_slope(q, k, scale: float, softcap: float, dtype) -> np.ndarray:
    """``1 - tanh(z / softcap)^2`` of the scaled logits ``z`` (no checks), in ``dtype``: what the gradient with
    respect to the capped logits is multiplied by to give the one with respect to z."""
    with np.errstate(over="ignore", invalid="ignore"):
        t = np.tanh(matmul(_times(q, scale), k.swapaxes(-1, -2)).astype(np.float64) / softcap)
        return (1.0 - t * t).astype(dtype, copy=False)


def _backward_from_weights(q, k, v, w, grad_out, scale: float, slope=None, dq_only=False):
    """:func:`attention_backward` given the forward pass's weights ``w`` (in :func:`compute_dtype`), for a
    caller that has just computed them with :func:`attention` and checked its arguments there (the tiny
    model's training step): no checks, and the weights are not computed a second time. ``grad_out`` has
    the output's shape; ``slope``, for soft-capped logits, is :func:`cap_slope`; ``dq_only``: see
    :func:`_attention_backward`."""
    dtype = q.dtype
    q, k, v = (a.astype(w.dtype, copy=False) for a in (q, k, v))
    g = grad_out.astype(w.dtype, copy=False)
    with np.errstate(over="ignore", invalid="ignore"):
        dz = g @ v.swapaxes(-1, -2)  # dW, then turned into dZ in place
        dz -= np.einsum("...ij,...ij->...i", dz, w)[..., None]  # rowsum(W * dW) without an L x S temporary
        dz *= w  # dZ / scale: scale goes on the smaller products
        if slope is not None:  # through c tanh(z / c)
            dz *= slope
        dq = _times_fresh(dz @ k, scale)
        if dq_only:
            return _unbroadcast(dq, q.shape).astype(dtype, copy=False), None, None
        dk = _times_fresh(dz.swapaxes(-1, -2) @ q, scale)
        dv = w.swapaxes(-1, -2) @ g
        return tuple(_unbroadcast(d, a.shape).astype(dtype, copy=False) for d, a in ((dq, q), (dk, k), (dv, v)))


def logits(q: np.ndarray, k: np.ndarray, scale: float) -> np.ndarray:
    """``(q * scale) @ k^T`` in q's dtype, as attention computes them (no checks): the product with
    the scale is taken in float64 and rounded once, so a float16 q times 1e-8 is not 0 times q."""
    return matmul(_times(q, scale), k.swapaxes(-1, -2))


def _times(a: np.ndarray, scale: float) -> np.ndarray:
    """``a * scale`` rounded once to a's dtype (numpy would first round the scale to float16/32)."""
    if a.dtype == np.float64:
        return a * scale
    with np.errstate(over="ignore"):
        return (a * np.float64(scale)).astype(a.dtype)


def _times_fresh(a: np.ndarray, scale: float) -> np.ndarray:
    """:func:`_times` of an array nothing else holds: float64 is scaled in place (the same numbers, without a
    second array of its size)."""
    if a.dtype == np.float64:
        a *= scale
        return a
    return _times(a, scale)


def _prepare(q, k, v, scale, mask, causal):
    """Validate once; return arrays in one float dtype, the scale as a Python float, and the mask
    split into a boolean ``allowed`` part and a float ``bias`` part (either None when unused)."""
    why = "attention of it would be meaningless"
    q = finite(float_array(q, "q", min_ndim=2), "q", why)
    k = finite(float_array(k, "k", min_ndim=2), "k", why)
    v = finite(float_array(v, "v", min_ndim=2), "v", why)
    dtype = np.result_type(q, k, v)
    if not (q.dtype == k.dtype == v.dtype):
        q, k, v = (a.astype(dtype, copy=False) for a in (q, k, v))
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must have the same feature size E (last dim): q has {q.shape[-1]}, k has {k.shape[-1]}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of keys S (second-to-last dim): "
            f"k has {k.shape[-2]}, v has {v.shape[-2]}"
        )
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(
            f"the leading (batch) dims of q {q.shape}, k {k.shape} and v {v.shape} do not broadcast together"
        ) from None
    causal = boolean(causal, "causal")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else real(scale, "scale")
    L, S = q.shape[-2], k.shape[-2]
    allowed = bias = None
    if mask is not None:
        mask = _asarray(mask, "mask")
        if mask.dtype == bool:
            allowed = mask
        elif mask.dtype.type in FLOAT_DTYPES:
            bias = _bias(no_nan_or_pos_inf(mask, "mask"), compute_dtype(dtype))
        else:
            raise TypeError(
                f"mask must be boolean (True = may attend) or float16/32/64 (added to the logits), "
                f"got dtype {mask.dtype}"
            )
        try:
            fits = np.broadcast_shapes(mask.shape, batch + (L, S)) == batch + (L, S)
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(f"mask of shape {mask.shape} does not broadcast to (..., L, S) = {batch + (L, S)}")
    if causal:
        tri = np.tri(L, S, dtype=bool)  # top-left aligned: key j allowed for query i when j <= i
        allowed = tri if allowed is None else allowed & tri
    return q, k, v, scale, allowed, bias


def _bias(mask: np.ndarray, dtype) -> np.ndarray:
    """A float mask in the dtype the logits are computed in, checked there: a float64 1e39 is +inf in
    float32 (NaN weights), so it is refused. PyTorch refuses any float mask whose dtype differs from
    the query's; casting first keeps the usual float64 numpy mask usable with float32 q, k, v, and the
    check after the cast refuses exactly the masks that cast would break. -1e300 for float32 logits
    is -inf: still "forbidden"."""
    with np.errstate(over="ignore"):
        bias = mask.astype(dtype, copy=False)
    if bias.dtype != mask.dtype and np.isposinf(bias).any():
        big = float(mask[np.isposinf(bias)].flat[0])
        raise ValueError(
            f"mask has an entry ({big:.3g}) past {np.dtype(dtype).name}'s largest number "
            f"({float(np.finfo(dtype).max):.3g}), the dtype these logits are computed in: it would be +inf "
            f"there and its row NaN; use -inf (or a boolean mask) to forbid a key, finite values to bias one"
        )
    return bias


def _weights(q, k, scale, allowed, bias, softcap=None):
    """Attention weights in :func:`compute_dtype` (float32 for float16 q, k). Unmasked inputs whose
    logits provably cannot overflow ``exp`` skip the max-shift: one matmul, one in-place exp, one
    normalisation (see ``_exp_is_safe``)."""
    # Scaling q before the matmul (L*E multiplies instead of L*S) is what PyTorch's math path does too.
    with np.errstate(over="ignore", invalid="ignore"):
        qs = _times(q, scale)
        z = matmul(qs, k.swapaxes(-1, -2)).astype(compute_dtype(q.dtype), copy=False)
        if softcap is not None:  # c tanh(z / c) (Gemma 2, FlashAttention's softcap): bounded, before the mask
            z = (softcap * np.tanh(z.astype(np.float64) / softcap)).astype(z.dtype)  # float64: any cap
        elif bias is None and allowed is None and _exp_is_safe(qs, k, z.dtype):
            np.exp(z, out=z)
            return normalize_inplace(z)
        if bias is not None:
            z = z + bias
        if allowed is not None:
            z = np.where(allowed, z, np.asarray(-np.inf, dtype=z.dtype))
        return softmax_inplace(z)  # a row with no allowed key becomes all zeros


def _exp_is_safe(qs, k, dtype) -> bool:
    """True when no logit can overflow ``exp`` in ``dtype`` or make every weight of a row underflow.

    Cauchy-Schwarz: ``|qs_i . k_j| <= |qs_i| max_j |k_j| = b``. If ``b + log S`` stays well below
    the log of the dtype's largest number, ``exp(z)`` and its row sum are finite and every term is
    at least ``exp(-b)`` > 0, so the usual max-shift (which cancels exactly) can be skipped: two
    passes over the L x S logits saved for O((L + S) E) work. Typical scaled inputs pass;
    unscaled large-d_k logits take the shifted path. The norms are taken in float64 (a float16
    square overflows past 256).
    """
    limit = math.log(np.finfo(dtype).max) - math.log(k.shape[-2]) - 2
    qn = math.sqrt(float(np.einsum("...e,...e->...", qs, qs, dtype=np.float64).max()))
    kn = math.sqrt(float(np.einsum("...e,...e->...", k, k, dtype=np.float64).max()))
    return qn * kn < limit  # False for inf and NaN too


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` in the inputs' dtype. float16 is multiplied in float32 and rounded once, as half
    precision tensor cores do (products accumulate in float32); results past 65504 become inf.
    It also avoids numpy's float16 matmul, which has no BLAS and is ~100x slower."""
    if a.dtype == np.float16:
        with np.errstate(over="ignore"):
            return (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    return a @ b


def _unbroadcast(grad: np.ndarray, shape: tuple) -> np.ndarray:
    """Sum ``grad`` over the dims that broadcasting added or stretched, back to ``shape``."""
    if grad.shape == shape:
        return grad
    extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(extra))) if extra else grad
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    return grad.sum(axis=stretched, keepdims=True) if stretched else grad
