"""One trained head on real text (web/real_head.py): the sentences about its attention with and without the
scale, and what differs from Gaussian q and k of the same size. Pure functions of ``real_head.layer``'s dict."""
from __future__ import annotations

from .claim import Claim, Sentence, as_2f, as_fmt, as_int, as_pct, as_tokens


def real_head_headline(h: dict) -> Claim:
    """The trained head's top weight and tokens attended with the scale it was trained with, and without it."""
    own, raw = h["real"]["scaled"], h["real"]["unscaled"]
    return Claim(
        "Layer {layer}, trained with 1/√d_k: top weight {top}, about {tokens} tokens attended; without the scale, "
        "{top_raw} and {tokens_raw}, {sat_raw} of rows saturated.",
        layer=as_int(h["index"] + 1), top=as_pct(own["top"]), tokens=as_tokens(own["tokens"]),
        top_raw=as_pct(raw["top"]), tokens_raw=as_tokens(raw["tokens"]), sat_raw=as_pct(raw["saturated"]))


def _where(x: float, spread: dict) -> str:
    return "above" if x > spread["high"] else "below" if x < spread["low"] else "within"


def twin_sentence(h: dict) -> Claim:
    """Spread, alignment and tails of the real logits against the Gaussian twins' range (with the scale)."""
    real, twins = h["real"]["scaled"], h["twin"]["scaled"]
    std, t_std = real["std"], twins["std"]
    s = Sentence().add(
        "Gaussian q and k of the same size (rms {rq} and {rk} per entry; {draws} draws) give logits of std "
        "{t_std} ({t_lo} to {t_hi}); this head's are {std}, {ratio} times as wide.",
        rq=as_fmt(h["rms"][0]), rk=as_fmt(h["rms"][1]), draws=as_int(twins["draws"]), t_std=as_fmt(t_std["mean"]),
        t_lo=as_fmt(t_std["low"]), t_hi=as_fmt(t_std["high"]), std=as_fmt(std), ratio=as_fmt(std / t_std["mean"]))
    a, ta = h["align"], h["twin_align"]
    s.add(" Training gave them a geometry of their own: a query's cosine with its own key averages {own} and with the earlier keys "
          "{others}, where the draws give {t_own} and {t_others}.", own=as_2f(a["own"]), others=as_2f(a["others"]),
          t_own=as_2f(ta["own"]["mean"]), t_others=as_2f(ta["others"]["mean"]))
    k, tk = real["kurtosis"], twins["kurtosis"]
    where = _where(k, tk)
    words = {"above": "heavier tails than any draw's", "below": "lighter tails than any draw's",
             "within": "tails like the draws'"}[where]
    s.add(" Its logits have " + words + " (kurtosis {kurt}; the draws' {k_lo} to {k_hi}, a Gaussian's 3).",
          kurt=as_2f(k), k_lo=as_2f(tk["low"]), k_hi=as_2f(tk["high"]))
    return s.claim()
