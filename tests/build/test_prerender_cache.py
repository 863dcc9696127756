"""The pre-render's cache (build/make_site.py prerender): the same inputs give the output made before, without
running the app; a damaged entry is never used (made again); a page setting in the environment is an input."""
from __future__ import annotations

from pathlib import Path

from build import make_site

APP = make_site.ROOT / "web" / "app.py"


def test_a_cached_prerender_is_used_and_a_damaged_one_made_again(tmp_path, monkeypatch):
    monkeypatch.setenv("SDPA_LAB_CACHE", str(tmp_path))
    runs = []
    monkeypatch.setattr(make_site, "run_prerender", lambda app: runs.append(app) or {"html": f"run {len(runs)}"})
    assert make_site.prerender(APP) == {"html": "run 1"}
    assert make_site.prerender(APP) == {"html": "run 1"} and len(runs) == 1
    (entry,) = (tmp_path / "prerender").glob("*.json")
    raw = bytearray(entry.read_bytes())
    raw[-3] ^= 0x01                                  # one bit of the body
    entry.write_bytes(bytes(raw))
    assert make_site.prerender(APP) == {"html": "run 2"} and len(runs) == 2
    assert make_site.prerender(APP) == {"html": "run 2"} and len(runs) == 2


def test_the_key_follows_the_page_settings_in_the_environment_and_the_sources(monkeypatch, tmp_path):
    key = make_site.prerender_key(APP)
    monkeypatch.setenv("SDPA_LAB_SOMETHING", "1")
    assert make_site.prerender_key(APP) != key
    monkeypatch.delenv("SDPA_LAB_SOMETHING")
    assert make_site.prerender_key(APP) == key
    app = tmp_path / "web" / "app.py"               # another app folder: another key
    app.parent.mkdir()
    Path(app).write_text("print('x')\n")
    assert make_site.prerender_key(app) != key
