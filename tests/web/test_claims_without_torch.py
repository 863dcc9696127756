"""Without PyTorch, only the claim tests that recompute with it skip; the other claim tests still run."""
import os
import re
import subprocess
import sys
from pathlib import Path

from web.views.questions import QUESTIONS

HERE = Path(__file__).resolve().parent


def test_claim_tests_skip_one_by_one_without_torch(tmp_path):
    """With torch not importable, the torch oracle's tests in test_claims.py skip and say why, and the
    number formats and causal references next to them pass."""
    (tmp_path / "torch.py").write_text("raise ModuleNotFoundError('No module named torch (hidden)', name='torch')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    names = ["test_numbers_read_as_a_learner_reads_them", "test_causal_references_are_the_visible_means",
             "test_gradient_summary_agrees_with_torch", "test_each_question_preset"]
    out = subprocess.run([sys.executable, "-m", "pytest", str(HERE / "test_claims.py"), "-q", "-rA", "-p",
                          "no:cacheprovider", "-k", " or ".join(names)],
                         capture_output=True, text=True, env=env, cwd=HERE.parents[1])
    log = out.stdout + out.stderr
    assert out.returncode == 0, log
    passed = set(re.findall(r"^PASSED \S+::(\w+)", out.stdout, re.M))
    skips = re.findall(r"^SKIPPED \[(\d+)\] \S+: (.*)$", out.stdout, re.M)
    assert passed == {"test_numbers_read_as_a_learner_reads_them", "test_causal_references_are_the_visible_means"}, log
    assert skips and all("torch" in why for _, why in skips), log
    assert sum(int(n) for n, _ in skips) == 1 + len(QUESTIONS), log   # the gradient summary, each preset
