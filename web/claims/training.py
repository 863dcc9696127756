"""Train it: scale versus initialisation, and saturated at initialisation versus sharp after learning.

Pure functions of results computed by ``sdpa_core`` (no Panel, no state objects), so the tests can check
each sentence against an independent computation; each names the conditions it holds under.
"""
from __future__ import annotations

import math

import numpy as np

import sdpa_core as sc

from .claim import Claim, Sentence, as_fmt, as_g, as_int, as_pct, as_word
from .numbers import _ratio, fmt_sci, pct
from .playground import STARVED


# ---- scale versus initialisation (Train it) -----------------------------------------------------------
FOLD_WINDOW = 20   # steps averaged for the comparison


def fold_sentence(folded: list, explicit: list, *, d_k: int, optimizer: str, lr: float) -> Claim:
    """What folding 1/√d_k into W_q's init does next to the explicit factor, from the two runs' losses
    (each a list per step): the same first loss (facts ``first_folded``, ``first_explicit``), then the mean over
    the last ``FOLD_WINDOW`` steps (``mean_folded``, ``mean_explicit``, after ``steps`` of ``optimizer`` at ``lr``,
    ``d_k``), and how much further the optimizer's step moves the folded logits (``factor``)."""
    if not folded or not explicit:
        return Claim("")
    s = Sentence().add("Folded into W_q's init, 1/√d_k gives the same first loss as the explicit factor "
                       "({first_folded} and {first_explicit}): the logits start equal.",
                       first_folded=_loss(folded[0]), first_explicit=_loss(explicit[0]))
    done = min(len(folded), len(explicit))
    if done < FOLD_WINDOW:
        return s.claim()
    a, b = (float(np.mean(x[done - FOLD_WINDOW:done])) for x in (folded, explicit))
    factor = (math.sqrt(d_k), f"√d_k = {math.sqrt(d_k):.3g}") if optimizer == "Adam" else (d_k, f"d_k = {d_k}")
    return s.add(" After {steps} steps of {optimizer} at learning rate {lr}, d_k = {d_k}, the mean loss over the "
                 f"last {FOLD_WINDOW} steps is " "{mean_folded} folded and {mean_explicit} explicit. They differ because "
                 "{optimizer}'s step on W_q moves the folded logits {factor}× as far (its steps on W_k move both alike).",
                 steps=as_int(done), optimizer=as_word(optimizer, optimizer), lr=as_g(lr), d_k=as_int(d_k),
                 mean_folded=_loss(a), mean_explicit=_loss(b), factor=factor).claim()


def _loss(x: float) -> tuple[float, str]:
    return float(x), f"{x:.3f}"

# ---- saturated at initialisation versus sharp after learning (Train it) ------------------------------
# Each run's head measured by sdpa_core.head_sharpness on the run's fixed held-out batch, at step 0 and now.
#: A head whose rows' mean attention entropy is at most this share of log n_keys is (nearly) one-hot: saturated
#: at step 0; after training, sharp if its weight is on the right key (``ON_TARGET``), saturated if not.
LOW_ENTROPY = 0.1
#: Near uniform: the mean entropy at least this share of log n_keys.
HIGH_ENTROPY = 0.9
#: "On the right key": the rows' mean weight on the key that holds the answer at least this.
ON_TARGET = 0.5


def head_state(m: dict, *, learnt: bool) -> str:
    """How peaked a head is (``sdpa_core.head_sharpness``), in words: at step 0 (``learnt`` False)
    "saturated", "partly peaked" or "near uniform"; after training "sharp" (one-hot on the right key),
    "saturated off target" (one-hot on other keys), "not sharp" or "near uniform"; "not measurable" when
    the loss was not finite."""
    e = m["entropy_fraction"]
    if not math.isfinite(e):
        return "not measurable"
    if e <= LOW_ENTROPY:
        if not learnt:
            return "saturated"
        return "sharp" if m["target_weight"] >= ON_TARGET else "saturated off target"
    if e >= HIGH_ENTROPY:
        return "near uniform"
    return "not sharp" if learnt else "partly peaked"


def entropy_share(x: float) -> str:
    """A mean entropy as a share of log n_keys: a percentage (``pct``), with two decimals within half a point of
    ``LOW_ENTROPY`` ("10.04%"), so a share just past the line does not read as the line itself."""
    if math.isfinite(x) and abs(x - LOW_ENTROPY) < 0.005:
        return f"{x:.2%}"
    return pct(x)


