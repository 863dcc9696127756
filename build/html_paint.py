"""The first paint in HTML and CSS alone: what a pre-rendered Bokeh document shows, before any script runs.

The pre-rendered page is a Bokeh document, and none of it paints until BokehJS (1.3 MB) and Panel's
JavaScript have loaded and run: seconds on a phone. This module writes the same view as plain HTML
from the document's own models, so the reader sees the view's question, its headline and its text at
once, with each figure drawn as SVG in a box of its final size (html_figures.py), and each control as a disabled look-alike
with its value. The page shows that layer over the main area until BokehJS has drawn the document
beneath it (templates/boot.js), then removes it in one step: nothing on the page moves.

It reads the models generically (layouts, Panel's HTML panes, figures, the common widgets), so every
view and tour step gets its layer without a line of its own; a model it does not know shows its
children, or nothing. The layer is made for the document's roots in the page's main area.
"""
from __future__ import annotations

import html
import json
import re

from . import html_figures
from .prerender import document_of

#: The layer's element; templates/firstpaint.js (in boot.js) removes it once BokehJS has drawn the document beneath.
LAYER_ID = "sdpa-html-paint"
#: The layer's last child. The browser paints a page while it is still parsing it, and a row laid out
#: before its last children arrive moves when they do; boot.css shows the layer once this is parsed.
END = '<i class="sdpa-hp-end" hidden></i>'

# Panel's bootstrap template: the main area and the root elements in it.
MAIN = re.compile(r'<div class="col[^"]*" id="main">(.*?)\n    </div>', re.S)
ROOT_ID = re.compile(r'data-root-id="([^"]+)"')
FLEX = {"flex_direction": "row", "flex_wrap": "wrap", "justify_content": "flex-start",
        "align_items": "flex-start", "align_content": "flex-start", "gap": ""}


def main_roots(page: str) -> list[str]:
    """The root ids placed in the template's main area, in page order."""
    m = MAIN.search(page)
    if not m:
        raise SystemExit("make site: html_paint: no #main area in Panel's page (did its template change?)")
    return ROOT_ID.findall(m.group(1))


class Document:
    """A Bokeh document's models by id, from its JSON (as ``docs_json`` holds it, already unescaped)."""

    def __init__(self, docs: dict):
        (self.doc,) = docs.values()
        self.models: dict[str, dict] = {}
        self._index(self.doc)

    def _index(self, value) -> None:
        if isinstance(value, dict):
            # a model is defined where it has a name (its attributes are left out when all are defaults)
            if value.get("type") == "object" and "name" in value and value["id"] not in self.models:
                self.models[value["id"]] = {**value, "attributes": value.get("attributes", {})}
            for v in value.values():
                self._index(v)
        elif isinstance(value, list):
            for v in value:
                self._index(v)

    @staticmethod
    def entries(value) -> dict:
        """Bokeh's {"type": "map", "entries": [[k, v], ...]} (or a plain dict) as a dict."""
        if isinstance(value, dict) and value.get("type") == "map":
            return dict((k, v) for k, v in value.get("entries", []))
        return value if isinstance(value, dict) else {}

    def get(self, ref) -> dict | None:
        """A model, whether given whole or by reference ({"id": ...}, once it is defined elsewhere)."""
        if isinstance(ref, dict) and isinstance(ref.get("id"), str) and ref.get("type", "object") == "object":
            return self.models.get(ref["id"])
        return None


def _px(value) -> str:
    return f"{value:g}px" if isinstance(value, (int, float)) else ""


def _box_style(a: dict, *, extra: dict | None = None) -> str:
    """A model's size, margin and own styles as CSS."""
    css: dict[str, str] = {}
    margin = a.get("margin")
    sides = [margin] * 4 if isinstance(margin, (int, float)) else (margin * 2 if isinstance(margin, list) and
                                                                   len(margin) == 2 else margin)
    if isinstance(sides, list) and len(sides) == 4:
        css["margin"] = " ".join(_px(m) for m in sides)
    mode = a.get("sizing_mode") or "fixed"
    if "width" in mode or "both" in mode:   # Bokeh's stretch: the width less the margins
        across = sum(sides[1::2]) if isinstance(sides, list) and len(sides) == 4 else 0
        css["width"] = f"calc(100% - {across:g}px)" if across else "100%"
        css["box-sizing"] = "border-box"
    elif isinstance(a.get("width"), (int, float)):
        css["width"] = _px(a["width"])
    if isinstance(a.get("height"), (int, float)) and "height" not in mode:
        css["height"] = _px(a["height"])
    for key in ("min_width", "max_width", "min_height", "max_height"):
        if isinstance(a.get(key), (int, float)):
            css[key.replace("_", "-")] = _px(a[key])
    css.update(extra or {})
    css.update({k: str(v) for k, v in Document.entries(a.get("styles")).items()})
    return "; ".join(f"{k}: {v}" for k, v in css.items() if v)


