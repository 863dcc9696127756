"""Scaled dot-product attention with PyTorch's semantics, and its hand-written backward.

Shapes (numpy broadcasting over the leading dims ``...``)::

    q (..., L, E)   k (..., S, E)   v (..., S, Ev)   mask broadcastable to (..., L, S)
    out (..., L, Ev)   weights (..., L, S)
"""
from __future__ import annotations

import math

import numpy as np

from ._checks import float_array, real
from .softmax import softmax_inplace

__all__ = ["attention", "attention_backward", "matmul"]


def attention(q, k, v, *, scale=None, mask=None, causal=False):
    """``softmax(q @ k^T * scale + mask) @ v``, exactly as ``torch.nn.functional.scaled_dot_product_attention``.

    Parameters
    ----------
    q, k, v : array_like of float, shapes (..., L, E), (..., S, E), (..., S, Ev)
        Queries, keys and values; leading dims broadcast. Computed in their common
        floating dtype, so float16 overflows (past 65504) exactly where real hardware would.
    scale : float, optional
        Multiplies the logits. ``None`` means ``1/sqrt(E)``; any finite float is used as given.
    mask : array_like, optional
        Boolean (True = this query may attend to this key) or float (added to the scaled
        logits; ``-inf`` forbids), broadcastable to (..., L, S).
    causal : bool
        Query ``i`` attends to keys ``j <= i`` (top-left aligned, also when L != S).
        Combined with ``mask``, a key must be allowed by both.

    Returns
    -------
    out : ndarray (..., L, Ev)
    weights : ndarray (..., L, S)
        Each row sums to 1, or is all zeros when its query may attend to no key (its output
        row is then zero too; no NaN, no warning).

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
    weights = _weights(q, k, scale, allowed, bias)
    return matmul(weights, v), weights


def attention_backward(q, k, v, grad_out, *, scale=None, mask=None, causal=False):
    """Gradients of ``sum(attention(q, k, v, ...)[0] * grad_out)`` with respect to q, k and v.

    Same arguments as :func:`attention`, plus ``grad_out`` of shape (..., L, Ev).
    Returns ``(dq, dk, dv)`` with the shapes of q, k and v (broadcast dims summed back).

    Notes
    -----
    With ``W = softmax(Z)``, ``Z = scale * q k^T + mask``, ``out = W v`` and ``G = grad_out``::

        dv = W^T G
        dW = G v^T
        dZ = W * (dW - rowsum(W * dW))        # softmax's Jacobian, diag(w) - w w^T, row by row
        dq = scale * dZ k,   dk = scale * dZ^T q

    Masked entries have ``W = 0``, so no gradient flows through them.
    """
    q, k, v, scale, allowed, bias = _prepare(q, k, v, scale, mask, causal)
    grad_out = float_array(grad_out, "grad_out", min_ndim=2).astype(q.dtype, copy=False)
    out_shape = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2]) + (q.shape[-2], v.shape[-1])
    try:
        np.broadcast_shapes(grad_out.shape, out_shape)
    except ValueError:
        raise ValueError(f"grad_out must have the output's shape {out_shape}, got {grad_out.shape}") from None
    w = _weights(q, k, scale, allowed, bias)
    with np.errstate(over="ignore", invalid="ignore"):
        dv = matmul(w.swapaxes(-1, -2), grad_out)
        dz = matmul(grad_out, v.swapaxes(-1, -2))          # dW, then turned into dZ in place
        dz -= np.einsum("...ij,...ij->...i", dz, w)[..., None]  # rowsum(W * dW) without an L x S temporary
        dz *= w                                             # dZ / scale: scale goes on the smaller products
        dq = matmul(dz, k) * scale
        dk = matmul(dz.swapaxes(-1, -2), q) * scale
    return _unbroadcast(dq, q.shape), _unbroadcast(dk, k.shape), _unbroadcast(dv, v.shape)


def _prepare(q, k, v, scale, mask, causal):
    """Validate once; return arrays in one float dtype, the scale, and the mask split into
    a boolean ``allowed`` part and a float ``bias`` part (either None when unused)."""
    q = float_array(q, "q", min_ndim=2)
    k = float_array(k, "k", min_ndim=2)
    v = float_array(v, "v", min_ndim=2)
    dtype = np.result_type(q, k, v)
    if not (q.dtype == k.dtype == v.dtype):
        q, k, v = (a.astype(dtype, copy=False) for a in (q, k, v))
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must have the same feature size E (last dim): q has {q.shape[-1]}, k has {k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same number of keys S (second-to-last dim): "
            f"k has {k.shape[-2]}, v has {v.shape[-2]}")
    try:
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    except ValueError:
        raise ValueError(f"the leading (batch) dims of q {q.shape}, k {k.shape} and v {v.shape} "
                         f"do not broadcast together") from None
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"causal must be True or False, got {causal!r}")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else real(scale, "scale")
    L, S = q.shape[-2], k.shape[-2]
    allowed = bias = None
    if mask is not None:
        mask = np.asarray(mask)
        try:
            np.broadcast_shapes(mask.shape, batch + (L, S))
        except ValueError:
            raise ValueError(f"mask of shape {mask.shape} does not broadcast to (..., L, S) = "
                             f"{batch + (L, S)}") from None
        if mask.dtype == bool:
            allowed = mask
        elif mask.dtype.kind == "f":
            bias = mask.astype(dtype, copy=False)
        else:
            raise TypeError(f"mask must be boolean (True = may attend) or float (added to the logits), "
                            f"got dtype {mask.dtype}")
    if causal:
        tri = np.tri(L, S, dtype=bool)  # top-left aligned: key j allowed for query i when j <= i
        allowed = tri if allowed is None else allowed & tri
    return q, k, v, np.asarray(scale, dtype=dtype), allowed, bias


def _weights(q, k, scale, allowed, bias):
    """Attention weights. Unmasked inputs whose logits provably cannot overflow ``exp`` skip the
    max-shift: one matmul, one in-place exp, one normalisation (see ``_exp_is_safe``)."""
    # Scaling q before the matmul (L*E multiplies instead of L*S) is what PyTorch's math path does too.
    with np.errstate(over="ignore", invalid="ignore"):
        qs = q * scale
        z = matmul(qs, k.swapaxes(-1, -2))
        if bias is None and allowed is None and _exp_is_safe(qs, k):
            np.exp(z, out=z)
            z *= np.reciprocal(z.sum(axis=-1, keepdims=True))
            return z
        if bias is not None:
            z = z + bias
        if allowed is not None:
            z = np.where(allowed, z, np.asarray(-np.inf, dtype=z.dtype))
        return softmax_inplace(z)  # a row with no allowed key becomes all zeros


def _exp_is_safe(qs, k) -> bool:
    """True when no logit can overflow ``exp`` or make every weight of a row underflow.

    Cauchy-Schwarz: ``|qs_i . k_j| <= |qs_i| max_j |k_j| = b``. If ``b + log S`` stays well below
    the log of the dtype's largest number, ``exp(z)`` and its row sum are finite and every term is
    at least ``exp(-b)`` > 0, so the usual max-shift (which cancels exactly) can be skipped: two
    passes over the L x S logits saved for O((L + S) E) work. Typical scaled inputs pass;
    unscaled large-d_k logits take the shifted path.
    """
    limit = math.log(np.finfo(qs.dtype).max) - math.log(k.shape[-2]) - 2
    qn = np.sqrt(np.einsum("...e,...e->...", qs, qs).max())
    kn = np.sqrt(np.einsum("...e,...e->...", k, k).max())
    bound = float(qn) * float(kn)
    return bound < limit  # False for NaN too


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
