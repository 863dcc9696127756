"""The guided tour: steps that follow the argument, each a question, a prediction, a live view set
to the step's state, a sentence computed from that state and one control to try.

Plain data and small functions of the page's state (no Panel): ``web/views/tour.py`` draws it,
``web/urlstate.py`` uses ``STEPS[i].settings`` as the defaults of a ``?view=tour&step=N`` link, and
``tests/web/test_tour.py`` checks every step's answer and sentence against numpy/torch.

Grading needs a page state (``web/grading.py``); this module needs none, so the state and the link
parser can import the steps. A prediction's right answer is never written down: each step measures one number at the current state
(``measure``) and the choices are ranges of that number (``edges``), so the answer is whichever range
the measured number falls in, and it moves with the settings.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import claims, real_training
from .claims import Claim, Sentence, as_fmt, as_g, as_int, as_pct, as_tokens, as_word


@dataclass(frozen=True)
class Step:
    title: str
    question: str
    view: str                  # the live view the step shows (web/options.py VIEWS)
    settings: dict             # link keys (web/urlstate.py KEYS) -> value; every other setting at its default
    predict: str               # "predict first": the question the choices answer
    choices: tuple[str, ...]   # one per range of the measured number, in the order of ``edges``
    edges: tuple[float, ...]   # ascending; choice i is measure in [edges[i-1], edges[i])
    measure: Callable          # (lab, train) -> (number or None when not yet known, sentence saying it)
    now_try: str               # one control to move next
    control: str = ""          # that control's accessible name (its label): beside the step's figure on a phone too
    waiting: str = ""          # what to do when the number is not known yet (training: press Play)
    key: str = field(default="")
    descending: bool = False   # show the choices from the largest range down (so the right one is not always last)


def shown_choices(step: Step) -> list[tuple[str, int]]:
    """The choices in the order the card shows them: ``(label, index into choices)``."""
    pairs = list(enumerate(step.choices))
    return [(c, k) for k, c in (reversed(pairs) if step.descending else pairs)]


#: A made pick as the address keeps it (``?picks=``): one character per step in order, the index into that step's
#: ``choices`` or "-" for none, trailing "-" left out ("20-1": picks at steps 1, 2 and 4). A reload keeps them.
NO_PICK = "-"


def encode_picks(picks: dict[int, int]) -> str:
    """``{step (1-based): index into its choices}`` as the address writes it."""
    return "".join(str(picks[i]) if i in picks else NO_PICK for i in range(1, len(STEPS) + 1)).rstrip(NO_PICK)


def picks_pattern() -> str:
    """The regular expression a ``picks`` value matches: at most one character per step, each a choice of that
    step or "-"."""
    out = ""
    for step in reversed(STEPS):
        out = f"(?:[0-{len(step.choices) - 1}{NO_PICK}]{out})?"
    return out


def decode_picks(text: str) -> dict[int, int]:
    """The picks ``text`` holds (:func:`encode_picks`); a character that is not a choice of its step is no pick."""
    return {i: int(c) for i, c in enumerate(text[:len(STEPS)], 1) if c.isdigit() and int(c) < len(STEPS[i - 1].choices)}


def on_the_learners_runs(step: Step) -> bool:
    """The training step is graded on the learner's own runs, not on a state computed for the step."""
    return step.measure is _training


def answer(step: Step, lab, train) -> tuple[int | None, str]:
    """``(index of the right choice or None, the sentence with the measured number)``."""
    value, sentence = step.measure(lab, train)
    if value is None or math.isnan(value):   # inf is a range too ("never")
        return None, sentence
    return claims.bucket(value, step.edges), sentence


# ---- what each step measures ------------------------------------------------------------------------
def _top_weight(lab, train):
    s = lab.playground["none"]["stats"]
    where = claims.conditions(d_k=lab.d_k, rho=lab.rho, sigma=lab.sigma)
    return s["max_weight"], Claim("At {where}, n = {n}, unscaled, the top key takes {top} of a query's weight on "
                                  "average (uniform would be {uniform}).", where=(where, where), n=as_int(lab.n),
                                  top=as_pct(s["max_weight"]), uniform=as_pct(1 / lab.n))


