"""Issue 34 item 4, the core's last silent values: no NaN where theory has a number, no numpy warning reaching the
user, no standard error computed from one sample.

- Tiny sigma: random_geometry, dot_samples and dot_histograms draw at sigma = 1 and scale each statistic by its
  power of sigma (exact for powers of two), down to MIN_SIGMA = 1e-150; below it a ValueError names the minimum.
  length_path's cosines do not depend on sigma.
- Huge, tiny and subnormal q, k, v, grad_out: every public function that takes them answers without a numpy
  warning; rule_readouts' gradient norms are the exact rescaling of the unscaled ones (inf only past float64's
  range), and QK-norm's backward treats a row of length 1e-300 as a direction like any other.
- samples = 1: head_at_init and preset_at_init refuse it (every *_se would be NaN), as the other functions that
  report a spread over samples already do.
"""
import math
import warnings

import numpy as np
import pytest

import sdpa_core as sc
from sdpa_core.draws import MIN_SIGMA
from sdpa_core.real_models import PRESETS
from sdpa_core.scaling import qk_normalize_backward

TINY_SIGMAS = [MIN_SIGMA, 2.0 ** -498, 1e-120, 1e-80, 1e-10, 0.37, 1.0, 3.0, 1e3]
TOO_SMALL = [5e-324, 1e-320, 1e-308, 1e-200, 1e-151, float(np.nextafter(MIN_SIGMA, 0))]
SUB = 5e-324  # the smallest subnormal float64


@pytest.fixture
def no_warnings():
    """Any warning inside the test is an error."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _scaled(a: np.ndarray, how: str) -> np.ndarray:
    """``a`` multiplied by 1e300 or 1e-300, stretched to float64's largest number, or made subnormal."""
    if how == "max":
        return a / np.abs(a).max() * 1.7e308
    if how == "subnormal":
        return np.round(a * 4) * SUB  # small integer multiples of 5e-324
    return a * {"1e300": 1e300, "1e-300": 1e-300}[how]


# ---- item 1: tiny sigma --------------------------------------------------------------------------------
@pytest.mark.parametrize("sigma", TINY_SIGMAS)
def test_random_geometry_at_tiny_sigma_is_sigma_to_its_power_times_sigma_one(sigma, no_warnings):
    """Same seed, same draws: lengths scale by sigma, dot products by sigma^2, cosines not at all; no NaN, no 0
    where theory has a number."""
    one = sc.random_geometry([1, 4, 16, 1024], sigma=1.0, samples=200, seed=5)
    g = sc.random_geometry([1, 4, 16, 1024], sigma=sigma, samples=200, seed=5)
    powers = {"norm_mean": 1, "norm_theory": 1, "norms_mean": 2, "norms_theory": 2, "cos_std": 0, "cos_theory": 0,
              "dot_std": 2, "dot_theory": 2}
    for key, p in powers.items():
        assert np.isfinite(g[key]).all() and (g[key] > 0).all(), key
        np.testing.assert_allclose(g[key], one[key] * sigma ** p, rtol=1e-13, err_msg=key)


def test_random_geometry_at_a_power_of_two_sigma_is_exact():
    """sigma = 2^-498 (sigma^2 = 2^-996, 1.5e-300): every statistic is the sigma = 1 one times sigma^p bit for bit."""
    s = 2.0 ** -498
    one = sc.random_geometry([2, 64], samples=50, seed=2)
    g = sc.random_geometry([2, 64], sigma=s, samples=50, seed=2)
    for key in ("norm_mean", "norms_mean", "cos_std", "dot_std", "dot_theory"):
        p = {"norm_mean": 1, "cos_std": 0}.get(key, 2)
        assert np.array_equal(g[key], np.ldexp(one[key], -498 * p)), key


@pytest.mark.parametrize("sigma", [1e-150, 1e-120, 1e-100])
def test_random_geometry_at_tiny_sigma_matches_the_closed_forms(sigma, no_warnings):
    """The measured statistics against their closed forms (expected_norm, 1/sqrt(d), sigma^2 sqrt(d): computed
    apart from the draws) within 5 %, at sigmas where the old code returned 0, 0 and NaN."""
    d = np.array([1, 4, 16, 256])
    g = sc.random_geometry(d, sigma=sigma, samples=20000, seed=1)
    np.testing.assert_allclose(g["norm_theory"], [sc.expected_norm(int(x), 1.0) * sigma for x in d], rtol=1e-12)
    np.testing.assert_allclose(g["dot_theory"], sigma * sigma * np.sqrt(d), rtol=1e-12)
    for measured, theory in (("norm_mean", "norm_theory"), ("norms_mean", "norms_theory"), ("cos_std", "cos_theory"),
                             ("dot_std", "dot_theory")):
        assert np.all(np.abs(g[measured] / g[theory] - 1) < 0.05), measured


