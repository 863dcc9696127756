"""Monte-Carlo experiments over d_k and scaling rules, with the theory curves beside them.

Sampling trick: every quantity here depends on q and k only through their dot products, i.e.
through the Gram matrix of the vectors ``[q_1..q_n, z_1..z_n]`` (i.i.d. N(0, sigma^2) entries).
That Gram matrix is Wishart-distributed, and the Bartlett decomposition draws it *exactly* in
O(n^2) numbers whatever d_k is, so a sweep to d_k = 4096 costs what d_k = 64 does.
Below d_k = 2n (where the Wishart matrix is singular) the vectors are drawn directly.
"""
from __future__ import annotations

import io
import math
from dataclasses import dataclass, field

import numpy as np

from ._checks import integer, real
from .attention import attention, matmul
from .scaling import RULE_NAMES, check_rule, logit_scale, qk_normalize
from .softmax import naive_softmax, softmax
from .stats import gradient_health

__all__ = ["POW2_D_K", "METRICS", "FLOAT16_MAX", "draw_qkv", "rule_attention", "row_stats", "sample_gram",
           "sweep", "Sweep", "dot_samples", "theory_logit_std", "precision_sweep", "PrecisionSweep"]

POW2_D_K = 2 ** np.arange(13)  # 1, 2, 4, ..., 4096
METRICS = ("logit_std", "entropy", "max_weight", "effective_support", "gradient_health")
FLOAT16_MAX = float(np.finfo(np.float16).max)  # 65504
MAX_D_K = 65536
MAX_WORK = 2 ** 26  # cap on samples * n * n * len(d_ks) * len(rules): no setting can freeze a tab


def _common(sigma, rho, seed):
    return (real(sigma, "sigma", low=0.0, low_open=True, high=1e3), real(rho, "rho", low=0.0, high=1.0),
            np.random.default_rng(integer(seed, "seed", low=0)))


def draw_qkv(n, d_k, *, sigma=1.0, rho=0.0, seed=0, dtype=np.float64):
    """Random q, k, v of shape (n, d_k) with N(0, sigma^2) entries; ``k = rho q + sqrt(1-rho^2) z``.

    rho = 0 gives independent q and k; rho = 1 makes each key equal to its query, so
    ``q_i . k_i`` grows like d_k instead of sqrt(d_k). Drawn in float64, then cast to ``dtype``.
    """
    n = integer(n, "n", low=1, high=4096)
    d_k = integer(d_k, "d_k", low=1, high=MAX_D_K)
    sigma, rho, rng = _common(sigma, rho, seed)
    if np.dtype(dtype).type not in (np.float16, np.float32, np.float64):
        raise TypeError(f"dtype must be float16, float32 or float64, got {dtype!r}")
    q, z, v = sigma * rng.standard_normal((3, n, d_k))
    k = rho * q + math.sqrt(1 - rho * rho) * z
    return tuple(a.astype(dtype) for a in (q, k, v))


def rule_attention(q, k, v, rule, *, alpha=0.5, temperature=0.1, causal=False):
    """Attention of (n, d_k) q, k, v under a page-level rule; returns ``(out, weights, logits)``.

    ``logits`` are the scaled scores before masking (what the softmax sees), in q's dtype.
    """
    rule, alpha, temperature = check_rule(rule, alpha=alpha, temperature=temperature)
    q, k = np.asarray(q), np.asarray(k)
    if rule == "qknorm":
        q, k = qk_normalize(q), qk_normalize(k)
    scale = logit_scale(q.shape[-1], rule, alpha=alpha, temperature=temperature)
    out, weights = attention(q, k, v, scale=scale, causal=causal)
    with np.errstate(over="ignore", invalid="ignore"):
        logits = (q * np.asarray(scale, q.dtype)) @ k.swapaxes(-1, -2)
    return out, weights, logits


