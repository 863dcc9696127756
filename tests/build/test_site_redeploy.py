"""A redeploy while a tab is open: the open tab keeps working on its version and is told of the new one;
its reload gets the new version whole (every file of one version: boot.js checks worker.js's sha256,
index.html boot.js's, so a mix fails the boot, and the old version's snapshot is not used).
The reload hands over only when the page asks the waiting version once it has stopped requesting
files: Chromium stops the old worker for the new one, and a request reaching it meanwhile starts it
again, after which the new version waits for 30 s of idleness (up to 5 min with DevTools attached)."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from build import offline, runtime
from tools import serve
from sitebuild import still_usable, require_pyodide_dist

pytestmark = pytest.mark.ui

BOOT_MS = 120_000
SETTLED_MS = 240_000
VERSION = "document.querySelector('meta[name=sdpa-test-version]')?.content || 'A'"


def replace_file(path: Path, data: bytes) -> None:
    """A new file in place (the served copy hard-links the built site's files: never write through)."""
    path.unlink()
    path.write_bytes(data)


def integrity(data: bytes) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(data).digest()).decode()


def redeploy(root: Path, version: str) -> None:
    """Version `version` of the site: worker.js changed, so boot.js (which holds its sha256), index.html
    (which holds boot.js's and now names the version) and sw.js (which lists every file's) change too."""
    worker = (root / "worker.js").read_bytes() + f"\n// version {version}\n".encode()
    boot = (root / "boot.js").read_bytes()
    info = runtime.embedded(boot.decode(), "WORKER")
    info.update(sha256=hashlib.sha256(worker).hexdigest(), size=len(worker))
    new_boot = re.sub(r"/\*WORKER\*/.*?/\*END\*/", lambda _: f"/*WORKER*/{json.dumps(info, indent=1, sort_keys=True)}/*END*/",
                      boot.decode(), count=1, flags=re.S).encode()
    html = (root / "index.html").read_text()
    assert html.count(integrity(boot)) == 1
    html = html.replace(integrity(boot), integrity(new_boot)).replace(
        "</head>", f'<meta name="sdpa-test-version" content="{version}">\n</head>', 1)
    replace_file(root / "worker.js", worker)
    replace_file(root / "boot.js", new_boot)
    replace_file(root / "index.html", html.encode())
    replace_file(root / offline.SW_FILE, runtime.service_worker(offline.policy(root)).encode())


@pytest.fixture
def deployable(site, tmp_path):
    """A copy of the built site (hard links) served on its own port, which the test redeploys."""
    require_pyodide_dist()
    root = tmp_path / "site"
    shutil.copytree(site.root, root, copy_function=os.link)
    server, url = serve.start(root)
    yield root, url
    server.shutdown()


def ready(page):
    page.wait_for_function("window.sdpaLab && (window.sdpaLab.ready || window.sdpaLab.error)", timeout=BOOT_MS)
    assert page.evaluate("window.sdpaLab.error") is None, page.evaluate("window.sdpaLab.error")


def tab(context, errors: list):
    """A new tab whose page errors and console errors go into ``errors``."""
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.on("console", lambda m: m.type == "error" and errors.append(f"console.error: {m.text}"))
    return page


def first_visit(page, url: str) -> None:
    """Boot ``url`` and wait until its offline copy and its snapshot are settled."""
    page.goto(url)
    ready(page)
    page.wait_for_function("sdpaLab.offlineReady", timeout=SETTLED_MS)
    page.wait_for_function("sdpaLab.snapshot && sdpaLab.snapshot.state !== 'making'", timeout=SETTLED_MS)


def test_a_redeploy_with_an_open_tab(deployable, browser):
    root, url = deployable
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    errors = []
    try:
        page = tab(context, errors)
        first_visit(page, url)
        assert page.evaluate("sdpaLab.snapshot.state") == "stored"
        page.reload()               # now served by version A's service worker, restored from A's snapshot
        ready(page)
        assert page.evaluate("[navigator.serviceWorker.controller !== null, sdpaLab.boot]") == [True, "snapshot"]

        redeploy(root, "B")
        still_usable(page)          # the open tab goes on with the version it has
        page.evaluate("navigator.serviceWorker.getRegistration().then((r) => r.update())")
        page.wait_for_selector("#sdpa-update", timeout=SETTLED_MS)     # B installed, waiting: said
        still_usable(page)
        assert page.evaluate(VERSION) == "A"

        page.reload()               # the only tab of A: B is asked to take over, and the page reloads into it
        ready(page)
        assert page.evaluate(VERSION) == "B", page.evaluate("sdpaLab.takeOver")
        assert page.evaluate("sdpaLab.error") is None, page.evaluate("sdpaLab.error")
        assert page.evaluate("sdpaLab.boot") == "python"      # A's snapshot is not B's
        still_usable(page)
        assert page.evaluate("navigator.serviceWorker.controller.state") == "activated"
        page.wait_for_function("sdpaLab.offlineReady", timeout=SETTLED_MS)      # B's files, all kept
        assert page.locator("#sdpa-update").count() == 0
        assert errors == [], errors
    finally:
        context.close()


def test_an_update_reaches_the_last_tab_on_its_first_reload_after_the_others_closed(deployable, browser):
    """Two tabs of version A; B is deployed. A reload while the other tab is open stays on A (that tab uses
    A's files), and says why; once the other tab is closed, the next reload is B's (docs/site.md)."""
    root, url = deployable
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    errors = []
    try:
        first, second = tab(context, errors), tab(context, errors)
        first_visit(first, url)
        second.goto(url)
        ready(second)
        assert second.evaluate("navigator.serviceWorker.controller !== null")

        redeploy(root, "B")
        first.evaluate("navigator.serviceWorker.getRegistration().then((r) => r.update())")
        for page in (first, second):
            page.wait_for_selector("#sdpa-update", timeout=SETTLED_MS)     # B installed, waiting: said in both

        first.reload()              # the other tab still uses A: A goes on, and says why
        ready(first)
        assert first.evaluate(VERSION) == "A"
        assert first.evaluate("sdpaLab.takeOver") == "other pages open"
        first.wait_for_selector("#sdpa-update", timeout=SETTLED_MS)

        second.close()
        first.reload()              # now the only tab of A: B takes over on this reload
        ready(first)
        assert first.evaluate(VERSION) == "B", first.evaluate("sdpaLab.takeOver")
        still_usable(first)
        assert errors == [], errors
    finally:
        context.close()
