"""The warm boot from a memory snapshot, in Chromium: after a first visit a second worker saves a
snapshot of Python with the app built; the next visit restores it instead of starting Python, and
the page works from it (the address's state applied, sliders live). A snapshot that does not
restore is dropped and the page boots the usual way, with no error shown. Timings are printed by
build/measure_site.py, never asserted here."""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

from node_tools import node
from build import offline
from sitebuild import HANDLE, PLOT_STATE, NO_DIST, pyodide_dist
from web.options import D_K_OPTIONS

pytestmark = pytest.mark.ui

BOOT_MS = 120_000
SNAPSHOT_MS = 240_000
# The snapshot's files in the origin's private file system (a folder per copy of the site):
# [path, bytes] of each.
ENTRIES = """async (name) => {
  const out = [];
  const walk = async (folder, prefix) => {
    for await (const [file, handle] of folder.entries()) {
      if (handle.kind === "directory") await walk(handle, `${prefix}${file}/`);
      else out.push([`${prefix}${file}`, (await handle.getFile()).size]);
    }
  };
  await walk(await (await navigator.storage.getDirectory()).getDirectoryHandle(name, {create: true}), "");
  return out;
}"""


@pytest.fixture
def live_site(site, served):
    if pyodide_dist() is None:
        pytest.skip(NO_DIST)
    assert site.config["snapshot"] == {"folder": offline.SNAPSHOT_FOLDER}
    return served


def open_page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, service_workers="block")
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("console", lambda m: m.type == "error" and errors.append(f"console.error: {m.text}"))
    return context, page, errors


def wait_ready(page):
    page.wait_for_function("window.sdpaLab && (window.sdpaLab.ready || window.sdpaLab.error)", timeout=BOOT_MS)
    assert page.evaluate("window.sdpaLab.error") is None, page.evaluate("window.sdpaLab.error")


def first_visit_saves_a_snapshot(page, url) -> list:
    page.goto(url)
    wait_ready(page)
    assert page.evaluate("sdpaLab.boot") == "python"
    page.wait_for_function("sdpaLab.snapshot && sdpaLab.snapshot.state !== 'making'", timeout=SNAPSHOT_MS)
    state = page.evaluate("sdpaLab.snapshot")
    assert state["state"] == "stored" and state["store"] == "opfs", state      # the private file system first
    entries = page.evaluate(ENTRIES, offline.SNAPSHOT_FOLDER)
    assert sorted(name.rsplit(".", 1)[1] for name, _ in entries) == ["heap", "json"], entries
    assert dict((name.rsplit(".", 1)[1], n) for name, n in entries)["heap"] == state["bytes"]
    return entries


def test_a_second_visit_boots_from_the_snapshot(live_site, browser):
    """Visit, let the snapshot be saved, then open a shared link: Python is restored (no package or
    app step runs), the link's d_k is applied, the page reacts to d_k, and no error occurs."""
    context, page, errors = open_page(browser)
    first_visit_saves_a_snapshot(page, live_site)
    page.goto(live_site + "?view=playground&d_k=256")
    wait_ready(page)
    how = page.evaluate("[sdpaLab.boot, sdpaLab.snapshotStore, sdpaLab.snapshotFailure, sdpaLab.snapshotUnreadable]")
    assert how == ["snapshot", "opfs", None, None], how
    steps = page.evaluate("Object.keys(sdpaLab.steps)")
    assert not {"packages", "import", "app"} & set(steps), steps      # restored, not rebuilt
    handle = page.locator(HANDLE)
    expect(handle).to_have_attribute("aria-valuetext", "256", timeout=30_000)
    before = page.evaluate(PLOT_STATE)
    handle.focus()
    handle.press("ArrowRight")
    page.wait_for_function(f"({PLOT_STATE})() !== {before!r}", timeout=30_000)
    page.wait_for_function(f"location.search.includes('d_k={D_K_OPTIONS[D_K_OPTIONS.index(256) + 1]}')", timeout=30_000)
    assert errors == [], errors
    context.close()


def snapshot_file(entries, ext: str) -> tuple[str, int]:
    return next((name, n) for name, n in entries if name.endswith(f".{ext}"))


