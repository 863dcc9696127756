"""The tiny model's training runs the seed-robustness tests share (computed once per test process).

Under pytest-xdist each worker is a process of its own: a test that uses these runs carries the mark
`SHARED`, so that all of them run on one worker and compute each run once."""
from __future__ import annotations

import functools

import numpy as np

import pytest

import sdpa_core as sc

#: the xdist group of every test that reads these runs (`make test` runs `--dist loadgroup`)
SHARED = pytest.mark.xdist_group("training-runs")


@functools.lru_cache(maxsize=None)
def losses(d_k: int, rule: str, seed: int, steps: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """(loss, accuracy) per step of one run at lr 0.01: the Train it view's defaults but for d_k and the seed."""
    t = sc.Trainer(sc.TrainConfig(d_k=d_k, rule=rule, seed=seed, lr=0.01))
    with np.errstate(all="ignore"):
        t.run(steps)
    return np.asarray(t.history["loss"]), np.asarray(t.history["accuracy"])
