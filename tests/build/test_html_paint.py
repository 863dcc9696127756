"""build/html_paint.py on small Bokeh documents written here: what each model becomes in the HTML first
paint, and render.deferred_scripts on Panel's page head. The built site's layers are checked in a
browser by tests/build/test_site_first_paint.py."""
from __future__ import annotations

import html
import json

import pytest

from sitebuild import build_module

html_paint = build_module("html_paint")
render = build_module("render")


def obj(id_, name, **attributes):
    return {"type": "object", "name": name, "id": id_, "attributes": attributes}


def docs_text(*roots) -> str:
    """A document's JSON as Panel's page carries it (HTML-escaped)."""
    return html.escape(json.dumps({"doc-1": {"version": "3.9.2", "title": "t", "roots": list(roots)}}))


def test_layouts_text_figures_and_controls():
    fmt = obj("f", "CustomJSTickFormatter", args={"type": "map", "entries": [["options", ["1", "64", "4096"]]]})
    title = obj("t", "Title", text="no scaling: weights")
    root = obj("r", "panel.models.layout.Column", sizing_mode="stretch_width", margin=[5, 10], children=[
        obj("h", "panel.models.markup.HTML", text=html.escape("<h2>Why?</h2><p class='sdpa-headline'>It <b>87%</b></p>"),
            stylesheets=[".sdpa-headline { font-size: 17px; }", ":host { display: block; }"]),
        obj("hidden", "panel.models.markup.HTML", text="secret", visible=False),
        obj("fig", "Figure", height=320, sizing_mode="stretch_width", title=title),
        obj("s", "Slider", title="d_k", start=0, end=2, value=1, format=fmt),
        obj("sel", "panel.models.widgets.CustomSelect", title="View", value="b", options=[["a", "A view"], ["b", "B view"]]),
        obj("unknown", "SomeNewLayout", children=[obj("b", "panel.models.widgets.Button", label="Share")]),
        obj("rb", "panel.models.widgets.RadioButtonGroup", labels=["one", "two"], active=1),
    ])
    out = html_paint.layer(docs_text(root), ["r"])
    assert "<h2>Why?</h2>" in out and "<b>87%</b>" in out           # the pane's HTML, unescaped once
    assert "secret" not in out                                         # invisible models are not painted
    assert "height: 320px" in out and "no scaling: weights" in out    # the figure's box and title
    assert "d_k: <b>64</b>" in out                                     # a choice slider shows its choice
    assert "<option>B view</option>" in out
    assert ">Share</button>" in out                                     # an unknown model shows its children
    assert '<button type="button" disabled aria-pressed=true>two</button>' in out
    assert out.count(" disabled") == 5                                 # every control is inert until live
    assert "width: calc(100% - 20px)" in out                           # stretched, less its margins
    assert "#sdpa-html-paint {\n.sdpa-headline" in out and ":host" not in out   # the page's CSS, scoped
    assert "<script" not in out


def test_only_the_named_roots_are_painted():
    a = obj("a", "panel.models.markup.HTML", text="main text")
    b = obj("b", "panel.models.markup.HTML", text="sidebar text")
    out = html_paint.layer(docs_text(a, b), ["a"])
    assert "main text" in out and "sidebar text" not in out


PAGE = """<html><head>
<script type="text/javascript" src="./static/bokeh/3.9.2/bokeh.min.js"></script>
<script type="text/javascript" src="./static/panel/1.9.4/dist/panel.min.js"></script>
<script type="text/javascript">
  Bokeh.set_log_level("info");
</script></head><body>
<div class="container-fluid" id="container"><div class="row" id="content">
<div class="sidenav" id="sidebar"><div data-root-id="p2" style="display: contents;"></div></div>
    <div class="col mh-100 float-left" id="main">
          <div id="x1" data-root-id="p3" style="display: contents;"></div>
          <div id="x2" data-root-id="p1" style="display: contents;"></div>
    </div>
</div></div>
<script type="application/json" id="doc">%s</script></body></html>"""


def test_the_page_gets_its_layer_in_the_main_area_and_another_links_roots_map_by_position():
    roots = [obj(f"p{i}", "panel.models.markup.HTML", text=f"root {i}") for i in (1, 2, 3)]
    page = PAGE % docs_text(*roots)
    assert html_paint.main_roots(page) == ["p3", "p1"]
    painted = html_paint.paint_page(page)
    layer = painted.split('<div id="sdpa-html-paint">')[1].split('<div id="x1"')[0]
    assert layer.index("root 3") < layer.index("root 1") and "root 2" not in layer
    assert painted.index('id="main"') < painted.index('id="sdpa-html-paint"') < painted.index('id="x1"')
    # another link's document: its roots are matched to the page's in the order of their ids (boot.js)
    other = {"docs_json": docs_text(*[obj(f"q{i}", "panel.models.markup.HTML", text=f"other {i}") for i in (1, 2, 3)]),
             "root_ids": ["q1", "q2", "q3"]}
    out = html_paint.other_layer(page, other)
    assert out.index("other 3") < out.index("other 1") and "other 2" not in out


def test_a_page_without_a_main_area_fails_the_build():
    with pytest.raises(SystemExit, match="no #main area"):
        html_paint.main_roots("<html><body></body></html>")


def test_library_scripts_are_deferred_and_the_inline_bokeh_call_goes():
    out = render.deferred_scripts(PAGE % "{}")
    assert out.count(" defer></script>") == 2
    assert "set_log_level" not in out
    with pytest.raises(SystemExit, match="set_log_level"):
        render.deferred_scripts(out)     # Panel's template changed under it: the build says so
