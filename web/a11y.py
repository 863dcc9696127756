"""Accessible names for the parts of Bokeh's widgets that render without one.

Bokeh 3.9's slider handles (role="slider"), the spinner's +/- buttons and the checkbox input carry
no accessible name, and the Bootstrap template puts the sidebar inside a bare ``<ul>``. Nothing in
Panel's or Bokeh's Python API sets those attributes, so one small script, attached to the Bokeh
document's ``document_ready`` event (it works the same under ``panel serve`` and in Pyodide), copies
each widget's visible title into ``aria-label``.

Views are built on first visit, so the script labels again when the DOM changes: one
MutationObserver watches the document and every shadow root it has seen (mutations inside a shadow
root do not reach an observer of the document), and coalesces bursts of mutations into one pass in
the browser's idle time, so it stays off the slider-to-plot path and costs nothing while nothing changes.
"""
from __future__ import annotations

from bokeh.models import CustomJS

A11Y_JS = r"""
function roots(node, out) {
  out.push(node);
  const all = node.querySelectorAll ? node.querySelectorAll('*') : [];
  for (const el of all) { if (el.shadowRoot) roots(el.shadowRoot, out); }
  return out;
}
function label() {
  for (const root of roots(document, [])) {
    if (!root.querySelector) continue;
    const title = root.querySelector('.bk-slider-title, .bk-input-group > label');
    let name = title ? title.textContent.split(':')[0].trim() : '';
    let shown = '';
    if (!name && root.host) {
      // Panel's DiscreteSlider: the title ("d_k: 64") is a separate Div just before the slider,
      // and the handle's own aria-valuetext is the option's index; use the shown value instead
      let prev = root.host.previousElementSibling;
      while (prev && (prev.tagName === 'STYLE' || prev.tagName === 'LINK')) prev = prev.previousElementSibling;
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
    // formulas wider than a phone scroll sideways: make them reachable by keyboard
    for (const m of root.querySelectorAll('.bk-panel-models-katex-KaTeX')) {
      if (!m.hasAttribute('tabindex')) { m.setAttribute('tabindex', '0'); m.setAttribute('role', 'math'); }
    }
  }
  for (const ul of document.querySelectorAll('#sidebar > ul')) ul.setAttribute('role', 'none');
  const main = document.getElementById('main');
  if (main && !main.getAttribute('role')) main.setAttribute('role', 'main');
}
if (!window.__sdpaA11y) {
  const observed = new WeakSet();
  let pending = false;
  const observer = new MutationObserver(schedule);
  const OPTIONS = {childList: true, subtree: true, characterData: true,
                   attributes: true, attributeFilter: ['aria-valuetext']};  // noUiSlider rewrites it on every step
  function watch() {
    for (const root of roots(document, [])) {
      if (!observed.has(root)) { observed.add(root); observer.observe(root, OPTIONS); }
    }
  }
  function run() {
    pending = false;
    watch();   // shadow roots created since the last pass
    label();   // only writes attributes that differ, so its own writes settle after one more pass
    observer.takeRecords();
  }
  function schedule() {
    if (pending) return;
    pending = true;
    if (window.requestIdleCallback) requestIdleCallback(run, {timeout: 300}); else setTimeout(run, 50);
  }
  run();
  window.__sdpaA11y = true;
}
"""


def install(doc) -> None:
    """Attach the labelling script to a Bokeh document (no-op when there is none)."""
    if doc is not None:
        doc.js_on_event("document_ready", CustomJS(code=A11Y_JS))
