"""Attention and its gradients under each scaling rule, and the per-row readouts the page shows
(top weight, tokens attended, saturation, gradient norms down to their round-off size)."""

from __future__ import annotations

import math

import numpy as np

from ._checks import (
    _asarray,
    boolean,
    finite,
    float_array,
    integer,
    names,
    probabilities,
)
from .attention import _attention_backward, attention, logits as attention_logits
from .scaling import (
    RULE_NAMES,
    RULES,
    check_rule,
    logit_scale,
    qk_normalize,
    qk_normalize_backward,
    rule_name,
)
from .stats import _entropy, above, rows_jacobian_norm

from .draws import MAX_D_K, _common, draw_qkv, upstream_gradient

__all__ = [
    "rule_attention",
    "rule_gradients",
    "query_gradient_norms",
    "RowNorms",
    "row_stats",
    "rule_readouts",
    "METRICS",
    "MAX_FLOPS",
]

#: Per-matrix readouts, each averaged over query rows; "saturated" is the share of rows whose top
#: weight exceeds ``SATURATION`` (0.99); "jacobian_norm" is ||diag(p) - p p^T||_F (see stats).
METRICS = ("logit_std", "entropy", "max_weight", "effective_support", "saturated", "jacobian_norm")
MAX_FLOPS = 2**32  # cap on the multiply-adds of query_gradient_norms and precision_sweep (seconds, not hours)


def rule_attention(q, k, v, rule, *, alpha=0.5, temperature=0.1, causal=False):
    """Attention of (n, d_k) q, k, v under a page-level rule; returns ``(out, weights, logits)``.

    ``logits`` are the scaled scores before masking (what the softmax sees), in q's dtype
    (float16 logits past 65504 are inf), soft-capped under a rule with a cap.
    """
    rule, alpha, temperature = check_rule(rule, alpha=alpha, temperature=temperature)
    q, k = _vectors(q, "q"), _vectors(k, "k")
    if RULES[rule].normalizes:
        q, k = qk_normalize(q), qk_normalize(k)
    scale = logit_scale(q.shape[-1], rule, alpha=alpha, temperature=temperature, n=_length(rule, k))
    out, weights = attention(q, k, v, scale=scale, causal=causal, softcap=RULES[rule].cap)
    q, k = (a.astype(weights.dtype, copy=False) for a in (q, k))  # the common dtype attention used
    with np.errstate(over="ignore", invalid="ignore"):
        return out, weights, RULES[rule].capped(attention_logits(q, k, scale))


def _length(rule: str, k: np.ndarray) -> int | None:
    """The sequence length a rule with a ``length`` sees: the number of keys (every row's, causal or not)."""
    return k.shape[-2] if RULES[rule].length is not None else None


def _vectors(x, name: str) -> np.ndarray:
    """q or k of a rule: checked here, so a message names q or k rather than qk_normalize's x."""
    return finite(float_array(x, name, min_ndim=2), name, "attention of it would be meaningless")


def rule_gradients(q, k, v, grad_out, rule, *, alpha=0.5, temperature=0.1, causal=False):
    """Gradients of ``sum(out * grad_out)`` for :func:`rule_attention`, with respect to the raw
    q, k and v: ``(dq, dk, dv)``. The rule's scale is inside (chain rule), so is its soft-cap, and for a
    rule that normalises q and k ("qknorm") the gradient also passes back through the normalisation.

    Shapes: q, k (n, d_k), v (n, d_v), grad_out (n, d_v).

    A gradient past the dtype's range (grad_out and v both near 1e200 in float64: ``grad_out v^T`` is
    1e400) comes out inf or NaN, as PyTorch's would, without a numpy warning (see
    :func:`sdpa_core.attention_backward`); :func:`rule_readouts` gives such a row's norm exactly.
    """
    return _rule_backward(q, k, v, grad_out, rule, alpha, temperature, causal)


