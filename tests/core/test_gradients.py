"""The gradient that reaches q under each rule, the saturation share, and QK-norm's overflow-safe norm."""
import numpy as np
import pytest

import sdpa_core as sc
from sdpa_core.scaling import RULE_NAMES


def _torch_rule_dq(torch, q, k, v, g, rule, alpha, temperature, causal):
    qt, kt, vt = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (q, k, v))
    qn, kn = qt, kt
    if sc.RULES[rule].normalizes:
        qn = qt / qt.norm(dim=-1, keepdim=True)
        kn = kt / kt.norm(dim=-1, keepdim=True)
    scale = sc.logit_scale(q.shape[-1], rule, alpha=alpha, temperature=temperature, n=k.shape[0])
    cap = sc.RULES[rule].cap
    if cap is None:
        out = torch.nn.functional.scaled_dot_product_attention(qn[None], kn[None], vt[None], scale=scale,
                                                               is_causal=causal)[0]
    else:  # Gemma 2's eager attention (transformers' modeling_gemma2): scale, cap tanh(z / cap), mask, softmax
        z = cap * torch.tanh(scale * qn @ kn.T / cap)
        if causal:
            z = z.masked_fill(~torch.ones(z.shape, dtype=torch.bool).tril(), float("-inf"))
        out = z.softmax(-1) @ vt
    (out * torch.tensor(g)).sum().backward()
    return qt.grad.numpy(), kt.grad.numpy(), vt.grad.numpy()


@pytest.mark.parametrize("rule", RULE_NAMES)
@pytest.mark.parametrize("causal", [False, True])
def test_rule_gradients_match_torch_autograd(torch, rule, causal):
    """dq, dk, dv of every rule, QK-norm's normalisation included, equal torch autograd's."""
    q, k, v = sc.draw_qkv(6, 32, sigma=1.3, rho=0.4, seed=5)
    g = sc.upstream_gradient(6, 32, seed=5)
    got = sc.rule_gradients(q, k, v, g, rule, alpha=0.7, temperature=0.2, causal=causal)
    want = _torch_rule_dq(torch, q, k, v, g, rule, 0.7, 0.2, causal)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("causal", [False, True])
def test_query_gradient_norms_are_the_rows_of_dq(causal):
    """query_gradient_norms stacks ||dL/dq_i|| of each draw (seed, seed+1, ...) for every rule: its one
    batched, dq-only backward pass per rule gives rule_gradients' dq of each draw alone, to 1e-12 relative
    above each row's round-off floor (below it a norm is round-off, which the kernel and path decide: 14
    unscaled rows here sit at 1e-17 of their floor)."""
    norms = sc.query_gradient_norms(8, 64, RULE_NAMES, reps=3, seed=11, rho=0.3, sigma=1.7, causal=causal)
    for rule in RULE_NAMES:
        rows = []
        for s in (11, 12, 13):
            q, k, v = sc.draw_qkv(8, 64, rho=0.3, sigma=1.7, seed=s)
            dq = sc.rule_gradients(q, k, v, sc.upstream_gradient(8, 64, seed=s), rule, causal=causal)[0]
            rows.append(np.linalg.norm(dq, axis=-1))
        want = np.concatenate(rows)
        off = np.abs(norms[rule] - want) - (1e-12 * want + norms.floors[rule])
        assert (off <= 0).all(), (rule, norms[rule][off > 0], want[off > 0])


