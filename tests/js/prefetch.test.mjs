// build/templates/prefetch.js: every file the boot needs is requested at once, from the offline copy when it is
// there, checked, counted for the progress panel, and handed to Pyodide once when it asks (the stdlib inflated);
// a file that fails its check fails whatever the boot is waiting for. prefetch.js and download.js run as
// worker.js includes them, by text, with a network and a Cache Storage made here.
import assert from "node:assert/strict";
import {createHash} from "node:crypto";
import {test} from "node:test";
import {gzipSync} from "node:zlib";

import {runTemplates} from "./template.mjs";
import {until} from "./until.mjs";

await runTemplates("download.js", "prefetch.js");
const {sdpaPrefetch} = globalThis;
globalThis.self = globalThis;

const BASE = "https://lab.example/site/";
const STDLIB = Buffer.alloc(256 * 64).map((_, i) => i % 256);             // the zip Pyodide reads, 16 KB
const BODIES = {
  "pyodide/pyodide.asm.js": Buffer.from("globalThis.ran = 1;\n".repeat(500)),
  "pyodide/python_stdlib.zip.gz": gzipSync(STDLIB),
  "pyodide/packages.tar.gz": Buffer.alloc(256 * 200).map((_, i) => 255 - (i % 256)),
};
const PATHS = Object.keys(BODIES).sort();
const TOTAL = Object.values(BODIES).reduce((n, b) => n + b.length, 0);
const spec = (bodies) => Object.fromEntries(Object.entries(bodies).map(([p, body]) =>
  [p, {sha256: createHash("sha256").update(body).digest("hex"), size: body.length, body}]));
const FILES = spec(BODIES);
const here = (path) => new URL(path, BASE).href;

// The network: each request counted; `altered` serves one file with a byte changed. Cache Storage holds the
// offline copy of the files in `offline`, under path?sha256=...
function run({files = FILES, fresh = false, offline = {}, altered = null, down = false} = {}) {
  const asked = [], posts = [], opened = [], deleted = [];
  const network = async (input, init) => {
    const url = input instanceof Request ? input.url : new URL(input, BASE).href;
    if (down) throw new TypeError("Failed to fetch");
    asked.push([new URL(url, BASE).pathname.replace("/site/", ""), (init && init.cache) || null]);
    const path = Object.keys(files).find((p) => here(p) === url);
    if (path === undefined) return new Response("elsewhere", {status: 200});
    const body = Buffer.from(files[path].body);
    if (path === altered) body[10] ^= 1;
    return new Response(body, {status: 200});
  };
  globalThis.caches = {open: async (name) => {
    opened.push(name);
    return {match: async (url) => {
      const path = Object.keys(offline).find((p) => here(`${p}?sha256=${files[p].sha256}`) === url);
      if (path === undefined) return undefined;
      const body = Buffer.from(files[path].body);
      if (offline[path] === "damaged") body[7] ^= 1;          // a flipped bit in the offline copy
      return new Response(body);
    }, delete: async (url) => { deleted.push(url); return true; }};
  }};
  const prefetched = sdpaPrefetch({
    files: Object.entries(files).map(([p, f]) => [p, f.sha256, f.size]), scripts: ["pyodide/pyodide.asm.js"],
    stdlib: "pyodide/python_stdlib.zip.gz", here, network, offlineCache: "sdpa-offline", fresh, post: (m) => posts.push(m)});
  return {prefetched, asked, posts, opened, deleted};
}
const bytes = async (r) => Buffer.from(await (await r).arrayBuffer());
const caught = async (promise) => {
  try { await promise; return null; } catch (err) { return {name: err.constructor.name, file: err.file, message: err.message}; }
};

test("every file is asked for at once and handed to Pyodide once", async () => {
  const r = run();
  await until(() => r.asked.length >= PATHS.length, "every file asked for", 10);   // the offline copy is looked in first: a few turns
  const prefetched = [...r.asked];
  assert.deepEqual([...prefetched].sort(), PATHS.map((p) => [p, null]));
  assert.ok((await bytes(r.prefetched.fetch(here("pyodide/packages.tar.gz")))).equals(BODIES["pyodide/packages.tar.gz"]));
  // a body reads once: asked for again, the archive comes from the network
  assert.ok((await bytes(r.prefetched.fetch(here("pyodide/packages.tar.gz")))).equals(BODIES["pyodide/packages.tar.gz"]));
  const stdlib = await r.prefetched.fetch(here("pyodide/python_stdlib.zip"));
  assert.ok((await bytes(stdlib)).equals(STDLIB));               // handed over inflated
  assert.equal(stdlib.headers.get("Content-Type"), "application/zip");
  assert.equal(r.prefetched.stdlibURL, BASE + "pyodide/python_stdlib.zip");
  const script = await r.prefetched.fetch(new Request(here("pyodide/pyodide.asm.js")));
  assert.ok((await bytes(script)).equals(BODIES["pyodide/pyodide.asm.js"]));
  await r.prefetched.fetch("other.json");
  const text = Buffer.from(await r.prefetched.bytes("pyodide/pyodide.asm.js")).toString();
  assert.equal(text.length, BODIES["pyodide/pyodide.asm.js"].length);
  // from the network later: the archive a second time (its body was read), a script (the worker runs its checked
  // text instead) and a file not prefetched; the stdlib never
  assert.deepEqual(r.asked.slice(prefetched.length),
                   [["pyodide/packages.tar.gz", null], ["pyodide/pyodide.asm.js", null], ["other.json", null]]);
  assert.deepEqual(r.opened, PATHS.map(() => "sdpa-offline"));

  // progress counts every byte and ends waiting for nothing; throttled: one forced post per file read, not per chunk
  await Promise.all(r.prefetched.checks);
  await until(() => r.posts.at(-1).received === TOTAL && r.posts.at(-1).waiting.length === 0, "a last post of everything");
  assert.deepEqual(r.posts.at(-1), {type: "progress", received: TOTAL, expected: TOTAL, waiting: []});
  assert.ok(r.posts.length <= 2 * PATHS.length, `${r.posts.length} posts`);
  assert.ok(r.posts[0].waiting.every((p) => PATHS.includes(p)), r.posts[0].waiting);
  const received = r.posts.map((p) => p.received);
  assert.deepEqual(received, [...received].sort((a, b) => a - b));
});

