"""Contrast of what a page shows, measured in the browser: shared by the dark-mode tests under
`panel serve` (tests/web/test_ui_dark.py) and on the built site's first paint (tests/build)."""

WCAG_AA = 4.5

# Colours are read once they are final: every stylesheet in every shadow root loaded, and no colour
# transition running (a button eases from Bootstrap's solid blue to its outline style as they load).
SETTLED_JS = """() => {
  const links = [], roots = [document]; const visit = (root) => { for (const el of root.querySelectorAll('*')) {
    if (el.tagName === 'LINK' && el.rel === 'stylesheet') links.push(el);
    if (el.shadowRoot) { roots.push(el.shadowRoot); visit(el.shadowRoot); } } }; visit(document);
  // a colour still in its transition (Panel's buttons: 0.15 s) is not the one the reader ends up with;
  // document.getAnimations() leaves out those inside shadow roots
  return links.every((l) => l.sheet !== null) && roots.every((r) => r.getAnimations().every(
    (a) => !(a instanceof CSSTransition) || a.playState !== 'running'));
}"""

# Every piece of text on screen and the Bokeh-drawn text, with its contrast ratio (WCAG 2.x).
CONTRAST_JS = """() => {
  const probe = document.createElement('canvas').getContext('2d');
  const rgba = (c) => {          // any CSS colour -> [r, g, b, a] (the canvas normalises it)
    if (c == null) return null;
    if (typeof c === 'object' && 'value' in c) c = c.value;
    if (typeof c !== 'string') return null;
    probe.fillStyle = '#010203'; probe.fillStyle = c;
    const s = probe.fillStyle;
    if (s[0] === '#') return [1, 3, 5].map((i) => parseInt(s.slice(i, i + 2), 16)).concat([1]);
    const p = s.match(/[\\d.]+/g).map(Number);
    return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const over = (top, below) => [0, 1, 2].map((i) => top[i] * top[3] + below[i] * (1 - top[3])).concat([1]);
  const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const ratio = (a, b) => { const x = lum(a), y = lum(b); return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
  const up = (el) => el.parentElement || (el.getRootNode() && el.getRootNode().host) || null;
  const hex = (c) => '#' + c.slice(0, 3).map((v) => Math.round(v).toString(16).padStart(2, '0')).join('');
  // the browser's own canvas behind a transparent page: white, or dark with `color-scheme: dark`
  const canvasColour = rgba(getComputedStyle(document.documentElement).colorScheme === 'dark' ? '#121212' : '#ffffff');
  const behind = (el) => {        // the opaque colour behind el, and the opacity el is drawn with
    const layers = []; let opacity = 1;
    for (let e = el; e; e = up(e)) {
      const s = getComputedStyle(e); opacity *= Number(s.opacity);
      const bg = rgba(s.backgroundColor);
      if (bg && bg[3] > 0) { layers.push(bg); if (bg[3] >= 1) break; }
    }
    let c = layers.length && layers[layers.length - 1][3] >= 1 ? layers.pop() : canvasColour;
    while (layers.length) c = over(layers.pop(), c);
    return [c, opacity];
  };
  const within = (el, test) => { for (let e = el; e; e = up(e)) if (test(e)) return true; return false; };
  const has = (cls) => (e) => e.classList && e.classList.contains(cls);
  const kind = (el) => {
    if (/^H[1-6]$/.test(el.tagName)) return 'heading';
    if (within(el, (e) => e.tagName === 'BUTTON')) return 'button';
    if (within(el, has('bk-slider-title'))) return 'slider title';
    if (within(el, (e) => e.tagName === 'LABEL')) return 'widget label';
    if (['SELECT', 'INPUT', 'TEXTAREA'].includes(el.tagName)) return 'input';
    if (within(el, has('bk-Legend'))) return 'legend';
    if (within(el, has('sdpa-caption'))) return 'caption';
    if (within(el, (e) => ['TH', 'TD', 'CAPTION'].includes(e.tagName))) return 'table';
    if (within(el, (e) => e.tagName === 'A' || e.tagName === 'SUMMARY')) return 'link';
    return 'body text';
  };
  const all = []; const visit = (root) => { for (const el of root.querySelectorAll('*')) { all.push(el);
    if (el.shadowRoot) visit(el.shadowRoot); } }; visit(document);
  const shown = (el) => { const r = el.getBoundingClientRect(); const s = getComputedStyle(el);
    return el.getClientRects().length > 0 && r.width > 2 && r.height > 2 && s.visibility !== 'hidden'; };
  // inactive controls are exempt from WCAG's contrast minimum (1.4.3), as in axe
  const disabled = (el) => within(el, (e) => e.hasAttribute && (e.hasAttribute('disabled') || e.getAttribute('aria-disabled') === 'true'));
  const texts = [];
  for (const el of all) {
    if (['STYLE', 'SCRIPT', 'TITLE', 'NOSCRIPT', 'OPTION'].includes(el.tagName)) continue;
    const field = ['SELECT', 'INPUT', 'TEXTAREA'].includes(el.tagName) && el.type !== 'checkbox' && el.type !== 'range';
    const own = field ? String(el.value || '') : [...el.childNodes].filter((n) => n.nodeType === 3).map((n) => n.textContent).join('').trim();
    if (!own.trim() || !shown(el) || disabled(el)) continue;
    if (within(el, (e) => e.tagName === 'DETAILS' && !e.open) && !within(el, (e) => e.tagName === 'SUMMARY')) continue;
    const s = getComputedStyle(el);
    const [bg, opacity] = behind(el);
    if (opacity === 0) continue;      // drawn fully transparent: not shown (a tour step's view before the pick)
    const fg = rgba(s.color);
    const seen = over([fg[0], fg[1], fg[2], fg[3] * opacity], bg);
    texts.push({kind: kind(el), text: own.trim().slice(0, 50), ratio: ratio(seen, bg), fg: hex(seen), bg: hex(bg)});
  }
  // Text Bokeh draws on the canvas, from the models' colours, against the plot's fill (or the page's)
  const body = behind(document.body)[0];
  const canvas = [];
  const name = (m) => m.constructor && m.constructor.__name__;
  const add = (what, colour, alpha, bg, text) => {
    const c = rgba(colour); if (!c) return;
    const seen = over([c[0], c[1], c[2], c[3] * (alpha == null ? 1 : alpha)], bg);
    canvas.push({kind: what, text: String(text).slice(0, 50), ratio: ratio(seen, bg), fg: hex(seen), bg: hex(bg)});
  };
  for (const doc of Bokeh.documents) for (const p of doc.all_models) {
    if (!(p.properties && 'border_fill_color' in p.properties && 'outline_line_color' in p.properties) || !p.visible) continue;
    const fill = (colour, alpha, under) => { const c = rgba(colour); return c ? over([c[0], c[1], c[2], c[3] * alpha], under) : under; };
    const border = fill(p.border_fill_color, p.border_fill_alpha, body);
    const frame = fill(p.background_fill_color, p.background_fill_alpha, body);
    const side = [...p.left, ...p.right, ...p.above, ...p.below];
    if (p.title && p.title.visible && p.title.text && !side.includes(p.title)) side.push(p.title);
    for (const m of side) {
      if (!m.visible) continue;
      if (name(m) === 'Title' && m.text) add('plot title', m.text_color, m.text_alpha, border, m.text);
      if ('axis_label_text_color' in m.properties) {
        if (m.axis_label) add('axis label', m.axis_label_text_color, m.axis_label_text_alpha, border, m.axis_label);
        add('tick label', m.major_label_text_color, m.major_label_text_alpha, border, name(m));
      }
      if (name(m) === 'ColorBar') {
        const bar = fill(m.background_fill_color, m.background_fill_alpha, border);
        add('colour bar label', m.major_label_text_color, m.major_label_text_alpha, bar, 'ticks');
        if (m.title) add('colour bar label', m.title_text_color, m.title_text_alpha, bar, m.title);
      }
    }
    for (const m of p.center) {
      if (m.visible && name(m) === 'Label') add('annotation', m.text_color, m.text_alpha, frame, m.text);
    }
  }
  return {page: hex(body), texts, canvas};
}"""


def lowest(items):
    """The lowest contrast per kind of text: {kind: [ratio, text, fg, bg]}."""
    out = {}
    for t in items:
        if t["kind"] not in out or t["ratio"] < out[t["kind"]][0]:
            out[t["kind"]] = [round(t["ratio"], 2), t["text"], t["fg"], t["bg"]]
    return out
