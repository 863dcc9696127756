"""The Playground's verdict, readouts and reference values, and the gradient figures shared with the
saturation view.

Pure functions of results computed by ``sdpa_core`` (no Panel, no state objects), so the tests can check
each sentence against an independent computation; each names the conditions it holds under.
"""
from __future__ import annotations

import math

import numpy as np

import sdpa_core as sc

from .claim import Claim, Sentence, as_fmt, as_g, as_int, as_pct, as_tokens, as_word
from .numbers import RULE_LABELS, fmt_sci


#: A query is "starved" when ||dL/dq_i|| is below this share of the 1/sqrt(d_k) median at the same state.
STARVED = 1e-3
#: Where the verdict's gradient sentence starts (the page shows it on a line of its own).
GRADIENT_LEAD = "Gradient reaching q (chain rule, scale included)"
#: "Changes little": the two sides' tokens attended and top weights are within this ratio of each other,
LITTLE = 1.25
#: and their shares of saturated rows within this difference.
LITTLE_SATURATED = 0.1

# ---- references -----------------------------------------------------------------------------------
def references(n: int, causal: bool) -> tuple[float, float]:
    """Entropy and tokens attended of uniform attention: ``(log n, n)``, or under a causal mask the
    mean over rows of ``log(i + 1)`` and ``i + 1`` (row i sees keys 0..i), e.g. 1.92 and 8.5 at n = 16."""
    if causal:
        visible = np.arange(1, n + 1)
        return float(np.log(visible).mean()), float(visible.mean())
    return float(math.log(n)), float(n)


def conditions(*, d_k: int, rho: float, causal: bool = False, dtype: str = "float64", sigma: float | None = None) -> Claim:
    """The state a sentence holds for, e.g. "d_k = 1024, ρ = 0.5, causal mask, float16" (facts ``d_k``,
    ``sigma``, ``rho``, ``mask``, ``dtype``: those it names)."""
    s = Sentence().add("d_k = {d_k}", d_k=as_int(d_k))
    if sigma is not None:
        s.add(", σ = {sigma}", sigma=as_g(sigma))
    s.add(", ρ = {rho}", rho=as_g(rho))
    if causal:
        s.add(", {mask}", mask=as_word("causal", "causal mask"))
    if dtype != "float64":
        s.add(", {dtype}", dtype=as_word(dtype, dtype))
    return s.claim()


# ---- the playground's verdict ---------------------------------------------------------------------
#: What the verdict finds when the rule's side is neither NaN nor unlike the unscaled one (fact ``finding``).
SATURATED_TOO, CHANGES_LITTLE = "saturated too", "changes little"


