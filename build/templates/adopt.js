// Adopting the pre-rendered document: the worker builds the app with the pre-render's model ids
// (build/prerender.py FIRST_ID), so when the live document has the same models as the one on the page,
// the page keeps its views and takes only the live values that differ. Plain functions, included in
// boot.js's closure by the build (build/render.py boot_js), and run by tests/build/test_adopt.py in Node.

// A document's models: id -> {name, attributes}, with nested definitions replaced by references ({id}).
function sdpaModelsOf(docs_json) {
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
function sdpaAdoptEvents(drawn, live, {drawnHere = () => true, moved = new Set(), sameFile = () => false} = {}) {
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
