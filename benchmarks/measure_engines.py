"""Time to live in each browser engine, one built site after another in one run: Chromium (Playwright, as
benchmarks/measure_site.py boots it), Firefox ESR and WebKitGTK (Selenium, tools/engines.py), each from a fresh
profile: a cold visit, then once the offline copy and the snapshot are settled, a reload with the server gone
(the warm boot). Printed with each engine's ratio to Chromium; never asserted.

    python benchmarks/measure_engines.py [--dir _site] [--baseline OTHER_SITE] [--boots 1] [--engines chromium,firefox,webkit]

With --baseline both sites are measured in the same run, engine by engine, boots interleaved.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))       # run as a script: the repository's root, for the build package

from tools import engines, serve  # noqa: E402
from measure_site import ARGS, BOOT_MS, SNAPSHOT_SAVED, boot_pair  # noqa: E402

HERE = Path(__file__).resolve().parent
LIVE = "return !!(window.sdpaLab && (sdpaLab.ready || sdpaLab.error))"
STEPS = "return {error: sdpaLab.error || null, boot: sdpaLab.boot || null, steps: sdpaLab.steps}"
OFFLINE = "return !!(window.sdpaLab && sdpaLab.offlineReady)"
# the snapshot made or given up; a build without snapshots passes at once
SNAPSHOT = f"return {SNAPSHOT_SAVED}"
SNAPSHOT_S = 60       # an older build that never settles its snapshot in an engine is reloaded after this


def until(driver, script: str, what: str, seconds: float = BOOT_MS / 1e3, must: bool = True) -> object:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            value = driver.execute_script(script)
        except Exception:          # the document is being replaced: not yet
            value = None
        if value:
            return value
        time.sleep(0.1)
    if must:
        raise SystemExit(f"measure: not {what} within {seconds:.0f} s")
    print(f"  (not {what} within {seconds:.0f} s: going on)")
    return None


def selenium_pair(name: str, directory: Path) -> dict:
    """One engine's cold visit and warm reload (server closed), as tests/build/test_site_engines.py makes them."""
    with tempfile.TemporaryDirectory() as scratch:
        driver, stop = engines.engine(name, Path(scratch))()
        server, url = serve.start(directory)
        try:
            driver.set_window_size(1280, 900)
            driver.get(url)
            until(driver, LIVE, "live (cold)")
            cold = driver.execute_script(STEPS)
            until(driver, OFFLINE, "ready for offline use")
            until(driver, SNAPSHOT, f"{name}: the snapshot settled", SNAPSHOT_S, must=False)
            server.shutdown()
            server.server_close()
            driver.execute_script("window.__sdpaBefore = true; location.reload();")
            until(driver, "return window.__sdpaBefore === undefined", "reloaded")
            until(driver, LIVE, "live (warm)")
            warm = driver.execute_script(STEPS)
        finally:
            server.shutdown()
            driver.quit()
            if stop is not None:
                stop()
    for kind, boot in (("cold", cold), ("warm", warm)):
        if boot["error"]:
            raise SystemExit(f"measure: {name} {kind}: the page failed to boot: {boot['error']}")
    return {"cold": cold, "warm": warm}


def chromium_pair(browser, directory: Path) -> dict:
    pair = boot_pair(browser, directory)
    return {kind: {"boot": pair[kind].get("boot"), "steps": pair[kind]["steps"]} for kind in ("cold", "warm")}


def main() -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/measure_engines.py", description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=HERE.parent / "_site")
    ap.add_argument("--baseline", type=Path, help="another built site, measured in the same run")
    ap.add_argument("--boots", type=int, default=1, help="cold+warm boots per site and engine")
    ap.add_argument("--engines", default="chromium,firefox,webkit")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()
    names = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = sorted(set(names) - {"chromium", *engines.NAMES})
    if unknown:
        ap.error(f"unknown engines {unknown}: choose from chromium, {', '.join(engines.NAMES)}")
    sites = {"this": args.dir, **({"baseline": args.baseline} if args.baseline else {})}
    for site, directory in sites.items():
        if not (directory / "index.html").is_file():
            ap.error(f"{site}: {directory} has no index.html (build it first: python -m build.make_site --out DIR)")
    runs: dict[tuple[str, str], list[dict]] = {}
    for name in names:
        if name == "chromium":
            from playwright.sync_api import sync_playwright
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=args.chromium, args=ARGS)
                for _ in range(args.boots):
                    for site, directory in sites.items():
                        runs.setdefault((site, name), []).append(chromium_pair(browser, directory))
                browser.close()
        else:
            for _ in range(args.boots):
                for site, directory in sites.items():
                    try:
                        runs.setdefault((site, name), []).append(selenium_pair(name, directory))
                    except engines.Missing as missing:
                        print(f"{name}: skipped, {missing}")
                        break

    def live(site: str, name: str, kind: str) -> float | None:
        boots = runs.get((site, name))
        return statistics.median(b[kind]["steps"]["interactive"] / 1e3 for b in boots) if boots else None

    print(f"time to live, s (median of {args.boots}; warm: a reload with the server gone); ratio to Chromium")
    for site in sites:
        for name in names:
            cells = []
            for kind in ("cold", "warm"):
                t, ref = live(site, name, kind), live(site, "chromium", kind)
                if t is None:
                    cells.append(f"{kind} -")
                    continue
                ratio = f" ({t / ref:.2f}x)" if ref and name != "chromium" else ""
                boot = runs[(site, name)][-1][kind]["boot"]
                cells.append(f"{kind} {t:5.2f}{ratio}" + (f" from {boot}" if boot else ""))
            print(f"  {site:8s} {name:9s} " + ";  ".join(cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
