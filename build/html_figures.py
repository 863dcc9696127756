"""A Bokeh figure of a pre-rendered document drawn as SVG, for the HTML first paint (html_paint.py).

It draws what the figure's models hold: its title, its axes (linear or log, with round ticks), grid
lines, the glyphs the page uses (Line, Scatter, VArea, Rect, VBar, Quad, Segment) and Span marks, and
its legend's entries, so that the reader sees the plot's shape before BokehJS has drawn it. The data
area is an SVG stretched over the plot's box (its width is the page's), with strokes that keep their
width and markers drawn as round caps of zero-length strokes, so nothing is distorted. A categorical
axis or a custom tick formatter, which only the browser can compute, leaves its labels out. Colours
that would vanish on the dark background follow the page's text colours.
"""
from __future__ import annotations

import base64
import gzip
import html
import math

import numpy as np

SIZE = 1000.0                                   # the data area's viewBox: 0..SIZE on both axes
TOP, AXIS_X, AXIS_Y, RIGHT, LEGEND_ROW = 26, 40, 58, 12, 20       # px around the data area
# colours drawn in the page's text colours instead (web/theme.py DARK_DATA: they vanish on dark)
INK = {"#000000": "var(--sdpa-text)", "black": "var(--sdpa-text)", "#444444": "var(--sdpa-soft)",
       "#555555": "var(--sdpa-muted)", "#999999": "var(--sdpa-soft)"}


def column(value) -> np.ndarray:
    """A ColumnDataSource column: a list (NaN as {"type": "number", "value": "nan"}) or an ndarray."""
    if isinstance(value, dict) and value.get("type") == "ndarray":
        raw = value["array"]
        data = base64.b64decode(raw["data"]) if isinstance(raw, dict) else b""
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        out = np.frombuffer(data, dtype=np.dtype(value.get("dtype", "float64")).newbyteorder(
            "<" if value.get("order", "little") == "little" else ">"))
        return out.astype(float) if out.dtype.kind in "iuf" else out
    if isinstance(value, list):
        return np.array([float(v["value"]) if isinstance(v, dict) and v.get("type") == "number" else
                         (np.nan if v is None else v) for v in value], dtype=object)
    return np.array([], dtype=float)


def numbers(values) -> np.ndarray:
    try:
        return np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return np.full(len(values), np.nan)


