// Warm boot from a Pyodide memory snapshot, tried in Node.
//
//   node tests/build/snapshot_node.mjs [SITE]        SITE: a built site (default /tmp/snap_site)
//
// Runs three Node processes on the built site's own files (pyodide/, packages.tar.gz with the worker's
// Python, sdpa_worker, and the CONFIG of its worker.js):
//   normal   boots as worker.js does, builds the app, writes the document, applies one patch;
//   make     boots with _makeSnapshot, builds the app (up to, not including, write_doc), records
//            what build/templates/snapshot.js needs and writes the snapshot (+ its meta);
//   restore  loadPyodide({_loadSnapshot}) with snapshot.js's fixes, then write_doc + the same patch.
// and compares what normal and restore produced (model count, root types, the patch's effect).
// snapshot.js is bundled with archive.js (tests/js/bundled.cjs), as worker.js bundles them; the patched
// pyodide.asm.js (build/pyodide_patch.py) is written next to the snapshot.
import {execFileSync, spawnSync} from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import {createRequire} from "node:module";
import {fileURLToPath, pathToFileURL} from "node:url";
import {until} from "../js/until.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");
const [mode, siteArg] = process.argv[2] && ["normal", "make", "restore", "fallback"].includes(process.argv[2])
  ? [process.argv[2], process.argv[3]] : ["all", process.argv[2]];
const SITE = path.resolve(siteArg || "/tmp/snap_site");
const WORK = process.env.SNAP_WORK || "/tmp/snap_node";
fs.mkdirSync(WORK, {recursive: true});

