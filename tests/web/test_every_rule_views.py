"""A view that plots every scaling rule uses every rule's knob (α, the QK-norm temperature): the settings drawer
must not call them unused there. Which views those are is read from their figures (a legend entry for every rule),
not from a list: a new view that plots every rule and is missing from ``web/state.py``'s set fails here."""
from __future__ import annotations

import pytest

import sdpa_core as sc
from web.options import RULE_LABELS, VIEW_REGISTRY
from web.page import Page

from test_figure_axes import NO_FIGURES, figures

VIEWS = [k for k in VIEW_REGISTRY if k not in NO_FIGURES]


def legend_labels(layout) -> set[str]:
    out = set()
    for fig in figures(layout):
        for legend in fig.legend:
            for item in legend.items:
                label = item.label
                out.add(label.get("value") if isinstance(label, dict) else getattr(label, "value", label))
    return out


@pytest.mark.parametrize("key", VIEWS)
def test_a_view_that_plots_every_rule_uses_every_rules_knob(key):
    page = Page(f"?view={key}&rule=sqrt")     # a rule without knobs: a view showing one rule ignores α there
    layout = page.view(key)
    page.lab.view = key
    every = set(RULE_LABELS[r] for r in sc.RULE_NAMES) <= legend_labels(layout)
    unused = page.lab.unused_settings(page.train)
    only = {k for k in sc.scaling.KNOBS if unused.get(k, "").startswith("Only ")}
    if every:
        assert not only, f"{key} plots every rule, but the drawer says {sorted(only)} only matter to one rule"
    else:     # one rule's figures (the sidebar's rule, without knobs): its knobs are said to be another rule's
        assert only or not set(sc.scaling.KNOBS) - set(unused), key
