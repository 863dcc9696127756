"""build/templates/prefetch.js in Node: every file the boot needs is requested at once, from the offline
copy when it is there, checked, counted for the progress panel, and handed to Pyodide once when it asks
(the stdlib inflated); a file that fails its check fails whatever the boot is waiting for. Node runs
prefetch.js and download.js as worker.js includes them, by text, with a network and a Cache Storage
made here."""
from __future__ import annotations

import gzip
import hashlib
import json
import subprocess

import pytest

from node_tools import node
from sitebuild import ROOT

BASE = "https://lab.example/site/"
STDLIB = bytes(range(256)) * 64                 # the zip Pyodide reads, 16 KB
FILES = {
    "pyodide/pyodide.asm.js": b"globalThis.ran = 1;\n" * 500,
    "pyodide/python_stdlib.zip.gz": gzip.compress(STDLIB, mtime=0),
    "pyodide/packages.tar.gz": bytes(reversed(range(256))) * 200,
}
SPEC = {path: {"sha256": hashlib.sha256(body).hexdigest(), "size": len(body), "body": body.hex()}
        for path, body in FILES.items()}

RUN = r"""
const fs = require("node:fs");
const vm = require("node:vm");
const {files, only} = JSON.parse(fs.readFileSync(0, "utf8"));
const base = process.argv[1];
for (const file of process.argv.slice(2)) vm.runInThisContext(fs.readFileSync(file, "utf8"), {filename: file});
globalThis.self = globalThis;
const here = (path) => new URL(path, base).href;
const bodyOf = (path) => Buffer.from(files[path].body, "hex");

// The network: each request counted; `altered` serves one file with a byte changed.
function run({fresh = false, offline = {}, altered = null} = {}) {
  const asked = [], posts = [];
  const network = async (input, init) => {
    const url = input instanceof Request ? input.url : new URL(input, base).href;
    asked.push([new URL(url, base).pathname.replace("/site/", ""), init && init.cache || null]);
    const path = Object.keys(files).find((p) => here(p) === url);
    if (path === undefined) return new Response("elsewhere", {status: 200});
    const body = bodyOf(path);
    if (path === altered) body[10] ^= 1;
    return new Response(body, {status: 200});
  };
  // Cache Storage holding the offline copy of some files, under path?sha256=...
  const opened = [];
  globalThis.caches = {open: async (name) => {
    opened.push(name);
    return {match: async (url) => {
      const path = Object.keys(offline).find((p) => here(`${p}?sha256=${files[p].sha256}`) === url);
      return path === undefined ? undefined : new Response(bodyOf(path));
    }};
  }};
  const prefetched = sdpaPrefetch({
    files: Object.entries(files).map(([p, f]) => [p, f.sha256, f.size]), scripts: ["pyodide/pyodide.asm.js"],
    stdlib: "pyodide/python_stdlib.zip.gz", here, network, offlineCache: "sdpa-offline", fresh, post: (m) => posts.push(m)});
  return {prefetched, asked, posts, opened};
}
const bytes = async (r) => Buffer.from(await (await r).arrayBuffer());
const caught = async (promise) => {
  try { await promise; return null; } catch (err) { return {name: err.constructor.name, file: err.file, message: err.message}; }
};

(async () => {
  const out = {};
  // the stdlib as Pyodide asks for it, from files that are whole: inflated, or the reason it was not
  out.unpacked = await caught(run().prefetched.fetch(here("pyodide/python_stdlib.zip")));
  if (only === "unpacked") return process.stdout.write(JSON.stringify(out));
  // every file asked for at once, then Pyodide's own requests
  const r = run();
  await new Promise((resolve) => setTimeout(resolve, 20));     // the offline copy looked in first: a few ticks
  const asked = [...r.asked];
  const archive = await bytes(r.prefetched.fetch(here("pyodide/packages.tar.gz")));
  const again = await bytes(r.prefetched.fetch(here("pyodide/packages.tar.gz")));      // a body reads once
  const stdlib = await r.prefetched.fetch(here("pyodide/python_stdlib.zip"));
  const script = await r.prefetched.fetch(new Request(here("pyodide/pyodide.asm.js")));
  await r.prefetched.fetch("other.json");
  const text = Buffer.from(await r.prefetched.bytes("pyodide/pyodide.asm.js")).toString();
  await Promise.all(r.prefetched.checks);
  await new Promise((resolve) => setTimeout(resolve, 10));
  const last = r.posts[r.posts.length - 1];
  out.boot = {
    prefetched: asked, later: r.asked.slice(asked.length),
    archive: archive.equals(bodyOf("pyodide/packages.tar.gz")), again: again.equals(bodyOf("pyodide/packages.tar.gz")),
    stdlib: (await bytes(stdlib)).toString("hex"), stdlibType: stdlib.headers.get("Content-Type"),
    script: (await bytes(script)).equals(bodyOf("pyodide/pyodide.asm.js")), text: text.length,
    stdlibURL: r.prefetched.stdlibURL, opened: r.opened,
    posts: r.posts.length, last, waitingAtFirst: r.posts[0].waiting, received: r.posts.map((p) => p.received),
  };
  // the offline copy: nothing downloaded that it holds
  const kept = run({offline: {"pyodide/packages.tar.gz": 1, "pyodide/pyodide.asm.js": 1}});
  await Promise.all(kept.prefetched.checks);
  out.offline = {asked: kept.asked, archive: (await bytes(kept.prefetched.fetch(here("pyodide/packages.tar.gz"))))
    .equals(bodyOf("pyodide/packages.tar.gz"))};
  // "Reload from the network": no cache of any kind
  const fresh = run({fresh: true, offline: {"pyodide/packages.tar.gz": 1}});
  await Promise.all(fresh.prefetched.checks);
  out.fresh = {asked: fresh.asked, opened: fresh.opened};
  // one file damaged: whatever the boot waits for fails, naming it
  const bad = run({altered: "pyodide/packages.tar.gz"});
  out.damaged = {
    waiting: await caught(bad.prefetched.guard(new Promise(() => {}))),
    archive: await caught(bad.prefetched.bytes("pyodide/packages.tar.gz")),
    archiveForPyodide: await caught(bytes(bad.prefetched.fetch(here("pyodide/packages.tar.gz")))),
  };
  process.stdout.write(JSON.stringify(out));
})().catch((err) => { console.error(err); process.exit(1); });
"""

