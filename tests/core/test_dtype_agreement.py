"""float16, float32 and float64 agree wherever the answer is representable.

Inputs are drawn in float64 and rounded to float16 first, so all three dtypes see exactly the same
numbers and only the arithmetic differs. Each statistic must then agree with float64 to the dtype's
round-off (a few units of its eps, plus its smallest subnormal for tiny values): no dtype may answer
silently differently, e.g. 0 where float64 says 1e-5.
"""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import sdpa_core as sc

LOW = (np.float16, np.float32)


def eps(dtype) -> float:
    return float(np.finfo(dtype).eps)


def tiny(dtype) -> float:
    return float(np.finfo(dtype).smallest_subnormal)


def same_numbers(x):
    """x rounded to float16, then the same values in float16, float32 and float64."""
    x16 = np.asarray(x, dtype=np.float64).astype(np.float16)
    return {t: x16.astype(t) for t in (np.float16, np.float32, np.float64)}


F32_EPS = float(np.finfo(np.float32).eps)   # float16 input is computed in float32, then rounded once


def close(got, want, dtype, rel=4, work=16, absolute=None):
    """Within ``rel`` eps of the result's dtype (its rounding) plus ``work`` eps of float32, the
    dtype both float16 and float32 compute in (exp, sums, the normalisation: a few ulps each)."""
    got = np.asarray(got, dtype=np.float64)
    atol = 2 * tiny(dtype) if absolute is None else absolute
    np.testing.assert_allclose(got, want, rtol=rel * eps(dtype) + work * F32_EPS, atol=atol)


@pytest.fixture(autouse=True)
def _no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


logit_rows = st.tuples(st.integers(1, 6), st.integers(2, 300), st.sampled_from([0.1, 1.0, 4.0, 10.0]),
                       st.integers(0, 2 ** 16))


def _logits(rows, keys, spread, seed):
    return np.random.default_rng(seed).standard_normal((rows, keys)) * spread


@settings(max_examples=40, deadline=None)
@given(logit_rows)
def test_softmax_and_log_softmax_agree(case):
    x = same_numbers(_logits(*case))
    p64, lp64 = sc.softmax(x[np.float64]), sc.log_softmax(x[np.float64])
    for t in LOW:
        p, lp = sc.softmax(x[t]), sc.log_softmax(x[t])
        assert p.dtype == lp.dtype == t
        close(p, p64, t)
        close(lp, lp64, t, absolute=eps(t) * np.abs(lp64).max())   # rounding of values up to |log p|


@settings(max_examples=40, deadline=None)
@given(logit_rows)
def test_weight_statistics_agree(case):
    """entropy, effective_support, max_weight, jacobian_norm and saturated of the same weights."""
    p = same_numbers(sc.softmax(_logits(*case)))                 # float16 weights, as a float16 model has
    ref = {f: f(p[np.float64]) for f in (sc.entropy, sc.effective_support, sc.max_weight, sc.jacobian_norm)}
    S = p[np.float64].shape[-1]
    for t in LOW:
        for f, want in ref.items():
            got = f(p[t])
            assert got.dtype == t, f.__name__
            # entropy sums S terms p log p in float32 (error ~ log S eps), exp(entropy) turns it relative
            work = 16 + (8 * np.log(S) if f in (sc.entropy, sc.effective_support) else 0)
            close(got, want, t, work=work, absolute=2 * tiny(t) + (work * F32_EPS if f is sc.entropy else 0))
        np.testing.assert_array_equal(sc.saturated(p[t]), sc.saturated(p[np.float64]))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 5), st.integers(1, 2048), st.sampled_from([1e-3, 1.0, 64.0, 1e3]), st.integers(0, 2 ** 16))
def test_qk_normalize_agrees(rows, width, size, seed):
    """Unit rows in every dtype, also where float16 squares overflow (|x| = 1e3) or underflow (1e-3)."""
    x = same_numbers(np.random.default_rng(seed).standard_normal((rows, width)) * size)
    want = sc.qk_normalize(x[np.float64])
    for t in LOW:
        got = sc.qk_normalize(x[t])
        assert got.dtype == t
        close(got, want, t, rel=1, work=0, absolute=eps(t))   # computed in float64, rounded once
        np.testing.assert_allclose(np.linalg.norm(got.astype(np.float64), axis=-1), 1, rtol=np.sqrt(width) * eps(t))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 8), st.integers(1, 300), st.sampled_from([2, 16, 64]), st.booleans(), st.integers(0, 2 ** 16))
