"""build/templates/patches.js in Node: which of the page's changes go to Python, merged how and sent
when, and how the reader's moves on the pre-rendered page are made again on the live one. Node runs
patches.js as boot.js includes it (plain functions, by text), on small stand-ins for a Bokeh document."""
from __future__ import annotations

import json
import subprocess

import pytest

from node_tools import node
from sitebuild import ROOT

RUN = r"""
const fs = require("node:fs");
const vm = require("node:vm");
vm.runInThisContext(fs.readFileSync(process.argv[1], "utf8"), {filename: "patches.js"});
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

function linkedQueue() {
  const sent = [];
  let clock = 0;
  const queue = sdpaPatchQueue((msg) => sent.push(msg), () => (clock += 10));
  queue.doc = doc("p");
  return {queue, sent, m: queue.doc.all_models};
}

const cases = {
  async "one patch per task, a property set twice sent once with its last value"() {
    const {queue, sent, m} = linkedQueue();
    queue.busy = false;
    queue.change(ev(m[1], "value", 128));
    queue.change(ev(m[1], "value_throttled", 128));
    queue.change(ev(m[1], "value", 256));
    const before = sent.length;
    await tick();
    return {before, sent, busy: queue.busy, sentAt: queue.sentAt};
  },
  async "while Python works, changes wait and merge; idle sends them"() {
    const {queue, sent, m} = linkedQueue();
    queue.busy = false;
    queue.change(ev(m[1], "value", 128));
    await tick();
    queue.change(ev(m[1], "value", 256));
    queue.change(ev(m[2], "value", 2));
    queue.change(ev(m[1], "value", 512));
    await tick();
    const during = sent.length;
    queue.idle();
    return {during, sent};
  },
  async "nothing is sent before Python is ready, nor without a live document"() {
    const {queue, sent, m} = linkedQueue();       // busy: Python has not said "ready"
    queue.change(ev(m[1], "value", 128));
    await tick();
    const before = sent.length;
    queue.busy = false;
    queue.send();
    const unlinked = sdpaPatchQueue((msg) => sent.push(msg));
    unlinked.busy = false;                        // no document yet
    unlinked.change(ev(m[2], "value", 2));
    await tick();
    unlinked.send();
    return {before, sent, waiting: unlinked.events.length};
  },
  async "Python's echo, the page's own applying and page-only changes are not sent"() {
    const {queue, sent, m} = linkedQueue();
    queue.busy = false;
    queue.change(ev(m[1], "value", 128, {setter_id: "py"}));
    sdpaQuiet.run(() => queue.change(ev(m[1], "value", 256)));
    queue.change(ev(m[0], "text", "dark", {sync: false}));
    await tick();
    queue.idle();
    let thrown = null;
    try {
      sdpaQuiet.run(() => { throw new Error("a patch that fails"); });
    } catch (err) {
      thrown = err.message;
    }
    queue.change(ev(m[2], "value", 2));           // quiet again after the failure
    await tick();
    return {sent, thrown, quiet: sdpaQuiet.on};
  },
  async "widgets are keyed by type, title and order"() {
    const keys = sdpaWidgetKeys(doc("p"));
    return {keys: [...keys.values()]};
  },
  async "moves on the pre-rendered page are made again on a live page drawn anew"() {
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
    const ids = [...moves.ids()];
    live = true;
    early.emit(ev(dk, "value", 1024));            // after the live page took over
    const {queue} = linkedQueue();
    const later = doc("b");
    const count = moves.replay(later, false, queue);
    return {ids, count, set: later.all_models.map((m) => m.set || null), queued: queue.events.length,
            again: moves.replay(later, false, queue)};
  },
  async "moves on an adopted page go to Python as they were made"() {
    const early = doc("p");
    const moves = sdpaEarlyMoves();
    moves.watch(early, () => false);
    early.emit(ev(early.all_models[2], "value", 2));
    const {queue, sent} = linkedQueue();
    const count = moves.replay(early, true, queue);
    queue.busy = false;
    queue.send();
    return {count, sent, set: early.all_models[2].set};
  },
};

(async () => {
  const out = {};
  for (const [name, run] of Object.entries(cases)) out[name] = await run();
  process.stdout.write(JSON.stringify(out));
})();
"""


@pytest.fixture(scope="module")
def results() -> dict:
    done = subprocess.run([node(), "-e", RUN, str(ROOT / "build" / "templates" / "patches.js")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def patch(*changes) -> dict:
    return {"type": "patch", "patch": {"events": [list(c) for c in changes]}}


def test_one_patch_per_task(results):
    r = results["one patch per task, a property set twice sent once with its last value"]
    assert r["before"] == 0                     # sent after the task, not on the first change
    assert r["sent"] == [patch(("p1", "value_throttled", 128), ("p1", "value", 256))]
    assert r["busy"] is True and r["sentAt"] == 10


def test_changes_wait_while_python_works(results):
    r = results["while Python works, changes wait and merge; idle sends them"]
    assert r["during"] == 1
    assert r["sent"][1] == patch(("p2", "value", 2), ("p1", "value", 512))


def test_nothing_before_python_is_ready(results):
    r = results["nothing is sent before Python is ready, nor without a live document"]
    assert r["before"] == 0
    assert r["sent"] == [patch(("p1", "value", 128))]
    assert r["waiting"] == 1                    # kept for when the document is linked


def test_what_is_never_sent(results):
    r = results["Python's echo, the page's own applying and page-only changes are not sent"]
    assert r["sent"] == [patch(("p2", "value", 2))]
    assert r["thrown"] == "a patch that fails" and r["quiet"] is False


def test_widget_keys(results):
    assert results["widgets are keyed by type, title and order"]["keys"] == [
        "Slider|d_k#0", "Slider|σ#0", "Slider|d_k#1", "Select|rule#0"]


def test_moves_replayed_on_a_new_document(results):
    r = results["moves on the pre-rendered page are made again on a live page drawn anew"]
    assert r["ids"] == ["a3.value", "a4.value"]
    assert r["count"] == 2 and r["again"] == 0
    # the second "d_k" slider and the rule, matched by key in the other document; the first d_k
    # slider's move came after the live page took over
    assert r["set"] == [None, [], [], [{"value": 32}], [{"value": "linear"}]]
    assert r["queued"] == 0                     # replayed by setting values: the live document sends them


def test_moves_on_an_adopted_page(results):
    r = results["moves on an adopted page go to Python as they were made"]
    assert r["count"] == 1 and r["set"] == []
    assert r["sent"] == [patch(("p2", "value", 2))]
