"""Step 4 of the build: the lock of every package the page loads, pre-solved, with its sha256.

It checks that every planned package got a wheel; the wheels then go into one archive (archive.py)
that the worker unpacks itself, so the self-hosted site ships only Pyodide's `info` with no package
entries (runtime_only): loadPyodide reads that file at start-up, and loadPackage is never called.
The page never asks PyPI or micropip's resolver anything at run time. Dependencies come from the plan (plan.py);
files, versions, imports and hashes from the wheels actually produced (wheels.py, after bytecode).
"""
from __future__ import annotations

import json
from pathlib import Path

from .plan import PYODIDE_PYTHON, Plan
from .wheels import Wheel, sha256


def entry(wheel: Wheel) -> dict:
    """The lock entry of a wheel we produced."""
    return {
        "name": wheel.name,
        "version": wheel.version,
        "file_name": wheel.path.name,
        "install_dir": "site",
        "sha256": sha256(wheel.path),
        "package_type": "package",
        "imports": wheel.imports,
        "depends": list(wheel.package.depends),
        "unvendored_tests": False,
    }


def pyodide_entry(lock: dict, wheel: Wheel) -> dict:
    """Pyodide's own entry for a package we copied (and maybe compiled): our file's hash, the plan's
    dependencies (Pyodide's cut to what ships)."""
    e = dict(lock["packages"][wheel.name])
    e["file_name"] = wheel.path.name
    e["sha256"] = sha256(wheel.path)
    e["depends"] = list(wheel.package.depends)
    return e


def build(plan: Plan, wheels: dict[str, Wheel], pyodide_lock: dict | None, pyodide_version: str) -> dict:
    """The lock: Pyodide's `info` (or, without its lock, what the worker replaces with its CDN's) and
    one entry per shipped package. Packages left to the CDN's lock are named in dependencies only."""
    info = (pyodide_lock or {}).get("info") or {"arch": "wasm32", "python": PYODIDE_PYTHON, "version": pyodide_version}
    packages = {}
    for name, wheel in wheels.items():
        if wheel.package.source != "pyodide":
            packages[name] = entry(wheel)
        elif pyodide_lock is None:      # the plan takes a package from Pyodide's files only with their lock
            raise ValueError(f"{name}: from Pyodide's files, but without Pyodide's lock")
        else:
            packages[name] = pyodide_entry(pyodide_lock, wheel)
        packages[name]["depends"] = sorted(packages[name]["depends"])
    missing = set(plan.packages) - set(packages) - set(plan.at_runtime)
    if missing:
        raise SystemExit(f"make site: no wheel was produced for {sorted(missing)}")
    return {"info": info, "packages": dict(sorted(packages.items()))}


def write(path: Path, lock: dict) -> None:
    path.write_text(json.dumps(lock, indent=1, sort_keys=True) + "\n")


def runtime_only(lock: dict) -> dict:
    """What the self-hosted site ships as pyodide/pyodide-lock.json: loadPyodide reads it at start-up, and
    since every package arrives in the archive (archive.py), it lists none for loadPackage to fetch."""
    return {"info": lock["info"], "packages": {}}