def fmt_grad(x: float) -> str:
    """A gradient norm: two significant digits, in scientific notation below 1e-3 (``fmt_sci``), whole from 100
    ("102", not "1e+02")."""
    x = float(x)
    return f"{x:.0f}" if math.isfinite(x) and 100 <= abs(x) < 1e5 else fmt_sci(x)


def _grad(x: float) -> tuple[float, str]:
    """A gradient norm as a fact, written by ``fmt_grad``."""
    return float(x), fmt_grad(x)


def _paths_clause(m: dict, *, present: bool) -> dict:
    """What the two gradients say, only where the numbers say it (fact ``paths``: "starved" or "both"): a
    saturated head's median example passing W_q less than 1/1000 (``STARVED``) of W_v's gradient, or a head that
    is not saturated passing both; {} when neither."""
    state = head_state(m, learnt=False)
    q, v = m["q_path"], m["value_path"]
    if not (math.isfinite(q) and math.isfinite(v)) or v <= 0:
        return {}
    if state == "saturated" and q < STARVED * v:
        verb = "passes" if present else "passed"
        return {"paths": ("starved", f": a saturated head {verb} gradient to its values but hardly any to where it looks")}
    if state != "saturated" and q >= STARVED * v:
        return {"paths": ("both", ": both paths " + ("get" if present else "got") + " gradient")}
    return {}


def sharpness_conditions(*, run: str, label: str, d_k: int, seed: int, step: int, n_keys: int, examples: int,
                         optimizer: str, lr: float) -> str:
    """The state a sharpness sentence holds for, e.g. "run A: no scaling, d_k = 1024, seed 9, step 300, 8 keys,
    Adam at learning rate 0.01; median of 32 held-out examples"."""
    return (f"run {run.upper()}: {label}, d_k = {d_k}, seed {seed}, step {step}, {n_keys} keys, {optimizer} at "
            f"learning rate {lr:g}; gradients of the median of {examples} held-out examples")


def sharpness_headline(initial: dict, now: dict, *, run: str, step: int) -> Claim:
    """The section's point in one sentence (at most 25 words): run ``run``'s head at step 0 (facts: ``was``, its
    state; ``entropy``, as a share of log ``n_keys``; ``q_path`` and ``value_path``, the median example's gradient
    reaching W_q and W_v) and, after training (``step``), its state now (``now``, ``now_entropy``)."""
    was = head_state(initial, learnt=False)
    facts = dict(run=as_word(run, run.upper()), was=as_word(was, was),
                 entropy=(float(initial["entropy_fraction"]), entropy_share(initial["entropy_fraction"])),
                 n_keys=as_int(round(math.exp(initial["max_entropy"]))),
                 q_path=_grad(initial["q_path"]), value_path=_grad(initial["value_path"]))
    start = "entropy {entropy} of log {n_keys}; W_q gradient {q_path}, W_v's {value_path}"
    if step == 0:
        return Claim("At step 0 run {run} is {was} (" + start + ").", **facts)
    facts["step"] = as_int(step)
    if not math.isfinite(now["entropy_fraction"]):
        return Claim("Run {run}: {was} at step 0 (" + start + "), {now} at step {step}.", **facts,
                     now=as_word("not measurable", "not measurable"))
    state = head_state(now, learnt=True)
    return Claim("Run {run}: {was} at step 0 (" + start + "), {now} ({now_entropy}) at step {step}.", **facts,
                 now=as_word(state, state),
                 now_entropy=(float(now["entropy_fraction"]), entropy_share(now["entropy_fraction"])))