def row_stats(weights, logits) -> dict[str, float]:
    """The page's readouts for one attention matrix, averaged over query rows.

    Rows with no allowed key (all-zero weights) are left out; non-finite logits (float16
    overflow) give NaN for logit_std, which the page shows as overflow.
    """
    w = np.asarray(weights, dtype=np.float64)
    z = np.asarray(logits, dtype=np.float64)
    live = ~(w == 0).all(axis=-1)
    w = w[live]
    if not np.isfinite(w).all():
        return dict.fromkeys(METRICS, float("nan"))
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.where(w > 0, w * np.log(np.where(w > 0, w, 1)), 0).sum(axis=-1)
    return {
        "logit_std": float(z.std()) if np.isfinite(z).all() else float("nan"),
        "entropy": float(ent.mean()),
        "max_weight": float(w.max(axis=-1).mean()),
        "effective_support": float(np.exp(ent).mean()),
        "gradient_health": float(gradient_health(w).mean()),
    }


def sample_gram(d_k, p, m, rng) -> np.ndarray:
    """m Gram matrices (m, p, p) of p vectors with d_k i.i.d. N(0, 1) entries, drawn exactly.

    For d_k >= p: Bartlett, ``G = A A^T`` with A lower-triangular, ``A_ii^2 ~ chi^2(d_k - i)``
    and ``A_ij ~ N(0, 1)`` below the diagonal. Otherwise the vectors are drawn directly.
    """
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
    mean: dict = field(default_factory=dict)     # metric -> rule -> (D,)
    spread: dict = field(default_factory=dict)   # metric -> rule -> (D,)
    theory_logit_std: dict = field(default_factory=dict)  # rule -> (D,)

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


def sweep(d_ks=POW2_D_K, rules=RULE_NAMES, *, n=16, samples=32, sigma=1.0, rho=0.0, alpha=0.5,
          temperature=0.1, seed=0) -> Sweep:
    """Monte-Carlo sweep: for each d_k, ``samples`` random (n x n) attention matrices per rule.

    All rules see the same q, k at each d_k (common random numbers), so their curves differ
    only by the rule. Returns a :class:`Sweep`; ``spread`` is the std across samples.

    Examples
    --------
    >>> s = sweep([16, 1024], ("none", "sqrt"), n=8, samples=64)
    >>> bool(s.mean["entropy"]["none"][1] < s.mean["entropy"]["sqrt"][1])
    True
    """
    d_ks = np.asarray([integer(int(d) if isinstance(d, np.integer) else d, "d_k", low=1, high=MAX_D_K)
                       for d in np.atleast_1d(d_ks)])
    n = integer(n, "n", low=2, high=512)
    samples = integer(samples, "samples", low=2, high=100_000)
    rules = tuple(rules)
    for r in rules:
        check_rule(r, alpha=alpha, temperature=temperature)
    if samples * n * n * len(d_ks) * max(len(rules), 1) > MAX_WORK:
        raise ValueError(f"sweep too large: samples*n*n*len(d_ks)*len(rules) must stay <= {MAX_WORK}")
    sigma, rho, rng = _common(sigma, rho, seed)
    c = math.sqrt(1 - rho * rho)

    # Gram matrices of [q; z] for every d_k at once: (D, samples, 2n, 2n)
    g = _gram_stack(d_ks, 2 * n, samples, rng) * (sigma * sigma)
    gqq, gqz, gzz = g[..., :n, :n], g[..., :n, n:], g[..., n:, n:]
    dots = rho * gqq + c * gqz                                               # q_i . k_j
    cos = None
    # float32 is plenty for plotted statistics and halves the cost of the passes below
    z = np.empty((len(rules),) + dots.shape, dtype=np.float32)               # (R, D, samples, n, n)
    for i, r in enumerate(rules):
        if r == "qknorm" and cos is None:
            qn = np.sqrt(_diag(gqq))
            kn = np.sqrt(rho * rho * _diag(gqq) + 2 * rho * c * _diag(gqz) + c * c * _diag(gzz))
            cos = dots / np.maximum(qn[..., :, None] * kn[..., None, :], 1e-300)
        scales = np.array([logit_scale(int(d), r, alpha=alpha, temperature=temperature) for d in d_ks])
        np.multiply(cos if r == "qknorm" else dots, scales[:, None, None, None], out=z[i], casting="same_kind")
    stats = _matrix_stats(z)                                                  # metric -> (R, D, samples)

    out = Sweep(d_k=d_ks, rules=rules, mean={m: {} for m in METRICS}, spread={m: {} for m in METRICS})
    for m, vals in stats.items():
        mean, spread = vals.mean(axis=-1), vals.std(axis=-1)
        for i, r in enumerate(rules):
            out.mean[m][r], out.spread[m][r] = mean[i], spread[i]
    for r in rules:
        out.theory_logit_std[r] = np.array([
            theory_logit_std(int(d), sigma=sigma, rho=rho, n=n,
                             scale=logit_scale(int(d), r, alpha=alpha, temperature=temperature),
                             qknorm=(r == "qknorm")) for d in d_ks])
    return out


