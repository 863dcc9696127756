"""From initialisation to training: what each rule does as queries and their keys align (rho: 0 -> 1).

At initialisation q and k are independent (rho = 0); training aligns a query with the key it should
find (``k = rho q + sqrt(1 - rho^2) z``). The matched logit's mean then grows like ``rho d_k sigma^2``
times the rule's factor, so 1/sqrt(d_k) hands it ``rho sqrt(d_k) sigma^2`` (16 at d_k = 256): the row
saturates. 1/d_k hands it ``rho sigma^2``; QK-norm ``rho / temperature``, bounded whatever d_k.
"""

from __future__ import annotations

import numpy as np

from ._checks import _asarray, integer, names, real
from .draws import MAX_D_K, MAX_WORK, _diag, _qz_dots
from .readouts import METRICS
from .sweeps import _matrix_stats, _pooled_std
from .scaling import RULE_NAMES, RULES, check_rule, rule_name

__all__ = ["rho_path", "MAX_RHOS"]

#: Points on the path: each is one sweep at one d_k.
MAX_RHOS = 101


def rho_path(rhos, rules=RULE_NAMES, *, d_k, n=16, sigma=1.0, samples=32, seed=0, alpha=0.5, temperature=0.1) -> dict:
    """Each rule's attention as q and k align, at one d_k: what :func:`sdpa_core.sweep` gives at each rho.

    Every rho uses the same draws of q and z (``k = rho q + sqrt(1 - rho^2) z``, common random numbers,
    exactly the draws of ``sweep(..., seed=seed)``), so the curves move smoothly with rho; all rhos are
    computed in one pass.

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
        ``rho`` (P,) float64; ``rules`` (tuple); ``d_k``, ``n`` and ``samples`` (int; a mean's standard
        error is its spread / sqrt(samples)); for each metric of
        :data:`sdpa_core.METRICS` (``logit_std``, ``entropy`` in nats, ``max_weight``,
        ``effective_support`` = tokens attended, ``saturated`` = share of rows with top weight > 0.99,
        ``jacobian_norm``): ``{rule: (P,) mean over samples}``, and under ``"spread"`` the same layout of
        stds across samples; ``half_saturated_rho``: ``{rule: float}``, the smallest rho of ``rhos`` at
        which at least half the rows are saturated, NaN if none is.

    Notes
    -----
    What the path shows at n = 16, sigma = 1, 64 samples (checked in tests/core/test_alignment.py):
    1/sqrt(d_k) saturates half the rows from rho = 1.0, 0.5, 0.25 at d_k = 64, 256, 1024 (earlier the
    larger d_k); 1/d_k never saturates at sigma = 1, but never focuses either (top weight <= 0.16 even at
    rho = 1: the matched logit gains only ``rho sigma^2``), while at sigma = 3 (matched logit up to 9) it
    saturates half the rows from rho = 0.85-0.9 at d_k >= 64; QK-norm's point is set by the temperature and
    stops moving with d_k from d_k ~ 256: at 0.1 (logits up to 10) half the rows saturate from rho = 1.0,
    0.8, 0.75, 0.75 at d_k = 16, 64, 256, 1024; from 0.15 on (logits up to 6.7) fewer than half do even at
    rho = 1.
    Cost at the defaults (11 rhos, five rules): ~10 ms on one core.

    Examples
    --------
    >>> r = rho_path([0.0, 1.0], ("sqrt", "linear"), d_k=256, samples=16)
    >>> r["saturated"]["sqrt"].tolist(), r["saturated"]["linear"].tolist()
    ([0.0, 1.0], [0.0, 0.0])
    """
    rho = _rhos(rhos)
    rules = names(rules, "rules", rule_name)
    _, alpha, temperature = check_rule(rules[0], alpha=alpha, temperature=temperature)
    d_k = integer(d_k, "d_k", low=1, high=MAX_D_K)
    n = integer(n, "n", low=2, high=512)
    samples = integer(samples, "samples", low=2, high=100_000)
    seed = integer(seed, "seed", low=0)
    sigma = real(sigma, "sigma", low=0.0, low_open=True, high=1e3)
    if len(rho) * samples * n * n * len(rules) > MAX_WORK:  # sweep's cap, with rho in place of d_k
        raise ValueError(f"too much work: len(rhos) * samples * n * n * len(rules) must be <= {MAX_WORK}")
    stats = _path_stats(d_k, rho, rules, n, samples, sigma, alpha, temperature, seed)  # metric -> rule -> (P, samples)
    out: dict = {"rho": rho, "rules": rules, "d_k": d_k, "n": n, "samples": samples, "spread": {m: {} for m in METRICS}}
    for m in METRICS:
        out[m] = {r: stats[m][r].mean(axis=-1) for r in rules}
        out["spread"][m] = {r: stats[m][r].std(axis=-1) for r in rules}
    out["half_saturated_rho"] = {r: _first(rho, out["saturated"][r] >= 0.5) for r in rules}
    return out