def test_random_geometry_reports_the_issue_example_or_refuses_it(no_warnings):
    """The probe's example: sigma = 1e-308 and 5e-324 used to return cos_std NaN, norm_mean 0, dot_std 0 and a
    RuntimeWarning; now a ValueError names the smallest sigma supported and says why."""
    for sigma in (1e-308, 5e-324):
        with pytest.raises(ValueError, match=r"sigma must be >= 1e-150 here, got .*sigma\*\*2.*smallest normal"):
            sc.random_geometry([4, 16], sigma=sigma, samples=50)


@pytest.mark.parametrize("sigma", TOO_SMALL)
@pytest.mark.parametrize("call", [
    lambda s: sc.random_geometry([4], sigma=s, samples=8),
    lambda s: sc.dot_samples(16, 10, sigma=s),
    lambda s: sc.dot_histograms(16, sigma=s, m=100),
    lambda s: sc.dot_histograms(16, sigma=s, m=100, rule="qknorm"),
], ids=["random_geometry", "dot_samples", "dot_histograms", "dot_histograms_qknorm"])
def test_below_min_sigma_a_clear_value_error(call, sigma, no_warnings):
    with pytest.raises(ValueError, match=r"sigma must be >= 1e-150 here.*sigma = 1 shows the same shapes"):
        call(sigma)


@pytest.mark.parametrize("rho", [0.0, 0.6, 1.0])
@pytest.mark.parametrize("sigma", [MIN_SIGMA, 1e-100, 0.5, 7.0])
def test_dot_samples_scale_by_sigma_squared(sigma, rho, no_warnings):
    x1 = sc.dot_samples(64, 500, rho=rho, seed=3)
    x = sc.dot_samples(64, 500, sigma=sigma, rho=rho, seed=3)
    np.testing.assert_allclose(x, x1 * sigma * sigma, rtol=1e-13, atol=0)
    assert np.array_equal(sc.dot_samples(64, 500, sigma=2.0 ** -490, rho=rho, seed=3), np.ldexp(x1, -980))


@pytest.mark.parametrize("rule", ["none", "sqrt", "qknorm", "ssmax"])
@pytest.mark.parametrize("sigma", [MIN_SIGMA, 1e-120, 1e-60, 1.0])
@pytest.mark.parametrize("rho", [0.0, 0.5])
def test_dot_histograms_at_tiny_sigma_follow_the_pair_theory(rule, sigma, rho, no_warnings):
    """Sample means and stds against the closed forms of Rule.pair_theory within 5 % (the unscaled std was 0 and a
    QK-norm cosine's std 1e-49 at sigma = 1e-100); a QK-norm cosine does not depend on sigma at all."""
    h = sc.dot_histograms(256, sigma=sigma, rho=rho, seed=4, rule=rule, m=20000, n=16)
    for i in (0, 1):
        assert h["sample_std"][i] == pytest.approx(h["theory_std"][i], rel=0.05)
        assert abs(h["sample_mean"][i] - h["theory_mean"][i]) < 0.05 * h["theory_std"][i] + 1e-12 * abs(
            h["theory_mean"][i])
        for part in ("unscaled", "scaled")[i:i + 1]:
            for key in ("left", "right", "density", "x", "pdf"):
                assert np.isfinite(h[part][key]).all(), (part, key)
    assert h["theory_std"][0] == pytest.approx(sigma * sigma * math.sqrt((1 + rho * rho) * 256), rel=1e-12)
    if rule == "qknorm":
        ref = sc.dot_histograms(256, sigma=1.0, rho=rho, seed=4, rule=rule, m=20000, n=16)
        assert h["sample_std"][1] == ref["sample_std"][1] and h["sample_mean"][1] == ref["sample_mean"][1]
        assert np.array_equal(h["scaled"]["density"], ref["scaled"]["density"])


def test_dot_histograms_refuse_logits_too_small_to_histogram(no_warnings):
    """alpha = 4 at d_k = 65536 multiplies by 5e-20: at sigma = 1e-150 the logits' spread is 1e-317, and a
    histogram's densities (1/spread) would overflow. A ValueError says so instead of inf and a warning."""
    with pytest.raises(ValueError, match="too close to float64's smallest numbers"):
        sc.dot_histograms(65536, sigma=MIN_SIGMA, rule="alpha", alpha=4.0, m=100)
    sc.dot_histograms(65536, sigma=1.0, rule="alpha", alpha=4.0, m=100)  # fine at sigma = 1


