"""The saturation view's gradient sentence, split for reading (issue 33.8): the starved share at once, the medians
and totals it is measured against behind "details"; no word lost, none added but the split's full stop."""
from __future__ import annotations

import html
import re

import pytest

from web.claims import gradient_summary
from web.state import LabState
from web.views.saturation import gradient_note


@pytest.mark.parametrize("d_k, rho, rule", [(64, 0.0, "sqrt"), (1024, 0.0, "linear"), (4096, 0.9, "qknorm"), (2, 1.0, "none")])
def test_the_starved_share_is_said_first_and_every_number_stays(d_k, rho, rule):
    lab = LabState(view="saturation", d_k=d_k, rho=rho, rule=rule)
    text = str(gradient_summary(lab.gradients, rule=rule, d_k=d_k, n=lab.n, rho=rho))
    note = gradient_note(text)
    first = re.match(r"<p[^>]*>(.*?)</p>", note)
    shown = html.unescape(first.group(1) if first else note)
    assert len(shown.split()) <= 30, shown
    words = lambda t: re.sub(r"[.;]", "", html.unescape(re.sub(r"<[^>]+>", " ", t))).lower().split()   # noqa: E731
    assert words(note.replace("medians and totals", "")) == words(text), (note, text)
