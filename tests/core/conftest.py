"""Fixtures of the core tests."""
import pytest


@pytest.fixture(scope="session")
def torch():
    """PyTorch, the independent reference; a test that takes this fixture is skipped (saying why) without
    it, and only that test: the others in its module still run."""
    return pytest.importorskip("torch", reason="torch (test extra: pip install torch==2.13.0) is the reference "
                               "this test compares against")
