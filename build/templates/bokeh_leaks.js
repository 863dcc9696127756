// What keeps a removed figure alive in BokehJS 3.9 and Panel 1.9, closed for a long session (a module
// of boot.js; tested by tests/js/bokeh_leaks.test.mjs (node --test), and in the built site by
// tests/build/test_site_long_session.py).
//
// Switching views replaces a part of the document: Python drops the old view's models and the page's views
// of them are removed. Measured in the built site (issue 34), every round of 9 views kept about 340 more
// models and 11 MB more of the page's JS heap, for three reasons:
// 1. The page's model graph is pruned only after 30 s without a patch from Python (bokeh#15289): a reader
//    who keeps moving a control never gets there. pruneSoon() prunes it at most `pruneMs` after a patch,
//    however many patches follow.
// 2. A view's listeners outlive the view (bokeh#15290 and its kin): every plot listens to the visual
//    viewport's resize, every widget with a description to the document's mousedown and the window's blur,
//    and Panel's Column and HTML views add callbacks to their model's js_event_callbacks; none is taken
//    away when the view is removed, and each holds its view and everything the view holds. Here whatever a
//    view adds while it connects its signals or builds its description goes again when it is removed.
// 3. A DataRange1d keeps every plot view it served (its _plot_bounds): a removed plot is forgotten there.
//
// This reaches into BokehJS's modules; build/private_api.py (BOKEHJS) lists each name and the build checks
// them against the BokehJS it ships. Where they are missing, nothing is changed and the page says so in the
// console.

// Returns {patch(Bokeh), pruneSoon(doc)}. targets(): the objects whose listeners a view may leave behind.
export function sdpaBokehLeaks({pruneMs = 1000, setTimer = (fn, ms) => setTimeout(fn, ms),
                         targets = () => [window, document, window.visualViewport],
                         warn = (text) => console.warn(text)} = {}) {
  let patched = null;       // null: not tried yet; true or false once tried
  let timer = null;
  const stack = [];         // the views whose signals are being connected, innermost last

  const own = (obj, name) => Object.prototype.hasOwnProperty.call(obj, name);
  const undoList = (view) => own(view, "sdpaUndo") ? view.sdpaUndo : (view.sdpaUndo = []);

  // fn() with every listener added to targets() meanwhile written down on view, to be taken away with it
  function recording(view, fn) {
    const undo = undoList(view);
    const taken = [];
    for (const target of targets()) {
      if (target == null || own(target, "addEventListener")) continue;       // an outer call records already
      const add = target.addEventListener;
      const remove = target.removeEventListener;
      target.addEventListener = function (type, listener, options) {
        undo.push(() => remove.call(target, type, listener, options));
        return add.call(target, type, listener, options);
      };
      taken.push(target);
    }
    stack.push(view);
    try {
      return fn.call(view);
    } finally {
      stack.pop();
      for (const target of taken) delete target.addEventListener;
    }
  }

  // BokehJS keeps a Dict property as a Map or as a plain object
  const isMap = (x) => x != null && typeof x.get === "function" && typeof x.set === "function";
  const values = (dict) => isMap(dict) ? [...dict.values()] : dict == null ? [] : Object.values(dict);

  // a callback out of a model's js_event_callbacks, in place (as Model.on_event put it there)
  function dropCallback(model, name, callback) {
    const all = model.js_event_callbacks;
    const list = isMap(all) ? all.get(name) : all && all[name];
    if (!Array.isArray(list)) return;
    const kept = list.filter((f) => f !== callback);
    if (isMap(all)) all.set(name, kept);
    else all[name] = kept;
  }

  function require(Bokeh, module, name) {
    const found = (Bokeh.require(module) || {})[name];
    if (typeof found !== "function") throw new Error(`${module}: ${name} is gone`);
    return found;
  }

  function patchOnce(Bokeh) {
    const Model = require(Bokeh, "model", "Model");
    const View = require(Bokeh, "core/view", "View");
    const PlotView = require(Bokeh, "models/plots/plot_canvas", "PlotView");
    for (const [cls, method] of [[Model, "on_event"], [View, "remove"]]) {
      if (!own(cls.prototype, method)) throw new Error(`${cls.name}.${method} is gone`);
    }
    const names = Bokeh.Models && Bokeh.Models.names;
    if (!Array.isArray(names)) throw new Error("Bokeh.Models.names is gone");

    const onEvent = Model.prototype.on_event;
    Model.prototype.on_event = function (event, callback) {
      const result = onEvent.call(this, event, callback);
      const view = stack[stack.length - 1];
      if (view) {
        const name = typeof event === "string" ? event : event.prototype.event_name;
        undoList(view).push(() => dropCallback(this, name, callback));
      }
      return result;
    };

    // every view class's own connect_signals, and a widget's description, record what they add
    const wrapped = new Set();
    for (const name of names) {
      const model = Bokeh.Models.get(name);
      const viewClass = model && model.prototype && model.prototype.default_view;
      for (let proto = viewClass && viewClass.prototype; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
        for (const method of ["connect_signals", "_build_description_el"]) {
          if (!own(proto, method) || wrapped.has(proto[method])) continue;
          const original = proto[method];
          const recorded = function (...args) { return recording(this, () => original.apply(this, args)); };
          wrapped.add(recorded);
          proto[method] = recorded;
        }
      }
    }

    const remove = View.prototype.remove;
    View.prototype.remove = function () {
      const undo = own(this, "sdpaUndo") ? this.sdpaUndo.splice(0) : [];
      for (const fn of undo) {
        try { fn(); } catch (_) { /* a listener already gone */ }
      }
      if (this instanceof PlotView && this.model) {
        const m = this.model;
        for (const range of [m.x_range, m.y_range, ...values(m.extra_x_ranges), ...values(m.extra_y_ranges)]) {
          if (range && isMap(range._plot_bounds)) range._plot_bounds.delete(this);
        }
      }
      return remove.call(this);
    };
  }

  return {
    // before BokehJS draws anything (idempotent)
    patch(Bokeh) {
      if (patched !== null) return patched;
      try {
        patchOnce(Bokeh);
        patched = true;
      } catch (err) {
        warn(`SDPA Lab: BokehJS's internals moved (${err.message || err}); removed figures may stay in memory`);
        patched = false;
      }
      return patched;
    },
    // after a patch from Python: the models it dropped leave the page's graph within pruneMs
    pruneSoon(doc) {
      if (timer !== null || !doc || typeof doc._recompute_all_models !== "function") return;
      timer = setTimer(() => {
        timer = null;
        doc._recompute_all_models();
      }, pruneMs);
    },
  };
}
