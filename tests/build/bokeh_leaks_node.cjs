// build/templates/bokeh_leaks.js in Node, with stand-ins for BokehJS's classes (run by
// tests/build/test_bokeh_leaks.py, which checks what it prints). Usage: node bokeh_leaks_node.cjs
"use strict";
const vm = require("node:vm");

const {runInContext} = require("../js/bundled.cjs");

// Stand-ins shaped as BokehJS 3.9's: Model.on_event appends to js_event_callbacks (a plain object here, a
// Map in the other run), View.remove, a plot view that listens to the viewport, a widget's description
// that listens to the document and the window, a DataRange1d with _plot_bounds.
function bokeh({moved = false, callbacksAsMap = false, viewport, doc, win} = {}) {
  class HasProps {}
  class Model extends HasProps {
    constructor() { super(); this.js_event_callbacks = callbacksAsMap ? new Map() : {}; }
    on_event(event, callback) {
      const name = typeof event === "string" ? event : event.prototype.event_name;
      const all = this.js_event_callbacks;
      const list = (all instanceof Map ? all.get(name) : all[name]) || [];
      if (all instanceof Map) all.set(name, [...list, callback]); else all[name] = [...list, callback];
    }
  }
  class View {
    constructor(model) { this.model = model; this.removed = false; }
    connect_signals() {}
    remove() { this.removed = true; }
  }
  class ColumnView extends View {
    connect_signals() { super.connect_signals(); this.model.on_event("scroll_to", () => this.scrolled = true); }
  }
  class PlotView extends View {
    connect_signals() { super.connect_signals(); viewport.addEventListener("resize", () => this.resized = true); }
  }
  class FigureView extends PlotView {}
  class InputView extends View {
    _build_description_el() {
      doc.addEventListener("mousedown", () => this.closed = true);
      win.addEventListener("blur", () => this.closed = true);
      return "description";
    }
  }
  class DataRange1d extends Model { constructor() { super(); this._plot_bounds = new Map(); } }
  const classes = {Column: ColumnView, Figure: FigureView, TextInput: InputView};
  const registry = new Map(Object.entries(classes).map(([name, view]) => {
    const M = class extends Model {};
    M.prototype.default_view = view;
    return [name, M];
  }));
  const modules = {"model": {Model}, "core/view": {View}, "models/plots/plot_canvas": moved ? {} : {PlotView}};
  const Bokeh = {require: (m) => modules[m], Models: {names: [...registry.keys()], get: (n) => registry.get(n)}};
  return {Bokeh, registry, View, ColumnView, FigureView, InputView, DataRange1d};
}

const listeners = (target, type) => target.count[type] || 0;
function counted(name) {
  const target = new EventTarget();
  target.count = {};
  const add = EventTarget.prototype.addEventListener, remove = EventTarget.prototype.removeEventListener;
  Object.defineProperty(target, "name", {value: name});
  // counts what is really registered, whoever calls
  const proto = Object.create(EventTarget.prototype);
  proto.addEventListener = function (type, fn, opts) { target.count[type] = (target.count[type] || 0) + 1; return add.call(this, type, fn, opts); };
  proto.removeEventListener = function (type, fn, opts) { target.count[type] -= 1; return remove.call(this, type, fn, opts); };
  Object.setPrototypeOf(target, proto);
  return target;
}

const out = {};
const ctx = vm.createContext({console});
runInContext(ctx, "bokeh_leaks.js");

