"""Every figure of every view draws each glyph with its renderer's glyph alone (web/theme.py lean_renderers):
no copies for unselected or muted data, one "all rows" filter and one selection policy per figure; a tooltip
per measured point, not three. Safe only while nothing on the page selects data or mutes a legend entry, which
is checked here too."""
from __future__ import annotations

import panel as pn
import pytest
from bokeh.document import Document
from bokeh.models import (AllIndices, BoxSelectTool, ColumnDataSource, GlyphRenderer, HArea, HoverTool, LassoSelectTool,
                          Legend, Line, Patch, Patches, PolySelectTool, Scatter, Span, TapTool, VArea)

import sdpa_core as sc
from web.page import VIEWS, Page
from web.theme import MARK_COLOR, make_figure

SELECTING = (TapTool, BoxSelectTool, LassoSelectTool, PolySelectTool)


def figures(layout) -> list:
    return [pane.object for pane in layout.select(pn.pane.Bokeh)]


@pytest.mark.parametrize("name", [v for v in VIEWS if v not in ("tour", "questions")])
def test_every_glyph_is_drawn_by_its_own_glyph_only(name):
    figs = figures(Page().view(name))
    assert figs, f"the {name} view has no figure"
    for fig in figs:
        renderers = [r for r in fig.renderers if isinstance(r, GlyphRenderer)]
        assert renderers, fig.title.text
        for r in renderers:
            assert r.nonselection_glyph is None and r.muted_glyph is None, (fig.title.text, r.glyph)
        # one filter for the figure; each renderer keeps its own view (a view holds its source's indices)
        assert len({id(r.view.filter) for r in renderers}) == 1, fig.title.text
        assert isinstance(renderers[0].view.filter, AllIndices)
        assert len({id(r.view) for r in renderers}) == len(renderers), fig.title.text
        # one selection policy for every source the figure draws from (a source shared with another figure may
        # carry that figure's)
        own = [r.data_source for r in renderers if all(r.data_source not in other.select(type=ColumnDataSource)
                                                       for other in figs if other is not fig)]
        assert len({id(s.selection_policy) for s in own}) <= 1, fig.title.text
        # what makes the copies unneeded: no tool selects data, no legend mutes
        assert not [t for t in fig.tools if isinstance(t, SELECTING)], fig.title.text
        assert all(leg.click_policy != "mute" for leg in fig.select(type=Legend)), fig.title.text


def test_a_figure_sends_one_glyph_per_renderer_and_one_filter():
    """Counted in the document the page sends: Bokeh's glyph methods alone give three glyph models and a
    filter per renderer."""
    p = make_figure(title="t", x_label="x", y_label="y")
    p.line([1, 2], [1, 2], legend_label="a")
    p.scatter([1, 2], [1, 2], legend_label="a")
    p.varea(x=[1, 2], y1=[0, 0], y2=[1, 2], legend_label="b")
    doc = Document()
    doc.add_root(p)
    kinds = [type(m).__name__ for m in doc.models]
    assert sorted(k for k in kinds if k in ("Line", "Scatter", "VArea")) == ["Line", "Scatter", "VArea"]
    assert kinds.count("AllIndices") == 1 and kinds.count("CDSView") == 3
    assert kinds.count("ColumnDataSource") == 3 and kinds.count("UnionRenderers") == 1


def test_a_controls_mark_moves_on_the_overlay_canvas():
    """The dashed line marking a main control's value (theme.control_mark) is drawn at the overlay level, so
    moving it alone repaints no glyph of its figure (BokehJS repaints only the canvas of the levels changed)."""
    marks = {}
    for name in VIEWS:
        if name in ("tour", "questions"):
            continue
        for fig in figures(Page().view(name)):
            for span in fig.select(type=Span):
                if span.line_color == MARK_COLOR and span.dimension == "height":
                    marks[(name, fig.title.text)] = span.level
    # variance (its geometry section too), saturation (three sweeps, two length plots), alignment, precision, models,
    # the real transformer's saturating rates per width
    assert {name for name, _ in marks} == {"variance", "saturation", "alignment", "precision", "models", "real"}, marks
    assert all(level == "overlay" for level in marks.values()), marks


@pytest.mark.parametrize("name", [v for v in VIEWS if v not in ("tour", "questions")])
def test_a_tooltip_is_read_off_a_point_not_off_the_band_or_line_around_it(name):
    """Each hover tool names its renderers (web/theme.py pointed): no area, no line whose source a scatter draws
    too; every other glyph keeps its tooltip."""
    for fig in figures(Page().view(name)):
        glyphs = [r for r in fig.renderers if isinstance(r, GlyphRenderer)]
        dotted = {id(r.data_source) for r in glyphs if isinstance(r.glyph, Scatter)}
        for tool in (t for t in fig.tools if isinstance(t, HoverTool)):
            assert tool.renderers != "auto", fig.title.text
            want = [r for r in glyphs if not isinstance(r.glyph, (VArea, HArea, Patch, Patches))
                    and not (isinstance(r.glyph, Line) and id(r.data_source) in dotted)]
            assert list(tool.renderers) == want and want, fig.title.text


def test_the_saturation_sweeps_tooltip_only_their_dots():
    saturation = Page().view("saturation")
    sweeps = [f for f in figures(saturation) if f.select(type=VArea) and f.select(type=Scatter)]
    assert len(sweeps) == 3
    for fig in sweeps:
        (tool,) = [t for t in fig.tools if isinstance(t, HoverTool)]
        dots = [r for r in tool.renderers if isinstance(r.glyph, Scatter)]
        assert len(dots) == len(sc.RULE_NAMES), fig.title.text   # a rule's dots each; not its line or band
        assert not [r for r in tool.renderers if isinstance(r.glyph, VArea)], fig.title.text
        assert {id(r.data_source) for r in tool.renderers if isinstance(r.glyph, Line)}.isdisjoint(
            id(r.data_source) for r in dots), fig.title.text
