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

# What the build reads from the repository (the wheel's metadata includes sdpa_core/README.md).
INPUTS = ("build", "web", "sdpa_core", "pyproject.toml", "README.md", "LICENSE")


def tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def build(src: Path, out: Path, cache: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "build.make_site", "--out", str(out)], cwd=src,
                          capture_output=True, text=True, env={**os.environ, "SDPA_LAB_CACHE": str(cache)})
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


def test_two_builds_are_byte_identical(tmp_path):
    """The same sources built twice (the second time compiling all bytecode afresh) give the same files,
    byte for byte: pre-render ids, wheels, bytecode, lock, hashes in the worker, boot script and service
    worker."""
    # A snapshot of the sources: the working tree may change while the two builds run.
    src = tmp_path / "src"
    for name in INPUTS:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif path.is_file():
            src.mkdir(exist_ok=True)
            shutil.copy2(path, src / name)
    shared = pyodide_files.cache_root()
    caches = []
    for label in ("a", "b"):
        cache = tmp_path / f"cache-{label}"
        cache.mkdir()
        # downloads (Pyodide, pinned wheels) are shared; the second build compiles its bytecode anew
        for sub in ("wheels", "pyodide") + (("bytecode",) if label == "a" else ()):
            if (shared / sub).is_dir():
                os.symlink(shared / sub, cache / sub)
        caches.append(cache)
    build(src, tmp_path / "a", caches[0])
    build(src, tmp_path / "b", caches[1])
    a, b = tree(tmp_path / "a"), tree(tmp_path / "b")
    assert sorted(a) == sorted(b), f"file lists differ: {sorted(set(a) ^ set(b))}"
    differ = sorted(p for p in a if a[p] != b[p])
    assert differ == [], f"files differ between two builds of the same sources: {differ}"
