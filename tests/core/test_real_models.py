"""head_at_init / PRESETS against a direct computation: random weights of each preset's exact shape (the whole
d_model x d_model projection where QK-norm spans all heads), LayerNorm'd / RMSNorm'd random tokens, logits,
and torch's softmax.

Tolerance: 4 combined standard errors (each side's std across independent heads / sqrt(heads)); a head's
figures vary from head to head (fresh weights), which both standard errors include.
"""
import math

import numpy as np
import pytest

import sdpa_core as sc
from sdpa_core.real_models import PRESETS, VARIANTS

Z = 4.0


def direct(p, n, heads, seed, torch):
    """Per-head logit rms, top weight, tokens attended and entropy (means over queries), for each variant."""
    rng = np.random.default_rng(seed)
    d_model, d_k = p.d_model, p.d_model // p.heads
    factors = {"model": 1 / math.sqrt(d_k) if p.scale == "sqrt" else 1.0, "unscaled": 1.0,
               "sqrt_d_k": 1 / math.sqrt(d_k), "sqrt_d_model": 1 / math.sqrt(d_model)}
    out = {v: {"logit_std": [], "top_weight": [], "tokens_attended": [], "entropy": []} for v in VARIANTS}
    for _ in range(heads):
        x = rng.standard_normal((n, d_model), dtype=np.float32)
        if p.layernorm and p.label in ("LLaMA-2-7B", "T5-base"):  # RMSNorm: no centring
            x = x / np.sqrt((x * x).mean(1, keepdims=True))
        elif p.layernorm:
            x = (x - x.mean(1, keepdims=True)) / x.std(1, keepdims=True)
        else:
            x = x * p.input_std
        width = d_model if p.qk_norm == "all" else d_k  # the projection the norm runs over
        q = x @ (np.float32(p.q_std) * rng.standard_normal((d_model, width), dtype=np.float32))
        k = x @ (np.float32(p.k_std) * rng.standard_normal((d_model, width), dtype=np.float32))
        if p.qk_norm != "none":
            q = q / np.sqrt((q * q).mean(1, keepdims=True))
            k = k / np.sqrt((k * k).mean(1, keepdims=True))
        q, k = q[:, :d_k].astype(np.float64), k[:, :d_k].astype(np.float64)
        for v, f in factors.items():
            z = torch.tensor(f * q @ k.T)
            w = torch.softmax(z, -1)
            ent = -(w * torch.log_softmax(z, -1)).sum(-1)
            out[v]["logit_std"].append(float(z.pow(2).mean().sqrt()))
            out[v]["top_weight"].append(float(w.max(-1).values.mean()))
            out[v]["tokens_attended"].append(float(ent.exp().mean()))
            out[v]["entropy"].append(float(ent.mean()))
    return {v: {m: np.array(x) for m, x in d.items()} for v, d in out.items()}


# (preset, n, heads drawn directly): the big projections get a handful of heads
CASES = [("gpt2", 64, 40), ("bert-base", 64, 40), ("t5-base", 64, 40), ("llama-2-7b", 64, 12),
         ("vit-22b", 64, 8), pytest.param("olmo-2-7b", 32, 4, marks=pytest.mark.slow)]  # two 4096 x 4096 per head


@pytest.mark.parametrize("name,n,heads", CASES, ids=["gpt2", "bert-base", "t5-base", "llama-2-7b", "vit-22b", "olmo-2-7b"])
def test_preset_matches_a_direct_computation(name, n, heads, torch):
    p = PRESETS[name]
    r = sc.preset_at_init(name, n=n, samples=64, seed=1)
    ref = direct(p, n, heads, seed=2, torch=torch)
    for v in VARIANTS:
        assert r["theory"][v] == pytest.approx(ref[v]["logit_std"].mean(), rel=0.05), (v, "theory")
        for m in ("logit_std", "top_weight", "tokens_attended", "entropy"):
            x = ref[v][m]
            se = math.hypot(r["mc"][v][m + "_se"], x.std(ddof=1) / math.sqrt(len(x)))
            assert abs(r["mc"][v][m] - x.mean()) < Z * se + 1e-12, (v, m, r["mc"][v][m], x.mean(), se)


