// Pyodide's internals, in one module: every private name of Pyodide 0.29 and of the Emscripten runtime inside it
// that the worker relies on, and the byte layout of Emscripten's `struct dso`. An upgrade of Pyodide touches this
// file (and build/pyodide_patch.py, which patches pyodide.asm.js for the warm boot), not the modules that use it:
// archive.js (compiled libraries), warmboot.js (the snapshot's loadPyodide options), snapshot.js (what a memory
// snapshot does not save). build/private_api.py checks each name against the shipped pyodide.js and pyodide.asm.js
// and the offsets against what pyodide.asm.js writes; tests/build/test_private_api.py fails if a Pyodide name is
// used anywhere else in the runtime.

// ---- Pyodide ----------------------------------------------------------------------------------------------------

// loadPyodide's options for a memory snapshot (pyodide.js reads them; undocumented): making one, restoring one.
export const snapshotOptions = {
  make: () => ({_makeSnapshot: true}),
  restore: (heap, deserializer) => ({_loadSnapshot: heap, _snapshotDeserializer: deserializer}),
};

// Pyodide keeps its options: once restored, its copy of the heap (a second 63 MB) is let go.
export function forgetSnapshotHeap(pyodide) {
  delete pyodide._api.config._loadSnapshot;
}

// The loader loadPackage uses for a compiled library (path: in Pyodide's file system), or null in a Pyodide without it.
export function dynlibLoader(pyodide) {
  const api = pyodide._api;
  return api && typeof api.loadDynlib === "function" ? (path) => api.loadDynlib(path) : null;
}

// Emscripten's Module inside a running Pyodide.
export const emscriptenModule = (pyodide) => pyodide._module;

// `wrap(create)` around the function that makes Emscripten's Module, _createPyodideModule, which pyodide.asm.js
// defines on the global (now, or when it runs: a setter takes it then).
export function wrapModuleFactory(wrap) {
  const current = globalThis._createPyodideModule;
  if (typeof current === "function") {
    globalThis._createPyodideModule = wrap(current);
    return;
  }
  let wrapped;
  Object.defineProperty(globalThis, "_createPyodideModule", {
    configurable: true, enumerable: true,
    get: () => wrapped,
    set: (f) => { wrapped = typeof f === "function" ? wrap(f) : f; },
  });
}

// ---- Emscripten's dynamic linker --------------------------------------------------------------------------------

// Emscripten's `struct dso` (musl's dynlink.c, as Pyodide's Emscripten lays it out): the byte offset of each field
// that dlopen's handle points at. Typed here once; the build reads the offsets back out of the shipped
// pyodide.asm.js (its loadDynamicLibrary writes each field) and fails on any difference (build/private_api.py).
export const SDPA_DSO = {"memoryBase": 12, "memorySize": 16, "tableBase": 20, "tableSize": 24};

// A function compiled to WebAssembly (not a JS function that addFunction wraps).
export const isWasmFunction = (f) => typeof f === "function" && /\[native code\]/.test(Function.prototype.toString.call(f)) &&
  /^function \d+\(/.test(Function.prototype.toString.call(f));

const LINKER_FUNCTIONS = ["loadDynamicLibrary", "setWasmTableEntry", "convertJsFunctionToWasm", "updateTableMap",
                          "getFunctionAddress"];

// The dynamic linker of Module M, as snapshot.js reads and rebuilds it. Throws, naming what is missing, when this
// Pyodide does not export it.
export function dynamicLinker(M) {
  const absent = [...LINKER_FUNCTIONS.filter((f) => typeof M[f] !== "function"),
                  ...["LDSO", "GOT", "wasmTable"].filter((k) => !M[k])];
  if (absent.length) throw new Error(`snapshot: this Pyodide does not export the dynamic linker's ${absent.join(", ")}`);
  return {
    table: M.wasmTable,
    got: M.GOT,                                        // symbol -> WebAssembly.Global
    byName: M.LDSO.loadedLibsByName,                   // name -> library ({exports, global, refcount})
    byHandle: M.LDSO.loadedLibsByHandle,               // dlopen's handle -> library
    // a library's fields in its struct dso
    dso: (handle) => Object.fromEntries(Object.entries(SDPA_DSO).map(([field, at]) => [field, M.HEAPU32[(handle + at) >>> 2]])),
    address: (fn) => M.getFunctionAddress(fn),
    load: (name, {global, nodelete}) => M.loadDynamicLibrary(name, {global, nodelete, loadAsync: true}, global ? null : {},
                                                             undefined),
    // table slot i holds fn (a JS function is wrapped for the table first)
    setSlot: (i, fn) => {
      M.setWasmTableEntry(i, isWasmFunction(fn) ? fn : M.convertJsFunctionToWasm(fn, fn.sig));
      M.updateTableMap(i, 1);
    },
    // where a library's memory goes while it loads (build/pyodide_patch.py's hook): chooser(size, libName)
    placeMemory: (chooser) => { M.sdpaGetMemory = chooser; },
    placeMemoryAsUsual: () => { delete M.sdpaGetMemory; },
  };
}
