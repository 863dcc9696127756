"""The rule registry: one entry in sdpa_core.RULES is all a new scaling rule needs."""
import numpy as np
import pytest

import sdpa_core as sc
from sdpa_core import RULES, Rule

# Two rules the library does not ship, each the twin of a built-in rule at one knob setting, so every
# result can be compared with the built-in one: d_k^-1/4 is "alpha" at alpha = 1/4, and a normalising
# rule with factor 4 is QK-norm at temperature 1/4.
QUARTER = Rule("quarter", "d_k^-1/4", lambda d, alpha, temperature: d ** -0.25)
COSINE = Rule("cosine4", "4 cos(q, k)", lambda d, alpha, temperature: np.full_like(d, 4.0), normalizes=True)
TWINS = [(QUARTER, "alpha", {"alpha": 0.25}), (COSINE, "qknorm", {"temperature": 0.25})]


@pytest.fixture
def registered(monkeypatch):
    """QUARTER and COSINE in RULES for one test (removed again afterwards)."""
    for rule in (QUARTER, COSINE):
        monkeypatch.setitem(RULES, rule.name, rule)


@pytest.mark.parametrize("new, twin, knobs", TWINS, ids=[r.name for r, _, _ in TWINS])
def test_a_registered_rule_works_in_every_function_that_takes_a_rule(registered, new, twin, knobs):
    """Registered in RULES, a new rule goes through sweep (Monte-Carlo and theory), rule_attention,
    rule_gradients, query_gradient_norms and training, and gives what its built-in twin gives."""
    s = sc.sweep([4, 64, 1024], (new.name, twin), n=8, samples=8, rho=0.3, **knobs)
    for metric in sc.METRICS:
        np.testing.assert_allclose(s.mean[metric][new.name], s.mean[metric][twin], rtol=1e-6, err_msg=metric)
    np.testing.assert_allclose(s.theory_logit_std[new.name], s.theory_logit_std[twin], rtol=1e-12)
    assert new.name in s.to_csv()

    q, k, v = sc.draw_qkv(6, 32, rho=0.4, seed=1)
    g = sc.upstream_gradient(6, 32, seed=1)
    for fn, extra in ((sc.rule_attention, ()), (sc.rule_gradients, (g,))):
        got = fn(q, k, v, *extra, new.name, causal=True)
        want = fn(q, k, v, *extra, twin, causal=True, **knobs)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
    norms = sc.query_gradient_norms(6, 32, (new.name, twin), **knobs)
    np.testing.assert_allclose(norms[new.name], norms[twin], rtol=1e-12)

    runs = [sc.train(sc.TrainConfig(d_k=16, rule=name, **kw), 5) for name, kw in ((new.name, {}), (twin, knobs))]
    assert runs[0].config.scale == pytest.approx(runs[1].config.scale, rel=1e-15)
    np.testing.assert_allclose(runs[0].history["loss"], runs[1].history["loss"], rtol=1e-12)


def test_an_unregistered_rule_is_refused_naming_the_registered_ones(registered):
    """A name not in RULES is refused, and the message lists every registered rule, new ones included."""
    with pytest.raises(ValueError, match="unknown scaling rule 'cube'.*'quarter', 'cosine4'"):
        sc.rule_attention(*sc.draw_qkv(2, 4), "cube")
    with pytest.raises(ValueError, match="unknown scaling rule"):
        sc.TrainConfig(rule="cube")
    assert "quarter" in RULES and sc.scale_for(16, "quarter") == 0.5   # a plain rule: scale_for takes it too


def test_the_registry_is_consistent():
    """Every shipped rule is registered under its own name with a distinct label; RULE_NAMES and
    RULE_LABELS are read from it; each scale is finite and non-zero from d_k = 1 to 2**53."""
    assert all(name == rule.name for name, rule in RULES.items())
    assert sc.RULE_NAMES == tuple(RULES) and sc.RULE_LABELS == {n: r.label for n, r in RULES.items()}
    assert len(set(sc.RULE_LABELS.values())) == len(RULES)
    d = [1, 64, 4096, 2 ** 53]
    for rule in RULES.values():
        s = rule.scales(d, alpha=4.0, temperature=1e-6, n=2 ** 53)
        assert s.shape == (4,) and np.isfinite(s).all() and (s != 0).all(), rule.name
    assert [n for n, r in RULES.items() if r.normalizes] == ["qknorm"]


def test_a_rule_whose_scale_vanishes_is_reported():
    """A scale that underflows to 0 or overflows is a ValueError naming the rule, never a silent 0."""
    tiny = Rule("tiny", "d_k^-400", lambda d, alpha, temperature: d ** -400.0)
    with pytest.raises(ValueError, match="rule 'tiny' gave a scale that is 0"):
        tiny.scales([2, 4096])


def test_pair_theory_and_pooled_theory_are_the_closed_forms():
    """Rule.pair_theory: mean rho d_k sigma^2 and std sqrt((1 + rho^2) d_k) sigma^2, times the scale; a
    normalising rule's cosine: mean rho, std (1 - rho^2) / sqrt(d_k), times the scale. Rule.theory_logit_std
    of "none" is sigma^2 sqrt(d_k) at rho = 0."""
    assert RULES["sqrt"].pair_theory(64, rho=0.5, sigma=2.0) == pytest.approx((16.0, 4 * np.sqrt(1.25)))
    assert RULES["qknorm"].pair_theory(100, rho=0.6, temperature=0.5, sigma=7.0) == pytest.approx((1.2, 0.128))
    np.testing.assert_allclose(RULES["none"].theory_logit_std([1, 64, 4096], sigma=1.5), 2.25 * np.array([1, 8, 64]))
