"""What each view computes from the shared settings, and when: one table, ``RESULTS``, read by
``LabState`` (web/state.py), which computes a result only while a view that shows it is on screen and
only when the settings it reads have changed since the last time.

Each entry names the views that show it, the settings it reads (its cache key), and a function of the
state that returns the parameters to set. Adding a result is one entry here and its parameter in
``LabState``; the state's single ``_refresh`` does the caching and the timing for all of them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

import sdpa_core as sc
from sdpa_core import hf_config, real_models

from . import claims
from .options import (ANSWER_N, ANSWER_SAMPLES, ALIGN_MAP_RULES, ALIGN_SAMPLES, GRADIENT_ROWS, HIST_SAMPLES, LENGTH_RULES, LENGTH_SAMPLES,
                      MAX_PLAYGROUND_WORK, MODEL_N, MODEL_SAMPLES, PRECISION_N, RHO_STEPS, SWEEP_BUDGET)

#: The real-models calculator's own fields (besides ``preset``).
MODEL_FIELDS = ("d_model", "heads", "init_std", "layernorm", "qk_norm", "model_scale")


@dataclass(frozen=True)
class Result:
    """One lazily computed result: shown by ``views``, recomputed when ``key(state)`` changes. ``later``: it
    is drawn below its view's first screen, so on the live page a move computes it on the loop's next turn
    (web/loop.py ``next_turn``), after the figures beside the control have gone out redrawn."""

    views: tuple[str, ...]
    key: Callable[[Any], tuple]
    compute: Callable[[Any], dict]
    later: bool = False


def effective_samples(s) -> int:
    """Sweep samples per d_k after the work cap (samples * n * n <= SWEEP_BUDGET)."""
    return int(max(4, min(s.samples, SWEEP_BUDGET // (s.n * s.n))))


def _playground(s) -> dict:
    """Both sides of the playground (no scaling and the chosen rule): weights, readouts, the gradient reaching
    each query, and the verdict's sentences, set together so every watcher sees the weights and the sentence
    about them at once."""
    n, d_k = s.n, s.d_k
    assert n * n * d_k <= MAX_PLAYGROUND_WORK
    dtype = np.dtype(s.dtype).type
    q, k, v = sc.draw_qkv(n, d_k, sigma=s.sigma, rho=s.rho, seed=s.seed, dtype=dtype)
    g = sc.upstream_gradient(n, d_k, seed=s.seed, dtype=dtype)
    knobs = {"alpha": s.alpha, "temperature": s.temperature, "causal": s.causal}
    # each side's weights, readouts and gradient reaching q; 1/sqrt(d_k)'s median row is the reference
    # a starved row is measured against
    out = {r: sc.rule_readouts(q, k, v, g, r, **knobs) for r in dict.fromkeys(("none", s.rule, "sqrt"))}
    ref = float(np.median(out["sqrt"]["dq_norms"]))
    sides = {}
    for side, rule in (("none", "none"), ("rule", s.rule)):
        r = out[rule]
        # below dq_floor a norm is float64 round-off (a saturated row's 1e-60 comes out as 1e-19 in
        # CPython, 1e-22 in Pyodide): it reads "≈ 0", and no row is counted against a reference
        # whose 1/1000 is below it
        floor = max(r["dq_floor"], out["sqrt"]["dq_floor"])
        grad = {"floor": r["dq_floor"], **claims.gradient_figures(r["dq_norms"], ref, floor)}
        stats = {**r["stats"], "grad_floor": grad["floor"], "grad_median": grad["median"],
                 "grad_total": grad["total"], "grad_starved": grad["starved"],
                 **claims.output_figures(r["weights"], v)}
        sides[side] = {"rule": rule, "weights": r["weights"], "stats": stats, "overflow": r["overflow"],
                       "nan_rows": r["nan_rows"], "scale": r["scale"], "grad": grad}
    at_rho0 = None
    if s.rho > 0 and s.rule != "none":
        # what aligning q and k did: the rule on the same draw (same q and z) at ρ = 0
        q0, k0, v0 = sc.draw_qkv(n, d_k, sigma=s.sigma, rho=0.0, seed=s.seed, dtype=dtype)
        at_rho0 = sc.rule_readouts(q0, k0, v0, g, s.rule, **knobs)["stats"]["saturated"]
        with np.errstate(all="ignore"):   # float16 logits past 65504 are inf: their mean is too
            matched = float(np.diagonal(out[s.rule]["logits"]).astype(np.float64).mean())
        theory = sc.settings_logit_moments(d_k, sigma=s.sigma, rho=s.rho, rule=s.rule, alpha=s.alpha,
                                           temperature=s.temperature, n=n)["m"]
        sides["rule"]["matched"] = (matched, theory)
    text = claims.verdict(sides, n=n, d_k=d_k, dtype=s.dtype, rho=s.rho, causal=s.causal, at_rho0=at_rho0)
    return {"playground": sides, "verdict": text}


def _sweep(s) -> dict:
    samples = effective_samples(s)
    return {"sweep_samples": samples,
            "sweep": sc.sweep(sc.POW2_D_K, sc.RULE_NAMES, n=s.n, samples=samples, sigma=s.sigma, rho=s.rho,
                              alpha=s.alpha, temperature=s.temperature, seed=s.seed)}


def _answer(s) -> dict:
    """The answer view at d_k: the mean top weight and saturated share over ANSWER_SAMPLES draws of ANSWER_N x
    ANSWER_N logits, without scaling and with 1/√d_k, and the weights of one draw for its two heatmaps."""
    q, k, v = sc.draw_qkv(ANSWER_N, s.d_k, seed=0)
    maps = {"none": sc.attention(q, k, v, scale=1.0)[1], "sqrt": sc.attention(q, k, v)[1]}
    sweep = sc.sweep((s.d_k,), ("none", "sqrt"), n=ANSWER_N, samples=ANSWER_SAMPLES, seed=0)
    return {"answer": {"sweep": sweep, "maps": maps, "n": ANSWER_N, "samples": ANSWER_SAMPLES}}


def _length_rules(s) -> tuple[str, ...]:
    return tuple(dict.fromkeys(LENGTH_RULES + (s.rule,)))


def model_draws(d_k: int) -> tuple[int, int]:
    """(n, samples) of a real head's Monte-Carlo: MODEL_N tokens and MODEL_SAMPLES heads, fewer for a very
    wide head, so the work stays within ``real_models.MAX_WORK`` (standard errors need 2 samples)."""
    n = MODEL_N
    samples = int(min(MODEL_SAMPLES, real_models.MAX_WORK // (n * n * (n + d_k))))
    while samples < 2:
        n //= 2
        samples = int(min(MODEL_SAMPLES, real_models.MAX_WORK // (n * n * (n + d_k))))
    return n, samples


def _real_model(s) -> dict:
    if s.d_model % s.heads:
        return {"real_model": {"error": f"{s.heads} heads do not divide d_model = {s.d_model}: "
                                        f"d_k = d_model / heads must be a whole number."}}
    n, samples = model_draws(s.d_model // s.heads)
    if s.preset != "custom":
        return {"real_model": real_models.preset_at_init(s.preset, n=n, samples=samples, seed=s.seed)}
    return {"real_model": real_models.head_at_init(s.d_model, s.heads, init_std=s.init_std, layernorm=s.layernorm,
                                                   qk_norm=s.qk_norm, scale=s.model_scale, n=n, samples=samples,
                                                   seed=s.seed)}


def _config_model(s) -> dict:
    """The head a pasted (or linked) config.json sets, at initialisation; None when there is none."""
    if not s.hf_config:
        return {"config_model": None}
    try:
        head = hf_config.read_config(hf_config.parse_config(s.hf_config))
    except hf_config.ConfigError as e:
        return {"config_model": {"error": str(e)}}
    n, samples = model_draws(head.d_k)
    try:
        return {"config_model": {"head": head, **hf_config.config_at_init(head, n=n, samples=samples, seed=s.seed)}}
    except Exception as e:  # said on the page, not only in the console (a module missing in Pyodide did this)
        return {"config_model": {"error": f"The page could not draw this head: {type(e).__name__}: {e}"}}


def _aligned_maps(s) -> dict:
    q, k, v = sc.draw_qkv(s.n, s.d_k, sigma=s.sigma, rho=s.rho, seed=s.seed)
    return {"aligned_maps": {r: sc.rule_attention(q, k, v, r, alpha=s.alpha, temperature=s.temperature)[1]
                             for r in ALIGN_MAP_RULES}}


def _knobs(s) -> tuple:
    return (s.alpha, s.temperature)


#: Every lazily computed result, by name (its timing's name in ``LabState.timings``).
RESULTS: dict[str, Result] = {
    "playground": Result(
        ("playground",), lambda s: (s.d_k, s.n, s.sigma, s.rho, s.seed, s.rule, *_knobs(s), s.causal, s.dtype),
        _playground),
    "dots": Result(
        ("variance",), lambda s: (s.d_k, s.sigma, s.rho, s.seed, s.rule, *_knobs(s), s.n),
        lambda s: {"dots": sc.dot_histograms(s.d_k, sigma=s.sigma, rho=s.rho, seed=s.seed, rule=s.rule, alpha=s.alpha,
                                             temperature=s.temperature, m=HIST_SAMPLES, n=s.n)}),
    "answer": Result(("answer",), lambda s: (s.d_k,), _answer),
    "sweep": Result(
        ("variance", "saturation"), lambda s: (s.n, s.sigma, s.rho, s.seed, *_knobs(s), effective_samples(s)), _sweep),
    "gradients": Result(
        ("saturation",), lambda s: (s.d_k, s.n, s.sigma, s.rho, s.seed, *_knobs(s)),
        lambda s: {"gradients": sc.query_gradient_norms(
            s.n, s.d_k, sc.RULE_NAMES, reps=max(1, GRADIENT_ROWS // s.n), sigma=s.sigma, rho=s.rho, seed=s.seed,
            alpha=s.alpha, temperature=s.temperature, flush_round_off=True)}),
    "length": Result(
        ("saturation",), lambda s: (s.d_k, s.sigma, s.rho, s.seed, *_knobs(s), _length_rules(s)),
        lambda s: {"length": sc.length_path(sc.LENGTHS, _length_rules(s), d_k=s.d_k, sigma=s.sigma, rho=s.rho,
                                            samples=LENGTH_SAMPLES, seed=s.seed, alpha=s.alpha,
                                            temperature=s.temperature)},
        later=True),   # the length section, under the gradient plot: a d_k notch redraws the plots beside it first
    "precision": Result(
        ("precision",), lambda s: (min(s.n, PRECISION_N), s.sigma, s.rho, s.seed),
        lambda s: {"precision": sc.precision_sweep(sc.POW2_D_K, n=min(s.n, PRECISION_N), sigma=s.sigma, rho=s.rho,
                                                   seed=s.seed)}),
    "precision_breaks": Result(      # the headline's spread over draws: a property of the settings, not the seed
        ("precision",), lambda s: (min(s.n, PRECISION_N), s.sigma, s.rho, s.order),
        lambda s: {"precision_breaks": sc.first_breaks(sc.POW2_D_K, n=min(s.n, PRECISION_N), sigma=s.sigma,
                                                       rho=s.rho, order=s.order)}),
    "dial": Result(
        ("dial",), lambda s: (s.dial_s, s.n, s.seed),
        lambda s: {"dial": {**sc.dial_attention(s.dial_s, s.n, seed=s.seed),
                            "expected": sc.dial_expectation(s.dial_s, s.n)}}),   # the headline's: not one draw
    "settings_moments": Result(
        ("dial",), lambda s: (s.d_k, s.sigma, s.rho, s.rule, *_knobs(s), s.n),
        lambda s: {"settings_moments": {r: sc.settings_logit_moments(
            s.d_k, sigma=s.sigma, rho=s.rho, rule=r, alpha=s.alpha, temperature=s.temperature, n=s.n)
            for r in dict.fromkeys(("none", s.rule))}}),
    "alignment": Result(
        ("alignment",), lambda s: (s.d_k, s.n, s.sigma, s.seed, *_knobs(s)),
        lambda s: {"alignment": sc.rho_path(np.linspace(0.0, 1.0, RHO_STEPS), sc.RULE_NAMES, d_k=s.d_k, n=s.n,
                                            sigma=s.sigma, samples=ALIGN_SAMPLES, seed=s.seed, alpha=s.alpha,
                                            temperature=s.temperature)}),
    "aligned_maps": Result(
        ("alignment",), lambda s: (s.d_k, s.n, s.sigma, s.rho, s.seed, *_knobs(s)), _aligned_maps),
    "real_model": Result(
        ("models",), lambda s: (s.preset, *(getattr(s, f) for f in MODEL_FIELDS), s.seed), _real_model),
    "config_model": Result(("models",), lambda s: (s.hf_config, s.seed), _config_model),
}
