// Where the warm-boot snapshot is kept in this browser (worker.js `snapshots` decides what goes in
// and checks it on the way out): named files, <key>.heap and <key>.json, in the first of these
// stores that the browser offers. A module of worker.js.
//   "opfs":  the origin's private file system, <folder>/<scope>/<name>, read and written with a
//            synchronous access handle (Chromium, Firefox). The 63 MB heap back in about 0.3 s.
//   "cache": Cache Storage, a cache named <folder> of its own (sw.js never touches it), one entry per
//            file under /<folder>/<scope>/<name>. For engines without synchronous access handles
//            (WebKit: Safari and every iPhone browser); the heap back in 0.2-0.6 s.
// `allowed` is what the page offered (boot.js: a store the page cannot see is not used here either).
// Each store: name, usable() (a promise: false when the browser lacks it or refuses it),
// read(name) -> Uint8Array (a NotFoundError when absent), write(name, bytes), remove(name),
// keepOnly(prefix) (every other file of this copy of the site removed; prefix null: all of them).

export function sdpaSnapshotStores({folder, scope, base, allowed}) {
  const notFound = (name) => Object.assign(new Error(`${name} is not stored`), {name: "NotFoundError"});
  const once = (f) => {
    let p = null;
    return () => (p = p || f().catch(() => false));
  };

  const opfs = {
    name: "opfs",
    // one folder per copy of the site on this origin (e.g. /lab/ and /staging/ on one github.io)
    dir: once(async () => (await (await navigator.storage.getDirectory()).getDirectoryHandle(folder, {create: true}))
      .getDirectoryHandle(scope, {create: true})),
    usable() {
      const offered = allowed.includes("opfs") && self.navigator && navigator.storage && navigator.storage.getDirectory &&
        self.FileSystemFileHandle && "createSyncAccessHandle" in FileSystemFileHandle.prototype;
      return offered ? this.dir().then((d) => !!d) : Promise.resolve(false);
    },
    // A sync access handle is exclusive: a handle just closed (by the worker that made the snapshot,
    // another tab, a page that wrote the file) can keep the file locked a moment. Wait for it, briefly.
    async open(name, create) {
      const file = await (await this.dir()).getFileHandle(name, {create});
      for (let wait = 50; ; wait *= 2) {
        try {
          return await file.createSyncAccessHandle();
        } catch (err) {
          if (err.name !== "NoModificationAllowedError" || wait > 1600) throw err;
          await new Promise((resolve) => setTimeout(resolve, wait));
        }
      }
    },
    async read(name) {
      const handle = await this.open(name, false);
      try {
        const bytes = new Uint8Array(handle.getSize());
        handle.read(bytes, {at: 0});
        return bytes;
      } finally {
        handle.close();
      }
    },
    async write(name, bytes) {
      const handle = await this.open(name, true);
      try {
        handle.truncate(0);
        if (handle.write(bytes, {at: 0}) !== bytes.byteLength) throw new Error(`${name}: the disk took only part of it`);
        handle.flush();
      } finally {
        handle.close();
      }
    },
    async remove(name) {
      await (await this.dir()).removeEntry(name).catch(() => {});
    },
    async keepOnly(prefix) {
      const dir = await this.dir();
      const names = [];
      for await (const name of dir.keys()) names.push(name);
      for (const name of names) if (prefix === null || !name.startsWith(prefix)) await dir.removeEntry(name);
    },
  };

  const cache = {
    name: "cache",
    url: (name) => new URL(`/${folder}/${scope}/${name}`, base).href,
    open: once(() => caches.open(folder)),
    // caches.has: refused where Cache Storage is (private windows, settings), and creates nothing
    usable() {
      return allowed.includes("cache") && self.caches ? caches.has(folder).then(() => true, () => false) : Promise.resolve(false);
    },
    async read(name) {
      const hit = await caches.has(folder) && await (await this.open()).match(this.url(name));
      if (!hit) throw notFound(name);
      return new Uint8Array(await hit.arrayBuffer());
    },
    async write(name, bytes) {
      await (await this.open()).put(this.url(name), new Response(bytes, {headers: {"Content-Type": "application/octet-stream"}}));
    },
    async remove(name) {
      if (await caches.has(folder)) await (await this.open()).delete(this.url(name));
    },
    async keepOnly(prefix) {
      if (!(await caches.has(folder))) return;
      const c = await this.open();
      const mine = this.url("");
      for (const request of await c.keys()) {
        const name = request.url.startsWith(mine) ? request.url.slice(mine.length) : null;
        if (name !== null && (prefix === null || !name.startsWith(prefix))) await c.delete(request);
      }
    },
  };

  const all = [opfs, cache];
  return {
    all,
    // the store snapshots go to and come from: the first usable one (null: none)
    pick: once(async () => {
      for (const store of all) if (await store.usable()) return store;
      return null;
    }),
  };
}
