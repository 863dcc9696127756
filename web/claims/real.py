"""The real transformer's sentences (views/real.py), from the shipped grid (web/real_training.py): pure
functions of its cells, each naming the conditions it holds under."""
from __future__ import annotations

from .claim import Claim, Sentence, as_2f, as_fmt, as_g, as_int, as_word

#: More than this share of a run's attention rows saturated at the end (its most saturated layer): the run
#: "saturates". Half, as in the outside GPU table of issue 35.
SATURATED_SHARE = 0.5


def failed(c) -> bool:
    """A cell saturates (more than half its rows, the seeds' mean) or one of its seeds diverged."""
    return c.saturated > SATURATED_SHARE or c.diverged > 0


def real_headline(cells: dict, *, d_k: int, labels: dict) -> Claim:
    """At ``d_k``: at how many of the grid's learning rates each rule's runs end saturated (or diverge).
    ``cells``: rule -> [Cell per learning rate]."""
    s = Sentence().add("d_k = {d_k}: rows saturate at ", d_k=as_int(d_k))
    rules = list(cells)
    for i, rule in enumerate(rules):
        n = sum(failed(c) for c in cells[rule])
        sep = "" if i == 0 else (" and " if i == len(rules) - 1 else ", ")
        s.add(sep + "{n_" + rule + "}" + (" of {lrs} learning rates" if i == 0 else "") + " with {rule_" + rule + "}",
              **{f"n_{rule}": as_int(n), f"rule_{rule}": as_word(rule, labels[rule]),
                 **({"lrs": as_int(len(cells[rule]))} if i == 0 else {})})
    return s.add(".").claim()


def best_sentence(cells: dict, lrs: list, *, labels: dict) -> Claim:
    """Each rule's lowest final loss over the learning rates, and at which rate."""
    s = Sentence().add("Lowest final loss per rule: ")
    for i, (rule, row) in enumerate(cells.items()):
        j = min(range(len(row)), key=lambda k: row[k].loss)
        s.add(("" if i == 0 else "; ") + "{rule_" + rule + "} {best_" + rule + "} at lr {lr_" + rule + "}",
              **{f"rule_{rule}": as_word(rule, labels[rule]), f"best_{rule}": as_2f(row[j].loss),
                 f"lr_{rule}": as_g(lrs[j])})
    return s.add(" (nats per character; lower is better).").claim()


def small_width_sentence(none_row: list, sqrt_row: list, *, d_k: int) -> Claim:
    """How much dropping the scale costs at the grid's smallest width: the largest gap, over the learning
    rates, between no scaling's final loss and 1/√d_k's (positive: no scaling is worse)."""
    gaps = [a.loss - b.loss for a, b in zip(none_row, sqrt_row)]
    worst = max(gaps)
    return Claim("At d_k = {d_k}, no scaling's final loss is at most {gap} nats above 1/√d_k's at every learning "
                 "rate here.", d_k=as_int(d_k), gap=as_2f(max(worst, 0.0)))


def growth_sentence(std_rows: dict, steps: tuple, *, lr: float, labels: dict) -> Claim:
    """Each rule's attention-logit std at the start and at the end of training, at learning rate ``lr``."""
    s = Sentence().add("At lr {lr}, the logits' std from step 0 to {end}: ", lr=as_g(lr), end=as_int(steps[-1]))
    for i, (rule, std) in enumerate(std_rows.items()):
        s.add(("" if i == 0 else "; ") + "{rule_" + rule + "} {a_" + rule + "} → {b_" + rule + "}",
              **{f"rule_{rule}": as_word(rule, labels[rule]), f"a_{rule}": as_fmt(std[0]), f"b_{rule}": as_fmt(std[-1])})
    return s.add(".").claim()