def test_query_gradient_norms_carry_each_rows_round_off_floor():
    """Each row's floor is its draw's dq_floor (rule_readouts): a count against a threshold below it
    would count round-off. Flushing sets exactly the norms below it to 0."""
    raw = sc.query_gradient_norms(8, 256, ("none", "sqrt"), reps=2, seed=3, rho=0.9, sigma=2.0)
    flushed = sc.query_gradient_norms(8, 256, ("none", "sqrt"), reps=2, seed=3, rho=0.9, sigma=2.0,
                                      flush_round_off=True)
    for rule in ("none", "sqrt"):
        want = []
        for s in (3, 4):
            q, k, v = sc.draw_qkv(8, 256, rho=0.9, sigma=2.0, seed=s)
            want.append(np.full(8, sc.rule_readouts(q, k, v, sc.upstream_gradient(8, 256, seed=s), rule)["dq_floor"]))
        np.testing.assert_array_equal(raw.floors[rule], np.concatenate(want))
        below = raw[rule] < raw.floors[rule]
        assert below.any() or rule == "sqrt"   # the unscaled rows at rho = 0.9, d_k = 256 are round-off
        np.testing.assert_array_equal(flushed[rule], np.where(below, 0.0, raw[rule]))


def test_without_scaling_the_total_grows_while_most_rows_starve():
    """At d_k = 1024 the unscaled total ||dL/dQ|| is larger than with 1/sqrt(d_k), yet about half the
    rows get less than 1/1000 of the scaled median: saturation makes the gradient sparse."""
    g = sc.query_gradient_norms(16, 1024, ("none", "sqrt"), reps=10)
    total = {r: np.sqrt((g[r] ** 2).sum()) for r in g}
    assert total["none"] > 3 * total["sqrt"]
    starved = (g["none"] < 1e-3 * np.median(g["sqrt"])).mean()
    assert 0.3 < starved < 0.8
    assert (g["sqrt"] < 1e-3 * np.median(g["sqrt"])).mean() == 0


def test_saturated_counts_rows_above_the_threshold_and_only_grows_with_sharpness():
    """saturated() is monotone in the temperature of a row, unlike the Jacobian norm, which peaks at a tie."""
    z = np.random.default_rng(0).standard_normal((200, 16))
    shares = [sc.saturated(sc.softmax(z * t)).mean() for t in (0.5, 2, 8, 32, 128)]
    assert shares == sorted(shares) and shares[0] == 0 and shares[-1] > 0.9
    assert float(sc.jacobian_norm(np.array([0.5, 0.5]))) == pytest.approx(0.5)
    assert float(sc.jacobian_norm(np.full(16, 1 / 16))) < float(sc.jacobian_norm(np.array([0.5, 0.5] + [0] * 14)))


def test_row_stats_reports_overflowed_logits_as_infinite_spread():
    """float16 logits past 65504 give logit_std = inf (shown as overflow), not NaN."""
    q, k, v = sc.draw_qkv(8, 4096, sigma=8.0, rho=1.0, dtype=np.float16)
    _, w, z = sc.rule_attention(q, k, v, "none")
    stats = sc.row_stats(w, z)
    assert stats["logit_std"] == float("inf")
    assert set(stats) == set(sc.METRICS)


@pytest.mark.parametrize("x", [np.full((2, 2048), 64.0, np.float16), np.array([[3e200, 4e200]]),
                               np.array([[1e-300, 0.0]])])
def test_qk_normalize_gives_unit_rows_even_where_squaring_would_overflow(x):
    """QK-norm's vectors have length 1 in float16 at |x| = 64 and in float64 at 3e200 (no 0 rows)."""
    y = sc.qk_normalize(x)
    assert y.dtype == x.dtype
    np.testing.assert_allclose(np.linalg.norm(y.astype(np.float64), axis=-1), 1.0, rtol=2e-3)


def test_qknorm_float16_agrees_with_float64():
    """In float16, QK-norm's readouts agree with float64's (no silent zero vectors)."""
    stats = {}
    for dtype in (np.float16, np.float64):
        q, k, v = sc.draw_qkv(16, 2048, sigma=8.0, rho=1.0, dtype=dtype)
        _, w, z = sc.rule_attention(q, k, v, "qknorm")
        stats[dtype] = sc.row_stats(w, z)
    assert stats[np.float16]["entropy"] == pytest.approx(stats[np.float64]["entropy"], abs=0.05)
    assert stats[np.float16]["logit_std"] == pytest.approx(stats[np.float64]["logit_std"], rel=0.02)
