"""Adam, SGD and a step-by-step training loop for the tiny model (the page animates it one step at a time)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._checks import boolean, integer
from .model import TrainConfig, clear_example, head_sharpness, init_params, loss_and_grads, make_batch

__all__ = ["Adam", "SGD", "StepResult", "Trainer", "train"]


class Adam:
    """Adam (Kingma & Ba 2015) with bias correction, updating a dict of arrays in place."""

    def __init__(self, params: dict, lr: float, betas=(0.9, 0.999), eps=1e-8):
        self.params, self.lr, (self.b1, self.b2), self.eps = params, lr, betas, eps
        self.m = {k: np.zeros_like(p) for k, p in params.items()}
        self.v = {k: np.zeros_like(p) for k, p in params.items()}
        self.t = 0

    def step(self, grads: dict) -> None:
        self.t += 1
        c1, c2 = 1 - self.b1**self.t, 1 - self.b2**self.t
        for k, g in grads.items():
            self.m[k] = self.b1 * self.m[k] + (1 - self.b1) * g
            self.v[k] = self.b2 * self.v[k] + (1 - self.b2) * g * g
            self.params[k] -= self.lr * (self.m[k] / c1) / (np.sqrt(self.v[k] / c2) + self.eps)


class SGD:
    """Plain gradient descent, updating a dict of arrays in place: each step moves a weight by lr times its
    gradient, so a factor on the logits scales the step (Adam divides it out)."""

    def __init__(self, params: dict, lr: float):
        self.params, self.lr = params, lr

    def step(self, grads: dict) -> None:
        for k, g in grads.items():
            self.params[k] -= self.lr * g


@dataclass(frozen=True)
class StepResult:
    step: int
    loss: float
    accuracy: float


class Trainer:
    """One training run, advanced with :meth:`step`.

    Data and initial weights come from ``config.seed`` only, so two trainers whose configs
    differ only in the scaling rule see the same batches from the same starting point.
    A non-finite loss stops the run: ``diverged`` becomes True and ``message`` says why.

    Examples
    --------
    >>> t = Trainer(TrainConfig(d_k=16, seed=1))
    >>> t.step().step
    1
    """

    def __init__(self, config: TrainConfig):
        if not isinstance(config, TrainConfig):
            raise TypeError(f"config must be a TrainConfig, got {type(config).__name__}")
        self.config = config
        self.params = init_params(np.random.default_rng([config.seed, 0]), config)
        #: the weights at step 0, kept apart (the optimizer updates ``params`` in place)
        self.initial_params = {k: v.copy() for k, v in self.params.items()}
        self._data = np.random.default_rng([config.seed, 1])
        # a fixed example whose attention map the page shows evolving
        self._example = clear_example(np.random.default_rng([config.seed, 2]), config)
        # a fixed held-out batch (never trained on) on which sharpness() measures the head
        self.probe = make_batch(np.random.default_rng([config.seed, 3]), config)
        self._initial_sharpness: dict | None = None
        self.optimizer = Adam(self.params, config.lr) if config.optimizer == "adam" else SGD(self.params, config.lr)
        self.history: dict[str, list] = {"step": [], "loss": [], "accuracy": []}
        self.diverged = False
        self.message = ""

    @property
    def chance_loss(self) -> float:
        return math.log(self.config.n_classes)

    @property
    def steps_done(self) -> int:
        return len(self.history["step"])

    def step(self) -> StepResult | None:
        """One optimizer step on a fresh batch; the loss/accuracy reported are the batch's before the update.
        Returns None (and changes nothing) once the run has diverged."""
        if self.diverged:
            return None
        batch = make_batch(self._data, self.config)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            loss, grads, aux = loss_and_grads(self.params, batch, self.config)
            finite = math.isfinite(loss) and all(np.isfinite(g).all() for g in grads.values())
            if finite:
                self.optimizer.step(grads)
        if not finite:
            self.diverged = True
            self.message = (
                f"diverged at step {self.steps_done + 1}: the loss or a gradient became "
                f"{'NaN' if math.isnan(loss) else 'infinite'}; try a smaller learning rate"
            )
            return None
        result = StepResult(self.steps_done + 1, loss, aux["accuracy"])
        for key, val in zip(("step", "loss", "accuracy"), (result.step, result.loss, result.accuracy)):
            self.history[key].append(val)
        return result

    def run(self, steps: int) -> list[StepResult]:
        steps = integer(steps, "steps", low=0, high=1_000_000)
        out = []
        for _ in range(steps):
            r = self.step()
            if r is None:
                break
            out.append(r)
        return out

    def example_weights(self) -> tuple[np.ndarray, int]:
        """Attention weights (n_keys,) of the fixed example under the current parameters, and its target key."""
        with np.errstate(over="ignore", invalid="ignore"):
            _, _, aux = loss_and_grads(self.params, self._example, self.config, need_grads=False)
        return aux["weights"][0], int(self._example.target[0])

    def sharpness(self, initial: bool = False) -> dict:
        """:func:`~sdpa_core.model.head_sharpness` of the weights at step 0 (``initial``) or now, on the run's
        fixed held-out batch ``probe`` (drawn from the seed: runs that share a seed share it).

        >>> t = Trainer(TrainConfig(d_k=16, seed=1))
        >>> t.sharpness(initial=True)["entropy"] == t.sharpness()["entropy"]   # nothing learnt yet
        True
        """
        if boolean(initial, "initial"):
            if self._initial_sharpness is None:
                self._initial_sharpness = head_sharpness(self.initial_params, self.probe, self.config)
            return self._initial_sharpness
        return head_sharpness(self.params, self.probe, self.config)


def train(config: TrainConfig, steps: int) -> Trainer:
    """Run ``steps`` steps (fewer if the run diverges) and return the trainer with its history."""
    trainer = Trainer(config)
    trainer.run(steps)
    return trainer
