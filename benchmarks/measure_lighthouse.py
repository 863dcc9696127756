"""Lighthouse on the built site, desktop and mobile, printed side by side with another build's.

    python benchmarks/measure_lighthouse.py [--dir _site] [--baseline OTHER_SITE] [--runs 1]

Runs tests/build/lighthouse_flow.mjs (Lighthouse 12.2.3 from package.json, `npm ci` first) on a cold
visit measured until the page is live, in Debian's Chromium (CHROME_PATH), for each site in turn,
its runs interleaved with the baseline's; prints the median of each figure and the ratio new/baseline.
Build the baseline commit into its own folder first (see benchmarks/measure_site.py).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))       # run as a script: the repository's root, for the build package

from tools import serve  # noqa: E402

HERE = Path(__file__).resolve().parent

FLOW = HERE.parent / "tests" / "build" / "lighthouse_flow.mjs"
# figure -> (audit id, unit); the score is the performance category's
AUDITS = {"first contentful paint": ("first-contentful-paint", "s"),
          "largest contentful paint": ("largest-contentful-paint", "s"),
          "total blocking time": ("total-blocking-time", "ms"),
          "speed index": ("speed-index", "s"),
          "cumulative layout shift": ("cumulative-layout-shift", "")}


def one_run(directory: Path, form: str) -> dict:
    server, url = serve.start(directory)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "report.json"
            out = subprocess.run(["node", str(FLOW), url, form, str(report)], capture_output=True, text=True,
                                 timeout=600, env={**os.environ, "CHROME_PATH": os.environ.get("CHROME_PATH", "/usr/bin/chromium")})
            if out.returncode != 0 or not report.exists():
                raise SystemExit(f"measure_lighthouse: the flow failed on {directory}: {out.stderr[-2000:]}")
            lhr = json.loads(report.read_text())
    finally:
        server.shutdown()
    figures = {"performance": lhr["categories"]["performance"]["score"]}
    for name, (audit, unit) in AUDITS.items():
        value = lhr["audits"][audit]["numericValue"]
        figures[name] = value / 1000 if unit == "s" else value
    return figures


def show(name: str, value: float) -> str:
    unit = dict((n, u) for n, (_, u) in AUDITS.items()).get(name, "")
    if unit == "s":
        return f"{value:.2f} s"
    if unit == "ms":
        return f"{value:.0f} ms"
    return f"{value:.3f}" if name != "performance" else f"{value:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/measure_lighthouse.py", description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=HERE.parent / "_site")
    ap.add_argument("--baseline", type=Path, help="another built site, measured in the same run")
    ap.add_argument("--runs", type=int, default=1, help="runs per site and form factor (median printed)")
    args = ap.parse_args()
    sites = {"this build": args.dir, **({"baseline": args.baseline} if args.baseline else {})}
    for form in ("desktop", "mobile"):
        runs: dict[str, list[dict]] = {k: [] for k in sites}
        for _ in range(args.runs):
            for label, directory in sites.items():
                runs[label].append(one_run(directory, form))
        print(f"\nLighthouse {form} ({args.runs} run(s) per site, median)")
        header = ["figure", *sites, *(["new/baseline"] if args.baseline else [])]
        print("| " + " | ".join(header) + " |\n|" + " --- |" * len(header))
        for name in ["performance", *AUDITS]:
            med = {k: statistics.median(r[name] for r in v) for k, v in runs.items()}
            cells = [show(name, med[k]) for k in sites]
            if args.baseline:
                base = med["baseline"]
                cells.append(f"{med['this build'] / base:.2f}" if base else "-")
            print("| " + " | ".join([name, *cells]) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
