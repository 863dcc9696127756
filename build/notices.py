"""notices.html: the third-party software the site ships, with its licences.

Generated from what ships: each wheel's METADATA (name, version, licence, home page) and the licence
files in its .dist-info folder (wheels.py keeps them when it repacks or slims a wheel), after
bytecode compilation, from the files in _site/pyodide/. What ships without Python metadata (Pyodide's
runtime and standard library, and the JS/CSS libraries Panel bundles) is declared below; the build
fails on a bundled library it has no entry for.
"""
from __future__ import annotations

import html
import re
import zipfile
from dataclasses import dataclass
from email.parser import HeaderParser
from pathlib import Path

from .wheels import LICENCE_FILE

#: Shipped as files, not wheels (name, licence, where its source and licence text are).
RUNTIME = [
    ("Pyodide runtime (pyodide.js, pyodide.asm.js, pyodide.asm.wasm)", "MPL-2.0",
     "https://github.com/pyodide/pyodide"),
    ("CPython standard library (python_stdlib.zip), built into Pyodide", "PSF-2.0",
     "https://docs.python.org/3/license.html"),
    ("Emscripten runtime, compiled into pyodide.asm.js", "MIT OR NCSA", "https://github.com/emscripten-core/emscripten"),
]
#: JS/CSS libraries Panel bundles under dist/bundled/<folder>/ (copied to static/ by assets.py).
BUNDLED = {
    "bootstrap5": ("Bootstrap 5", "MIT", "https://github.com/twbs/bootstrap"),
    "katex": ("KaTeX", "MIT", "https://github.com/KaTeX/KaTeX"),
    "bootstraptemplate": ("Panel's Bootstrap template", "BSD-3-Clause", "https://github.com/holoviz/panel"),
    "theme": ("Panel's themes", "BSD-3-Clause", "https://github.com/holoviz/panel"),
}
LICENCE_CLASSIFIER = re.compile(r"^License :: (?:OSI Approved :: )?(.+)$")


@dataclass
class Notice:
    name: str
    version: str
    licence: str
    url: str
    texts: dict[str, str]          # licence file name -> text


def _licence(meta) -> str:
    """The licence's short name: License-Expression, a one-line License field, else the classifiers."""
    expression = (meta.get("License-Expression") or "").strip()
    if expression:
        return expression
    field = (meta.get("License") or "").strip()
    if field and "\n" not in field and len(field) <= 80:
        return field
    classifiers = [LICENCE_CLASSIFIER.match(c) for c in meta.get_all("Classifier") or []]
    names = [m[1] for m in classifiers if m]
    return " / ".join(names) or ("see the licence text" if field else "not stated")


def _home(meta) -> str:
    for raw in meta.get_all("Project-URL") or []:
        label, _, url = raw.partition(",")
        if label.strip().lower() in ("source", "source code", "repository", "homepage", "home", "github"):
            return url.strip()
    return (meta.get("Home-page") or "").strip()


def from_wheel(path: Path) -> Notice:
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
        info = next(n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info"))
        meta = HeaderParser().parsestr(zf.read(f"{info}/METADATA").decode("utf-8", "replace"))
        texts = {n[len(info) + 1:]: zf.read(n).decode("utf-8", "replace") for n in sorted(names)
                 if n.startswith(info + "/") and LICENCE_FILE.match(n[len(info) + 1:])}
    return Notice(meta["Name"], meta["Version"], _licence(meta), _home(meta), texts)


def bundled(static_files: list[str], panel_dist: str) -> list[Notice]:
    """The libraries under Panel's dist/bundled/ that the site ships, with their versions when the
    folder names one (katex@0.16.22)."""
    out = {}
    for rel in static_files:
        if not rel.startswith(panel_dist + "bundled/"):
            continue
        parts = rel[len(panel_dist + "bundled/"):].split("/")
        if parts[0] not in BUNDLED:
            raise SystemExit(f"make site: {rel} is a bundled library with no licence entry in build/notices.py "
                             "(add it to BUNDLED)")
        name, licence, url = BUNDLED[parts[0]]
        version = next((p.split("@", 1)[1] for p in parts if "@" in p), "")
        out[parts[0]] = Notice(name, version, licence, url, {})
    return [out[k] for k in sorted(out)]


def page(wheels: list[Notice], files: list[Notice], title: str) -> str:
    esc = html.escape
    rows, texts = [], []
    for n in [*wheels, *files]:
        link = f'<a href="{esc(n.url)}">{esc(n.url)}</a>' if n.url else ""
        rows.append(f"<tr><td>{esc(n.name)}</td><td>{esc(n.version)}</td><td>{esc(n.licence)}</td><td>{link}</td></tr>")
    for n in wheels:
        for file, text in n.texts.items():
            texts.append(f'<h3 id="{esc(n.name)}-{esc(file)}">{esc(n.name)} {esc(n.version)}: {esc(file)}</h3>'
                         f"<pre>{esc(text)}</pre>")
    runtime = "".join(f'<tr><td>{esc(name)}</td><td></td><td>{esc(licence)}</td><td><a href="{esc(url)}">{esc(url)}</a>'
                      f"</td></tr>" for name, licence, url in RUNTIME)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="description" content="Third-party software in {esc(title)}, with its licences.">
<title>Third-party notices: {esc(title)}</title>
<style>
body {{ font: 16px/1.5 system-ui, sans-serif; margin: 1rem auto; max-width: 60rem; padding: 0 1rem; color: #1a1a1a; }}
table {{ border-collapse: collapse; width: 100%; }} th, td {{ text-align: left; padding: 4px 8px; border-bottom: 1px solid #ddd; }}
td a {{ overflow-wrap: anywhere; }} a {{ color: #0b4f8a; }}
pre {{ white-space: pre-wrap; font-size: 13px; background: #f5f5f5; padding: 0.5rem; }}
</style>
</head>
<body>
<main>
<h1>Third-party notices</h1>
<p>{esc(title)} runs in your browser with the following software, shipped as part of this site. Each is
used under its licence. Python packages are the wheels in pyodide/; JS/CSS libraries are under static/.
The licence texts shipped with the Python packages follow the table.</p>
<h2>Shipped software</h2>
<table><thead><tr><th scope="col">Package</th><th scope="col">Version</th><th scope="col">Licence</th>
<th scope="col">Source</th></tr></thead><tbody>
{chr(10).join(rows)}
{runtime}
</tbody></table>
<h2>Licence texts</h2>
{chr(10).join(texts)}
<p><a href="./">Back to {esc(title)}</a></p>
</main>
</body>
</html>
"""


def write(path: Path, wheel_files: list[Path], static_files: list[str], panel_dist: str, title: str) -> list[Notice]:
    """notices.html for the given third-party wheels and static files; returns the wheel notices."""
    wheels = sorted((from_wheel(p) for p in wheel_files), key=lambda n: n.name.lower())
    path.write_text(page(wheels, bundled(static_files, panel_dist), title))
    return wheels
