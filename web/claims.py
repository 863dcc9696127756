"""Every sentence the page builds from numbers: the verdict, the reference values, the captions that
depend on ρ, the rule or the mask, and the number formats.

Pure functions of results computed by ``sdpa_core`` (no Panel, no state objects), so the tests can
check each sentence against an independent computation. Each sentence names the conditions it holds
under (d_k, ρ, mask, dtype); none is canned.
"""
from __future__ import annotations

import math

import numpy as np

import sdpa_core as sc

RULE_LABELS = sc.RULE_LABELS
#: A query is "starved" when ||dL/dq_i|| is below this share of the 1/sqrt(d_k) median at the same state.
STARVED = 1e-3
#: Where the verdict's gradient sentence starts (the page shows it on a line of its own).
GRADIENT_LEAD = "Gradient reaching q (chain rule, scale included)"
#: "Changes little": the two sides' tokens attended and top weights are within this ratio of each other,
LITTLE = 1.25
#: and their shares of saturated rows within this difference.
LITTLE_SATURATED = 0.1
#: A curve over d_k is "flat" when its ends differ by less than this share of log n (the entropy range).
FLAT = 0.1


# ---- numbers ----------------------------------------------------------------------------------------
def fmt(x, digits: int = 3) -> str:
    """A readout as a learner reads it: "≈ 0" for tiny non-zero values (one-hot entropies are 1e-158),
    "inf: overflow" for infinities, "NaN" for NaN, "–" for a missing value."""
    if x is None:
        return "–"
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf: overflow"
    if x != 0 and abs(x) < 1e-4:
        return "≈ 0"
    if abs(x) >= 1e5:
        return f"{x:.2e}"
    return f"{x:.{digits}g}"


def fmt_sci(x, digits: int = 2, floor: float = 0.0) -> str:
    """Like :func:`fmt` but keeps the size of small values (gradients of starved rows are the point),
    down to ``floor``, the round-off size of the computation: below it, "≈ 0"."""
    if x is None or not math.isfinite(float(x)) or x == 0:
        return fmt(x)
    if abs(x) < floor:
        return "≈ 0"
    x = float(x)
    return f"{x:.{digits - 1}e}" if abs(x) < 1e-3 or abs(x) >= 1e5 else f"{x:.{digits}g}"


def pct(x: float) -> str:
    """A share as a percentage; never rounds a non-zero share to 0% or a share below 1 to 100%."""
    if x is None or not math.isfinite(x):
        return fmt(x)
    if 0 < x < 0.005:
        return "<1%"
    if 0.995 <= x < 1:
        return ">99%"
    return f"{x:.0%}"


def _ratio(r: float) -> str:
    return f"{r:.0f}×" if r >= 10 else f"{r:.1f}×"


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
                    why += (f": each query's own key gets a logit of {fmt(mean)} on average ({form} = "
                            f"{fmt(theory)} in theory)")
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
    return text + gradient_sentence(none["grad"], rule["grad"], label=label, n=n, causal=causal, dtype=dtype)


def headline(sides: dict, *, n: int, dtype: str) -> str:
    """The playground's point in one sentence (at most about 25 words): how much of a row's weight its
    top key takes on average, without scaling and with the rule; NaN rows counted where they appear.
    ``verdict`` says the rest (the conditions go beside it: ``conditions``)."""
    none, rule = sides["none"], sides["rule"]
    label = RULE_LABELS[rule["rule"]]

    def side(s: dict) -> str:
        if s["nan_rows"]:
            return f"{s['nan_rows']} of {n} rows are NaN ({dtype} overflows)"
        return f"the top key takes {pct(s['stats']['max_weight'])} of a row's weight on average"

    text = f"Without scaling, {side(none)}"
    if rule["rule"] == "none":
        return text + "."
    other = side(rule)
    if not none["nan_rows"] and not rule["nan_rows"]:
        other = pct(rule["stats"]["max_weight"])
    return text + f"; with {label}, {other}."


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


# ---- captions that depend on the state ----------------------------------------------------------------
def trend(first: float, last: float, span: float) -> str:
    """"flat", "falls" or "rises": how a curve over d_k moves. Flat means a change below ``FLAT`` of
    ``span`` (its natural range) and below twice ``FLAT`` of the curve's own size."""
    if abs(last - first) < FLAT * span and abs(last - first) < 2 * FLAT * max(abs(first), abs(last)):
        return "flat"
    return "falls" if last < first else "rises"


