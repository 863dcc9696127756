"""The page under `panel serve` on a free port (see panel_server.py), for the browser tests."""
import subprocess
from pathlib import Path

import pytest
from panel_server import free_port, start_panel_serve

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "test-results" / "web"


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
