"""The logit dial: attention as a function of one number, the spread ``s`` of the logits.

At rho = 0 every setting of the sidebar (d_k, sigma, the rule and its knobs) reaches the softmax
through one number, the std ``s`` of the scaled logits: given a query, its logits over the keys are
i.i.d. with std ``s`` (up to that query's length, see :func:`settings_logit_moments`). So one slider
for ``s`` (:func:`dial_attention`) shows every setting, and :func:`settings_logit_moments` says where
the sidebar puts you on it. With rho > 0 the matched key's logit also gets a mean offset ``m``.

:func:`two_token_curve` is the smallest case: two keys with logits ``(x, 0)``.
"""

from __future__ import annotations

import math

import numpy as np

from ._checks import _asarray, boolean, float_array, integer, real
from .scaling import MAX_D_K, RULES, check_rule, pair_dot_moments
from .stats import SATURATION, above

__all__ = ["two_token_curve", "dial_attention", "settings_logit_moments", "STARVED_RATIO", "MAX_DIAL_N"]

#: A query row is "starved" when its logit-gradient norm is below this fraction of the median row's
#: at ``s = 1`` (same matrix, same upstream vector): it learns a thousand times slower than usual.
STARVED_RATIO = 1e-3
#: The dial draws an (n, n) matrix; the page's n stops at 64, the library at this.
MAX_DIAL_N = 1024
#: ``s`` up to 1e4: past ~40 every row is one-hot in float64 already.
MAX_S = 1e4


def two_token_curve(x) -> tuple[np.ndarray, np.ndarray]:
    """Two keys with logits ``(x, 0)``: the first key's weight ``p = 1 / (1 + e^-x)`` and its slope
    ``dp/dx = p (1 - p)``, elementwise, in float64.

    Computed without overflow for any finite x (``e^-|x|`` only): ``p(±800)`` is 1 and 0 and its slope
    ``e^-800`` underflows to 0 rather than giving NaN. The slope is at most 1/4 (at x = 0): a gap of
    x between the top two logits leaves ``e^-|x|`` of the gradient, the two-key picture of saturation.

    Shapes: x (...) -> p (...), slope (...).

    >>> p, slope = two_token_curve([0.0, 2.0])
    >>> p.round(4).tolist(), slope.round(4).tolist()
    ([0.5, 0.8808], [0.25, 0.105])
    """
    a = _asarray(x, "x")
    x = float_array(a.astype(np.float64) if a.dtype.kind in "iu" else a, "x", min_ndim=0)
    if not np.isfinite(x).all():
        raise ValueError("x contains NaN or infinity; the curve is defined for finite logit gaps")
    x = x.astype(np.float64)
    e = np.exp(-np.abs(x))  # in (0, 1]: never overflows
    p = np.where(x >= 0, 1 / (1 + e), e / (1 + e))
    slope = np.asarray(e / ((1 + e) * (1 + e)))  # p (1 - p) without the cancellation of 1 - p near 1
    return p, slope