def saturation_summary(sweep: sc.Sweep, *, n: int, sigma: float, rho: float, lo: int = 16) -> str:
    """What each rule's entropy does from d_k = ``lo`` to the largest d_k of the sweep, at this ρ and σ."""
    d = list(sweep.d_k)
    i, j = d.index(lo) if lo in d else 0, len(d) - 1
    h = math.log(n)
    parts = []
    for rule in sweep.rules:
        e = sweep.mean["entropy"][rule]
        how = trend(e[i], e[j], h)
        word = {"flat": "stays flat", "falls": "falls", "rises": "rises"}[how]
        parts.append(f"{RULE_LABELS[rule]} {word} ({e[i]:.2f} → {e[j]:.2f})")
    return (f"At σ = {sigma:g}, ρ = {rho:g}, n = {n}, entropy from d_k = {d[i]} to {d[j]} (uniform: {h:.2f}): "
            + "; ".join(parts) + ".")


def coincident_rules(d_ks, rules, *, alpha: float, temperature: float, n: int) -> str:
    """Which rules' curves lie exactly on another's (the same factor on q·k at every d_k of the sweep,
    so one line hides the other), e.g. d_k^-α at α = 0.5 under 1/√d_k; "" when none do. QK-norm
    normalises q and k first, so it coincides with no other rule."""
    plain = [r for r in rules if r != "qknorm"]
    scales = {r: [sc.logit_scale(int(d), r, alpha=alpha, temperature=temperature, n=n) for d in d_ks] for r in plain}
    said = []
    for i, a in enumerate(plain):
        for b in plain[:i]:
            if all(math.isclose(x, y, rel_tol=1e-12) for x, y in zip(scales[a], scales[b])):
                said.append(f"{RULE_LABELS[a]} lies exactly on {RULE_LABELS[b]} (the same scale at every d_k)")
                break
    return ("; ".join(said) + ", so its line is hidden under the other.") if said else ""


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


def gradient_summary(norms: dict, *, rule: str, d_k: int, n: int, rho: float) -> str:
    """What is small and what is not in the per-query gradients at this state: rows vs the total."""
    g0, ref = norms["none"], norms["sqrt"]
    med = float(np.median(ref))
    floors = getattr(norms, "floors", None)   # sdpa_core.RowNorms: each row's round-off size
    floor = max(float(np.max(floors[r])) for r in ("none", "sqrt")) if floors else 0.0
    figs = {r: gradient_figures(v, med, floor) for r, v in norms.items()}
    tot = {r: f["total"] for r, f in figs.items()}

    def sci(x):   # norms below float64 round-off come flushed to 0 (sdpa_core.query_gradient_norms)
        return "≈ 0" if x == 0 else fmt_sci(x)
    if not med > 0:   # 1/sqrt(d_k) saturated too: no reference row to compare with
        return (f"At d_k = {d_k}, ρ = {rho:g} ({len(g0)} query rows of n = {n}): even with 1/√d_k the median row "
                f"gets no gradient at all (its rows are saturated too); ≈ 0 (round-off or less) for "
                f"{pct(float((ref == 0).mean()))} of its rows and {pct(float((g0 == 0).mean()))} of the unscaled "
                f"ones; total ‖∂L/∂Q‖ "
                f"{sci(tot['none'])} unscaled vs {sci(tot['sqrt'])}.")
    if not starved_countable(med, floor):
        return (f"At d_k = {d_k}, ρ = {rho:g} ({len(g0)} query rows of n = {n}): 1/{1 / STARVED:.0f} of the 1/√d_k "
                f"median row's gradient is below float64 round-off (about {fmt_sci(floor)}), so no row is counted "
                f"as starved; median row {sci(figs['none']['median'])} unscaled vs {sci(med)}; total ‖∂L/∂Q‖ "
                f"{sci(tot['none'])} vs {sci(tot['sqrt'])}.")
    starved = figs["none"]["starved"] / len(g0)
    text = (f"At d_k = {d_k}, ρ = {rho:g} ({len(g0)} query rows of n = {n}): unscaled, "
            f"{pct(starved)} of rows get less than 1/{1 / STARVED:.0f} of the 1/√d_k median; "
            f"median row {sci(figs['none']['median'])} vs {sci(med)}, while the total ‖∂L/∂Q‖ is "
            f"{sci(tot['none'])} vs {sci(tot['sqrt'])}")
    if tot["none"] > tot["sqrt"]:
        text += " (larger: ∂L/∂q = scale · (∂L/∂z) k, and the rows still passing gradient carry scale 1, not 1/√d_k)"
    if rule not in ("none", "sqrt"):
        text += f". With {RULE_LABELS[rule]}: median {sci(figs[rule]['median'])}, total {sci(tot[rule])}"
    return text + "."


def slope(sweep: sc.Sweep, rule: str, lo: int = 256) -> float:
    """Log-log slope of the Monte-Carlo logit std from d_k = ``lo`` to the sweep's largest d_k."""
    d = list(sweep.d_k)
    i, j = d.index(lo), len(d) - 1
    y = sweep.mean["logit_std"][rule]
    return float(math.log(y[j] / y[i]) / math.log(d[j] / d[i]))


