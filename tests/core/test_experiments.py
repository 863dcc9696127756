"""Scaling rules, the exact Gram sampler, the sweeps and their theory curves."""
import math

import numpy as np
import pytest

from capped_oracle import capped_logit_moments
from sdpa_core import (FLOAT16_MAX, POW2_D_K, RULE_NAMES, RULES, dot_histograms, dot_samples, draw_qkv, logit_scale,
                       precision_sweep, row_stats, rule_attention, rule_gradients, rule_readouts, sample_gram, scale_for,
                       sweep, theory_logit_std)


def test_scale_for_rules():
    assert scale_for(64, "none") == 1 and scale_for(64, "sqrt") == 0.125 and scale_for(64, "linear") == 1 / 64
    assert scale_for(16, 0.25) == 0.5 and scale_for(16, 0.5) == scale_for(16, "sqrt")
    with pytest.raises(ValueError, match="unknown scaling rule 'cube'.*'none', 'sqrt', 'linear'"):
        scale_for(16, "cube")
    with pytest.raises(ValueError, match="d_k must be >= 1"):
        scale_for(0)
    with pytest.raises(ValueError, match="d_k must be >= 1"):
        scale_for(-4)
    with pytest.raises(TypeError, match="d_k must be an integer"):
        scale_for(2.5)
    assert logit_scale(64, "qknorm", temperature=0.25) == 4


@pytest.mark.parametrize("d_k", [3, 64, 1000])
def test_bartlett_gram_has_the_distribution_of_direct_dot_products(d_k):
    """The O(p^2) Wishart draw matches Gram matrices of explicit vectors: mean d_k on the diagonal,
    0 off it, variances 2 d_k and d_k, within Monte-Carlo error."""
    rng = np.random.default_rng(0)
    g = sample_gram(d_k, 4, 20000, rng)
    m = 20000
    np.testing.assert_allclose(g[:, 0, 0].mean(), d_k, rtol=4 * math.sqrt(2 / (d_k * m)))
    assert abs(g[:, 1, 0].mean()) < 4 * math.sqrt(d_k / m)
    np.testing.assert_allclose(g[:, 2, 2].var(), 2 * d_k, rtol=0.06)
    np.testing.assert_allclose(g[:, 3, 1].var(), d_k, rtol=0.06)
    np.testing.assert_allclose(g, g.swapaxes(-1, -2))


def test_dot_product_variance_is_d_k_sigma4():
    """Var(q.k) = d_k sigma_q^2 sigma_k^2 for independent entries, at d_k up to 4096."""
    for d_k in (1, 64, 4096):
        x = dot_samples(d_k, 40000, sigma=1.5, seed=d_k)
        np.testing.assert_allclose(x.var(), d_k * 1.5 ** 4, rtol=0.04)
        assert abs(x.mean()) < 4 * math.sqrt(d_k) * 1.5 ** 2 / 200


def test_aligned_vectors_grow_like_d_k_independent_like_sqrt():
    """Log-log slope of the logit std: 1/2 for rho = 0, close to 1 for rho = 1 (Monte-Carlo and theory)."""
    d = np.array([64, 4096])
    for rho, slope in ((0.0, 0.5), (1.0, 1.0)):
        s = sweep(d, ("none",), n=16, samples=64, rho=rho, seed=1)
        mc = np.ptp(np.log(s.mean["logit_std"]["none"])) / np.ptp(np.log(d))
        th = np.ptp(np.log(s.theory_logit_std["none"])) / np.ptp(np.log(d))
        assert abs(mc - slope) < 0.08 and abs(th - slope) < 0.08


def test_sweep_monte_carlo_agrees_with_theory_and_the_paper():
    s = sweep(POW2_D_K, RULE_NAMES, n=16, samples=48, seed=3)
    for rule in ("none", "sqrt", "linear"):
        np.testing.assert_allclose(s.mean["logit_std"][rule], s.theory_logit_std[rule], rtol=0.12)
    ent, sat = s.mean["entropy"], s.mean["saturated"]
    # unscaled: saturates (entropy to ~0, max weight to ~1, most rows above 0.99) as d_k grows
    assert ent["none"][-1] < 0.15 and s.mean["max_weight"]["none"][-1] > 0.9
    assert sat["none"][-1] > 0.6 and sat["sqrt"][-1] < 0.05
    # 1/sqrt(d_k): the same statistics at d_k = 4 and 4096
    np.testing.assert_allclose(ent["sqrt"][2], ent["sqrt"][-1], rtol=0.05)
    # 1/d_k: logits shrink, attention tends to uniform (entropy -> log n)
    assert ent["linear"][-1] > 0.98 * math.log(16)
    for m in s.mean:
        for r in s.rules:
            assert np.isfinite(s.mean[m][r]).all() and (s.spread[m][r] >= 0).all()
    csv = s.to_csv().splitlines()
    assert csv[0].startswith("rule,d_k,logit_std_mean") and len(csv) == 1 + len(RULE_NAMES) * len(POW2_D_K)


