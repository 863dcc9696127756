// BokehJS's internals, in one module: every private class, method and field of BokehJS 3.9 (and of the views Panel
// 1.9 registers with it) that the page's runtime changes or reads. slices.js (the first draw in slices) and
// bokeh_leaks.js (what a removed view leaves behind) say what they want done through the hooks below and name
// nothing of BokehJS themselves, so an upgrade of Bokeh or Panel touches this file. build/private_api.py (BOKEHJS)
// lists each name and the build checks it against the BokehJS it ships; tests/build/test_private_api.py fails if
// another module names one. Each hook finds everything it needs before it changes anything: where something is
// gone it throws, naming it, and BokehJS is left as it was.

// The class `name` of BokehJS's module `module`, with each of `methods` its own.
function found(Bokeh, module, name, methods = []) {
  const cls = (Bokeh.require(module) || {})[name];
  if (typeof cls !== "function") throw new Error(`${module}: ${name} is gone`);
  for (const method of methods) {
    if (!Object.prototype.hasOwnProperty.call(cls.prototype, method)) throw new Error(`${module}: ${name}.${method} is gone`);
  }
  return cls;
}

// ---- the first draw (slices.js) --------------------------------------------------------------------------------

// A draw's hooks: beforeRoot() and beforePlot() run before a root's view and a plot's view initialize (what they
// return, if anything, is awaited first); paint(view, now) is asked instead of each plot's paint, and paints it when it calls now(). Plots'
// visuals stop looking their values up as CSS variables (--bk-*; none is set: private_api.bokeh_css_variables).
// fontSize(view, read) answers a plot's base font size (px or null) in place of BokehJS, which reads it from CSS
// (read() does) at every label its axes measure. Returns {paint(view): the plot's own paint, destroyed(view)}.
export function hookFirstDraw(Bokeh, {beforeRoot, beforePlot, paint, fontSize}) {
  const UIElementView = found(Bokeh, "models/ui/ui_element", "UIElementView", ["lazy_initialize"]);
  const PlotView = found(Bokeh, "models/plots/plot_canvas", "PlotView", ["lazy_initialize", "paint", "base_font_size"]);
  const VisualProperties = found(Bokeh, "core/visuals/visual", "VisualProperties", ["_get_css_value"]);
  const baseFontSize = Object.getOwnPropertyDescriptor(PlotView.prototype, "base_font_size");
  if (typeof baseFontSize.get !== "function") throw new Error("models/plots/plot_canvas: PlotView.base_font_size is no getter");
  const uiInit = UIElementView.prototype.lazy_initialize;
  UIElementView.prototype.lazy_initialize = async function () {
    const wait = this.parent == null ? beforeRoot() : null;      // a view without a parent is a root
    if (wait) await wait;                                        // no wait at all when there is nothing to wait for
    return uiInit.call(this);
  };
  const plotInit = PlotView.prototype.lazy_initialize;
  PlotView.prototype.lazy_initialize = async function () {
    const wait = beforePlot();
    if (wait) await wait;
    return plotInit.call(this);
  };
  const plotPaint = PlotView.prototype.paint;
  PlotView.prototype.paint = function () {
    paint(this, () => plotPaint.call(this));
  };
  VisualProperties.prototype._get_css_value = function () { return ""; };
  Object.defineProperty(PlotView.prototype, "base_font_size", {
    configurable: true, enumerable: baseFontSize.enumerable,
    get() { return fontSize(this, () => baseFontSize.get.call(this)); },
  });
  return {paint: (view) => plotPaint.call(view), destroyed: (view) => !!view.is_destroyed};
}

// ---- what a removed view leaves behind (bokeh_leaks.js) -------------------------------------------------------

// BokehJS keeps a Dict property as a Map or as a plain object
const isMap = (x) => x != null && typeof x.get === "function" && typeof x.set === "function";
const values = (dict) => isMap(dict) ? [...dict.values()] : dict == null ? [] : Object.values(dict);

// A views' lifetime, hooked: callbackAdded(model, eventName, callback) after a model took an event callback
// (Model.on_event, which Panel's Column and HTML views call on their models); connecting(view, run) runs each view
// class's own connect_signals and a widget's description builder (run() calls it; what it returns is theirs);
// removing(view) before a view is removed, and a removed plot is forgotten by every range it used (a
// DataRange1d's _plot_bounds keeps each plot view it served).
export function hookViewLifetimes(Bokeh, {callbackAdded, connecting, removing}) {
  const Model = found(Bokeh, "model", "Model", ["on_event"]);
  const View = found(Bokeh, "core/view", "View", ["remove"]);
  const PlotView = found(Bokeh, "models/plots/plot_canvas", "PlotView");
  const names = Bokeh.Models && Bokeh.Models.names;
  if (!Array.isArray(names)) throw new Error("Bokeh.Models.names is gone");

  const onEvent = Model.prototype.on_event;
  Model.prototype.on_event = function (event, callback) {
    const result = onEvent.call(this, event, callback);
    callbackAdded(this, typeof event === "string" ? event : event.prototype.event_name, callback);
    return result;
  };

  const own = (obj, name) => Object.prototype.hasOwnProperty.call(obj, name);
  const wrapped = new Set();
  for (const name of names) {
    const model = Bokeh.Models.get(name);
    const viewClass = model && model.prototype && model.prototype.default_view;
    for (let proto = viewClass && viewClass.prototype; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
      for (const method of ["connect_signals", "_build_description_el"]) {
        if (!own(proto, method) || wrapped.has(proto[method])) continue;
        const original = proto[method];
        const recorded = function (...args) { return connecting(this, () => original.apply(this, args)); };
        wrapped.add(recorded);
        proto[method] = recorded;
      }
    }
  }

  const remove = View.prototype.remove;
  View.prototype.remove = function () {
    removing(this);
    if (this instanceof PlotView && this.model) {
      const m = this.model;
      for (const range of [m.x_range, m.y_range, ...values(m.extra_x_ranges), ...values(m.extra_y_ranges)]) {
        if (range && isMap(range._plot_bounds)) range._plot_bounds.delete(this);
      }
    }
    return remove.call(this);
  };
}

// A callback out of a model's event callbacks, in place (as Model.on_event put it there).
export function dropCallback(model, eventName, callback) {
  const all = model.js_event_callbacks;
  const list = isMap(all) ? all.get(eventName) : all && all[eventName];
  if (!Array.isArray(list)) return;
  const kept = list.filter((f) => f !== callback);
  if (isMap(all)) all.set(eventName, kept);
  else all[eventName] = kept;
}

// The page's model graph pruned of the models no root reaches (BokehJS does it only after 30 s without a patch,
// bokeh#15289); false where the document cannot.
export const canPrune = (doc) => !!doc && typeof doc._recompute_all_models === "function";
export const pruneModelGraph = (doc) => doc._recompute_all_models();