def loglog_summary(sweep: sc.Sweep, *, rule: str, rho: float, lo: int = 256) -> str:
    """The measured slopes at the current ρ, next to what theory says they tend to."""
    d = list(sweep.d_k)
    s0 = slope(sweep, "none", lo)
    text = (f"Measured at ρ = {rho:g}, d_k = {lo} to {d[-1]}: unscaled slope {s0:.2f}")
    if rule != "none":
        text += f", {RULE_LABELS[rule]} {slope(sweep, rule, lo):.2f}"
    return text + ("." if rho == 0 else
                   " (with ρ > 0 the matched pairs' mean ρ d_k σ² takes over as d_k grows: unscaled → 1, "
                   "1/√d_k → ½, 1/d_k → 0).")


def variance_summary(dots: dict, *, d_k: int, n: int, sigma: float, rho: float, rule: str, pooled: float) -> str:
    """The histogram's pair (one query with its own key) against the plot's pooled n×n logits."""
    m0, t0 = dots["theory_mean"][0], dots["theory_std"][0]
    std0, std1 = dots["sample_std"]
    mean0 = dots["sample_mean"][0]
    text = (f"At d_k = {d_k}, σ = {sigma:g}, ρ = {rho:g}: one query with its own key, q·k has mean ρ d_k σ² = {fmt(m0)} "
            f"and std √((1+ρ²) d_k) σ² = {fmt(t0)} in theory; the samples give {fmt(mean0)} and {fmt(std0)}. "
            f"With {RULE_LABELS[rule]} its std is {fmt(std1)}.")
    if rho > 0:
        text += (f" All {n}×{n} logits pooled (the log-log plot) have std {fmt(pooled)} in theory: the {n * n - n} "
                 f"off-diagonal pairs have mean 0, the {n} matched ones mean {fmt(m0)}.")
    else:
        text += f" All {n}×{n} logits pooled (the log-log plot): std {fmt(pooled)} in theory, every pair alike at ρ = 0."
    return text


def split_verdict(text: str) -> tuple[str, str]:
    """The verdict's sentence about the weights and its sentence about the gradient ("" when none)."""
    head, sep, tail = text.partition(" " + GRADIENT_LEAD)
    return head, (GRADIENT_LEAD + tail) if sep else ""


# ---- the guided tour's predictions ------------------------------------------------------------------
def bucket(value: float, edges) -> int:
    """Which range of ``edges`` (ascending) ``value`` falls in: 0 below ``edges[0]``, ..., ``len(edges)``
    at or above the last. A tour step's choices are these ranges, so its right answer is measured."""
    return int(np.searchsorted(np.asarray(edges, dtype=float), float(value), side="right"))


# ---- the logit dial --------------------------------------------------------------------------------
def dial_summary(dial: dict, *, s: float, n: int) -> str:
    """What the softmax does at logit std ``s`` over ``n`` keys (``sdpa_core.dial_attention``): weights and the
    measured gradient reaching the logits. The two-key picture is said to be one (it holds for n = 2 only):
    with n keys the gradient goes through the whole Jacobian diag(p) − ppᵀ, which the measured norm is."""
    text = (f"At logit std s = {s:g} over n = {n} keys: the top key takes {pct(dial['mean_top'])} on average, "
            f"about {dial['mean_tokens']:.1f} tokens are attended (of {n}), {pct(dial['saturated'])} of rows "
            f"saturated (top weight > {sc.SATURATION:g}). A typical row's top two logits are "
            f"{fmt(dial['median_gap'])} apart: if those were its only two keys, the top one would get "
            f"{pct(dial['two_token_p'])} and the slope p(1 − p) would be {fmt_sci(dial['two_token_slope'])} "
            f"(0.25 at its steepest).")
    ref = dial["grad_reference"]
    return text + (f" Over all {n} keys, the measured median row's gradient ‖∂L/∂zᵢ‖ is "
                   f"{fmt_sci(dial['grad_median'])} ({_ratio_words(dial['grad_median'] / ref)} the median at s = 1); "
                   f"{pct(dial['starved'])} of rows get less than 1/{1 / STARVED:.0f} of that median at s = 1.")


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
    if rho > 0:
        text += (f" At ρ = {rho:g} they also move a second number: each query's own key gets a mean logit "
                 f"m = {fmt(none['m'])} unscaled" + (f", {fmt(chosen['m'])} with {RULE_LABELS[rule]}"
                                                    if rule != "none" else "")
                 + ", which this dial (drawn at ρ = 0) leaves out; As q and k align shows what it does.")
    if not chosen["gaussian"]:
        text += (f" With {RULE_LABELS[rule]} at d_k = {d_k} the logits are cosines, bounded by "
                 f"{fmt(abs(chosen['scale']))}: the dial's Gaussian picture overstates how peaked they get.")
    return text


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


