// Page side of the app: starts the Python worker, shows each loading step, swaps the
// pre-rendered first paint for the live document, syncs patches (Panel's protocol),
// and once live sets up the offline copy and the warm-boot snapshot (setup.js, snapmaker.js).
// No step can fail or stall silently: a damaged or missing file, an error in any step, or a step
// without news for too long shows a message naming the file or step, with Retry.
// The entry module of the page's script: build/bundle.py bundles it with what it imports into boot.js, and
// build/runtime.py puts each "@@DATA:NAME@@" string's data in its place (as /*NAME*/{...}/*END*/).
import "./nowebrtc.js";
import {sdpaLiveDocument} from "./adopt.js";
import {sdpaBokehLeaks} from "./bokeh_leaks.js";
import {sdpaFirstPaintOf} from "./firstpaint.js";
import {sdpaEarlyMoves, sdpaPatchQueue, sdpaQuiet} from "./patches.js";
import {sdpaProgress} from "./progress.js";
import {sdpaSetup} from "./setup.js";
import {sdpaSlicer} from "./slices.js";
import {sdpaWorkerStart} from "./start.js";

const STEPS = [
  ["page", "Page and plots drawn"],
  ["runtime", "Starting Python (Pyodide runtime)"],
  ["packages", "Loading packages"],
  ["import", "Importing Panel and Bokeh"],
  ["app", "Running the app"],
  ["render", "Drawing the live page"],
];
// worker.js's path, size and sha256 (start.js checks it before it runs), and whether it can make a snapshot.
const WORKER = "@@DATA:WORKER@@";
// Where the service worker lives and what it controls (build/offline.py: the offline policy).
const SERVICE_WORKER = "@@DATA:SERVICE_WORKER@@";
const BASE = new URL("./", location.href).href;
// The first paint of every view and tour step, pre-rendered at build time (build/prerender.py
// first_paints): index.html carries the default one, first/<key>.json the others.
const FIRST_PAINT = "@@DATA:FIRST_PAINT@@";
// Seconds without news before the page says a step is stuck (tests shorten them through
// window.sdpaLabLimits). The worker cannot report while Python computes, hence the larger limits
// for the steps that do; a download (worker.js included) is "stuck" when no byte arrived for
// `download` seconds. A notice only: no download is abandoned while its connection is open.
const LIMITS = Object.assign({download: 20, runtime: 60, packages: 60, import: 90, app: 90,
                              render: 60}, window.sdpaLabLimits || {});
// Timings in ms since navigation start (performance.now()), read by tests and benchmarks/measure_site.py.
const SNAPSHOT_SECONDS = 180;       // making one takes 3-5 s here; a stuck one is stopped
const lab = window.sdpaLab = {steps: {}, latencies: [], applyErrors: [], healed: [], ready: false, offlineReady: false,
                              error: null, errorFile: null, stalled: null, offline: null, adopted: null,
                              boot: null, snapshotStore: null, snapshot: null, snapshotFailure: null,
                              snapshotUnreadable: null, snapshotDamaged: null, firstPaint: null,
                              htmlPaint: "shown", painted: null, rendering: null};
// The link's first paint (firstpaint.js): its HTML layer, then BokehJS drawing its pre-rendered
// document beneath it, in slices (slices.js).
// What would keep removed figures alive in a long session (bokeh_leaks.js): patched before the first draw.
const bokehLeaks = sdpaBokehLeaks();
const slicer = sdpaSlicer();
const inSlices = (Bokeh, draw) => {
  bokehLeaks.patch(Bokeh);
  return slicer(Bokeh, draw);
};
// a test that is not about the warm boot turns its making off (a second Python per boot, in the background)
lab.snapshotsOff = LIMITS.snapshots === false;
const firstPaint = sdpaFirstPaintOf({lab, firstPaint: FIRST_PAINT, search: location.search, inSlices});
window.sdpaFirstPaint = firstPaint.draw;

let fresh = false;       // "Reload from the network" was chosen: bypass the caches this once
try {
  fresh = sessionStorage.getItem("sdpa-fresh") === "1";
  sessionStorage.removeItem("sdpa-fresh");
} catch (_) { /* storage disabled */ }
let worker = null;

// The progress panel (progress.js): each step, a stuck one, a failure with Retry.
const progress = sdpaProgress({
  lab, steps: STEPS, limits: LIMITS,
  started: () => worker !== null,
  stop: () => worker && worker.terminate(),
  act: (name) => {
    setup.clearSnapshotBlock();     // the reader asks for a new try: a snapshot may be made again
    if (name === "retry") location.reload();
    if (name === "fresh") reloadFromNetwork();
  },
});
const {mark, fatal, news} = progress;
window.addEventListener("load", () => { lab.steps.page = performance.now(); });

