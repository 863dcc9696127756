// BokehJS's first draw in slices (a module of boot.js, tested by tests/js/slices.test.mjs, node --test).
//
// BokehJS builds, lays out and paints a whole document in one task: the link's first view took 290-380 ms
// here and 1.2-1.3 s with the CPU slowed 4x as on a phone, a stretch in which the page cannot answer a tap
// or a scroll. While a slicer (sdpaSlicer) runs that draw, each root and each plot starts in a task of its own, and
// each plot paints in a later task, one plot per task; the draw's promise resolves once every plot has
// painted. The HTML layer (firstpaint.js) covers the document until then. Only that draw is sliced: later
// updates run as BokehJS runs them.
//
// Plots also stop asking CSS for their colours. Each visual property (a line's colour, a label's font, ...)
// is first looked up as a CSS variable (--bk-<visual>-<name>) with getComputedStyle, which recalculates the
// page's styles whenever the DOM changed since the last lookup, at every paint of every plot. No stylesheet
// of the site sets one (the build checks: private_api.bokeh_css_variables), so every lookup answers "".
// And a plot reads its base font size from CSS once, not at each label its axes measure (776 reads when tour
// step 4 opens, each after the DOM changed: ~0.3 s of style recalculation in Chromium); read again after the
// window resized (a media query could change it), and until it has one (a plot not yet on the page has none).
//
// What it changes in BokehJS goes through bokehjs_internals.js (hookFirstDraw), which names BokehJS's internals;
// where they are missing, the draw runs in one piece and says so.
import {hookFirstDraw} from "./bokehjs_internals.js";

// A new task as soon as possible: scheduler.yield where the browser has it, else a message to ourselves
// (setTimeout(0) waits 4 ms once nested).
export function sdpaNextTask() {
  if (typeof scheduler !== "undefined" && typeof scheduler.yield === "function") return scheduler.yield();
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => { channel.port1.close(); resolve(); };
    channel.port2.postMessage(null);
  });
}

// Returns inSlices(Bokeh, draw): runs draw() (which calls Bokeh.embed.embed_items) in slices; resolves to
// what draw() resolves to. nextTask: how a slice ends (tests pass their own).
// onResize(listener): how the slicer hears that the window resized (tests pass their own).
export function sdpaSlicer({nextTask = sdpaNextTask, warn = (text) => console.warn(text),
                            onResize = (listener) => globalThis.addEventListener?.("resize", listener)} = {}) {
  let patched = null;       // null: not tried yet; false: BokehJS's internals moved; else {paint, destroyed}
  let slicing = false;
  const toPaint = new Set();    // plots whose paint waits for a task of its own
  let fontSizes = new WeakMap();  // plot view -> its base font size (px), until the window resizes
  onResize(() => { fontSizes = new WeakMap(); });

  function fontSize(view, read) {
    let size = fontSizes.get(view);
    if (size === undefined) {
      size = read();
      if (size != null) fontSizes.set(view, size);
    }
    return size;
  }

  function patch(Bokeh) {
    try {
      return hookFirstDraw(Bokeh, {
        beforeRoot: () => (slicing ? nextTask() : null),
        beforePlot: () => (slicing ? nextTask() : null),
        paint: (view, now) => {
          if (slicing) toPaint.add(view);
          else now();
        },
        fontSize,
      });
    } catch (err) {
      warn(`SDPA Lab: BokehJS's internals moved (${err.message || err}); its first draw runs in one piece`);
      return false;
    }
  }

  return async function inSlices(Bokeh, draw) {
    if (patched === null) patched = patch(Bokeh);
    if (patched === false || slicing) return draw();
    slicing = true;
    try {
      const result = await draw();
      // each plot's paint in its own task; a paint may ask for another (a plot laid out again): at most
      // a few rounds, then whatever is left paints at once
      for (let round = 0; toPaint.size && round < 4; round++) {
        for (const view of [...toPaint]) {
          toPaint.delete(view);
          await nextTask();
          if (!patched.destroyed(view)) patched.paint(view);
        }
      }
      return result;
    } finally {
      slicing = false;
      for (const view of toPaint) if (!patched.destroyed(view)) patched.paint(view);
      toPaint.clear();
    }
  };
}
