"""Grading the tour's predictions and the self-check: each at the state its link opens (computed once per
step and shared, read only), the training step on the learner's own runs, and the last step's recap.

The steps themselves are data in ``web/tour.py``; grading needs a page state and the link parser, which
import the steps, so it lives here, above them.
"""
from __future__ import annotations

from urllib.parse import urlencode

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
