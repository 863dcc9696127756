// build/templates/warmboot.js: the warm boot's snapshot is kept as one version's two files, found only when its
// bytes are the ones saved, restored within a time limit, and dropped (saying why) whenever it cannot be used.
// Imported as worker.js imports it, with a store and a Pyodide made here; saving and restoring Pyodide's own state
// (snapshot.js) is stood in for (pyodideState), since tests/build/snapshot_node.mjs and the site's snapshot tests
// run it for real. Run by `node --test`.
import assert from "node:assert/strict";
import {test} from "node:test";

import {runTemplates} from "./template.mjs";

await runTemplates("warmboot.js", "download.js");
const {sdpaWarmBoot, SnapshotDamaged, BootError} = globalThis;

const KEY = "v1";
const HEAP = new Uint8Array(4096).map((_, i) => (i * 7) % 251);
const DOC = [{"doc": "live"}, [{"roots": {}}], ["p1001"]];

// snapshot.js's part (Pyodide's own state), stood in for: what this file hands it and gets back
const pyodideState = {
  record: async () => ({libs: ["numpy"]}),
  serializer: () => null,
  prepareRestore: (meta, files, sitePackages) => ({
    deserializer: "deserializer", finish(pyodide) { pyodide.finished = {meta, sitePackages}; },
  }),
};

const notFound = (name) => Object.assign(new Error(`${name} is not stored`), {name: "NotFoundError"});
function memStore(name, {usable = true, files = {}, read, write} = {}) {
  const m = new Map(Object.entries(files));
  return {
    name, files: m, removed: [],
    usable: async () => usable,
    read: read || (async (n) => { if (!m.has(n)) throw notFound(n); return m.get(n).slice(); }),
    write: write || (async (n, bytes) => { m.set(n, bytes.slice()); }),
    remove: async (n) => { m.delete(n); },
    keepOnly: async (prefix) => { for (const k of [...m.keys()]) if (prefix === null || !k.startsWith(prefix)) m.delete(k); },
  };
}
const storesOf = (...all) => ({all, pick: async () => { for (const s of all) if (await s.usable()) return s; return null; }});

function pyodideMade(heap) {
  return {_api: {config: {_loadSnapshot: heap}}, ran: [], runPython(code) { this.ran.push(code); },
          makeMemorySnapshot: ({serializer}) => (serializer === pyodideState.serializer ? heap : null)};
}
// load: how runtime.load answers ("ok", "hang", "fail": Pyodide's own error)
function warm({stores, load = "ok", fresh = false, restore = true, limits, writeDoc}) {
  const posts = [], steps = [], calls = {load: [], boot: []};
  const runtime = {
    load: (options) => {
      calls.load.push(Object.keys(options).sort());
      if (load === "hang") return new Promise(() => {});
      if (load === "fail") return Promise.reject(new Error("RuntimeError: unreachable"));
      return Promise.resolve(pyodideMade(options._loadSnapshot));
    },
    boot: async (options) => { calls.boot.push(options); return pyodideMade(HEAP); },
    writeDoc: writeDoc || (async () => DOC),
    files: () => Promise.resolve([["a.py", new Uint8Array([1])]]),
    checked: async () => {},
    sitePackages: "/lib/python3.13/site-packages",
  };
  const boot = sdpaWarmBoot({stores, key: KEY, fresh, restore, limits: limits || {find: 10, restore: 30},
                             post: (m) => posts.push(m), status: (id) => steps.push(id),
                             describe: (err) => ({msg: err.message, detail: err.stack}), runtime, pyodideState});
  return {boot, posts, steps, calls};
}
const names = (store) => [...store.files.keys()].sort();
const flip = (bytes, at) => { const b = bytes.slice(); b[at] ^= 1; return b; };
const caught = async (promise) => {
  try { await promise; return null; } catch (err) { return {name: err.constructor.name, message: err.message}; }
};

