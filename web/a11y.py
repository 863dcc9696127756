"""Accessible names for the parts of Bokeh's widgets that render without one.

Bokeh 3.9's slider handles (role="slider"), the spinner's +/- buttons and the checkbox input carry
no accessible name, and the Bootstrap template puts the sidebar inside a bare ``<ul>``. Nothing in
Panel's or Bokeh's Python API sets those attributes, so one small script, attached to the Bokeh
document's ``document_ready`` event (it works the same under ``panel serve`` and in Pyodide), copies
each widget's visible title into ``aria-label``.

Views are built on first visit, so the script labels again when the DOM changes: one
MutationObserver watches the document and every shadow root it has seen (mutations inside a shadow
root do not reach an observer of the document), and coalesces bursts of mutations into one pass in
the browser's idle time. A pass labels only the roots that changed and the shadow roots of added
elements (rescanning the whole page and every shadow root after each readout update cost ~90 ms of
main thread per slider step), so it stays off the slider-to-plot path and costs nothing while nothing changes.
"""
from __future__ import annotations

from bokeh.models import CustomJS

from .theme import FOCUS_CSS

A11Y_JS = r"""
// A skip link, first in the tab order: past the header bar and the settings drawer to the view.
if (!document.querySelector('a.sdpa-skip')) {
  const main = document.getElementById('main');
  if (main) {
    main.setAttribute('tabindex', '-1');
    main.setAttribute('role', 'main');
    const skip = document.createElement('a');
    skip.className = 'sdpa-skip';
    skip.href = '#main';
    skip.textContent = 'Skip to the view';
    document.body.prepend(skip);
  }
  const drawer = document.getElementById('sidebar');
  if (drawer) {
    drawer.setAttribute('role', 'complementary');
    drawer.setAttribute('aria-label', 'All settings');
  }
}
function roots(node, out) {
  out.push(node);
  const all = node.querySelectorAll ? node.querySelectorAll('*') : [];
  for (const el of all) { if (el.shadowRoot) roots(el.shadowRoot, out); }
  return out;
}
function labelRoot(root) {
  if (!root.querySelector) return;
  const title = root.querySelector('.bk-slider-title, .bk-input-group > label');
  let name = title ? title.textContent.split(':')[0].trim() : '';
  // a slider's shown value (its title's value span, computed in the browser by the slider's formatter)
  const value = title && title.querySelector('.bk-slider-value');
  let shown = value && !value.textContent.includes('..') ? value.textContent.trim() : '';
  if (!name && root.host) {
    // Panel's DiscreteSlider: the title ("d_k: 64") is a separate Div just before the slider,
    // and the handle's own aria-valuetext is the option's index; use the shown value instead
    const prev = labelSource(root.host);
    let text = '';
    if (prev && prev.shadowRoot) {
      for (const c of prev.shadowRoot.children) if (c.tagName !== 'STYLE' && c.tagName !== 'LINK') text += c.textContent;
    } else if (prev) { text = prev.textContent; }
    const parts = (text || '').replace(/\s+/g, ' ').split(':');
    name = parts[0].trim();
    shown = parts.length > 1 ? parts.slice(1).join(':').trim() : '';
  }
  for (const h of root.querySelectorAll('.noUi-handle')) {
    if (!h.getAttribute('aria-label') && name) h.setAttribute('aria-label', name);
    if (shown && h.getAttribute('aria-valuetext') !== shown) h.setAttribute('aria-valuetext', shown);
  }
  for (const b of root.querySelectorAll('.bk-spin-btn-up')) {
    if (!b.getAttribute('aria-label')) b.setAttribute('aria-label', 'Increase ' + name);
  }
  for (const b of root.querySelectorAll('.bk-spin-btn-down')) {
    if (!b.getAttribute('aria-label')) b.setAttribute('aria-label', 'Decrease ' + name);
  }
  for (const box of root.querySelectorAll('input[type="checkbox"]')) {
    const text = box.parentNode.querySelector('.bk-label');
    if (!box.getAttribute('aria-label') && text) box.setAttribute('aria-label', text.textContent.trim());
  }
  // a visible focus ring on every control: the page's :focus-visible rule (web/theme.py's CSS) reaches only the
  // shadow roots of panes that carry it; Bokeh's buttons and the plots' Save button set "outline: none"
  if (root.host && root.adoptedStyleSheets && !root.adoptedStyleSheets.includes(focusSheet())) {
    root.adoptedStyleSheets = [...root.adoptedStyleSheets, focusSheet()];
  }
  // a plot's event layer is a Tab stop with no name and nothing to do by keyboard (the page's plots have no
  // keyboard tools): out of the tab order. The plot itself is named (web/figure_labels.py).
  for (const layer of root.querySelectorAll('.bk-events[tabindex="0"]')) layer.setAttribute('tabindex', '-1');
  // formulas wider than a phone scroll sideways: make them reachable by keyboard
  for (const m of root.querySelectorAll('.bk-panel-models-katex-KaTeX')) {
    if (!m.hasAttribute('tabindex')) { m.setAttribute('tabindex', '0'); m.setAttribute('role', 'math'); }
  }
}
// One constructed stylesheet with the focus ring, shared by every shadow root.
function focusSheet() {
  if (!window.__sdpaFocusSheet) {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(FOCUS_CSS);
    window.__sdpaFocusSheet = sheet;
  }
  return window.__sdpaFocusSheet;
}
// The element whose text names the slider hosted by `host` (a DiscreteSlider's Div), if any.
function labelSource(host) {
  let prev = host.previousElementSibling;
  while (prev && (prev.tagName === 'STYLE' || prev.tagName === 'LINK')) prev = prev.previousElementSibling;
  return prev;
}
function labelPage() {
  for (const ul of document.querySelectorAll('#sidebar > ul')) ul.setAttribute('role', 'none');
  const main = document.getElementById('main');
  if (main && !main.getAttribute('role')) main.setAttribute('role', 'main');
}
if (!window.__sdpaA11y) {
  // Only what changed is labelled again: each mutation names its root (the document or a shadow
  // root); added elements bring their own shadow roots, which are observed and labelled; a changed
  // DiscreteSlider label also relabels the slider beside it. Bursts of mutations are one pass, in
  // the browser's idle time.
  const observed = new WeakSet();
  const dirty = new Set();
  let pending = false;
  const observer = new MutationObserver(collect);
  const OPTIONS = {childList: true, subtree: true, characterData: true,
                   attributes: true, attributeFilter: ['aria-valuetext']};  // noUiSlider rewrites it on every step
  function watch(root) {
    if (!observed.has(root)) { observed.add(root); observer.observe(root, OPTIONS); }
    dirty.add(root);
  }
  function collect(records) {
    const now = new Set();
    for (const r of records) {
      const root = r.target.getRootNode ? r.target.getRootNode() : document;
      dirty.add(root);
      // noUiSlider wrote its option's index ("12.00") at a key press: the shown value is named in this turn,
      // before a screen reader reads the handle (the slider's title already shows it: its formatter ran)
      if (r.type === 'attributes') now.add(root);
      if (root.host) {   // a DiscreteSlider's Div names the slider just after it
        let next = root.host.nextElementSibling;
        while (next && (next.tagName === 'STYLE' || next.tagName === 'LINK')) next = next.nextElementSibling;
        if (next && next.shadowRoot) dirty.add(next.shadowRoot);
      }
      for (const node of r.addedNodes || []) {
        if (node.nodeType !== 1) continue;
        if (node.shadowRoot) for (const sr of roots(node.shadowRoot, [])) watch(sr);
        for (const el of node.querySelectorAll('*')) {
          if (el.shadowRoot) for (const sr of roots(el.shadowRoot, [])) watch(sr);
        }
      }
    }
    for (const root of now) {                   // only writes what differs: its own records end here
      labelRoot(root);
      dirty.delete(root);                       // labelled whole: not again in idle time
    }
    schedule();
  }
  function run() {
    pending = false;
    collect(observer.takeRecords());
    pending = false;
    const todo = [...dirty];
    dirty.clear();
    for (const root of todo) labelRoot(root);   // only writes attributes that differ
    labelPage();
    observer.takeRecords();                     // its own writes
  }
  function schedule() {
    if (pending) return;
    pending = true;
    if (window.requestIdleCallback) requestIdleCallback(run, {timeout: 300}); else setTimeout(run, 50);
  }
  for (const root of roots(document, [])) watch(root);   // the first pass sees everything
  run();
  window.__sdpaA11y = true;
}
"""


def install(doc) -> None:
    """Attach the labelling script to a Bokeh document (no-op when there is none)."""
    if doc is not None:
        doc.js_on_event("document_ready", CustomJS(code=A11Y_JS, args={"FOCUS_CSS": FOCUS_CSS}))
