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


# ---- any query string at all ------------------------------------------------------------------------
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from web.state import LabState  # noqa: E402
from web.training_state import TrainingState  # noqa: E402
from web.urlstate import (KEYS, MAX_NOTICES, MAX_PAIRS, MAX_QUERY_CHARS, MAX_VALUE_CHARS, apply_query,  # noqa: E402
                          bound_search, to_query)

_values = st.one_of(st.text(max_size=60), st.integers().map(str), st.floats().map(repr),
                    st.text("0123456789", min_size=4000, max_size=5000), st.sampled_from(["", "nan", "-inf", "1e999",
                                                                                         "%00", "%", "true", "<b>"]))
_pairs = st.lists(st.tuples(st.one_of(st.sampled_from(list(KEYS)), st.text(max_size=12)), _values), max_size=80)
_queries = st.one_of(_pairs.map(lambda ps: "?" + "&".join(f"{k}={v}" for k, v in ps)),
                     st.text(max_size=3000), st.integers(0, 3000).map(lambda n: "?" + "&" * n))


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_queries)
def test_any_query_string_gives_a_valid_state_and_bounded_notices(search):
    """1000 hostile query strings (huge digit runs, thousands of '&', control characters, repeated and
    unknown keys): the bounds hold before parsing, nothing raises, every value is valid for its
    parameter, notices are few and short, and the state writes a clean link back."""
    bounded, _ = bound_search(search)
    pairs = [p for p in bounded[1:].split("&") if p]
    assert len(bounded) <= MAX_QUERY_CHARS + 1 and len(pairs) <= MAX_PAIRS
    assert all(len(v) <= 3 * (MAX_VALUE_CHARS + 1) for p in pairs for v in p.split("=", 1)[1:])
    lab, train = _fresh("first")
    notices = apply_query(search, lab, train)
    assert len(notices) <= MAX_NOTICES and all(len(n) < 400 for n in notices)
    again_lab, again_train = _fresh("second")
    assert apply_query(to_query(lab, train), again_lab, again_train) == []   # the written-back link is clean
    assert to_query(again_lab, again_train) == to_query(lab, train)


_cache = {}


def _fresh(which: str):
    """One of two (lab, training) pairs at their defaults (built once, reset per example: cheap)."""
    if which not in _cache:
        lab = LabState()
        _cache[which] = (lab, TrainingState(lab))
    lab, train = _cache[which]
    apply_query("", lab, train)
    return lab, train