class Figure:
    """One figure's models, read from its document (html_paint.Document)."""

    def __init__(self, doc, attributes: dict):
        self.doc, self.a = doc, attributes
        self.renderers = []
        for ref in attributes.get("renderers") or []:
            r = doc.get(ref)
            if r is None or r.get("name") != "GlyphRenderer" or r["attributes"].get("visible") is False:
                continue
            glyph = doc.get(r["attributes"].get("glyph")) or {}
            source = doc.get(r["attributes"].get("data_source")) or {}
            data = {k: column(v) for k, v in doc.entries(source.get("attributes", {}).get("data")).items()}
            self.renderers.append((glyph.get("name", ""), glyph.get("attributes", {}), data))
        self.log_x = (doc.get(attributes.get("x_scale")) or {}).get("name") == "LogScale"
        self.log_y = (doc.get(attributes.get("y_scale")) or {}).get("name") == "LogScale"

    # values of a glyph property: a column, or one value for every row
    def spec(self, props: dict, data: dict, name: str, default=None):
        v = props.get(name, default)
        if isinstance(v, dict) and v.get("type") == "field":
            col = data.get(v.get("field"), np.array([]))
            transform = self.doc.get(v.get("transform"))
            return self.mapped(transform, col) if transform else col
        if isinstance(v, dict) and v.get("type") == "value":
            return v.get("value")
        return v

    def mapped(self, mapper: dict, col) -> list:
        a = mapper.get("attributes", {})
        palette = a.get("palette") or ["#888888"]
        x = numbers(col)
        finite = x[np.isfinite(x)]
        low = a.get("low", finite.min() if finite.size else 0.0)
        high = a.get("high", finite.max() if finite.size else 1.0)
        out = []
        for v in x:
            if not np.isfinite(v):
                out.append(a.get("nan_color", "gray"))
                continue
            t = 0.0 if high == low else (v - low) / (high - low)
            out.append(palette[min(len(palette) - 1, max(0, int(t * len(palette))))])
        return out

    # ranges and scales
    def extent(self, axis: str) -> tuple[float, float] | None:
        rng = self.doc.get(self.a.get(f"{axis}_range")) or {}
        ra = rng.get("attributes", {})
        if rng.get("name") == "Range1d":
            return float(ra.get("start", 0.0)), float(ra.get("end", 1.0))
        if rng.get("name") != "DataRange1d":
            return None
        log = self.log_x if axis == "x" else self.log_y
        keys = {"x": ("x", "left", "right", "x0", "x1"), "y": ("y", "y1", "y2", "top", "bottom", "y0")}[axis]
        values = []
        for _, props, data in self.renderers:
            for key in keys:
                v = self.spec(props, data, key)
                if isinstance(v, np.ndarray):
                    values.append(numbers(v))
                elif isinstance(v, (int, float)):
                    values.append(np.array([float(v)]))
        x = np.concatenate(values) if values else np.array([])
        x = x[np.isfinite(x) & ((x > 0) if log else True)]
        if not x.size:
            return None
        lo, hi = (np.log10(x.min()), np.log10(x.max())) if log else (x.min(), x.max())
        pad = (hi - lo) * float(ra.get("range_padding", 0.1)) / 2 or (0.5 if not log else 0.1)
        lo, hi = lo - pad, hi + pad
        return (10 ** lo, 10 ** hi) if log else (float(lo), float(hi))

    def scale(self, axis: str) -> Scale | None:
        ext = self.extent(axis)
        if ext is None:
            return None
        log = self.log_x if axis == "x" else self.log_y
        lo, hi = (math.log10(max(e, 1e-300)) for e in ext) if log else ext
        return Scale(axis, log, lo, (hi - lo) or 1.0, ticks(ext, log))

    # drawing
    def svg(self) -> str:
        sx, sy = self.scale("x"), self.scale("y")
        if sx is None or sy is None:
            return ""
        parts = []
        for x in sx.ticks:
            parts.append(_line(sx(x)[0], 0, sx(x)[0], SIZE, "var(--sdpa-rule-line)", 1))
        for y in sy.ticks:
            parts.append(_line(0, sy(y)[0], SIZE, sy(y)[0], "var(--sdpa-rule-line)", 1))
        for name, props, data in self.renderers:
            draw = getattr(self, f"_{name}", None)
            if draw is not None:
                parts.append(draw(props, data, sx, sy))
        for ref in self.a.get("center") or []:
            m = self.doc.get(ref) or {}
            if m.get("name") == "Span" and m["attributes"].get("visible") is not False:
                sa = m["attributes"]
                loc = sa.get("location")
                if isinstance(loc, (int, float)):
                    colour, width = sa.get("line_color", "#000000"), sa.get("line_width", 1)
                    dash = _dash(sa.get("line_dash"))
                    if sa.get("dimension", "width") == "height":
                        parts.append(_line(sx(loc)[0], 0, sx(loc)[0], SIZE, colour, width, dash))
                    else:
                        parts.append(_line(0, sy(loc)[0], SIZE, sy(loc)[0], colour, width, dash))
        return "".join(p for p in parts if p)

    def _Line(self, p, data, sx, sy) -> str:
        xs, ys = sx(self.spec(p, data, "x")), sy(self.spec(p, data, "y"))
        style = _stroke(p.get("line_color", "#000000"), p.get("line_width", 1), _dash(p.get("line_dash")))
        out = []
        for run in _runs(xs, ys):
            pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
            out.append(f'<polyline points="{pts}" style="fill:none;{style}"/>')
        return "".join(out)

    def _Scatter(self, p, data, sx, sy) -> str:
        xs, ys = sx(self.spec(p, data, "x")), sy(self.spec(p, data, "y"))
        colours = _each(self.spec(p, data, "fill_color", "#1f77b4"), len(xs))
        sizes = _each(self.spec(p, data, "size", 4), len(xs))
        out = []
        for x, y, c, s in zip(xs, ys, colours, sizes):
            if np.isfinite(x) and np.isfinite(y):
                out.append(f'<path d="M{x:.1f} {y:.1f}h0" style="{_stroke(c, float(s) if s else 4)};'
                           f'stroke-linecap:round"/>')
        return "".join(out)

    def _VArea(self, p, data, sx, sy) -> str:
        xs, y1, y2 = sx(self.spec(p, data, "x")), sy(self.spec(p, data, "y1")), sy(self.spec(p, data, "y2"))
        ok = np.isfinite(xs) & np.isfinite(y1) & np.isfinite(y2)
        if not ok.any():
            return ""
        pts = [(x, y) for x, y in zip(xs[ok], y1[ok])] + [(x, y) for x, y in zip(xs[ok][::-1], y2[ok][::-1])]
        return (f'<polygon points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in pts)}" '
                f'style="{_fill(p.get("fill_color", "#888888"), p.get("fill_alpha", 1))}"/>')

    def _boxes(self, p, data, left, right, top, bottom) -> str:
        left, right, top, bottom = np.broadcast_arrays(left, right, top, bottom)   # a value for every row
        fills = _each(self.spec(p, data, "fill_color", "#888888"), len(left))
        alpha = self.spec(p, data, "fill_alpha", 1)
        alpha = alpha if isinstance(alpha, (int, float)) else 1
        out = []
        for x0, x1, y0, y1, c in zip(left, right, top, bottom, fills):
            if all(np.isfinite(v) for v in (x0, x1, y0, y1)):
                out.append(f'<rect x="{min(x0, x1):.1f}" y="{min(y0, y1):.1f}" width="{abs(x1 - x0):.1f}" '
                           f'height="{abs(y1 - y0):.1f}" style="{_fill(c, alpha)}"/>')
        return "".join(out)

    def _Rect(self, p, data, sx, sy) -> str:
        x, y = numbers(_col(self.spec(p, data, "x"))), numbers(_col(self.spec(p, data, "y")))
        w = numbers(_each(self.spec(p, data, "width", 1), len(x)))
        h = numbers(_each(self.spec(p, data, "height", 1), len(x)))
        return self._boxes(p, data, sx(x - w / 2), sx(x + w / 2), sy(y + h / 2), sy(y - h / 2))

    def _VBar(self, p, data, sx, sy) -> str:
        x, top = numbers(_col(self.spec(p, data, "x"))), self.spec(p, data, "top")
        w = numbers(_each(self.spec(p, data, "width", 1), len(x)))
        bottom = numbers(_each(self.spec(p, data, "bottom", 0), len(x)))
        return self._boxes(p, data, sx(x - w / 2), sx(x + w / 2), sy(top), sy(bottom))

    def _Quad(self, p, data, sx, sy) -> str:
        return self._boxes(p, data, sx(self.spec(p, data, "left")), sx(self.spec(p, data, "right")),
                           sy(self.spec(p, data, "top")), sy(self.spec(p, data, "bottom")))

    def _Segment(self, p, data, sx, sy) -> str:
        x0, x1, y0, y1 = np.broadcast_arrays(sx(self.spec(p, data, "x0")), sx(self.spec(p, data, "x1")),
                                             sy(self.spec(p, data, "y0")), sy(self.spec(p, data, "y1")))
        colour = self.spec(p, data, "line_color", "#000000")
        return "".join(_line(a, b, c, d, colour if isinstance(colour, str) else "#000000", 1)
                       for a, b, c, d in zip(x0, y0, x1, y1) if all(np.isfinite(v) for v in (a, b, c, d)))

    # around the data area
    def axis(self, place: str):
        for ref in self.a.get(place) or []:
            m = self.doc.get(ref) or {}
            if m.get("name", "").endswith("Axis") and m["attributes"].get("visible") is not False:
                return m
        return None

    def legend(self) -> list[tuple[str, str]]:
        """(label, colour) of each entry of a legend below the plot."""
        out = []
        for ref in self.a.get("below") or []:
            m = self.doc.get(ref) or {}
            if m.get("name") != "Legend":
                continue
            for item in m["attributes"].get("items") or []:
                it = (self.doc.get(item) or {}).get("attributes", {})
                label = it.get("label")
                label = label.get("value") if isinstance(label, dict) else label
                colour = "#888888"
                for r in it.get("renderers") or []:
                    g = (self.doc.get((self.doc.get(r) or {}).get("attributes", {}).get("glyph")) or {})
                    ga = g.get("attributes", {})
                    filled = g.get("name") in ("Quad", "VBar", "VArea", "Rect")     # drawn by their fill
                    c = ga.get("fill_color") if filled else ga.get("line_color", ga.get("fill_color"))
                    c = c.get("value") if isinstance(c, dict) else c
                    if isinstance(c, str):
                        colour = c
                        break
                if label:
                    out.append((str(label), colour))
        return out


