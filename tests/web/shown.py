"""How the page's shown numbers are checked against the values they round (one helper for every claims test)."""
from __future__ import annotations


def pct_ok(text: str, x: float, tol: float = 1e-9) -> bool:
    """``text``, a percentage as the page shows it ("27%", "0.6%", "<1%", ">99%"), is a fair rounding of
    the share ``x``, give or take ``tol`` (float32/16 round-off)."""
    lo, hi = {"<1%": (0, 0.005), ">99%": (0.995, 1)}.get(text, (None, None))
    if lo is None:
        digits = len(text[:-1].partition(".")[2])
        half = 0.5 * 10 ** -digits / 100
        lo, hi = float(text[:-1]) / 100 - half, float(text[:-1]) / 100 + half
    return lo - tol <= x <= hi + tol