def test_theory_logit_std_closed_form():
    assert theory_logit_std(64) == pytest.approx(8.0)
    assert theory_logit_std(64, scale=1 / 8) == pytest.approx(1.0)
    assert theory_logit_std(64, sigma=2.0, scale=1 / 8) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="rho must be <= 1"):
        theory_logit_std(64, rho=1.5)


def test_playground_helpers():
    q, k, v = draw_qkv(8, 64, seed=4)
    _, w_none, z_none = rule_attention(q, k, v, "none")
    _, w_sqrt, z_sqrt = rule_attention(q, k, v, "sqrt", causal=True)
    np.testing.assert_allclose(z_sqrt, z_none / 8)
    assert (np.triu(w_sqrt, 1) == 0).all()
    a, b = row_stats(w_none, z_none), row_stats(w_sqrt, z_sqrt)
    assert a["max_weight"] > b["max_weight"] and a["entropy"] < b["entropy"]
    q16, k16, v16 = draw_qkv(4, 4096, sigma=4.0, rho=1.0, dtype=np.float16)
    _, w, z = rule_attention(q16, k16, v16, "none")
    assert math.isnan(row_stats(w, z)["entropy"])  # overflow shows as NaN, never as a wrong number
    with pytest.raises(ValueError, match="rho must be <= 1"):
        draw_qkv(4, 4, rho=2.0)
    with pytest.raises(ValueError, match="unknown scaling rule"):
        rule_attention(q, k, v, "sqrtt")


def test_precision_sweep_shows_where_float16_breaks():
    """Aligned q = k with sigma 4 at d_k = 4096: q.k = 65536 > 65504 overflows in float16 when the
    scale is applied after the matmul, not before; the naive softmax breaks long before that."""
    p = precision_sweep([16, 4096], sigma=4.0, rho=1.0)
    assert p.max_abs_logit["float16"]["after"][-1] == np.inf and FLOAT16_MAX == 65504
    assert p.max_abs_logit["float16"]["before"][-1] < FLOAT16_MAX
    assert p.nonfinite_rows["float16"]["before"]["stable"][-1] == 0
    assert p.nonfinite_rows["float16"]["after"]["stable"][-1] > 0
    assert p.nonfinite_rows["float16"]["none"]["naive"][0] > 0       # exp(x) > 65504 from x > 11.1
    assert p.nonfinite_rows["float64"]["before"]["stable"].max() == 0


@pytest.mark.parametrize("kwargs,match", [
    (dict(n=1), "n must be >= 2"), (dict(samples=10**9), "samples must be <="),
    (dict(sigma=-1.0), "sigma must be >"), (dict(rho=float("nan")), "rho must be finite"),
    (dict(rules=("none", "bogus")), "unknown scaling rule"), (dict(d_ks=[0]), "d_k must be >= 1"),
    (dict(n=512, samples=100_000), "sweep too large"),
])
def test_sweep_validates_its_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sweep(**kwargs)


def test_vectorised_rule_scales_and_theory_agree_with_the_public_functions():
    """Each Rule's per-d_k arrays (what the sweep uses) are the same numbers as logit_scale and theory_logit_std."""
    d = POW2_D_K
    s = sweep(d, RULE_NAMES, n=8, samples=4, sigma=1.7, rho=0.3, alpha=0.7, temperature=0.2)
    for rule in RULE_NAMES:
        scales = [logit_scale(int(k), rule, alpha=0.7, temperature=0.2, n=8) for k in d]
        np.testing.assert_allclose(RULES[rule].scales(d, alpha=0.7, temperature=0.2, n=8), scales, rtol=1e-14)
        theory = [theory_logit_std(int(k), sigma=1.7, rho=0.3, n=8, scale=sc, qknorm=RULES[rule].normalizes)
                  for k, sc in zip(d, scales)]
        if RULES[rule].cap is not None:  # soft-capped: integrated here another way (tests/core/capped_oracle.py)
            theory = [capped_logit_moments(int(k), sc * 1.7 ** 2, 0.3, RULES[rule].cap, 8)["pooled_std"]
                      for k, sc in zip(d, scales)]
            np.testing.assert_allclose(s.theory_logit_std[rule], theory, rtol=1e-4)
            continue
        np.testing.assert_allclose(s.theory_logit_std[rule], theory, rtol=1e-12)
        np.testing.assert_allclose(RULES[rule].theory_logit_std(d, sigma=1.7, rho=0.3, n=8, alpha=0.7, temperature=0.2),
                                   theory, rtol=1e-12)


