"""Dark figures: the plots follow the reader's ``prefers-color-scheme``, in the browser.

Bokeh draws its plots on a canvas from model properties (colours included), which CSS cannot reach.
The page is drawn once for every reader (the static site pre-renders it), so Python cannot choose the
colours either. A small script, attached to the Bokeh document's ``document_ready`` event (it runs the
same under ``panel serve`` and in Pyodide), sets the plots' own colours in BokehJS while the reader
prefers dark (``web/theme.py`` ``FIGURE_DARK``): backgrounds, titles, axes, grids, legends, colour bars,
and the few data colours that would vanish on a dark background (black and dark greys,
``DARK_DATA``). The data palettes themselves stay as they are: Okabe-Ito reads on both backgrounds,
and a heatmap keeps its viridis scale, so it and its colour bar still agree.

Each change is made with BokehJS's ``sync: false``: it is drawn, but never sent to Python (no
message per model, and Python's models keep the light colours the pre-render and the tests know).
The light values are kept, so a reader who switches their system back to light gets them back. Views
are built on their first visit: the script colours the models a patch adds before they are drawn.
"""
from __future__ import annotations

import json

from bokeh.models import CustomJS

from .theme import DARK_DATA, FIGURE_DARK, FIGURE_LIGHT

DARK_FIGURES_JS = r"""
if (!window.__sdpaDarkFigures) {
  const LIGHT = %(light)s;
  const F = %(dark)s;
  const DATA = %(data)s;       // light data colour (lower-case hex) -> its dark counterpart
  const media = window.matchMedia ? window.matchMedia('(prefers-color-scheme: dark)') : null;
  // chrome: [property, dark colour], on every model that has the property (titles, axes, grids, legends,
  // colour bars); a Bokeh "none" stays none (a legend or colour bar drawn without a box keeps none)
  const CHROME = [
    ['axis_line_color', F.axis], ['major_tick_line_color', F.axis], ['minor_tick_line_color', F.axis],
    ['major_label_text_color', F.soft], ['axis_label_text_color', F.text],
    ['grid_line_color', F.grid], ['label_text_color', F.text], ['title_text_color', F.text],
    ['background_fill_color', F.background], ['inactive_fill_color', F.background],
    ['bar_line_color', F.axis], ['border_line_color', F.border],
  ];
  // data drawn in black or dark grey (reference lines, markers' outlines, the training target)
  const DATA_PROPS = ['line_color', 'fill_color', 'hatch_color', 'text_color'];
  const NAMED = {black: '#000000', white: '#ffffff'};
  const hex = (c) => typeof c === 'string' ? (NAMED[c.toLowerCase()] || c.toLowerCase()) : null;
  const name = (m) => m.constructor && m.constructor.__name__;
  const isPlot = (m) => m.properties && 'border_fill_color' in m.properties && 'outline_line_color' in m.properties;
  const own = new WeakMap();     // model -> {property: the value Python gave it}, for whatever was changed

  function wanted(m, dark) {
    const props = m.properties || {};
    const out = {};
    if (isPlot(m)) {             // Python leaves the plot unfilled (web/theme.py make_figure)
      const fill = dark ? F.background : LIGHT.background;
      return {border_fill_color: fill, background_fill_color: fill};
    }
    if (!dark) return out;
    const was = (attr) => (own.get(m) || {})[attr] !== undefined ? own.get(m)[attr] : m[attr];
    for (const [attr, colour] of CHROME) if (attr in props && was(attr) != null) out[attr] = colour;
    if (name(m) === 'Title' && 'text_color' in props) { out.text_color = F.text; return out; }
    for (const attr of DATA_PROPS) {
      if (!(attr in props) || attr in out) continue;
      const v = was(attr);
      const plain = hex(v);
      const spec = v && typeof v === 'object' && 'value' in v ? hex(v.value) : null;
      if (plain && plain in DATA) out[attr] = DATA[plain];
      else if (spec && spec in DATA) out[attr] = {value: DATA[spec]};
    }
    return out;
  }

  function paint(m, dark) {
    const values = wanted(m, dark);
    const kept = own.get(m) || {};
    for (const attr of Object.keys(kept)) if (!(attr in values)) values[attr] = kept[attr];   // back to Python's
    const attrs = Object.keys(values);
    if (!attrs.length) return;
    for (const attr of attrs) if (!(attr in kept)) kept[attr] = m[attr];
    own.set(m, kept);
    m.setv(values, {sync: false});   // drawn, never sent: Python's models keep their own colours
  }

  const seen = new WeakSet();
  function paintDoc(doc, dark, onlyNew) {
    for (const m of doc.all_models) {
      if (onlyNew && seen.has(m)) continue;
      seen.add(m);
      paint(m, dark);
    }
  }

  const docs = new WeakSet();
  function follow(doc) {
    if (docs.has(doc)) return;
    docs.add(doc);
    // models a patch adds (a view's first visit): coloured once the patch is in, before they are drawn
    let pending = false;
    doc.on_change((event) => {
      const v = event.value;
      if (pending || (event.kind === 'ModelChanged' && (event.attr === 'data' || v === null || typeof v !== 'object'))) return;
      pending = true;
      queueMicrotask(() => { pending = false; paintDoc(doc, !!(media && media.matches), true); });
    });
  }

  function paintAll() {
    const dark = !!(media && media.matches);
    for (const doc of (window.Bokeh && Bokeh.documents) || []) { follow(doc); paintDoc(doc, dark, false); }
    document.documentElement.dataset.sdpaFigures = dark ? 'dark' : 'light';
  }
  window.__sdpaDarkFigures = {paint: paintAll};
  if (media && media.addEventListener) media.addEventListener('change', paintAll);
}
window.__sdpaDarkFigures.paint();
"""


def script() -> str:
    return DARK_FIGURES_JS % {"light": json.dumps(FIGURE_LIGHT), "dark": json.dumps(FIGURE_DARK), "data": json.dumps({k.lower(): v for k, v in DARK_DATA.items()})}


def install(doc) -> None:
    """Attach the script to a Bokeh document (no-op when there is none)."""
    if doc is not None:
        doc.js_on_event("document_ready", CustomJS(code=script()))
