"""Masks of every dtype against every compute dtype, logits at the ends of each float range, masked
and non-contiguous arrays: each is refused with a clear message or computed right, never NaN or a
RuntimeWarning in silence (once, a float64 mask entry 1e39 became +inf in float32; entropy of
[1e308, -1e308] was NaN; warnings leaked at +-1.7e308; np.ma lost its mask)."""
import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import sdpa_core as sc
from sdpa_core.softmax import compute_dtype

FLOATS = (np.float16, np.float32, np.float64)
MASK_DTYPES = FLOATS + (np.bool_,)
# the ends of every float range, and values each cast turns into something else (1e39 is +inf in
# float32, 65520 is +inf in float16, 1e-46 is 0 in float32)
EXTREMES = [0.0, 1.0, -1.0, 30.0, -30.0, 65504.0, -65504.0, 65520.0, -65520.0, 3.4e38, -3.4e38, 1e39, -1e39,
            1.7e308, -1.7e308, float(np.finfo(np.float64).max), -float(np.finfo(np.float64).max), 1e-46, 5e-324,
            -np.inf, np.inf, np.nan]
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(autouse=True)
def _no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


def _cast(a: np.ndarray, dtype) -> np.ndarray:
    with np.errstate(over="ignore"):
        return a.astype(dtype)


def _layout(a: np.ndarray, how: str) -> np.ndarray:
    """The same values as a C-contiguous, Fortran-ordered or strided (every other column) array."""
    if how == "fortran":
        return np.asfortranarray(a)
    if how == "strided":
        wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        wide[..., ::2] = a
        return wide[..., ::2]
    return np.ascontiguousarray(a)


LAYOUTS = st.sampled_from(["c", "fortran", "strided"])


@st.composite
def masked_attention(draw):
    dtype = draw(st.sampled_from(FLOATS))
    mask_dtype = draw(st.sampled_from(MASK_DTYPES))
    L, S, E = draw(st.integers(1, 4)), draw(st.integers(1, 5)), draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 16)))
    q, k, v = (rng.standard_normal(s).astype(dtype) for s in ((L, E), (S, E), (S, 2)))
    shape = draw(st.sampled_from([(L, S), (1, S), (S,)]))
    if mask_dtype is np.bool_:
        mask = draw(hnp.arrays(np.bool_, shape))
    else:
        mask = _cast(draw(hnp.arrays(np.float64, shape, elements=st.sampled_from(EXTREMES))), mask_dtype)
    layouts = draw(st.tuples(LAYOUTS, LAYOUTS))
    return _layout(q, layouts[0]), k, v, _layout(mask, layouts[1])


@SETTINGS
@given(case=masked_attention())
def test_a_mask_of_any_dtype_is_checked_in_the_dtype_the_logits_are_computed_in(case, torch):
    """A float mask is cast to the compute dtype (float32 for float16 q) and refused if it then holds NaN
    or +inf; otherwise weights, output and gradients are finite and those of PyTorch given the mask in
    that dtype (PyTorch itself refuses a float mask whose dtype is not the query's)."""
    q, k, v, mask = case
    cd = compute_dtype(q.dtype)
    bias = mask if mask.dtype == np.bool_ else _cast(mask, cd)
    g = np.ones((q.shape[0], 2), q.dtype)
    if mask.dtype != np.bool_ and (np.isnan(bias).any() or np.isposinf(bias).any()):
        for call in (lambda: sc.attention(q, k, v, mask=mask), lambda: sc.attention_backward(q, k, v, g, mask=mask)):
            with pytest.raises(ValueError, match=r"^mask (contains NaN or \+inf|has an entry .* past float(32|64)'s largest)"):
                call()
        return
    out, w = sc.attention(q, k, v, mask=mask)
    grads = sc.attention_backward(q, k, v, g, mask=mask)
    for a in (out, w, *grads):
        assert a.dtype == q.dtype and np.isfinite(a).all()
    sums = w.astype(np.float64).sum(-1)
    assert np.all((np.abs(sums - 1) < 1e-2) | (sums == 0)), sums
    t = [torch.tensor(a.astype(cd), requires_grad=True) for a in (q, k, v)]
    tmask = torch.tensor(bias)
    ref = torch.nn.functional.scaled_dot_product_attention(*t, attn_mask=tmask)
    ref.backward(torch.tensor(g.astype(cd)))
    logits = t[0].detach() @ t[1].detach().T / math.sqrt(q.shape[-1])
    logits = logits.masked_fill(~tmask, -math.inf) if mask.dtype == np.bool_ else logits + tmask
    ref_w = torch.nan_to_num(torch.softmax(logits, -1), nan=0.0)   # a row with no allowed key: zeros, as here
    tol = dict(rtol=2e-2, atol=2e-3) if cd != np.float64 else dict(rtol=1e-6, atol=1e-9)
    # mask entries of +-65504 keep the logits only to 0.004 in float32: weights to about 0.4%
    np.testing.assert_allclose(w.astype(np.float64), ref_w.numpy(), **tol)
    np.testing.assert_allclose(out.astype(np.float64), ref.detach().numpy(), **tol)
    for ours, theirs in zip(grads, t):
        np.testing.assert_allclose(ours.astype(np.float64), theirs.grad.numpy(), **tol)


