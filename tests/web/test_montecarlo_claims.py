"""The Monte-Carlo sentences hold across seeds: each view's figures drawn at random (saturated shares, top
weights, the ρ from which half the rows saturate) are re-drawn at several seeds, and every stated figure stays
within the interval its sentence states of a reference drawn many times larger, and no trend word says what
the reference contradicts. The states include the ones an outside review found flipping with the seed; the views are saturation
(shares, entropies and their words), the length section, alignment (tokens attended and the half-saturation ρ),
the variance view's log-log slopes and the real-models calculator.

The reference's own interval is computed here from its draws (standard errors of a mean), not by the page's
code; a word is consistent with it when its line is inside the reference's interval on the word's side."""
from __future__ import annotations

import math

import numpy as np
import pytest

import sdpa_core as sc
from sdpa_core.draws import MAX_WORK
from sdpa_core.length import MAX_LENGTH
from web import claims
from web.claims.sweeps import FADE, FLAT, LENGTH_FROM
from web.options import ALIGN_SAMPLES, MODEL_N, RHO_STEPS
from web.state import LabState

SEEDS = range(6)
Z = claims.montecarlo.Z


def _se(spread, samples) -> float:
    return float(spread) / math.sqrt(samples)


# ---- saturation: the headline's shares and the summary's entropy words ------------------------------------
SWEEP_STATES = [dict(n=3, sigma=0.5, rho=0.0, rule="alpha", alpha=0.25),   # "67%" where the truth is 77%
                dict(n=16, sigma=1.0, rho=0.0, rule="sqrt", alpha=0.5),
                dict(n=8, sigma=2.0, rho=0.5, rule="linear", alpha=0.5)]


