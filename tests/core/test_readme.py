"""The READMEs' `sdpa_core` examples run as written, and the package describes itself, not the site."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
READMES = [ROOT / "README.md", ROOT / "sdpa_core" / "README.md"]


@pytest.mark.parametrize("readme", READMES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_readme_python_example_runs(readme):
    blocks = re.findall(r"```python\n(.*?)```", readme.read_text(), flags=re.S)
    assert blocks, f"{readme.name} has no ```python example"
    for code in blocks:
        exec(compile(code, str(readme), "exec"), {})


def test_the_package_description_is_the_librarys_own():
    """pyproject's readme is sdpa_core/README.md: a library user reads about attention, not about the
    site's security policy, offline cache or snapshots."""
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^readme = "sdpa_core/README.md"$', text, flags=re.M)
    description = READMES[1].read_text()
    for word in ("Content-Security-Policy", "OPFS", "service worker", "snapshot", "Lighthouse"):
        assert word not in description, word
