// The warm boot: a memory snapshot of Python once the app is built, kept in this browser under one key
// (a hash of worker.js's bytes, which hold every file's sha256, the site's address and the browser's
// WebAssembly features; boot.js makes it). Made by a second worker after the page is live; restored by
// the page's worker on later visits instead of starting Python, installing packages, importing Panel
// and building the app. Any failure to restore: the page boots without it.
//
// A module of worker.js, run by tests/js/warmboot.test.mjs (node --test). This file decides what is kept
// and checks it on the way out; how Pyodide's state is saved and put back is snapshot.js's (and
// build/pyodide_patch.py's), where it is kept is store.js's. What it needs of the worker comes in as
// `runtime`: load(options) starts Pyodide and returns it, boot(options) boots Python from scratch and
// returns it, writeDoc() the document as JSON, files() the archive's files, checked() every download's
// check, sitePackages.
//
// Two files per snapshot: <key>.heap, the heap; <key>.json, written last, the rest (what snapshot.js
// puts back, the heap's size and sha256, and the document as the app wrote it, so a restore skips
// writing it). The .json file's first line is the sha256 of the rest: the document and the side data
// are checked before anything of them is used, the heap while Pyodide starts.
import {sdpaInvalidateImportCaches} from "./archive.js";
import {BootError, sha256hex} from "./download.js";
import {forgetSnapshotHeap, snapshotOptions} from "./pyodide_internals.js";
import {sdpaSnapshotPrepareRestore, sdpaSnapshotRecord, sdpaSnapshotSerializer} from "./snapshot.js";

// A snapshot whose bytes are not the ones saved (a disk error, an edited file): dropped, and a new one
// made, since a fresh snapshot will restore. Any other failure to restore would repeat (boot.js).
export class SnapshotDamaged extends Error {}