def _path_stats(d_k, rho, rules, n, samples, sigma, alpha, temperature, seed) -> dict:
    """What :func:`sdpa_core.sweep` computes at one d_k, for every rho at once (rho on sweep's d_k axis):
    the same draws (``default_rng(seed)``, shared by every rho), the same float32 statistics."""
    rng = np.random.default_rng(seed)
    d = np.array([float(d_k)])
    gqq, gqz, zz = _qz_dots(np.array([d_k]), n, samples, rng)  # (1, samples, n, n), ..., (1, samples, n)
    c = np.sqrt(1 - rho * rho)
    r4, c4 = rho[:, None, None, None], c[:, None, None, None]
    keys_first = np.ascontiguousarray(np.moveaxis(r4 * gqq + c4 * gqz, -1, 0))  # (n_keys, P, samples, n_q)
    bases = {False: (keys_first, _pooled_std(keys_first))}
    spec = {r: RULES[r] for r in rules}
    if any(s.normalizes for s in spec.values()):
        r3, c3 = rho[:, None, None], c[:, None, None]
        qq = _diag(gqq)  # (1, samples, n)
        kn = np.sqrt(r3 * r3 * qq + 2 * r3 * c3 * _diag(gqz) + c3 * c3 * zz)  # (P, samples, n) |k_j| / sigma
        cos = keys_first / np.maximum(np.moveaxis(kn, -1, 0)[..., None] * np.sqrt(qq)[None], 1e-300)
        bases[True] = (cos, _pooled_std(cos))
    # each rule's factor on its base; rules with the same base and factor (alpha = 0.5 and sqrt) share a slot
    keys = {
        r: (
            s.normalizes,
            float(s._scales(d, alpha, temperature, n)[0]) * (1.0 if s.normalizes else sigma * sigma),
            s.cap,
        )
        for r, s in spec.items()
    }
    slots = list(dict.fromkeys(keys.values()))
    z = np.empty((n, len(slots)) + keys_first.shape[1:], dtype=np.float32)  # (n_keys, R, P, samples, n_q)
    logit_std = np.empty((len(slots),) + keys_first.shape[1:3])
    for i, (normalizes, factor, cap) in enumerate(slots):
        base, base_std = bases[normalizes]
        np.multiply(base, factor, out=z[:, i], casting="same_kind")
        first = next(r for r in rules if keys[r] == (normalizes, factor, cap))
        if not spec[first].caps(abs(factor) * float(np.abs(base).max())):
            logit_std[i] = abs(factor) * base_std
        else:  # soft-capped, by the first rule of this slot (sweeps.sweep does the same)
            spec[first].capped(z[:, i], out=z[:, i])
            logit_std[i] = _pooled_std(z[:, i].astype(np.float64))
    stats = {"logit_std": logit_std, **_matrix_stats(z)}  # metric -> (R, P, samples)
    return {m: {r: vals[slots.index(keys[r])] for r in rules} for m, vals in stats.items()}


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
