// The warm-boot snapshot for the next visit: once the page is live and its files are kept for offline
// use, a second worker builds the app again, in the background, and saves a memory snapshot of Python
// (worker.js, warmboot.js). What keeps it from being made is recorded in lab.snapshot, and said on the
// page when it is the browser's doing. A module of boot.js (imported by setup.js),
// run by tests/js/snapmaker.test.mjs (node --test).

// lab: the page's record; worker: boot.js's WORKER ({sha256, snapshots, snapshotFolder}); newWorker(mode):
// a started worker.js; snapshotKey(): a promise of this version's key (null: none); snapshotSeconds: how
// long making one may take; note(why): says on the page why later visits stay slow; because(err): a
// storage failure in words. Returns {make, block, clearBlock, stores}.
export function sdpaSnapshotMaker({lab, worker: WORKER, newWorker, snapshotKey, snapshotSeconds, note, because}) {
  // A snapshot of this version that did not restore although its bytes were whole would fail again:
  // no new one is made here for BLOCK_DAYS, or until Retry or "Reload from the network" (which clear
  // the block). A damaged snapshot blocks nothing: the next one is made at once.
  const BLOCK = "sdpa-snapshot-failed";
  const BLOCK_DAYS = 7;
  // cause: what failed (kept with the block, for the page's note and for a reader who asks)
  function block(cause) {
    try {
      localStorage.setItem(BLOCK, JSON.stringify({version: WORKER.sha256, cause: `${cause || ""}`.slice(0, 200),
                                                  until: Date.now() + BLOCK_DAYS * 864e5}));
    } catch (_) { /* storage disabled */ }
  }
  function clearBlock() {
    try {
      localStorage.removeItem(BLOCK);
    } catch (_) { /* storage disabled */ }
  }
  function blockedUntil() {
    let block = null;
    try {
      block = JSON.parse(localStorage.getItem(BLOCK));
    } catch (_) { /* storage disabled, or a value of an older version: no block */ }
    if (!block || block.version !== WORKER.sha256 || !(block.until > Date.now())) return null;
    return new Date(block.until);
  }

  // Where this page could keep a snapshot, in the worker's order of preference (store.js): the worker
  // uses no store the page cannot see (tests hide the private file system to exercise Cache Storage).
  const stores = () => [
    ...(navigator.storage && navigator.storage.getDirectory ? ["opfs"] : []),
    ...(window.caches ? ["cache"] : []),
  ];

  // eslint-disable-next-line no-unused-vars -- never read: holding the cache open is the point (see below)
  let heldCache = null;

  // Once the page is live and its files are kept for offline use: a second worker builds the app
  // again, in the background, and saves a memory snapshot of Python for the next visit.
  async function make() {
    if (lab.snapshot !== null) return;
    if (lab.boot === "snapshot") {
      lab.snapshot = {state: "used"};       // this visit was restored from it
      return;
    }
    const blocked = blockedUntil();
    const connection = navigator.connection || {};
    // the browser's own limits are said on the page; the page's choices (data saver, little memory) only here
    const missing = !stores().length ? "it offers no private file storage for pages"
      : !(await snapshotKey()) ? "the page was not opened over a secure (https) connection"
      : null;
    const why = !WORKER.snapshots ? "this build loads Pyodide from its CDN, unpatched"
      : lab.snapshotsOff ? "turned off for this page (window.sdpaLabLimits.snapshots = false: a test harness)"
      : missing
      || (blocked ? `a snapshot of this version did not restore in this browser; not tried again before ${blocked.toISOString()}`
      : connection.saveData ? "the browser asks to save data"
      : navigator.deviceMemory && navigator.deviceMemory < 4 ? "less than 4 GB of memory: a second Python would not fit well"
      : null);
    if (why) {
      lab.snapshot = {state: "unavailable", why};
      if (missing) note(missing);
      // a restore that failed on whole bytes is said once, until the block ends (a Retry ends it)
      else if (blocked && WORKER.snapshots) {
        note(`the one kept after an earlier visit did not start here; no new one is made before ${
          blocked.toLocaleDateString("en", {day: "numeric", month: "long", year: "numeric"})}`);
      }
      return;
    }
    lab.snapshot = {state: "making"};
    // WebKitGTK drops what a worker put in Cache Storage once the worker is gone, unless a page holds
    // that cache open (measured: 0 entries after terminate(), self.close() or a wait; all of them when
    // the page had opened it; kept after the page is gone). Held as long as the page is open.
    heldCache = window.caches ? await caches.open(WORKER.snapshotFolder).catch(() => null) : null;
    const maker = await newWorker("snapshot");
    const limit = setTimeout(() => done({state: "failed", msg: `not made within ${snapshotSeconds} s`}), snapshotSeconds * 1000);
    function done(state) {
      if (lab.snapshot.state !== "making") return;
      clearTimeout(limit);
      lab.snapshot = state;
      maker.terminate();
      if (state.state === "stored") return;
      console.warn(`SDPA Lab: no snapshot for the next visit: ${state.msg}`);
      if (state.name === "QuotaExceededError" || state.name === "SecurityError" || state.name === "NotAllowedError"
          || /no private file storage/.test(state.msg)) {
        note(state.name === "NotAllowedError" ? "storage is turned off for this page" : because(state));
      }
    }
    maker.onmessage = (event) => {
      const msg = event.data || {};
      if (msg.type === "snapshot-stored") done({state: "stored", bytes: msg.bytes, ms: Math.round(msg.ms), store: msg.store});
      else if (msg.type === "error") done({state: "failed", msg: msg.msg, name: msg.name});
    };
    maker.onerror = (event) => {
      event.preventDefault();
      done({state: "failed", msg: event.message || "the snapshot worker stopped"});
    };
  }

  return {make, block, clearBlock, stores};
}
