// The app in a Web Worker: Pyodide from this site, packages from a pre-solved lock,
// then Panel renders the document and talks to the page by JSON patches (Panel's protocol).
//
// boot.js checks this file's sha256 and starts it from a blob: URL, so the worker runs under the
// page's Content-Security-Policy; it prepends `self.sdpaBoot = {base, fresh, mode, snapshotKey,
// snapshotScope, restore, search, stores}`: the site's folder (relative URLs cannot resolve against a blob: URL),
// whether to bypass the caches, what this worker is for ("page": the page's Python; "snapshot": a
// second worker, started once the page is live, that builds the app again only to save a memory
// snapshot of it), the key of this version's snapshot in this browser and the folder of this copy of
// the site (null: no snapshot), whether to restore it (false: drop it, e.g. after it failed) and the
// visitor's link (the app is built for it: the page has drawn that view's pre-render), and the
// stores for a snapshot the page sees (store.js).
"use strict";
@@DOWNLOAD_JS@@
@@SNAPSHOT_JS@@
@@STORE_JS@@
const CONFIG = /*CONFIG*/{}/*END*/;
const BOOT = Object.assign({base: self.location.href, fresh: false, mode: "page", snapshotKey: null, snapshotScope: null,
                            restore: true, search: "", stores: []}, self.sdpaBoot || {});
const here = (path) => new URL(path, BOOT.base).href;
const post = (msg) => self.postMessage(msg);

let step = "runtime";
const status = (id, msg) => {
  step = id;
  post({type: "status", step: id, msg, t: performance.now()});
};

// Every file the boot needs (runtime, stdlib, lock, the package archive) is requested right now, so the
// downloads run alongside the runtime's start-up instead of after it; Pyodide's own fetches of those
// URLs are handed these responses. Each file is checked against the sha256 and size the build wrote
// into CONFIG.prefetch as it arrives (download.js; from a clone, so Pyodide still gets the real
// response: the wasm compiles while it streams and its compiled code is cached by the browser).
const downloads = new Map();     // absolute URL -> {path, response, checked}
const progress = {received: 0, expected: 0, waiting: new Set(), sent: 0};

function sendProgress(force) {
  const now = performance.now();
  if (!force && now - progress.sent < 250) return;
  progress.sent = now;
  post({type: "progress", received: progress.received, expected: progress.expected,
        waiting: [...progress.waiting]});
}

// The browser's fetch: self.fetch is replaced below, to hand Pyodide these downloads.
const networkFetch = self.fetch.bind(self);

function download(path, sha256, size, script) {
  const url = here(path);
  progress.expected += size;
  progress.waiting.add(path);
  // The offline copy first (keepOffline stored it under its sha256, which is this version's): a second
  // worker, such as the one that makes the snapshot, then downloads nothing, even before the service
  // worker controls the page.
  const kept = !BOOT.fresh && CONFIG.offlineCache && self.caches
    ? caches.open(CONFIG.offlineCache).then((c) => c.match(here(`${path}?sha256=${sha256}`))).catch(() => undefined)
    : Promise.resolve(undefined);
  const fetched = kept.then((hit) => hit || networkFetch(url, BOOT.fresh ? {cache: "reload"} : {}));
  downloads.set(url, sdpaDownload({path, sha256, size, script, fetched,
    onBytes: (n) => {
      progress.received += n;
      sendProgress(false);
    },
    onRead: () => {
      progress.waiting.delete(path);
      sendProgress(true);
    }}));
}

const SCRIPTS = ["pyodide/pyodide.js", "pyodide/pyodide.asm.js"];
for (const [path, sha256, size] of CONFIG.prefetch) download(path, sha256, size, SCRIPTS.includes(path));

// The first failed check, whatever the boot is waiting for at the time.
const checks = [...downloads.values()].map((d) => d.checked);
const failure = new Promise((resolve, reject) => checks.forEach((c) => c.catch(reject)));
failure.catch(() => {});
const guard = (promise) => Promise.race([promise, failure]);

// gzip bytes -> bytes, by the browser's own DecompressionStream.
async function inflate(buffer, path) {
  try {
    return await new Response(new Blob([buffer]).stream().pipeThrough(new DecompressionStream("gzip"))).arrayBuffer();
  } catch (err) {
    throw new BootError(`${path} could not be unpacked (${err.message || err})`, path);
  }
}

