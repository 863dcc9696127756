// Page side of the app: starts the Python worker, shows each loading step, swaps the
// pre-rendered first paint for the live document, syncs patches (Panel's protocol),
// and once live sets up the offline copy and the warm-boot snapshot (setup.js, included below).
// No step can fail or stall silently: a damaged or missing file, an error in any step, or a step
// without news for too long shows a message naming the file or step, with Retry.
"use strict";
(() => {
  const STEPS = [
    ["page", "Page and plots drawn"],
    ["runtime", "Starting Python (Pyodide runtime)"],
    ["packages", "Loading packages"],
    ["import", "Importing Panel and Bokeh"],
    ["app", "Running the app"],
    ["render", "Drawing the live page"],
  ];
  // worker.js, checked before it runs; it is started from a blob: URL so that it runs under this
  // page's Content-Security-Policy (a worker loaded from a URL gets the policy of its own response).
  const WORKER = /*WORKER*/{}/*END*/;
  // Where the service worker lives and what it controls (build/offline.py: the offline policy).
  const SERVICE_WORKER = /*SERVICE_WORKER*/{}/*END*/;
  const BASE = new URL("./", location.href).href;
  // The first paint of every view and tour step, pre-rendered at build time (build/prerender.py
  // first_paints): index.html carries the default one, first/<key>.json the others.
  const FIRST_PAINT = /*FIRST_PAINT*/{}/*END*/;
  // Seconds without news before the page says a step is stuck (tests shorten them through
  // window.sdpaLabLimits). The worker cannot report while Python computes, hence the larger limits
  // for the steps that do; a download (worker.js included) is "stuck" when no byte arrived for
  // `download` seconds. A notice only: no download is abandoned while its connection is open.
  const LIMITS = Object.assign({download: 20, runtime: 60, packages: 60, import: 90, app: 90,
                                render: 60}, window.sdpaLabLimits || {});
  // Timings in ms since navigation start (performance.now()), read by tests and build/measure_site.py.
  const SNAPSHOT_SECONDS = 180;       // making one takes 3-5 s here; a stuck one is stopped
  const lab = window.sdpaLab = {steps: {}, latencies: [], ready: false, offlineReady: false,
                                error: null, errorFile: null, stalled: null, offline: null, adopted: null,
                                boot: null, snapshotStore: null, snapshot: null, snapshotFailure: null,
                                snapshotUnreadable: null, snapshotDamaged: null, firstPaint: null,
                                htmlPaint: "shown", painted: null, rendering: null};
  // The link's first paint (firstpaint.js): its HTML layer, then BokehJS drawing its pre-rendered
  // document beneath it.
  @@FIRSTPAINT_JS@@
  const firstPaint = sdpaFirstPaintOf({lab, firstPaint: FIRST_PAINT, search: location.search});
  window.sdpaFirstPaint = firstPaint.draw;

  let fresh = false;       // "Reload from the network" was chosen: bypass the caches this once
  try {
    fresh = sessionStorage.getItem("sdpa-fresh") === "1";
    sessionStorage.removeItem("sdpa-fresh");
  } catch (_) { /* storage disabled */ }
  let worker = null;

  // The progress panel (progress.js): each step, a stuck one, a failure with Retry.
  @@PROGRESS_JS@@
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

  async function sha256hex(buffer) {
    if (!(window.crypto && crypto.subtle)) return null;   // not a secure context: sizes only
    const digest = await crypto.subtle.digest("SHA-256", buffer);
    return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  }

  // This site's memory snapshot in this browser is keyed by worker.js's bytes (which hold every file's
  // sha256), the site's address (Panel's asset URLs are absolute in it) and the browser's
  // WebAssembly features (Pyodide's runtime adapts to them); it lives in a folder of this copy of the
  // site (scope: its address). null: none (no secure context).
  let keys = null;
  const snapshotKey = () => (keys = keys || snapshotKeys());      // computed once per page
  async function snapshotKeys() {
    if (typeof WebAssembly !== "object") return null;
    const features = ["Suspending", "promising", "Tag", "Exception", "Function"].map((k) => (k in WebAssembly ? 1 : 0)).join("");
    const hash = (text) => sha256hex(new TextEncoder().encode(text));
    const [key, scope] = await Promise.all([hash([WORKER.sha256, BASE, features].join("\n")), hash(BASE)]);
    return key && {key: key.slice(0, 32), scope: scope.slice(0, 16)};
  }

  let workerBody = null;     // worker.js as checked, for the snapshot worker

  // worker.js as the worker's downloads are: each byte is news (the watchdog says when none came for
  // LIMITS.download seconds), and it is waited for as long as the connection stays open.
  async function fetchWorker() {
    progress.waitingFor([WORKER.path]);
    try {
      const response = await fetch(`./${WORKER.path}`, {cache: fresh ? "reload" : "default"});
      news();
      if (!response.ok) {
        fatal(`${WORKER.path} could not be downloaded (HTTP ${response.status})`, {file: WORKER.path});
        return null;
      }
      const reader = response.body.getReader();
      const chunks = [];
      for (let got = await reader.read(); !got.done; got = await reader.read()) {
        chunks.push(got.value);
        news();
      }
      return await new Blob(chunks).arrayBuffer();
    } catch (err) {
      fatal(`${WORKER.path} could not be downloaded (${err.message || err})`, {file: WORKER.path});
      return null;
    } finally {
      progress.waitingFor([]);
    }
  }

  async function startWorker({snapshot = true} = {}) {
    const body = await fetchWorker();
    if (body === null) return;
    const digest = await sha256hex(body);
    if (body.byteLength !== WORKER.size || (digest !== null && digest !== WORKER.sha256)) {
      fatal(`${WORKER.path} is damaged: ${body.byteLength.toLocaleString("en")} bytes received, ` +
            `${WORKER.size.toLocaleString("en")} expected${body.byteLength === WORKER.size ? ", content differs" : ""}`,
            {file: WORKER.path});
      return;
    }
    if (lab.error) return;
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

  async function newWorker(mode, {restore = true} = {}) {
    const keys = WORKER.snapshots ? await snapshotKey() : null;
    // the page's Python builds the app for the visitor's link (the snapshot's, for no link)
    const boot = {base: BASE, fresh: fresh && mode === "page", mode, restore, search: mode === "page" ? location.search : "",
                  snapshotKey: keys && keys.key, snapshotScope: keys && keys.scope, stores: setup.snapshotStores()};
    const prefix = `self.sdpaBoot = ${JSON.stringify(boot)};\n`;
    return new Worker(URL.createObjectURL(new Blob([prefix, workerBody], {type: "text/javascript"})));
  }

  // What is set up once the page is live: the offline copy, the snapshot (setup.js).
  @@SETUP_JS@@
  const setup = sdpaSetup({lab, worker: WORKER, serviceWorker: SERVICE_WORKER, newWorker, snapshotKey,
                           snapshotSeconds: SNAPSHOT_SECONDS});

  // A restored Python that fails before the page is live: the worker has dropped its snapshot (or the
  // next one drops it); boot again the usual way. A damaged snapshot is made anew after this boot;
  // any other failure would repeat, so no new snapshot is made for this version for a while.
  function withoutSnapshot(msg, detail, damaged) {
    lab.snapshotFailure = msg;
    lab.boot = null;
    console.warn(`SDPA Lab: the saved snapshot did not restore (${msg}); starting Python afresh\n${detail || ""}`);
    if (!damaged) setup.blockSnapshots();
    worker.terminate();
    worker = null;
    startWorker({snapshot: false});
  }

  // Which changes go to Python, and when (patches.js): one queue per worker, and the reader's moves on
  // the pre-rendered page, made again on the live one.
  @@PATCHES_JS@@
  const earlyMoves = sdpaEarlyMoves();
  const live = () => !!(worker && worker.patches.doc);
  const watchEarly = setInterval(() => {
    const doc = window.Bokeh && Bokeh.documents && Bokeh.documents[0];
    if (!doc && !live()) return;
    clearInterval(watchEarly);
    if (!live()) earlyMoves.watch(doc, live);
  }, 50);

  // Python renders its stylesheets from Panel's server-style paths; point them at our copy too.
  const local = (json) => json.replaceAll('"static/extensions/panel/', '"./@@PANEL_DIST@@');

  // Draw the document once, adopting the pre-rendered one where it can (adopt.js); anything else (a
  // pre-render from another build, no pre-render) is drawn anew.
  @@ADOPT_JS@@

  // The worker names Panel's stylesheets by absolute URL, the pre-render by relative URL with a
  // version query: one file.
  const sameFile = (a, b) => {
    if (typeof a !== "string" || typeof b !== "string") return false;
    const file = (u) => new URL(u, BASE).href.split("?")[0];
    return file(a) === file(b);
  };

  function adopt(liveDocs) {
    const jsdoc = window.Bokeh && Bokeh.documents && Bokeh.documents.length === 1 && Bokeh.documents[0];
    if (!jsdoc || !firstPaint.drawn) return null;
    let drawn;
    try {
      drawn = sdpaModelsOf(JSON.parse(local(JSON.stringify(firstPaint.drawn))));
    } catch (_) {
      return null;
    }
    const moved = earlyMoves.ids();
    const events = sdpaAdoptEvents(drawn, sdpaModelsOf(liveDocs),
                                   {drawnHere: (id) => !!jsdoc.get_model_by_id(id), moved, sameFile});
    if (events === null) return null;
    if (events.length) sdpaQuiet.run(() => jsdoc.apply_json_patch({events}, new Map()));
    const attrs = {};         // what differed, by attribute name (read by tests and measure_site.py)
    for (const {attr} of events) attrs[attr] = (attrs[attr] || 0) + 1;
    lab.adopted = {changed: events.length, models: drawn.size, attrs};
    return jsdoc;
  }

  const linked = new WeakSet();
  async function render(msg) {
    lab.rendering = performance.now();       // when the live document arrived (steps.render: when Python began writing it)
    if (!window.Bokeh || !Bokeh.embed) {
      throw new Error("BokehJS is not loaded (@@BOKEH_DIR@@bokeh.min.js did not run)");
    }
    const docs_json = JSON.parse(local(msg.docs_json));
    const adopted = adopt(docs_json);
    if (adopted) {
      link(adopted);
      return;
    }
    const render_items = JSON.parse(msg.render_items);
    const root_ids = JSON.parse(msg.root_ids);
    const roots = {};
    sdpaRootElements().forEach(([, id], i) => { roots[root_ids[i]] = id; });
    render_items[0].roots = roots;
    render_items[0].root_ids = root_ids;
    // The live document replaces the pre-rendered one in place, root by root.
    Bokeh.index.roots.map((v) => v.remove());
    for (const el of document.querySelectorAll("[data-root-id]")) el.innerHTML = "";
    const [views] = await Bokeh.embed.embed_items(docs_json, render_items);
    lab.adopted = null;
    link([...views.roots.values()][0].model.document);
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
      worker.patches.idle();
    } else if (msg.type === "status") {
      mark(msg.step, msg.msg);
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
      withoutSnapshot(msg.msg, msg.detail, msg.damaged);
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
      worker.patches.send();
      document.body.classList.remove("pn-loading", "pn-arc");
      lab.steps.interactive = performance.now();
      lab.boot = lab.boot || "python";
      lab.ready = true;
      lab.stalled = null;
      document.documentElement.dataset.sdpaReady = "true";
      progress.done();
      worker.postMessage({type: "keep-offline"});   // then "kept", then the service worker
    } else if (msg.type === "kept") {
      // the worker's downloads are in the offline cache: precaching will not download them again
      setup.afterBoot(msg);
    } else if (msg.type === "patch") {
      sdpaQuiet.run(() => worker.patches.doc.apply_json_patch(msg.patch, msg.buffers));
      const {patches} = worker;
      if (patches.sentAt !== null) {
        lab.latencies.push(performance.now() - patches.sentAt);
        patches.sentAt = null;
      }
      if (msg.done) patches.idle();       // Python's answer to our patch: it is ready for the next one
    }
  }

  // a new version waiting for this reload goes first (setup.js); any failure there: boot this one
  setup.takeWaitingVersion().catch(() => false).then((reloading) => reloading || startWorker());
})();