# ---- half precision --------------------------------------------------------------------------------
ORDER_WORDS = {"none": "nowhere (no scaling)", "after": "after the matmul", "before": "before the matmul"}


def first_broken(ps, dtype: str, order: str, kind: str = "stable") -> int | None:
    """The smallest d_k of a precision sweep whose rows contain inf or NaN (``kind`` softmax), or None."""
    frac = np.asarray(ps.nonfinite_rows[dtype][order][kind], dtype=float)
    bad = np.nonzero(frac > 0)[0]
    return int(ps.d_k[bad[0]]) if len(bad) else None


# ---- real models -----------------------------------------------------------------------------------
#: How the calculator names each scaling it compares (sdpa_core.real_models.VARIANTS).
VARIANT_LABELS = {"model": "the model's own", "unscaled": "no scaling", "sqrt_d_k": "1/√d_k",
                  "sqrt_d_model": "1/√d_model (the bug)"}


def head_words(m: dict) -> str:
    """"GPT-2 small (d_model 768, 12 heads, d_k 64)" or the custom head's shape."""
    label = m["preset"].label if "preset" in m else "This head"
    return f"{label} (d_model {m['d_model']}, {m['heads']} heads, d_k {m['d_k']})"


def bug_sentence(m: dict) -> str:
    """What dividing by √d_model instead of √d_k does to this head (``sdpa_core.head_at_init``)."""
    right, bug = m["mc"]["sqrt_d_k"], m["mc"]["sqrt_d_model"]
    if m["heads"] == 1:
        return (f"{head_words(m)}: with one head d_k = d_model, so dividing by √d_model is dividing by √d_k: "
                f"the bug changes nothing.")
    if m["factors"]["model"] == 1.0:   # T5: the init does the scaling, there is no factor to get wrong
        return (f"{head_words(m)} divides q·k by nothing (its initialisation sets the logits' size), so it has no "
                f"√d_k that could become √d_model. A head of this shape that divided by √{m['d_model']} instead of "
                f"√{m['d_k']} would multiply every logit by √(d_k/d_model) = {m['bug_factor']:.3g}, i.e. divide them "
                f"by {m['bug_temperature']:.3g} = √heads.")
    return (f"{head_words(m)}: dividing by √{m['d_model']} instead of √{m['d_k']} multiplies every logit by "
            f"√(d_k/d_model) = {m['bug_factor']:.3g}, i.e. divides them by {m['bug_temperature']:.3g} = √heads "
            f"(the softmax's temperature × {m['bug_temperature']:.3g}); at initialisation over {m['n']} tokens the "
            f"top weight goes from {pct(right['top_weight'])} to {pct(bug['top_weight'])} and the tokens attended "
            f"from {right['tokens_attended']:.1f} to {bug['tokens_attended']:.1f}.")


def model_summary(m: dict) -> str:
    """The head's logit spread at initialisation with its own scaling and without, in closed form, and
    what the softmax over n tokens does with it (Monte-Carlo means)."""
    own, raw = m["mc"]["model"], m["mc"]["unscaled"]
    th = m["theory"]
    text = (f"{head_words(m)} at initialisation, over {m['n']} tokens: the logits' std is {fmt(th['model'])} with "
            f"the model's own scaling, so the top weight is {pct(own['top_weight'])} and about "
            f"{own['tokens_attended']:.1f} tokens are attended ({pct(own['saturated'])} of rows saturated). "
            f"Without any scaling the std would be {fmt(th['unscaled'])}: top weight {pct(raw['top_weight'])}, "
            f"{raw['tokens_attended']:.1f} tokens attended, {pct(raw['saturated'])} of rows saturated.")
    if m["factors"]["model"] == 1.0:
        text += (f" This head has no 1/√d_k: its weights' initialisation alone sets the logits' std, "
                 f"{fmt(th['model'])} here (1/√d_k would make it {fmt(th['sqrt_d_k'])}).")
    return text


# ---- each view's point in one sentence (at most about 25 words) -------------------------------------
# The views show these first (web/views/common.py headline_html), with the conditions beside them and the
# longer summaries above behind "details"; tests/web/test_headlines.py recomputes every number.
def dial_headline(dial: dict, *, s: float, n: int) -> str:
    """The dial's point: how much weight the top key takes at logit std ``s`` over ``n`` keys."""
    return (f"At logit spread s = {s:g}, the top key takes {pct(dial['mean_top'])} of a row's weight on average "
            f"(uniform: {pct(1 / n)}).")


def variance_headline(dots: dict, *, d_k: int, rule: str) -> str:
    """The histograms' point: the measured std of one query's q·k with its own key, without scaling and
    with the rule."""
    std0, std1 = dots["sample_std"]
    text = f"At d_k = {d_k}, q·k has std {fmt(std0)} without scaling"
    return text + ("." if rule == "none" else f" and {fmt(std1)} with {RULE_LABELS[rule]}.")


