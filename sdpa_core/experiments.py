"""Monte-Carlo experiments over d_k and scaling rules, with the theory curves beside them.

Sampling trick: every quantity here depends on q and k only through their dot products. Those
are drawn *exactly* at O(n^2) cost whatever d_k is (Bartlett factor of ``Q Q^T`` plus Gaussian
projections, see ``_qz_dots``), so a sweep to d_k = 4096 costs what d_k = 64 does. Below
d_k = n the vectors are drawn directly.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field

import numpy as np

from ._checks import (
    _asarray,
    boolean,
    d_k_values,
    finite,
    float_array,
    float_dtype,
    generator,
    integer,
    names,
    probabilities,
    real,
)
from .attention import attention, attention_backward, logits as attention_logits, matmul
from .scaling import (
    MAX_D_K as MAX_SCALE_D_K,
    RULE_NAMES,
    RULES,
    check_rule,
    logit_scale,
    pair_dot_moments,
    pooled_dot_std,
    product,
    qk_normalize,
    qk_normalize_backward,
    rule_name,
)
from .softmax import naive_inplace, softmax_inplace
from .stats import _entropy, above, jacobian_norm_from, rows_jacobian_norm

__all__ = [
    "POW2_D_K",
    "METRICS",
    "ORDERS",
    "FLOAT16_MAX",
    "draw_qkv",
    "rule_attention",
    "rule_gradients",
    "query_gradient_norms",
    "upstream_gradient",
    "row_stats",
    "rule_readouts",
    "sample_gram",
    "sweep",
    "Sweep",
    "dot_samples",
    "dot_histograms",
    "theory_logit_std",
    "precision_sweep",
    "PrecisionSweep",
]

POW2_D_K = 2 ** np.arange(13)  # 1, 2, 4, ..., 4096
#: Per-matrix readouts, each averaged over query rows; "saturated" is the share of rows whose top
#: weight exceeds ``SATURATION`` (0.99); "jacobian_norm" is ||diag(p) - p p^T||_F (see stats).
METRICS = ("logit_std", "entropy", "max_weight", "effective_support", "saturated", "jacobian_norm")
FLOAT16_MAX = float(np.finfo(np.float16).max)  # 65504
MAX_D_K = 65536
MAX_WORK = 2**26  # cap on samples * n * n * len(d_ks) * len(rules): no setting can freeze a tab
MAX_ENTRIES = 2**24  # cap on the numbers in one drawn matrix (n * d_k): 128 MiB of float64
MAX_FLOPS = 2**32  # cap on the multiply-adds of query_gradient_norms and precision_sweep (seconds, not hours)
#: The smallest sigma of the functions that return dot products (or their spread) at the vectors' own scale:
#: :func:`dot_samples`, :func:`dot_histograms`, :func:`sdpa_core.random_geometry`. A dot product has the size
#: sigma^2, and sigma^2 = 1e-300 is still a normal float64 number (the smallest is 2.2e-308): below it the
#: dots would lose their digits or round to 0 (sigma = 1e-308 gives sigma^2 = 0).
MIN_SIGMA = 1e-150


def _common(sigma, rho, seed):
    return (
        real(sigma, "sigma", low=0.0, low_open=True, high=1e3),
        real(rho, "rho", low=0.0, high=1.0),
        np.random.default_rng(integer(seed, "seed", low=0)),
    )


def small_sigma(sigma, what: str) -> float:
    """sigma in [MIN_SIGMA, 1000] for a function that returns ``what`` (quantities of size sigma^2), or a
    TypeError/ValueError saying why not."""
    sigma = real(sigma, "sigma", low=0.0, low_open=True, high=1e3)
    if sigma < MIN_SIGMA:
        raise ValueError(
            f"sigma must be >= {MIN_SIGMA:g} here, got {sigma:g}: {what} have the size sigma**2, which below "
            f"{MIN_SIGMA:g}**2 = 1e-300 nears float64's smallest normal number (2.2e-308), so they would lose "
            f"their digits or round to 0. Lengths scale by sigma, dot products by sigma**2 and cosines not at "
            f"all: sigma = 1 shows the same shapes"
        )
    return sigma


def draw_qkv(n, d_k, *, sigma=1.0, rho=0.0, seed=0, dtype=np.float64):
    """Random q, k, v of shape (n, d_k) with N(0, sigma^2) entries; ``k = rho q + sqrt(1-rho^2) z``.

    rho = 0 gives independent q and k; rho = 1 makes each key equal to its query, so
    ``q_i . k_i`` grows like d_k instead of sqrt(d_k). Drawn in float64, then cast to ``dtype``.
    """
    n = integer(n, "n", low=1, high=4096)
    d_k = integer(d_k, "d_k", low=1, high=MAX_D_K)
    _entries(n, d_k, "n * d_k")
    sigma, rho, rng = _common(sigma, rho, seed)
    dtype = float_dtype(dtype)
    q, k = _draw_qk(rng, n, d_k, sigma, rho)
    v = sigma * rng.standard_normal((n, d_k))
    with np.errstate(over="ignore"):  # float16 holds at most 65504: larger draws are inf, as they would be
        return tuple(a.astype(dtype) for a in (q, k, v))


def _entries(a: int, b: int, what: str) -> None:
    if a * b > MAX_ENTRIES:
        raise ValueError(f"{what} must be <= {MAX_ENTRIES}, got {a * b}: that matrix would not fit in memory")


def _draw_qk(rng, n, d_k, sigma, rho):
    q, z = sigma * rng.standard_normal((2, n, d_k))
    return q, rho * q + math.sqrt(1 - rho * rho) * z


def rule_attention(q, k, v, rule, *, alpha=0.5, temperature=0.1, causal=False):
    """Attention of (n, d_k) q, k, v under a page-level rule; returns ``(out, weights, logits)``.

    ``logits`` are the scaled scores before masking (what the softmax sees), in q's dtype
    (float16 logits past 65504 are inf).
    """
    rule, alpha, temperature = check_rule(rule, alpha=alpha, temperature=temperature)
    q, k = _vectors(q, "q"), _vectors(k, "k")
    if RULES[rule].normalizes:
        q, k = qk_normalize(q), qk_normalize(k)
    scale = logit_scale(q.shape[-1], rule, alpha=alpha, temperature=temperature, n=_length(rule, k))
    out, weights = attention(q, k, v, scale=scale, causal=causal)
    q, k = (a.astype(weights.dtype, copy=False) for a in (q, k))  # the common dtype attention used
    with np.errstate(over="ignore", invalid="ignore"):
        return out, weights, attention_logits(q, k, scale)


def _length(rule: str, k: np.ndarray) -> int | None:
    """The sequence length a rule with a ``length`` sees: the number of keys (every row's, causal or not)."""
    return k.shape[-2] if RULES[rule].length is not None else None


def _vectors(x, name: str) -> np.ndarray:
    """q or k of a rule: checked here, so a message names q or k rather than qk_normalize's x."""
    return finite(float_array(x, name, min_ndim=2), name, "attention of it would be meaningless")


def rule_gradients(q, k, v, grad_out, rule, *, alpha=0.5, temperature=0.1, causal=False):
    """Gradients of ``sum(out * grad_out)`` for :func:`rule_attention`, with respect to the raw
    q, k and v: ``(dq, dk, dv)``. The rule's scale is inside (chain rule), and for a rule that
    normalises q and k ("qknorm") the gradient also passes back through the normalisation.

    Shapes: q, k (n, d_k), v (n, d_v), grad_out (n, d_v).

    A gradient past the dtype's range (grad_out and v both near 1e200 in float64: ``grad_out v^T`` is
    1e400) comes out inf or NaN, as PyTorch's would, without a numpy warning (see
    :func:`sdpa_core.attention_backward`); :func:`rule_readouts` gives such a row's norm exactly.
    """
    rule, alpha, temperature = check_rule(rule, alpha=alpha, temperature=temperature)
    q, k = _vectors(q, "q"), _vectors(k, "k")
    normalizes = RULES[rule].normalizes
    qn, kn = (qk_normalize(q), qk_normalize(k)) if normalizes else (q, k)
    scale = logit_scale(q.shape[-1], rule, alpha=alpha, temperature=temperature, n=_length(rule, k))
    dq, dk, dv = attention_backward(qn, kn, v, grad_out, scale=scale, causal=causal)
    if normalizes:
        dq, dk = qk_normalize_backward(q, dq), qk_normalize_backward(k, dk)
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
    out: dict[str, list[np.ndarray]] = {r: [] for r in rules}
    floors: dict[str, list[np.ndarray]] = {r: [] for r in rules}
    for i in range(reps):
        s = seed + i
        q, k, v = draw_qkv(n, d_k, sigma=sigma, rho=rho, seed=s)
        g = upstream_gradient(n, v.shape[-1], seed=s)
        for r in rules:
            dq = rule_gradients(q, k, v, g, r, alpha=alpha, temperature=temperature, causal=causal)[0]
            norms = np.linalg.norm(dq, axis=-1)
            floor = _round_off(q, k, v, g, r, alpha, temperature)
            if flush_round_off:
                norms[norms < floor] = 0.0
            out[r].append(norms)
            floors[r].append(np.full(n, floor))
    return RowNorms({r: np.concatenate(out[r]) for r in rules}, {r: np.concatenate(floors[r]) for r in rules})


class RowNorms(dict):
    """``rule -> (rows,)`` gradient norms (a dict, so it iterates like one), with ``floors``: ``rule ->
    (rows,)`` the float64 round-off size of each row's norm (below it a norm is round-off)."""

    def __init__(self, norms: dict, floors: dict):
        super().__init__(norms)
        self.floors = floors


def upstream_gradient(n, d_v, *, seed=0, dtype=np.float64) -> np.ndarray:
    """The fixed upstream gradient ``dL/dout`` (n, d_v) the page uses: N(0, 1) entries, drawn from
    ``default_rng([seed, 1])`` (a stream of its own, so q, k, v of the same seed are unchanged)."""
    n, d_v = integer(n, "n", low=1, high=4096), integer(d_v, "d_v", low=1, high=MAX_D_K)
    _entries(n, d_v, "n * d_v")
    dtype = float_dtype(dtype)
    return np.random.default_rng([integer(seed, "seed", low=0), 1]).standard_normal((n, d_v)).astype(dtype)


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


def _round_off(q, k, v, g, rule: str, alpha: float, temperature: float, parts=None) -> float:
    """``dq_floor`` of :func:`rule_readouts` for float64 (n, d) arrays (arguments already checked; ``parts``:
    :func:`_scaled_parts` of them, when the caller has it). Exact for any finite inputs (the sizes are
    multiplied as mantissas and powers of two); past float64's range (a size of inf) there is no floor: 0."""
    normalizes = RULES[rule].normalizes
    _, vs, gs, _ = parts if parts is not None else _scaled_parts(q, v, g, normalizes)
    if normalizes:
        k = qk_normalize(k)
    size = abs(logit_scale(q.shape[-1], rule, alpha=alpha, temperature=temperature, n=_length(rule, k)))
    size *= float(np.finfo(np.float64).eps) * q.shape[0] * 4
    with np.errstate(over="ignore", invalid="ignore"):  # float16-rounded inputs near 65504 are finite here
        size *= float(np.abs(np.broadcast_to(gs, (q.shape[0], vs.shape[-1])) @ vs.T).max())
    exp = int(_pow2(v)) + int(_pow2(g))
    k_mant, k_exp = _row_norms(k)
    top = int(np.argmax(np.where(k_mant > 0, np.log2(np.where(k_mant > 0, k_mant, 1)) + k_exp, -np.inf)))
    size *= float(k_mant[top])
    exp += int(k_exp[top])
    if normalizes:
        q_mant, q_exp = _row_norms(q)
        if (q_mant == 0).any():  # a row of zeros: its gradient is grad / eps (qk_normalize_backward), no floor
            size /= 1e-300
        else:
            low = int(np.argmin(np.log2(q_mant) + q_exp))
            size /= float(q_mant[low])
            exp -= int(q_exp[low])
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


def sample_gram(d_k, p, m, rng) -> np.ndarray:
    """m Gram matrices (m, p, p) of p vectors with d_k i.i.d. N(0, 1) entries, drawn exactly.

    For d_k >= p: Bartlett, ``G = A A^T`` with A lower-triangular, ``A_ii^2 ~ chi^2(d_k - i)``
    and ``A_ij ~ N(0, 1)`` below the diagonal. Otherwise the vectors are drawn directly.
    ``d_k`` in [1, 65536], ``p`` and ``m`` >= 1 with ``m * p * p <= 2**26``, ``rng`` a numpy Generator.
    """
    d_k = integer(d_k, "d_k", low=1, high=MAX_D_K)
    p = integer(p, "p", low=1, high=4096)
    m = integer(m, "m", low=1, high=MAX_WORK)
    if m * p * p > MAX_WORK:
        raise ValueError(f"m * p * p must be <= {MAX_WORK}, got {m * p * p}: too many Gram entries to draw")
    rng = generator(rng)
    if d_k < p:
        x = rng.standard_normal((m, p, d_k))
        return x @ x.swapaxes(-1, -2)
    a = np.tril(rng.standard_normal((m, p, p)), -1)
    idx = np.arange(p)
    a[:, idx, idx] = np.sqrt(rng.chisquare(d_k - idx, size=(m, p)))
    return a @ a.swapaxes(-1, -2)


@dataclass
class Sweep:
    """Mean and spread (std over samples) of each metric, per rule, over ``d_k``."""

    d_k: np.ndarray
    rules: tuple
    mean: dict = field(default_factory=dict)  # metric -> rule -> (D,)
    spread: dict = field(default_factory=dict)  # metric -> rule -> (D,)
    theory_logit_std: dict = field(default_factory=dict)  # rule -> (D,)
    samples: int = 0  # random matrices behind each mean (a standard error is spread / sqrt(samples))
    n: int = 0  # their size (n x n: n rows each)

    def to_csv(self) -> str:
        """One row per (rule, d_k): every metric's mean and spread, and the theory logit std."""
        buf = io.StringIO()
        cols = [f"{m}_{s}" for m in METRICS for s in ("mean", "spread")]
        buf.write(",".join(["rule", "d_k", *cols, "theory_logit_std"]) + "\n")
        for rule in self.rules:
            for i, d in enumerate(self.d_k):
                vals = [f"{getattr(self, s)[m][rule][i]:.6g}" for m in METRICS for s in ("mean", "spread")]
                buf.write(",".join([rule, str(int(d)), *vals, f"{self.theory_logit_std[rule][i]:.6g}"]) + "\n")
        return buf.getvalue()


def sweep(
    d_ks=POW2_D_K, rules=RULE_NAMES, *, n=16, samples=32, sigma=1.0, rho=0.0, alpha=0.5, temperature=0.1, seed=0
) -> Sweep:
    """Monte-Carlo sweep: for each d_k, ``samples`` random (n x n) attention matrices per rule.

    All rules see the same q, k at each d_k (common random numbers), so their curves differ
    only by the rule. Returns a :class:`Sweep`; ``spread`` is the std across samples.

    Examples
    --------
    >>> s = sweep([16, 1024], ("none", "sqrt"), n=8, samples=64)
    >>> bool(s.mean["entropy"]["none"][1] < s.mean["entropy"]["sqrt"][1])
    True
    """
    d_ks = d_k_values(d_ks, MAX_D_K)
    n = integer(n, "n", low=2, high=512)
    samples = integer(samples, "samples", low=2, high=100_000)
    rules = names(rules, "rules", rule_name)
    _, alpha, temperature = check_rule(rules[0], alpha=alpha, temperature=temperature)
    if samples * n * n * len(d_ks) * len(rules) > MAX_WORK:
        raise ValueError(f"sweep too large: samples*n*n*len(d_ks)*len(rules) must stay <= {MAX_WORK}")
    sigma, rho, rng = _common(sigma, rho, seed)
    c = math.sqrt(1 - rho * rho)
    d = d_ks.astype(float)
    spec = {r: RULES[r] for r in rules}
    # each rule's factor on its base, for every d_k: the unit-variance dots (times sigma^2), or the
    # cosines for a rule that normalises q and k (sigma plays no part there)
    factors = {
        r: spec[r]._scales(d, alpha, temperature, n) * (1.0 if spec[r].normalizes else sigma * sigma) for r in rules
    }  # r -> (D,)

    # dot products of unit-variance q and z for every d_k at once: (D, samples, n, n) and (D, samples, n)
    gqq, gqz, zz = _qz_dots(d_ks, n, samples, rng)
    dots = gqz if rho == 0 else rho * gqq + c * gqz  # q_i . k_j / sigma^2
    # Keys axis first, so the softmax reductions over keys are elementwise ops on big contiguous
    # arrays (several times faster than numpy's reductions over a short last axis); float32 is
    # plenty for plotted statistics and halves the cost of every pass.
    keys_first = np.ascontiguousarray(np.moveaxis(dots, -1, 0))  # (n_keys, D, samples, n_q)
    bases = {False: (keys_first, _pooled_std(keys_first))}  # normalizes -> (base, its std)
    # Rules with the same base and (to a few ulps) the same factors, e.g. "alpha" at alpha = 0.5 and
    # "sqrt", are computed once.
    distinct: list[str] = []  # the rules computed
    same: dict[str, int] = {}  # rule -> index in distinct
    for r in rules:
        same[r] = next(
            (
                i
                for i, o in enumerate(distinct)
                if spec[o].normalizes == spec[r].normalizes and np.allclose(factors[o], factors[r], rtol=1e-15, atol=0)
            ),
            len(distinct),
        )
        if same[r] == len(distinct):
            distinct.append(r)
    z = np.empty((n, len(distinct)) + keys_first.shape[1:], dtype=np.float32)  # (n_keys, R, D, samples, n_q)
    logit_std = np.empty((len(distinct),) + keys_first.shape[1:3])  # (R, D, samples), float64
    for i, r in enumerate(distinct):
        if spec[r].normalizes and True not in bases:
            qq = _diag(gqq)  # (D, samples, n)
            kn = np.sqrt(rho * rho * qq + 2 * rho * c * _diag(gqz) + c * c * zz)
            cos = keys_first / np.maximum(np.moveaxis(kn, -1, 0)[..., None] * np.sqrt(qq)[None], 1e-300)
            bases[True] = (cos, _pooled_std(cos))
        base, base_std = bases[spec[r].normalizes]
        np.multiply(base, factors[r][:, None, None], out=z[:, i], casting="same_kind")
        # the spread is exact in float64: |factor| * std of the unscaled base (z may hold 1e-40 as 0)
        logit_std[i] = np.abs(factors[r])[:, None] * base_std
    stats = {"logit_std": logit_std, **_matrix_stats(z)}  # metric -> (R, D, samples)

    out = Sweep(
        d_k=d_ks, rules=rules, samples=samples, n=n, mean={m: {} for m in METRICS}, spread={m: {} for m in METRICS}
    )
    for m, vals in stats.items():
        mean, spread = vals.mean(axis=-1), vals.std(axis=-1)
        for r in rules:
            out.mean[m][r], out.spread[m][r] = mean[same[r]], spread[same[r]]
    for r in rules:
        out.theory_logit_std[r] = spec[r]._theory_logit_std(d, sigma, rho, n, alpha, temperature)
    return out


def _pooled_std(x: np.ndarray) -> np.ndarray:
    """Std over keys and queries of x laid out (n_keys, D, samples, n_q): (D, samples)."""
    mean = x.mean(axis=(0, -1))
    return np.sqrt(np.maximum((x * x).mean(axis=(0, -1)) - mean * mean, 0))


def _diag(a: np.ndarray) -> np.ndarray:
    return np.diagonal(a, axis1=-2, axis2=-1)


def _qz_dots(d_ks, n, m, rng):
    """Exact draws of ``Q Q^T``, ``Q Z^T`` (D, m, n, n) and ``|z_j|^2`` (D, m, n) for Q, Z of shape
    (n, d_k) with i.i.d. N(0, 1) entries, at O(n^2) cost per draw whatever d_k is.

    Write ``Q = A U`` (LQ decomposition): A is the Bartlett factor of ``Q Q^T`` (lower-triangular,
    ``A_ii^2 ~ chi^2(d_k - i)``, N(0, 1) below the diagonal) and U has orthonormal rows independent
    of A. Z is independent of both, so ``W = Z U^T`` has i.i.d. N(0, 1) entries and the part of
    each z_j outside U's span has squared length ``chi^2(d_k - n)``. Hence ``Q Z^T = A W^T`` and
    ``|z_j|^2 = |W_j|^2 + chi^2(d_k - n)``. Below d_k = n the vectors are drawn directly.
    """
    D = len(d_ks)
    gqq, gqz, zz = np.empty((D, m, n, n)), np.empty((D, m, n, n)), np.empty((D, m, n))
    small = d_ks < n
    for i in np.flatnonzero(small):
        q, z = rng.standard_normal((2, m, n, int(d_ks[i])))
        gqq[i], gqz[i], zz[i] = q @ q.swapaxes(-1, -2), q @ z.swapaxes(-1, -2), (z * z).sum(axis=-1)
    big = ~small
    if big.any():
        d = d_ks[big].astype(float)[:, None, None]  # (B, 1, 1)
        idx = np.arange(n)
        rows, cols = np.tril_indices(n, -1)
        a = np.zeros((int(big.sum()), m, n, n))
        a[..., rows, cols] = rng.standard_normal(a.shape[:2] + (len(rows),))
        a[..., idx, idx] = np.sqrt(rng.chisquare(np.broadcast_to(d - idx, a.shape[:2] + (n,))))
        w = rng.standard_normal(a.shape)
        rest = np.broadcast_to(d - n, a.shape[:2] + (n,))
        outside = np.where(rest > 0, rng.chisquare(np.maximum(rest, 1)), 0.0)  # chi^2(0) = 0 when d_k = n
        gqq[big], gqz[big] = a @ a.swapaxes(-1, -2), a @ w.swapaxes(-1, -2)
        zz[big] = (w * w).sum(axis=-1) + outside
    return gqq, gqz, zz


def _matrix_stats(zs: np.ndarray) -> dict[str, np.ndarray]:
    """Softmax metrics of logits laid out keys-first, (n_keys, ..., n_queries), each averaged over
    the queries: (...). Overwrites ``zs``."""
    zs -= zs.max(axis=0)
    p = np.exp(zs)
    total = p.sum(axis=0)
    p *= 1 / total
    top = 1 / total  # the top weight is exp(0) / s
    below = zs < 0  # every key but the top one(s)
    twins = (zs.shape[0] - np.count_nonzero(below, axis=0) - 1).astype(zs.dtype)  # ties with the top
    ent = np.log(total) - np.multiply(p, zs, out=zs).sum(axis=0)  # H = log s - sum p (z - max)
    others = np.multiply(p, below, out=zs)  # zs's buffer is free again
    rest = others.sum(axis=0) + twins * top  # 1 - top, without its round-off when top ~ 1
    # the others relative to (at least) their sum, <= 1: their squares and cubes cannot underflow
    r = np.maximum(rest, np.finfo(zs.dtype).tiny)
    rel = np.multiply(others, 1 / r, out=others)
    rel2 = np.multiply(rel, rel, out=p)  # p's buffer is free too
    t = top / r * (twins > 0)  # a twin relative to the sum, <= 1
    v2 = rel2.sum(axis=0) + twins * t * t
    v3 = np.multiply(rel2, rel, out=rel2).sum(axis=0) + twins * t * t * t
    jac = jacobian_norm_from(top, top * rest, r, v2, v3)  # no cancellation for saturated rows (see stats)
    return {
        "entropy": ent.mean(axis=-1),
        "max_weight": top.mean(axis=-1),
        "effective_support": np.exp(ent).mean(axis=-1),
        "saturated": above(top).mean(axis=-1),  # compared in float64, as stats.saturated does
        "jacobian_norm": jac.mean(axis=-1),
    }


def theory_logit_std(d_k, *, sigma=1.0, rho=0.0, n=16, scale=1.0, qknorm=False) -> float:
    """Std of the n x n logits ``scale * q_i . k_j`` pooled over all pairs, in closed form.

    Off-diagonal pairs: mean 0, variance ``d_k sigma^4`` (the classic ``Var(q.k) = d_k
    sigma_q^2 sigma_k^2``). The n matched pairs ``q_i . k_i = rho |q_i|^2 + sqrt(1-rho^2) q_i . z_i``
    have mean ``rho d_k sigma^2`` and variance ``(1 + rho^2) d_k sigma^4``, which is why aligned
    vectors make the spread grow like d_k rather than sqrt(d_k). With ``qknorm`` the logits are
    cosines (q and k normalised): variance 1/d_k off the diagonal, and mean rho and variance
    ``(1 - rho^2)^2 / d_k`` for the matched pairs (large-d_k limit); sigma plays no part.
    ``Rule.theory_logit_std`` gives the same for every d_k of a list at once, with a rule's own scale.

    >>> theory_logit_std(64, scale=1 / 8)
    1.0
    """
    d = float(integer(d_k, "d_k", low=1, high=MAX_SCALE_D_K))
    sigma = real(sigma, "sigma", low=0.0, low_open=True)
    rho = real(rho, "rho", low=0.0, high=1.0)
    n = integer(n, "n", low=1, high=MAX_SCALE_D_K)
    scale = real(scale, "scale")
    qknorm = boolean(qknorm, "qknorm")
    unit = pooled_dot_std(np.array([d]), rho, n, unit=qknorm)
    std = float((product(abs(scale), unit) if qknorm else product(abs(scale), sigma, unit, sigma))[0])
    if not math.isfinite(std):
        raise ValueError(
            f"the logit std for d_k={d_k}, sigma={sigma:g}, scale={scale:g} exceeds float64's "
            f"range (1.8e308): make sigma or scale smaller"
        )
    return std


def dot_samples(d_k, m, *, sigma=1.0, rho=0.0, seed=0) -> np.ndarray:
    """m exact samples of the unscaled dot product ``q . k`` with ``k = rho q + sqrt(1-rho^2) z``.

    ``sigma`` in [1e-150, 1000] (:data:`MIN_SIGMA`: the dots have the size sigma^2, which must stay a
    normal float64 number); drawn at sigma = 1 and scaled by sigma^2 once.

    Drawn from the 2 x 2 Gram matrix of [q, z] (see :func:`sample_gram`), so d_k = 4096 is as cheap as 1.
    """
    d_k = integer(d_k, "d_k", low=1, high=MAX_D_K)
    m = integer(m, "m", low=1, high=1_000_000)
    sigma, rho, rng = _common(sigma, rho, seed)
    sigma = small_sigma(sigma, "the dot products")
    g = sample_gram(d_k, 2, m, rng)  # at sigma = 1; the dots scale by sigma^2 (>= 1e-300: no underflow)
    return (rho * g[:, 0, 0] + math.sqrt(1 - rho * rho) * g[:, 0, 1]) * (sigma * sigma)


def dot_histograms(
    d_k, *, sigma=1.0, rho=0.0, seed=0, rule="sqrt", alpha=0.5, temperature=0.1, m=20000, bins=60, n=None
) -> dict:
    """Histograms of one matched pair's ``q . k`` (unscaled) and of its logit under ``rule``, with the
    normal curves theory predicts (:meth:`Rule.pair_theory`): mean ``rho d_k sigma^2`` and variance
    ``(1 + rho^2) d_k sigma^4`` before scaling; a rule that normalises q and k scales the cosine, whose
    large-d_k limit is N(rho, (1 - rho^2)^2 / d_k).

    ``m`` exact samples (``k = rho q + sqrt(1-rho^2) z``) drawn from the 2 x 2 Gram matrix of [q, z]
    (:func:`sample_gram`, ``default_rng(seed)``, as :func:`dot_samples`), so d_k = 4096 is as cheap as 1.
    ``n``, the sequence length, is needed only by a rule whose factor reads it (:meth:`Rule.scales`).
    ``sigma`` in [1e-150, 1000] (:data:`MIN_SIGMA`); the pairs are drawn at sigma = 1 (the cosine does not
    depend on it, the dots scale by sigma^2) and the sample means and stds scaled once, so none underflows.
    Where the scaled logits' spread would be below 1e-300 (a tiny sigma under "alpha" = 4 at large d_k)
    their histogram's densities would overflow: a ValueError says so.
    Returns ``{"unscaled": hist, "scaled": hist, "theory_mean": (unscaled, scaled), "theory_std": (...),
    "sample_mean": (...), "sample_std": (...)}``, each ``hist`` a dict of ``left``, ``right``, ``density``
    (``bins`` bars) and the theory curve ``x``, ``pdf`` (200 points).

    >>> h = dot_histograms(64, rule="sqrt", m=1000)
    >>> h["theory_std"]
    (8.0, 1.0)
    """
    d_k = integer(d_k, "d_k", low=1, high=MAX_D_K)
    rule, alpha, temperature = check_rule(rule, alpha=alpha, temperature=temperature)
    m = integer(m, "m", low=2, high=1_000_000)
    bins = integer(bins, "bins", low=1, high=10_000)
    sigma, rho, rng = _common(sigma, rho, seed)
    sigma = small_sigma(sigma, "the unscaled dot products")
    spec, d = RULES[rule], np.array([float(d_k)])
    n = spec.check_n(n)
    g = sample_gram(d_k, 2, m, rng)  # at sigma = 1
    c = math.sqrt(1 - rho * rho)
    unit = rho * g[:, 0, 0] + c * g[:, 0, 1]  # q . k / sigma^2
    sigma2 = sigma * sigma  # >= 1e-300: a normal float64
    factor = float(spec._scales(d, alpha, temperature, n)[0])
    if spec.normalizes:
        k2 = rho * rho * g[:, 0, 0] + 2 * rho * c * g[:, 0, 1] + c * c * g[:, 1, 1]
        base, base_size = unit / np.sqrt(np.maximum(g[:, 0, 0] * k2, 1e-300)), 1.0  # cos(q, k): sigma-free
    else:
        base, base_size = unit, sigma2
    mean, var = pair_dot_moments(d, rho, unit=False)
    mean0, std0 = float(product(sigma, mean, sigma)[0]), float(product(sigma, np.sqrt(var), sigma)[0])
    mean1, std1 = spec._pair_theory(d, sigma, rho, alpha, temperature, n)
    if 0 < std1 < 1e-300:
        raise ValueError(
            f"the {rule!r} logits' spread here is {std1:.3g}, too close to float64's smallest numbers to "
            f"histogram (densities of 1/spread would overflow): use a larger sigma, a smaller d_k or alpha"
        )
    dot, scaled = unit * sigma2, base * (base_size * factor)
    return {
        "unscaled": _histogram(dot, mean0, std0, bins),
        "scaled": _histogram(scaled, mean1, std1, bins),
        "theory_mean": (mean0, mean1),
        "theory_std": (std0, std1),
        # moments of the sigma = 1 draws, scaled once: those of 1e-300 values would square to 0
        "sample_mean": (float(unit.mean()) * sigma2, float(base.mean()) * base_size * factor),
        "sample_std": (float(unit.std()) * sigma2, float(base.std()) * base_size * abs(factor)),
    }


def _histogram(x: np.ndarray, mean: float, std: float, bins: int) -> dict:
    """Density histogram of x over its 0.1-99.9 percentiles widened to mean +- 4 std, and the normal pdf."""
    lo, hi = np.percentile(x, [0.1, 99.9])
    lo, hi = min(lo, mean - 4 * std), max(hi, mean + 4 * std)
    if not hi > lo:
        lo, hi = lo - 1, hi + 1
    counts, edges = np.histogram(x, bins=bins, range=(lo, hi), density=True)
    grid = np.linspace(lo, hi, 200)
    pdf = np.exp(-0.5 * ((grid - mean) / std) ** 2) / (std * math.sqrt(2 * math.pi)) if std > 0 else 0 * grid
    return {"left": edges[:-1], "right": edges[1:], "density": counts, "x": grid, "pdf": pdf}


@dataclass
class PrecisionSweep:
    """Where inf and NaN appear, per dtype, per order of scaling and matmul, per softmax kind."""

    d_k: np.ndarray
    max_abs_logit: dict = field(default_factory=dict)  # dtype -> order -> (D,) (inf where overflowed)
    nonfinite_rows: dict = field(default_factory=dict)  # dtype -> order -> softmax -> (D,) fraction


DTYPES = {"float16": np.float16, "float32": np.float32, "float64": np.float64}
#: "none": unscaled q @ k^T; "after": (q @ k^T) / sqrt(d_k); "before": (q / sqrt(d_k)) @ k^T
ORDERS = ("none", "after", "before")


def precision_sweep(d_ks=POW2_D_K, *, n=16, sigma=1.0, rho=0.0, seed=0) -> PrecisionSweep:
    """Logits computed in each float dtype: unscaled ("none"), scaled "after" the matmul
    (``(q @ k^T) / sqrt(d_k)``: the product itself can overflow) or "before" it
    (``(q / sqrt(d_k)) @ k^T``), then softmaxed the "naive" way (no max shift) or the "stable" way.

    The same float64 draws are rounded to each dtype, so only the arithmetic differs; the vectors
    are nested (each d_k uses the first d_k coordinates of one draw at the largest d_k).
    """
    d_ks = d_k_values(d_ks, MAX_D_K)
    n = integer(n, "n", low=2, high=256)
    if 2 * n * n * int(d_ks.sum()) * len(DTYPES) > MAX_FLOPS:
        raise ValueError(f"too much work: 6 * n * n * sum(d_ks) must be <= {MAX_FLOPS}")
    sigma, rho, _ = _common(sigma, rho, seed)
    # logits[dtype][order]: (D, n, n), one (n x n) matrix per d_k, each computed in its dtype
    logits: dict[str, dict[str, np.ndarray]] = {
        name: {o: np.empty((len(d_ks), n, n), t) for o in ORDERS} for name, t in DTYPES.items()
    }
    # one draw at the largest d_k; each d_k uses its first d_k coordinates (nested vectors)
    q_all, k_all = _draw_qk(np.random.default_rng(seed), n, int(d_ks.max()), sigma, rho)
    for i, d in enumerate(d_ks):
        q64, k64 = q_all[:, :d], k_all[:, :d]
        for name, t in DTYPES.items():
            q, k = q64.astype(t), k64.astype(t)
            s = np.asarray(1 / math.sqrt(int(d)), dtype=t)
            with np.errstate(over="ignore", invalid="ignore"):
                per_order = logits[name]
                per_order["none"][i] = matmul(q, k.T)
                np.multiply(per_order["none"][i], s, out=per_order["after"][i])
                per_order["before"][i] = matmul(q * s, k.T)
    res = PrecisionSweep(d_k=d_ks, max_abs_logit={t: {} for t in DTYPES}, nonfinite_rows={t: {} for t in DTYPES})
    for name in DTYPES:
        for order, z in logits[name].items():
            res.max_abs_logit[name][order] = np.abs(z.astype(np.float64)).max(axis=(1, 2))
            res.nonfinite_rows[name][order] = {}
            for kind, fn in (("naive", naive_inplace), ("stable", softmax_inplace)):
                with np.errstate(over="ignore", invalid="ignore"):
                    w = fn(z.copy())  # unchecked: overflowed (inf) logits are what this counts
                res.nonfinite_rows[name][order][kind] = (~np.isfinite(w)).any(axis=-1).mean(axis=-1)
    return res