class Scale:
    """Data to SVG units along one axis (x grows rightwards, y upwards), with the axis' round ticks."""

    def __init__(self, axis: str, log: bool, lo: float, span: float, ticks: list[float]):
        self.axis, self.log, self.lo, self.span, self.ticks = axis, log, lo, span, ticks

    def __call__(self, v) -> np.ndarray:
        v = numbers(np.atleast_1d(v))
        with np.errstate(divide="ignore", invalid="ignore"):
            t = ((np.log10(v) if self.log else v) - self.lo) / self.span
        return t * SIZE if self.axis == "x" else (1 - t) * SIZE


def _col(v):
    return v if isinstance(v, (np.ndarray, list)) else np.array([v])


def _each(v, n: int) -> list:
    if isinstance(v, (np.ndarray, list)):
        return list(v)
    return [v] * n


def _runs(xs, ys):
    """Consecutive finite points: a NaN breaks a Bokeh line, as here."""
    run = []
    for x, y in zip(xs, ys):
        if np.isfinite(x) and np.isfinite(y):
            run.append((x, y))
        elif run:
            yield run
            run = []
    if len(run) > 0:
        yield run


def _colour(c) -> str:
    if not isinstance(c, str) or not c:
        return "none"
    return INK.get(c.lower() if c.startswith("#") else c, c)


