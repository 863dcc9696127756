"""A pasted config.json's head at initialisation: the sentences about its factor, soft-cap and temperature.

Pure functions of ``{"head": sdpa_core.hf_config.ConfigHead, **sdpa_core.real_models.head_at_init}`` (what
``LabState.config_model`` holds), so the tests check each against an independent computation.
"""
from __future__ import annotations

import math

from sdpa_core import hf_config

from .claim import Claim, Sentence, as_fmt, as_g, as_int, as_pct, as_tokens, as_word
from .models import _share_pm
from .montecarlo import Z, as_margin, as_points

#: How close a factor must be to 1/√d_k, 1/d_k or 1/√d_model to be called it (a config's multiplier is often
#: written to 6 or 7 digits, 0.0883883 for 1/√128).
TOLERANCE = 1e-6
#: Positions (0-based) at which Llama 4's temperature is stated: 128k and 1M tokens into a sequence.
FAR_POSITIONS = (131_071, 1_048_575)


def config_headline(m: dict) -> Claim:
    """The head's factor, and the top weight and tokens attended with it and without (each with its interval)."""
    h: hf_config.ConfigHead = m["head"]
    own, raw = m["mc"]["model"], m["mc"]["unscaled"]
    both = ("model", "unscaled")
    without = "without the factor or the soft-cap" if h.softcap is not None else "without the factor"
    return Claim(
        "{arch}'s head multiplies q·k by {factor}: at initialisation over {n} tokens its top weight is {top} and "
        "about {tokens} tokens are attended; " + without + ", {top_raw} and {tokens_raw} (each ±{pm} points, "
        "tokens ±{pm_tokens}).",
        arch=as_word(h.architecture, h.architecture), factor=as_fmt(h.factor), n=as_int(m["n"]),
        top=as_pct(own["top_weight"]), tokens=as_tokens(own["tokens_attended"]), top_raw=as_pct(raw["top_weight"]),
        tokens_raw=as_tokens(raw["tokens_attended"]), pm=as_points(_share_pm(m, "top_weight", both)),
        pm_tokens=as_margin(max(Z * m["mc"][v]["tokens_attended_se"] for v in both), 1))


def factor_sentence(h: hf_config.ConfigHead) -> Claim:
    """The factor against 1/√d_k and 1/√d_model: equal, the √d_model bug, or how many times as wide the logits are."""
    ratio = h.factor * math.sqrt(h.d_k)
    s = Sentence().add("The factor is {formula}.", formula=as_word(h.formula, h.formula))
    mup = math.isclose(h.factor, 1 / h.d_k, rel_tol=TOLERANCE)
    if math.isclose(ratio, 1.0, rel_tol=TOLERANCE):
        s.add(" That is 1/√d_k with d_k = {d_k}: the logits keep the spread of one q entry times one k entry.",
              d_k=as_int(h.d_k))
    elif h.sqrt_d_model_bug and not mup:
        s.add(" That is 1/√d_model, the √d_model bug: the logits are {ratio} times as wide as 1/√d_k would make "
              "them.", ratio=as_fmt(ratio))
    else:
        s.add(" Against 1/√d_k (d_k = {d_k}) it makes the logits {ratio} times as wide", d_k=as_int(h.d_k),
              ratio=as_fmt(ratio))
        if mup:
            s.add(": it is 1/d_k, muP's scale, which keeps the logits from growing as q and k align in training"
                  + (" (here also 1/√d_model)." if h.sqrt_d_model_bug else "."))
        else:
            s.add(".")
    return s.claim()


def softcap_sentence(m: dict) -> Claim | None:
    """What the soft-cap c·tanh(z/c) does at initialisation: the logits' std with and without it (closed form for
    Gaussian logits, which they are near at d_k of tens and more)."""
    h: hf_config.ConfigHead = m["head"]
    if h.softcap is None:
        return None
    plain = m["theory"]["unscaled"] * h.factor
    capped = m["theory"]["model"]
    drop = max(0.0, 1 - capped / plain)
    s = Sentence().add("The soft-cap turns each logit z into {cap}·tanh(z/{cap}): none passes ±{cap}. At "
                       "initialisation the logits' std is about {plain} without it", cap=as_g(h.softcap),
                       plain=as_fmt(plain))
    if drop < 0.01:
        s.add(" and {capped} with it: it bites only once training makes logits near ±{cap2}.", capped=as_fmt(capped),
              cap2=as_g(h.softcap))
    else:
        s.add(" and {capped} with it, {change} lower: it already bites at initialisation.", capped=as_fmt(capped),
              change=as_pct(drop))
    return s.claim()


def temperature_sentence(m: dict) -> Claim | None:
    """Llama 4's position temperature: where it first exceeds 1 against the page's n tokens (the head is drawn
    without it), and its value far into a long context."""
    h: hf_config.ConfigHead = m["head"]
    if h.temperature is None:
        return None
    floor_scale, attn_scale = h.temperature
    first = math.ceil(floor_scale) - 1   # the first 0-based position p with floor((p + 1) / floor_scale) >= 1
    near, far = (hf_config.temperature_at(h, p) for p in FAR_POSITIONS)
    s = Sentence().add("In this layer q is also multiplied by a temperature 1 + attn_scale·ln(1 + ⌊(p + 1)/"
                       "floor_scale⌋) at position p.")
    if attn_scale == 0:
        return s.add(" With attn_scale 0 it is 1 at every position.").claim()
    n = m["n"]
    if n - 1 < first:
        s.add(" It is exactly 1 before position {first}, so over {n} tokens it changes nothing here.",
              first=_position(first), n=as_int(n))
    else:
        s.add(" It is above 1 from position {first}, inside these {n} tokens: the figures here draw the head "
              "without it.", first=_position(first), n=as_int(n))
    s.add(" At position {p1} it is {t1}, and at {p2} it is {t2}", p1=_position(FAR_POSITIONS[0]), t1=as_fmt(near),
          p2=_position(FAR_POSITIONS[1]), t2=as_fmt(far))
    if far > 1:
        s.add(": a long context's logits are widened to keep attention from flattening as n grows, as SSMax's "
              "s·ln n does.")
    else:
        s.add(".")
    return s.claim()


def _position(p: int) -> tuple[int, str]:
    return int(p), f"{int(p):,}"
