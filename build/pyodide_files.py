"""Pyodide's own files for the site: from PYODIDE_DIST, else the CDN into a cache, else the CDN at run time.

A "distribution" is any folder laid out like an official Pyodide release: the
runtime files, a `pyodide-lock.json`, and (some of) the wheels the lock names.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import urllib.request
from dataclasses import dataclass
from pathlib import Path

VERSION = "0.29.3"
DEFAULT_CDN = f"https://cdn.jsdelivr.net/pyodide/v{VERSION}/full/"
RUNTIME = ("pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip")
TIMEOUT = 30


def cache_root() -> Path:
    base = os.environ.get("SDPA_LAB_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "sdpa-lab")
    return Path(base)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class PyodideFiles:
    """Where Pyodide comes from. `folder` is None when only the run-time CDN is left."""
    kind: str                 # "dist" | "download" | "cdn"
    folder: Path | None
    cdn: str
    lock: dict | None
    problem: str = ""         # why we fell back, for the warning

    @property
    def self_hosted(self) -> bool:
        return self.folder is not None

    def wheel(self, name: str) -> Path | None:
        """The wheel of a package in Pyodide's lock, fetched into the folder if needed; None if unavailable."""
        if self.folder is None or self.lock is None or name not in self.lock["packages"]:
            return None
        entry = self.lock["packages"][name]
        path = self.folder / entry["file_name"]
        if not path.exists() and self.kind == "download":
            try:
                _download(self.cdn + entry["file_name"], path)
            except OSError:
                return None
        if not path.exists():
            return None
        if entry.get("sha256") and sha256(path) != entry["sha256"]:
            raise SystemExit(f"make site: {path} does not match the sha256 in its pyodide-lock.json")
        return path

    def copy_runtime(self, dest: Path) -> None:
        if self.folder is None:
            raise ValueError("no Pyodide files to copy: the site loads Pyodide from its CDN")
        dest.mkdir(parents=True, exist_ok=True)
        for f in RUNTIME:
            shutil.copy2(self.folder / f, dest / f)


def _download(url: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".part")
    with urllib.request.urlopen(url, timeout=TIMEOUT) as resp, open(tmp, "wb") as out:
        shutil.copyfileobj(resp, out)
    tmp.replace(path)


def _check_dist(folder: Path) -> str:
    missing = [f for f in (*RUNTIME, "pyodide-lock.json") if not (folder / f).is_file()]
    return f"{folder} lacks {', '.join(missing)}" if missing else ""


def download_folder(cdn: str) -> Path:
    return cache_root() / "pyodide" / f"{VERSION}-{hashlib.sha1(cdn.encode()).hexdigest()[:12]}"


def locate() -> PyodideFiles:
    cdn = os.environ.get("PYODIDE_CDN", DEFAULT_CDN).rstrip("/") + "/"
    dist = os.environ.get("PYODIDE_DIST")
    if dist:
        folder = Path(dist).expanduser().resolve()
        problem = _check_dist(folder)
        if problem:
            raise SystemExit(f"make site: PYODIDE_DIST={dist} is not a Pyodide distribution: {problem}")
        return PyodideFiles("dist", folder, cdn, json.loads((folder / "pyodide-lock.json").read_text()))

    folder = download_folder(cdn)
    try:
        for f in ("pyodide-lock.json", *RUNTIME):
            if not (folder / f).is_file():
                _download(cdn + f, folder / f)
    except OSError as exc:
        return PyodideFiles("cdn", None, cdn, None, problem=f"{cdn} unreachable ({exc})")
    return PyodideFiles("download", folder, cdn, json.loads((folder / "pyodide-lock.json").read_text()))


if __name__ == "__main__":
    # `python -m build.pyodide_files --folder`: where a build without PYODIDE_DIST keeps the
    # downloaded distribution (CI points PYODIDE_DIST at it for the browser tests).
    import sys
    cdn = os.environ.get("PYODIDE_CDN", DEFAULT_CDN).rstrip("/") + "/"
    if sys.argv[1:] != ["--folder"]:
        raise SystemExit("usage: python -m build.pyodide_files --folder")
    print(download_folder(cdn))
