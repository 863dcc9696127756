"""The README's `sdpa_core` example runs as written."""
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_python_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert blocks, "the README has no ```python example"
    for code in blocks:
        exec(compile(code, str(README), "exec"), {})
