"""The sequence-length section (Saturation & gradients): its headline and details say what length_path
measured, with the right words for each move, and its numbers agree with whole vectors drawn here and
torch's softmax, over states that include the corners (d_k = 1 and 4096, σ = 0.1 and 8, ρ = 0 and 1)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import sdpa_core as sc
from web import claims
from web.options import LENGTH_SAMPLES
from web.state import LabState
from shown import pct_ok

def check_move(claim, key: str, first: float, last: float):
    """One move's word (``key``_trend) against the two numbers: falls/rises past 1.25x, stays within it, or
    "unclear" (its interval straddles 1.25x: tests/web/test_montecarlo_claims.py holds it across seeds); and
    the two numbers as the text writes them."""
    word = claim.facts[f"{key}_trend"]
    if word == "unclear":
        assert f"moves {claim.shown[f'{key}_from']} → {claim.shown[f'{key}_to']} (unclear)" in claim, claim
    elif word == "stays":
        assert last * 1.25 >= first and last <= first * 1.25 and claim.facts["fade"] == 1.25, claim
    else:
        assert (last * 1.25 < first) if word == "falls" else (word == "rises" and last > 1.25 * first), claim
    assert pct_ok(claim.shown[f"{key}_from"], first) and pct_ok(claim.shown[f"{key}_to"], last), claim


STATES = dict(d_k=st.sampled_from([1, 2, 16, 64, 1024, 4096]), sigma=st.sampled_from([0.1, 1.0, 3.0, 8.0]),
              rho=st.sampled_from([0.0, 0.5, 0.9, 1.0]), rule=st.sampled_from(sc.RULE_NAMES), seed=st.integers(0, 999))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(**STATES)
def test_length_sentences_say_what_was_measured(d_k, sigma, rho, rule, seed):
    lab = LabState(view="saturation", d_k=d_k, sigma=sigma, rho=rho, rule=rule, seed=seed)
    path = lab.length
    assert set(path["rules"]) == {"none", "sqrt", "ssmax", rule}
    i, j = list(path["n"]).index(16), len(path["n"]) - 1
    head = claims.length_headline(path)
    assert len(head.split()) <= 25, head
    assert (head.facts["n_from"], head.facts["n_to"]) == (16, 4096), head
    top = path["top_weight"]
    check_move(head, "sqrt", top["sqrt"][i], top["sqrt"][j])
    check_move(head, "ssmax", top["ssmax"][i], top["ssmax"][j])
    details = claims.length_details(path, rho=rho)
    assert len(details) == len(path["rules"]) + (rho > 0) + 1
    assert details[-1].facts["samples"] == LENGTH_SAMPLES, details[-1]
    for r, line in zip(path["rules"], details):
        assert line.facts["rule"] == r, line
        check_move(line, "top", top[r][i], top[r][j])
        assert abs(float(line.shown["entropy_from"]) - path["entropy_ratio"][r][i]) <= 0.005 + 1e-9
        assert abs(float(line.shown["entropy_to"]) - path["entropy_ratio"][r][j]) <= 0.005 + 1e-9
    if rho > 0:
        own = details[-2]
        assert (own.facts["rho"], own.facts["n_from"], own.facts["n_to"]) == (rho, 16, 4096), own
        for k, r in enumerate(path["rules"]):
            assert own.facts[f"rule_{k}"] == r, own
            assert pct_ok(own.shown[f"from_{k}"], path["own_weight"][r][i]) and pct_ok(own.shown[f"to_{k}"], path["own_weight"][r][j])


@pytest.mark.usefixtures("torch")
@pytest.mark.parametrize("d_k, sigma, rho, seed", [(1, 1.0, 0.0, 0), (4, 1.0, 0.5, 3), (2, 3.0, 1.0, 7),
                                                   (4, 0.1, 0.9, 11)])
def test_the_page_numbers_agree_with_whole_vectors(d_k, sigma, rho, seed):
    """The page's top weights and entropy ratios at n = 16 and 4096 (64 queries) against 600 queries drawn
    here as whole vectors, each with its own 4096 keys (key 0 = ρq + √(1 − ρ²)z), through torch's softmax:
    within 5 standard errors of the page's 64-query mean."""
    import torch
    lab = LabState(view="saturation", d_k=d_k, sigma=sigma, rho=rho, seed=seed)
    path = lab.length
    rng = np.random.default_rng(1000 + seed)
    m = 600
    q = sigma * rng.standard_normal((m, d_k))
    keys = sigma * rng.standard_normal((m, 4096, d_k))
    keys[:, 0] = rho * q + math.sqrt(1 - rho * rho) * keys[:, 0]
    for n in (16, 4096):
        i = list(path["n"]).index(n)
        dots = torch.tensor(np.einsum("md,mnd->mn", q, keys[:, :n]))
        for r, factor in (("none", 1.0), ("sqrt", 1 / math.sqrt(d_k)),
                          ("ssmax", 0.43 * math.log(n) / math.sqrt(d_k))):
            p = torch.softmax(dots * factor, dim=-1)
            top = p.max(dim=-1).values.numpy()
            ent = (-(p * torch.log(p.clamp_min(1e-300))).sum(dim=-1) / math.log(n)).numpy()
            for name, want in (("top_weight", top), ("entropy_ratio", ent)):
                se = math.hypot(path["spread"][name][r][i] / math.sqrt(LENGTH_SAMPLES), want.std() / math.sqrt(m))
                assert abs(path[name][r][i] - want.mean()) <= 5 * se + 1e-6, (r, n, name, path[name][r][i], want.mean())


# the factors of the shipped length rules, written out here from their papers and modelling files
WRITTEN_GROWTH = {"ssmax": lambda n: 0.43 * math.log(n),                           # Nakanishi 2025, s = 0.43
                  "llama4": lambda n: 1 + 0.1 * math.log(1 + math.floor(n / 8192))}  # modeling_llama4, Scout's config


@pytest.mark.parametrize("d_k", [1, 64, 4096])
def test_each_length_rules_growth_is_stated_past_the_plotted_range(d_k):
    """Every drawn rule whose factor reads n gets its growth at FACTOR_LENGTHS (the formulas written here), and
    Llama 4's, 1 over the whole plotted range, is said to draw 1/√d_k's curves there (and no other's is)."""
    path = sc.length_path([16, 4096], sc.RULE_NAMES, d_k=d_k, samples=4)
    said = {c.facts["rule"]: c for c in claims.length_factors(path)}
    assert set(said) == {r for r in sc.RULE_NAMES if sc.RULES[r].length is not None} == set(WRITTEN_GROWTH)
    for rule, claim in said.items():
        for i, n in enumerate(claims.FACTOR_LENGTHS):
            assert claim.facts[f"n_{i}"] == n and claim.facts[f"f_{i}"] == pytest.approx(WRITTEN_GROWTH[rule](n), rel=1e-12)
        flat = all(WRITTEN_GROWTH[rule](int(n)) == 1 for n in path["n"])
        assert ("so its curves here are 1/√d_k's" in claim) == flat == (rule == "llama4"), claim
    # and the curves are indeed the same numbers
    np.testing.assert_array_equal(path["top_weight"]["llama4"], path["top_weight"]["sqrt"])
