"""Half precision: where float16 first breaks.

Pure functions of results computed by ``sdpa_core`` (no Panel, no state objects), so the tests can check
each sentence against an independent computation; each names the conditions it holds under.
"""
from __future__ import annotations


import numpy as np




# ---- half precision --------------------------------------------------------------------------------
ORDER_WORDS = {"none": "nowhere (no scaling)", "after": "after the matmul", "before": "before the matmul"}


def first_broken(ps, dtype: str, order: str, kind: str = "stable") -> int | None:
    """The smallest d_k of a precision sweep whose rows contain inf or NaN (``kind`` softmax), or None."""
    frac = np.asarray(ps.nonfinite_rows[dtype][order][kind], dtype=float)
    bad = np.nonzero(frac > 0)[0]
    return int(ps.d_k[bad[0]]) if len(bad) else None

def precision_headline(ps, *, order: str) -> str:
    """The half-precision view's point: from which d_k float16's stable softmax has rows with inf or NaN,
    with the scale where ``order`` puts it."""
    first = first_broken(ps, "float16", order)
    where = {"none": "with no scaling", "after": "scaling after the matmul",
             "before": "scaling before the matmul"}[order]
    if first is None:
        return f"In float16, {where}, no row of the stable softmax breaks up to d_k = {int(ps.d_k[-1])}."
    return f"In float16, {where}, rows of the stable softmax hold inf or NaN from d_k = {first}."
