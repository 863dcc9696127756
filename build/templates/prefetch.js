// Every file the boot needs (runtime, stdlib, lock, the package archive), requested at once, so the
// downloads run alongside the runtime's start-up instead of after it, and handed to Pyodide when it asks
// for them. A module of worker.js, run by tests/js/prefetch.test.mjs (node --test).
//
// Each file is checked against the sha256 and size the build wrote into CONFIG.prefetch as it arrives
// (download.js; from a clone, so Pyodide still gets the real response: the wasm compiles while it streams
// and its compiled code is cached by the browser). The offline copy is looked in first (the worker's
// keepOffline stored each file there under its sha256, which is this version's): a second worker, such
// as the one that makes the snapshot, then downloads nothing, even before the service worker controls
// the page.
import {BootError, PRECHECKED, sdpaDownload, sha256hex} from "./download.js";

// gzip bytes -> bytes, by the browser's own DecompressionStream.
export async function sdpaInflate(buffer, path) {
  try {
    return await new Response(new Blob([buffer]).stream().pipeThrough(new DecompressionStream("gzip"))).arrayBuffer();
  } catch (err) {
    throw new BootError(`${path} could not be unpacked (${err.message || err})`, path);
  }
}

// files: [[path, sha256, size], ...]; scripts: the paths Pyodide runs with importScripts (read once,
// here); stdlib: the gzip file Pyodide asks for without its .gz (null: none); here(path): its absolute
// URL; network: the browser's fetch; offlineCache: the offline copy's cache name (null: none); fresh:
// bypass every cache; post: the page's progress messages.
export function sdpaPrefetch({files, scripts, stdlib, here, network, offlineCache, fresh, post}) {
  const downloads = new Map();     // absolute URL -> {path, response, checked, script}
  const progress = {received: 0, expected: 0, waiting: new Set(), sent: 0};

  function sendProgress(force) {
    const now = performance.now();
    if (!force && now - progress.sent < 250) return;
    progress.sent = now;
    post({type: "progress", received: progress.received, expected: progress.expected, waiting: [...progress.waiting]});
  }

  for (const [path, sha256, size] of files) {
    progress.expected += size;
    progress.waiting.add(path);
    const key = here(`${path}?sha256=${sha256}`);
    const kept = !fresh && offlineCache && self.caches
      ? caches.open(offlineCache).then((c) => c.match(key)).catch(() => undefined)
      : Promise.resolve(undefined);
    const fetched = kept.then((hit) => (hit ? healed(hit, path, sha256, size, key)
      : network(here(path), fresh ? {cache: "reload"} : {})));
    downloads.set(here(path), sdpaDownload({path, sha256, size, script: scripts.includes(path), fetched,
      onBytes: (n) => {
        progress.received += n;
        sendProgress(false);
      },
      onRead: () => {
        progress.waiting.delete(path);
        sendProgress(true);
      }}));
  }

  // A file from the offline copy, checked before anything reads it: whole, it is handed on as checked (no second
  // hash); damaged, it is deleted from the copy and fetched again from the network, checked as any download and
  // kept again (keepOffline), so that the next plain reload heals the copy with no button. Offline, that is said.
  async function healed(hit, path, sha256, size, key) {
    const body = await hit.arrayBuffer().catch(() => null);
    if (body && body.byteLength === size) {
      const digest = await sha256hex(body);
      if (digest === null || digest === sha256) {
        const whole = new Response(body, {status: 200, headers: hit.headers});
        if (digest !== null) PRECHECKED.add(whole);
        return whole;
      }
    }
    await caches.open(offlineCache).then((c) => c.delete(key)).catch(() => false);
    post({type: "healing", path});
    console.warn(`SDPA Lab: ${path} in the offline copy was damaged; deleted, and fetched again`);
    try {
      return await network(here(path), {cache: "reload"});
    } catch (err) {
      throw new BootError(`${path} in this browser's offline copy was damaged, and fetching it again failed ` +
                          `(${err.message || err}): the page seems to be offline; connect and reload`, path);
    }
  }

  // The first failed check, whatever the boot is waiting for at the time: guard(promise) rejects with it.
  const checks = [...downloads.values()].map((d) => d.checked);
  const failure = new Promise((resolve, reject) => checks.forEach((c) => c.catch(reject)));
  failure.catch(() => {});
  const guard = (promise) => Promise.race([promise, failure]);
  const stdlibURL = stdlib ? here(stdlib.replace(/\.gz$/, "")) : null;

  return {
    downloads,
    checks,
    guard,
    stdlibURL,      // the URL Pyodide is told to take the stdlib from
    // A file's checked bytes (a promise; rejects with the first failed check of any file).
    bytes: (path) => guard(downloads.get(here(path)).checked),
    // What the worker's fetch answers: a prefetched file's response, once (each body can be read once);
    // the stdlib inflated; anything else, and a script, from the network.
    fetch(input, init) {
      const url = new URL(input instanceof Request ? input.url : input, here("")).href;
      if (url === stdlibURL) {
        return this.bytes(stdlib).then((body) => sdpaInflate(body, stdlib))
          .then((zip) => new Response(zip, {headers: {"Content-Type": "application/zip"}}));
      }
      const got = downloads.get(url);
      if (got === undefined || got.script || got.used) return network(input, init);
      got.used = true;
      return got.response;
    },
  };
}
