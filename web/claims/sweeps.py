"""Sentences over d_k and over n: why the variance grows (with its geometry section), saturation and
gradients, and longer sequences.

Pure functions of results computed by ``sdpa_core`` (no Panel, no state objects), so the tests can check
each sentence against an independent computation; each names the conditions it holds under.
"""
from __future__ import annotations

import functools
import math

import numpy as np

import sdpa_core as sc
from sdpa_core.scaling import gauss_moments

from .claim import Claim, Sentence, as_2f, as_fmt, as_g, as_int, as_pct, as_sci, as_word
from .montecarlo import Z, as_margin, as_points, log_ratio_margin, mean_margin, share_margin
from .numbers import RULE_LABELS, fmt, fmt_sci
from .playground import STARVED, gradient_figures, starved_countable


#: A curve over d_k is "flat" when its ends differ by less than this share of log n (the entropy range).
FLAT = 0.1

# ---- captions that depend on the state ----------------------------------------------------------------
def trend(first: float, last: float, span: float, margin: float) -> str:
    """"flat", "falls" or "rises": how a curve over d_k moves. Flat means a change below ``FLAT`` of
    ``span`` (its natural range) and below twice ``FLAT`` of the curve's own size. With the Monte-Carlo
    ``margin`` on the change, a change within ``margin`` of that line is "unclear" (too close to call)."""
    line = min(FLAT * span, 2 * FLAT * max(abs(first), abs(last)))
    change = abs(last - first)
    if change + margin < line:
        return "flat"
    if change - margin < line:
        return "unclear"
    return "falls" if last < first else "rises"


def _trend_text(how: str, first: float, last: float) -> str:
    if how == "unclear":
        return f"{'falls' if last < first else 'rises'} or stays flat (too close to call)"
    return {"flat": "stays flat", "falls": "falls", "rises": "rises"}[how]


def saturation_summary(sweep: sc.Sweep, *, n: int, sigma: float, rho: float, lo: int = 16) -> Claim:
    """What each rule's entropy does from d_k = ``lo`` to the largest d_k of the sweep, at this ρ and σ. Facts:
    the conditions (``sigma``, ``rho``, ``n``, ``d_from``, ``d_to``, ``uniform`` = log n) and for the i-th rule
    of the sweep ``rule_i``, its ``trend_i`` (``trend``: "flat", "falls", "rises", or "unclear" when the change
    is within ``Z`` standard errors of the flat line) and entropies ``from_i``, ``to_i``; ``pm``, the widest of
    their intervals (``mean_margin``)."""
    d = list(sweep.d_k)
    i, j = d.index(lo) if lo in d else 0, len(d) - 1
    h = math.log(n)
    parts, facts, pm = [], {}, 0.0
    for k, rule in enumerate(sweep.rules):
        e, sd = sweep.mean["entropy"][rule], sweep.spread["entropy"][rule]
        how = trend(e[i], e[j], h, mean_margin(math.hypot(sd[i], sd[j]), sweep.samples))
        pm = max(pm, mean_margin(sd[i], sweep.samples), mean_margin(sd[j], sweep.samples))
        parts.append(f"{{rule_{k}}} {{trend_{k}}} ({{from_{k}}} → {{to_{k}}})")
        facts.update({f"rule_{k}": as_word(rule, RULE_LABELS[rule]),
                      f"trend_{k}": as_word(how, _trend_text(how, e[i], e[j])),
                      f"from_{k}": as_2f(e[i]), f"to_{k}": as_2f(e[j])})
    return Claim("At σ = {sigma}, ρ = {rho}, n = {n}, entropy from d_k = {d_from} to {d_to} (uniform: {uniform}; "
                 "each entropy ±{pm}): " + "; ".join(parts) + ".", sigma=as_g(sigma), rho=as_g(rho), n=as_int(n),
                 d_from=as_int(d[i]), d_to=as_int(d[j]), uniform=as_2f(h), pm=as_margin(pm, 2), **facts)


