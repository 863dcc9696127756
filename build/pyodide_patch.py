"""Pyodide 0.29.3's pyodide.asm.js, patched for the warm boot from a memory snapshot.

`patch_pyodide_asm(text)` applies the named, minimal string replacements in PATCHES and returns the
new text. Each anchor must occur exactly once in the file, or the build fails naming the patch:
if upstream changes under a patch, it is noticed here, not as a broken page.

What each patch is for (the JS side is build/templates/snapshot.js):
- `side-module-memory`: Emscripten's loadWebAssemblyModule takes a side module's memory from its
  closure-internal `getMemory` (calloc once the runtime runs). On restore the snapshot's heap already
  holds numpy's data and every pointer into it, so each `.so` must be placed at the memoryBase it had
  when the snapshot was taken: `Module.sdpaGetMemory(size, libName)`, when set, chooses it. (The
  table base needs no patch: it is `wasmTable.length`, which snapshot.js sets by growing the table.)
- `globals-proxy-getters`: with `_makeSnapshot`, Python's `js` module is a recording proxy of
  globalThis (makeGlobalsProxy) whose `get` reads properties with the proxy as receiver, so a
  getter that checks its `this` (a worker's `crossOriginIsolated`, which pyodide_http imports)
  throws "Illegal invocation"; Panel then takes pyodide_http for missing and imports pandas. The
  getter is called on the real object instead, as without the proxy.

Not patched, because this app's boot does not need it (checked in Node and in headless Chromium):
serializeHiwireState's refusal of a held JS `undefined` and its JSON comparison of the first hiwire
slots (pyodide#5195, met with loadPackage); the archive boot (loadDynlib) passes both.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

VERSION = "0.29.3"

# name -> (anchor, replacement); each anchor must occur exactly once.
PATCHES: dict[str, tuple[str, str]] = {
    "side-module-memory": (
        "var memoryBase=metadata.memorySize?alignMemory(getMemory(metadata.memorySize+memAlign),memAlign):0;",
        "var memoryBase=metadata.memorySize?alignMemory((Module.sdpaGetMemory||getMemory)"
        "(metadata.memorySize+memAlign,libName),memAlign):0;",
    ),
    "globals-proxy-getters": (
        "get(r,n,o){if(n===xr)return e;if(n===Pr)return r;let i=Reflect.get(...arguments),",
        "get(r,n,o){if(n===xr)return e;if(n===Pr)return r;let i=Reflect.get(r,n),",
    ),
}


class PatchError(RuntimeError):
    """An anchor of PATCHES is not found exactly once: Pyodide changed under the patch."""


def patch_pyodide_asm(text: str, patches: dict[str, tuple[str, str]] | None = None) -> str:
    """pyodide.asm.js (0.29.3) with every patch of PATCHES applied; PatchError if an anchor is missing or repeated."""
    for name, (anchor, replacement) in (PATCHES if patches is None else patches).items():
        count = text.count(anchor)
        if count != 1:
            raise PatchError(
                f"pyodide_patch: patch {name!r} expects its anchor exactly once in pyodide.asm.js "
                f"(Pyodide {VERSION}), found {count} times; Pyodide changed under it: review "
                f"build/pyodide_patch.py. Anchor: {anchor[:120]}")
        text = text.replace(anchor, replacement)
    return text


def patch_file(path: Path) -> None:
    """Patch pyodide.asm.js in place (as the build step would, on the copy in the built site)."""
    path.write_text(patch_pyodide_asm(path.read_text(encoding="utf-8")), encoding="utf-8")


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.environ["PYODIDE_DIST"], "pyodide.asm.js"))
    print(len(patch_pyodide_asm(target.read_text(encoding="utf-8"))), "characters after patching", target)