def _dash(d) -> str:
    named = {"dashed": "6 4", "dotted": "2 4", "dotdash": "2 4 6 4", "dashdot": "6 4 2 4"}
    if isinstance(d, str):
        return named.get(d, "")
    if isinstance(d, list) and d:
        return " ".join(str(x) for x in d)
    return ""


def _stroke(colour, width, dash: str = "") -> str:
    style = f"stroke:{_colour(colour)};stroke-width:{float(width or 1):g}px;vector-effect:non-scaling-stroke"
    return style + (f";stroke-dasharray:{dash}" if dash else "")


def _fill(colour, alpha) -> str:
    return f"fill:{_colour(colour)};fill-opacity:{float(alpha):g}"


def _line(x0, y0, x1, y1, colour, width, dash: str = "") -> str:
    return (f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" '
            f'style="{_stroke(colour, width, dash)}"/>')


def ticks(ext: tuple[float, float], log: bool) -> list[float]:
    """Round ticks inside the range: powers of ten on a log axis (thinned to six at most), else a
    1-2-5 step giving about five."""
    lo, hi = sorted(ext)
    if log:
        if lo <= 0 or hi <= 0:
            return []
        powers = list(range(math.ceil(math.log10(lo) - 1e-9), math.floor(math.log10(hi) + 1e-9) + 1))
        step = 1 if len(powers) <= 6 else math.ceil(len(powers) / 6)
        return [10.0 ** k for k in powers[::step]]
    if hi == lo:
        return [lo]
    raw = (hi - lo) / 5
    base = 10 ** math.floor(math.log10(raw))
    step = next(m * base for m in (1, 2, 5, 10) if m * base >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + i * step, 12) for i in range(int((hi - first) / step + 1e-9) + 1)]


def tick_label(v: float, log: bool) -> str:
    if log:
        return f"10<sup>{round(math.log10(v))}</sup>"
    return f"{v:g}"


def draw(doc, a: dict) -> str:
    """The figure's HTML: title, axes, the SVG of its data and its legend, in its box of final size."""
    fig = Figure(doc, a)
    title = (doc.get(a.get("title")) or {}).get("attributes", {}).get("text", "")
    body = fig.svg()
    legend = fig.legend()
    rows = math.ceil(len(legend) / 2) if legend else 0
    left_axis, below_axis = fig.axis("left"), fig.axis("below")
    box = {"top": TOP, "left": AXIS_Y if left_axis else 8, "right": RIGHT,
           "bottom": (AXIS_X if below_axis else 8) + rows * LEGEND_ROW}
    inset = ";".join(f"{k}:{v}px" for k, v in box.items())
    out = [f'<span class="sdpa-hp-title">{html.escape(title)}</span>']
    if body:
        out.append(f'<div class="sdpa-hp-plot" style="{inset}"><svg viewBox="0 0 {SIZE:g} {SIZE:g}" '
                   f'preserveAspectRatio="none" aria-hidden="true">{body}</svg>')
        for axis, place in ((below_axis, "x"), (left_axis, "y")):
            if axis is None:
                continue
            aa = axis["attributes"]
            formatter = (doc.get(aa.get("formatter")) or {}).get("name", "")
            scale = fig.scale(place)
            if scale is not None and axis["name"] != "CategoricalAxis" and "CustomJS" not in formatter:
                log = fig.log_x if place == "x" else fig.log_y
                for t in scale.ticks:
                    pos = scale(t)[0] / SIZE * 100
                    where = f"left:{pos:.2f}%" if place == "x" else f"top:{pos:.2f}%"
                    out.append(f'<span class="sdpa-hp-tick sdpa-hp-{place}" style="{where}">{tick_label(t, log)}</span>')
            label = aa.get("axis_label")
            if isinstance(label, str) and label:
                out.append(f'<span class="sdpa-hp-axis-label sdpa-hp-{place}-label">{html.escape(label)}</span>')
        out.append("</div>")
    if legend:
        items = "".join(f'<span><i style="background:{_colour(c)}"></i>{html.escape(label)}</span>'
                        for label, c in legend)
        out.append(f'<div class="sdpa-hp-legend">{items}</div>')
    return "".join(out)