@functools.lru_cache(maxsize=16)   # the saturation note asks for the same two on every update
def cap_shrink(cap: float, ratio: float) -> float:
    """The spread s of Gaussian logits at which ``cap tanh(z / cap)`` has ``ratio`` times their spread (0 < ratio
    < 1): bisection on s over [1e-3 cap, 1e3 cap], the capped spread's ratio falling monotonically in s."""
    if not (isinstance(cap, (int, float)) and not isinstance(cap, bool) and 0 < cap < 1e300 and math.isfinite(cap)):
        raise ValueError(f"cap must be a finite number > 0, got {cap!r}")
    if not (isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and 0 < ratio < 1):
        raise ValueError(f"ratio must be a number strictly between 0 and 1, got {ratio!r}")
    lo, hi = 1e-3 * cap, 1e3 * cap
    for _ in range(60):
        mid = math.sqrt(lo * hi)
        _, var = gauss_moments(np.array([0.0]), np.array([mid]), cap)
        lo, hi = (mid, hi) if math.sqrt(float(var[0])) / mid > ratio else (lo, mid)
    return math.sqrt(lo * hi)


def _settings(rule: str, *, alpha: float, n: int) -> list[str]:
    """The settings a rule's scale reads besides d_k, as the coincidence sentence names them ("α = 0.5", "n = 16")."""
    spec = sc.RULES[rule]
    return ([f"α = {alpha:g}"] if "alpha" in spec.knobs else []) + ([f"n = {n}"] if spec.length is not None else [])


def coincident_rules(d_ks, rules, *, alpha: float, temperature: float, n: int) -> str:
    """Which rules' curves lie exactly on another's (the same factor on q·k at every d_k of the sweep,
    so one line hides the other), e.g. d_k^-α at α = 0.5 under 1/√d_k; "" when none do. QK-norm
    normalises q and k first, so it coincides with no other rule."""
    plain = [r for r in rules if not sc.RULES[r].normalizes]
    scales = {r: [sc.logit_scale(int(d), r, alpha=alpha, temperature=temperature, n=n) for d in d_ks] for r in plain}
    said, capped = [], []
    for i, a in enumerate(plain):
        for b in plain[:i]:
            if not all(math.isclose(x, y, rel_tol=1e-12) for x, y in zip(scales[a], scales[b])):
                continue
            cap_a, cap_b = sc.RULES[a].cap, sc.RULES[b].cap
            if cap_a == cap_b:
                at = "".join(f", at {knob}" for knob in _settings(a, alpha=alpha, n=n) + _settings(b, alpha=alpha, n=n))
                said.append(f"{RULE_LABELS[a]} lies exactly on {RULE_LABELS[b]} (the same scale at every d_k{at})")
            elif cap_b is None:   # the same scale, then a cap: the same logits wherever they stay well inside it
                capped.append(f"{RULE_LABELS[a]} is {RULE_LABELS[b]} with its logits capped at ±{cap_a:g}: it lowers "
                              f"normal logits' spread by 1% at a spread of {fmt(cap_shrink(cap_a, 0.99))} and by 10% at "
                              f"{fmt(cap_shrink(cap_a, 0.9))}, so at smaller spreads its line lies on {RULE_LABELS[b]}'s.")
            else:
                continue
            break
    text = ("; ".join(said) + ", so its line is hidden under the other.") if said else ""
    return " ".join([text, *capped]).strip()

