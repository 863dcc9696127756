"""one_model_walk: Bokeh walks the document's models once for a block of layout changes, even when it fails."""
import panel as pn
import pytest
from bokeh.document import Document
from bokeh.models import Column, Div

from web.views.common import one_model_walk


@pytest.fixture
def doc(monkeypatch):
    doc = Document()
    doc.add_root(Column(children=[Div(text="a")]))
    walks = []
    real = doc.models.recompute
    monkeypatch.setattr(doc.models, "recompute", lambda: (walks.append(1), real())[1])
    pn.state.curdoc = doc
    yield doc, walks
    pn.state.curdoc = None


def _swap(doc, times):
    root = doc.roots[0]
    for i in range(times):
        root.children = [Div(text=str(i))]


def test_without_it_every_swap_walks(doc):
    doc, walks = doc
    _swap(doc, 3)
    assert len(walks) == 3


def test_a_block_of_swaps_walks_once_and_finds_the_new_models(doc):
    doc, walks = doc
    with one_model_walk():
        _swap(doc, 3)
        assert walks == []
    assert len(walks) == 1
    assert doc.get_model_by_id(doc.roots[0].children[0].id) is doc.roots[0].children[0]


def test_a_failing_block_still_walks_and_leaves_nothing_frozen(doc):
    doc, walks = doc
    with pytest.raises(RuntimeError):
        with one_model_walk():
            _swap(doc, 2)
            raise RuntimeError("a view failed to build")
    assert len(walks) == 1
    _swap(doc, 1)   # not frozen any more: this swap walks at once
    assert len(walks) == 2


def test_without_a_document_it_does_nothing():
    pn.state.curdoc = None
    with one_model_walk():
        pass
