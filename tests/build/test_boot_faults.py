"""A boot that never hangs: a damaged, missing or stalled file makes the page say which one, with Retry,
within seconds (each file is checked against the sha256 the build recorded before Pyodide gets it)."""
from __future__ import annotations

import time

import pytest

from build import render
from sitebuild import NO_DIST, pyodide_dist, require_pyodide_dist

pytestmark = pytest.mark.ui

LIMIT_MS = 20_000       # the bound: a clear message within 20 s


def truncate(data: bytes) -> bytes:
    return data[: len(data) // 2]


def flip(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0x01]) + data[middle + 1:]


@pytest.fixture
def faulty(request, browser):
    """Open the served site with one file replaced (a changed body, or None for 404); yields the page."""
    if pyodide_dist() is None:
        pytest.skip(NO_DIST)
    site, served = request.getfixturevalue("site"), request.getfixturevalue("served")
    contexts = []

    def open_with(path: str, change, init_script: str | None = None):
        context = browser.new_context(service_workers="block")
        contexts.append(context)
        if init_script:
            context.add_init_script(init_script)
        target = served + path
        served_once = []

        def route(r):
            url = r.request.url.split("?")[0]
            if not url.startswith(served):
                r.abort()
            elif url != target:
                r.continue_()
            elif change == "once" and served_once:
                r.continue_()   # damaged the first time only: a retry gets the real file
            elif change == "once":
                served_once.append(url)
                r.fulfill(status=200, body=truncate((site.root / path).read_bytes()))
            elif change == "hang":
                pass            # never answered: a stalled download
            elif change is None:
                r.fulfill(status=404, body="Not found")
            else:
                r.fulfill(status=200, body=change((site.root / path).read_bytes()),
                          headers={"Content-Type": "application/octet-stream" if not path.endswith(".js")
                                   else "text/javascript"})

        context.route("**/*", route)
        page = context.new_page()
        started = time.monotonic()
        page.goto(served)
        return page, started

    yield open_with
    for context in contexts:
        context.close()


def packages(site) -> str:
    return site.config["archive"]["path"]


CASES = {
    "wasm truncated": (lambda s: "pyodide/pyodide.asm.wasm", truncate),
    "wasm bit-flipped": (lambda s: "pyodide/pyodide.asm.wasm", flip),
    "pyodide.js truncated": (lambda s: "pyodide/pyodide.js", truncate),
    "stdlib truncated": (lambda s: "pyodide/python_stdlib.zip.gz", truncate),
    "worker.js truncated": (lambda s: "worker.js", truncate),
    "worker.js missing": (lambda s: "worker.js", None),
    "package archive corrupt": (packages, flip),
    "package archive missing": (packages, None),
    "bokeh.min.js truncated": (lambda s: render.BOKEH_DIR + "bokeh.min.js", truncate),
}


@pytest.mark.parametrize("case", CASES)
def test_damaged_file_is_named_within_seconds(faulty, site, case):
    """Each fault ends the boot with a message naming the file, Retry and (online) a reload from the network."""
    path_of, change = CASES[case]
    path = path_of(site)
    page, started = faulty(path, change)
    page.wait_for_function("window.sdpaLab && (window.sdpaLab.error || window.sdpaLab.ready)", timeout=LIMIT_MS)
    seconds = time.monotonic() - started
    error = page.evaluate("window.sdpaLab.error")
    print(f"\n{case}: {seconds:.1f} s to: {error}")
    assert error is not None and path in error, error
    assert page.evaluate("window.sdpaLab.errorFile") == path
    panel = page.locator("#sdpa-boot")
    assert path in panel.inner_text()
    assert page.get_by_role("button", name="Retry").is_visible()
    assert page.get_by_role("button", name="Reload from the network").is_visible()


def test_missing_boot_script_is_named(faulty):
    """Without boot.js, the page's inline fallback says so and offers Retry."""
    page, _ = faulty("boot.js", None)
    page.wait_for_selector("#sdpa-boot.sdpa-error", timeout=LIMIT_MS)
    assert "boot.js" in page.locator("#sdpa-boot").inner_text()
    assert page.get_by_role("button", name="Retry").is_visible()


def test_stalled_download_is_named(faulty):
    """A file that never arrives is named once no byte has come for the download limit (shortened here)."""
    page, started = faulty("pyodide/pyodide.asm.wasm", "hang", "window.sdpaLabLimits = {download: 3}")
    page.wait_for_function("window.sdpaLab && window.sdpaLab.stalled", timeout=LIMIT_MS)
    print(f"\nstalled wasm: {time.monotonic() - started:.1f} s to: {page.evaluate('window.sdpaLab.stalled')}")
    assert "pyodide/pyodide.asm.wasm" in page.evaluate("window.sdpaLab.stalled")
    assert page.evaluate("window.sdpaLab.error") is None          # a notice: the download may still finish
    assert page.get_by_role("button", name="Retry").is_visible()


def test_reload_from_the_network_recovers(faulty, site):
    """After a damaged download, "Reload from the network" boots the page."""
    path = packages(site)
    page, _ = faulty(path, "once")
    page.wait_for_function("window.sdpaLab && window.sdpaLab.error", timeout=LIMIT_MS)
    with page.expect_navigation(timeout=LIMIT_MS):
        page.get_by_role("button", name="Reload from the network").click()
    page.wait_for_function("window.sdpaLab && (window.sdpaLab.ready || window.sdpaLab.error)", timeout=120_000)
    assert page.evaluate("window.sdpaLab.error") is None


def test_slow_worker_script_is_waited_for(site, served, browser):
    """worker.js whose first byte comes after 40 s (the connection open meanwhile): the page says it is
    still waiting after about 20 s without a byte (the default limit, as for every download), never
    gives up, and boots once the file arrives; the notice goes."""
    require_pyodide_dist()
    context = browser.new_context(service_workers="block")
    held = []

    def route(r):
        if r.request.url.split("?")[0] == served + "worker.js" and not held:
            held.append((time.monotonic(), r))      # answered below, 40 s after it was asked for
        else:
            r.continue_()

    context.route("**/*", route)
    try:
        page = context.new_page()
        page.goto(served)
        page.wait_for_function("window.sdpaLab && window.sdpaLab.stalled", timeout=60_000)
        asked, held_route = held[0]
        notice = time.monotonic() - asked
        stalled = page.evaluate("window.sdpaLab.stalled")
        print(f"\nworker.js held: notice after {notice:.1f} s: {stalled}")
        assert "worker.js" in stalled, stalled
        assert page.get_by_role("button", name="Retry").is_visible()
        # the scenario's delay (not a wait for the page): the first byte comes 40 s after the request
        page.wait_for_timeout(max(0.0, 40 - (time.monotonic() - asked)) * 1000)
        assert page.evaluate("window.sdpaLab.error") is None      # still waiting, not given up
        held_route.continue_()
        page.wait_for_function("window.sdpaLab.ready || window.sdpaLab.error", timeout=120_000)
        assert page.evaluate("window.sdpaLab.error") is None, page.evaluate("window.sdpaLab.error")
        assert page.evaluate("window.sdpaLab.stalled") is None
        print(f"ready {time.monotonic() - asked:.1f} s after worker.js was asked for")
    finally:
        context.close()
