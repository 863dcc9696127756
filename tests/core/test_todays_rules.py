"""The scalings of 2024-2026 as rules of the one registry: Gemma 2's soft-cap and Llama 4's temperature, each
against an independent computation (the model's own formula written out here, torch, a Monte Carlo)."""
import math
import warnings

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


@pytest.mark.parametrize("d_k, sigma, rho", [(1, 8.0, 0.0), (1, 8.0, 1.0), (2, 4.0, 0.5), (4, 8.0, 0.5), (16, 1.0, 0.0),
                                             (64, 3.0, 0.5), (256, 4.0, 0.0), (1024, 8.0, 1.0)])
def test_the_capped_spread_of_theory_is_what_a_sweep_measures(d_k, sigma, rho):
    """Rule.theory_logit_std (the cap integrated over the logits' law given |q|, then over |q|'s chi-square) is
    within 3% of the spread a sweep measures, at d_k = 1 (where q.k is far from normal) as at 1024, from inside
    the cap (sigma 1) to deep in it (sigma 8: the raw std is 64, past c = 50), at rho 0 to 1."""
    s = sc.sweep([d_k], ("softcap", "sqrt"), n=16, samples=512, sigma=sigma, rho=rho, seed=1)
    measured = float(s.mean["logit_std"]["softcap"][0])
    assert measured == pytest.approx(float(s.theory_logit_std["softcap"][0]), rel=0.03)
    assert measured <= CAP and measured <= float(s.mean["logit_std"]["sqrt"][0]) * 1.0001


@pytest.mark.parametrize("d_k, rho", [(1, 0.0), (1, 1.0), (4, 0.5), (64, 0.9)])
def test_the_capped_pair_and_the_dials_moments_are_those_of_drawn_logits(d_k, rho):
    """The matched pair's mean and std (pair_theory) and the dial's s (an unmatched logit's std), m and diag_std
    under the cap, against 200,000 q, k drawn here at sigma = 8 (within 2%, or 0.3 on a scale of c = 50)."""
    rng = np.random.default_rng(11)
    q, z, other = (rng.normal(0, 8.0, (200_000, d_k)) for _ in range(3))
    k = rho * q + math.sqrt(1 - rho * rho) * z
    f = d_k ** -0.5
    matched = CAP * np.tanh(f * (q * k).sum(1) / CAP)
    unmatched = CAP * np.tanh(f * (q * other).sum(1) / CAP)
    mean, std = RULES["softcap"].pair_theory(d_k, sigma=8.0, rho=rho)
    dial = sc.settings_logit_moments(d_k, sigma=8.0, rho=rho, rule="softcap")
    for got, want in ((mean, matched.mean()), (std, matched.std()), (dial["m"], matched.mean()),
                      (dial["diag_std"], matched.std()), (dial["s"], unmatched.std())):
        assert got == pytest.approx(want, rel=0.02, abs=0.3)


def test_at_a_tiny_sigma_the_cap_changes_nothing_and_nothing_underflows():
    """sigma = 1e-100 and 1e-150: the capped rule's theory, sweep, pair and histogram equal 1/sqrt(d_k)'s (the cap
    moves logits of 1e-200 by 1e-600), instead of 0."""
    for sigma in (1e-100, 1e-150):
        np.testing.assert_allclose(RULES["softcap"].theory_logit_std([1, 64, 4096], sigma=sigma),
                                   RULES["sqrt"].theory_logit_std([1, 64, 4096], sigma=sigma), rtol=1e-12)
        assert RULES["softcap"].pair_theory(64, sigma=sigma, rho=0.5) == pytest.approx(
            RULES["sqrt"].pair_theory(64, sigma=sigma, rho=0.5), rel=1e-12)
        s = sc.sweep([16, 64], ("softcap", "sqrt"), samples=4, sigma=sigma)
        np.testing.assert_array_equal(s.mean["logit_std"]["softcap"], s.mean["logit_std"]["sqrt"])
        assert (s.mean["logit_std"]["softcap"] > 0).all()
        h, g = sc.dot_histograms(64, rule="softcap", sigma=sigma), sc.dot_histograms(64, rule="sqrt", sigma=sigma)
        assert h["sample_std"] == g["sample_std"] and h["theory_std"][1] == pytest.approx(g["theory_std"][1], rel=1e-12)


