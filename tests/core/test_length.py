"""Sequence length: rules whose factor reads n (SSMax), and length_path's top weight and entropy against n,
checked against vectors drawn here with numpy and a softmax written here."""
import math

import numpy as np
import pytest

import sdpa_core as sc
from sdpa_core.scaling import SSMAX_S, Rule


def _softmax_rows(z):
    z = z - z.max(axis=-1, keepdims=True)
    p = np.exp(z)
    return p / p.sum(axis=-1, keepdims=True)


def _direct(n_max, ns, rule, *, d_k, sigma, rho, m, seed, temperature=0.1):
    """length_path's means from whole vectors: each of m queries with its own n_max keys, key 0 its own."""
    rng = np.random.default_rng(seed)
    q = sigma * rng.standard_normal((m, d_k))
    keys = sigma * rng.standard_normal((m, n_max, d_k))
    keys[:, 0] = rho * q + math.sqrt(1 - rho * rho) * keys[:, 0]
    out = {"top_weight": [], "own_weight": [], "entropy_ratio": []}
    for n in ns:
        k = keys[:, :n]
        if rule == "qknorm":
            qn = q / np.linalg.norm(q, axis=-1, keepdims=True)
            kn = k / np.linalg.norm(k, axis=-1, keepdims=True)
            z = np.einsum("md,mnd->mn", qn, kn) / temperature
        else:
            factor = {"none": 1.0, "sqrt": 1 / math.sqrt(d_k), "linear": 1 / d_k,
                      "ssmax": SSMAX_S * math.log(n) / math.sqrt(d_k)}[rule]
            z = factor * np.einsum("md,mnd->mn", q, k)
        p = _softmax_rows(z)
        ent = -(p * np.log(np.where(p > 0, p, 1.0))).sum(axis=-1)
        out["top_weight"].append(p.max(axis=-1))
        out["own_weight"].append(p[:, 0])
        out["entropy_ratio"].append(ent / math.log(n))
    return out


@pytest.mark.parametrize("rule", ["none", "sqrt", "linear", "qknorm", "ssmax"])
@pytest.mark.parametrize("d_k, sigma, rho", [(1, 1.0, 0.0), (8, 1.0, 0.5), (32, 0.7, 1.0), (3, 2.0, 0.9)])
def test_length_path_agrees_with_whole_vectors(rule, d_k, sigma, rho):
    """Every metric's mean over queries agrees with 3000 queries drawn as whole vectors here, within 5
    standard errors of the two estimates (its exact O(1) draws are the same distribution)."""
    ns = [2, 16, 128]
    got = sc.length_path(ns, (rule,), d_k=d_k, sigma=sigma, rho=rho, samples=4096, seed=3)
    want = _direct(128, ns, rule, d_k=d_k, sigma=sigma, rho=rho, m=3000, seed=11)
    for metric, rows in want.items():
        for i, w in enumerate(rows):
            se = math.hypot(float(w.std()) / math.sqrt(len(w)), float(got["spread"][metric][rule][i]) / 64)
            assert abs(got[metric][rule][i] - w.mean()) <= 5 * se + 1e-9, (metric, ns[i], got[metric][rule][i], w.mean())


def test_a_rule_s_path_does_not_depend_on_the_rules_beside_it():
    """The cosines (for QK-norm) are drawn only when a normalising rule is asked for, after the dots: the
    unscaled path alone and beside QK-norm is the same to the bit."""
    ns = [2, 64, 512]
    alone = sc.length_path(ns, ("none", "sqrt"), d_k=16, rho=0.5, samples=256, seed=4)
    beside = sc.length_path(ns, ("none", "qknorm", "sqrt"), d_k=16, rho=0.5, samples=256, seed=4)
    for metric in ("top_weight", "own_weight", "entropy", "entropy_ratio"):
        for rule in ("none", "sqrt"):
            np.testing.assert_array_equal(alone[metric][rule], beside[metric][rule])


@pytest.mark.parametrize("d_k, sigma, rho", [(1, 1.0, 0.0), (64, 1.0, 1.0), (1024, 3.0, 0.5), (65536, 1e-3, 0.9)])
def test_a_length_s_numbers_do_not_depend_on_the_other_lengths(d_k, sigma, rho):
    """Each prefix's softmax is summed from segments between the asked lengths: the numbers at n are the
    same (to round-off) whether n is one of twelve lengths or of two, that is, cut into 12 segments or 1."""
    rules = ("none", "sqrt", "softcap", "qknorm", "ssmax")
    many = sc.length_path(sc.LENGTHS, rules, d_k=d_k, sigma=sigma, rho=rho, samples=32, seed=9)
    for i, n in enumerate(sc.LENGTHS[:-1]):
        two = sc.length_path((n, sc.LENGTHS[-1]), rules, d_k=d_k, sigma=sigma, rho=rho, samples=32, seed=9)
        for metric in ("top_weight", "own_weight", "entropy", "entropy_ratio"):
            for rule in rules:
                np.testing.assert_allclose(two[metric][rule], many[metric][rule][[i, -1]], rtol=0, atol=1e-12,
                                           err_msg=f"{metric} {rule} n={n}")
                np.testing.assert_allclose(two["spread"][metric][rule], many["spread"][metric][rule][[i, -1]],
                                           rtol=0, atol=1e-12)


