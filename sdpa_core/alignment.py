"""From initialisation to training: what each rule does as queries and their keys align (rho: 0 -> 1).

At initialisation q and k are independent (rho = 0); training aligns a query with the key it should
find (``k = rho q + sqrt(1 - rho^2) z``). The matched logit's mean then grows like ``rho d_k sigma^2``
times the rule's factor, so 1/sqrt(d_k) hands it ``rho sqrt(d_k) sigma^2`` (16 at d_k = 256): the row
saturates. 1/d_k hands it ``rho sigma^2``; QK-norm ``rho / temperature``, bounded whatever d_k.
"""

from __future__ import annotations

import numpy as np

from ._checks import _asarray, integer, names, real
from .experiments import MAX_D_K, MAX_WORK, METRICS, sweep
from .scaling import RULE_NAMES, check_rule, rule_name

__all__ = ["rho_path", "MAX_RHOS"]

#: Points on the path: each is one sweep at one d_k.
MAX_RHOS = 101


def rho_path(rhos, rules=RULE_NAMES, *, d_k, n=16, sigma=1.0, samples=32, seed=0, alpha=0.5, temperature=0.1) -> dict:
    """Each rule's attention as q and k align, at one d_k: a :func:`sdpa_core.sweep` per rho.

    Every rho uses the same seed, so the underlying q, z draws are shared (common random numbers) and
    the curves move smoothly with rho.

    Parameters
    ----------
    rhos : float or flat sequence of floats in [0, 1]
        At most 101 of them.
    rules : sequence of rule names (:data:`sdpa_core.RULES`)
    d_k : int in [1, 65536]
    n, sigma, samples, seed, alpha, temperature
        As for :func:`sdpa_core.sweep`.

    Returns
    -------
    dict
        ``rho`` (P,) float64; ``rules`` (tuple); ``d_k`` (int); for each metric of
        :data:`sdpa_core.METRICS` (``logit_std``, ``entropy`` in nats, ``max_weight``,
        ``effective_support`` = tokens attended, ``saturated`` = share of rows with top weight > 0.99,
        ``jacobian_norm``): ``{rule: (P,) mean over samples}``, and under ``"spread"`` the same layout of
        stds across samples; ``half_saturated_rho``: ``{rule: float}``, the smallest rho of ``rhos`` at
        which at least half the rows are saturated, NaN if none is.

    Notes
    -----
    What the path shows at n = 16, sigma = 1, 64 samples (checked in tests/core/test_alignment.py):
    1/sqrt(d_k) saturates half the rows from rho = 1.0, 0.5, 0.25 at d_k = 64, 256, 1024 (earlier the
    larger d_k); 1/d_k never saturates, but never focuses either (top weight <= 0.16 even at rho = 1:
    the matched logit gains only ``rho sigma^2``); QK-norm's point does not move with d_k and is set by
    the temperature alone: at 0.1 (logits up to 10) half the rows saturate from rho = 0.75-0.8 at every
    d_k; from 0.15 on (logits up to 6.7) fewer than half do even at rho = 1. Cost: one sweep per rho,
    ~1.5-2.5 ms each at the defaults (11 rhos, five rules: 16-28 ms on one core).

    Examples
    --------
    >>> r = rho_path([0.0, 1.0], ("sqrt", "linear"), d_k=256, samples=16)
    >>> r["saturated"]["sqrt"].tolist(), r["saturated"]["linear"].tolist()
    ([0.0, 1.0], [0.0, 0.0])
    """
    rho = _rhos(rhos)
    rules = names(rules, "rules", rule_name)
    check_rule(rules[0], alpha=alpha, temperature=temperature)
    d_k = integer(d_k, "d_k", low=1, high=MAX_D_K)
    n = integer(n, "n", low=2, high=512)
    samples = integer(samples, "samples", low=2, high=100_000)
    seed = integer(seed, "seed", low=0)
    real(sigma, "sigma", low=0.0, low_open=True, high=1e3)
    if len(rho) * samples * n * n * len(rules) > MAX_WORK:
        raise ValueError(f"too much work: len(rhos) * samples * n * n * len(rules) must be <= {MAX_WORK}")
    out: dict = {"rho": rho, "rules": rules, "d_k": d_k, "spread": {m: {} for m in METRICS}}
    runs = [
        sweep(
            [d_k],
            rules,
            n=n,
            samples=samples,
            sigma=sigma,
            rho=float(r),
            alpha=alpha,
            temperature=temperature,
            seed=seed,
        )
        for r in rho
    ]
    for m in METRICS:
        out[m] = {r: np.array([float(s.mean[m][r][0]) for s in runs]) for r in rules}
        out["spread"][m] = {r: np.array([float(s.spread[m][r][0]) for s in runs]) for r in rules}
    out["half_saturated_rho"] = {r: _first(rho, out["saturated"][r] >= 0.5) for r in rules}
    return out


def _first(rho: np.ndarray, hit: np.ndarray) -> float:
    return float(rho[hit].min()) if hit.any() else float("nan")


def _rhos(rhos) -> np.ndarray:
    a = _asarray(rhos, "rhos")
    if a.ndim > 1 or a.size == 0 or a.size > MAX_RHOS:
        raise ValueError(f"rhos must be one rho or a flat list of 1 to {MAX_RHOS}, got shape {a.shape}")
    return np.array(
        [
            real(x.item() if isinstance(x, np.generic) else x, "rhos: each rho", low=0.0, high=1.0)
            for x in np.atleast_1d(a)
        ]
    )
