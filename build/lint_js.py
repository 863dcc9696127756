"""`make lint` for the JavaScript: ESLint (pinned in package.json) on the browser runtime as it ships,
and on the tests' Node scripts.

    python -m build.lint_js [--keep DIR]

The runtime's templates are not JavaScript until render.py fills them (each `@@include:<file>@@` of boot.js and
worker.js is a module's text), so they are rendered here, with placeholder data, into a folder inside the repository (a temporary one, or DIR to read the lines ESLint names), and linted there under their own
names. Without Node or `npm ci`'s tools the check says so and fails: `make lint` installs them first.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from . import render

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

ESLINT = ROOT / "node_modules" / ".bin" / "eslint"
NODE_SCRIPTS = sorted([*(ROOT / "tests" / "build").glob("*.[mc]js"), *(ROOT / "tests" / "js").glob("*.[mc]js")])


def rendered(folder: Path) -> list[Path]:
    """boot.js, worker.js and sw.js as the build writes them, with placeholder data."""
    worker = render.worker_js({"placeholder": True})
    files = {"worker.js": worker,
             "boot.js": render.boot_js(worker.encode(), {"script": "sw.js", "scope": "./"}, snapshot_folder="snap"),
             "sw.js": render.service_worker({"assets": {}, "cache": "placeholder"})}
    for name, text in files.items():
        (folder / name).write_text(text)
    return [folder / name for name in files]


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m build.lint_js", description=__doc__.splitlines()[0])
    ap.add_argument("--keep", type=Path, help="render into this folder and keep it")
    args = ap.parse_args()
    if not ESLINT.exists():
        print("lint_js: ESLint is not installed: run `make npm-tools` (npm ci; needs Node and npm)", file=sys.stderr)
        return 1
    # inside the repository: ESLint lints nothing outside its base path (it says "File ignored")
    with tempfile.TemporaryDirectory(dir=ROOT, prefix=".lint-js-") as tmp:
        folder = args.keep or Path(tmp) / "rendered"
        folder.mkdir(parents=True, exist_ok=True)
        files = rendered(folder)
        done = subprocess.run([str(ESLINT), "--max-warnings", "0", "--config", str(ROOT / "eslint.config.mjs"),
                               *map(str, files + NODE_SCRIPTS)], cwd=ROOT)
        if done.returncode and not args.keep:
            print("lint_js: the lines above are the rendered files'; `python -m build.lint_js --keep DIR` keeps them",
                  file=sys.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
