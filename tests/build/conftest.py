"""tests/build uses the session's `site` and `served` fixtures from tests/conftest.py and the helpers
in tests/sitebuild.py."""