def sharpness_sentence(initial: dict, now: dict, *, run: str, label: str, d_k: int, seed: int, step: int) -> Claim:
    """Saturated at initialisation or sharp after learning, measured: run ``run``'s head (``label``, the run's
    scaling as the page names it) at step 0 and at ``step`` (``initial`` and ``now``: ``sdpa_core.head_sharpness``
    on the run's held-out batch), with its conditions (d_k, rule, seed, step, number of keys): its state, its
    entropy as a share of log n_keys, its weight on the right key, and the median example's gradient reaching
    W_q (where to look) against W_v (what to read there) at step 0.

    Facts: ``run``, ``label``, ``d_k``, ``seed``, ``n_keys``; at step 0 ``was`` (its state), ``entropy``,
    ``target``, ``q_path``, ``value_path`` and ``paths`` ("starved" or "both", when it says what they mean);
    after training ``step``, ``now`` ("not measurable" when the loss is not finite), ``now_entropy`` and
    ``now_target``."""
    facts = dict(run=as_word(run, run.upper()), label=as_word(label, label), d_k=as_int(d_k), seed=as_int(seed),
                 n_keys=as_int(round(math.exp(initial["max_entropy"]))),
                 was=as_word(head_state(initial, learnt=False), head_state(initial, learnt=False)),
                 entropy=_entropy(initial), q_path=_grad(initial["q_path"]), value_path=_grad(initial["value_path"]))
    who = "run {run}'s head ({label})"
    where = "d_k = {d_k} (seed {seed}, {n_keys} keys)"
    s = Sentence()
    if step == 0:
        clause = _paths_clause(initial, present=True)
        return s.add("At step 0, " + where + ", " + who + " is {was}: entropy {entropy} of its maximum log {n_keys}, "
                     "{target} of its weight on the right key; the median example's gradient reaching W_q is {q_path} "
                     "against {value_path} for W_v" + ("{paths}." if clause else "."),
                     target=as_pct(initial["target_weight"]), **facts, **clause).claim()
    s.add("After {step} steps at " + where + ", " + who, step=as_int(step), **facts)
    if not math.isfinite(now["entropy_fraction"]):
        s.add(" {now} (its loss is not finite); ", now=("not measurable", "cannot be measured"))
    else:
        state = head_state(now, learnt=True)
        s.add(" is {now}: entropy {now_entropy} of its maximum log {n_keys}, {now_target} of its weight on the right "
              "key; ", now=as_word(state, state), now_entropy=_entropy(now), now_target=as_pct(now["target_weight"]))
    clause = _paths_clause(initial, present=False)
    return s.add("at step 0 it was {was} ({entropy}) and the median example's gradient reaching W_q was {q_path} "
                 "against {value_path} for W_v" + ("{paths}." if clause else "."), **clause).claim()


def _entropy(m: dict) -> tuple[float, str]:
    """A head's mean entropy as a share of log n_keys, as a fact (``entropy_share``)."""
    return float(m["entropy_fraction"]), entropy_share(m["entropy_fraction"])


def sharp_gradient_sentence(now: dict, *, run: str, step: int) -> Claim:
    """What a head that learnt to be sharp passes now: the median example's W_q and W_v gradients (facts
    ``q_path``, ``value_path``; ``target``, its weight on the right key; ``run``, ``step``); empty unless the head
    is sharp and its W_q gradient is below 1/1000 (``STARVED``) of its W_v gradient."""
    if head_state(now, learnt=True) != "sharp" or not now["q_path"] < STARVED * now["value_path"]:
        return Claim("")
    return Claim("At step {step} run {run}'s median example passes {q_path} to W_q and {value_path} to W_v: a sharp "
                 "head is one-hot too, so it passes almost nothing back to where it looks, but it looks at the right "
                 "key ({target} of its weight).", step=as_int(step), run=as_word(run, run.upper()),
                 q_path=_grad(now["q_path"]), value_path=_grad(now["value_path"]), target=as_pct(now["target_weight"]))


def batch_gradient_sentence(initial: dict, *, run: str) -> Claim:
    """The batch's gradients at step 0 (what the optimizer steps on; facts ``batch_q``, ``batch_v``) beside the
    median example's: a saturated head's W_q gradient over the batch comes from its few rows that are not
    saturated (``saturated``, the share of rows; ``q_path``, the median example's; ``q_max``, the largest; and
    ``sparse`` when the largest is over 1000 times the median)."""
    g = initial["grad_norms"]
    if not all(math.isfinite(g[k]) for k in ("Wq", "Wv")):
        return Claim("")
    biggest = float(np.max(initial["example_grad_norms"]["Wq"]))
    s = Sentence().add("Over the whole batch (what the optimizer steps on), run {run}'s gradient at step 0 was "
                       "{batch_q} for W_q and {batch_v} for W_v", run=as_word(run, run.upper()),
                       batch_q=_grad(g["Wq"]), batch_v=_grad(g["Wv"]))
    if head_state(initial, learnt=False) == "saturated" and initial["q_path"] < STARVED * initial["value_path"]:
        s.add(", with {saturated} of its rows saturated " f"(top weight > {sc.SATURATION:g}): the median example's W_q "
              "gradient was {q_path}, the largest {q_max}", saturated=as_pct(initial["saturated"]),
              q_path=_grad(initial["q_path"]), q_max=_grad(biggest))
        if biggest > initial["q_path"] / STARVED:
            s.add("{sparse}", sparse=(True, ", so saturation left W_q's gradient sparse, not uniformly small"))
    return s.add(".").claim()