def saturation_headline(sweep: sc.Sweep, *, rule: str, lo: int = 16) -> str:
    """The sweep's point: the share of saturated rows at the smallest and largest d_k shown, without
    scaling and with the rule."""
    d = list(sweep.d_k)
    i, j = d.index(lo) if lo in d else 0, len(d) - 1
    sat = sweep.mean["saturated"]
    text = (f"From d_k = {d[i]} to {d[j]}, saturated rows go from {pct(sat['none'][i])} to "
            f"{pct(sat['none'][j])} without scaling")
    if rule == "none":
        return text + "."
    return text + f"; with {RULE_LABELS[rule]}, {pct(sat[rule][i])} to {pct(sat[rule][j])}."


def alignment_headline(path: dict, *, rho: float, n: int) -> str:
    """The alignment view's point: how many tokens 1/√d_k attends to at the current ρ and at ρ = 0."""
    rhos = np.asarray(path["rho"])
    i = int(np.argmin(np.abs(rhos - rho)))
    tokens = path["effective_support"]["sqrt"]
    text = f"At ρ = {rhos[i]:g}, 1/√d_k attends to about {tokens[i]:.1f} of {n} tokens"
    if i == 0:
        return text + f"; at ρ = {rhos[-1]:g}, {tokens[-1]:.1f} of {n}."
    return text + f", against {tokens[0]:.1f} of {n} at ρ = {rhos[0]:g}."


def precision_headline(ps, *, order: str) -> str:
    """The half-precision view's point: from which d_k float16's stable softmax has rows with inf or NaN,
    with the scale where ``order`` puts it."""
    first = first_broken(ps, "float16", order)
    where = {"none": "with no scaling", "after": "scaling after the matmul",
             "before": "scaling before the matmul"}[order]
    if first is None:
        return f"In float16, {where}, no row of the stable softmax breaks up to d_k = {int(ps.d_k[-1])}."
    return f"In float16, {where}, rows of the stable softmax hold inf or NaN from d_k = {first}."


def model_headline(m: dict) -> str:
    """The calculator's point: the head's top weight at initialisation with its own scaling and without."""
    own, raw = m["mc"]["model"]["top_weight"], m["mc"]["unscaled"]["top_weight"]
    label = m["preset"].label if "preset" in m else "This head"
    if m["factors"]["model"] == 1.0:
        return (f"{label} at initialisation: the top of {m['n']} tokens takes {pct(own)} of a row's weight, "
                f"with no scaling on q·k.")
    return (f"{label} at initialisation: the top of {m['n']} tokens takes {pct(own)} of a row's weight with "
            f"1/√d_k, {pct(raw)} without.")


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


# ---- why √d_k, geometrically -----------------------------------------------------------------------
def geometry_headline(geo: dict, *, d_k: int, sigma: float) -> str:
    """q·k = |q| |k| cos θ at ``d_k`` (``sdpa_core.random_geometry``, independent q and k): the lengths'
    measured product, the cosine's spread and the dot product's spread, with the dot's theory σ²√d_k."""
    i = int(np.argmin(np.abs(np.asarray(geo["d_k"]) - d_k)))
    d = int(geo["d_k"][i])
    return (f"At d_k = {d}, |q| |k| ≈ {fmt(geo['norms_mean'][i])} and cos θ spreads ±{fmt(geo['cos_std'][i])}, so "
            f"q·k = |q| |k| cos θ spreads ±{fmt(geo['dot_std'][i])} (σ²√d_k = {fmt(geo['dot_theory'][i])}).")


# ---- scale versus initialisation (Train it) -----------------------------------------------------------
FOLD_WINDOW = 20   # steps averaged for the comparison


def fold_sentence(folded: list, explicit: list, *, d_k: int, optimizer: str, lr: float) -> str:
    """What folding 1/√d_k into W_q's init does next to the explicit factor, from the two runs' losses
    (each a list per step): the same first loss, then the mean over the last ``FOLD_WINDOW`` steps."""
    if not folded or not explicit:
        return ""
    text = (f"Folded into W_q's init, 1/√d_k gives the same first loss as the explicit factor "
            f"({folded[0]:.3f} and {explicit[0]:.3f}): the logits start equal.")
    done = min(len(folded), len(explicit))
    if done < FOLD_WINDOW:
        return text
    a, b = (float(np.mean(x[done - FOLD_WINDOW:done])) for x in (folded, explicit))
    factor = f"√d_k = {math.sqrt(d_k):.3g}" if optimizer == "Adam" else f"d_k = {d_k}"
    return text + (f" After {done} steps of {optimizer} at learning rate {lr:g}, d_k = {d_k}, the mean loss over the "
                   f"last {FOLD_WINDOW} steps is {a:.3f} folded and {b:.3f} explicit. They differ because {optimizer}'s "
                   f"step on W_q moves the folded logits {factor}× as far (its steps on W_k move both alike).")


