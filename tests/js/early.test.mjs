// build/templates/early.js in a jsdom page: which links get the live control before Python (a view with
// early states, no other setting, a value the build drew), the address at each position, the view's parts
// swapped in place (the control never replaced), and a move: the label, the address, the fetched state,
// a late answer dropped, a failed fetch said. Run by `node --test` (make test).
import assert from "node:assert/strict";
import {test} from "node:test";

import {loadTemplate} from "./template.mjs";

const TABLE = {label: "d_k (key/query dimension)", key: "d_k", query: ["1", "2", null, "8"], shown: ["1", "2", "4", "8"],
               start: 2, files: [0, 1, 2, 3].map((i) => ({path: `early/playground/${i}.html`, integrity: "sha256-x"}))};
const EARLY = {playground: TABLE};
const SETTINGS = ["d_k", "rho", "rule", "n"];

const view = (i) => `<div class="sdpa-hp-col sdpa-view-playground">`
  + `<div class="sdpa-hp-html"><p class="sdpa-headline">At d_k = ${TABLE.shown[i]}</p></div>`
  + `<div class="sdpa-hp-figure" role="img">fig ${i}</div>`
  + `<label class="sdpa-hp-widget"><span class="sdpa-hp-label">${TABLE.label}: <b>${TABLE.shown[i]}</b></span>`
  + `<input type="range" disabled min="0" max="3" value="${i}" step="any"></label>`
  + `<label class="sdpa-hp-widget"><span class="sdpa-hp-label">ρ: <b>0</b></span><input type="range" disabled></label></div>`;

function page() {
  const {w} = loadTemplate("early.js", {html: `<!doctype html><body><div id="sdpa-html-paint">${view(2)}</div></body>`});
  return w;
}

test("a link gets the live control only where its view has states and it sets nothing else", () => {
  const w = page();
  assert.equal(w.sdpaEarlyOf(EARLY, "playground", "?view=playground", SETTINGS).index, 2);
  assert.equal(w.sdpaEarlyOf(EARLY, "playground", "?view=playground&d_k=8", SETTINGS).index, 3);
  assert.equal(w.sdpaEarlyOf(EARLY, "playground", "?view=playground&d_k=%208%20", SETTINGS).index, 3);
  assert.equal(w.sdpaEarlyOf(EARLY, "playground", "?view=playground&d_k=4", SETTINGS), null);   // 4 is written as the default: absent
  assert.equal(w.sdpaEarlyOf(EARLY, "playground", "?view=playground&d_k=5", SETTINGS), null);   // not drawn: a preview
  assert.equal(w.sdpaEarlyOf(EARLY, "playground", "?view=playground&rho=0.5", SETTINGS), null);
  assert.equal(w.sdpaEarlyOf(EARLY, "dial", "?view=dial", SETTINGS), null);
  assert.equal(w.sdpaEarlyOf(EARLY, "constructor", "?view=constructor", SETTINGS), null);
  assert.equal(w.sdpaEarlyOf(undefined, "playground", "", SETTINGS), null);
});

test("the address at a position writes the live page's value, and drops it at the default", () => {
  const w = page();
  assert.equal(w.sdpaEarlySearch("?view=playground", TABLE, 3, "playground"), "?view=playground&d_k=8");
  assert.equal(w.sdpaEarlySearch("?view=playground&d_k=8&embed=0", TABLE, 2, "playground"), "?view=playground&embed=0");
  // the bare address is the answer; with a setting and no view a link is the tour's: the view is named
  assert.equal(w.sdpaEarlySearch("", TABLE, 3, "answer"), "?view=answer&d_k=8");
  assert.equal(w.sdpaEarlySearch("", TABLE, 2, "answer"), "?view=answer");
});

test("a state swaps the view's figures and sentences in place, and the controls stay", () => {
  const w = page();
  const el = w.document.querySelector(".sdpa-view-playground");
  const input = el.querySelector("input");
  assert.equal(w.sdpaApplyState(el, view(3), w.document), 2);
  assert.equal(el.querySelector(".sdpa-headline").textContent, "At d_k = 8");
  assert.equal(el.querySelector(".sdpa-hp-figure").textContent, "fig 3");
  assert.equal(el.querySelector("input"), input, "the slider under the pointer was replaced");
  assert.equal(w.sdpaApplyState(el, view(3), w.document), 0);
  // another shape: the content whole
  assert.equal(w.sdpaApplyState(el, `<div class="sdpa-view-playground"><div class="sdpa-hp-html">only</div></div>`, w.document), -1);
  assert.equal(el.textContent, "only");
});

test("a move shows the value at once, the address follows, the state arrives; a late answer is dropped", async () => {
  const w = page();
  const waits = {};
  const fetchState = (file) => new Promise((resolve, reject) => { waits[file.path] = {resolve, reject}; });
  const replaced = [];
  const history = {state: null, replaceState: (s, t, url) => replaced.push(url)};
  const location = {pathname: "/", search: "?view=playground", hash: ""};
  const lab = {};
  const early = w.sdpaEarlyOf(EARLY, "playground", location.search, SETTINGS);
  const control = w.sdpaEarlyControl({early, layer: w.document.getElementById("sdpa-html-paint"), lab, fetchState,
                                      history, location, doc: w.document});
  const input = w.document.querySelector(".sdpa-hp-early input");
  assert.ok(input && !input.disabled && input.max === "3" && input.step === "1" && input.value === "2");
  const {attached, ...rest} = lab.early;
  assert.deepEqual(rest, {view: "playground", index: 2, value: "4", at: null, moves: 0});
  assert.equal(typeof attached, "number");
  input.value = "3";
  input.dispatchEvent(new w.Event("input"));
  assert.equal(w.document.querySelector(".sdpa-hp-early b").textContent, "8");
  assert.deepEqual(replaced, ["/?view=playground&d_k=8"]);
  const slow = control.move(1);      // the reader moves on before state 3 arrives
  waits["early/playground/1.html"].resolve(view(1));
  await slow;
  waits["early/playground/3.html"].resolve(view(3));
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(w.document.querySelector(".sdpa-headline").textContent, "At d_k = 2", "a late state overwrote the current one");
  assert.equal(control.moved, true);
  assert.equal(lab.early.moves, 1);
  // a failed fetch is said, and the value stays
  const failed = control.move(0);
  waits["early/playground/0.html"].reject(new Error("integrity"));
  await failed;
  assert.match(lab.earlyError, /early\/playground\/0.html: integrity/);
  // the control goes back to the position the view shows
  assert.equal(w.document.querySelector(".sdpa-hp-early b").textContent, "2");
  assert.equal(input.value, "1");
  assert.equal(control.index, 1);
});

test("a layer without the control: nothing is made live", () => {
  const w = page();
  const early = {view: "playground", index: 0, table: {...TABLE, label: "Logit std s"}};
  assert.equal(w.sdpaEarlyControl({early, layer: w.document.getElementById("sdpa-html-paint"), lab: {}, fetchState: () => null}), null);
  assert.equal(w.sdpaEarlyControl({early: {...early, view: "dial"}, layer: w.document.getElementById("sdpa-html-paint"), lab: {}, fetchState: () => null}), null);
});
