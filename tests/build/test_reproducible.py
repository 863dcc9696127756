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


def start_build(src: Path, out: Path, cache: Path, log: Path) -> subprocess.Popen:
    """A build in the background, its output to ``log`` (a pipe nobody reads yet could fill and stall it)."""
    with log.open("w") as sink:
        return subprocess.Popen([sys.executable, "-m", "build.make_site", "--out", str(out)], cwd=src,
                                stdout=sink, stderr=subprocess.STDOUT, env={**os.environ, "SDPA_LAB_CACHE": str(cache)})


def test_two_builds_are_byte_identical(tmp_path):
    """The same sources built twice, at once (the second compiling all bytecode afresh), give the same files,
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
        # what was downloaded before (Pyodide, pinned wheels) is copied in, so that the two builds, which run
        # at once, never download into one folder; the second build compiles its bytecode anew
        for sub in ("wheels", "pyodide"):
            if (shared / sub).is_dir():
                shutil.copytree(shared / sub, cache / sub)
        if label == "a" and (shared / "bytecode").is_dir():
            os.symlink(shared / "bytecode", cache / "bytecode")
        caches.append(cache)
    builds = [start_build(src, tmp_path / label, cache, tmp_path / f"{label}.log") for label, cache in zip("ab", caches)]
    for label, proc in zip("ab", builds):
        assert proc.wait() == 0, f"build {label}:\n{(tmp_path / f'{label}.log').read_text()[-3000:]}"
    a, b = tree(tmp_path / "a"), tree(tmp_path / "b")
    assert sorted(a) == sorted(b), f"file lists differ: {sorted(set(a) ^ set(b))}"
    differ = sorted(p for p in a if a[p] != b[p])
    assert differ == [], f"files differ between two builds of the same sources: {differ}"
