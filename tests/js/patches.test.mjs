// build/templates/patches.js: which of the page's changes go to Python, merged how and sent when, and how the
// reader's moves on the pre-rendered page are made again on the live one. patches.js runs as boot.js includes it
// (plain functions, by text), on small stand-ins for a Bokeh document.
import assert from "node:assert/strict";
import {test} from "node:test";

import {runTemplates} from "./template.mjs";

await runTemplates("patches.js");
// what patches.js declares, in this realm's global scope (sdpaQuiet is a `const` there, not a property of globalThis)
/* global sdpaQuiet, sdpaPatchQueue, sdpaEarlyMoves, sdpaWidgetKeys */

class Slider {
  constructor(id, title, value) {
    Object.assign(this, {id, title, value, set: []});
    this.properties = {value: {}, value_throttled: {}, title: {}};
  }
  setv(attrs) { this.set.push(attrs); }
}
Slider.__name__ = "Slider";
class Select extends Slider {}
Select.__name__ = "Select";
class Div {
  constructor(id) { Object.assign(this, {id}); this.properties = {text: {}}; }
}
Div.__name__ = "Div";

function doc(prefix) {
  const listeners = [];
  return {
    all_models: [new Div(`${prefix}0`), new Slider(`${prefix}1`, "d_k", 64), new Slider(`${prefix}2`, "σ", 1),
                 new Slider(`${prefix}3`, "d_k", 8), new Select(`${prefix}4`, "rule", "sqrt")],
    on_change(fn) { listeners.push(fn); },
    emit(event) { listeners.forEach((fn) => fn(event)); },
    create_json_patch(events) { return {events: events.map((e) => [e.model.id, e.attr, e.value])}; },
  };
}
const ev = (model, attr, value, more = {}) => ({kind: "ModelChanged", model, attr, value, ...more});
const tick = () => new Promise((resolve) => setTimeout(resolve, 0));
const patch = (...changes) => ({type: "patch", patch: {events: changes}});

function linkedQueue() {
  const sent = [];
  let clock = 0;
  const queue = sdpaPatchQueue((msg) => sent.push(msg), () => (clock += 10));
  queue.doc = doc("p");
  return {queue, sent, m: queue.doc.all_models};
}

test("one patch per task, a property set twice sent once with its last value", async () => {
  const {queue, sent, m} = linkedQueue();
  queue.busy = false;
  queue.change(ev(m[1], "value", 128));
  queue.change(ev(m[1], "value_throttled", 128));
  queue.change(ev(m[1], "value", 256));
  assert.equal(sent.length, 0);                 // sent after the task, not on the first change
  await tick();
  assert.deepEqual(sent, [patch(["p1", "value_throttled", 128], ["p1", "value", 256])]);
  assert.deepEqual([queue.busy, queue.sentAt], [true, 10]);
});

test("while Python works, changes wait and merge; idle sends them", async () => {
  const {queue, sent, m} = linkedQueue();
  queue.busy = false;
  queue.change(ev(m[1], "value", 128));
  await tick();
  queue.change(ev(m[1], "value", 256));
  queue.change(ev(m[2], "value", 2));
  queue.change(ev(m[1], "value", 512));
  await tick();
  assert.equal(sent.length, 1);
  queue.idle();
  assert.deepEqual(sent[1], patch(["p2", "value", 2], ["p1", "value", 512]));
});

test("nothing is sent before Python is ready, nor without a live document", async () => {
  const {queue, sent, m} = linkedQueue();       // busy: Python has not said "ready"
  queue.change(ev(m[1], "value", 128));
  await tick();
  assert.equal(sent.length, 0);
  queue.busy = false;
  queue.send();
  const unlinked = sdpaPatchQueue((msg) => sent.push(msg));
  unlinked.busy = false;                        // no document yet
  unlinked.change(ev(m[2], "value", 2));
  await tick();
  unlinked.send();
  assert.deepEqual(sent, [patch(["p1", "value", 128])]);
  assert.equal(unlinked.events.length, 1);      // kept for when the document is linked
});

test("Python's echo, the page's own applying and page-only changes are not sent", async () => {
  const {queue, sent, m} = linkedQueue();
  queue.busy = false;
  queue.change(ev(m[1], "value", 128, {setter_id: "py"}));
  sdpaQuiet.run(() => queue.change(ev(m[1], "value", 256)));
  queue.change(ev(m[0], "text", "dark", {sync: false}));
  await tick();
  queue.idle();
  assert.throws(() => sdpaQuiet.run(() => { throw new Error("a patch that fails"); }), {message: "a patch that fails"});
  queue.change(ev(m[2], "value", 2));           // quiet again after the failure
  await tick();
  assert.deepEqual(sent, [patch(["p2", "value", 2])]);
  assert.equal(sdpaQuiet.on, false);
});

test("widgets are keyed by type, title and order", () => {
  assert.deepEqual([...sdpaWidgetKeys(doc("p")).values()], ["Slider|d_k#0", "Slider|σ#0", "Slider|d_k#1", "Select|rule#0"]);
});

test("moves on the pre-rendered page are made again on a live page drawn anew", () => {
  const early = doc("a");
  const moves = sdpaEarlyMoves();
  let live = false;
  moves.watch(early, () => live);
  const [div, dk, sigma, dk2, rule] = early.all_models;
  early.emit(ev(dk2, "value", 16));
  early.emit(ev(dk2, "value", 32));             // the same widget again: its last value
  early.emit(ev(rule, "value", "linear"));
  early.emit(ev(div, "text", "<p>x</p>"));      // not a widget
  early.emit(ev(sigma, "title", "s"));          // not a widget's value
  sdpaQuiet.run(() => early.emit(ev(sigma, "value", 3)));   // applied for Python, not the reader's
  assert.deepEqual([...moves.ids()], ["a3.value", "a4.value"]);
  live = true;
  early.emit(ev(dk, "value", 1024));            // after the live page took over
  const {queue} = linkedQueue();
  const later = doc("b");
  assert.equal(moves.replay(later, false, queue), 2);
  // the second "d_k" slider and the rule, matched by key in the other document; the first d_k slider's move
  // came after the live page took over
  assert.deepEqual(later.all_models.map((m) => m.set || null), [null, [], [], [{value: 32}], [{value: "linear"}]]);
  assert.equal(queue.events.length, 0);         // replayed by setting values: the live document sends them
  assert.equal(moves.replay(later, false, queue), 0);
});

test("moves on an adopted page go to Python as they were made", () => {
  const early = doc("p");
  const moves = sdpaEarlyMoves();
  moves.watch(early, () => false);
  early.emit(ev(early.all_models[2], "value", 2));
  const {queue, sent} = linkedQueue();
  assert.equal(moves.replay(early, true, queue), 1);
  queue.busy = false;
  queue.send();
  assert.deepEqual(sent, [patch(["p2", "value", 2])]);
  assert.deepEqual(early.all_models[2].set, []);
});
