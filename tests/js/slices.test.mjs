// build/templates/slices.js: BokehJS's first draw in slices, with stand-ins for BokehJS's view classes that
// record in which task each step ran. Each root and each plot starts in a task of its own, each plot paints in a
// later task of its own before the draw is done, nothing changes outside the draw, and a BokehJS whose internals
// moved draws in one piece and says so; a plot reads its font size from CSS once, and again after a resize.
import assert from "node:assert/strict";
import {test} from "node:test";

import {runTemplates} from "./template.mjs";

await runTemplates("slices.js");
const {sdpaSlicer} = globalThis;

let task = 0;
const nextTask = () => new Promise((resolve) => setImmediate(() => { task++; resolve(); }));

function bokeh({moved = false} = {}) {
  const log = [];
  class View { constructor(parent, name) { this.parent = parent; this.name = name; this.is_destroyed = false; } }
  class UIElementView extends View { async lazy_initialize() { log.push([task, "build", this.name]); } }
  class PlotView extends UIElementView {
    async lazy_initialize() { await super.lazy_initialize(); }
    paint() { log.push([task, "paint", this.name]); if (this.then) this.then(); }
    // as BokehJS reads it: getComputedStyle(this.el).fontSize, null while the plot is not on the page
    get base_font_size() { log.push([task, "font size read", this.name]); return this.fontSize ?? null; }
  }
  class VisualProperties { _get_css_value(name) { return `css ${name}`; } }
  const modules = {"models/ui/ui_element": {UIElementView}, "models/plots/plot_canvas": moved ? {} : {PlotView},
                   "core/visuals/visual": {VisualProperties}};
  return {log, View, UIElementView, PlotView, VisualProperties, Bokeh: {require: (m) => modules[m]}};
}

// As Bokeh.embed.embed_items draws: each root built, then laid out (its plots painted during the layout).
function embed(b, {plots = ["p1", "p2"], hooks = {}} = {}) {
  return async () => {
    const header = new b.UIElementView(null, "header");
    await header.lazy_initialize();
    b.log.push([task, "layout", "header"]);
    const main = new b.UIElementView(null, "main");
    await main.lazy_initialize();
    const views = plots.map((name) => Object.assign(new b.PlotView(main, name), hooks[name] || {}));
    for (const view of views) await view.lazy_initialize();
    b.log.push([task, "layout", "main"]);
    for (const view of views) view.paint();
    return {views};
  };
}

async function run(slicer, b, draw) {
  const start = task;
  const result = await slicer(b.Bokeh, draw);
  b.log.push([task, "resolved", typeof result]);
  return {log: b.log.map(([t, what, name]) => [t - start, what, name]), result: result !== undefined};
}
const tasks = (log, what) => Object.fromEntries(log.filter(([, w]) => w === what).map(([t, , name]) => [name, t]));
const named = (log, what) => log.filter(([, w]) => w === what).map(([, , name]) => name);

test("the first draw: each root and each plot in a task of its own, each plot painted later, one per task", async () => {
  const b = bokeh();
  const warned = [];
  const slicer = sdpaSlicer({nextTask, warn: (t) => warned.push(t)});
  const first = await run(slicer, b, embed(b));
  const log = first.log;
  const built = log.filter(([, w]) => w === "build");
  assert.deepEqual(built.map(([, , name]) => name), ["header", "main", "p1", "p2"]);
  // none in the task that began the draw
  assert.ok(0 < built[0][0] && built[0][0] < built[1][0] && built[1][0] < built[2][0] && built[2][0] < built[3][0], log);
  const layout = tasks(log, "layout");
  assert.deepEqual([layout.header, layout.main], [built[0][0], built[3][0]]);     // a root's layout follows its build
  const paints = log.filter(([, w]) => w === "paint");
  assert.deepEqual(paints.map(([, , name]) => name), ["p1", "p2"]);
  assert.ok(layout.main < paints[0][0] && paints[0][0] < paints[1][0], log);       // not inside the layout
  assert.deepEqual(log.at(-1).slice(0, 2), [paints.at(-1)[0], "resolved"]);       // done once the last has painted
  assert.equal(first.result, true);

  // outside the draw BokehJS runs as it does: a plot built later (a view switch) starts and paints at once
  b.log.length = 0;
  const later = new b.PlotView({}, "later");
  const before = task;
  await later.lazy_initialize();
  later.paint();
  assert.deepEqual(b.log.map(([t, what, name]) => [t - before, what, name]), [[0, "build", "later"], [0, "paint", "later"]]);
  assert.deepEqual(warned, []);
  assert.equal(new b.VisualProperties()._get_css_value("text-color"), "");         // plots read no CSS variable
});

