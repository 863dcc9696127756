"""The browser runtime's bundler: each entry of build/templates/ (boot.js, worker.js, sw.js), an ES module that
imports the others, becomes the one classic script the site ships, by esbuild (pinned in package.json's
"dependencies"; `make site` installs only it, `make test` every Node tool).

The bundle is an IIFE (the page loads boot.js as a script with an integrity hash, boot.js starts worker.js from a
blob: URL, the browser registers sw.js): nothing is global but what a module puts on `window` or `self` itself.
Output depends only on the sources and esbuild's version (paths are relative to the repository, no timestamps),
so the site stays byte-reproducible. runtime.py fills each bundle's data afterwards.
"""
from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ESBUILD = ROOT / "node_modules" / ".bin" / "esbuild"
#: The language level of what ships, as ESLint holds the sources to (eslint.config.mjs): esbuild fails on
#: newer syntax rather than shipping it.
TARGET = "es2022"
#: The first line of each bundle: the modules are strict code, and an IIFE bundle is a classic script, which is
#: sloppy unless it says otherwise (esbuild does not say it).
STRICT = '"use strict";'
OPTIONS = ("--bundle", "--format=iife", "--charset=utf8", "--legal-comments=none", f"--target={TARGET}",
           f"--banner:js={STRICT}", "--log-level=warning")


class BundleError(SystemExit):
    """The runtime could not be bundled: esbuild is missing, or a module does not build (its message names the
    file and line)."""


def bundle(entry: Path) -> str:
    """The script built from `entry` (a module of build/templates/, or one beside its imports elsewhere)."""
    entry = entry.resolve()
    sources = tuple(sorted((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in entry.parent.glob("*.js")))
    return _bundle(entry, sources)


@functools.lru_cache(maxsize=32)
def _bundle(entry: Path, _sources: tuple) -> str:
    if not ESBUILD.exists():
        raise BundleError("build/bundle.py: esbuild is not installed, so the browser runtime cannot be bundled: "
                          "run `make site` (it runs `npm ci --omit=dev`; needs Node and npm: apt-get install nodejs npm)")
    if shutil.which("node") is None:
        raise BundleError("build/bundle.py: Node is not installed (esbuild's launcher needs it): apt-get install nodejs")
    # a path relative to the repository where it can be: esbuild names each module in a comment by its path
    try:
        name = str(entry.relative_to(ROOT))
    except ValueError:
        name = str(entry)
    done = subprocess.run([str(ESBUILD), name, *OPTIONS], cwd=ROOT, capture_output=True, text=True, timeout=120)
    if done.returncode:
        raise BundleError(f"build/bundle.py: esbuild could not bundle {name}:\n{done.stderr.strip()}")
    return done.stdout