@pytest.mark.parametrize("sigma", [5e-324, 1e-310, 1e-300, 1e-150, 1.0, 1e3])
def test_length_path_cosines_do_not_depend_on_sigma(sigma, no_warnings):
    """QK-norm's rows are functions of cosines only: the same numbers at any sigma (the old draws at sigma = 1e-300
    were subnormal components whose ratios were garbage); the others are finite."""
    ref = sc.length_path([2, 16, 256], ("qknorm", "sqrt"), d_k=16, samples=64, seed=2)
    p = sc.length_path([2, 16, 256], ("qknorm", "sqrt"), d_k=16, samples=64, seed=2, sigma=sigma)
    for m in ("top_weight", "own_weight", "entropy", "entropy_ratio"):
        np.testing.assert_array_equal(p[m]["qknorm"], ref[m]["qknorm"])
        assert np.isfinite(p[m]["sqrt"]).all()
    if sigma < 1e-150:  # logits of 1e-300 and less: the softmax is uniform, top weight 1/n
        np.testing.assert_allclose(p["top_weight"]["sqrt"], [1 / 2, 1 / 16, 1 / 256], rtol=1e-12)


# ---- item 2: huge, tiny and subnormal arrays ------------------------------------------------------------
RNG = np.random.default_rng(11)
Q, K, V = RNG.standard_normal((3, 6, 4))
G = RNG.standard_normal((6, 4))
HOW = ["1e300", "1e-300", "max", "subnormal"]


def _inputs(which: str, how: str):
    a = {"q": Q, "k": K, "v": V, "g": G}
    a[which] = _scaled(a[which], how)
    return a


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("which", ["q", "k", "v", "g"])
@pytest.mark.parametrize("rule", sc.RULE_NAMES)
def test_rule_functions_raise_no_numpy_warning(rule, which, how, no_warnings):
    """rule_readouts, rule_gradients and rule_attention with one input at 1e300, 1e-300, 1.7e308 or subnormal:
    no RuntimeWarning (the probe's qknorm with k * 1e300 leaked linalg.norm's overflow), and rule_readouts'
    dq_norms are never NaN for finite weights."""
    a = _inputs(which, how)
    r = sc.rule_readouts(a["q"], a["k"], a["v"], a["g"], rule)
    sc.rule_gradients(a["q"], a["k"], a["v"], a["g"], rule)
    sc.rule_attention(a["q"], a["k"], a["v"], rule)
    finite_rows = np.isfinite(r["weights"]).all(axis=-1)
    assert not np.isnan(r["dq_norms"][finite_rows]).any()
    assert math.isfinite(r["dq_floor"]) and r["dq_floor"] >= 0


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("which", ["q", "k", "v", "g"])
def test_attention_and_friends_raise_no_numpy_warning(which, how, no_warnings):
    a = _inputs(which, how)
    sc.attention(a["q"], a["k"], a["v"])
    sc.attention_backward(a["q"], a["k"], a["v"], a["g"])
    sc.qk_normalize(a[which])
    w = sc.softmax(Q @ K.T)
    sc.output_similarity(w, a[which] if which in "vg" else V)


@pytest.mark.parametrize("rule", sc.RULE_NAMES)
@pytest.mark.parametrize("cv, cg", [(1e300, 1.0), (1.0, 1e300), (1e-300, 1.0), (1e300, 1e-300), (1.0, 1e-300),
                                    (2.0 ** 1000, 2.0 ** -1000), (2.0 ** -1070, 1.0), (2.0 ** 1020, 1.0)])