# Read and write a file of the snapshot folder from the page (the worker that wrote it has closed it).
READ_TEXT = """async ([folder, path]) => {
  let dir = await (await navigator.storage.getDirectory()).getDirectoryHandle(folder);
  const parts = path.split("/");
  for (const part of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(part);
  return await (await (await dir.getFileHandle(parts[parts.length - 1])).getFile()).text();
}"""
WRITE_TEXT = """async ([folder, path, text]) => {
  let dir = await (await navigator.storage.getDirectory()).getDirectoryHandle(folder);
  const parts = path.split("/");
  for (const part of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(part);
  const writable = await (await dir.getFileHandle(parts[parts.length - 1])).createWritable();
  await writable.write(text);
  await writable.close();
}"""
# 64 bytes in the middle of the heap flipped, as a disk error would leave them.
FLIP_HEAP = """async ([folder, path]) => {
  let dir = await (await navigator.storage.getDirectory()).getDirectoryHandle(folder);
  const parts = path.split("/");
  for (const part of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(part);
  const handle = await dir.getFileHandle(parts[parts.length - 1]);
  const bytes = new Uint8Array(await (await handle.getFile()).arrayBuffer());
  const middle = bytes.length >> 1;
  for (let i = middle; i < middle + 64; i++) bytes[i] ^= 0xff;
  const writable = await handle.createWritable();
  await writable.write(bytes);
  await writable.close();
}"""


def split_record(text: str) -> tuple[str, dict]:
    """<key>.json: its sha256 line, then {meta, doc}."""
    head, body = text.split("\n", 1)
    assert head == hashlib.sha256(body.encode()).hexdigest(), "the saved document's sha256 line is not its body's"
    return head, json.loads(body)


def tamper_document(text: str) -> tuple[str, str]:
    """One word of the document's text changed (the sha256 line kept); the changed word."""
    head, record = split_record(text)
    body = text.split("\n", 1)[1]
    words = [w for w in re.findall(r"\b[A-Z][a-z]{5,}\b", record["doc"][0]) if w not in json.dumps(record["meta"])]
    assert words, "no word to change in the saved document"
    return head + "\n" + body.replace(words[0], words[0].upper(), 1), words[0].upper()


def tamper_side_data(text: str) -> tuple[str, None]:
    """One number of what snapshot.js puts back changed: the table's length."""
    head, record = split_record(text)
    body = text.split("\n", 1)[1]
    old = f'"tableLength":{record["meta"]["tableLength"]}'
    assert body.count(old) == 1, old
    return head + "\n" + body.replace(old, f'"tableLength":{record["meta"]["tableLength"] + 1}'), None


def tamper_checksum(text: str) -> tuple[str, None]:
    """The sha256 line itself changed (the record kept)."""
    head, body = text.split("\n", 1)
    return ("0" if head[0] != "0" else "1") + head[1:] + "\n" + body, None


def boot_seconds(page) -> float:
    return page.evaluate("sdpaLab.steps.interactive") / 1000


def test_a_tampered_or_damaged_snapshot_is_dropped_and_made_anew(live_site, browser):
    """Each part of a saved snapshot changed in turn (a word of its document, a number of its side
    data, its sha256 line, 64 bytes of its heap): the next visit notices, drops it, boots the usual
    way without showing the change, and makes a fresh snapshot, which the visit after restores."""
    context, page, errors = open_page(browser)
    entries = first_visit_saves_a_snapshot(page, live_site)
    timings = {"python": [boot_seconds(page)], "snapshot": []}
    record, _ = snapshot_file(entries, "json")
    heap, _ = snapshot_file(entries, "heap")
    for name, change in [("document", tamper_document), ("side data", tamper_side_data),
                         ("sha256 line", tamper_checksum), ("heap", None)]:
        shown = None
        if change is None:
            page.evaluate(FLIP_HEAP, [offline.SNAPSHOT_FOLDER, heap])
        else:
            text = page.evaluate(READ_TEXT, [offline.SNAPSHOT_FOLDER, record])
            changed, shown = change(text)
            assert changed != text
            page.evaluate(WRITE_TEXT, [offline.SNAPSHOT_FOLDER, record, changed])
        page.reload()
        wait_ready(page)
        timings["python"].append(boot_seconds(page))
        how = page.evaluate("({boot: sdpaLab.boot, damaged: sdpaLab.snapshotDamaged, failure: sdpaLab.snapshotFailure})")
        assert how["boot"] == "python", (name, how)
        if name == "heap":      # found while Pyodide starts from it
            assert how["failure"] and "sha256" in how["failure"], (name, how)
        else:                   # found before anything of it is used
            assert how["damaged"] and "sha256" in how["damaged"] and how["failure"] is None, (name, how)
        if shown is not None:       # the changed word is nowhere on the page (locators see into shadow roots)
            assert page.get_by_text(re.compile(re.escape(shown))).count() == 0, shown
        page.wait_for_function("sdpaLab.snapshot && sdpaLab.snapshot.state !== 'making'", timeout=SNAPSHOT_MS)
        state = page.evaluate("sdpaLab.snapshot")
        assert state["state"] == "stored", (name, state)
        assert page.evaluate("localStorage.getItem('sdpa-snapshot-failed')") is None, name
        entries = page.evaluate(ENTRIES, offline.SNAPSHOT_FOLDER)
        assert sorted(n.rsplit(".", 1)[1] for n, _ in entries) == ["heap", "json"], (name, entries)
        split_record(page.evaluate(READ_TEXT, [offline.SNAPSHOT_FOLDER, record]))      # whole again
    page.reload()
    wait_ready(page)
    timings["snapshot"].append(boot_seconds(page))
    how = page.evaluate("[sdpaLab.boot, sdpaLab.snapshotDamaged, sdpaLab.snapshotFailure, sdpaLab.snapshotUnreadable]")
    assert how == ["snapshot", None, None, None], how
    before = page.evaluate(PLOT_STATE)
    handle = page.locator(HANDLE)
    handle.focus()
    handle.press("ArrowRight")
    page.wait_for_function(f"({PLOT_STATE})() !== {before!r}", timeout=30_000)
    print(f"\ninteractive after (s): usual boot {timings['python']}, from the snapshot {timings['snapshot']}")
    assert errors == [], errors
    context.close()