def _std_growth(narrow: int, wide: int) -> Callable:
    """How much the unscaled q·k's measured std grows from d_k = ``narrow`` to ``wide`` (a power of 4 apart)."""
    def measure(lab, train):
        sw = lab.sweep
        if sw is None:
            return None, ""
        d = list(sw.d_k)
        std = sw.mean["logit_std"]["none"]
        lo, hi = std[d.index(narrow)], std[d.index(wide)]
        times = wide // narrow
        return hi / lo, Claim(
            "Measured std of the unscaled q·k: {narrow_std} at d_k = {narrow}, {wide_std} at d_k = {wide}, {ratio}× "
            "larger for {times}× the width (σ = {sigma}, ρ = {rho}; theory at ρ = 0: √{times} = {theory}×).",
            narrow_std=as_fmt(lo), narrow=as_int(narrow), wide_std=as_fmt(hi), wide=as_int(wide),
            ratio=(float(hi / lo), f"{hi / lo:.1f}"), times=as_int(times), sigma=as_g(lab.sigma), rho=as_g(lab.rho),
            theory=as_int(math.isqrt(times)))
    return measure


def _dial_top(lab, train):
    d = lab.dial
    if d is None:
        return None, ""
    top = d["expected"]["mean_top"]      # expected over random logits, not the one matrix the heatmap draws
    return top, Claim("At logit std s = {s} over n = {n} keys, the top key takes {top} of a row's weight, expected over "
                      "random logits.", s=as_g(lab.dial_s), n=as_int(lab.n), top=as_pct(top))


def _starved(lab, train):
    g = lab.gradients
    if g is None:
        return None, ""
    med = float(np.median(g["sqrt"]))
    if not med > 0:
        return None, "Even 1/√d_k is saturated at these settings, so there is no reference row."
    floors = getattr(g, "floors", None)   # each row's float64 round-off size (sdpa_core.RowNorms)
    if floors and not claims.starved_countable(med, max(float(np.max(floors[r])) for r in ("none", "sqrt"))):
        return None, Claim("At d_k = {d_k}, ρ = {rho}: 1/{below} of the 1/√d_k median gradient is below float64 "
                           "round-off, so no query row is counted as starved.", d_k=as_int(lab.d_k), rho=as_g(lab.rho),
                           below=as_int(round(1 / claims.STARVED)))
    share = float((g["none"] < claims.STARVED * med).mean())
    return share, Claim("At d_k = {d_k}, ρ = {rho}: unscaled, {share} of {rows} query rows get less than 1/{below} of "
                        "the 1/√d_k median gradient.", d_k=as_int(lab.d_k), rho=as_g(lab.rho), share=as_pct(share),
                        rows=as_int(len(g["none"])), below=as_int(round(1 / claims.STARVED)))


TRAIN_CHECK = 100   # steps after which the training step's prediction is answered: about 3 s of CPython here, 8 s in Pyodide; the gap is clear by then (unscaled/1/√d_k loss ratio 6.3 to 17.7 in 11 of seeds 0-11 at d_k = 1024; seed 8 trains neither run by step 300)


def _training(lab, train):
    done = min(len(t.history["loss"]) for t in train.trainers.values())
    if done < TRAIN_CHECK:
        return None, Claim("({done} of {steps} steps so far.)", done=as_int(done), steps=as_int(TRAIN_CHECK))
    a, b = (float(np.mean(train.trainers[k].history["loss"][TRAIN_CHECK - 20:TRAIN_CHECK])) for k in ("a", "b"))
    real = real_training.toy_against_real()   # the toy is not the whole story
    return a / b, Claim("Mean loss over steps {start}–{end} at d_k = {d_k}: {loss_a} for run A ({run_a}) vs {loss_b} "
                        "for run B ({run_b}), a ratio of {ratio}. " + real.template,
                        **real.given(), start=as_int(TRAIN_CHECK - 20),
                        end=as_int(TRAIN_CHECK), d_k=as_int(train.d_k), loss_a=(a, f"{a:.3f}"), loss_b=(b, f"{b:.3f}"),
                        run_a=as_word(train.rule_a, train.label("a")), run_b=as_word(train.rule_b, train.label("b")),
                        ratio=(a / b, f"{a / b:.2f}"))