def verdict(sides: dict, *, n: int, d_k: int, dtype: str, rho: float, causal: bool,
            at_rho0: float | None = None) -> Claim:
    """Two sentences: how peaked the unscaled softmax is and what the rule changes (top weight, tokens
    attended, share of saturated rows), then the gradient that reaches q (scale included).

    ``sides`` is ``LabState.playground``: ``{"none": side, "rule": side}``, each side with
    ``rule``, ``stats`` (``sdpa_core.row_stats``), ``nan_rows``, ``overflow`` and ``grad``; the rule's
    side may carry ``matched``: ``(mean, theory)`` of each query's logit with its own key. ``at_rho0``
    is the rule's share of saturated rows on the same draw at ρ = 0: when both sides saturate at ρ > 0,
    the sentence names ρ as the cause only if that share is below one half (else the spread is).
    Under a causal mask row 0 sees one key: it is left out of the saturated share, and said to be.

    Facts: the conditions' (``conditions``); per side (``unscaled``, ``scaled``) ``*_nan`` (NaN rows) or
    ``*_top``, ``*_tokens`` and ``*_saturated``, as it states them; ``overflow_limit``; ``rule``; ``finding``
    (``SATURATED_TOO`` or ``CHANGES_LITTLE``, when it says so); ``at_rho0`` and ``cause`` ("spread" or "ρ"),
    with ``matched`` and ``matched_theory`` when it names the aligned logit; the gradient's (``gradient_sentence``).
    """
    none, rule = sides["none"], sides["rule"]
    label = RULE_LABELS[rule["rule"]]
    where = conditions(d_k=d_k, rho=rho, causal=causal, dtype=dtype)
    s = Sentence().add("At " + where.template, **where.given())
    _, all_tokens = references(n, causal)
    of, of_facts = (("of the {visible} visible on average", {"visible": as_g(all_tokens)}) if causal
                    else ("of {n}", {"n": as_int(n)}))
    named = {"rule": as_word(rule["rule"], label), "n": as_int(n), "dtype": as_word(dtype, dtype)}
    if none["nan_rows"]:
        if none["overflow"]:
            limit = np.finfo(dtype).max
            s.add(", unscaled: the logits overflow {dtype} (|q·k| past {overflow_limit})",
                  overflow_limit=(float(limit), f"{limit:.6g}"), dtype=named["dtype"])
        else:
            s.add(", unscaled: exp() overflows in the softmax")
        s.add(", so {unscaled_nan} of {n} rows of weights are NaN", unscaled_nan=as_int(none["nan_rows"]), n=named["n"])
        if rule["rule"] == "none":
            return s.add(".").claim()
        if rule["nan_rows"]:
            return s.add("; with {rule}, {scaled_nan} of {n} rows are NaN too.", rule=named["rule"],
                         scaled_nan=as_int(rule["nan_rows"])).claim()
        s1 = rule["stats"]
        return s.add("; with {rule} the weights stay finite: {scaled_top} on the top token, about {scaled_tokens} "
                     "tokens attended " + of + ".", rule=named["rule"], scaled_top=as_pct(s1["max_weight"]),
                     scaled_tokens=as_tokens(s1["effective_support"]), **of_facts).claim()
    s0 = none["stats"]
    alone = "; row 0, which sees one key, left out" if causal else ""
    s.add(", unscaled: {unscaled_top} of each row's weight on its top token on average, about {unscaled_tokens} "
          "tokens attended " + of + ", {unscaled_saturated} of rows saturated "
          f"(top weight > {sc.SATURATION:g}{alone})", unscaled_top=as_pct(s0["max_weight"]),
          unscaled_tokens=as_tokens(s0["effective_support"]), unscaled_saturated=as_pct(s0["saturated"]), **of_facts)
    if none["overflow"]:
        s.add("; some logits overflow {dtype} to −inf and get weight 0", dtype=named["dtype"])
    if rule["rule"] == "none":
        return s.add(". Pick a scaling rule to compare.").claim()
    if rule["nan_rows"]:
        return s.add("; with {rule}, {scaled_nan} of {n} rows of weights are NaN in {dtype}.", rule=named["rule"],
                     scaled_nan=as_int(rule["nan_rows"]), n=named["n"], dtype=named["dtype"]).claim()
    s1 = rule["stats"]
    scaled = {"rule": named["rule"], "scaled_top": as_pct(s1["max_weight"]), "scaled_saturated": as_pct(s1["saturated"])}
    if s0["saturated"] >= 0.5 and s1["saturated"] >= 0.5:
        s.add("; with {rule} {finding}: {scaled_top} on the top token, {scaled_saturated} of rows saturated",
              finding=(SATURATED_TOO, "it is saturated too"), **scaled)
        if rho > 0 and at_rho0 is not None and math.isfinite(at_rho0):
            _why(s, rule, at_rho0)
        s.add(".")
    else:
        s.add("; with {rule}: {scaled_top} on the top token, about {scaled_tokens} tokens attended, {scaled_saturated} "
              "of rows saturated", scaled_tokens=as_tokens(s1["effective_support"]), **scaled)
        if little_change(s0, s1):
            s.add(", {finding} (top weight and tokens attended within a factor "
                  f"{LITTLE:g} of the unscaled ones, saturated rows within {LITTLE_SATURATED * 100:.0f} points)",
                  finding=(CHANGES_LITTLE, "so the rule changes little here"))
        s.add(".")
    grow = sc.RULES[rule["rule"]].length
    if causal and grow is not None and grow(2) != grow(n):   # SSMax's ln n: which n, under the mask
        s.add(" ({rule} takes the sequence length n = {n} for every row here, although under the causal mask "
              "row i sees only i + 1 keys.)", rule=named["rule"], n=named["n"])
    gradient = gradient_sentence(none["grad"], rule["grad"], rule=rule["rule"], n=n, causal=causal, dtype=dtype)
    return s.add(gradient.template, **gradient.given()).claim()


def _why(s: Sentence, rule: dict, at_rho0: float) -> None:
    """Both sides saturate at ρ > 0: the cause, as the same draw at ρ = 0 shows it (fact ``cause``)."""
    if at_rho0 >= 0.5:   # the draw's spread saturates the rule already: ρ is not the cause
        s.add("; the same draw at ρ = 0 already saturates {at_rho0} of rows with {rule}, so {cause} does it, not ρ",
              at_rho0=as_pct(at_rho0), cause=("spread", "the logits' spread"))
        return
    s.add("; the same draw at ρ = 0 saturates {at_rho0} of rows with {rule}, so {cause} does it",
          at_rho0=as_pct(at_rho0), cause=("ρ", "aligning q and k"))
    if "matched" in rule:
        mean, theory = rule["matched"]
        c = rule["scale"]
        normalizes = sc.RULES[rule["rule"]].normalizes
        cap = sc.RULES[rule["rule"]].cap
        form = ("ρ" if normalizes else "ρ d_k σ²") + (f" × {c:.3g}" if c != 1 else "") + (
            f", capped at ±{cap:g} as a normal variable would be" if cap is not None else "")
        s.add(": each query's own key gets a logit of {matched} on average (" + form + " = {matched_theory} in theory"
              + (" at large d_k" if normalizes else "") + ")", matched=as_fmt(mean), matched_theory=as_fmt(theory))


