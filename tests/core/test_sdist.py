"""Test what ships, source edition: the sdist holds sdpa_core with its own tests, and they run from it."""
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Path:
    """The sdist as hatchling builds it, unpacked: its top folder."""
    out = tmp_path_factory.mktemp("sdist")
    subprocess.run([sys.executable, "-m", "hatchling", "build", "--target", "sdist", "-d", str(out)], cwd=ROOT,
                   check=True, capture_output=True)
    (archive,) = out.glob("sdpa_core-*.tar.gz")
    with tarfile.open(archive) as tf:
        tf.extractall(out, filter="data")
    return out / archive.name.removesuffix(".tar.gz")


def test_sdist_ships_the_package_its_tests_and_its_licence_and_nothing_they_do_not_need(sdist):
    """sdpa_core (with py.typed), tests/core, the example notebook, README, LICENSE and pyproject; not
    the page (web/), the site build (build/) or their tests, which the package does not need."""
    files = {p.relative_to(sdist).as_posix() for p in sdist.rglob("*") if p.is_file()}
    tops = {f.split("/")[0] for f in files}
    assert tops <= {"sdpa_core", "tests", "examples", "README.md", "LICENSE", "pyproject.toml", "PKG-INFO", ".gitignore"}
    assert {"sdpa_core/py.typed", "LICENSE", "tests/core/conftest.py", "examples/sdpa_core_tour.ipynb"} <= files
    assert {f.split("/")[1] for f in files if f.startswith("tests/")} == {"core"}
    meta = (sdist / "PKG-INFO").read_text()
    assert "License-Expression: MIT" in meta and "License-File: LICENSE" in meta
    assert "# sdpa-core" in meta and "service worker" not in meta   # the library's own description
    assert "Copyright (c)" in (sdist / "LICENSE").read_text() and "the SDPA Lab authors" in (sdist / "LICENSE").read_text()


@pytest.mark.slow
def test_the_sdists_tests_collect_and_run_from_it(sdist):
    """From the unpacked sdist, pytest collects every test it ships (tests/core and sdpa_core's doctests)
    with the packaged pyproject's settings, imports the sdist's own sdpa_core, and a cross-section of
    the tests (the doctests, the rule registry, the experiments, the README example) passes."""
    def pytest_in_sdist(*args):
        return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=sdist,
                              capture_output=True, text=True)

    here = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q",
                           "tests/core", "sdpa_core"], cwd=ROOT, capture_output=True, text=True)
    there = pytest_in_sdist("--collect-only", "-q")
    assert there.returncode == 0, there.stdout + there.stderr
    count = re.compile(r"^(\d+) tests? collected", re.M)
    assert count.search(there.stdout)[1] == count.search(here.stdout)[1], (there.stdout[-500:], here.stdout[-500:])
    where = subprocess.run([sys.executable, "-c", "import sdpa_core; print(sdpa_core.__file__)"], cwd=sdist,
                           capture_output=True, text=True, check=True)
    assert Path(where.stdout.strip()).parent == sdist / "sdpa_core"
    run = pytest_in_sdist("-q", "sdpa_core", "tests/core/test_rules.py", "tests/core/test_experiments.py",
                          "tests/core/test_readme.py")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert re.search(r"\d+ passed", run.stdout) and "failed" not in run.stdout
