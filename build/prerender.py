"""Render the app once in CPython: the first paint of the page, and the list of what it imports.

Run in its own process (make_site.py does), from the repository's root, so that Panel reads
PANEL_CDN_ROOT at import and the import record is the app's alone:

    python -m build.prerender web/app.py OUT.json

Packages the page must never load in the browser (plan.NEVER_SHIP) are made unimportable
here, so an app that starts needing one fails the build instead of silently growing it.
The page's name, description and colour are read from web/ (IDENTITY) and recorded too.
"""
from __future__ import annotations

import importlib
import importlib.metadata as md
import json
import os
import re
import sys
import sysconfig
from pathlib import Path

from .plan import never_imports

# Absolute, so Panel treats it as a CDN; make_site.py rewrites it to a relative ./static/ path.
SENTINEL = "https://sdpa-lab.invalid/static/panel/"
# What the site says it is (render.Identity), from the page's own modules: field -> (module, name).
IDENTITY = {"title": ("web.page", "TITLE"), "short_name": ("web.page", "SHORT_TITLE"),
            "description": ("web.page", "DESCRIPTION"), "theme_color": ("web.theme", "HEADER_BG")}


# The app's first model id. The worker starts Bokeh's id counter here too, just before it runs the
# app (templates/sdpa_worker.py build_app, given CONFIG.firstId): the same code then names the same models the same way in
# CPython and in Pyodide, so the page can keep the pre-rendered views and link them to the live
# document instead of drawing it again (templates/adopt.js). BokehJS names its own models with
# uuid4s, so these never collide with the browser's.
FIRST_ID = 1_000_000


def start_ids() -> None:
    """Bokeh's simple ids from FIRST_ID on: p1000001, p1000002, ... (what the worker's sdpa_worker.build_app does)."""
    import bokeh.util.serialization as serialization
    from bokeh.settings import settings
    settings.simple_ids.set_value(True)
    serialization._simple_id = FIRST_ID


def deterministic_ids() -> None:
    """Two builds of one commit write the same page (so a redeploy without changes is no "new
    version"), and the app's models get the ids the worker will give them (FIRST_ID). Bokeh's model
    ids are its counter (BOKEH_SIMPLE_IDS), restarted when the app starts; documents, roots and
    elements get uuid4s from Bokeh's make_globally_unique_id and Panel, drawn here from a seeded
    generator: they only need to be unique within the page."""
    import random
    import uuid

    from bokeh.application import Application
    os.environ["BOKEH_SIMPLE_IDS"] = "yes"
    rng = random.Random("sdpa-lab prerender")
    uuid.uuid4 = lambda: uuid.UUID(int=rng.getrandbits(128), version=4)
    run_app = Application.initialize_document

    def initialize_document(self, doc):
        start_ids()
        return run_app(self, doc)
    Application.initialize_document = initialize_document     # type: ignore[method-assign]  # Bokeh's, patched


# Panel names template roots "<area>-<id(obj)>" and tags jslink callbacks [[id(link), ...]]: memory
# addresses, different at every run. Each becomes a small number (one per address, in order of
# appearance), still unique within the page; nothing in the browser reads them.
ADDRESS = re.compile(r'("name":"[A-Za-z_]+-|"tags":\[\[)(\d{9,})(?=[",\]])')


def stable_addresses(html: str) -> str:
    seen: dict[str, str] = {}
    return ADDRESS.sub(lambda m: m.group(1) + seen.setdefault(m.group(2), str(len(seen) + 1)), html)


# The document Panel writes into its page: its JSON (HTML-escaped, as BokehJS reads it) and where its
# roots go (render_items).
DOC_JSON = re.compile(r'<script type="application/json" id="([^"]+)">\s*(.*?)\s*</script>', re.S)
RENDER_ITEMS = re.compile(r"const render_items = (\[.*?\]);\n")


def document_of(html: str) -> dict:
    """The pre-rendered document of one page: ``{"docs_json": escaped JSON text, "docid", "root_ids"}``."""
    docs = DOC_JSON.findall(html)
    items = RENDER_ITEMS.findall(html)
    if len(docs) != 1 or len(items) != 1:
        raise SystemExit(f"prerender: expected one document and one render_items in Panel's page, found "
                         f"{len(docs)} and {len(items)} (did Panel's page template change?)")
    item = json.loads(items[0])[0]
    return {"docs_json": docs[0][1], "docid": item["docid"], "root_ids": item["root_ids"]}