test("what the offline copy holds is not downloaded again", async () => {
  const kept = run({offline: {"pyodide/packages.tar.gz": 1, "pyodide/pyodide.asm.js": 1}});
  await Promise.all(kept.prefetched.checks);
  assert.deepEqual(kept.asked, [["pyodide/python_stdlib.zip.gz", null]]);
  assert.ok((await bytes(kept.prefetched.fetch(here("pyodide/packages.tar.gz")))).equals(BODIES["pyodide/packages.tar.gz"]));
});

test("Reload from the network bypasses every cache", async () => {
  const fresh = run({fresh: true, offline: {"pyodide/packages.tar.gz": 1}});
  await Promise.all(fresh.prefetched.checks);
  assert.deepEqual([...fresh.asked].sort(), PATHS.map((p) => [p, "reload"]));
  assert.deepEqual(fresh.opened, []);
});

test("a damaged file fails whatever the boot waits for, naming it", async () => {
  const bad = run({altered: "pyodide/packages.tar.gz"});
  for (const error of [await caught(bad.prefetched.guard(new Promise(() => {}))),
                       await caught(bad.prefetched.bytes("pyodide/packages.tar.gz"))]) {
    assert.equal(error.name, "BootError");
    assert.equal(error.file, "pyodide/packages.tar.gz");
    assert.ok(error.message.startsWith("pyodide/packages.tar.gz is damaged: its content differs"), error.message);
  }
  // Pyodide gets the response itself (download.js hands on a clone); the check is what fails the boot
  assert.equal(await caught(bytes(bad.prefetched.fetch(here("pyodide/packages.tar.gz")))), null);
});

test("a stdlib that does not inflate is named", async () => {
  assert.equal(await caught(run().prefetched.fetch(here("pyodide/python_stdlib.zip"))), null);
  // whole (its sha256 is the one expected), yet no gzip stream
  const files = spec({...BODIES, "pyodide/python_stdlib.zip.gz": Buffer.from("not gzip at all".repeat(10))});
  const error = await caught(run({files}).prefetched.fetch(here("pyodide/python_stdlib.zip")));
  assert.equal(error.name, "BootError");
  assert.equal(error.file, "pyodide/python_stdlib.zip.gz");
  assert.ok(error.message.startsWith("pyodide/python_stdlib.zip.gz could not be unpacked ("), error.message);
});


test("a damaged file of the offline copy heals: deleted, fetched again from the network, checked", async () => {
  // issue 57: a damaged file in the offline copy failed every plain reload; only "Reload from the network" mended it
  const path = "pyodide/packages.tar.gz";
  const r = run({offline: {[path]: "damaged", "pyodide/pyodide.asm.js": 1}});
  assert.ok(Buffer.from(await r.prefetched.bytes(path)).equals(FILES[path].body));
  assert.deepEqual(r.deleted, [here(`${path}?sha256=${FILES[path].sha256}`)]);
  assert.deepEqual(r.asked.filter(([p]) => p === path), [[path, "reload"]]);       // past every cache
  assert.ok(r.posts.some((m) => m.type === "healing" && m.path === path));
  assert.ok(!r.asked.some(([p]) => p === "pyodide/pyodide.asm.js"));               // a whole one is still used
});

test("a damaged file of the offline copy with no network says so", async () => {
  const path = "pyodide/packages.tar.gz";
  const r = run({offline: {[path]: "damaged", "pyodide/pyodide.asm.js": 1, "pyodide/python_stdlib.zip.gz": 1}, down: true});
  const err = await caught(r.prefetched.bytes(path));
  assert.equal(err.name, "BootError");
  assert.equal(err.file, path);
  assert.match(err.message, /offline copy was damaged, and fetching it again failed .*offline/);
});
