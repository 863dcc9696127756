"""build/templates/warmboot.js in Node: the warm boot's snapshot is kept as one version's two files, found only
when its bytes are the ones saved, restored within a time limit, and dropped (saying why) whenever it cannot
be used. Node runs warmboot.js and download.js (its sha256) as worker.js includes them, by text, with a
store and a Pyodide made here; saving and restoring Pyodide's own state (snapshot.js) is stood in for, since
tests/build/snapshot_node.mjs and the site's snapshot tests run it for real."""
from __future__ import annotations

import json
import subprocess

import pytest

from node_tools import TEMPLATE_LOADER, node

RUN = r"""
require(process.argv[1]).runInThisContext("warmboot.js");

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

(async () => {
  const out = {};
  // made: into the first usable store, the only snapshot there; the other store's files gone
  const opfs = memStore("opfs", {files: {"v0.heap": new Uint8Array(1), "v0.json": new Uint8Array(1)}});
  const cache = memStore("cache", {files: {"v0.heap": new Uint8Array(1)}});
  const made = warm({stores: storesOf(opfs, cache)});
  await made.boot.make();
  out.made = {opfs: names(opfs), cache: names(cache), posts: made.posts.map((p) => [p.type, p.bytes, p.store]),
              boot: made.calls.boot, heap: Buffer.from(opfs.files.get("v1.heap")).equals(Buffer.from(HEAP))};
  const saved = () => memStore("opfs", {files: Object.fromEntries(opfs.files)});

  // found, then restored from it
  const found = warm({stores: storesOf(saved())});
  const got = await found.boot.find();
  out.found = {meta: got.meta, doc: got.doc, store: got.store, heap: got.heap.byteLength, posts: [...found.posts]};
  const r = await found.boot.restore(got);
  out.restored = {doc: r.doc, restored: found.boot.restored, load: found.calls.load, steps: found.steps,
                  snapshotOption: "_loadSnapshot" in r.pyodide._api.config, finished: r.pyodide.finished,
                  ran: r.pyodide.ran, posts: found.posts.map((p) => [p.type, p.bytes, p.store, Object.keys(p.at).sort()])};

  // the document altered on disk, or written without its sha256 line: dropped, and said
  for (const [name, bytes] of [["altered", flip(opfs.files.get("v1.json"), 80)],
                               ["unsigned", opfs.files.get("v1.json").subarray(65)]]) {
    const store = saved();
    store.files.set("v1.json", bytes);
    const w = warm({stores: storesOf(store)});
    out[name] = {found: await w.boot.find(), left: names(store), posts: w.posts};
  }
  // nothing stored: null, nothing said; "Reload from the network" or a failed restore: dropped, nothing said
  const none = warm({stores: storesOf(memStore("opfs"))});
  out.nothing = {found: await none.boot.find(), posts: none.posts};
  for (const [name, options] of [["fresh", {fresh: true}], ["refused", {restore: false}]]) {
    const store = saved();
    const w = warm({stores: storesOf(store), ...options});
    out[name] = {found: await w.boot.find(), left: names(store), posts: w.posts};
  }
  // a store that does not answer: boot without it, within the limit
  const hung = warm({stores: storesOf(memStore("opfs", {read: () => new Promise(() => {})})), limits: {find: 0.05, restore: 30}});
  out.hung = {found: await hung.boot.find(), posts: hung.posts};

  // restores that fail: a heap of another size (Pyodide not even started), another heap of the same size
  // (with Pyodide starting, or failing on it first), a Pyodide that never starts
  const restoreCase = async (heap, options) => {
    const w = warm({stores: storesOf(saved()), ...options});
    const error = await caught(w.boot.restore({...got, heap}));
    return {error, loads: w.calls.load.length, restored: w.boot.restored};
  };
  out.short = await restoreCase(HEAP.subarray(1), {});
  out.alteredHeap = await restoreCase(flip(HEAP, 9), {});
  out.alteredHeapFailing = await restoreCase(flip(HEAP, 9), {load: "fail"});
  out.slow = await restoreCase(HEAP, {load: "hang", limits: {find: 10, restore: 0.05}});

  // the storage full while writing: no half-written snapshot left
  const full = memStore("opfs", {write: async (n, bytes) => {
    if (n.endsWith(".json")) throw Object.assign(new Error("quota exceeded"), {name: "QuotaExceededError"});
    full.files.set(n, bytes);
  }});
  const quota = warm({stores: storesOf(full)});
  out.quota = {error: await caught(quota.boot.make()), left: names(full), posts: quota.posts};

  // a browser that keeps no snapshot
  const kept = warm({stores: null});
  out.nowhere = {found: await kept.boot.find(), error: await caught(kept.boot.make()), boots: kept.calls.boot.length};
  const unusable = warm({stores: storesOf(memStore("opfs", {usable: false}), memStore("cache", {usable: false}))});
  out.unusable = {found: await unusable.boot.find(), error: await caught(unusable.boot.make())};

  // abandoned after a failure: dropped, and whether it was damaged said
  for (const [name, err] of [["abandonDamaged", new SnapshotDamaged("snapshot is 1 bytes, 2 were saved")],
                             ["abandonOther", new Error("Pyodide did not start")]]) {
    const store = saved();
    const w = warm({stores: storesOf(store)});
    await w.boot.abandon(err);
    out[name] = {left: names(store), posts: w.posts.map((p) => [p.type, p.msg, p.damaged])};
  }
  process.stdout.write(JSON.stringify(out));
})().catch((err) => { console.error(err); process.exit(1); });
"""



