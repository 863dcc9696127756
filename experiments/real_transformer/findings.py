"""The grid's findings, read from a run's JSON (pure Python: no torch, no numpy).

    python -m experiments.real_transformer.findings experiments/real_transformer/results/cpu.json

A cell is (d_k, rule, lr, init): the mean over seeds of the final validation loss of the runs whose loss is
finite; it is *saturated* when the seed mean of its runs' saturated share at the end (the largest over the
layers) exceeds one half, and *diverged* (†) when any of its runs diverged. A cell *works* when it is
neither saturated nor diverged. Findings (each True/False with the numbers behind it), at init gpt2 unless
said, with "small" and "large" d_k the grid's smallest and largest:

(a) at small d_k no scaling costs nothing: none's best loss over the lrs is at most sqrt's best + TOLERANCE
(b) at large d_k no scaling fails at every lr: every none cell is saturated or diverged there, and none's
    best loss is more than TOLERANCE above the best of all rules there
(c) 1/sqrt(d_k)'s logits grow during training (at large d_k the logits' std at the end, the largest over
    the layers, exceeds the std at step 0 at every lr) and its working lr range shrinks with d_k (the
    count of working lrs never grows with d_k and is smaller at large d_k than at small)
(d) QK-norm keeps the whole range: at every d_k no qknorm cell diverged and its loss at the largest lr is
    within QKNORM_RANGE nats of its best
(e) 1/d_k moves the best lr: at every d_k linear's best lr is at least sqrt's, and larger at one d_k or more
(f) with fan-in init no scaling is already worse at small d_k: none's best loss is more than TOLERANCE
    above sqrt's best there, at init fanin
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path

TOLERANCE = 0.05        # nats: about the seed-to-seed spread of a cell in the CPU grid
QKNORM_RANGE = 0.35     # nats (the outside GPU table: 0.13, 0.21 and 0.34 at d_k 32, 128 and 256)
SATURATED_CELL = 0.5


def _top(run: dict, key: str, at: int) -> float:
    """The largest over the layers of a recorded stat at eval point `at`; +inf when one is missing
    (a number that was not finite, written as null)."""
    values = [layer[key][at] for layer in run["layers"]]
    return math.inf if any(v is None for v in values) else max(values)


def _mean(values: list) -> float:
    return sum(values) / len(values)


def cells(result: dict) -> dict:
    """{(d_k, rule, lr, init): {"loss", "sat", "diverged", "std_start", "std_end", "n"}} over seeds."""
    groups: dict = {}
    for run in result["runs"]:
        groups.setdefault((run["d_k"], run["rule"], run["lr"], run["init"]), []).append(run)
    out = {}
    for key, runs in groups.items():
        finite = [r["final_val_loss"] for r in runs if r["final_val_loss"] is not None]
        out[key] = {"loss": _mean(finite) if finite else None,
                    "sat": _mean([min(1.0, _top(r, "sat", -1)) for r in runs]),
                    "diverged": any(r["diverged"] for r in runs),
                    "std_start": _mean([_top(r, "std", 0) for r in runs]),
                    "std_end": _mean([_top(r, "std", -1) for r in runs]),
                    "n": len(runs)}
    return out


def _axes(result: dict) -> tuple[list, list]:
    spec = result["spec"]
    return sorted(spec["d_ks"]), sorted(spec["lrs"])


def _best(c: dict, d_k: int, rule: str, lrs: list, init: str) -> tuple[float, float]:
    """(best loss, its lr) of a rule at d_k; diverged cells count as +inf."""
    scored = [(c[(d_k, rule, lr, init)]["loss"] if not c[(d_k, rule, lr, init)]["diverged"] else math.inf, lr)
              for lr in lrs]
    return min(scored)


def _works(cell: dict) -> bool:
    return not cell["diverged"] and cell["sat"] <= SATURATED_CELL


def _r(x):
    return None if x is None or not math.isfinite(x) else round(x, 4)


def findings(result: dict) -> dict:
    c = cells(result)
    d_ks, lrs = _axes(result)
    small, large = d_ks[0], d_ks[-1]
    rules = result["spec"]["rules"]
    out = {}

    none_b, _ = _best(c, small, "none", lrs, "gpt2")
    sqrt_b, _ = _best(c, small, "sqrt", lrs, "gpt2")
    out["a"] = {"holds": none_b <= sqrt_b + TOLERANCE, "d_k": small,
                "none_best": _r(none_b), "sqrt_best": _r(sqrt_b)}

    none_cells = {lr: c[(large, "none", lr, "gpt2")] for lr in lrs}
    all_fail = all(not _works(cell) for cell in none_cells.values())
    none_best, _ = _best(c, large, "none", lrs, "gpt2")
    best_all = min(_best(c, large, r, lrs, "gpt2")[0] for r in rules)
    out["b"] = {"holds": all_fail and none_best > best_all + TOLERANCE, "d_k": large,
                "none_saturated_or_diverged": {str(lr): not _works(cell) for lr, cell in none_cells.items()},
                "none_best": _r(none_best), "best_of_all_rules": _r(best_all)}

    growth = {str(lr): _r(c[(large, "sqrt", lr, "gpt2")]["std_end"] / c[(large, "sqrt", lr, "gpt2")]["std_start"])
              for lr in lrs}
    working = {d: sum(_works(c[(d, "sqrt", lr, "gpt2")]) for lr in lrs) for d in d_ks}
    counts = [working[d] for d in d_ks]
    shrinks = all(a >= b for a, b in zip(counts, counts[1:])) and counts[-1] < counts[0]
    grows = all(g is not None and g > 1 for g in growth.values())
    out["c"] = {"holds": grows and shrinks, "logits_grow": grows, "range_shrinks": shrinks,
                "sqrt_std_end_over_start_at_large_d_k": growth,
                "sqrt_working_lrs_per_d_k": {str(d): n for d, n in working.items()}}

    per_d = {}
    for d in d_ks:
        best, _ = _best(c, d, "qknorm", lrs, "gpt2")
        top = c[(d, "qknorm", lrs[-1], "gpt2")]
        diverged = any(c[(d, "qknorm", lr, "gpt2")]["diverged"] for lr in lrs)
        gap = (top["loss"] - best) if top["loss"] is not None and math.isfinite(best) else math.inf
        per_d[str(d)] = {"best": _r(best), "at_top_lr": _r(top["loss"]), "gap": _r(gap), "diverged": diverged}
    out["d"] = {"holds": all(v["gap"] is not None and v["gap"] <= QKNORM_RANGE and not v["diverged"]
                             for v in per_d.values()), "top_lr": lrs[-1], "per_d_k": per_d}

    best_lrs = {str(d): {"sqrt": _best(c, d, "sqrt", lrs, "gpt2")[1], "linear": _best(c, d, "linear", lrs, "gpt2")[1]}
                for d in d_ks}
    at_least = all(v["linear"] >= v["sqrt"] for v in best_lrs.values())
    moved = any(v["linear"] > v["sqrt"] for v in best_lrs.values())
    out["e"] = {"holds": at_least and moved, "best_lr_per_d_k": best_lrs}

    if "fanin" in result["spec"]["inits"]:
        none_f, _ = _best(c, small, "none", lrs, "fanin")
        sqrt_f, _ = _best(c, small, "sqrt", lrs, "fanin")
        sat0 = [_top(r, "sat", 0) for r in result["runs"]
                if r["d_k"] == small and r["rule"] == "none" and r["init"] == "fanin"]
        out["f"] = {"holds": none_f > sqrt_f + TOLERANCE, "d_k": small, "none_best": _r(none_f),
                    "sqrt_best": _r(sqrt_f), "none_saturated_share_at_step_0": _r(_mean(sat0))}
    return out


def table(result: dict, init: str = "gpt2") -> str:
    """Markdown: final val loss per d_k x rule x lr (seed mean), * saturated at the end, † diverged."""
    c = cells(result)
    d_ks, lrs = _axes(result)
    rules = [r for r in ("sqrt", "none", "linear", "qknorm") if r in result["spec"]["rules"]]
    lines = ["| d_k | rule | " + " | ".join(f"{lr:.0e}".replace("e-0", "e-") for lr in lrs) + " |",
             "|---|---|" + "---|" * len(lrs)]
    for d in d_ks:
        for rule in rules:
            marks = []
            for lr in lrs:
                cell = c[(d, rule, lr, init)]
                text = "—" if cell["loss"] is None else f"{cell['loss']:.2f}"
                text += ("*" if cell["sat"] > SATURATED_CELL else "") + ("†" if cell["diverged"] else "")
                marks.append(text)
            lines.append(f"| {d} | {rule} | " + " | ".join(marks) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0] if argv else Path(__file__).parent / "results" / "cpu.json")
    result = json.loads(path.read_text())
    for init in result["spec"]["inits"]:
        print(f"init {init}:\n{table(result, init)}\n")
    for name, f in findings(result).items():
        print(f"({name}) {'holds' if f['holds'] else 'does not hold'}: "
              + json.dumps({k: v for k, v in f.items() if k != "holds"}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
