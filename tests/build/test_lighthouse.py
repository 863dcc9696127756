"""Lighthouse (npm lighthouse 12.2.3, pinned in package.json) on the built site in Chromium, desktop and
mobile: accessibility, best practices and SEO scores, and no layout shift from first paint until the
live page has replaced the pre-rendered one. Scores and layout shift are asserted; timings (the
performance score) are printed, never asserted."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from node_tools import node, tool

from sitebuild import NO_DIST, ROOT

pytestmark = [pytest.mark.ui, pytest.mark.slow]

FLOW = Path(__file__).with_name("lighthouse_flow.mjs")
REPORTS = ROOT / "artifacts" / "lighthouse"
MIN_SCORE = {"accessibility": 0.95, "best-practices": 0.95, "seo": 0.95}
MAX_CLS = 0.1


@pytest.fixture(scope="module")
def lighthouse(site, served):
    """Run the flow on the served site: returns form factor -> its summary (scores, cls, failing audits)."""
    if not site.self_hosted:
        pytest.skip(f"Lighthouse audits the self-hosted site, whose page boots; {NO_DIST}; this build loads "
                    f"Pyodide from {site.config['pyodideJs'].rsplit('/', 1)[0]}/ at run time")
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("Debian's chromium is not installed (make test installs it: apt-get install chromium)")
    tool("lighthouse/package.json")
    tool("puppeteer-core/package.json")
    REPORTS.mkdir(parents=True, exist_ok=True)
    results = {}

    def run(form_factor: str) -> dict:
        if form_factor not in results:
            report = REPORTS / f"{form_factor}.json"
            done = subprocess.run([node(), str(FLOW), served, form_factor, str(report)], capture_output=True,
                                  text=True, timeout=600, cwd=ROOT, env={**os.environ, "CHROME_PATH": chromium})
            assert done.returncode == 0, f"Lighthouse failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
            results[form_factor] = json.loads(done.stdout.strip().splitlines()[-1])
        return results[form_factor]
    return run


@pytest.mark.parametrize("form_factor", ["desktop", "mobile"])
def test_lighthouse_scores_and_no_layout_shift(lighthouse, form_factor):
    """Accessibility, best practices and SEO score at least 0.95, and the cumulative layout shift from
    navigation until the page is live stays under 0.1 (phone: the sidebar is collapsed from the first
    paint, the boot panel keeps its size, the live page takes the pre-rendered one's place)."""
    got = lighthouse(form_factor)
    print(f"\nLighthouse {form_factor}: {got['categories']}, CLS {got['cls']:.3f} "
          f"(report: {(REPORTS / f'{form_factor}.json').relative_to(ROOT)})")
    assert got["runtimeError"] is None, got["runtimeError"]
    assert got["ready"] and got["error"] is None, f"the page did not boot: {got['error']}"
    failing = "\n".join(f"  {cat} {audit} {score}: {title}" for cat, audit, score, title in got["failing"]
                        if cat in MIN_SCORE)
    low = {cat: got["categories"][cat] for cat, least in MIN_SCORE.items() if got["categories"][cat] < least}
    assert low == {}, f"scores below {MIN_SCORE}: {low}\nfailing audits:\n{failing}"
    assert got["cls"] < MAX_CLS, f"cumulative layout shift {got['cls']:.3f}"