// stores: store.js's sdpaSnapshotStores (null: this browser keeps no snapshot); key: this version's;
// fresh: "Reload from the network", restore: false after a failed restore (both drop the snapshot);
// post(message) and status(step, words) tell the page; limits in seconds; pyodideState: how Pyodide's own
// state is recorded and put back (snapshot.js; a test hands in stand-ins).
const SNAPSHOT_JS = {record: sdpaSnapshotRecord, serializer: sdpaSnapshotSerializer, prepareRestore: sdpaSnapshotPrepareRestore};
export function sdpaWarmBoot({stores, key, fresh = false, restore: allowed = true, post, status, describe, runtime,
                              limits = {find: 10, restore: 30}, pyodideState = SNAPSHOT_JS}) {
  const store = async () => stores && stores.pick();

  async function drop() {           // from every store (a snapshot made before the browser offered another)
    for (const each of stores ? stores.all : []) {
      if (!(await each.usable())) continue;
      for (const ext of ["json", "heap"]) await each.remove(`${key}.${ext}`);
    }
  }

  // <key>.json as make() writes it: its sha256 line, then {meta, doc}.
  async function encode(record) {
    const body = new TextEncoder().encode(JSON.stringify(record));
    const head = new TextEncoder().encode(`${await sha256hex(body)}\n`);
    const all = new Uint8Array(head.byteLength + body.byteLength);
    all.set(head, 0);
    all.set(body, head.byteLength);
    return all;
  }

  async function parse(bytes) {
    const cut = bytes.indexOf(10);
    const saved = cut === 64 ? new TextDecoder().decode(bytes.subarray(0, cut)) : null;
    const body = bytes.subarray(cut + 1);
    if (saved === null || !/^[0-9a-f]{64}$/.test(saved)) throw new SnapshotDamaged("the saved document has no valid sha256 line");
    const digest = await sha256hex(body);
    if (digest !== saved) {
      throw new SnapshotDamaged(`the saved document's sha256 ${digest.slice(0, 12)}… differs from the one saved with it`);
    }
    return JSON.parse(new TextDecoder().decode(body));
  }

  // This version's snapshot, read and its document checked: {meta, doc, heap, store, read}, or null.
  async function find() {
    const where = await store();
    if (!where) return null;
    if (fresh || !allowed) {      // "Reload from the network", or the snapshot failed: drop it
      await drop().catch(() => {});
      return null;
    }
    let timer;
    try {
      const reading = (async () => {
        const saved = await parse(await where.read(`${key}.json`));
        const heap = await where.read(`${key}.heap`);
        return {...saved, heap, store: where.name, read: performance.now()};
      })();
      // a file held by another tab's worker, or a storage that does not answer: boot without it
      const late = new Promise((resolve, reject) => {
        timer = setTimeout(() => reject(new Error(`not read within ${limits.find} s`)), limits.find * 1000);
      });
      return await Promise.race([reading, late]);
    } catch (err) {
      if (err instanceof SnapshotDamaged) {
        await drop().catch(() => {});
        post({type: "snapshot-damaged", msg: err.message});
      } else if (err.name !== "NotFoundError") {
        console.warn("SDPA Lab: the saved snapshot could not be read:", err);
        post({type: "snapshot-unreadable", msg: `${err.name || "Error"}: ${err.message || err}`});
      }
      return null;
    } finally {
      clearTimeout(timer);
    }
  }

  // Python from what find() returned: {pyodide, doc}. Throws SnapshotDamaged when the heap is not the
  // one saved, and an Error when Pyodide does not start from it within the limit.
  async function restore({meta, heap, doc, store: where, read}) {
    // when each part was done (ms on the worker's clock): the files read, Pyodide's scripts run (the
    // restore begins), the heap's sha256 checked, the runtime started from it, the page linked
    const at = {read, begin: performance.now()};
    status("runtime", "Restoring Python as this browser saved it");
    // A damaged heap can make Pyodide's start hang (a failed wasm instantiation never rejects):
    // its size is checked first, its sha256 while Pyodide starts, and the restore has a time limit.
    const saved = meta.heap || {};
    if (heap.byteLength !== saved.bytes) throw new SnapshotDamaged(`snapshot is ${heap.byteLength} bytes, ${saved.bytes} were saved`);
    const checked = sha256hex(heap).then((digest) => {
      at.sha256 = performance.now();
      if (digest !== saved.sha256) throw new SnapshotDamaged(`snapshot's sha256 ${digest.slice(0, 12)}… differs from the one saved`);
    });
    checked.catch(() => {});
    const files = runtime.files();     // awaited once the runtime has compiled (snapshot.js)
    files.catch(() => {});
    const prepared = pyodideState.prepareRestore(meta, files, runtime.sitePackages);
    let timer, pyodide;
    const limit = new Promise((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`Pyodide did not start from the snapshot within ${limits.restore} s`)),
                         limits.restore * 1000);
    });
    try {
      // a damaged heap may also fail Pyodide's own checks first: its sha256 is the reason given
      const loading = runtime.load(snapshotOptions.restore(heap, prepared.deserializer))
        .catch(async (err) => { await checked; throw err; });
      [pyodide] = await Promise.race([Promise.all([loading, checked]), limit]);
      at.runtime = performance.now();
    } finally {
      clearTimeout(timer);
    }
    forgetSnapshotHeap(pyodide);
    prepared.finish(pyodide);
    api.restored = true;
    await runtime.checked();
    sdpaInvalidateImportCaches(pyodide);
    at.linked = performance.now();
    post({type: "restored", bytes: heap.byteLength, store: where, at, origin: performance.timeOrigin});
    return {pyodide, doc};
  }

  // Python booted with the app built, saved as this version's only snapshot.
  async function make() {
    const started = performance.now();
    const where = await store();
    if (!where) throw new Error("it offers no private file storage for pages");
    const pyodide = await runtime.boot(snapshotOptions.make());
    const doc = await runtime.writeDoc();
    const meta = await pyodideState.record(pyodide);
    const heap = pyodide.makeMemorySnapshot({serializer: pyodideState.serializer});
    meta.heap = {bytes: heap.byteLength, sha256: await sha256hex(heap)};
    for (const other of stores.all) {        // one snapshot: this version's, in this store
      if (other === where) await where.keepOnly(`${key}.`);
      else if (await other.usable()) await other.keepOnly(null).catch(() => {});
    }
    try {
      await where.write(`${key}.heap`, heap);
      await where.write(`${key}.json`, await encode({meta, doc}));
    } catch (err) {
      await drop().catch(() => {});      // no half-written snapshot (e.g. over the storage quota)
      throw err;
    }
    post({type: "snapshot-stored", bytes: heap.byteLength, ms: performance.now() - started, store: where.name});
  }

  // A restore that failed (or a restored Python that failed before the page is live): dropped so it is
  // not tried again; the page starts a new worker without it (and, unless the snapshot was damaged,
  // makes no new one for a while: the same failure would repeat).
  // `proves`: whether the failure shows that this browser cannot restore this version's snapshot. A damaged
  // snapshot does not (the next one is made at once), nor does a file that did not arrive (a network error, a
  // download cut off, the page offline, a damaged runtime file): that is the connection's or the copy's doing.
  async function abandon(err) {
    const {msg, detail} = describe(err);
    await drop().catch(() => {});
    const damaged = err instanceof SnapshotDamaged;
    const files = err instanceof BootError || err instanceof TypeError
      || (typeof navigator !== "undefined" && navigator.onLine === false);
    post({type: "snapshot-failed", msg, detail, damaged, proves: !damaged && !files});
  }

  // restored: Python came from the snapshot (until the page is live, any failure is the snapshot's)
  const api = {restored: false, find, restore, make, abandon, drop};
  return api;
}
