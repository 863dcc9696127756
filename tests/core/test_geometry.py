"""Why sqrt(d), geometrically (sdpa_core.geometry): the closed forms against numpy draws made here, and the
measured values against their closed forms."""
import math

import numpy as np
import pytest

import sdpa_core as sc


@pytest.mark.parametrize("d_k", [1, 2, 3, 16, 255, 1024])
@pytest.mark.parametrize("sigma", [0.5, 1.0, 3.0])
def test_expected_norm_is_the_mean_length_of_direct_draws(d_k, sigma):
    """E|q| = sigma sqrt(2) Gamma((d+1)/2) / Gamma(d/2), against the mean length of 20 000 direct draws
    (within 4 standard errors)."""
    q = sigma * np.random.default_rng(d_k).standard_normal((20000, d_k))
    lengths = np.linalg.norm(q, axis=1)
    assert abs(lengths.mean() - sc.expected_norm(d_k, sigma)) < 4 * lengths.std() / math.sqrt(len(lengths))


def test_expected_norm_closed_forms_at_one_and_large_d():
    """d = 1: E|x| = sigma sqrt(2/pi); large d: sigma sqrt(d - 1/2) to O(1/d)."""
    assert sc.expected_norm(1, 2.0) == pytest.approx(2.0 * math.sqrt(2 / math.pi), rel=1e-12)
    assert sc.expected_norm(4096) == pytest.approx(math.sqrt(4096 - 0.5), rel=1e-7)


@pytest.mark.parametrize("d_k", [2, 8, 64, 1024])
def test_the_cosine_of_independent_vectors_has_variance_one_over_d(d_k):
    """Var cos(q, k) = 1/d for independent isotropic q and k: direct numpy draws agree within 5%, and so
    does random_geometry's measured spread."""
    rng = np.random.default_rng(7)
    q, k = rng.standard_normal((2, 20000, d_k))
    cos = (q * k).sum(axis=1) / (np.linalg.norm(q, axis=1) * np.linalg.norm(k, axis=1))
    assert abs(cos.var() * d_k - 1) < 0.05
    g = sc.random_geometry([d_k], samples=20000, seed=3)
    assert g["cos_theory"][0] == pytest.approx(1 / math.sqrt(d_k))
    assert abs(g["cos_std"][0] / g["cos_theory"][0] - 1) < 0.05


def test_random_geometry_decomposes_the_dot_product():
    """Measured over powers of two: the lengths' product, the cosine's spread and the dot's spread each within 5%
    of theory, and the dot's theory is sigma^2 sqrt(d), the product of the other two's growth."""
    g = sc.random_geometry(sc.POW2_D_K, sigma=1.5, samples=20000, seed=1)
    for measured, theory in (("norms_mean", "norms_theory"), ("cos_std", "cos_theory"), ("dot_std", "dot_theory"),
                             ("norm_mean", "norm_theory")):
        assert np.all(np.abs(g[measured] / g[theory] - 1) < 0.05), measured
    assert np.allclose(g["dot_theory"], 1.5**2 * np.sqrt(g["d_k"]))
    assert np.allclose(g["norms_theory"], g["norm_theory"] ** 2)


@pytest.mark.parametrize("kwargs, message", [({"d_ks": []}, "at least one"), ({"d_ks": [0]}, "d_ks"),
                                             ({"d_ks": [4], "sigma": 0}, "sigma"), ({"d_ks": [4], "samples": 1}, "samples"),
                                             ({"d_ks": [4], "seed": -1}, "seed")])
def test_random_geometry_refuses_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sc.random_geometry(**kwargs)
