"""The page under `panel serve` on a free port, for the browser tests and the latency script."""
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "test-results" / "web"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_panel_serve(port: int) -> subprocess.Popen:
    """`panel serve web/app.py` in the background; returns once the page answers HTTP."""
    panel = Path(sys.executable).with_name("panel")
    proc = subprocess.Popen([str(panel), "serve", str(ROOT / "web" / "app.py"), "--port", str(port),
                             "--address", "127.0.0.1", "--allow-websocket-origin", f"127.0.0.1:{port}"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "BOKEH_PY_LOG_LEVEL": "warning"})
    deadline = time.monotonic() + 60
    while True:  # poll the condition "the server answers", bounded by the deadline
        if proc.poll() is not None:
            raise RuntimeError(f"panel serve exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/app", timeout=2) as r:
                if r.status == 200:
                    return proc
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("panel serve did not answer within 60 s")
            time.sleep(0.2)


@pytest.fixture(scope="session")
def app_url():
    port = free_port()
    proc = start_panel_serve(port)
    yield f"http://127.0.0.1:{port}/app"
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="session")
def screenshot_dir():
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS
