"""output_similarity against torch, its two limits (one-hot copies a value, uniform averages them) and the
expected cosine of an average of random values, computed independently from Gram matrices.

Tolerance of the expectation: 4 combined standard errors (each side's std over draws / sqrt(draws)).
"""
import math

import numpy as np
import pytest

import sdpa_core as sc


def test_matches_torch_row_by_row(torch):
    rng = np.random.default_rng(0)
    for n_q, n_k, d_v, s in ((5, 7, 3, 0.5), (16, 16, 64, 3.0), (1, 4, 2, 20.0)):
        w = sc.softmax(s * rng.standard_normal((n_q, n_k)))
        v = rng.standard_normal((n_k, d_v))
        r = sc.output_similarity(w, v)
        o = torch.tensor(w) @ torch.tensor(v)
        cos = torch.nn.functional.cosine_similarity(o[:, None, :], torch.tensor(v)[None, :, :], dim=-1, eps=0)
        best, at = cos.max(dim=1)
        np.testing.assert_allclose(r["cosine"], best.numpy(), rtol=1e-12)
        assert r["nearest"].tolist() == at.tolist() and r["nearest"].dtype == np.int64
        np.testing.assert_allclose(r["norm_ratio"], (o.norm(dim=1) / torch.tensor(v).norm(dim=1).mean()).numpy(),
                                   rtol=1e-12)


def test_one_hot_rows_copy_their_value():
    rng = np.random.default_rng(1)
    v = rng.standard_normal((6, 10)) * rng.uniform(0.1, 5, size=(6, 1))
    w = np.eye(6)[[3, 0, 5]]
    r = sc.output_similarity(w, v)
    np.testing.assert_allclose(r["cosine"], 1.0, rtol=0, atol=1e-15)
    assert r["nearest"].tolist() == [3, 0, 5]
    norms = np.linalg.norm(v, axis=1)
    np.testing.assert_allclose(r["norm_ratio"], norms[[3, 0, 5]] / norms.mean(), rtol=1e-13)


def uniform_cosines_from_grams(d, n, draws, seed):
    """max_j cos(mean v, v_j) from Gram matrices alone: (G 1)_j / sqrt(G_jj 1'G1), G drawn exactly."""
    g = sc.sample_gram(d, n, draws, np.random.default_rng(seed))
    row = g.sum(axis=2)
    return (row / np.sqrt(np.diagonal(g, axis1=1, axis2=2) * row.sum(axis=1, keepdims=True))).max(axis=1)


@pytest.mark.parametrize("d_v", [8, 256])
def test_uniform_rows_average_the_values(d_v):
    """Uniform weights give o = mean(v); its cosine to the nearest value has the expectation the Gram-matrix
    computation gives, within 4 standard errors, and tends to 1/sqrt(n) from above as d_v grows."""
    n, draws = 16, 600
    w = np.full((1, n), 1 / n)
    ours = np.array([sc.output_similarity(w, np.random.default_rng(s).standard_normal((n, d_v)))["cosine"][0]
                     for s in range(draws)])
    ref = uniform_cosines_from_grams(d_v, n, 20000, seed=7)
    se = math.hypot(ours.std() / math.sqrt(draws), ref.std() / math.sqrt(len(ref)))
    assert abs(ours.mean() - ref.mean()) < 4 * se
    assert ref.mean() > 1 / math.sqrt(n)


def test_uniform_cosine_tends_to_one_over_sqrt_n():
    """cos(mean v, v_j) = 1/sqrt(n) + sqrt((n-1)/n) xi_j / sqrt(d) to first order, so the nearest one exceeds
    1/sqrt(n) by at most sqrt(2 ln n / d): 0.010 at n = 16, d = 65536, and by ~10x more at d = 64."""
    n = 16
    far = uniform_cosines_from_grams(65536, n, 4000, seed=3).mean()
    near = uniform_cosines_from_grams(64, n, 4000, seed=3).mean()
    assert 0 < far - 1 / math.sqrt(n) < math.sqrt(2 * math.log(n) / 65536)
    assert near - 1 / math.sqrt(n) > 5 * (far - 1 / math.sqrt(n))
    w = np.full((1, n), 1 / n)
    v = np.random.default_rng(2).standard_normal((n, 65536))
    assert sc.output_similarity(w, v)["norm_ratio"][0] == pytest.approx(1 / math.sqrt(n), rel=0.01)


def test_zero_rows_and_zero_values():
    v = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 1.0]])
    r = sc.output_similarity(np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.2, 0.8, 0.0]]), v)
    assert math.isnan(r["cosine"][0]) and r["nearest"][0] == -1 and r["norm_ratio"][0] == 0
    assert math.isnan(r["cosine"][1]) and r["nearest"][1] == -1  # weight on the zero vector only
    assert r["cosine"][2] == pytest.approx(1.0) and r["nearest"][2] == 1
    big = sc.output_similarity(np.array([[0.5, 0.5]]), np.array([[3e200, 0.0], [0.0, 3e200]]))
    assert big["cosine"][0] == pytest.approx(math.sqrt(0.5)) and big["norm_ratio"][0] == pytest.approx(math.sqrt(0.5))


@pytest.mark.parametrize("weights,v,name", [
    (np.ones((2, 3)), np.ones((3, 2)), "weights"), (np.full((2, 3), 1 / 3), np.ones((4, 2)), "v"),
    (np.full((2, 3), 1 / 3), np.zeros((3, 2)), "v"), (np.full((2, 3), 1 / 3), np.full((3, 2), np.nan), "v"),
    (np.full(3, 1 / 3), np.ones((3, 2)), "weights"), (np.full((2, 3), 1 / 3), np.ones(3), "v"),
    (np.full((2, 3), 1 / 3), np.ones((3, 2), dtype=int), "v"), ("abc", np.ones((3, 2)), "weights"),
    (np.full((1, 2, 3), 1 / 3), np.ones((3, 2)), "weights"),
])
def test_bad_arguments_are_refused_by_name(weights, v, name):
    with pytest.raises((TypeError, ValueError), match=rf"\b{name}\b"):
        sc.output_similarity(weights, v)