test("a paint asked for again is not lost, a removed plot is not painted, a draw within a draw runs inside", async () => {
  const b = bokeh();
  const slicer = sdpaSlicer({nextTask, warn: () => {}});
  const hooks = {p2: {then() { this.other.paint(); }}};
  const draw = embed(b, {plots: ["p1", "p2", "p3"], hooks});
  const again = await run(slicer, b, async () => {
    const result = await draw();
    const [p1, p2, p3] = result.views;
    p2.other = p1;
    p3.is_destroyed = true;
    return result;
  });
  // p2's paint asks p1, painted already, to paint again: a second round paints it
  assert.deepEqual(named(again.log, "paint"), ["p1", "p2", "p1"]);
  assert.equal(again.log.at(-1)[1], "resolved");
  b.log.length = 0;
  const nested = await run(slicer, b, () => slicer(b.Bokeh, embed(b, {plots: ["n1"]})));
  assert.deepEqual(named(nested.log, "paint"), ["n1"]);
  assert.ok(tasks(nested.log, "layout").main < tasks(nested.log, "paint").n1, nested.log);
});

test("a BokehJS whose internals moved draws in one piece and says so", async () => {
  const b = bokeh({moved: true});
  const uiInit = b.UIElementView.prototype.lazy_initialize;
  const warned = [];
  const slicer = sdpaSlicer({nextTask, warn: (t) => warned.push(t)});
  const moved = await run(slicer, b, embed(b));
  assert.deepEqual([...new Set(moved.log.map(([t]) => t))], [0]);                 // every step in one task
  assert.deepEqual(named(moved.log, "paint"), ["p1", "p2"]);
  assert.deepEqual(warned, ["SDPA Lab: BokehJS's internals moved (models/plots/plot_canvas: PlotView is gone); its "
                            + "first draw runs in one piece"]);
  assert.equal(new b.VisualProperties()._get_css_value("text-color"), "css text-color");   // nothing patched,
  assert.equal(b.UIElementView.prototype.lazy_initialize, uiInit);                          // not even what was found
});

test("a plot reads its base font size from CSS once, until it has one, and again after the window resized", async () => {
  const b = bokeh();
  const resized = [];
  const slicer = sdpaSlicer({nextTask, warn: () => {}, onResize: (listener) => resized.push(listener)});
  await run(slicer, b, embed(b, {plots: ["p1"]}));
  const plot = new b.PlotView({}, "later");
  const reads = () => b.log.filter(([, what, name]) => what === "font size read" && name === "later").length;
  assert.equal(plot.base_font_size, null);          // not on the page yet: no size, asked again next time
  plot.fontSize = 12;
  assert.deepEqual([plot.base_font_size, plot.base_font_size, plot.base_font_size], [12, 12, 12]);
  assert.equal(reads(), 2);
  plot.fontSize = 14;                               // CSS changed it, and a resize says so
  assert.equal(plot.base_font_size, 12);
  assert.equal(resized.length, 1);
  resized[0]();
  assert.deepEqual([plot.base_font_size, plot.base_font_size], [14, 14]);
  assert.equal(reads(), 3);
  const other = Object.assign(new b.PlotView({}, "other"), {fontSize: 9});
  assert.equal(other.base_font_size, 9);            // each plot its own
});
