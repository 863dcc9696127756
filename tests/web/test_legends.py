"""No legend under a plot is wider than the narrowest screen's figure (issue 55: at 320 px, "QK-norr", "its own
scali" and "Gemma 2 soft-cap 5" were cut): web/theme.py lays each in as many columns as fit, and no label alone is
too long for one column; checked at every rule a legend's entries can name. The estimate (theme.legend_width) was
measured on 320 px screenshots."""
import pytest
from bokeh.models import Legend

import sdpa_core as sc
from web.options import TRAIN_RULES, VIEWS
from web.page import Page
from web.theme import LEGEND_BUDGET_PX, _label_text, legend_width

from test_lean_figures import figures


def _check(layout):
    for fig in figures(layout):
        for legend in (x for x in fig.below if isinstance(x, Legend)):
            labels = [_label_text(i) for i in legend.items]
            assert legend_width(labels, legend.ncols) <= LEGEND_BUDGET_PX, (fig.title.text, labels, legend.ncols)


@pytest.mark.parametrize("name", [v for v in VIEWS if v not in ("tour", "questions")])
def test_every_legend_under_a_plot_fits_a_phone(name):
    page = Page()
    layout = page.view(name)
    _check(layout)
    if name in ("playground", "variance", "saturation", "alignment", "dial"):   # entries that follow the rule
        for rule in sc.RULE_NAMES:
            page.lab.rule = rule
            _check(layout)
    if name == "training":
        for rule in TRAIN_RULES:
            page.train.param.update(rule_a=rule, rule_b=rule)
            _check(layout)