@pytest.fixture(scope="module")
def results():
    done = subprocess.run([node(), "-e", RUN, str(TEMPLATE_LOADER)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_snapshot_is_the_only_one_kept_in_the_first_usable_store(results):
    made = results["made"]
    assert made["opfs"] == ["v1.heap", "v1.json"] and made["heap"]     # the older version's files gone
    assert made["cache"] == []                                        # and none left in the other store
    assert made["posts"] == [["snapshot-stored", 4096, "opfs"]]
    assert made["boot"] == [{"_makeSnapshot": True}]


def test_a_found_snapshot_restores_python_and_its_document(results):
    found, restored = results["found"], results["restored"]
    assert (found["meta"]["libs"], found["meta"]["heap"]["bytes"], found["store"], found["heap"]) == (["numpy"], 4096, "opfs", 4096)
    assert found["doc"] == restored["doc"] == [{"doc": "live"}, [{"roots": {}}], ["p1001"]]
    assert found["posts"] == []
    assert restored["restored"] is True and restored["steps"] == ["runtime"]
    assert restored["load"] == [["_loadSnapshot", "_snapshotDeserializer"]]
    assert restored["snapshotOption"] is False          # Pyodide's copy of the 63 MB option let go
    assert restored["finished"]["sitePackages"] == "/lib/python3.13/site-packages"
    assert restored["ran"] == ["import importlib\nimportlib.invalidate_caches()"]
    assert restored["posts"] == [["restored", 4096, "opfs", ["begin", "linked", "read", "runtime", "sha256"]]]


@pytest.mark.parametrize("case, message", [
    ("altered", "differs from the one saved with it"),
    ("unsigned", "the saved document has no valid sha256 line"),
])
def test_a_document_not_as_saved_is_dropped_and_said(results, case, message):
    r = results[case]
    assert r["found"] is None and r["left"] == []
    assert [p["type"] for p in r["posts"]] == ["snapshot-damaged"] and message in r["posts"][0]["msg"]


@pytest.mark.parametrize("case", ["fresh", "refused"])
def test_reload_from_the_network_or_a_failed_restore_drops_it_quietly(results, case):
    assert results[case] == {"found": None, "left": [], "posts": []}


def test_nothing_stored_is_not_news(results):
    assert results["nothing"] == {"found": None, "posts": []}


def test_a_store_that_does_not_answer_is_given_up_within_its_limit(results):
    hung = results["hung"]
    assert hung["found"] is None
    assert hung["posts"] == [{"type": "snapshot-unreadable", "msg": "Error: not read within 0.05 s"}]


@pytest.mark.parametrize("case, loads, message", [
    ("short", 0, "snapshot is 4095 bytes, 4096 were saved"),
    ("alteredHeap", 1, "snapshot's sha256 "),
    ("alteredHeapFailing", 1, "snapshot's sha256 "),     # the reason given, not Pyodide's vaguer one
])
def test_a_heap_not_as_saved_is_damaged(results, case, loads, message):
    r = results[case]
    assert r["error"]["name"] == "SnapshotDamaged" and r["error"]["message"].startswith(message)
    assert r["loads"] == loads and r["restored"] is False


def test_a_pyodide_that_never_starts_from_it_is_given_up(results):
    slow = results["slow"]
    assert slow["error"] == {"name": "Error", "message": "Pyodide did not start from the snapshot within 0.05 s"}
    assert slow["restored"] is False


def test_a_full_storage_leaves_no_half_written_snapshot(results):
    quota = results["quota"]
    assert quota["error"] == {"name": "Error", "message": "quota exceeded"}
    assert quota["left"] == [] and quota["posts"] == []


def test_a_browser_without_a_store_makes_none_and_says_why(results):
    for case in ("nowhere", "unusable"):
        r = results[case]
        assert r["found"] is None
        assert r["error"] == {"name": "Error", "message": "it offers no private file storage for pages"}
    assert results["nowhere"]["boots"] == 0            # Python is not booted for nothing


def test_an_abandoned_snapshot_is_dropped_saying_whether_it_was_damaged(results):
    assert results["abandonDamaged"] == {"left": [], "posts": [["snapshot-failed", "snapshot is 1 bytes, 2 were saved", True]]}
    assert results["abandonOther"] == {"left": [], "posts": [["snapshot-failed", "Pyodide did not start", False]]}