// Scripts and stylesheets of the page carry integrity hashes: a damaged or missing one fires an
// error event here (capture phase: resource errors do not bubble).
window.addEventListener("error", (event) => {
  const el = event.target;
  if (!el || el === window || !(el.tagName === "SCRIPT" || (el.tagName === "LINK" && el.rel === "stylesheet"))) return;
  const url = el.src || el.href;
  const file = url.startsWith(BASE) ? url.slice(BASE.length).split("?")[0] : url;
  fatal(`${file} did not load: it is missing or damaged, or the download failed`, {file, step: "page"});
}, true);

async function reloadFromNetwork() {
  try {
    sessionStorage.setItem("sdpa-fresh", "1");     // worker.js and the worker's files: cache "reload"
  } catch (_) { /* storage disabled: the files below are refreshed all the same */ }
  // The page's own scripts and stylesheets are requested by the document: refresh the one that
  // failed (or all of them) in the browser's and the service worker's caches before reloading.
  const own = [...document.querySelectorAll("script[src], link[rel=stylesheet][href]")]
    .map((el) => el.src || el.href).filter((u) => u.startsWith(BASE));
  const failed = lab.errorFile && own.find((u) => u.slice(BASE.length).split("?")[0] === lab.errorFile);
  const urls = failed ? [failed] : (lab.errorFile ? [] : own);
  await Promise.allSettled(urls.map((u) => fetch(u, {cache: "reload"})));
  location.reload();
}

// worker.js, checked and started (start.js).
const starter = sdpaWorkerStart({worker: WORKER, base: BASE, fresh, progress, stores: () => setup.snapshotStores()});
let workerBody = null;     // worker.js as checked, for the snapshot worker
const newWorker = (mode, options) => starter.create(workerBody, mode, {...options, search: location.search});

async function startWorker({snapshot = true} = {}) {
  const body = await starter.checked();
  if (body === null || lab.error) return;
  workerBody = body;
  worker = await newWorker("page", {restore: snapshot});
  const started = worker;
  started.patches = sdpaPatchQueue((msg) => started.postMessage(msg));
  news();
  worker.onmessage = onWorkerMessage;
  worker.onerror = (event) => {
    event.preventDefault();
    fatal(`the Python worker stopped: ${event.message || "unknown error"}` +
          (event.filename ? ` (${event.filename}:${event.lineno})` : ""));
  };
  worker.onmessageerror = () => fatal("a message from the Python worker could not be read");
}

// What is set up once the page is live: the offline copy (setup.js), the snapshot (snapmaker.js).
const setup = sdpaSetup({lab, worker: WORKER, serviceWorker: SERVICE_WORKER, newWorker, snapshotKey: starter.snapshotKey,
                         snapshotSeconds: SNAPSHOT_SECONDS});

// A restored Python that fails before the page is live: the worker has dropped its snapshot (or the
// next one drops it); boot again the usual way. A damaged snapshot is made anew after this boot;
// any other failure would repeat, so no new snapshot is made for this version for a while.
// A change Python could not apply, once live: said on the page (the figures may no longer match the controls),
// with a reload that starts over from the address; each is kept in lab.applyErrors.
function applyError(msg, detail) {
  lab.applyErrors.push(msg);
  console.error(`SDPA Lab: Python could not apply a change\n${detail || msg}`);
  let box = document.getElementById("sdpa-apply-error");
  if (!box) {
    box = document.createElement("div");
    box.id = "sdpa-apply-error";
    box.className = "sdpa-apply-error";
    box.setAttribute("role", "alert");
    const text = document.createElement("span");
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = "Reload";
    button.addEventListener("click", () => window.location.reload());
    box.append(text, " ", button);
    document.body.append(box);
  }
  box.firstChild.textContent = `Python could not apply your last change (${msg}). The figures may no longer ` +
    "match the controls: reload to start again from this address.";
}

// proves: the failure shows this browser cannot restore this version's snapshot (worker.js: not a damaged
// snapshot, not a file that did not arrive); only then is no new one made for a while (setup.blockSnapshots).
function withoutSnapshot(msg, detail, proves = true) {
  lab.snapshotFailure = msg;
  lab.boot = null;
  console.warn(`SDPA Lab: the saved snapshot did not restore (${msg}); starting Python afresh\n${detail || ""}`);
  if (proves) setup.blockSnapshots(msg);
  worker.terminate();
  worker = null;
  startWorker({snapshot: false});
}

// Which changes go to Python, and when (patches.js): one queue per worker, and the reader's moves on
// the pre-rendered page, made again on the live one.
const earlyMoves = sdpaEarlyMoves();
const live = () => !!(worker && worker.patches.doc);
const watchEarly = setInterval(() => {
  const doc = window.Bokeh && Bokeh.documents && Bokeh.documents[0];
  if (!doc && !live()) return;
  clearInterval(watchEarly);
  if (!live()) earlyMoves.watch(doc, live);
}, 50);

