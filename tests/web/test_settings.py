"""web/settings.py, the one table of the reader's settings: each names a parameter that exists, each key
once, and what the drawer, the link parser and the state read from it agrees with the parameters."""
import param
import pytest

from web.options import VIEWS
from web.settings import BY_KEY, SETTINGS, SHARED_SETTINGS, VIEW_SETTINGS, Setting
from web.state import LabState
from web.training_state import TrainingState
from web.urlstate import KEYS, parse_query, to_query

OWNERS = {"lab": LabState, "train": TrainingState}
WIDGETS = {"choices": param.Integer, "slider": param.Number, "int slider": param.Integer, "select": param.Selector,
           "checkbox": param.Boolean, "buttons": param.Selector, "number": param.Integer}


@pytest.mark.parametrize("s", SETTINGS, ids=[s.key for s in SETTINGS])
def test_each_setting_sets_a_parameter_of_its_owner(s: Setting):
    p = OWNERS[s.owner].param[s.param]
    assert p.doc, s.key
    if s.steps is not None:          # a slider's steps lie within the parameter's bounds, and its default is one
        lo, hi = p.bounds
        assert all(lo <= x <= hi for x in s.steps) and p.default in s.steps, s.key
    if s.widget:
        assert isinstance(p, WIDGETS[s.widget]), (s.key, type(p).__name__)
        assert s.label and s.caption.endswith(".") and set(s.views) <= set(VIEWS), s.key
        assert (s.step is not None) == (s.widget == "slider"), s.key
    else:
        assert not (s.label or s.caption or s.views or s.step), s.key


def test_each_key_and_each_parameter_once():
    assert len(BY_KEY) == len(SETTINGS)
    assert len({(s.owner, s.param) for s in SETTINGS}) == len(SETTINGS)
    # every parameter a reader can set is in a link; these are results or what a run is doing
    transient = {"lab": {"playing", "sweep_samples", "verdict"}, "train": {"running", "status", "version"}}
    for owner, cls in OWNERS.items():
        settable = {name for name, p in cls.param.objects("existing").items()
                    if name != "name" and not isinstance(p, (param.Dict, param.List)) and type(p) is not param.Parameter}
        linked = {s.param for s in SETTINGS if s.owner == owner}
        assert linked <= settable
        assert settable - linked == transient[owner], (owner, settable - linked)


def test_the_drawer_and_the_views_read_the_table():
    assert SHARED_SETTINGS == tuple(s.key for s in SETTINGS if s.widget)
    assert set(VIEW_SETTINGS) == set(VIEWS) - {"tour"}
    for view, used in VIEW_SETTINGS.items():
        assert used == {s.key for s in SETTINGS if view in s.views}
    assert VIEW_SETTINGS["models"] == VIEW_SETTINGS["questions"] == set()
    assert VIEW_SETTINGS["alignment"] == VIEW_SETTINGS["saturation"] - {"rule"}     # it draws every rule


def test_a_link_writes_the_settings_in_the_tables_order_and_reads_them_back():
    lab, train = LabState(view="playground", d_k=256, rho=0.5, seed=7, causal=True), TrainingState()
    train.lr = 0.1
    link = to_query(lab, train)
    keys = [pair.split("=")[0] for pair in link[1:].split("&")]
    assert keys == [k for k in KEYS if k in keys]
    lab_values, train_values, notices = parse_query(link)
    assert notices == [] and (lab_values["d_k"], lab_values["seed"], train_values["lr"]) == (256, 7, 0.1)