def headline(sides: dict, *, n: int, dtype: str) -> Claim:
    """The playground's point in one sentence (at most about 25 words): how much of a row's weight its
    top key takes on average (facts ``unscaled_top``, ``scaled_top``), without scaling and with the rule
    (``rule``); a side's NaN rows instead where it has them (``unscaled_nan``, ``scaled_nan``, with ``n`` and
    ``dtype``). ``verdict`` says the rest (the conditions go beside it: ``conditions``)."""
    none, rule = sides["none"], sides["rule"]
    facts: dict = {}

    def side(s: dict, key: str) -> str:
        if s["nan_rows"]:
            facts.update({f"{key}_nan": as_int(s["nan_rows"]), "n": as_int(n), "dtype": as_word(dtype, dtype)})
            return f"{{{key}_nan}} of {{n}} rows are NaN ({{dtype}})"   # short: a rule's label can take 4 words
        facts[f"{key}_top"] = as_pct(s["stats"]["max_weight"])
        return f"the top key takes {{{key}_top}} of a row's weight on average"

    text = "Without scaling, " + side(none, "unscaled")
    if rule["rule"] == "none":
        return Claim(text + ".", **facts)
    facts["rule"] = as_word(rule["rule"], RULE_LABELS[rule["rule"]])
    if not none["nan_rows"] and not rule["nan_rows"]:
        facts["scaled_top"] = as_pct(rule["stats"]["max_weight"])
        other = "{scaled_top}"
    else:
        other = side(rule, "scaled")
    return Claim(text + "; with {rule}, " + other + ".", **facts)


def little_change(s0: dict, s1: dict) -> bool:
    """Both sides attend alike: tokens attended and top weight within ``LITTLE`` of each other, and the
    shares of saturated rows within ``LITTLE_SATURATED``."""
    def near(a, b):
        return max(a, b) <= LITTLE * min(a, b)
    return (near(s0["effective_support"], s1["effective_support"]) and near(s0["max_weight"], s1["max_weight"])
            and abs(s0["saturated"] - s1["saturated"]) <= LITTLE_SATURATED)


def gradient_sentence(g0: dict, g1: dict, *, rule: str, n: int, causal: bool = False,
                      dtype: str = "float64") -> Claim:
    """The gradient that reaches q under both sides, for the page's fixed random upstream gradient ("" when a side
    is NaN). Facts: ``grad_unscaled_median``, ``grad_scaled_median``, ``grad_unscaled_total``,
    ``grad_scaled_total`` (each shown down to its side's round-off floor), ``starved_unscaled`` and
    ``starved_scaled`` (queries below ``STARVED`` of the 1/√d_k median) or ``round_off`` when none can be counted,
    ``dtype`` when it is not float64 (the gradient is taken in float64 at its inputs), ``rule``, ``n``."""
    s = Sentence()
    if not all(math.isfinite(g[k]) for g in (g0, g1) for k in ("median", "total")):
        return s.claim()
    f0, f1 = g0.get("floor", 0.0), g1.get("floor", 0.0)

    def norm(x: float, floor: float) -> tuple[float, str]:
        return float(x), fmt_sci(x, floor=floor)
    s.add(" " + GRADIENT_LEAD)
    if dtype != "float64":
        s.add(" (taken in float64 at the {dtype} inputs)", dtype=as_word(dtype, dtype))
    named = as_word(rule, RULE_LABELS[rule])
    s.add(": median row ‖∂L/∂qᵢ‖ {grad_unscaled_median} unscaled vs {grad_scaled_median} with {rule}; total ‖∂L/∂Q‖ "
          "{grad_unscaled_total} vs {grad_scaled_total}", rule=named,
          grad_unscaled_median=norm(g0["median"], f0), grad_scaled_median=norm(g1["median"], f1),
          grad_unscaled_total=norm(g0["total"], f0), grad_scaled_total=norm(g1["total"], f1))
    if g0["starved"] is not None and g1["starved"] is not None and (g0["starved"] or g1["starved"]):
        s.add("; {starved_unscaled} of {n} queries get less than " f"1/{1 / STARVED:.0f} of the 1/√d_k median "
              "unscaled, {starved_scaled} with {rule}", starved_unscaled=as_int(g0["starved"]),
              starved_scaled=as_int(g1["starved"]), n=as_int(n), rule=named)
        if causal:
            s.add(" (row 0 sees only key 0 under the causal mask, so it never passes gradient)")
    elif g0.get("round_off") or g1.get("round_off"):
        s.add("; {round_off}: " f"1/{1 / STARVED:.0f} of the 1/√d_k median row's gradient is below float64 round-off here",
              round_off=(True, "no query is counted as starved"))
    return s.add(".").claim()


