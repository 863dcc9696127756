"""Shared test set-up: browser tests run in Debian's Chromium through pytest-playwright; the built
site (`site`, `served`) is built once per run, shared by the workers, for tests/build and the two-runtime
UI tests."""
import inspect
import re
import os
import shutil

import pytest
from tools import serve
from filelock import FileLock
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
    """The site as `make site` builds it here (self-hosted when PYODIDE_DIST is set), built once per run:
    under pytest-xdist the first worker that needs it builds it into the run's shared temporary folder
    and the others wait for it and read the same files (no test writes into it)."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):      # a worker of pytest-xdist (also run without it: -p no:xdist)
        shared = shared.parent
    out, log = shared / "site" / "_site", shared / "site" / "build.log"
    with FileLock(str(shared / "site.lock")):
        if not log.is_file():       # written last: a build that failed is tried again, and fails the same way
            out.parent.mkdir(exist_ok=True)
            done = make_site(out)
            log.write_text(done.stdout + done.stderr)
    return Site(out, log.read_text())


@pytest.fixture(scope="session")
def served(site):
    """The built site on http://127.0.0.1:<free port>/."""
    server, url = serve.start(site.root)
    yield url
    server.shutdown()


#: `request.getfixturevalue("site")` (or "served"): a test or one of its module's fixtures that fetches the site
#: only once it knows it needs it
_FETCHES_THE_SITE = re.compile(r"""getfixturevalue\(\s*["'](site|served)["']""")


def _fetches_the_site(func) -> bool:
    try:
        return bool(_FETCHES_THE_SITE.search(inspect.getsource(func)))
    except (OSError, TypeError):
        return False


def _needs_the_site(item) -> bool:
    """A test that opens the built site: it asks for `site` or `served`, runs on the site's runtime, or it (or a
    fixture of its own module) fetches `site` or `served` through request.getfixturevalue. Shared fixtures that
    fetch it for one parameter only (web/conftest.py `runtime`) are read through that parameter instead."""
    callspec = getattr(item, "callspec", None)
    if {"site", "served"} & set(item.fixturenames) or (callspec is not None and callspec.params.get("runtime") == "site"):
        return True
    module = getattr(getattr(item, "module", None), "__name__", None)
    own = [d.func for defs in getattr(item, "_fixtureinfo").name2fixturedefs.values() for d in defs
           if getattr(d.func, "__module__", None) == module]
    return any(_fetches_the_site(f) for f in [getattr(item, "function", None), *own] if f is not None)


# first: pytest-xdist reads the groups in its own pytest_collection_modifyitems, which would otherwise run before this
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`make test` runs two workers with --dist loadgroup), the browser tests (marker
    `ui`) run one at a time per group, as they would alone: those under `panel serve` in the group
    "browser", those of the built site in "browser-site". xdist hands out the largest groups first, so
    each worker starts with one of the two (the site's first test builds the site, `site`) and both then
    share the other tests. Two browsers overlap only while both groups run; their waits have limits sized
    for that, and for the other worker's computations (the oracles, the core's properties, the builds)."""
    if not getattr(config.option, "loadgroup", False):    # not under xdist's --dist loadgroup
        return
    for item in items:
        if item.get_closest_marker("ui") is not None:
            item.add_marker(pytest.mark.xdist_group("browser-site" if _needs_the_site(item) else "browser"))
