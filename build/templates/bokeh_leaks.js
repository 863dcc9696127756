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
// What it changes in BokehJS goes through bokehjs_internals.js (hookViewLifetimes), which names BokehJS's
// internals; where they are missing, nothing is changed and the page says so in the console.
import {canPrune, dropCallback, hookViewLifetimes, pruneModelGraph} from "./bokehjs_internals.js";

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
      return fn();
    } finally {
      stack.pop();
      for (const target of taken) delete target.addEventListener;
    }
  }

  function patchOnce(Bokeh) {
    hookViewLifetimes(Bokeh, {
      // a callback a view's signals added to a model goes with the view
      callbackAdded: (model, name, callback) => {
        const view = stack[stack.length - 1];
        if (view) undoList(view).push(() => dropCallback(model, name, callback));
      },
      connecting: (view, run) => recording(view, run),
      removing: (view) => {
        const undo = own(view, "sdpaUndo") ? view.sdpaUndo.splice(0) : [];
        for (const fn of undo) {
          try { fn(); } catch (_) { /* a listener already gone */ }
        }
      },
    });
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
      if (timer !== null || !canPrune(doc)) return;
      timer = setTimer(() => {
        timer = null;
        pruneModelGraph(doc);
      }, pruneMs);
    },
  };
}
