"""build/templates/download.js in Node: a file the boot needs is read as it arrives and checked against
its size and sha256, and every way it can go wrong fails with the file's name and what happened, as the
page then says it. Node runs download.js as worker.js includes it (plain definitions, by text), on
Responses made here."""
from __future__ import annotations

import hashlib
import json
import subprocess

import pytest

from node_tools import node
from sitebuild import ROOT

BODY = bytes(range(256)) * 300          # 76,800 bytes, in several chunks
SHA = hashlib.sha256(BODY).hexdigest()

RUN = r"""
const fs = require("node:fs");
const vm = require("node:vm");
vm.runInThisContext(fs.readFileSync(process.argv[1], "utf8"), {filename: "download.js"});
const {body: base64, sha256, size} = JSON.parse(fs.readFileSync(0, "utf8"));
const bytes = Buffer.from(base64, "base64");

// A body that delivers its bytes in 4 chunks, then breaks off when `breakAt` is given.
const stream = (breakAt) => new ReadableStream({
  start(controller) {
    const step = Math.ceil(bytes.length / 4);
    for (let at = 0; at < bytes.length; at += step) {
      if (breakAt !== undefined && at >= breakAt) {
        controller.error(new Error("connection reset"));
        return;
      }
      controller.enqueue(new Uint8Array(bytes.subarray(at, at + step)));
    }
    controller.close();
  },
});
const ok = (breakAt) => new Response(stream(breakAt), {status: 200});
const cases = {
  whole: {fetch: () => ok()},
  script: {fetch: () => ok(), script: true},
  short: {fetch: () => ok(), size: size + 1},
  altered: {fetch: () => ok(), sha256: "0".repeat(64)},
  missing: {fetch: () => new Response("no", {status: 404, statusText: "Not Found"})},
  offline: {fetch: () => Promise.reject(new TypeError("Failed to fetch"))},
  broken: {fetch: () => ok(bytes.length / 2)},
};
(async () => {
  const out = {};
  for (const [name, c] of Object.entries(cases)) {
    let counted = 0, reads = 0;
    const d = sdpaDownload({path: "pyodide/file.bin", sha256: c.sha256 || sha256, size: c.size || size,
                            script: !!c.script, fetched: c.fetch(),
                            onBytes: (n) => { counted += n; }, onRead: () => { reads += 1; }});
    const r = {counted};
    try {
      const body = await d.checked;
      r.bytes = body.byteLength;
      r.same = Buffer.from(body).equals(bytes);
      if (!c.script) r.handedOn = (await (await d.response).arrayBuffer()).byteLength;  // Pyodide's copy
    } catch (err) {
      r.error = {name: err.constructor.name, file: err.file, message: err.message};
    }
    r.counted = counted;
    r.reads = reads;
    out[name] = r;
  }
  process.stdout.write(JSON.stringify(out));
})();
"""


@pytest.fixture(scope="module")
def results():
    import base64
    done = subprocess.run([node(), "-e", RUN, str(ROOT / "build" / "templates" / "download.js")],
                          input=json.dumps({"body": base64.b64encode(BODY).decode(), "sha256": SHA, "size": len(BODY)}),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_whole_file_is_checked_and_still_handed_on(results):
    """Read from a clone: the bytes check out, and Pyodide still gets the whole response to read."""
    r = results["whole"]
    assert (r["bytes"], r["same"], r["handedOn"]) == (len(BODY), True, len(BODY))
    assert (r["counted"], r["reads"]) == (len(BODY), 1)


def test_a_script_is_read_once_here(results):
    assert (results["script"]["bytes"], results["script"]["same"]) == (len(BODY), True)


@pytest.mark.parametrize("case, message", [
    ("short", f"pyodide/file.bin is damaged: {len(BODY):,} bytes received, {len(BODY) + 1:,} expected"),
    ("altered", f"pyodide/file.bin is damaged: its content differs from this version's (sha256 {SHA[:12]}…, "
                f"expected 000000000000…)"),
    ("missing", "pyodide/file.bin could not be downloaded (HTTP 404 Not Found)"),
    ("offline", "pyodide/file.bin could not be downloaded (Failed to fetch); is the network down?"),
    ("broken", "pyodide/file.bin broke off while downloading (connection reset)"),
])
def test_each_failure_names_the_file_and_what_happened(results, case, message):
    error = results[case]["error"]
    assert error == {"name": "BootError", "file": "pyodide/file.bin", "message": message}
