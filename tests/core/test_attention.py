"""attention / attention_backward against torch.nn.functional.scaled_dot_product_attention."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

from sdpa_core import attention, attention_backward

CASES = [
    # (batch, L, S, E, Ev, mask kind, causal, scale)
    ((), 5, 5, 8, 8, None, False, None),
    ((2, 3), 7, 11, 16, 4, None, False, None),
    ((4,), 9, 6, 32, 32, "bool", False, None),
    ((2, 2), 6, 9, 8, 5, "float", False, 0.3),
    ((3,), 8, 8, 4, 4, None, True, None),
    ((2,), 5, 12, 8, 8, None, True, 2.0),      # causal with L < S: top-left aligned
    ((2,), 12, 5, 8, 8, None, True, None),     # causal with L > S: late rows see every key
    ((1, 2), 10, 10, 64, 16, "bool", False, 1.0),
    ((), 4, 4, 3, 2, "float", False, -0.5),
]


def _inputs(batch, L, S, E, Ev, kind, dtype, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(batch + (L, E)).astype(dtype)
    k = rng.standard_normal(batch + (S, E)).astype(dtype)
    v = rng.standard_normal(batch + (S, Ev)).astype(dtype)
    mask = None
    if kind == "bool":
        mask = rng.random((L, S)) < 0.7
        mask[:, 0] = True  # torch's math path gives NaN for rows with no key; see test below
    elif kind == "float":
        mask = rng.standard_normal(batch + (L, S)).astype(dtype)
    return q, k, v, mask


def _torch(torch, q, k, v, mask, causal, scale):
    """PyTorch's SDPA on the same arrays (``torch``: the fixture, so only tests comparing with it need it)."""
    t = [torch.from_numpy(a).requires_grad_() for a in (q, k, v)]
    m = None if mask is None else torch.from_numpy(mask)
    out = torch.nn.functional.scaled_dot_product_attention(*t, attn_mask=m, is_causal=causal, scale=scale)
    return t, out


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-L{c[1]}-S{c[2]}-{c[5]}-causal{c[6]}")
@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 1e-5)])
def test_forward_matches_torch(torch, case, dtype, tol):
    """attention() reproduces PyTorch's SDPA: batch dims, L != S, bool/float masks, causal, custom scale."""
    batch, L, S, E, Ev, kind, causal, scale = case
    q, k, v, mask = _inputs(batch, L, S, E, Ev, kind, dtype, seed=len(CASES) + L * S)
    out, weights = attention(q, k, v, scale=scale, mask=mask, causal=causal)
    _, expected = _torch(torch, q, k, v, mask, causal, scale)
    assert out.dtype == dtype and weights.shape == batch + (L, S)
    np.testing.assert_allclose(out, expected.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-L{c[1]}-S{c[2]}-{c[5]}-causal{c[6]}")
def test_backward_matches_torch_autograd(torch, case):
    """attention_backward() equals torch autograd's gradients to 1e-9 in float64."""
    batch, L, S, E, Ev, kind, causal, scale = case
    q, k, v, mask = _inputs(batch, L, S, E, Ev, kind, np.float64, seed=7 + L)
    grad_out = np.random.default_rng(1).standard_normal(batch + (L, Ev))
    dq, dk, dv = attention_backward(q, k, v, grad_out, scale=scale, mask=mask, causal=causal)
    t, out = _torch(torch, q, k, v, mask, causal, scale)
    out.backward(torch.from_numpy(grad_out))
    for ours, theirs in zip((dq, dk, dv), t):
        np.testing.assert_allclose(ours, theirs.grad.numpy(), rtol=1e-9, atol=1e-9)


def test_backward_sums_over_broadcast_dims(torch):
    """A k and v shared across heads (broadcast) get the gradient summed over the heads, like torch."""
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 4, 5, 8))
    k, v = rng.standard_normal((2, 1, 6, 8)), rng.standard_normal((1, 1, 6, 3))
    g = rng.standard_normal((2, 4, 5, 3))
    dq, dk, dv = attention_backward(q, k, v, g)
    t = [torch.from_numpy(a).requires_grad_() for a in (q, k, v)]
    (torch.softmax(t[0] @ t[1].transpose(-1, -2) / np.sqrt(8), -1) @ t[2]).backward(torch.from_numpy(g))
    assert dk.shape == k.shape and dv.shape == v.shape
    for ours, theirs in zip((dq, dk, dv), t):
        np.testing.assert_allclose(ours, theirs.grad.numpy(), rtol=1e-9, atol=1e-9)


