// The link's first paint (a module of boot.js, tested in Node by tests/build/test_firstpaint.py): which
// pre-rendered page the link gets, its HTML layer (build/html_paint.py) shown until BokehJS has drawn
// the pre-rendered document beneath it, and that document.

// The link's key among the pre-rendered pages (web/urlstate.py first_paint_links): its view, and on
// the tour its step. The bare address, and a link the page will correct (an unknown view, step 9), get the
// default first paint (web/urlstate.py HOME_VIEW: the answer); the live page then shows where a correction leads.
// What a link with settings shows blurred (boot.css html.sdpa-preview): the HTML layer and the drawn roots.
const PREVIEWED = "#sdpa-html-paint, [data-root-id]";

import {sdpaEarlyControl, sdpaEarlyOf} from "./early.js";

export function sdpaFirstPaintKey(search, defaultKey) {
  const query = new URLSearchParams(search);
  if (!query.toString()) return defaultKey;
  const view = query.get("view") === null ? "tour" : query.get("view");
  if (view !== "tour") return view;
  const step = query.get("step") === null ? "1" : query.get("step");
  return /^[1-9][0-9]?$/.test(step) ? `tour-${step}` : defaultKey;
}

// ?embed=1: the view alone, for a course page or a blog. Spaces around the value are stripped, as
// Python's parser strips them (web/urlstate.py), so that both runtimes read one link the same way.
export const sdpaEmbedded = (search) => /^(1|true|yes|on)$/i.test((new URLSearchParams(search).get("embed") || "").trim());

// The link's own settings, [[key, value], ...] in its order, first occurrence only: the setting keys
// (firstPaint.settings: web/settings.py's keys but view, step and embed) it gives. The first paint
// is drawn at the view's defaults, so a link with settings shows it as a preview (sdpa-preview).
export function sdpaLinkSettings(search, keys) {
  const out = [];
  for (const [key, value] of new URLSearchParams(search)) {
    if (keys.includes(key) && !out.some(([k]) => k === key)) out.push([key, value]);
  }
  return out;
}

// What the preview notice says: the view's defaults are showing, and which of the link's settings
// come once Python is live (at most three, each cut to 20 characters; set as text, never as HTML).
export function sdpaPreviewText(settings) {
  const cut = (v) => (v.length > 20 ? `${v.slice(0, 20)}…` : v);
  const shown = settings.slice(0, 3).map(([k, v]) => `${k} = ${cut(v)}`).join(", ");
  const more = settings.length > 3 ? ` and ${settings.length - 3} more` : "";
  return `Preview at this view's default settings, blurred: its numbers are not your link's. ` +
    `Your link's ${shown}${more} apply once Python is running in this tab.`;
}

// Embedded, the page's chrome (intro, navigation, footer: css class sdpa-chrome) is hidden and the embed
// bar (sdpa-embed-only) shown, as Python will have them. Changes `docs` in place.
export function sdpaForEmbed(docs) {
  const walk = (value) => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === "object") {
      const classes = value.type === "object" && value.attributes && value.attributes.css_classes;
      if (Array.isArray(classes) && classes.includes("sdpa-chrome")) value.attributes.visible = false;
      if (Array.isArray(classes) && classes.includes("sdpa-embed-only")) delete value.attributes.visible;  // its default
      Object.values(value).forEach(walk);
    }
  };
  walk(docs);
  return docs;
}

