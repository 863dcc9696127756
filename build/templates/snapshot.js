// Warm boot from a Pyodide memory snapshot: a module of worker.js (through warmboot.js). Needs pyodide.asm.js patched by build/pyodide_patch.py.
//
// Taking a snapshot: a boot started with loadPyodide({_makeSnapshot: true}), the archive installed
// (archive.js install), sdpa_worker.start and build_app (worker.js also runs
// sdpa_worker.write and keeps the document with the snapshot), and no JS function handed to
// Python yet (sendPatch: given to sdpa_worker.link later):
//     const meta = await sdpaSnapshotRecord(pyodide);                 // JSON-able, ~0.6 MB
//     const heap = pyodide.makeMemorySnapshot({serializer: sdpaSnapshotSerializer});
//     sdpaSnapshotResume(pyodide);                                    // only to go on with this instance
// Restoring it, in the same browser engine that made it (the fresh runtime's table differs between
// engines: Node 11803 slots, Chromium 11804; a mismatch throws before any Python runs):
//     const restore = sdpaSnapshotPrepareRestore(meta, files, sitePackages);   // before loadPyodide;
//                                 files: as sdpaUntar (archive.js) returns them, or a promise of them
//     const pyodide = await loadPyodide({..., _loadSnapshot: heap, _snapshotDeserializer: restore.deserializer});
//     restore.finish(pyodide);                                         // first Python after the restore
//     then the document (saved with the snapshot by worker.js, or written again) and
//     sdpa_worker.link(sendPatch); no archive install, start or build_app
// `files` are the archive's [[name, bytes]] (archive.js). A failed restore
// rejects loadPyodide; a second loadPyodide in the same worker is then a normal boot.
//
// Pyodide snapshots only the wasm heap and the hiwire table (JS values Python holds). The rest is
// put back here: the package files (MEMFS is not in the heap), the compiled libraries at the memory
// and table positions they had, the table slots dlsym / GOT.func gave out later, the GOT, dlopen's
// handle -> library map, and the one JS value Python held that has no global access path (Panel's
// _dict_converter).
// Every Pyodide and Emscripten internal it reaches is pyodide_internals.js's.
import {sdpaWriteFiles} from "./archive.js";
import {dynamicLinker, emscriptenModule, isWasmFunction, wrapModuleFactory} from "./pyodide_internals.js";

// The Python around a snapshot is in templates/sdpa_worker.py (before_snapshot, after_restore), tested in
// CPython; here only the calls, as worker.js calls sdpa_worker.write.
// Go on after makeMemorySnapshot on the instance that made it, or first thing after a restore.
export function sdpaSnapshotResume(pyodide) {
  pyodide.runPython("__import__('sdpa_worker').after_restore()");
}

// Held JS values without an access path from globalThis: none is expected once
// sdpa_worker.before_snapshot has run (a JS function given to Python before the snapshot, such as
// worker.js's sendPatch, would be one: it is given to sdpa_worker.link after the restore instead).
export function sdpaSnapshotSerializer(value) {
  let what;
  try {
    what = typeof value === "function" ? Function.prototype.toString.call(value).slice(0, 200) : Object.prototype.toString.call(value);
  } catch (_) {
    what = typeof value;
  }
  throw new Error(`snapshot: Python holds a JS value that a restore could not find again: ${what}`);
}

// What restore needs beyond the heap. Call (and await) after the app is built, just before
// makeMemorySnapshot; after the snapshot, sdpaSnapshotResume(pyodide) to go on with this instance.
export async function sdpaSnapshotRecord(pyodide) {
  // let what the build scheduled run, drop the JS values Python holds that have no path from globalThis,
  // and name any asyncio task still pending (its timers are JS timers, which a restore does not have)
  const pending = JSON.parse(await pyodide.runPythonAsync("await __import__('sdpa_worker').before_snapshot()"));
  if (pending.length) throw new Error(`snapshot: asyncio tasks still pending, a restore would lose their timers: ${pending.join(", ")}`);
  const linker = dynamicLinker(emscriptenModule(pyodide));
  const table = linker.table;
  // dlopen's handle is a `struct dso` in the heap: where the library's memory and table slots are
  const handles = {};
  const libs = [];
  for (const [handle, dso] of Object.entries(linker.byHandle)) {
    const h = Number(handle);
    if (!h) continue;
    handles[h] = dso.name;
    if (libs.some((l) => l.name === dso.name)) continue;
    libs.push({name: dso.name, handle: h, global: !!dso.global, nodelete: dso.refcount === Infinity, ...linker.dso(h)});
  }
  const loaded = Object.keys(linker.byName).filter((n) => n !== "__main__");
  const missing = loaded.filter((n) => !libs.some((l) => l.name === n));
  if (missing.length) throw new Error(`snapshot: libraries loaded without a dlopen handle: ${missing.join(", ")}`);
  libs.sort((a, b) => a.tableBase - b.tableBase || a.memoryBase - b.memoryBase);
  // function -> [library, export]; the table slots at and after the first library's, and any slot
  // holding a JS function (addFunction wraps those)
  const names = ["__main__", ...libs.map((l) => l.name)];
  const byFn = new Map();
  for (const [i, name] of names.entries()) {
    for (const [sym, fn] of Object.entries(linker.byName[name].exports || {})) {
      if (typeof fn === "function" && !byFn.has(fn)) byFn.set(fn, [i, sym]);
    }
  }
  const first = libs.length ? libs[0].tableBase : table.length;
  // the filled slots before the first library, as [start, end) ranges: restore checks that its fresh
  // runtime has them all (a slot given out while Python started would be empty after a restore)
  const filled = [];
  for (let i = 0; i < first; i++) {
    if (table.get(i) === null) continue;
    const last = filled[filled.length - 1];
    if (last && last[1] === i) last[1] = i + 1;
    else filled.push([i, i + 1]);
  }
  const slots = [];
  let unknown = 0;
  for (let i = first; i < table.length; i++) {
    const f = table.get(i);
    if (f === null) continue;
    const at = byFn.get(f);
    if (at) slots.push([i, ...at]);
    else unknown += 1;
  }
  for (const [sym, fn] of Object.entries(linker.byName.__main__.exports)) {
    if (typeof fn !== "function" || isWasmFunction(fn)) continue;
    const i = linker.address(fn);
    if (i) slots.push([i, 0, sym]);
  }
  const got = {};
  for (const [sym, g] of Object.entries(linker.got)) got[sym] = g.value;
  return {version: 1, tableLength: table.length, filled, libs, handles, names, slots, unknownSlots: unknown, got};
}