def _attrs(a: dict, cls: str, *, extra: dict | None = None) -> str:
    classes = " ".join([cls, *[c for c in a.get("css_classes") or [] if isinstance(c, str)]])
    style = _box_style(a, extra=extra)
    return f' class="{html.escape(classes)}"' + (f' style="{html.escape(style)}"' if style else "")


class Painter:
    """Writes the HTML of a document's models."""

    def __init__(self, doc: Document):
        self.doc = doc

    def model(self, ref) -> str:
        m = self.doc.get(ref)
        if m is None:
            return ""
        a = m.get("attributes", {})
        if a.get("visible") is False:
            return ""
        name = m["name"]
        short = name.rsplit(".", 1)[-1]
        draw = getattr(self, f"_{short}", None)
        if draw is not None:
            return draw(a)
        return "".join(self.model(c) for c in self._children(a))

    def _children(self, a: dict) -> list:
        kids = a.get("children")
        if isinstance(kids, list):
            return [k[0] if isinstance(k, list) else k for k in kids]
        out = []
        for value in Document.entries(kids).values():       # ReactiveHTML: {"flex-item": [...]}
            out += value if isinstance(value, list) else [value]
        return out

    # layouts
    def _flex(self, a: dict, cls: str, direction: str) -> str:
        inner = "".join(self.model(c) for c in self._children(a))
        return f'<div{_attrs(a, cls, extra={"display": "flex", "flex-direction": direction})}>{inner}</div>'

    def _Column(self, a: dict) -> str:
        return self._flex(a, "sdpa-hp-col", "column")

    def _Row(self, a: dict) -> str:
        return self._flex(a, "sdpa-hp-row", "row")

    def _ReactiveHTML(self, a: dict) -> str:
        data = self.doc.get(a.get("data")) or {}
        flex = {**FLEX, **{k: v for k, v in data.get("attributes", {}).items() if k in FLEX}}
        extra = {"display": "flex", **{k.replace("_", "-"): str(v) for k, v in flex.items()}}
        inner = "".join(self.model(c) for c in self._children(a))
        return f'<div{_attrs(a, "sdpa-hp-flex", extra=extra)}>{inner}</div>'

    # text
    def _HTML(self, a: dict) -> str:
        text = a.get("text")
        if not isinstance(text, str) or not text.strip():
            return ""
        return f'<div{_attrs(a, "sdpa-hp-html")}>{html.unescape(text)}</div>'

    def _KaTeX(self, a: dict) -> str:
        return self._HTML(a)

    # figures: a box of the final size with the figure drawn as SVG (html_figures.py)
    def _Figure(self, a: dict) -> str:
        title = self.doc.get(a.get("title")) or {}
        text = title.get("attributes", {}).get("text", "") if title else ""
        height = a.get("height") if isinstance(a.get("height"), (int, float)) else 300
        extra = {"height": _px(height)}
        return (f'<div{_attrs(a, "sdpa-hp-figure", extra=extra)} role="img" aria-label="{html.escape(text or "figure")}">'
                f"{html_figures.draw(self.doc, a)}</div>")

    # controls: disabled look-alikes with their values
    def _label(self, a: dict, inner: str, cls: str = "sdpa-hp-widget") -> str:
        title = a.get("title") or a.get("name_") or ""
        label = f'<span class="sdpa-hp-label">{html.escape(str(title))}</span>' if title else ""
        return f'<label{_attrs(a, cls)}>{label}{inner}</label>'

    def _Slider(self, a: dict) -> str:
        value, start, end = a.get("value", 0), a.get("start", 0), a.get("end", 1)
        shown = value
        fmt = self.doc.get(a.get("format"))
        if fmt is not None:     # the page's sliders over a list of choices show the choice, not its index
            options = Document.entries(fmt.get("attributes", {}).get("args")).get("options")
            if isinstance(options, list) and isinstance(value, (int, float)) and 0 <= round(value) < len(options):
                shown = options[round(value)]
        title = a.get("title") or ""
        label = f'<span class="sdpa-hp-label">{html.escape(str(title))}: <b>{html.escape(str(shown))}</b></span>'
        return (f'<label{_attrs(a, "sdpa-hp-widget")}>{label}'
                f'<input type="range" disabled min="{start}" max="{end}" value="{value}" step="any"></label>')

    def _Spinner(self, a: dict) -> str:
        return self._label(a, f'<input type="number" disabled value="{html.escape(str(a.get("value", "")))}">')

    def _CustomSelect(self, a: dict) -> str:
        value = a.get("value")
        options = a.get("options") or []
        shown = next((lab for v, lab in (o if isinstance(o, list) else (o, o) for o in options) if v == value), value)
        return self._label(a, f'<select disabled><option>{html.escape(str(shown or ""))}</option></select>')

    def _Select(self, a: dict) -> str:
        return self._CustomSelect(a)

    def _Button(self, a: dict) -> str:
        return f'<span{_attrs(a, "sdpa-hp-wrap")}><button type="button" disabled>{html.escape(str(a.get("label", "")))}</button></span>'

    def _Toggle(self, a: dict) -> str:
        return self._Button(a)

    def _FileDownload(self, a: dict) -> str:
        return self._Button(a)

    def _RadioButtonGroup(self, a: dict) -> str:
        active = a.get("active")
        buttons = "".join(f'<button type="button" disabled{" aria-pressed=true" if i == active else ""}>'
                          f"{html.escape(str(label))}</button>" for i, label in enumerate(a.get("labels") or []))
        return self._label(a, f'<span class="sdpa-hp-group">{buttons}</span>')

    def _RadioGroup(self, a: dict) -> str:
        active = a.get("active")
        items = "".join(f'<span><input type="radio" disabled{" checked" if i == active else ""}> {html.escape(str(label))}'
                        "</span>" for i, label in enumerate(a.get("labels") or []))
        return f'<div{_attrs(a, "sdpa-hp-radios")}>{items}</div>'

    def _Checkbox(self, a: dict) -> str:
        checked = " checked" if a.get("active") else ""
        return (f'<label{_attrs(a, "sdpa-hp-check")}><input type="checkbox" disabled{checked}> '
                f'{html.escape(str(a.get("label", "")))}</label>')

    def _TextAreaInput(self, a: dict) -> str:
        return self._label(a, f'<textarea disabled rows="{a.get("rows", 2)}">{html.escape(str(a.get("value", "")))}</textarea>')


