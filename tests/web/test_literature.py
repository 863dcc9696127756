"""The published results beside the real grid (web/literature.py, issue 56): each entry names its source, where in
it, its conditions and a link, and the Real transformer view shows every one."""
import re

from web.literature import FINDINGS
from web.training_state import TrainingState
from web.views.real import Real, literature_html


def test_each_finding_is_whole():
    assert len(FINDINGS) >= 5
    for f in FINDINGS:
        assert re.fullmatch(r"https://arxiv\.org/abs/\d{4}\.\d{5}", f.url), f
        assert re.search(r"§\d|Figure \d|Table \d", f.where), f          # a place in the source a reader can find
        assert f.source and f.conditions and f.grid, f
        assert f.said.endswith(".") and len(f.said.split()) <= 60, f
    # the two results the issue names, and a model family's own choice
    sources = " ".join(f.source for f in FINDINGS)
    for name in ("Dehghani et al. 2023", "Wortsman et al. 2023", "OLMo 2", "Gemma 2"):
        assert name in sources


def test_the_real_view_shows_every_finding():
    text = literature_html()
    for f in FINDINGS:
        assert f.url in text and f.where in text
    import panel as pn
    shown = [str(o.object) for o in Real(train=TrainingState()).__panel__().select(pn.pane.HTML)]
    assert text in shown and any("What large runs measured" in o for o in shown)