def _rule_backward(q, k, v, grad_out, rule, alpha, temperature, causal, dq_only=False):
    """:func:`rule_gradients`; with ``dq_only``, ``(dq, None, None)`` (the same dq, half the products)."""
    rule, alpha, temperature = check_rule(rule, alpha=alpha, temperature=temperature)
    q, k = _vectors(q, "q"), _vectors(k, "k")
    normalizes = RULES[rule].normalizes
    qn, kn = (qk_normalize(q), qk_normalize(k)) if normalizes else (q, k)
    scale = logit_scale(q.shape[-1], rule, alpha=alpha, temperature=temperature, n=_length(rule, k))
    dq, dk, dv = _attention_backward(qn, kn, v, grad_out, scale, None, causal, RULES[rule].cap, dq_only)
    if normalizes:
        dq = qk_normalize_backward(q, dq)
        dk = None if dq_only else qk_normalize_backward(k, dk)
    return dq, dk, dv


def query_gradient_norms(
    n,
    d_k,
    rules=RULE_NAMES,
    *,
    reps=1,
    sigma=1.0,
    rho=0.0,
    seed=0,
    alpha=0.5,
    temperature=0.1,
    causal=False,
    flush_round_off=False,
) -> dict[str, np.ndarray]:
    """``||dL/dq_i||`` of every query row, per rule, on the same random q, k, v and upstream gradient.

    ``reps`` independent (n x d_k) draws with seeds ``seed, seed+1, ...`` (:func:`draw_qkv`, float64);
    the upstream gradient ``dL/dout`` of each draw has N(0, 1) entries from ``default_rng([seed, 1])``
    (what :func:`upstream_gradient` returns). Returns ``rule -> (reps * n,)`` norms, rows in order, as a
    :class:`RowNorms` whose ``floors`` give each row's float64 round-off size (``dq_floor`` of
    :func:`rule_readouts` for its draw): a count against a threshold below it would count round-off.
    With ``flush_round_off``, norms below their floor are returned as 0, so every numpy build gives
    the same numbers.
    """
    n = integer(n, "n", low=2, high=512)
    d_k = integer(d_k, "d_k", low=1, high=MAX_D_K)
    reps = integer(reps, "reps", low=1, high=1024)
    rules = names(rules, "rules", rule_name)
    check_rule(rules[0], alpha=alpha, temperature=temperature)
    seed = integer(seed, "seed", low=0)
    _common(sigma, rho, seed)
    causal = boolean(causal, "causal")
    flush_round_off = boolean(flush_round_off, "flush_round_off")
    if reps * len(rules) * n * n * d_k > MAX_FLOPS:
        raise ValueError(f"too much work: reps * len(rules) * n * n * d_k must be <= {MAX_FLOPS}")
    draws = [draw_qkv(n, d_k, sigma=sigma, rho=rho, seed=seed + i) for i in range(reps)]
    q, k, v = (np.stack(a) for a in zip(*draws))  # (reps, n, d_k): one call per rule, not one per draw
    g = np.stack([upstream_gradient(n, d_k, seed=seed + i) for i in range(reps)])
    shared: list[dict] = [{} for _ in range(reps)]  # _round_off's pieces of each draw, once per kind of rule
    out, floors = {}, {}
    for r in rules:
        dq = _rule_backward(q, k, v, g, r, alpha, temperature, causal, dq_only=True)[0]
        norms = np.linalg.norm(dq, axis=-1)  # (reps, n)
        scale = logit_scale(d_k, r, alpha=alpha, temperature=temperature, n=_length(r, k))  # every draw's
        floor = np.array(
            [
                _round_off(qi, ki, vi, g[i], r, alpha, temperature, shared=shared[i], scale=scale)
                for i, (qi, ki, vi) in enumerate(draws)
            ]
        )
        floor = np.broadcast_to(floor[:, None], norms.shape)
        if flush_round_off:
            norms[norms < floor] = 0.0
        out[r], floors[r] = norms.reshape(-1), floor.reshape(-1).copy()
    return RowNorms(out, floors)


class RowNorms(dict):
    """``rule -> (rows,)`` gradient norms (a dict, so it iterates like one), with ``floors``: ``rule ->
    (rows,)`` the float64 round-off size of each row's norm (below it a norm is round-off)."""

    def __init__(self, norms: dict, floors: dict):
        super().__init__(norms)
        self.floors = floors


