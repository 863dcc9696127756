"""The real transformer's sentences (views/real.py), from the shipped grid (web/real_training.py): pure
functions of its cells, each naming the conditions it holds under."""
from __future__ import annotations

import math

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


def working_rates(row: list) -> int:
    """How many of a rule's learning rates it trains at without saturating (nor diverging): its working range."""
    return sum(not failed(c) for c in row)


def real_answer(rows_small: dict, rows_large: dict, lrs: list, *, small: int, large: int, lr: float,
                growth: tuple[float, float], steps: int) -> Claim:
    """The Questions' answer from the real transformer's grid at one init: what dropping the scale costs at the
    smallest and the largest width, 1/√d_k's logit growth at ``lr`` (``growth``: its std at step 0 and at
    ``steps``), its working range at both widths where it shrinks, and where 1/d_k's best rate lies against
    1/√d_k's. A finding the grid does not show is not stated. ``rows_*``: rule -> [Cell per learning rate]."""
    gap = max(a.loss - b.loss for a, b in zip(rows_small["none"], rows_small["sqrt"]))
    sat = {r: sum(failed(c) for c in rows_large[r]) for r in ("none", "sqrt", "qknorm")}
    best = {r: lrs[min(range(len(lrs)), key=lambda j: rows_large[r][j].loss)] for r in ("sqrt", "linear")}
    s = Sentence().add(
        "At d_k = {small}, dropping the scale costs at most {gap} nats at any learning rate; at d_k = {large}, no "
        "scaling's rows saturate at {sat_none} of {n_lrs} rates, 1/√d_k's at {sat_sqrt} and QK-norm's at "
        "{sat_qknorm}.", small=as_int(small), large=as_int(large), gap=as_2f(max(gap, 0.0)), n_lrs=as_int(len(lrs)),
        sat_none=as_int(sat["none"]), sat_sqrt=as_int(sat["sqrt"]), sat_qknorm=as_int(sat["qknorm"]))
    if growth[1] > 2 * growth[0]:
        s.add(" 1/√d_k fixes the start, not the growth: at d_k = {large} and lr {lr} its logits' std goes from "
              "{std_a} to {std_b} in {steps} steps.", large=as_int(large), lr=as_g(lr), std_a=as_fmt(growth[0]),
              std_b=as_fmt(growth[1]), steps=as_int(steps))
    near_small, near_large = working_rates(rows_small["sqrt"]), working_rates(rows_large["sqrt"])
    if near_large < near_small:
        s.add(" Its working range shrinks with width: it trains unsaturated at {range_small} of {n_lrs} rates at "
              "d_k = {small}, {range_large} at d_k = {large}.", range_small=as_int(near_small),
              n_lrs=as_int(len(lrs)), small=as_int(small), range_large=as_int(near_large), large=as_int(large))
    if best["linear"] != best["sqrt"]:
        s.add(" 1/d_k moves the best learning rate: {best_linear} there, against 1/√d_k's {best_sqrt}.",
              best_linear=as_g(best["linear"]), best_sqrt=as_g(best["sqrt"]))
    else:
        s.add(" 1/d_k and 1/√d_k share their best learning rate there, {best_sqrt}.", best_sqrt=as_g(best["sqrt"]))
    return s.claim()


#: No scaling "ends above" 1/√d_k at a rate when its final loss is higher by more than this (nats).
ABOVE = 0.01


def toy_sentence(toy: dict, real_rows: dict, lrs: list, *, d_k: int) -> Claim:
    """The toy against the real transformer at ``d_k``: at how many rates no scaling ends above 1/√d_k in each.
    ``toy``: (rule, lr) -> loss, complete for "none" and "sqrt"; ``real_rows``: rule -> [Cell per rate]."""
    toy_n = sum(toy[("none", lr)] > toy[("sqrt", lr)] + ABOVE or not math.isfinite(toy[("none", lr)]) for lr in lrs)
    real_n = sum(a.loss > b.loss + ABOVE for a, b in zip(real_rows["none"], real_rows["sqrt"]))
    return Claim("At d_k = {d_k}, no scaling ends more than {above} nats above 1/√d_k at {toy_n} of {n} learning "
                 "rates in the toy, and at {real_n} in the real transformer.", d_k=as_int(d_k), above=as_g(ABOVE),
                 toy_n=as_int(toy_n), n=as_int(len(lrs)), real_n=as_int(real_n))


def necessary_sentence(rows_small: dict, rows_large: dict, *, small: int, large: int,
                       where: str = 'of "Does that hold in a real transformer?"') -> Claim:
    """For "Is it always necessary?": what dropping the scale cost in the real grid at its smallest width (the
    largest excess of no scaling's final loss over 1/√d_k's, over the rates) and at how many rates no scaling
    saturates at its largest. ``where`` names where the reader finds that transformer."""
    gap = max(a.loss - b.loss for a, b in zip(rows_small["none"], rows_small["sqrt"]))
    return Claim(f"In the small real transformer {where} (GPT-2's init), "
                 "dropping the scale cost at most {gap} nats at "
                 "d_k = {small}, at any learning rate; at d_k = {large} no scaling's rows saturated at {sat} of {n} "
                 "rates.", gap=as_2f(max(gap, 0.0)), small=as_int(small), large=as_int(large),
                 sat=as_int(sum(failed(c) for c in rows_large["none"])), n=as_int(len(rows_large["none"])))


def tuned_sentence(by_width: dict) -> Claim:
    """For "Can the factor be tuned?": at how many (width, rate) cells of the real grid QK-norm's and 1/√d_k's
    rows saturate. ``by_width``: d_k -> rule -> [Cell per rate]."""
    cells = sum(len(rows["sqrt"]) for rows in by_width.values())
    qk = sum(failed(c) for rows in by_width.values() for c in rows["qknorm"])
    sq = sum(failed(c) for rows in by_width.values() for c in rows["sqrt"])
    return Claim("In the small real transformer of \"Does that hold in a real transformer?\" (GPT-2's init), "
                 "QK-norm's rows (LayerNorm on q and k, then 1/√d_k) saturated at {qk} of its {cells} pairs of width and learning rate, 1/√d_k's at {sq}.",
                 qk=as_int(qk), cells=as_int(cells), sq=as_int(sq))