for (const callbacksAsMap of [false, true]) {
  const viewport = counted("viewport"), doc = counted("document"), win = counted("window");
  const b = bokeh({callbacksAsMap, viewport, doc, win});
  const warned = [];
  const leaks = ctx.sdpaBokehLeaks({targets: () => [win, doc, viewport], warn: (t) => warned.push(t)});
  const patchedFirst = leaks.patch(b.Bokeh);
  const patchedAgain = leaks.patch(b.Bokeh);

  const column = new (b.registry.get("Column"))();
  const oldColumn = new b.ColumnView(column);
  oldColumn.connect_signals();
  const newColumn = new b.ColumnView(column);    // a re-render: a second view of the same model
  newColumn.connect_signals();
  const mine = (column.js_event_callbacks instanceof Map ? column.js_event_callbacks.get("scroll_to") : column.js_event_callbacks.scroll_to);
  const before = mine.length;
  oldColumn.remove();
  const after = (column.js_event_callbacks instanceof Map ? column.js_event_callbacks.get("scroll_to") : column.js_event_callbacks.scroll_to);
  after.forEach((f) => f());

  const range = new b.DataRange1d();
  const figure = new (b.registry.get("Figure"))();
  figure.x_range = range;
  figure.y_range = new b.DataRange1d();
  figure.extra_x_ranges = callbacksAsMap ? new Map([["right", new b.DataRange1d()]]) : {right: new b.DataRange1d()};
  const plot = new b.FigureView(figure);
  plot.connect_signals();
  const other = new b.FigureView(new (b.registry.get("Figure"))());
  other.model.x_range = range;
  other.connect_signals();
  range._plot_bounds.set(plot, "bounds").set(other, "bounds");
  figure.y_range._plot_bounds.set(plot, "bounds");
  const extra = callbacksAsMap ? figure.extra_x_ranges.get("right") : figure.extra_x_ranges.right;
  extra._plot_bounds.set(plot, "bounds");
  const resizeBefore = listeners(viewport, "resize");
  plot.remove();

  const input = new b.InputView(new (b.registry.get("TextInput"))());
  const built = input._build_description_el();
  const describedBefore = [listeners(doc, "mousedown"), listeners(win, "blur")];
  input.remove();
  const describedAfter = [listeners(doc, "mousedown"), listeners(win, "blur")];
  // outside any view's connect_signals, nothing is recorded and nothing is taken away
  win.addEventListener("blur", () => null);
  column.on_event("scroll_to", () => null);

  out[callbacksAsMap ? "map" : "object"] = {
    patchedFirst, patchedAgain, warned,
    callbacks: {before, after: after.length, newStillCalled: newColumn.scrolled === true, oldCalled: oldColumn.scrolled === true},
    resize: {before: resizeBefore, after: listeners(viewport, "resize")},
    bounds: {x: [...range._plot_bounds.keys()].map((v) => v === other ? "other" : "removed"),
             y: figure.y_range._plot_bounds.size, extra: extra._plot_bounds.size},
    description: {built, before: describedBefore, after: describedAfter},
    removedByBokeh: [oldColumn.removed, plot.removed, input.removed],
    addEventListenerRestored: [win, doc, viewport].every((t) => !Object.prototype.hasOwnProperty.call(t, "addEventListener")),
    outside: {blur: listeners(win, "blur"), callbacks: (column.js_event_callbacks instanceof Map ? column.js_event_callbacks.get("scroll_to") : column.js_event_callbacks.scroll_to).length},
  };
}

// internals moved: nothing patched, said once
{
  const viewport = counted("viewport"), doc = counted("document"), win = counted("window");
  const b = bokeh({moved: true, viewport, doc, win});
  const onEvent = b.registry.get("Column").prototype.on_event;
  const warned = [];
  const leaks = ctx.sdpaBokehLeaks({targets: () => [win, doc, viewport], warn: (t) => warned.push(t)});
  out.moved = {patched: [leaks.patch(b.Bokeh), leaks.patch(b.Bokeh)], warned,
               untouched: b.registry.get("Column").prototype.on_event === onEvent && !Object.prototype.hasOwnProperty.call(b.ColumnView.prototype, "sdpaUndo")};
}

// pruning: one timer however many patches, then the graph recomputed once; a later patch starts another
{
  const timers = [];
  const leaks = ctx.sdpaBokehLeaks({pruneMs: 1000, setTimer: (fn, ms) => timers.push({fn, ms})});
  let recomputed = 0;
  const doc = {_recompute_all_models() { recomputed += 1; }};
  for (let i = 0; i < 50; i++) leaks.pruneSoon(doc);
  const pending = timers.length;
  const ms = timers.map((t) => t.ms);
  timers.shift().fn();
  const afterFirst = recomputed;
  leaks.pruneSoon(doc);
  leaks.pruneSoon({});                 // a document without the method: nothing scheduled
  out.prune = {pending, ms, afterFirst, second: timers.length};
}

console.log(JSON.stringify(out));