def _diag(a: np.ndarray) -> np.ndarray:
    return np.diagonal(a, axis1=-2, axis2=-1)


def _gram_stack(d_ks, p, m, rng) -> np.ndarray:
    """(D, m, p, p) Gram matrices: one vectorised Bartlett draw for every d_k >= p."""
    g = np.empty((len(d_ks), m, p, p))
    big = d_ks >= p
    for i in np.flatnonzero(~big):
        g[i] = sample_gram(int(d_ks[i]), p, m, rng)
    if big.any():
        idx = np.arange(p)
        rows, cols = np.tril_indices(p, -1)
        a = np.zeros((int(big.sum()), m, p, p))
        a[..., rows, cols] = rng.standard_normal(a.shape[:2] + (len(rows),))  # only what is used
        df = (d_ks[big][:, None, None] - idx).astype(float)
        a[..., idx, idx] = np.sqrt(rng.chisquare(np.broadcast_to(df, a.shape[:2] + (p,))))
        g[big] = a @ a.swapaxes(-1, -2)
    return g


def _matrix_stats(z: np.ndarray) -> dict[str, np.ndarray]:
    """Metrics of (..., n, n) logits, each averaged over the n query rows: (...)."""
    logit_std = z.reshape(z.shape[:-2] + (-1,)).std(axis=-1)
    # Keys axis first: the reductions over keys become elementwise ops on big contiguous arrays,
    # several times faster than numpy's reductions over a short last axis.
    zs = np.ascontiguousarray(np.moveaxis(z, -1, 0))
    zs -= zs.max(axis=0)
    p = np.exp(zs)
    total = p.sum(axis=0)
    p *= 1 / total
    ent = np.log(total) - (p * zs).sum(axis=0)       # H = log s - sum p (z - max)
    pp = p * p
    p2 = pp.sum(axis=0)
    pp *= p
    p3 = pp.sum(axis=0)
    health = np.sqrt(np.maximum(p2 - 2 * p3 + p2 * p2, 0))
    return {
        "logit_std": logit_std,
        "entropy": ent.mean(axis=-1),
        "max_weight": (1 / total).mean(axis=-1),     # the top weight is exp(0) / s
        "effective_support": np.exp(ent).mean(axis=-1),
        "gradient_health": health.mean(axis=-1),
    }


def theory_logit_std(d_k, *, sigma=1.0, rho=0.0, n=16, scale=1.0, qknorm=False) -> float:
    """Std of the n x n logits ``scale * q_i . k_j`` pooled over all pairs, in closed form.

    Off-diagonal pairs: mean 0, variance ``d_k sigma^4`` (the classic ``Var(q.k) = d_k
    sigma_q^2 sigma_k^2``). The n matched pairs ``q_i . k_i = rho |q_i|^2 + sqrt(1-rho^2) q_i . z_i``
    have mean ``rho d_k sigma^2`` and variance ``(1 + rho^2) d_k sigma^4``, which is why aligned
    vectors make the spread grow like d_k rather than sqrt(d_k). With ``qknorm`` the vectors are
    unit length: the large-d_k limit (sigma^2 = 1/d_k) is used.
    """
    d = float(integer(d_k, "d_k", low=1))
    s2 = 1.0 / d if qknorm else real(sigma, "sigma", low=0.0, low_open=True) ** 2
    rho = real(rho, "rho", low=0.0, high=1.0)
    n = integer(n, "n", low=1)
    off_var = d * s2 * s2
    diag_mean = rho * d * s2
    diag_var = (1 + rho * rho) * d * s2 * s2
    mean = diag_mean / n
    second = (diag_var + diag_mean ** 2) / n + off_var * (n - 1) / n
    return abs(real(scale, "scale")) * math.sqrt(max(second - mean * mean, 0.0))


