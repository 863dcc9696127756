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

async function precache(path, cache) {
  if (await cache.match(keyFor(path))) return;              // same bytes as before: keep
  const response = await fetch(new URL(path, SCOPE), {cache: "no-cache"});
  if (!response.ok) throw new Error(`precache ${path}: HTTP ${response.status}`);
  const body = await response.arrayBuffer();
  if (await hex(body) !== ASSETS[path]) throw new Error(`precache ${path}: content does not match this version`);
  const headers = {"Content-Type": response.headers.get("Content-Type") || "application/octet-stream"};
  await cache.put(keyFor(path), new Response(body, {headers}));
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
