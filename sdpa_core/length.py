"""Sequence length: softmax weights fade as n grows ("attention fading"), whatever the d_k scaling.

With a fixed spread of the logits, the top weight of a row of n keys shrinks roughly like 1/n and the
entropy approaches log n: a query compared with more keys spreads itself thinner. A rule whose factor
grows with n (SSMax, Nakanishi 2025, multiplies the logits by ``s log n``; Chiang & Cholak 2022 scale by
``log n``) keeps the top weight from fading. :func:`length_path` measures both for every rule.

Exact draws in O(1) per query-key pair, whatever d_k: for a query q, split each key into its component
along q (a normal) and the length of the rest (a chi with d_k - 1 degrees of freedom). The dot product
and the cosine of every pair follow, so d_k = 4096 costs what d_k = 1 does.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from ._checks import entries, integer, names, real
from .draws import MAX_D_K
from .scaling import RULE_NAMES, RULES, check_rule, rule_name

__all__ = ["length_path", "LENGTHS", "MAX_LENGTH"]

#: The longest sequence :func:`length_path` measures.
MAX_LENGTH = 4096
#: The sequence lengths the page plots: powers of two from 2 to 4096.
LENGTHS = tuple(2**i for i in range(1, 13))
#: Cap on samples * max(n) * len(rules): a few seconds at most in the browser.
MAX_WORK = 2**23


def length_path(
    ns=LENGTHS,
    rules=RULE_NAMES,
    *,
    d_k=64,
    sigma=1.0,
    rho=0.0,
    samples=64,
    seed=0,
    alpha=0.5,
    temperature=0.1,
) -> dict:
    """Top weight and entropy of attention rows against the sequence length n, for each rule.

    Each of ``samples`` queries is compared with the first n of the same 4096 keys (so the curves are
    nested draws, smooth in n). Every query sees all n keys (no mask). Key 0 is the query's own key,
    ``k = rho q + sqrt(1 - rho^2) z``; the others are independent of it. q, k, z have i.i.d.
    N(0, sigma^2) entries.

    Parameters
    ----------
    ns : sequence of int
        Sequence lengths, each in [2, 4096] (returned sorted, without repeats).
    rules : sequence of str
        Names in :data:`sdpa_core.RULES`; a rule with a ``length`` (SSMax) gets each n.
    d_k : int
        In [1, 65536].
    sigma : float
        In (0, 1000].
    rho : float
        In [0, 1]: how much each query's own key (key 0) is aligned with it.
    samples : int
        Queries, in [2, 4096]; ``samples * max(ns) * len(rules)`` must stay <= 2**23.
    seed : int >= 0
    alpha, temperature : float
        The knobs of "alpha" and "qknorm", as everywhere.

    Returns
    -------
    dict
        ``n`` (int array, N,), ``rules``, and for each of ``top_weight`` (the largest weight of a row),
        ``own_weight`` (the weight on the query's own key, key 0), ``entropy`` (nats) and
        ``entropy_ratio`` (entropy / log n, 1 for uniform attention): ``{rule: (N,) mean over queries}``;
        ``spread`` holds the std over queries the same way, and ``samples`` their number (a mean's
        standard error is its spread / sqrt(samples)); ``top_weights``: ``{rule: (samples, N)}``, each
        query's top weight at each n (the same queries at every n, for paired comparisons).

    Examples
    --------
    >>> p = length_path([16, 4096], ("sqrt", "ssmax"), samples=256)
    >>> [round(float(x), 2) for x in p["entropy_ratio"]["sqrt"]]
    [0.85, 0.94]
    >>> bool(p["top_weight"]["ssmax"][1] > 4 * p["top_weight"]["sqrt"][1])
    True
    """
    n = np.unique(np.asarray([integer(x, "ns[i]", low=2, high=MAX_LENGTH) for x in entries(ns, "ns")], dtype=np.int64))
    if n.size == 0:
        raise ValueError("ns must hold at least one sequence length")
    rules = names(rules, "rules", rule_name)
    _, alpha, temperature = check_rule(rules[0], alpha=alpha, temperature=temperature)
    d_k = integer(d_k, "d_k", low=1, high=MAX_D_K)
    sigma = real(sigma, "sigma", low=0.0, low_open=True, high=1e3)
    rho = real(rho, "rho", low=0.0, high=1.0)
    samples = integer(samples, "samples", low=2, high=4096)
    seed = integer(seed, "seed", low=0)
    if samples * int(n[-1]) * len(rules) > MAX_WORK:
        raise ValueError(f"too much work: samples * max(ns) * len(rules) must be <= {MAX_WORK}")
    normalizing = any(RULES[r].normalizes for r in rules)
    dots, cosines = _pairs(seed, samples, int(n[-1]), d_k, sigma, rho, normalizing)
    metrics = ("top_weight", "own_weight", "entropy", "entropy_ratio")
    out: dict = {
        "n": n,
        "rules": rules,
        "d_k": d_k,
        "samples": samples,
        "spread": {m: {} for m in metrics},
        "top_weights": {},
    }
    for m in metrics:
        out[m] = {}
    for r in rules:
        spec = RULES[r]
        base = cosines if spec.normalizes else dots
        factors = [float(spec._scales(np.array([float(d_k)]), alpha, temperature, int(length))[0]) for length in n]
        if all(f == factors[0] for f in factors):  # one softmax over the longest row, summed by segments
            top, own, ent = _prefix_stats(spec.capped(factors[0] * base[:, : n[-1]]), n)
        else:  # the factor depends on n (SSMax): each length's logits are their own
            top, own, ent = (
                np.stack(a)
                for a in zip(*(_row_stats(spec.capped(f * base[:, :length])) for f, length in zip(factors, n)))
            )
        for m, v in zip(metrics, (top, own, ent, ent / np.log(n)[:, None])):  # (N, samples) each
            out[m][r] = v.mean(axis=1)
            out["spread"][m][r] = v.std(axis=1)
        out["top_weights"][r] = top.T.copy()
    return out


def _pairs(seed: int, m: int, n: int, d: int, sigma: float, rho: float, cosines: bool = True):
    """q . k_j and cos(q, k_j) for m queries and n keys, (m, n) each; key 0 is the query's own key.
    Without ``cosines`` the second is None (the keys' lengths off q, a chi draw, are not drawn).

    Each key's component along q does not depend on d: it is drawn from its own stream of ``seed``
    (:func:`_along`), kept between calls, so moving d_k draws only the m lengths of q again.

    Drawn at sigma = 1: the cosines do not depend on sigma (at sigma = 1e-300 the components would be
    subnormal and their ratios garbage), and the dots are scaled by sigma^2 once (1e-600 rounds to 0:
    logits that small are 0 for the softmax anyway)."""
    rng = np.random.default_rng(seed)
    q_len = np.sqrt(rng.chisquare(d, size=(m, 1)))  # |q| / sigma
    # each key's (or z's) component along q, / sigma; read-only
    along = _along(seed, m, n) if m * n <= _KEEP_ALONG else _draw_along(seed, m, n)
    c = math.sqrt(1 - rho * rho)
    own = rho * q_len[:, 0] + c * along[:, 0]  # k_0 = rho q + c z: along q, and c times z's rest
    with np.errstate(under="ignore"):
        dots = (sigma * q_len) * (sigma * along)
        dots[:, 0] = (sigma * q_len[:, 0]) * (sigma * own)
    if not cosines:
        return dots, None
    along = along.copy()
    along[:, 0] = own
    rest = np.sqrt(rng.gamma((d - 1) / 2, 2.0, size=(m, n)))  # the length of the rest (chi, d - 1), / sigma
    rest[:, 0] *= c
    k_len = np.hypot(along, rest)
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = np.where(k_len > 0, along / np.where(k_len > 0, k_len, 1.0), 0.0)
    return dots, cos


#: The largest draw along q that :func:`_along` keeps (8 MB; the page's is 128 x 4096, 4 MB).
_KEEP_ALONG = 2**20


@functools.lru_cache(maxsize=2)
def _along(seed: int, m: int, n: int) -> np.ndarray:
    """:func:`_draw_along`, kept: the same for every d_k, sigma and rho, so a d_k notch does not draw it again
    (in the browser, 15 ms of the saturation view's 125 ms a notch)."""
    return _draw_along(seed, m, n)


def _draw_along(seed: int, m: int, n: int) -> np.ndarray:
    """(m, n) standard normals, read-only, from a stream of ``seed``'s own for the keys' components along q."""
    along = np.random.default_rng([seed, 1]).standard_normal((m, n))
    along.setflags(write=False)
    return along


def _prefix_stats(z: np.ndarray, ns):
    """:func:`_row_stats` of each prefix ``z[:, :n]`` for the increasing lengths ``ns``, as (len(ns), rows)
    arrays, with one exp per logit: each segment between two lengths is summed against its own max, and a
    prefix adds its segments' sums rescaled to the prefix's max (every term <= 1, as in :func:`_row_stats`)."""
    bounds = [0, *(int(x) for x in ns)]
    seg_max, seg_sum, seg_dev = [], [], []  # per segment: max, sum e^(z - max), sum e^(z - max) (z - max)
    for a, b in zip(bounds, bounds[1:]):
        seg_max.append(z[:, a:b].max(axis=-1))
        part = z[:, a:b] - seg_max[-1][:, None]
        e = np.exp(part)
        if a == 0:
            first = e[:, 0]
        seg_sum.append(e.sum(axis=-1))
        seg_dev.append(np.einsum("ij,ij->i", e, part))
    m_s, s_s, d_s = (np.stack(x) for x in (seg_max, seg_sum, seg_dev))  # (segments, rows)
    top_max = np.maximum.accumulate(m_s, axis=0)  # each prefix's max, (prefixes, rows)
    inside = np.tri(len(m_s), dtype=bool)[:, :, None]  # prefix i holds segments s <= i
    shift = np.where(inside, m_s[None] - top_max[:, None], 0.0)  # (prefixes, segments, rows), <= 0 inside
    w = np.where(inside, np.exp(shift), 0.0)
    total = (w * s_s[None]).sum(axis=1)
    dev = (w * (d_s[None] + shift * s_s[None])).sum(axis=1)  # sum e^(z - M) (z - M) over the prefix
    own = first[None] * np.exp(m_s[0][None] - top_max) / total
    return 1.0 / total, own, np.maximum(np.log(total) - dev / total, 0.0)


def _row_stats(z: np.ndarray):
    """Top weight, weight of key 0 and entropy (nats) of softmax over each row of z (float64, stable)."""
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    total = e.sum(axis=-1)
    p0 = e[:, 0] / total
    ent = np.log(total) - (e * z).sum(axis=-1) / total  # H = log sum e^z - E_p[z], z shifted by its max
    return 1.0 / total, p0, np.maximum(ent, 0.0)