# ---- sequence length: attention fading ---------------------------------------------------------------
#: A curve over n "stays" when its last value is within this factor of its first (either way).
FADE = 1.25
#: The first n the length section's sentences start from (the page's default n).
LENGTH_FROM = 16


def length_trend(first: float, last: float) -> str:
    """How a top weight moves from ``first`` to ``last``: "falls", "rises", or "stays" (within ``FADE``×)."""
    if last * FADE < first:
        return "falls"
    if last > first * FADE:
        return "rises"
    return "stays"


def _length_span(path: dict) -> tuple[int, int]:
    ns = [int(x) for x in path["n"]]
    return (ns.index(LENGTH_FROM) if LENGTH_FROM in ns else 0), len(ns) - 1


def _length_move(path: dict, metric: str, rule: str) -> str:
    """"falls 26% → 1%" (or "stays within 1.25× (31% → 28%)") for one rule's curve between the section's
    two lengths."""
    i, j = _length_span(path)
    a, b = float(path[metric][rule][i]), float(path[metric][rule][j])
    how = length_trend(a, b)
    if how == "stays":
        return f"stays within {FADE:g}× ({pct(a)} → {pct(b)})"
    return f"{how} {pct(a)} → {pct(b)}"


def length_headline(path: dict) -> str:
    """The length section's point: the top weight from n = 16 to the longest n, with 1/√d_k and with SSMax."""
    i, j = _length_span(path)
    ns = path["n"]
    return (f"From n = {ns[i]} to {ns[j]}, top weight {_length_move(path, 'top_weight', 'sqrt')} with 1/√d_k "
            f"and {_length_move(path, 'top_weight', 'ssmax')} with SSMax.")


def length_details(path: dict, *, rho: float) -> list[str]:
    """Each drawn rule's top weight and entropy (as a share of log n) between the section's two lengths; at
    ρ > 0 the weight each query puts on its own key too."""
    i, j = _length_span(path)
    ns = path["n"]
    out = [f"{RULE_LABELS[r]}: top weight {_length_move(path, 'top_weight', r)}; entropy "
           f"{path['entropy_ratio'][r][i]:.2f} → {path['entropy_ratio'][r][j]:.2f} of log n (1 = uniform)."
           for r in path["rules"]]
    if rho > 0:
        own = "; ".join(f"{RULE_LABELS[r]} {pct(path['own_weight'][r][i])} → {pct(path['own_weight'][r][j])}"
                        for r in path["rules"])
        out.append(f"Each query's own key (k = ρq + √(1 − ρ²)z, ρ = {rho:g}) gets, from n = {ns[i]} to {ns[j]}: "
                   f"{own}.")
    return out


# ---- saturated at initialisation versus sharp after learning (Train it) ------------------------------
# Each run's head measured by sdpa_core.head_sharpness on the run's fixed held-out batch, at step 0 and now.
#: A head whose rows' mean attention entropy is at most this share of log n_keys is (nearly) one-hot: saturated
#: at step 0; after training, sharp if its weight is on the right key (``ON_TARGET``), saturated if not.
LOW_ENTROPY = 0.1
#: Near uniform: the mean entropy at least this share of log n_keys.
HIGH_ENTROPY = 0.9
#: "On the right key": the rows' mean weight on the key that holds the answer at least this.
ON_TARGET = 0.5


def head_state(m: dict, *, learnt: bool) -> str:
    """How peaked a head is (``sdpa_core.head_sharpness``), in words: at step 0 (``learnt`` False)
    "saturated", "partly peaked" or "near uniform"; after training "sharp" (one-hot on the right key),
    "saturated off target" (one-hot on other keys), "not sharp" or "near uniform"; "not measurable" when
    the loss was not finite."""
    e = m["entropy_fraction"]
    if not math.isfinite(e):
        return "not measurable"
    if e <= LOW_ENTROPY:
        if not learnt:
            return "saturated"
        return "sharp" if m["target_weight"] >= ON_TARGET else "saturated off target"
    if e >= HIGH_ENTROPY:
        return "near uniform"
    return "not sharp" if learnt else "partly peaked"


def entropy_share(x: float) -> str:
    """A mean entropy as a share of log n_keys: a percentage (``pct``), with two decimals within half a point of
    ``LOW_ENTROPY`` ("10.04%"), so a share just past the line does not read as the line itself."""
    if math.isfinite(x) and abs(x - LOW_ENTROPY) < 0.005:
        return f"{x:.2%}"
    return pct(x)