def gradient_summary(norms: dict, *, rule: str, d_k: int, n: int, rho: float) -> Claim:
    """What is small and what is not in the per-query gradients at this state: rows vs the total. Facts:
    ``d_k``, ``rho``, ``rows`` (query rows pooled), ``n``; ``total_unscaled``, ``total_sqrt``; then either
    ``zero_sqrt`` and ``zero_unscaled`` (shares of rows with no gradient, when 1/√d_k's median row has none),
    or ``floor`` (round-off, when no row can be counted as starved), or ``starved`` (the unscaled share) with
    ``pm``, its interval in points (``starved_margin``);
    ``median_unscaled`` and ``median_sqrt``; ``rule``, ``median_rule``, ``total_rule`` for a third rule."""
    g0, ref = norms["none"], norms["sqrt"]
    med = float(np.median(ref))
    floors = getattr(norms, "floors", None)   # sdpa_core.RowNorms: each row's round-off size
    floor = max(float(np.max(floors[r])) for r in ("none", "sqrt")) if floors else 0.0
    figs = {r: gradient_figures(v, med, floor) for r, v in norms.items()}
    tot = {r: f["total"] for r, f in figs.items()}

    def norm(x: float) -> tuple[float, str]:   # norms below float64 round-off come flushed to 0 (query_gradient_norms)
        return float(x), "≈ 0" if x == 0 else fmt_sci(x)
    s = Sentence().add("At d_k = {d_k}, ρ = {rho} ({rows} query rows of n = {n}): ", d_k=as_int(d_k), rho=as_g(rho),
                       rows=as_int(len(g0)), n=as_int(n))
    totals = {"total_unscaled": norm(tot["none"]), "total_sqrt": norm(tot["sqrt"])}
    if not med > 0:   # 1/sqrt(d_k) saturated too: no reference row to compare with
        return s.add("even with 1/√d_k the median row gets no gradient at all (its rows are saturated too); ≈ 0 "
                     "(round-off or less) for {zero_sqrt} of its rows and {zero_unscaled} of the unscaled ones; total "
                     "‖∂L/∂Q‖ {total_unscaled} unscaled vs {total_sqrt}.", zero_sqrt=as_pct(float((ref == 0).mean())),
                     zero_unscaled=as_pct(float((g0 == 0).mean())), **totals).claim()
    medians = {"median_unscaled": norm(figs["none"]["median"]), "median_sqrt": norm(med)}
    if not starved_countable(med, floor):
        return s.add(f"1/{1 / STARVED:.0f} of the 1/√d_k median row's gradient is below float64 round-off (about "
                     "{floor}), so no row is counted as starved; median row {median_unscaled} unscaled vs {median_sqrt}; "
                     "total ‖∂L/∂Q‖ {total_unscaled} vs {total_sqrt}.", floor=as_sci(floor), **medians, **totals).claim()
    s.add("unscaled, {starved} (±{pm} points) of rows get less than " f"1/{1 / STARVED:.0f} of the 1/√d_k median; "
          "median row {median_unscaled} vs {median_sqrt}, while the total ‖∂L/∂Q‖ is {total_unscaled} vs {total_sqrt}",
          starved=as_pct(figs["none"]["starved"] / len(g0)), pm=as_points(starved_margin(g0, med, n)), **medians,
          **totals)
    if tot["none"] > tot["sqrt"]:
        s.add(" (larger: ∂L/∂q = scale · (∂L/∂z) k, and the rows still passing gradient carry scale 1, not 1/√d_k)")
    if rule not in ("none", "sqrt"):
        s.add(". With {rule}: median {median_rule}, total {total_rule}", rule=as_word(rule, RULE_LABELS[rule]),
              median_rule=norm(figs[rule]["median"]), total_rule=norm(tot[rule]))
    return s.add(".").claim()