def logit_growth_sentence(initial: dict, now: dict, *, run: str, step: int, normalizes: bool,
                          cap: float | None = None) -> Claim:
    """Where run ``run``'s logit growth came from, measured: the logits' rms from step 0 to ``step`` split
    exactly into the lengths' part (scale |q| |k|) and the cosines' part (``logit_rms = length_rms * cos_rms``);
    ``normalizes``: the run uses QK-norm, whose lengths are fixed. Facts: ``run``, ``step``, ``grow`` (with
    ``direction``), ``logit0`` → ``logit1``, ``lengths``, ``cosines`` (``cos0`` → ``cos1``), and without QK-norm
    ``more`` ("angles" or "lengths") and ``rotation`` (the most rotation alone could raise the cosines' rms);
    ``cap``: the run's soft-cap, whose logits are measured before it (the split holds there; the softmax sees
    cap tanh(z / cap))."""
    if step == 0 or not all(math.isfinite(m[k]) and m[k] > 0 for m in (initial, now)
                            for k in ("logit_rms", "length_rms", "cos_rms")):
        return Claim("")
    grow = now["logit_rms"] / initial["logit_rms"]
    lengths = now["length_rms"] / initial["length_rms"]
    cosines = now["cos_rms"] / initial["cos_rms"]
    s = Sentence().add(
        "From step 0 to step {step} run {run}'s logits" + (f" (before its ±{cap:g} cap)" if cap is not None else "")
        + " {direction} {grow} in rms ({logit0} → {logit1}): scale·|q| |k| "
        "changed {lengths} and the cosines' rms {cosines} ({cos0} → {cos1}; their product is the logits' rms)",
        step=as_int(step), run=as_word(run, run.upper()), direction=as_word(grow >= 1, "grew" if grow >= 1 else "shrank"),
        grow=_as_factor(grow), logit0=as_fmt(initial["logit_rms"]), logit1=as_fmt(now["logit_rms"]),
        lengths=_as_factor(lengths), cosines=_as_factor(cosines), cos0=as_fmt(initial["cos_rms"]),
        cos1=as_fmt(now["cos_rms"]))
    if normalizes:
        return s.add(", and QK-norm holds |q| = |k| = 1, so only the angles can move its logits.").claim()
    more = ("angles", "the angles did more than the lengths") if abs(math.log(cosines)) > abs(math.log(lengths)) \
        else ("lengths", "the lengths did more than the angles")
    return s.add(", so in this model {more}; rotation alone could raise the cosines' rms at most {rotation} from step 0 "
                 "(to 1).", more=more, rotation=_as_factor(1 / initial["cos_rms"])).claim()


def _as_factor(r: float) -> tuple[float, str]:
    return float(r), _factor(r)


def _factor(r: float) -> str:
    """A growth factor as the page prints it: "20×", "1.7×", "×0.52"."""
    return _ratio(r) if r >= 1 else f"×{r:.2g}"


#: Where trained models' logit growth comes from, with sources (a caption of the section; Markdown links).
LOGIT_GROWTH_SOURCES = (
    "Logits that grow during training can also break it: Dehghani et al. (2023), [*Scaling Vision Transformers to 22 "
    "Billion Parameters*](https://arxiv.org/abs/2302.05442), report that training diverged once the attention "
    "logits grew so large that the weights became almost one-hot (near-zero entropy), and fix it by applying "
    "LayerNorm to q and k before their dot product (QK-layernorm); Wortsman et al. (2023), [*Small-scale proxies "
    "for large-scale Transformer training instabilities*](https://arxiv.org/abs/2309.14322), reproduce this "
    "attention-logit growth in small Transformers at high learning rates and find that qk-layernorm mitigates it "
    "there too. Since q·k = |q| |k| cos θ with |cos θ| ≤ 1, logits can only grow without bound through the "
    "lengths of q and k, which normalising them caps (up to LayerNorm's learned gain): turning q toward k at "
    "fixed lengths can raise q·k at most to |q| |k|. The details above split this model's own growth into the "
    "two.")


def example_sentence(weight_a: float, weight_b: float, *, target: int, step: int) -> Claim:
    """What the fixed example's figure shows: the weight each run puts on the key it should find (facts
    ``a``, ``b``: shares of the row; ``target``, the key; ``step``, the runs' step)."""
    for name, w in (("weight_a", weight_a), ("weight_b", weight_b)):
        if not 0.0 <= w <= 1.0 + 1e-9:
            raise ValueError(f"example_sentence: {name} must be a weight in [0, 1], got {w!r}")
    return Claim("On the fixed example at step {step}, run A puts {a} of its weight on the key to find (key "
                 "{target}), run B {b}.", step=as_int(step), a=as_pct(weight_a), b=as_pct(weight_b),
                 target=as_int(target))
