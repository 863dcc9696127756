"""`panel serve web/app.py` on a free port: shared by the browser tests and benchmarks/bench_page.py."""
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_panel_serve(port: int) -> subprocess.Popen:
    """Start the server in the background; return once the page answers HTTP.

    Its output goes to a temporary file, not a pipe: a pipe nobody reads fills up and stalls the
    server mid-session."""
    panel = Path(sys.executable).with_name("panel")
    # SDPA_SERVE_LOG=<file> keeps the server's log there (a race that only load shows: read its traceback)
    log = open(os.environ["SDPA_SERVE_LOG"], "w+b") if os.environ.get("SDPA_SERVE_LOG") else tempfile.TemporaryFile()
    proc = subprocess.Popen([str(panel), "serve", str(ROOT / "web" / "app.py"), "--port", str(port),
                             "--address", "127.0.0.1", "--allow-websocket-origin", f"127.0.0.1:{port}"],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "BOKEH_PY_LOG_LEVEL": "warning"})
    # generous: on a loaded machine (load average 8 with 2 cores) importing Panel alone can take a minute;
    # a server that has exited is reported at once below
    deadline = time.monotonic() + 300

    def failed(what: str) -> RuntimeError:
        proc.kill()
        log.seek(0)
        return RuntimeError(f"panel serve {what}: {log.read().decode()[-2000:]}")

    while True:  # first the condition "the server listens", bounded by the deadline
        if proc.poll() is not None:
            raise failed("exited")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise failed("did not listen within 300 s")
            time.sleep(0.2)
    # then one request for the page, waited for as long as the deadline allows: each request builds a whole
    # session, so a short timeout retried under load would only pile up sessions the server still builds
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/app", timeout=max(deadline - time.monotonic(), 30)) as r:
            if r.status == 200:
                return proc
            raise failed(f"answered HTTP {r.status}")
    except OSError as err:
        raise failed(f"did not serve the page ({err})") from err
