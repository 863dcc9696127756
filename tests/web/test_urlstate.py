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
from web.tour import STEPS  # noqa: E402
from web.training_state import TrainingState  # noqa: E402
from web.urlstate import (value_limit, KEYS, MAX_NOTICES, MAX_PAIRS, MAX_QUERY_CHARS, apply_query,  # noqa: E402
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
    assert all(len(v) <= 3 * (value_limit(k) + 1) for k, _, v in (p.partition("=") for p in pairs))
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


# ---- every Unicode digit and number character ---------------------------------------------------------
import sys  # noqa: E402
import unicodedata  # noqa: E402
from contextlib import contextmanager  # noqa: E402
from urllib.parse import quote  # noqa: E402

import panel as pn  # noqa: E402
from bokeh.document import Document  # noqa: E402
from bokeh.server.contexts import _RequestProxy  # noqa: E402
from panel.io.state import set_curdoc  # noqa: E402
from tornado.httputil import HTTPHeaders, HTTPServerRequest, RequestStartLine  # noqa: E402

from web.page import bound_request_query  # noqa: E402
from web.urlstate import parse_value  # noqa: E402

#: Every character of Unicode's number categories: decimal digits (Nd: ٣, ３, 𝟗), other numbers (No: ², ⑤,
#: ½) and letter numbers (Nl: Ⅻ). str.isdigit() accepts 788 of them, int() only the 660 Nd.
NUMBER_CHARS = [chr(i) for i in range(sys.maxunicode + 1) if unicodedata.category(chr(i)) in ("Nd", "No", "Nl")]
# one key of each kind the parser reads numbers for: a tour step, a snapped int, a bounded int, floats
NUMBER_KEYS = ["step", "d_k", "n", "sigma", "lr"]


def test_the_number_characters_are_all_there():
    assert len(NUMBER_CHARS) > 1700 and {"²", "⑤", "３", "Ⅻ", "٣", "½"} <= set(NUMBER_CHARS)
    assert any(c.isdigit() and unicodedata.category(c) != "Nd" for c in NUMBER_CHARS)   # what int() refuses


def _expected(key, raw):
    """What parse_value must give for ``raw``: its decimal value read digit by digit (unicodedata, not
    float), then clamped, rounded and snapped as the parser does; its default when it has no value."""
    digits = [unicodedata.decimal(c, None) for c in raw]
    if None in digits:
        return None
    return parse_value(key, "".join(map(str, digits)))[0]


@pytest.mark.parametrize("key", NUMBER_KEYS)
def test_every_unicode_number_character_gives_a_valid_value_or_a_notice(key):
    """Each character alone, doubled and after a 1: a decimal digit of any script counts as that digit
    (float() reads them); any other number character (², ⑤, ½, Ⅻ) is not a number, with one escaped
    notice, and the key keeps its default. Nothing raises."""
    default = parse_value(key, "")[0]
    for c in NUMBER_CHARS:
        for raw in (c, c + c, "1" + c):
            value, notice = parse_value(key, raw)
            want = _expected(key, raw)
            if want is None:
                assert value == default and notice and "is not a number" in notice, (raw, value, notice)
                check_plain(notice)
            else:
                assert value == want, (raw, value, want)


def check_plain(notice):
    assert "<" not in notice and ">" not in notice and '"' not in notice and "'" not in notice, notice


def test_a_link_of_number_characters_writes_back_an_ascii_link():
    """A link with a number character in every numeric key gives a state whose link is plain ASCII and
    parses back without a notice."""
    lab, train = _fresh("first")
    for c in NUMBER_CHARS:
        apply_query("?" + "&".join(f"{k}={quote(c)}" for k in ["view"] + NUMBER_KEYS).replace("view=" + quote(c), "view=tour"),
                    lab, train)
        link = to_query(lab, train)
        assert link.isascii(), (c, link)
    again_lab, again_train = _fresh("second")
    assert apply_query(link, again_lab, again_train) == []


@contextmanager
def served_request(uri: str):
    """The session ``panel serve`` makes for a GET of ``uri``, as far as Panel's Location reads it."""
    class Context:
        request = _RequestProxy(HTTPServerRequest(start_line=RequestStartLine("GET", uri, "HTTP/1.1"),
                                                  headers=HTTPHeaders({"Host": "127.0.0.1:5006"})))
        server_context = None
    doc = Document()
    context = Context()
    doc._session_context = lambda: context
    with set_curdoc(doc):
        try:
            yield
        finally:
            pn.state._locations.pop(doc, None)


def test_under_panel_serve_panel_never_parses_a_link_before_the_page_does():
    """Panel's own parser (panel.util.parse_query) raises on '²', '⑤' and 786 more characters that
    str.isdigit() accepts and int() refuses, and did so when pn.state.location was made from the request,
    before any of the page's code ran: the app never rendered. Every such link now reaches the page's
    parser whole: the location is made without the query, which is then set with Panel's parser off."""
    from panel.util import parse_query as panel_parse_query
    refused = [c for c in NUMBER_CHARS if c.isdigit() and unicodedata.category(c) != "Nd"]
    with pytest.raises(ValueError):
        panel_parse_query("?step=" + refused[0])
    for c in NUMBER_CHARS:
        query = f"?view=tour&step={quote(c)}&seed={quote(c * 3)}"
        with served_request("/app" + query):
            assert bound_request_query() == []
            loc = pn.state.location
            assert loc.search == query and loc.pathname == "/app"
            loc.search = f"?step={quote(c)}&n={quote(c)}"        # the browser's address, sent later
            lab, _, _ = parse_query(loc.search)
            assert 1 <= lab["step"] <= len(STEPS)


def test_the_tours_picks_go_through_the_address_and_hostile_ones_are_said():
    """A pick is kept in the address (``picks``): every pick of every step round-trips, a value the page did not
    write (a choice past a step's last, too many steps, markup) is reset with a notice, and picks ride only on
    tour links (kept in the state elsewhere)."""
    import itertools

    from web.tour import STEPS, decode_picks, encode_picks
    from web.urlstate import step_query

    for i, step in enumerate(STEPS, 1):
        for k in range(len(step.choices)):
            picks = {1: 0, i: k}
            lab, _, notices = parse_query(step_query(i, encode_picks(picks)))
            assert notices == [] and decode_picks(lab["picks"]) == picks
    for bad in ("9", "0" * (len(STEPS) + 1), "<b>", "x1", str(len(STEPS[0].choices)), "1" * (len(STEPS) - 1) + "9"):
        lab, _, notices = parse_query("?view=tour&picks=" + bad)
        assert lab["picks"] == "" and len(notices) == 1 and notices[0].startswith("picks:"), (bad, notices)
        assert "<b>" not in notices[0]
    state, train = LabState(), TrainingState(LabState())
    train = TrainingState(state)
    apply_query("?view=tour&step=3&picks=21", state, train)
    assert "picks=21" in to_query(state, train)
    state.view = "variance"
    assert "picks" not in to_query(state, train) and state.picks == "21"
    assert list(itertools.islice(decode_picks("-1-").items(), 3)) == [(2, 1)]