// a snapshot made into the first of two stores, as later visits find it
async function madeOne() {
  const opfs = memStore("opfs", {files: {"v0.heap": new Uint8Array(1), "v0.json": new Uint8Array(1)}});
  const cache = memStore("cache", {files: {"v0.heap": new Uint8Array(1)}});
  const made = warm({stores: storesOf(opfs, cache)});
  await made.boot.make();
  return {opfs, cache, made, saved: () => memStore("opfs", {files: Object.fromEntries(opfs.files)})};
}

test("a snapshot is the only one kept, in the first usable store", async () => {
  const {opfs, cache, made} = await madeOne();
  assert.deepEqual(names(opfs), ["v1.heap", "v1.json"]);         // the older version's files gone
  assert.ok(Buffer.from(opfs.files.get("v1.heap")).equals(Buffer.from(HEAP)));
  assert.deepEqual(names(cache), []);                             // and none left in the other store
  assert.deepEqual(made.posts.map((p) => [p.type, p.bytes, p.store]), [["snapshot-stored", 4096, "opfs"]]);
  assert.deepEqual(made.calls.boot, [{_makeSnapshot: true}]);
});

test("a found snapshot restores Python and its document", async () => {
  const {saved} = await madeOne();
  const found = warm({stores: storesOf(saved())});
  const got = await found.boot.find();
  assert.deepEqual([got.meta.libs, got.meta.heap.bytes, got.store, got.heap.byteLength], [["numpy"], 4096, "opfs", 4096]);
  assert.deepEqual(got.doc, DOC);
  assert.deepEqual(found.posts, []);
  const r = await found.boot.restore(got);
  assert.deepEqual(r.doc, DOC);
  assert.equal(found.boot.restored, true);
  assert.deepEqual(found.steps, ["runtime"]);
  assert.deepEqual(found.calls.load, [["_loadSnapshot", "_snapshotDeserializer"]]);
  assert.equal("_loadSnapshot" in r.pyodide._api.config, false);      // Pyodide's copy of the 63 MB option let go
  assert.equal(r.pyodide.finished.sitePackages, "/lib/python3.13/site-packages");
  assert.deepEqual(r.pyodide.ran, ["import importlib\nimportlib.invalidate_caches()"]);
  assert.deepEqual(found.posts.map((p) => [p.type, p.bytes, p.store, Object.keys(p.at).sort()]),
                   [["restored", 4096, "opfs", ["begin", "linked", "read", "runtime", "sha256"]]]);
});

test("a document not as saved is dropped, and said", async () => {
  const {opfs, saved} = await madeOne();
  for (const [bytes, message] of [[flip(opfs.files.get("v1.json"), 80), "differs from the one saved with it"],
                                  [opfs.files.get("v1.json").subarray(65), "the saved document has no valid sha256 line"]]) {
    const store = saved();
    store.files.set("v1.json", bytes);
    const w = warm({stores: storesOf(store)});
    assert.equal(await w.boot.find(), null);
    assert.deepEqual(names(store), []);
    assert.deepEqual(w.posts.map((p) => p.type), ["snapshot-damaged"]);
    assert.ok(w.posts[0].msg.includes(message), w.posts[0].msg);
  }
});

test("reload from the network, or a failed restore, drops it quietly; nothing stored is not news", async () => {
  const {saved} = await madeOne();
  for (const options of [{fresh: true}, {restore: false}]) {
    const store = saved();
    const w = warm({stores: storesOf(store), ...options});
    assert.equal(await w.boot.find(), null);
    assert.deepEqual(names(store), []);
    assert.deepEqual(w.posts, []);
  }
  const none = warm({stores: storesOf(memStore("opfs"))});
  assert.equal(await none.boot.find(), null);
  assert.deepEqual(none.posts, []);
});