def test_attention_and_backward_agree(L, S, E, causal, seed):
    """Same q, k, v in each dtype: weights, output and gradients agree with float64 up to the rounding
    of the logits themselves in float16 (|z| eps / 2 relative on each weight) and of the results."""
    rng = np.random.default_rng(seed)
    q, k, v, g = (same_numbers(rng.standard_normal(s)) for s in ((L, E), (S, E), (S, 3), (L, 3)))
    out64, w64 = sc.attention(q[np.float64], k[np.float64], v[np.float64], causal=causal)
    grads64 = sc.attention_backward(q[np.float64], k[np.float64], v[np.float64], g[np.float64], causal=causal)
    z = np.abs(q[np.float64] @ k[np.float64].T).max() / np.sqrt(E)
    zabs = (np.abs(q[np.float64]) @ np.abs(k[np.float64]).T).max() / np.sqrt(E)   # sum |q_i k_i| |scale|
    for t in LOW:
        out, w = sc.attention(q[t], k[t], v[t], causal=causal)
        assert out.dtype == w.dtype == t
        # result rounding, the logits' rounding to t, their float32 accumulation, the softmax's few ulps
        slack = eps(t) * (2 + z) + F32_EPS * (16 + 4 * zabs)
        np.testing.assert_allclose(w, w64, rtol=slack, atol=2 * tiny(t) + slack / S)
        np.testing.assert_allclose(out, out64, atol=slack * np.abs(v[np.float64]).max() * 2)
        for got, want, a in zip(sc.attention_backward(q[t], k[t], v[t], g[t], causal=causal), grads64, (k, q, g)):
            assert got.dtype == t
            size = np.abs(want).max() + np.abs(a[np.float64]).max() * np.abs(g[np.float64]).max()
            np.testing.assert_allclose(got, want, atol=8 * slack * size)


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(sc.RULE_NAMES), st.sampled_from([4, 64, 512]), st.integers(2, 24),
       st.sampled_from([0.5, 1.0, 2.0]), st.sampled_from([0.0, 0.5, 0.9]), st.integers(0, 999))
def test_row_stats_agree_where_float16_does_not_overflow(rule, d_k, n, sigma, rho, seed):
    """The page's readouts of the same draws in each dtype (scaled rules, logits well below 65504)."""
    q, k, v = sc.draw_qkv(n, d_k, sigma=sigma, rho=rho, seed=seed, dtype=np.float16)
    stats = {}
    for t in (np.float16, np.float32, np.float64):
        _, w, z = sc.rule_attention(q.astype(t), k.astype(t), v.astype(t), rule, alpha=0.75, temperature=0.25)
        stats[t] = (sc.row_stats(w, z), w.astype(np.float64).max(axis=-1))
    want, tops = stats[np.float64]
    zmax = np.abs(sc.rule_attention(*(a.astype(np.float64) for a in (q, k, v)), rule, alpha=0.75,
                                    temperature=0.25)[2]).max()
    if rule == "none" and zmax > 1e4:
        return                                                       # float16 overflows: reported, not compared
    for t in LOW:
        got = stats[t][0]
        # weights move by the logits' rounding |z| eps, their float32 accumulation and the softmax's ulps
        slack = eps(t) * (4 + 2 * zmax) + F32_EPS * (16 + 4 * zmax * np.sqrt(d_k))
        # logits: rounded to t, and accumulated over d_k products in float32
        assert got["logit_std"] == pytest.approx(want["logit_std"], rel=4 * eps(t) + 4 * F32_EPS * np.sqrt(d_k),
                                                 abs=tiny(t))
        assert got["max_weight"] == pytest.approx(want["max_weight"], abs=slack)
        assert got["entropy"] == pytest.approx(want["entropy"], abs=slack * np.log(n) * 2 + slack)
        assert got["effective_support"] == pytest.approx(want["effective_support"], rel=slack * np.log(n) * 2 + slack)
        assert got["jacobian_norm"] == pytest.approx(want["jacobian_norm"], abs=2 * slack)
        near = np.abs(tops - sc.SATURATION) <= slack                 # rows that may fall either side
        assert abs(got["saturated"] - want["saturated"]) <= near.mean() + 1e-12
