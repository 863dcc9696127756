"""Monte-Carlo sweeps over d_k and the rules: mean and spread of each readout, with the theory curve beside."""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field

import numpy as np

from ._checks import (
    boolean,
    d_k_values,
    integer,
    names,
    real,
)
from .scaling import (
    MAX_D_K as MAX_SCALE_D_K,
    RULE_NAMES,
    RULES,
    check_rule,
    pooled_dot_std,
    product,
    rule_name,
)
from .stats import above, jacobian_norm_from

from .draws import MAX_D_K, MAX_WORK, POW2_D_K, _common, _diag, _qz_dots
from .readouts import METRICS

__all__ = [
    "Sweep",
    "sweep",
    "theory_logit_std",
]


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
                if spec[o].normalizes == spec[r].normalizes
                and spec[o].cap == spec[r].cap
                and np.allclose(factors[o], factors[r], rtol=1e-15, atol=0)
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
        if not spec[r].caps(float(np.abs(factors[r]).max()) * float(np.abs(base).max())):
            # the spread is exact in float64: |factor| * std of the unscaled base (z may hold 1e-40 as 0)
            logit_std[i] = np.abs(factors[r])[:, None] * base_std
        else:  # soft-capped: the spread of the logits the softmax sees, bounded by the cap
            spec[r].capped(z[:, i], out=z[:, i])
            logit_std[i] = _pooled_std(z[:, i].astype(np.float64))
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