def fmt_grad(x: float) -> str:
    """A gradient norm: two significant digits, in scientific notation below 1e-3 (``fmt_sci``), whole from 100
    ("102", not "1e+02")."""
    x = float(x)
    return f"{x:.0f}" if math.isfinite(x) and 100 <= abs(x) < 1e5 else fmt_sci(x)


def _paths(m: dict) -> tuple[str, str]:
    """The median example's gradient norms reaching W_q and W_v, as the page prints them."""
    return fmt_grad(m["q_path"]), fmt_grad(m["value_path"])


def _paths_clause(m: dict, *, present: bool) -> str:
    """What the two gradients say, only where the numbers say it: a saturated head's median example passing
    W_q less than 1/1000 (``STARVED``) of W_v's gradient, or a head that is not saturated passing both."""
    state = head_state(m, learnt=False)
    q, v = m["q_path"], m["value_path"]
    if not (math.isfinite(q) and math.isfinite(v)) or v <= 0:
        return ""
    if state == "saturated" and q < STARVED * v:
        verb = "passes" if present else "passed"
        return f": a saturated head {verb} gradient to its values but hardly any to where it looks"
    if state != "saturated" and q >= STARVED * v:
        return ": both paths " + ("get" if present else "got") + " gradient"
    return ""


def sharpness_conditions(*, run: str, label: str, d_k: int, seed: int, step: int, n_keys: int, examples: int,
                         optimizer: str, lr: float) -> str:
    """The state a sharpness sentence holds for, e.g. "run A: no scaling, d_k = 1024, seed 9, step 300, 8 keys,
    Adam at learning rate 0.01; median of 32 held-out examples"."""
    return (f"run {run.upper()}: {label}, d_k = {d_k}, seed {seed}, step {step}, {n_keys} keys, {optimizer} at "
            f"learning rate {lr:g}; gradients of the median of {examples} held-out examples")


def sharpness_headline(initial: dict, now: dict, *, run: str, step: int) -> str:
    """The section's point in one sentence (at most 25 words): run ``run``'s head at step 0 (its state, its
    entropy as a share of log n_keys, the median example's gradient reaching W_q and W_v) and, after
    training, its state now."""
    n = round(math.exp(initial["max_entropy"]))
    q0, v0 = _paths(initial)
    was = head_state(initial, learnt=False)
    start = f"entropy {entropy_share(initial['entropy_fraction'])} of log {n}; W_q gradient {q0}, W_v's {v0}"
    if step == 0:
        return f"At step 0 run {run.upper()} is {was} ({start})."
    if not math.isfinite(now["entropy_fraction"]):
        return f"Run {run.upper()}: {was} at step 0 ({start}), not measurable at step {step}."
    return (f"Run {run.upper()}: {was} at step 0 ({start}), {head_state(now, learnt=True)} "
            f"({entropy_share(now['entropy_fraction'])}) at step {step}.")


def sharpness_sentence(initial: dict, now: dict, *, run: str, label: str, d_k: int, seed: int, step: int) -> str:
    """Saturated at initialisation or sharp after learning, measured: run ``run``'s head (``label``, the run's
    scaling as the page names it) at step 0 and at ``step`` (``initial`` and ``now``: ``sdpa_core.head_sharpness``
    on the run's held-out batch), with its conditions (d_k, rule, seed, step, number of keys): its state, its
    entropy as a share of log n_keys, its weight on the right key, and the median example's gradient reaching
    W_q (where to look) against W_v (what to read there) at step 0."""
    n = round(math.exp(initial["max_entropy"]))
    q0, v0 = _paths(initial)
    who = f"run {run.upper()}'s head ({label})"
    where = f"d_k = {d_k} (seed {seed}, {n} keys)"

    def peaked(m: dict) -> str:
        return (f"entropy {entropy_share(m['entropy_fraction'])} of its maximum log {n}, {pct(m['target_weight'])} of its "
                f"weight on the right key")

    if step == 0:
        return (f"At step 0, {where}, {who} is {head_state(initial, learnt=False)}: {peaked(initial)}; the median "
                f"example's gradient reaching W_q is {q0} against {v0} for W_v{_paths_clause(initial, present=True)}.")
    then = (f"at step 0 it was {head_state(initial, learnt=False)} ({entropy_share(initial['entropy_fraction'])}) and the median "
            f"example's gradient reaching W_q was {q0} against {v0} for W_v{_paths_clause(initial, present=False)}")
    if not math.isfinite(now["entropy_fraction"]):
        return f"After {step} steps at {where}, {who} cannot be measured (its loss is not finite); {then}."
    return f"After {step} steps at {where}, {who} is {head_state(now, learnt=True)}: {peaked(now)}; {then}."


