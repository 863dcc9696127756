"""Why sqrt(d), geometrically: q . k = |q| |k| cos(theta) for random vectors in d dimensions.

Independent vectors with N(0, sigma^2) entries have length about sigma sqrt(d), and their cosine spreads
about 1/sqrt(d) around 0 (in high dimensions random directions are nearly orthogonal). So the dot product
spreads like sigma^2 sqrt(d) * sqrt(d) * (1/sqrt(d)) = sigma^2 sqrt(d): the growth that 1/sqrt(d_k) undoes.
"""

from __future__ import annotations

import math

import numpy as np

from ._checks import entries, integer, real
from .draws import MAX_D_K, sample_gram, small_sigma

__all__ = ["random_geometry", "expected_norm"]


def expected_norm(d_k: int, sigma: float = 1.0) -> float:
    """E|q| for q with d_k i.i.d. N(0, sigma^2) entries: sigma sqrt(2) Gamma((d+1)/2) / Gamma(d/2) (chi's mean).

    >>> round(expected_norm(1), 6), round(expected_norm(256) / 16, 4)   # sqrt(2/pi); about sqrt(d)
    (0.797885, 0.999)
    """
    d_k = integer(d_k, "d_k", low=1, high=MAX_D_K)
    sigma = real(sigma, "sigma", low=0.0, low_open=True, high=1e3)
    return sigma * math.sqrt(2.0) * math.exp(math.lgamma((d_k + 1) / 2) - math.lgamma(d_k / 2))


def random_geometry(d_ks, *, sigma=1.0, samples=4000, seed=0) -> dict:
    """Lengths, cosines and dot products of independent random q and k at each d_k, measured and in theory.

    Parameters
    ----------
    d_ks : sequence of int
        Dimensions, each in [1, 65536].
    sigma : float
        Std of every entry of q and k, in [1e-150, 1000] (``sdpa_core.draws.MIN_SIGMA``: below it
        sigma^2, the size of a dot product, nears float64's smallest normal number and the dots would lose
        their digits or round to 0; a ValueError says so). Lengths scale by sigma, dot products by sigma^2
        and cosines not at all, so the vectors are drawn at sigma = 1 and each statistic is then scaled by
        its power of sigma: no square of a tiny number underflows on the way (the std of dots of size
        1e-200 would square them to 1e-400, which float64 holds as 0).
    samples : int
        Pairs drawn per d_k, in [2, 2**20] (exactly, in O(1) each: :func:`sample_gram`).
    seed : int >= 0

    Returns
    -------
    dict
        ``d_k`` (int array) and float arrays: ``norm_mean`` (mean |q|), ``norm_theory`` (:func:`expected_norm`),
        ``norms_mean`` (mean |q| |k|), ``norms_theory`` (``expected_norm`` squared: the lengths are independent),
        ``cos_std`` (std of cos(q, k)), ``cos_theory`` (1/sqrt(d_k): the cosine of independent isotropic
        vectors has mean 0 and variance exactly 1/d_k), ``dot_std`` (std of q . k), ``dot_theory``
        (sigma^2 sqrt(d_k)).

    Examples
    --------
    >>> g = random_geometry([4, 256], samples=20000)
    >>> [round(float(x), 1) for x in g["norm_mean"]], [round(float(x), 3) for x in g["cos_theory"]]
    ([1.9, 16.0], [0.5, 0.062])
    """
    d = np.asarray([integer(x, "d_ks[i]", low=1, high=MAX_D_K) for x in entries(d_ks, "d_ks")], dtype=np.int64)
    if d.size == 0:
        raise ValueError("d_ks must hold at least one dimension")
    sigma = small_sigma(sigma, "the dot products q . k")
    samples = integer(samples, "samples", low=2, high=2**20)
    rng = np.random.default_rng(integer(seed, "seed", low=0))
    out: dict[str, list] = {k: [] for k in ("norm_mean", "norms_mean", "cos_std", "dot_std")}
    for d_k in d:
        g = sample_gram(int(d_k), 2, samples, rng)  # (samples, 2, 2): |q|^2, q . k, |k|^2 at sigma = 1
        norm_q, norm_k, dot = np.sqrt(g[:, 0, 0]), np.sqrt(g[:, 1, 1]), g[:, 0, 1]
        lengths = norm_q * norm_k  # > 0: a Gaussian vector is 0 with probability 0
        out["norm_mean"].append(norm_q.mean())
        out["norms_mean"].append(lengths.mean())
        out["cos_std"].append((dot / lengths).std())
        out["dot_std"].append(dot.std())
    # sigma >= MIN_SIGMA: sigma^2 >= 1e-300 is a normal float64 and every product below is one rounding
    sigma2 = sigma * sigma
    norm_theory = np.asarray([expected_norm(int(x), sigma) for x in d])
    return {
        "d_k": d,
        "norm_mean": sigma * np.asarray(out["norm_mean"]),
        "norm_theory": norm_theory,
        "norms_mean": sigma2 * np.asarray(out["norms_mean"]),
        "norms_theory": norm_theory**2,
        "cos_std": np.asarray(out["cos_std"]),
        "cos_theory": 1.0 / np.sqrt(d),
        "dot_std": sigma2 * np.asarray(out["dot_std"]),
        "dot_theory": sigma2 * np.sqrt(d),
    }
