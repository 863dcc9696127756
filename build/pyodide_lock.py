"""The site's own pyodide-lock.json: every package the page loads, pre-solved, with its sha256.

Pyodide's `loadPackage` reads names, files, dependencies and hashes from here, so the
page never asks PyPI or micropip's resolver anything at run time.
"""
from __future__ import annotations

import json
from pathlib import Path

from wheels import Wheel, sha256


def entry(wheel: Wheel, file_name: str) -> dict:
    return {
        "name": wheel.name,
        "version": wheel.version,
        "file_name": file_name,
        "install_dir": "site",
        "sha256": sha256(wheel.path),
        "package_type": "package",
        "imports": wheel.imports,
        "depends": wheel.depends,
        "unvendored_tests": False,
    }


def pyodide_entry(lock: dict, name: str, path: Path, shipped: set[str]) -> dict:
    """Pyodide's own entry for a package we copied (and maybe compiled), its dependencies cut to what ships."""
    e = dict(lock["packages"][name])
    e["file_name"] = path.name
    e["sha256"] = sha256(path)
    e["depends"] = [d for d in e.get("depends", []) if d in shipped]
    return e


def write(path: Path, info: dict, entries: dict[str, dict], external: set[str] = frozenset()) -> None:
    """`external`: names that only Pyodide's CDN lock provides, merged in by the worker at run time."""
    names = set(entries) | set(external)
    for e in entries.values():
        e["depends"] = sorted(d for d in e["depends"] if d in names)
    lock = {"info": info, "packages": dict(sorted(entries.items()))}
    path.write_text(json.dumps(lock, indent=1, sort_keys=True) + "\n")
