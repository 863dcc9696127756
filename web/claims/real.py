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


def _failed_in(c, seed: int) -> bool:
    """One seed's run of a cell saturated (more than half its rows) or diverged; ``seed``: its index."""
    return c.seed_saturated[seed] > SATURATED_SHARE or c.seed_diverged[seed]


def _seeds_of(row: list) -> range:
    return range(len(row[0].seed_loss))


def _count_spread(rows: list, n: int, name: str) -> tuple[str, dict]:
    """A count over cells made against a threshold (``n``, from the seeds' mean), with the range the single seeds
    give when they differ from it: " (seeds 1–2)". ``rows``: the cells counted; the template piece and facts."""
    per = [sum(_failed_in(c, i) for c in rows) for i in _seeds_of(rows)]
    if all(x == n for x in per):
        return "", {}
    return f" (seeds {{{name}_lo}}–{{{name}_hi}})", {f"{name}_lo": as_int(min(per)), f"{name}_hi": as_int(max(per))}


def _best_rates(row: list, lrs: list) -> tuple[float, list[float]]:
    """A rule's best learning rate by the seeds' mean loss, and each seed's own."""
    mean = lrs[min(range(len(lrs)), key=lambda k: row[k].loss)]
    per = [lrs[min(range(len(lrs)), key=lambda k, i=i: _finite(row[k].seed_loss[i]))] for i in _seeds_of(row)]
    return mean, per


def _finite(x: float) -> float:
    return x if math.isfinite(x) else math.inf


def _worst_gap(none_row: list, sqrt_row: list) -> tuple[float, float]:
    """The largest excess of no scaling's final loss over 1/√d_k's over the rates: the seeds' mean, and the
    largest for a single seed."""
    mean = max(a.loss - b.loss for a, b in zip(none_row, sqrt_row))
    single = max(a.seed_loss[i] - b.seed_loss[i] for a, b in zip(none_row, sqrt_row) for i in _seeds_of(none_row))
    return mean, single


def _gap_words(mean: float, single: float) -> tuple[str, dict]:
    """ "0.12 nats" with " (0.31 for one seed)" when a single seed's excess reads larger."""
    m, one = as_2f(max(mean, 0.0)), as_2f(max(single, 0.0))
    if one[1] == m[1] or single <= mean:
        return "{gap} nats", {"gap": m}
    return "{gap} nats ({gap_seed} for one seed)", {"gap": m, "gap_seed": one}


def real_headline(cells: dict, *, d_k: int, labels: dict) -> Claim:
    """At ``d_k``: at how many of the grid's learning rates each rule's runs end saturated (or diverge).
    ``cells``: rule -> [Cell per learning rate]."""
    s = Sentence().add("d_k = {d_k}: rows saturate at ", d_k=as_int(d_k))
    rules = list(cells)
    for i, rule in enumerate(rules):
        n = sum(failed(c) for c in cells[rule])
        spread, facts = _count_spread(cells[rule], n, f"n_{rule}")
        sep = "" if i == 0 else ", "
        s.add(sep + "{n_" + rule + "}" + (" of {lrs} rates" if i == 0 else "") + spread
              + " with {rule_" + rule + "}",
              **{f"n_{rule}": as_int(n), f"rule_{rule}": as_word(rule, labels[rule]), **facts,
                 **({"lrs": as_int(len(cells[rule]))} if i == 0 else {})})
    return s.add(".").claim()


def best_sentence(cells: dict, lrs: list, *, labels: dict) -> Claim:
    """Each rule's lowest final loss over the learning rates, and at which rate."""
    s = Sentence().add("Lowest final loss per rule, the seeds' mean: ")
    spread = 0.0
    for i, (rule, row) in enumerate(cells.items()):
        j = min(range(len(row)), key=lambda k: row[k].loss)
        mean_lr, per = _best_rates(row, lrs)
        by_seed = ""
        if any(lr != mean_lr for lr in per):
            by_seed = " (by seed: {per_" + rule + "})"
        finite = [x for x in row[j].seed_loss if math.isfinite(x)]
        spread = max(spread, max(finite) - min(finite)) if finite else spread
        s.add(("" if i == 0 else "; ") + "{rule_" + rule + "} {best_" + rule + "} at lr {lr_" + rule + "}" + by_seed,
              **{f"rule_{rule}": as_word(rule, labels[rule]), f"best_{rule}": as_2f(row[j].loss),
                 f"lr_{rule}": as_g(lrs[j]),
                 **({f"per_{rule}": as_word(tuple(per), ", ".join(f"{x:g}" for x in per))} if by_seed else {})})
    return s.add(" (nats per character; lower is better; at these, the seeds differ by up to {spread} nats).",
                 spread=as_2f(spread)).claim()


