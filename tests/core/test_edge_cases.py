"""Cases where the library used to answer silently wrong, each with the value it must give now.

Found by a probe of every public function (issue "Nothing silently wrong"): float16 totals that
overflowed to zeros, a scale rounded to float16 before it multiplied, a Jacobian norm that cancelled
to 0, gradients of long float16 rows that vanished, temperatures and sigmas whose results were inf or
NaN, and inputs (E = 0, L = 0, 2**4000) that raised numpy-internal errors.
"""
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest

import sdpa_core as sc
from sdpa_core.sweeps import _matrix_stats

F16 = np.float16
S_BIG = 70000  # more keys than float16's largest number, 65504


@pytest.fixture(autouse=True)
def _no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


# ---- 1. float16 totals ------------------------------------------------------------------------------
def test_float16_softmax_over_more_than_65504_keys_is_uniform_not_zero():
    """70000 equal logits: each weight is float16(1/70000), a subnormal; the row sums to 1."""
    w = sc.softmax(np.zeros(S_BIG, F16))
    assert w.dtype == F16 and (w == F16(1 / S_BIG)).all()
    assert float(w.astype(np.float64).sum()) == pytest.approx(1, abs=2e-3)  # subnormal spacing 6e-8 per entry
    # and with a float16 row total that would overflow only through a few large terms
    x = np.zeros(S_BIG, F16)
    x[:3] = 11.0                                     # exp(11) = 59874: three of them pass 65504
    np.testing.assert_allclose(sc.softmax(x)[:4].astype(float), sc.softmax(x.astype(float))[:4],
                               rtol=1e-3, atol=3e-8)     # 4e-6 is subnormal in float16: spacing 6e-8


def test_float16_log_softmax_over_more_than_65504_keys():
    np.testing.assert_allclose(sc.log_softmax(np.zeros(S_BIG, F16)).astype(float), -math.log(S_BIG), rtol=1e-3)


def test_float16_naive_softmax_overflows_only_in_exp():
    """The naive softmax keeps its purpose (exp(12) > 65504 is NaN) but its total no longer overflows."""
    assert (sc.naive_softmax(np.zeros(S_BIG, F16)) == F16(1 / S_BIG)).all()
    assert np.isnan(sc.naive_softmax(np.array([12.0, 0.0], F16))).any()


@pytest.mark.parametrize("masked", [False, True])
def test_float16_attention_over_70000_keys_of_ones_returns_ones(masked):
    """Values of ones average to one, whatever the number of keys (was 0: the total overflowed)."""
    q, k, v = np.ones((2, 4), F16), np.ones((S_BIG, 4), F16), np.ones((S_BIG, 3), F16)
    mask = np.ones((2, S_BIG), bool) if masked else None
    out, w = sc.attention(q, k, v, mask=mask)
    assert out.dtype == w.dtype == F16
    # within one float16 ulp at 1 (float32 accumulation of 70000 products; torch gives 1.001)
    np.testing.assert_allclose(out.astype(float), 1.0, rtol=float(np.finfo(F16).eps))
    assert (w == F16(1 / S_BIG)).all()


def test_exp_shortcut_is_decided_in_the_dtype_the_softmax_runs_in():
    """The skip-the-shift path uses float32's range for float16 input: log(65504) - log(70000) < 0
    no longer sends every long float16 row to the slow path, and the result equals the shifted one."""
    from sdpa_core.attention import _exp_is_safe
    q, k = np.full((1, 4), 0.1, F16), np.full((S_BIG, 4), 0.1, F16)
    assert not _exp_is_safe(q, k, np.float16) and _exp_is_safe(q, k, np.float32)
    rng = np.random.default_rng(0)
    k = rng.standard_normal((S_BIG, 4)).astype(F16)
    v = rng.standard_normal((S_BIG, 2)).astype(F16)
    fast, wf = sc.attention(q, k, v)
    slow, ws = sc.attention(q, k, v, mask=np.ones(S_BIG, bool))   # a mask takes the shifted path
    np.testing.assert_array_equal(wf, ws)
    np.testing.assert_allclose(fast.astype(float), slow.astype(float), atol=1e-3)


