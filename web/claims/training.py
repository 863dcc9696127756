"""Train it: scale versus initialisation, and saturated at initialisation versus sharp after learning.

Pure functions of results computed by ``sdpa_core`` (no Panel, no state objects), so the tests can check
each sentence against an independent computation; each names the conditions it holds under.
"""
from __future__ import annotations

import math

import numpy as np

import sdpa_core as sc

from .claim import Claim, as_int, as_word
from .numbers import _ratio, fmt, fmt_sci, pct
from .playground import STARVED


# ---- scale versus initialisation (Train it) -----------------------------------------------------------
FOLD_WINDOW = 20   # steps averaged for the comparison


def fold_sentence(folded: list, explicit: list, *, d_k: int, optimizer: str, lr: float) -> str:
    """What folding 1/√d_k into W_q's init does next to the explicit factor, from the two runs' losses
    (each a list per step): the same first loss, then the mean over the last ``FOLD_WINDOW`` steps."""
    if not folded or not explicit:
        return ""
    text = (f"Folded into W_q's init, 1/√d_k gives the same first loss as the explicit factor "
            f"({folded[0]:.3f} and {explicit[0]:.3f}): the logits start equal.")
    done = min(len(folded), len(explicit))
    if done < FOLD_WINDOW:
        return text
    a, b = (float(np.mean(x[done - FOLD_WINDOW:done])) for x in (folded, explicit))
    factor = f"√d_k = {math.sqrt(d_k):.3g}" if optimizer == "Adam" else f"d_k = {d_k}"
    return text + (f" After {done} steps of {optimizer} at learning rate {lr:g}, d_k = {d_k}, the mean loss over the "
                   f"last {FOLD_WINDOW} steps is {a:.3f} folded and {b:.3f} explicit. They differ because {optimizer}'s "
                   f"step on W_q moves the folded logits {factor}× as far (its steps on W_k move both alike).")

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


def _paths(m: dict) -> tuple[str, str]:
    """The median example's gradient norms reaching W_q and W_v, as the page prints them."""
    return fmt_grad(m["q_path"]), fmt_grad(m["value_path"])


def _paths_clause(m: dict, *, present: bool) -> str:
    """What the two gradients say, only where the numbers say it: a saturated head's median example passing
    W_q less than 1/1000 (``STARVED``) of W_v's gradient, or a head that is not saturated passing both."""
    state = head_state(m, learnt=False)
    q, v = m["q_path"], m["value_path"]
    if not (math.isfinite(q) and math.isfinite(v)) or v <= 0:
        return ""
    if state == "saturated" and q < STARVED * v:
        verb = "passes" if present else "passed"
        return f": a saturated head {verb} gradient to its values but hardly any to where it looks"
    if state != "saturated" and q >= STARVED * v:
        return ": both paths " + ("get" if present else "got") + " gradient"
    return ""


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
                 q_path=(float(initial["q_path"]), fmt_grad(initial["q_path"])),
                 value_path=(float(initial["value_path"]), fmt_grad(initial["value_path"])))
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


def sharpness_sentence(initial: dict, now: dict, *, run: str, label: str, d_k: int, seed: int, step: int) -> str:
    """Saturated at initialisation or sharp after learning, measured: run ``run``'s head (``label``, the run's
    scaling as the page names it) at step 0 and at ``step`` (``initial`` and ``now``: ``sdpa_core.head_sharpness``
    on the run's held-out batch), with its conditions (d_k, rule, seed, step, number of keys): its state, its
    entropy as a share of log n_keys, its weight on the right key, and the median example's gradient reaching
    W_q (where to look) against W_v (what to read there) at step 0."""
    n = round(math.exp(initial["max_entropy"]))
    q0, v0 = _paths(initial)
    who = f"run {run.upper()}'s head ({label})"
    where = f"d_k = {d_k} (seed {seed}, {n} keys)"

    def peaked(m: dict) -> str:
        return (f"entropy {entropy_share(m['entropy_fraction'])} of its maximum log {n}, {pct(m['target_weight'])} of its "
                f"weight on the right key")

    if step == 0:
        return (f"At step 0, {where}, {who} is {head_state(initial, learnt=False)}: {peaked(initial)}; the median "
                f"example's gradient reaching W_q is {q0} against {v0} for W_v{_paths_clause(initial, present=True)}.")
    then = (f"at step 0 it was {head_state(initial, learnt=False)} ({entropy_share(initial['entropy_fraction'])}) and the median "
            f"example's gradient reaching W_q was {q0} against {v0} for W_v{_paths_clause(initial, present=False)}")
    if not math.isfinite(now["entropy_fraction"]):
        return f"After {step} steps at {where}, {who} cannot be measured (its loss is not finite); {then}."
    return f"After {step} steps at {where}, {who} is {head_state(now, learnt=True)}: {peaked(now)}; {then}."