def _aligned_tokens(lab, train):
    path = lab.alignment
    if path is None:
        return None, ""
    tokens = float(path["effective_support"]["sqrt"][-1])
    ends = claims.alignment_endpoints(path)
    return tokens, Claim("At d_k = {d_k}, n = {n}, ρ = 1: 1/√d_k attends to about {tokens} tokens (" + ends.template
                         + ").", d_k=as_int(lab.d_k), n=as_int(lab.n), tokens=as_tokens(tokens), **ends.given())


def _first_overflow(lab, train):
    ps = lab.precision
    if ps is None:
        return None, ""
    first = claims.first_broken(ps, "float16", lab.order)
    where = {"order": as_word(lab.order, claims.ORDER_WORDS[lab.order]), "sigma": as_g(lab.sigma), "rho": as_g(lab.rho)}
    if first is None:
        return math.inf, Claim("In float16 with the scale applied {order}, no row of the stable softmax breaks up to "
                               "d_k = {largest} (σ = {sigma}, ρ = {rho}).", largest=as_int(ps.d_k[-1]), **where)
    naive = claims.first_broken(ps, "float16", lab.order, "naive")
    text = Sentence().add("In float16 with the scale applied {order}, rows of the stable softmax first contain inf or "
                          "NaN at d_k = {first} (σ = {sigma}, ρ = {rho}): |q·k| passes 65504 there.",
                          first=as_int(first), **where)
    if naive is not None and naive < first:
        span = claims.broken_span(ps, "float16", lab.order, "naive")
        text.add(" The naive softmax (exp without subtracting the row's maximum, taken in float16 here) breaks "
                 "earlier, {naive}: exp(x) overflows float16 from x ≈ 11.1 (a kernel that takes exp in float32 "
                 "overflows only near x ≈ 88.7).", naive=as_word(naive, span))
    return first, text.claim()


def _bug_factor(lab, train):
    m = lab.real_model
    if m is None:
        return None, ""
    if "error" in m:
        return None, m["error"]
    return m["bug_temperature"], claims.bug_sentence(m)


