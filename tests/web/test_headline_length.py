"""Short text: every view's headline sentence (the one line a reader sees before "details") is at most 25
words, at the default settings and at corners of the settings (widest and narrowest d_k, aligned and large
q and k, the alternatives' rules, another model, half precision's overflow)."""
from __future__ import annotations

import re

import panel as pn
import pytest

from web.options import VIEWS
from web.page import Page

MAX_WORDS = 25
CORNERS = ("", "&d_k=4096", "&d_k=2", "&rho=1&sigma=4", "&rule=qknorm", "&rule=linear&d_k=1024",
           "&preset=t5-base", "&order=after&sigma=4&rho=1")


def headlines(view: str, query: str) -> list[str]:
    page = Page(f"?view={view}{query}")
    out = []
    for pane in page.view(view).select(pn.pane.HTML):
        m = re.search(r"<p class='sdpa-headline'>(.*?)</p>", str(pane.object), re.S)
        if m:
            out.append(re.sub(r"<[^>]+>", "", m.group(1)))
    return out


@pytest.mark.parametrize("view", [v for v in VIEWS if v not in ("tour", "questions")])
def test_every_headline_is_at_most_25_words(view):
    seen = 0
    for query in CORNERS:
        for text in headlines(view, query):
            seen += 1
            assert len(text.split()) <= MAX_WORDS, f"{view}{query}: {len(text.split())} words: {text}"
    assert seen, f"{view} showed no headline"
