"""tools/engines.py without a browser: an engine it does not know is refused by name (the engines themselves
run in tests/build/test_site_engines.py)."""
from __future__ import annotations

import pytest

from tools import engines


def test_an_unknown_engine_is_refused_by_name(tmp_path):
    assert set(engines.NAMES) == set(engines.STORES)
    with pytest.raises(ValueError, match="'opera' is not one of firefox, webkit"):
        engines.engine("opera", tmp_path)
