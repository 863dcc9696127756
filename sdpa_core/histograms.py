"""Exact samples of one query's dot product with its own key, and their histograms against the theory."""

from __future__ import annotations

import math

import numpy as np

from ._checks import (
    integer,
)
from .scaling import (
    RULES,
    check_rule,
    pair_dot_moments,
    product,
)

from .draws import MAX_D_K, _common, sample_gram, small_sigma

__all__ = [
    "dot_samples",
    "dot_histograms",
]


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
    size = base_size * factor
    capping = spec.caps(abs(size) * float(np.abs(base).max()))  # a cap these logits reach (not at a tiny sigma)
    dot, scaled = unit * sigma2, base * size
    if capping:
        scaled = spec.capped(scaled)
    return {
        "unscaled": _histogram(dot, mean0, std0, bins),
        "scaled": _histogram(scaled, mean1, std1, bins, _raw(spec, size, mean0 / sigma2, std0 / sigma2, capping)),
        "theory_mean": (mean0, mean1),
        "theory_std": (std0, std1),
        # moments of the sigma = 1 draws, scaled once: those of 1e-300 values would square to 0
        "sample_mean": (float(unit.mean()) * sigma2, _moment(base, size, scaled, capping, np.mean)),
        "sample_std": (float(unit.std()) * sigma2, _moment(base, abs(size), scaled, capping, np.std)),
    }


def _moment(base: np.ndarray, size: float, scaled: np.ndarray, capping: bool, stat) -> float:
    """``stat`` (mean or std) of the scaled logits: of the sigma-free base times its size (exact for tiny sigma),
    or, where a soft-cap reaches them (``capping``: they are then at least 1e-4 of the cap, so their squares do
    not underflow), of the capped logits themselves."""
    return float(stat(scaled)) if capping else float(stat(base)) * size


def _raw(spec, size: float, mean: float, std: float, capping: bool):
    """For a soft-capping rule whose cap these logits reach, ``(cap, mean, std)`` of the logit before its cap (the
    pair's dot at sigma = 1 times ``size``): the theory curve is then that normal pushed through the cap. None for
    every other rule, and where the cap changes nothing."""
    return (spec.cap, size * mean, abs(size) * std) if capping else None


def _histogram(x: np.ndarray, mean: float, std: float, bins: int, capped=None) -> dict:
    """Density histogram of x over its 0.1-99.9 percentiles widened to mean +- 4 std, and the normal pdf; with
    ``capped = (c, m, s)``, x is ``c tanh(X / c)`` of X ~ N(m, s^2) and the curve is that variable's density,
    ``N(x; m, s) / (1 - tanh(x / c)^2)`` at ``c tanh(x / c)`` for x over m +- 6 s, inside the range (-c, c)."""
    lo, hi = np.percentile(x, [0.1, 99.9])
    lo, hi = min(lo, mean - 4 * std), max(hi, mean + 4 * std)
    if capped is not None:
        c = capped[0]
        lo, hi = max(lo, -c), min(hi, c)  # a logit at the cap (tanh = 1 in float64) is in the last bin
        mid = (lo + hi) / 2
        if hi - lo < 0.3 * c and abs(mid) > 0.7 * c:  # piled up against the cap: bins a figure of +-c can draw
            mid = max(-0.85 * c, min(mid, 0.85 * c))
            lo, hi = mid - 0.15 * c, mid + 0.15 * c
    if not hi > lo:
        lo, hi = lo - 1, hi + 1
    counts, edges = np.histogram(x, bins=bins, range=(lo, hi), density=True)
    if capped is not None and capped[2] > 0:
        # 200 points spread over the normal before the cap, so a density piled up against the cap is drawn too
        c, m, s = capped
        raw = m + s * np.linspace(-6.0, 6.0, 200)
        u = np.tanh(raw / c)
        keep = (1 - u * u > 1e-12) & (c * u >= lo) & (c * u <= hi)
        grid, pdf = c * u[keep], _normal_pdf(raw[keep], m, s) / (1 - u[keep] ** 2)
        if grid.size == 0:  # the whole normal lies past 14 caps: every logit is +-c to 1e-12, a point mass
            grid, pdf = np.array([lo, hi]), np.zeros(2)
    else:
        grid = np.linspace(lo, hi, 200)
        pdf = _normal_pdf(grid, mean, std) if std > 0 else 0 * grid
    return {"left": edges[:-1], "right": edges[1:], "density": counts, "x": grid, "pdf": pdf}


def _normal_pdf(x: np.ndarray, mean: float, std: float) -> np.ndarray:
    return np.exp(-0.5 * ((x - mean) / std) ** 2) / (std * math.sqrt(2 * math.pi))
