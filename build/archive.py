"""Step 5 of the build: every shipped package in one archive, `pyodide/packages.tar.gz`.

The worker downloads it once (checked against its sha256 and size like every other file), inflates
it with the browser's own DecompressionStream, writes its files straight into Pyodide's
site-packages and loads its compiled libraries (`.so`), instead of `loadPackage` fetching, checking
and unzipping ~19 wheels one by one in Python. One gzip stream over all files also compresses
better than each wheel's per-file deflate (the many small .pyc share most of their strings).

The archive is a plain ustar tar of the wheels' installed layout (what `pip install` would put in
site-packages: packages, modules and .dist-info folders), sorted, every mtime 0, gzip without a
name or time: reproducible to the byte. What it holds is recorded in the worker's CONFIG
(`archive`): path, sha256, size, the packages and versions, and the libraries to load.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import re
import tarfile
import zipfile
from pathlib import Path
from typing import Iterable

from .bytecode import SITE_PACKAGES

PATH = "pyodide/packages.tar.gz"
# Wheel data folders: purelib/platlib go to site-packages; the others (scripts, headers, data such as
# pyviz_comms' JupyterLab extension) install outside it, where nothing in the page reads them.
DATA = re.compile(r"^[^/]+\.data/(purelib|platlib)/")


def wheel_files(wheel: Path) -> dict[str, bytes]:
    """{path under site-packages: bytes} of a wheel's installed layout."""
    out = {}
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if info.is_dir():
                continue
            name = info.filename
            if name.split("/", 1)[0].endswith(".data"):
                if not DATA.match(name):
                    continue
                name = DATA.sub("", name)
            out[name] = zf.read(info)
    return out


def should_load(path: str) -> bool:
    """A compiled library Pyodide must load before Python imports it (its loader's rule: every .so
    outside a tests folder)."""
    return path.endswith(".so") and "/tests/" not in f"/{path}"


def module_of(path: str) -> str | None:
    """The module a site-packages file is (`numpy/f2py/__pycache__/x.cpython-313.pyc` -> numpy.f2py.x), or None."""
    m = re.match(r"^(.*?)(?:/__pycache__)?/?([^/]+?)(?:\.cpython-\d+(?:-[^.]+)?)?\.(py|pyc|so)$", path)
    if m is None or ".dist-info/" in path:
        return None
    parts = [p for p in m[1].split("/") if p] + ([] if m[2] == "__init__" else [m[2]])
    return ".".join(parts) or None


def trimmed(files: dict[str, bytes], trim: re.Pattern | None, imported: set[str], package: str) -> dict[str, bytes]:
    """`files` without those `trim` matches; a build error if one of them is a module the pre-render imported."""
    if trim is None:
        return files
    out = {}
    for name, data in files.items():
        if not trim.search(name):
            out[name] = data
        elif module_of(name) in imported:
            raise SystemExit(f"make site: plan.TRIM leaves {name} out of {package}, but the page imports "
                             f"{module_of(name)}; narrow the pattern")
    return out


def build(wheels: dict[str, Path], trim: dict[str, str] | None = None,
          imported: Iterable[str] = ()) -> tuple[bytes, list[str]]:
    """(gzip bytes of the tar, site-packages paths of the libraries to load). `wheels`: {package: wheel};
    `trim`: {package: regex of its files to leave out} (plan.TRIM); `imported`: the pre-render's modules."""
    files: dict[str, bytes] = {}
    imported = set(imported)
    trim = trim or {}
    for package, wheel in sorted(wheels.items()):
        either = "|".join(p for p in (trim.get(package), trim.get("*")) if p)
        pattern = re.compile(either) if either else None
        for name, data in trimmed(wheel_files(wheel), pattern, imported, package).items():
            if name in files and files[name] != data:
                raise SystemExit(f"make site: two shipped wheels install {name}")
            files[name] = data
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(files[name]), 0, 0o644
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(files[name]))
    packed = gzip.compress(raw.getvalue(), compresslevel=9, mtime=0)
    return packed, sorted(n for n in files if should_load(n))


def write(site: Path, wheels: dict[str, Path], versions: dict[str, str], trim: dict[str, str] | None = None,
          imported: Iterable[str] = ()) -> dict:
    """Write the archive into the site; returns what the worker's CONFIG records about it.
    `wheels`: {package name: wheel path}; `versions`: {package name: version}; see build()."""
    packed, dynlibs = build(wheels, trim, imported)
    (site / PATH).write_bytes(packed)
    return {"path": PATH, "sha256": hashlib.sha256(packed).hexdigest(), "size": len(packed),
            "sitePackages": SITE_PACKAGES, "dynlibs": dynlibs, "packages": dict(sorted(versions.items()))}


def members(path: Path) -> dict[str, bytes]:
    """The archive's files, read back (tests, notices)."""
    out = {}
    with tarfile.open(path, "r:gz") as tar:
        for member in tar.getmembers():
            file = tar.extractfile(member) if member.isfile() else None
            if file is not None:
                out[member.name] = file.read()
    return out


STDLIB = "pyodide/python_stdlib.zip.gz"


def pack_stdlib(site: Path) -> Path:
    """Pyodide's pyodide/python_stdlib.zip becomes pyodide/python_stdlib.zip.gz: the same zip with its members
    stored instead of deflated one by one, in one gzip stream (about 10% smaller; the worker inflates it
    and hands Pyodide the zip, which imports from stored members without inflating them)."""
    src = site / "pyodide" / "python_stdlib.zip"
    raw = io.BytesIO()
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(raw, "w", zipfile.ZIP_STORED) as zout:
        for info in sorted(zin.infolist(), key=lambda i: i.filename):
            out = zipfile.ZipInfo(info.filename, info.date_time)
            out.external_attr, out.compress_type = info.external_attr, zipfile.ZIP_STORED
            zout.writestr(out, zin.read(info))
    dst = site / STDLIB
    dst.write_bytes(gzip.compress(raw.getvalue(), compresslevel=9, mtime=0))
    src.unlink()
    return dst