def _in_float64(dtype: str) -> str:
    """Gradients are taken in float64 at the (rounded) inputs: say so when the page computes in another dtype."""
    return "" if dtype == "float64" else f" (taken in float64 at the {dtype} inputs)"


def readout_rows(n: int, causal: bool, dtype: str = "float64") -> list[tuple[str, str, str]]:
    """(name, key, meaning) of each playground readout; the references follow the mask."""
    h, t = references(n, causal)
    over = "the visible keys, mean over rows" if causal else f"{n} keys"
    return [
        ("logit std", "logit_std", "spread of the scaled scores the softmax sees" + (" (visible ones)" if causal else "")),
        ("entropy (nats)", "entropy", f"0 = one token, {h:.2f} = uniform over {over}"),
        ("max weight", "max_weight", "share of the largest weight, averaged over queries"),
        ("tokens attended", "effective_support", f"exp(entropy): 1 = one token, {t:g} = all {over}"),
        ("saturated rows", "saturated", f"share of rows whose top weight is above {sc.SATURATION:g}"
         + (" (row 0, which sees one key, left out)" if causal else "")),
        ("median ‖∂L/∂qᵢ‖", "grad_median", "gradient reaching one query row, scale included" + _in_float64(dtype)),
        ("total ‖∂L/∂Q‖", "grad_total", "the same over all rows together"),
        ("starved queries", "grad_starved", f"rows getting < 1/{1 / STARVED:.0f} of the 1/√d_k median "
                                            "(– when that is below round-off)"),
        ("output ~ one value", "out_cosine", "cos(oᵢ, nearest vⱼ), mean over queries: 1 = each output copies one value"),
        ("copied outputs", "out_copies", f"share of outputs with that cosine above {COPY:g}"),
    ]


#: An output o_i "copies" a value vector when its cosine to the nearest v_j is above this.
COPY = 0.99


def output_figures(weights: np.ndarray, v: np.ndarray) -> dict:
    """Mean cosine of each output o = weights @ v to its nearest value vector, and the share of outputs
    that copy one (``sdpa_core.output_similarity``); NaN when a row of weights is not finite."""
    w = np.asarray(weights, dtype=np.float64)
    if not np.isfinite(w).all():
        return {"out_cosine": float("nan"), "out_copies": float("nan")}
    cos = sc.output_similarity(w, np.asarray(v, dtype=np.float64))["cosine"]
    cos = cos[np.isfinite(cos)]
    return {"out_cosine": float(cos.mean()) if len(cos) else float("nan"),
            "out_copies": float((cos > COPY).mean()) if len(cos) else float("nan")}

def gradient_figures(norms: np.ndarray, ref: float, floor: float = 0.0) -> dict:
    """Median row, total and starved rows (below ``STARVED`` of ``ref``, the 1/sqrt(d_k) median) of
    per-query ``||dL/dq_i||``: NaN and None when a row is NaN (its weights overflowed). Starved is None
    when there is no reference (``ref`` 0 or NaN) or when ``STARVED * ref`` is not above ``floor``, the
    float64 round-off size of these norms and of the reference's (``round_off`` True then): such a
    count would count round-off."""
    if not np.isfinite(norms).all():
        return {"median": float("nan"), "total": float("nan"), "starved": None, "round_off": False}
    counted = starved_countable(ref, floor)
    return {"median": float(np.median(norms)), "total": float(np.sqrt((norms ** 2).sum())),
            "starved": int((norms < STARVED * ref).sum()) if counted else None,
            "round_off": bool(math.isfinite(ref) and not counted)}


def starved_countable(ref: float, floor: float) -> bool:
    """Whether rows can be counted as starved against the reference median ``ref``: ``STARVED * ref`` above
    ``floor`` (the float64 round-off size of the norms compared), so no round-off is counted."""
    return bool(math.isfinite(ref) and ref > 0 and STARVED * ref > floor)

def split_verdict(text: str) -> tuple[str, str]:
    """The verdict's sentence about the weights and its sentence about the gradient ("" when none)."""
    head, sep, tail = text.partition(" " + GRADIENT_LEAD)
    return head, (GRADIENT_LEAD + tail) if sep else ""
