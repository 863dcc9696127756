// Adopting the pre-rendered document: the worker builds the app with the pre-render's model ids
// (build/prerender.py FIRST_ID), so when the live document has the same models as the one on the page,
// the page keeps its views and takes only the live values that differ. A module of boot.js (bundled by
// build/bundle.py), run by tests/js/adopt.test.mjs (node --test).
import {sdpaQuiet} from "./patches.js";
import {sdpaRootElements} from "./firstpaint.js";

// A document's models: id -> {name, attributes}, with nested definitions replaced by references ({id}).
export function sdpaModelsOf(docs_json) {
  const models = new Map();
  const strip = (value) => {
    if (Array.isArray(value)) return value.map(strip);
    if (value === null || typeof value !== "object") return value;
    if (value.type === "object" && typeof value.id === "string") {
      if (!models.has(value.id)) {
        const entry = {name: value.name, attributes: {}};
        models.set(value.id, entry);
        for (const [k, v] of Object.entries(value.attributes || {})) entry.attributes[k] = strip(v);
      }
      return {id: value.id};
    }
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, strip(v)]));
  };
  for (const doc of Object.values(docs_json)) strip(doc.roots);
  return models;
}

// The patch that turns the drawn document into the live one, as ModelChanged events, or null when it
// cannot: another count of models, a model the live one lacks or has of another type, one the page has
// not drawn (`drawnHere(id)` false), or an attribute back to its default (Bokeh leaves defaults out of
// the JSON, and a patch cannot say "the default"). `moved`: "id.attr" the reader has already changed
// (their value stays); `sameFile(a, b)`: two stylesheet URLs of one file (not loaded again).
export function sdpaAdoptEvents(drawn, live, {drawnHere = () => true, moved = new Set(), sameFile = () => false} = {}) {
  if (drawn.size !== live.size) return null;
  const events = [];
  for (const [id, model] of live) {
    const there = drawn.get(id);
    if (!there || there.name !== model.name || !drawnHere(id)) return null;
    for (const attr of Object.keys(there.attributes)) {
      if (!(attr in model.attributes)) return null;
    }
    for (const [attr, value] of Object.entries(model.attributes)) {
      const drawnValue = there.attributes[attr];
      if (moved.has(`${id}.${attr}`) || JSON.stringify(value) === JSON.stringify(drawnValue)) continue;
      if (attr === "url" && sameFile(value, drawnValue)) continue;
      events.push({kind: "ModelChanged", model: {id}, attr, new: value});
    }
  }
  return events;
}

// The live document on the page, from the worker's render message ({docs_json, render_items, root_ids}):
// the pre-rendered one kept with the live values patched in (sdpaAdoptEvents), else drawn anew in its
// place, root by root. lab: the page's record (lab.adopted: what was patched, or null when drawn anew);
// firstPaint: firstpaint.js's (its `drawn` document); earlyMoves: patches.js's (values the reader moved
// before Python was live stay); base: the site's folder; panelDist: where this site keeps Panel's
// files; bokehJs: BokehJS's file, named when it is missing. Returns draw(msg): a promise of the document.
// beforeDraw(Bokeh): runs before BokehJS draws anything here (boot.js: bokeh_leaks.js's patch).
export function sdpaLiveDocument({lab, firstPaint, earlyMoves, base, panelDist, bokehJs, beforeDraw = () => {}}) {
  // Python renders its stylesheets from Panel's server-style paths; point them at our copy too.
  const local = (json) => json.replaceAll('"static/extensions/panel/', `"${panelDist}`);
  // The worker names Panel's stylesheets by absolute URL, the pre-render by relative URL with a
  // version query: one file.
  const sameFile = (a, b) => {
    if (typeof a !== "string" || typeof b !== "string") return false;
    const file = (u) => new URL(u, base).href.split("?")[0];
    return file(a) === file(b);
  };

  function adopt(liveDocs) {
    const jsdoc = window.Bokeh && Bokeh.documents && Bokeh.documents.length === 1 && Bokeh.documents[0];
    if (!jsdoc || !firstPaint.drawn) return null;
    let drawn;
    try {
      drawn = sdpaModelsOf(JSON.parse(local(JSON.stringify(firstPaint.drawn))));
    } catch (_) {
      return null;
    }
    const events = sdpaAdoptEvents(drawn, sdpaModelsOf(liveDocs),
                                   {drawnHere: (id) => !!jsdoc.get_model_by_id(id), moved: earlyMoves.ids(), sameFile});
    if (events === null) return null;
    if (events.length) sdpaQuiet.run(() => jsdoc.apply_json_patch({events}, new Map()));
    const attrs = {};         // what differed, by attribute name (read by tests and measure_site.py)
    for (const {attr} of events) attrs[attr] = (attrs[attr] || 0) + 1;
    lab.adopted = {changed: events.length, models: drawn.size, attrs};
    return jsdoc;
  }

  return async function draw(msg) {
    if (!window.Bokeh || !Bokeh.embed) throw new Error(`BokehJS is not loaded (${bokehJs} did not run)`);
    beforeDraw(Bokeh);
    const docs_json = JSON.parse(local(msg.docs_json));
    const adopted = adopt(docs_json);
    if (adopted) return adopted;
    const render_items = JSON.parse(msg.render_items);
    const root_ids = JSON.parse(msg.root_ids);
    const roots = {};
    sdpaRootElements().forEach(([, id], i) => { roots[root_ids[i]] = id; });
    render_items[0].roots = roots;
    render_items[0].root_ids = root_ids;
    // The live document replaces the pre-rendered one in place, root by root.
    Bokeh.index.roots.map((v) => v.remove());
    for (const el of document.querySelectorAll("[data-root-id]")) el.innerHTML = "";
    const [views] = await Bokeh.embed.embed_items(docs_json, render_items);
    lab.adopted = null;
    return [...views.roots.values()][0].model.document;
  };
}
