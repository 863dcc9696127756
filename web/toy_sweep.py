"""The toy's loss against learning rate, one run per (rule, rate), run live in the tab beside the real
transformer's grid (views/real.py): the same rates, the toy of Train it (sdpa_core.Trainer) at the reader's d_k.

Widget-free like ``training_state.py``: the view advances it one run per tick, the tests drive it directly.
"""
from __future__ import annotations

import math
import time

import numpy as np
import param

import sdpa_core as sc

from . import real_training as rt
from .training_state import TRAIN_SEED

#: The rules the toy runs: the real grid's (the toy's QK-norm is its own, unit vectors over a temperature).
RULES = tuple(r for r in rt.RULE_LABELS if r in sc.RULE_NAMES)
#: Steps per run and the window its loss is averaged over (the Questions' toy figures use steps 280-300).
STEPS, WINDOW = 300, 20
#: Seconds of training per tick of the view: the rest of the tick is left to the browser (as Train it does),
#: so each finished run's point is sent and drawn while the next one trains.
BUDGET = 0.08


class ToySweep(param.Parameterized):
    """Final losses of the toy at every (rule, learning rate) of the real grid, filled one run at a time."""

    d_k = param.Integer(default=max(rt.D_KS), bounds=(1, 4096), doc="The toy head's width (the reader's d_k).")
    losses = param.Dict(default={}, doc="(rule, lr) -> the run's loss over its last WINDOW steps (nats).")
    running = param.Boolean(default=False, doc="True while the view runs the next pending run each tick.")

    def __init__(self, **params):
        super().__init__(**params)
        self._current = None      # (rule, lr, Trainer) of the run under way
        self._per_step = 0.002    # seconds per training step, measured as it runs
        self._kept: dict[int, dict] = {}    # d_k -> the losses finished there: a width left and come back to

    @param.depends("d_k", watch=True)
    def reset(self):
        """A new width: the run under way stops; the runs finished at this width before come back (each run is
        deterministic for its seed, so they are the same), the rest are pending."""
        self.running = False
        self._current = None
        self.losses = dict(self._kept.get(self.d_k, {}))

    def pending(self) -> list[tuple[str, float]]:
        """The runs not done yet, rule by rule, each at every rate."""
        return [(r, lr) for r in RULES for lr in rt.LRS if (r, lr) not in self.losses]

    def advance(self, steps: int | None = None, budget: float = BUDGET) -> tuple[str, float, float] | None:
        """Train the run under way (or the next pending one) for up to ``steps`` steps (None: as many as fit in
        ``budget`` seconds). Returns ``(rule, lr, loss)`` when that run ends (its loss recorded), else None;
        stops ``running`` when all are done."""
        if self._current is None:
            todo = self.pending()
            if not todo:
                self.running = False
                return None
            rule, lr = todo[0]
            self._current = (rule, lr, sc.Trainer(sc.TrainConfig(d_k=self.d_k, rule=rule, lr=lr, seed=TRAIN_SEED)))
        rule, lr, trainer = self._current
        if steps is None:
            steps = int(max(1, budget / max(self._per_step, 1e-5)))
        steps = min(steps, STEPS - len(trainer.history["loss"]))
        t0 = time.perf_counter()
        with np.errstate(all="ignore"):   # an unscaled run may overflow: its loss is then not finite
            trainer.run(steps)
        self._per_step = (time.perf_counter() - t0) / steps
        if len(trainer.history["loss"]) < STEPS:
            return None
        tail = [x for x in trainer.history["loss"][-WINDOW:] if math.isfinite(x)]
        loss = float(np.mean(tail)) if len(tail) == WINDOW else math.nan
        self._current = None
        self.losses = {**self.losses, (rule, lr): loss}
        self._kept[self.d_k] = self.losses
        if not self.pending():
            self.running = False
        return rule, lr, loss

    def run_all(self) -> dict:
        """Every pending run to its end (for tests and scripts)."""
        while self.pending():
            self.advance(STEPS)
        return self.losses

    @property
    def chance(self) -> float:
        """The toy's loss at chance (log of its classes): where an untrained run sits."""
        return math.log(sc.TrainConfig().n_classes)
