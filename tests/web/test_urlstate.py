"""Notices about a hostile link quote its keys and values only HTML-escaped."""
import html
from urllib.parse import urlencode

import pytest

from web.urlstate import parse_query

# (key, value): each pair makes parse_query write one notice quoting the markup
HOSTILE = [
    ("rule", "<img src=x onerror=alert(1)>"),        # not one of the rules
    ("causal", '"><svg onload=alert(1)>'),            # not true or false
    ("sigma", "1&amp;<b>2</b>"),                      # not a number
    ('<a href="x">&copy;', "1"),                      # an unknown key
    ("view", "'><script>x</script>"),                 # not one of the views
]


@pytest.mark.parametrize("key, value", HOSTILE, ids=[k if k.isalpha() else "unknown key" for k, _ in HOSTILE])
def test_notice_quotes_markup_only_escaped(key, value):
    """A notice about a key or value with markup contains no raw <, >, quote or bare &, and shows
    the input in its escaped form (&lt;...)."""
    _, _, notices = parse_query("?" + urlencode([(key, value)]))
    assert len(notices) == 1, notices
    check_escaped(notices[0])
    assert html.escape(key if "<" in key else value) in notices[0], notices[0]


def test_all_notices_of_one_hostile_link_are_escaped():
    """Every notice of a link with several hostile keys and values at once is escaped."""
    _, _, notices = parse_query("?" + urlencode(HOSTILE))
    assert len(notices) == len(HOSTILE), notices
    for notice in notices:
        check_escaped(notice)
    quoted = " ".join(notices)
    for key, value in HOSTILE:
        assert html.escape(key if "<" in key else value) in quoted


def check_escaped(notice: str):
    assert "<" not in notice and ">" not in notice, notice
    assert '"' not in notice and "'" not in notice, notice
    # every & starts an entity: the input's own "&amp;" and "&copy;" appear as "&amp;amp;", "&amp;copy;"
    for part in notice.split("&")[1:]:
        assert part.split(";")[0] in {"lt", "gt", "amp", "quot", "#x27"}, notice
    assert "&lt;" in notice, notice