def test_float16_backward_over_70000_keys_matches_float64():
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal(s).astype(F16) for s in ((2, 4), (S_BIG, 4), (S_BIG, 2)))
    g = np.ones((2, 2), F16)
    got = sc.attention_backward(q, k, v, g)
    want = sc.attention_backward(*(a.astype(np.float64) for a in (q, k, v, g)))
    for a, b in zip(got, want):
        assert a.dtype == F16
        np.testing.assert_allclose(a.astype(float), b, rtol=2e-2, atol=1e-6)


# ---- the scale multiplies before it is rounded ---------------------------------------------------------
@pytest.mark.parametrize("scale", [1e5, 1e-6])
def test_float16_scale_outside_half_range_is_applied_before_rounding(scale):
    """scale = 1e5 used to round to inf in float16 (NaN weights) and 1e-6 lost its digits: the
    product q * scale is what gets rounded, so logits 0.01 * 0.01 * 1e5 = 10 give [1, 4.5e-5]."""
    x = 0.01 if scale > 1 else 1000.0
    q = np.array([[x, 0.0]], F16)
    k = np.array([[x, 0.0], [0.0, 0.0]], F16)
    v = np.array([[1.0], [0.0]], F16)
    _, w = sc.attention(q, k, v, scale=scale)
    _, ref = sc.attention(*(a.astype(np.float64) for a in (q, k, v)), scale=scale)
    # the float16 logit ~10 itself is rounded (spacing 0.008): exp(-10) may move by 0.4%
    np.testing.assert_allclose(w.astype(float), ref, rtol=1e-2)


# ---- 2. temperature, sigma and d_k at their limits -----------------------------------------------------
@pytest.mark.parametrize("call", [
    lambda: sc.logit_scale(64, "qknorm", temperature=1e-320),
    lambda: sc.check_rule("qknorm", temperature=1e-7),
    lambda: sc.sweep([64], ("qknorm",), temperature=1e-39, n=4, samples=2),
    lambda: sc.TrainConfig(rule="qknorm", temperature=1e7),
])
def test_temperature_outside_1e_minus6_to_1e6_is_refused(call):
    with pytest.raises(ValueError, match=r"temperature must be (>= 1e-06|<= 1e\+06)"):
        call()


@pytest.mark.parametrize("temperature", [1e-6, 1e6])
def test_temperature_at_its_bounds_gives_finite_statistics(temperature):
    """At the bounds the sweep's logits (cos / temperature, at most 1e6) stay finite in float32."""
    s = sc.sweep([64, 4096], ("qknorm",), temperature=temperature, n=4, samples=4)
    assert sc.logit_scale(64, "qknorm", temperature=temperature) == 1 / temperature
    for m in sc.METRICS:
        assert np.isfinite(s.mean[m]["qknorm"]).all(), m
    if temperature == 1e6:   # every logit ~0: uniform rows
        np.testing.assert_allclose(s.mean["entropy"]["qknorm"], math.log(4), rtol=1e-6)


def test_theory_logit_std_is_proportional_to_sigma_squared_at_any_sigma():
    """sigma**4 used to overflow (NaN at sigma = 1e100); the std is computed as sigma * unit * sigma."""
    unit = sc.theory_logit_std(4096, sigma=1.0, rho=0.5)
    assert sc.theory_logit_std(4096, sigma=1e100, rho=0.5) == pytest.approx(unit * 1e200, rel=1e-14)
    assert sc.theory_logit_std(4096, sigma=1e-150, rho=0.5) == pytest.approx(unit * 1e-300, rel=1e-14)
    assert sc.theory_logit_std(64, sigma=1e150, scale=1e-300) == pytest.approx(8.0, rel=1e-14)
    with pytest.raises(ValueError, match="exceeds float64's range"):
        sc.theory_logit_std(4096, sigma=1e200)


