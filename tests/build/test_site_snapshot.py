"""The warm boot from a memory snapshot, in Chromium: after a first visit a second worker saves a
snapshot of Python with the app built; the next visit restores it instead of starting Python, and
the page works from it (the address's state applied, sliders live). A snapshot that does not
restore is dropped and the page boots the usual way, with no error shown. Timings are printed by
build/measure_site.py, never asserted here."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from playwright.sync_api import expect

from node_tools import node
from sitebuild import NO_DIST, build_module, pyodide_dist
from web.options import D_K_OPTIONS

pytestmark = pytest.mark.ui

offline = build_module("offline")

BOOT_MS = 120_000
SNAPSHOT_MS = 240_000
HANDLE = '#main .noUi-handle[aria-label="d_k (key/query dimension)"]'
# Every ColumnDataSource's data in one string: changes when any plot's data does.
PLOT_STATE = """() => {
  const parts = [];
  for (const m of Bokeh.documents[Bokeh.documents.length - 1].all_models) {
    if (m.constructor.__name__ !== "ColumnDataSource") continue;
    for (const [k, v] of (m.data instanceof Map ? [...m.data] : Object.entries(m.data))) parts.push(k + ":" + Array.from(v).join(","));
  }
  return parts.sort().join("|");
}"""
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
    assert state["state"] == "stored", state
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
    how = page.evaluate("[sdpaLab.boot, sdpaLab.snapshotFailure, sdpaLab.snapshotUnreadable]")
    assert how == ["snapshot", None, None], how
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


def test_a_snapshot_that_does_not_restore_is_dropped_and_the_page_boots(live_site, browser):
    """A damaged snapshot (its heap overwritten with as many zeros, as a disk error would leave it)
    fails to restore: the worker drops it, the page starts Python afresh and works, says why in the
    console (a warning, not an error), and makes no new snapshot of this version in this browser (a
    restore that fails once would fail again: each visit would pay for a restore and a boot)."""
    context, page, errors = open_page(browser)
    warnings = []
    page.on("console", lambda m: m.type == "warning" and warnings.append(m.text))
    entries = first_visit_saves_a_snapshot(page, live_site)
    heap, size = next((name, n) for name, n in entries if name.endswith(".heap"))
    page.evaluate("""async ([folder, path, size]) => {
      let dir = await (await navigator.storage.getDirectory()).getDirectoryHandle(folder);
      const parts = path.split("/");
      for (const part of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(part);
      const writable = await (await dir.getFileHandle(parts[parts.length - 1])).createWritable();
      await writable.write(new Uint8Array(size));
      await writable.close();
    }""", [offline.SNAPSHOT_FOLDER, heap, size])
    assert dict(page.evaluate(ENTRIES, offline.SNAPSHOT_FOLDER))[heap] == size
    page.reload()
    wait_ready(page)
    assert page.evaluate("sdpaLab.boot") == "python"
    failure = page.evaluate("sdpaLab.snapshotFailure")
    assert failure and "sha256" in failure, (failure, page.evaluate("sdpaLab.snapshotUnreadable"), warnings)
    assert any("did not restore" in w for w in warnings), warnings
    before = page.evaluate(PLOT_STATE)
    handle = page.locator(HANDLE)
    handle.focus()
    handle.press("ArrowRight")
    page.wait_for_function(f"({PLOT_STATE})() !== {before!r}", timeout=30_000)
    page.wait_for_function("sdpaLab.snapshot && sdpaLab.snapshot.state !== 'making'", timeout=SNAPSHOT_MS)
    state = page.evaluate("sdpaLab.snapshot")
    assert state["state"] == "unavailable" and "did not restore" in state["why"], state
    assert page.evaluate(ENTRIES, offline.SNAPSHOT_FOLDER) == []      # the damaged one is gone
    assert errors == [], errors
    context.close()


def test_a_restored_python_writes_the_same_document(live_site, site, tmp_path):
    """In Node, on the built site's own files (tests/build/snapshot_node.mjs): a normal boot and a boot
    restored from a snapshot write the same document (same models, same JSON once uuids and Python
    object addresses are blanked) and answer the same slider change with the same patch; a snapshot
    that does not fit the runtime fails before any Python runs, and a normal boot follows."""
    script = Path(__file__).with_name("snapshot_node.mjs")
    done = subprocess.run([node(), str(script), str(site.root)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "SNAP_WORK": str(tmp_path)})
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.stdout.strip().splitlines()[-1].startswith("OK"), done.stdout[-3000:]
