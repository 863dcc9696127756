"""Real models at initialisation: how spread out one attention head's logits are before any training.

A head's query and key are projections ``q = x W_q``, ``k = x W_k`` of the token vectors x (after the
block's LayerNorm/RMSNorm, each token has rms 1 per feature) by (d_model, d_k) matrices with i.i.d.
N(0, std^2) entries. So q has entries of variance ``d_model std_q^2`` and, for two different tokens,
``Var(q . k) = d_k (d_model std_q^2)(d_model std_k^2)``: the logit std before scaling. :func:`head_at_init`
gives it in closed form and, by Monte Carlo, what the softmax over n tokens then looks like, with the
model's scale, without scaling, with 1/sqrt(d_k) and with the "sqrt(d_model) bug" (dividing by
sqrt(d_model) instead of sqrt(d_k)). :data:`PRESETS` holds published models, each fact with its source.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._checks import boolean, entries, integer, real
from .scaling import gauss_moments
from .stats import SATURATION, above

__all__ = [
    "Preset",
    "PRESETS",
    "head_at_init",
    "preset_at_init",
    "logit_std_at_init",
    "QK_NORMS",
    "MODEL_SCALES",
    "VARIANTS",
]

#: Where a model normalises q and k: "none"; "head" (each head's q and k: RMSNorm/LayerNorm over d_k,
#: ViT-22B); "all" (the whole projection, all heads at once, before the split: OLMo 2).
QK_NORMS = ("none", "head", "all")
#: What the model multiplies q . k by: "sqrt" (1/sqrt(d_k), Vaswani et al. 2017) or "none" (T5).
MODEL_SCALES = ("sqrt", "none")
#: The scalings every result reports: the model's own, none, 1/sqrt(d_k), 1/sqrt(d_model) (the bug).
VARIANTS = ("model", "unscaled", "sqrt_d_k", "sqrt_d_model")
MAX_D_MODEL = 65536
#: Every std (weights, inputs) in [1e-6, 1e3]: the logits then stay within float32's range, far from 0 and inf.
STD_RANGE = (1e-6, 1e3)
MAX_WORK = 2**29  # samples * n * n * (n + d_k): the multiply-adds of one call, ~0.3 s on one core


@dataclass(frozen=True)
class Preset:
    """A published model's attention at initialisation, with where each fact comes from.

    ``q_std``, ``k_std``: std of W_q's and W_k's entries; ``layernorm``: the attention's input is
    normalised to rms 1 per feature (LayerNorm or RMSNorm at gain 1), else its entries have std
    ``input_std``; ``qk_norm``: one of :data:`QK_NORMS`; ``scale``: one of :data:`MODEL_SCALES`.
    """

    label: str
    d_model: int
    heads: int
    q_std: float
    k_std: float
    scale: str
    layernorm: bool
    qk_norm: str
    source: str
    input_std: float = 1.0

    @property
    def d_k(self) -> int:
        return self.d_model // self.heads


#: Named presets (key -> :class:`Preset`). Only facts from the cited paper or configuration; where a
#: number is not published or plays no part, its source says so.
PRESETS: dict[str, Preset] = {
    "gpt2": Preset(
        "GPT-2 small",
        768,
        12,
        0.02,
        0.02,
        "sqrt",
        True,
        "none",
        "GPT-2 small: d_model 768, 12 heads (d_k 64), LayerNorm before attention (ln_1), W_q and W_k "
        "(c_attn) ~ N(0, 0.02^2), q.k / sqrt(d_k) (Radford et al. 2019; Hugging Face GPT2Config "
        "initializer_range 0.02, GPT2PreTrainedModel._init_weights; the 1/sqrt(2 n_layer) rescaling "
        "applies to c_proj only, not to q and k).",
    ),
    "bert-base": Preset(
        "BERT-base",
        768,
        12,
        0.02,
        0.02,
        "sqrt",
        True,
        "none",
        "BERT-base: d_model 768, 12 heads (d_k 64), initializer_range 0.02, q.k / sqrt(d_k) (Devlin et al. "
        "2019; Hugging Face BertConfig). Post-LN: every attention input is a LayerNorm output (the "
        "embeddings' LayerNorm for layer 1). Hugging Face draws N(0, 0.02^2); Google's TensorFlow code used "
        "a normal truncated at 2 std, whose std is 0.88 x 0.02.",
    ),
    "llama-2-7b": Preset(
        "LLaMA-2-7B",
        4096,
        32,
        0.02,
        0.02,
        "sqrt",
        True,
        "none",
        "LLaMA-2-7B: d_model 4096, 32 heads (d_k 128), RMSNorm before attention, q.k / sqrt(d_k) (Touvron "
        "et al. 2023); W ~ N(0, 0.02^2) is Hugging Face LlamaConfig's initializer_range (the paper does "
        "not give Meta's own). RoPE rotates q and k by position, keeping their lengths: left out here.",
    ),
    "t5-base": Preset(
        "T5-base",
        768,
        12,
        (768 * 64) ** -0.5,
        768**-0.5,
        "none",
        True,
        "none",
        "T5-base: d_model 768, 12 heads, d_kv 64, RMSNorm (T5LayerNorm) before attention (Raffel et al. "
        "2020; Hugging Face T5Config). No 1/sqrt(d_k) in attention: the scale is folded into the init, "
        "per Hugging Face modeling_t5 T5PreTrainedModel._init_weights (the Mesh TensorFlow init): "
        "W_q ~ N(0, 1/(d_model d_kv)), W_k ~ N(0, 1/d_model), initializer_factor 1.0.",
    ),
    "olmo-2-7b": Preset(
        "OLMo 2 7B",
        4096,
        32,
        0.02,
        0.02,
        "sqrt",
        False,
        "all",
        "OLMo 2 7B: d_model 4096, 32 heads (d_k 128), QK-norm: RMSNorm over the whole q and k projections "
        "(all heads at once, Hugging Face Olmo2Attention q_norm/k_norm), then q.k / sqrt(d_k); weights "
        "~ N(0, 0.02^2) (Team OLMo 2024, '2 OLMo 2 Furious'). Its norms sit on sublayer outputs, so the "
        "attention input is not normalised: the QK-norm makes its scale (input_std 1 here) irrelevant.",
    ),
    "vit-22b": Preset(
        "ViT-22B",
        6144,
        48,
        0.02,
        0.02,
        "sqrt",
        True,
        "head",
        "ViT-22B: width 6144, 48 heads (d_k 128), LayerNorm before attention and LayerNorm on each head's "
        "q and k, then q.k / sqrt(d_k) (Dehghani et al. 2023). The paper's weight init is not used: the "
        "QK LayerNorm removes it from the logits (0.02 stands in). Modelled as RMSNorm: LayerNorm's "
        "centring changes the logit std by sqrt(d_k / (d_k - 1)), 0.4 % at d_k = 128.",
    ),
}


def head_at_init(
    d_model,
    heads,
    *,
    init_std=0.02,
    q_std=None,
    k_std=None,
    layernorm=True,
    input_std=1.0,
    qk_norm="none",
    scale="sqrt",
    n=128,
    samples=8,
    seed=0,
    d_k=None,
    factor=None,
    softcap=None,
    norm_width=None,
    k_norm_width=None,
) -> dict:
    """One attention head at initialisation: its logit std in closed form, and the softmax over n tokens.

    Parameters
    ----------
    d_model, heads : int
        Width and number of heads; ``d_k = d_model / heads`` must be a whole number.
    init_std : float
        Std of W_q's and W_k's entries, unless ``q_std`` / ``k_std`` give them apart (T5); each std
        (``input_std`` too) in [1e-6, 1e3].
    layernorm : bool
        True: each token has rms 1 per feature (LayerNorm/RMSNorm at gain 1). False: i.i.d. entries of
        std ``input_std``.
    qk_norm : str
        One of :data:`QK_NORMS`. After it each head's q and k have rms ~1 per entry (norm sqrt(d_k)).
    scale : str
        The model's factor on q . k, one of :data:`MODEL_SCALES`.
    n : int
        Tokens in the sequence (queries = keys, no mask), in [2, 4096]; 128 by default.
    samples : int
        Independent heads (fresh weights and tokens) averaged, in [2, 4096]: a standard error needs at
        least two (one sample has no spread to measure; a ValueError says so).
    seed : int >= 0
    d_k : int, optional
        The head's width when a model sets it apart from ``d_model / heads`` (Gemma 2's ``head_dim``), in
        [1, 4096]; then ``heads`` need not divide ``d_model``.
    factor : float, optional
        The model's own factor on q . k when it is not ``scale``'s (Gemma 2's ``query_pre_attn_scalar``^-1/2,
        Granite's ``attention_multiplier``), in (0, 1e3].
    softcap : float, optional
        The model's logits become ``c tanh(z / c)`` after its factor (Gemma 2's ``attn_logit_softcapping``),
        c in (0, 1e6]; the other variants are not capped.
    norm_width : int, optional
        For ``qk_norm="all"``: how many coordinates the norm of q runs over (``heads * d_k`` by default).
    k_norm_width : int, optional
        The same for k (``norm_width`` by default): OLMo 2 normalises k over its ``num_key_value_heads * d_k``
        coordinates, fewer than q's under grouped-query attention.

    Returns
    -------
    dict
        ``d_k`` (int); ``scale`` (the model's own factor, as given: "sqrt" or "none"); ``q_entry_std``,
        ``k_entry_std`` (float, before any QK-norm); ``theory`` (variant ->
        float): the logit std in closed form for each of :data:`VARIANTS`; ``factors`` (variant -> float):
        what multiplies q . k; ``bug_factor`` (``sqrt(d_k / d_model) = 1 / sqrt(heads)``: what dividing by
        sqrt(d_model) instead of sqrt(d_k) does to the logits) and ``bug_temperature`` (``sqrt(heads)``, the
        temperature it amounts to); ``mc`` (variant -> dict of float): ``logit_std`` (rms of the n x n
        logits), ``top_weight``, ``tokens_attended`` (exp entropy), ``entropy`` (nats), ``saturated``
        (share of rows with top weight > 0.99), each a mean over queries and samples, and the same keys
        with ``_se``: their standard errors over samples; ``n``, ``samples`` (int).

    Notes
    -----
    The Monte Carlo is exact for Gaussian weights at O(n^2 (n + d_k)) per head, whatever d_model: with
    X = D A U (A the Bartlett factor of the tokens' Gram matrix, U orthonormal rows, D the rows'
    normalisation), ``X W = D A (U W)`` and ``U W`` has i.i.d. entries. For "all", the other heads'
    share of the norm is drawn per row as ``|x_i|^2 std^2 chi^2(d_model - d_k)`` (their small correlation
    across rows is left out). The closed form is exact for normalised inputs (tokens of norm sqrt(d_model))
    and for QK-norm (``E cos^2 = 1/d_k``); for raw inputs it leaves out a 2/(n d_model) relative term.

    Examples
    --------
    GPT-2 small's sizes: q entries have std sqrt(768) 0.02 = 0.55, so q . k has std 8 x 0.3072 = 2.46,
    and 0.31 after 1/sqrt(d_k); dividing by sqrt(d_model) instead would be a temperature of sqrt(12).

    >>> r = head_at_init(768, 12, samples=2, n=16)
    >>> round(r["theory"]["unscaled"], 4), round(r["theory"]["sqrt_d_k"], 4)
    (2.4576, 0.3072)
    >>> round(r["bug_temperature"], 4)
    3.4641
    """
    d_model = integer(d_model, "d_model", low=1, high=MAX_D_MODEL)
    if d_k is None:
        heads = integer(heads, "heads", low=1, high=d_model)
        if d_model % heads:
            raise ValueError(f"heads must divide d_model: d_model={d_model} over heads={heads} is not a whole d_k")
        d_k = d_model // heads
    else:
        heads = integer(heads, "heads", low=1, high=MAX_D_MODEL)
        d_k = integer(d_k, "d_k", low=1, high=4096)
    own = None if factor is None else real(factor, "factor", low=0.0, high=1e3)
    if own is not None and own <= 0:
        raise ValueError(f"factor must be > 0, got {own}: it multiplies q . k")
    cap = None if softcap is None else real(softcap, "softcap", low=0.0, high=1e6)
    if cap is not None and cap <= 0:
        raise ValueError(f"softcap must be > 0, got {cap}: the logits become c tanh(z / c)")
    width = heads * d_k if norm_width is None else integer(norm_width, "norm_width", low=d_k, high=MAX_D_MODEL * 4)
    k_width = width if k_norm_width is None else integer(k_norm_width, "k_norm_width", low=d_k, high=MAX_D_MODEL * 4)
    init_std = real(init_std, "init_std", low=STD_RANGE[0], high=STD_RANGE[1])
    q_std = init_std if q_std is None else real(q_std, "q_std", low=STD_RANGE[0], high=STD_RANGE[1])
    k_std = init_std if k_std is None else real(k_std, "k_std", low=STD_RANGE[0], high=STD_RANGE[1])
    layernorm = boolean(layernorm, "layernorm")
    input_std = real(input_std, "input_std", low=STD_RANGE[0], high=STD_RANGE[1])
    qk_norm = _choice(qk_norm, "qk_norm", QK_NORMS)
    scale = _choice(scale, "scale", MODEL_SCALES)
    n = integer(n, "n", low=2, high=4096)
    samples = _samples(samples)
    seed = integer(seed, "seed", low=0)
    if samples * n * n * (n + d_k) > MAX_WORK:
        raise ValueError(f"too much work: samples * n * n * (n + d_k) must be <= {MAX_WORK}; lower samples or n")

    x_rms = 1.0 if layernorm else input_std
    q_entry, k_entry = math.sqrt(d_model) * x_rms * q_std, math.sqrt(d_model) * x_rms * k_std
    factors = {v: float(f) for v, f in _factors(d_model, d_k, scale).items()}
    if own is not None:
        factors["model"] = own
    dots = _head_dots(d_model, d_k, q_std, k_std, layernorm, input_std, qk_norm, n, samples, seed, (width, k_width))
    mc: dict[str, dict] = {}
    for v, f in factors.items():
        capped = cap if v == "model" else None
        # the same factor gives the same logits ("model" is often another variant), unless one is capped
        same = None if capped else next((u for u in mc if factors[u] == f and not (cap and u == "model")), None)
        if same:
            mc[v] = mc[same]
            continue
        z = dots * f
        if capped is not None:
            z = capped * np.tanh(z / capped)
        rms = np.sqrt((z * z).mean(axis=(-2, -1)))  # (samples,): the logit std, exact in float64
        # float32 is plenty for the softmax's readouts, and twice as fast
        mc[v] = {**_summary("logit_std", rms), **_softmax_stats(z.astype(np.float32))}
    theory = {
        v: float(s[0])
        for v, s in _logit_std(np.array([d_model]), d_model / d_k, q_std, k_std, x_rms, qk_norm, scale).items()
    }
    if own is not None:
        theory["model"] = theory["unscaled"] * own
    if cap is not None:
        theory["model"] = capped_std(theory["model"], cap)
    return {
        "d_model": d_model,
        "heads": heads,
        "d_k": d_k,
        "scale": scale,
        "q_entry_std": q_entry,
        "k_entry_std": k_entry,
        "factors": factors,
        "theory": theory,
        "softcap": cap,
        "bug_factor": math.sqrt(d_k / d_model),
        "bug_temperature": math.sqrt(d_model / d_k),
        "mc": mc,
        "n": n,
        "samples": samples,
    }


def _factors(d_model, d_k, scale: str) -> dict:
    """What multiplies q . k in each of :data:`VARIANTS` (floats or arrays alike)."""
    return {
        "model": 1 / np.sqrt(d_k) if scale == "sqrt" else 1.0,
        "unscaled": 1.0,
        "sqrt_d_k": 1 / np.sqrt(d_k),
        "sqrt_d_model": 1 / np.sqrt(d_model),
    }


def _logit_std(d_model: np.ndarray, heads, q_std, k_std, x_rms, qk_norm: str, scale: str) -> dict:
    # [w] widths -> variant: [w] logit stds. q . k sums d_k products of entries with std
    # sqrt(d_model) x_rms q_std and sqrt(d_model) x_rms k_std (rms 1 each after QK-norm).
    d_k = d_model / heads
    entries = 1.0 if qk_norm != "none" else d_model * x_rms**2 * q_std * k_std
    unscaled = np.sqrt(d_k) * entries
    return {v: unscaled * f for v, f in _factors(d_model, d_k, scale).items()}


def logit_std_at_init(
    d_models, heads, *, q_std=0.02, k_std=None, layernorm=True, input_std=1.0, qk_norm="none", scale="sqrt"
) -> dict:
    """The closed-form logit std of one head at initialisation for each of :data:`VARIANTS`, at several
    widths with the number of heads and the init stds held fixed (what :func:`head_at_init` gives as
    ``theory`` at one width).

    Parameters
    ----------
    d_models : sequence of int
        Widths, each in [heads, 65536] and a multiple of ``heads``.
    heads : int
    q_std, k_std : float
        Std of W_q's and W_k's entries (``k_std`` defaults to ``q_std``), in [1e-6, 1e3].
    layernorm, input_std, qk_norm, scale
        As in :func:`head_at_init`.

    Returns
    -------
    dict
        variant -> float64 array of the logit std at each width.

    Examples
    --------
    At a fixed init std the unscaled logits grow like d_model^1.5 (d_k and both entries grow):

    >>> s = logit_std_at_init([768, 3072], 12)
    >>> round(float(s["unscaled"][1] / s["unscaled"][0]), 6), round(float(s["sqrt_d_k"][1] / s["sqrt_d_k"][0]), 6)
    (8.0, 4.0)
    """
    heads = integer(heads, "heads", low=1, high=MAX_D_MODEL)
    widths = np.asarray(
        [integer(d, "d_models[i]", low=heads, high=MAX_D_MODEL) for d in entries(d_models, "d_models")], dtype=float
    )
    if widths.size == 0:
        raise ValueError("d_models must hold at least one width")
    if np.any(widths % heads):
        raise ValueError(f"every width must be a multiple of heads = {heads}: d_k = d_model / heads is a whole number")
    q_std = real(q_std, "q_std", low=STD_RANGE[0], high=STD_RANGE[1])
    k_std = q_std if k_std is None else real(k_std, "k_std", low=STD_RANGE[0], high=STD_RANGE[1])
    layernorm = boolean(layernorm, "layernorm")
    input_std = real(input_std, "input_std", low=STD_RANGE[0], high=STD_RANGE[1])
    x_rms = 1.0 if layernorm else input_std
    return _logit_std(
        widths, heads, q_std, k_std, x_rms, _choice(qk_norm, "qk_norm", QK_NORMS), _choice(scale, "scale", MODEL_SCALES)
    )


def preset_at_init(name, *, n=128, samples=8, seed=0) -> dict:
    """:func:`head_at_init` for one of :data:`PRESETS` by name, with ``preset`` (the :class:`Preset`) added.
    ``n`` in [2, 4096] and ``samples`` in [2, 4096], as there.

    >>> round(preset_at_init("t5-base", n=16, samples=2)["theory"]["model"], 12)  # T5's init does the scaling
    1.0
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be a preset's name, one of {', '.join(map(repr, PRESETS))}; got {name!r}")
    if name not in PRESETS:
        raise ValueError(f"unknown preset name {name!r}: use one of {', '.join(map(repr, PRESETS))}")
    p = PRESETS[name]
    out = head_at_init(
        p.d_model,
        p.heads,
        q_std=p.q_std,
        k_std=p.k_std,
        layernorm=p.layernorm,
        input_std=p.input_std,
        qk_norm=p.qk_norm,
        scale=p.scale,
        n=n,
        samples=samples,
        seed=seed,
    )
    return {**out, "preset": p}


def _samples(samples) -> int:
    """samples in [2, 4096], or a ValueError a learner can act on (1 would give every ``*_se`` as NaN)."""
    samples = integer(samples, "samples", high=4096)
    if samples < 2:
        raise ValueError(
            f"samples must be >= 2, got {samples}: the results include standard errors over the samples (the "
            f"*_se keys), and fewer than two samples have no spread to measure; use samples=2 or more"
        )
    return samples


def _choice(x, name: str, options: tuple) -> str:
    if not isinstance(x, str):
        raise TypeError(f"{name} must be one of {', '.join(map(repr, options))}, got {type(x).__name__} {x!r}")
    if x not in options:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}, got {x!r}")
    return x