def starved_margin(norms: np.ndarray, ref: float, n: int) -> float:
    """The interval of the share of rows below ``STARVED`` of ``ref`` (``share_margin``): the rows come in draws
    of ``n`` (``sdpa_core.query_gradient_norms``' ``reps``), so the spread is that of each draw's share; one
    draw has only the Wilson floor of its rows."""
    flags = (np.asarray(norms) < STARVED * ref).astype(float)
    draws = max(1, len(flags) // n)
    per = flags[: draws * n].reshape(draws, -1).mean(axis=1)
    return share_margin(float(flags.mean()), float(per.std()) if draws > 1 else 0.0, draws, len(flags))


def slope(sweep: sc.Sweep, rule: str, lo: int = 256) -> float:
    """Log-log slope of the Monte-Carlo logit std from d_k = ``lo`` to the sweep's largest d_k."""
    d = list(sweep.d_k)
    i, j = d.index(lo), len(d) - 1
    y = sweep.mean["logit_std"][rule]
    return float(math.log(y[j] / y[i]) / math.log(d[j] / d[i]))


def slope_margin(sweep: sc.Sweep, rule: str, lo: int = 256) -> float:
    """``Z`` standard errors of ``slope``: log y has standard error spread / (y √samples) at each end (the ends
    are independent draws), divided by log(d_to / d_from)."""
    d = list(sweep.d_k)
    i, j = d.index(lo), len(d) - 1
    y, sd = sweep.mean["logit_std"][rule], sweep.spread["logit_std"][rule]
    rel = math.hypot(sd[i] / y[i], sd[j] / y[j]) if y[i] > 0 and y[j] > 0 else math.inf
    return mean_margin(rel, sweep.samples) / math.log(d[j] / d[i])


def loglog_summary(sweep: sc.Sweep, *, rule: str, rho: float, lo: int = 256) -> Claim:
    """The measured slopes (facts ``unscaled``, and ``scaled`` with ``rule``; ``pm``, the wider of their
    intervals) at the current ρ from d_k = ``d_from`` to ``d_to``, next to what theory says they tend to."""
    d = list(sweep.d_k)
    facts = dict(rho=as_g(rho), d_from=as_int(lo), d_to=as_int(d[-1]), unscaled=as_2f(slope(sweep, "none", lo)))
    text = "Measured at ρ = {rho}, d_k = {d_from} to {d_to}: unscaled slope {unscaled}"
    pm = slope_margin(sweep, "none", lo)
    if rule != "none":
        text += ", {rule} {scaled}"
        facts.update(rule=as_word(rule, RULE_LABELS[rule]), scaled=as_2f(slope(sweep, rule, lo)))
        pm = max(pm, slope_margin(sweep, rule, lo))
    text += " (each ±{pm})"
    facts["pm"] = as_margin(pm, 2)
    return Claim(text + ("." if rho == 0 else
                         " (with ρ > 0 the matched pairs' mean ρ d_k σ² takes over as d_k grows: unscaled → 1, "
                         "1/√d_k → ½, 1/d_k → 0)."), **facts)


def variance_summary(dots: dict, *, d_k: int, n: int, sigma: float, rho: float, rule: str, pooled: float) -> Claim:
    """The histogram's pair (one query with its own key: facts ``theory_mean``, ``theory_std``, the samples'
    ``mean`` and ``std``, ``scaled`` with ``rule``) against the plot's pooled n×n logits (``pooled``)."""
    std0, std1 = dots["sample_std"]
    facts = dict(d_k=as_int(d_k), sigma=as_g(sigma), rho=as_g(rho), theory_mean=as_fmt(dots["theory_mean"][0]),
                 theory_std=as_fmt(dots["theory_std"][0]), mean=as_fmt(dots["sample_mean"][0]), std=as_fmt(std0),
                 rule=as_word(rule, RULE_LABELS[rule]), scaled=as_fmt(std1), n=as_int(n), pooled=as_fmt(pooled))
    text = ("At d_k = {d_k}, σ = {sigma}, ρ = {rho}: one query with its own key, q·k has mean ρ d_k σ² = {theory_mean} "
            "and std √((1+ρ²) d_k) σ² = {theory_std} in theory; the samples give {mean} and {std}. "
            "With {rule} its std is {scaled}.")
    if rho > 0:
        return Claim(text + " All {n}×{n} logits pooled (the log-log plot) have std {pooled} in theory: the {pairs} "
                     "off-diagonal pairs have mean 0, the {n} matched ones mean {theory_mean}.", **facts,
                     pairs=as_int(n * n - n))
    return Claim(text + " All {n}×{n} logits pooled (the log-log plot): std {pooled} in theory, every pair alike at "
                 "ρ = 0.", **facts)

def variance_headline(dots: dict, *, d_k: int, rule: str) -> Claim:
    """The histograms' point: the measured std of one query's q·k with its own key, without scaling and
    with the rule."""
    std0, std1 = dots["sample_std"]
    facts = dict(d_k=as_int(d_k), unscaled=as_fmt(std0))
    if rule == "none":
        return Claim("At d_k = {d_k}, q·k has std {unscaled} without scaling.", **facts)
    return Claim("At d_k = {d_k}, q·k has std {unscaled} without scaling and {scaled} with {rule}.",
                 **facts, scaled=as_fmt(std1), rule=as_word(rule, RULE_LABELS[rule]))


def saturation_headline(sweep: sc.Sweep, *, rule: str, lo: int = 16) -> Claim:
    """The sweep's point: the share of saturated rows at the smallest and largest d_k shown, without
    scaling and with the rule, and ``pm``: the widest of their Monte-Carlo intervals (``share_margin``)."""
    d = list(sweep.d_k)
    i, j = d.index(lo) if lo in d else 0, len(d) - 1
    sat, spread = sweep.mean["saturated"], sweep.spread["saturated"]
    shown = ("none",) if rule == "none" else ("none", rule)
    pm = max(share_margin(sat[r][x], spread[r][x], sweep.samples, sweep.n * sweep.samples) for r in shown for x in (i, j))
    text = "From d_k = {lo} to {hi}, saturated rows go from {unscaled_lo} to {unscaled_hi} without scaling"
    facts = dict(lo=as_int(d[i]), hi=as_int(d[j]), unscaled_lo=as_pct(sat["none"][i]),
                 unscaled_hi=as_pct(sat["none"][j]), pm=as_points(pm))
    if rule == "none":
        return Claim(text + " (±{pm} points).", **facts)
    return Claim(text + "; with {rule}, {scaled_lo} to {scaled_hi} (each ±{pm} points).", **facts,
                 rule=as_word(rule, RULE_LABELS[rule]), scaled_lo=as_pct(sat[rule][i]), scaled_hi=as_pct(sat[rule][j]))

# ---- why √d_k, geometrically -----------------------------------------------------------------------
def geometry_headline(geo: dict, *, d_k: int, sigma: float) -> Claim:
    """q·k = |q| |k| cos θ at ``d_k`` (``sdpa_core.random_geometry``, independent q and k): the lengths'
    measured product, the cosine's spread and the dot product's spread, with the dot's theory σ²√d_k."""
    i = int(np.argmin(np.abs(np.asarray(geo["d_k"]) - d_k)))
    return Claim("At d_k = {d_k}, |q| |k| ≈ {lengths} and cos θ spreads ±{cos_std}, so q·k = |q| |k| cos θ spreads "
                 "±{dot_std} (σ²√d_k = {theory}).",
                 d_k=as_int(geo["d_k"][i]), lengths=as_fmt(geo["norms_mean"][i]), cos_std=as_fmt(geo["cos_std"][i]),
                 dot_std=as_fmt(geo["dot_std"][i]), theory=as_fmt(geo["dot_theory"][i]))

# ---- sequence length: attention fading ---------------------------------------------------------------
#: A curve over n "stays" when its last value is within this factor of its first (either way).
FADE = 1.25
#: The first n the length section's sentences start from (the page's default n).
LENGTH_FROM = 16


def length_trend(first: float, last: float, margin: float) -> str:
    """How a top weight moves from ``first`` to ``last``: "falls", "rises", or "stays" (within ``FADE``×);
    "unclear" when log(first / last) is within ``margin`` (its Monte-Carlo interval) of ±log ``FADE``."""
    change, line = math.log(first / last), math.log(FADE)
    if abs(change) + margin < line:
        return "stays"
    if abs(change) - margin <= line:
        return "unclear"
    return "falls" if change > 0 else "rises"


def _length_span(path: dict) -> tuple[int, int]:
    ns = [int(x) for x in path["n"]]
    return (ns.index(LENGTH_FROM) if LENGTH_FROM in ns else 0), len(ns) - 1


def _length_move(path: dict, rule: str, key: str) -> tuple[str, dict]:
    """"falls 26% → 1%" (or "stays within 1.25× (31% → 28%)", or "moves 30% → 23% (unclear)" when the draw
    cannot tell) for one rule's top weight between the section's two lengths: its template and facts
    (``key``_trend, _from, _to; ``fade`` when it stays)."""
    i, j = _length_span(path)
    a, b = float(path["top_weight"][rule][i]), float(path["top_weight"][rule][j])
    draws = path["top_weights"][rule]
    how = length_trend(a, b, log_ratio_margin(draws[:, i], draws[:, j]))
    facts = {f"{key}_trend": as_word(how, "moves" if how == "unclear" else how), f"{key}_from": as_pct(a),
             f"{key}_to": as_pct(b)}
    if how == "stays":
        return f"{{{key}_trend}} within {{fade}}× ({{{key}_from}} → {{{key}_to}})", {**facts, "fade": as_g(FADE)}
    close = " (unclear)" if how == "unclear" else ""
    return f"{{{key}_trend}} {{{key}_from}} → {{{key}_to}}{close}", facts


def length_margin(path: dict) -> float:
    """The widest Monte-Carlo interval (``mean_margin``) of the top weights the length sentences state."""
    i, j = _length_span(path)
    return max(mean_margin(path["spread"]["top_weight"][r][x], path["samples"]) for r in path["rules"] for x in (i, j))


def length_headline(path: dict) -> Claim:
    """The length section's point: the top weight from n = 16 to the longest n, with 1/√d_k and with SSMax
    (facts ``sqrt_*`` and ``ssmax_*``: see ``_length_move``)."""
    i, j = _length_span(path)
    sqrt, sqrt_facts = _length_move(path, "sqrt", "sqrt")
    ssmax, ssmax_facts = _length_move(path, "ssmax", "ssmax")
    return Claim("From n = {n_from} to {n_to}, top weight " + sqrt + " with 1/√d_k and " + ssmax + " with SSMax.",
                 n_from=as_int(path["n"][i]), n_to=as_int(path["n"][j]), **{**sqrt_facts, **ssmax_facts})


#: The lengths at which ``length_factors`` states a length rule's factor: the page's n = 16 and 4096, and two
#: contexts of today's models past the plotted range (64 Ki and 1 Mi keys).
FACTOR_LENGTHS = (16, 4096, 8192, 65536, 2**20)


def length_factors(path: dict) -> list[Claim]:
    """For each drawn rule whose factor grows with n (SSMax, Llama 4's temperature): that growth at
    ``FACTOR_LENGTHS``, past the plotted range too, from the rule itself (facts ``rule``, ``n_i``, ``f_i``)."""
    out = []
    for r in path["rules"]:
        grow = sc.RULES[r].length
        if grow is None:
            continue
        parts = ", ".join(f"×{{f_{i}}} at n = {{n_{i}}}" for i in range(len(FACTOR_LENGTHS)))
        facts = {f"n_{i}": as_int(n) for i, n in enumerate(FACTOR_LENGTHS)}
        facts.update({f"f_{i}": as_fmt(float(grow(n))) for i, n in enumerate(FACTOR_LENGTHS)})
        flat = all(float(grow(int(n))) == 1.0 for n in path["n"])
        twin = _unscaled_twin(r, int(path["d_k"])) if flat else None
        tail = (f"; it is 1 up to n = {{n_max}}, so its curves here are {RULE_LABELS[twin]}'s" if twin else "")
        out.append(Claim("{rule} multiplies its scale by a factor that grows with n: " + parts + tail + ".",
                         rule=as_word(r, RULE_LABELS[r]), **facts, **({"n_max": as_int(path["n"][-1])} if twin else {})))
    return out


def _unscaled_twin(rule: str, d_k: int) -> str | None:
    """The rule without a length whose factor at ``d_k`` is ``rule``'s scale before its length factor (1/√d_k for
    Llama 4's temperature), with the same normalisation and cap; None when no rule is."""
    spec = sc.RULES[rule]
    ds = [d_k, 16, 256]   # compared at other d_k too, so 1/√d_k at d_k = 1 is not taken for no scaling
    base = spec.scale(np.array(ds, dtype=float), 0.5, 0.1)
    for name, other in sc.RULES.items():
        if (other.length is None and not other.knobs and other.normalizes == spec.normalizes and other.cap == spec.cap
                and np.allclose([sc.logit_scale(d, name) for d in ds], base, rtol=1e-12, atol=0)):
            return name
    return None


def length_details(path: dict, *, rho: float) -> list[Claim]:
    """Each drawn rule's top weight (facts ``top_*``) and entropy as a share of log n (``entropy_from``,
    ``entropy_to``) between the section's two lengths; at ρ > 0 the weight each query puts on its own key
    too (``rule_i``, ``from_i``, ``to_i``); last, the top weights' interval (``samples``, ``pm``, ``z``)."""
    i, j = _length_span(path)
    out = []
    for r in path["rules"]:
        move, facts = _length_move(path, r, "top")
        ratio = path["entropy_ratio"][r]
        out.append(Claim("{rule}: top weight " + move + "; entropy {entropy_from} → {entropy_to} of log n "
                         "(1 = uniform).", rule=as_word(r, RULE_LABELS[r]), **facts,
                         entropy_from=as_2f(ratio[i]), entropy_to=as_2f(ratio[j])))
    if rho > 0:
        own, facts = [], {}
        for k, r in enumerate(path["rules"]):
            own.append(f"{{rule_{k}}} {{from_{k}}} → {{to_{k}}}")
            facts.update({f"rule_{k}": as_word(r, RULE_LABELS[r]), f"from_{k}": as_pct(path["own_weight"][r][i]),
                          f"to_{k}": as_pct(path["own_weight"][r][j])})
        out.append(Claim("Each query's own key (k = ρq + √(1 − ρ²)z, ρ = {rho}) gets, from n = {n_from} to {n_to}: "
                         + "; ".join(own) + ".", rho=as_g(rho), n_from=as_int(path["n"][i]),
                         n_to=as_int(path["n"][j]), **facts))
    out.append(Claim("Monte-Carlo means over {samples} queries: each top weight above is within ±{pm} points "
                     "({z} standard errors); a move is called falls, rises or stays only when it clears {fade}× by more "
                     "than its own interval, else “moves … (unclear)”.", samples=as_int(path["samples"]), pm=as_points(length_margin(path)),
                     z=as_g(Z), fade=as_g(FADE)))
    return out