def test_theory_closed_forms_and_the_bug():
    r = sc.head_at_init(4096, 32, init_std=0.02, n=16, samples=2)
    q = math.sqrt(4096) * 0.02
    assert r["q_entry_std"] == pytest.approx(q)
    assert r["theory"]["unscaled"] == pytest.approx(math.sqrt(128) * q * q)
    assert r["theory"]["sqrt_d_k"] == pytest.approx(q * q)
    assert r["bug_factor"] == pytest.approx(r["theory"]["sqrt_d_model"] / r["theory"]["sqrt_d_k"])
    assert r["bug_factor"] == pytest.approx(1 / math.sqrt(32)) and r["bug_temperature"] == pytest.approx(math.sqrt(32))
    assert sc.head_at_init(768, 8, n=16, samples=2)["bug_temperature"] == pytest.approx(2.8284271)


@pytest.mark.parametrize("d_model,heads,init_std,layernorm", [(256, 32, 0.5, True), (2048, 8, 0.001, False),
                                                            (512, 4, 3.0, True)])
def test_qk_norm_makes_the_logit_std_one(d_model, heads, init_std, layernorm):
    """After RMSNorm on q and k (per head or over all heads) and 1/sqrt(d_k), the logits have std 1 whatever
    d_k and init_std; without it they scale with d_model init_std^2."""
    for qk in ("head", "all"):
        r = sc.head_at_init(d_model, heads, init_std=init_std, layernorm=layernorm, input_std=2.0, qk_norm=qk,
                            n=64, samples=64)
        assert r["theory"]["sqrt_d_k"] == 1.0
        assert abs(r["mc"]["sqrt_d_k"]["logit_std"] - 1) < Z * r["mc"]["sqrt_d_k"]["logit_std_se"]
    plain = sc.head_at_init(d_model, heads, init_std=init_std, layernorm=layernorm, input_std=2.0, n=64, samples=64)
    x2 = 1.0 if layernorm else 4.0
    assert plain["theory"]["sqrt_d_k"] == pytest.approx(d_model * x2 * init_std ** 2)
    assert abs(plain["mc"]["sqrt_d_k"]["logit_std"] / plain["theory"]["sqrt_d_k"] - 1) < 0.05


def test_small_d_model_below_n_draws_tokens_directly(torch):
    """d_model < n takes the direct path; raw inputs of std 2: same figures as a direct computation."""
    p = sc.real_models.Preset("tiny", 16, 2, 0.3, 0.2, "sqrt", False, "none", "test", input_std=2.0)
    r = sc.head_at_init(16, 2, q_std=0.3, k_std=0.2, layernorm=False, input_std=2.0, n=32, samples=400, seed=3)
    ref = direct(p, 32, 100, seed=4, torch=torch)
    for m in ("logit_std", "top_weight", "entropy"):
        x = ref["unscaled"][m]
        assert abs(r["mc"]["unscaled"][m] - x.mean()) < Z * math.hypot(r["mc"]["unscaled"][m + "_se"],
                                                                         x.std(ddof=1) / math.sqrt(len(x)))


def test_presets_are_documented_and_consistent():
    for name, p in PRESETS.items():
        assert p.d_model % p.heads == 0 and p.source.strip() and p.qk_norm in sc.real_models.QK_NORMS
        r = sc.preset_at_init(name, n=16, samples=2)
        assert r["preset"] is p and r["d_k"] == p.d_k
    t5 = PRESETS["t5-base"]
    assert t5.scale == "none" and t5.q_std == pytest.approx((768 * 64) ** -0.5) and t5.k_std == pytest.approx(768 ** -0.5)
    assert sc.preset_at_init("t5-base", n=16, samples=2)["theory"]["model"] == pytest.approx(1.0)


def test_deterministic_given_seed():
    a, b = sc.head_at_init(512, 8, n=32, samples=3, seed=5), sc.head_at_init(512, 8, n=32, samples=3, seed=5)
    assert a["mc"] == b["mc"]
    assert a["mc"] != sc.head_at_init(512, 8, n=32, samples=3, seed=6)["mc"]