// The pre-rendered JSON is HTML-escaped inside its <script>; BokehJS reads it through this same
// unescaping (core/util/string unescape).
export const SDPA_ENTITIES = {amp: "&", lt: "<", gt: ">", quot: '"', "#x27": "'", "#x60": "`"};
export const sdpaUnescapeHtml = (text) => text.replace(/&(amp|lt|gt|quot|#x27|#x60);/g, (_, e) => SDPA_ENTITIES[e]);

// The page's root elements, [root id, element id], in the order of their root ids (the same for every
// pre-rendered page: the template's areas).
export function sdpaRootElements() {
  const found = [...document.querySelectorAll("[data-root-id]")].map((el) => [el.getAttribute("data-root-id"), el.id]);
  return found.sort((a, b) => (a[0] < b[0] ? -1 : 1));
}

// firstPaint: {default: key, files: {key: {path, integrity}}} (build/prerender.py first_paints):
// index.html carries the default page, first/<key>.json the others. inSlices(Bokeh, draw) runs BokehJS's
// draw (slices.js in the page; at once here).
// How long the layer kept over the live page waits for Python's answer to the handoff before it goes anyway.
const HANDOFF_MS = 5000;

// An early state's markup (early.js), checked by its hash.
async function fetchState(file) {
  const r = await fetch(`./${file.path}`, {integrity: file.integrity, priority: "high"});
  if (!r.ok) throw new Error(`HTTP ${r.status}`);
  return r.text();
}

export function sdpaFirstPaintOf({lab, firstPaint, search, inSlices = (Bokeh, draw) => draw()}) {
  const embedded = sdpaEmbedded(search);
  const key = sdpaFirstPaintKey(search, firstPaint.default);
  // own keys only: ?view=constructor must not find Object.prototype's
  const file = firstPaint.files && Object.hasOwn(firstPaint.files, key) ? firstPaint.files[key] : null;
  // the view's main control before Python is live (early.js): a link that sets at most that control
  // shows its own state, not a preview
  // (not offline: the states are not in the offline copy, and from it Python is live in about a second)
  const early = embedded || navigator.onLine === false ? null
    : sdpaEarlyOf(firstPaint.early, key, search, firstPaint.settings || []);
  const settings = sdpaLinkSettings(search, firstPaint.settings || []).filter(([k]) => !early || k !== early.table.key);
  // fetched while BokehJS downloads; checked by its hash (a damaged file draws the default page)
  const alternative = file ? fetch(`./${file.path}`, {integrity: file.integrity}).then((r) => {
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    return r.json();
  }).catch((err) => {
    console.warn(`SDPA Lab: ${file.path} could not be read (${err.message || err}); drawing the default page first`);
    return null;
  }) : Promise.resolve(null);

  // index.html's HTML layer is the default link's; another link's comes with its document, and the
  // default one stays hidden meanwhile (boot.css: sdpa-hp-other).
  const root = document.documentElement;
  if (embedded) root.classList.add("sdpa-embed");
  if (file || (early && early.index !== early.table.start)) root.classList.add("sdpa-hp-other");
  // the page parsed: readyState "interactive", before the deferred scripts (BokehJS, 1.3 MB) have arrived and
  // run, which DOMContentLoaded waits for: the link's layer and its live control must not wait for them
  const parsed = new Promise((resolve) => {
    if (document.readyState !== "loading") resolve();
    else document.addEventListener("readystatechange", () => resolve(), {once: true});
  });
  // A link with settings: the first paint's figures and numbers are another state's, so they show
  // blurred under a notice that says so (boot.css), until the live page has the link's (paint.live).
  lab.preview = settings.length ? settings.map(([k]) => k) : null;
  if (settings.length) {
    root.classList.add("sdpa-preview");
    parsed.then(() => {
      const main = document.getElementById("main");
      if (!main || !root.classList.contains("sdpa-preview")) return;
      const note = document.createElement("p");
      note.id = "sdpa-preview";
      note.setAttribute("role", "status");
      note.textContent = sdpaPreviewText(settings);
      main.setAttribute("aria-busy", "true");
      // what is blurred is another state's: not read to a screen reader either, only the notice is
      for (const el of main.querySelectorAll(PREVIEWED)) el.setAttribute("aria-hidden", "true");
      main.prepend(note);
    });
  }
  const layer = () => document.getElementById("sdpa-html-paint");
  const shown = alternative.then(async (alt) => {
    await parsed;
    const el = layer();
    if (el && alt && typeof alt.html === "string") el.innerHTML = alt.html;
    if (early && el) {
      paint.control = sdpaEarlyControl({early, layer: el, lab, fetchState});
      // the link's own value: its state replaces the view's default one before the layer shows
      if (paint.control && early.index !== early.table.start) await paint.control.move(early.index, {byReader: false});
    }
    root.classList.remove("sdpa-hp-other");   // a damaged file: the default view, as BokehJS will draw
  });

  const paint = {
    embedded,
    control: null,  // the layer's live control before Python is (early.js), where the view has one
    kept: false,    // the layer stays over the drawn document: the reader moved the control, or the link set it
    shown,          // the HTML layer shows the link's page
    drawn: null,    // the document BokehJS drew (what adopt.js compares the live one with)
    drawing: null,  // the draw's promise, once it has begun: the live document waits for it
    // Panel's page calls this instead of Bokeh.embed.embed_items (build/render.py): draw the link's
    // own view, then let the HTML layer go.
    draw(Bokeh, docsText, renderItems) {
      paint.drawing = drawDocument(Bokeh, docsText, renderItems);
      return paint.drawing;
    },
    // Python is live (boot.js, before its first patch goes): the live page takes over at the layer's value,
    // sent as a move of the live slider; a kept layer goes once Python has answered (settled) or after HANDOFF_MS
    handoff(jsdoc, moves = 0) {
      if (!paint.control) return false;
      handedOff = true;          // the drawn slider's moves are Python's from here on
      let sent = moves > 0;
      if (paint.control.moved) {
        // the layer's value goes to Python as a move of the live slider, after the moves replayed from BokehJS's
        // draw (the patch queue keeps one event per property, the last): the newest value wins
        const slider = drawnSlider(jsdoc);
        const value = early.table.positions[paint.control.index];
        if (slider && slider.value !== value) {
          slider.setv("value_throttled" in slider.properties ? {value, value_throttled: value} : {value});
          sent = true;
        }
      }
      // nothing to answer: the live page is at the value already
      if (paint.kept) handing = setTimeout(release, sent ? HANDOFF_MS : 0);
      return sent;
    },
    // Python answered: the layer goes once BokehJS has laid the answer out (two frames)
    settled() {
      if (handing !== null) requestAnimationFrame(() => requestAnimationFrame(release));
    },
    // the live page shows the link's own settings: the preview ends
    live() {
      root.classList.remove("sdpa-preview");
      const note = document.getElementById("sdpa-preview");
      if (note) note.remove();
      const main = document.getElementById("main");
      if (main) {
        main.removeAttribute("aria-busy");
        for (const el of main.querySelectorAll(PREVIEWED)) el.removeAttribute("aria-hidden");
      }
      if (lab.preview) lab.previewEnded = performance.now();
    },
  };

  async function drawDocument(Bokeh, docsText, renderItems) {
    const alt = await alternative;
    let docs = JSON.parse(sdpaUnescapeHtml(alt ? alt.docs_json : docsText));
    if (alt) {
      const roots = {};
      sdpaRootElements().forEach(([, el], i) => { roots[alt.root_ids[i]] = el; });
      Object.assign(renderItems[0], {docid: alt.docid, roots, root_ids: alt.root_ids});
    }
    if (embedded) docs = sdpaForEmbed(docs);
    lab.firstPaint = alt ? key : firstPaint.default;
    paint.drawn = docs;
    const start = performance.now();
    // Drawn in slices, the document takes several frames to settle: it stays hidden (boot.css) until it
    // shows whole, so that what it moves meanwhile is no layout shift the reader sees.
    root.classList.add("sdpa-drawing");
    let views;
    try {
      views = await inSlices(Bokeh, () => Bokeh.embed.embed_items(docs, renderItems));
    } catch (err) {
      root.classList.remove("sdpa-drawing");      // what BokehJS drew shows; the layer stays over it
      throw err;
    }
    lab.painted = {start, end: performance.now()};   // ms since navigation (printed by tests/build/test_site_engines.py)
    // two frames: BokehJS lays its views out in the frame after it has built them
    requestAnimationFrame(() => requestAnimationFrame(() => {
      root.classList.remove("sdpa-drawing");
      // the layer's control moved (or the link set it): the drawn document is at the default value, so
      // the layer stays over it, live, until Python takes over (handoff)
      // (Python may be live already, a warm boot: then the live page is the one to show)
      if (!lab.ready && paint.control && (paint.control.moved || paint.control.index !== early.table.start)) {
        paint.kept = true;
        root.classList.add("sdpa-early");
        lab.htmlPaint = "kept";
        return;
      }
      const el = layer();
      if (el) el.remove();
      lab.htmlPaint = "replaced";
      if (paint.control && el && !lab.ready) watchDrawnControl(Bokeh, el);
    }));
    return views;
  }

  // After the layer went, the drawn document's copy of the control moves nothing until Python is live (its
  // moves are replayed then, patches.js): a move of it brings the layer back, live, at that position.
  function drawnSlider(doc) {
    return doc && [...doc.all_models].find((m) => m.title === early.table.label && "value" in m.properties
                                                 && "start" in m.properties && "end" in m.properties);
  }

  function watchDrawnControl(Bokeh, el) {
    const doc = Bokeh.documents[Bokeh.documents.length - 1];
    const {table} = early;
    const slider = drawnSlider(doc);
    if (!slider) return;
    doc.on_change((event) => {
      if (lab.ready || handedOff || event.model !== slider || event.attr !== "value") return;
      // the nearest position the build drew (the dial's s moves by 0.1 once live, by 1 here)
      let i = 0;
      table.positions.forEach((p, k) => { if (Math.abs(p - slider.value) < Math.abs(table.positions[i] - slider.value)) i = k; });
      if (!paint.kept) {
        const main = document.getElementById("main");
        if (!main) return;
        main.prepend(el);
        paint.kept = true;
        root.classList.add("sdpa-early");
        lab.htmlPaint = "kept";
        paint.control.focus();
      }
      paint.control.move(i);
    }, false);
  }

  let handing = null, handedOff = false;
  function release() {
    if (handing === null) return;
    clearTimeout(handing);
    handing = null;
    const el = layer();
    if (el) el.remove();
    root.classList.remove("sdpa-early");
    lab.htmlPaint = "replaced";
    lab.earlyHandoff = performance.now();
  }
  return paint;
}
