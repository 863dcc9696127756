"""Monte-Carlo figures with their uncertainty: the interval a sentence states, and trend words that are said
only when the draw can tell them apart.

A figure the page draws at random (a share of saturated rows over 32 matrices, a top weight over 128 queries)
moves with the seed. Each sentence that states one also states its interval, ``Z`` standard errors of the
mean, and a word that compares a figure with a line ("falls" past 1.25x, "from rho = 0.45") is said only when
the figure clears the line by more than that; otherwise the sentence says it is too close to call. The tests
re-draw the sentences over several seeds and hold each figure and word to the interval stated.
"""
from __future__ import annotations

import math

import numpy as np

#: A stated interval is this many standard errors either side of the mean (about 99.7% for a normal mean).
Z = 3.0


def mean_margin(spread: float, samples: int) -> float:
    """``Z`` standard errors of a mean of ``samples`` independent draws whose std is ``spread``."""
    return Z * float(spread) / math.sqrt(samples)


def share_margin(share: float, spread: float, samples: int, rows: int) -> float:
    """The half-width of a share of saturated rows (a mean over ``samples`` matrices, ``rows`` rows in all):
    ``mean_margin``, and never less than the Wilson score interval's at ``Z`` for ``rows`` independent rows,
    which is not 0 when every draw agreed (0% of 96 rows is not "exactly 0%")."""
    p, z2 = min(max(float(share), 0.0), 1.0), Z * Z
    centre = (p + z2 / (2 * rows)) / (1 + z2 / rows)
    half = Z * math.sqrt(p * (1 - p) / rows + z2 / (4 * rows * rows)) / (1 + z2 / rows)
    return max(mean_margin(spread, samples), p - (centre - half), centre + half - p)


def log_ratio_margin(first, last) -> float:
    """``Z`` standard errors of log(mean(first) / mean(last)), two means over the same draws (paired: draw i
    gave ``first[i]`` and ``last[i]``), by the delta method: the std of first/mean(first) - last/mean(last)."""
    first, last = np.asarray(first, dtype=float), np.asarray(last, dtype=float)
    a, b = first.mean(), last.mean()
    if not (a > 0 and b > 0) or first.size < 2:
        return math.inf
    return Z * float(np.std(first / a - last / b)) / math.sqrt(first.size)


def as_points(x: float) -> tuple[float, str]:
    """A half-width in percentage points, rounded up (never stated narrower than it is)."""
    return float(x), str(max(1, math.ceil(100 * float(x) - 1e-9)))


def as_margin(x: float, digits: int) -> tuple[float, str]:
    """A half-width written to ``digits`` decimals like the figures it goes with, rounded up (at least one unit
    of the last digit: never "±0.00")."""
    unit = 10.0 ** -digits
    return float(x), f"{max(unit, math.ceil(float(x) / unit - 1e-9) * unit):.{digits}f}"
