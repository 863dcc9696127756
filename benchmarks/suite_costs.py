"""Where `make test`'s time goes, from the JUnit XML pytest writes (`make pytest`: artifacts/pytest.xml): each test's
seconds summed by kind (the browser tests of the built site, those under `panel serve`, the rest) and by file.

    python benchmarks/suite_costs.py [artifacts/pytest.xml] [--top N]

Under `make test` two workers run side by side and each browser group runs on one of them, one test at a time
(tests/conftest.py), so the wall time is at least the longest group's sum: that sum is the floor the browser
tests set, whatever the number of workers.
"""
from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The xdist groups tests/conftest.py gives the browser tests (marker `ui`): those on the session's shared built site,
#: and the others (panel serve, or a site of their own); pytest names a grouped test `name@group`.
KINDS = {"browser-site": "browser: the built site", "browser": "browser: other", "": "no browser"}


def file_of(classname: str) -> str:
    """tests/web/test_x.py for "tests.web.test_x" or "tests.web.test_x.TestClass" (a class is CapWords); the
    module's dotted name where it is not a file under the repository."""
    parts = classname.split(".")
    while len(parts) > 1 and parts[-1][:1].isupper():
        parts.pop()
    path = Path(*parts).with_suffix(".py")
    return str(path) if (ROOT / path).is_file() else ".".join(parts)


def costs(xml: Path) -> dict:
    root = ET.parse(xml).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    if suite is None:
        raise ValueError(f"{xml}: no <testsuite> in this JUnit XML")
    by_kind: dict[str, list[float]] = defaultdict(list)
    by_file: dict[tuple[str, str], float] = defaultdict(float)
    for case in suite.iter("testcase"):
        seconds = float(case.get("time", 0))
        group = case.get("name", "").rpartition("@")[2] if "@" in case.get("name", "") else ""
        kind = group if group in KINDS else ""
        by_kind[kind].append(seconds)
        by_file[(file_of(case.get("classname", "")), kind)] += seconds
    return {"wall": float(suite.get("time", 0)), "by_kind": by_kind, "by_file": by_file}


def main() -> int:
    ap = argparse.ArgumentParser(prog="python benchmarks/suite_costs.py", description=__doc__.splitlines()[0])
    ap.add_argument("xml", nargs="?", type=Path, default=ROOT / "artifacts" / "pytest.xml")
    ap.add_argument("--top", type=int, default=20, help="how many files to list (default 20)")
    args = ap.parse_args()
    if not args.xml.is_file():
        print(f"suite_costs: {args.xml} not found: `make pytest` writes it", file=sys.stderr)
        return 1
    found = costs(args.xml)
    total = sum(sum(v) for v in found["by_kind"].values())
    tests = sum(len(v) for v in found["by_kind"].values())
    print(f"pytest wall time {found['wall']:,.0f} s; {tests:,} tests took {total:,.0f} s of worker time")
    print(f"{'kind':<26}{'tests':>7}{'seconds':>10}{'share':>8}")
    for kind, label in KINDS.items():
        times = found["by_kind"].get(kind, [])
        print(f"{label:<26}{len(times):>7}{sum(times):>10,.0f}{sum(times) / max(total, 1e-9):>8.0%}")
    print(f"\nthe {args.top} costliest files")
    print(f"{'seconds':>8}  {'kind':<26}file")
    for (file, kind), seconds in sorted(found["by_file"].items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"{seconds:>8,.0f}  {KINDS[kind]:<26}{file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