@pytest.mark.parametrize("rho", [0.0, 0.5, 0.9])
def test_qknorm_theory_matches_monte_carlo_at_every_rho(rho):
    """The closed-form pooled std of QK-norm's logits (cosines: variance 1/d_k off the diagonal,
    (1 - rho^2)^2 / d_k for the matched pairs) agrees with the Monte-Carlo sweep from d_k = 64 up."""
    s = sweep([64, 512, 4096], ("qknorm",), n=16, samples=128, rho=rho, temperature=0.5, seed=6)
    np.testing.assert_allclose(s.mean["logit_std"]["qknorm"], s.theory_logit_std["qknorm"], rtol=0.03)


@pytest.mark.parametrize("spread", [0.3, 3.0, 30.0])
def test_row_stats_and_the_sweep_statistics_agree_with_the_stats_functions(spread):
    """On the same logits (gentle to saturated), row_stats and the sweep's vectorised statistics give
    what sdpa_core.stats gives row by row (entropy, max_weight, effective_support, saturated,
    jacobian_norm), averaged over the rows: row_stats to float64 round-off, the sweep to float32's."""
    from sdpa_core import effective_support, entropy, jacobian_norm, max_weight, saturated, softmax
    from sdpa_core.sweeps import _matrix_stats
    z = np.random.default_rng(7).standard_normal((5, 12, 12)) * spread          # 5 matrices (queries, keys)
    p = softmax(z)
    want = {"entropy": entropy(p), "max_weight": max_weight(p), "effective_support": effective_support(p),
            "saturated": saturated(p), "jacobian_norm": jacobian_norm(p)}
    want = {m: v.astype(float).mean(axis=-1) for m, v in want.items()}            # metric -> (5,)
    for i in range(len(z)):
        got = row_stats(p[i], z[i])
        for m, v in want.items():
            assert got[m] == pytest.approx(v[i], rel=1e-12, abs=1e-300), m
        assert got["logit_std"] == pytest.approx(z[i].std(), rel=1e-12)
    swept = _matrix_stats(np.ascontiguousarray(np.moveaxis(z, -1, 0)).astype(np.float32))   # keys first
    for m, v in want.items():
        np.testing.assert_allclose(swept[m], v, rtol=2e-5, atol=1e-6, err_msg=m)


def test_rule_readouts_are_the_attention_the_gradients_and_the_visible_logits():
    """rule_readouts returns rule_attention's weights, the row norms of rule_gradients' dq, and under a
    causal mask the std of the logits the softmax sees (j <= i) only."""
    q, k, v = draw_qkv(6, 32, rho=0.3, seed=2)
    g = np.random.default_rng(3).standard_normal((6, 32))
    r = rule_readouts(q, k, v, g, "linear", causal=True)
    _, w, z = rule_attention(q, k, v, "linear", causal=True)
    np.testing.assert_array_equal(r["weights"], w)
    np.testing.assert_allclose(r["dq_norms"], np.linalg.norm(rule_gradients(q, k, v, g, "linear", causal=True)[0],
                                                             axis=-1), rtol=1e-14)
    assert r["stats"]["logit_std"] == pytest.approx(z[np.tri(6, dtype=bool)].std(), rel=1e-12)
    assert r["scale"] == 1 / 32 and r["nan_rows"] == 0 and not r["overflow"] and 0 < r["dq_floor"] < 1e-12