def test_rule_readouts_gradient_norms_are_the_rescaled_ones(rule, cv, cg, no_warnings):
    """dq is linear in v and in grad_out, so ||dq_i|| at (c_v v, c_g G) is c_v c_g times the norm at (v, G), computed
    here independently (rule_gradients at the unscaled inputs, np.linalg.norm, one multiplication). At
    c_v = 2^-1070 v itself is subnormal (rounded to a few bits): the reference is taken at that rounded v, brought
    back exactly by 2^1070, and the subnormal result may differ by its last unit (5e-324)."""
    v = V * cv
    exact = float(np.frexp(cv)[0]) == 0.5  # a power of two: v / cv is the rounded v, exactly
    base = np.linalg.norm(sc.rule_gradients(Q, K, v / cv if exact else V, G, rule)[0], axis=-1)
    r = sc.rule_readouts(Q, K, v, G * cg, rule)
    want = base * cv * cg
    tiny = cv * cg < 1e-290
    np.testing.assert_allclose(r["dq_norms"], want, rtol=1e-13, atol=1e-323 if tiny else 0)
    floor = sc.rule_readouts(Q, K, v / cv if exact else V, G, rule)["dq_floor"]
    assert r["dq_floor"] == pytest.approx(floor * cv * cg, rel=1e-12, abs=1e-320)


@pytest.mark.parametrize("rule", sc.RULE_NAMES)
def test_rule_readouts_past_float64_is_inf_not_nan(rule, no_warnings):
    """v and grad_out both 1e300: each true norm is ~1e600, past float64's range: inf (the rounded truth), no NaN,
    no warning; the floor is then 0 (none); the weights and statistics are those of the unscaled head."""
    r = sc.rule_readouts(Q, K, V * 1e300, G * 1e300, rule)
    assert np.isposinf(r["dq_norms"]).all() and r["dq_floor"] == 0.0
    ref = sc.rule_readouts(Q, K, V, G, rule)
    np.testing.assert_array_equal(r["weights"], ref["weights"])
    assert r["stats"] == ref["stats"]


@pytest.mark.parametrize("c", [1e300, 1e-300, 2.0 ** -1060, 1.7e308 / 4])
def test_qknorm_readouts_do_not_see_the_length_of_k(c, no_warnings):
    """QK-norm divides k by its length: k * c gives the same weights and gradient norms (the probe's k * 1e300
    leaked linalg.norm's overflow). At c = 2^-1060 k is subnormal, rounded to a few bits: the reference is that
    rounded k brought back by 2^1060, exactly."""
    k = K * c
    ref = sc.rule_readouts(Q, np.ldexp(k, 1060) if c == 2.0 ** -1060 else K, V, G, "qknorm")
    r = sc.rule_readouts(Q, k, V, G, "qknorm")
    np.testing.assert_allclose(r["weights"], ref["weights"], rtol=1e-12)
    np.testing.assert_allclose(r["dq_norms"], ref["dq_norms"], rtol=1e-12)
    assert r["dq_floor"] == pytest.approx(ref["dq_floor"], rel=1e-12)


@pytest.mark.parametrize("c", [1e300, 1e-300, 2.0 ** -1000, 1e-250])
def test_qknorm_gradient_of_a_short_or_long_q_scales_by_one_over_its_length(c, no_warnings):
    """x / |x| does not change when x is scaled by c, so its gradient scales by 1/c: checked against the unscaled
    gradient (rule_gradients, rule_readouts, and qk_normalize_backward itself). Before, rows shorter than 1e-12
    were divided by 1e-12 instead of their length (a gradient 1e288 times too small at 1e-300)."""
    dq, dk, dv = sc.rule_gradients(Q, K, V, G, "qknorm")
    dq_c, dk_c, dv_c = sc.rule_gradients(Q * c, K * c, V, G, "qknorm")
    if np.isfinite(dq / c).all():
        np.testing.assert_allclose(dq_c, dq / c, rtol=1e-12)
        np.testing.assert_allclose(dk_c, dk / c, rtol=1e-12)
    np.testing.assert_allclose(dv_c, dv, rtol=1e-12)
    ref = sc.rule_readouts(Q, K, V, G, "qknorm")["dq_norms"]
    np.testing.assert_allclose(sc.rule_readouts(Q * c, K, V, G, "qknorm")["dq_norms"] * c, ref, rtol=1e-12)
    x, up = Q[0], G[0]
    np.testing.assert_allclose(qk_normalize_backward(x * c, up) * c, qk_normalize_backward(x, up), rtol=1e-12)


def test_qknorm_backward_by_finite_differences_at_a_tiny_length(no_warnings):
    """Independent: central differences of sum(up * x / |x|) at x of length ~1e-200, in units of that length."""
    x = np.array([0.3, -1.2, 0.5, 2.0]) * 1e-200
    up = np.array([0.7, 0.1, -0.4, 1.1])
    h = 1e-208

    def f(y):
        return float(up @ (y / np.linalg.norm(y / 1e-200) / 1e-200))
    num = np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(4)])
    np.testing.assert_allclose(qk_normalize_backward(x, up), num, rtol=1e-6)


