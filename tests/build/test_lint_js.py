"""build/lint_js.py: ESLint on the browser runtime as the build renders it (make lint)."""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest

from build import lint_js

pytestmark = pytest.mark.skipif(not lint_js.ESLINT.exists(),
                                reason="ESLint is not installed: `make npm-tools` (npm ci) installs it from package.json")


@pytest.fixture
def inside():
    """A folder inside the repository: ESLint ignores files outside its base path."""
    with tempfile.TemporaryDirectory(dir=lint_js.ROOT, prefix=".lint-js-test-") as tmp:
        yield Path(tmp)


def eslint(*files: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(lint_js.ESLINT), "--max-warnings", "0", "--config", str(lint_js.ROOT / "eslint.config.mjs"),
                           *map(str, files)], cwd=lint_js.ROOT, capture_output=True, text=True)


def test_the_runtime_as_rendered_passes(inside):
    files = lint_js.rendered(inside)
    assert [f.name for f in files] == ["worker.js", "boot.js", "sw.js"]
    assert "function sdpaSnapshotRecord" in files[0].read_text()        # snapshot.js went inside worker.js
    done = eslint(*files)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "ignored" not in done.stdout


def test_a_mistake_in_the_runtime_is_found(inside):
    """An undefined name and an unused variable, as a template change could bring: ESLint fails on both."""
    (inside / "boot.js").write_text('"use strict";\nconst unused = 1;\nnotDefinedAnywhere();\n')
    done = eslint(inside / "boot.js")
    assert done.returncode == 1
    assert "no-undef" in done.stdout and "no-unused-vars" in done.stdout