def test_a_restore_that_fails_on_whole_bytes_blocks_new_snapshots_for_a_while(live_site, browser):
    """A snapshot whose bytes are whole but which this engine cannot restore (here: its side data say a
    library's table slot is one the fresh runtime has taken; the sha256 line matches) fails again on
    every try: the page boots the usual way, says why in the console (a warning, not an error), says on
    the page that later visits stay slow, and makes no new snapshot of this version for 7 days; once
    that time has passed, it makes one."""
    context, page, errors = open_page(browser)
    warnings = []
    page.on("console", lambda m: m.type == "warning" and warnings.append(m.text))
    entries = first_visit_saves_a_snapshot(page, live_site)
    record, _ = snapshot_file(entries, "json")
    _, saved = split_record(page.evaluate(READ_TEXT, [offline.SNAPSHOT_FOLDER, record]))
    saved["meta"]["libs"][0]["tableBase"] = 1
    body = json.dumps(saved, separators=(",", ":"))
    page.evaluate(WRITE_TEXT, [offline.SNAPSHOT_FOLDER, record, hashlib.sha256(body.encode()).hexdigest() + "\n" + body])
    page.reload()
    wait_ready(page)
    assert page.evaluate("sdpaLab.boot") == "python"
    failure = page.evaluate("sdpaLab.snapshotFailure")
    assert failure and "table slot" in failure, (failure, page.evaluate("sdpaLab.snapshotDamaged"), warnings)
    assert page.evaluate("sdpaLab.snapshotDamaged") is None
    assert any("did not restore" in w for w in warnings), warnings
    before = page.evaluate(PLOT_STATE)
    handle = page.locator(HANDLE)
    handle.focus()
    handle.press("ArrowRight")
    page.wait_for_function(f"({PLOT_STATE})() !== {before!r}", timeout=30_000)
    page.wait_for_function("sdpaLab.snapshot && sdpaLab.snapshot.state !== 'making'", timeout=SNAPSHOT_MS)
    state = page.evaluate("sdpaLab.snapshot")
    assert state["state"] == "unavailable" and "did not restore" in state["why"], state
    note = page.evaluate("sdpaLab.notes.snapshot")        # said on the page once, in the reader's words
    assert note and "did not start here; no new one is made before" in note, note
    assert page.locator("#sdpa-notes").is_visible()
    assert page.evaluate(ENTRIES, offline.SNAPSHOT_FOLDER) == []      # the failed one is gone
    block = json.loads(page.evaluate("localStorage.getItem('sdpa-snapshot-failed')"))
    days = (block["until"] - page.evaluate("Date.now()")) / 86_400_000
    assert 6.9 < days <= 7, block
    # the time has passed: the next visit makes a snapshot again
    page.evaluate("(b) => localStorage.setItem('sdpa-snapshot-failed', JSON.stringify({...b, until: Date.now() - 1}))", block)
    page.reload()
    wait_ready(page)
    page.wait_for_function("sdpaLab.snapshot && sdpaLab.snapshot.state !== 'making'", timeout=SNAPSHOT_MS)
    assert page.evaluate("sdpaLab.snapshot.state") == "stored", page.evaluate("sdpaLab.snapshot")
    assert errors == [], errors
    context.close()


