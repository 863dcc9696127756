"""Random q, k (and v) for the experiments, drawn exactly at O(n^2) whatever d_k is.

Every quantity here depends on q and k only through their dot products. Those are drawn *exactly*
(Bartlett factor of ``Q Q^T`` plus Gaussian projections, see ``_qz_dots``), so a sweep to d_k = 4096
costs what d_k = 64 does. Below d_k = n the vectors are drawn directly.
"""

from __future__ import annotations

import math

import numpy as np

from ._checks import (
    float_dtype,
    generator,
    integer,
    real,
)


__all__ = [
    "small_sigma",
    "draw_qkv",
    "upstream_gradient",
    "sample_gram",
    "POW2_D_K",
    "MAX_D_K",
    "MAX_WORK",
    "MAX_ENTRIES",
    "MIN_SIGMA",
]

POW2_D_K = 2 ** np.arange(13)  # 1, 2, 4, ..., 4096
MAX_D_K = 65536
MAX_WORK = 2**26  # cap on samples * n * n * len(d_ks) * len(rules): no setting can freeze a tab
MAX_ENTRIES = 2**24  # cap on the numbers in one drawn matrix (n * d_k): 128 MiB of float64
#: The smallest sigma of the functions that return dot products (or their spread) at the vectors' own scale:
#: :func:`dot_samples`, :func:`dot_histograms`, :func:`sdpa_core.random_geometry`. A dot product has the size
#: sigma^2, and sigma^2 = 1e-300 is still a normal float64 number (the smallest is 2.2e-308): below it the
#: dots would lose their digits or round to 0 (sigma = 1e-308 gives sigma^2 = 0).
MIN_SIGMA = 1e-150


def _common(sigma, rho, seed):
    return (
        real(sigma, "sigma", low=0.0, low_open=True, high=1e3),
        real(rho, "rho", low=0.0, high=1.0),
        np.random.default_rng(integer(seed, "seed", low=0)),
    )


def small_sigma(sigma, what: str) -> float:
    """sigma in [MIN_SIGMA, 1000] for a function that returns ``what`` (quantities of size sigma^2), or a
    TypeError/ValueError saying why not."""
    sigma = real(sigma, "sigma", low=0.0, low_open=True, high=1e3)
    if sigma < MIN_SIGMA:
        raise ValueError(
            f"sigma must be >= {MIN_SIGMA:g} here, got {sigma:g}: {what} have the size sigma**2, which below "
            f"{MIN_SIGMA:g}**2 = 1e-300 nears float64's smallest normal number (2.2e-308), so they would lose "
            f"their digits or round to 0. Lengths scale by sigma, dot products by sigma**2 and cosines not at "
            f"all: sigma = 1 shows the same shapes"
        )
    return sigma


def draw_qkv(n, d_k, *, sigma=1.0, rho=0.0, seed=0, dtype=np.float64):
    """Random q, k, v of shape (n, d_k) with N(0, sigma^2) entries; ``k = rho q + sqrt(1-rho^2) z``.

    rho = 0 gives independent q and k; rho = 1 makes each key equal to its query, so
    ``q_i . k_i`` grows like d_k instead of sqrt(d_k). Drawn in float64, then cast to ``dtype``.
    """
    n = integer(n, "n", low=1, high=4096)
    d_k = integer(d_k, "d_k", low=1, high=MAX_D_K)
    _entries(n, d_k, "n * d_k")
    sigma, rho, rng = _common(sigma, rho, seed)
    dtype = float_dtype(dtype)
    q, k = _draw_qk(rng, n, d_k, sigma, rho)
    v = sigma * rng.standard_normal((n, d_k))
    with np.errstate(over="ignore"):  # float16 holds at most 65504: larger draws are inf, as they would be
        return tuple(a.astype(dtype) for a in (q, k, v))


def _entries(a: int, b: int, what: str) -> None:
    if a * b > MAX_ENTRIES:
        raise ValueError(f"{what} must be <= {MAX_ENTRIES}, got {a * b}: that matrix would not fit in memory")


def _draw_qk(rng, n, d_k, sigma, rho):
    q, z = sigma * rng.standard_normal((2, n, d_k))
    return q, rho * q + math.sqrt(1 - rho * rho) * z


