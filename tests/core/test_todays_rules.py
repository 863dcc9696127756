"""The scalings of 2024-2026 as rules of the one registry: Gemma 2's soft-cap and Llama 4's temperature, each
against an independent computation (the model's own formula written out here, torch, a Monte Carlo)."""
import math

import numpy as np
import pytest

import sdpa_core as sc
from sdpa_core import RULES
from sdpa_core.hf_config import read_config, temperature_at
from sdpa_core.hf_published import PUBLISHED
from sdpa_core.scaling import gauss_moments, llama4_temperature

CAP = RULES["softcap"].cap


def test_gemma2s_cap_is_its_published_configs():
    """The rule's c is the attn_logit_softcapping of Gemma 2's published configs, and its scale 1/sqrt(d_k) is
    1/sqrt(query_pre_attn_scalar) where that equals head_dim (Gemma 2 9B)."""
    for name in ("gemma-2-9b", "gemma-2-27b"):
        head = read_config(PUBLISHED[name].config)
        assert head.softcap == CAP
    nine = read_config(PUBLISHED["gemma-2-9b"].config)
    assert nine.factor == pytest.approx(sc.logit_scale(nine.d_k, "softcap"), rel=1e-15)


@pytest.mark.parametrize("n", [2, 16, 4096, 8191, 8192, 8193, 16384, 65536, 10**7])
def test_llama4s_temperature_is_the_configs_at_the_last_position(n):
    """The rule's factor at n keys is 1/sqrt(d_k) times hf_config's temperature of Llama 4 Scout's config at
    position n - 1 (the query that sees n keys), and that is the modelling file's formula written out here."""
    head = read_config(PUBLISHED["llama-4-scout"].config)
    floor_scale, attn_scale = head.temperature
    written = 1.0 + attn_scale * math.log(1.0 + math.floor(n / floor_scale))
    assert temperature_at(head, n - 1) == pytest.approx(written, rel=1e-15)
    assert llama4_temperature(n) == pytest.approx(written, rel=1e-15)
    assert sc.logit_scale(128, "llama4", n=n) == pytest.approx(written / math.sqrt(128), rel=1e-15)
    if n < floor_scale:
        assert sc.logit_scale(128, "llama4", n=n) == sc.logit_scale(128, "sqrt")


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_softcap_attention_is_gemma2s_eager_attention(causal, dtype):
    """Weights and output under the cap equal softmax(c tanh(scale q k^T / c) + mask) v written out here; the
    logits rule_attention returns are the capped ones, bounded by c."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.normal(0, 6, (7, 16)).astype(dtype) for _ in range(3))
    out, w, z = sc.rule_attention(q, k, v, "softcap", causal=causal)
    raw = (q.astype(np.float64) / 4) @ k.astype(np.float64).T
    capped = CAP * np.tanh(raw / CAP)
    if causal:
        capped = np.where(np.tri(7, dtype=bool), capped, -np.inf)
    p = np.exp(capped - capped.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(w, p, rtol=tol, atol=tol)
    np.testing.assert_allclose(out, p @ v.astype(np.float64), rtol=tol * 10, atol=tol * 10)
    assert np.abs(z).max() <= CAP and np.abs(raw).max() > CAP   # the draw reaches past the cap, the logits do not


def test_a_float16_logit_that_overflowed_is_capped_not_nan():
    """float16 logits past 65504 are inf; the cap makes them c, as Gemma 2's eager attention would from inf."""
    q = np.full((2, 4), 200.0, dtype=np.float16)
    out, w, z = sc.rule_attention(q, q, q, "softcap")
    assert np.isfinite(w).all() and np.abs(z.astype(np.float64)).max() == pytest.approx(CAP, rel=1e-3)


@pytest.mark.parametrize("d_k, sigma", [(16, 1.0), (64, 3.0), (256, 4.0), (1024, 8.0)])
def test_the_capped_spread_of_theory_is_what_a_sweep_measures(d_k, sigma):
    """At rho = 0 the logits of a row are close to Gaussian for d_k >= 16: Rule.theory_logit_std (the cap
    integrated over that Gaussian) is within 4% of the measured spread, from inside the cap (sigma 1) to deep
    in it (sigma 8: the raw std is 64 d_k^0 = 64, past c = 50)."""
    s = sc.sweep([d_k], ("softcap", "sqrt"), n=16, samples=256, sigma=sigma, seed=1)
    measured = float(s.mean["logit_std"]["softcap"][0])
    assert measured == pytest.approx(float(s.theory_logit_std["softcap"][0]), rel=0.04)
    assert measured <= CAP and measured <= float(s.mean["logit_std"]["sqrt"][0])


