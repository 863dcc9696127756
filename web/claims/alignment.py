"""As q and k align: the path's sentences and the flat heatmaps.

Pure functions of results computed by ``sdpa_core`` (no Panel, no state objects), so the tests can check
each sentence against an independent computation; each names the conditions it holds under.
"""
from __future__ import annotations

import math

import numpy as np


from .claim import Claim, as_g, as_int, as_pct, as_tokens, as_word
from .montecarlo import Z, as_margin, mean_margin, share_margin
from .numbers import RULE_LABELS


# ---- as q and k align ------------------------------------------------------------------------------
def alignment_endpoints(path: dict) -> Claim:
    """Every rule's tokens attended at ρ = 0 and at ρ = 1, e.g. "1/√d_k 13.2 → 1.0" (facts ``rule_i``, ``at0_i``
    and ``at1_i`` for the i-th rule the path draws)."""
    tokens, parts, facts = path["effective_support"], [], {}
    for i, r in enumerate(tokens):
        parts.append(f"{{rule_{i}}} {{at0_{i}}} → {{at1_{i}}}")
        facts.update({f"rule_{i}": as_word(r, RULE_LABELS[r]), f"at0_{i}": as_tokens(tokens[r][0]),
                      f"at1_{i}": as_tokens(tokens[r][-1])})
    return Claim("; ".join(parts), **facts)


def alignment_summary(path: dict, *, d_k: int, n: int, sigma: float, rho: float, temperature: float,
                      alpha: float) -> Claim:
    """Which rules saturate as ρ grows, from where, and the readouts at the current ρ. Facts: the conditions
    (``d_k``, ``sigma``, ``n``, ``rho``, and ``temperature``/``alpha`` where a drawn rule reads them), and for
    the i-th rule drawn ``rule_i``, its tokens attended at ρ = 0 and 1 (``at0_i``, ``at1_i``) and now
    (``now_i``); from ``half_saturation_interval``, ``half_i``, the ρ from which half its rows surely saturate,
    with ``half_lo_i`` where they may from earlier, or ``maybe_i`` where they may but surely do not up to 1
    (neither when they surely do not); ``z`` and ``samples``, the interval's terms; ``pm_tokens``, the widest
    interval of the tokens attended it states (``tokens_margin``)."""
    rhos = np.asarray(path["rho"])
    i = int(np.argmin(np.abs(rhos - rho)))
    ends = alignment_endpoints(path)
    facts = dict(d_k=as_int(d_k), sigma=as_g(sigma), n=as_int(n), rho=as_g(rhos[i]), **ends.given())
    parts, holding, unclear, now = [], [], [], []
    tokens = path["effective_support"]
    for k, rule in enumerate(tokens):
        label = f"{{rule_{k}}}"
        if rule == "qknorm":
            label, facts["temperature"] = label + " (τ = {temperature})", as_g(temperature)
        elif rule == "alpha":
            label, facts["alpha"] = label + " (α = {alpha})", as_g(alpha)
        maybe, surely = half_saturation_interval(path, rule)
        if not math.isfinite(maybe):
            holding.append(label)
        elif not math.isfinite(surely):
            unclear.append(f"{label} from ρ = {{maybe_{k}}} on")
            facts[f"maybe_{k}"] = as_g(maybe)
        elif surely > maybe:
            parts.append(f"{label} from ρ = {{half_lo_{k}}}–{{half_{k}}}")
            facts.update({f"half_lo_{k}": as_g(maybe), f"half_{k}": as_g(surely)})
        else:
            parts.append(f"{label} from ρ = {{half_{k}}}")
            facts[f"half_{k}"] = as_g(surely)
        now.append(f"{{rule_{k}}} {{now_{k}}}")
        facts[f"now_{k}"] = as_tokens(tokens[rule][i])
    facts["pm_tokens"] = as_margin(tokens_margin(path, tokens, (0, -1, i)), 1)
    text = ("At d_k = {d_k}, σ = {sigma}, n = {n}, tokens attended from ρ = 0 to 1 (each ±{pm_tokens}): "
            + ends.template + ". ")
    text += ("At least half the rows saturate with " + ", ".join(parts) + ". " if parts
             else "No rule surely saturates half the rows up to ρ = 1. ")
    if unclear:
        text += "Too close to call whether half the rows saturate with " + ", ".join(unclear) + ". "
    if holding:
        text += "With " + " and ".join(holding) + ", fewer than half the rows saturate up to ρ = 1. "
    if parts or unclear or holding:
        text += ("(Each call allows {z} standard errors of the {samples} draws per ρ: ρ = a–b means half the rows may "
                 "saturate from a and surely do from b.) ")
        facts.update(z=as_g(Z), samples=as_int(path["samples"]))
    return Claim(text + "Now, at ρ = {rho}" + _nearest(rhos[i], rho, facts) + ": tokens attended " + ", ".join(now)
                 + " (of {n}).", **facts)


def half_saturation_interval(path: dict, rule: str) -> tuple[float, float]:
    """The ρ from which at least half of ``rule``'s rows may saturate (the share's interval, ``share_margin``,
    reaches 0.5) and the ρ from which they surely do (the interval is above 0.5); NaN for none up to ρ = 1.
    The draw's own first ρ (``half_saturated_rho``) lies between the two."""
    rhos, share, spread = np.asarray(path["rho"]), path["saturated"][rule], path["spread"]["saturated"][rule]
    samples, rows = path["samples"], path["n"] * path["samples"]
    margin = np.array([share_margin(p, s, samples, rows) for p, s in zip(share, spread)])
    maybe, surely = share + margin >= 0.5, share - margin >= 0.5
    return (float(rhos[maybe].min()) if maybe.any() else math.nan,
            float(rhos[surely].min()) if surely.any() else math.nan)


def tokens_margin(path: dict, rules, points) -> float:
    """The widest interval (``mean_margin``) of the tokens attended of ``rules`` at the path's ``points``."""
    spread = path["spread"]["effective_support"]
    return max(mean_margin(spread[r][p], path["samples"]) for r in rules for p in points)


def _nearest(swept: float, rho: float, facts: dict) -> str:
    """Where the state's ρ (a link's 0.34) is not a point of the sweep (0.05 apart), the sentence says that its
    numbers are the nearest point's; adds the fact ``asked``."""
    if abs(float(swept) - rho) < 1e-9:
        return ""
    facts["asked"] = as_g(rho)
    return " (the sweep's point nearest your {asked})"

def alignment_headline(path: dict, *, rho: float, n: int) -> Claim:
    """The alignment view's point: how many tokens 1/√d_k attends to at the current ρ and at ρ = 0 (at ρ = 0:
    at the largest ρ), each within ``pm`` (``tokens_margin``)."""
    rhos = np.asarray(path["rho"])
    i = int(np.argmin(np.abs(rhos - rho)))
    j = -1 if i == 0 else 0
    tokens = path["effective_support"]["sqrt"]
    facts = dict(rho=as_g(rhos[i]), tokens=as_tokens(tokens[i]), n=as_int(n), other_rho=as_g(rhos[j]),
                 other_tokens=as_tokens(tokens[j]))
    facts["pm"] = as_margin(tokens_margin(path, ("sqrt",), (i, j)), 1)
    text = "At ρ = {rho}" + _nearest(rhos[i], rho, facts) + ", 1/√d_k attends to about {tokens} of {n} tokens"
    if i == 0:
        return Claim(text + "; at ρ = {other_rho}, {other_tokens} of {n} (each ±{pm}).", **facts)
    return Claim(text + ", against {other_tokens} of {n} at ρ = {other_rho} (each ±{pm}).", **facts)

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
