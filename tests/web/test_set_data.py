"""set_data: a figure's table changes to exactly the new data, and a notch sends only the columns that changed."""
import numpy as np
import pytest
from bokeh.document import Document
from bokeh.document.events import ColumnDataChangedEvent
from bokeh.models import ColumnDataSource

from web.views.common import set_data


def _source(data):
    source = ColumnDataSource(data)
    doc = Document()
    doc.add_root(source)
    events = []
    doc.on_change(events.append)
    return source, events


def _equal(a, b):
    assert set(a) == set(b)
    for c in a:
        assert list(np.asarray(a[c])) == list(np.asarray(b[c])), c


def test_a_notch_sends_only_the_numbers():
    """Same labels, new numbers: one ColumnDataChanged event naming the numeric columns only."""
    source, events = _source({"rank": np.arange(4.0), "norm": np.ones(4), "rule": ["1/√d_k"] * 4})
    new = {"rank": np.arange(4.0) / 4, "norm": np.full(4, 2.0), "rule": ["1/√d_k"] * 4}
    set_data(source, new)
    _equal(source.data, new)
    assert len(events) == 1 and isinstance(events[0], ColumnDataChangedEvent)
    assert sorted(events[0].cols) == ["norm", "rank"]


@pytest.mark.parametrize("new", [
    {"rank": np.arange(6.0), "norm": np.ones(6), "rule": ["1/√d_k"] * 6},   # n moved: every column
    {"rank": np.arange(4.0), "norm": np.ones(4), "rule": ["none"] * 4},     # a label changed
    {"rank": [], "norm": [], "rule": []},                                   # a rule no longer drawn
    {"rank": np.arange(4.0), "norm": np.ones(4)},                           # other columns
])
def test_any_other_change_replaces_the_table(new):
    source, events = _source({"rank": np.arange(4.0), "norm": np.zeros(4), "rule": ["1/√d_k"] * 4})
    set_data(source, new)
    _equal(source.data, new)
    assert len(events) == 1 and isinstance(events[0], ColumnDataChangedEvent)
    assert events[0].cols is None   # every column


def test_nothing_changed_sends_nothing():
    source, events = _source({"rank": [], "norm": [], "rule": []})
    set_data(source, {"rank": [], "norm": [], "rule": []})
    assert events == []