@pytest.mark.parametrize("softcap", [1e39, 1e-46, 3e38, 1e-300])
def test_a_cap_float32_cannot_hold_still_gives_weights(softcap):
    """The cap is applied in float64, so a cap past float32's range (or below its smallest number) neither turns
    the weights into NaN nor warns: a huge cap changes nothing, a tiny one makes every logit 0 or +-cap."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.normal(0, 1, (5, 8)).astype(np.float32) for _ in range(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, w = sc.attention(q, k, v, softcap=softcap)
        _, plain = sc.attention(q, k, v)
        dq = sc.attention_backward(q, k, v, np.ones((5, 8), np.float32), softcap=softcap)[0]
    assert np.isfinite(w).all() and np.isfinite(dq).all()
    if softcap > 1e30:
        np.testing.assert_allclose(w, plain, rtol=1e-6)


@pytest.mark.parametrize("d_k, sigma", [(4096, 8.0), (1024, 5.5), (1, 8.0)])
def test_a_histogram_at_the_cap_keeps_every_sample_and_a_curve(d_k, sigma):
    """At rho = 1 and a large d_k capped logits reach c in float64 (and at d_k = 1, sigma 8 many pile up near it):
    the histogram still holds all its samples (its bars' area is 1), its range stays within +-c, and the
    theory curve has points to draw."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        h = sc.dot_histograms(d_k, rule="softcap", sigma=sigma, rho=1.0)
    bars = h["scaled"]
    assert (bars["density"] * (bars["right"] - bars["left"])).sum() == pytest.approx(1.0)
    assert -CAP <= bars["left"][0] and bars["right"][-1] <= CAP and len(bars["x"]) >= 2
    # and its bars span at least 0.3 c, so a spike at the cap is a bar a figure of +-c draws (not 1e-8 wide)
    assert bars["right"][-1] - bars["left"][0] >= 0.3 * CAP * (1 - 1e-12)


def test_gauss_moments_match_a_monte_carlo_and_their_limits():
    """gauss_moments against 10^6 draws at several means and spreads, and its infinite limits."""
    rng = np.random.default_rng(0)
    for mean, std in [(0.0, 1.0), (10.0, 30.0), (-80.0, 5.0), (0.0, 200.0)]:
        x = CAP * np.tanh(rng.normal(mean, std, 1_000_000) / CAP)
        m, v = gauss_moments(np.array([mean]), np.array([std]), CAP)
        assert m[0] == pytest.approx(x.mean(), abs=5e-3 * max(CAP, 1)) and math.sqrt(v[0]) == pytest.approx(x.std(), rel=5e-3)
    # and against a quadrature 1000 times finer (here; a Monte Carlo cannot see the rare draws that set the spread
    # of a mean far past the cap), in every regime: inside the cap, against it, means far past it with wide spreads
    x = np.linspace(-14.0, 14.0, 2_800_001)
    pdf = np.exp(-0.5 * x * x)
    pdf /= pdf.sum()
    for mean, std in [(0.0, 1.0), (10.0, 30.0), (-80.0, 5.0), (0.0, 200.0), (3000.0, 2000.0), (1e4, 3e3),
                      (120.0, 90.0), (60.0, 100.0), (-49.0, 0.5), (0.0, 1e5)]:
        t = CAP * np.tanh((mean + std * x) / CAP)
        want_m = float((t * pdf).sum())
        want_v = float((t * t * pdf).sum()) - want_m ** 2
        m, v = gauss_moments(np.array([mean]), np.array([std]), CAP)
        assert abs(m[0] - want_m) < 1e-4 * CAP and abs(v[0] - want_v) < 1e-5 * CAP * CAP, (mean, std, m, v, want_m, want_v)
    m, v = gauss_moments(np.array([np.inf, 0.0]), np.array([1.0, np.inf]), CAP)
    assert m[0] == pytest.approx(CAP, rel=1e-12) and v[0] == pytest.approx(0, abs=1e-9) and m[1] == pytest.approx(0, abs=1e-9) and math.sqrt(v[1]) == pytest.approx(CAP, rel=3e-3)


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
