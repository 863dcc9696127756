"""The browser tests' grouping (tests/conftest.py `_needs_the_site`): a test that fetches the built site through
request.getfixturevalue, in itself or in a fixture of its module, runs in the site's group, not with `panel serve`."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PLUGIN = '''
def pytest_collection_finish(session):
    from tests.conftest import _needs_the_site
    for item in session.items:
        print("GROUP", item.nodeid, _needs_the_site(item))
'''


def test_a_test_that_fetches_the_site_by_name_is_grouped_with_the_site(tmp_path):
    (tmp_path / "group_probe.py").write_text(PLUGIN)
    files = ["tests/build/test_boot_faults.py", "tests/build/test_site_engines.py", "tests/web/test_ui_tour_journey.py"]
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "-p", "group_probe", *files], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "PYTHONPATH": f"{tmp_path}:{ROOT}"})
    groups = dict(line[len("GROUP "):].rsplit(" ", 1) for line in out.stdout.splitlines() if line.startswith("GROUP "))
    assert groups, out.stdout + out.stderr
    for node, site in groups.items():
        want = "panel serve" not in node       # every one of these opens the built site but the serve runtime's
        assert site == str(want), node