def first_paints(render, default_html: str) -> dict:
    """The first paint of every link the site pre-renders (web.urlstate.first_paint_links), but the
    default one (which is index.html itself): the app run again for each link, ids from FIRST_ID."""
    from web.page import SEARCH_ENV
    from web.urlstate import DEFAULT_FIRST_PAINT, first_paint_links
    roots = len(document_of(default_html)["root_ids"])
    out = {}
    for key, search in first_paint_links().items():
        if key == DEFAULT_FIRST_PAINT:
            continue
        os.environ[SEARCH_ENV] = search
        try:
            doc = document_of(stable_addresses(render()))
        finally:
            del os.environ[SEARCH_ENV]
        if len(doc["root_ids"]) != roots:       # boot.js puts each root where the default page has one
            raise SystemExit(f"prerender: {search} has {len(doc['root_ids'])} template roots, the default page {roots}")
        out[key] = doc
    return out


def default_key() -> str:
    from web.urlstate import DEFAULT_FIRST_PAINT
    return DEFAULT_FIRST_PAINT


def state_keys() -> list[str]:
    from web.urlstate import STATE_KEYS
    return list(STATE_KEYS)


# What `python -m build.prerender` itself imported before the page ran: runpy, and this package. The
# import record below is the page's, so these are left out of it. (Python's start-up and runpy also load
# a few standard-library modules, such as contextlib and importlib.util; Panel imports those too.)
RUNNER = "runpy"
OWN_PACKAGE = __spec__.name.partition(".")[0] if __spec__ is not None else None


def page_modules(names) -> list[str]:
    """The names among `names` (of sys.modules) that are the page's imports, not this script's."""
    return sorted(n for n in names if n != RUNNER and n.partition(".")[0] != OWN_PACKAGE)


def main(app: str, out: str) -> None:
    # forget runpy (if the page imports it, it is imported and recorded again)
    sys.modules.pop(RUNNER, None)
    os.environ["PANEL_CDN_ROOT"] = SENTINEL
    os.environ["SDPA_LAB_STATIC_SITE"] = "1"     # web.options.STATIC_SITE_ENV (set before web is imported)
    for name in never_imports():
        sys.modules[name] = None      # type: ignore[assignment]  # find_spec() -> None: "not installed" to Bokeh and Panel
    deterministic_ids()
    app_path = Path(app).resolve()
    # Like `panel serve web/app.py` next to the repository: both `web.x` and `x` import.
    sys.path[:0] = [str(app_path.parent), str(app_path.parent.parent)]

    from panel.io.convert import script_to_html

    import bokeh.util.serialization as serialization
    counter = serialization._simple_id

    def render() -> str:
        # Bokeh's counter as at the first run: models made before the app (the document's own)
        # must not take ids the app will take again from FIRST_ID
        serialization._simple_id = counter
        page, _ = script_to_html(str(app_path), runtime="pyodide-worker", requirements=[], prerender=True,
                                 panel_version="auto", inline=False, manifest=None, compiled=False)
        return page

    html = stable_addresses(render())
    firsts = first_paints(render, html)
    modules = page_modules(m for m, mod in list(sys.modules.items()) if mod is not None)
    top = {m.split(".")[0] for m in modules}
    owners = md.packages_distributions()
    dists = sorted({d for m in top for d in owners.get(m, [])})
    first_party = sorted(m for m in top if (Path(app_path.parent) / f"{m}.py").exists())
    # Standard-library modules the page imports, as paths inside the stdlib: the build ships
    # these as bytecode in Pyodide's stdlib zip (the rest stay sources, imported on demand).
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    used = set()
    for module in (sys.modules[m] for m in modules):
        path = Path(getattr(module, "__file__", None) or "/").resolve()
        if path.suffix == ".py" and path.is_relative_to(stdlib) and "site-packages" not in path.parts:
            used.add(path.relative_to(stdlib).as_posix())
    identity = {field: getattr(importlib.import_module(module), name) for field, (module, name) in IDENTITY.items()}
    from .early_states import all_states       # after the import record: its own imports are the build's
    early = all_states()
    Path(out).write_text(json.dumps({"html": html, "distributions": dists, "top_level": sorted(top), "modules": modules,
                                     "sibling_modules": first_party, "stdlib_files": sorted(used),
                                     "identity": identity, "first_paints": firsts,
                                     "default_first_paint": default_key(), "state_keys": state_keys(),
                                     "early_states": early}))


if __name__ == "__main__":
    main(*sys.argv[1:3])
