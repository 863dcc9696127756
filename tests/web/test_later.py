"""What lies below a view's first screen reaches a live page on the loop's next turn (web/loop.py
``next_turn``): the results marked ``later`` in web/results.py, and the sections in a ``Later``
(web/views/common.py). Here the page's loop is a queue the test runs, and a document marked live as the
worker's link marks it; everywhere else (a boot, a pre-render, a test without a page) nothing waits."""
from __future__ import annotations

import pickle

import panel as pn
import pytest
from bokeh.document import Document
from panel.io.state import set_curdoc

from web import loop
from web.options import STATIC_SITE_ENV
from web.page import Page
from web.results import RESULTS
from web.state import LabState
from web.views.common import Later, lay_out_later

LATER = [name for name, r in RESULTS.items() if r.later]


@pytest.fixture
def turns(monkeypatch):
    """The page's loop as a list of callbacks; ``run()`` runs them as its next turn would."""
    queue: list = []
    monkeypatch.setattr(loop, "call_later", lambda ms, fn: queue.append(fn) or (lambda: None))
    monkeypatch.delenv(STATIC_SITE_ENV, raising=False)

    def run() -> int:
        done = 0
        while queue:
            queue.pop(0)()
            done += 1
        return done
    return queue, run


@pytest.fixture
def live_doc():
    doc = Document()
    with set_curdoc(doc):
        loop.go_live(doc)
        yield doc


def test_a_later_result_is_shown_by_a_view_with_something_drawn_before_it():
    assert LATER                                     # the saturation view's length section, at least
    for name in LATER:
        views = RESULTS[name].views
        assert any(not r.later and set(r.views) & set(views) for r in RESULTS.values()), name


def test_on_a_live_page_a_move_computes_the_later_results_on_the_next_turn(turns, live_doc):
    queue, run = turns
    lab = LabState(view="saturation")
    run()
    before = {name: lab.computed(name)[0] for name in RESULTS if "saturation" in RESULTS[name].views}
    lab.d_k = 256
    for name, key in before.items():
        if name in LATER:
            assert lab.computed(name)[0] == key, f"{name} was computed at the move"
        elif "d_k" in RESULTS[name].key.__code__.co_names:
            assert lab.computed(name)[0] != key, f"{name} waited"
    lab.d_k = 512                                    # a second move before the turn: one turn computes both
    assert len(queue) == 1
    assert run() == 1
    with set_curdoc(Document()):                      # a page not live: computed at once
        fresh = LabState(view="saturation", d_k=512)
    for name in LATER:
        assert lab.computed(name)[0] == fresh.computed(name)[0]
        assert pickle.dumps(lab.computed(name)[1]) == pickle.dumps(fresh.computed(name)[1])   # the same numbers


def test_off_a_live_page_nothing_waits(turns):
    queue, run = turns
    doc = Document()
    with set_curdoc(doc):                             # a document the worker has not linked yet (its boot)
        lab = LabState(view="saturation")
        lab.d_k = 256
    assert queue == []
    assert lab.computed("length")[0] == RESULTS["length"].key(lab)


def test_results_a_donor_holds_are_taken_at_once(turns, live_doc):
    queue, run = turns
    donor = LabState(view="saturation", d_k=128)
    run()
    lab = LabState(view="playground")
    with lab.results_from(donor):
        lab.param.update(view="saturation", d_k=128)
    assert queue == []
    assert lab.length is donor.length


def test_a_later_section_follows_on_the_next_turn_once(turns, live_doc):
    queue, run = turns
    inner = pn.pane.HTML("below", css_classes=["sdpa-answer"])
    section = Later(inner)
    layout = pn.Column(pn.pane.HTML("above"), section)
    lay_out_later(layout)
    assert section.objects == [] and len(queue) == 1
    assert inner in layout.select(pn.pane.HTML)           # the tour still finds what it hides and shows
    run()
    assert section.objects == [inner] and section.waiting == []
    lay_out_later(layout)                                 # shown again: it is on the page already
    assert queue == [] and section.objects == [inner]


def test_a_later_section_goes_as_it_is_off_a_live_page(turns):
    queue, _ = turns
    inner = pn.pane.HTML("below")
    section = Later(inner)
    with set_curdoc(Document()):
        lay_out_later(pn.Column(section))
    assert queue == [] and section.objects == [inner]


def test_a_view_switch_on_a_live_page_lays_the_saturation_sections_out_later(turns, live_doc):
    queue, run = turns
    page = Page(search="?view=playground")
    run()
    page.lab.view = "saturation"
    sections = page.view("saturation").select(Later)
    assert sections and all(s.objects == [] and s.waiting for s in sections)
    run()
    assert all(s.objects and not s.waiting for s in sections)
