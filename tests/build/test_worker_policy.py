"""The Python worker runs under the page's Content-Security-Policy on every visit, the first included:
nothing it does (fetch, a no-cors POST, importScripts, Python's pyfetch) reaches another origin."""
from __future__ import annotations

import http.server
import threading

import pytest

from sitebuild import NO_DIST, pyodide_dist

pytestmark = pytest.mark.ui

PROBES = {
    "fetch GET": "fetch(OTHER + 'get').then(() => 'reached', (e) => 'blocked: ' + e)",
    "no-cors POST": "fetch(OTHER + 'post', {method: 'POST', mode: 'no-cors', body: 'secret'})"
                    ".then(() => 'reached', (e) => 'blocked: ' + e)",
    "importScripts": "(() => { try { importScripts(OTHER + 'script.js'); return 'reached'; }"
                     " catch (e) { return 'blocked: ' + e; } })()",
    "pyfetch": "self.pyodide.runPythonAsync(`from pyodide.http import pyfetch\\n"
               "try:\\n    await pyfetch('${OTHER}pyfetch')\\n    r = 'reached'\\n"
               "except Exception as e:\\n    r = 'blocked: ' + str(e)\\nr`)",
}


@pytest.fixture
def other_origin():
    """A server on another port (another origin) that records every request it gets."""
    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def _any(self):
            seen.append(f"{self.command} {self.path}")
            self.send_response(200)
            self.send_header("Access-Control-Allow-Origin", "*")
            self.send_header("Content-Type", "text/javascript")
            self.end_headers()
            self.wfile.write(b"self.leaked = true;")

        do_GET = do_POST = _any

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", seen
    server.shutdown()


def python_worker(page):
    workers = [w for w in page.workers if w.evaluate("typeof self.pyodide === 'object'")]
    assert len(workers) == 1, [w.url for w in page.workers]
    return workers[0]


def probe(page, other: str) -> dict[str, str]:
    worker = python_worker(page)
    assert worker.url.startswith("blob:"), worker.url
    return {name: worker.evaluate(f"(async () => {{ const OTHER = {other!r}; return await {code}; }})()")
            for name, code in PROBES.items()}


def test_worker_cannot_reach_other_origins(site, served, browser, other_origin):
    """First visit and a visit served by the service worker: every probe from the worker is blocked and
    the other origin's server sees no request."""
    if pyodide_dist() is None:
        pytest.skip(NO_DIST)
    other, seen = other_origin
    context = browser.new_context()
    page = context.new_page()
    violations = []
    page.on("console", lambda m: "Content Security Policy" in m.text and violations.append(m.text))
    try:
        page.goto(served)
        page.wait_for_function("window.sdpaLab && (window.sdpaLab.ready || window.sdpaLab.error)", timeout=120_000)
        assert page.evaluate("window.sdpaLab.error") is None
        assert violations == [], f"the page itself breaks its policy: {violations}"
        first = probe(page, other)
        assert all(v.startswith("blocked") for v in first.values()), first

        page.wait_for_function("window.sdpaLab.offlineReady", timeout=60_000)
        page.reload()
        page.wait_for_function("window.sdpaLab && (window.sdpaLab.ready || window.sdpaLab.error)", timeout=120_000)
        assert page.evaluate("navigator.serviceWorker.controller !== null")
        again = probe(page, other)
        assert all(v.startswith("blocked") for v in again.values()), again
    finally:
        context.close()
    assert seen == [], f"requests from the worker reached another origin: {seen}"

    # control: with the policy bypassed the same probes do reach that server (the test can fail)
    context = browser.new_context(bypass_csp=True, service_workers="block")
    try:
        page = context.new_page()
        page.goto(served)
        page.wait_for_function("window.sdpaLab && (window.sdpaLab.ready || window.sdpaLab.error)", timeout=120_000)
        assert probe(page, other)["fetch GET"] == "reached"
    finally:
        context.close()
    assert "GET /get" in seen
