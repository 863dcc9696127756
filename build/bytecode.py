"""Step 3 of the build: compile the shipped wheels (and Pyodide's stdlib zip) for Pyodide's CPython 3.13.

Pyodide imports from an in-memory file system, so without shipped bytecode every boot
compiles every module it imports from source (seconds for Panel and Bokeh). Bytecode is
specific to a CPython minor version (its magic number), not to a platform: any CPython
3.13 writes what Pyodide's 3.13 reads. The build environment is usually another Python,
so a `python3.13` is looked up (SDPA_PYTHON313, PATH, pyenv); without one the build says
so and ships sources only.

Wheels keep their .py files and gain `__pycache__/<module>.cpython-313.pyc` written with
the *unchecked-hash* invalidation mode (PEP 552): valid whatever the files' mtimes after
unpacking, never re-validated against the source, and byte-for-byte reproducible. The
sources stay for tracebacks and `inspect`. Pyodide's stdlib zip gets sourceless .pyc
(zipimport reads `x.pyc` next to where `x.py` was): a zip cannot cache bytecode at all.
"""
from __future__ import annotations

import base64
import glob
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Callable, Iterable

from .plan import PYODIDE_PYTHON
from .wheels import EPOCH, Wheel

_NODOT = PYODIDE_PYTHON.replace(".", "")
TAG = f"cpython-{_NODOT}"
SITE_PACKAGES = f"/lib/python{PYODIDE_PYTHON}/site-packages"   # where Pyodide unpacks wheels: the tracebacks' paths
STDLIB = f"/lib/python{_NODOT}.zip"                           # where Pyodide mounts python_stdlib.zip
PYODIDE_OWN = ("_pyodide/", "pyodide/", "tarfile.py", "zipfile/", "pathlib/", "shutil.py", "sysconfig/",
               "encodings/cp437.py", "importlib/")
# The compiler, run once per archive over all its files (workers: one process per core).
COMPILE = r"""
import compileall, py_compile, sys
root, ddir, legacy = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
ok = compileall.compile_dir(root, ddir=ddir, quiet=2, legacy=legacy, workers=0,
                            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
sys.exit(0 if ok else 1)
"""


def find_python313() -> str | None:
    """A CPython 3.13 interpreter for compiling, or None."""
    candidates = [os.environ.get("SDPA_PYTHON313"), shutil.which(f"python{PYODIDE_PYTHON}"),
                  *sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{PYODIDE_PYTHON}*/bin/python")),
                          reverse=True)]
    for exe in candidates:
        if not exe:
            continue
        try:
            done = subprocess.run([exe, "-c", "import sys; print(sys.implementation.cache_tag)"],
                                  capture_output=True, text=True, timeout=30)
        except OSError:
            continue
        if done.returncode == 0 and done.stdout.strip() == TAG:
            return exe
    return None


def _write_zip(path: Path, files: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for arc in sorted(files):
            zi = zipfile.ZipInfo(arc, EPOCH)
            if arc.endswith("/"):
                zi.external_attr = (0o40755 << 16) | 0x10
                zi.compress_type = zipfile.ZIP_STORED
            else:
                zi.external_attr = 0o644 << 16
                zi.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zi, files[arc])


def cached(path: Path, cache: Path, python: str, how: str, compile_fn) -> bool:
    """Run `compile_fn()` (which rewrites `path` in place) unless the same input was compiled the same
    way before; True when the result came from the cache. Outputs are deterministic, so reusing is exact."""
    rules = Path(__file__).read_bytes()      # a change to this module's choices invalidates the cache
    key = hashlib.sha256(path.read_bytes() + rules + f"\0{python}\0{how}".encode()).hexdigest()[:32]
    hit = cache / f"{key}{path.suffix}"
    if hit.is_file():
        shutil.copyfile(hit, path)
        return True
    compile_fn()
    cache.mkdir(parents=True, exist_ok=True)
    tmp = hit.with_suffix(".part")
    shutil.copyfile(path, tmp)
    tmp.replace(hit)
    return False


