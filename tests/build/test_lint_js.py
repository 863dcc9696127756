"""tools/lint_js.py: ESLint on the browser runtime's ES modules as written (make lint)."""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest

from tools import lint_js

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


def test_the_runtime_passes_as_written():
    """Every module of build/templates/ is linted (under its own name, so ESLint's lines are the source's) and
    passes; none is ignored for lying outside the configuration's files."""
    assert {f.name for f in lint_js.RUNTIME} >= {"boot.js", "worker.js", "sw.js", "snapshot.js", "adopt.js"}
    done = eslint(*lint_js.RUNTIME)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "ignored" not in done.stdout


def test_a_mistake_in_the_runtime_is_found(inside):
    """An undefined name and an unused variable, as a template change could bring: ESLint fails on both."""
    (inside / "boot.js").write_text('const unused = 1;\nnotDefinedAnywhere();\n')
    done = eslint(inside / "boot.js")
    assert done.returncode == 1
    assert "no-undef" in done.stdout and "no-unused-vars" in done.stdout
