"""The logit dial (sdpa_core.dial) against plain numpy, torch, and real attention under the sidebar's settings.

Tolerances: Monte-Carlo comparisons use 4 combined standard errors (each side's std across independent
draws over sqrt(draws)): a correct implementation fails such a check about once in 16,000 runs, while the
effects the tests guard against (a wrong factor, a missing row-spread or diagonal term) are tens of
standard errors. Where an approximation has a known size (row spread at small d_k, the diagonal's std), a
test shows the gap is really there instead of widening the tolerance.
"""
import math

import numpy as np
import pytest

import sdpa_core as sc
from sdpa_core.dial import STARVED_RATIO

Z = 4.0  # standard errors


def dial_entropy(s, n, seeds, **kw):
    """Mean entropy over independent dial matrices, and its standard error."""
    v = np.array([sc.dial_attention(s, n, seed=i, **kw)["mean_entropy"] for i in range(seeds)])
    return v.mean(), v.std(ddof=1) / math.sqrt(seeds)


def real_entropy(d_k, rule, sigma, rho=0.0, n=16, samples=4000, **kw):
    """Mean entropy of real attention under those settings (sdpa_core.sweep's exact sampler), and its SE."""
    sw = sc.sweep([d_k], (rule,), n=n, samples=samples, sigma=sigma, rho=rho, seed=1, **kw)
    return float(sw.mean["entropy"][rule][0]), float(sw.spread["entropy"][rule][0]) / math.sqrt(samples)


# ---- two_token_curve ------------------------------------------------------------------------------------
def test_two_token_curve_is_the_two_key_softmax_and_its_slope(torch):
    x = np.linspace(-30, 30, 241)
    p, slope = sc.two_token_curve(x)
    w = torch.softmax(torch.tensor(np.stack([x, np.zeros_like(x)], -1)), -1)[:, 0]
    np.testing.assert_allclose(p, w.numpy(), rtol=1e-12, atol=0)
    xt = torch.tensor(x, requires_grad=True)
    torch.sigmoid(xt).sum().backward()
    np.testing.assert_allclose(slope, xt.grad.numpy(), rtol=1e-10, atol=1e-15)  # torch's p (1 - p) cancels
    np.testing.assert_allclose(slope, 1 / (4 * np.cosh(x / 2) ** 2), rtol=1e-13, atol=0)  # no cancellation


def test_two_token_curve_far_out_is_finite_and_exact():
    p, slope = sc.two_token_curve(np.array([-800.0, -40.0, 40.0, 800.0]))
    assert p.tolist()[0] == 0.0 and p.tolist()[-1] == 1.0
    np.testing.assert_allclose(slope[1:3], math.exp(-40), rtol=1e-12)  # not 0: 1 - p would cancel
    assert np.isfinite(slope).all() and slope.max() <= 0.25


# ---- dial_attention --------------------------------------------------------------------------------------
def plain_dial(s, n, seed, causal=False, offset=0.0, diag_std=None):
    """The dial written differently: explicit loops over rows, log-sum-exp entropy, Jacobian matrices."""
    g = np.random.default_rng(seed).standard_normal((n, n))
    u = np.random.default_rng([seed, 1]).standard_normal((n, n))
    z = s * g
    z[np.diag_indices(n)] = offset + (s if diag_std is None else diag_std) * np.diag(g)
    ent, top, norms = [], [], []
    for i in range(n):
        row = z[i, : i + 1] if causal else z[i]
        lse = row.max() + math.log(np.exp(row - row.max()).sum())
        p = np.exp(row - lse)
        ent.append(-(p * (row - lse)).sum())
        top.append(p.max())
        ui = u[i, : len(row)]  # (J u)_j = p_j sum_l p_l (u_j - u_l): no term cancels when p_j ~ 1
        norms.append(np.linalg.norm(p * (p[None, :] * (ui[:, None] - ui[None, :])).sum(axis=1)))
    return np.array(ent), np.array(top), np.array(norms)


@pytest.mark.parametrize("s,causal,offset,diag_std", [(0.7, False, 0.0, None), (3.0, True, 0.0, None),
                                                      (2.0, False, 4.0, 1.3), (25.0, True, -2.0, None)])