// Pyodide asks for python_stdlib.zip; the site ships it as one gzip stream (build/archive.py).
const STDLIB_URL = CONFIG.stdlib ? here(CONFIG.stdlib.replace(/\.gz$/, "")) : null;

self.fetch = (input, init) => {
  const url = new URL(input instanceof Request ? input.url : input, BOOT.base).href;
  if (url === STDLIB_URL) {
    return guard(downloads.get(here(CONFIG.stdlib)).checked).then((body) => inflate(body, CONFIG.stdlib))
      .then((zip) => new Response(zip, {headers: {"Content-Type": "application/zip"}}));
  }
  const got = downloads.get(url);
  if (got === undefined || got.script || got.used) return networkFetch(input, init);
  got.used = true;              // each response body can be read once
  return got.response;
};

// Pyodide loads pyodide.asm.js with importScripts(url): run the checked copy instead. It runs by
// indirect (global) eval, which the page's policy allows anyway ('unsafe-eval', for Panel), not by
// importScripts of a blob: URL: that would need blob: in script-src, where an injected blob: script
// would run too (build/render.py csp). Both files are strict scripts that publish what they define on
// globalThis, as they do when imported.
const checkedScripts = new Map();    // absolute URL -> its checked source text
const nativeImportScripts = self.importScripts.bind(self);
const globalEval = eval;
self.importScripts = (...urls) => {
  for (const url of urls) {
    const source = checkedScripts.get(new URL(url, BOOT.base).href);
    if (source === undefined) nativeImportScripts(url);
    else globalEval(source);
  }
};

async function loadScripts() {
  if (CONFIG.runtimeLock) {      // Pyodide from its CDN (build without a distribution): nothing to check
    try {
      nativeImportScripts(CONFIG.pyodideJs);
    } catch (err) {
      throw new BootError(`${CONFIG.pyodideJs} could not be loaded (${err.message || err})`, CONFIG.pyodideJs);
    }
    return;
  }
  for (const path of SCRIPTS) {
    const body = await guard(downloads.get(here(path)).checked);
    checkedScripts.set(here(path), new TextDecoder().decode(body) + "\n//# sourceURL=" + here(path));
  }
  try {
    self.importScripts(here("pyodide/pyodide.js"));
  } catch (err) {
    throw new BootError(`pyodide/pyodide.js could not be run (${err.message || err})`, "pyodide/pyodide.js");
  }
}

// Python's changes go to the page as one message per event-loop task (sdpa_worker.Outbox); `done` says the
// page's patch has been applied, so the answer and "idle" are one message.
function sendPatch(patch, buffers, done) {
  if (patch == null) post({type: "idle"});
  else post({type: "patch", patch, buffers, done: !!done});
}

// Pyodide's lock: ours lists no packages (they all come in the archive); a build without a Pyodide
// distribution uses its CDN's, for the compiled packages loaded from there (CONFIG.runtimePackages).
const lockOptions = () => ({lockFileURL: CONFIG.runtimeLock || here(CONFIG.lock)});

// Every package in one archive (build/archive.py): checked like every other download, inflated by the
// browser and read as soon as it has arrived (while Pyodide starts: none of that needs Python), then
// its files written into site-packages and its compiled libraries loaded, as loadPackage would.
let archiveFiles = null;
function readArchive() {
  if (archiveFiles === null) {
    const {path} = CONFIG.archive;
    const packed = downloads.has(here(path)) ? downloads.get(here(path)).checked
      : fetch(here(path)).then((r) => {
        if (!r.ok) throw new BootError(`${path} could not be downloaded (HTTP ${r.status})`, path);
        return r.arrayBuffer();
      });
    archiveFiles = packed.then((body) => inflate(body, path)).then((body) => untar(new Uint8Array(body), path));
    archiveFiles.catch(() => {});     // surfaced where the boot awaits it
  }
  return archiveFiles;
}

function untar(tar, path) {
  const files = sdpaUntar(tar);      // snapshot.js
  if (files.length === 0) throw new BootError(`${path} holds no files`, path);
  return files;
}

async function installArchive() {
  const {path, sitePackages, dynlibs} = CONFIG.archive;
  const files = await guard(readArchive());
  const FS = self.pyodide.FS;
  const api = self.pyodide._api;      // loadDynlib: what loadPackage uses (build/private_api.py checks it is there)
  if (dynlibs.length && !(api && typeof api.loadDynlib === "function")) {
    throw new BootError("this Pyodide cannot load compiled libraries from an archive (no _api.loadDynlib)", path);
  }
  sdpaWriteFiles(FS, sitePackages, files);
  for (const lib of dynlibs) await api.loadDynlib(`${sitePackages}/${lib}`);
  self.pyodide.runPython("import importlib\nimportlib.invalidate_caches()");
}

