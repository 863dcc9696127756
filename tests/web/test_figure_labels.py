"""Figures described for screen readers (web/figure_labels.py): every figure of every view has role="figure"
and a label made of its title, its axes and the sentence its section measured; the label follows the state;
inside the tour, before the reader has predicted, no label carries that sentence."""
from __future__ import annotations

import re

import pytest

from web.figure_labels import _CLAIM, label_of, plain
from web.options import VIEW_REGISTRY
from web.page import Page
from web.tour import STEPS

from test_figure_axes import NO_FIGURES, at, figures, view_class

VIEWS = [k for k in VIEW_REGISTRY if k not in NO_FIGURES]


def headlines(layout) -> list[str]:
    """The headline sentences a view shows, as plain text (read from its panes, not from a copy)."""
    out = []
    for pane in layout.select(lambda o: hasattr(o, "object") and isinstance(getattr(o, "object", None), str)):
        out += [plain(m) for m in re.findall(r"<p class='sdpa-headline'>(.*?)</p>", pane.object)]
    return out


@pytest.mark.parametrize("key", VIEWS)
def test_every_figure_is_named_by_its_title_axes_and_claim_and_follows_the_control(key):
    page = Page(f"?view={key}")
    layout = page.view(key)
    owner, name, (low, high) = view_class(key).MAIN_CONTROL
    at(page, layout, owner, name, low)
    figs = figures(layout)
    assert figs, key
    for fig in figs:
        attrs = fig.html_attributes
        assert attrs.get("role") == "figure", f"{key}: {fig.title.text!r} has no role"
        label = attrs.get("aria-label", "")
        assert label == label_of(fig) and label.startswith(plain(fig.title.text).rstrip(".") or "Figure"), (key, label)
        assert getattr(fig, _CLAIM, ""), f"{key}: {fig.title.text!r} is named by its title and axes only, not its claim"
    said = headlines(layout)
    claimed = [fig for fig in figs if any(h and h in fig.html_attributes["aria-label"] for h in said)]
    if key != "training":   # its runs' status names its figures, not a headline
        assert claimed, f"{key}: no figure's label says the view's headline {said}"
    before = [fig.html_attributes["aria-label"] for fig in figs]
    at(page, layout, owner, name, high)
    after = [fig.html_attributes["aria-label"] for fig in figs]
    assert before != after, f"{key}: moving {name} {low} -> {high} left every figure's label as it was"
    assert all(a == label_of(f) for a, f in zip(after, figs))


def test_the_tours_labels_keep_the_answer_until_the_pick():
    """A label read out before the pick would give the answer away as the headline would: each step's
    figures leave the headline out until a choice is picked, and say it after."""
    from web.views.tour import Tour
    page = Page("?view=playground")
    tour = Tour(lab=page.lab, train=page.train, view_for=page.view)
    tour.__panel__()
    page.lab.view = "tour"
    for i, step in enumerate(STEPS, start=1):
        page.lab.step = i
        layout = tour._veiled
        figs = figures(layout)
        said = [h for h in headlines(layout) if h]
        assert figs and said, f"step {i}: {step.view} shows no figure or headline"
        for fig in figs:
            label = fig.html_attributes["aria-label"]
            assert not any(h in label for h in said), f"step {i}: {label!r} says the answer before the pick"
        tour.choices.value = next(iter(tour.choices.options.values()))
        labels = " ".join(fig.html_attributes["aria-label"] for fig in figs)
        assert any(h in labels for h in said), f"step {i}: after the pick no label says {said}"
