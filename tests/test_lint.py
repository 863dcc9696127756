"""`make lint`'s Python checks as tests, so that `make test` runs them beside the other tests (on whichever worker
is free) instead of before them: ruff on every Python folder, ruff's formatting on `sdpa_core`, and mypy on
`sdpa_core` and `build` (its files in pyproject.toml). ESLint on the browser runtime is
tests/build/test_lint_js.py."""
from __future__ import annotations

import subprocess
import sys

from sitebuild import ROOT


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_finds_nothing():
    done = run("ruff", "check", "sdpa_core", "web", "build", "tests")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]
    done = run("ruff", "format", "--check", "sdpa_core")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]


def test_mypy_finds_nothing():
    done = run("mypy")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-1000:]
