"""`make serve`'s server (tools/serve.py): a link of 120 KB (a pasted config in the address, percent-encoded) is
served, where http.server refuses 64 KiB with HTTP 414 (issue 57); past its own limit it says the limit."""
import urllib.error
import urllib.request

import pytest

from tools import serve


def test_a_long_link_is_served_and_a_longer_one_refused_with_its_limit(tmp_path):
    (tmp_path / "index.html").write_text("<!doctype html><title>t</title>")
    server, url = serve.start(tmp_path)
    try:
        with urllib.request.urlopen(url + "?config=" + "%7B" * 40_000, timeout=30) as r:
            assert r.status == 200
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url + "?x=" + "a" * serve.MAX_REQUEST_LINE, timeout=30)
        assert refused.value.code == 414
        assert f"{serve.MAX_REQUEST_LINE:,}" in refused.value.read().decode()
    finally:
        server.shutdown()
        server.server_close()