// The worker's Python is the module sdpa_worker (templates/sdpa_worker.py, shipped in the package
// archive); each step below calls one of its functions.
// (a name is looked up on the module's proxy: none may be one of PyProxy's own methods, such as apply,
// call, get, copy or toString)
function callPython(name, ...args) {
  const module = self.pyodide.pyimport("sdpa_worker");
  try {
    return module[name](...args);
  } finally {
    module.destroy();
  }
}
let applyPatch = null;      // what sdpa_worker.link returns: applies one patch from the page

async function loadRuntime(options) {
  const indexURL = CONFIG.pyodideJs.replace(/pyodide\.js$/, "");
  return guard(loadPyodide({
    indexURL: indexURL.startsWith("http") ? indexURL : here(indexURL),
    ...(STDLIB_URL ? {stdLibURL: STDLIB_URL} : {}),
    ...lockOptions(),
    ...options,
  }));
}

// Python from scratch: runtime, packages, Panel, the app (what a snapshot saves the time of).
async function bootPython(options) {
  self.pyodide = await loadRuntime(options);
  status("packages", `Loading packages: ${CONFIG.packages.join(", ")}`);
  if (CONFIG.runtimePackages.length) {        // a build without a Pyodide distribution: from its CDN
    await guard(self.pyodide.loadPackage(CONFIG.runtimePackages, {messageCallback: () => {}, checkIntegrity: true}));
  }
  await installArchive();
  await guard(Promise.all(checks));      // every file arrived whole, including any Pyodide did not ask for
  status("import", "Importing Panel and Bokeh");
  // Panel's asset URLs point at this site's copy
  callPython("start", here(CONFIG.panelRoot));
  status("app", "Running the app");
  callPython("build_app", BOOT.mode === "page" ? BOOT.search : "", CONFIG.firstId);
}

