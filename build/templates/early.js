// The main control of the link's view before Python is live (a module of boot.js, through firstpaint.js;
// tested in Node by tests/js/early.test.mjs). The build drew the view at every position of its main
// control (build/early_states.py: early/<view>/<position>.html, each checked by its hash here); the HTML
// layer's copy of that slider (build/html_paint.py, a disabled look-alike) is made live: a move fetches the
// position's state and swaps the view's figures and sentences in place, and the address follows (the
// history entry is replaced). firstpaint.js keeps the layer until Python has taken over at that value.

// The link's early table and the position it opens at, or null: its view has one and the link sets no
// other setting (`settingKeys`: firstpaint.js's), and its value of the control, if any, is one the
// build drew.
export function sdpaEarlyOf(early, key, search, settingKeys) {
  if (!early || !Object.hasOwn(early, key)) return null;
  const table = early[key];
  const query = new URLSearchParams(search);
  for (const k of settingKeys) {
    if (k !== table.key && query.has(k)) return null;
  }
  if (!query.has(table.key)) return {view: key, table, index: table.start};
  const index = table.query.indexOf(query.get(table.key).trim());
  return index < 0 ? null : {view: key, table, index};
}

// The address at a position: the control's key set to the value the live page writes there, or removed
// where that is the view's default (null), the rest of the address as it was; the view named, as the live
// page names it (the bare address is the answer, but a link with a setting and no view is the tour's).
export function sdpaEarlySearch(search, table, index, view) {
  const query = new URLSearchParams(search);
  if (!query.has("view")) query.set("view", view);
  const value = table.query[index];
  if (value === null) query.delete(table.key);
  else query.set(table.key, value);
  const text = query.toString();
  return text ? `?${text}` : "";
}

// The parts of a view that a position changes: its figures and its HTML panes (headline, notes), in
// page order. The controls stay, so a slider being dragged is never replaced under the pointer.
const PARTS = ".sdpa-hp-figure, .sdpa-hp-html";

// Swap `view`'s parts for those of `markup` (the view's HTML at another position). Returns how many parts
// changed; a state of another shape (a different number of parts) replaces the view's content whole.
export function sdpaApplyState(view, markup, doc = document) {
  const tpl = doc.createElement("template");
  tpl.innerHTML = markup;
  const fresh = tpl.content.firstElementChild;
  if (!fresh) return 0;
  const now = [...view.querySelectorAll(PARTS)];
  const next = [...fresh.querySelectorAll(PARTS)];
  if (now.length !== next.length) {
    view.replaceChildren(...fresh.childNodes);
    return -1;
  }
  let changed = 0;
  now.forEach((el, i) => {
    if (el.outerHTML !== next[i].outerHTML) {
      el.replaceWith(next[i]);
      changed += 1;
    }
  });
  return changed;
}

// The layer's look-alike of the control: the range input whose label reads "<label>: <value>".
export function sdpaEarlySlider(view, label) {
  for (const el of view.querySelectorAll("label.sdpa-hp-widget")) {
    const text = el.querySelector(".sdpa-hp-label");
    const input = el.querySelector('input[type="range"]');
    if (text && input && text.textContent.startsWith(`${label}:`)) return {label: el, text, input};
  }
  return null;
}

// Make the control live in `layer` (the HTML layer's element). `fetchState(file)`: the file's text, checked
// by its hash. Returns {move(i), focus(), moved, index} or null when the layer has no such control.
export function sdpaEarlyControl({early, layer, lab, fetchState, history = window.history, location = window.location,
                                  doc = document}) {
  const view = layer && [...layer.querySelectorAll('[class*="sdpa-view-"]')].find((el) => el.classList.contains(`sdpa-view-${early.view}`));
  const found = view && sdpaEarlySlider(view, early.table.label);
  if (!found) return null;
  const {table} = early;
  const {input, text} = found;
  const cache = new Map();
  const state = (i) => {
    if (!cache.has(i)) cache.set(i, fetchState(table.files[i]).catch((err) => {
      cache.delete(i);
      throw err;
    }));
    return cache.get(i);
  };
  const label = (i) => {
    const bold = text.querySelector("b");
    if (bold) bold.textContent = table.shown[i];
    input.value = String(i);
    input.setAttribute("aria-valuetext", table.shown[i]);
  };
  let applied = early.index === table.start ? table.start : null;   // the position the view's parts show
  const control = {
    index: early.index,
    moved: false,         // the reader moved it (the live page must take over at its value)
    // the layer came back over BokehJS's slider, which hid it and so took its focus: the keys go on here
    focus() { input.focus({preventScroll: true}); },
    async move(i, {byReader = true} = {}) {
      control.index = i;
      if (byReader) {
        control.moved = true;
        history.replaceState(history.state, "", `${location.pathname}${sdpaEarlySearch(location.search, table, i, early.view)}${location.hash}`);
      }
      label(i);
      try {
        const markup = await state(i);
        if (control.index !== i) return;            // the reader moved on meanwhile
        sdpaApplyState(view, markup, doc);
        applied = i;
        lab.early = {...lab.early, view: early.view, index: i, value: table.shown[i], at: performance.now(),
                     moves: (lab.early?.moves || 0) + (byReader ? 1 : 0)};
      } catch (err) {
        lab.earlyError = `${table.files[i].path}: ${err.message || err}`;
        console.warn(`SDPA Lab: ${lab.earlyError}; the figure follows once Python is running`);
        // the control goes back to what the view shows (the start, for a link whose state did not arrive)
        if (control.index === i) {
          control.index = applied === null ? table.start : applied;
          label(control.index);
        }
      }
    },
  };
  input.disabled = false;
  input.min = "0";
  input.max = String(table.files.length - 1);
  input.step = "1";
  input.value = String(early.index);
  input.setAttribute("aria-valuetext", table.shown[early.index]);
  input.addEventListener("input", () => control.move(Number(input.value)));
  // the positions one notch either side are fetched now, while the big downloads (BokehJS, Python) are only
  // starting: the reader's first move finds its state here, not queued behind them
  for (const i of [early.index - 1, early.index + 1]) {
    if (i >= 0 && i < table.files.length) state(i).catch(() => null);
  }
  found.label.classList.add("sdpa-hp-early");
  // attached: when the control became live (ms since navigation; benchmarks/measure_early.py)
  lab.early = {view: early.view, index: early.index, value: table.shown[early.index], at: null, moves: 0,
               attached: performance.now()};
  return control;
}
