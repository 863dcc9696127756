// SDPA Lab's service worker: precache every file the page uses on install, serve them
// from the cache (offline after one visit), key each file by its content hash so files
// a redeploy leaves unchanged are never downloaded again.
"use strict";
const ASSETS = /*ASSETS*/{}/*END*/;   // site-relative path -> sha256 of its bytes
const CACHE = "sdpa-lab-assets";
const SCOPE = new URL(self.registration.scope);
const BY_PATH = new Map(Object.keys(ASSETS).map((p) => [new URL(p, SCOPE).pathname, p]));
const keyFor = (path) => new URL(`${path}?sha256=${ASSETS[path]}`, SCOPE).href;

async function hex(buffer) {
  const digest = await crypto.subtle.digest("SHA-256", buffer);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
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
  if (await cache.match(keyFor(path))) return;              // same bytes as before: keep
  let got = await download(path, "force-cache").catch(() => ({ok: false}));
  if (!got.ok) got = await download(path, "reload");
  if (!got.ok) throw new Error(`precache ${path}: content does not match this version`);
  await cache.put(keyFor(path), new Response(got.body, {headers: {"Content-Type": got.type}}));
}

self.addEventListener("install", (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    const todo = Object.keys(ASSETS);
    const lanes = Array.from({length: 6}, async () => {
      while (todo.length) await precache(todo.shift(), cache);
    });
    await Promise.all(lanes);
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
  })());
});

self.addEventListener("message", (event) => {
  if (event.data && event.data.type === "skipWaiting") self.skipWaiting();
});

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") return;
  const url = new URL(request.url);
  if (url.origin !== SCOPE.origin) return;
  let path = BY_PATH.get(url.pathname);
  if (path === undefined && url.pathname === SCOPE.pathname) path = "index.html";
  if (path === undefined) return;
  event.respondWith(caches.open(CACHE)
    .then((cache) => cache.match(keyFor(path)))
    .then((hit) => hit || fetch(request)));
});
