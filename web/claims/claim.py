"""A sentence with what it states: ``Claim`` is the text the page shows (a ``str``), made from its facts.

A claim function writes its sentence as a template whose fields are its facts, each given as
(value, how the text writes it)::

    Claim("At logit spread s = {s}, the top key takes {top} of a row's weight.",
          s=(8.0, "8"), top=as_pct(0.93))

The page uses the text. The oracle tests check ``facts`` (the values) against torch and numpy, and
``shown`` (how each is written) with the page's own rounding, so rewording a sentence changes no test;
``tests/web/test_claim.py`` checks the wording's side: every fact is written in the text, and nothing
else is filled in.
"""
from __future__ import annotations

from string import Formatter
from types import MappingProxyType
from typing import Mapping

from .numbers import fmt, fmt_sci, pct


class Claim(str):
    """The text made from ``template`` with each fact written as given; ``facts`` holds the values."""

    facts: Mapping[str, object]
    shown: Mapping[str, str]
    template: str

    def __new__(cls, template: str, **facts: tuple[object, str]) -> Claim:
        fields = {name for _, name, _, _ in Formatter().parse(template) if name is not None}
        if fields != set(facts):
            raise ValueError(f"Claim: the template's fields {sorted(fields)} are not its facts {sorted(facts)}")
        for name, given in facts.items():
            if not (isinstance(given, tuple) and len(given) == 2 and isinstance(given[1], str)):
                raise TypeError(f"Claim: fact {name!r} must be (value, how the text writes it), not {given!r}")
        shown = {name: text for name, (_, text) in facts.items()}
        self = super().__new__(cls, template.format(**shown))
        self.facts = MappingProxyType({name: value for name, (value, _) in facts.items()})
        self.shown = MappingProxyType(shown)
        self.template = template
        return self

    def given(self) -> dict[str, tuple[object, str]]:
        """Each fact as it was given, for a longer claim that takes this one in (its template and these)."""
        return {name: (value, self.shown[name]) for name, value in self.facts.items()}

    def __reduce__(self):
        # a copy or a pickle is the plain text: the facts are for the tests, at the place the claim is made
        return (str, (str(self),))


class Sentence:
    """A claim written in parts, for a sentence whose parts depend on the state: each ``add`` appends a piece
    of template with the facts it names (a fact named twice must be given alike); ``claim()`` is the Claim."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._facts: dict[str, tuple[object, str]] = {}

    def add(self, template: str, **facts: tuple[object, str]) -> Sentence:
        for name, given in facts.items():
            if name in self._facts and self._facts[name] != given:
                raise ValueError(f"Sentence: fact {name!r} given as {self._facts[name]!r} and as {given!r}")
        self._parts.append(template)
        self._facts.update(facts)
        return self

    def claim(self) -> Claim:
        return Claim("".join(self._parts), **self._facts)


def as_pct(x: float) -> tuple[float, str]:
    """A share, written as the page writes percentages (``pct``)."""
    return float(x), pct(x)


def as_fmt(x: float) -> tuple[float, str]:
    """A number, written with three significant digits (``fmt``)."""
    return float(x), fmt(x)


def as_sci(x: float) -> tuple[float, str]:
    """A number whose size matters however small (a gradient), written by ``fmt_sci``."""
    return float(x), fmt_sci(x)


def as_g(x: float) -> tuple[float, str]:
    """A setting, written as the reader set it (``{:g}``)."""
    return float(x), f"{x:g}"


def as_int(x: int) -> tuple[int, str]:
    """A count or a d_k, written whole."""
    return int(x), str(int(x))


def as_2f(x: float) -> tuple[float, str]:
    """A number to two decimals (an entropy, a slope); never "-0.00"."""
    text = f"{x:.2f}"
    return float(x), "0.00" if text == "-0.00" else text


def as_tokens(x: float) -> tuple[float, str]:
    """A number of tokens attended (exp of the entropy), to one decimal."""
    return float(x), f"{x:.1f}"


def as_word(value: object, text: str) -> tuple[object, str]:
    """A fact written as a word or a label (a rule's name, a model's)."""
    return value, text
