"""The browser runtime's files as the site ships them: boot.js, worker.js and sw.js, each an ES module of
templates/ bundled with what it imports (bundle.py), and boot.css, with the build's data in them.

A module takes data as the string `"@@DATA:NAME@@"`, which fill() replaces by `/*NAME*/{...}/*END*/` (JSON, read
back by `embedded()`: the tests read the build's data this way, never by their own regex), or as `@@NAME@@`
inside a string (text).
"""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from .bundle import bundle
from .render import BOKEH_DIR, PANEL_DIST, Identity

TEMPLATES = Path(__file__).resolve().parent / "templates"


def _embed_marker(name: str) -> re.Pattern:
    return re.compile(rf"/\*{name}\*/(.*?)/\*END\*/", re.S)


def _data_marker(name: str) -> str:
    """Where a module takes a value as JSON: the string literal `"@@DATA:NAME@@"` (esbuild keeps strings as written)."""
    return f'"@@DATA:{name}@@"'


def source(template: str) -> str:
    """templates/<template> as the site ships it before its data: a JavaScript entry bundled with the modules it
    imports (bundle.py), any other file as written."""
    path = TEMPLATES / template
    return bundle(path) if path.suffix == ".js" else path.read_text()


def fill(template: str, **values) -> str:
    """templates/<template> bundled, each `"@@DATA:NAME@@"` replaced by `/*NAME*/<value as JSON>/*END*/` (read back
    by embedded()) and each `@@NAME@@` by its value as text."""
    text = source(template)
    for key, value in values.items():
        if _data_marker(key) in text:
            data = json.dumps(value, indent=1, sort_keys=True)
            text = text.replace(_data_marker(key), f"/*{key}*/{data}/*END*/", 1)
        elif f"@@{key}@@" in text:
            text = text.replace(f"@@{key}@@", str(value))
        else:
            raise KeyError(f"templates/{template} has no place for {key}")
    return text


def embedded(text: str, name: str):
    """The JSON value fill() put in a built file under `name` (e.g. worker.js's CONFIG, sw.js's POLICY)."""
    found = _embed_marker(name).search(text)
    if found is None:
        raise ValueError(f"no /*{name}*/ data in this file")
    return json.loads(found[1])


def worker_js(config: dict) -> str:
    """worker.js with its CONFIG, bundled with the modules it imports (download, prefetch, scripts, archive,
    snapshot, store, warmboot)."""
    return fill("worker.js", CONFIG=config)


def boot_js(worker: bytes, registration: dict, snapshot_folder: str | None = None, first_paints: dict | None = None,
            default_first_paint: str = "tour-1", setting_keys: list[str] | tuple = (), early_states: dict | None = None) -> str:
    """boot.js knows worker.js's sha256 and size (start.js checks the file before running it), whether the
    worker can save a memory snapshot (a self-hosted, patched Pyodide) and under which name
    (offline.SNAPSHOT_FOLDER: the page holds that cache open while the snapshot is written, see
    snapmaker.js), where the service worker is registered (offline.REGISTRATION), and which link keys are
    settings (a link with any of them first paints as a preview, firstpaint.js); the modules it
    imports (slices, firstpaint, bokeh_leaks, progress, start, setup, snapmaker, patches, adopt) are inside."""
    return fill("boot.js", WORKER={"path": "worker.js", "sha256": hashlib.sha256(worker).hexdigest(),
                                   "size": len(worker), "snapshots": snapshot_folder is not None,
                                   "snapshotFolder": snapshot_folder},
                SERVICE_WORKER=registration, PANEL_DIST=PANEL_DIST, BOKEH_DIR=BOKEH_DIR,
                FIRST_PAINT={"default": default_first_paint, "files": first_paints or {}, "settings": list(setting_keys),
                             "early": early_states or {}})


def boot_css(identity: Identity) -> str:
    return fill("boot.css", THEME=identity.theme_color)


def service_worker(policy: dict) -> str:
    """sw.js with its whole policy (offline.policy()) inside: a new policy is a new service worker."""
    return fill("sw.js", POLICY=policy)
