// build/templates/bokeh_leaks.js (and bokehjs_internals.js, which it imports) on stand-ins for BokehJS's classes:
// a removed view takes with it what it added (event callbacks, the viewport listener, a range's plot bounds, a
// description's listeners), BokehJS internals that moved are left alone and said once, and the model graph is
// pruned once per interval. Run by `node --test`.
import assert from "node:assert/strict";
import {test} from "node:test";
import {runTemplates} from "./template.mjs";

await runTemplates("bokeh_leaks.js");
const {sdpaBokehLeaks} = globalThis;

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

const callbacksOf = (model) => (model.js_event_callbacks instanceof Map ? model.js_event_callbacks.get("scroll_to")
  : model.js_event_callbacks.scroll_to);

for (const callbacksAsMap of [false, true]) {
  test(`a removed view takes what it added (event callbacks kept in ${callbacksAsMap ? "a Map" : "an object"})`, () => {
    const viewport = counted("viewport"), doc = counted("document"), win = counted("window");
    const b = bokeh({callbacksAsMap, viewport, doc, win});
    const warned = [];
    const leaks = sdpaBokehLeaks({targets: () => [win, doc, viewport], warn: (t) => warned.push(t)});
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

    assert.equal(patchedFirst, true);
    assert.equal(patchedAgain, true);
    assert.deepEqual(warned, []);
    // two views of one Column model (a re-render): the removed one's callback goes, the live one's stays
    assert.deepEqual({before, after: after.length, newStillCalled: newColumn.scrolled === true, oldCalled: oldColumn.scrolled === true},
                     {before: 2, after: 1, newStillCalled: true, oldCalled: false});
    // the plot's viewport listener goes with it (the other plot's stays)
    assert.deepEqual([resizeBefore, listeners(viewport, "resize")], [2, 1]);
    // the removed plot leaves every range it used; the plot that shares its x range stays there
    assert.deepEqual([...range._plot_bounds.keys()], [other]);
    assert.equal(figure.y_range._plot_bounds.size, 0);
    assert.equal(extra._plot_bounds.size, 0);
    // a widget's description: its document and window listeners go with the widget
    assert.equal(built, "description");
    assert.deepEqual([describedBefore, describedAfter], [[1, 1], [0, 0]]);
    assert.deepEqual([oldColumn.removed, plot.removed, input.removed], [true, true, true]);     // BokehJS's own remove still runs
    assert.ok([win, doc, viewport].every((t) => !Object.prototype.hasOwnProperty.call(t, "addEventListener")));
    // outside a view's signals nothing is recorded: the page's own listener and callback stay
    assert.equal(listeners(win, "blur"), 1);
    assert.equal(callbacksOf(column).length, 2);
  });
}

test("BokehJS internals that moved are left alone, and said once", () => {
  const viewport = counted("viewport"), doc = counted("document"), win = counted("window");
  const b = bokeh({moved: true, viewport, doc, win});
  const onEvent = b.registry.get("Column").prototype.on_event;
  const warned = [];
  const leaks = sdpaBokehLeaks({targets: () => [win, doc, viewport], warn: (t) => warned.push(t)});
  assert.deepEqual([leaks.patch(b.Bokeh), leaks.patch(b.Bokeh)], [false, false]);
  assert.equal(warned.length, 1);
  assert.match(warned[0], /models\/plots\/plot_canvas: PlotView is gone/);
  assert.equal(b.registry.get("Column").prototype.on_event, onEvent);
  assert.ok(!Object.prototype.hasOwnProperty.call(b.ColumnView.prototype, "sdpaUndo"));
});

test("the graph is pruned once per interval, however many patches", () => {
  const timers = [];
  const leaks = sdpaBokehLeaks({pruneMs: 1000, setTimer: (fn, ms) => timers.push({fn, ms})});
  let recomputed = 0;
  const doc = {_recompute_all_models() { recomputed += 1; }};
  for (let i = 0; i < 50; i++) leaks.pruneSoon(doc);
  assert.deepEqual(timers.map((t) => t.ms), [1000]);
  timers.shift().fn();
  assert.equal(recomputed, 1);
  leaks.pruneSoon(doc);
  leaks.pruneSoon({});                 // a document without the method: nothing scheduled
  assert.equal(timers.length, 1);
});
