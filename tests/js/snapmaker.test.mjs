// build/templates/snapmaker.js: when the page makes a snapshot for the next visit, and what it records and says
// when it does not: used (this visit was restored), each reason it is unavailable (said on the page only when it
// is the browser's doing), a block after a failed restore (ended by clearBlock), stored, failed, and not made in
// time. It runs in a context of its own with the browser's storage, a clock and the snapshot worker made here:
// the worker answers when a test says so, and time passes only when a test moves the clock. Run by `node --test`.
import assert from "node:assert/strict";
import {test} from "node:test";

import {templateContext} from "./template.mjs";

const OPFS = {storage: {getDirectory: async () => ({})}};
// what the module made, as plain data of this realm (its objects have the context's prototypes)
const plain = (value) => JSON.parse(JSON.stringify(value));

// A page: its storage, navigator and clock. `caches: false` takes Cache Storage away.
function page({navigator = OPFS, caches = true, storage = new Map()} = {}) {
  const clock = {now: 0, timers: new Map(), next: 1};
  const warned = [];
  const context = templateContext("snapmaker.js", {
    navigator, Date,
    console: {warn: (text) => warned.push(text)},
    localStorage: {getItem: (k) => storage.get(k) ?? null, setItem: (k, v) => storage.set(k, `${v}`),
                   removeItem: (k) => storage.delete(k)},
    setTimeout: (fn, ms) => { clock.timers.set(clock.next, {fn, at: clock.now + ms}); return clock.next++; },
    clearTimeout: (id) => clock.timers.delete(id),
  });
  context.window = context;
  if (caches) context.caches = {open: async () => ({})};
  // the clock moves `ms` on: each timer due by then runs
  clock.advance = (ms) => {
    clock.now += ms;
    for (const [id, timer] of [...clock.timers]) {
      if (timer.at <= clock.now) {
        clock.timers.delete(id);
        timer.fn();
      }
    }
  };
  return {context, clock, warned, storage};
}

function maker(at, {seconds = 60, snapshots = true, key = {key: "k"}, boot = null, version = "abc"} = {}) {
  const lab = {snapshot: null, boot}, notes = [], workers = [];
  const made = at.context.sdpaSnapshotMaker({
    lab, worker: {sha256: version, snapshots, snapshotFolder: "snap"}, snapshotKey: async () => key,
    snapshotSeconds: seconds, note: (why) => notes.push(why), because: (err) => `because ${err.name}`,
    newWorker: async (mode) => {
      const w = {mode, terminated: false, terminate() { this.terminated = true; }};
      workers.push(w);
      return w;
    },
  });
  const summary = () => plain({snapshot: lab.snapshot, notes, workers: workers.map((w) => [w.mode, w.terminated])});
  return {made, lab, notes, workers, summary};
}

test("a visit restored from a snapshot makes none", async () => {
  const m = maker(page(), {boot: "snapshot"});
  await m.made.make();
  assert.deepEqual(m.summary(), {snapshot: {state: "used"}, notes: [], workers: []});
});

test("a page whose harness turned snapshots off makes none, and says nothing", async () => {
  const m = maker(page());
  m.lab.snapshotsOff = true;
  await m.made.make();
  assert.deepEqual(m.summary(), {snapshot: {state: "unavailable",
    why: "turned off for this page (window.sdpaLabLimits.snapshots = false: a test harness)"}, notes: [], workers: []});
});

test("a snapshot the worker stored is recorded, and the worker goes", async () => {
  const at = page();
  const m = maker(at);
  await m.made.make();
  assert.deepEqual(plain(m.lab.snapshot), {state: "making"});
  m.workers[0].onmessage({data: {type: "snapshot-stored", bytes: 5, ms: 12.4, store: "opfs"}});
  assert.deepEqual(m.summary(), {snapshot: {state: "stored", bytes: 5, ms: 12, store: "opfs"}, notes: [],
                                 workers: [["snapshot", true]]});
  assert.equal(at.clock.timers.size, 0);         // its time limit is cleared
  assert.deepEqual(at.warned, []);
});