def row_stats(weights, logits, visible=None) -> dict[str, float]:
    """The page's readouts for one attention matrix, averaged over query rows.

    ``weights`` (..., L, S) and ``logits`` are float arrays of the same shape; finite weight rows
    must be probabilities (as for :func:`sdpa_core.entropy`). Rows with no allowed key (all-zero
    weights) are left out; at least one row must be left. ``visible`` (boolean, the logits' shape,
    selecting at least one) limits the logit std to the scores the softmax can see (e.g. under a
    causal mask). Non-finite logits (float16 overflow) give an infinite logit_std; NaN or inf
    weights (the rows of overflowed logits) make every weight statistic NaN.

    "saturated" is the share among rows with a choice: a row that sees one key (causal row 0, or
    every row when S = 1) puts weight 1 on it at any logits, so counting it would call a flat
    softmax saturated; it is NaN when no row has a choice. The other statistics average every row.
    """
    w = float_array(weights, "weights")
    z = float_array(logits, "logits")
    if w.shape != z.shape:
        raise ValueError(f"weights and logits must have the same shape, got {w.shape} and {z.shape}")
    if visible is not None:
        visible = _asarray(visible, "visible")
        if visible.dtype != bool:
            raise TypeError(
                f"visible must be a boolean array (True = the softmax sees that logit), got dtype {visible.dtype}"
            )
        if visible.shape != z.shape:
            raise ValueError(f"visible must have the logits' shape {z.shape}, got {visible.shape}")
        if not visible.any():
            raise ValueError("visible selects no logit: at least one must be True")
        z = z[visible]
    logit_std = _spread(z)
    live = ~(w == 0).all(axis=-1)
    if not live.any():
        raise ValueError("weights has no row with an allowed key (every row is all zeros): nothing to average")
    keys = np.broadcast_to(visible.sum(axis=-1) if visible is not None else w.shape[-1], live.shape)
    choice = (keys > 1)[live]  # rows that see more than one key
    w = w[live]
    if not np.isfinite(w).all():
        return {**dict.fromkeys(METRICS, float("nan")), "logit_std": logit_std}
    w = probabilities(w, "weights").astype(np.float64)  # finite rows must be probabilities
    # the statistics of sdpa_core.stats (entropy, max_weight, effective_support, saturated,
    # jacobian_norm) on rows already checked, averaged over the rows
    top = w.max(axis=-1)
    ent = _entropy(w, -1)
    return {
        "logit_std": logit_std,
        "entropy": float(ent.mean()),
        "max_weight": float(top.mean()),
        "effective_support": float(np.exp(ent).mean()),
        "saturated": float(above(top[choice]).mean()) if choice.any() else float("nan"),
        "jacobian_norm": float(rows_jacobian_norm(w).mean()),
    }


