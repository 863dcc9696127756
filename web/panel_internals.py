"""Panel's and Bokeh's internals the page relies on, in one module: a Panel or Bokeh upgrade touches this file
(and the worker's own, build/templates/sdpa_worker.py), not the views. build/private_api.py lists each name used
here and checks it against the installed versions at build time; tests/build/test_private_api.py fails if another
module of web/ reaches into one.
"""
from __future__ import annotations


def stop_location_parser(location) -> None:
    """Panel parses every new address into typed values for ``Location.sync()``, which this page does not use, and
    that parser raises on a 4301-digit value. Its own guard flag (``Location._syncing``, read by
    ``Location._update_synced``) turns it off; the page parses the address itself, bounded (web.urlstate)."""
    location._syncing = True


def server_request(session_context):
    """The server's request behind a session (Bokeh's request proxy keeps it as ``_request``), or None: no server
    request in Pyodide or in tests."""
    proxy = getattr(session_context, "request", None)
    return getattr(proxy, "_request", None)


def rendered_models(viewable) -> list:
    """The Bokeh models a Panel object (a pane, the Location) has rendered, one per place it is shown (Panel's
    ``Renderable._models``); none before it is rendered."""
    return [model for model, _ in list(getattr(viewable, "_models", {}).values())]


def escaped_html(pane, text: str) -> str:
    """``text`` as the pane would send it to its models: escaped and sanitized as Panel does for the pane
    (``HTML._transform_object``)."""
    return pane._transform_object(text)["object"]
