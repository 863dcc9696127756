"""What the page sets up once it is live (the offline copy, the service worker, the warm-boot snapshot)
can fail in a browser: then the page says so, in words a reader understands, and stays usable."""
from __future__ import annotations

import os
import shutil

import pytest

from build import offline
from tools import serve
from sitebuild import still_usable, require_pyodide_dist

pytestmark = pytest.mark.ui

BOOT_MS = 120_000
SETTLED_MS = 240_000


def boot(page, url):
    page.goto(url)
    page.wait_for_function("window.sdpaLab && (window.sdpaLab.ready || window.sdpaLab.error)", timeout=BOOT_MS)
    assert page.evaluate("window.sdpaLab.error") is None, page.evaluate("window.sdpaLab.error")


def test_a_storage_quota_too_small_is_said_on_the_page(site, served, browser):
    """Under a 2 MB quota neither the offline copy nor the snapshot fits: the page says both, naming a
    full storage, in its notes (not only in the console), and the sliders still work."""
    require_pyodide_dist()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        cdp = context.new_cdp_session(page)
        cdp.send("Storage.overrideQuotaForOrigin", {"origin": served.rstrip("/"), "quotaSize": 2_000_000})
        boot(page, served)
        page.wait_for_function("sdpaLab.notes && sdpaLab.notes.offline", timeout=SETTLED_MS)
        page.wait_for_function("sdpaLab.snapshot && sdpaLab.snapshot.state !== 'making'", timeout=SETTLED_MS)
        notes = page.evaluate("sdpaLab.notes")
        print(f"\nnotes: {notes}\nsnapshot: {page.evaluate('sdpaLab.snapshot')}")
        assert notes["offline"] == "This page will not work offline in this browser: storage is full.", notes
        assert page.evaluate("sdpaLab.snapshot.state") == "failed"
        assert "storage is full" in notes.get("snapshot", ""), notes
        box = page.locator("#sdpa-notes")
        assert box.is_visible()
        assert "will not work offline" in box.inner_text() and "start as slowly" in box.inner_text()
        still_usable(page)
        page.get_by_role("button", name="Dismiss these notes").click()
        assert page.locator("#sdpa-notes").count() == 0
    finally:
        context.close()


@pytest.fixture
def broken_sw_site(site, tmp_path):
    """A copy of the built site (hard links) whose sw.js has a syntax error, served on its own port."""
    require_pyodide_dist()
    root = tmp_path / "site"
    shutil.copytree(site.root, root, copy_function=os.link)
    text = (site.root / offline.SW_FILE).read_text()
    broken = text.replace('"use strict";', '"use strict"; (', 1)
    assert broken != text, "sw.js no longer starts with its strict directive: break it another way"
    (root / offline.SW_FILE).unlink()
    (root / offline.SW_FILE).write_text(broken)
    server, url = serve.start(root)
    yield url
    server.shutdown()


def test_a_broken_service_worker_is_said_on_the_page(broken_sw_site, browser):
    """A sw.js that does not run (a syntax error): the page says it will not work offline and names the
    file; the page works."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        boot(page, broken_sw_site)
        page.wait_for_function("sdpaLab.notes && sdpaLab.notes.offline", timeout=SETTLED_MS)
        text = page.evaluate("sdpaLab.notes.offline")
        print(f"\nnote: {text}")
        assert text == "This page will not work offline in this browser: the file that makes it work offline (sw.js) is missing or damaged.", text
        assert page.locator("#sdpa-notes").is_visible()
        still_usable(page)
    finally:
        context.close()


def test_an_engine_without_service_workers_or_private_files_is_said_on_the_page(site, served, browser):
    """A browser that offers neither service workers nor the origin's private file system nor Cache Storage
    (as some private windows do; here all are removed before the page runs): the page says it will not work
    offline and that later visits will not start faster, and works."""
    require_pyodide_dist()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script("delete Navigator.prototype.serviceWorker; delete StorageManager.prototype.getDirectory; "
                            "delete window.caches;")
    try:
        page = context.new_page()
        boot(page, served)
        page.wait_for_function("sdpaLab.notes && sdpaLab.notes.offline && sdpaLab.notes.snapshot", timeout=SETTLED_MS)
        notes = page.evaluate("sdpaLab.notes")
        print(f"\nnotes: {notes}")
        assert notes["offline"] == ("This page will not work offline in this browser: service workers are not "
                                    "available (private windows often lack them)."), notes
        assert notes["snapshot"] == ("Later visits will start as slowly as this one: this browser cannot keep a ready "
                                     "copy of the app (it offers no private file storage for pages)."), notes
        assert page.evaluate("[sdpaLab.snapshot.state, typeof window.caches]") == ["unavailable", "undefined"]
        still_usable(page)
    finally:
        context.close()
