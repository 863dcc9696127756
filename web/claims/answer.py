"""The answer view's sentence: why attention divides by √d_k, in two sentences, with the numbers at the reader's d_k.

A pure function of ``sdpa_core.sweep`` at one d_k (no Panel, no state), so the oracle test checks it against an
independent computation (tests/web/test_headlines.py)."""
from __future__ import annotations

from .claim import Claim, as_fmt, as_int, as_pct


def answer_why(sweep) -> Claim:
    """Why attention divides by √d_k, in two sentences, at the sweep's one d_k (``sdpa_core.sweep((d_k,), ("none",
    "sqrt"), ...)``): the share of rows saturated without scaling (``saturated``, top weight > 0.99) at ``d_k``."""
    return Claim(
        "q·k adds up d_k products, so its spread grows like √d_k; widely spread logits push a softmax's weight onto "
        "one key ({saturated} of rows saturated at d_k = {d_k}), and such a row passes almost no gradient back. "
        "Dividing by √d_k keeps the spread the same at every width.",
        saturated=as_pct(sweep.mean["saturated"]["none"][0]), d_k=as_int(sweep.d_k[0]))


def answer_headline(sweep, *, samples: int) -> Claim:
    """The answer's numbers at the sweep's one d_k, in at most 25 words: the logits' std without scaling
    (``std_none``, theory: √d_k σ²) and with 1/√d_k (``std_sqrt``), and a row's top weight without and with it
    (``top_none``, ``top_sqrt``: means over ``samples`` draws)."""
    return Claim(
        "q·k grows like √d_k: at d_k = {d_k} its std is {std_none} and the top key takes {top_none}; divided by "
        "√d_k, std {std_sqrt} and {top_sqrt}.",
        d_k=as_int(sweep.d_k[0]), std_none=as_fmt(sweep.theory_logit_std["none"][0]),
        top_none=as_pct(sweep.mean["max_weight"]["none"][0]),
        std_sqrt=as_fmt(sweep.theory_logit_std["sqrt"][0]), top_sqrt=as_pct(sweep.mean["max_weight"]["sqrt"][0]))


def answer_conditions(*, n: int, samples: int) -> str:
    """The conditions the answer holds under, as its details line says them."""
    return f"Random q and k with entries of std σ = 1 (ρ = 0), n = {n} keys; top weights averaged over {samples} draws"
