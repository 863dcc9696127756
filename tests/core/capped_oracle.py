"""An independent computation of soft-capped logits' moments for Gaussian q and k, for the oracle tests.

sdpa_core integrates the cap on a log-chi-square grid with a trapezoid rule on each normal (Rule.capped_moments).
This integrates over |q| (a chi variable, smooth at 0 for every d_k) on a fine linear grid, and over each
normal given |q| with Gauss-Hermite nodes (numpy.polynomial, which the page's Pyodide numpy lacks)."""
from __future__ import annotations

import math

import numpy as np


def capped_logit_moments(d_k: int, f: float, rho: float, cap: float, n: int = 2) -> dict:
    """Moments of ``cap tanh(f q.k / cap)`` for q, k with N(0, 1) entries (``f``: the factor times sigma^2),
    ``k = rho q + sqrt(1 - rho^2) z`` for the matched key and independent for the others: ``off_std`` (an
    unmatched logit), ``matched_mean``, ``matched_std``, and ``pooled_std`` over n x n logits."""
    x, w = np.polynomial.hermite_e.hermegauss(120)
    w = w / w.sum()
    u = np.linspace(0.0, math.sqrt(d_k) + 14.0, 20_001)             # |q|, from 0 (where d_k = 1 has its peak)
    safe = np.where(u > 0, u, 1.0)
    logp = np.where(u > 0, (d_k - 1) * np.log(safe), 0.0 if d_k == 1 else -np.inf) - 0.5 * u * u   # chi, unnormalised
    p = np.exp(logp - logp.max())
    p[[0, -1]] *= 0.5                                                # the trapezoid rule
    p /= p.sum()
    u = u[:, None]

    def moments(mean, std):
        t = cap * np.tanh((mean + std * x[None, :]) / cap)
        first = (t * w).sum(axis=1)
        return first, (t * t * w).sum(axis=1)

    off_first, off_second = moments(0.0 * u, abs(f) * u)
    mat_first, mat_second = moments(f * rho * u * u, abs(f) * math.sqrt(1 - rho * rho) * u)
    off2, m1, m2 = (p * off_second).sum(), (p * mat_first).sum(), (p * mat_second).sum()
    first, second = m1 / n, ((n - 1) * off2 + m2) / n
    return {"off_std": math.sqrt(off2), "matched_mean": float(m1), "matched_std": math.sqrt(max(m2 - m1 * m1, 0.0)),
            "pooled_std": math.sqrt(max(second - first * first, 0.0))}
