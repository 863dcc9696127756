"""What attention hands on: how close each output ``o_i = sum_j p_ij v_j`` is to one value vector.

A saturated row copies one value (cosine 1 to it); a flat row averages them, and the average of n
random vectors points nowhere in particular (cosine about 1/sqrt(n) to each) and is shorter (about
1/sqrt(n) of a value's length).
"""

from __future__ import annotations

import numpy as np

from ._checks import finite, float_array, probabilities

__all__ = ["output_similarity"]


def output_similarity(weights, v) -> dict:
    """Per query, how much its output ``o_i = sum_j w_ij v_j`` looks like one value vector.

    Parameters
    ----------
    weights : (L, S) float array
        Rows of probabilities (each sums to 1 within round-off, or is all zeros: a query with no
        allowed key, whose output is the zero vector).
    v : (S, d_v) float array
        Value vectors, finite, at least one non-zero.

    Returns
    -------
    dict of arrays (L,)
        ``cosine``: float64, the largest ``cos(o_i, v_j)`` over the non-zero value vectors (1 = o_i is a
        copy of one value, up to length); NaN for a zero output. ``nearest``: int64, the j attaining it
        (-1 for a zero output). ``norm_ratio``: float64, ``||o_i||`` over the mean ``||v_j||``.

    Examples
    --------
    >>> v = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> r = output_similarity(np.array([[1.0, 0.0], [0.5, 0.5]]), v)
    >>> r["cosine"].round(4).tolist(), r["nearest"].tolist(), r["norm_ratio"].round(4).tolist()
    ([1.0, 0.7071], [0, 0], [1.0, 0.7071])
    """
    w = probabilities(float_array(weights, "weights", min_ndim=2), "weights")
    v = finite(float_array(v, "v", min_ndim=2), "v", "outputs built from it would be meaningless")
    if w.ndim != 2 or v.ndim != 2:
        raise ValueError(f"weights must be (L, S) and v (S, d_v), got shapes {w.shape} and {v.shape}")
    if w.shape[1] != v.shape[0]:
        raise ValueError(f"weights has {w.shape[1]} keys per row but v has {v.shape[0]} value vectors: they must match")
    w64, v64 = w.astype(np.float64), v.astype(np.float64)
    peak = float(np.abs(v64).max())
    if peak == 0:
        raise ValueError("v is all zeros: no value vector has a direction to compare with")
    v64 = v64 / peak  # cosines and ratios do not change; squares of 1e200 do not overflow
    o = w64 @ v64  # (L, d_v)
    v_norm = np.linalg.norm(v64, axis=1)  # (S,)
    o_norm = np.linalg.norm(o, axis=1)  # (L,)
    live = o_norm > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        cos = (o @ v64.T) / (o_norm[:, None] * v_norm[None, :])  # (L, S)
    cos = np.where(v_norm[None, :] > 0, cos, -np.inf)  # a zero value vector has no direction
    nearest = np.where(live, cos.argmax(axis=1), -1)
    best = np.where(live, cos.max(axis=1), np.nan)
    return {
        "cosine": np.clip(best, -1.0, 1.0),
        "nearest": nearest.astype(np.int64),
        "norm_ratio": o_norm / v_norm.mean(),
    }
