// build/templates/scripts.js: Pyodide's scripts run from the bytes the prefetch checked, by a global eval in place
// of the worker's importScripts (so no blob: URL needs to be allowed), while any other URL still goes to the
// native importScripts; a build without a distribution imports Pyodide's CDN script; a script that throws fails
// with its file's name. scripts.js and download.js run as worker.js includes them (by text).
import assert from "node:assert/strict";
import {test} from "node:test";

import {runTemplates} from "./template.mjs";

await runTemplates("download.js", "scripts.js");
const {sdpaCheckedScripts} = globalThis;

const here = (p) => new URL(p, "https://site.invalid/app/").href;
const SOURCES = {
  "pyodide/pyodide.js": 'globalThis.ran.push("pyodide.js"); importScripts("https://site.invalid/app/pyodide/pyodide.asm.js"); '
                        + 'importScripts("https://cdn.invalid/other.js");',
  "pyodide/pyodide.asm.js": 'var sdpaProbe = "global"; globalThis.ran.push("pyodide.asm.js");',
};
// the worker's global, whose importScripts scripts.js replaces; its native one records what it was given
function scope() {
  globalThis.native = [];
  globalThis.importScripts = (...urls) => globalThis.native.push(...urls);
  return globalThis;
}
const failure = async (promise) => {
  try { await promise; return null; } catch (err) { return {msg: err.message, file: err.file}; }
};

test("checked scripts run by eval as globals, any other URL natively", async () => {
  globalThis.ran = [];
  const worker = scope();
  const asked = [];
  await sdpaCheckedScripts({scope: worker, paths: ["pyodide/pyodide.js", "pyodide/pyodide.asm.js"], here,
                            bytes: async (p) => { asked.push(p); return new TextEncoder().encode(SOURCES[p]); },
                            cdnScript: null})();
  // both checked files read first, then run from their text as globals (what they declare is on the global,
  // as with importScripts); the one URL that was not checked goes to the native importScripts
  assert.deepEqual(asked, ["pyodide/pyodide.js", "pyodide/pyodide.asm.js"]);
  assert.deepEqual(globalThis.ran, ["pyodide.js", "pyodide.asm.js"]);
  assert.equal(globalThis.sdpaProbe, "global");
  assert.deepEqual(worker.native, ["https://cdn.invalid/other.js"]);
});

test("a build without a distribution imports Pyodide's CDN script", async () => {
  const cdn = scope();
  await sdpaCheckedScripts({scope: cdn, paths: ["pyodide/pyodide.js"], here, bytes: async () => { throw new Error("no"); },
                            cdnScript: "https://cdn.invalid/pyodide/v0.29.3/full/pyodide.js"})();
  assert.deepEqual(cdn.native, ["https://cdn.invalid/pyodide/v0.29.3/full/pyodide.js"]);
});

test("a script that throws, or a CDN script that cannot load, fails with its file's name", async () => {
  assert.deepEqual(await failure(sdpaCheckedScripts({scope: scope(), paths: ["pyodide/pyodide.js"], here,
                                                     bytes: async () => new TextEncoder().encode("throw new Error('bad')"),
                                                     cdnScript: null})()),
                   {msg: "pyodide/pyodide.js could not be run (bad)", file: "pyodide/pyodide.js"});
  const offline = scope();
  offline.importScripts = () => { throw new Error("NetworkError"); };     // before scripts.js takes it
  assert.deepEqual(await failure(sdpaCheckedScripts({scope: offline, paths: [], here, bytes: null,
                                                     cdnScript: "https://cdn.invalid/pyodide.js"})()),
                   {msg: "https://cdn.invalid/pyodide.js could not be loaded (NetworkError)",
                    file: "https://cdn.invalid/pyodide.js"});
});
