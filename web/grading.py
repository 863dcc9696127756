"""Grading the tour's predictions and the self-check: each at the state its link opens (computed once per
step and shared, read only), the training step on the learner's own runs, and the last step's recap.

The steps themselves are data in ``web/tour.py``; grading needs a page state and the link parser, which
import the steps, so it lives here, above them.
"""
from __future__ import annotations

import re
from urllib.parse import urlencode

from .claims import Claim, as_fmt, as_pct
from .state import LabState
from .tour import STEPS, Step, answer, on_the_learners_runs
from .training_state import TrainingState
from .urlstate import apply_query, step_query


def step_state(step: Step):
    """``(lab, train)`` at the step's own settings, as its link opens it: a prediction's question names
    those settings, so it is graded there, whatever the learner has moved since. Computed once per step
    (read only; shared by every session). A self-check question is graded at its view's link with its
    settings."""
    key = step.key
    if key not in _STEP_STATES:
        lab = LabState()
        train = TrainingState(lab)
        link = (step_query(STEPS.index(step) + 1) if step in STEPS
                else "?" + urlencode({"view": step.view, **step.settings}))
        apply_query(link, lab, train)
        _STEP_STATES[key] = (lab, train)
    return _STEP_STATES[key]


_STEP_STATES: dict = {}


def prepared_state(step: Step):
    """The ``LabState`` :func:`step_state` computed for ``step``, or None if it has not (never computes)."""
    return _STEP_STATES.get(step.key, (None, None))[0]


def _runs_are_the_steps(step: Step, train) -> bool:
    """The training step's runs cannot be recomputed (they are the learner's): graded only while they
    have the step's settings."""
    ref = step_state(step)[1]
    return all(getattr(train, k) == getattr(ref, k) for k in ("d_k", "rule_a", "rule_b", "lr", "seed", "optimizer"))


def grade(step: Step, picked: int | None, lab, train) -> tuple[bool | None, str]:
    """``(whether the pick is right, or None when it cannot be told yet, what the page says)``: right or not
    at the step's own settings (the ones its question names), the number why, and the same number at the
    current settings when the learner has moved them ("Now try")."""
    if picked is None:
        return None, "Pick an answer to see what the numbers say."
    _, now = answer(step, lab, train)
    if on_the_learners_runs(step):
        if not _runs_are_the_steps(step, train):
            return None, (f"You picked “{step.choices[picked]}”. The question is about the step's own runs; yours "
                          f"now have other settings (open this step again from the list to get them back). {now}")
        right, sentence = answer(step, lab, train)
    else:
        right, sentence = answer(step, *step_state(step))
    if right is None:
        return None, f"You picked “{step.choices[picked]}”. {step.waiting} {sentence}".strip()
    verdict = "Right." if picked == right else f"Not quite: the numbers say “{step.choices[right]}”."
    moved = f" Now, at your settings: {now}" if now and now != sentence else ""
    return picked == right, f"{verdict} {sentence}{moved}"


def feedback(step: Step, picked: int | None, lab, train) -> str:
    """What the page says once the learner has picked a choice (:func:`grade`'s text)."""
    return grade(step, picked, lab, train)[1]


#: The steps whose measured numbers the recap's answer states: q·k's spread against d_k, the top weight at a large
#: spread, the queries a saturated softmax starves (``STEPS`` by key).
WHY_STEPS = ("variance", "softmax", "gradients")


def why() -> Claim | None:
    """The tour's answer in one paragraph, with the numbers steps 2 to 4 measured at their own settings (None while
    one is not known)."""
    values = {}
    for key in WHY_STEPS:
        (step,) = [s for s in STEPS if s.key == key]
        value = step.measure(*step_state(step))[0]
        if value is None:
            return None
        values[key] = value
    return Claim("Why attention divides by √d_k: q·k adds up d_k products, so its spread grows like √d_k ({growth}× "
                 "from d_k = 16 to 256 in step 2). A softmax fed widely spread logits gives almost all of a row's weight "
                 "to one key ({top} at spread 8, step 3), and such a row passes almost no gradient back ({starved} of "
                 "the queries starved at d_k = 1024, step 4). Divided by √d_k, q·k of independent q and k keeps the same "
                 "spread at every width, so the softmax stays where it can learn.",
                 growth=as_fmt(values["variance"]), top=as_pct(values["softmax"]), starved=as_pct(values["gradients"]))


def recap(picks: dict, lab, train) -> list[str]:
    """One line per step: what the learner predicted (if anything), whether the numbers agree, and the number
    measured at the step's own settings (the training step: the learner's own runs)."""
    lines = []
    for i, step in enumerate(STEPS, 1):
        picked = picks.get(i)
        sentence = answer(step, *((lab, train) if on_the_learners_runs(step) else step_state(step)))[1]
        if picked is None:
            said = "no prediction."
        else:
            right = grade(step, picked, lab, train)[0]
            said = f"you predicted “{step.choices[picked]}”" + {True: " ✓.", False: " ✗.", None: "."}[right]
        lines.append(f"{i}. {step.title}: {said} {sentence}".strip())
    return lines


#: The feedback a phone shows at once: about 3 lines of a 412 px phone at the card's 15 px (about 50
#: characters a line); the rest of the sentence sits behind "details".
FEEDBACK_CHARS = 150
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z“(])")


def split_feedback(text: str, limit: int = FEEDBACK_CHARS) -> tuple[str, str]:
    """``(what is shown, what waits behind "details")``: the verdict with the measured sentence after it, then
    whole sentences while they fit ``limit``. A measured sentence that makes the whole longer is cut at least
    40 characters into it, outside any parenthesis, where the rest still reads on its own: before its first
    parenthesis, else at a "; ", else at a ", " (the last within ``limit``, or the first after it). A sentence
    with none of these is shown whole: a fourth line is better than a number cut off its subject."""
    parts = _SENTENCE_END.split(text.strip())
    head, i, start = parts[0], 1, 0
    if len(head) <= 60 and len(parts) > 1:      # a verdict ("Right.", "Not quite: ...") takes its number with it
        head, i, start = f"{head} {parts[1]}", 2, len(head) + 1
    while i < len(parts) and len(head) + 1 + len(parts[i]) <= limit:
        head, i = f"{head} {parts[i]}", i + 1
    rest = " ".join(parts[i:])
    if len(head) <= limit:
        return head, rest
    depth, outside = 0, []
    for k, c in enumerate(head):
        outside.append(depth == 0)
        depth += (c == "(") - (c == ")")
    for mark in (" (", "; ", ", "):
        at = [k for k in range(start + 40, len(head) - len(mark)) if head.startswith(mark, k) and outside[k]]
        if not at:
            continue
        within = [k for k in at if k <= limit]
        cut = at[0] if mark == " (" else (within[-1] if within else at[0])
        tail = head[cut + len(mark):] if mark != " (" else head[cut + 1:]
        tail = "…" + tail if mark == ", " else (tail[0].upper() + tail[1:] if mark == "; " else tail)
        return head[:cut].rstrip(",:") + ".", f"{tail} {rest}".strip()
    return head, rest