def test_qknorm_gradient_of_a_subnormal_q_is_inf_without_a_warning(no_warnings):
    """A row of length 5e-324 has a gradient of ~1e323, past float64: inf, documented, and no warning."""
    q = np.round(Q * 4) * SUB
    r = sc.rule_readouts(q, K, V, G, "qknorm")
    assert np.isposinf(r["dq_norms"]).all()
    r = sc.rule_readouts(q, K, V * 1e-300, G, "qknorm")  # 1e323 * 1e-300: back in range, and exact
    ref = sc.rule_readouts(np.round(Q * 4), K, V, G, "qknorm")["dq_norms"]
    np.testing.assert_allclose(r["dq_norms"], ref * (1e-300 / SUB), rtol=1e-12)


def test_attention_backward_overflow_is_documented_inf_or_nan_without_warning(no_warnings):
    """PyTorch semantics: v and grad_out both 1e300 make G v^T inf, so dq and dk are NaN (inf - inf), while
    dv = W^T G (1e300) is finite; no numpy warning."""
    dq, dk, dv = sc.attention_backward(Q, K, V * 1e300, G * 1e300)
    assert np.isnan(dq).all() and np.isnan(dk).all() and np.isfinite(dv).all()
    assert "no numpy warning" in sc.attention_backward.__doc__


# ---- item 3: standard errors need two samples -----------------------------------------------------------
@pytest.mark.parametrize("samples", [1, 0, -3])
def test_head_at_init_refuses_one_sample(samples):
    with pytest.raises(ValueError, match=r"samples must be >= 2, got -?\d+: .*standard errors"):
        sc.head_at_init(64, 4, samples=samples, n=16)


@pytest.mark.parametrize("name", list(PRESETS))
def test_preset_at_init_refuses_one_sample(name):
    with pytest.raises(ValueError, match=r"samples must be >= 2, got 1: .*standard errors"):
        sc.preset_at_init(name, samples=1, n=8)


@pytest.mark.parametrize("samples", [2, 3, 8])
@pytest.mark.parametrize("qk_norm", ["none", "head", "all"])
def test_every_standard_error_is_a_number_from_two_samples(samples, qk_norm, no_warnings):
    r = sc.head_at_init(64, 4, samples=samples, n=16, qk_norm=qk_norm)
    for variant, stats in r["mc"].items():
        for key, value in stats.items():
            assert math.isfinite(value), (variant, key)
            if key.endswith("_se"):
                assert value >= 0
    for name in PRESETS:
        r = sc.preset_at_init(name, samples=2, n=8)
        assert all(math.isfinite(v) for stats in r["mc"].values() for v in stats.values()), name


def test_head_at_init_standard_error_is_the_spread_over_samples(no_warnings):
    """Independent: the standard error of the logit std recomputed from the same heads' logits (the module's own
    draws, _head_dots with the same seed) with the statistics module's stdev, over 2, 3 and 5 samples."""
    import statistics

    from sdpa_core.real_models import _head_dots

    for m in (2, 3, 5):
        r = sc.head_at_init(64, 4, samples=m, n=16, seed=3)
        dots = _head_dots(64, 16, 0.02, 0.02, True, 1.0, "none", 16, m, 3)
        rms = [math.sqrt(float(np.mean(d * d))) for d in dots]
        assert r["mc"]["unscaled"]["logit_std"] == pytest.approx(statistics.fmean(rms), rel=1e-12)
        assert r["mc"]["unscaled"]["logit_std_se"] == pytest.approx(statistics.stdev(rms) / math.sqrt(m), rel=1e-12)
        for v, f in r["factors"].items():  # linear in the factor
            assert r["mc"][v]["logit_std_se"] == pytest.approx(r["mc"]["unscaled"]["logit_std_se"] * f, rel=1e-12)


@pytest.mark.parametrize("call", [
    lambda: sc.sweep([4], ("sqrt",), n=4, samples=1),
    lambda: sc.rho_path([0.0], ("sqrt",), d_k=4, n=4, samples=1),
    lambda: sc.length_path([2], ("sqrt",), samples=1),
    lambda: sc.random_geometry([4], samples=1),
    lambda: sc.dot_histograms(4, m=1),
], ids=["sweep", "rho_path", "length_path", "random_geometry", "dot_histograms"])
def test_every_spread_over_samples_needs_two(call):
    """The other public functions that report a spread over samples already refuse one sample."""
    with pytest.raises(ValueError, match=r"(samples|m) must be >= 2"):
        call()
