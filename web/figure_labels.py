"""What a figure says to a screen reader: ``role="figure"`` and an ``aria-label`` made of the figure's title
(which carries the state: "Raw q·k, d_k = 256"), its axes, and the sentence its view measured (the headline,
its claim). The label follows the state: a new title or a new headline names the figure again.

Why ``figure`` and not ``img``: an ``img``'s children are presentational, and every Bokeh figure holds a
focusable Save button, which would then be a Tab stop that screen readers cannot name (axe's
"nested-interactive"). A ``figure`` with a name is announced the same way and keeps its button.

The tour asks for a prediction before it shows what was measured (web/views/tour.py): while a figure's
view is veiled, its label leaves the headline out and says only what the figure plots."""
from __future__ import annotations

import html
import re

#: Attributes kept on each figure (Bokeh models take private Python attributes).
_CLAIM, _VEILED = "_sdpa_claim", "_sdpa_veiled"
_TAGS = re.compile(r"<[^>]+>")


def plain(text: str) -> str:
    """HTML (a headline with its emphasis) as the words a screen reader says."""
    return " ".join(html.unescape(_TAGS.sub("", text)).split())


def label_of(fig) -> str:
    """The figure's accessible name, from its title, its axes' labels and its claim (unless veiled)."""
    title = plain(fig.title.text if fig.title is not None else "") or "Figure"
    x = [a.axis_label for a in fig.xaxis if a.axis_label]
    y = [a.axis_label for a in fig.yaxis if a.axis_label]
    parts = [title.rstrip(".") + "."]
    if x and y:
        parts.append(f"{y[0]} against {x[0]}.")
    claim = getattr(fig, _CLAIM, "")
    if claim and not getattr(fig, _VEILED, False):
        parts.append(claim)
    return " ".join(parts)


def relabel(fig) -> None:
    attrs = {"role": "figure", "aria-label": label_of(fig)}
    if fig.html_attributes != attrs:
        fig.html_attributes = attrs


def name_figure(fig) -> None:
    """Give a new figure its role and label, and name it again whenever its title changes."""
    relabel(fig)
    if fig.title is not None:
        fig.title.on_change("text", lambda attr, old, new: relabel(fig))   # Bokeh checks the signature


def describe(figs, claim: str) -> None:
    """The sentence these figures illustrate (HTML or text), as each one's label says it."""
    text = plain(claim)
    for fig in figs:
        setattr(fig, _CLAIM, text)
        relabel(fig)


def veil(figs, hidden: bool) -> None:
    """Leave the claim out of these figures' labels (the tour, before the reader has predicted), or put it back."""
    for fig in figs:
        if getattr(fig, _VEILED, False) != hidden:
            setattr(fig, _VEILED, hidden)
            relabel(fig)
