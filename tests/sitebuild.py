"""Helpers for tests of the static site: build it and read what it ships.

Imported by tests/conftest.py (the session's `site` and `served` fixtures) and by tests/build.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from build import archive, offline, runtime

ROOT = Path(__file__).resolve().parents[1]


def make_site(out: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "build.make_site", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, env={**os.environ, **(env or {})})
    if done.returncode != 0:
        pytest.fail(f"python -m build.make_site failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


def pyodide_dist() -> Path | None:
    dist = os.environ.get("PYODIDE_DIST")
    return Path(dist) if dist and (Path(dist) / "pyodide-lock.json").is_file() else None


#: Why a test that boots the self-hosted site is skipped (no path of any machine: DEVELOPERS.md says how).
NO_DIST = ("needs a Pyodide 0.29.3 distribution: set PYODIDE_DIST to a folder holding its pyodide-lock.json "
           "(DEVELOPERS.md, 'A local Pyodide distribution', says how to assemble one)")


def require_pyodide_dist() -> Path:
    """The distribution, or a skip that says what is missing."""
    dist = pyodide_dist()
    if dist is None:
        pytest.skip(NO_DIST)
    return dist


class Site:
    """A built site and the data the build put in it, read with the build's own reader (runtime.embedded)."""

    def __init__(self, root: Path, log: str):
        self.root = root
        self.log = log
        self.policy = runtime.embedded((root / offline.SW_FILE).read_text(), "POLICY")
        self.assets = self.policy["assets"]
        self.config = runtime.embedded((root / "worker.js").read_text(), "CONFIG")
        lock = root / "pyodide" / "pyodide-lock.json"      # self-hosted builds only
        self.lock = json.loads(lock.read_text()) if lock.is_file() else None
        self.html = (root / "index.html").read_text()

    @property
    def self_hosted(self) -> bool:
        return self.config["runtimeLock"] is None

    @property
    def archive(self) -> dict[str, bytes]:
        """{path under site-packages: bytes} of the package archive (build/archive.py)."""
        if not hasattr(self, "_archive"):
            self._archive = archive.members(self.root / self.config["archive"]["path"])
        return self._archive


#: The d_k slider's handle beside the figure, for the site tests that move it.
HANDLE = '#main .noUi-handle[aria-label="d_k (key/query dimension)"]'
#: Every ColumnDataSource's data in one string: changes when any plot's data does.
PLOT_STATE = """() => {
  const parts = [];
  for (const m of Bokeh.documents[Bokeh.documents.length - 1].all_models) {
    if (m.constructor.__name__ !== "ColumnDataSource") continue;
    for (const [k, v] of (m.data instanceof Map ? [...m.data] : Object.entries(m.data))) parts.push(k + ":" + Array.from(v).join(","));
  }
  return parts.sort().join("|");
}"""


def still_usable(page):
    """One arrow key on the d_k handle redraws a plot: the page still answers."""
    before = page.evaluate(PLOT_STATE)
    handle = page.locator(HANDLE)
    handle.focus()
    handle.press("ArrowRight")
    page.wait_for_function(f"({PLOT_STATE})() !== {before!r}", timeout=30_000)
