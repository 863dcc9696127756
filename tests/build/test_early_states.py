"""The states the main control shows before Python is live (build/early_states.py): for every early view, the
headline each state's markup says is the one the live page says when its link names that value (a Page opened
at the address the state writes, not moved there), the address's value at each position is the live page's,
and the states are the control's every position, in order."""
from __future__ import annotations

import re

import pytest

from build.early_states import EARLY_VIEWS, states
from web.figure_labels import plain
from web.page import Page

HEADLINE = re.compile(r"<p class=['\"]sdpa-headline['\"]>(.*?)</p>", re.S)


def headline_of(markup: str) -> str:
    found = HEADLINE.findall(markup)
    assert found, markup[:300]
    return plain(found[0])


@pytest.fixture(scope="module")
def drawn():
    return {key: states(key) for key in EARLY_VIEWS}


@pytest.mark.parametrize("key", EARLY_VIEWS)
def test_each_state_says_what_the_live_page_says_at_its_link(drawn, key):
    st = drawn[key]
    n = len(st["positions"])
    assert n == len(st["html"]) == len(st["query"]) == len(st["shown"]) >= 10, key
    assert st["query"][st["positions"].index(st["start"])] is None, "the view's default is written as no value"
    assert len(set(st["html"])) == n, f"{key}: two positions draw the same view"
    for i in sorted({0, st["positions"].index(st["start"]), n // 2, n - 1}):
        value = st["query"][i]
        page = Page(f"?view={key}" + (f"&{st['url_key']}={value}" if value is not None else ""))
        layout = page.view(key)
        live = [plain(m) for pane in layout.select(lambda o: isinstance(getattr(o, "object", None), str))
                for m in HEADLINE.findall(pane.object)]
        assert headline_of(st["html"][i]) in live, (key, i, value, headline_of(st["html"][i]), live)
        assert st["shown"][i] in st["html"][i], (key, i, st["shown"][i])
