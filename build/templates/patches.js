// The page's side of Panel's patch protocol (a module of boot.js, tested in Node by
// tests/js/patches.test.mjs, node --test): which of the document's changes go to Python, and when.

// Changes Python made, or the page applies for it (its patches, adoption's): never sent back.
export const sdpaQuiet = {
  depth: 0,
  get on() { return this.depth > 0; },
  run(fn) {
    this.depth += 1;
    try {
      return fn();
    } finally {
      this.depth -= 1;
    }
  },
};

// One queue per worker. Changes go as one patch per event-loop task (a slider step sets `value` and
// `value_throttled`: one message). While Python works on a patch (`busy`, until it answers with
// `idle()`), the next changes wait and are merged: a property set twice is sent once, with its last
// value. `busy` starts true: nothing is sent before Python has linked the live document.
export function sdpaPatchQueue(post, now = () => performance.now()) {
  let flushing = false;
  const queue = {
    doc: null,              // the live document, once linked
    busy: true,
    events: [],
    sentAt: null,           // when the patch Python is working on was sent (ms), for sdpaLab.latencies
    change(event) {
      if (event.setter_id != null && event.setter_id === "py") return;   // Python's own change, echoed
      if (sdpaQuiet.on) return;
      if (event.sync === false) return;    // drawn in the page only (web/dark_figures.py: the plots' colours)
      if (event.model && event.attr) {
        queue.events = queue.events.filter((e) => !(e.model === event.model && e.attr === event.attr));
      }
      queue.events.push(event);
      if (!queue.busy && !flushing) {
        flushing = true;
        queueMicrotask(() => {
          flushing = false;
          queue.send();
        });
      }
    },
    send() {
      if (queue.busy || !queue.events.length || !queue.doc) return;
      const patch = queue.doc.create_json_patch(queue.events);
      queue.events = [];
      queue.busy = true;
      queue.sentAt = now();
      post({type: "patch", patch});
    },
    // Python is ready for the next patch (it answered the last one)
    idle() {
      queue.busy = false;
      queue.send();
    },
  };
  return queue;
}

// Moves made on the pre-rendered page, before Python is live, are recorded and made again on the live
// page once it is linked: the very events, when the live document adopts the pre-rendered one
// (adopt.js); otherwise by matching widgets by type, title or labels, and order (both documents are
// built by the same code).
export const SDPA_WIDGET_ATTRS = ["value", "value_throttled", "active"];

export function sdpaWidgetKeys(doc) {
  const keys = new Map();          // model -> key
  const seen = new Map();
  for (const m of doc.all_models) {
    if (!SDPA_WIDGET_ATTRS.some((a) => a in m.properties)) continue;
    const name = m.title ?? m.label ?? (Array.isArray(m.labels) ? m.labels.join("|") : "");
    const base = `${m.constructor.__qualified__ || m.constructor.__name__}|${name}`;
    const n = seen.get(base) || 0;
    seen.set(base, n + 1);
    keys.set(m, `${base}#${n}`);
  }
  return keys;
}

export function sdpaEarlyMoves() {
  const moves = new Map();         // key + attr -> {key, attr, value, event}, in the order they were made
  let watched = false;
  return {
    get size() { return moves.size; },
    // "model id.attr" of each recorded move (what adoption must not overwrite)
    ids() { return new Set([...moves.values()].map(({event}) => `${event.model.id}.${event.attr}`)); },
    // record the reader's moves on the pre-rendered document until `live()` says the live page has taken over
    watch(doc, live) {
      if (watched) return;
      watched = true;
      const keys = sdpaWidgetKeys(doc);
      doc.on_change((event) => {
        if (live() || sdpaQuiet.on) return;
        const key = event.model && keys.get(event.model);
        if (!key || !SDPA_WIDGET_ATTRS.includes(event.attr)) return;
        moves.delete(`${key}.${event.attr}`);
        moves.set(`${key}.${event.attr}`, {key, attr: event.attr, value: event.value, event});
      }, false);
    },
    // make the moves again on the live document; `adopted`: it is the pre-rendered one, so the recorded
    // events go to Python as they were made. Returns how many moves there were.
    replay(jsdoc, adopted, queue) {
      const count = moves.size;
      if (adopted) {
        for (const {event} of moves.values()) queue.change(event);
      } else if (count) {
        const models = new Map([...sdpaWidgetKeys(jsdoc)].map(([m, k]) => [k, m]));
        for (const {key, attr, value} of moves.values()) {
          const model = models.get(key);
          if (model && attr in model.properties) model.setv({[attr]: value});
        }
      }
      moves.clear();
      return count;
    },
  };
}