def dial_attention(s, n=16, *, seed=0, causal=False, offset=0.0, diagonal_std=None) -> dict:
    """Attention whose logits are ``Z = s G`` for a fixed standard-normal (n, n) matrix G.

    G comes from ``default_rng(seed)`` and does not depend on ``s``, so moving the dial rescales one
    picture smoothly. ``offset`` is added to the diagonal (the matched key's mean, ``m`` of
    :func:`settings_logit_moments`, which rho > 0 brings); ``diagonal_std`` (default ``s``) replaces
    the diagonal's spread, ``diag_std`` there. Under ``causal`` query i sees keys j <= i.

    Parameters
    ----------
    s : float
        Std of the logits, in [0, 1e4].
    n : int
        Queries = keys, in [2, 1024].
    seed : int >= 0
    causal : bool
    offset : float
        Mean of the diagonal logits, |offset| <= 1e4.
    diagonal_std : float or None
        Std of the diagonal logits, in [0, 1e4]; None means ``s``.

    Returns
    -------
    dict
        ``weights`` (n, n) and ``logits`` (n, n) float64 (masked logits are -inf); per query row,
        arrays (n,): ``entropy`` (nats), ``tokens`` (``exp(entropy)``, keys effectively attended),
        ``top`` (largest weight), ``gap`` (top logit minus the runner-up; NaN for a row with one
        visible key), ``grad_norms`` (``||dL/dz_i||``, see Notes); scalars (float): ``mean_entropy``,
        ``mean_tokens``, ``mean_top``, ``saturated`` (share of rows whose top weight exceeds
        ``SATURATION``, 0.99), ``grad_median`` and ``grad_reference`` (the median row's norm here and
        at ``s = 1``, ``offset = 0`` on the same G), ``starved`` (share of rows whose norm is below
        ``STARVED_RATIO * grad_reference``), ``median_gap`` (median ``gap``), and ``two_token_p`` and
        ``two_token_slope`` (:func:`two_token_curve` at ``median_gap``: where a typical row sits on the
        two-token picture). Rows with one visible key (causal row 0) are left out of ``saturated``,
        ``grad_median``, ``starved`` and ``median_gap``: their weight is 1 and their gradient 0 at every s.

    Notes
    -----
    The gradient of a loss L through the softmax of row i is ``dL/dz_i = p_i * (u_i - p_i . u_i)``
    (the Jacobian ``diag(p) - p p^T`` applied to ``u_i = dL/dp_i``). ``u`` is a fixed N(0, 1)
    (n, n) matrix from ``default_rng([seed, 1])``, the same for every s, so only the softmax changes.

    Examples
    --------
    >>> r = dial_attention(0.0, 8)
    >>> round(r["mean_tokens"], 6), round(r["mean_top"], 6)
    (8.0, 0.125)
    >>> dial_attention(20.0, 8)["saturated"]
    1.0
    """
    s = real(s, "s", low=0.0, high=MAX_S)
    n = integer(n, "n", low=2, high=MAX_DIAL_N)
    seed = integer(seed, "seed", low=0)
    causal = boolean(causal, "causal")
    offset = real(offset, "offset", low=-MAX_S, high=MAX_S)
    diag_std = s if diagonal_std is None else real(diagonal_std, "diagonal_std", low=0.0, high=MAX_S)
    g = np.random.default_rng(seed).standard_normal((n, n))
    u = np.random.default_rng([seed, 1]).standard_normal((n, n))
    visible = np.tri(n, dtype=bool) if causal else np.ones((n, n), dtype=bool)
    z = _dial_logits(g, s, offset, diag_std, visible)
    p, ent, top, gap = _softmax_rows(z, visible)
    norms = _grad_norms(p, u)
    ref_p = _softmax_rows(_dial_logits(g, 1.0, 0.0, 1.0, visible), visible)[0]
    live = visible.sum(axis=1) > 1  # rows with a choice to make
    reference = float(np.median(_grad_norms(ref_p, u)[live]))
    median_gap = float(np.median(gap[live]))
    two_p, two_slope = two_token_curve(median_gap)
    return {
        "weights": p,
        "logits": z,
        "entropy": ent,
        "tokens": np.exp(ent),
        "top": top,
        "gap": gap,
        "grad_norms": norms,
        "mean_entropy": float(ent.mean()),
        "mean_tokens": float(np.exp(ent).mean()),
        "mean_top": float(top.mean()),
        "saturated": float(above(top[live], SATURATION).mean()),
        "grad_median": float(np.median(norms[live])),
        "grad_reference": reference,
        "starved": float((norms[live] < STARVED_RATIO * reference).mean()),
        "median_gap": median_gap,
        "two_token_p": float(two_p),
        "two_token_slope": float(two_slope),
    }


#: :func:`dial_expectation`: rows of random logits averaged over, and at most this many logits in all (memory and
#: time stay bounded at every n: 2e6 float64, 16 MB, a few ms of numpy).
EXPECT_ROWS, EXPECT_WORK = 20_000, 2_000_000


