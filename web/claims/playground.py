"""The Playground's verdict, readouts and reference values, and the gradient figures shared with the
saturation view.

Pure functions of results computed by ``sdpa_core`` (no Panel, no state objects), so the tests can check
each sentence against an independent computation; each names the conditions it holds under.
"""
from __future__ import annotations

import math

import numpy as np

import sdpa_core as sc

from .claim import Claim, as_int, as_pct, as_word
from .numbers import RULE_LABELS, fmt, fmt_sci, pct


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


def conditions(*, d_k: int, rho: float, causal: bool = False, dtype: str = "float64", sigma: float | None = None) -> str:
    """The state a sentence holds for, e.g. "d_k = 1024, ρ = 0.5, causal mask, float16"."""
    parts = [f"d_k = {d_k}"]
    if sigma is not None:
        parts.append(f"σ = {sigma:g}")
    parts.append(f"ρ = {rho:g}")
    if causal:
        parts.append("causal mask")
    if dtype != "float64":
        parts.append(dtype)
    return ", ".join(parts)


# ---- the playground's verdict ---------------------------------------------------------------------
def verdict(sides: dict, *, n: int, d_k: int, dtype: str, rho: float, causal: bool,
            at_rho0: float | None = None) -> str:
    """Two sentences: how peaked the unscaled softmax is and what the rule changes (top weight, tokens
    attended, share of saturated rows), then the gradient that reaches q (scale included).

    ``sides`` is ``LabState.playground``: ``{"none": side, "rule": side}``, each side with
    ``rule``, ``stats`` (``sdpa_core.row_stats``), ``nan_rows``, ``overflow`` and ``grad``; the rule's
    side may carry ``matched``: ``(mean, theory)`` of each query's logit with its own key. ``at_rho0``
    is the rule's share of saturated rows on the same draw at ρ = 0: when both sides saturate at ρ > 0,
    the sentence names ρ as the cause only if that share is below one half (else the spread is).
    Under a causal mask row 0 sees one key: it is left out of the saturated share, and said to be.
    """
    none, rule = sides["none"], sides["rule"]
    label = RULE_LABELS[rule["rule"]]
    where = f"At {conditions(d_k=d_k, rho=rho, causal=causal, dtype=dtype)}"
    _, all_tokens = references(n, causal)
    of = f"of the {all_tokens:g} visible on average" if causal else f"of {n}"
    if none["nan_rows"]:
        what = (f"the logits overflow {dtype} (|q·k| past {np.finfo(dtype).max:.6g})" if none["overflow"]
                else "exp() overflows in the softmax")
        head = f"{where}, unscaled: {what}, so {none['nan_rows']} of {n} rows of weights are NaN"
        if rule["rule"] == "none":
            return head + "."
        if rule["nan_rows"]:
            return head + f"; with {label}, {rule['nan_rows']} of {n} rows are NaN too."
        s1 = rule["stats"]
        return (head + f"; with {label} the weights stay finite: {pct(s1['max_weight'])} on the top token, "
                f"about {s1['effective_support']:.1f} tokens attended {of}.")
    s0 = none["stats"]
    alone = "; row 0, which sees one key, left out" if causal else ""
    head = (f"{where}, unscaled: {pct(s0['max_weight'])} of each row's weight on its top token on average, "
            f"about {s0['effective_support']:.1f} tokens attended {of}, {pct(s0['saturated'])} of rows saturated "
            f"(top weight > {sc.SATURATION:g}{alone})")
    if none["overflow"]:
        head += f"; some logits overflow {dtype} to −inf and get weight 0"
    if rule["rule"] == "none":
        return head + ". Pick a scaling rule to compare."
    if rule["nan_rows"]:
        return head + f"; with {label}, {rule['nan_rows']} of {n} rows of weights are NaN in {dtype}."
    s1 = rule["stats"]
    e1 = s1["effective_support"]
    if s0["saturated"] >= 0.5 and s1["saturated"] >= 0.5:
        why = ""
        if rho > 0 and at_rho0 is not None and math.isfinite(at_rho0):
            if at_rho0 >= 0.5:   # the draw's spread saturates the rule already: ρ is not the cause
                why = (f"; the same draw at ρ = 0 already saturates {pct(at_rho0)} of rows with {label}, so the "
                       f"logits' spread does it, not ρ")
            else:
                why = (f"; the same draw at ρ = 0 saturates {pct(at_rho0)} of rows with {label}, so aligning q and k "
                       f"does it")
                if "matched" in rule:
                    mean, theory = rule["matched"]
                    c = rule["scale"]
                    form = ("ρ" if sc.RULES[rule["rule"]].normalizes else "ρ d_k σ²") + (
                        f" × {c:.3g}" if c != 1 else "")
                    limit = " at large d_k" if sc.RULES[rule["rule"]].normalizes else ""
                    why += (f": each query's own key gets a logit of {fmt(mean)} on average ({form} = "
                            f"{fmt(theory)} in theory{limit})")
        text = (head + f"; with {label} it is saturated too: {pct(s1['max_weight'])} on the top token, "
                f"{pct(s1['saturated'])} of rows saturated{why}.")
    elif little_change(s0, s1):
        text = (head + f"; with {label}: {pct(s1['max_weight'])} on the top token, about {e1:.1f} tokens attended, "
                f"{pct(s1['saturated'])} of rows saturated, so the rule changes little here (top weight and tokens "
                f"attended within a factor {LITTLE:g} of the unscaled ones, saturated rows within "
                f"{LITTLE_SATURATED * 100:.0f} points).")
    else:
        text = (head + f"; with {label}: {pct(s1['max_weight'])} on the top token, about {e1:.1f} tokens "
                f"attended, {pct(s1['saturated'])} of rows saturated.")
    if causal and sc.RULES[rule["rule"]].length is not None:   # SSMax's ln n: which n, under the mask
        text += (f" ({label} takes the sequence length n = {n} for every row here, although under the causal mask "
                 f"row i sees only i + 1 keys.)")
    return text + gradient_sentence(none["grad"], rule["grad"], label=label, n=n, causal=causal, dtype=dtype)


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
            return f"{{{key}_nan}} of {{n}} rows are NaN ({{dtype}} overflows)"
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


