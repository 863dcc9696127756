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
// The entry module of the worker's script, bundled like boot.js (build/bundle.py).
import "./nowebrtc.js";
import {sdpaArchive} from "./archive.js";
import {BootError} from "./download.js";
import {sdpaPrefetch} from "./prefetch.js";
import {sdpaCheckedScripts} from "./scripts.js";
import {sdpaSnapshotStores} from "./store.js";
import {sdpaWarmBoot} from "./warmboot.js";

const CONFIG = "@@DATA:CONFIG@@";
const BOOT = Object.assign({base: self.location.href, fresh: false, mode: "page", snapshotKey: null, snapshotScope: null,
                            restore: true, search: "", stores: []}, self.sdpaBoot || {});
const here = (path) => new URL(path, BOOT.base).href;
const post = (msg) => self.postMessage(msg);

let step = "runtime";
const status = (id, msg) => {
  step = id;
  post({type: "status", step: id, msg, t: performance.now()});
};

// Every file the boot needs, requested right now and checked as it arrives (prefetch.js); Pyodide's own
// fetches of those URLs are handed these responses.
const networkFetch = self.fetch.bind(self);      // the browser's: self.fetch is Pyodide's from here on
const SCRIPTS = ["pyodide/pyodide.js", "pyodide/pyodide.asm.js"];
const prefetched = sdpaPrefetch({files: CONFIG.prefetch, scripts: SCRIPTS, stdlib: CONFIG.stdlib, here, network: networkFetch,
                                 offlineCache: CONFIG.offlineCache, fresh: BOOT.fresh, post});
const {downloads, checks, guard} = prefetched;
self.fetch = (input, init) => prefetched.fetch(input, init);

// pyodide.js and pyodide.asm.js, run from their checked bytes (scripts.js)
const loadScripts = sdpaCheckedScripts({scope: self, paths: SCRIPTS, bytes: (path) => prefetched.bytes(path), here,
                                        cdnScript: CONFIG.runtimeLock ? CONFIG.pyodideJs : null});

// Python's changes go to the page as one message per event-loop task (sdpa_worker.Outbox); `done` says the
// page's patch has been applied, so the answer and "idle" are one message.
function sendPatch(patch, buffers, done) {
  if (patch == null) post({type: "idle"});
  else post({type: "patch", patch, buffers, done: !!done});
}

// Pyodide's lock: ours lists no packages (they all come in the archive); a build without a Pyodide
// distribution uses its CDN's, for the compiled packages loaded from there (CONFIG.runtimePackages).
const lockOptions = () => ({lockFileURL: CONFIG.runtimeLock || here(CONFIG.lock)});

// Every package in one archive (archive.js), unpacked as soon as it has arrived.
const archive = sdpaArchive({archive: CONFIG.archive, downloads, here});
const installArchive = async () => archive.install(self.pyodide, await guard(archive.files()));

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
    ...(prefetched.stdlibURL ? {stdLibURL: prefetched.stdlibURL} : {}),
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
  return self.pyodide;
}

// The warm boot from a memory snapshot (warmboot.js): found and restored by the page's worker, made by
// a second one once the page is live.
const snapshots = sdpaWarmBoot({
  stores: CONFIG.snapshot && BOOT.snapshotKey && BOOT.snapshotScope
    ? sdpaSnapshotStores({folder: CONFIG.snapshot.folder, scope: BOOT.snapshotScope, base: BOOT.base, allowed: BOOT.stores})
    : null,
  key: BOOT.snapshotKey, fresh: BOOT.fresh, restore: BOOT.restore, post, status, describe,
  runtime: {load: loadRuntime, boot: bootPython, writeDoc, files: () => guard(archive.files()),
            checked: () => guard(Promise.all(checks)), sitePackages: CONFIG.archive.sitePackages},
});

// The document as JSON for the page: [docs_json, render_items, root_ids].
async function writeDoc() {
  const written = await self.pyodide.runPythonAsync("await __import__('sdpa_worker').write()");
  const doc = written.toJs();
  written.destroy();
  return doc;
}

async function start() {
  status("runtime", "Starting Python (Pyodide runtime)");
  archive.files();
  const saved = BOOT.mode === "page" ? snapshots.find() : null;
  await loadScripts();
  if (BOOT.mode === "snapshot") {
    await snapshots.make();
    return;
  }
  let doc;
  if (await saved) {
    try {
      ({pyodide: self.pyodide, doc} = await snapshots.restore(await saved));
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
  if (snapshots.restored && applyPatch === null) {     // restored, not yet live: boot again without the snapshot
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
    // the answer (one patch, or "idle" when nothing changed) is sent by applyPatch, even on error; an error is
    // said on the page (boot.js), not left in this worker's console: its last line, the exception itself
    try {
      applyPatch(msg.patch);
    } catch (err) {
      const {msg: text, detail} = describe(err);
      post({type: "apply-error", msg: text.slice(0, 300), detail});
    }
  } else if (msg.type === "location") {
    callPython("set_location", msg.location);
  }
};

start().catch(fail);