PATHS = sorted(FILES)


def run(spec: dict, only: str | None = None) -> dict:
    templates = ROOT / "build" / "templates"
    done = subprocess.run([node(), "-e", RUN, BASE, str(templates / "download.js"), str(templates / "prefetch.js")],
                          input=json.dumps({"files": spec, "only": only}), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def results():
    return run(SPEC)


def test_every_file_is_asked_for_at_once_and_handed_to_pyodide_once(results):
    boot = results["boot"]
    assert sorted(boot["prefetched"]) == [[p, None] for p in PATHS]
    assert (boot["archive"], boot["again"]) == (True, True)
    # from the network later: the archive asked for a second time (its body was read), a script (the worker
    # runs its checked text instead) and a file not prefetched; the stdlib never
    assert boot["later"] == [["pyodide/packages.tar.gz", None], ["pyodide/pyodide.asm.js", None], ["other.json", None]]
    assert boot["script"] and boot["text"] == len(FILES["pyodide/pyodide.asm.js"])


def test_the_stdlib_is_handed_over_inflated(results):
    boot = results["boot"]
    assert boot["stdlibURL"] == BASE + "pyodide/python_stdlib.zip"
    assert bytes.fromhex(boot["stdlib"]) == STDLIB and boot["stdlibType"] == "application/zip"


def test_progress_counts_every_byte_and_ends_waiting_for_nothing(results):
    boot = results["boot"]
    total = sum(len(b) for b in FILES.values())
    assert boot["last"] == {"type": "progress", "received": total, "expected": total, "waiting": []}
    assert boot["posts"] <= 2 * len(FILES)      # throttled: one forced post per file read, not one per chunk
    assert set(boot["waitingAtFirst"]) <= set(FILES) and boot["received"] == sorted(boot["received"])


def test_what_the_offline_copy_holds_is_not_downloaded_again(results):
    offline = results["offline"]
    assert offline["asked"] == [["pyodide/python_stdlib.zip.gz", None]] and offline["archive"]
    assert results["boot"]["opened"] == ["sdpa-offline"] * len(FILES)


def test_reload_from_the_network_bypasses_every_cache(results):
    fresh = results["fresh"]
    assert sorted(fresh["asked"]) == [[p, "reload"] for p in PATHS] and fresh["opened"] == []


def test_a_damaged_file_fails_whatever_the_boot_waits_for_naming_it(results):
    for case in ("waiting", "archive"):
        error = results["damaged"][case]
        assert error["name"] == "BootError" and error["file"] == "pyodide/packages.tar.gz", case
        assert error["message"].startswith("pyodide/packages.tar.gz is damaged: its content differs"), case
    # Pyodide gets the response itself (download.js hands on a clone); the check is what fails the boot
    assert results["damaged"]["archiveForPyodide"] is None


def test_a_stdlib_that_does_not_inflate_is_named():
    spec = dict(SPEC)
    broken = b"not gzip at all" * 10       # whole (its sha256 is the one expected), yet no gzip stream
    spec["pyodide/python_stdlib.zip.gz"] = {"sha256": hashlib.sha256(broken).hexdigest(), "size": len(broken),
                                            "body": broken.hex()}
    assert run(SPEC)["unpacked"] is None
    error = run(spec, only="unpacked")["unpacked"]
    assert error["name"] == "BootError" and error["file"] == "pyodide/python_stdlib.zip.gz"
    assert error["message"].startswith("pyodide/python_stdlib.zip.gz could not be unpacked (")
