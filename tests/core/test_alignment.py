"""rho_path against a direct loop (draw_qkv + rule_attention + row_stats), and what it shows at d_k = 256.

Tolerance of the cells: 4 combined standard errors (std across independent matrices / sqrt(matrices)).
The qualitative claims are asserted with margins far from the measured values (e.g. saturated share
>= 0.9 where 1.0 is measured, <= 0.2 top weight where 0.15 is).
"""
import math

import numpy as np
import pytest

import sdpa_core as sc


@pytest.mark.parametrize("rule,rho,knobs", [("sqrt", 0.5, {}), ("linear", 0.9, {}), ("qknorm", 0.8, {}),
                                            ("alpha", 0.3, {"alpha": 0.7}), ("none", 0.2, {})])
def test_cells_match_a_direct_loop(rule, rho, knobs):
    d_k, n, draws = 256, 16, 300
    r = sc.rho_path([0.0, rho], (rule,), d_k=d_k, n=n, samples=2000, seed=3, **knobs)
    stats = [sc.row_stats(*sc.rule_attention(*sc.draw_qkv(n, d_k, rho=rho, seed=s), rule, **knobs)[1:])
             for s in range(draws)]
    for metric in ("entropy", "max_weight", "saturated", "effective_support"):
        x = np.array([s[metric] for s in stats])
        se = math.hypot(x.std(ddof=1) / math.sqrt(draws), r["spread"][metric][rule][1] / math.sqrt(2000))
        assert abs(r[metric][rule][1] - x.mean()) < 4 * se + 1e-9, (metric, r[metric][rule][1], x.mean())


def test_what_the_path_shows_at_d_k_256():
    rhos = np.linspace(0, 1, 11)
    r = sc.rho_path(rhos, ("sqrt", "linear", "qknorm"), d_k=256, samples=64)
    sat, top = r["saturated"], r["max_weight"]
    # 1/sqrt(d_k): no saturated row at init, (almost) all from rho = 0.7
    assert sat["sqrt"][0] == 0 and (sat["sqrt"][rhos >= 0.7] >= 0.9).all()
    # 1/d_k: never saturates, and never focuses either
    assert (sat["linear"] == 0).all() and top["linear"].max() < 0.2
    # QK-norm at temperature 0.1 saturates too once rho >= 0.9 (matched logit -> 1/0.1 = 10)
    assert sat["qknorm"][0] == 0 and (sat["qknorm"][rhos >= 0.9] >= 0.9).all()
    warm = sc.rho_path(rhos, ("qknorm",), d_k=256, samples=64, temperature=0.3)
    assert (warm["saturated"]["qknorm"] == 0).all() and warm["max_weight"]["qknorm"][-1] > 0.5


def test_sqrt_saturates_earlier_as_d_k_grows_and_qk_norm_does_not_move():
    rhos = np.linspace(0, 1, 21)
    half = {d: sc.rho_path(rhos, ("sqrt", "qknorm"), d_k=d, samples=64)["half_saturated_rho"] for d in (64, 256, 1024)}
    assert half[64]["sqrt"] > half[256]["sqrt"] > half[1024]["sqrt"]
    assert max(h["qknorm"] for h in half.values()) - min(h["qknorm"] for h in half.values()) <= 0.05 + 1e-12  # one step
    assert math.isnan(sc.rho_path([0.0, 1.0], ("linear",), d_k=256)["half_saturated_rho"]["linear"])


def test_where_qk_norm_settles_and_where_1_over_d_k_saturates():
    """QK-norm's point stops moving with d_k only from d_k ~ 256 (at d_k = 16 it comes at rho = 1, later than at
    256 and 1024, which agree within a step); 1/d_k saturates half its rows at sigma = 3 from rho ~ 0.85-0.9,
    not at sigma = 1 (its matched logit is rho sigma^2)."""
    rhos = np.linspace(0, 1, 21)
    half = {d: sc.rho_path(rhos, ("qknorm",), d_k=d, samples=64)["half_saturated_rho"]["qknorm"] for d in (16, 256, 1024)}
    assert half[16] >= half[256] + 0.15 and abs(half[256] - half[1024]) <= 0.05 + 1e-12, half
    for d in (64, 1024):
        hot = sc.rho_path(rhos, ("linear",), d_k=d, sigma=3.0, samples=64)["half_saturated_rho"]["linear"]
        assert 0.8 <= hot <= 0.95, (d, hot)
        assert math.isnan(sc.rho_path(rhos, ("linear",), d_k=d, sigma=1.0, samples=64)["half_saturated_rho"]["linear"])


@pytest.mark.parametrize("d_k,sigma,knobs", [(64, 1.0, {}), (8, 2.0, {"alpha": 0.8, "temperature": 0.4})])
def test_every_rho_is_what_sweep_gives_there(d_k, sigma, knobs):
    """All rhos in one pass = one sweep per rho with the same seed (same draws; float32 statistics)."""
    rhos = [0.0, 0.35, 0.9, 1.0]
    r = sc.rho_path(rhos, d_k=d_k, n=12, samples=8, seed=4, sigma=sigma, **knobs)
    assert r["rho"].tolist() == rhos and r["d_k"] == d_k and r["rules"] == sc.RULE_NAMES
    for i, rho in enumerate(rhos):
        s = sc.sweep([d_k], n=12, samples=8, seed=4, sigma=sigma, rho=rho, **knobs)
        for m in sc.METRICS:
            for rule in sc.RULE_NAMES:
                np.testing.assert_allclose(r[m][rule][i], s.mean[m][rule][0], rtol=1e-5, atol=1e-7)
                np.testing.assert_allclose(r["spread"][m][rule][i], s.spread[m][rule][0], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("kwargs,name", [
    ({"rhos": [1.5]}, "rhos"), ({"rhos": []}, "rhos"), ({"rhos": [[0.1]]}, "rhos"), ({"rhos": "a"}, "rhos"),
    ({"rhos": [float("nan")]}, "rhos"), ({"rhos": np.linspace(0, 1, 200)}, "rhos"), ({"rhos": [True]}, "rhos"),
    ({"rules": "sqrt"}, "rules"), ({"rules": ("cube",)}, "rules"), ({"d_k": 0}, "d_k"), ({"d_k": 2.5}, "d_k"),
    ({"n": 1}, "n"), ({"sigma": 0}, "sigma"), ({"samples": 1}, "samples"), ({"seed": -1}, "seed"),
    ({"alpha": 5}, "alpha"), ({"temperature": 0}, "temperature"),
])
def test_bad_arguments_are_refused_by_name(kwargs, name):
    args = {"rhos": [0.0, 0.5], "d_k": 16, **kwargs}
    with pytest.raises((TypeError, ValueError), match=rf"\b{name}\b"):
        sc.rho_path(**args)