test("a full storage fails it and is said; a crashed worker fails it and is not", async () => {
  const full = maker(page());
  await full.made.make();
  full.workers[0].onmessage({data: {type: "error", msg: "no room", name: "QuotaExceededError"}});
  assert.deepEqual(full.summary(), {snapshot: {state: "failed", msg: "no room", name: "QuotaExceededError"},
                                    notes: ["because QuotaExceededError"], workers: [["snapshot", true]]});
  const at = page();
  const crashed = maker(at);
  await crashed.made.make();
  let prevented = false;
  crashed.workers[0].onerror({message: "out of memory", preventDefault() { prevented = true; }});
  assert.deepEqual(crashed.summary(), {snapshot: {state: "failed", msg: "out of memory"}, notes: [],
                                       workers: [["snapshot", true]]});
  assert.ok(prevented);
  assert.deepEqual(at.warned, ["SDPA Lab: no snapshot for the next visit: out of memory"]);
});

test("a snapshot not made in time is given up, and a late answer changes nothing", async () => {
  const at = page();
  const m = maker(at, {seconds: 0.02});
  await m.made.make();
  at.clock.advance(19);
  assert.deepEqual(plain(m.lab.snapshot), {state: "making"});
  at.clock.advance(1);
  assert.deepEqual(m.summary(), {snapshot: {state: "failed", msg: "not made within 0.02 s"}, notes: [],
                                 workers: [["snapshot", true]]});
  m.workers[0].onmessage({data: {type: "snapshot-stored", bytes: 5, ms: 1, store: "opfs"}});
  assert.equal(m.lab.snapshot.state, "failed");
});

test("each reason it is unavailable is recorded, and said only when it is the browser's doing", async () => {
  const cases = [
    [{}, {snapshots: false}, "this build loads Pyodide from its CDN, unpatched", false],
    [{}, {key: null}, "the page was not opened over a secure (https) connection", true],
    [{navigator: {...OPFS, connection: {saveData: true}}}, {}, "the browser asks to save data", false],
    [{navigator: {...OPFS, deviceMemory: 2}}, {}, "less than 4 GB of memory: a second Python would not fit well", false],
    [{navigator: {}, caches: false}, {}, "it offers no private file storage for pages", true],
  ];
  for (const [where, options, why, said] of cases) {
    const m = maker(page(where), options);
    await m.made.make();
    assert.deepEqual(m.summary(), {snapshot: {state: "unavailable", why}, notes: said ? [why] : [], workers: []}, why);
  }
  // enough memory, no data saver: made
  const m = maker(page({navigator: {...OPFS, deviceMemory: 8, connection: {saveData: false}}}));
  await m.made.make();
  assert.deepEqual(plain(m.lab.snapshot), {state: "making"});
});

test("the stores it names are those the page sees", () => {
  assert.deepEqual(plain(maker(page()).made.stores()), ["opfs", "cache"]);
  assert.deepEqual(plain(maker(page({navigator: {}})).made.stores()), ["cache"]);
  assert.deepEqual(plain(maker(page({caches: false})).made.stores()), ["opfs"]);
});

test("a block after a failed restore holds for this version until it is cleared", async () => {
  const at = page();
  maker(at).made.block();
  const blocked = maker(at);
  await blocked.made.make();
  assert.match(blocked.lab.snapshot.why,
               /^a snapshot of this version did not restore in this browser; not tried again before \d{4}-/);
  assert.equal(blocked.notes.length, 1);
  assert.match(blocked.notes[0], /did not start here; no new one is made before /);
  const until = new Date(JSON.parse(at.storage.get("sdpa-snapshot-failed")).until);
  assert.ok(Math.abs(until - Date.now() - 7 * 864e5) < 60e3);       // seven days
  // another version's block blocks nothing
  const other = maker(at, {version: "newer"});
  await other.made.make();
  assert.equal(other.lab.snapshot.state, "making");
  // cleared (Retry, "Reload from the network"): made again
  blocked.made.clearBlock();
  const unblocked = maker(at);
  await unblocked.made.make();
  unblocked.workers[0].onmessage({data: {type: "snapshot-stored", bytes: 1, ms: 1, store: "cache"}});
  assert.equal(unblocked.lab.snapshot.state, "stored");
  // an expired block, or a damaged value, blocks nothing
  at.storage.set("sdpa-snapshot-failed", JSON.stringify({version: "abc", until: Date.now() - 1}));
  const expired = maker(at);
  await expired.made.make();
  assert.equal(expired.lab.snapshot.state, "making");
  at.storage.set("sdpa-snapshot-failed", "{not json");
  const damaged = maker(at);
  await damaged.made.make();
  assert.equal(damaged.lab.snapshot.state, "making");
});
