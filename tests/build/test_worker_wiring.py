"""worker.js as the build renders it (with the modules it includes: download, prefetch, scripts, archive, snapshot,
store, warmboot),
run in Node with a Pyodide stood in for: its parts are wired together. Every file is asked for and checked,
Pyodide is started with this site's lock, stdlib and folder, the package archive is written into
site-packages, the app is built for the visitor's link and its document sent, and the page's "rendered"
links it. A damaged file fails the boot naming it. The real runtime runs in the site tests, which need a
Pyodide distribution; this runs without one."""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import subprocess
import tarfile

import pytest

from build import runtime
from node_tools import node

BASE = "https://lab.example/site/"
# pyodide.js defines loadPyodide, as the real one does; this one hands back the stand-in made in Node
PYODIDE_JS = b"globalThis.loadPyodide = async (options) => { globalThis.loaded = options; return globalThis.fakePyodide; };\n"


def archive() -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        data = b"VALUE = 1\n"
        info = tarfile.TarInfo("demo/__init__.py")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0)


FILES = {
    "pyodide/pyodide.js": PYODIDE_JS,
    "pyodide/pyodide.asm.js": b"globalThis.asm = 1;\n",
    "pyodide/pyodide-lock.json": b'{"packages": {}}',
    "pyodide/python_stdlib.zip.gz": gzip.compress(b"PK\x05\x06" + bytes(18), mtime=0),
    "pyodide/packages.tar.gz": archive(),
}
CONFIG = {
    "prefetch": [[path, hashlib.sha256(body).hexdigest(), len(body)] for path, body in FILES.items()],
    "archive": {"path": "pyodide/packages.tar.gz", "sitePackages": "/lib/python3.13/site-packages", "dynlibs": []},
    "stdlib": "pyodide/python_stdlib.zip.gz", "lock": "pyodide/pyodide-lock.json", "runtimeLock": None,
    "pyodideJs": "pyodide/pyodide.js", "packages": ["numpy", "panel"], "runtimePackages": [], "panelRoot": "panel/",
    "firstId": 1000, "snapshot": None, "offlineCache": None,
}

RUN = r"""
const fs = require("node:fs");
const vm = require("node:vm");
const {files, damaged, base, badPatch} = JSON.parse(fs.readFileSync(0, "utf8"));
const posts = [], written = [], calls = [];
globalThis.self = globalThis;
self.location = {href: base};
self.sdpaBoot = {base, search: "?view=dial"};
self.postMessage = (m) => posts.push(m);
self.addEventListener = () => {};          // the "keep-offline" message: not sent here
self.importScripts = (url) => { throw new Error(`${url} was imported unchecked`); };
self.fetch = async (input) => {
  const path = new URL(input instanceof Request ? input.url : input, base).href.slice(base.length);
  if (!(path in files)) return new Response("no", {status: 404, statusText: "Not Found"});
  const body = Buffer.from(files[path], "hex");
  if (path === damaged) body[20] ^= 1;
  return new Response(body, {status: 200});
};
const module = {
  start: (root) => calls.push(["start", root]),
  build_app: (search, firstId) => calls.push(["build_app", search, firstId]),
  link: (send) => {
    calls.push(["link"]);
    return (patch) => { if (patch === "bad") throw new Error("Traceback (most recent call last):\n  ...\nValueError: d_k must be at most 4096"); };
  },
  destroy: () => {},
};
globalThis.fakePyodide = {
  FS: {mkdirTree: () => {}, writeFile: (path, data) => written.push([path, Buffer.from(data).toString()])},
  _api: {loadDynlib: async () => {}},
  runPython: () => {},
  pyimport: (name) => (name === "sdpa_worker" ? module : null),
  runPythonAsync: async () => ({toJs: () => [{"doc": 1}, [{"roots": {}}], ["p1000"]], destroy: () => {}}),
};
vm.runInThisContext(fs.readFileSync(process.argv[1], "utf8"), {filename: "worker.js"});
const settled = () => posts.some((m) => m.type === "render" || m.type === "error");
(async () => {
  for (let i = 0; i < 500 && !settled(); i++) await new Promise((r) => setTimeout(r, 10));
  if (posts.some((m) => m.type === "render")) {
    await self.onmessage({data: {type: "rendered"}});
    if (badPatch) await self.onmessage({data: {type: "patch", patch: "bad"}});
  }
  const {loaded} = globalThis;
  process.stdout.write(JSON.stringify({
    posts: posts.filter((m) => m.type !== "progress").map((m) => ({type: m.type, step: m.step, file: m.file, msg: m.msg,
                                                                 docs_json: m.docs_json, root_ids: m.root_ids})),
    loaded: loaded && {indexURL: loaded.indexURL, stdLibURL: loaded.stdLibURL, lockFileURL: loaded.lockFileURL},
    written, calls}));
})();
"""


def run(tmp_path, damaged: str | None = None, bad_patch: bool = False) -> dict:
    worker = tmp_path / "worker.js"
    worker.write_text(runtime.worker_js(CONFIG))
    done = subprocess.run([node(), "-e", RUN, str(worker)], capture_output=True, text=True, timeout=60,
                          input=json.dumps({"files": {p: b.hex() for p, b in FILES.items()}, "damaged": damaged,
                                            "base": BASE, "badPatch": bad_patch}))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    return run(tmp_path_factory.mktemp("whole"))


def test_a_boot_goes_through_every_step_and_sends_the_document(whole):
    steps = [m["step"] for m in whole["posts"] if m["type"] == "status"]
    assert steps == ["runtime", "packages", "import", "app", "render"]
    render_msg = next(m for m in whole["posts"] if m["type"] == "render")
    assert (render_msg["docs_json"], render_msg["root_ids"]) == ({"doc": 1}, ["p1000"])
    assert whole["posts"][-1]["type"] == "ready"       # the page's "rendered" linked the document


def test_pyodide_is_started_from_this_site(whole):
    assert whole["loaded"] == {"indexURL": BASE + "pyodide/", "stdLibURL": BASE + "pyodide/python_stdlib.zip",
                               "lockFileURL": BASE + "pyodide/pyodide-lock.json"}


def test_the_archive_is_written_into_site_packages_and_the_app_built_for_the_link(whole):
    assert whole["written"] == [["/lib/python3.13/site-packages/demo/__init__.py", "VALUE = 1\n"]]
    assert whole["calls"] == [["start", BASE + "panel/"], ["build_app", "?view=dial", 1000], ["link"]]


@pytest.mark.parametrize("path", ["pyodide/packages.tar.gz", "pyodide/pyodide.js"])
def test_a_damaged_file_fails_the_boot_naming_it(tmp_path, path):
    out = run(tmp_path, damaged=path)
    errors = [m for m in out["posts"] if m["type"] == "error"]
    assert len(errors) == 1 and errors[0]["file"] == path, out["posts"]
    assert errors[0]["msg"].startswith(f"{path} is damaged: its content differs"), errors[0]
    assert not any(m["type"] == "render" for m in out["posts"])


def test_a_change_python_cannot_apply_is_sent_to_the_page(tmp_path):
    """Issue 57: an exception while applying the page's patch was left in the worker's console; now the page is
    told, with the exception's own line (boot.js says it and offers a reload)."""
    out = run(tmp_path, bad_patch=True)
    errors = [m for m in out["posts"] if m["type"] == "apply-error"]
    assert [m["msg"] for m in errors] == ["ValueError: d_k must be at most 4096"], out["posts"]
