"""The wording's side of a claim (web/claims/claim.py): the text is its template with each fact written as
given, no field is left unfilled and no fact goes unsaid, and the text is all a copy keeps. The numbers
themselves are checked against torch and numpy by the oracle tests (tests/web/test_headlines.py)."""
from __future__ import annotations

import copy
import pickle

import pytest

from web import claims
from web.claims.claim import Claim, as_g, as_int, as_pct
from web.options import VIEWS
from web.state import LabState


def test_the_text_is_the_template_with_each_fact_as_written():
    c = Claim("At s = {s}, the top key takes {top} of {n} keys' weight.", s=as_g(8.0), top=as_pct(0.934), n=as_int(16))
    assert c == "At s = 8, the top key takes 93% of 16 keys' weight."
    assert dict(c.facts) == {"s": 8.0, "top": 0.934, "n": 16}
    assert dict(c.shown) == {"s": "8", "top": "93%", "n": "16"}
    longer = Claim("Here: " + c.template, **c.given())
    assert longer == "Here: " + c and longer.facts == c.facts


@pytest.mark.parametrize("template, facts", [
    ("{a} and {b}", {"a": (1, "1")}),                 # a field with no fact
    ("{a}", {"a": (1, "1"), "b": (2, "2")}),          # a fact the text does not say
])
def test_fields_and_facts_must_match(template, facts):
    with pytest.raises(ValueError, match="are not its facts"):
        Claim(template, **facts)


@pytest.mark.parametrize("given", [1.0, (1.0,), (1.0, 2.0), "1"])
def test_a_fact_is_a_value_and_how_the_text_writes_it(given):
    with pytest.raises(TypeError, match="must be"):
        Claim("{a}", a=given)


def test_a_copy_is_the_plain_text():
    c = Claim("{a} tokens", a=as_int(3))
    for other in (copy.copy(c), copy.deepcopy(c), pickle.loads(pickle.dumps(c))):
        assert type(other) is str and other == "3 tokens"


def headlines(lab: LabState) -> list[Claim]:
    """The headlines of every view at ``lab``'s settings, made as the views make them."""
    return [claims.dial_headline(lab.dial, s=lab.dial_s, n=lab.n),
            claims.variance_headline(lab.dots, d_k=lab.d_k, rule=lab.rule),
            claims.saturation_headline(lab.sweep, rule=lab.rule),
            claims.alignment_headline(lab.alignment, rho=lab.rho, n=lab.n),
            claims.precision_headline(lab.precision, order=lab.order),
            claims.model_headline(lab.real_model),
            claims.flat_maps(lab.aligned_maps, n=lab.n)]


@pytest.mark.parametrize("settings", [{}, {"rule": "none", "rho": 0.0}, {"rule": "qknorm", "rho": 1.0, "d_k": 1},
                                      {"order": "none", "sigma": 4.0, "n": 2}])
def test_every_headline_says_each_of_its_facts_once_filled_in(settings):
    lab = LabState(**settings)
    for view in VIEWS:          # every lazily computed result the headlines read
        lab.view = view
    for h in headlines(lab):
        assert isinstance(h, Claim)
        assert "{" not in h and "}" not in h, h
        for name, text in h.shown.items():
            assert text in h, (name, text, h)