// A memory snapshot of Python once the app is built, kept in this browser under BOOT.snapshotKey
// (a hash of this worker's bytes, which hold every file's sha256, the site's address and the
// browser's WebAssembly features; boot.js makes it). Made by a second worker after the page is live;
// restored by the page's worker on later visits instead of starting Python, installing packages,
// importing Panel and building the app. The details of saving and restoring Pyodide's state are in
// snapshot.js (and build/pyodide_patch.py). Any failure to restore: the page boots without it.
const RESTORE_SECONDS = 30;
const FIND_SECONDS = 10;
let restored = false;      // Python came from a snapshot: until the page is live, any failure is the snapshot's
// A snapshot whose bytes are not the ones saved (a disk error, an edited file): dropped, and a new one
// made, since a fresh snapshot will restore. Any other failure to restore would repeat (boot.js).
class SnapshotDamaged extends Error {}
const snapshots = {
  // <key>.heap is the heap; <key>.json, written last, the rest: what snapshot.js puts back, the
  // heap's size and sha256, and the document as the app wrote it (so a restore skips write_doc).
  // The .json file's first line is the sha256 of the rest: the document and the side data are
  // checked before anything of them is used, the heap while Pyodide starts. Where they are kept
  // (the private file system, else Cache Storage) is store.js's choice; the checks are the same.
  stores: CONFIG.snapshot && BOOT.snapshotKey && BOOT.snapshotScope
    ? sdpaSnapshotStores({folder: CONFIG.snapshot.folder, scope: BOOT.snapshotScope, base: BOOT.base, allowed: BOOT.stores})
    : null,
  store: async () => snapshots.stores && snapshots.stores.pick(),

  async find() {
    const store = await this.store();
    if (!store) return null;
    if (BOOT.fresh || !BOOT.restore) {      // "Reload from the network", or the snapshot failed: drop it
      await this.drop().catch(() => {});
      return null;
    }
    try {
      const reading = (async () => {
        const saved = await this.parse(await store.read(`${BOOT.snapshotKey}.json`));
        const heap = await store.read(`${BOOT.snapshotKey}.heap`);
        return {...saved, heap, store: store.name, read: performance.now()};
      })();
      // a file held by another tab's worker, or a storage that does not answer: boot without it
      const late = new Promise((resolve, reject) => setTimeout(() => reject(new Error(
        `not read within ${FIND_SECONDS} s`)), FIND_SECONDS * 1000));
      return await Promise.race([reading, late]);
    } catch (err) {
      if (err instanceof SnapshotDamaged) {
        await this.drop().catch(() => {});
        post({type: "snapshot-damaged", msg: err.message});
      } else if (err.name !== "NotFoundError") {
        console.warn("SDPA Lab: the saved snapshot could not be read:", err);
        post({type: "snapshot-unreadable", msg: `${err.name || "Error"}: ${err.message || err}`});
      }
      return null;
    }
  },

  // <key>.json as written by make(): its sha256 line, then {meta, doc}.
  async encode(record) {
    const body = new TextEncoder().encode(JSON.stringify(record));
    const head = new TextEncoder().encode(`${await sha256hex(body)}\n`);
    const all = new Uint8Array(head.byteLength + body.byteLength);
    all.set(head, 0);
    all.set(body, head.byteLength);
    return all;
  },

  async parse(bytes) {
    const cut = bytes.indexOf(10);
    const saved = cut === 64 ? new TextDecoder().decode(bytes.subarray(0, cut)) : null;
    const body = bytes.subarray(cut + 1);
    if (saved === null || !/^[0-9a-f]{64}$/.test(saved)) throw new SnapshotDamaged("the saved document has no valid sha256 line");
    const digest = await sha256hex(body);
    if (digest !== saved) {
      throw new SnapshotDamaged(`the saved document's sha256 ${digest.slice(0, 12)}… differs from the one saved with it`);
    }
    return JSON.parse(new TextDecoder().decode(body));
  },

  async restore({meta, heap, doc, store, read}) {
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
    const files = guard(readArchive());     // awaited once the runtime has compiled (snapshot.js)
    files.catch(() => {});
    const restore = sdpaSnapshotPrepareRestore(meta, files, CONFIG.archive.sitePackages);
    let timer;
    const limit = new Promise((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`Pyodide did not start from the snapshot within ${RESTORE_SECONDS} s`)),
                         RESTORE_SECONDS * 1000);
    });
    try {
      // a damaged heap may also fail Pyodide's own checks first: its sha256 is the reason given
      const loading = loadRuntime({_loadSnapshot: heap, _snapshotDeserializer: restore.deserializer})
        .catch(async (err) => { await checked; throw err; });
      [self.pyodide] = await Promise.race([Promise.all([loading, checked]), limit]);
      at.runtime = performance.now();
    } finally {
      clearTimeout(timer);
    }
    delete self.pyodide._api.config._loadSnapshot;     // Pyodide keeps its options: a second 63 MB
    restore.finish(self.pyodide);
    restored = true;
    await guard(Promise.all(checks));
    self.pyodide.runPython("import importlib\nimportlib.invalidate_caches()");
    at.linked = performance.now();
    post({type: "restored", bytes: heap.byteLength, store, at, origin: performance.timeOrigin});
    return doc;
  },

  async make() {
    const started = performance.now();
    const store = await this.store();
    if (!store) throw new Error("it offers no private file storage for pages");
    await bootPython({_makeSnapshot: true});
    const doc = await writeDoc();
    const meta = await sdpaSnapshotRecord(self.pyodide);
    const heap = self.pyodide.makeMemorySnapshot({serializer: sdpaSnapshotSerializer});
    meta.heap = {bytes: heap.byteLength, sha256: await sha256hex(heap)};
    for (const other of this.stores.all) {        // one snapshot: this version's, in this store
      if (other === store) await store.keepOnly(`${BOOT.snapshotKey}.`);
      else if (await other.usable()) await other.keepOnly(null).catch(() => {});
    }
    try {
      await store.write(`${BOOT.snapshotKey}.heap`, heap);
      await store.write(`${BOOT.snapshotKey}.json`, await this.encode({meta, doc}));
    } catch (err) {
      await this.drop().catch(() => {});      // no half-written snapshot (e.g. over the storage quota)
      throw err;
    }
    post({type: "snapshot-stored", bytes: heap.byteLength, ms: performance.now() - started, store: store.name});
  },

  // A restore that failed (or a restored Python that failed before the page is live): dropped so it is
  // not tried again; the page starts a new worker without it (and, unless the snapshot was damaged,
  // makes no new one for a while: the same failure would repeat).
  async abandon(err) {
    const {msg, detail} = describe(err);
    await this.drop().catch(() => {});
    post({type: "snapshot-failed", msg, detail, damaged: err instanceof SnapshotDamaged});
  },

  async drop() {           // from every store (a snapshot made before the browser offered another)
    for (const store of this.stores ? this.stores.all : []) {
      if (!(await store.usable())) continue;
      for (const ext of ["json", "heap"]) await store.remove(`${BOOT.snapshotKey}.${ext}`);
    }
  },
};

