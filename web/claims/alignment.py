"""As q and k align: the path's sentences and the flat heatmaps.

Pure functions of results computed by ``sdpa_core`` (no Panel, no state objects), so the tests can check
each sentence against an independent computation; each names the conditions it holds under.
"""
from __future__ import annotations

import math

import numpy as np


from .claim import Claim, as_g, as_int, as_pct, as_tokens, as_word
from .numbers import RULE_LABELS


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

def alignment_headline(path: dict, *, rho: float, n: int) -> Claim:
    """The alignment view's point: how many tokens 1/√d_k attends to at the current ρ and at ρ = 0 (at ρ = 0:
    at the largest ρ)."""
    rhos = np.asarray(path["rho"])
    i = int(np.argmin(np.abs(rhos - rho)))
    j = -1 if i == 0 else 0
    tokens = path["effective_support"]["sqrt"]
    facts = dict(rho=as_g(rhos[i]), tokens=as_tokens(tokens[i]), n=as_int(n), other_rho=as_g(rhos[j]),
                 other_tokens=as_tokens(tokens[j]))
    text = "At ρ = {rho}, 1/√d_k attends to about {tokens} of {n} tokens"
    if i == 0:
        return Claim(text + "; at ρ = {other_rho}, {other_tokens} of {n}.", **facts)
    return Claim(text + ", against {other_tokens} of {n} at ρ = {other_rho}.", **facts)

#: A heatmap whose every weight lies within this factor of uniform (1/n) reads as one flat colour.
FLAT_MAP = 2.0


def flat_maps(maps: dict, *, n: int) -> Claim:
    """Which heatmaps (rule -> n×n weights) read as one flat colour on the shared 0-1 scale: every weight
    within ``FLAT_MAP``× of uniform; "" when none is. Facts: ``rule_i``, ``lo_i``, ``hi_i`` of the i-th flat map."""
    parts, facts = [], {}
    for rule, w in maps.items():
        lo, hi = float(np.nanmin(w)), float(np.nanmax(w))
        if lo >= 1 / (FLAT_MAP * n) and hi <= FLAT_MAP / n:
            i = len(parts)
            parts.append(f"in {{rule_{i}}}'s map every weight lies between {{lo_{i}}} and {{hi_{i}}}")
            facts.update({f"rule_{i}": as_word(rule, RULE_LABELS[rule]), f"lo_{i}": as_pct(lo), f"hi_{i}": as_pct(hi)})
    if not parts:
        return Claim("")
    return Claim("Flat, not empty: " + "; ".join(parts) + ", within {factor}× of uniform ({uniform}), near the "
                 "bottom of the shared scale.", **facts, factor=as_g(FLAT_MAP), uniform=as_pct(1 / n))
