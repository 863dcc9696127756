"""The scaling rules compared on the page: what multiplies q.k before the softmax.

Each rule is one :class:`Rule` in :data:`RULES`: its scale as a function of d_k (vectorised), and
whether q and k are L2-normalised first (QK-norm). The closed-form spread of its logits follows from
those two (:meth:`Rule.theory_logit_std`, :meth:`Rule.pair_theory`). A rule may also grow with the
sequence length n (SSMax's ``s log n``): its factor is then ``scale(d_k) * length(n)``, and every function
that applies it passes the n it has. Adding a rule is one entry in
``RULES``: every function that takes a ``rule`` (``sweep``, ``rule_attention``, ``rule_gradients``,
``query_gradient_norms``, ``TrainConfig``) then accepts it.

A rule may also soft-cap its logits (Gemma 2): ``cap tanh(z / cap)`` of the scaled ``z``, a bounded
nonlinearity every function applies after the factor (:meth:`Rule.capped`, or ``attention``'s ``softcap=``)
and differentiates through (``attention.cap_slope``). Its spread then has no closed form: the theory
integrates the cap exactly for Gaussian q and k, over each logit's normal law given |q| and then over |q|
(:meth:`Rule.capped_moments`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ._checks import boolean, d_k_values, finite, float_array, integer, real

__all__ = [
    "Rule",
    "gauss_moments",
    "llama4_temperature",
    "RULES",
    "RULE_NAMES",
    "RULE_LABELS",
    "scale_for",
    "logit_scale",
    "check_rule",
    "rule_name",
    "qk_normalize",
    "qk_normalize_backward",
]

#: d_k up to 2**53 (every integer a float64 holds exactly) and alpha in [0, 4] keep ``d_k**-alpha``
#: within float64's range (>= 2**-212), so no scale silently rounds to 0 or overflows.
MAX_D_K = 2**53
ALPHA_RANGE = (0.0, 4.0)
#: QK-norm's temperature: its logits are cos / temperature, so 1e-6 gives at most 1e6 (float32 sweeps
#: stay finite) and 1e6 makes every logit 0 to within 1e-6.
TEMPERATURE_RANGE = (1e-6, 1e6)
#: The knobs a rule's scale may read, each checked against its range by :func:`check_rule`.
KNOBS = ("alpha", "temperature")
#: SSMax's s (Nakanishi 2025 learn it per head; 0.43 is the value of the paper's Figure 1). At n = 16 the
#: factor s log n is 1.19, so the rule starts near 1/sqrt(d_k) at the page's default n and parts from it as n grows.
SSMAX_S = 0.43
#: The longest sequence a length rule is given (the page's n goes to 4096; log n stays small).
MAX_N = 2**53
#: Gemma 2's soft-cap on attention logits, ``attn_logit_softcapping`` of its published configs (Gemma2Config's
#: default): ``c tanh(z / c)`` after ``z = q.k / sqrt(query_pre_attn_scalar)`` (transformers'
#: models/gemma2/modeling_gemma2.py, ``eager_attention_forward``).
GEMMA2_CAP = 50.0
#: Llama 4's attention temperature (Llama4TextConfig's defaults, and Llama 4 Scout's and Maverick's configs):
#: the queries of its layers without RoPE are multiplied by ``1 + attn_scale ln(1 + floor((p + 1) / floor_scale))``
#: at 0-based position p (transformers' models/llama4/modeling_llama4.py, ``Llama4TextAttention.forward``). The
#: query at p sees p + 1 keys under the causal mask, so as a function of the n keys a query sees the factor is
#: ``1 + attn_scale ln(1 + floor(n / floor_scale))``: exactly 1 below n = 8192.
LLAMA4_FLOOR_SCALE = 8192
LLAMA4_ATTN_SCALE = 0.1


@dataclass(frozen=True)
class Rule:
    """One scaling rule: the factor on ``q . k`` as a function of d_k, and whether q and k are normalised.

    Parameters
    ----------
    name : str
        Its key in :data:`RULES`, and what functions taking ``rule=`` accept.
    label : str
        How a reader names it ("1/√d_k"): plain text, shown by the page.
    scale : callable
        ``scale(d_k, alpha, temperature) -> ndarray``: the factor for every entry of the float array
        ``d_k`` at once (arguments already checked); it must be finite and non-zero.
    normalizes : bool
        True when q and k are divided by their length first (QK-norm, Henry et al. 2020): the factor
        then multiplies ``cos(q, k)``, whatever sigma is.
    knobs : tuple of str
        Which of ``"alpha"`` and ``"temperature"`` ``scale`` reads (the page disables the others).
    length : callable or None
        ``length(n) -> float`` for a rule whose factor also grows with the sequence length n (the number
        of keys each query is compared with): the factor is then ``scale(d_k) * length(n)``, for n >= 2
        (SSMax, Nakanishi 2025: ``s log n``; Chiang & Cholak 2022 scale by ``log n``). Functions that apply
        such a rule need n; None (the default) for a rule that ignores it.
    cap : float or None
        A soft-cap c > 0 (Gemma 2's ``attn_logit_softcapping``): the logits are ``c tanh(z / c)`` of the
        scaled ``z`` (:meth:`capped`), bounded by c and equal to z where ``|z| << c``. None: no cap.

    Examples
    --------
    >>> RULES["sqrt"].scales([64, 256]).tolist()
    [0.125, 0.0625]
    >>> Rule("quarter", "d_k^-1/4", lambda d, alpha, temperature: d ** -0.25).scales(16).tolist()
    [0.5]
    """

    name: str
    label: str
    scale: Callable[[np.ndarray, float, float], np.ndarray]
    normalizes: bool = False
    knobs: tuple[str, ...] = ()
    length: Callable[[int], float] | None = None
    cap: float | None = None

    def __post_init__(self):
        for field_name in ("name", "label"):
            value = getattr(self, field_name)
            if not isinstance(value, str) or not value.strip():
                raise TypeError(f"{field_name} must be a non-empty string, got {type(value).__name__} {value!r}")
        if not callable(self.scale):
            raise TypeError(
                f"scale must be a function scale(d_k, alpha, temperature), got "
                f"{type(self.scale).__name__} {self.scale!r}"
            )
        boolean(self.normalizes, "normalizes")
        if not isinstance(self.knobs, tuple) or not set(self.knobs) <= set(KNOBS):
            raise TypeError(f"knobs must be a tuple naming some of {KNOBS}, got {self.knobs!r}")
        if self.length is not None and not callable(self.length):
            raise TypeError(f"length must be a function length(n) or None, got {type(self.length).__name__}")
        if self.cap is not None:
            real(self.cap, "cap", low=0.0, low_open=True)  # finite and > 0
            if self.normalizes:
                raise ValueError("a rule that normalises q and k has bounded logits already: give it no cap")

    def capped(self, z, out=None) -> np.ndarray:
        """The logits the softmax sees from the scaled ``z``: ``cap tanh(z / cap)`` in z's dtype (z itself when
        the rule has no cap). Any z works: +-inf give +-cap, and NaN stays NaN. ``out`` (z's shape and dtype)
        receives the result in place, as numpy's ``out=``.

        >>> RULES["softcap"].capped(np.array([0.0, 50.0, np.inf])).round(3).tolist()
        [0.0, 38.08, 50.0]
        >>> float(RULES["softcap"].capped(3.0).round(4))
        2.9964
        """
        z = np.asarray(z)
        kind = z.dtype if z.dtype.kind == "f" else np.dtype(np.float64)  # whole numbers are capped in float64
        if out is not None and (not isinstance(out, np.ndarray) or out.shape != z.shape or out.dtype != kind):
            got = f"{out.dtype} {out.shape}" if isinstance(out, np.ndarray) else type(out).__name__
            raise ValueError(f"capped: out must be a {kind} array of z's shape {z.shape}, got {got}")
        if self.cap is None:
            if out is None:
                return z
            out[...] = z
            return out
        if z.dtype == np.float64 or z.dtype.kind != "f":
            if out is None:  # a 0-d z too: numpy's ufuncs return a scalar there, which out= cannot take
                out = np.empty(z.shape, dtype=np.float64)
            out = np.divide(z, self.cap, out=out)
            np.tanh(out, out=out)
            return np.multiply(out, self.cap, out=out)
        capped = (self.cap * np.tanh(z.astype(np.float64) / self.cap)).astype(z.dtype)  # a cap float32 cannot hold
        if out is None:
            return capped
        out[...] = capped
        return out

    def caps(self, bound: float) -> bool:
        """Whether the cap changes logits as large as ``bound`` (in absolute value) by more than 1e-8 of them:
        False without a cap or where ``bound`` is below 1e-4 of it, where the uncapped exact paths apply."""
        return self.cap is not None and bound >= 1e-4 * self.cap

    def scales(self, d_ks, *, alpha=0.5, temperature=0.1, n=None) -> np.ndarray:
        """The factor for one d_k or each of a flat list (1 <= d_k <= 2**53): a float64 array (D,).
        ``n``, the sequence length (2 <= n <= 2**53), is needed by a rule with a ``length`` and
        ignored by the others.

        >>> RULES["ssmax"].scales([16], n=16).round(4).tolist()
        [0.2981]
        """
        d = d_k_values(d_ks, MAX_D_K).astype(np.float64)
        alpha, temperature = _knobs(alpha, temperature)
        return self._scales(d, alpha, temperature, self.check_n(n))

    def check_n(self, n) -> int | None:
        """``n`` checked for this rule: an int in [2, 2**53] for a rule with a ``length`` (a ValueError
        naming the rule when n is missing), else n itself unchecked (callers check their own n)."""
        return n if self.length is None else self._needed_n(n)

    def _needed_n(self, n) -> int:
        if n is None:
            raise ValueError(
                f"rule {self.name!r} scales with the sequence length: pass n, the number of keys each query sees"
            )
        return integer(n, "n", low=2, high=MAX_N)

    def _scales(self, d: np.ndarray, alpha: float, temperature: float, n: int | None = None) -> np.ndarray:
        """:meth:`scales` of checked arguments; the factor must be finite and non-zero."""
        s = np.broadcast_to(np.asarray(self.scale(d, alpha, temperature), dtype=np.float64), d.shape)
        if self.length is not None:
            s = s * float(self.length(self._needed_n(n)))  # a ValueError naming the rule when n is None
        if not (np.isfinite(s).all() and (s != 0).all()):
            raise ValueError(f"rule {self.name!r} gave a scale that is 0 or not finite for some d_k in {d.tolist()}")
        return s

    def theory_logit_std(self, d_ks, *, sigma=1.0, rho=0.0, n=16, alpha=0.5, temperature=0.1) -> np.ndarray:
        """Closed-form std of the n x n logits pooled over all pairs, for each d_k (see ``theory_logit_std``).

        ``|scale| * sigma^2 * std(q_i . k_j)`` at unit variance, or ``|scale| * std(cos(q_i, k_j))``
        for a rule that normalises q and k (sigma then plays no part).

        >>> RULES["none"].theory_logit_std([64, 256]).tolist()
        [8.0, 16.0]
        """
        d = d_k_values(d_ks, MAX_D_K).astype(np.float64)
        alpha, temperature = _knobs(alpha, temperature)
        sigma = real(sigma, "sigma", low=0.0, low_open=True)
        rho = real(rho, "rho", low=0.0, high=1.0)
        n = integer(n, "n", low=2 if self.length else 1, high=MAX_D_K)
        std = self._theory_logit_std(d, sigma, rho, n, alpha, temperature)
        if not np.isfinite(std).all():
            raise ValueError(
                f"the logit std under {self.name!r} with sigma={sigma:g} exceeds float64's range "
                f"(1.8e308): make sigma smaller"
            )
        return std

    def _theory_logit_std(self, d, sigma, rho, n, alpha, temperature) -> np.ndarray:
        """:meth:`theory_logit_std` of checked arguments."""
        scale = np.abs(self._scales(d, alpha, temperature, n))
        if self.cap is not None:  # the pooled std of the capped logits over the n x n pairs
            return self.capped_moments(d, product(scale, sigma, sigma), rho, n)["pooled_std"]
        unit = pooled_dot_std(d, rho, n, unit=self.normalizes)
        return product(scale, unit) if self.normalizes else product(scale, sigma, unit, sigma)

    def capped_moments(self, d, f, rho, n=2) -> dict:
        """The moments of a capped rule's logits ``cap tanh(f q.k / cap)`` (``f`` the factor times sigma^2, an
        array over the d_k of ``d``; no checks), exact for Gaussian q and k: given |q|^2 = sigma^2 r, an unmatched
        ``q.k_j`` is N(0, sigma^4 r) and the matched ``q.k_i = rho |q|^2 + sqrt(1 - rho^2) q.z`` is
        N(rho sigma^2 r, (1 - rho^2) sigma^4 r), and r is chi-square with d_k degrees of freedom: the cap is
        integrated over each normal (:func:`gauss_moments`) and then over r (:func:`_chi2_grid`).

        Returns arrays over d of ``off_std`` (an unmatched logit's std; its mean is 0), ``matched_mean``,
        ``matched_std`` and ``pooled_std`` (all n x n logits together). Where every logit stays below 1e-4 of the
        cap (tiny sigma) the cap changes them by under 1e-8 and the uncapped closed forms are returned, exactly
        as for the rule without a cap (their products would underflow here)."""
        cap = float(self.cap or 0.0)
        d, f = np.broadcast_arrays(np.asarray(d, dtype=np.float64), np.asarray(f, dtype=np.float64))
        off0, (m0, v0) = np.abs(f) * np.sqrt(d), pair_dot_moments(d, rho, unit=False)
        pooled0 = np.abs(f) * pooled_dot_std(d, rho, n, unit=False)
        with np.errstate(over="ignore", invalid="ignore"):
            small = (np.abs(f * m0) + 10 * np.abs(f) * np.sqrt(v0) + 10 * off0) < 1e-4 * cap
        out = {"off_std": off0, "matched_mean": f * m0, "matched_std": np.abs(f) * np.sqrt(v0), "pooled_std": pooled0}
        if small.all():
            return out
        off_second, mat_first, mat_second = (np.empty(d.shape) for _ in range(3))
        # CAPPED_CHUNK d_k at a time: each holds a (R, grid) quadrature, about 0.37 MB, so memory stays bounded
        # (about 24 MB) however many d_k are asked for
        for lo in range(0, d.size, CAPPED_CHUNK):
            part = slice(lo, lo + CAPPED_CHUNK)
            r, w = _chi2_grid(d[part])  # (D, R): |q|^2 / sigma^2 and its weights
            fa, fp = np.abs(f[part])[:, None], f[part][:, None]
            with np.errstate(over="ignore", invalid="ignore"):
                off_m, off_v = gauss_moments(np.zeros_like(r), fa * np.sqrt(r), cap)
                mat_m, mat_v = gauss_moments(fp * rho * r, fa * np.sqrt((1 - rho * rho) * r), cap)
            off_second[part] = (w * (off_v + off_m * off_m)).sum(axis=-1)  # E over r of E[logit^2 | r]
            mat_first[part] = (w * mat_m).sum(axis=-1)
            mat_second[part] = (w * (mat_v + mat_m * mat_m)).sum(axis=-1)
        first = mat_first / n  # the unmatched logits' mean is 0
        second = ((n - 1) * off_second + mat_second) / n
        exact = {
            "off_std": np.sqrt(off_second),
            "matched_mean": mat_first,
            "matched_std": np.sqrt(np.maximum(mat_second - mat_first * mat_first, 0.0)),
            "pooled_std": np.sqrt(np.maximum(second - first * first, 0.0)),
        }
        return {k: np.where(small, out[k], exact[k]) for k in out}

    def pair_theory(self, d_k, *, sigma=1.0, rho=0.0, alpha=0.5, temperature=0.1, n=None) -> tuple[float, float]:
        """Mean and std of one matched pair's logit ``scale * q_i . k_i`` (of the cosine, for a rule that
        normalises): ``rho d_k sigma^2`` and ``sqrt((1 + rho^2) d_k) sigma^2`` unscaled; a cosine has mean
        rho and std ``(1 - rho^2) / sqrt(d_k)`` in the large-d_k limit.

        >>> RULES["sqrt"].pair_theory(64, rho=0.5)
        (4.0, 1.118033988749895)
        """
        d = np.array([float(integer(d_k, "d_k", low=1, high=MAX_D_K))])
        alpha, temperature = _knobs(alpha, temperature)
        sigma = real(sigma, "sigma", low=0.0, low_open=True)
        rho = real(rho, "rho", low=0.0, high=1.0)
        return self._pair_theory(d, sigma, rho, alpha, temperature, self.check_n(n))

    def _pair_theory(self, d, sigma, rho, alpha, temperature, n=None) -> tuple[float, float]:
        """:meth:`pair_theory` of checked arguments, ``d`` an array holding the one d_k."""
        mean, var = pair_dot_moments(d, rho, unit=self.normalizes)
        s = self._scales(d, alpha, temperature, n)
        f = 1.0 if self.normalizes else sigma  # the logit is proportional to sigma^2
        m, std = product(s, f, mean, f), product(np.abs(s), f, np.sqrt(var), f)
        if self.cap is not None:  # the matched pair, capped (exact for Gaussian q and k: capped_moments)
            c = self.capped_moments(d, product(s, f, f), rho)
            m, std = c["matched_mean"], c["matched_std"]
        return float(m[0]), float(std[0])


def _registry(*rules: Rule) -> dict[str, Rule]:
    return {r.name: r for r in rules}


#: Every rule the page compares, by name. Add a rule here (and give it a colour in web/theme.py);
#: each scale is ``scale(d_k, alpha, temperature)`` over an array of d_k.
RULES: dict[str, Rule] = _registry(
    Rule("none", "no scaling", lambda d, a, t: np.ones_like(d)),
    Rule("sqrt", "1/√d_k", lambda d, a, t: 1 / np.sqrt(d)),  # Vaswani et al. 2017
    Rule("linear", "1/d_k (muP)", lambda d, a, t: 1 / d),  # muP, Yang et al. 2022
    Rule("alpha", "d_k^-α", lambda d, a, t: d**-a, knobs=("alpha",)),
    Rule("qknorm", "QK-norm", lambda d, a, t: np.full_like(d, 1 / t), normalizes=True, knobs=("temperature",)),
    # SSMax, Nakanishi 2025: softmax base n, i.e. the usual logits times s log n (s fixed here, learnt there)
    Rule(
        "ssmax",
        f"{SSMAX_S:g}·ln n/√d_k (SSMax)",
        lambda d, a, t: 1 / np.sqrt(d),
        length=lambda n: SSMAX_S * math.log(n),
    ),
    # Gemma 2: 1/sqrt(query_pre_attn_scalar) (= 1/sqrt(head_dim) in Gemma 2 9B), then c tanh(z / c)
    Rule("softcap", f"Gemma 2 soft-cap {GEMMA2_CAP:g}", lambda d, a, t: 1 / np.sqrt(d), cap=GEMMA2_CAP),
    # Llama 4's layers without RoPE: 1/sqrt(head_dim) times its temperature, 1 below n = 8192 keys
    Rule(
        "llama4",
        "Llama 4 temperature",
        lambda d, a, t: 1 / np.sqrt(d),
        length=lambda n: llama4_temperature(n),
    ),
)
#: The names of :data:`RULES` when sdpa_core was imported (defaults of ``sweep`` & co.).
RULE_NAMES = tuple(RULES)
#: name -> label (plain data for readers and the page).
RULE_LABELS = {name: r.label for name, r in RULES.items()}


def _plain_rules() -> list[str]:
    """Rules :func:`scale_for` takes by name: those without knobs, a length or a cap that do not normalise q and k."""
    return [
        name for name, r in RULES.items() if not r.knobs and not r.normalizes and r.length is None and r.cap is None
    ]


def scale_for(d_k, rule="sqrt") -> float:
    """The factor that multiplies ``q . k`` under a scaling rule.

    Parameters
    ----------
    d_k : int
        Key/query dimension per head, 1 <= d_k <= 2**53.
    rule : {"none", "sqrt", "linear"} or float
        ``"none"`` -> 1; ``"sqrt"`` -> ``d_k**-0.5`` (Vaswani et al. 2017); ``"linear"`` ->
        ``1/d_k`` (muP, Yang et al. 2022); a float ``alpha`` in [0, 4] -> ``d_k**-alpha``.
        Any rule of :data:`RULES` without knobs that does not normalise q and k is accepted by name.

    Notes
    -----
    For independent zero-mean q, k with entry variances s_q^2, s_k^2,
    ``Var(q . k) = d_k s_q^2 s_k^2``, so only ``alpha = 1/2`` keeps the logits' spread fixed as d_k grows.

    Examples
    --------
    >>> scale_for(64, "sqrt")
    0.125
    """
    d_k = integer(d_k, "d_k", low=1, high=MAX_D_K)
    plain = _plain_rules()
    if isinstance(rule, str):
        if rule in plain:
            return float(RULES[rule]._scales(np.array([float(d_k)]), 0.5, 0.1)[0])
    elif isinstance(rule, numbers.Real) and not isinstance(rule, (bool, np.bool_)):
        return float(d_k) ** -real(rule, "rule (a float alpha)", low=ALPHA_RANGE[0], high=ALPHA_RANGE[1])
    else:
        raise TypeError(
            f"rule must be one of {', '.join(map(repr, plain))} or a float alpha for d_k**-alpha, "
            f"got {type(rule).__name__} {rule!r}"
        )
    raise ValueError(
        f"unknown scaling rule {rule!r}: use one of {', '.join(map(repr, plain))} or a float alpha for d_k**-alpha"
    )


def check_rule(rule: str, *, alpha=0.5, temperature=0.1) -> tuple[str, float, float]:
    """Validate a page-level rule with its knobs; returns ``(rule, alpha, temperature)``.

    ``rule`` is one of :data:`RULES`; ``alpha`` in [0, 4]; ``temperature`` in [1e-6, 1e6]
    (checked whatever the rule, so a bad knob is caught before it is used)."""
    return (rule_name(rule), *_knobs(alpha, temperature))


def _knobs(alpha, temperature) -> tuple[float, float]:
    return (
        real(alpha, "alpha", low=ALPHA_RANGE[0], high=ALPHA_RANGE[1]),
        real(temperature, "temperature", low=TEMPERATURE_RANGE[0], high=TEMPERATURE_RANGE[1]),
    )


def rule_name(rule) -> str:
    """``rule`` if it names one of :data:`RULES`, else a TypeError/ValueError listing them."""
    if not isinstance(rule, str):
        raise TypeError(
            f"rule must be a string, one of {', '.join(map(repr, RULES))}; got {type(rule).__name__} {rule!r}"
        )
    if rule not in RULES:
        raise ValueError(f"unknown scaling rule {rule!r}: use one of {', '.join(map(repr, RULES))}")
    return rule


def logit_scale(d_k, rule: str, *, alpha=0.5, temperature=0.1, n=None) -> float:
    """The factor on the (possibly normalised) dot product under ``rule`` (one of :data:`RULES`):
    ``scale_for`` for the plain rules, ``d_k**-alpha`` for "alpha", ``1/temperature`` for "qknorm"
    (q, k are unit vectors then), ``s log n / sqrt(d_k)`` for "ssmax". ``d_k`` is checked for every rule
    (1 <= d_k <= 2**53); ``n``, the sequence length, only for a rule that reads it (:meth:`Rule.scales`).

    >>> logit_scale(64, "qknorm", temperature=0.25)
    4.0
    """
    rule, alpha, temperature = check_rule(rule, alpha=alpha, temperature=temperature)
    d_k = integer(d_k, "d_k", low=1, high=MAX_D_K)
    spec = RULES[rule]
    return float(spec._scales(np.array([float(d_k)]), alpha, temperature, spec.check_n(n))[0])


#: The smallest ``floor_scale`` :func:`llama4_temperature` takes: n / floor_scale then stays finite for every n up to
#: ``MAX_N`` (a subnormal floor_scale overflowed it to inf, and floor(inf) raised: a link stopped the app's start).
LLAMA4_MIN_FLOOR_SCALE = 1e-6


def llama4_temperature(n, *, floor_scale=LLAMA4_FLOOR_SCALE, attn_scale=LLAMA4_ATTN_SCALE) -> float:
    """Llama 4's factor on the query that sees ``n`` keys (n >= 1; the query at 0-based position n - 1 under the
    causal mask): ``1 + attn_scale ln(1 + floor(n / floor_scale))``, exactly 1 for n < floor_scale (a real ≥
    ``LLAMA4_MIN_FLOOR_SCALE``, as a config may give it; ``hf_config.temperature_at`` reads a config's through this).

    >>> llama4_temperature(8191), round(llama4_temperature(65536), 4)
    (1.0, 1.2197)
    """
    n = integer(n, "n", low=1, high=MAX_N)
    floor_scale = real(floor_scale, "floor_scale", low=LLAMA4_MIN_FLOOR_SCALE, high=1e9)
    attn_scale = real(attn_scale, "attn_scale", low=0.0, high=1e3)
    return 1.0 + attn_scale * math.log1p(math.floor(n / floor_scale))


#: The standard normal grid :func:`gauss_moments` integrates over: [-10, 10] in steps of 0.125 (the trapezoid
#: rule, offset by half a step so that a cap far below the spread, a step function at 0, is integrated exactly;
#: numpy.polynomial's Gauss-Hermite nodes are not in the site's numpy). Past 10 std the density is 1e-22.
_GRID = np.linspace(-10.0, 10.0, 160, endpoint=False) + 0.0625
_WEIGHTS = np.exp(-0.5 * _GRID * _GRID) / np.exp(-0.5 * _GRID * _GRID).sum()
#: Points of the chi-square grid (:func:`_chi2_grid`).
_CHI2_POINTS = 96


def _chi2_grid(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nodes r and weights (each row summing to 1) for an expectation over r ~ chi-square(d), for each d of the
    (D,) array: (D, R). The trapezoid rule in t = ln(r / d), where the density is ``exp(-(d/2)(e^t - 1 - t))``
    up to a constant (computed with expm1, so that d up to 2**53 keeps its precision), over
    t in d - max(10 sqrt(2/d), 28/d) .. + 10 sqrt(2/d) + 14/d: the left tail of small d (chi-square(1) has mass
    down to 0) and both tails of large d, where t is about N(0, 2/d)."""
    d = np.asarray(d, dtype=np.float64)[:, None]
    lo = -np.maximum(10 * np.sqrt(2 / d), 28 / d)
    hi = 10 * np.sqrt(2 / d) + 14 / d
    t = lo + (hi - lo) * np.linspace(0.0, 1.0, _CHI2_POINTS)[None, :]
    logw = -(d / 2) * (np.expm1(t) - t)
    w = np.exp(logw - logw.max(axis=-1, keepdims=True))
    return d * np.exp(t), w / w.sum(axis=-1, keepdims=True)


#: How many d_k a capped rule's moments integrate at once (Rule.capped_moments): bounds its memory.
CAPPED_CHUNK = 64


def gauss_moments(mean, std, cap: float) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of ``cap tanh(X / cap)`` for X ~ N(mean, std^2), elementwise over arrays of mean and
    std (no checks; cap > 0). Any float64 works: inf means and stds give the cap's limits (+-cap, and an
    even split of +-cap for an infinite std). Two quadratures, each within 2e-6 of cap^2: for a spread up to 2
    caps, the trapezoid rule on X's standard normal grid (:data:`_GRID`); past it, where tanh turns within one
    step of that grid, on u = X / cap over [-20, 20] (where tanh is not yet +-1 to float64), with the normal
    tails beyond taken exactly (erfc).

    >>> [round(float(x[0]), 4) for x in gauss_moments(np.array([0.0]), np.array([1.0]), 50.0)]
    [0.0, 0.9992]
    """
    mean, std = np.broadcast_arrays(np.asarray(mean, dtype=np.float64), np.asarray(std, dtype=np.float64))
    # in units of the cap, clipped where tanh is +-1 to float64 anyway (tanh(20) = 1 - 8e-18): the spread to
    # 1e6, the mean to 40 past the reach of either grid
    s = np.clip(std / cap, 0.0, 1e6)
    reach = 40.0 + 10.0 * s
    m = np.clip(mean / cap, -reach, reach)
    first, second = np.empty(m.shape), np.empty(m.shape)
    wide = s > 2.0
    narrow = ~wide
    t = np.tanh(m[narrow][..., None] + s[narrow][..., None] * _GRID)
    first[narrow] = (t * _WEIGHTS).sum(axis=-1)
    second[narrow] = (t * t * _WEIGHTS).sum(axis=-1)
    if wide.any():
        mw, sw = m[wide][..., None], s[wide][..., None]
        density = np.exp(-0.5 * ((_U - mw) / sw) ** 2) / (sw * math.sqrt(2 * math.pi)) * _U_WEIGHTS
        above = _normal_sf((_U[-1] - mw[..., 0]) / sw[..., 0])  # P(X / cap > 20): tanh is 1 there
        below = _normal_sf((mw[..., 0] - _U[0]) / sw[..., 0])  # P(X / cap < -20): -1
        tanh_u = np.tanh(_U)
        first[wide] = (tanh_u * density).sum(axis=-1) + above - below
        second[wide] = (tanh_u * tanh_u * density).sum(axis=-1) + above + below
    first = np.clip(first, -1.0, 1.0)  # the weights' sum is 1 to a few ulps
    second = np.clip(second, 0.0, 1.0)
    return cap * first, cap * cap * np.maximum(second - first * first, 0.0)


#: The grid in X / cap of :func:`gauss_moments`' wide spreads: [-20, 20] in steps of 0.05, trapezoid weights.
_U = np.linspace(-20.0, 20.0, 801)
_U_WEIGHTS = np.full(_U.shape, 0.05)
_U_WEIGHTS[[0, -1]] = 0.025
_ERFC = np.frompyfunc(math.erfc, 1, 1)


def _normal_sf(z: np.ndarray) -> np.ndarray:
    """P(Z > z) for a standard normal Z, elementwise (numpy has no erfc; math's, one by one)."""
    return 0.5 * np.asarray(_ERFC(np.asarray(z, dtype=np.float64) / math.sqrt(2.0)), dtype=np.float64)


# ---- the closed forms every rule's theory is built from ---------------------------------------------------
def pair_dot_moments(d: np.ndarray, rho: float, *, unit: bool) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of a matched pair ``q_i . k_i`` with ``k = rho q + sqrt(1 - rho^2) z``, for an
    array of d_k (no checks): ``rho d_k`` and ``(1 + rho^2) d_k`` for unit-variance entries; for unit
    vectors (``unit``, the cosine) ``rho`` and ``(1 - rho^2)^2 / d_k`` (large-d_k limit, the variance of
    a correlation coefficient)."""
    if unit:
        return np.full_like(d, rho), (1 - rho * rho) ** 2 / d
    return rho * d, (1 + rho * rho) * d


def pooled_dot_std(d: np.ndarray, rho: float, n: int, *, unit: bool) -> np.ndarray:
    """Std of the n x n dot products ``q_i . k_j`` pooled over all pairs, for an array of d_k (no checks):
    the n - 1 off-diagonal pairs of each row have mean 0 and variance d_k (1/d_k for unit vectors), the
    matched pair the moments of :func:`pair_dot_moments`."""
    off_var = 1 / d if unit else d
    diag_mean, diag_var = pair_dot_moments(d, rho, unit=unit)
    mean = diag_mean / n
    second = (diag_var + diag_mean**2) / n + off_var * (n - 1) / n
    return np.sqrt(np.maximum(second - mean * mean, 0.0))


def product(*xs) -> np.ndarray:
    """The elementwise product of arrays or floats without overflow or underflow on the way (mantissas
    and exponents multiplied apart); inf only where the product itself exceeds float64."""
    mant: np.ndarray = np.ones(())
    exp: np.ndarray = np.zeros((), dtype=np.intc)  # frexp's exponents are a C int, in Pyodide too
    for x in xs:
        m, e = np.frexp(np.asarray(x, dtype=np.float64))
        mant, exp = mant * m, exp + e
    with np.errstate(over="ignore"):
        return np.ldexp(mant, exp)


def qk_normalize(x, eps: float = 1e-12):
    """``x / |x|`` over the last axis (QK-norm, Henry et al. 2020); rows of zeros stay zero.

    The norm is taken of ``x / max|x|`` in float64, so neither float16 (whose squares overflow
    past 256) nor float64 near its limits (3e200) or at 1e-300 loses a row; the result has x's
    dtype. ``x`` must be a non-empty float array with finite entries; ``eps`` in (0, 1] only
    guards rows of zeros (every other row's norm, taken after dividing by its max, is >= 1).

    >>> qk_normalize(np.array([[3e200, 4e200]])).tolist()
    [[0.6, 0.8]]
    """
    x = finite(float_array(x, "x"), "x", "it has no direction")
    eps = real(eps, "eps", low=0.0, low_open=True, high=1.0)
    return (_unit(x.astype(np.float64), eps)).astype(x.dtype, copy=False)


def _unit(x: np.ndarray, eps: float) -> np.ndarray:
    peak = np.abs(x).max(axis=-1, keepdims=True)
    y = x / np.where(peak > 0, peak, 1.0)
    norm = np.sqrt((y * y).sum(axis=-1, keepdims=True))  # in [1, sqrt(E)] unless the row is 0
    return y / np.maximum(norm, eps)


def qk_normalize_backward(x, grad, eps: float = 1e-12):
    """Gradient through ``x / |x|``: ``(grad - xhat (xhat . grad)) / |x|`` (no checks).

    Computed in float64 with the norm taken as ``max|x| * |x / max|x||`` (like :func:`qk_normalize`),
    so a float16 row longer than 256 does not come back as a zero gradient; the result has the
    dtype of ``x`` and ``grad`` combined (past 65504 a float16 gradient is inf). As in the forward
    pass, ``eps`` only guards rows of zeros (their gradient is ``grad / eps``): a row of length 1e-300
    is a direction like any other, with the gradient ``1e300 (grad - xhat (xhat . grad))``, inf where
    that exceeds float64 (a subnormal row), without a numpy warning."""
    x, grad = np.asarray(x), np.asarray(grad)
    x64, g64 = x.astype(np.float64, copy=False), grad.astype(np.float64, copy=False)
    peak = np.abs(x64).max(axis=-1, keepdims=True)
    y = x64 / np.where(peak > 0, peak, 1.0)  # |y| <= 1: its squares cannot overflow
    rel = np.sqrt(np.einsum("...i,...i->...", y, y))[..., None]  # |x| / max|x|, in [1, sqrt(E)] unless 0
    xhat = y / np.maximum(rel, eps)  # as qk_normalize computes it
    with np.errstate(over="ignore", invalid="ignore"):  # an inf upstream gradient stays non-finite
        out = g64 - xhat * np.einsum("...i,...i->...", xhat, g64)[..., None]
        out /= np.where(peak > 0, rel, eps)  # rel >= 1: divided by |x| in two steps, no underflow of peak * rel
        out /= np.where(peak > 0, peak, 1.0)
        return out.astype(np.result_type(x, grad), copy=False)