// ---- the built worker's CONFIG, as the worker would see it
const workerText = fs.readFileSync(path.join(SITE, "worker.js"), "utf8");
const CONFIG = JSON.parse(workerText.match(/\/\*CONFIG\*\/([\s\S]*?)\/\*END\*\//)[1]);

// ---- archive.js's and snapshot.js's functions, bundled as worker.js bundles them
const {sdpaUntar, sdpaArchive, sdpaSnapshotRecord, sdpaSnapshotSerializer, sdpaSnapshotResume,
       sdpaSnapshotPrepareRestore} = createRequire(import.meta.url)("../js/bundled.cjs").runInThisContext("archive.js",
                                                                                                      "snapshot.js");

// Node has no XMLHttpRequest; panel.io.pyodide imports it (`from js import JSON, XMLHttpRequest`).
globalThis.XMLHttpRequest ??= class XMLHttpRequest {};
// A worker's crossOriginIsolated is a getter on the global that only accepts the global itself as
// `this` (pyodide_http imports it), as the browser's do; _makeSnapshot's recording proxy breaks that.
Object.defineProperty(globalThis, "crossOriginIsolated", {configurable: true, enumerable: true, get() {
  if (this !== globalThis) throw new TypeError("Illegal invocation");
  return false;
}});

const PYODIDE_DIR = path.join(SITE, "pyodide") + "/";
const STDLIB = path.join(WORK, "python_stdlib.zip");
const ASM_PATCHED = path.join(WORK, "pyodide.asm.js");

function prepareFiles() {
  fs.writeFileSync(STDLIB, zlib.gunzipSync(fs.readFileSync(path.join(SITE, CONFIG.stdlib))));
  // the Python running the tests (a git worktree has no .venv of its own), in the repository's root:
  // there `build` is the site's build package
  const out = execFileSync(process.env.SNAP_PYTHON || path.join(REPO, ".venv/bin/python"), ["-c", `
from build.pyodide_patch import patch_pyodide_asm
src = open(${JSON.stringify(path.join(PYODIDE_DIR, "pyodide.asm.js"))}, encoding="utf-8").read()
done = "Module.sdpaGetMemory" in src       # a site whose build applied the patch already
open(${JSON.stringify(ASM_PATCHED)}, "w", encoding="utf-8").write(src if done else patch_pyodide_asm(src))
print("patched by the build" if done else "patched here")`], {cwd: REPO});
  process.stdout.write(`pyodide.asm.js: ${out}`);
}

function archiveFiles() {
  const tar = zlib.gunzipSync(fs.readFileSync(path.join(SITE, CONFIG.archive.path)));
  return sdpaUntar(new Uint8Array(tar.buffer, tar.byteOffset, tar.byteLength));
}

const require = createRequire(import.meta.url);
globalThis.require ??= require;     // pyodide.asm.js, run as a script in Node, needs these
globalThis.__dirname ??= PYODIDE_DIR;
async function loadRuntime(patched) {
  // pyodide.asm.js is run here (not by loadPyodide) so snapshot.js can wrap _createPyodideModule.
  // (imported as pyodide.js does in Node; it sets globalThis._createPyodideModule)
  await import(pathToFileURL(patched ? ASM_PATCHED : path.join(PYODIDE_DIR, "pyodide.asm.js")).href);
  return require(path.join(PYODIDE_DIR, "pyodide.js")).loadPyodide;
}

const options = () => ({indexURL: PYODIDE_DIR, stdLibURL: STDLIB,
                        lockFileURL: path.join(SITE, CONFIG.lock), stdout: () => {}, stderr: (s) => console.error(s)});

// archive.js's install, as the worker runs it
const installArchive = (pyodide, files) => sdpaArchive({archive: CONFIG.archive, downloads: new Map(), here: (p) => p})
  .install(pyodide, files);

const sent = [];
let answers = 0;      // Python's answers to a patch of the page's: the message it marks done (sdpa_worker.link)
const sendPatch = (patch, _buffers, done) => { sent.push(patch); if (done) answers += 1; };

// A barrier: Python's event loop runs what is already scheduled (a patch flushed on the next tick, say).
const settled = (pyodide) => pyodide.runPythonAsync("import asyncio\nfor _ in range(8):\n    await asyncio.sleep(0)\n");

// the worker's Python (build/templates/sdpa_worker.py), called as worker.js calls it
function callPython(pyodide, name, ...args) {
  const module = pyodide.pyimport("sdpa_worker");
  try {
    return module[name](...args);
  } finally {
    module.destroy();
  }
}

async function importAndBuild(pyodide) {
  callPython(pyodide, "start", "https://example.invalid/static/panel/");
  const t = performance.now();
  callPython(pyodide, "build_app", "", CONFIG.firstId);
  return performance.now() - t;
}

// write_doc, then the page's link (sdpa_worker.link, with sendPatch) and one patch from the page,
// as when the user moves a slider: a summary of the document and of the patches Python sends back.
const CHECK_DOC = `
import json
from bokeh.models import Slider
from panel.io.pyodide import write_doc
from panel.io.state import state
_docs_json, _render_items, _root_ids = await write_doc()
_doc = state.curdoc
_djd = next(iter(json.loads(_docs_json).values()))
def _count(obj, seen):
    if isinstance(obj, dict):
        if obj.get("type") == "object" and "id" in obj and "name" in obj:
            seen.add(obj["id"])
        for v in obj.values():
            _count(v, seen)
    elif isinstance(obj, list):
        for v in obj:
            _count(v, seen)
    return seen
_sliders = sorted(([m.id, m.title, m.value, m.step, m.start, m.end] for m in _doc.models
                   if isinstance(m, Slider) and not m.disabled), key=lambda s: (s[1] != "Logit std s", s[1] or "", s[0]))
import hashlib, os, re
# the document with what differs from run to run blanked: uuids (the document, the roots' elements)
# and Python object addresses (Panel names models "main-<id(obj)>" and tags them with ids; they
# depend on the heap's history, which a _makeSnapshot boot's recording proxy changes)
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_ADDR = re.compile(r"(?<=-)[1-9][0-9]{5,9}$")
def _blank(obj):
    if isinstance(obj, dict):
        return {_UUID.sub("<uuid>", k): _blank(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_blank(v) for v in obj]
    if isinstance(obj, str):
        return _ADDR.sub("<addr>", _UUID.sub("<uuid>", obj))
    if isinstance(obj, int) and not isinstance(obj, bool) and obj >= 1_000_000:
        return "<addr?>"
    return obj
_norm = json.dumps(_blank(json.loads(_docs_json)), sort_keys=True, indent=0)
open(os.environ.get("SDPA_DOC_DUMP", "/dev/null"), "w").write(_norm)
json.dumps({"models": len(_doc.models), "json_models": len(_count(_djd, set())),
            "json_sha256": hashlib.sha256(_norm.encode()).hexdigest()[:16], "json_chars": len(_docs_json),
            "roots": [r["name"] for r in _djd["roots"]], "title": _djd.get("title"), "slider": _sliders[0]})
`;

async function check(pyodide) {
  pyodide.runPython(`import os; os.environ["SDPA_DOC_DUMP"] = "/dump.json"`);
  pyodide.FS.mkdirTree("/tmp");
  const summary = JSON.parse(await pyodide.runPythonAsync(CHECK_DOC));
  fs.writeFileSync(path.join(WORK, `document-${mode}.json`), pyodide.FS.readFile("/dump.json"));
  const apply = callPython(pyodide, "link", sendPatch);
  await settled(pyodide);                 // what linking sent is not the patch's answer
  sent.length = 0;
  const [id, title, value, step, , end] = summary.slider;
  const next = value + step <= end ? value + step : value - step;
  const before = answers;
  apply({events: [{kind: "ModelChanged", model: {id}, attr: "value", new: next}]});
  await until(() => answers > before, "answered by Python");
  await settled(pyodide);                 // and anything that answer scheduled
  const kinds = new Map();
  let events = 0;
  for (const patch of sent) {
    for (const e of (patch && patch.events) || []) {
      const key = `${e.kind}${e.attr ? "." + e.attr : ""}`;
      kinds.set(key, (kinds.get(key) || 0) + 1);
      events += 1;
    }
  }
  summary.patched = `${title}: ${value} -> ${next}`;
  summary.sent = {patches: sent.filter(Boolean).length, events, kinds: Object.fromEntries([...kinds].sort())};
  return summary;
}

async function runNormal() {
  prepareFiles();
  const t0 = performance.now();
  const loadPyodide = await loadRuntime(false);
  const files = archiveFiles();
  const pyodide = await loadPyodide(options());
  const tRuntime = performance.now();
  await installArchive(pyodide, files);
  const tPackages = performance.now();
  const tApp = await importAndBuild(pyodide);
  const tBuilt = performance.now();
  const summary = await check(pyodide);
  return {mode: "normal", ms: {runtime: tRuntime - t0, packages: tPackages - tRuntime,
                               import: tBuilt - tPackages - tApp, app: tApp, toBuilt: tBuilt - t0}, summary};
}

async function runMake() {
  prepareFiles();
  const loadPyodide = await loadRuntime(true);
  const files = archiveFiles();
  const pyodide = await loadPyodide({...options(), _makeSnapshot: true});
  await installArchive(pyodide, files);
  await importAndBuild(pyodide);
  const t = performance.now();
  const meta = await sdpaSnapshotRecord(pyodide);
  const snap = pyodide.makeMemorySnapshot({serializer: sdpaSnapshotSerializer});
  const tMade = performance.now() - t;
  fs.writeFileSync(path.join(WORK, "snapshot.bin"), snap);
  fs.writeFileSync(path.join(WORK, "snapshot.json"), JSON.stringify(meta));
  const gz = zlib.gzipSync(snap, {level: 6}).length;
  const metaText = JSON.stringify(meta);
  // the instance that made the snapshot goes on, as a first visit would
  sdpaSnapshotResume(pyodide);
  const summary = await check(pyodide);
  return {mode: "make", ms: {record_and_snapshot: tMade}, summary, bytes: {raw: snap.length, gzip: gz,
          meta: metaText.length, metaGzip: zlib.gzipSync(metaText).length}};
}

async function runRestore() {
  const t0 = performance.now();
  const snap = new Uint8Array(fs.readFileSync(path.join(WORK, "snapshot.bin")));
  const meta = JSON.parse(fs.readFileSync(path.join(WORK, "snapshot.json"), "utf8"));
  const files = archiveFiles();
  const tRead = performance.now();
  // before pyodide.asm.js runs: snapshot.js then wraps _createPyodideModule when it is defined
  const restore = sdpaSnapshotPrepareRestore(meta, files, CONFIG.archive.sitePackages);
  const loadPyodide = await loadRuntime(true);
  const pyodide = await loadPyodide({...options(), _loadSnapshot: snap,
                                     _snapshotDeserializer: restore.deserializer});
  restore.finish(pyodide);
  const tBuilt = performance.now();
  const summary = await check(pyodide);
  return {mode: "restore", ms: {read_files: tRead - t0, toBuilt: tBuilt - t0}, summary, log: restore.log};
}

// A snapshot that does not fit this runtime (here: a table slot it needs is said to be filled
// already) fails loadPyodide before any Python runs; a second loadPyodide is a normal boot.
async function runFallback() {
  const snap = new Uint8Array(fs.readFileSync(path.join(WORK, "snapshot.bin")));
  const meta = JSON.parse(fs.readFileSync(path.join(WORK, "snapshot.json"), "utf8"));
  meta.filled.push([meta.libs[0].tableBase, meta.libs[0].tableBase + 5]);
  const files = archiveFiles();
  const restore = sdpaSnapshotPrepareRestore(meta, files, CONFIG.archive.sitePackages);
  const loadPyodide = await loadRuntime(true);
  let error = null;
  try {
    await loadPyodide({...options(), _loadSnapshot: snap, _snapshotDeserializer: restore.deserializer});
  } catch (err) {
    error = String(err.message || err);
  }
  if (!error) throw new Error("a snapshot that does not fit was restored");
  const pyodide = await loadPyodide(options());
  await installArchive(pyodide, files);
  await importAndBuild(pyodide);
  return {mode: "fallback", error, summary: await check(pyodide)};
}

function child(which) {
  const r = spawnSync(process.execPath, ["--max-old-space-size=4096", fileURLToPath(import.meta.url), which, SITE],
                      {encoding: "utf8", env: process.env, maxBuffer: 1 << 26});
  const line = (r.stdout || "").split("\n").find((l) => l.startsWith("RESULT "));
  if (r.status !== 0 || !line) {
    process.stderr.write(r.stdout + r.stderr);
    throw new Error(`${which} failed (exit ${r.status})`);
  }
  return JSON.parse(line.slice(7));
}

async function main() {
  if (mode !== "all") {
    const run = {normal: runNormal, make: runMake, restore: runRestore, fallback: runFallback}[mode];
    const result = await run();
    console.log("RESULT " + JSON.stringify(result));
    process.exit(0);     // Pyodide keeps the event loop alive
  }
  const normal = child("normal");
  console.log(JSON.stringify(normal));
  const made = child("make");
  console.log(JSON.stringify(made));
  const restored = child("restore");
  console.log(JSON.stringify(restored));
  const fallback = child("fallback");
  const a = normal.summary, b = restored.summary;
  const problems = [];
  if (fallback.summary.json_sha256 !== a.json_sha256) problems.push("the normal boot after a failed restore differs");
  console.log(`a restore that does not fit: "${fallback.error}", then a normal boot: ${fallback.summary.json_sha256 === a.json_sha256 ? "same document" : "DIFFERENT"}`);
  if (a.models !== b.models) problems.push(`models: normal ${a.models}, restored ${b.models}`);
  if (a.json_models !== b.json_models) problems.push(`json models: normal ${a.json_models}, restored ${b.json_models}`);
  if (a.json_sha256 !== b.json_sha256) problems.push(`document JSON differs (uuids, addresses blanked): ${a.json_sha256} / ${b.json_sha256}`);
  if (JSON.stringify(a.roots) !== JSON.stringify(b.roots)) problems.push(`roots differ: ${a.roots} / ${b.roots}`);
  if (JSON.stringify(a.sent) !== JSON.stringify(made.summary.sent)) problems.push(`the snapshot's maker, going on, sent other patches: ${JSON.stringify(made.summary.sent)}`);
  if (!b.sent || b.sent.events === 0) problems.push("the patch changed nothing after restore");
  if (JSON.stringify(a.sent) !== JSON.stringify(b.sent)) problems.push(`patches sent differ: ${JSON.stringify(a.sent)} / ${JSON.stringify(b.sent)}`);
  console.log(`normal boot to app built: ${normal.ms.toBuilt.toFixed(0)} ms ` +
              `(runtime ${normal.ms.runtime.toFixed(0)}, packages ${normal.ms.packages.toFixed(0)}, ` +
              `import ${normal.ms.import.toFixed(0)}, app ${normal.ms.app.toFixed(0)})`);
  console.log(`restore to app built:     ${restored.ms.toBuilt.toFixed(0)} ms (${restored.log.join("; ")})`);
  console.log(`snapshot: ${(made.bytes.raw / 1e6).toFixed(1)} MB raw, ${(made.bytes.gzip / 1e6).toFixed(1)} MB gzip, ` +
              `meta ${(made.bytes.meta / 1e3).toFixed(0)} kB (${(made.bytes.metaGzip / 1e3).toFixed(0)} kB gzip)`);
  console.log(`models ${a.models}/${b.models}, document JSON ${a.json_chars} chars, sha256 (uuids, addresses blanked) ${a.json_sha256}/${b.json_sha256}, roots ${b.roots.length}, patch ${b.patched}: ${JSON.stringify(b.sent)}`);
  if (problems.length) {
    console.log("FAIL\n  " + problems.join("\n  "));
    process.exit(1);
  }
  console.log("OK: the restored app matches the normal boot");
}

main().catch((err) => {
  console.error(err && err.stack || err);
  process.exit(2);
});
