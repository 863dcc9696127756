"""Argument checks shared by the public functions: one clear message per mistake, naming the argument.

Every check raises TypeError (wrong kind of thing: a string, a bool, an int array where floats
are needed) or ValueError (right kind, wrong value: NaN, out of range, empty, wrong shape), never
a numpy-internal error, so a learner reads what to change.
"""

from __future__ import annotations

import numbers
from typing import cast

import numpy as np

FLOAT_DTYPES = (np.float16, np.float32, np.float64)

#: How far a row of probabilities may sum from 1: round-off of weights computed in the dtype, or in
#: half precision and then cast up (one rounding per weight, 2^-11 each, plus subnormals), while
#: counts, logits and unnormalised rows (``[1, 1]`` sums to 2) are still refused.
ROW_SUM_TOL = {np.float16: 1e-2, np.float32: 1e-3, np.float64: 1e-3}


def float_array(x, name: str, *, min_ndim: int = 1) -> np.ndarray:
    """``x`` as a non-empty floating ndarray of rank >= min_ndim, or a TypeError/ValueError saying why not."""
    a = _asarray(x, name)
    if a.dtype.type not in FLOAT_DTYPES:
        raise TypeError(
            f"{name} must hold floating-point numbers (float16, float32 or float64), "
            f"got dtype {a.dtype}; convert it first, e.g. {name}.astype(np.float64)"
        )
    if a.ndim < min_ndim:
        raise ValueError(f"{name} must have at least {min_ndim} dimension(s), got shape {a.shape}")
    if a.size == 0:
        raise ValueError(f"{name} is empty (shape {a.shape}): every dimension needs at least one entry")
    return a


def _asarray(x, name: str) -> np.ndarray:
    if isinstance(x, np.ma.MaskedArray):  # np.asarray would drop its mask without a word
        raise TypeError(
            f"{name} is a numpy masked array (np.ma); its mask would be ignored here. Say what masked "
            f"entries mean with {name}.filled(value) (for logits, -np.inf gives weight 0; attention also "
            f"takes mask=, True = may attend)"
        )
    try:
        return np.asarray(x)
    except (ValueError, TypeError, OverflowError):  # ragged nested lists, objects numpy cannot convert
        raise TypeError(f"{name} must be an array of numbers with a regular shape, got {type(x).__name__}") from None


def finite(a: np.ndarray, name: str, why: str = "statistics of it would be meaningless") -> np.ndarray:
    if not np.isfinite(a).all():
        raise ValueError(f"{name} contains NaN or infinity; {why}")
    return a


def no_nan_or_pos_inf(a: np.ndarray, name: str) -> np.ndarray:
    """Logits may hold -inf (a forbidden entry), never NaN or +inf (no softmax value would be right)."""
    if np.isnan(a).any() or np.isposinf(a).any():
        raise ValueError(f"{name} contains NaN or +inf; only -inf (weight 0) is allowed among finite values")
    return a


def probabilities(p, name: str = "p", axis: int = -1) -> np.ndarray:
    """A finite, non-negative array whose slices along ``axis`` sum to 1 (or to 0: a fully masked row)."""
    a = finite(float_array(p, name), name)
    axis = _axis(a, axis, name)
    if (a < 0).any():
        raise ValueError(f"{name} has negative entries; probabilities must be >= 0")
    total = a.sum(axis=axis, dtype=np.float64)
    tol = ROW_SUM_TOL[a.dtype.type]
    bad = (np.abs(total - 1) > tol) & (total != 0)
    if bad.any():
        worst = float(total[bad].flat[0])
        raise ValueError(
            f"{name} is not a probability distribution along axis {axis}: a row sums to {worst:.6g}; "
            f"each must sum to 1 (within {tol:g}) or be all zeros; pass softmax(x), not x"
        )
    return a


def _axis(a: np.ndarray, axis, name: str) -> int:
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"axis must be an integer, got {type(axis).__name__} {axis!r}")
    axis = int(axis)
    if not -a.ndim <= axis < a.ndim:
        raise ValueError(f"axis={axis!r} is out of range for {name} with {a.ndim} dimension(s)")
    return axis


