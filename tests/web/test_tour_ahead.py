"""While the reader reads a tour step, the page prepares the next one (web/views/tour.py prepare_ahead): the
next step's view is laid out, and this step and the next are graded at their own settings, so that "Next
step" only shows what is ready, and the last step's recap grades nothing afresh at its click."""
from __future__ import annotations

import gc
import math

import numpy as np

from web import grading
from web.page import Page
from web.results import RESULTS
from web.state import LabState
from web.tour import STEPS, on_the_learners_runs
from web.training_state import TrainingState
from web.urlstate import apply_query, step_query
from web.views.tour import Tour

#: The parameters each result sets, read from a computation (a result names none of them itself).
RESULT_PARAMS = {name: tuple(r.compute(LabState(view=r.views[0]))) for name, r in RESULTS.items()}


def test_a_walk_with_reading_time_leaves_every_click_only_showing(monkeypatch):
    monkeypatch.setattr(grading, "_STEP_STATES", {})
    page = Page(search="?view=tour&step=1")
    page.view("tour")
    tour = next(o for o in gc.get_objects() if isinstance(o, Tour) and o.lab is page.lab)
    for i in range(1, len(STEPS)):
        tour.prepare_ahead(i)                       # the reading time of step i
        built, graded = set(page._views), set(grading._STEP_STATES)
        assert STEPS[i].view in built
        assert {s.key for s in STEPS[:i + 1] if not on_the_learners_runs(s)} <= graded
        tour.go(i + 1)
        assert set(page._views) == built, f"step {i + 1} built a view at its click"
        assert set(grading._STEP_STATES) == graded, f"step {i + 1} graded a step at its click"
    assert page.lab.step == len(STEPS) and tour.recap.object   # the recap is there, from the prepared states


def _same(a, b) -> bool:
    """Deep equality of results: dicts, sequences, numpy arrays (NaN equal to NaN), dataclasses, scalars."""
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=np.asarray(a).dtype.kind == "f")
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if hasattr(a, "__dataclass_fields__"):
        return type(a) is type(b) and all(_same(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def test_next_step_takes_the_prepared_results_and_they_are_what_the_step_computes(monkeypatch):
    """After the reading time, "Next step" computes none of its view's results (none of their timings moves),
    and what it took is what a fresh state at the step's link computes."""
    monkeypatch.setattr(grading, "_STEP_STATES", {})
    page = Page(search="?view=tour&step=1")
    page.view("tour")
    tour = next(o for o in gc.get_objects() if isinstance(o, Tour) and o.lab is page.lab)
    lab = page.lab
    for i in range(1, len(STEPS)):
        tour.prepare_ahead(i)
        timings = dict(lab.timings)
        tour.go(i + 1)
        step = STEPS[i]
        shown = [name for name, r in RESULTS.items() if step.view in r.views]
        if on_the_learners_runs(step):
            continue
        assert lab.timings == timings, f"step {i + 1} computed {set(lab.timings.items()) - set(timings.items())}"
        fresh = LabState()
        apply_query(step_query(i + 1), fresh, TrainingState(fresh))
        for name in shown:
            for param_name in RESULT_PARAMS[name]:
                assert _same(getattr(lab, param_name), getattr(fresh, param_name)), (i + 1, param_name)