def test_scale_for_huge_d_k_and_alpha_bounds():
    with pytest.raises(ValueError, match=r"d_k must be <= 9007199254740992, got an integer of 4001 bits"):
        sc.scale_for(2 ** 4000)
    assert sc.scale_for(2 ** 53, 4.0) == 2.0 ** -212           # the smallest scale allowed: still exact
    with pytest.raises(ValueError, match=r"rule \(a float alpha\) must be <= 4"):
        sc.scale_for(64, 1000.0)                                # 64**-1000 would be 0
    with pytest.raises(ValueError, match=r"rule \(a float alpha\) must be >= 0"):
        sc.scale_for(64, -1000.0)                               # 64**1000 would overflow


def test_sweep_logit_std_is_exact_where_float32_logits_underflow():
    """alpha = 4 at d_k = 65536 with sigma = 1e-3: logits ~1e-26, whose squares underflow float32;
    the spread is computed in float64 from the unscaled dots, so it matches the closed form."""
    s = sc.sweep([65536], ("alpha",), alpha=4.0, sigma=1e-3, n=8, samples=64, seed=2)
    theory = s.theory_logit_std["alpha"][0]
    assert 1e-25 < theory < 1e-21 and float(theory) ** 2 < np.finfo(np.float32).smallest_subnormal
    np.testing.assert_allclose(s.mean["logit_std"]["alpha"], theory, rtol=0.1)


# ---- the Jacobian norm of a saturated row ---------------------------------------------------------------
def _exact_jacobian_norm(row) -> float:
    """||diag(p) - p p^T||_F in exact rational arithmetic, of the distribution the row stores: its
    other entries as stored, its top entry 1 minus their sum (a float64 row [1 - 1e-20, 1e-20] reads
    [1.0, 1e-20]: the 1e-20 missing from its top is round-off, not data)."""
    p = [Fraction(float(x)) for x in row]
    top = max(range(len(p)), key=lambda i: p[i])
    p[top] = 1 - sum(x for i, x in enumerate(p) if i != top)
    sq = sum(((pi if i == j else 0) - pi * pj) ** 2 for i, pi in enumerate(p) for j, pj in enumerate(p))
    if sq == 0:
        return 0.0
    half = (sq.numerator.bit_length() - sq.denominator.bit_length()) // 2   # sqrt(sq) = 2^half sqrt(sq / 4^half)
    return math.ldexp(math.sqrt(sq / Fraction(4) ** half), half)


@pytest.mark.parametrize("eps,dtype", [(e, t) for t in (np.float64, np.float32, np.float16)
                                       for e in (1e-3, 1e-6, 1e-9, 1e-15, 1e-300)
                                       if e >= np.finfo(t).smallest_subnormal])
def test_jacobian_norm_of_a_saturated_row_is_2eps_not_zero(eps, dtype):
    """For p = [1 - eps, eps], ||diag(p) - p p^T||_F ~ 2 eps. The textbook O(S) form cancelled to 0
    below eps ~ 1e-8 (float64), 1e-4 (float32), 3e-2 (float16); it is now right to round-off, even
    where 1 - eps itself rounds to 1.0 (float32 at eps = 1e-9)."""
    p = np.array([1 - eps, eps], dtype)
    for row in (p, p[::-1].copy()):
        got = sc.jacobian_norm(row)
        assert got.dtype == dtype
        assert float(got) == pytest.approx(_exact_jacobian_norm(row), rel=4 * float(np.finfo(dtype).eps),
                                           abs=float(np.finfo(dtype).smallest_subnormal))


def test_jacobian_norm_with_ties_against_exact_arithmetic():
    rng = np.random.default_rng(3)
    p = np.concatenate([sc.softmax(rng.standard_normal((50, 7)) * 30), [[0.5, 0.5, 0, 0, 0, 0, 0]],
                        [[0.25] * 4 + [0] * 3], [[0.4, 0.4, 0.2, 0, 0, 0, 0]], np.eye(7)[:2]])
    np.testing.assert_allclose(sc.jacobian_norm(p), [_exact_jacobian_norm(r) for r in p], rtol=1e-14, atol=1e-300)