def sharp_gradient_sentence(now: dict, *, run: str, step: int) -> str:
    """What a head that learnt to be sharp passes now: the median example's W_q and W_v gradients; "" unless
    the head is sharp and its W_q gradient is below 1/1000 (``STARVED``) of its W_v gradient."""
    if head_state(now, learnt=True) != "sharp" or not now["q_path"] < STARVED * now["value_path"]:
        return ""
    q1, v1 = _paths(now)
    return (f"At step {step} run {run.upper()}'s median example passes {q1} to W_q and {v1} to W_v: a sharp head is "
            f"one-hot too, so it passes almost nothing back to where it looks, but it looks at the right key "
            f"({pct(now['target_weight'])} of its weight).")


def batch_gradient_sentence(initial: dict, *, run: str) -> str:
    """The batch's gradients at step 0 (what the optimizer steps on) beside the median example's: a
    saturated head's W_q gradient over the batch comes from its few rows that are not saturated."""
    g = initial["grad_norms"]
    if not all(math.isfinite(g[k]) for k in ("Wq", "Wv")):
        return ""
    biggest = float(np.max(initial["example_grad_norms"]["Wq"]))
    text = (f"Over the whole batch (what the optimizer steps on), run {run.upper()}'s gradient at step 0 was "
            f"{fmt_grad(g['Wq'])} for W_q and {fmt_grad(g['Wv'])} for W_v")
    if head_state(initial, learnt=False) == "saturated" and initial["q_path"] < STARVED * initial["value_path"]:
        text += (f", with {pct(initial['saturated'])} of its rows saturated (top weight > {sc.SATURATION:g}): the "
                 f"median example's W_q gradient was {fmt_grad(initial['q_path'])}, the largest {fmt_grad(biggest)}")
        if biggest > initial["q_path"] / STARVED:
            text += ", so saturation left W_q's gradient sparse, not uniformly small"
    return text + "."


def logit_growth_sentence(initial: dict, now: dict, *, run: str, step: int, normalizes: bool) -> str:
    """Where run ``run``'s logit growth came from, measured: the logits' rms from step 0 to ``step`` split
    exactly into the lengths' part (scale |q| |k|) and the cosines' part (``logit_rms = length_rms * cos_rms``);
    ``normalizes``: the run uses QK-norm, whose lengths are fixed."""
    if step == 0 or not all(math.isfinite(m[k]) and m[k] > 0 for m in (initial, now)
                            for k in ("logit_rms", "length_rms", "cos_rms")):
        return ""
    grow = now["logit_rms"] / initial["logit_rms"]
    lengths = now["length_rms"] / initial["length_rms"]
    cosines = now["cos_rms"] / initial["cos_rms"]
    verb = "grew" if grow >= 1 else "shrank"
    text = (f"From step 0 to step {step} run {run.upper()}'s logits {verb} {_factor(grow)} in rms "
            f"({fmt(initial['logit_rms'])} → {fmt(now['logit_rms'])}): scale·|q| |k| changed {_factor(lengths)} and "
            f"the cosines' rms {_factor(cosines)} ({fmt(initial['cos_rms'])} → {fmt(now['cos_rms'])}; their product "
            f"is the logits' rms)")
    if normalizes:
        return text + ", and QK-norm holds |q| = |k| = 1, so only the angles can move its logits."
    if abs(math.log(cosines)) > abs(math.log(lengths)):
        text += ", so in this model the angles did more than the lengths"
    else:
        text += ", so in this model the lengths did more than the angles"
    return text + (f"; rotation alone could raise the cosines' rms at most {_factor(1 / initial['cos_rms'])} "
                   f"from step 0 (to 1).")


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
