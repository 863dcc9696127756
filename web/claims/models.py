"""Real models at initialisation: the calculator's sentences.

Pure functions of results computed by ``sdpa_core`` (no Panel, no state objects), so the tests can check
each sentence against an independent computation; each names the conditions it holds under.
"""
from __future__ import annotations




from .claim import Claim, Sentence, as_fmt, as_int, as_pct, as_tokens, as_word
from .montecarlo import Z, as_margin, as_points, share_margin
from .numbers import pct


# ---- real models -----------------------------------------------------------------------------------
#: How the calculator names each scaling it compares (sdpa_core.real_models.VARIANTS).
VARIANT_LABELS = {"model": "the model's own", "unscaled": "no scaling", "sqrt_d_k": "1/√d_k",
                  "sqrt_d_model": "1/√d_model (the bug)"}


def head_words(m: dict) -> str:
    """"GPT-2 small (d_model 768, 12 heads, d_k 64)" or the custom head's shape."""
    label = m["preset"].label if "preset" in m else "This head"
    return f"{label} (d_model {m['d_model']}, {m['heads']} heads, d_k {m['d_k']})"


def bug_sentence(m: dict) -> str:
    """What dividing by √d_model instead of √d_k does to this head (``sdpa_core.head_at_init``)."""
    right, bug = m["mc"]["sqrt_d_k"], m["mc"]["sqrt_d_model"]
    if m["heads"] == 1:
        return (f"{head_words(m)}: with one head d_k = d_model, so dividing by √d_model is dividing by √d_k: "
                f"the bug changes nothing.")
    if m["scale"] == "none":   # T5: the init does the scaling, there is no factor to get wrong
        return (f"{head_words(m)} divides q·k by nothing (its initialisation sets the logits' size), so it has no "
                f"√d_k that could become √d_model. A head of this shape that divided by √{m['d_model']} instead of "
                f"√{m['d_k']} would multiply every logit by √(d_k/d_model) = {m['bug_factor']:.3g}, i.e. divide them "
                f"by {m['bug_temperature']:.3g} = √heads.")
    return (f"{head_words(m)}: dividing by √{m['d_model']} instead of √{m['d_k']} multiplies every logit by "
            f"√(d_k/d_model) = {m['bug_factor']:.3g}, i.e. divides them by {m['bug_temperature']:.3g} = √heads "
            f"(the softmax's temperature × {m['bug_temperature']:.3g}); at initialisation over {m['n']} tokens the "
            f"top weight goes from {pct(right['top_weight'])} to {pct(bug['top_weight'])} and the tokens attended "
            f"from {right['tokens_attended']:.1f} to {bug['tokens_attended']:.1f}.")


def model_summary(m: dict) -> Claim:
    """The head's logit spread at initialisation with its own scaling and without, in closed form, and
    what the softmax over n tokens does with it (Monte-Carlo means). Facts: ``head``, ``n``; ``std_model``,
    ``top_model``, ``tokens_model``, ``saturated_model`` with its own scaling; the same ``*_unscaled``;
    ``std_sqrt`` for a head without 1/√d_k (what 1/√d_k would make its std); ``samples``, ``pm`` (the shares'
    widest interval, points) and ``pm_tokens``."""
    own, raw = m["mc"]["model"], m["mc"]["unscaled"]
    th = m["theory"]
    s = Sentence().add(
        "{head} at initialisation, over {n} tokens: the logits' std is {std_model} with the model's own scaling, so "
        "the top weight is {top_model} and about {tokens_model} tokens are attended ({saturated_model} of rows "
        "saturated). Without any scaling the std would be {std_unscaled}: top weight {top_unscaled}, "
        "{tokens_unscaled} tokens attended, {saturated_unscaled} of rows saturated.",
        head=as_word(m.get("preset"), head_words(m)), n=as_int(m["n"]), std_model=as_fmt(th["model"]),
        top_model=as_pct(own["top_weight"]), tokens_model=as_tokens(own["tokens_attended"]),
        saturated_model=as_pct(own["saturated"]), std_unscaled=as_fmt(th["unscaled"]),
        top_unscaled=as_pct(raw["top_weight"]), tokens_unscaled=as_tokens(raw["tokens_attended"]),
        saturated_unscaled=as_pct(raw["saturated"]))
    both = ("model", "unscaled")
    s.add(" (Monte-Carlo over {samples} random heads: each share ±{pm} points, tokens ±{pm_tokens}.)",
          samples=as_int(m["samples"]), pm=as_points(max(_share_pm(m, k, both) for k in ("top_weight", "saturated"))),
          pm_tokens=as_margin(max(Z * m["mc"][v]["tokens_attended_se"] for v in both), 1))
    if m["scale"] == "none":
        s.add(" This head has no 1/√d_k: its weights' initialisation alone sets the logits' std, {std_model} here "
              "(1/√d_k would make it {std_sqrt}).", std_sqrt=as_fmt(th["sqrt_d_k"]))
    return s.claim()


def _share_pm(m: dict, key: str, variants) -> float:
    """The widest interval of a share (``key``: the top weight or the saturated rows) of ``variants``: ``Z``
    standard errors over the random heads; a share of rows also never under the Wilson floor of its n × samples
    rows (``share_margin``)."""
    mc, rows = m["mc"], m["n"] * m["samples"]
    if key != "saturated":
        return max(Z * mc[v][f"{key}_se"] for v in variants)
    return max(share_margin(mc[v][key], mc[v][f"{key}_se"] * m["samples"] ** 0.5, m["samples"], rows) for v in variants)


def model_headline(m: dict) -> Claim:
    """The calculator's point: the head's top weight at initialisation with its own scaling and without, each
    within ``pm`` points (``_share_pm``)."""
    own, raw = m["mc"]["model"]["top_weight"], m["mc"]["unscaled"]["top_weight"]
    preset = m.get("preset")
    facts = dict(head=as_word(preset, preset.label if preset is not None else "This head"),
                 n=as_int(m["n"]), top=as_pct(own))
    if m["scale"] == "none":
        return Claim("{head} at initialisation: the top of {n} tokens takes {top} of a row's weight (±{pm} points), "
                     "with no scaling on q·k.", **facts, pm=as_points(_share_pm(m, "top_weight", ("model",))))
    return Claim("{head} at initialisation: the top of {n} tokens takes {top} of a row's weight with 1/√d_k, "
                 "{unscaled} without (each ±{pm} points).", **facts, unscaled=as_pct(raw),
                 pm=as_points(_share_pm(m, "top_weight", ("model", "unscaled"))))