test("a store that does not answer is given up within its limit", async () => {
  const hung = warm({stores: storesOf(memStore("opfs", {read: () => new Promise(() => {})})), limits: {find: 0.05, restore: 30}});
  const warned = [], warn = console.warn;
  console.warn = (...parts) => warned.push(parts.join(" "));
  try {
    assert.equal(await hung.boot.find(), null);
  } finally {
    console.warn = warn;
  }
  assert.deepEqual(hung.posts, [{type: "snapshot-unreadable", msg: "Error: not read within 0.05 s"}]);
  assert.deepEqual(warned, ["SDPA Lab: the saved snapshot could not be read: Error: not read within 0.05 s"]);
});

test("a heap not as saved is damaged; a Pyodide that never starts from it is given up", async () => {
  const {saved} = await madeOne();
  const got = await warm({stores: storesOf(saved())}).boot.find();
  const restoreCase = async (heap, options) => {
    const w = warm({stores: storesOf(saved()), ...options});
    const error = await caught(w.boot.restore({...got, heap}));
    return {error, loads: w.calls.load.length, restored: w.boot.restored};
  };
  for (const [heap, options, loads, message] of [
    [HEAP.subarray(1), {}, 0, "snapshot is 4095 bytes, 4096 were saved"],       // Pyodide not even started
    [flip(HEAP, 9), {}, 1, "snapshot's sha256 "],
    [flip(HEAP, 9), {load: "fail"}, 1, "snapshot's sha256 "],                   // the reason given, not Pyodide's vaguer one
  ]) {
    const r = await restoreCase(heap, options);
    assert.equal(r.error.name, "SnapshotDamaged");
    assert.ok(r.error.message.startsWith(message), r.error.message);
    assert.equal(r.loads, loads);
    assert.equal(r.restored, false);
  }
  const slow = await restoreCase(HEAP, {load: "hang", limits: {find: 10, restore: 0.05}});
  assert.deepEqual(slow.error, {name: "Error", message: "Pyodide did not start from the snapshot within 0.05 s"});
  assert.equal(slow.restored, false);
});

test("a full storage leaves no half-written snapshot", async () => {
  const full = memStore("opfs", {write: async (n, bytes) => {
    if (n.endsWith(".json")) throw Object.assign(new Error("quota exceeded"), {name: "QuotaExceededError"});
    full.files.set(n, bytes);
  }});
  const quota = warm({stores: storesOf(full)});
  assert.deepEqual(await caught(quota.boot.make()), {name: "Error", message: "quota exceeded"});
  assert.deepEqual(names(full), []);
  assert.deepEqual(quota.posts, []);
});

test("a browser without a store makes none and says why", async () => {
  const nowhere = warm({stores: null});
  const unusable = warm({stores: storesOf(memStore("opfs", {usable: false}), memStore("cache", {usable: false}))});
  for (const w of [nowhere, unusable]) {
    assert.equal(await w.boot.find(), null);
    assert.deepEqual(await caught(w.boot.make()), {name: "Error", message: "it offers no private file storage for pages"});
  }
  assert.equal(nowhere.calls.boot.length, 0);            // Python is not booted for nothing
});

test("an abandoned snapshot is dropped, saying whether it was damaged and whether the failure proves anything", async () => {
  const {saved} = await madeOne();
  // issue 57: a network error while restoring (offline, the wasm missing from the offline copy) was taken for a
  // browser that cannot restore, and blocked new snapshots for 7 days
  for (const [err, damaged, proves] of [[new SnapshotDamaged("snapshot is 1 bytes, 2 were saved"), true, false],
                                        [new Error("Pyodide did not start"), false, true],
                                        [new TypeError("Failed to fetch"), false, false],
                                        [new BootError("pyodide/pyodide.asm.wasm did not download", "pyodide/pyodide.asm.wasm"), false, false]]) {
    const store = saved();
    const w = warm({stores: storesOf(store)});
    await w.boot.abandon(err);
    assert.deepEqual(names(store), []);
    assert.deepEqual(w.posts.map((p) => [p.type, p.msg, p.damaged, p.proves]),
                     [["snapshot-failed", err.message, damaged, proves]]);
  }
});