def test_attention_fades_with_1_over_sqrt_dk_and_ssmax_holds_it():
    """The section's point at the page's defaults (d_k = 64, σ = 1, ρ = 0): from n = 16 to 4096 the top weight
    falls more than 10x with 1/√d_k, and SSMax keeps it within 1.25x; the entropy ratio rises towards 1."""
    p = sc.length_path(sc.LENGTHS, ("sqrt", "ssmax"), samples=64, seed=0)
    i, j = list(p["n"]).index(16), -1
    assert p["top_weight"]["sqrt"][i] > 10 * p["top_weight"]["sqrt"][j]
    assert p["top_weight"]["ssmax"][j] * 1.25 > p["top_weight"]["ssmax"][i]
    assert p["entropy_ratio"]["sqrt"][j] > p["entropy_ratio"]["sqrt"][i] > 0.5


def test_ssmax_factor_is_s_ln_n_over_sqrt_dk():
    for d_k, n in [(1, 2), (64, 16), (4096, 4096)]:
        assert sc.logit_scale(d_k, "ssmax", n=n) == pytest.approx(SSMAX_S * math.log(n) / math.sqrt(d_k), rel=1e-15)
    assert sc.RULES["ssmax"].scales([64, 256], n=16).tolist() == pytest.approx(
        [SSMAX_S * math.log(16) / 8, SSMAX_S * math.log(16) / 16])


@pytest.mark.parametrize("call", [lambda: sc.logit_scale(64, "ssmax"), lambda: sc.RULES["ssmax"].scales([64]),
                                  lambda: sc.RULES["ssmax"].pair_theory(64)])
def test_a_length_rule_without_n_is_a_clear_error(call):
    with pytest.raises(ValueError, match="'ssmax' scales with the sequence length: pass n"):
        call()


@pytest.mark.parametrize("n", [1, 0, -3, 2.0, True, "16", 2 ** 53 + 1])
def test_a_length_rule_refuses_a_bad_n(n):
    with pytest.raises((TypeError, ValueError), match="n must"):
        sc.logit_scale(64, "ssmax", n=n)


def test_scale_for_takes_no_length_rule():
    with pytest.raises(ValueError, match="unknown scaling rule 'ssmax'"):
        sc.scale_for(64, "ssmax")


def test_a_new_length_rule_is_one_registry_entry(monkeypatch):
    """A rule added with a ``length`` (Chiang & Cholak's log n) is applied by rule_attention with the number
    of keys, by the sweep with its n, and by length_path at each n: one entry, no other change."""
    logn = Rule("logn", "log n/√d_k", lambda d, a, t: 1 / np.sqrt(d), length=math.log)
    monkeypatch.setitem(sc.RULES, "logn", logn)
    q, k, v = sc.draw_qkv(12, 16, seed=2)
    _, w, z = sc.rule_attention(q, k, v, "logn")
    np.testing.assert_allclose(z, math.log(12) / 4 * q @ k.T, rtol=1e-12)
    np.testing.assert_allclose(w, _softmax_rows(z), rtol=1e-12)
    s = sc.sweep([16], ("logn",), n=8, samples=4)
    assert s.theory_logit_std["logn"][0] == pytest.approx(math.log(8) / 4 * sc.theory_logit_std(16, n=8))
    p = sc.length_path([2, 64], ("logn", "sqrt"), samples=8)
    assert p["top_weight"]["logn"].shape == (2,)


@pytest.mark.parametrize("kwargs, match", [
    (dict(ns=[]), "at least one"), (dict(ns=[1]), "ns\\[i\\] must be >= 2"), (dict(ns=[8192]), "must be <= 4096"),
    (dict(ns=[4096], samples=4096), "too much work"), (dict(rules=("bogus",)), "unknown scaling rule"),
    (dict(d_k=0), "d_k must be >= 1"), (dict(rho=1.5), "rho must be <= 1"), (dict(samples=1), "samples must be >= 2"),
])
def test_length_path_validates_its_arguments(kwargs, match):
    with pytest.raises((TypeError, ValueError), match=match):
        sc.length_path(**kwargs)
