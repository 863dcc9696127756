"""A new tour step opens at its top: one document-level script (web/views/tour.py STEP_SCROLL_JS) scrolls to
the step's card when a control that opens another step is clicked or picked. Not Panel's js_on_click or
jscallback: each of those is a link Panel looks for in the whole document at every layout change. The
scroll itself is checked in a browser, on a phone (tests/web/test_ui_tour_predict.py)."""
from __future__ import annotations

import gc

import panel as pn
from bokeh.document import Document
from panel.links import Callback, Link
from panel.viewable import Viewable

from web.page import Page, create_app
from web.views.tour import STEP_CARD, STEP_MOVER, STEP_SCROLL_JS, Tour


def _find_tour(page: Page) -> Tour:
    """The tour view object behind the page's tour layout (the page keeps only the layout)."""
    page.view("tour")
    return next(o for o in gc.get_objects() if isinstance(o, Tour) and o.lab is page.lab)


def test_the_card_and_every_step_control_carry_the_scripts_classes():
    page = Page(search="?view=tour&step=2")
    tour = _find_tour(page)
    assert STEP_CARD in tour.card.css_classes
    for widget in (tour.prev, tour.next, tour.jump):
        assert STEP_MOVER in widget.css_classes, widget


def test_no_panel_link_lives_in_the_pages_content():
    """Panel scans the whole document for links at every layout change of a root that holds one."""
    page = Page(search="?view=tour&step=4")
    page.template()
    inside = {id(v) for v in page.content.select(Viewable)}
    sources = [src for registry in (Callback.registry, Link.registry) for src in registry]
    assert not [s for s in sources if id(s) in inside]


def test_the_page_installs_the_script_on_its_document():
    doc = Document()
    pn.state.curdoc = doc
    try:
        create_app().server_doc(doc)
        ready = dict(doc.to_json().content["callbacks"]["entries"])["document_ready"]
    finally:
        pn.state.curdoc = None
    codes = [cb["attributes"]["code"] for cb in ready]
    assert sum("__sdpaStepScroll" in c for c in codes) == 1
    script = next(c for c in codes if "__sdpaStepScroll" in c)
    assert f'"{STEP_CARD}"' in script and f'"{STEP_MOVER}"' in script and "%(" not in script
    assert script.strip().startswith(STEP_SCROLL_JS.strip()[:30])
