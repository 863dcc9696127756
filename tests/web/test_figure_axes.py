"""Figures that show their own claim: when a view's main control moves (each view's ``MAIN_CONTROL``, across its
range), no axis and no colour scale of a figure whose data changed follows that data. An axis fitted to the
data at each setting makes the change the view's sentence describes invisible: the variance view's raw q·k
histogram looked the same at d_k = 2 and d_k = 64, only its tick labels differed."""
from __future__ import annotations

import importlib

import numpy as np
import panel as pn
import pytest
from bokeh.models import ColumnDataSource, DataRange1d, FactorRange, LinearColorMapper

from web.options import VIEW_REGISTRY
from web.page import Page

#: Views with no figure of their own: the tour shows the other views' figures, the questions none.
NO_FIGURES = {"tour", "questions"}


def view_class(key: str):
    return getattr(importlib.import_module(f"web.views.{key}"), VIEW_REGISTRY[key][1])


def figures(layout) -> list:
    return [pane.object for pane in layout.select(pn.pane.Bokeh)]


#: The glyph properties that place data along each axis (quads, bars, lines, areas, rectangles, markers).
ALONG = {"x_range": ("x", "left", "right", "x0", "x1", "x2"), "y_range": ("y", "top", "bottom", "y1", "y2")}


def plotted(fig) -> dict:
    """Per axis, every data column a glyph places along it; per colour scale, the columns it colours."""
    out = {axis: [] for axis in ALONG}
    for r in fig.renderers:
        glyph, src = getattr(r, "glyph", None), getattr(r, "data_source", None)
        if glyph is None or not isinstance(src, ColumnDataSource):
            continue
        for axis, props in ALONG.items():
            for prop in props:
                field = column(getattr(glyph, prop, None) if prop in glyph.properties() else None, src)
                if field is not None:
                    out[axis].append((f"{prop}={field}", np.asarray(src.data[field], dtype=float)))
        fill = column(getattr(glyph, "fill_color", None), src)
        if fill is not None:
            out.setdefault("colour 0", []).append((fill, np.asarray(src.data[fill], dtype=float)))
    return out


def column(spec, src) -> str | None:
    """The data column a glyph property reads (a column name, a field spec, or a transformed field)."""
    name = getattr(spec, "field", None) or (spec.get("field") if isinstance(spec, dict) else spec)
    if not (isinstance(name, str) and name in src.data):
        return None
    return name if np.asarray(src.data[name]).dtype.kind in "fiub" else None   # categories: a FactorRange


def scales(fig) -> dict:
    """Each continuous axis's and colour scale's kind and ends."""
    out = {}
    for axis in ("x_range", "y_range"):
        r = getattr(fig, axis)
        if isinstance(r, FactorRange):
            continue
        out[axis] = (type(r).__name__, None if isinstance(r, DataRange1d) else (r.start, r.end))
    for i, m in enumerate(fig.select(LinearColorMapper)):
        out[f"colour {i}"] = ("LinearColorMapper", (m.low, m.high))
    return out


def same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(na == nb and x.shape == y.shape and np.allclose(x, y, equal_nan=True)
                                    for (na, x), (nb, y) in zip(a, b))


def at(page: Page, layout, owner: str, name: str, value) -> dict:
    target = page.lab if owner == "lab" else page.train
    setattr(target, name, value)
    if owner == "train":     # the runs' figures fill as they train: the same number of steps at each value
        page.train.advance(steps=60, budget=60.0)
    return {fig.id: (fig.title.text, plotted(fig), scales(fig)) for fig in figures(layout)}


def fitted(cls) -> set:
    """The (figure title's start, axis) pairs a view declares to follow its data (``FITTED``), each with why."""
    return {key for key, why in getattr(cls, "FITTED", {}).items() if why}


@pytest.mark.parametrize("key", [k for k in VIEW_REGISTRY if k not in NO_FIGURES])
def test_moving_the_main_control_moves_the_data_not_the_axes(key):
    owner, name, (low, high) = view_class(key).MAIN_CONTROL
    assert view_class(key).CLAIM, f"{key}: say what its figures show as {name} moves"
    page = Page(f"?view={key}")
    layout = page.view(key)
    before = at(page, layout, owner, name, low)
    after = at(page, layout, owner, name, high)
    moved = 0
    for fid, (title, data, ends) in before.items():
        for axis, (kind, where) in ends.items():
            if same(data.get(axis, []), after[fid][1].get(axis, [])):
                continue      # nothing drawn along this axis changed: an axis fitted to it stays put
            moved += 1
            if any(title.startswith(start) and axis == a for start, a in fitted(view_class(key))):
                continue
            assert kind != "DataRange1d", f"{key}: {title!r} fits its {axis} to the data, which {name} changes"
            assert after[fid][2][axis] == (kind, where), (
                f"{key}: {title!r}'s {axis} moved from {where} to {after[fid][2][axis][1]} as {name} went "
                f"{low} -> {high}")
    assert moved, f"{key}: moving {name} from {low} to {high} changed nothing any figure draws"


def test_the_raw_histogram_widens_with_d_k_on_fixed_axes():
    """The variance view's central claim, as drawn: on its default fixed axes the raw q·k histogram's drawn
    extent (bars with any weight, in data units) grows with d_k, about like √d_k, while the axis stays; the
    1/√d_k histogram keeps its width. Unticking "Same axes at every d_k" fits the axis to the data again."""
    from web.views.variance import Variance
    page = Page("?view=variance")
    layout = page.view("variance")
    figs = {fig.title.text.split(",")[0]: fig for fig in figures(layout)}
    raw, scaled = figs["Raw q·k"], next(f for t, f in figs.items() if t.startswith("After"))
    assert Variance.MAIN_CONTROL[1] == "d_k"

    def drawn_width(fig) -> float:
        src = next(s for s in fig.select(ColumnDataSource) if "density" in s.data)
        left, right, dens = (np.asarray(src.data[c]) for c in ("left", "right", "density"))
        heavy = dens > 0.01 * dens.max()
        return float(right[heavy].max() - left[heavy].min())

    widths, axes = {}, set()
    for d_k in (4, 64, 1024):
        page.lab.d_k = d_k
        widths[d_k] = (drawn_width(raw), drawn_width(scaled))
        axes.add((raw.x_range.start, raw.x_range.end, scaled.x_range.start, scaled.x_range.end))
    assert len(axes) == 1, f"the axes moved with d_k: {axes}"
    (lo, hi, _, _), = axes
    for a, b in ((4, 64), (64, 1024)):
        grow = widths[b][0] / widths[a][0]
        assert 2.5 < grow < 6.5, f"raw width grew {grow:.2f}x from d_k = {a} to {b} (√16 = 4)"
        assert 0.8 < widths[b][1] / widths[a][1] < 1.25, "the 1/√d_k histogram should keep its width"
    assert widths[1024][0] < hi - lo, "the raw histogram at d_k = 1024 runs off its fixed axis"
    # the fitted axes: the reader's other choice follows each histogram
    fixed = next(w for w in layout.select(pn.widgets.Checkbox) if w.name == "Same axes at every d_k")
    fixed.value = False
    page.lab.d_k = 4
    narrow = raw.x_range.end - raw.x_range.start
    page.lab.d_k = 1024
    assert (raw.x_range.end - raw.x_range.start) / narrow > 8
