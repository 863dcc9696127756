"""Shared test set-up: browser tests run in Debian's Chromium through pytest-playwright; the built
site (`site`, `served`) is built once per session for tests/build and the two-runtime UI tests."""
import shutil

import pytest
from build import serve
from sitebuild import Site, make_site

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    if not shutil.which("chromium"):
        pytest.skip("Debian's chromium is not installed (make test installs it: apt-get install chromium)")
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Site:
    """The site as `make site` builds it here: self-hosted when PYODIDE_DIST is set."""
    out = tmp_path_factory.mktemp("site") / "_site"
    done = make_site(out)
    return Site(out, done.stdout + done.stderr)


@pytest.fixture(scope="session")
def served(site):
    """The built site on http://127.0.0.1:<free port>/."""
    server, url = serve.start(site.root)
    yield url
    server.shutdown()


# first: pytest-xdist reads the groups in its own pytest_collection_modifyitems, which would otherwise run before this
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`make test` runs two workers with --dist loadgroup), the browser tests (marker
    `ui`) all run on one worker, one at a time, as they would alone: a Pyodide boot or a page under
    `panel serve` never competes with another browser, only with the other worker's computations (the
    oracles, the core's properties, the builds). Their waits have limits sized for that."""
    if not getattr(config.option, "loadgroup", False):    # not under xdist's --dist loadgroup
        return
    for item in items:
        if item.get_closest_marker("ui") is not None:
            item.add_marker(pytest.mark.xdist_group("browser"))
