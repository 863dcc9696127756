"""Adding a scaling rule is one entry in sdpa_core/scaling.py's RULES and one colour in web/theme.py: with
exactly those two edits, in a copy of the sources, the page's sentences still hold against torch and numpy
(the oracle files below, run in that copy). The oracle checks the numbers each sentence states for every
rule the page draws, not a wording that lists today's rules, so a new rule cannot silently break it.

The rule, d_k^-3/4, lies between 1/√d_k and 1/d_k (muP) and equals d_k^-α at α = 0.75, so the sentences that
list rules, and the one that says which lines coincide, all meet it."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from sitebuild import ROOT

pytestmark = pytest.mark.slow

# the page's sentences checked against independent computations, for every rule (the training runs have their
# own list of rules, TRAIN_RULES, so their claims are left out), and the core's forward pass written out by hand.
# Some draw their rule with hypothesis; the alignment, coinciding-lines, saturation-summary and sharpness checks
# take every rule, the new one included.
ORACLE = ["tests/web/test_claims.py", "tests/web/test_claims_explainer.py", "tests/web/test_headlines.py",
          "tests/core/test_sharpness.py",
          # and the page's wiring of a rule: a colour of its own, a dash (its own or dash-dot)
          "tests/web/test_views.py::test_every_rule_has_its_own_colour_and_an_unknown_rule_falls_back"]
RULE = '    Rule("three_quarter", "d_k^-3/4", lambda d, a, t: d ** -0.75),\n'
COLOUR = '    "three_quarter": "#888888",\n'


def edit(path, anchor: str, line: str) -> None:
    """``line`` inserted after the one line of ``path`` that starts with ``anchor``."""
    lines = path.read_text().splitlines(keepends=True)
    at = [i for i, text in enumerate(lines) if text.startswith(anchor)]
    assert len(at) == 1, f"{path.name}: {len(at)} lines start with {anchor!r}"
    lines.insert(at[0] + 1, line)
    path.write_text("".join(lines))


def test_a_rule_added_in_one_core_entry_and_one_colour_keeps_every_sentence_true(tmp_path):
    pytest.importorskip("torch", reason="torch (test extra: pip install torch==2.13.0) is the oracle's reference; "
                        "without it the oracle's checks would skip in the copy")
    src = tmp_path / "src"
    for name in ("sdpa_core", "web", "tests", "build"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy2(ROOT / "pyproject.toml", src / "pyproject.toml")
    edit(src / "sdpa_core" / "scaling.py", '    Rule("linear", ', RULE)
    edit(src / "web" / "theme.py", "RULE_COLORS = {", COLOUR)
    env = {**os.environ, "PYTHONPATH": str(src)}
    # the copy's page sees the rule: the sentence on coinciding lines names it at α = 0.75
    check = subprocess.run([sys.executable, "-c", "import sdpa_core as sc, web.claims as c; print(sc.__file__); "
                            "print(c.coincident_rules([1, 16, 256], sc.RULE_NAMES, alpha=0.75, temperature=0.1, n=16))"],
                           cwd=src, capture_output=True, text=True, env=env)
    lines = check.stdout.splitlines()
    assert lines[0] == str(src / "sdpa_core" / "__init__.py"), check.stderr
    # the new rule's clause first (it comes before α in RULES), then this tree's sentence at α = 0.75 unchanged
    from web import claims
    import sdpa_core as sc
    here = claims.coincident_rules([1, 16, 256], sc.RULE_NAMES, alpha=0.75, temperature=0.1, n=16)
    assert lines[1] == "d_k^-α lies exactly on d_k^-3/4 (the same scale at every d_k, at α = 0.75); " + here, check.stdout
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "not training_claims",
                           *ORACLE], cwd=src, capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " skipped" not in done.stdout.splitlines()[-1], done.stdout[-2000:]