def test_gauss_moments_match_a_monte_carlo_and_their_limits():
    """gauss_moments against 10^6 draws at several means and spreads, and its infinite limits."""
    rng = np.random.default_rng(0)
    for mean, std in [(0.0, 1.0), (10.0, 30.0), (-80.0, 5.0), (0.0, 200.0)]:
        x = CAP * np.tanh(rng.normal(mean, std, 1_000_000) / CAP)
        m, v = gauss_moments(np.array([mean]), np.array([std]), CAP)
        assert m[0] == pytest.approx(x.mean(), abs=5e-3 * max(CAP, 1)) and math.sqrt(v[0]) == pytest.approx(x.std(), rel=5e-3)
    m, v = gauss_moments(np.array([np.inf, 0.0]), np.array([1.0, np.inf]), CAP)
    assert m[0] == CAP and v[0] == 0 and m[1] == pytest.approx(0, abs=1e-9) and math.sqrt(v[1]) == pytest.approx(CAP, rel=3e-3)


def test_the_capped_histogram_curve_is_a_density_and_fits_its_samples():
    """dot_histograms' curve for the cap is the normal pushed through c tanh(x / c): it integrates to 1 and
    its moments are those of the samples, inside the cap (sigma 1) and against it (sigma 8)."""
    for sigma in (1.0, 8.0):
        h = sc.dot_histograms(64, rule="softcap", sigma=sigma)
        x, pdf = h["scaled"]["x"], h["scaled"]["pdf"]
        assert np.trapezoid(pdf, x) == pytest.approx(1.0, abs=0.01)
        assert h["theory_std"][1] == pytest.approx(h["sample_std"][1], rel=0.03)
        assert max(abs(h["scaled"]["left"][0]), abs(h["scaled"]["right"][-1])) <= CAP


def test_the_cap_slows_training_where_logits_pass_it_and_is_1_sqrt_d_k_below():
    """Training under the cap: the same run as 1/sqrt(d_k) to 1e-3 while the logits stay far inside c (d_k 16), and the
    gradient through tanh is the cap's slope (central differences on one step's loss)."""
    cfg = sc.TrainConfig(d_k=16, rule="softcap", seed=4)
    twin = sc.TrainConfig(d_k=16, rule="sqrt", seed=4)
    a, b = sc.train(cfg, steps=20), sc.train(twin, steps=20)
    np.testing.assert_allclose(a.history["loss"], b.history["loss"], rtol=1e-3)
    from sdpa_core.model import init_params, loss_and_grads, make_batch
    big = sc.TrainConfig(d_k=16, rule="softcap", seed=4)
    params = {k: v * (3.0 if k in ("Wq", "Wk") else 1.0) for k, v in init_params(np.random.default_rng([4, 0]), big).items()}
    batch = make_batch(np.random.default_rng([4, 1]), big)
    _, grads, _ = loss_and_grads(params, batch, big)
    i, j, h = 2, 3, 1e-6
    for name in ("Wq", "Wk"):
        up, down = ({**params, name: params[name].copy()} for _ in range(2))
        up[name][i, j] += h
        down[name][i, j] -= h
        numeric = (loss_and_grads(up, batch, big, need_grads=False)[0]
                   - loss_and_grads(down, batch, big, need_grads=False)[0]) / (2 * h)
        assert grads[name][i, j] == pytest.approx(numeric, rel=1e-5, abs=1e-9)


def test_the_new_rules_are_not_plain_scales():
    """scale_for takes a rule by name only when a number describes it: the cap is a function, Llama 4's
    factor needs n."""
    for rule in ("softcap", "llama4"):
        with pytest.raises(ValueError, match="unknown scaling rule"):
            sc.scale_for(64, rule)
    with pytest.raises(ValueError, match="pass n"):
        sc.logit_scale(64, "llama4")
    with pytest.raises(ValueError, match="give it no cap"):
        sc.Rule("x", "x", lambda d, a, t: d, normalizes=True, cap=5.0)
