"""The real transformer's training grid: measured offline by experiments/real_transformer (PyTorch; the
page never imports it) and shipped as data/real_training.json, a copy of that experiment's results file.

Plain data access (no Panel, no torch): each cell of the grid, averaged over its seeds, for the view
"What the scale does in a real transformer" (views/real.py) and its sentences (claims/real.py).
"""
from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path

#: The shipped file (tests/web/test_real_training.py: byte-equal to the experiment's results/<its size>.json).
DATA = Path(__file__).resolve().parent / "data" / "real_training.json"
#: The experiment's rules, as this view names them (its QK-norm is LayerNorm on q and k, then 1/√d_k,
#: unlike the toy views' unit-vector QK-norm with a temperature).
RULE_LABELS = {"none": "no scaling", "sqrt": "1/√d_k", "linear": "1/d_k", "qknorm": "QK-norm"}
INIT_LABELS = {"gpt2": "GPT-2 init (std 0.02)", "fanin": "fan-in init (std 1/√fan_in)"}


@dataclass(frozen=True)
class Cell:
    """One (init, d_k, rule, lr) of the grid over its seeds: the final validation loss (nats per character,
    the seeds' mean), the share of attention rows saturated at the end (top weight above the spec's
    threshold; the most saturated layer, the seeds' mean), how many seeds diverged, and the logits' std
    over training (the layer with the largest, the seeds' mean) at ``steps``."""

    loss: float
    saturated: float
    diverged: int
    seeds: int
    steps: tuple[int, ...]
    logit_std: tuple[float, ...]
    #: the same per seed, in the spec's seed order: each seed's final loss (nan where it diverged), its
    #: saturated share at the end (the most saturated layer) and whether it diverged
    seed_loss: tuple[float, ...] = ()
    seed_saturated: tuple[float, ...] = ()
    seed_diverged: tuple[bool, ...] = ()


@functools.cache
def grid() -> dict:
    """The shipped JSON: ``size``, ``provenance``, ``text``, ``spec`` and ``runs``."""
    return json.loads(DATA.read_text(encoding="utf-8"))


def spec() -> dict:
    return grid()["spec"]


def cell(init: str, d_k: int, rule: str, lr: float) -> Cell:
    return _cells()[(init, int(d_k), rule, float(lr))]


@functools.cache
def _cells() -> dict:
    groups: dict = {}
    for run in grid()["runs"]:
        groups.setdefault((run["init"], int(run["d_k"]), run["rule"], float(run["lr"])), []).append(run)
    steps = tuple(int(s) for s in spec()["eval_steps"])
    out = {}
    seeds = [int(x) for x in spec()["seeds"]]
    for key, runs in groups.items():
        runs = sorted(runs, key=lambda r: seeds.index(int(r["seed"])))
        finite = [r["final_val_loss"] for r in runs if r["final_val_loss"] is not None
                  and math.isfinite(r["final_val_loss"])]
        stds = [[max(layer["std"][i] for layer in r["layers"]) for i in range(len(steps))] for r in runs]
        out[key] = Cell(loss=sum(finite) / len(finite) if finite else math.nan,
                        saturated=sum(max(layer["sat"][-1] for layer in r["layers"]) for r in runs) / len(runs),
                        diverged=sum(bool(r["diverged"]) for r in runs), seeds=len(runs), steps=steps,
                        logit_std=tuple(sum(s[i] for s in stds) / len(stds) for i in range(len(steps))),
                        seed_loss=tuple(math.nan if r["final_val_loss"] is None else float(r["final_val_loss"])
                                        for r in runs),
                        seed_saturated=tuple(max(layer["sat"][-1] for layer in r["layers"]) for r in runs),
                        seed_diverged=tuple(bool(r["diverged"]) for r in runs))
    return out


#: The grid's widths, learning rates and inits, in its order: the view's choices.
D_KS = tuple(int(d) for d in spec()["d_ks"])
LRS = tuple(float(x) for x in spec()["lrs"])
#: The learning rate whose logits the view first shows over training: 1e-3 (AdamW's usual rate for a model
#: this small), or the grid's middle rate if it has none.
LR_DEFAULT = 1e-3 if 1e-3 in LRS else LRS[len(LRS) // 2]


def rows(init: str, d_k: int) -> dict:
    """rule -> its cells at the grid's learning rates, at ``init`` and ``d_k``."""
    return {r: [cell(init, d_k, r, lr) for lr in LRS] for r in RULE_LABELS if r in spec()["rules"]}


def scope(init: str = "gpt2") -> str:
    """What the grid is, in the words a sentence about it carries: layers, heads, width, steps, init."""
    sp = spec()
    heads = "1 head" if sp["n_heads"] == 1 else f"{sp['n_heads']} heads"
    width = "d_k" if sp["n_heads"] == 1 else f"{sp['n_heads']}·d_k"
    return (f"{sp['n_layers']} layers of {heads}, d_model = {width}, {INIT_SHORT[init]}, early training: "
            f"{sp['steps']} AdamW steps of {sp['batch']} × {sp['seq_len']} characters")


#: An init in a sentence's conditions.
INIT_SHORT = {"gpt2": "GPT-2's init", "fanin": "fan-in init"}


def answer(init: str = "gpt2"):
    """The Questions' answer from this grid (claims/real.py real_answer), at ``init``."""
    from .claims import real_answer
    small, large = min(D_KS), max(D_KS)
    std = cell(init, large, "sqrt", LR_DEFAULT).logit_std
    return real_answer(rows(init, small), rows(init, large), list(LRS), small=small, large=large, lr=LR_DEFAULT,
                       growth=(std[0], std[-1]), steps=int(spec()["eval_steps"][-1]))


def necessary(init: str = "gpt2", **where):
    """The sentence "Is it always necessary?" takes from this grid (claims/real.py necessary_sentence; ``where``
    names where the reader finds the transformer, for the tour and Train it)."""
    from .claims import necessary_sentence
    small, large = min(D_KS), max(D_KS)
    return necessary_sentence(rows(init, small), rows(init, large), small=small, large=large, scope=scope(init),
                              **where)


def toy_against_real():
    """What Train it and the tour's training step say after the toy's runs: that it is the page's tiny model, and
    what the real grid shows instead (``necessary``, naming the Real transformer view)."""
    from .claims import Claim
    real = necessary(where="of the Real transformer view")
    return Claim("That is this page's tiny model: one head, no LayerNorm, q and k entries of variance about 1 at "
                 "every width. " + real.template, **real.given())


def tuned(init: str = "gpt2"):
    """The sentence "Can the factor be tuned?" takes from this grid (claims/real.py tuned_sentence)."""
    from .claims import tuned_sentence
    return tuned_sentence({d: rows(init, d) for d in D_KS}, scope=scope(init))
