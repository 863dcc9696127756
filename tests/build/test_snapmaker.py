"""build/templates/snapmaker.js in Node: when the page makes a snapshot for the next visit, and what it records
and says when it does not: used (this visit was restored), each reason it is unavailable (which the page says
only when it is the browser's doing), a block after a failed restore (ended by clearBlock), stored, failed, and
not made in time. Node runs snapmaker.js bundled (tests/js/bundled.cjs), with the browser's storage, the
snapshot worker and the page's note made here."""
from __future__ import annotations

import json
import subprocess

from node_tools import TEMPLATE_LOADER, node

RUN = r"""
require(process.argv[1]).runInThisContext("snapmaker.js");
globalThis.window = globalThis;
const store = new Map();
globalThis.localStorage = {getItem: (k) => store.get(k) ?? null, setItem: (k, v) => store.set(k, `${v}`),
                           removeItem: (k) => store.delete(k)};
const setNavigator = (value) => Object.defineProperty(globalThis, "navigator", {value, configurable: true});

function maker({answer = null, seconds = 60, snapshots = true, key = {key: "k"}, boot = null} = {}) {
  const lab = {snapshot: null, boot}, notes = [], workers = [];
  const made = sdpaSnapshotMaker({
    lab, worker: {sha256: "abc", snapshots, snapshotFolder: "snap"}, snapshotKey: async () => key,
    snapshotSeconds: seconds, note: (why) => notes.push(why), because: (err) => `because ${err.name}`,
    newWorker: async (mode) => {
      const w = {mode, terminated: false, terminate() { this.terminated = true; }};
      workers.push(w);
      if (answer) setTimeout(() => (answer.error ? w.onerror({message: answer.error, preventDefault() {}})
                                                  : w.onmessage({data: answer})), 5);
      return w;
    }});
  return {made, lab, notes, workers};
}
const settle = (ms) => new Promise((r) => setTimeout(r, ms));
const run = async (options) => {
  const m = maker(options);
  await m.made.make();
  await settle(options && options.wait || 30);
  return {snapshot: m.lab.snapshot, notes: m.notes, workers: m.workers.map((w) => [w.mode, w.terminated])};
};
const storage = {storage: {getDirectory: async () => ({})}};
(async () => {
  const out = {};
  setNavigator(storage);
  globalThis.caches = {open: async () => ({})};
  out.used = await run({boot: "snapshot"});
  out.stored = await run({answer: {type: "snapshot-stored", bytes: 5, ms: 12.4, store: "opfs"}});
  out.full = await run({answer: {type: "error", msg: "no room", name: "QuotaExceededError"}});
  out.crashed = await run({answer: {error: "out of memory"}});
  out.late = await run({seconds: 0.02, wait: 60});
  out.cdn = await run({snapshots: false});
  out.insecure = await run({key: null});
  setNavigator({...storage, connection: {saveData: true}});
  out.saveData = await run();
  setNavigator({...storage, deviceMemory: 2});
  out.smallMemory = await run();
  setNavigator({});
  out.noCacheStores = maker().made.stores();
  delete globalThis.caches;
  out.noStorage = await run();
  setNavigator(storage);
  globalThis.caches = {open: async () => ({})};
  const m = maker();
  out.stores = m.made.stores();
  m.made.block();
  out.blocked = await run();
  m.made.clearBlock();
  out.unblocked = await run({answer: {type: "snapshot-stored", bytes: 1, ms: 1, store: "cache"}});
  store.set("sdpa-snapshot-failed", JSON.stringify({version: "older", until: Date.now() + 1e9}));
  out.otherVersion = (await run()).snapshot;
  process.stdout.write(JSON.stringify(out), () => process.exit(0));      // the last one is still making
})();
"""


def test_the_snapshot_is_made_or_the_reason_recorded_and_said_when_it_is_the_browsers():
    done = subprocess.run([node(), "-e", RUN, str(TEMPLATE_LOADER)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["used"] == {"snapshot": {"state": "used"}, "notes": [], "workers": []}
    assert out["stored"] == {"snapshot": {"state": "stored", "bytes": 5, "ms": 12, "store": "opfs"}, "notes": [],
                             "workers": [["snapshot", True]]}
    assert out["full"]["snapshot"] == {"state": "failed", "msg": "no room", "name": "QuotaExceededError"}
    assert out["full"]["notes"] == ["because QuotaExceededError"] and out["full"]["workers"] == [["snapshot", True]]
    assert out["crashed"]["snapshot"] == {"state": "failed", "msg": "out of memory"} and out["crashed"]["notes"] == []
    assert out["late"]["snapshot"] == {"state": "failed", "msg": "not made within 0.02 s"}
    assert out["late"]["workers"] == [["snapshot", True]]

    def unavailable(case, why, said):
        assert out[case]["snapshot"] == {"state": "unavailable", "why": why}, case
        assert out[case]["notes"] == ([why] if said else []) and out[case]["workers"] == [], case

    unavailable("cdn", "this build loads Pyodide from its CDN, unpatched", said=False)
    unavailable("insecure", "the page was not opened over a secure (https) connection", said=True)
    unavailable("saveData", "the browser asks to save data", said=False)
    unavailable("smallMemory", "less than 4 GB of memory: a second Python would not fit well", said=False)
    unavailable("noStorage", "it offers no private file storage for pages", said=True)
    assert out["stores"] == ["opfs", "cache"] and out["noCacheStores"] == ["cache"]
    blocked = out["blocked"]
    assert blocked["snapshot"]["why"].startswith("a snapshot of this version did not restore in this browser; "
                                                 "not tried again before ")
    assert len(blocked["notes"]) == 1 and "did not start here; no new one is made before" in blocked["notes"][0]
    assert out["unblocked"]["snapshot"]["state"] == "stored"
    assert out["otherVersion"]["state"] == "making"          # a block of another version blocks nothing