// Draw the document once, adopting the pre-rendered one where it can (adopt.js); anything else (a
// pre-render from another build, no pre-render) is drawn anew.
const drawLive = sdpaLiveDocument({lab, firstPaint, earlyMoves, base: BASE, panelDist: "./@@PANEL_DIST@@",
                                   beforeDraw: bokehLeaks.patch,
                                   bokehJs: "@@BOKEH_DIR@@bokeh.min.js"});
const linked = new WeakSet();
async function render(msg) {
  lab.rendering = performance.now();       // when the live document arrived (steps.render: when Python began writing it)
  if (firstPaint.drawing) await firstPaint.drawing.catch(() => null);     // the first draw runs in slices
  link(await drawLive(msg));
}

function link(jsdoc) {
  worker.patches.doc = jsdoc;
  if (!linked.has(jsdoc)) {        // once: a worker started again after a failed restore links it again
    linked.add(jsdoc);
    jsdoc.on_change((event) => worker && worker.patches.change(event), false);
  }
  worker.postMessage({type: "rendered"});
  worker.postMessage({type: "location", location: JSON.stringify(window.location)});
}

async function onWorkerMessage(event) {
  const msg = event.data;
  news();
  if (msg.type === "idle") {
    firstPaint.settled();
    worker.patches.idle();
  } else if (msg.type === "status") {
    mark(msg.step, msg.msg);
  } else if (msg.type === "healing") {
    lab.healed.push(msg.path);          // a damaged file of the offline copy, fetched again (prefetch.js)
  } else if (msg.type === "progress") {
    progress.waitingFor(msg.waiting);
    progress.downloaded(msg.received, msg.expected);
  } else if (msg.type === "error") {
    fatal(msg.msg, {file: msg.file, step: msg.step, detail: msg.detail});
  } else if (msg.type === "restored") {
    lab.boot = "snapshot";
    lab.snapshotStore = msg.store;       // where it was kept (worker.js store.js: "opfs" or "cache")
    // when its parts were done (worker.js restore), in ms since navigation as lab.steps
    lab.restored = Object.fromEntries(Object.entries(msg.at).map(([k, t]) => [k, t + msg.origin - performance.timeOrigin]));
  } else if (msg.type === "snapshot-unreadable") {
    lab.snapshotUnreadable = msg.msg;      // not tried: booted the usual way (kept for the next visit)
  } else if (msg.type === "snapshot-damaged") {
    lab.snapshotDamaged = msg.msg;         // dropped, not tried: booted the usual way; a new one follows
    console.warn(`SDPA Lab: the saved snapshot was damaged (${msg.msg}); starting Python afresh`);
  } else if (msg.type === "snapshot-failed") {
    withoutSnapshot(msg.msg, msg.detail, msg.proves);
  } else if (msg.type === "render") {
    try {
      await render(msg);
    } catch (err) {
      if (lab.boot === "snapshot") withoutSnapshot(`the page could not draw its document: ${err.message || err}`, err.stack);
      else fatal(`${err.message || err}`, {step: "render", detail: err.stack});
    }
  } else if (msg.type === "ready") {
    worker.patches.busy = false;
    const moves = earlyMoves.replay(worker.patches.doc, lab.adopted !== null, worker.patches);
    if (moves) lab.earlyMoves = moves;
    firstPaint.handoff(worker.patches.doc, moves);    // the layer's control, moved before Python was live (early.js)
    worker.patches.send();
    document.body.classList.remove("pn-loading", "pn-arc");
    lab.steps.interactive = performance.now();
    lab.boot = lab.boot || "python";
    lab.ready = true;
    firstPaint.live();
    lab.stalled = null;
    document.documentElement.dataset.sdpaReady = "true";
    progress.done();
    worker.postMessage({type: "keep-offline"});   // then "kept", then the service worker
  } else if (msg.type === "apply-error") {
    applyError(msg.msg, msg.detail);
  } else if (msg.type === "kept") {
    // the worker's downloads are in the offline cache: precaching will not download them again
    setup.afterBoot(msg);
  } else if (msg.type === "patch") {
    sdpaQuiet.run(() => worker.patches.doc.apply_json_patch(msg.patch, msg.buffers));
    bokehLeaks.pruneSoon(worker.patches.doc);
    const {patches} = worker;
    if (patches.sentAt !== null) {
      lab.latencies.push(performance.now() - patches.sentAt);
      patches.sentAt = null;
    }
    if (msg.done) {                     // Python's answer to our patch: it is ready for the next one
      firstPaint.settled();
      patches.idle();
    }
  }
}

// a new version waiting for this reload goes first (setup.js); any failure there: boot this one
setup.takeWaitingVersion().catch(() => false).then((reloading) => reloading || startWorker());
