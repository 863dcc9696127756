// A checked download: a file the boot needs, read as it arrives and checked against the size and
// sha256 the build wrote down, so that a damaged or missing file fails the boot with its name, however
// Pyodide would have reacted to it. A module of worker.js (bundled by build/bundle.py), run by
// tests/js/download.test.mjs (node --test).

// A failure the page can name: which file (if any) and what went wrong with it.
export class BootError extends Error {
  constructor(message, file) {
    super(message);
    this.file = file || null;
  }
}

// Responses built here from bytes already checked against their sha256 (prefetch.js: the offline copy's file),
// so that they are not hashed twice. Only this worker's own objects: nothing a server sends can claim it.
export const PRECHECKED = new WeakSet();

// The sha256 of some bytes as hex, or null where the browser offers no digest (not a secure context:
// sizes are checked then, not contents).
export async function sha256hex(buffer) {
  if (!(globalThis.crypto && crypto.subtle)) return null;
  const digest = await crypto.subtle.digest("SHA-256", buffer);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

// A body's bytes, `onBytes(n)` called as each chunk arrives.
export async function sdpaReadAll(body, onBytes) {
  const reader = body.getReader();
  const chunks = [];
  let length = 0;
  for (;;) {
    const {done, value} = await reader.read();
    if (done) break;
    chunks.push(value);
    length += value.length;
    onBytes(value.length);
  }
  const all = new Uint8Array(length);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.length;
  }
  return all.buffer;
}

// `fetched`: a promise of the file's Response. Returns {path, response, checked, script}: `response`
// is the Response (rejecting with a BootError when there is none, or its status is not 2xx), still unread unless
// `script`; `checked` its bytes once they match `size` and `sha256` (else a BootError naming the file).
// A script is read here, not from a clone: it is run from the checked bytes. `onBytes(n)` counts the
// bytes as they arrive, `onRead()` once all are in.
export function sdpaDownload({path, sha256, size, script = false, fetched, onBytes = () => {}, onRead = () => {}}) {
  const response = Promise.resolve(fetched).then((r) => {
    if (!r.ok) throw new BootError(`${path} could not be downloaded (HTTP ${r.status} ${r.statusText})`.trim(), path);
    return r;
  }, (err) => {
    throw new BootError(`${path} could not be downloaded (${err.message || err}); is the network down?`, path);
  });
  const checked = response.then(async (r) => {
    let body;
    try {
      body = await sdpaReadAll((script ? r : r.clone()).body, onBytes);
    } catch (err) {
      throw new BootError(`${path} broke off while downloading (${err.message || err})`, path);
    }
    onRead();
    if (body.byteLength !== size) {
      throw new BootError(`${path} is damaged: ${body.byteLength.toLocaleString("en")} bytes received, ` +
                          `${size.toLocaleString("en")} expected`, path);
    }
    const digest = PRECHECKED.has(r) ? sha256 : await sha256hex(body);
    if (digest !== null && digest !== sha256) {
      throw new BootError(`${path} is damaged: its content differs from this version's (sha256 ${digest.slice(0, 12)}…, ` +
                          `expected ${sha256.slice(0, 12)}…)`, path);
    }
    return body;
  });
  response.catch(() => {});   // surfaced through `checked`, where the boot awaits it
  checked.catch(() => {});
  return {path, response, checked, script};
}