def _tokens(rng, d_model: int, n: int, samples: int, layernorm: bool, input_std: float) -> np.ndarray:
    """(samples, n, r) coordinates of the n tokens in an orthonormal basis of their span (r = min(n, d_model)):
    the Bartlett factor of their Gram matrix, or the tokens themselves when d_model < n."""
    if d_model < n:
        a = rng.standard_normal((samples, n, d_model))
    else:
        idx = np.arange(n)
        a = np.tril(rng.standard_normal((samples, n, n)), -1)
        a[:, idx, idx] = np.sqrt(rng.chisquare(d_model - idx, size=(samples, n)))
    if layernorm:  # every token has norm sqrt(d_model): rms 1 per feature
        a *= math.sqrt(d_model) / np.linalg.norm(a, axis=-1, keepdims=True)
    else:
        a *= input_std
    return a


def _head_dots(d_model, d_k, q_std, k_std, layernorm, input_std, qk_norm, n, samples, seed, widths=None) -> np.ndarray:
    """q_i . k_j of ``samples`` fresh heads, (samples, n, n), after any QK-norm, before the scale (``widths``: what
    a whole-projection QK-norm of q and of k runs over, d_model for both by default)."""
    q_width, k_width = (d_model, d_model) if widths is None else widths
    rng = np.random.default_rng(seed)
    x = _tokens(rng, d_model, n, samples, layernorm, input_std)  # (samples, n, r)
    r = x.shape[-1]
    q = x @ (q_std * rng.standard_normal((samples, r, d_k)))
    k = x @ (k_std * rng.standard_normal((samples, r, d_k)))
    if qk_norm != "none":
        x2 = (x * x).sum(axis=-1, keepdims=True)  # |x_i|^2
        q, k = (_rms_normalize(rng, a, s, x2, w, qk_norm) for a, s, w in ((q, q_std, q_width), (k, k_std, k_width)))
    return q @ k.swapaxes(-1, -2)


