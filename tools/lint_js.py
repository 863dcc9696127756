"""`make lint` for the JavaScript: ESLint (pinned in package.json) on the browser runtime's sources, the ES modules
of build/templates/ (bundle.py bundles them), and on the tests' Node scripts.

    python -m tools.lint_js

Each file is linted as written, so ESLint's line numbers are the source's. Without Node or `npm ci`'s tools the
check says so and fails: `make lint` installs them first.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ESLINT = ROOT / "node_modules" / ".bin" / "eslint"
RUNTIME = sorted((ROOT / "build" / "templates").glob("*.js"))
NODE_SCRIPTS = sorted([*(ROOT / "tests" / "build").glob("*.[mc]js"), *(ROOT / "tests" / "js").glob("*.[mc]js")])


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.lint_js", description=__doc__.splitlines()[0])
    ap.parse_args()
    if not ESLINT.exists():
        print("lint_js: ESLint is not installed: run `make npm-tools` (npm ci; needs Node and npm)", file=sys.stderr)
        return 1
    done = subprocess.run([str(ESLINT), "--max-warnings", "0", "--config", str(ROOT / "eslint.config.mjs"),
                           *map(str, RUNTIME + NODE_SCRIPTS)], cwd=ROOT)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
