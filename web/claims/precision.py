"""Half precision: where float16 first breaks.

Pure functions of results computed by ``sdpa_core`` (no Panel, no state objects), so the tests can check
each sentence against an independent computation; each names the conditions it holds under.
"""
from __future__ import annotations

import numpy as np

from .claim import Claim, as_int, as_word

# ---- half precision --------------------------------------------------------------------------------
ORDER_WORDS = {"none": "nowhere (no scaling)", "after": "after the matmul", "before": "before the matmul"}


def first_broken(ps, dtype: str, order: str, kind: str = "stable") -> int | None:
    """The smallest d_k of a precision sweep whose rows contain inf or NaN (``kind`` softmax), or None."""
    frac = np.asarray(ps.nonfinite_rows[dtype][order][kind], dtype=float)
    bad = np.nonzero(frac > 0)[0]
    return int(ps.d_k[bad[0]]) if len(bad) else None


def broken_span(ps, dtype: str, order: str, kind: str = "stable") -> Claim | None:
    """Where a precision sweep's rows hold inf or NaN, as words: "from d_k = 256" when every larger d_k breaks
    too, else "first at d_k = 1 (and at 3 of the 12 larger d_k)"; None when no d_k breaks."""
    frac = np.asarray(ps.nonfinite_rows[dtype][order][kind], dtype=float)
    bad = np.nonzero(frac > 0)[0]
    if not len(bad):
        return None
    first, later = int(ps.d_k[bad[0]]), frac[bad[0] + 1:] > 0
    if later.all():
        return Claim("from d_k = {first}", first=as_int(first))
    return Claim("first at d_k = {first} (and at {later} of the {larger} larger d_k)", first=as_int(first),
                 later=as_int(later.sum()), larger=as_int(len(later)))


def precision_headline(ps, *, order: str) -> Claim:
    """The half-precision view's point: from which d_k float16's stable softmax has rows with inf or NaN,
    with the scale where ``order`` puts it; where it never does, from which d_k the naive softmax does."""
    span = broken_span(ps, "float16", order)
    where = {"none": "with no scaling", "after": "scaling after the matmul",
             "before": "scaling before the matmul"}[order]
    if span is None:
        naive = first_broken(ps, "float16", order, "naive")
        if naive is not None:   # what the default opens on (σ = 1): the naive softmax's overflow, the stable's hold
            return Claim("In float16, {where}, the stable softmax holds up to d_k = {largest}; the naive one first "
                         "breaks at d_k = {naive}.",
                         where=as_word(order, where), largest=as_int(ps.d_k[-1]), naive=as_int(naive))
        return Claim("In float16, {where}, no row of the stable softmax breaks up to d_k = {largest}.",
                     where=as_word(order, where), largest=as_int(ps.d_k[-1]))
    return Claim("In float16, {where}, rows of the stable softmax hold inf or NaN " + span.template + ".",
                 where=as_word(order, where), **span.given())


def headline_kind(ps, order: str) -> str:
    """The softmax the headline's number is about: the stable one where it breaks or nothing breaks, else the
    naive one."""
    if first_broken(ps, "float16", order) is None and first_broken(ps, "float16", order, "naive") is not None:
        return "naive"
    return "stable"


def precision_spread(ps, breaks: dict, *, order: str) -> Claim:
    """The headline's number is one draw's: where the same float16 softmax first breaks over other draws at the
    same settings and order (``breaks``: ``sdpa_core.first_breaks``), said with the headline, so that one draw is
    not read as the settings' own: "Over 20 other draws at these settings, the naive softmax first breaks at
    d_k = 1 to 32" (or "in 12 of them, at …", or "never up to d_k = 4096")."""
    kind = headline_kind(ps, order)
    values = list(breaks[kind])
    broke = sorted(b for b in values if b is not None)
    lead = "Over {draws} other draws at these settings, the {kind} softmax"
    facts = {"draws": as_int(len(values)), "kind": as_word(kind, kind)}
    if not broke:
        return Claim(lead + " never breaks up to d_k = {largest}.", **facts, largest=as_int(ps.d_k[-1]))
    at = "d_k = {lo}" if broke[0] == broke[-1] else "d_k = {lo} to {hi}"
    facts |= {"lo": as_int(broke[0]), **({} if broke[0] == broke[-1] else {"hi": as_int(broke[-1])})}
    if len(broke) == len(values):
        return Claim(lead + " first breaks at " + at + ".", **facts)
    return Claim(lead + " first breaks at " + at + " in {broke} of them; the rest hold up to d_k = {largest}.",
                 **facts, broke=as_int(len(broke)), largest=as_int(ps.d_k[-1]))