def sharp_gradient_sentence(now: dict, *, run: str, step: int) -> str:
    """What a head that learnt to be sharp passes now: the median example's W_q and W_v gradients; "" unless
    the head is sharp and its W_q gradient is below 1/1000 (``STARVED``) of its W_v gradient."""
    if head_state(now, learnt=True) != "sharp" or not now["q_path"] < STARVED * now["value_path"]:
        return ""
    q1, v1 = _paths(now)
    return (f"At step {step} run {run.upper()}'s median example passes {q1} to W_q and {v1} to W_v: a sharp head is "
            f"one-hot too, so it passes almost nothing back to where it looks, but it looks at the right key "
            f"({pct(now['target_weight'])} of its weight).")


def batch_gradient_sentence(initial: dict, *, run: str) -> str:
    """The batch's gradients at step 0 (what the optimizer steps on) beside the median example's: a
    saturated head's W_q gradient over the batch comes from its few rows that are not saturated."""
    g = initial["grad_norms"]
    if not all(math.isfinite(g[k]) for k in ("Wq", "Wv")):
        return ""
    biggest = float(np.max(initial["example_grad_norms"]["Wq"]))
    text = (f"Over the whole batch (what the optimizer steps on), run {run.upper()}'s gradient at step 0 was "
            f"{fmt_grad(g['Wq'])} for W_q and {fmt_grad(g['Wv'])} for W_v")
    if head_state(initial, learnt=False) == "saturated" and initial["q_path"] < STARVED * initial["value_path"]:
        text += (f", with {pct(initial['saturated'])} of its rows saturated (top weight > {sc.SATURATION:g}): the "
                 f"median example's W_q gradient was {fmt_grad(initial['q_path'])}, the largest {fmt_grad(biggest)}")
        if biggest > initial["q_path"] / STARVED:
            text += ", so saturation left W_q's gradient sparse, not uniformly small"
    return text + "."


def logit_growth_sentence(initial: dict, now: dict, *, run: str, step: int, normalizes: bool) -> str:
    """Where run ``run``'s logit growth came from, measured: the logits' rms from step 0 to ``step`` split
    exactly into the lengths' part (scale |q| |k|) and the cosines' part (``logit_rms = length_rms * cos_rms``);
    ``normalizes``: the run uses QK-norm, whose lengths are fixed."""
    if step == 0 or not all(math.isfinite(m[k]) and m[k] > 0 for m in (initial, now)
                            for k in ("logit_rms", "length_rms", "cos_rms")):
        return ""
    grow = now["logit_rms"] / initial["logit_rms"]
    lengths = now["length_rms"] / initial["length_rms"]
    cosines = now["cos_rms"] / initial["cos_rms"]
    verb = "grew" if grow >= 1 else "shrank"
    text = (f"From step 0 to step {step} run {run.upper()}'s logits {verb} {_factor(grow)} in rms "
            f"({fmt(initial['logit_rms'])} → {fmt(now['logit_rms'])}): scale·|q| |k| changed {_factor(lengths)} and "
            f"the cosines' rms {_factor(cosines)} ({fmt(initial['cos_rms'])} → {fmt(now['cos_rms'])}; their product "
            f"is the logits' rms)")
    if normalizes:
        return text + ", and QK-norm holds |q| = |k| = 1, so only the angles can move its logits."
    if abs(math.log(cosines)) > abs(math.log(lengths)):
        text += ", so in this model the angles did more than the lengths"
    else:
        text += ", so in this model the lengths did more than the angles"
    return text + (f"; rotation alone could raise the cosines' rms at most {_factor(1 / initial['cos_rms'])} "
                   f"from step 0 (to 1).")


def _factor(r: float) -> str:
    """A growth factor as the page prints it: "20×", "1.7×", "×0.52"."""
    return _ratio(r) if r >= 1 else f"×{r:.2g}"


#: Where trained models' logit growth comes from, with sources (a caption of the section; Markdown links).
LOGIT_GROWTH_SOURCES = (
    "Logits that grow during training can also break it: Dehghani et al. (2023), [*Scaling Vision Transformers to 22 "
    "Billion Parameters*](https://arxiv.org/abs/2302.05442), report that training diverged once the attention "
    "logits grew so large that the weights became almost one-hot (near-zero entropy), and fix it by applying "
    "LayerNorm to q and k before their dot product (QK-layernorm); Wortsman et al. (2023), [*Small-scale proxies "
    "for large-scale Transformer training instabilities*](https://arxiv.org/abs/2309.14322), reproduce this "
    "attention-logit growth in small Transformers at high learning rates and find that qk-layernorm mitigates it "
    "there too. Since q·k = |q| |k| cos θ with |cos θ| ≤ 1, logits can only grow without bound through the "
    "lengths of q and k, which normalising them caps (up to LayerNorm's learned gain): turning q toward k at "
    "fixed lengths can raise q·k at most to |q| |k|. The details above split this model's own growth into the "
    "two.")
