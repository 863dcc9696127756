"""build/templates/archive.js in Node: the package archive is unpacked as Python's tarfile wrote it (long
names through the ustar prefix, folders and links left out), written under site-packages with each folder made
once, and its compiled libraries loaded in the archive's order; a Pyodide without loadDynlib, an empty archive or
a failed download fail with the archive's name. Node runs archive.js and download.js as worker.js includes them
(plain definitions, by text), with a fake Pyodide."""
from __future__ import annotations

import base64
import gzip
import io
import json
import subprocess
import tarfile

from node_tools import TEMPLATE_LOADER, node

RUN = r"""
const fs = require("node:fs");
require(process.argv[1]).runInThisContext(...process.argv.slice(2));
const {tar, gz, empty} = JSON.parse(fs.readFileSync(0, "utf8"));
const bytes = (b64) => new Uint8Array(Buffer.from(b64, "base64"));

function fakePyodide({dynlib = true} = {}) {
  const log = [];
  const FS = {mkdirTree: (dir) => log.push(["mkdir", dir]),
              writeFile: (file, data) => log.push(["write", file, new TextDecoder().decode(data)])};
  return {log, FS, runPython: (code) => log.push(["python", code]),
          _api: dynlib ? {loadDynlib: async (lib) => log.push(["dynlib", lib])} : {}};
}
const config = {path: "packages.tar.gz", sitePackages: "/lib/site", dynlibs: ["numpy/core.so"]};
const here = (p) => `https://site.invalid/${p}`;
const from = (body) => new Map([[here(config.path), {checked: Promise.resolve(body.buffer)}]]);
const failure = async (promise) => {
  try { await promise; return null; } catch (err) { return {msg: err.message, file: err.file}; }
};

(async () => {
  const out = {};
  out.untar = sdpaUntar(bytes(tar)).map(([name, data]) => [name, new TextDecoder().decode(data)]);
  const archive = sdpaArchive({archive: config, downloads: from(bytes(gz)), here});
  const files = await archive.files();
  out.same = (await archive.files()) === files;        // unpacked once
  const pyodide = fakePyodide();
  await archive.install(pyodide, files);
  out.log = pyodide.log;
  out.noDynlib = await failure(archive.install(fakePyodide({dynlib: false}), files));
  out.empty = await failure(sdpaArchive({archive: config, downloads: from(bytes(empty)), here}).files());
  globalThis.fetch = async () => new Response("gone", {status: 404});
  out.missing = await failure(sdpaArchive({archive: config, downloads: new Map(), here}).files());
  process.stdout.write(JSON.stringify(out));
})();
"""

LONG = "panel/dist/bundled/" + "x" * 90 + "/a.js"       # over ustar's 100-byte name: written with its prefix


def _tar(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        folder = tarfile.TarInfo("numpy")
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder)
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("numpy/link.py")
        link.type, link.linkname = tarfile.SYMTYPE, "numpy/__init__.py"
        tar.addfile(link)
    return buffer.getvalue()


def test_the_archive_is_unpacked_written_and_its_libraries_loaded():
    members = {"numpy/__init__.py": b"x = 1\n", "numpy/core.so": b"\0asm", LONG: b"long name", "numpy/empty.py": b""}
    payload = {"tar": base64.b64encode(_tar(members)).decode(),
               "gz": base64.b64encode(gzip.compress(_tar(members), mtime=0)).decode(),
               "empty": base64.b64encode(gzip.compress(b"\0" * 1024, mtime=0)).decode()}
    done = subprocess.run([node(), "-e", RUN, str(TEMPLATE_LOADER), "download.js", "prefetch.js", "archive.js"],
                          input=json.dumps(payload), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["untar"] == [[name, data.decode()] for name, data in members.items()]
    assert out["same"] is True
    writes = [entry[1:] for entry in out["log"] if entry[0] == "write"]
    assert writes == [[f"/lib/site/{name}", data.decode()] for name, data in members.items()]
    folders = [entry[1] for entry in out["log"] if entry[0] == "mkdir"]
    assert sorted(folders) == sorted({f"/lib/site/{name.rsplit('/', 1)[0]}" for name in members})
    kinds = [entry[0] for entry in out["log"]]
    assert kinds.index("dynlib") > max(i for i, k in enumerate(kinds) if k == "write")      # after every file
    assert ["dynlib", "/lib/site/numpy/core.so"] in out["log"] and kinds[-1] == "python"
    assert "importlib.invalidate_caches()" in out["log"][-1][1]
    assert out["noDynlib"] == {"msg": "this Pyodide cannot load compiled libraries from an archive (pyodide_internals.js found no loader)",
                               "file": "packages.tar.gz"}
    assert out["empty"] == {"msg": "packages.tar.gz holds no files", "file": "packages.tar.gz"}
    assert out["missing"] == {"msg": "packages.tar.gz could not be downloaded (HTTP 404)", "file": "packages.tar.gz"}
