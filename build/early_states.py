"""The main control of a link's view before Python is live: its states, drawn at build time.

The first paint (html_paint.py) shows the link's view at once, but nothing on it moved until Python was
live (14 MB later). For the views in ``EARLY_VIEWS`` the build moves the view's main control (the view's
``MAIN_CONTROL``: the slider its figures answer to) through every position it has, at the view's other
defaults, in CPython, and writes the view as the HTML layer draws it at each one. The page
(templates/firstpaint.js sdpaEarlyControl) makes the layer's copy of that slider live: a move fetches the
position's file (a few KB gzipped) and swaps the view's figures and sentences, and the address follows.
When Python is live it takes over at the reader's value (boot.js: the address goes to Python first).

The states are the app's own, written by the same code the live page runs: nothing here computes a number.
Run inside ``python -m build.prerender`` (its process has the page imported as the build sees it).
"""
from __future__ import annotations

import html
import json
from urllib.parse import parse_qsl

#: The views whose main control answers before Python is live, and the step of a float slider's positions
#: there (the dial's s moves by 0.1 once live; before, by 1: 31 states instead of 301).
EARLY_VIEWS = ("answer", "playground", "variance", "saturation", "dial")
FLOAT_STEP = 1.0
#: The layer's CSS travels with the page's own layer; a state carries only its view's markup.
STYLE_END = "</style>"


def _sliders(layout) -> list:
    import panel as pn
    return list(layout.select(lambda o: isinstance(o, (pn.widgets.IntSlider, pn.widgets.FloatSlider))))


def main_slider(page, key: str, layout):
    """The slider of ``layout`` that the view's MAIN_CONTROL moves: the one whose value follows the
    parameter when it is set to each end of its range (read from the widgets, not from a list)."""
    from web.options import VIEW_REGISTRY
    import importlib
    module, cls = VIEW_REGISTRY[key]
    owner, name, (low, high) = getattr(importlib.import_module(f"web.views.{key}"), cls).MAIN_CONTROL
    target = page.lab if owner == "lab" else page.train
    start = getattr(target, name)
    before = {id(s): s.value for s in _sliders(layout)}
    setattr(target, name, high if start != high else low)
    moved = [s for s in _sliders(layout) if s.value != before[id(s)]]
    setattr(target, name, start)
    if len(moved) != 1:
        raise SystemExit(f"make site: early states: {key}'s {name} moves {len(moved)} sliders, not one")
    return moved[0]


def positions(slider) -> list:
    """Every value the slider takes: each notch of an integer slider (the page's choice sliders are one
    notch per choice); a float slider's range in FLOAT_STEP."""
    import panel as pn
    if isinstance(slider, pn.widgets.IntSlider):
        return list(range(int(slider.start), int(slider.end) + 1, int(slider.step or 1)))
    n = int(round((slider.end - slider.start) / FLOAT_STEP))
    return [round(slider.start + i * FLOAT_STEP, 6) for i in range(n + 1)]


def view_markup(layer_html: str) -> str:
    """The view's markup from a layer (html_paint.layer): its style block and end mark left out."""
    from .html_paint import END
    body = layer_html.split(STYLE_END, 1)[1] if layer_html.startswith("<style>") else layer_html
    return body.removesuffix(END)


def states(key: str) -> dict:
    """The view ``key`` at every position of its main control: ``{"label", "url_key", "positions", "shown",
    "query", "start", "html"}`` (query: the value the address writes for the key, or None at its default)."""
    from bokeh.document import Document
    from web.page import Page
    from web.urlstate import to_query
    from .html_paint import layer

    page = Page(f"?view={key}")
    page.lab.view = key
    layout = page.view(key)
    doc = Document()
    root = layout.get_root(doc)
    doc.add_root(root)
    slider = main_slider(page, key, layout)
    start = slider.value
    base = dict(parse_qsl(to_query(page.lab, page.train).lstrip("?")))
    out = {"label": str(slider.name), "positions": [], "shown": [], "query": [], "html": [], "start": start}
    url_keys = set()
    for value in positions(slider):
        slider.value = value
        query = dict(parse_qsl(to_query(page.lab, page.train).lstrip("?")))
        changed = {k for k in set(query) | set(base) if query.get(k) != base.get(k)}
        url_keys |= changed
        text = html.escape(json.dumps({"doc": doc.to_json(deferred=False)}))
        out["positions"].append(value)
        out["query"].append(query)
        out["html"].append(view_markup(layer(text, [root.id])))
        fmt = getattr(slider, "format", None)
        shown = fmt.args["options"][value] if fmt is not None and hasattr(fmt, "args") else f"{value:g}"
        out["shown"].append(str(shown))
    slider.value = start
    if len(url_keys) != 1:
        raise SystemExit(f"make site: early states: {key}'s main control writes {sorted(url_keys)} to the address, not one key")
    (url_key,) = url_keys
    out["url_key"] = url_key
    out["query"] = [q.get(url_key) for q in out["query"]]
    if f"sdpa-view-{key}" not in out["html"][0]:
        raise SystemExit(f"make site: early states: {key}'s markup does not carry its class sdpa-view-{key}")
    return out


def all_states() -> dict:
    return {key: states(key) for key in EARLY_VIEWS}
