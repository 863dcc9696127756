"""As q and k align: the path's sentences and the flat heatmaps.

Pure functions of results computed by ``sdpa_core`` (no Panel, no state objects), so the tests can check
each sentence against an independent computation; each names the conditions it holds under.
"""
from __future__ import annotations

import math

import numpy as np


from .numbers import RULE_LABELS, pct


# ---- as q and k align ------------------------------------------------------------------------------
def alignment_endpoints(path: dict) -> str:
    """Every rule's tokens attended at ρ = 0 and at ρ = 1, e.g. "1/√d_k 13.2 → 1.0"."""
    tokens = path["effective_support"]
    return "; ".join(f"{RULE_LABELS[r]} {tokens[r][0]:.1f} → {tokens[r][-1]:.1f}" for r in tokens)


def alignment_summary(path: dict, *, d_k: int, n: int, sigma: float, rho: float, temperature: float,
                      alpha: float) -> str:
    """Which rules saturate as ρ grows, from where, and the readouts at the current ρ."""
    where = f"At d_k = {d_k}, σ = {sigma:g}, n = {n}"
    rhos = np.asarray(path["rho"])
    i = int(np.argmin(np.abs(rhos - rho)))
    parts, holding = [], []
    tokens = path["effective_support"]
    for rule in tokens:
        first = path["half_saturated_rho"][rule]
        label = RULE_LABELS[rule] + (f" (τ = {temperature:g})" if rule == "qknorm" else "") + (
            f" (α = {alpha:g})" if rule == "alpha" else "")
        if not math.isfinite(first):
            holding.append(label)
        else:
            parts.append(f"{label} from ρ = {first:g}")
    text = f"{where}, tokens attended from ρ = 0 to 1: {alignment_endpoints(path)}. "
    text += ("At least half the rows saturate with " + ", ".join(parts) + ". " if parts
             else "No rule saturates half the rows up to ρ = 1. ")
    if holding:
        text += f"With {' and '.join(holding)}, fewer than half the rows saturate up to ρ = 1. "
    now = ", ".join(f"{RULE_LABELS[r]} {tokens[r][i]:.1f}" for r in tokens)
    return text + f"Now, at ρ = {rhos[i]:g}: tokens attended {now} (of {n})."

def alignment_headline(path: dict, *, rho: float, n: int) -> str:
    """The alignment view's point: how many tokens 1/√d_k attends to at the current ρ and at ρ = 0."""
    rhos = np.asarray(path["rho"])
    i = int(np.argmin(np.abs(rhos - rho)))
    tokens = path["effective_support"]["sqrt"]
    text = f"At ρ = {rhos[i]:g}, 1/√d_k attends to about {tokens[i]:.1f} of {n} tokens"
    if i == 0:
        return text + f"; at ρ = {rhos[-1]:g}, {tokens[-1]:.1f} of {n}."
    return text + f", against {tokens[0]:.1f} of {n} at ρ = {rhos[0]:g}."

#: A heatmap whose every weight lies within this factor of uniform (1/n) reads as one flat colour.
FLAT_MAP = 2.0


def flat_maps(maps: dict, *, n: int) -> str:
    """Which heatmaps (rule -> n×n weights) read as one flat colour on the shared 0-1 scale: every weight
    within ``FLAT_MAP``× of uniform; "" when none is."""
    flat = []
    for rule, w in maps.items():
        lo, hi = float(np.nanmin(w)), float(np.nanmax(w))
        if lo >= 1 / (FLAT_MAP * n) and hi <= FLAT_MAP / n:
            flat.append(f"in {RULE_LABELS[rule]}'s map every weight lies between {pct(lo)} and {pct(hi)}")
    if not flat:
        return ""
    return (f"Flat, not empty: {'; '.join(flat)}, within {FLAT_MAP:g}× of uniform ({pct(1 / n)}), near the bottom "
            f"of the shared scale.")
