// build/templates/start.js: worker.js is checked before it runs (a short, altered, missing or broken download is
// named on the page, never started), and started from a blob: URL whose first line tells the worker its boot
// (site folder, mode, link, snapshot key and scope, stores). start.js runs as boot.js includes it (by text), with
// fetch, Worker and the progress panel made here.
import assert from "node:assert/strict";
import {resolveObjectURL} from "node:buffer";
import {createHash} from "node:crypto";
import {test} from "node:test";

import {runTemplates} from "./template.mjs";

await runTemplates("start.js");
const {sdpaWorkerStart} = globalThis;

const BYTES = Buffer.from("postMessage(1);\n".repeat(5000));       // 80,000 bytes
const SHA = createHash("sha256").update(BYTES).digest("hex");
globalThis.Worker = class { constructor(url) { this.url = url; } };
const chunked = (data) => new ReadableStream({start(c) {
  for (let at = 0; at < data.length; at += 20000) c.enqueue(new Uint8Array(data.subarray(at, at + 20000)));
  c.close();
}});
const ALTERED = Buffer.from(BYTES);
ALTERED[7] ^= 1;
const FETCHES = {
  whole: () => new Response(chunked(BYTES)),
  altered: () => new Response(chunked(ALTERED)),
  short: () => new Response(chunked(BYTES.subarray(1000))),
  missing: () => new Response("no", {status: 404}),
  offline: () => Promise.reject(new TypeError("Failed to fetch")),
};
function starter(name, {snapshots = true, base = "https://site.invalid/lab/", fresh = false} = {}) {
  const seen = {fatal: [], news: 0, waiting: [], fetched: []};
  globalThis.fetch = (url, init) => { seen.fetched.push([url, init.cache]); return FETCHES[name](); };
  const progress = {fatal: (msg, info) => seen.fatal.push([msg, info]), news: () => { seen.news += 1; },
                    waitingFor: (files) => seen.waiting.push(files)};
  const start = sdpaWorkerStart({worker: {path: "worker.js", sha256: SHA, size: BYTES.length, snapshots}, base, fresh,
                                 progress, stores: () => ["opfs", "cache"]});
  return {start, seen};
}
const bootOf = async (worker) => {
  const text = await resolveObjectURL(worker.url).text();
  const strict = text.startsWith('"use strict";\n');
  const [first, ...rest] = (strict ? text.slice('"use strict";\n'.length) : text).split("\n");
  return {boot: JSON.parse(first.replace(/^self\.sdpaBoot = /, "").replace(/;$/, "")),
          body: (strict ? '"use strict";\n' : "") + rest.join("\n"), text};
};
const n = (x) => x.toLocaleString("en-US");

test("worker.js runs only when whole", async () => {
  const {start, seen} = starter("whole");
  const body = await start.checked();
  assert.ok(Buffer.from(body).equals(BYTES));
  assert.deepEqual(seen.fatal, []);
  assert.ok(seen.news >= 4, `${seen.news} news`);             // every chunk is news
  assert.deepEqual(seen.waiting, [["worker.js"], []]);
  assert.deepEqual(seen.fetched, [["https://site.invalid/lab/worker.js", "default"]]);
});

const FAILURES = {
  altered: `worker.js is damaged: ${n(BYTES.length)} bytes received, ${n(BYTES.length)} expected, content differs`,
  short: `worker.js is damaged: ${n(BYTES.length - 1000)} bytes received, ${n(BYTES.length)} expected`,
  missing: "worker.js could not be downloaded (HTTP 404)",
  offline: "worker.js could not be downloaded (Failed to fetch)",
};
for (const [name, message] of Object.entries(FAILURES)) {
  test(`a worker.js that is ${name} is named on the page, never started`, async () => {
    const {start, seen} = starter(name);
    assert.equal(await start.checked(), null);
    assert.deepEqual(seen.fatal, [[message, {file: "worker.js"}]]);
    assert.deepEqual(seen.waiting.at(-1), []);
  });
}

test("the worker is told its boot in its first line", async () => {
  const {start} = starter("whole", {fresh: true});
  const body = await start.checked();
  const page = await bootOf(await start.create(body, "page", {restore: false, search: "?view=dial"}));
  assert.equal(page.body, BYTES.toString());                   // then worker.js's own bytes, unchanged
  const boot = page.boot;
  assert.deepEqual([boot.base, boot.mode, boot.fresh, boot.search, boot.restore, boot.stores],
                   ["https://site.invalid/lab/", "page", true, "?view=dial", false, ["opfs", "cache"]]);
  assert.match(boot.snapshotKey, /^[0-9a-f]{32}$/);
  assert.match(boot.snapshotScope, /^[0-9a-f]{16}$/);
  // the snapshot worker builds the snapshot's app (no link), never bypasses the caches, same key
  const snapshot = (await bootOf(await start.create(body, "snapshot", {search: "?view=dial"}))).boot;
  assert.deepEqual([snapshot.mode, snapshot.search, snapshot.fresh, snapshot.snapshotKey, snapshot.restore],
                   ["snapshot", "", false, boot.snapshotKey, true]);
  assert.equal(await start.snapshotKey(), await start.snapshotKey());
  const other = await starter("whole", {base: "https://elsewhere.invalid/lab/"}).start.snapshotKey();
  assert.notEqual(other.key, boot.snapshotKey);
  assert.notEqual(other.scope, boot.snapshotScope);
  const plain = starter("whole", {snapshots: false}).start;
  const noSnapshots = (await bootOf(await plain.create(body, "page"))).boot;
  assert.deepEqual([noSnapshots.snapshotKey, noSnapshots.snapshotScope], [null, null]);
});

test("a strict worker.js stays strict: its boot line goes after the directive", async () => {
  const strictBody = Buffer.concat([Buffer.from('"use strict";\n'), BYTES]);
  const {start} = starter("whole");
  const page = await bootOf(await start.create(strictBody, "page"));
  assert.ok(page.text.startsWith('"use strict";\nself.sdpaBoot = {'), page.text.slice(0, 40));
  assert.equal(page.body, strictBody.toString());              // worker.js's bytes, the boot line taken out
  // a body without the directive gets the boot line first, as before
  assert.ok((await bootOf(await start.create(BYTES, "page"))).text.startsWith("self.sdpaBoot = {"));
});