def test_causal_combined_with_mask_needs_both():
    """causal=True together with a mask allows a key only where both allow it."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((6, 4)) for _ in range(3))
    mask = rng.random((6, 6)) < 0.5
    mask[:, 0] = True
    _, w = attention(q, k, v, mask=mask, causal=True)
    _, w_ref = attention(q, k, v, mask=mask & np.tri(6, dtype=bool))
    np.testing.assert_array_equal(w, w_ref)
    assert (w[~(mask & np.tri(6, dtype=bool))] == 0).all()


def test_query_with_no_allowed_key_gives_zeros_without_warning():
    """A fully masked row gives all-zero weights and output: no NaN, no RuntimeWarning."""
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((3, 4)), rng.standard_normal((5, 4)), rng.standard_normal((5, 2))
    mask = np.ones((3, 5), bool)
    mask[1] = False
    fmask = np.where(mask, 0.0, -np.inf)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for m in (mask, fmask):
            out, w = attention(q, k, v, mask=m)
            assert np.isfinite(out).all() and (w[1] == 0).all() and (out[1] == 0).all()
            np.testing.assert_allclose(w[[0, 2]].sum(-1), 1)
            dq, dk, dv = attention_backward(q, k, v, np.ones((3, 2)), mask=m)
            assert (dq[1] == 0).all() and np.isfinite(dk).all()


def test_float16_overflow_is_real():
    """In float16 an unscaled logit above 65504 is inf, exactly as half-precision hardware gives."""
    q = np.full((1, 4096), 4.0, np.float16)
    out, w = attention(q, q, q, scale=1.0)  # q.q = 65536 > 65504
    assert out.dtype == np.float16 and np.isnan(w).all()
    out, w = attention(q, q, q)  # scaled first: 1024, fine
    assert np.isfinite(out).all() and w[0, 0] == 1


@pytest.mark.parametrize("args,kwargs,exc,match", [
    ((np.ones((2, 3), int), np.ones((2, 3)), np.ones((2, 3))), {}, TypeError, "floating-point"),
    ((np.ones(3), np.ones((2, 3)), np.ones((2, 3))), {}, ValueError, "at least 2 dimension"),
    ((np.ones((2, 3)), np.ones((2, 4)), np.ones((2, 3))), {}, ValueError, "same feature size E"),
    ((np.ones((2, 3)), np.ones((4, 3)), np.ones((5, 3))), {}, ValueError, "same number of keys"),
    ((np.ones((2, 2, 3)), np.ones((3, 2, 3)), np.ones((3, 2, 3))), {}, ValueError, "do not broadcast"),
    ((np.ones((2, 3)),) * 3, {"scale": float("nan")}, ValueError, "scale must be finite"),
    ((np.ones((2, 3)),) * 3, {"scale": "big"}, TypeError, "scale must be a real number"),
    ((np.ones((2, 3)),) * 3, {"mask": np.ones((3, 3), bool)}, ValueError, "does not broadcast"),
    ((np.ones((2, 3)),) * 3, {"mask": np.ones((2, 2), int)}, TypeError, "boolean .* or float"),
    ((np.ones((2, 3)),) * 3, {"causal": "yes"}, TypeError, "causal must be True or False"),
])
def test_bad_arguments_get_a_clear_message(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        attention(*args, **kwargs)


@settings(max_examples=60, deadline=None)
@given(batch=hnp.array_shapes(min_dims=0, max_dims=2, max_side=3), L=st.integers(1, 7), S=st.integers(1, 7),
       E=st.integers(1, 6), Ev=st.integers(1, 5), causal=st.booleans(), seed=st.integers(0, 2**16),
       p_allow=st.floats(0.0, 1.0))
def test_shapes_and_row_sums_for_any_mask(batch, L, S, E, Ev, causal, seed, p_allow):
    """For any shapes and masks: outputs have the documented shapes; each row of weights sums to 1
    if its query may attend to some key and is all zeros otherwise; masked keys get exactly 0."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal(batch + s) for s in ((L, E), (S, E), (S, Ev)))
    mask = rng.random((L, S)) < p_allow
    out, w = attention(q, k, v, mask=mask, causal=causal)
    assert out.shape == batch + (L, Ev) and w.shape == batch + (L, S)
    allowed = mask & np.tri(L, S, dtype=bool) if causal else mask
    assert (w[..., ~allowed] == 0).all()
    sums = w.sum(-1)
    np.testing.assert_allclose(sums, np.broadcast_to(allowed.any(-1).astype(float), sums.shape), atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(L=st.integers(1, 6), S=st.integers(1, 6), E=st.integers(1, 5), seed=st.integers(0, 2**16),
       causal=st.booleans())
def test_hypothesis_matches_torch(torch, L, S, E, seed, causal):
    """Random small cases, causal or not, agree with torch in float64."""
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal(s) for s in ((2, L, E), (2, S, E), (2, S, E)))
    mask = rng.standard_normal((L, S))
    out, _ = attention(q, k, v, mask=mask, causal=causal)
    if causal:  # torch refuses attn_mask with is_causal; fold the causal part into the float mask
        mask = np.where(np.tri(L, S, dtype=bool), mask, -np.inf)
    _, expected = _torch(torch, q, k, v, mask, False, None)
    expected = np.nan_to_num(expected.detach().numpy())  # torch's math path: NaN rows where ours are 0
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-10)


def test_float16_matches_a_float64_reference_within_half_precision():
    """float16 inputs stay float16 end to end and agree with float64 maths to half precision."""
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((2, 6, 16)).astype(np.float16) for _ in range(3))
    out, w = attention(q, k, v, causal=True)
    ref, wref = attention(*(a.astype(np.float64) for a in (q, k, v)), causal=True)
    assert out.dtype == w.dtype == np.float16
    np.testing.assert_allclose(out, ref, atol=8e-3)
    np.testing.assert_allclose(w, wref, atol=4e-3)
    dq, dk, dv = attention_backward(q, k, v, np.ones_like(out))
    assert dq.dtype == np.float16 and np.isfinite(dq).all()