// Call before loadPyodide({_loadSnapshot}). Wraps _createPyodideModule (defined by pyodide.asm.js,
// now or when it runs): once the runtime exists and before the snapshot's heap is copied in, it
// writes the package files (awaited there: the archive may still be inflating while the runtime
// compiles) and loads the libraries where they were. Pyodide then copies the heap over whatever
// loading them wrote.
export function sdpaSnapshotPrepareRestore(meta, files, sitePackages) {
  if (!meta || meta.version !== 1) throw new Error("snapshot: unknown meta version");
  const log = [];
  const wrappers = new WeakSet();
  const wrap = (create) => {
    if (wrappers.has(create)) return create;   // pyodide.asm.js assigns it twice (`var` + globalThis.)
    let used = false;
    const wrapped = async (settings) => {
      if (used) return create(settings);      // once: a fallback boot after a failed restore is a normal one
      used = true;
      const M = await create(settings);
      sdpaWriteFiles(M.FS, sitePackages, await files);
      await sdpaReloadLibs(M, meta, log);
      return M;
    };
    wrappers.add(wrapped);
    return wrapped;
  };
  wrapModuleFactory(wrap);
  return {
    log,
    deserializer: (value) => {
      throw new Error(`snapshot: cannot restore held JS value ${JSON.stringify(value)}`);
    },
    finish: sdpaSnapshotResume,
  };
}

export async function sdpaReloadLibs(M, meta, log) {
  const linker = dynamicLinker(M);
  const table = linker.table;
  const byName = new Map(meta.libs.map((l) => [l.name, l]));
  linker.placeMemory((size, libName) => {
    const lib = byName.get(libName);
    if (!lib) throw new Error(`snapshot: ${libName} was not loaded when the snapshot was taken`);
    if (size < lib.memorySize) throw new Error(`snapshot: ${libName} needs ${size} bytes, had ${lib.memorySize}`);
    return lib.memoryBase;
  });
  const before = table.length;
  const lost = meta.filled.filter(([, end]) => end > before).map(([start, end]) => `${Math.max(start, before)}-${end - 1}`);
  if (lost.length) throw new Error(`snapshot: table slots given out before the libraries cannot be restored: ${lost.join(", ")}`);
  try {
    for (const lib of meta.libs) {
      if (lib.tableSize) {
        if (table.length > lib.tableBase) {
          throw new Error(`snapshot: table slot ${lib.tableBase} of ${lib.name} is taken (table has ${table.length})`);
        }
        if (table.length < lib.tableBase) table.grow(lib.tableBase - table.length);
      }
      await linker.load(lib.name, {global: lib.global, nodelete: lib.nodelete});
    }
  } finally {
    linker.placeMemoryAsUsual();
  }
  // dlopen's handles
  for (const [handle, name] of Object.entries(meta.handles)) {
    linker.byHandle[handle] = linker.byName[name];
  }
  // table slots given out after the libraries (dlsym, GOT.func)
  let set = 0;
  for (const [i, lib, sym] of meta.slots) {
    const fn = linker.byName[meta.names[lib]].exports[sym];
    if (typeof fn !== "function") throw new Error(`snapshot: ${meta.names[lib]} has no function ${sym}`);
    if (table.length <= i) table.grow(i + 1 - table.length);
    if (table.get(i) === fn) continue;
    if (!isWasmFunction(fn) && linker.address(fn) === i) continue;
    linker.setSlot(i, fn);
    set += 1;
  }
  if (table.length < meta.tableLength) table.grow(meta.tableLength - table.length);
  // GOT: the values the heap's code was linked against
  let got = 0;
  for (const [sym, value] of Object.entries(meta.got)) {
    linker.got[sym] ||= new WebAssembly.Global({value: "i32", mutable: true});
    if (linker.got[sym].value !== value) {
      linker.got[sym].value = value;
      got += 1;
    }
  }
  log.push(`libraries ${meta.libs.length}, table ${before} before them, ${table.length} after; ` +
           `slots set ${set} of ${meta.slots.length} recorded; global offset table values set ${got}`);
}
