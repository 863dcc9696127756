"""The page's static files (BokehJS, Panel's JS/CSS, fonts), copied from the installed Panel and Bokeh.

Only what the pre-rendered page references (and what those stylesheets pull in), plus Panel's
css/ and assets/ folders, which its models name at run time.
"""
from __future__ import annotations

import importlib.metadata as md
import os
import re
import shutil
from pathlib import Path

from . import render

SITE_PACKAGES = Path(str(md.distribution("panel").locate_file("")))     # a pathlib.Path, typed as SimplePath
PANEL_DIST_DIR = SITE_PACKAGES / "panel" / "dist"
BOKEH_JS_DIR = SITE_PACKAGES / "bokeh" / "server" / "static" / "js"
CSS_URL = re.compile(r"""url\(\s*["']?([^"')]+)["']?\s*\)""")


def source_of(rel: str) -> Path:
    """The installed file behind a site path under static/."""
    if rel.startswith(render.PANEL_DIST):
        return PANEL_DIST_DIR / rel[len(render.PANEL_DIST):]
    if rel.startswith(render.BOKEH_DIR):
        return BOKEH_JS_DIR / rel[len(render.BOKEH_DIR):]
    raise SystemExit(f"make site: the page references {rel}, which nothing provides")


def copy(html: str, out: Path) -> list[str]:
    """Copy every local file the page references; returns their site paths, sorted."""
    todo = [p for p in render.local_paths(html) if p.startswith("static/")]
    todo += [render.PANEL_DIST + p.relative_to(PANEL_DIST_DIR).as_posix()
             for sub in ("css", "assets") for p in (PANEL_DIST_DIR / sub).rglob("*") if p.is_file()]
    seen, copied = set(), []
    optional = set()     # fonts a stylesheet lists as alternatives: copy the ones Panel ships
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        src = source_of(rel)
        if not src.is_file() and rel in optional:
            continue
        if not src.is_file():
            raise SystemExit(f"make site: the page references {rel}, but {src} does not exist")
        dst = out / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
        copied.append(rel)
        if src.suffix == ".css":   # fonts and images the stylesheet pulls in
            for ref in CSS_URL.findall(src.read_text(errors="replace")):
                if not ref.startswith(("data:", "#", "http:", "https:", "//")):
                    target = os.path.normpath((Path(rel).parent / ref.split("?")[0].split("#")[0]).as_posix())
                    todo.append(target)
                    optional.add(target)
    return sorted(copied)