def upstream_gradient(n, d_v, *, seed=0, dtype=np.float64) -> np.ndarray:
    """The fixed upstream gradient ``dL/dout`` (n, d_v) the page uses: N(0, 1) entries, drawn from
    ``default_rng([seed, 1])`` (a stream of its own, so q, k, v of the same seed are unchanged)."""
    n, d_v = integer(n, "n", low=1, high=4096), integer(d_v, "d_v", low=1, high=MAX_D_K)
    _entries(n, d_v, "n * d_v")
    dtype = float_dtype(dtype)
    return np.random.default_rng([integer(seed, "seed", low=0), 1]).standard_normal((n, d_v)).astype(dtype)


def sample_gram(d_k, p, m, rng) -> np.ndarray:
    """m Gram matrices (m, p, p) of p vectors with d_k i.i.d. N(0, 1) entries, drawn exactly.

    For d_k >= p: Bartlett, ``G = A A^T`` with A lower-triangular, ``A_ii^2 ~ chi^2(d_k - i)``
    and ``A_ij ~ N(0, 1)`` below the diagonal. Otherwise the vectors are drawn directly.
    ``d_k`` in [1, 65536], ``p`` and ``m`` >= 1 with ``m * p * p <= 2**26``, ``rng`` a numpy Generator.
    """
    d_k = integer(d_k, "d_k", low=1, high=MAX_D_K)
    p = integer(p, "p", low=1, high=4096)
    m = integer(m, "m", low=1, high=MAX_WORK)
    if m * p * p > MAX_WORK:
        raise ValueError(f"m * p * p must be <= {MAX_WORK}, got {m * p * p}: too many Gram entries to draw")
    rng = generator(rng)
    if d_k < p:
        x = rng.standard_normal((m, p, d_k))
        return x @ x.swapaxes(-1, -2)
    a = np.tril(rng.standard_normal((m, p, p)), -1)
    idx = np.arange(p)
    a[:, idx, idx] = np.sqrt(rng.chisquare(d_k - idx, size=(m, p)))
    return a @ a.swapaxes(-1, -2)


def _diag(a: np.ndarray) -> np.ndarray:
    return np.diagonal(a, axis1=-2, axis2=-1)


def _qz_dots(d_ks, n, m, rng):
    """Exact draws of ``Q Q^T``, ``Q Z^T`` (D, m, n, n) and ``|z_j|^2`` (D, m, n) for Q, Z of shape
    (n, d_k) with i.i.d. N(0, 1) entries, at O(n^2) cost per draw whatever d_k is.

    Write ``Q = A U`` (LQ decomposition): A is the Bartlett factor of ``Q Q^T`` (lower-triangular,
    ``A_ii^2 ~ chi^2(d_k - i)``, N(0, 1) below the diagonal) and U has orthonormal rows independent
    of A. Z is independent of both, so ``W = Z U^T`` has i.i.d. N(0, 1) entries and the part of
    each z_j outside U's span has squared length ``chi^2(d_k - n)``. Hence ``Q Z^T = A W^T`` and
    ``|z_j|^2 = |W_j|^2 + chi^2(d_k - n)``. Below d_k = n the vectors are drawn directly.
    """
    D = len(d_ks)
    gqq, gqz, zz = np.empty((D, m, n, n)), np.empty((D, m, n, n)), np.empty((D, m, n))
    small = d_ks < n
    for i in np.flatnonzero(small):
        q, z = rng.standard_normal((2, m, n, int(d_ks[i])))
        gqq[i], gqz[i], zz[i] = q @ q.swapaxes(-1, -2), q @ z.swapaxes(-1, -2), (z * z).sum(axis=-1)
    big = ~small
    if big.any():
        d = d_ks[big].astype(float)[:, None, None]  # (B, 1, 1)
        idx = np.arange(n)
        rows, cols = np.tril_indices(n, -1)
        a = np.zeros((int(big.sum()), m, n, n))
        a[..., rows, cols] = rng.standard_normal(a.shape[:2] + (len(rows),))
        a[..., idx, idx] = np.sqrt(rng.chisquare(np.broadcast_to(d - idx, a.shape[:2] + (n,))))
        w = rng.standard_normal(a.shape)
        rest = np.broadcast_to(d - n, a.shape[:2] + (n,))
        outside = np.where(rest > 0, rng.chisquare(np.maximum(rest, 1)), 0.0)  # chi^2(0) = 0 when d_k = n
        gqq[big], gqz[big] = a @ a.swapaxes(-1, -2), a @ w.swapaxes(-1, -2)
        zz[big] = (w * w).sum(axis=-1) + outside
    return gqq, gqz, zz