@pytest.mark.parametrize("kwargs,name", [
    ({"d_model": 0, "heads": 1}, "d_model"), ({"d_model": 768.0, "heads": 12}, "d_model"),
    ({"d_model": 768, "heads": 7}, "heads"), ({"d_model": 768, "heads": 0}, "heads"),
    ({"d_model": 768, "heads": 12, "init_std": 0}, "init_std"), ({"d_model": 768, "heads": 12, "q_std": -1}, "q_std"),
    ({"d_model": 768, "heads": 12, "k_std": float("nan")}, "k_std"),
    ({"d_model": 768, "heads": 12, "layernorm": 1}, "layernorm"),
    ({"d_model": 768, "heads": 12, "input_std": 0}, "input_std"),
    ({"d_model": 768, "heads": 12, "qk_norm": True}, "qk_norm"), ({"d_model": 768, "heads": 12, "qk_norm": "x"}, "qk_norm"),
    ({"d_model": 768, "heads": 12, "scale": "d_model"}, "scale"), ({"d_model": 768, "heads": 12, "n": 1}, "n"),
    ({"d_model": 768, "heads": 12, "samples": 0}, "samples"), ({"d_model": 768, "heads": 12, "seed": -1}, "seed"),
    ({"d_model": 768, "heads": 12, "n": 4096, "samples": 4096}, "samples"),
])
def test_bad_arguments_are_refused_by_name(kwargs, name):
    with pytest.raises((TypeError, ValueError), match=rf"\b{name}\b"):
        sc.head_at_init(**kwargs)


@pytest.mark.parametrize("bad", [None, 3, "gpt-2", "GPT2"])
def test_unknown_preset_is_refused(bad):
    with pytest.raises((TypeError, ValueError), match=r"\bname\b"):
        sc.preset_at_init(bad)


@pytest.mark.parametrize("heads, q_std, k_std, layernorm, qk_norm, scale",
                         [(12, 0.02, 0.02, True, "none", "sqrt"), (12, 0.0361, 0.0014, True, "none", "none"),
                          (32, 0.02, 0.02, False, "none", "sqrt"), (8, 0.02, 0.02, True, "head", "sqrt")])
def test_logit_std_at_init_is_head_at_inits_closed_form_at_every_width(heads, q_std, k_std, layernorm, qk_norm, scale):
    """The width figure's curves: at each width, the same closed form head_at_init gives, and at one width the
    Monte-Carlo logit std of fresh heads (within 4 standard errors)."""
    widths = [heads * d for d in (8, 64, 512)]
    curves = sc.real_models.logit_std_at_init(widths, heads, q_std=q_std, k_std=k_std, layernorm=layernorm,
                                              input_std=2.0, qk_norm=qk_norm, scale=scale)
    for i, w in enumerate(widths):
        one = sc.head_at_init(w, heads, q_std=q_std, k_std=k_std, layernorm=layernorm, input_std=2.0, qk_norm=qk_norm,
                              scale=scale, n=16, samples=64 if i == 1 else 2)
        for v in sc.real_models.VARIANTS:
            assert curves[v][i] == pytest.approx(one["theory"][v], rel=1e-12)
        if i == 1:
            mc = one["mc"]["unscaled"]
            assert abs(mc["logit_std"] - curves["unscaled"][i]) < Z * mc["logit_std_se"] + 0.03 * curves["unscaled"][i]


def test_logit_std_at_init_grows_like_width_to_the_one_and_a_half_at_a_fixed_init_std():
    """4× the width: 8× the unscaled std, 4× with 1/√d_k and with 1/√d_model (the figure's caption says the first two)."""
    s = sc.real_models.logit_std_at_init([1024, 4096], 16, q_std=0.01)
    assert s["unscaled"][1] / s["unscaled"][0] == pytest.approx(8)
    assert s["sqrt_d_k"][1] / s["sqrt_d_k"][0] == pytest.approx(4)
    assert s["sqrt_d_model"][1] / s["sqrt_d_model"][0] == pytest.approx(4)


@pytest.mark.parametrize("args, message", [(([100], 12), "multiple of heads"), (([], 12), "at least one width"),
                                           (([768], 0), "heads"), (([768], 12, ), None)])
def test_logit_std_at_init_refuses_bad_widths(args, message):
    if message is None:
        assert sc.real_models.logit_std_at_init(*args)["unscaled"].shape == (1,)
        return
    with pytest.raises(ValueError, match=message):
        sc.real_models.logit_std_at_init(*args)
