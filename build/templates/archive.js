// The package archive (build/archive.py): every package's files in one gzip'd ustar, downloaded and checked
// like every other file, inflated by the browser and unpacked while Pyodide starts (none of that needs
// Python), then written into site-packages and its compiled libraries loaded, as loadPackage would.
// A module of worker.js (bundled by build/bundle.py), run by tests/build/test_archive.py in Node.
import {BootError} from "./download.js";
import {sdpaInflate} from "./prefetch.js";
import {dynlibLoader} from "./pyodide_internals.js";

// Python's import system is told that files arrived under site-packages (after the archive is written, and after
// a snapshot's restore has written them again: warmboot.js).
export const sdpaInvalidateImportCaches = (pyodide) => pyodide.runPython("import importlib\nimportlib.invalidate_caches()");

// A ustar archive's regular files: [[name, bytes], ...] (views into `tar`).
export function sdpaUntar(tar) {
  const decoder = new TextDecoder();
  const text = (at, n) => {
    let end = at;
    while (end < at + n && tar[end] !== 0) end += 1;
    return decoder.decode(tar.subarray(at, end));
  };
  const files = [];
  for (let at = 0; at + 512 <= tar.length && tar[at] !== 0;) {
    const prefix = text(at + 345, 155);
    const name = (prefix ? prefix + "/" : "") + text(at, 100);
    const size = parseInt(text(at + 124, 12).trim() || "0", 8);
    const data = at + 512;
    if (String.fromCharCode(tar[at + 156] || 48) === "0") files.push([name, tar.subarray(data, data + size)]);
    at = data + Math.ceil(size / 512) * 512;
  }
  return files;
}

// Writes [[name, bytes], ...] under sitePackages in Pyodide's file system, making each folder once.
export function sdpaWriteFiles(FS, sitePackages, files) {
  const made = new Set();
  for (const [name, data] of files) {
    const file = `${sitePackages}/${name}`;
    const dir = file.slice(0, file.lastIndexOf("/"));
    if (!made.has(dir)) {
      FS.mkdirTree(dir);
      made.add(dir);
    }
    FS.writeFile(file, data, {canOwn: false});
  }
}

// archive: CONFIG.archive ({path, sitePackages, dynlibs}); downloads: the prefetch's checked downloads
// (absolute URL -> {checked}); here(path): its absolute URL. Returns {files(): a promise of the archive's
// files, unpacked once; install(pyodide): writes them and loads the compiled libraries}.
export function sdpaArchive({archive, downloads, here}) {
  const {path, sitePackages, dynlibs} = archive;
  let unpacked = null;
  function files() {
    if (unpacked === null) {
      const packed = downloads.has(here(path)) ? downloads.get(here(path)).checked
        : fetch(here(path)).then((r) => {
          if (!r.ok) throw new BootError(`${path} could not be downloaded (HTTP ${r.status})`, path);
          return r.arrayBuffer();
        });
      unpacked = packed.then((body) => sdpaInflate(body, path)).then((body) => {
        const found = sdpaUntar(new Uint8Array(body));
        if (found.length === 0) throw new BootError(`${path} holds no files`, path);
        return found;
      });
      unpacked.catch(() => {});     // surfaced where the boot awaits it
    }
    return unpacked;
  }
  async function install(pyodide, unpackedFiles) {
    const loadLibrary = dynlibLoader(pyodide);      // what loadPackage uses
    if (dynlibs.length && !loadLibrary) {
      throw new BootError("this Pyodide cannot load compiled libraries from an archive (pyodide_internals.js found no loader)", path);
    }
    sdpaWriteFiles(pyodide.FS, sitePackages, unpackedFiles);
    for (const lib of dynlibs) await loadLibrary(`${sitePackages}/${lib}`);
    sdpaInvalidateImportCaches(pyodide);
  }
  return {files, install};
}