def test_sweep_jacobian_norm_matches_float64_rows_even_when_saturated():
    """The sweep's float32 Jacobian norm (keys-first layout, ties counted) equals jacobian_norm of the
    same logits' softmax in float64, also for saturated rows (unscaled, aligned, large logits)."""
    rng = np.random.default_rng(4)
    z = np.concatenate([rng.standard_normal((6, 8)) * s for s in (0.1, 1, 10, 100, 1000)])
    z[0, :3] = 5.0                                       # a three-way tie at the top
    z32 = z.astype(np.float32)
    got = _matrix_stats(np.ascontiguousarray(z32.T[:, None, :]))["jacobian_norm"]   # mean over rows
    want = sc.jacobian_norm(sc.softmax(z32.astype(np.float64)))
    assert float(got[0]) == pytest.approx(want.mean(), rel=1e-5)
    rows = [float(_matrix_stats(np.ascontiguousarray(r[:, None, None]))["jacobian_norm"][0]) for r in z32]
    np.testing.assert_allclose(rows, want, rtol=1e-4, atol=1e-37)
    assert min(rows) < 1e-20                             # saturated rows are in there, and not 3e-4


# ---- QK-norm in float16 -----------------------------------------------------------------------------------
def test_qknorm_float16_gradient_is_not_zero_for_long_rows():
    """|q| > 256 overflowed float16's norm in the backward pass and every dq came back 0."""
    q, k, v = sc.draw_qkv(4, 4096, sigma=8.0, rho=1.0, dtype=F16)
    g = sc.upstream_gradient(4, 4096, dtype=F16)
    dq16 = sc.rule_gradients(q, k, v, g, "qknorm")[0].astype(np.float64)
    dq64 = sc.rule_gradients(*(a.astype(np.float64) for a in (q, k, v, g)), "qknorm")[0]
    np.testing.assert_allclose(np.linalg.norm(dq16, axis=-1), np.linalg.norm(dq64, axis=-1), rtol=2e-2)


def test_row_stats_spread_of_logits_near_float64s_limit():
    """Logits of +-1e200: their std is 1e200 (was inf: the squares overflowed, with a warning)."""
    assert sc.row_stats(np.array([[0.5, 0.5]]), np.array([[1e200, -1e200]]))["logit_std"] == pytest.approx(1e200)


# ---- 3. empty, zero-sized and mis-shaped inputs: clear errors ---------------------------------------------
@pytest.mark.parametrize("shapes,match", [
    (((2, 0), (2, 0), (2, 1)), "q is empty"),           # E = 0: was ZeroDivisionError
    (((0, 2), (2, 2), (2, 1)), "q is empty"),           # L = 0
    (((2, 2), (0, 2), (0, 1)), "k is empty"),           # S = 0: was "math domain error"
    (((2, 2), (3, 2), (3, 0)), "v is empty"),           # Ev = 0
    (((0, 2, 2), (2, 2), (2, 1)), "q is empty"),        # an empty batch
])
def test_empty_attention_inputs_are_refused(shapes, match):
    q, k, v = (np.ones(s) for s in shapes)
    for fn in (sc.attention, lambda *a: sc.attention_backward(*a, np.ones(np.broadcast_shapes(
            q.shape[:-2], k.shape[:-2]) + (q.shape[-2], v.shape[-1])))):
        with pytest.raises(ValueError, match=match):
            fn(q, k, v)


@pytest.mark.parametrize("fn", [sc.softmax, sc.log_softmax, sc.naive_softmax, sc.entropy, sc.max_weight,
                                sc.jacobian_norm, sc.qk_normalize, sc.entropy_from_logits])
def test_empty_arrays_are_refused(fn):
    with pytest.raises(ValueError, match="is empty"):
        fn(np.ones((2, 0)))


