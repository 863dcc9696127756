"""build/html_paint.py on small Bokeh documents written here: what each model becomes in the HTML first
paint, and render.deferred_scripts and render.unveiled on Panel's page. The built site's layers are checked in a
browser by tests/build/test_site_first_paint.py."""
from __future__ import annotations

import html
import json

import pytest

from build import html_figures, html_paint, render


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
    assert out.endswith(html_paint.END)            # boot.css shows the layer once this last child is parsed


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
<script type="application/json" id="doc">%s</script>
<script>const render_items = [{"docid":"d","roots":{},"root_ids":["p1","p2","p3"]}];
</script></body></html>"""


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


def test_the_loading_veil_over_the_preview_goes():
    """Panel's page opens with its body loading (a spinner and a half-transparent layer over the whole preview);
    the build takes the class away, and says so when Panel's template no longer has it."""
    veiled = PAGE.replace("<body>", render.LOADING_BODY) % "{}"
    out = render.unveiled(veiled)
    assert render.LOADING_BODY not in out and out.count("<body>") == 1
    with pytest.raises(SystemExit, match="pn-loading"):
        render.unveiled(out)


# ---- figures as SVG (build/html_figures.py) ---------------------------------------------------------


def ndarray(values, compress: bool) -> dict:
    """A column as Bokeh serialises a numpy array (gzipped when large, as Panel's documents are)."""
    import base64
    import gzip

    import numpy as np
    raw = np.asarray(values, dtype="<f8").tobytes()
    return {"type": "ndarray", "array": {"type": "bytes", "data": base64.b64encode(gzip.compress(raw) if compress else raw).decode()},
            "shape": [len(values)], "dtype": "float64", "order": "little"}


@pytest.mark.parametrize("compress", [False, True])
def test_columns_decode_as_bokeh_wrote_them(compress):
    assert list(html_figures.column(ndarray([1.5, -2.0, 3.0], compress))) == [1.5, -2.0, 3.0]
    nan = html_figures.numbers(html_figures.column([1, {"type": "number", "value": "nan"}, None]))
    assert nan[0] == 1 and all(x != x for x in nan[1:])


@pytest.mark.parametrize("ext, log, want", [
    ((0, 1), False, [0, 0.2, 0.4, 0.6, 0.8, 1.0]),
    ((-64, 64), False, [-50, 0, 50]),
    ((16, 0), False, [0, 5, 10, 15]),                        # a flipped range (the heat maps' y)
    ((0.5, 5000), True, [1, 10, 100, 1000]),
    ((1e-3, 1e9), True, [1e-3, 1, 1e3, 1e6, 1e9]),        # 13 powers: thinned to six at most
])
def test_ticks_are_round_and_inside_the_range(ext, log, want):
    assert html_figures.ticks(ext, log) == pytest.approx(want)


def figure(*renderers, x_range=None, y_range=None, log_x=False, **more):
    rng = {"type": "object", "name": "DataRange1d", "id": "dx"}
    return obj("fig", "Figure", height=300, sizing_mode="stretch_width",
               x_range=x_range or rng, y_range=y_range or {**rng, "id": "dy"},
               x_scale=obj("sx", "LogScale" if log_x else "LinearScale"), y_scale=obj("sy", "LinearScale"),
               title=obj("t", "Title", text="a plot"), renderers=list(renderers),
               below=[obj("ax", "LogAxis" if log_x else "LinearAxis", axis_label="d_k")], **more)


def glyph(id_, name, data: dict, **props):
    return obj(f"r{id_}", "GlyphRenderer", glyph=obj(f"g{id_}", name, **props),
               data_source=obj(f"s{id_}", "ColumnDataSource", data={"type": "map", "entries": list(data.items())}))


def painted(fig) -> str:
    doc = html_paint.Document(json.loads(html.unescape(docs_text(fig))))
    return html_figures.draw(doc, doc.models["fig"]["attributes"])


def test_a_line_breaks_at_nan_and_the_data_range_pads_ten_percent():
    line = glyph(1, "Line", {"x": ndarray([0, 1, 2, 3, 4], True), "y": [0, 1, {"type": "number", "value": "nan"}, 3, 4]},
                 x={"type": "field", "field": "x"}, y={"type": "field", "field": "y"}, line_color="#000000")
    out = painted(figure(line))
    assert out.count("<polyline") == 2                       # (0,0)-(1,1), then (3,3)-(4,4)
    # x from -0.2 to 4.2 over 1000: x = 0 sits at 1000 * 0.2 / 4.4
    assert 'points="45.5,954.5 272.7,727.3"' in out
    assert "stroke:var(--sdpa-text)" in out                  # black follows the page's text colour (dark)
    assert ">d_k</span>" in out and ">a plot</span>" in out


def test_boxes_take_one_value_for_every_row_and_a_colour_mapper_colours_them():
    mapper = obj("m", "LinearColorMapper", palette=["#000001", "#000002"], low=0, high=1)
    quads = glyph(2, "Quad", {"l": [0, 1], "r": [1, 2], "t": [0.2, 0.9]}, left={"type": "field", "field": "l"},
                  right={"type": "field", "field": "r"}, top={"type": "field", "field": "t"},
                  bottom={"type": "value", "value": 0}, fill_color={"type": "field", "field": "t", "transform": mapper})
    out = painted(figure(quads))
    assert out.count("<rect") == 2
    assert "fill:#000001" in out and "fill:#000002" in out


def test_log_axes_label_powers_of_ten_and_a_span_marks_its_place():
    line = glyph(3, "Line", {"x": [1, 10, 100, 1000], "y": [1, 2, 3, 4]},
                 x={"type": "field", "field": "x"}, y={"type": "field", "field": "y"})
    span = obj("sp", "Span", location=100, dimension="height", line_color="#444444", line_dash="dashed")
    out = painted(figure(line, log_x=True, center=[span]))
    assert "10<sup>0</sup>" in out and "10<sup>3</sup>" in out
    assert "stroke-dasharray:6 4" in out and "stroke:var(--sdpa-soft)" in out


def test_a_categorical_figure_keeps_its_box_and_title_without_a_drawing():
    fig = figure(x_range=obj("fr", "FactorRange", factors=["a", "b"]))
    out = painted(fig)
    assert ">a plot</span>" in out and "<svg" not in out