// The document as JSON for the page: [docs_json, render_items, root_ids].
async function writeDoc() {
  const written = await self.pyodide.runPythonAsync("await __import__('sdpa_worker').write()");
  const doc = written.toJs();
  written.destroy();
  return doc;
}

async function start() {
  status("runtime", "Starting Python (Pyodide runtime)");
  readArchive();
  const saved = BOOT.mode === "page" ? snapshots.find() : null;
  await loadScripts();
  if (BOOT.mode === "snapshot") {
    await snapshots.make();
    return;
  }
  let doc;
  if (await saved) {
    try {
      doc = await snapshots.restore(await saved);
      if (BOOT.search && BOOT.search !== "?") {
        callPython("follow", BOOT.search);
        doc = null;        // written anew below
      }
    } catch (err) {
      await snapshots.abandon(err);
      return;
    }
  } else {
    await bootPython({});
  }
  status("render", "Drawing the live page");
  const [docs_json, render_items, root_ids] = doc || await writeDoc();
  post({type: "render", docs_json, render_items, root_ids});
}

// What this boot downloaded and checked goes straight into the service worker's cache, under the key
// sw.js uses (path?sha256=...), so its precache finds these files there instead of downloading them
// again: a browser's HTTP cache may not keep files this large (Chromium's in-memory cache does not).
// The page asks once it is live (so this never competes with drawing it), and registers the service
// worker after "kept".
self.addEventListener("message", (event) => {
  if (!event.data || event.data.type !== "keep-offline") return;
  // the page says a failure (a full storage) in words: the page will not work offline
  keepOffline().then(() => post({type: "kept"}), (err) => {
    console.warn("SDPA Lab: offline copy not stored:", err);
    post({type: "kept", error: {name: err && err.name || "Error", msg: `${err && err.message || err}`}});
  });
});

async function keepOffline() {
  if (!CONFIG.offlineCache || !self.caches) return;
  const cache = await caches.open(CONFIG.offlineCache);
  for (const [path, sha256] of CONFIG.prefetch) {
    const key = here(`${path}?sha256=${sha256}`);
    const got = downloads.get(here(path));
    if (await cache.match(key)) continue;
    const [response, body] = await Promise.all([got.response, got.checked]);
    const type = response.headers.get("Content-Type") || "application/octet-stream";
    await cache.put(key, new Response(body, {headers: {"Content-Type": type}}));
  }
}

function describe(err) {
  if (err instanceof Error || (err && typeof err.message === "string")) {
    const lines = `${err.message}`.trim().split("\n");
    return {msg: lines[lines.length - 1] || `${err.name || "Error"}`, detail: `${err.stack || err.message}`};
  }
  let text;
  try {
    text = typeof err === "object" ? JSON.stringify(err) : `${err}`;
  } catch (_) {
    text = `${err}`;
  }
  return {msg: text, detail: text};
}

async function fail(err) {
  if (restored && applyPatch === null) {     // restored, not yet live: boot again without the snapshot
    await snapshots.abandon(err);
    return;
  }
  if (!(err instanceof BootError) && checks.length) {
    // Pyodide's own error about a damaged file is vaguer than ours: give pending checks a moment.
    const settled = await Promise.race([Promise.allSettled(checks),
                                        new Promise((resolve) => setTimeout(resolve, 3000))]);
    const bad = (settled || []).find((s) => s.status === "rejected");
    if (bad) err = bad.reason;
  }
  const {msg, detail} = describe(err);
  post({type: "error", step, file: err && err.file || null, msg, detail, name: err && err.name || null});
}

self.onmessage = async (event) => {
  const msg = event.data;
  if (msg.type === "rendered") {
    try {
      applyPatch = callPython("link", sendPatch);
      post({type: "ready"});
    } catch (err) {
      await fail(err);
    }
  } else if (msg.type === "patch") {
    // the answer (one patch, or "idle" when nothing changed) is sent by applyPatch, even on error
    applyPatch(msg.patch);
  } else if (msg.type === "location") {
    callPython("set_location", msg.location);
  }
};

start().catch(fail);
