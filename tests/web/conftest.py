"""The page under `panel serve` on a free port (see panel_server.py), and the same page as the built
Pyodide site (`runtime`), for the browser tests."""
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from panel_server import free_port, start_panel_serve
from sitebuild import NO_DIST, pyodide_dist

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"  # not test-results/: pytest-playwright empties it at every session start


@pytest.fixture(scope="session")
def app_url():
    port = free_port()
    proc = start_panel_serve(port)
    yield f"http://127.0.0.1:{port}/app"
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


class Shots:
    """Screenshots for a person to look at, under artifacts/screenshots/: taken when SDPA_SCREENSHOTS=1
    (`make screenshots`), and not otherwise, since they cost about a sixth of the browser tests' time. The
    checks around them run either way."""

    def __init__(self, folder: Path, on: bool):
        self.folder, self.on = folder, on

    def take(self, page, name: str, *, full_page: bool = False):
        if self.on:
            path = self.folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(path), full_page=full_page)


@pytest.fixture(scope="session")
def shots():
    return Shots(SCREENSHOTS, os.environ.get("SDPA_SCREENSHOTS", "") not in ("", "0"))


@dataclass
class Runtime:
    """Where the page runs: its URL and how to wait until Python has drawn the state of the link."""
    name: str
    url: str

    def open(self, page, search: str = ""):
        page.goto(self.url + search)
        self.wait_live(page)

    def reload(self, page):
        """The browser's reload of the address shown, waited for as :meth:`open` waits."""
        page.reload()
        self.wait_live(page)

    def wait_live(self, page):
        if self.name == "site":   # the pre-rendered page shows first; the worker then takes over
            page.wait_for_function("window.sdpaLab && (window.sdpaLab.ready || window.sdpaLab.error)",
                                   timeout=120_000)
            assert page.evaluate("window.sdpaLab.error") is None
        page.wait_for_function("() => window.Bokeh && Bokeh.documents.length > 0 && "
                               "Bokeh.documents[Bokeh.documents.length - 1].all_models.size > 50")


@pytest.fixture
def context(context):
    """pytest-playwright's context, with the site's warm-boot snapshot not made after each live boot (a second
    Python in the background, 3-5 s of CPU per boot, for a test of the page, not of the warm boot: those are in
    tests/build/test_site_snapshot.py and test_site_browser.py, with contexts of their own)."""
    context.add_init_script("window.sdpaLabLimits = Object.assign({snapshots: false}, window.sdpaLabLimits || {});")
    return context


@pytest.fixture(scope="session", params=["panel serve", "site"])
def runtime(request):
    """The page under `panel serve`, then the built Pyodide site (skipped, saying why, without a distribution)."""
    if request.param == "panel serve":
        return Runtime("serve", request.getfixturevalue("app_url"))
    if pyodide_dist() is None:
        pytest.skip(f"the built-site runtime {NO_DIST}")
    return Runtime("site", request.getfixturevalue("served"))


@pytest.fixture(scope="session")
def torch():
    """PyTorch, the independent reference; a test that takes this fixture is skipped (saying why) without
    it, and only that test: the others in its module still run."""
    return pytest.importorskip("torch", reason="torch (test extra: pip install torch==2.13.0) is the reference "
                               "this test compares against")