def _scalar(x):
    """A 0-d numpy array as its Python number (so ``np.array(0.5)`` is accepted where 0.5 is)."""
    if isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype.kind in "iuf":
        return x.item()
    return x


def real(x, name: str, *, low: float | None = None, high: float | None = None, low_open: bool = False) -> float:
    """A finite real number within [low, high] (or (low, high] when low_open)."""
    x = _scalar(x)
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(x).__name__} {x!r}")
    try:
        v = float(x)
    except OverflowError:  # an int like 2**4000 has no float
        big = cast(int, x)  # only an int can be too large for float()
        raise ValueError(f"{name} is out of range: got {_short(big)}, beyond float64's 1.8e308") from None
    if not np.isfinite(v):
        raise ValueError(f"{name} must be finite, got {v}")
    if low is not None and (v <= low if low_open else v < low):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low:g}, got {v:g}")
    if high is not None and v > high:
        raise ValueError(f"{name} must be <= {high:g}, got {v:g}")
    return v


def integer(x, name: str, *, low: int | None = None, high: int | None = None) -> int:
    x = _scalar(x)
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(x).__name__} {x!r}")
    v = int(x)
    if low is not None and v < low:
        raise ValueError(f"{name} must be >= {low}, got {v}")
    if high is not None and v > high:
        raise ValueError(f"{name} must be <= {high}, got {_short(v)}")
    return v


def _short(v: int) -> str:
    """A huge int without its 1205 digits."""
    return str(v) if v.bit_length() <= 64 else f"an integer of {v.bit_length()} bits"


def boolean(x, name: str) -> bool:
    if not isinstance(x, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(x).__name__} {x!r}")
    return bool(x)


def float_dtype(dtype, name: str = "dtype"):
    """One of numpy's float16, float32, float64 (given as a type, a dtype or a name)."""
    try:
        t = np.dtype(dtype).type
    except (TypeError, ValueError):
        t = None
    if isinstance(dtype, bool) or dtype is None or t not in FLOAT_DTYPES:
        raise TypeError(f"{name} must be float16, float32 or float64, got {dtype!r}")
    return t


def generator(rng, name: str = "rng") -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{name} must be a numpy Generator, e.g. np.random.default_rng(0), got {type(rng).__name__}")
    return rng


def d_k_values(d_ks, high: int, name: str = "d_ks") -> np.ndarray:
    """A non-empty 1-d int array of d_k values in [1, high]: one d_k or a flat list of them."""
    d = _asarray(d_ks, name)
    if d.ndim > 1 or d.size == 0:
        raise ValueError(f"{name} must be one d_k or a flat list of them, got shape {d.shape}")
    return np.asarray(
        [
            integer(x.item() if isinstance(x, np.generic) else x, f"{name}: each d_k", low=1, high=high)
            for x in np.atleast_1d(d)
        ]
    )


def names(rules, name: str, check) -> tuple:
    """A non-empty tuple of rule names (not a bare string, which would be split into letters)."""
    if isinstance(rules, str):
        raise TypeError(f"{name} must be a sequence of rule names such as ('none', 'sqrt'), got the string {rules!r}")
    try:
        rules = tuple(rules)
    except TypeError:
        raise TypeError(
            f"{name} must be a sequence of rule names such as ('none', 'sqrt'), got {type(rules).__name__}"
        ) from None
    if not rules:
        raise ValueError(f"{name} must name at least one rule")
    for r in rules:
        try:
            check(r)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{name}: {e}") from None
    return rules


def entries(values, name: str) -> list:
    """The entries of a sequence argument, checked one by one by the caller (numpy's own conversion of a
    ragged list raises a message that names no argument)."""
    if isinstance(values, (str, bytes)) or values is None:
        raise TypeError(f"{name} must be a sequence of ints, got {type(values).__name__} {values!r:.40}")
    try:
        return list(values)
    except TypeError:
        return [values]  # one number: checked as the only entry
