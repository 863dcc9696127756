"""A damaged file in the offline copy heals on the next plain reload (issue 57): the worker checks what it takes
from the offline copy before anything reads it, deletes a damaged file, fetches it again, and keeps it again.
Before, every plain reload failed on it ("is damaged") until "Reload from the network" was pressed."""
from __future__ import annotations

import pytest

from build import offline
from sitebuild import NO_DIST, pyodide_dist
from test_site_snapshot import open_page, wait_ready
from waits import until

pytestmark = pytest.mark.ui

# The offline copy's entry for a file, read or replaced from the page: the worker stored it as path?sha256=…
ENTRY = """async ([cache, url, flip]) => {
  const c = await caches.open(cache);
  const hit = await c.match(url);
  if (!hit) return null;
  const body = new Uint8Array(await hit.arrayBuffer());
  if (flip) {
    body[body.length >> 1] ^= 1;
    await c.put(url, new Response(body, {headers: hit.headers}));
  }
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", body));
  return [...digest].map((b) => b.toString(16).padStart(2, "0")).join("");
}"""


def test_a_damaged_file_of_the_offline_copy_heals_on_a_plain_reload(site, served, browser):
    if pyodide_dist() is None:
        pytest.skip(NO_DIST)
    live_site = served
    context, page, errors = open_page(browser)
    page.goto(live_site)
    wait_ready(page)
    path, sha256, _ = next(f for f in site.config["prefetch"] if f[0].endswith(".wasm"))
    url = f"{live_site}{path}?sha256={sha256}"
    until(page, f"() => caches.open({offline.CACHE!r}).then((c) => c.match({url!r})).then(Boolean)", timeout=120,
          what="the first visit keeps the wasm in the offline copy")
    # the background worker that makes the warm-boot snapshot reads the offline copy too (and would heal it
    # first): damage it once that worker is done
    page.wait_for_function("sdpaLab.snapshot && sdpaLab.snapshot.state !== 'making'", timeout=240_000)
    damaged = page.evaluate(ENTRY, [offline.CACHE, url, True])
    assert damaged != sha256
    page.reload()
    wait_ready(page)
    assert page.evaluate("sdpaLab.healed") == [path]
    # kept again, whole, once the page is live (the worker stores what it checked after "keep-offline", which follows
    # "ready"; the wait this replaces passed on the promise itself, before anything was stored: tests/waits.py)
    until(page, f"async (arg) => (await ({ENTRY})(arg)) === {sha256!r}", [offline.CACHE, url, False], timeout=120,
          what="the healed file kept again, whole")
    assert [e for e in errors if "offline copy was damaged" not in e] == [], errors
    context.close()
