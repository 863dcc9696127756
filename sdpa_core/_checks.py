"""Argument checks shared by the public functions: one clear message per mistake."""
from __future__ import annotations

import numbers

import numpy as np

FLOAT_DTYPES = (np.float16, np.float32, np.float64)


def float_array(x, name: str, *, min_ndim: int = 1) -> np.ndarray:
    """``x`` as a floating ndarray of rank >= min_ndim, or a TypeError/ValueError saying why not."""
    a = np.asarray(x)
    if a.dtype.type not in FLOAT_DTYPES:
        raise TypeError(
            f"{name} must hold floating-point numbers (float16, float32 or float64), "
            f"got dtype {a.dtype}; convert it first, e.g. {name}.astype(np.float64)")
    if a.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s), got shape {a.shape}")
    return a


def finite(a: np.ndarray, name: str) -> np.ndarray:
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or infinity; statistics of it would be meaningless")
    return a


def probabilities(p, name: str = "p", axis: int = -1) -> np.ndarray:
    """A finite, non-negative array of probabilities (rows may sum to 1 or to 0 for fully masked rows)."""
    a = finite(float_array(p, name), name)
    _axis(a, axis, name)
    if (a < 0).any():
        raise ValueError(f"{name} has negative entries; probabilities must be >= 0")
    return a


def _axis(a: np.ndarray, axis: int, name: str) -> None:
    if not isinstance(axis, numbers.Integral) or not -a.ndim <= axis < a.ndim:
        raise ValueError(f"axis={axis!r} is out of range for {name} with {a.ndim} dimension(s)")


def real(x, name: str, *, low: float | None = None, high: float | None = None,
         low_open: bool = False) -> float:
    """A finite real number within [low, high] (or (low, high] when low_open)."""
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(x).__name__} {x!r}")
    v = float(x)
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    if low is not None and (v <= low if low_open else v < low):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {v}")
    if high is not None and v > high:
        raise ValueError(f"{name} must be <= {high}, got {v}")
    return v


def integer(x, name: str, *, low: int | None = None, high: int | None = None) -> int:
    if isinstance(x, bool) or not isinstance(x, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(x).__name__} {x!r}")
    v = int(x)
    if low is not None and v < low:
        raise ValueError(f"{name} must be >= {low}, got {v}")
    if high is not None and v > high:
        raise ValueError(f"{name} must be <= {high}, got {v}")
    return v
