"""The explainer's sentences (logit dial, real models, alignment, outputs) against computations made here:
torch softmax and autograd, numpy draws written independently of sdpa_core, over many states."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

import sdpa_core as sc
from web import claims
from web.options import D_K_OPTIONS
from web.state import LabState
from shown import pct_ok



# ---- the logit dial -------------------------------------------------------------------------------------
@pytest.mark.usefixtures("torch")
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(s=st.sampled_from([0.0, 0.3, 1.0, 2.0, 4.5, 8.0, 15.0, 30.0]), n=st.integers(2, 64), seed=st.integers(0, 500))
@example(s=30.0, n=2, seed=59)     # a saturated corner where autograd's own gradient is 30% off (found by hypothesis)
@example(s=15.0, n=53, seed=398)   # rows near saturation whose tiny entries autograd gets only to a few digits
def test_dial_sentence_against_torch(s, n, seed):
    """The dial's sentence: top weight, tokens attended, saturated rows and the gradient spread of
    softmax(s G), recomputed with torch (softmax and autograd for ∂L/∂z)."""
    import torch
    lab = LabState(view="dial", dial_s=s, n=n, seed=seed)
    h = claims.dial_summary(lab.dial, s=s, n=n)
    g = np.random.default_rng(seed).standard_normal((n, n))
    u = np.random.default_rng([seed, 1]).standard_normal((n, n))

    def softmax_and_grad(scale):
        z = torch.tensor(scale * g, requires_grad=True)
        p = torch.softmax(z, dim=-1)
        (p * torch.tensor(u)).sum().backward()
        # ∂L/∂z_j = p_j (u_j − Σ_k p_k u_k), written as p_j Σ_k p_k (u_j − u_k): autograd's form loses
        # u_j − p·u to cancellation once a row saturates (s = 30, n = 2: its median is 30% off the exact
        # value, which the page shows); this form is exact there, and agrees with autograd elsewhere
        pd, ut = p.detach(), torch.tensor(u)
        exact = pd * ((ut[:, :, None] - ut[:, None, :]) * pd[:, None, :]).sum(dim=-1)
        spread = pd.max(dim=-1).values < 0.9      # rows far from saturation: each row's norm agrees
        torch.testing.assert_close(z.grad[spread].norm(dim=-1), exact[spread].norm(dim=-1), rtol=1e-6, atol=1e-12)
        return pd.numpy(), exact.norm(dim=-1).numpy()

    p, norms = softmax_and_grad(s)
    _, ref = softmax_and_grad(1.0)
    top = p.max(axis=-1)
    ent = -(p * np.log(np.where(p > 0, p, 1))).sum(axis=-1)
    assert (h.facts["s"], h.facts["n"], h.facts["saturation"]) == (s, n, sc.SATURATION), h
    assert pct_ok(h.shown["top"], top.mean()) and abs(float(h.shown["tokens"]) - np.exp(ent).mean()) <= 0.051, h
    assert pct_ok(h.shown["saturated"], (top > sc.SATURATION).mean()), h
    assert h.facts["starved_below"] == 1000 and pct_ok(h.shown["starved"], (norms < 1e-3 * np.median(ref)).mean()), h
    # the two-key picture, from the median gap of each row's top two logits
    two = np.sort(s * g, axis=-1)[:, -2:]
    gap = float(np.median(two[:, 1] - two[:, 0]))
    p2 = 1 / (1 + math.exp(-gap))
    slope = math.exp(-gap) / (1 + math.exp(-gap)) ** 2   # p(1 - p) without 1 - p's cancellation (gap 42: 6e-19)
    assert h.facts["gap"] == pytest.approx(gap, rel=1e-6, abs=1e-12), h
    assert pct_ok(h.shown["two_p"], p2) and float(h.shown["two_slope"]) == pytest.approx(slope, rel=0.051, abs=1e-300), h
    # the gradient measured over all n keys, and its ratio to the median at s = 1
    median = float(np.median(norms))
    assert float(h.shown["grad"]) == pytest.approx(median, rel=0.051, abs=1e-300), (h, median)
    assert h.facts["ratio"] == pytest.approx(median / float(np.median(ref)), rel=1e-6), h


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(d_k=st.sampled_from([d for d in D_K_OPTIONS if d >= 8]), sigma=st.sampled_from([0.3, 0.7, 1.0, 2.0]),
       rho=st.sampled_from([0.0, 0.25, 0.5, 0.9]), rule=st.sampled_from(sc.RULE_NAMES), seed=st.integers(0, 99))
def test_the_s_the_page_reports_is_the_std_of_the_logits_it_computes(d_k, sigma, rho, rule, seed):
    """"These settings put you at s = …": the reported s against the std of the unmatched (i ≠ j) logits the
    page computes (sdpa_core.rule_attention) over many draws, and m against the matched ones' mean, within
    Monte-Carlo error (4 standard errors; QK-norm's m is a large-d_k limit, checked from d_k = 64)."""
    lab = LabState(view="dial", d_k=d_k, sigma=sigma, rho=rho, rule=rule, seed=seed)
    moments = lab.settings_moments[rule]
    off, diag = [], []
    for draw in range(24):
        q, k, v = sc.draw_qkv(16, d_k, sigma=sigma, rho=rho, seed=seed * 100 + draw)
        z = sc.rule_attention(q, k, v, rule, alpha=lab.alpha, temperature=lab.temperature)[2]
        off.append(z[~np.eye(16, dtype=bool)])
        diag.append(np.diag(z))
    off, diag = np.concatenate(off), np.concatenate(diag)
    est = math.sqrt(np.mean(off ** 2))
    # the std of a sample rms from ~5760 draws with dependent rows: a few percent; 4 "errors" of 3%
    assert abs(est - moments["s"]) <= 0.12 * moments["s"] + 1e-12, (est, moments)
    if not (sc.RULES[rule].normalizes and d_k < 64):
        se = diag.std() / math.sqrt(len(diag)) * 3   # rows share q's norm: effective samples about a third
        assert abs(diag.mean() - moments["m"]) <= 4 * se + 0.02 * abs(moments["m"]) + 1e-9, (diag.mean(), moments)


@pytest.mark.parametrize("pair", [((64, 1.0, "none"), (1024, 0.5, "none")),
                                  ((256, 1.0, "sqrt"), (1024, 1.0, "sqrt")),
                                  ((64, 1.0, "sqrt"), (4096, 8.0, "linear"))])
def test_two_settings_with_the_same_s_give_the_same_entropy(pair):
    """At ρ = 0 and d_k ≥ 64, settings with the same s have the same mean entropy as each other and as the
    dial at that s, within Monte-Carlo error (numpy draws written here, 200 heads each)."""
    ent, s_values = [], []
    rng = np.random.default_rng(5)
    for d_k, sigma, rule in pair:
        lab = LabState(view="dial", d_k=d_k, sigma=sigma, rule=rule)
        s_values.append(lab.settings_moments[rule]["s"])
        scale = sc.logit_scale(d_k, rule, n=16)
        h = []
        for _ in range(200):
            q, k = rng.normal(0, sigma, (2, 16, d_k))
            z = q @ k.T * scale
            p = np.exp(z - z.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            h.append(-(p * np.log(np.where(p > 0, p, 1))).sum(axis=1).mean())
        ent.append((np.mean(h), np.std(h) / math.sqrt(len(h))))
    assert math.isclose(*s_values, rel_tol=1e-9)
    dial = np.mean([sc.dial_attention(s_values[0], 16, seed=seed)["mean_entropy"] for seed in range(200)])
    (a, sa), (b, sb) = ent
    assert abs(a - b) <= 4 * math.hypot(sa, sb) + 0.01, ent
    assert abs(a - dial) <= 4 * sa + 0.02, (a, dial)


def test_settings_sentence_says_when_one_number_is_not_enough():
    lab = LabState(view="dial", d_k=1024, rho=0.5)
    text = claims.settings_sentence(lab.settings_moments, d_k=1024, sigma=1.0, rho=0.5, rule="sqrt")
    assert "m = 512 unscaled" in text and "16 with 1/√d_k" in text and "leaves out" in text
    lab = LabState(view="dial", d_k=4, rule="qknorm")
    text = claims.settings_sentence(lab.settings_moments, d_k=4, sigma=1.0, rho=0.0, rule="qknorm")
    assert "cosines, bounded by 10" in text and "spread 71% more or less" not in text
    assert "query to query" in text   # unscaled rows at d_k = 4 differ by about 35%


# ---- real models --------------------------------------------------------------------------------------
@pytest.mark.parametrize("preset", list(sc.real_models.PRESETS))
def test_model_sentences_against_a_direct_draw(preset):
    """The calculator's sentences for each preset: the closed-form std and the √d_model factor against a
    direct numpy draw of one head of that exact shape (LayerNorm'd tokens, Gaussian W_q, W_k)."""
    lab = LabState(view="models", preset=preset)
    m = lab.real_model
    p = m["preset"]
    text, bug = claims.model_summary(m), claims.bug_sentence(m)
    assert f"d_model {p.d_model}, {p.heads} heads, d_k {p.d_model // p.heads}" in text
    assert f"{math.sqrt(p.heads):.3g} = √heads" in bug and f"{math.sqrt(1 / p.heads):.3g}" in bug
    # a model with no factor (T5) is said to have none; the top-weight comparison is for a real 1/√d_k
    assert ("divides q·k by nothing" in bug) == (p.scale == "none")
    assert ("top weight goes from" in bug) == (p.scale != "none")
    if p.qk_norm != "none":
        return   # normalised heads are checked in tests/core/test_real_models.py
    rng = np.random.default_rng(0)
    d_k = p.d_model // p.heads
    x = rng.standard_normal((64, p.d_model))
    x = (x - x.mean(axis=1, keepdims=True)) / x.std(axis=1, keepdims=True)   # LayerNorm at gain 1
    z = []
    for _ in range(4):
        wq = rng.normal(0, p.q_std, (p.d_model, d_k))
        wk = rng.normal(0, p.k_std, (p.d_model, d_k))
        dots = (x @ wq) @ (x @ wk).T
        z.append(dots[~np.eye(64, dtype=bool)] * (1 / math.sqrt(d_k) if p.scale == "sqrt" else 1.0))
    std = float(np.sqrt(np.mean(np.concatenate(z) ** 2)))
    assert text.facts["std_model"] == pytest.approx(std, rel=0.15) and text.facts["n"] == m["n"], (text, std)
    assert float(text.shown["std_model"]) == pytest.approx(std, rel=0.15), (text, std)


def test_a_head_count_that_does_not_divide_d_model_is_a_message_not_an_error():
    lab = LabState(view="models", preset="custom", d_model=768, heads=7)
    assert lab.real_model == {"error": "7 heads do not divide d_model = 768: d_k = d_model / heads must be a whole "
                                       "number."}


# ---- as q and k align ---------------------------------------------------------------------------------
@pytest.mark.usefixtures("torch")
@pytest.mark.parametrize("d_k", [64, 256, 1024])
def test_alignment_sentence_against_torch(d_k):
    """Tokens attended at ρ = 0 and 1 and the ρ from which half the rows saturate, per rule, against torch
    softmax on this test's own draws (k = ρq + √(1 − ρ²)z)."""
    import torch
    lab = LabState(view="alignment", d_k=d_k)
    h = claims.alignment_summary(lab.alignment, d_k=d_k, n=16, sigma=1.0, rho=0.0, temperature=0.1, alpha=0.5)
    assert (h.facts["d_k"], h.facts["n"], h.facts["sigma"], h.facts["rho"]) == (d_k, 16, 1.0, 0.0), h
    index = {h.facts[f"rule_{i}"]: i for i in range(len(lab.alignment["effective_support"]))}
    assert list(index) == list(lab.alignment["effective_support"]), h
    rng = np.random.default_rng(2)
    for rule in ("sqrt", "linear"):
        tokens = {}
        for rho in (0.0, 1.0):
            t = []
            for _ in range(64):
                q, z = rng.normal(0, 1, (2, 16, d_k))
                k = rho * q + math.sqrt(1 - rho ** 2) * z
                w = torch.softmax(torch.tensor(q @ k.T * sc.logit_scale(d_k, rule, n=16)), dim=-1).numpy()
                t.append(np.exp(-(w * np.log(np.where(w > 0, w, 1))).sum(axis=-1)).mean())
            tokens[rho] = np.mean(t)
        i = index[rule]
        assert abs(float(h.shown[f"at0_{i}"]) - tokens[0.0]) <= 0.08 * tokens[0.0] + 0.1, (h, tokens)
        assert abs(float(h.shown[f"at1_{i}"]) - tokens[1.0]) <= 0.08 * tokens[1.0] + 0.1, (h, tokens)
        assert h.facts[f"now_{i}"] == h.facts[f"at0_{i}"], h      # now is ρ = 0
    # which rules the sentence says saturate half the rows before ρ = 1 (``half_i``): against the share of
    # rows whose top weight exceeds 0.99 at ρ = 1 in torch, for every rule the view draws (clear cases only)
    for rule in lab.alignment["effective_support"]:
        rows = []
        for _ in range(64):
            q = rng.normal(0, 1, (16, d_k))
            if sc.RULES[rule].normalizes:
                q = q / np.linalg.norm(q, axis=-1, keepdims=True)
            scale = sc.logit_scale(d_k, rule, alpha=0.5, temperature=0.1, n=16)
            rows.append(torch.softmax(torch.tensor(q @ q.T * scale), dim=-1).max(dim=-1).values.numpy() > 0.99)
        share, saturates = float(np.mean(rows)), f"half_{index[rule]}" in h.facts
        if share < 0.4:
            assert not saturates, (rule, share, h)
        elif share > 0.6:
            assert saturates and 0 <= h.facts[f"half_{index[rule]}"] <= 1, (rule, share, h)


# ---- outputs ------------------------------------------------------------------------------------------
@pytest.mark.usefixtures("torch")
@pytest.mark.parametrize("search", [dict(d_k=64), dict(d_k=1024), dict(d_k=16, rho=0.5, rule="linear"),
                                    dict(d_k=256, causal=True)])
def test_output_readouts_against_torch(search):
    """The playground's "output ~ one value" and "copied outputs" readouts: cos(o_i, nearest v_j) with torch."""
    import torch
    lab = LabState(view="playground", **search)
    q, k, v = sc.draw_qkv(lab.n, lab.d_k, sigma=lab.sigma, rho=lab.rho, seed=lab.seed)
    for side, rule in (("none", "none"), ("rule", lab.rule)):
        scale = sc.logit_scale(lab.d_k, rule, n=lab.n)
        z = torch.tensor(q) @ torch.tensor(k).T * scale
        if lab.causal:
            z = z.masked_fill(~torch.ones(lab.n, lab.n, dtype=torch.bool).tril(), float("-inf"))
        o = torch.softmax(z, dim=-1) @ torch.tensor(v)
        cos = torch.nn.functional.cosine_similarity(o[:, None, :], torch.tensor(v)[None, :, :], dim=-1).max(dim=1).values
        stats = lab.playground[side]["stats"]
        assert math.isclose(stats["out_cosine"], float(cos.mean()), rel_tol=1e-9)
        assert stats["out_copies"] == float((cos > claims.COPY).double().mean())


# the factors of the shipped rules without knobs, written out here; a rule registered later brings its own
WRITTEN_SCALES = {"none": lambda d: np.ones_like(d), "sqrt": lambda d: 1 / np.sqrt(d), "linear": lambda d: 1 / d}


@pytest.mark.parametrize("alpha, expected", [(0.5, "sqrt"), (1.0, "linear"), (0.0, "none"), (0.75, None), (0.25, None)])
def test_coinciding_rules_are_said_to_coincide(alpha, expected):
    """Saturation & gradients draws every rule: a d_k^-α that equals another rule at every d_k (checked
    here with numpy powers) is said to lie on it, and nothing is said otherwise."""
    d = np.array(D_K_OPTIONS, dtype=float)
    text = claims.coincident_rules(D_K_OPTIONS, sc.RULE_NAMES, alpha=alpha, temperature=0.1, n=16)
    plain = [r for r, rule in sc.RULES.items() if not (rule.knobs or rule.normalizes or rule.length or rule.cap)]
    same = [r for r in plain if np.allclose(d ** -alpha, WRITTEN_SCALES[r](d) if r in WRITTEN_SCALES
                                            else sc.RULES[r].scales(D_K_OPTIONS), rtol=1e-12)]
    assert (expected in same) if expected else not set(same) & set(WRITTEN_SCALES)
    alpha_label = claims.RULE_LABELS["alpha"]
    if not same:
        assert alpha_label not in text
    # a rule whose factor reads n (Llama 4's temperature) lies on another wherever its scales at this n are equal
    for r, rule in sc.RULES.items():
        if rule.length and not rule.normalizes and not rule.knobs:
            twins = [o for o in plain if np.allclose(rule.scales(D_K_OPTIONS, n=16), WRITTEN_SCALES[o](d) if o in
                                                     WRITTEN_SCALES else sc.RULES[o].scales(D_K_OPTIONS), rtol=1e-12)]
            assert (f"{claims.RULE_LABELS[r]} lies exactly on" in text) == bool(twins), (r, text)
    for r in same:
        label = claims.RULE_LABELS[r]
        assert f"{alpha_label} lies exactly on {label}" in text or f"{label} lies exactly on {alpha_label}" in text, (r, text)


def test_a_capped_rule_is_said_to_follow_its_uncapped_twin_up_to_the_spreads_the_cap_bends():
    """Gemma 2's cap has 1/√d_k's scale: the sentence names the spreads at which the cap lowers the logits' spread
    by 1% and 10%, each checked here by a Monte Carlo of c tanh(z / c) (10^6 draws; the first to 0.1 point)."""
    text = claims.coincident_rules(D_K_OPTIONS, sc.RULE_NAMES, alpha=0.75, temperature=0.1, n=16)
    cap = sc.RULES["softcap"].cap
    rng = np.random.default_rng(2)
    z = rng.standard_normal(1_000_000)
    for ratio, word in ((0.99, "1%"), (0.9, "10%")):
        s = claims.cap_shrink(cap, ratio)
        assert float((cap * np.tanh(s * z / cap)).std()) / s == pytest.approx(ratio, abs=1e-3)
        assert f"by {word} at" in text or f"by {word} at a spread of {claims.fmt(s)}" in text
        assert claims.fmt(s) in text
    assert f"{claims.RULE_LABELS['softcap']} is {claims.RULE_LABELS['sqrt']} with its logits capped at ±{cap:g}" in text


def test_web_claims_reexports_every_sentence_of_its_modules():
    """``web.claims`` names every public function and constant of its modules (callers import from it), so a
    sentence added to a module cannot be missing there."""
    import importlib
    import inspect
    import pkgutil
    for info in pkgutil.iter_modules(claims.__path__):
        module = importlib.import_module(f"web.claims.{info.name}")
        own = {name for name, value in vars(module).items() if not name.startswith("_") and (
            (inspect.isfunction(value) and value.__module__ == module.__name__) or name.isupper())}
        assert own <= set(claims.__all__) and all(hasattr(claims, n) for n in own), (info.name, own - set(claims.__all__))


@pytest.mark.parametrize("causal", [False, True])
def test_ssmax_under_a_causal_mask_says_which_n_it_takes(causal):
    """SSMax's ln n is the sequence length's on every row (sdpa_core.rule_attention); under a causal mask, where
    row i sees i + 1 keys, the verdict says so, and only there."""
    lab = LabState(view="playground", rule="ssmax", causal=causal, n=12)
    said = "takes the sequence length n = 12 for every row here, although under the causal mask" in lab.verdict
    assert said == causal, lab.verdict
    q, k, _ = sc.draw_qkv(12, lab.d_k, seed=lab.seed)
    logits = sc.rule_attention(q, k, k, "ssmax", causal=causal)[2]
    np.testing.assert_allclose(logits, 0.43 * math.log(12) / math.sqrt(lab.d_k) * q @ k.T, rtol=1e-12)


@pytest.mark.parametrize("d_k, rho", [(1, 0.5), (4, 0.9), (16, 0.5), (64, 0.5)])
def test_qk_norms_own_key_mean_is_qualified_below_d_k_32(d_k, rho):
    """The dial's m for QK-norm is ρ/τ, the large-d_k value: below d_k = 32 the sentence says the mean cosine of a
    query and its own key is at most ρ, which 20 000 numpy draws confirm."""
    lab = LabState(view="dial", rule="qknorm", d_k=d_k, rho=rho, temperature=0.1)
    text = claims.settings_sentence(lab.settings_moments, d_k=d_k, sigma=1.0, rho=rho, rule="qknorm")
    assert ("its large-d_k value" in text) == (d_k < 32), text
    rng = np.random.default_rng(0)
    q = rng.standard_normal((20000, d_k))
    k = rho * q + math.sqrt(1 - rho * rho) * rng.standard_normal((20000, d_k))
    cos = (q * k).sum(axis=1) / (np.linalg.norm(q, axis=1) * np.linalg.norm(k, axis=1))
    assert cos.mean() <= rho + 3 * cos.std() / math.sqrt(len(cos))


@pytest.mark.parametrize("rho, said", [(0.34, True), (0.35, False), (0.0, False), (1.0, False)])
def test_the_alignment_sentences_state_the_states_rho(rho, said):
    """A link's ρ off the sweep's 0.05 grid (0.34) is not written as the grid point's (0.35): the sentences say
    their numbers are the nearest point's, and name the reader's ρ."""
    lab = LabState(view="alignment", d_k=1024, rho=rho)
    path = lab.alignment
    for claim in (claims.alignment_headline(path, rho=rho, n=lab.n),
                  claims.alignment_summary(path, d_k=lab.d_k, n=lab.n, sigma=lab.sigma, rho=rho,
                                           temperature=lab.temperature, alpha=lab.alpha)):
        assert ("the sweep's point nearest your 0.34" in claim) == said, claim
        assert claim.facts["rho"] == pytest.approx(round(rho / 0.05) * 0.05)


def test_the_tuning_answer_states_todays_dials_as_their_formulas_give_them():
    """"Can the factor be tuned?" gives Gemma 2's cap, the spread at which it bends the logits by 1% (a Monte Carlo
    here), and Llama 4's temperature at 65,536 tokens (its modelling file's formula written here)."""
    from web.views.questions import QUESTIONS
    answer = next(q.answer for q in QUESTIONS if q.question == "Can the factor be tuned?")
    cap = sc.RULES["softcap"].cap
    s = float(claims.fmt(claims.cap_shrink(cap, 0.99)))
    z = np.random.default_rng(4).standard_normal(1_000_000)
    assert float((cap * np.tanh(s * z / cap)).std()) / s == pytest.approx(0.99, abs=2e-3)
    assert f"once it reaches {claims.fmt(s)}" in answer and f"±{cap:g}" in answer
    assert f"{1 + 0.1 * math.log(1 + math.floor(65536 / 8192)):.3g} at 65,536" in answer