def rule_readouts(q, k, v, grad_out, rule, *, alpha=0.5, temperature=0.1, causal=False) -> dict:
    """Everything the page reads off one head under one rule, for (n, d_k) q, k, v and the upstream
    gradient ``grad_out`` (n, d_v).

    Returns a dict: ``weights`` (n, n) float64 (NaN rows where the logits overflowed), ``logits`` in
    q's dtype, ``stats`` (:func:`row_stats`; under ``causal`` the logit std is taken over the logits the
    softmax sees, j <= i), ``overflow`` (some logit is not finite), ``nan_rows`` (rows of weights with
    NaN or inf), ``scale`` (:func:`logit_scale`), ``dq_norms`` (n,) float64, ``||dL/dq_i||`` of
    each query row (:func:`rule_gradients`, scale included; NaN where the row's weights are), and
    ``dq_floor``, the size below which such a norm is float64 round-off (see Notes).

    Any finite inputs work, 1e300 and subnormal ones too, and no numpy warning comes out: the gradient
    is linear in v and in grad_out (and, for a rule that normalises q and k, a row of q scaled by c
    scales its gradient by 1/c), so it is computed at v, grad_out (and those q rows) divided by powers
    of two near their largest entries and the norms are scaled back exactly. A norm past float64's
    range (1.8e308; v and grad_out both near 1e300) is inf: the true value, rounded, and no NaN.

    Notes
    -----
    The gradients are taken in float64 at the given (possibly float16-rounded) inputs: half
    precision's own backward is off by tens of percent (139 where float64 and torch give 240), which
    would make the page's gradient readouts about rounding rather than saturation. A saturated row's
    true gradient (1e-60) still comes out as round-off, different in each numpy build (1e-19 here,
    1e-22 in Pyodide's): ``dq_floor`` is float64's eps times the size a row's gradient has when its
    softmax is not saturated, ``4 n |scale| max|G V^T| max|k|`` (over ``min|q|`` for a rule that
    normalises q and k, whose backward divides by ``|q|``).
    """
    rule, alpha, temperature = check_rule(rule, alpha=alpha, temperature=temperature)
    _, weights, logits = rule_attention(q, k, v, rule, alpha=alpha, temperature=temperature, causal=causal)
    grad_out = float_array(grad_out, "grad_out")  # its dtype is checked before the float64 copy
    q64, k64, v64, g64 = (np.asarray(a, dtype=np.float64) for a in (q, k, v, grad_out))
    parts = _scaled_parts(q64, v64, g64, RULES[rule].normalizes)
    qs, vs, gs, exps = parts
    dq = rule_gradients(qs, k64, vs, gs, rule, alpha=alpha, temperature=temperature, causal=causal)[0]
    w64, z64 = (np.asarray(a, dtype=np.float64) for a in (weights, logits))
    visible = np.tri(*z64.shape[-2:], dtype=np.bool_) if causal else None  # top-left aligned, as attention's
    broken = ~np.isfinite(w64).all(axis=-1)  # float16 overflow: NaN rows
    mant, e = _row_norms(dq)
    with np.errstate(over="ignore", under="ignore"):  # past float64's range: inf, as it should be
        norms = np.where(broken, np.nan, np.ldexp(mant, e + exps))
    return {
        "weights": w64,
        "logits": logits,
        "stats": row_stats(w64, logits, visible),
        "overflow": not np.isfinite(z64).all(),
        "nan_rows": int(broken.sum()),
        "scale": logit_scale(np.shape(q)[-1], rule, alpha=alpha, temperature=temperature, n=_length(rule, k64)),
        "dq_norms": norms,
        "dq_floor": _round_off(q64, k64, v64, g64, rule, alpha, temperature, parts),
    }


def _pow2(x: np.ndarray, axis=None) -> np.ndarray:
    """The integer e with ``max|x| < 2**e`` (frexp's exponent), over ``axis`` (kept); 0 where all of x is 0
    (or not finite). Dividing by 2**e is exact, so it rescales x without a rounding."""
    with np.errstate(invalid="ignore"):
        return np.frexp(np.abs(x).max(axis=axis, keepdims=axis is not None))[1]


def _scaled_parts(q, v, g, normalizes: bool):
    """q, v and g (float64, checked) divided by powers of two near their largest entries (q by row, and only
    for a rule that normalises it: its gradient then scales by the inverse), and the (n,) exponent that
    scales each row's gradient back: ``dq(q, v, g) = 2**exps dq(qs, vs, gs)``."""
    ev, eg = _pow2(v), _pow2(g)
    eq = _pow2(q, axis=-1) if normalizes else np.zeros(q.shape[:-1] + (1,), dtype=np.intc)
    qs, vs, gs = np.ldexp(q, -eq), np.ldexp(v, -ev), np.ldexp(g, -eg)
    return qs, vs, gs, (ev + eg - eq[..., 0]).astype(np.int64)