@pytest.mark.parametrize("rule, rho", [("none", 0.0), ("sqrt", 0.5), ("qknorm", 0.5), ("alpha", 0.9)])
def test_dot_histograms_samples_follow_the_pair_theory(rule, rho):
    """The histogram's 20 000 exact samples have the mean and std Rule.pair_theory gives (QK-norm: the
    cosine's large-d_k limit), and each histogram integrates to 1."""
    h = dot_histograms(1024, sigma=1.5, rho=rho, seed=4, rule=rule, alpha=0.3, temperature=0.2)
    assert h["theory_mean"][1] == pytest.approx(RULES[rule].pair_theory(1024, sigma=1.5, rho=rho, alpha=0.3,
                                                                        temperature=0.2)[0])
    for i, side in enumerate(("unscaled", "scaled")):
        mean, std = h["theory_mean"][i], h["theory_std"][i]
        assert h["sample_mean"][i] == pytest.approx(mean, abs=5 * std / math.sqrt(20000))
        assert h["sample_std"][i] == pytest.approx(std, rel=0.03)
        hist = h[side]
        assert float((hist["density"] * (hist["right"] - hist["left"])).sum()) == pytest.approx(1.0)


def test_saturated_share_leaves_out_rows_with_one_visible_key():
    """Causal row 0 sees one key, so its weight is 1 at any logits: it is not counted as saturated (else a
    flat softmax over n = 2 would read 50% saturated); with no row that has a choice the share is NaN."""
    w = np.array([[1.0, 0.0], [0.5, 0.5]])
    z = np.zeros((2, 2))
    causal = np.tri(2, dtype=bool)
    stats = row_stats(w, z, causal)
    assert stats["saturated"] == 0.0 and stats["max_weight"] == 0.75   # the other averages keep row 0
    assert row_stats(np.array([[0.995, 0.005], [0.5, 0.5]]), z, causal)["saturated"] == 0.0
    assert row_stats(np.array([[1.0, 0.0], [0.995, 0.005]]), z, causal)["saturated"] == 1.0
    assert row_stats(w, z)["saturated"] == 0.5   # without a mask row 0 chose key 0 itself
    assert math.isnan(row_stats(np.ones((3, 1)), np.zeros((3, 1)))["saturated"])


def test_first_breaks_is_precision_sweep_draw_for_draw():
    """first_breaks' draws are precision_sweep's at seeds seed, seed + 1, ...: the first float16 d_k with a
    non-finite row, per softmax kind, for each order; and it refuses what it cannot compute."""
    import sdpa_core as sc
    for sigma, rho, order in [(1.5, 0.9, "before"), (4.0, 1.0, "after"), (2.0, 0.5, "none")]:
        got = sc.first_breaks(n=8, sigma=sigma, rho=rho, order=order, draws=4, seed=7)
        for i in range(4):
            ps = precision_sweep(n=8, sigma=sigma, rho=rho, seed=7 + i)
            for kind in ("naive", "stable"):
                frac = np.asarray(ps.nonfinite_rows["float16"][order][kind])
                want = int(ps.d_k[np.nonzero(frac > 0)[0][0]]) if (frac > 0).any() else None
                assert got[kind][i] == want, (sigma, rho, order, kind, i)
    for bad in ({"order": "sideways"}, {"draws": 0}, {"n": 1}, {"sigma": float("nan")}, {"draws": 10**6}):
        with pytest.raises(ValueError):
            sc.first_breaks(**bad)


def test_the_capped_corners_are_checked_and_bounded():
    """Issue 57: capped_std(0, 0) returned NaN with warnings, cap_shrink had no checks, and a capped rule's theory
    held about 0.37 MB per d_k at once (4,000 d_k took 1.5 GB)."""
    import tracemalloc
    import warnings

    import sdpa_core as sc
    from sdpa_core.real_models import capped_std
    from web.claims import cap_shrink
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert capped_std(0.0, 50.0) == 0.0
        assert capped_std(1e300, 50.0) == pytest.approx(50.0, rel=1e-3)
    for bad in ((0, 0), (-1, 2), (float("nan"), 1), (1, float("inf")), ("1", 2)):
        with pytest.raises((ValueError, TypeError)):
            capped_std(*bad)
    for bad in ((0.0, 0.5), (50.0, 1.0), (50.0, 0.0), (float("inf"), 0.5), (True, 0.5), (50.0, float("nan"))):
        with pytest.raises(ValueError):
            cap_shrink(*bad)
    capped = next(r for r in sc.RULES.values() if r.cap is not None)
    tracemalloc.start()
    try:
        capped.theory_logit_std(np.arange(1, 2001), sigma=2.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64e6, peak