STEPS = (
    Step("What attention computes",
         "Each query q spreads one unit of attention over the keys k: the scores q·k (the logits) go through a "
         "softmax, which turns them into weights that sum to 1. How spread out are they?",
         "playground", {"d_k": 64},
         "Without any scaling, at d_k = 64, how much of a query's attention goes to its top key?",
         ("less than 20%", "20% to 60%", "more than 60%"), (0.2, 0.6), _top_weight,
         "Now try: drag d_k beside the heatmaps from 64 to 1024 and watch the left map turn into one bright "
         "cell per row.", control="d_k (key/query dimension)", key="attention", descending=True),
    Step("Why q·k grows with d_k",
         "q·k adds up d_k products. What happens to its typical size when the head gets wider?",
         "variance", {"d_k": 256},
         "d_k grows 16× (from 16 to 256). The standard deviation of the unscaled q·k grows by about…",
         ("1× (no change)", "4×", "16×"), (2.0, 8.0), _std_growth(16, 256),
         "Now try: move σ beside the histograms: the std grows like σ², and 1/√d_k does not undo that.",
         control="σ (std of q, k entries)", key="variance"),
    Step("What a softmax does with large logits",
         "The softmax only sees the logits' spread. What does a large spread do to it?",
         "dial", {"s": 8.0},
         "16 keys whose logits have standard deviation 8. How much weight does the top key get on average?",
         ("less than 30%", "30% to 70%", "more than 70%"), (0.3, 0.7), _dial_top,
         "Now try: drag the logit dial s from 8 down to 1 and watch the operating point slide into the "
         "sigmoid's steep middle.", control="Logit std s", key="softmax"),
    Step("What that does to the gradients",
         "A saturated softmax has a Jacobian near 0. Does every query's gradient shrink?",
         "saturation", {"d_k": 1024},
         "At d_k = 1024, without scaling, what share of queries get less than 1/1000 of the gradient a query "
         "gets with 1/√d_k?",
         ("almost none (under 10%)", "some (10% to 40%)", "many (more than 40%)"), (0.1, 0.4), _starved,
         "Now try: lower d_k to 64 beside the plots and compare the sorted curves in the gradient plot below "
         "them.", control="d_k (key/query dimension)", key="gradients", descending=True),
    Step("What training shows",
         "Two copies of one tiny attention model, identical but for the scaling, learn the same task.",
         "training", {},
         f"At d_k = 1024, after {TRAIN_CHECK} steps, the unscaled run's loss compared with 1/√d_k's will be…",
         ("lower (ratio under 0.9)", "about the same", "higher (ratio over 1.1)"), (0.9, 1.1), _training,
         "Now try: press Play next to the plots, then change d_k next to them to 16 and train again.",
         waiting=f"Press Play: the answer comes at step {TRAIN_CHECK}.", control="▶ Play", key="training"),
    Step("The alternatives, and why the question is still alive",
         "At initialisation q and k are independent; training aligns them (ρ grows). Besides 1/√d_k there are "
         "muP's 1/d_k and QK-norm (q and k scaled to length 1, logits cos(q, k) / τ). What do they do then?",
         "alignment", {"d_k": 256},
         "At d_k = 256, as ρ goes from 0 to 1, how many tokens does 1/√d_k end up attending to (of 16)?",
         ("fewer than 2 (one token)", "2 to 8", "more than 8 (still spread)"), (2.0, 8.0), _aligned_tokens,
         "Now try: press Play to sweep ρ from 0 to 1, and watch which heatmaps collapse.", control="▶ Play: sweep ρ from 0 to 1",
         key="alignment"),
    Step("Half precision",
         "float16 stops at 65504. A kernel that computes q·kᵀ in float16 and divides by √d_k afterwards: where "
         "does the product pass it?",
         "precision", {"sigma": 4.0, "rho": 1.0, "order": "after"},
         "With σ = 4 and aligned q and k (ρ = 1), scaling after the matmul: from which d_k do rows of the (stable) "
         "softmax contain inf or NaN?",
         ("d_k ≤ 256", "d_k = 512 to 2048", "d_k = 4096 or never"), (300.0, 3000.0), _first_overflow,
         "Now try: switch “Where the 1/√d_k scaling happens” to before the matmul.",
         control="Where the 1/√d_k scaling happens", key="precision"),
    Step("The √d_model bug",
         "A real head's d_k is d_model / heads. What if the code divides by √d_model instead?",
         "models", {"preset": "gpt2"},
         "GPT-2 small is 768 wide with 12 heads (d_k = 64). Dividing by √768 instead of √64 shrinks the logits by…",
         ("less than 2×", "2× to 4.5×", "4.5× to 8×", "more than 8×"), (2.0, 4.5, 8.0), _bug_factor,
         "Now try: set the heads to 1 (then d_k = d_model and the bug disappears), or pick LLaMA-2-7B, whose "
         "32 heads make it larger.", control="heads (d_k = d_model / heads)", key="bug"),
)


# ---- the recap's self-check: three questions that carry the tour's findings to new settings -------------
def _saturated_at_widest(lab, train):
    sw = lab.sweep
    if sw is None:
        return None, ""
    share = float(sw.mean["saturated"]["none"][-1])
    return share, Claim("Without scaling at d_k = {d_k}, n = {n}, ρ = {rho}: {share} of rows are saturated (top weight "
                        "> {saturation}), so their queries get almost no gradient.", d_k=as_int(sw.d_k[-1]),
                        n=as_int(lab.n), rho=as_g(lab.rho), share=as_pct(share), saturation=as_g(0.99))


SELF_CHECK = (
    Step("Self-check 1", "", "variance", {"d_k": 1024},
         "A head goes from d_k = 256 to d_k = 1024 (4× wider). Without scaling, the std of q·k grows by about…",
         ("no change", "twice", "four times"), (1.5, 3.0), _std_growth(256, 1024), "", key="check-std"),
    Step("Self-check 2", "", "saturation", {"d_k": 4096},
         "At d_k = 4096 with no scaling, what share of attention rows are saturated (top weight above 0.99)?",
         ("under 30%", "30% to 80%", "over 80%"), (0.3, 0.8), _saturated_at_widest, "", key="check-saturated",
         descending=True),
    Step("Self-check 3", "", "models", {"preset": "llama-2-7b"},
         "LLaMA-2-7B is 4096 wide with 32 heads (d_k = 128). Code that divides by √4096 instead of √128 shrinks "
         "every logit by about…",
         ("1.4×", "5.7×", "32×"), (3.5, 15.0), _bug_factor, "", key="check-bug"),
)
