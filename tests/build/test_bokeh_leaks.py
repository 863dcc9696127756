"""build/templates/bokeh_leaks.js in Node (tests/build/bokeh_leaks_node.cjs, with stand-ins for BokehJS's
classes): what a view adds while it connects its signals or builds its description goes when the view is
removed, and nothing else; a removed plot leaves its ranges; the model graph is pruned once per
``pruneMs`` however many patches come; a BokehJS whose internals moved is left alone, with one warning.
The built site's long session (test_site_long_session.py) checks the same in Chromium."""
from __future__ import annotations

import json
import subprocess

import pytest

from node_tools import node
from sitebuild import ROOT


@pytest.fixture(scope="module")
def results():
    done = subprocess.run([node(), str(ROOT / "tests" / "build" / "bokeh_leaks_node.cjs")], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("store", ["object", "map"])
def test_a_removed_view_takes_what_it_added(results, store):
    r = results[store]
    assert r["patchedFirst"] is True and r["patchedAgain"] is True and r["warned"] == []
    # two views of one Column model (a re-render): the removed one's callback goes, the live one's stays
    assert r["callbacks"] == {"before": 2, "after": 1, "newStillCalled": True, "oldCalled": False}
    # the plot's viewport listener goes with it (the other plot's stays)
    assert r["resize"] == {"before": 2, "after": 1}
    # the removed plot leaves every range it used; the plot that shares its x range stays there
    assert r["bounds"] == {"x": ["other"], "y": 0, "extra": 0}
    # a widget's description: its document and window listeners go with the widget
    assert r["description"] == {"built": "description", "before": [1, 1], "after": [0, 0]}
    assert r["removedByBokeh"] == [True, True, True]       # BokehJS's own remove still runs
    assert r["addEventListenerRestored"] is True
    # outside a view's signals nothing is recorded: the page's own listener and callback stay
    assert r["outside"] == {"blur": 1, "callbacks": 2}


def test_moved_internals_are_left_alone_and_said_once(results):
    r = results["moved"]
    assert r["patched"] == [False, False]
    assert len(r["warned"]) == 1 and "models/plots/plot_canvas: PlotView is gone" in r["warned"][0]
    assert r["untouched"] is True


def test_the_graph_is_pruned_once_per_interval_however_many_patches(results):
    assert results["prune"] == {"pending": 1, "ms": [1000], "afterFirst": 1, "second": 1}
