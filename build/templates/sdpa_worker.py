"""The worker's Python: what templates/worker.js runs in Pyodide, step by step.

worker.js starts Pyodide and installs the packages, then calls these in order:

1. ``start(cdn_root)``: Panel's asset URLs point at the site's own copy, import-time work that only
   documentation reads is skipped, and Panel and Bokeh are imported.
2. ``build_app(search, first_id)``: the app (web/app.py) is built for the visitor's link, its models
   numbered from ``first_id`` as the pre-render numbered them (build/prerender.py), so the page can keep
   the views it has drawn. A memory snapshot is taken after this step; a restored one calls
   ``follow(search)`` to follow the visitor's link instead.
3. ``write()``: the document as JSON for the page to draw.
4. ``link(send)``: once the page has drawn it, changes go both ways. ``link`` returns the function the
   worker calls with each patch from the page; Python's answer goes to ``send(patch, buffers, done)``.

Around a memory snapshot (templates/snapshot.js): ``before_snapshot()`` just before it is taken, and
``after_restore()`` first thing after a restore (and on the instance that took it, to go on).

It ships in the site's package archive (build/wheels.py) and imports only the standard library at the
top: ``start`` must run before Panel and Bokeh are imported. Every private Panel, Bokeh and param name
used here is listed in build/private_api.py. tests/build/test_sdpa_worker.py runs it in CPython.
"""
from __future__ import annotations

import asyncio
import functools
import os
import sys


def start(cdn_root: str) -> None:
    """Import Panel and Bokeh, their assets at ``cdn_root``, without what only documentation reads."""
    os.environ["PANEL_CDN_ROOT"] = cdn_root      # read when panel.io.resources is imported
    # param writes every Parameterized class's signature and parameter table into its docstring, and
    # Bokeh gives each of ~450 models an __init__ signature built from every property's default
    # (Model.__init_subclass__) and reads its docs example. Help text and signatures are never shown;
    # build/private_api.py checks that Bokeh's hook does nothing else.
    import param.parameterized as pp
    from bokeh.model import model as bm

    if "bokeh.models" in sys.modules:
        raise RuntimeError("sdpa_worker.start: bokeh.models was imported before its docs could be skipped")
    pp.docstring_signature = pp.docstring_describe_params = False
    base = bm.Model
    bm.Model.__init_subclass__ = classmethod(lambda cls: super(base, cls).__init_subclass__())
    merge_overridden_defaults_once()
    import bokeh  # noqa: F401
    import panel  # noqa: F401
    ignore_own_held_changes()


def ignore_own_held_changes() -> None:
    """Panel never takes a change Python made to a widget's model for the page's, as under ``panel serve``.

    Panel tells its own model changes from the page's by the names it lists while it sets them
    (``Syncable._changing``). A change made inside ``pn.io.hold()`` reaches Panel's model callback
    (``Syncable._server_change``) only when the document is unheld, after that list is gone. Under
    ``panel serve`` a live session sends such changes to the browser and drops their Python callbacks
    (``panel.io.document.unlocked``); in the worker there is no session, so each came back to Panel as if the
    page had made it: harmless for a value, but a radio group's new ``labels`` became its ``options`` (a
    list of the labels), and the reader's next pick was a label, not a value (the tour's ``TypeError`` on
    the step after "Next step", issue 55). Here, when a document is unheld, the Python callbacks of the
    changes Python made (any setter but the page's ``"js"``) run without Panel's ``_server_change``; every
    other Python callback (a figure relabelled when its title changes) still runs."""
    from bokeh.document.callbacks import DocumentCallbackManager
    from panel.reactive import Syncable

    server_change, unhold = Syncable._server_change, DocumentCallbackManager.unhold
    own = [0]       # > 0 while the callbacks of Python's own held changes run

    def _server_change(self, doc, ref, subpath, attr, old, new):    # Bokeh checks the (attr, old, new) it is left
        if not own[0]:
            server_change(self, doc, ref, subpath, attr, old, new)

    def quiet(invoker):
        def invoke():
            own[0] += 1
            try:
                invoker()
            finally:
                own[0] -= 1
        return invoke

    def unhold_without_echoes(self) -> None:
        for event in self._held_events:
            if getattr(event, "callback_invoker", None) is not None and getattr(event, "setter", None) != "js":
                event.callback_invoker = quiet(event.callback_invoker)
        unhold(self)

    Syncable._server_change = _server_change
    DocumentCallbackManager.unhold = unhold_without_echoes