def test_a_float64_mask_past_float32s_range_is_refused_for_float32_inputs():
    """The issue's case: 1e39 passed the '+inf refused' check in float64, then was +inf in float32."""
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (5, 4), (5, 2)))
    mask = np.zeros((3, 5))
    mask[0, 0] = 1e39
    for call in (lambda: sc.attention(q, k, v, mask=mask),
                 lambda: sc.attention_backward(q, k, v, np.ones((3, 2), np.float32), mask=mask)):
        with pytest.raises(ValueError, match=r"mask has an entry \(1e\+39\) past float32's largest number"):
            call()
    # the same mask is fine for float64 inputs, and -1e39 (forbidden in float32, -inf) is fine for both
    assert np.isfinite(sc.attention(q.astype(np.float64), k, v, mask=mask)[0]).all()
    out, w = sc.attention(q, k, v, mask=-mask)
    assert w[0, 0] == 0 and np.isfinite(out).all()


# ---- logits at the ends of each range ----------------------------------------------------------------------
def _extremes(dtype):
    f = np.finfo(dtype)
    values = [0.0, 1.0, -1.0, float(f.max), -float(f.max), float(f.max) / 2, -float(f.max) / 2, float(f.tiny),
              float(f.smallest_subnormal), -float(f.smallest_subnormal), float(f.max) * (1 - float(f.eps))]
    return st.sampled_from([float(dtype(x)) for x in values])


@st.composite
def extreme_logits(draw, neg_inf=True):
    dtype = draw(st.sampled_from(FLOATS))
    elements = st.one_of(_extremes(dtype), st.just(-np.inf)) if neg_inf else _extremes(dtype)
    x = draw(hnp.arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(1, 4)), elements=elements)).astype(dtype)
    return _layout(x, draw(LAYOUTS))


@SETTINGS
@given(x=extreme_logits())
def test_softmax_and_log_softmax_at_the_ends_of_each_range_match_torch_without_warnings(x, torch):
    """+-max, max/2, subnormals and -inf, in float16, 32 and 64, contiguous or not: no RuntimeWarning,
    and the values of torch.softmax and torch.log_softmax (computed in float32 for float16, rounded once)."""
    cd = compute_dtype(x.dtype)
    t = torch.tensor(x.astype(cd))
    want_p = _cast(torch.nan_to_num(torch.softmax(t, -1), nan=0.0).numpy(), x.dtype)  # all -inf rows: zeros here
    want_logp = _cast(torch.log_softmax(t, -1).numpy(), x.dtype)                     # -131008 is -inf in float16
    all_neg_inf = np.isneginf(x).all(-1)
    want_logp[all_neg_inf] = -np.inf                                                   # torch gives NaN there
    p, logp = sc.softmax(x), sc.log_softmax(x)
    assert p.dtype == logp.dtype == x.dtype
    np.testing.assert_allclose(p.astype(np.float64), want_p.astype(np.float64), rtol=4 * float(np.finfo(x.dtype).eps),
                               atol=float(np.finfo(x.dtype).smallest_subnormal))
    np.testing.assert_allclose(logp.astype(np.float64), want_logp.astype(np.float64),
                               rtol=4 * float(np.finfo(x.dtype).eps), atol=4 * float(np.finfo(x.dtype).eps))
    naive = sc.naive_softmax(x)         # overflows on purpose, but says nothing
    assert naive.shape == x.shape