def dial_expectation(s, n=16) -> dict:
    """What a softmax over ``n`` logits ``s g`` does on average, ``g`` i.i.d. standard normal: the expected top
    weight and the expected share of rows whose top weight exceeds ``SATURATION``, as means over
    ``rows = min(EXPECT_ROWS, EXPECT_WORK // n)`` independent rows of a fixed stream (the same numbers on every
    machine and at every seed of the page), with their std over rows (a standard error is ``std / sqrt(rows)``).

    Unlike :func:`dial_attention`, which draws one fixed n x n matrix (its own seed's picture), this is the
    expectation that matrix is one draw of.

    Returns
    -------
    dict
        ``mean_top``, ``top_std``, ``saturated``, ``saturated_std`` (floats) and ``rows`` (int).

    Examples
    --------
    >>> e = dial_expectation(0.0, 8)
    >>> e["mean_top"], e["top_std"], e["saturated"]
    (0.125, 0.0, 0.0)
    >>> round(dial_expectation(30.0, 2)["mean_top"], 2)
    0.99
    """
    s = real(s, "s", low=0.0, high=MAX_S)
    n = integer(n, "n", low=2, high=MAX_DIAL_N)
    rows = min(EXPECT_ROWS, EXPECT_WORK // n)
    z = np.random.default_rng(20_261_207).standard_normal((rows, n))
    z *= s
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    top = 1.0 / z.sum(axis=1)  # the top logit is 0 after the shift: its weight is 1 / the row's sum
    sat = above(top, SATURATION).astype(float)
    return {
        "mean_top": float(top.mean()),
        "top_std": float(top.std()),
        "saturated": float(sat.mean()),
        "saturated_std": float(sat.std()),
        "rows": int(rows),
    }


def _dial_logits(g: np.ndarray, s: float, offset: float, diag_std: float, visible: np.ndarray) -> np.ndarray:
    z = s * g
    idx = np.arange(len(g))
    z[idx, idx] = offset + diag_std * g[idx, idx]
    z[~visible] = -np.inf
    return z


def _softmax_rows(z: np.ndarray, visible: np.ndarray):
    """Weights, entropy (from the shifted logits: exact where weights underflow), top weight and the
    gap between the top two visible logits, per row of (n, n) logits with at least one visible entry."""
    shifted = z - z.max(axis=1, keepdims=True)  # -inf stays -inf; the top entry is 0
    e = np.exp(shifted)
    total = e.sum(axis=1)
    p = e / total[:, None]
    with np.errstate(invalid="ignore"):
        plogp = np.where(visible, p * np.where(visible, shifted, 0.0), 0.0)
    ent = np.log(total) - plogp.sum(axis=1)
    top = 1 / total
    two = -np.partition(-z, 1, axis=1)[:, :2] if z.shape[1] > 1 else np.full((len(z), 2), np.nan)
    with np.errstate(invalid="ignore"):
        gap = np.where(visible.sum(axis=1) > 1, two[:, 0] - two[:, 1], np.nan)
    return p, np.maximum(ent, 0.0), top, gap


def _grad_norms(p: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``||p_i * (u_i - p_i . u_i)||`` per row, right to round-off for saturated rows too: the top key's
    entry ``u_t - p . u`` is taken as ``sum_{l != t} p_l (u_t - u_l)``, whose terms do not cancel when
    ``p_t ~ 1`` (the textbook form leaves 1e-16 of round-off where the true value is 1e-28)."""
    rows = np.arange(len(p))
    t = p.argmax(axis=1)
    centred = u - (p * u).sum(axis=1, keepdims=True)
    others = p.copy()
    others[rows, t] = 0
    centred[rows, t] = (others * (u[rows, t][:, None] - u)).sum(axis=1)
    return np.linalg.norm(p * centred, axis=1)


def settings_logit_moments(d_k, *, sigma=1.0, rho=0.0, rule="sqrt", alpha=0.5, temperature=0.1, n=16) -> dict:
    """Where the sidebar's settings put you on the dial: the spread and offsets of the scaled logits.

    For ``q, k`` with N(0, sigma^2) entries, ``k = rho q + sqrt(1 - rho^2) z``, and the rule's factor
    ``c`` on ``q . k`` (on ``cos(q, k)`` for a rule that normalises q and k):

    - ``s``: std of an unmatched logit (i != j): ``|c| sigma^2 sqrt(d_k)``, or ``|c| / sqrt(d_k)`` for
      cosines (exact: a cosine of independent isotropic vectors has second moment 1/d_k);
    - ``m``: mean of the matched logit (i = j): ``c rho d_k sigma^2``, or ``c rho`` for cosines (the
      large-d_k limit of E cos; at rho = 0 exactly 0);
    - ``diag_std``: std of the matched logit, ``sqrt(1 + rho^2)`` times s (for cosines ``|c| (1 - rho^2) /
      sqrt(d_k)``, large-d_k limit), from :func:`sdpa_core.scaling.pair_dot_moments`;
    - ``pooled_std``: std over all n x n logits together (what the variance view plots,
      :meth:`Rule.theory_logit_std`);
    - ``row_spread``: the relative std of one query's own logit spread across queries: a query's
      logits over the keys are i.i.d. with std ``s |q_i| / (sigma sqrt(d_k))``, and ``|q_i|^2 / (sigma^2 d_k)``
      is ``chi^2(d_k) / d_k``, so this is the relative std of a chi variable with d_k degrees of freedom,
      exactly ``sqrt(d_k - mu^2) / mu`` with ``mu = sqrt(2) Gamma((d_k + 1) / 2) / Gamma(d_k / 2)``
      (0.756 at d_k = 1, 0.363 at 4; ``sqrt(1 / (2 d_k))`` for large d_k; 0 for cosines, where every
      query is a unit vector). The dial draws every row at exactly s: it is the ``d_k -> inf`` picture.
    - ``scale``: the factor c; ``gaussian``: whether the dial's Gaussian logits are a fair picture (see Notes).

    Returns a dict of floats (and the bools ``gaussian`` and ``matched_capped``).

    Notes
    -----
    Where the dial is not the whole story:

    - Small d_k without normalisation: the rows' own spreads differ (``row_spread`` is 0.36 at d_k = 4,
      0.09 at 64), so real attention is flatter than the dial at the same s: at s = 2, n = 16 its mean
      entropy is higher by 0.13 nats (8 %) at d_k = 4 and 0.009 nats (0.6 %) at d_k = 64; from d_k = 256
      on the gap is below the noise of 4000 draws.
    - QK-norm at small d_k: a cosine is bounded (|logit| <= |c|) and not Gaussian (uniform on [-1, 1] at
      d_k = 3); at large s the dial's Gaussian tails saturate rows that real QK-norm cannot.
      ``gaussian`` is False for a normalising rule below d_k = 32.
    - A soft-cap (Gemma 2): s, m and diag_std are those of the capped logits ``cap tanh(z / cap)``
      (:meth:`Rule.capped_moments`, exact for Gaussian q and k), which are bounded by the cap: where the
      uncapped s passes a quarter of it, ``gaussian`` is False (the dial's tails would go past the cap);
      ``matched_capped`` says the matched logit reaches a quarter of it (mean plus two std, uncapped).
    - rho > 0: the matched logit's mean also fluctuates from query to query (its ``rho |q_i|^2`` part),
      which ``diag_std`` includes; the dial draws it independently of the row's own spread.
    - float16: logits past 65504 overflow, which the dial (float64) does not show.

    Examples
    --------
    >>> r = settings_logit_moments(64, sigma=1.0, rule="none")
    >>> r["s"], r["m"]
    (8.0, 0.0)
    >>> settings_logit_moments(256, rho=1.0, rule="sqrt")["m"]
    16.0
    """
    d = integer(d_k, "d_k", low=1, high=MAX_D_K)
    rule, alpha, temperature = check_rule(rule, alpha=alpha, temperature=temperature)
    sigma = real(sigma, "sigma", low=0.0, low_open=True, high=1e3)
    rho = real(rho, "rho", low=0.0, high=1.0)
    n = integer(n, "n", low=1, high=MAX_D_K)
    spec = RULES[rule]
    darr = np.array([float(d)])
    c = float(spec._scales(darr, alpha, temperature, spec.check_n(n))[0])
    unit = spec.normalizes
    f = 1.0 if unit else sigma * sigma
    mean, var = pair_dot_moments(darr, rho, unit=unit)
    off = 1 / math.sqrt(d) if unit else math.sqrt(d)
    s = abs(c) * f * off
    m = c * f * float(mean[0])
    diag_std = abs(c) * f * math.sqrt(float(var[0]))
    bites = matched_capped = False
    if spec.cap is not None:  # a soft-cap: the moments of cap tanh(z / cap), exact for Gaussian q and k
        bites = s > spec.cap / 4
        matched_capped = abs(m) + 2 * diag_std > spec.cap / 4
        capped = spec.capped_moments(darr, np.array([c * f]), rho)
        s, m, diag_std = (float(capped[k][0]) for k in ("off_std", "matched_mean", "matched_std"))
    pooled = float(spec._theory_logit_std(darr, sigma, rho, n, alpha, temperature)[0])
    for name, value in (("s", s), ("m", m), ("diag_std", diag_std), ("pooled_std", pooled)):
        if not math.isfinite(value):
            raise ValueError(f"the logits' {name} under {rule!r} with sigma={sigma:g} exceeds float64's range")
    return {
        "s": s,
        "m": m,
        "diag_std": diag_std,
        "pooled_std": pooled,
        "row_spread": 0.0 if unit else _chi_relative_std(d),
        "scale": c,
        "gaussian": not (unit and d < 32) and not bites,
        "matched_capped": matched_capped,
    }


def _chi_relative_std(k: int) -> float:
    """std / mean of a chi variable with ``k`` degrees of freedom (the length of a standard normal k-vector)."""
    mu = math.sqrt(2.0) * math.exp(math.lgamma((k + 1) / 2) - math.lgamma(k / 2))
    return math.sqrt(max(k - mu * mu, 0.0)) / mu
