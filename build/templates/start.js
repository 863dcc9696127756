// Starting the Python worker: worker.js is downloaded as the worker's own downloads are (each byte is
// news; the progress watchdog says when none came for a while, and it is waited for as long as the
// connection stays open), checked against the size and sha256 the build wrote into boot.js, and started
// from a blob: URL, so that it runs under this page's Content-Security-Policy (a worker loaded from a URL
// gets the policy of its own response). A module of boot.js, run by
// tests/js/start.test.mjs (node --test).

export async function sdpaSha256Hex(buffer) {
  if (!(globalThis.crypto && crypto.subtle)) return null;   // not a secure context: sizes only
  const digest = await crypto.subtle.digest("SHA-256", buffer);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

// worker: boot.js's WORKER ({path, sha256, size, snapshots}); base: the site's folder; fresh: bypass the
// caches; progress: the progress panel (progress.js: fatal, news, waitingFor); stores(): where the page
// could keep a snapshot (snapmaker.js). Returns {checked(): worker.js's bytes once whole, or null after
// saying why on the page; create(body, mode, {restore, search}): a Worker running them; snapshotKey()}.
const STRICT = [...new TextEncoder().encode('"use strict";\n')];

export function sdpaWorkerStart({worker: WORKER, base, fresh, progress, stores}) {
  // This site's memory snapshot in this browser is keyed by worker.js's bytes (which hold every file's
  // sha256), the site's address (Panel's asset URLs are absolute in it) and the browser's WebAssembly
  // features (Pyodide's runtime adapts to them); it lives in a folder of this copy of the site (scope:
  // its address). null: none (no secure context). Computed once per page.
  let keys = null;
  const snapshotKey = () => (keys = keys || snapshotKeys());
  async function snapshotKeys() {
    if (typeof WebAssembly !== "object") return null;
    const features = ["Suspending", "promising", "Tag", "Exception", "Function"].map((k) => (k in WebAssembly ? 1 : 0)).join("");
    const hash = (text) => sdpaSha256Hex(new TextEncoder().encode(text));
    const [key, scope] = await Promise.all([hash([WORKER.sha256, base, features].join("\n")), hash(base)]);
    return key && {key: key.slice(0, 32), scope: scope.slice(0, 16)};
  }

  async function download() {
    const {fatal, news} = progress;
    progress.waitingFor([WORKER.path]);
    try {
      const response = await fetch(new URL(WORKER.path, base).href, {cache: fresh ? "reload" : "default"});
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

  async function checked() {
    const body = await download();
    if (body === null) return null;
    const digest = await sdpaSha256Hex(body);
    if (body.byteLength !== WORKER.size || (digest !== null && digest !== WORKER.sha256)) {
      progress.fatal(`${WORKER.path} is damaged: ${body.byteLength.toLocaleString("en")} bytes received, ` +
                     `${WORKER.size.toLocaleString("en")} expected${body.byteLength === WORKER.size ? ", content differs" : ""}`,
                     {file: WORKER.path});
      return null;
    }
    return body;
  }

  // mode "page": the page's Python, which builds the app for the visitor's link (`search`); "snapshot": a
  // second worker that builds it again only to save a memory snapshot. restore false: drop a snapshot.
  async function create(body, mode, {restore = true, search = ""} = {}) {
    const found = WORKER.snapshots ? await snapshotKey() : null;
    const boot = {base, fresh: fresh && mode === "page", mode, restore, search: mode === "page" ? search : "",
                  snapshotKey: found && found.key, snapshotScope: found && found.scope, stores: stores()};
    const prefix = `self.sdpaBoot = ${JSON.stringify(boot)};\n`;
    // worker.js starts with its strict directive (build/bundle.py): the boot line goes after it, so that the
    // directive stays the script's first statement and the worker runs strict
    const bytes = new Uint8Array(body);
    const strict = STRICT.every((byte, i) => bytes[i] === byte);
    const parts = strict ? [bytes.subarray(0, STRICT.length), prefix, bytes.subarray(STRICT.length)] : [prefix, bytes];
    return new Worker(URL.createObjectURL(new Blob(parts, {type: "text/javascript"})));
  }

  return {checked, create, snapshotKey};
}
