"""build/templates/start.js in Node: worker.js is checked before it runs (a short, altered, missing or broken
download is named on the page, never started), and started from a blob: URL whose first line tells the worker
its boot (site folder, mode, link, snapshot key and scope, stores). Node runs start.js as boot.js includes it
(by text), with fetch, Worker and the progress panel made here."""
from __future__ import annotations

import base64
import hashlib
import json
import subprocess

from node_tools import node
from sitebuild import ROOT

BODY = b"postMessage(1);\n" * 5000             # 80,000 bytes
RUN = r"""
const fs = require("node:fs");
const vm = require("node:vm");
const {resolveObjectURL} = require("node:buffer");
vm.runInThisContext(fs.readFileSync(process.argv[1], "utf8"), {filename: "start.js"});
const {body: b64, sha256} = JSON.parse(fs.readFileSync(0, "utf8"));
const bytes = Buffer.from(b64, "base64");
globalThis.Worker = class { constructor(url) { this.url = url; } };
const chunked = (data) => new ReadableStream({start(c) {
  for (let at = 0; at < data.length; at += 20000) c.enqueue(new Uint8Array(data.subarray(at, at + 20000)));
  c.close();
}});
const altered = Buffer.from(bytes); altered[7] ^= 1;
const FETCHES = {
  whole: () => new Response(chunked(bytes)),
  altered: () => new Response(chunked(altered)),
  short: () => new Response(chunked(bytes.subarray(1000))),
  missing: () => new Response("no", {status: 404}),
  offline: () => Promise.reject(new TypeError("Failed to fetch")),
};
function starter(name, {snapshots = true, base = "https://site.invalid/lab/", fresh = false} = {}) {
  const seen = {fatal: [], news: 0, waiting: [], fetched: []};
  globalThis.fetch = (url, init) => { seen.fetched.push([url, init.cache]); return FETCHES[name](); };
  const progress = {fatal: (msg, info) => seen.fatal.push([msg, info]), news: () => { seen.news += 1; },
                    waitingFor: (files) => seen.waiting.push(files)};
  const start = sdpaWorkerStart({worker: {path: "worker.js", sha256, size: bytes.length, snapshots}, base, fresh,
                                 progress, stores: () => ["opfs", "cache"]});
  return {start, seen};
}
const bootOf = async (worker) => {
  const text = await resolveObjectURL(worker.url).text();
  const [first, ...rest] = text.split("\n");
  return {boot: JSON.parse(first.replace(/^self\.sdpaBoot = /, "").replace(/;$/, "")), body: rest.join("\n")};
};
(async () => {
  const out = {};
  for (const name of Object.keys(FETCHES)) {
    const {start, seen} = starter(name);
    const body = await start.checked();
    out[name] = {...seen, bytes: body && body.byteLength, same: body !== null && Buffer.from(body).equals(bytes)};
  }
  const {start} = starter("whole", {fresh: true});
  const body = await start.checked();
  out.page = await bootOf(await start.create(body, "page", {restore: false, search: "?view=dial"}));
  out.page.body = out.page.body === bytes.toString();
  out.snapshot = (await bootOf(await start.create(body, "snapshot", {search: "?view=dial"}))).boot;
  out.sameKey = (await start.snapshotKey()) === (await start.snapshotKey());
  out.otherSite = await starter("whole", {base: "https://elsewhere.invalid/lab/"}).start.snapshotKey();
  const plain = starter("whole", {snapshots: false}).start;
  out.noSnapshots = (await bootOf(await plain.create(body, "page"))).boot;
  process.stdout.write(JSON.stringify(out));
})();
"""


def run() -> dict:
    payload = {"body": base64.b64encode(BODY).decode(), "sha256": hashlib.sha256(BODY).hexdigest()}
    done = subprocess.run([node(), "-e", RUN, str(ROOT / "build" / "templates" / "start.js")],
                          input=json.dumps(payload), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_worker_js_runs_only_when_whole_and_says_what_went_wrong():
    out = run()
    whole = out["whole"]
    assert whole["same"] and whole["fatal"] == [] and whole["news"] >= 4          # every chunk is news
    assert whole["waiting"] == [["worker.js"], []]
    assert whole["fetched"] == [["https://site.invalid/lab/worker.js", "default"]]
    file = {"file": "worker.js"}
    n = f"{len(BODY):,}"
    assert out["altered"]["fatal"] == [[f"worker.js is damaged: {n} bytes received, {n} expected, content differs", file]]
    assert out["short"]["fatal"] == [[f"worker.js is damaged: {len(BODY) - 1000:,} bytes received, {n} expected", file]]
    assert out["missing"]["fatal"] == [["worker.js could not be downloaded (HTTP 404)", file]]
    assert out["offline"]["fatal"] == [["worker.js could not be downloaded (Failed to fetch)", file]]
    for name in ("altered", "short", "missing", "offline"):
        assert out[name]["bytes"] is None and out[name]["waiting"][-1] == [], name


def test_the_worker_is_told_its_boot_in_its_first_line():
    out = run()
    page, snapshot = out["page"]["boot"], out["snapshot"]
    assert out["page"]["body"] is True                       # then worker.js's own bytes, unchanged
    assert page["base"] == "https://site.invalid/lab/" and page["mode"] == "page" and page["fresh"] is True
    assert page["search"] == "?view=dial" and page["restore"] is False and page["stores"] == ["opfs", "cache"]
    assert len(page["snapshotKey"]) == 32 and len(page["snapshotScope"]) == 16
    int(page["snapshotKey"], 16), int(page["snapshotScope"], 16)
    # the snapshot worker builds the snapshot's app (no link), never bypasses the caches, same key
    assert snapshot["mode"] == "snapshot" and snapshot["search"] == "" and snapshot["fresh"] is False
    assert (snapshot["snapshotKey"], snapshot["restore"]) == (page["snapshotKey"], True)
    assert out["sameKey"] is True
    assert out["otherSite"]["key"] != page["snapshotKey"] and out["otherSite"]["scope"] != page["snapshotScope"]
    assert out["noSnapshots"]["snapshotKey"] is None and out["noSnapshots"]["snapshotScope"] is None