def _compile_tree(python: str, root: Path, ddir: str, legacy: bool) -> None:
    done = subprocess.run([python, "-c", COMPILE, str(root), ddir, "1" if legacy else "0"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"make site: compiling {root.name} to bytecode failed:\n{done.stdout[-2000:]}"
                         f"{done.stderr[-2000:]}")


def _record(files: dict[str, bytes], record_path: str) -> bytes:
    lines = []
    for arc, data in sorted(files.items()):
        if arc == record_path:
            continue
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        lines.append(f"{arc},sha256={digest},{len(data)}")
    lines.append(f"{record_path},,")
    return ("\n".join(lines) + "\n").encode()


def _compile_members(files: dict[str, bytes], sources: list[str], python: str, prefix: str,
                     legacy: bool) -> dict[str, bytes]:
    """Compile the archive members ``sources`` with ``python``; returns {.pyc path: bytecode}."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for arc in sources:
            (root / arc).parent.mkdir(parents=True, exist_ok=True)
            (root / arc).write_bytes(files[arc])
        _compile_tree(python, root, prefix, legacy=legacy)
        return {pyc.relative_to(root).as_posix(): pyc.read_bytes() for pyc in root.rglob("*.pyc")}


def compile_wheel(wheel: Path, python: str, sourceless: bool = False) -> int:
    """Add unchecked-hash __pycache__/*.pyc for every .py of a wheel, in place; returns modules compiled.

    `sourceless`: replace each .py by its .pyc instead (smaller; tracebacks lose the source lines)."""
    with zipfile.ZipFile(wheel) as zf:
        files = {i.filename: zf.read(i) for i in zf.infolist() if not i.is_dir()}
    sources = [a for a in files if a.endswith(".py") and ".dist-info/" not in a and ".data/" not in a]
    if not sources:
        return 0
    for arc, code in _compile_members(files, sources, python, SITE_PACKAGES, legacy=sourceless).items():
        if sourceless and arc[:-1] in files:
            del files[arc[:-1]]
        files[arc] = code
    record = next((a for a in files if a.endswith(".dist-info/RECORD")), None)
    if record:
        files[record] = _record(files, record)
    _write_zip(wheel, files)
    return len(sources)


def stdlib_selection(names: list[str], used: list[str]) -> set[str]:
    """The stdlib zip's .py files worth compiling: those the page imports (`used`, paths recorded by the
    CPython pre-render, possibly from another Python minor version), whole packages where the layout
    changed (3.11's pathlib.py is 3.13's pathlib/), and Pyodide's own start-up modules."""
    present = set(names)
    chosen = set()
    for path in used:
        if path in present:
            chosen.add(path)
        elif path.endswith(".py") and f"{path[:-3]}/__init__.py" in present:
            chosen |= {n for n in present if n.startswith(path[:-3] + "/")}
    # Pyodide's packages, the private top-level modules its CPython imports at start-up, and what its
    # package loader imports to unpack wheels (measured: these were compiled from source on every boot)
    chosen |= {n for n in present if n.startswith(PYODIDE_OWN) or ("/" not in n and n.startswith("_"))}
    return {n for n in chosen if n.endswith(".py")}


def compile_stdlib(zip_path: Path, python: str, used: list[str]) -> tuple[int, int]:
    """Replace the page's modules in Pyodide's stdlib zip by sourceless unchecked-hash .pyc, in place.

    The other modules stay sources (smaller than bytecode, compiled only if ever imported).
    Returns (modules compiled, modules in the zip)."""
    with zipfile.ZipFile(zip_path) as zf:
        files = {i.filename: zf.read(i) for i in zf.infolist()}
    sources = sorted(stdlib_selection(list(files), used))
    compiled = _compile_members(files, sources, python, STDLIB, legacy=True)
    for arc in sources:
        pyc = arc[:-3] + ".pyc"
        if pyc in compiled:            # a module 3.13 cannot compile stays as source
            del files[arc]
            files[pyc] = compiled[pyc]
    _write_zip(zip_path, files)
    return len(sources), sum(a.endswith((".py", ".pyc")) for a in files)


def drop_stdlib(zip_path: Path, drop: tuple[str, ...], used: list[str]) -> int:
    """Remove `drop` (plan.STDLIB_DROP: `name.py` modules and `name/` packages) from Pyodide's stdlib zip,
    in place; returns the number of files removed. Dropping a module the pre-render imported fails."""
    imported = sorted(u for u in used if u.startswith(drop))
    if imported:
        raise SystemExit(f"make site: plan.STDLIB_DROP removes {', '.join(imported)}, which the page imports")
    with zipfile.ZipFile(zip_path) as zf:
        files = {i.filename: zf.read(i) for i in zf.infolist()}
    kept = {n: data for n, data in files.items() if not n.startswith(drop)}
    _write_zip(zip_path, kept)
    return len(files) - len(kept)


_FOUND: dict[str, str | None] = {}


def python313(log: Callable[[str], None]) -> str | None:
    """find_python313(), looked up once per build; says once why sources ship when there is none."""
    if "python" not in _FOUND:
        _FOUND["python"] = find_python313()
        if _FOUND["python"] is None:
            log("bytecode: no CPython 3.13 found (PATH, pyenv, or SDPA_PYTHON313=<python3.13>); shipping "
                "sources only, so every boot compiles them (about 2-3 s slower)")
    return _FOUND["python"]


def ship_wheels(wheels: Iterable[Wheel], cache: Path, log: Callable[[str], None]) -> None:
    """Every shipped wheel gains bytecode: those whose plan keeps sources (ours: readable tracebacks)
    get it next to them, the others become sourceless (bytecode alone is smaller than both)."""
    python = python313(log)
    if python is None:
        return
    wheels = list(wheels)
    started, reused = time.time(), 0
    for wheel in wheels:
        keep = wheel.package.keep_sources
        reused += cached(wheel.path, cache, python, f"wheel sourceless={not keep}",
                         lambda: compile_wheel(wheel.path, python, sourceless=not keep))
    log(f"bytecode: {len(wheels)} wheels compiled with {python} ({reused} from the cache, "
        f"{time.time() - started:.1f} s)")


def ship_stdlib(zip_path: Path, used: list[str], cache: Path, log: Callable[[str], None]) -> None:
    """The stdlib modules the page imports (recorded by the pre-render), as bytecode in Pyodide's zip."""
    python = python313(log)
    if python is None:
        return
    counts = []
    how = "stdlib " + hashlib.sha256("\n".join(sorted(used)).encode()).hexdigest()
    cached(zip_path, cache, python, how, lambda: counts.append(compile_stdlib(zip_path, python, used)))
    log(f"bytecode: the stdlib modules the page imports, compiled in {zip_path.name}"
        + (f" ({counts[0][0]} of {counts[0][1]})" if counts else " (from the cache)"))
