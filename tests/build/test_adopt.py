"""build/templates/adopt.js in Node: when the page keeps its pre-rendered views and which live values it
takes (the patch), or when it must draw the live document anew. Each case is two small Bokeh documents
written here; Node runs adopt.js as boot.js includes it (plain functions, by text)."""
from __future__ import annotations

import json
import subprocess

import pytest

from node_tools import node
from sitebuild import ROOT

RUN = r"""
const fs = require("node:fs");
const vm = require("node:vm");
vm.runInThisContext(fs.readFileSync(process.argv[1], "utf8"), {filename: "adopt.js"});
const cases = JSON.parse(fs.readFileSync(0, "utf8"));
const out = cases.map(({drawn, live, moved, notDrawn, sameFiles}) => sdpaAdoptEvents(
  sdpaModelsOf(drawn), sdpaModelsOf(live),
  {drawnHere: (id) => !(notDrawn || []).includes(id), moved: new Set(moved || []),
   sameFile: (a, b) => (sameFiles || []).some(([x, y]) => x === a && y === b)}));
process.stdout.write(JSON.stringify(out));
"""


def doc(*roots) -> dict:
    return {"d": {"roots": list(roots), "title": "SDPA Lab"}}


def model(id_: str, name: str, **attributes) -> dict:
    return {"type": "object", "name": name, "id": id_, "attributes": attributes}


def slider(value=64, **more):
    return model("p2", "Slider", value=value, title="d_k", **more)


def page(slider_model, text="<p>87%</p>"):
    """A column holding an HTML pane and a slider: three models, nested as Bokeh writes them."""
    return doc(model("p1", "Column", children=[model("p3", "HTML", text=text), slider_model]))


CASES = {
    "the same document": (page(slider()), page(slider()), {}, []),
    "a live value that differs": (page(slider()), page(slider(), text="<p>86%</p>"), {},
                                  [{"kind": "ModelChanged", "model": {"id": "p3"}, "attr": "text", "new": "<p>86%</p>"}]),
    "a value the reader has moved stays": (page(slider(64)), page(slider(512)), {"moved": ["p2.value"]}, []),
    "the reader's move does not hide another attribute": (
        page(slider(64, end=10)), page(slider(512, end=12)), {"moved": ["p2.value"]},
        [{"kind": "ModelChanged", "model": {"id": "p2"}, "attr": "end", "new": 12}]),
    "an attribute back to its default": (page(slider(disabled=True)), page(slider()), {}, None),
    "another type under an id": (page(slider()), page(model("p2", "Spinner", value=64)), {}, None),
    "a model more": (page(slider()), doc(model("p1", "Column", children=[model("p3", "HTML", text="<p>87%</p>"),
                                                                         slider(), model("p4", "Button")])), {}, None),
    "a model the page has not drawn": (page(slider()), page(slider()), {"notDrawn": ["p3"]}, None),
    "one stylesheet file under two URLs": (
        page(slider(stylesheets=[model("s1", "ImportedStyleSheet", url="./css/a.css?v=1")])),
        page(slider(stylesheets=[model("s1", "ImportedStyleSheet", url="https://x.invalid/css/a.css")])),
        {"sameFiles": [["https://x.invalid/css/a.css", "./css/a.css?v=1"]]}, []),
}


@pytest.fixture(scope="module")
def results():
    cases = [{"drawn": drawn, "live": live, **extra} for drawn, live, extra, _ in CASES.values()]
    done = subprocess.run([node(), "-e", RUN, str(ROOT / "build" / "templates" / "adopt.js")],
                          input=json.dumps(cases), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return dict(zip(CASES, json.loads(done.stdout)))


@pytest.mark.parametrize("case", list(CASES))
def test_adopt(results, case):
    assert results[case] == CASES[case][3]
