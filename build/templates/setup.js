// What the page sets up once it is live, in the background: the offline copy (the worker's downloads
// kept, then the service worker, sw.js) and the warm-boot snapshot for the next visit. What cannot be
// set up is said on the page in plain words (storage full, no service workers, a damaged sw.js, no
// private file storage); the page stays usable either way. A module of boot.js;
// everything of the page it uses is passed to sdpaSetup.
import {sdpaSnapshotMaker} from "./snapmaker.js";
export function sdpaSetup({lab, worker: WORKER, serviceWorker: SERVICE_WORKER, newWorker, snapshotKey, snapshotSeconds}) {
  // ---- notes on the page ------------------------------------------------------------------------
  // One line per kind ("offline", "snapshot"), the first reason given for it; read by tests as lab.notes.
  lab.notes = {};
  let box = null;
  function note(kind, text) {
    if (kind in lab.notes) return;
    lab.notes[kind] = text;
    console.warn(`SDPA Lab: ${text}`);
    if (box === null) {
      box = document.createElement("div");
      box.id = "sdpa-notes";
      box.setAttribute("role", "status");
      box.innerHTML = '<button type="button" aria-label="Dismiss these notes">×</button>';
      box.querySelector("button").addEventListener("click", () => box.remove());
      document.body.appendChild(box);
    }
    const line = document.createElement("p");
    line.dataset.kind = kind;
    line.textContent = text;
    box.appendChild(line);
  }

  // Why storing failed, for a reader.
  function because(err) {
    const name = err && err.name;
    if (name === "QuotaExceededError") return "storage is full";
    if (name === "SecurityError") return "storage is turned off for this page (private browsing or browser settings)";
    return `${(err && (err.msg || err.message)) || err}`;
  }

  // ---- the offline copy -------------------------------------------------------------------------
  const offlineNote = (why) => note("offline", `This page will not work offline in this browser: ${why}.`);
  let installFailure = null;      // what sw.js said when its install failed

  // `kept`: the worker's answer to "keep-offline" (its downloads put in the offline cache), with the
  // error if they could not be.
  function afterBoot(kept) {
    if (kept && kept.error) offlineNote(because(kept.error));
    registerServiceWorker();
    const later = window.requestIdleCallback || ((f) => setTimeout(f, 1000));
    later(() => snapshots.make(), {timeout: 5000});
  }

  // Offline after one visit. Registered once the app runs, so precaching never competes
  // with the first boot for bandwidth (it mostly revalidates what the browser just fetched).
  function registerServiceWorker() {
    if (!("serviceWorker" in navigator)) {
      offlineNote(window.isSecureContext === false ? "it was not opened over a secure (https) connection"
        : "service workers are not available (private windows often lack them)");
      return;
    }
    navigator.serviceWorker.addEventListener("message", (event) => {
      if (event.data && event.data.type === "install-failed") installFailure = event.data;
    });
    navigator.serviceWorker.startMessages();
    const watch = (incoming) => incoming.addEventListener("statechange", () => {
      if (incoming.state === "installed" && navigator.serviceWorker.controller) notifyUpdate(incoming);
      if (incoming.state === "redundant" && !navigator.serviceWorker.controller) installFailed();
    });
    navigator.serviceWorker.register(SERVICE_WORKER.url, {scope: SERVICE_WORKER.scope}).then((reg) => {
      if (!reg) return;     // registration refused (e.g. blocked by a test harness)
      reg.addEventListener("updatefound", () => watch(reg.installing));
      if (reg.installing) watch(reg.installing);
      if (reg.waiting && navigator.serviceWorker.controller) notifyUpdate(reg.waiting);
    }).catch((err) => {
      console.warn("service worker not registered:", err);      // the browser's words, for developers
      const file = SERVICE_WORKER.url.replace(/^\.\//, "");
      offlineNote(err && err.name === "SecurityError" ? `the browser refused the file that makes it work offline (${file})`
        : `the file that makes it work offline (${file}) is missing or damaged`);
    });
    navigator.serviceWorker.ready.then(() => lab.checkOffline());
    // the cache can be cleared while the page is open (browser settings, storage pressure)
    document.addEventListener("visibilitychange", () => document.visibilityState === "visible" && lab.checkOffline());
    window.addEventListener("online", () => lab.checkOffline());
  }

  // sw.js gave up its install (it could not store every file): say why, as sw.js told it, or as the
  // storage estimate shows.
  async function installFailed() {
    let why = installFailure && (installFailure.full ? "storage is full" : `its files could not be stored (${installFailure.msg})`);
    if (!why && navigator.storage && navigator.storage.estimate) {
      const {usage = 0, quota = Infinity} = await navigator.storage.estimate().catch(() => ({}));
      if (quota - usage < 50e6) why = "storage is full";
    }
    offlineNote(why || "its files could not be stored");
  }

  // Ask the active service worker something; its answer comes back on a MessagePort.
  function askServiceWorker(message, seconds) {
    return navigator.serviceWorker.ready.then((reg) => new Promise((resolve, reject) => {
      const channel = new MessageChannel();
      const timer = setTimeout(() => reject(new Error(`no answer to ${message.type} in ${seconds} s`)), seconds * 1000);
      channel.port1.onmessage = (event) => {
        clearTimeout(timer);
        resolve(event.data);
      };
      reg.active.postMessage(message, [channel.port2]);
    }));
  }

  // "Works offline" means every file of this version is in the service worker's cache, as counted
  // now: lab.offline = {total, missing}. When files are missing (Cache Storage cleared), the service
  // worker downloads them in the background (unless refill is false) and the state is counted again.
  let checking = null;
  lab.checkOffline = ({refill = true} = {}) => {
    if (!("serviceWorker" in navigator)) return Promise.resolve(false);
    const report = (state) => {
      lab.offline = {total: state.total, missing: state.missing.length};
      lab.offlineReady = state.missing.length === 0;
      document.documentElement.dataset.sdpaOffline = String(lab.offlineReady);
      return state;
    };
    if (checking === null) {
      checking = askServiceWorker({type: "status"}, 30).then(report)
        .then((state) => (refill && state.missing.length && navigator.onLine !== false
          ? askServiceWorker({type: "refill"}, 600).then(report) : state))
        .catch((err) => console.warn("SDPA Lab: could not check the offline cache:", err))
        .then(() => lab.offlineReady)
        .finally(() => { checking = null; });
    }
    return checking;
  };

  // A new version waits while a page of the old one is open, and a reload alone does not let it in
  // (the reloading page keeps the old version in use). Before booting, a page that finds a version
  // waiting asks it to take over if this is the only page open, then reloads once: the reload gets the
  // new version, every file from it. Resolves true when that reload is coming.
  // It asks only once the page has stopped requesting files (quiet, below). Chromium lets a version
  // that called skipWaiting() in when the old one is idle: it stops the old worker at once, but a
  // request of this page reaching the old worker meanwhile (a stylesheet, the favicon) starts it
  // again, and then the new version waits until the old worker has had nothing to do for 30 s (with
  // DevTools attached, as under Playwright, up to 5 min). Asked while the page was still loading, it
  // never came in within the 10 s the page waits.
  async function takeWaitingVersion() {
    if (!("serviceWorker" in navigator) || !navigator.serviceWorker.controller) return false;
    const reg = await navigator.serviceWorker.getRegistration(SERVICE_WORKER.scope).catch(() => null);
    if (!reg || !reg.waiting) return false;
    await quiet();
    if (!reg.waiting) return false;
    const taken = new Promise((resolve) => navigator.serviceWorker.addEventListener("controllerchange", () => resolve(true)));
    const answer = new Promise((resolve) => {
      const channel = new MessageChannel();
      channel.port1.onmessage = (event) => resolve(!!(event.data && event.data.alone));
      reg.waiting.postMessage({type: "takeOverIfAlone"}, [channel.port2]);
    });
    // short limits: the page waits for this before it boots (lab.takeOver says what happened)
    const late = (seconds) => new Promise((resolve) => setTimeout(() => resolve(null), seconds * 1000));
    const alone = await Promise.race([answer, late(3)]);
    lab.takeOver = alone === null ? "no answer from the waiting version" : alone ? "asked" : "other pages open";
    if (!alone) return false;                 // other pages of the old version are open (or no answer)
    if (!(await Promise.race([taken, late(10)]))) {
      lab.takeOver = "the waiting version did not take over";
      return false;
    }
    lab.takeOver = "reloading into the new version";
    location.reload();
    return true;
  }

  // Resolves once the page has loaded and has requested no file for `ms` (the favicon comes some
  // 0.5 s after the load event, unseen by resource timing), or `limit` s after the call at most.
  function quiet(ms = 1000, limit = 10) {
    const until = performance.now() + limit * 1000;
    const loaded = document.readyState === "complete" ? Promise.resolve()
      : new Promise((resolve) => window.addEventListener("load", resolve, {once: true}));
    return loaded.then(() => new Promise((resolve) => {
      let count = -1;
      let since = 0;
      const look = () => {
        const now = performance.now();
        const seen = performance.getEntriesByType("resource").length;
        if (seen !== count) {
          count = seen;
          since = now;
        }
        if (now - since >= ms || now >= until) resolve();
        else setTimeout(look, 100);
      };
      look();
    }));
  }

  function notifyUpdate(waiting) {
    if (document.getElementById("sdpa-update")) return;
    const bar = document.createElement("div");
    bar.id = "sdpa-update";
    bar.setAttribute("role", "alert");
    bar.innerHTML = 'A new version of SDPA Lab is ready. <button type="button">Reload</button>';
    bar.querySelector("button").addEventListener("click", () => {
      navigator.serviceWorker.addEventListener("controllerchange", () => location.reload());
      waiting.postMessage({type: "skipWaiting"});
    });
    document.body.appendChild(bar);
  }

  // ---- the warm-boot snapshot (snapmaker.js) ------------------------------------------------------
  const snapshots = sdpaSnapshotMaker({lab, worker: WORKER, newWorker, snapshotKey, snapshotSeconds, because,
                                       note: (why) => note("snapshot", "Later visits will start as slowly as this one: " +
                                                                       `this browser cannot keep a ready copy of the app (${why}).`)});

  return {afterBoot, takeWaitingVersion, blockSnapshots: snapshots.block, clearSnapshotBlock: snapshots.clearBlock,
          snapshotStores: snapshots.stores};
}