def test_dial_rows_match_a_plain_computation(s, causal, offset, diag_std):
    r = sc.dial_attention(s, 12, seed=5, causal=causal, offset=offset, diagonal_std=diag_std)
    ent, top, norms = plain_dial(s, 12, 5, causal, offset, diag_std)
    np.testing.assert_allclose(r["entropy"], ent, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(r["tokens"], np.exp(ent), rtol=1e-9)
    np.testing.assert_allclose(r["top"], top, rtol=1e-12)
    np.testing.assert_allclose(r["grad_norms"], norms, rtol=1e-8, atol=1e-300)
    np.testing.assert_allclose(r["weights"].sum(1), 1, rtol=1e-12)
    live = slice(1, None) if causal else slice(None)
    assert r["saturated"] == pytest.approx((top[live] > 0.99).mean())   # causal row 0 has no choice
    _, _, ref = plain_dial(1.0, 12, 5, causal)
    assert r["grad_reference"] == pytest.approx(np.median(ref[live]), rel=1e-9)
    assert r["starved"] == pytest.approx((norms[live] < STARVED_RATIO * np.median(ref[live])).mean())
    zs = np.sort(np.where(np.isfinite(r["logits"]), r["logits"], -np.inf), axis=1)
    assert r["median_gap"] == pytest.approx(np.median((zs[:, -1] - zs[:, -2])[live]))
    assert r["two_token_p"] == pytest.approx(1 / (1 + math.exp(-r["median_gap"])))


def test_dial_uses_one_matrix_for_every_s():
    a, b = sc.dial_attention(1.0, 16, seed=3), sc.dial_attention(2.5, 16, seed=3)
    np.testing.assert_allclose(b["logits"], 2.5 * a["logits"], rtol=1e-15)
    assert a["grad_reference"] == b["grad_reference"]


def test_dial_limits_and_monotone_sharpening():
    flat = sc.dial_attention(0.0, 32)
    assert flat["mean_tokens"] == pytest.approx(32) and flat["saturated"] == 0.0
    sharp = sc.dial_attention(2000.0, 32)  # at s = 60, rows whose top two G entries are within 0.08 are not saturated yet
    assert sharp["saturated"] == 1.0 and sharp["starved"] > 0.9
    tokens = [sc.dial_attention(s, 32, seed=2)["mean_tokens"] for s in (0.1, 0.5, 1, 2, 4, 8)]
    assert all(a > b for a, b in zip(tokens, tokens[1:]))


# ---- settings_logit_moments against the logits actually computed ----------------------------------------
SETTINGS = [  # (d_k, sigma, rho, rule, knobs), drawn once from a seeded generator and kept readable
    (8, 1.7, 0.0, "none", {}), (96, 0.6, 0.4, "sqrt", {}), (33, 2.5, 0.9, "linear", {}),
    (200, 1.2, 0.25, "alpha", {"alpha": 0.3}), (5, 1.0, 0.6, "qknorm", {"temperature": 0.5}),
    (512, 0.4, 0.0, "qknorm", {"temperature": 0.05}), (3, 3.0, 0.1, "sqrt", {}),
]


@pytest.mark.parametrize("d_k,sigma,rho,rule,knobs", SETTINGS)
def test_reported_s_is_the_std_of_the_real_unmatched_logits(d_k, sigma, rho, rule, knobs):
    """(a) s against the off-diagonal logits of draw_qkv + rule_attention; m against the diagonal."""
    n, draws = 12, 400
    off = ~np.eye(n, dtype=bool)
    sq, diag = [], []
    for seed in range(draws):
        q, k, v = sc.draw_qkv(n, d_k, sigma=sigma, rho=rho, seed=seed)
        z = sc.rule_attention(q, k, v, rule, **knobs)[2]
        sq.append((z[off] ** 2).mean())  # the mean is 0 exactly: second moment = variance
        diag.append(np.diag(z).mean())
    sq, diag = np.array(sq), np.array(diag)
    r = sc.settings_logit_moments(d_k, sigma=sigma, rho=rho, rule=rule, n=n, **knobs)
    assert abs(sq.mean() - r["s"] ** 2) < Z * sq.std(ddof=1) / math.sqrt(draws)
    if not sc.RULES[rule].normalizes:  # the cosine's mean rho is its large-d_k limit only
        assert abs(diag.mean() - r["m"]) < Z * diag.std(ddof=1) / math.sqrt(draws)


def test_cosine_mean_is_only_a_large_d_k_limit():
    """QK-norm's m = rho / temperature: close at d_k = 512, off at d_k = 4 (and the docstring says so)."""
    for d_k, close in ((512, True), (4, False)):
        d = np.array([sc.rule_attention(*sc.draw_qkv(8, d_k, rho=0.6, seed=s), "qknorm")[2].diagonal()
                      for s in range(400)])
        m = sc.settings_logit_moments(d_k, rho=0.6, rule="qknorm")["m"]
        assert (abs(d.mean() - m) < Z * d.std() / math.sqrt(d.size)) == close


# ---- (b) settings with equal s give the dial's attention ------------------------------------------------
S2_SETTINGS = [(1024, "sqrt", math.sqrt(2), {}), (256, "none", math.sqrt(2 / 16), {}),
               (4096, "linear", math.sqrt(128), {}), (256, "qknorm", 1.0, {"temperature": 1 / 32})]


def test_settings_with_equal_s_give_the_same_attention_as_the_dial():
    """At rho = 0, four settings with s = 2 (d_k >= 256, where the rows' own spreads differ by <= 4.4 %)
    have the same mean entropy as each other and as the dial at s = 2, within 4 standard errors."""
    dial, dial_se = dial_entropy(2.0, 16, 2000)
    for d_k, rule, sigma, knobs in S2_SETTINGS:
        assert sc.settings_logit_moments(d_k, sigma=sigma, rule=rule, **knobs)["s"] == pytest.approx(2.0)
        real, se = real_entropy(d_k, rule, sigma, **knobs)
        assert abs(real - dial) < Z * math.hypot(se, dial_se), (d_k, rule, real, dial)


def test_small_d_k_departs_from_the_dial_by_its_row_spread():
    """At d_k = 4 the rows' spreads differ (row_spread 0.36): real attention is flatter than the dial at
    the same s, by far more than noise, and drawing each dial row at s * chi_4 / 2 accounts for it."""
    s, n = 2.0, 16
    real, se = real_entropy(4, "sqrt", math.sqrt(2))
    dial, dial_se = dial_entropy(s, n, 2000)
    assert real - dial > 10 * math.hypot(se, dial_se)
    rng = np.random.default_rng(9)
    scale = np.sqrt(rng.chisquare(4, size=(4000, n, 1)) / 4)  # |q_i| / (sigma sqrt(d_k)) per row
    z = s * scale * rng.standard_normal((4000, n, n))
    p = np.exp(z - z.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    ent = -(p * np.log(np.where(p > 0, p, 1))).sum(-1).mean(-1)
    assert abs(ent.mean() - real) < Z * math.hypot(ent.std() / math.sqrt(len(ent)), se)


@pytest.mark.parametrize("d_k", [1, 2, 3, 4, 16, 64, 1024, 4096])
def test_row_spread_is_the_chi_lengths_relative_spread(d_k):
    """row_spread is exact at every d_k (the relative std of |q|, a chi variable), not only its large-d_k
    limit sqrt(1 / (2 d_k)): 75.6% at d_k = 1, where the limit says 71%. Checked against 200 000 drawn lengths."""
    got = sc.settings_logit_moments(d_k, rule="none")["row_spread"]
    rng = np.random.default_rng(d_k)
    lengths = np.sqrt(rng.chisquare(d_k, size=200_000))
    measured = lengths.std() / lengths.mean()
    se = measured / math.sqrt(2 * len(lengths)) * 4          # a generous bound on the ratio's standard error
    assert abs(got - measured) < max(Z * se, 1e-3 * measured), (got, measured)
    if d_k == 1:
        assert got == pytest.approx(math.sqrt(math.pi / 2 - 1), rel=1e-12)    # sqrt(1 - 2/pi) / sqrt(2/pi)
    assert abs(got / math.sqrt(1 / (2 * d_k)) - 1) < 0.15 / d_k       # the limit is off by about 1/(8 d_k)


RHO_SETTINGS = [(256, "sqrt", 1.0, 0.2, {}), (256, "linear", 4.0, 0.3, {}), (256, "qknorm", 1.0, 0.3, {}),
                (1024, "sqrt", 0.7, 0.1, {})]


@pytest.mark.parametrize("d_k,rule,sigma,rho,knobs", RHO_SETTINGS)
def test_rho_settings_match_the_dial_with_their_offset(d_k, rule, sigma, rho, knobs):
    r = sc.settings_logit_moments(d_k, sigma=sigma, rho=rho, rule=rule, **knobs)
    real, se = real_entropy(d_k, rule, sigma, rho, **knobs)
    dial, dial_se = dial_entropy(r["s"], 16, 2000, offset=r["m"], diagonal_std=r["diag_std"])
    assert abs(real - dial) < Z * math.hypot(se, dial_se), (real, dial)


def test_the_diagonal_std_matters_when_alignment_is_strong():
    """QK-norm at rho = 0.7: the matched cosine's spread is (1 - rho^2) / sqrt(d_k), half of s; a dial that
    draws it at s is off by many standard errors, one given diag_std is not."""
    r = sc.settings_logit_moments(256, rho=0.7, rule="qknorm")
    real, se = real_entropy(256, "qknorm", 1.0, 0.7)
    right, right_se = dial_entropy(r["s"], 16, 2000, offset=r["m"], diagonal_std=r["diag_std"])
    wrong, wrong_se = dial_entropy(r["s"], 16, 2000, offset=r["m"])
    assert abs(real - right) < Z * math.hypot(se, right_se)
    assert abs(real - wrong) > 10 * math.hypot(se, wrong_se)


@pytest.mark.parametrize("sigma, bites", [(1.0, False), (2.0, False), (4.0, True), (8.0, True)])
def test_a_soft_caps_moments_and_where_the_dial_overstates_it(sigma, bites):
    """Gemma 2's cap at d_k = 64: s is the capped logits' std; where the settings reach the cap (``gaussian``
    False) the dial at that s is more peaked (lower entropy) than real capped attention by many standard
    errors (more than 4), and where they do not it agrees within Monte-Carlo error."""
    r = sc.settings_logit_moments(64, sigma=sigma, rule="softcap")
    assert r["gaussian"] is (not bites)
    z = 50 * np.tanh(np.random.default_rng(3).normal(0, sigma * sigma, 400_000) / 50)   # q.k / 8 at d_k = 64
    assert r["s"] == pytest.approx(z.std(), rel=0.01)
    real, se = real_entropy(64, "softcap", sigma, samples=2000)
    dial, dial_se = dial_entropy(r["s"], 16, 400)
    gap = (real - dial) / math.hypot(se, dial_se)
    assert gap > Z if bites else abs(real - dial) < 0.02 + Z * math.hypot(se, dial_se), (real, dial, gap)


def test_moments_closed_forms():
    r = sc.settings_logit_moments(100, sigma=2.0, rho=0.5, rule="sqrt", n=10)
    assert r["s"] == pytest.approx(4 * 10 / 10) and r["m"] == pytest.approx(0.1 * 0.5 * 100 * 4)
    assert r["diag_std"] == pytest.approx(r["s"] * math.sqrt(1.25))
    assert r["pooled_std"] == pytest.approx(sc.RULES["sqrt"].theory_logit_std(100, sigma=2.0, rho=0.5, n=10)[0])
    assert sc.settings_logit_moments(8, rule="qknorm")["gaussian"] is False
    assert sc.settings_logit_moments(64, rule="qknorm")["row_spread"] == 0.0


# ---- arguments -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("call,name", [
    (lambda: sc.two_token_curve("a"), "x"), (lambda: sc.two_token_curve([np.nan]), "x"),
    (lambda: sc.two_token_curve([True]), "x"), (lambda: sc.two_token_curve([]), "x"),
    (lambda: sc.dial_attention(-1.0), "s"), (lambda: sc.dial_attention(float("nan")), "s"),
    (lambda: sc.dial_attention(1.0, 1), "n"), (lambda: sc.dial_attention(1.0, 2.5), "n"),
    (lambda: sc.dial_attention(1.0, seed=-1), "seed"), (lambda: sc.dial_attention(1.0, causal=1), "causal"),
    (lambda: sc.dial_attention(1.0, offset=float("inf")), "offset"),
    (lambda: sc.dial_attention(1.0, diagonal_std=-0.5), "diagonal_std"),
    (lambda: sc.settings_logit_moments(0), "d_k"), (lambda: sc.settings_logit_moments(8, sigma=0), "sigma"),
    (lambda: sc.settings_logit_moments(8, rho=1.5), "rho"), (lambda: sc.settings_logit_moments(8, rule="x"), "rule"),
    (lambda: sc.settings_logit_moments(8, alpha=9), "alpha"),
    (lambda: sc.settings_logit_moments(8, temperature=0), "temperature"),
    (lambda: sc.settings_logit_moments(8, n=0), "n"),
])
def test_bad_arguments_are_refused_by_name(call, name):
    with pytest.raises((TypeError, ValueError), match=rf"\b{name}\b"):
        call()