def small_width_sentence(none_row: list, sqrt_row: list, *, d_k: int) -> Claim:
    """How much dropping the scale costs at the grid's smallest width: the largest gap, over the learning
    rates, between no scaling's final loss and 1/√d_k's (positive: no scaling is worse)."""
    words, facts = _gap_words(*_worst_gap(none_row, sqrt_row))
    return Claim("At d_k = {d_k}, no scaling's final loss is at most " + words + " above 1/√d_k's at every learning "
                 "rate here.", d_k=as_int(d_k), **facts)


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
    words, gap = _gap_words(*_worst_gap(rows_small["none"], rows_small["sqrt"]))
    sat = {r: sum(failed(c) for c in rows_large[r]) for r in ("none", "sqrt", "qknorm")}
    spreads = {r: _count_spread(rows_large[r], sat[r], f"sat_{r}") for r in sat}
    s = Sentence().add(
        "At d_k = {small}, dropping the scale costs at most " + words + " at any learning rate; at d_k = {large}, "
        "no scaling's rows saturate at {sat_none} of {n_lrs} rates" + spreads["none"][0] + ", 1/√d_k's at "
        "{sat_sqrt}" + spreads["sqrt"][0] + " and QK-norm's at {sat_qknorm}" + spreads["qknorm"][0] + ".",
        small=as_int(small), large=as_int(large), n_lrs=as_int(len(lrs)), **gap,
        sat_none=as_int(sat["none"]), sat_sqrt=as_int(sat["sqrt"]), sat_qknorm=as_int(sat["qknorm"]),
        **spreads["none"][1], **spreads["sqrt"][1], **spreads["qknorm"][1])
    if growth[1] > 2 * growth[0]:
        s.add(" 1/√d_k fixes the start, not the growth: at d_k = {large} and lr {lr} its logits' std goes from "
              "{std_a} to {std_b} in {steps} steps.", large=as_int(large), lr=as_g(lr), std_a=as_fmt(growth[0]),
              std_b=as_fmt(growth[1]), steps=as_int(steps))
    near_small, near_large = working_rates(rows_small["sqrt"]), working_rates(rows_large["sqrt"])
    by_seed = [sum(not _failed_in(c, i) for c in rows_large["sqrt"]) < sum(not _failed_in(c, i) for c in rows_small["sqrt"])
               for i in _seeds_of(rows_large["sqrt"])]
    if near_large < near_small and all(by_seed):     # said only where every seed shows it too
        s.add(" Its working range shrinks with width: it trains unsaturated at {range_small} of {n_lrs} rates at "
              "d_k = {small}, {range_large} at d_k = {large}.", range_small=as_int(near_small),
              n_lrs=as_int(len(lrs)), small=as_int(small), range_large=as_int(near_large), large=as_int(large))
    (best_sqrt, per_sqrt), (best_linear, per_linear) = (_best_rates(rows_large[r], lrs) for r in ("sqrt", "linear"))
    moves = [a != b for a, b in zip(per_linear, per_sqrt)]
    if best_linear != best_sqrt and all(moves):
        s.add(" 1/d_k moves the best learning rate: {best_linear} there, against 1/√d_k's {best_sqrt}.",
              best_linear=as_g(best_linear), best_sqrt=as_g(best_sqrt))
    elif best_linear == best_sqrt and not any(moves):
        s.add(" 1/d_k and 1/√d_k share their best learning rate there, {best_sqrt}.", best_sqrt=as_g(best_sqrt))
    else:       # the seeds disagree: say so, with each seed's pair, rather than a finding one seed flips
        pairs = ", ".join(f"{a:g} and {b:g} for seed {i}" for i, (a, b) in enumerate(zip(per_linear, per_sqrt)))
        s.add(" Whether 1/d_k moves the best learning rate there depends on the seed (1/d_k's best and 1/√d_k's: "
              "{pairs}).",
              pairs=as_word((tuple(per_linear), tuple(per_sqrt)), pairs))
    return s.claim()


