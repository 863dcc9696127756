"""While the reader reads a tour step, the page prepares the next one (web/views/tour.py prepare_ahead): the
next step's view is laid out, and this step and the next are graded at their own settings, so that "Next
step" only shows what is ready, and the last step's recap grades nothing afresh at its click."""
from __future__ import annotations

import gc

from web import grading
from web.page import Page
from web.tour import STEPS, on_the_learners_runs
from web.views.tour import Tour


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
