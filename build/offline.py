"""The offline policy, in one place: what the service worker stores, under which cache, where it is
registered, and how a host should cache it. sw.js (templates/) carries the policy out; boot.js
registers it; serve.py sends the HTTP header; the tests read this module and the policy the build
embedded in sw.js (runtime.embedded(sw_js, "POLICY")).

Every file of the site except sw.js itself is precached, keyed by its sha256: a redeploy
downloads only the files whose bytes changed, and sw.js (which holds the list) changes exactly
when some file does, which is how the browser learns there is a new version.
"""
from __future__ import annotations

import hashlib
import html
import re
from pathlib import Path

SW_FILE = "sw.js"
REGISTRATION = {"url": f"./{SW_FILE}", "scope": "./"}     # relative: the site works under any sub-path
CACHE = "sdpa-lab-assets"       # one cache for every version: entries are keyed by content, not by build
# The worker's memory snapshot (templates/worker.js `snapshots`): a folder of the origin's private file
# system, which sw.js never sees; it holds one snapshot, this version's, made in the browser after a
# first visit.
SNAPSHOT_FOLDER = "sdpa-lab-snapshot"
# For the host (tools/serve.py; any static host should do the same): always revalidate. The ETag
# makes an unchanged file a 304, and the browser never holds a stale sw.js.
CACHE_CONTROL = "no-cache"


#: What the offline copy leaves out besides: the early states (render.EARLY_DIR: 135 files, ~0.7 MB gzipped) move the
#: main control while Python is on its way on a first visit; a visit from the offline copy boots warm, in seconds.
NOT_STORED = ("early/",)


def stored(rel: str) -> bool:
    """The offline rule: the service worker stores every file of the site (``rel``, site-relative, with
    "/") but itself, dotfiles (host configuration such as .nojekyll) and NOT_STORED."""
    return rel != SW_FILE and not rel.rsplit("/", 1)[-1].startswith(".") and not rel.startswith(NOT_STORED)


def precached(site: Path) -> dict[str, str]:
    """{site-relative path: sha256} of every file the service worker stores (``stored``)."""
    return {p.relative_to(site).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(site.rglob("*")) if p.is_file() and stored(p.relative_to(site).as_posix())}


#: The page's Content-Security-Policy, as index.html carries it (build/render.py writes it into a <meta>)
CSP_META = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">')


def page_csp(site: Path) -> str | None:
    """The policy index.html's <meta> holds, for sw.js to send as a header with every response it answers (a
    static host such as GitHub Pages sends none): the page, its worker's script and every later response then
    carry it, where a <meta> governs only the document it is in."""
    found = CSP_META.search((site / "index.html").read_text(encoding="utf-8")) if (site / "index.html").is_file() else None
    return html.unescape(found[1]) if found else None


def policy(site: Path) -> dict:
    """What sw.js is built with (runtime.service_worker)."""
    return {"cache": CACHE, "assets": precached(site), "csp": page_csp(site)}
