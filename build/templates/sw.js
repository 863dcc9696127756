// SDPA Lab's service worker: precache every file the page uses on install, serve them
// from the cache (offline after one visit), key each file by its content hash so files
// a redeploy leaves unchanged are never downloaded again.
// The cache heals: a file missing from it or damaged in it (Cache Storage cleared by the user or the browser) is
// fetched from the network and stored again once its sha256 matches; the page asks on every visit
// how complete the cache is, and has the missing files downloaded in the background.
// The policy (build/offline.py): the cache's name and every file of this version,
// site-relative path -> sha256 of its bytes (filled in by build/runtime.py once build/bundle.py has bundled this file).
const POLICY = "@@DATA:POLICY@@";
const ASSETS = POLICY.assets;
const CACHE = POLICY.cache;
const SCOPE = new URL(self.registration.scope);
const BY_PATH = new Map(Object.keys(ASSETS).map((p) => [new URL(p, SCOPE).pathname, p]));
const keyFor = (path) => new URL(`${path}?sha256=${ASSETS[path]}`, SCOPE).href;
// The page's Content-Security-Policy (index.html's <meta>, build/offline.py page_csp), sent as a header with every
// response this worker answers: a static host sends none, and a <meta> governs only its own document, so the
// worker's script and every later response carry it too.
const CSP = POLICY.csp || null;

function withPolicy(response) {
  if (CSP === null || !response || response.type === "opaque" || response.type === "opaqueredirect") return response;
  const headers = new Headers(response.headers);
  headers.set("Content-Security-Policy", CSP);
  return new Response(response.body, {status: response.status, statusText: response.statusText, headers});
}

async function hex(buffer) {
  const digest = await crypto.subtle.digest("SHA-256", buffer);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

// A cached file, only if its bytes are still this version's. Any script of the origin can write Cache
// Storage, and a disk can damage it: a damaged entry is deleted (so it counts as missing and is fetched
// again), never served. Checked on every hit: SHA-256 of all ~100 files takes tens of ms.
async function cached(cache, path) {
  const hit = await cache.match(keyFor(path));
  if (!hit) return null;
  const body = await hit.arrayBuffer();
  if (await hex(body) === ASSETS[path]) {
    return new Response(body, {status: hit.status, statusText: hit.statusText, headers: hit.headers});
  }
  await cache.delete(keyFor(path));
  console.warn(`SDPA Lab offline cache: ${path} was damaged (${body.byteLength} bytes); deleted, to be fetched again`);
  return null;
}

// Store a file's bytes under its content key, only if they are this version's.
async function store(path, body, type) {
  if (await hex(body) !== ASSETS[path]) return false;
  const cache = await caches.open(CACHE);
  await cache.put(keyFor(path), new Response(body, {headers: {"Content-Type": type || "application/octet-stream"}}));
  return true;
}

// First try the browser's HTTP cache as it is ("force-cache"): the page registers this worker once
// it is running, so almost every file was just downloaded and a first visit transfers each file once.
// An entry from an older deploy fails the hash check; then, and only then, go to the network.
async function download(path, mode) {
  // the page itself was fetched as the scope URL ("./"), which is what the HTTP cache holds
  const url = path === "index.html" && mode === "force-cache" ? SCOPE : new URL(path, SCOPE);
  const response = await fetch(url, {cache: mode});
  if (!response.ok) throw new Error(`precache ${path}: HTTP ${response.status}`);
  const body = await response.arrayBuffer();
  return {body, ok: await hex(body) === ASSETS[path],
          type: response.headers.get("Content-Type") || "application/octet-stream"};
}

async function precache(path, cache) {
  if (await cached(cache, path)) return;                    // same bytes as before: keep
  let got = await download(path, "force-cache").catch(() => ({ok: false}));
  if (!got.ok) got = await download(path, "reload");
  if (!got.ok) throw new Error(`precache ${path}: content does not match this version`);
  await cache.put(keyFor(path), new Response(got.body, {headers: {"Content-Type": got.type}}));
}

async function fill(paths, cache) {
  const todo = [...paths];
  const failed = [];
  const lanes = Array.from({length: 6}, async () => {
    while (todo.length) {
      const path = todo.shift();
      await precache(path, cache).catch((err) => failed.push([path, `${err.message || err}`, err.name]));
    }
  });
  await Promise.all(lanes);
  return failed;
}

// This version's files the cache does not hold intact (a damaged one is deleted on the way).
async function missing() {
  const cache = await caches.open(CACHE);
  const held = new Set((await cache.keys()).map((r) => r.url));
  const paths = Object.keys(ASSETS);
  const intact = await Promise.all(paths.map((p) => (held.has(keyFor(p)) ? cached(cache, p).then(Boolean) : false)));
  return paths.filter((p, i) => !intact[i]);
}

async function inventory() {
  const gone = await missing();
  return {total: Object.keys(ASSETS).length, missing: gone};
}

let refilling = null;
function refill() {
  if (refilling === null) {
    refilling = (async () => {
      const failed = await fill(await missing(), await caches.open(CACHE));
      for (const [path, why] of failed) console.warn(`SDPA Lab offline cache: ${path} not stored (${why})`);
    })().finally(() => { refilling = null; });
  }
  return refilling;
}

// An install that cannot store every file fails (the page goes on without offline use); the pages
// open are told why, so they can say it (setup.js).
self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const failed = await fill(Object.keys(ASSETS), await caches.open(CACHE));
    if (!failed.length) return;
    const msg = failed.map(([p, why]) => `${p}: ${why}`).join("; ");
    const full = failed.some(([, , name]) => name === "QuotaExceededError");
    for (const client of await self.clients.matchAll({type: "window", includeUncontrolled: true})) {
      client.postMessage({type: "install-failed", full, msg: msg.slice(0, 500)});
    }
    throw new Error(msg);
  })());
});

