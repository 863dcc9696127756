// Pyodide's own scripts, run from the bytes the prefetch checked. Pyodide loads pyodide.asm.js with
// importScripts(url): the checked copy runs instead. It runs by indirect (global) eval, which the page's
// policy allows anyway ('unsafe-eval', for Panel), not by importScripts of a blob: URL: that would need
// blob: in script-src, where an injected blob: script would run too (build/page_policy.py csp). Both files are
// strict scripts that publish what they define on globalThis, as they do when imported. A module
// of worker.js, run by tests/js/scripts.test.mjs (node --test).
import {BootError} from "./download.js";

// scope: the worker's global (its importScripts is replaced); paths: the scripts, relative to the site;
// bytes(path): a promise of a checked file's bytes (prefetch.js); here(path): its absolute URL; cdnScript:
// pyodide.js's URL on Pyodide's CDN for a build without a distribution (nothing to check), else null.
// Returns load(): runs pyodide.js (which loads pyodide.asm.js), failing with the file's name.
export function sdpaCheckedScripts({scope, paths, bytes, here, cdnScript}) {
  const checked = new Map();    // absolute URL -> its checked source text
  const nativeImportScripts = scope.importScripts.bind(scope);
  const globalEval = eval;
  scope.importScripts = (...urls) => {
    for (const url of urls) {
      const source = checked.get(new URL(url, here("")).href);
      if (source === undefined) nativeImportScripts(url);
      else globalEval(source);
    }
  };
  const run = (url, file) => {
    try {
      scope.importScripts(url);
    } catch (err) {
      throw new BootError(`${file} could not be ${cdnScript ? "loaded" : "run"} (${err.message || err})`, file);
    }
  };
  return async function load() {
    if (cdnScript) {
      run(cdnScript, cdnScript);
      return;
    }
    for (const path of paths) {
      const body = await bytes(path);
      checked.set(here(path), new TextDecoder().decode(body) + "\n//# sourceURL=" + here(path));
    }
    run(here(paths[0]), paths[0]);
  };
}
