"""The number formats every sentence uses, and the rule labels.

Pure functions of results computed by ``sdpa_core`` (no Panel, no state objects), so the tests can check
each sentence against an independent computation; each names the conditions it holds under.
"""
from __future__ import annotations

import math

import numpy as np

import sdpa_core as sc



RULE_LABELS = sc.RULE_LABELS

# ---- numbers ----------------------------------------------------------------------------------------
def fmt(x, digits: int = 3) -> str:
    """A readout as a learner reads it: "≈ 0" for tiny non-zero values (one-hot entropies are 1e-158),
    "inf: overflow" for infinities, "NaN" for NaN, "–" for a missing value."""
    if x is None:
        return "–"
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf: overflow"
    if x != 0 and abs(x) < 1e-4:
        return "≈ 0"
    if abs(x) >= 1e5:
        return f"{x:.2e}"
    return f"{x:.{digits}g}"


def fmt_sci(x, digits: int = 2, floor: float = 0.0) -> str:
    """Like :func:`fmt` but keeps the size of small values (gradients of starved rows are the point),
    down to ``floor``, the round-off size of the computation: below it, "≈ 0"."""
    if x is None or not math.isfinite(float(x)) or x == 0:
        return fmt(x)
    if abs(x) < floor:
        return "≈ 0"
    x = float(x)
    return f"{x:.{digits - 1}e}" if abs(x) < 1e-3 or abs(x) >= 1e5 else f"{x:.{digits}g}"


def pct(x: float) -> str:
    """A share as a percentage; never rounds a non-zero share to 0% or a share below 1 to 100%."""
    if x is None or not math.isfinite(x):
        return fmt(x)
    if 0 < x < 0.005:
        return "<1%"
    if 0.995 <= x < 1:
        return ">99%"
    return f"{x:.0%}"


def _ratio(r: float) -> str:
    return f"{r:.0f}×" if r >= 10 else f"{r:.1f}×"

# ---- the guided tour's predictions ------------------------------------------------------------------
def bucket(value: float, edges) -> int:
    """Which range of ``edges`` (ascending) ``value`` falls in: 0 below ``edges[0]``, ..., ``len(edges)``
    at or above the last. A tour step's choices are these ranges, so its right answer is measured."""
    return int(np.searchsorted(np.asarray(edges, dtype=float), float(value), side="right"))
