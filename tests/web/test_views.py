"""Views without a browser: what they do with their session."""
import panel as pn
from bokeh.document import Document

from web.state import LabState, TrainingState
from web.views.training import Training


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
