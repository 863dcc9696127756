"""Views without a browser: what they do with their session."""
from pathlib import Path

import panel as pn
import param
from bokeh.document import Document

from web.state import LabState
from web.training_state import TrainingState
from web.views.training import Training

ROOT = Path(__file__).resolve().parents[2]


def test_closing_the_tab_stops_training():
    """Play registers a session-destroyed callback; when the session ends the runs stop and the periodic
    callback is gone (under `panel serve` a closed tab kept a core busy for ~20 s)."""
    doc = Document()
    with pn.io.server.set_curdoc(doc):
        view = Training(train=TrainingState(LabState(), d_k=64))
        view.train.running = True
        assert view._callback is not None
        callbacks = list(doc.session_destroyed_callbacks)
        assert len(callbacks) == 1
        callbacks[0](None)
    assert view.train.running is False and view._callback is None


def test_every_rule_has_its_own_colour_and_an_unknown_rule_falls_back():
    """Each rule of sdpa_core.RULES has a distinct colour in web/theme.py (adding a rule means adding its
    colour) and a dash pattern, its own or dash-dot; a rule without a colour is drawn grey rather than
    raising a KeyError. (tests/web/test_a_new_rule.py runs this in its copy with one rule more.)"""
    from bokeh.core.enums import DashPattern

    import sdpa_core as sc
    from web.theme import RULE_COLORS, RULE_DASH, THEORY_COLOR
    from web.views.common import rule_color, rule_dash
    assert set(sc.RULES) <= set(RULE_COLORS) and set(RULE_DASH) <= set(RULE_COLORS)
    assert all(rule_dash(r) in DashPattern for r in sc.RULES)
    assert len({RULE_COLORS[r] for r in sc.RULES}) == len(sc.RULES)
    assert rule_color("not-a-rule") == THEORY_COLOR and rule_dash("not-a-rule") == "dashdot"


def test_showing_the_views_again_and_again_adds_nothing_to_the_shared_state():
    """Three rounds through every view leave the state's watchers and the document's models as after the
    first (each showing used to lay the view out again, with new widgets watching the state: +8 watchers
    and about +260 models in the browser per round)."""
    from web.options import VIEWS
    from web.page import Page
    page = Page()
    doc = Document()
    page.template().server_doc(doc)

    def count():
        watchers = page.lab.param.watchers
        return sum(len(ws) for d in watchers.values() for ws in d.values()), len(doc.models)

    rounds = []
    for _ in range(3):
        for view in VIEWS:
            page.lab.view = view
        rounds.append(count())
    assert rounds[0] == rounds[1] == rounds[2], rounds


def test_the_sharpness_section_renders_and_follows_the_runs():
    """Train it's section "Saturated at initialisation, or sharp after learning?": laid out in a Bokeh document
    with its question, two figures of four marks (runs A and B, step 0 and now) beside their controls and the
    headline; a step moves the "now" marks and keeps the step-0 ones; while playing it measures at most every
    REFRESH_EVERY steps; "whole batch" shows the batch's gradient; a reset measures again."""
    from web.views.sharpness import FLOOR, REFRESH_EVERY
    doc = Document()
    with pn.io.server.set_curdoc(doc):
        view = Training(train=TrainingState(LabState(), d_k=64))
        view.__panel__().server_doc(doc)
        sharp = view.sharpness
        html = " ".join(t for m in doc.models for t in [getattr(m, "text", None)] if isinstance(t, str))
        assert "Saturated at initialisation, or sharp after learning?" in html
        assert "At step 0 run A is" in sharp.summary.object and "Dehghani et al." in html
        ids = {m.id for m in doc.models}
        assert sharp.entropy_fig.id in ids and sharp.gradient_fig.id in ids
        data = sharp.source.data
        assert data["x"] == [("run A", "step 0"), ("run A", "now"), ("run B", "step 0"), ("run B", "now")]
        assert data["entropy"][0] == data["entropy"][1] and data["q"][2] == data["q"][3]
        before = dict(data)
        view._advance(10)
        data = sharp.source.data
        assert data["entropy"][0] == before["entropy"][0] and data["entropy"][1] != before["entropy"][1]
        assert "at step 10" in sharp.summary.object and min(data["q"] + data["v"]) >= FLOOR
        measured = sharp._measured_at
        view.train.running = True
        view._advance(None)
        assert sharp._measured_at == measured < view.train.steps_done < measured + REFRESH_EVERY
        view.train.running = False   # a pause measures at once
        assert sharp._measured_at == view.train.steps_done
        sharp.gradient = "batch"
        s = view.train.sharpness()["a"]["initial"]["grad_norms"]
        assert sharp.source.data["q"][0] == max(s["Wq"], FLOOR) and "Whole batch" in sharp.gradient_fig.title.text
        view.train.seed = 3
        assert sharp.source.data["entropy"][0] == sharp.source.data["entropy"][1] and "At step 0" in sharp.summary.object


def test_every_view_in_the_registry_has_its_module_and_every_module_its_entry():
    """A view is registered once (web/options.py VIEW_REGISTRY): its module web/views/<key>.py holds the class
    named there, a param.Parameterized that lays itself out; a module of web/views that no other imports is a
    registered view (else nothing would show it)."""
    from web.options import VIEW_REGISTRY
    from web.page import view_class
    for name in VIEW_REGISTRY:
        cls = view_class(name)
        assert issubclass(cls, param.Parameterized) and callable(cls.__panel__), name
    files = {p.stem: p.read_text() for p in (ROOT / "web" / "views").glob("*.py")}
    parts = {name for name in files if any(f"from .{name} import" in text for text in files.values())}
    assert set(files) - parts - {"__init__"} <= set(VIEW_REGISTRY) <= set(files)


def test_every_view_but_the_tour_has_its_question_and_shows_it():
    """Each view's <h2> comes from one registry (web/options.py VIEW_HEADINGS), which the first-paint browser
    test reads too: every view but the tour (whose steps have titles) has one, and its module shows it."""
    from web.options import VIEW_HEADINGS, VIEWS
    assert set(VIEW_HEADINGS) == set(VIEWS) - {"tour"}
    for name in VIEW_HEADINGS:
        assert f'heading(VIEW_HEADINGS["{name}"])' in (ROOT / "web" / "views" / f"{name}.py").read_text(), name