# The fallback store (templates/store.js "cache"): Cache Storage, one entry per file. [url, bytes] of each.
CACHE_ENTRIES = """async (name) => {
  if (!(await caches.has(name))) return [];
  const cache = await caches.open(name);
  const out = [];
  for (const request of await cache.keys()) out.push([request.url, (await (await cache.match(request)).arrayBuffer()).byteLength]);
  return out;
}"""
# 64 bytes in the middle of the kept heap flipped (as FLIP_HEAP), in Cache Storage.
FLIP_CACHED_HEAP = """async ([name, url]) => {
  const cache = await caches.open(name);
  const bytes = new Uint8Array(await (await cache.match(url)).arrayBuffer());
  const middle = bytes.length >> 1;
  for (let i = middle; i < middle + 64; i++) bytes[i] ^= 0xff;
  await cache.put(url, new Response(bytes));
}"""
# An engine without the origin's private file system (as WebKit, where Safari and every iPhone browser
# run): the page sees none, so neither does its worker (boot.js hands it the stores the page sees).
NO_OPFS = "delete StorageManager.prototype.getDirectory;"


def test_without_a_private_file_system_the_snapshot_is_kept_in_cache_storage(live_site, browser):
    """Where the origin's private file system is missing, the snapshot goes to Cache Storage (its heap and
    its .json, in a cache of its own) and the next visit restores it from there. Its heap changed there
    is found by its sha256 while Pyodide starts: dropped, the page boots the usual way, a fresh one is
    kept and restored at the visit after. "Reload from the network" does not use it."""
    context, page, errors = open_page(browser)
    context.add_init_script(NO_OPFS)
    page.goto(live_site)
    wait_ready(page)
    assert page.evaluate("[sdpaLab.boot, typeof navigator.storage.getDirectory]") == ["python", "undefined"]
    timings = {"python": [boot_seconds(page)], "snapshot": []}

    def kept() -> dict:
        page.wait_for_function("sdpaLab.snapshot && sdpaLab.snapshot.state !== 'making'", timeout=SNAPSHOT_MS)
        state = page.evaluate("sdpaLab.snapshot")
        assert state["state"] == "stored" and state["store"] == "cache", state
        entries = dict(page.evaluate(CACHE_ENTRIES, offline.SNAPSHOT_FOLDER))
        assert sorted(url.rsplit(".", 1)[1] for url in entries) == ["heap", "json"], entries
        heap = next(url for url in entries if url.endswith(".heap"))
        assert entries[heap] == state["bytes"] and f"/{offline.SNAPSHOT_FOLDER}/" in heap, entries
        return heap

    def restored():
        page.reload()
        wait_ready(page)
        timings["snapshot"].append(boot_seconds(page))
        how = page.evaluate("[sdpaLab.boot, sdpaLab.snapshotStore, sdpaLab.snapshotDamaged, sdpaLab.snapshotFailure, "
                            "sdpaLab.snapshotUnreadable]")
        assert how == ["snapshot", "cache", None, None, None], how
        assert not {"packages", "import", "app"} & set(page.evaluate("Object.keys(sdpaLab.steps)"))
        before = page.evaluate(PLOT_STATE)
        handle = page.locator(HANDLE)
        handle.focus()
        handle.press("ArrowRight")
        page.wait_for_function(f"({PLOT_STATE})() !== {before!r}", timeout=30_000)

    heap = kept()
    restored()
    page.evaluate(FLIP_CACHED_HEAP, [offline.SNAPSHOT_FOLDER, heap])
    page.reload()
    wait_ready(page)
    timings["python"].append(boot_seconds(page))
    how = page.evaluate("({boot: sdpaLab.boot, failure: sdpaLab.snapshotFailure})")
    assert how["boot"] == "python" and how["failure"] and "sha256" in how["failure"], how
    kept()                                                  # made anew, not blocked
    assert page.evaluate("localStorage.getItem('sdpa-snapshot-failed')") is None
    restored()
    page.evaluate("sessionStorage.setItem('sdpa-fresh', '1')")      # what "Reload from the network" sets
    page.reload()
    wait_ready(page)
    how = page.evaluate("[sdpaLab.boot, sdpaLab.snapshotDamaged, sdpaLab.snapshotFailure]")
    assert how == ["python", None, None], how
    print(f"\ninteractive after (s), snapshot in Cache Storage: usual boot {timings['python']}, "
          f"from the snapshot {timings['snapshot']}")
    assert errors == [], errors
    context.close()


def test_a_restored_python_writes_the_same_document(live_site, site, tmp_path):
    """In Node, on the built site's own files (tests/build/snapshot_node.mjs): a normal boot and a boot
    restored from a snapshot write the same document (same models, same JSON once uuids and Python
    object addresses are blanked) and answer the same slider change with the same patch; a snapshot
    that does not fit the runtime fails before any Python runs, and a normal boot follows."""
    script = Path(__file__).with_name("snapshot_node.mjs")
    done = subprocess.run([node(), str(script), str(site.root)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "SNAP_WORK": str(tmp_path), "SNAP_PYTHON": sys.executable})
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.stdout.strip().splitlines()[-1].startswith("OK"), done.stdout[-3000:]