def gradient_sentence(g0: dict, g1: dict, *, label: str, n: int, causal: bool = False,
                      dtype: str = "float64") -> str:
    """The gradient that reaches q under both sides, for the page's fixed random upstream gradient."""
    if not all(math.isfinite(g[k]) for g in (g0, g1) for k in ("median", "total")):
        return ""
    f0, f1 = g0.get("floor", 0.0), g1.get("floor", 0.0)
    text = (f" {GRADIENT_LEAD}{_in_float64(dtype)}: median row ‖∂L/∂qᵢ‖ {fmt_sci(g0['median'], floor=f0)} "
            f"unscaled vs {fmt_sci(g1['median'], floor=f1)} with {label}; total ‖∂L/∂Q‖ "
            f"{fmt_sci(g0['total'], floor=f0)} vs {fmt_sci(g1['total'], floor=f1)}")
    if g0["starved"] is not None and g1["starved"] is not None and (g0["starved"] or g1["starved"]):
        text += (f"; {g0['starved']} of {n} queries get less than 1/{1 / STARVED:.0f} of the 1/√d_k median "
                 f"unscaled, {g1['starved']} with {label}")
        if causal:
            text += " (row 0 sees only key 0 under the causal mask, so it never passes gradient)"
    elif g0.get("round_off") or g1.get("round_off"):
        text += (f"; no query is counted as starved: 1/{1 / STARVED:.0f} of the 1/√d_k median row's gradient is "
                 f"below float64 round-off here")
    return text + "."


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