def stylesheets(doc: Document) -> str:
    """The page's own stylesheets, as its HTML panes carry them (their shadow roots' CSS), for the layer."""
    seen: list[str] = []
    for m in doc.models.values():
        for sheet in m.get("attributes", {}).get("stylesheets") or []:
            if isinstance(sheet, str) and ":host" not in sheet and "sdpa-" in sheet and sheet not in seen:
                seen.append(sheet)
    return "\n".join(seen)


def layer(docs_text: str, root_ids: list[str]) -> str:
    """The HTML of the document's roots ``root_ids`` (the main area's), with the page's own CSS."""
    doc = Document(json.loads(html.unescape(docs_text)))
    roots = {r["id"]: r for r in doc.doc["roots"]}
    painter = Painter(doc)
    body = "".join(painter.model(roots[r]) for r in root_ids if r in roots)
    css = stylesheets(doc)
    style = f"<style>#{LAYER_ID} {{\n{css}\n}}</style>" if css else ""
    return f"{style}{body}{END}"


def insert(page: str, fragment: str) -> str:
    """The page with the layer first in its main area."""
    m = MAIN.search(page)
    if not m:
        raise SystemExit("make site: html_paint: no #main area in Panel's page (did its template change?)")
    at = m.start(1)
    return f'{page[:at]}\n<div id="{LAYER_ID}">{fragment}</div>{page[at:]}'


def paint_page(page: str) -> str:
    """Panel's pre-rendered page with the layer of its own document."""
    return insert(page, layer(document_of(page)["docs_json"], main_roots(page)))


def other_layer(page: str, first: dict) -> str:
    """The layer of another link's pre-rendered document (prerender.first_paints). boot.js puts its
    roots where the page has its own, in the order of their ids (boot.js rootElements)."""
    order = sorted(ROOT_ID.findall(page))
    if len(order) != len(first["root_ids"]):
        raise SystemExit(f"make site: html_paint: {len(first['root_ids'])} roots in a first paint, {len(order)} in the page")
    return layer(first["docs_json"], [first["root_ids"][order.index(r)] for r in main_roots(page)])
