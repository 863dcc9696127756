"""Without PyTorch, only the tests that compare against it skip; every other test still runs."""
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run_without_torch(tmp_path, tests, names):
    """pytest on ``tests`` (selected by ``names``) in a fresh interpreter where ``import torch`` fails as
    it does when torch is not installed: returns the passed tests, the files with skips, and the log."""
    (tmp_path / "torch.py").write_text("raise ModuleNotFoundError('No module named torch (hidden)', name='torch')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-m", "pytest", *map(str, tests), "-q", "-rA", "-p", "no:cacheprovider",
                          "-k", " or ".join(names)], capture_output=True, text=True, env=env, cwd=HERE.parents[1])
    log = out.stdout + out.stderr
    assert out.returncode == 0, log
    passed = set(re.findall(r"^PASSED \S+::(\w+)", out.stdout, re.M))
    skipped = re.findall(r"^SKIPPED \[\d+\] (\S+?):\d+: (.*)$", out.stdout, re.M)
    return passed, {Path(f).name for f, why in skipped if "torch" in why}, log


def test_core_tests_skip_one_by_one_without_torch(tmp_path):
    """In the modules that compare with PyTorch, a test that needs it skips and says why; the tests next to
    it that do not (causal masks, divergence, per-query gradient norms) pass."""
    files = [HERE / "test_attention.py", HERE / "test_train.py", HERE / "test_gradients.py"]
    passed, skipped_in, log = run_without_torch(
        tmp_path, files,
        ["test_causal_combined_with_mask_needs_both", "test_backward_sums_over_broadcast_dims",
         "test_divergence_stops_the_run_with_a_message", "test_gradients_match_torch_autograd",
         "test_query_gradient_norms_are_the_rows_of_dq", "test_rule_gradients_match_torch_autograd"])
    assert passed == {"test_causal_combined_with_mask_needs_both", "test_divergence_stops_the_run_with_a_message",
                      "test_query_gradient_norms_are_the_rows_of_dq"}, log
    assert skipped_in == {f.name for f in files}, log
