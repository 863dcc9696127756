"""One trained head's q and k on a short text (experiments/real_transformer/export_head.py, shipped as
data/real_head.json), and what the softmax makes of them with and without the scale it was trained with, beside
Gaussian q and k of the same size. Plain numpy through sdpa_core; no Panel.

The file is checked before anything is drawn from it (``load``): a damaged or edited copy is refused with a
message naming what is wrong, and the page says so instead of showing it.
"""
from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np

import sdpa_core as sc

DATA = Path(__file__).resolve().parent / "data" / "real_head.json"
#: The Gaussian twins: this many draws of q and k, i.i.d. normal with the real ones' rms per entry.
TWIN_DRAWS = 16
#: The readouts compared with the twins' range (web/claims/tokens.py).
COMPARED = ("std", "kurtosis")


class DamagedHead(ValueError):
    """The shipped head's file is not what export_head.py writes."""


@lru_cache(maxsize=1)
def load(path: Path = DATA) -> dict:
    """The shipped head, checked: text and tokens agree, each layer's q and k are T x d_k finite numbers."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
        tokens, d_k, layers = raw["tokens"], int(raw["d_k"]), raw["layers"]
        if "".join(tokens) != raw["text"] or len(layers) < 2:
            raise DamagedHead("its tokens do not spell its text, or it has fewer than 2 layers")
        if not math.isclose(float(raw["factor"]), d_k**-0.5, rel_tol=1e-5) or raw["run"]["rule"] != "sqrt":
            raise DamagedHead("its head was not trained with 1/√d_k, as the page says it was")
        if not (isinstance(raw["run"]["final_val_loss"], (int, float)) and isinstance(raw["run"]["steps_done"], int)):
            raise DamagedHead("its run's record is incomplete")
        out = []
        for i, layer in enumerate(layers):
            q, k = (np.asarray(layer[name], dtype=np.float64) for name in ("q", "k"))
            if q.shape != (len(tokens), d_k) or k.shape != q.shape or not (np.isfinite(q).all() and np.isfinite(k).all()):
                raise DamagedHead(f"layer {i + 1}'s q and k are not {len(tokens)} x {d_k} finite numbers")
            out.append((q, k))
    except (OSError, ValueError, KeyError, TypeError) as e:
        if isinstance(e, DamagedHead):
            raise
        raise DamagedHead(f"{type(e).__name__}: {e}") from None
    return {**raw, "layers": out}


def readouts(q: np.ndarray, k: np.ndarray, factor: float) -> dict:
    """Causal attention of q and k at ``factor``: the weights and, over the rows that see at least 2 keys, the
    mean top weight, tokens attended (exp entropy) and share of saturated rows; the logits' std and kurtosis over
    the causal pairs."""
    t = len(q)
    _, w = sc.attention(q, k, np.zeros_like(q), scale=factor, causal=True)
    rows = w[1:]
    z = (q @ k.T * factor)[np.tril(np.ones((t, t), dtype=bool))]
    centred = z - z.mean()
    return {"weights": w, "top": float(sc.max_weight(rows).mean()),
            "tokens": float(np.exp(sc.entropy(rows)).mean()), "saturated": float(sc.saturated(rows).mean()),
            "std": float(z.std()), "kurtosis": float((centred**4).mean() / z.var() ** 2), "pairs": int(z.size)}


def alignment(q: np.ndarray, k: np.ndarray) -> dict:
    """Mean cosine of each query with its own key, and with the earlier keys."""
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    kn = k / np.linalg.norm(k, axis=1, keepdims=True)
    c = qn @ kn.T
    below = np.tril(np.ones(c.shape, dtype=bool), -1)
    return {"own": float(np.diag(c).mean()), "others": float(c[below].mean())}


def twin(q: np.ndarray, k: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian q and k of the same shape and the same rms per entry as the real ones (independent entries)."""
    rng = np.random.default_rng(seed)
    rms = [math.sqrt(float((a * a).mean())) for a in (q, k)]
    return rms[0] * rng.standard_normal(q.shape), rms[1] * rng.standard_normal(k.shape)


def _spread(draws: list[dict], keys=COMPARED) -> dict:
    """Each of ``keys`` over the twins: its mean, lowest and highest."""
    return {key: {"mean": float(np.mean([d[key] for d in draws])), "low": min(d[key] for d in draws),
                  "high": max(d[key] for d in draws)} for key in keys} | {"draws": len(draws)}


def layer(index: int) -> dict:
    """Everything the page says about layer ``index`` (0-based): readouts with the trained scale and without,
    the scaled readouts over its Gaussian twins (mean, lowest, highest of TWIN_DRAWS), and the alignment of the real
    q and k and of the twins."""
    head = load()
    q, k = head["layers"][index]
    f = float(head["factor"])
    twins = [twin(q, k, seed) for seed in range(TWIN_DRAWS)]
    return {"index": index, "n": len(q), "d_k": q.shape[1], "factor": f, "tokens": head["tokens"],
            "real": {"scaled": readouts(q, k, f), "unscaled": readouts(q, k, 1.0)},
            "twin": {"scaled": _spread([readouts(gq, gk, f) for gq, gk in twins])},
            "align": alignment(q, k), "twin_align": _spread([alignment(gq, gk) for gq, gk in twins], ("own", "others")),
            "rms": (math.sqrt(float((q * q).mean())), math.sqrt(float((k * k).mean())))}
