"""When the page runs something later: in its own loop (the server session's callbacks under ``panel serve``,
the event loop in Pyodide), and never while the site's build draws a first paint.

``next_turn`` lets a change reach the reader in two patches: what is on the first screen at the end of the
reader's own move, what lies below it on the loop's next turn (its own patch). Only once the page is live
(:func:`go_live`): the document the worker writes at boot, and each pre-rendered first paint, hold
everything at once, so that the live document still matches the first paint it adopts.
"""
from __future__ import annotations

import asyncio
import os
import sys
import weakref

import panel as pn

from .options import STATIC_SITE_ENV

#: The documents whose page is live: drawn, linked, answering the reader (``go_live``).
_LIVE: weakref.WeakSet = weakref.WeakSet()


def prerendering() -> bool:
    """True while the site build draws the first paint (CPython), never in the live page."""
    return os.environ.get(STATIC_SITE_ENV) == "1" and sys.platform != "emscripten"


def go_live(doc=None) -> None:
    """Mark ``doc`` (default: the current document) live: the worker's Python calls it once the page has
    drawn and linked the document (build/templates/sdpa_worker.py ``link``), ``panel serve`` once the
    session has loaded (web/page.py)."""
    doc = doc if doc is not None else pn.state.curdoc
    if doc is not None and not prerendering():
        _LIVE.add(doc)


def live() -> bool:
    """Whether the current document's page is live (see :func:`go_live`)."""
    doc = pn.state.curdoc
    return doc is not None and doc in _LIVE


def call_later(ms: int, fn):
    """Run ``fn`` once, ``ms`` from now, in the page's own loop: the server session's timeout callback
    under ``panel serve``, the event loop in Pyodide. Returns a function that cancels it, or ``None`` where
    no loop runs or the build draws the first paint (a session callback takes a Bokeh id there, and the
    live page's ids would no longer match the first paint's). Not a one-shot periodic callback: in Pyodide
    Panel's runs its first call at once, before the link's document is written."""
    doc = pn.state.curdoc
    if sys.platform != "emscripten":
        if doc is None or doc.session_context is None or prerendering():
            return None
        handle = doc.add_timeout_callback(fn, ms)
        return lambda: doc.remove_timeout_callback(handle) if handle in doc.session_callbacks else None
    timer = asyncio.get_event_loop().call_later(ms / 1000, fn)
    return timer.cancel


def next_turn(fn) -> bool:
    """Run ``fn`` on the live page's next loop turn, after the changes made so far have gone out as a patch
    of their own, and return True; return False (``fn`` not scheduled: the caller runs it now) where the
    page is not live."""
    return live() and call_later(0, fn) is not None