def dot_samples(d_k, m, *, sigma=1.0, rho=0.0, seed=0) -> np.ndarray:
    """m exact samples of the unscaled dot product ``q . k`` with ``k = rho q + sqrt(1-rho^2) z``.

    Drawn from the 2 x 2 Gram matrix of [q, z] (see :func:`sample_gram`), so d_k = 4096 is as cheap as 1.
    """
    d_k = integer(d_k, "d_k", low=1, high=MAX_D_K)
    m = integer(m, "m", low=1, high=1_000_000)
    sigma, rho, rng = _common(sigma, rho, seed)
    g = sample_gram(d_k, 2, m, rng) * (sigma * sigma)
    return rho * g[:, 0, 0] + math.sqrt(1 - rho * rho) * g[:, 0, 1]


@dataclass
class PrecisionSweep:
    """Where inf and NaN appear, per dtype, per order of scaling and matmul, per softmax kind."""
    d_k: np.ndarray
    max_abs_logit: dict = field(default_factory=dict)   # dtype -> order -> (D,) (inf where overflowed)
    nonfinite_rows: dict = field(default_factory=dict)  # dtype -> order -> softmax -> (D,) fraction


DTYPES = {"float16": np.float16, "float32": np.float32, "float64": np.float64}
#: "none": unscaled q @ k^T; "after": (q @ k^T) / sqrt(d_k); "before": (q / sqrt(d_k)) @ k^T
ORDERS = ("none", "after", "before")


def precision_sweep(d_ks=POW2_D_K, *, n=16, sigma=1.0, rho=0.0, seed=0) -> PrecisionSweep:
    """Logits computed in each float dtype: unscaled ("none"), scaled "after" the matmul
    (``(q @ k^T) / sqrt(d_k)``: the product itself can overflow) or "before" it
    (``(q / sqrt(d_k)) @ k^T``), then softmaxed the "naive" way (no max shift) or the "stable" way.

    The same float64 draws are rounded to each dtype, so only the arithmetic differs.
    """
    d_ks = np.asarray([integer(int(d), "d_k", low=1, high=MAX_D_K) for d in np.atleast_1d(d_ks)])
    n = integer(n, "n", low=2, high=256)
    res = PrecisionSweep(d_k=d_ks,
                         max_abs_logit={t: {o: [] for o in ORDERS} for t in DTYPES},
                         nonfinite_rows={t: {o: {"naive": [], "stable": []} for o in ORDERS} for t in DTYPES})
    for d in d_ks:
        q64, k64, _ = draw_qkv(n, int(d), sigma=sigma, rho=rho, seed=seed)
        for name, t in DTYPES.items():
            q, k = q64.astype(t), k64.astype(t)
            s = t(1 / math.sqrt(int(d)))
            with np.errstate(over="ignore", invalid="ignore"):
                raw = matmul(q, k.T)
                logits = {"none": raw, "after": raw * s, "before": matmul(q * s, k.T)}
            for order, z in logits.items():
                res.max_abs_logit[name][order].append(float(np.abs(z.astype(np.float64)).max()))
                for kind, fn in (("naive", naive_softmax), ("stable", softmax)):
                    with np.errstate(over="ignore", invalid="ignore"):
                        w = fn(z)
                    res.nonfinite_rows[name][order][kind].append(float((~np.isfinite(w)).any(axis=-1).mean()))
    for name in DTYPES:
        for order in ORDERS:
            res.max_abs_logit[name][order] = np.asarray(res.max_abs_logit[name][order])
            for kind in ("naive", "stable"):
                res.nonfinite_rows[name][order][kind] = np.asarray(res.nonfinite_rows[name][order][kind])
    return res
