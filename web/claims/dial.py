"""The logit dial's sentences.

Pure functions of results computed by ``sdpa_core`` (no Panel, no state objects), so the tests can check
each sentence against an independent computation; each names the conditions it holds under.
"""
from __future__ import annotations

import math


import sdpa_core as sc

from .claim import Claim, as_fmt, as_g, as_int, as_pct, as_sci, as_tokens
from .numbers import RULE_LABELS, _ratio, fmt, pct
from .montecarlo import as_points, mean_margin
from .playground import STARVED, conditions


# ---- the logit dial --------------------------------------------------------------------------------
def dial_summary(dial: dict, *, s: float, n: int) -> Claim:
    """What the softmax does at logit std ``s`` over ``n`` keys (``sdpa_core.dial_attention``): weights (facts
    ``top``, ``tokens``, ``saturated`` above ``saturation``) and the measured gradient reaching the logits
    (``grad``, its ``ratio`` to the median at s = 1, the ``starved`` share below 1/``starved_below`` of that).
    The two-key picture (``gap``, ``two_p``, ``two_slope``) is said to be one (it holds for n = 2 only): with
    n keys the gradient goes through the whole Jacobian diag(p) − ppᵀ, which the measured norm is."""
    ratio = dial["grad_median"] / dial["grad_reference"]
    return Claim(
        "In the one matrix drawn here, at logit std s = {s} over n = {n} keys: the top key takes {top} on average, about {tokens} tokens are "
        "attended (of {n}), {saturated} of rows saturated (top weight > {saturation}). A typical row's top two "
        "logits are {gap} apart: if those were its only two keys, the top one would get {two_p} and the slope "
        "p(1 − p) would be {two_slope} (0.25 at its steepest). Over all {n} keys, the measured median row's "
        "gradient ‖∂L/∂zᵢ‖ is {grad} ({ratio} the median at s = 1); {starved} of rows get less than "
        "1/{starved_below} of that median at s = 1.",
        s=as_g(s), n=as_int(n), top=as_pct(dial["mean_top"]), tokens=as_tokens(dial["mean_tokens"]),
        saturated=as_pct(dial["saturated"]), saturation=as_g(sc.SATURATION), gap=as_fmt(dial["median_gap"]),
        two_p=as_pct(dial["two_token_p"]), two_slope=as_sci(dial["two_token_slope"]),
        grad=as_sci(dial["grad_median"]), ratio=(float(ratio), _ratio_words(ratio)), starved=as_pct(dial["starved"]),
        starved_below=as_int(round(1 / STARVED)))


def _ratio_words(r: float) -> str:
    if not math.isfinite(r) or r <= 0:
        return "none of"
    if 0.8 <= r <= 1.25:
        return "about"
    return f"{_ratio(r)}" if r > 1 else f"1/{_ratio(1 / r)}"


def settings_sentence(moments: dict, *, d_k: int, sigma: float, rho: float, rule: str) -> str:
    """Where the sidebar's settings put the dial (``sdpa_core.settings_logit_moments`` per side)."""
    none, chosen = moments["none"], moments.get(rule, moments["none"])
    where = conditions(d_k=d_k, rho=rho, sigma=sigma)
    text = f"The sidebar's settings ({where}) put you at s = {fmt(none['s'])} unscaled"
    if rule != "none":
        text += f" and s = {fmt(chosen['s'])} with {RULE_LABELS[rule]}"
    text += ": d_k, σ and the rule only move s."
    if none["row_spread"] > 0.1:
        text += (f" (At d_k = {d_k} one query's logits spread {pct(none['row_spread'])} more or less than s, "
                 f"query to query, since |q| varies; the dial draws every row at s.)")
    # a normalising rule's m is rho/tau, the large-d_k limit of its mean cosine: "about" (7.14 at d_k = 32,
    # rho = 0.5, tau = 0.07, where the mean over queries is 7.06)
    about = "about " if sc.RULES[rule].normalizes else ""
    if rho > 0:
        text += (f" At ρ = {rho:g} they also move a second number: each query's own key gets a mean logit "
                 f"m = {fmt(none['m'])} unscaled" + (f", {about}{fmt(chosen['m'])} with {RULE_LABELS[rule]}"
                                                    if rule != "none" else "")
                 + ", which this dial (drawn at ρ = 0) leaves out; As q and k align shows what it does.")
        if chosen.get("matched_capped"):
            text += (f" ({RULE_LABELS[rule]} caps that logit at ±{fmt(sc.RULES[rule].cap)}: its m is the mean of the "
                     "capped logit.)")
        if sc.RULES[rule].normalizes and not chosen["gaussian"]:
            text += (f" ({RULE_LABELS[rule]}'s m is ρ/τ, its large-d_k value: at d_k = {d_k} the mean cosine of a "
                     f"query and its own key is at most ρ, so its m is smaller.)")
    if not chosen["gaussian"] and sc.RULES[rule].cap is not None:
        text += (f" With {RULE_LABELS[rule]} the logits are capped at ±{fmt(sc.RULES[rule].cap)}, and these settings "
                 f"reach the cap: the dial's Gaussian picture overstates how peaked they get.")
    elif not chosen["gaussian"]:
        text += (f" With {RULE_LABELS[rule]} at d_k = {d_k} the logits are cosines, bounded by "
                 f"{fmt(abs(chosen['scale']))}: the dial's Gaussian picture overstates how peaked they get.")
    return text


# ---- each view's point in one sentence (at most about 25 words) -------------------------------------
# The views show these first (web/views/common.py headline_html), with the conditions beside them and the
# longer summaries above behind "details"; tests/web/test_headlines.py recomputes every number.
def dial_headline(dial: dict, *, s: float, n: int) -> Claim:
    """The dial's point: how much weight the top key takes at logit std ``s`` over ``n`` keys, expected over random
    logits (``dial["expected"]``, ``sdpa_core.dial_expectation``: ``top``, within ``margin`` percentage points, ``Z``
    standard errors of its mean), not in the one matrix the heatmap draws."""
    e = dial["expected"]
    return Claim("At logit spread s = {s}, the top key takes {top} ± {margin} points of a row's weight, expected over "
                 "random logits (uniform: {uniform}).",
                 s=as_g(s), top=as_pct(e["mean_top"]), margin=as_points(mean_margin(e["top_std"], e["rows"])),
                 uniform=as_pct(1 / n))