def merge_overridden_defaults_once() -> None:
    """Bokeh merges a class's overridden property defaults over its whole MRO each time it evaluates one
    property's default (HasProps._overridden_defaults, from Property.themed_default): ~15,000 merges in the
    worker's profile of tour step 4 (its view's models made and sent, then the next step's view made in the
    reading time), a fifth of the time Bokeh spent on defaults there. A class's overrides are fixed once it
    is made, so the merge is kept per class.
    build/private_api.py checks that Bokeh's method is still that merge, and its callers only read it."""
    from bokeh.core.has_props import HasProps

    merge = HasProps._overridden_defaults.__func__
    merged: dict = {}

    def overridden_defaults(cls):
        found = merged.get(cls)
        if found is None:
            found = merged[cls] = merge(cls)
        return found

    HasProps._overridden_defaults = classmethod(overridden_defaults)


def build_app(search: str, first_id: int) -> None:
    """Build the app for the link ``search`` (as under ``panel serve web/app.py``), its models numbered
    from ``first_id``, and leave the document held with every change so far applied."""
    import web
    from bokeh.settings import settings as bk_settings
    import bokeh.util.serialization as bk_serialization
    from panel.io.pyodide import init_doc
    from panel.io.state import state

    web_dir = os.path.dirname(web.__file__)
    if web_dir not in sys.path:
        sys.path.insert(0, web_dir)     # as under `panel serve web/app.py`: sibling modules import by name
    os.environ["SDPA_LAB_SEARCH"] = search or ""      # web/page.py SEARCH_ENV: built for the link
    init_doc()
    # No busy indicator in the site (web/page.py): Panel's bookkeeping for one would still run on every change.
    state._add_busy_event = state._remove_busy_event = lambda *args, **kwargs: None
    bk_settings.simple_ids.set_value(True)
    bk_serialization._simple_id = first_id
    path = os.path.join(web_dir, "app.py")
    namespace = {"__name__": "bokeh_app_sdpa_lab", "__file__": path}
    with open(path) as f:     # web/app.py builds it inside one freeze of the document's model index
        exec(compile(f.read(), path, "exec"), namespace)
    # init_doc() held every change made while the app was built. Replayed after the page has rendered
    # the serialized document, they would name models the app created and dropped again (Bokeh's
    # "reference <id> isn't known"). Run their Python callbacks now, before serializing, so the
    # document JSON is the whole truth; hold again to collect what happens until the page links.
    doc = state.curdoc
    template = state._templates.get(doc)
    if template is not None and doc not in template._documents:
        template.server_doc(title=template.title, location=True, doc=doc)
    _settle(doc)


def follow(search: str) -> None:
    """A restored Python holds the app as built for no link: follow the visitor's link before the
    document is written, so the first live draw is the linked view."""
    from panel.io.state import state

    doc = state.curdoc
    state._templates[doc].page.apply_search(search)
    _settle(doc)


def _settle(doc) -> None:
    """Apply the held changes now, and hold again until the page links."""
    doc.unhold()
    doc.hold()


async def write() -> list:
    """The document as JSON for the page: [docs_json, render_items, root_ids]."""
    from panel.io.pyodide import write_doc

    return list(await write_doc())


