"""build/templates/scripts.js in Node: Pyodide's scripts run from the bytes the prefetch checked, by a global eval
in place of the worker's importScripts (so no blob: URL needs to be allowed), while any other URL still goes to
the native importScripts; a build without a distribution imports Pyodide's CDN script; a script that throws
fails with its file's name. Node runs scripts.js and download.js as worker.js includes them (by text)."""
from __future__ import annotations

import json
import subprocess

from node_tools import node
from sitebuild import ROOT

RUN = r"""
const fs = require("node:fs");
const vm = require("node:vm");
for (const file of process.argv.slice(1)) vm.runInThisContext(fs.readFileSync(file, "utf8"), {filename: file});
const here = (p) => new URL(p, "https://site.invalid/app/").href;
const SOURCES = {
  "pyodide/pyodide.js": 'globalThis.ran.push("pyodide.js"); importScripts("https://site.invalid/app/pyodide/pyodide.asm.js"); importScripts("https://cdn.invalid/other.js");',
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
(async () => {
  const out = {};
  globalThis.ran = [];
  const worker = scope();
  const asked = [];
  const load = sdpaCheckedScripts({scope: worker, paths: ["pyodide/pyodide.js", "pyodide/pyodide.asm.js"], here,
                                   bytes: async (p) => { asked.push(p); return new TextEncoder().encode(SOURCES[p]); },
                                   cdnScript: null});
  await load();
  out.checked = {ran: globalThis.ran, native: worker.native, asked, probe: globalThis.sdpaProbe};
  const cdn = scope();
  await sdpaCheckedScripts({scope: cdn, paths: ["pyodide/pyodide.js"], here, bytes: async () => { throw new Error("no"); },
                            cdnScript: "https://cdn.invalid/pyodide/v0.29.3/full/pyodide.js"})();
  out.cdn = cdn.native;
  out.throws = await failure(sdpaCheckedScripts({scope: scope(), paths: ["pyodide/pyodide.js"], here,
                                                 bytes: async () => new TextEncoder().encode("throw new Error('bad')"),
                                                 cdnScript: null})());
  const offline = scope();
  offline.importScripts = () => { throw new Error("NetworkError"); };     // before scripts.js takes it
  out.cdnFails = await failure(sdpaCheckedScripts({scope: offline, paths: [], here, bytes: null,
                                                   cdnScript: "https://cdn.invalid/pyodide.js"})());
  process.stdout.write(JSON.stringify(out));
})();
"""


def test_checked_scripts_run_by_eval_and_others_natively():
    templates = ROOT / "build" / "templates"
    done = subprocess.run([node(), "-e", RUN, str(templates / "download.js"), str(templates / "scripts.js")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    # both checked files read first, then run from their text as globals (what they declare is on the global, as with importScripts); the one URL that was not checked goes to the native importScripts
    assert out["checked"] == {"ran": ["pyodide.js", "pyodide.asm.js"], "probe": "global",
                              "native": ["https://cdn.invalid/other.js"],
                              "asked": ["pyodide/pyodide.js", "pyodide/pyodide.asm.js"]}
    assert out["cdn"] == ["https://cdn.invalid/pyodide/v0.29.3/full/pyodide.js"]
    assert out["throws"] == {"msg": "pyodide/pyodide.js could not be run (bad)", "file": "pyodide/pyodide.js"}
    assert out["cdnFails"] == {"msg": "https://cdn.invalid/pyodide.js could not be loaded (NetworkError)",
                               "file": "https://cdn.invalid/pyodide.js"}