@SETTINGS
@given(x=extreme_logits(neg_inf=False))
def test_entropy_from_logits_at_the_ends_of_each_range_is_the_limit(x, torch):
    """Entropy is in [0, log S] and equals -sum p log p of torch's log_softmax, with 0 log 0 = 0: a row
    [1e308, -1e308] has entropy 0 (was NaN)."""
    h = sc.entropy_from_logits(x)
    assert h.dtype == x.dtype and np.isfinite(h).all()
    logp = torch.log_softmax(torch.tensor(x.astype(np.float64)), -1)
    want = -torch.where(logp > -math.inf, logp.exp() * logp, torch.zeros_like(logp)).sum(-1).numpy()
    np.testing.assert_allclose(h.astype(np.float64), want, rtol=4e-3 if x.dtype == np.float16 else 1e-5, atol=2e-3)
    assert (h >= 0).all() and (h.astype(np.float64) <= math.log(x.shape[-1]) + 1e-3).all()


@pytest.mark.parametrize("logits,dtype", [([1e308, -1e308], np.float64), ([3e38, -3e38], np.float32),
                                          ([65504, -65504], np.float16), ([1.7e308, -1.7e308, 0.0], np.float64)])
def test_entropy_of_logits_at_opposite_ends_is_exactly_zero(logits, dtype):
    h = sc.entropy_from_logits(np.array(logits, dtype))
    assert h == 0 and not np.signbit(h)


@pytest.mark.parametrize("fn,x,want", [
    (sc.softmax, np.array([1.7e308, -1.7e308]), [1.0, 0.0]),
    (sc.log_softmax, np.array([1.7e308, -1.7e308]), [0.0, -np.inf]),       # -3.4e308 rounds to -inf
    (sc.softmax, np.array([-1.7e308, 1.7e308]), [0.0, 1.0]),
    (sc.log_softmax, np.array([65504, 65504, -65504], np.float16), [-math.log(2), -math.log(2), -np.inf]),
])
def test_the_issues_warning_cases_are_quiet_and_right(fn, x, want):
    np.testing.assert_allclose(fn(x).astype(np.float64), want, rtol=1e-3)


# ---- masked and non-contiguous arrays ----------------------------------------------------------------------
MASKED = np.ma.masked_array(np.arange(6.0).reshape(2, 3), mask=[[0, 1, 0], [0, 0, 1]])


@pytest.mark.parametrize("call,name", [
    (lambda: sc.softmax(MASKED), "x"),
    (lambda: sc.log_softmax(MASKED), "x"),
    (lambda: sc.entropy_from_logits(MASKED), "logits"),
    (lambda: sc.entropy(np.ma.masked_array([0.5, 0.5], mask=[0, 1])), "p"),
    (lambda: sc.attention(MASKED, MASKED, MASKED), "q"),
    (lambda: sc.attention(np.ones((2, 3)), np.ones((2, 3)), np.ones((2, 3)), mask=np.ma.masked_array(np.zeros((2, 2)), mask=[[0, 1], [0, 0]])), "mask"),
])
def test_a_masked_array_is_refused_saying_its_mask_would_be_lost(call, name):
    with pytest.raises(TypeError, match=rf"^{name} is a numpy masked array \(np\.ma\); its mask would be ignored"):
        call()


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(FLOATS), st.tuples(LAYOUTS, LAYOUTS, LAYOUTS, LAYOUTS), st.integers(0, 2 ** 16))
def test_non_contiguous_inputs_give_the_same_results_as_contiguous_ones(dtype, layouts, seed):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(dtype) for s in ((3, 4), (5, 4), (5, 2), (3, 2))]
    mask = rng.standard_normal((3, 5)) * 3
    views = [_layout(a, how) for a, how in zip(arrays, layouts)]
    assert any(not a.flags.c_contiguous for a in views) or layouts == ("c",) * 4
    for fn in (lambda q, k, v, g, m: sc.attention(q, k, v, mask=m),
               lambda q, k, v, g, m: sc.attention_backward(q, k, v, g, mask=m, causal=True)):
        for a, b in zip(fn(*views, _layout(mask, layouts[0])), fn(*arrays, mask)):
            np.testing.assert_array_equal(a, b)
    for fn in (sc.softmax, sc.log_softmax, sc.entropy_from_logits):
        np.testing.assert_array_equal(fn(views[0]), fn(arrays[0]))
        np.testing.assert_array_equal(fn(views[0].T, axis=0), fn(arrays[0].T.copy(), axis=0))
