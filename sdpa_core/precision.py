"""Half precision: where float16 overflows, per softmax order (none, scale after, scale before)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ._checks import (
    d_k_values,
    integer,
)
from .attention import matmul
from .softmax import naive_inplace, softmax_inplace

from .draws import MAX_D_K, POW2_D_K, _common, _draw_qk
from .readouts import MAX_FLOPS

__all__ = [
    "PrecisionSweep",
    "DTYPES",
    "ORDERS",
    "precision_sweep",
    "first_breaks",
    "BREAK_DRAWS",
    "FLOAT16_MAX",
]

FLOAT16_MAX = float(np.finfo(np.float16).max)  # 65504


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


#: How many draws ``first_breaks`` makes, and the first of their seeds: fixed, so that the spread a sentence
#: states is a property of the settings (n, sigma, rho, order), the same for every reader and every seed shown.
BREAK_DRAWS = 20
BREAK_SEED = 1_000_003


def first_breaks(
    d_ks=POW2_D_K, *, n=16, sigma=1.0, rho=0.0, order="before", draws=BREAK_DRAWS, seed=BREAK_SEED
) -> dict[str, list]:
    """Over ``draws`` independent draws (seeds ``seed``, ``seed + 1``, ...): in each, the smallest d_k whose
    float16 softmax has a row with inf or NaN, for the "naive" and the "stable" softmax, with the scale where
    ``order`` puts it; None for a draw where no d_k breaks. Draw for draw, these are what ``precision_sweep``
    at that seed shows for float16 (the same nested vectors and arithmetic), so a sentence made from one draw
    can state the spread its settings give."""
    d_ks = d_k_values(d_ks, MAX_D_K)
    n = integer(n, "n", low=2, high=256)
    if not isinstance(order, str) or order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    draws = integer(draws, "draws", low=1, high=200)
    seed = integer(seed, "seed", low=0, high=2**63 - 1 - 200)
    if 2 * n * n * int(d_ks.sum()) * draws > MAX_FLOPS:
        raise ValueError(f"too much work: 2 * n * n * sum(d_ks) * draws must be <= {MAX_FLOPS}")
    sigma, rho, _ = _common(sigma, rho, seed)
    out: dict[str, list] = {"naive": [], "stable": []}
    for i in range(draws):
        q_all, k_all = _draw_qk(np.random.default_rng(seed + i), n, int(d_ks.max()), sigma, rho)
        found: dict[str, int | None] = {"naive": None, "stable": None}
        for d in d_ks:
            q, k = q_all[:, :d].astype(np.float16), k_all[:, :d].astype(np.float16)
            s = np.asarray(1 / math.sqrt(int(d)), dtype=np.float16)
            with np.errstate(over="ignore", invalid="ignore"):
                if order == "before":
                    z = matmul(q * s, k.T)
                else:
                    z = matmul(q, k.T)
                    if order == "after":
                        z = np.multiply(z, s)
            for kind, fn in (("naive", naive_inplace), ("stable", softmax_inplace)):
                if found[kind] is None:
                    with np.errstate(over="ignore", invalid="ignore"):
                        w = fn(z.copy())
                    if not np.isfinite(w).all():
                        found[kind] = int(d)
            if found["naive"] is not None and found["stable"] is not None:
                break
        out["naive"].append(found["naive"])
        out["stable"].append(found["stable"])
    return out