#: No scaling "ends above" 1/√d_k at a rate when its final loss is higher by more than this (nats).
ABOVE = 0.01


def toy_sentence(toy: dict, real_rows: dict, lrs: list, *, d_k: int) -> Claim:
    """The toy against the real transformer at ``d_k``: at how many rates no scaling ends above 1/√d_k in each.
    ``toy``: (rule, lr) -> loss, complete for "none" and "sqrt"; ``real_rows``: rule -> [Cell per rate]."""
    toy_n = sum(toy[("none", lr)] > toy[("sqrt", lr)] + ABOVE or not math.isfinite(toy[("none", lr)]) for lr in lrs)
    real_n = sum(a.loss > b.loss + ABOVE for a, b in zip(real_rows["none"], real_rows["sqrt"]))
    per = [sum(a.seed_loss[i] > b.seed_loss[i] + ABOVE for a, b in zip(real_rows["none"], real_rows["sqrt"]))
           for i in _seeds_of(real_rows["none"])]
    spread, facts = ("", {}) if all(x == real_n for x in per) else (
        " (seeds {real_lo}–{real_hi})", {"real_lo": as_int(min(per)), "real_hi": as_int(max(per))})
    return Claim("At d_k = {d_k}, no scaling ends more than {above} nats above 1/√d_k at {toy_n} of {n} learning "
                 "rates in the toy, and at {real_n}" + spread + " in the real transformer (the mean of its seeds).",
                 d_k=as_int(d_k), above=as_g(ABOVE), toy_n=as_int(toy_n), n=as_int(len(lrs)), real_n=as_int(real_n),
                 **facts)


def necessary_sentence(rows_small: dict, rows_large: dict, *, small: int, large: int, scope: str,
                       where: str = 'of "Does that hold in a real transformer?"') -> Claim:
    """For "Is it always necessary?": what dropping the scale cost in the real grid at its smallest width (the
    largest excess of no scaling's final loss over 1/√d_k's, over the rates) and at how many rates no scaling
    saturates at its largest. ``where`` names where the reader finds that transformer."""
    words, gap = _gap_words(*_worst_gap(rows_small["none"], rows_small["sqrt"]))
    sat = sum(failed(c) for c in rows_large["none"])
    spread, facts = _count_spread(rows_large["none"], sat, "sat")
    return Claim(f"In the small real transformer {where} ({scope}), "
                 "dropping the scale cost at most " + words + " at "
                 "d_k = {small}, at any learning rate; at d_k = {large} no scaling's rows saturated at {sat} of {n} "
                 "rates" + spread + ".", small=as_int(small), large=as_int(large), **gap, **facts,
                 sat=as_int(sat), n=as_int(len(rows_large["none"])))


def tuned_sentence(by_width: dict, *, scope: str) -> Claim:
    """For "Can the factor be tuned?": at how many (width, rate) cells of the real grid QK-norm's and 1/√d_k's
    rows saturate. ``by_width``: d_k -> rule -> [Cell per rate]."""
    cells = sum(len(rows["sqrt"]) for rows in by_width.values())
    qk_cells = [c for rows in by_width.values() for c in rows["qknorm"]]
    sq_cells = [c for rows in by_width.values() for c in rows["sqrt"]]
    qk, sq = sum(map(failed, qk_cells)), sum(map(failed, sq_cells))
    (qk_spread, qk_facts), (sq_spread, sq_facts) = _count_spread(qk_cells, qk, "qk"), _count_spread(sq_cells, sq, "sq")
    return Claim(f"In the small real transformer of \"Does that hold in a real transformer?\" ({scope}), "
                 "QK-norm's rows (LayerNorm on q and k, then 1/√d_k) saturated at {qk}" + qk_spread + " of its "
                 "{cells} pairs of width and learning rate, 1/√d_k's at {sq}" + sq_spread + ".",
                 qk=as_int(qk), cells=as_int(cells), sq=as_int(sq), **qk_facts, **sq_facts)
