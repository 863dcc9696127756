"""Two training runs of sdpa_core's tiny attention model that differ only in the scaling rule (Train it).

Widget-free like ``state.py``: the Training view animates it, the tests drive it directly.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

import numpy as np
import param

import sdpa_core as sc

from .claims import (batch_gradient_sentence, fold_sentence, logit_growth_sentence, sharp_gradient_sentence,
                     sharpness_conditions, sharpness_headline, sharpness_sentence)
from . import real_training
from .options import FOLD, LR_OPTIONS, MAX_TRAIN_STEPS, OPTIMIZER_LABELS, TRAIN_D_K_OPTIONS, TRAIN_RULE_LABELS, TRAIN_RULES

REAL_D_KS, REAL_LRS, REAL_LR_DEFAULT = real_training.D_KS, real_training.LRS, real_training.LR_DEFAULT

if TYPE_CHECKING:
    from .state import LabState

#: The runs' default seed, in the middle of seeds 0-11 at the default d_k = 1024, lr = 0.01 (its unscaled /
#: 1/sqrt(d_k) loss ratio over steps 280-300 ranks 3rd to 8th of 12 on every OpenBLAS kernel tried). Seed 0,
#: the page's shared default, is among the most extreme (4.8-8.8); seed 8 the other way (0.45-0.92).
TRAIN_SEED = 9
#: What training shows over seeds 0 to SEEDS - 1 at lr 0.01, a run's loss being its mean over steps 280-300
#: (the Questions say it; tests/web/test_claims.py recomputes it on the machine it runs on). At d_k = 1024
#: the unscaled head is saturated and its run amplifies round-off: one seed's curve depends on the CPU's BLAS
#: kernel (seed 0's ratio is 5.7 with OpenBLAS's SkylakeX kernel, 8.8 with Haswell's, 4.8 with Prescott's),
#: so the page states what holds on all of them, as ranges: the unscaled loss is more than twice 1/sqrt(d_k)'s
#: in 11 of 12 seeds on each kernel tried (at least 10 is claimed), median ratio 3.07-3.43 across
#: OPENBLAS_CORETYPE = SkylakeX, Haswell, Zen, Sandybridge, Prescott on an AMD EPYC, and 3.63 on another
#: AMD EPYC (issue 35); the claim is "about 3 to 4" (2.75-4.25). At d_k = 16 nothing saturates and every
#: kernel gives the same: higher in 12 of 12, median 1.558, both runs near 97% accuracy.
SEEDS = 12
OVER_SEEDS = {1024: {"more_than": 2.0, "at_least": 10, "median": (2.75, 4.25), "median_words": "about 3 to 4"},
              16: {"more_than": 1.0, "at_least": 12, "median": (1.45, 1.65), "median_words": "about 1.5"}}


class TrainingState(param.Parameterized):
    """Two runs of sdpa_core's tiny attention model that differ only in the scaling rule."""

    rule_a = param.Selector(default="none", objects=list(TRAIN_RULES), doc="Scaling rule of run A (or the fold).")
    rule_b = param.Selector(default="sqrt", objects=list(TRAIN_RULES), doc="Scaling rule of run B (or the fold).")
    optimizer = param.Selector(default="adam", objects=list(OPTIMIZER_LABELS), doc="Optimizer of both runs.")
    lr = param.Number(default=0.01, bounds=(min(LR_OPTIONS), max(LR_OPTIONS)), doc="Adam learning rate (both runs).")
    d_k = param.Integer(default=1024, bounds=(min(TRAIN_D_K_OPTIONS), max(TRAIN_D_K_OPTIONS)),
                        doc="Key/query width of the trained head (both runs).")
    seed = param.Integer(default=TRAIN_SEED, bounds=(0, 99999),
                         doc="Seed of both runs' data, initial weights and example (the same for both).")
    # the real transformer's grid (web/real_training.py), measured offline: which of its cells are shown
    real_d_k = param.Integer(default=max(REAL_D_KS), bounds=(min(REAL_D_KS), max(REAL_D_KS)),
                             doc="Key/query width of the real transformer's runs shown (a width of its grid).")
    real_lr = param.Number(default=REAL_LR_DEFAULT, bounds=(min(REAL_LRS), max(REAL_LRS)),
                           doc="Learning rate of the real transformer's runs whose logits are shown over training.")
    real_init = param.Selector(default="gpt2", objects=list(real_training.INIT_LABELS),
                               doc="Initialisation of the real transformer's runs shown.")
    running = param.Boolean(default=False, doc="True while the animation advances the runs.")
    status = param.String(default="", doc="Plain-words status of both runs.")
    version = param.Integer(default=0, doc="Bumped on reset, so views clear their curves.")

    def __init__(self, lab: LabState | None = None, **params):
        super().__init__(**params)
        self.lab = lab
        self._sharp, self._sharp_key = {}, None
        self.reset()
        if lab is not None:  # the shared α and τ are part of each run's config (the seed is the runs' own)
            lab.param.watch(lambda *_: self.reset(), ["alpha", "temperature"])

    def config(self, rule: str):
        """A run's config: ``rule`` a scaling rule, or FOLD (no scaling, W_q's init divided by √d_k)."""
        lab = self.lab
        folded = rule == FOLD
        return sc.TrainConfig(d_k=self.d_k, rule="none" if folded else rule, lr=self.lr, seed=self.seed,
                              q_init=self.d_k ** -0.5 if folded else 1.0, optimizer=self.optimizer,
                              alpha=lab.alpha if lab else 0.5, temperature=lab.temperature if lab else 0.1)

    def label(self, key: str) -> str:
        """Run ``key``'s ("a" or "b") scaling as the page names it."""
        return TRAIN_RULE_LABELS[self.rule_a if key == "a" else self.rule_b]

    @param.depends("rule_a", "rule_b", "lr", "d_k", "seed", "optimizer", watch=True)
    def reset(self):
        self.running = False
        self.trainers = {"a": sc.Trainer(self.config(self.rule_a)), "b": sc.Trainer(self.config(self.rule_b))}
        self._per_step = 0.002
        self.version += 1
        self._update_status()

    @property
    def steps_done(self) -> int:
        return max(t.steps_done for t in self.trainers.values())

    @property
    def finished(self) -> bool:
        return self.steps_done >= MAX_TRAIN_STEPS or all(t.diverged for t in self.trainers.values())

    def advance(self, steps: int | None = None, budget: float = 0.05) -> dict:
        """Advance both runs by ``steps`` (or as many as fit in ``budget`` seconds); returns the new
        history points per run: ``{"a": {"step": [...], "loss": [...], "accuracy": [...]}, "b": ...}``."""
        if steps is None:
            steps = self.steps_within(budget)
        steps = max(0, min(int(steps), MAX_TRAIN_STEPS - self.steps_done))
        t0 = time.perf_counter()
        new = {}
        for key, tr in self.trainers.items():
            start = tr.steps_done
            with np.errstate(all="ignore"):
                tr.run(steps)
            new[key] = {k: list(v[start:]) for k, v in tr.history.items()}
        if steps:
            self._per_step = (time.perf_counter() - t0) / steps
        if self.finished:
            self.running = False
        self._update_status()
        return new

    def steps_within(self, budget: float) -> int:
        """How many steps of both runs fit ``budget`` seconds, from the last advance's pace (1 to 25)."""
        return int(max(1, min(25, budget / max(self._per_step, 1e-5))))

    def example(self) -> dict:
        """The fixed example's attention weights under each run's current parameters, and its target key."""
        out = {}
        for key, tr in self.trainers.items():
            with np.errstate(all="ignore"):
                w, target = tr.example_weights()
            w = np.asarray(w, dtype=np.float64)
            out[key] = (np.where(np.isfinite(w), w, 0.0), target)
        return out

    def sharpness(self) -> dict:
        """Each run's head at step 0 and now (``sdpa_core.Trainer.sharpness``, on the runs' shared held-out
        batch): ``{"a": {"initial": ..., "now": ..., "step": n}, "b": ...}``, computed once per state of the runs."""
        key = (self.version, tuple(t.steps_done for t in self.trainers.values()))
        if key != self._sharp_key:
            out = {}
            for k, tr in self.trainers.items():
                with np.errstate(all="ignore"):
                    initial = tr.sharpness(initial=True)
                    now = tr.sharpness() if tr.steps_done else initial   # no step yet: the same weights
                out[k] = {"initial": initial, "now": now, "step": tr.steps_done}
            self._sharp, self._sharp_key = out, key
        return self._sharp

    def featured(self) -> str:
        """The run the sharpness section's headline is about: the one more peaked at step 0 (run A on a tie)."""
        s = self.sharpness()
        a, b = (s[k]["initial"]["entropy_fraction"] for k in ("a", "b"))
        return "b" if b < a else "a"

    def sharpness_summary(self) -> tuple[str, str, list[str]]:
        """Saturated at step 0 or sharp after learning, in words (web/claims.py): the featured run's headline, its
        conditions, and the details: each run's sentence (the featured one first), what a sharp head passes
        back, the featured run's gradient over the whole batch at step 0, and each run's logit growth split."""
        s = self.sharpness()
        key = self.featured()
        trainer = self.trainers[key]
        cfg = trainer.config
        f = s[key]
        conditions = sharpness_conditions(run=key, label=self.label(key), d_k=cfg.d_k, seed=cfg.seed, step=f["step"],
                                          n_keys=cfg.n_keys, examples=len(trainer.probe.target),
                                          optimizer=OPTIMIZER_LABELS[cfg.optimizer], lr=cfg.lr)
        details = []
        for k in (key, "b" if key == "a" else "a"):
            m, c = s[k], self.trainers[k].config
            details.append(sharpness_sentence(m["initial"], m["now"], run=k, label=self.label(k), d_k=c.d_k,
                                              seed=c.seed, step=m["step"]))
            details.append(sharp_gradient_sentence(m["now"], run=k, step=m["step"]))
        details.append(batch_gradient_sentence(f["initial"], run=key))
        for k in ("a", "b"):
            rule = sc.RULES[self.trainers[k].config.rule]
            details.append(logit_growth_sentence(s[k]["initial"], s[k]["now"], run=k, step=s[k]["step"],
                                                 normalizes=rule.normalizes, cap=rule.cap))
        headline = sharpness_headline(f["initial"], f["now"], run=key, step=f["step"])
        return headline, conditions, [d for d in details if d]

    def history_csv(self) -> str:
        lines = ["run,rule,step,loss,accuracy"]
        for key, tr in self.trainers.items():
            for s, lo, ac in zip(tr.history["step"], tr.history["loss"], tr.history["accuracy"]):
                lines.append(f"{key.upper()},{self.rule_a if key == 'a' else self.rule_b},{s},{lo:.6g},{ac:.6g}")
        return "\n".join(lines) + "\n"

    def _update_status(self):
        parts = []
        for key, tr in self.trainers.items():
            name = f"Run {key.upper()} ({self.label(key)})"
            if tr.diverged:
                parts.append(f"{name} stopped: {tr.message}.")
            elif tr.history["loss"]:
                parts.append(f"{name}: step {tr.steps_done}, loss {tr.history['loss'][-1]:.3f}, "
                             f"accuracy {tr.history['accuracy'][-1]:.0%}.")
            else:
                parts.append(f"{name}: not started (chance loss {tr.chance_loss:.2f}).")
        if self.steps_done >= MAX_TRAIN_STEPS:
            parts.append(f"Stopped after {MAX_TRAIN_STEPS} steps; press Reset to start again.")
        if {self.rule_a, self.rule_b} == {FOLD, "sqrt"}:
            folded, explicit = ("a", "b") if self.rule_a == FOLD else ("b", "a")
            parts.append(fold_sentence(self.trainers[folded].history["loss"], self.trainers[explicit].history["loss"],
                                       d_k=self.d_k, optimizer=OPTIMIZER_LABELS[self.optimizer], lr=self.lr))
        self.status = " ".join(parts)
