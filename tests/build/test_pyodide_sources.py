"""Where Pyodide's files come from: PYODIDE_DIST, else the CDN into a cache, else the CDN at run time."""
from __future__ import annotations

import gzip
import hashlib
import io
import os
import zipfile

import pytest

from build import plan, pyodide_files, pyodide_patch
from tools import serve
from sitebuild import Site, make_site, pyodide_dist

pytestmark = pytest.mark.slow


@pytest.fixture
def cache(tmp_path):
    """A fresh cache for Pyodide's files that shares the pinned-wheel and bytecode caches (no PyPI round
    trips, no recompiling)."""
    folder = tmp_path / "cache"
    folder.mkdir()
    for shared in ("wheels", "bytecode"):
        path = pyodide_files.cache_root() / shared
        if path.is_dir():
            os.symlink(path, folder / shared)
    return folder


def test_download_from_cdn_into_cache(tmp_path, cache):
    """Without PYODIDE_DIST the build downloads Pyodide from PYODIDE_CDN into its cache and self-hosts it;
    a second build works from the cache alone."""
    dist = pyodide_dist()
    if dist is None:
        pytest.skip("needs PYODIDE_DIST: its folder plays the CDN in this test")
    cdn, url = serve.start(dist)
    env = {"PYODIDE_DIST": "", "PYODIDE_CDN": url, "SDPA_LAB_CACHE": str(cache)}
    try:
        done = make_site(tmp_path / "a", env)
    finally:
        cdn.shutdown()
    site = Site(tmp_path / "a", done.stdout + done.stderr)
    assert "(download)" in site.log and site.self_hosted
    assert hashlib.sha256((site.root / "pyodide" / "pyodide.asm.wasm").read_bytes()).digest() == \
        hashlib.sha256((dist / "pyodide.asm.wasm").read_bytes()).digest()
    # the runtime's JS as downloaded, with the snapshot patches (pyodide_patch.py) and nothing else
    patched = pyodide_patch.patch_pyodide_asm((dist / "pyodide.asm.js").read_text(encoding="utf-8"))
    assert (site.root / "pyodide" / "pyodide.asm.js").read_text(encoding="utf-8") == patched
    # the stdlib: the same modules but those plan.STDLIB_DROP leaves out, some of them as bytecode
    stdlib = io.BytesIO(gzip.decompress((site.root / "pyodide" / "python_stdlib.zip.gz").read_bytes()))
    modules = [{n.removesuffix("c") for n in zipfile.ZipFile(z).namelist()} for z in (stdlib, dist / "python_stdlib.zip")]
    assert modules[0] <= modules[1]
    assert all(n.startswith(plan.STDLIB_DROP) for n in modules[1] - modules[0])
    assert "numpy" in site.config["archive"]["packages"]

    again = make_site(tmp_path / "b", env)          # the "CDN" is gone now
    assert "(download)" in again.stdout and "WARNING" not in again.stderr


def test_unreachable_cdn_falls_back_loudly(tmp_path, cache, site):
    """When neither a distribution nor the CDN is available, the site loads Pyodide from the CDN at run
    time and the build says so, naming both ways out. Where the run's own site is that build (no
    distribution, no network: a newcomer's first `make test` here), it is the one checked; elsewhere the
    test builds one with a CDN that cannot answer."""
    if not site.self_hosted:
        cdn, built, log = site.config["runtimeLock"].removesuffix("pyodide-lock.json"), site, site.log
    else:
        cdn = "http://127.0.0.1:9/pyodide/"   # discard port: nothing listens
        done = make_site(tmp_path / "s", {"PYODIDE_DIST": "", "PYODIDE_CDN": cdn, "SDPA_LAB_CACHE": str(cache)})
        built, log = Site(tmp_path / "s", done.stdout + done.stderr), done.stderr
    warning = [line for line in log.splitlines() if line.startswith("make site: WARNING")]
    assert len(warning) == 1 and "PYODIDE_DIST=" in warning[0] and "make dev" in warning[0]
    assert not built.self_hosted and built.config["pyodideJs"] == cdn + "pyodide.js"
    origin = "/".join(cdn.split("/")[:3])
    assert f"connect-src 'self' {origin}" in built.html
    assert not (built.root / "pyodide" / "pyodide.asm.wasm").exists()
