// build/templates/download.js: a file the boot needs is read as it arrives and checked against its size and
// sha256, and every way it can go wrong fails with the file's name and what happened, as the page then says
// it. Run as worker.js includes it (plain definitions, by text), on Responses made here.
import assert from "node:assert/strict";
import {createHash} from "node:crypto";
import {test} from "node:test";

import {runTemplates} from "./template.mjs";

await runTemplates("download.js");
const {sdpaDownload} = globalThis;

const BODY = Buffer.alloc(256 * 300, 0).map((_, i) => i % 256);      // 76,800 bytes, in several chunks
const SHA = createHash("sha256").update(BODY).digest("hex");
const PATH = "pyodide/file.bin";

// A body that delivers its bytes in 4 chunks, then breaks off when `breakAt` is given.
const stream = (breakAt) => new ReadableStream({
  start(controller) {
    const step = Math.ceil(BODY.length / 4);
    for (let at = 0; at < BODY.length; at += step) {
      if (breakAt !== undefined && at >= breakAt) {
        controller.error(new Error("connection reset"));
        return;
      }
      controller.enqueue(new Uint8Array(BODY.subarray(at, at + step)));
    }
    controller.close();
  },
});
const ok = (breakAt) => new Response(stream(breakAt), {status: 200});

/** One download of what `fetch()` answers: its checked body (or its error), the bytes counted on the way and the reads. */
async function download({fetch, sha256 = SHA, size = BODY.length, script = false}) {
  let counted = 0, reads = 0;
  const d = sdpaDownload({path: PATH, sha256, size, script, fetched: fetch(),
                          onBytes: (n) => { counted += n; }, onRead: () => { reads += 1; }});
  const r = {};
  try {
    const body = await d.checked;
    r.bytes = body.byteLength;
    r.same = Buffer.from(body).equals(BODY);
    if (!script) r.handedOn = (await (await d.response).arrayBuffer()).byteLength;   // Pyodide's copy
  } catch (err) {
    r.error = {name: err.constructor.name, file: err.file, message: err.message};
  }
  return {...r, counted, reads};
}

const n = (x) => x.toLocaleString("en-US");

test("a whole file is checked and still handed on", async () => {
  // read from a clone: the bytes check out, and Pyodide still gets the whole response to read
  assert.deepEqual(await download({fetch: ok}),
                   {bytes: BODY.length, same: true, handedOn: BODY.length, counted: BODY.length, reads: 1});
});

test("a script is read once here", async () => {
  const r = await download({fetch: ok, script: true});
  assert.deepEqual([r.bytes, r.same], [BODY.length, true]);
});

const FAILURES = {
  short: [{fetch: ok, size: BODY.length + 1},
          `${PATH} is damaged: ${n(BODY.length)} bytes received, ${n(BODY.length + 1)} expected`],
  altered: [{fetch: ok, sha256: "0".repeat(64)},
            `${PATH} is damaged: its content differs from this version's (sha256 ${SHA.slice(0, 12)}…, expected 000000000000…)`],
  missing: [{fetch: () => new Response("no", {status: 404, statusText: "Not Found"})},
            `${PATH} could not be downloaded (HTTP 404 Not Found)`],
  offline: [{fetch: () => Promise.reject(new TypeError("Failed to fetch"))},
            `${PATH} could not be downloaded (Failed to fetch); is the network down?`],
  broken: [{fetch: () => ok(BODY.length / 2)}, `${PATH} broke off while downloading (connection reset)`],
};
for (const [name, [args, message]] of Object.entries(FAILURES)) {
  test(`each failure names the file and what happened: ${name}`, async () => {
    const r = await download(args);
    assert.deepEqual(r.error, {name: "BootError", file: PATH, message});
  });
}