def _rms_normalize(rng, a, std, x2, width, qk_norm) -> np.ndarray:
    """RMSNorm at gain 1 over each head ("head") or over the whole projection of ``width`` coordinates ("all")."""
    d_k = a.shape[-1]
    sq = (a * a).sum(axis=-1, keepdims=True)
    if qk_norm == "head":
        return a * np.sqrt(d_k / sq)
    rest = width - d_k  # the other heads' coordinates of the same projection
    others = x2 * std * std * (rng.chisquare(rest, size=sq.shape) if rest > 0 else 0.0)
    return a * np.sqrt(width / (sq + others))


def capped_std(std: float, cap: float) -> float:
    """The std of ``cap tanh(z / cap)`` for z ~ N(0, std^2) (soft-capped Gaussian logits), about 0 (their rms):
    :func:`sdpa_core.scaling.gauss_moments`, the trapezoid rule on the normal density. ``std`` itself when the
    cap is far above it, and at most ``cap``."""
    std = real(std, "std", low=0.0)
    cap = real(cap, "cap", low=0.0, low_open=True)
    if std == 0.0:
        return 0.0
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        mean, var = gauss_moments(np.array([0.0]), np.array([std]), cap)
    return float(np.sqrt(var[0] + mean[0] ** 2))


def _softmax_stats(z: np.ndarray) -> dict:
    """Means over queries and samples of (samples, n, n) logits, and their standard errors over samples."""
    z -= z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    total = e.sum(axis=-1)
    ent = np.log(total) - (e * z).sum(axis=-1) / total  # (samples, n): H = log s - sum p (z - max)
    top = 1 / total
    out: dict = {}
    for key, v in (
        ("top_weight", top),
        ("tokens_attended", np.exp(ent)),
        ("entropy", ent),
        ("saturated", above(top, SATURATION)),
    ):
        out.update(_summary(key, v.mean(axis=-1, dtype=np.float64)))
    return out


def _summary(key: str, per_sample: np.ndarray) -> dict:
    """``key``: the mean over samples; ``key_se``: its standard error (callers have >= 2 samples)."""
    m = len(per_sample)
    return {key: float(per_sample.mean()), key + "_se": float(per_sample.std(ddof=1) / math.sqrt(m))}