def _reference_sweep(state: dict) -> sc.Sweep:
    n = state["n"]
    samples = min(4000, MAX_WORK // (n * n * 2 * len(sc.RULE_NAMES)))
    return sc.sweep([16, 4096], sc.RULE_NAMES, n=n, samples=samples, sigma=state["sigma"], rho=state["rho"],
                    alpha=state["alpha"], seed=10_007)


@pytest.mark.parametrize("state", SWEEP_STATES, ids=lambda s: f"n{s['n']}-{s['rule']}")
def test_saturation_shares_stay_within_their_stated_interval_across_seeds(state):
    ref = _reference_sweep(state)
    rule = state["rule"]
    for seed in SEEDS:
        lab = LabState(view="saturation", seed=seed, **state)
        h = claims.saturation_headline(lab.sweep, rule=rule)
        pm = h.facts["pm"]
        assert f"±{h.shown['pm']} points" in h and int(h.shown["pm"]) >= 100 * pm - 1e-6, h
        for key, r, x in (("unscaled_lo", "none", 0), ("unscaled_hi", "none", 1), ("scaled_lo", rule, 0),
                          ("scaled_hi", rule, 1)):
            want = float(ref.mean["saturated"][r][x])
            slack = Z * _se(ref.spread["saturated"][r][x], ref.samples)
            assert abs(h.facts[key] - want) <= pm + slack + 1e-9, (seed, key, h, want)


def _consistent_entropy_word(word: str, first: float, last: float, margin: float, span: float) -> bool:
    """The summary's word against the reference's change ``last - first`` ± ``margin``: "flat" needs the change
    possibly under the flat line, "falls"/"rises" possibly over it in that direction; "unclear" is always allowed."""
    line = min(FLAT * span, 2 * FLAT * max(abs(first), abs(last)))
    change = last - first
    return {"flat": abs(change) - margin < line, "unclear": True,
            "falls": -change + margin >= line, "rises": change + margin >= line}[word]


@pytest.mark.parametrize("state", SWEEP_STATES, ids=lambda s: f"n{s['n']}-{s['rule']}")
def test_saturation_entropy_words_agree_with_a_large_draw_across_seeds(state):
    ref = _reference_sweep(state)
    span = math.log(state["n"])
    for seed in SEEDS:
        lab = LabState(view="saturation", seed=seed, **state)
        h = claims.saturation_summary(lab.sweep, n=state["n"], sigma=state["sigma"], rho=state["rho"])
        for k, r in enumerate(lab.sweep.rules):
            e, sd = ref.mean["entropy"][r], ref.spread["entropy"][r]
            margin = Z * math.hypot(_se(sd[0], ref.samples), _se(sd[1], ref.samples))
            word = h.facts[f"trend_{k}"]
            assert _consistent_entropy_word(word, e[0], e[1], margin, span), (seed, r, word, e, margin, h)
            for fact, x in ((f"from_{k}", 0), (f"to_{k}", 1)):   # each entropy within the stated ±pm
                slack = Z * _se(sd[x], ref.samples)
                assert abs(h.facts[fact] - e[x]) <= h.facts["pm"] + slack + 1e-9, (seed, fact, e[x], h)


# ---- sequence length: the top weights and their words ------------------------------------------------------
LENGTH_STATES = [dict(d_k=2, n=16, sigma=2.6, rho=0.1),   # "falls 79% → 61%" where the truth stays within 1.25×
                 dict(d_k=6, n=5, sigma=4.0, rho=0.0),
                 dict(d_k=64, n=16, sigma=1.0, rho=0.0),
                 dict(d_k=1024, n=16, sigma=1.0, rho=0.9)]
RULES = ("none", "sqrt", "ssmax")


def _reference_length(state: dict) -> dict:
    """Each rule's top weight per query at n = 16 and 4096, pooled over three independent 680-query draws."""
    draws = [sc.length_path([LENGTH_FROM, MAX_LENGTH], RULES, d_k=state["d_k"], sigma=state["sigma"],
                            rho=state["rho"], samples=680, seed=20_000 + i) for i in range(3)]
    return {r: np.concatenate([d["top_weights"][r] for d in draws]) for r in RULES}


def _consistent_length_word(word: str, top: np.ndarray) -> bool:
    a, b = top[:, 0], top[:, 1]
    change = math.log(a.mean() / b.mean())
    margin = Z * float(np.std(a / a.mean() - b / b.mean())) / math.sqrt(len(a))
    line = math.log(FADE)
    return {"stays": abs(change) - margin < line, "unclear": True,
            "falls": change + margin > line, "rises": -change + margin > line}[word]


@pytest.mark.parametrize("state", LENGTH_STATES, ids=lambda s: f"d{s['d_k']}-s{s['sigma']:g}-r{s['rho']:g}")
def test_length_figures_and_words_hold_across_seeds(state):
    ref = _reference_length(state)
    for seed in SEEDS:
        lab = LabState(view="saturation", seed=seed, **state)
        path = lab.length
        head, details = claims.length_headline(path), claims.length_details(path, rho=state["rho"])
        interval = details[-1]
        pm = interval.facts["pm"]
        assert interval.facts["samples"] == path["samples"] and interval.facts["z"] == Z, interval
        lines = [(head, "sqrt", "sqrt"), (head, "ssmax", "ssmax")]
        lines += [(line, "top", line.facts["rule"]) for line in details if "rule" in line.facts]
        for claim, key, rule in lines:
            if rule not in ref:
                continue
            top = ref[rule]
            for fact, x in ((f"{key}_from", 0), (f"{key}_to", 1)):
                slack = Z * float(top[:, x].std()) / math.sqrt(len(top))
                assert abs(claim.facts[fact] - top[:, x].mean()) <= pm + slack + 1e-9, (seed, fact, claim)
            word = claim.facts[f"{key}_trend"]
            assert _consistent_length_word(word, top), (seed, rule, word, claim, top.mean(axis=0))
            said = f"{claim.shown[f'{key}_from']} → {claim.shown[f'{key}_to']} (unclear)" in claim
            assert (word == "unclear") == said, claim


# ---- as q and k align: from which ρ half the rows saturate ------------------------------------------------
ALIGN_STATES = [dict(d_k=64, sigma=1.0), dict(d_k=256, sigma=1.0), dict(d_k=1024, sigma=1.0), dict(d_k=16, sigma=3.0)]


def _said_interval(h, k: int) -> tuple[float, float]:
    """(may, surely) as the sentence states them for the k-th rule; inf where it says none up to ρ = 1."""
    f = h.facts
    if f"half_{k}" in f:
        return f.get(f"half_lo_{k}", f[f"half_{k}"]), f[f"half_{k}"]
    if f"maybe_{k}" in f:
        return f[f"maybe_{k}"], math.inf
    return math.inf, math.inf


def _reference_interval(ref: dict, rule: str) -> tuple[float, float]:
    """The ρ from which the reference's share may reach 0.5 and from which it surely does, with Z standard
    errors of its mean over matrices (its Wilson floor here: ±Z/(2√rows), the widest a share can need)."""
    rho, share, spread = ref["rho"], ref["saturated"][rule], ref["spread"]["saturated"][rule]
    margin = np.maximum(Z * spread / math.sqrt(ref["samples"]), Z / (2 * math.sqrt(ref["samples"] * ref["n"])))
    maybe, surely = share + margin >= 0.5, share - margin >= 0.5
    return (float(rho[maybe].min()) if maybe.any() else math.inf, float(rho[surely].min()) if surely.any() else math.inf)


@pytest.mark.parametrize("state", ALIGN_STATES, ids=lambda s: f"d{s['d_k']}-s{s['sigma']:g}")
def test_half_saturation_rho_holds_across_seeds(state):
    rhos = np.linspace(0.0, 1.0, RHO_STEPS)
    ref = sc.rho_path(rhos, sc.RULE_NAMES, d_k=state["d_k"], n=16, sigma=state["sigma"], samples=16 * ALIGN_SAMPLES,
                      seed=30_011)
    for seed in SEEDS:
        lab = LabState(view="alignment", seed=seed, **state)
        h = claims.alignment_summary(lab.alignment, d_k=lab.d_k, n=lab.n, sigma=lab.sigma, rho=lab.rho,
                                     temperature=lab.temperature, alpha=lab.alpha)
        head = claims.alignment_headline(lab.alignment, rho=0.0, n=lab.n)
        for fact, x in (("tokens", 0), ("other_tokens", -1)):
            want, se = ref["effective_support"]["sqrt"][x], _se(ref["spread"]["effective_support"]["sqrt"][x], ref["samples"])
            assert abs(head.facts[fact] - want) <= head.facts["pm"] + Z * se + 1e-9, (seed, fact, want, head)
        for k, rule in enumerate(lab.alignment["effective_support"]):
            may, surely = _said_interval(h, k)
            ref_may, ref_surely = _reference_interval(ref, rule)
            assert max(may, ref_may) <= min(surely, ref_surely), (seed, rule, (may, surely), (ref_may, ref_surely), h)
            tokens, spread = ref["effective_support"][rule], ref["spread"]["effective_support"][rule]
            for fact, x in ((f"at0_{k}", 0), (f"at1_{k}", -1)):   # tokens attended within the stated ±pm_tokens
                slack = Z * _se(spread[x], ref["samples"])
                assert abs(h.facts[fact] - tokens[x]) <= h.facts["pm_tokens"] + slack + 1e-9, (seed, fact, h)
            drawn = lab.alignment["half_saturated_rho"][rule]   # the draw's own first ρ lies within what is said
            assert (math.isnan(drawn) and surely == math.inf) or may <= drawn <= surely, (seed, rule, drawn, h)


# ---- the variance view's log-log slopes -------------------------------------------------------------------
@pytest.mark.parametrize("state", [dict(rho=0.0, rule="sqrt"), dict(rho=0.5, rule="linear"),
                                   dict(rho=0.0, rule="sqrt", n=3, sigma=0.5)],
                         ids=lambda s: "-".join(f"{k}{v}" for k, v in s.items()))
def test_loglog_slopes_stay_within_their_stated_interval_across_seeds(state):
    n, sigma = state.get("n", 16), state.get("sigma", 1.0)
    ref = sc.sweep([256, 4096], ("none", state["rule"]), n=n, samples=min(2000, MAX_WORK // (n * n * 4)),
                   sigma=sigma, rho=state["rho"], seed=40_009)
    for seed in SEEDS:
        lab = LabState(view="variance", seed=seed, **state)
        h = claims.loglog_summary(lab.sweep, rule=state["rule"], rho=state["rho"])
        for fact, r in (("unscaled", "none"), ("scaled", state["rule"])):
            y, sd = ref.mean["logit_std"][r], ref.spread["logit_std"][r]
            want = math.log(y[1] / y[0]) / math.log(16)
            slack = Z * math.hypot(_se(sd[0], ref.samples) / y[0], _se(sd[1], ref.samples) / y[1]) / math.log(16)
            assert abs(h.facts[fact] - want) <= h.facts["pm"] + slack + 1e-9, (seed, fact, want, h)


# ---- the real-models calculator ---------------------------------------------------------------------------
@pytest.mark.parametrize("preset", ["gpt2", "t5-base", "olmo-2-7b"])
def test_model_figures_stay_within_their_stated_interval_across_seeds(preset):
    from sdpa_core import real_models
    draws = [real_models.preset_at_init(preset, n=MODEL_N, samples=8, seed=50_000 + i) for i in range(6)]
    def ref(variant, key):   # the mean of 48 heads and its standard error
        means = np.array([d["mc"][variant][key] for d in draws])
        ses = np.array([d["mc"][variant][f"{key}_se"] for d in draws])
        return means.mean(), math.sqrt((ses ** 2).sum()) / len(draws)
    for seed in SEEDS:
        lab = LabState(view="models", preset=preset, seed=seed)
        m = lab.real_model
        assert m["n"] == MODEL_N, m["n"]
        head, summary = claims.model_headline(m), claims.model_summary(m)
        checks = [(head, "top", "model", "top_weight", head.facts["pm"]),
                  (summary, "top_model", "model", "top_weight", summary.facts["pm"]),
                  (summary, "top_unscaled", "unscaled", "top_weight", summary.facts["pm"]),
                  (summary, "saturated_model", "model", "saturated", summary.facts["pm"]),
                  (summary, "saturated_unscaled", "unscaled", "saturated", summary.facts["pm"]),
                  (summary, "tokens_model", "model", "tokens_attended", summary.facts["pm_tokens"]),
                  (summary, "tokens_unscaled", "unscaled", "tokens_attended", summary.facts["pm_tokens"])]
        if "unscaled" in head.facts:
            checks.append((head, "unscaled", "unscaled", "top_weight", head.facts["pm"]))
        for claim, fact, variant, key, pm in checks:
            want, se = ref(variant, key)
            assert abs(claim.facts[fact] - want) <= pm + Z * se + 1e-9, (seed, fact, want, se, claim)


# ---- saturation's gradient sentence: the share of starved rows ---------------------------------------------
@pytest.mark.parametrize("state", [dict(d_k=1024, n=16), dict(d_k=64, n=16), dict(d_k=256, n=64), dict(d_k=1024, n=4)],
                         ids=lambda s: f"d{s['d_k']}-n{s['n']}")
def test_starved_share_stays_within_its_stated_interval_across_seeds(state):
    starved = claims.playground.STARVED
    reps = 4096 // state["n"]
    ref = sc.query_gradient_norms(state["n"], state["d_k"], ("none", "sqrt"), reps=reps, seed=60_000)
    flags = (ref["none"] < starved * np.median(ref["sqrt"])).reshape(reps, state["n"]).mean(axis=1)
    want, slack = flags.mean(), Z * flags.std() / math.sqrt(reps)
    for seed in SEEDS:
        lab = LabState(view="saturation", seed=seed, **state)
        g = claims.gradient_summary(lab.gradients, rule=lab.rule, d_k=lab.d_k, n=lab.n, rho=lab.rho)
        assert "starved" in g.facts and f"(±{g.shown['pm']} points)" in g, g
        assert abs(g.facts["starved"] - want) <= g.facts["pm"] + slack + 1e-9, (seed, want, g)