class Outbox:
    """Panel's own link (``panel.io.pyodide._link_docs_worker``) sends one message per Bokeh change,
    about nine per slider step, each serialized on its own. This collects a task's changes, combined as
    a held document combines them, and sends them as one patch: at the end of the page's patch
    (``flush(done=True)``), else on the next tick (changes made by timers, such as the training
    animation). ``send(patch, buffers, done)``: ``done`` says the page's patch is answered; with nothing
    changed the answer is ``send(None, None, True)``."""

    def __init__(self, doc, send):
        # imported once here, not on every change (about nine per slider step): Panel is loaded by now
        import js
        import pyodide
        from bokeh.document.events import DocumentPatchedEvent
        from panel.io import pyodide as pp

        self.doc, self.send, self.events, self.scheduled = doc, send, [], False
        self._js, self._to_js, self._pp, self._patched = js, pyodide.ffi.to_js, pp, DocumentPatchedEvent

    def __call__(self, event) -> None:
        if getattr(event, "setter", None) == "js" or not isinstance(event, self._patched):
            return          # the page's own change, or nothing the page draws
        if not (self.events and self.events[-1].combine(event)):
            self.events.append(event)
        if not self.scheduled:
            self.scheduled = True
            asyncio.get_event_loop().call_soon(self.flush)

    def flush(self, done: bool = False) -> None:
        self.scheduled = False
        if not self.events:
            if done:
                self.send(None, None, True)
            return
        events, self.events = self.events, []
        patch, buffers = self._pp._process_document_events(self.doc, events)
        js = self._js
        self.send(self._to_js(patch, dict_converter=self._pp._dict_converter),
                  js.Map.new(js.Object.entries(self._to_js(buffers))), done)


def link(send):
    """Link the held document to the page, as ``panel.io.pyodide._link_docs_worker`` does but through
    an Outbox to ``send``; the function returned applies one patch from the page and answers it."""
    from bokeh.events import DocumentReady
    from panel.io import pyodide as pp
    from panel.io.state import state
    from web.loop import go_live

    doc = state.curdoc
    outbox = Outbox(doc, send)

    def apply(patch) -> None:
        # what Python changed on its own since its last patch goes first: Bokeh's apply_json_patch marks every
        # model of the document as known to the page, and models a timer added (a section laid out on the
        # loop's next turn) would then go as bare references the page cannot resolve
        outbox.flush()
        try:
            doc.apply_json_patch(pp._convert_json_patch(patch), setter="js")
        finally:
            outbox.flush(done=True)

    doc.on_change(outbox)
    doc.unhold()
    doc.on_event("document_ready", functools.partial(state._schedule_on_load, doc))
    doc.callbacks.trigger_event(DocumentReady())
    outbox.flush()
    go_live(doc)        # from now on a move may answer in two patches (web/loop.py next_turn)
    return apply


def set_location(location: str) -> None:
    """The page's ``window.location`` (as JSON) into Panel's Location, as ``panel.io.pyodide.sync_location``."""
    import json

    from panel.io.state import state
    from panel.util import edit_readonly

    if state.location:
        data = json.loads(location)
        with edit_readonly(state.location):
            state.location.param.update({k: v for k, v in data.items() if k in state.location.param})


#: The JS of Panel's ``_dict_converter`` (undefined -> null, pyodide#3968), as panel/io/pyodide.py makes it
#: with run_js: made again after a restore. tests/build/test_sdpa_worker.py checks it against the installed
#: Panel's source, which is the Panel the site ships.
DICT_CONVERTER_JS = """
((entries) => {
  for (let entry of entries) {
    if (entry[1] === undefined) {
      entry[1] = null;
    }
  }
  return Object.fromEntries(entries);
})
"""


async def before_snapshot() -> str:
    """Leave nothing a restore could not make again, and say what would be lost: the asyncio tasks still
    pending (their timers do not survive a snapshot), as a JSON list. Panel's ``_dict_converter`` is a JS
    function Python holds with no path from globalThis: it is dropped here, and ``after_restore`` makes it
    again."""
    import gc
    import json

    for _ in range(3):
        await asyncio.sleep(0)
    from panel.io import pyodide as panel_pyodide

    panel_pyodide._dict_converter = None
    del panel_pyodide
    gc.collect()
    pending = (t for t in asyncio.all_tasks() if not t.done() and t is not asyncio.current_task())
    return json.dumps(sorted(repr(t.get_coro()) for t in pending))


def after_restore() -> None:
    """After a restore: ``sys.path`` as before (loadPyodide inserts "" again) and Panel's ``_dict_converter``
    made again (``DICT_CONVERTER_JS``)."""
    import pyodide.code
    from panel.io import pyodide as panel_pyodide

    while sys.path.count("") > 1:
        sys.path.remove("")
    panel_pyodide._dict_converter = pyodide.code.run_js(DICT_CONVERTER_JS)