def _row_norms(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's Euclidean norm as ``mant * 2**e`` (float64, int arrays): the row is divided by a power of two
    near its largest entry first, so squares of 1e200 do not overflow nor those of 1e-200 underflow."""
    e = _pow2(x, axis=-1)
    y = np.ldexp(x, -e)  # each row's largest entry in [0.5, 1)
    with np.errstate(invalid="ignore", over="ignore"):  # inf or NaN rows stay so
        return np.sqrt(np.einsum("...i,...i->...", y, y)), e[..., 0].astype(np.int64)


def _gv(q, v, g, normalizes: bool, parts=None) -> tuple[float, int]:
    """max|g vᵀ| over the powers of two taken out of v and g, and those powers (the same for either kind of
    rule: only q is scaled differently)."""
    _, vs, gs, _ = parts if parts is not None else _scaled_parts(q, v, g, normalizes)
    with np.errstate(over="ignore", invalid="ignore"):  # float16-rounded inputs near 65504 are finite here
        gv = float(np.abs(np.broadcast_to(gs, (q.shape[0], vs.shape[-1])) @ vs.T).max())
    return gv, int(_pow2(v)) + int(_pow2(g))


def _round_off_pieces(q, k, v, g, normalizes: bool, parts=None, shared=None) -> tuple:
    """What :func:`_round_off` multiplies the rule's scale by, the same for every rule of one kind (one that
    normalises q and k, or not) on one draw: max|g vᵀ| over the powers of two taken out of v and g, those
    powers, the largest row of k (normalised for such a rule) as mantissa and power, and for such a rule the
    smallest row of q (None for a row of zeros)."""
    gv, exp = shared.get("gv") if shared is not None and "gv" in shared else _gv(q, v, g, normalizes, parts)
    if shared is not None:
        shared["gv"] = gv, exp
    if normalizes:
        k = qk_normalize(k)
    k_mant, k_exp = _row_norms(k)
    top = int(np.argmax(np.where(k_mant > 0, np.log2(np.where(k_mant > 0, k_mant, 1)) + k_exp, -np.inf)))
    low_q = None
    if normalizes:
        q_mant, q_exp = _row_norms(q)
        if not (q_mant == 0).any():
            low = int(np.argmin(np.log2(q_mant) + q_exp))
            low_q = (float(q_mant[low]), int(q_exp[low]))
    return gv, exp, float(k_mant[top]), int(k_exp[top]), low_q


def _round_off(q, k, v, g, rule: str, alpha: float, temperature: float, parts=None, shared=None, scale=None) -> float:
    """``dq_floor`` of :func:`rule_readouts` for float64 (n, d) arrays (arguments already checked; ``parts``:
    :func:`_scaled_parts` of them, when the caller has it; ``shared``: a dict kept across the rules of one
    draw, which holds :func:`_round_off_pieces` once per kind of rule; ``scale``: the rule's
    :func:`logit_scale` at this q and k, when the caller has it). Exact for any finite inputs (the sizes
    are multiplied as mantissas and powers of two); past float64's range (a size of inf) there is no floor: 0."""
    normalizes = RULES[rule].normalizes
    pieces = shared.get(normalizes) if shared is not None else None
    if pieces is None:
        pieces = _round_off_pieces(q, k, v, g, normalizes, parts, shared)
        if shared is not None:
            shared[normalizes] = pieces
    gv, exp, k_mant, k_exp, low_q = pieces
    if scale is None:
        scale = logit_scale(q.shape[-1], rule, alpha=alpha, temperature=temperature, n=_length(rule, k))
    size = abs(scale)
    size *= float(np.finfo(np.float64).eps) * q.shape[0] * 4
    size *= gv
    size *= k_mant
    exp += k_exp
    if normalizes:
        if low_q is None:  # a row of zeros: its gradient is grad / eps (qk_normalize_backward), no floor
            size /= 1e-300
        else:
            size /= low_q[0]
            exp -= low_q[1]
    with np.errstate(over="ignore", under="ignore"):
        floor = float(np.ldexp(size, exp))
    return floor if math.isfinite(floor) else 0.0


def _spread(z: np.ndarray) -> float:
    """Std of all of z in float64, inf if any is not finite; scaled by max|z| first, so logits
    near float64's limit (1e200) do not overflow when squared."""
    z = z.astype(np.float64, copy=False)
    if not np.isfinite(z).all():
        return float("inf")
    peak = float(np.abs(z).max())
    return peak * float((z / peak).std()) if peak > 0 else 0.0