self.addEventListener("activate", (event) => {
  event.waitUntil((async () => {
    const keep = new Set(Object.keys(ASSETS).map(keyFor));
    const cache = await caches.open(CACHE);
    for (const request of await cache.keys()) {
      if (!keep.has(request.url)) await cache.delete(request);
    }
    await self.clients.claim();
    await refill();          // whatever went missing since install
  })());
});

// The page asks {type: "status"} (how complete is the cache?), {type: "refill"} (download what
// is missing, then say) and, to a waiting version, {type: "takeOverIfAlone"}, with a MessagePort for
// the answer.
self.addEventListener("message", (event) => {
  const msg = event.data || {};
  const reply = (answer) => event.ports[0] && event.ports[0].postMessage(answer);
  if (msg.type === "skipWaiting") {
    self.skipWaiting();
  } else if (msg.type === "takeOverIfAlone") {
    // a page reloaded while this version waited: take over only if no other page of the old one is open
    // (that one goes on with the old version's files, which activating would delete)
    event.waitUntil(self.clients.matchAll({type: "window", includeUncontrolled: true}).then((pages) => {
      const alone = pages.length <= 1;
      reply({alone});
      return alone ? self.skipWaiting() : undefined;
    }));
  } else if (msg.type === "status") {
    event.waitUntil(inventory().then(reply));
  } else if (msg.type === "refill") {
    event.waitUntil(refill().then(inventory).then(reply));
  }
});

// A response the network gave for a file of this version: stored (after the hash check) while
// the page uses it.
function keep(event, path, response) {
  if (response.ok && response.status === 200 && response.type === "basic" && !response.redirected) {
    const copy = response.clone();
    event.waitUntil(copy.arrayBuffer()
      .then((body) => store(path, body, response.headers.get("Content-Type")))
      .catch(() => false));
  }
  return response;
}

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") return;
  const url = new URL(request.url);
  if (url.origin !== SCOPE.origin) return;
  let path = BY_PATH.get(url.pathname);
  if (path === undefined && url.pathname === SCOPE.pathname) path = "index.html";
  if (path === undefined) return;
  if (request.cache === "reload" && request.mode !== "navigate") {
    // the page's "Reload from the network": fresh bytes (stored if they are this version's), the
    // cached copy only when the network fails
    event.respondWith(fetch(request).then((r) => keep(event, path, r),
      (err) => caches.open(CACHE).then((c) => cached(c, path)).then((hit) => hit || Promise.reject(err)))
      .then(withPolicy));
    return;
  }
  event.respondWith(caches.open(CACHE)
    .then((cache) => cached(cache, path))
    .then((hit) => hit || fetch(request).then((r) => keep(event, path, r)))
    .then(withPolicy));
});
