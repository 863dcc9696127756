"""benchmarks/suite_costs.py: make test's time from pytest's JUnit XML, summed by kind (the two browser groups of
tests/conftest.py, the rest) and by file; tested on the XML pytest itself writes for a small run."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from benchmarks import suite_costs

ROOT = Path(__file__).resolve().parents[2]

TESTS = '''
import time
import pytest

@pytest.mark.parametrize("n", [1, 2])
def test_plain(n):
    time.sleep(0.05 * n)

class TestGrouped:
    @pytest.mark.xdist_group("browser-site")
    def test_site(self):
        time.sleep(0.2)
'''


def test_costs_are_summed_by_kind_and_file(tmp_path):
    """pytest writes the XML of a run (without xdist a grouped test keeps its plain name, so the run renames one
    as xdist does, `name@group`); each test's seconds land in its kind and its file, a class's tests in their
    module's file."""
    (tmp_path / "test_small.py").write_text(TESTS)
    xml = tmp_path / "out.xml"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                           f"--junitxml={xml}", str(tmp_path / "test_small.py")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    xml.write_text(xml.read_text().replace('name="test_site"', 'name="test_site@browser-site"'))
    found = suite_costs.costs(xml)
    plain, site = found["by_kind"][""], found["by_kind"]["browser-site"]
    assert len(plain) == 2 and len(site) == 1
    assert 0.15 <= sum(plain) < 5 and 0.2 <= site[0] < 5
    assert set(found["by_file"]) == {("test_small", ""), ("test_small", "browser-site")}      # not under ROOT
    assert found["wall"] >= sum(plain) + site[0]


def test_a_module_path_is_found_from_its_class_name():
    assert suite_costs.file_of("tests.build.test_steps") == "tests/build/test_steps.py"
    assert suite_costs.file_of("tests.build.test_steps.TestSomething") == "tests/build/test_steps.py"
    assert suite_costs.file_of("not.a.file") == "not.a.file"


def test_a_missing_file_is_said(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "suite_costs.py"), str(tmp_path / "none.xml")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "none.xml not found" in done.stderr