def test_grad_out_has_the_output_shape_or_broadcasts_to_it_unchanged():
    """(1, 1) and a scalar mean d sum(out); a grad_out that broadcasts the output to (3, 2, 1) is refused."""
    rng = np.random.default_rng(5)
    q, k, v = rng.standard_normal((2, 3)), rng.standard_normal((4, 3)), rng.standard_normal((4, 1))
    full = sc.attention_backward(q, k, v, np.ones((2, 1)))
    for g in (np.ones((1, 1)), 1.0, np.ones(1)):
        for a, b in zip(sc.attention_backward(q, k, v, g), full):
            np.testing.assert_array_equal(a, b)
    for bad in (np.ones((3, 2, 1)), np.ones((2, 2)), np.ones((3, 1))):
        with pytest.raises(ValueError, match=r"grad_out must have the output's shape \(2, 1\)"):
            sc.attention_backward(q, k, v, bad)


def test_non_finite_inputs_are_refused_but_overflow_inside_still_shows():
    """NaN/inf in q, k, v or grad_out are refused (nothing right could come out); float16 logits that
    overflow inside the computation still give NaN rows, the overflow the page reports."""
    q = np.ones((2, 3))
    for name, args in (("q", (q * np.nan, q, q)), ("k", (q, q * np.inf, q)), ("v", (q, q, -np.inf * q))):
        with pytest.raises(ValueError, match=f"{name} contains NaN or infinity"):
            sc.attention(*args)
    with pytest.raises(ValueError, match="mask contains NaN or"):
        sc.attention(q, q, q, mask=np.full((2, 2), np.nan))
    with pytest.raises(ValueError, match="grad_out contains NaN"):
        sc.attention_backward(q, q, q, q * np.nan)
    big = np.full((1, 4096), 4.0, F16)
    _, w = sc.attention(big, big, big, scale=1.0)
    assert np.isnan(w).all()


# ---- 4. inputs that used to be accepted ----------------------------------------------------------------------
@pytest.mark.parametrize("fn", [sc.entropy, sc.effective_support, sc.max_weight, sc.saturated,
                                sc.softmax_jacobian, sc.jacobian_norm])
@pytest.mark.parametrize("p", [[1.0, 1.0], [0.5, 0.4], [[0.5, 0.5], [2.0, 0.0]], [3.0, 1.0, 0.0]])
def test_rows_that_do_not_sum_to_one_are_not_distributions(fn, p):
    with pytest.raises(ValueError, match="not a probability distribution"):
        fn(np.array(p))


@pytest.mark.parametrize("fn", [sc.entropy, sc.max_weight, sc.jacobian_norm])
def test_round_off_and_fully_masked_rows_are_accepted(fn):
    """Sums within round-off of the dtype pass, float16 weights cast to float64 too, and an all-zero
    row (a query with no allowed key) is fine."""
    w16 = sc.softmax(np.random.default_rng(6).standard_normal((40, 64)).astype(F16) * 4)
    for p in (w16, w16.astype(np.float64), np.array([[0.0, 0.0], [0.3, 0.7]]), np.array([0.5, 0.5 + 5e-4])):
        fn(p)


def test_sample_gram_checks_its_arguments():
    rng = np.random.default_rng(0)
    with pytest.raises(TypeError, match="d_k must be an integer, got float 3.5"):
        sc.sample_gram(3.5, 2, 3, rng)
    with pytest.raises(TypeError, match="rng must be a numpy Generator"):
        sc.sample_gram(4, 2, 3, 0)
    with pytest.raises(ValueError, match="m must be >= 1"):
        sc.sample_gram(4, 2, 0, rng)


def test_a_diverged_model_still_reports_divergence():
    """Blown-up weights give NaN q: the model returns a NaN loss (Trainer says 'diverged') instead of
    attention's ValueError about NaN input."""
    t = sc.Trainer(sc.TrainConfig(d_k=8))
    t.params["Wq"][...] = np.inf
    assert t.step() is None and t.diverged and "diverged at step 1" in t.message
    w, _ = t.example_weights()
    assert np.isnan(w).all()
