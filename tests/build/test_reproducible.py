"""Two builds of one commit are byte-identical, so a redeploy without changes is no "new version" for the
service worker (which compares sha256s) and users download nothing again."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from build import pyodide_files
from sitebuild import ROOT

pytestmark = pytest.mark.slow


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_second_build_is_byte_identical(site, tmp_path):
    """The run's site and a second build of the same sources, which compiles all its bytecode afresh, give the
    same files, byte for byte: pre-render ids, wheels, bytecode, lock, hashes in the worker, boot script and
    service worker. (Sources edited while the tests run would differ here: this compares a run's two builds.)"""
    shared = pyodide_files.cache_root()
    cache = tmp_path / "cache"
    cache.mkdir()
    # what was downloaded before (Pyodide, pinned wheels) is copied in, so that this build never downloads
    # into the shared folder; its bytecode folder starts empty
    for sub in ("wheels", "pyodide"):
        if (shared / sub).is_dir():
            shutil.copytree(shared / sub, cache / sub)
    again = tmp_path / "again"
    done = subprocess.run([sys.executable, "-m", "build.make_site", "--out", str(again)], cwd=ROOT,
                          capture_output=True, text=True, env={**os.environ, "SDPA_LAB_CACHE": str(cache)})
    assert done.returncode == 0, f"second build:\n{(done.stdout + done.stderr)[-3000:]}"
    log = done.stdout + done.stderr
    assert "no CPython 3.13 found" in log or "(0 from the cache" in log, log[-2000:]
    a, b = tree(site.root), tree(again)
    assert sorted(a) == sorted(b), f"file lists differ: {sorted(set(a) ^ set(b))}"
    differ = sorted(p for p in a if a[p] != b[p])
    assert differ == [], f"files differ between two builds of the same sources: {differ}"
