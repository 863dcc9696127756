"""The worker's Python (build/templates/sdpa_worker.py) in CPython, as worker.js drives it in Pyodide:
start, build the app, write its document, follow a link as a restored snapshot does, write again, link
to the page, and answer the page's patches. Pyodide's `js` and `pyodide` modules are stood in for by
plain Python (a JS object is a dict), so Panel's own Pyodide module imports here. It runs in a fresh
interpreter: `start` must come before Panel and Bokeh are imported, as in the worker."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

DRIVER = r'''
import asyncio, json, os, sys, types

# Pyodide's modules, as far as Panel's panel.io.pyodide and sdpa_worker use them. No js.document: a worker.
js = types.ModuleType("js")
js.JSON = js.XMLHttpRequest = object()
js.Map = types.SimpleNamespace(new=lambda entries: dict(entries))
js.Object = types.SimpleNamespace(entries=lambda d: list(d.items()))
pyodide = types.ModuleType("pyodide")
# to_js: bytes become a JS Uint8Array (its .buffer the ArrayBuffer Panel sends); the rest as they are
pyodide.ffi = types.SimpleNamespace(to_js=lambda value, **kw: types.SimpleNamespace(buffer=value)
                                    if isinstance(value, bytes) else value, jsnull=object())
pyodide.code = types.SimpleNamespace(run_js=lambda code: None)
sys.modules.update({"js": js, "pyodide": pyodide, "pyodide.code": pyodide.code})


class FromPage:
    """A patch as the page sends it: a JS object, which Panel converts with .to_py()."""
    def __init__(self, value):
        self.value = value

    def to_py(self, default_converter=None):
        return json.loads(json.dumps(self.value))


sys.path.insert(0, sys.argv[1])
import sdpa_worker

out = {}
sdpa_worker.start("https://example.invalid/panel/")
import param.parameterized
out["cdn_root"] = os.environ["PANEL_CDN_ROOT"]
out["docstrings_off"] = not (param.parameterized.docstring_signature or param.parameterized.docstring_describe_params)
import bokeh.models
out["signatures_skipped"] = "__signature__" not in vars(bokeh.models.Slider.__init__)   # Bokeh's __init_subclass__


async def main():
    from bokeh.document.events import DocumentPatchedEvent
    from bokeh.models import Slider
    from panel.io.state import state

    sdpa_worker.build_app("", 5000)        # as a snapshot is made: for no link
    # every model class's overridden defaults, kept once merged, are what Bokeh's own merge over its MRO gives
    from bokeh.core.has_props import HasProps
    classes, todo = [], [HasProps]
    while todo:
        cls = todo.pop()
        classes.append(cls)
        todo.extend(cls.__subclasses__())

    def merged(cls):
        defaults = {}
        for c in reversed(cls.__mro__):
            defaults.update(getattr(c, "__overridden_defaults__", {}))
        return defaults

    out["defaults"] = {"classes": len(classes), "overridden": sum(bool(merged(c)) for c in classes),
                       "differ": [c.__name__ for c in classes if c._overridden_defaults() != merged(c)],
                       "kept": all(c._overridden_defaults() is c._overridden_defaults() for c in classes)}
    docs_json, render_items, root_ids = await sdpa_worker.write()
    ids = [int(m) for m in __import__("re").findall(r'"id":\s*"p(\d+)"', docs_json)]
    out["first"] = {"docs_json": docs_json, "min_id": min(ids), "roots": len(json.loads(root_ids))}
    sdpa_worker.follow("?view=dial&s=4")   # as a restored snapshot follows the visitor's link
    docs_json, render_items, root_ids = await sdpa_worker.write()
    out["followed"] = docs_json

    sent, raw = [], []
    apply = sdpa_worker.link(lambda patch, buffers, done: sent.append((patch, done)))
    await asyncio.sleep(0)
    sent.clear()
    doc = state.curdoc
    doc.on_change(lambda event: raw.append(event) if isinstance(event, DocumentPatchedEvent) else None)
    (slider,) = [m for m in doc.select({"type": Slider}) if (m.title or "").startswith("Logit std s")]

    def page_sets(value):
        apply(FromPage({"events": [{"kind": "ModelChanged", "model": {"id": slider.id}, "attr": "value", "new": value}]}))

    page_sets(1.5)
    out["step"] = {"sent": [(p, d) for p, d in sent], "raw": len(raw), "slider": slider.id}
    sent.clear()
    page_sets(1.5)                          # the same value again: nothing changes
    out["same"] = list(sent)
    sent.clear()
    slider.value = 2.5                      # a change Python makes on its own (a timer): sent on the next tick
    out["timer_before_tick"] = len(sent)
    await asyncio.sleep(0)
    out["timer"] = [(p, d) for p, d in sent]
    # a change Python makes on its own that adds models (a section laid out on the loop's next turn), and a
    # patch of the page's before the tick that would send it: the new models go whole, before the answer
    import panel as pn
    sent.clear()
    added = pn.pane.HTML("<p>laid out later</p>")
    state._templates[doc].page.content.append(added)
    (new_id,) = [m.id for m, _ in added._models.values()]
    page_sets(1.0)
    await asyncio.sleep(0)
    out["added"] = {"id": new_id, "sent": [(p, d) for p, d in sent]}
    # a widget Python changes inside pn.io.hold() (the tour's choices on "Next step"), then the page's pick on it
    radio = pn.widgets.RadioBoxGroup(options={"a": 0, "b": 1}, value=None)
    state._templates[doc].page.content.append(radio)
    await asyncio.sleep(0)
    with pn.io.hold():
        radio.param.update(options={"c": 2, "d": 3, "e": 4}, value=None)
    (radio_model,) = [m for m, _ in radio._models.values()]
    out["held_options"] = repr(radio.options)
    apply(FromPage({"events": [{"kind": "ModelChanged", "model": {"id": radio_model.id}, "attr": "active", "new": 1}]}))
    out["held_pick"] = radio.value
    sdpa_worker.set_location(json.dumps({"search": "?view=dial&s=2.5", "hash": "", "bogus": 1}))
    out["location"] = state.location.search

    # around a memory snapshot: a task still pending is named; Panel's converter dropped, then made again
    # from Panel's own source with sys.path as it was
    import panel.io.pyodide as panel_pyodide
    waiting = asyncio.ensure_future(asyncio.sleep(3600))
    out["pending"] = json.loads(await sdpa_worker.before_snapshot())
    waiting.cancel()
    out["dropped"] = panel_pyodide._dict_converter is None
    sys.path[:0] = ["", ""]
    pyodide.code.run_js = lambda code: ("made by run_js", code)
    sdpa_worker.after_restore()
    out["remade"] = panel_pyodide._dict_converter
    out["empty_paths"] = sys.path.count("")

asyncio.run(main())
print("RESULT " + json.dumps(out, default=str))
'''


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    driver = tmp_path_factory.mktemp("worker") / "driver.py"
    driver.write_text(DRIVER)
    done = subprocess.run([sys.executable, str(driver), str(ROOT / "build" / "templates")], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")]
    return json.loads(line[len("RESULT "):])


def events(patch) -> list[dict]:
    return patch["events"] if patch else []


def test_start_points_panel_at_the_site_and_skips_the_docstrings(run):
    assert run["cdn_root"] == "https://example.invalid/panel/"
    assert run["docstrings_off"]
    assert run["signatures_skipped"]


def test_each_model_class_merges_its_overridden_defaults_once_and_as_bokeh_does(run):
    """start() keeps HasProps._overridden_defaults per class (Bokeh merged the MRO at every default it evaluated):
    the same dict as Bokeh's merge for every model class there is once the app is built, and kept."""
    d = run["defaults"]
    assert d["classes"] > 400 and d["overridden"] > 50, d
    assert d["differ"] == [] and d["kept"] is True


def test_the_written_document_is_numbered_from_the_first_id_and_follows_the_link(run):
    """Ids from first_id, as the pre-render numbered them; a followed link is the document written next."""
    assert run["first"]["min_id"] >= 5000
    assert run["first"]["roots"] >= 1
    assert "Logit std s" not in run["first"]["docs_json"]          # the default link is not the dial
    assert "Logit std s" in run["followed"]
    assert '"value":4' in run["followed"].replace(" ", "")


def test_a_page_patch_is_answered_by_one_message_without_the_pages_own_change(run):
    """Panel would send one message per Bokeh change; the outbox sends the step's changes as one, marked
    done, and does not echo the slider's value back to the page that set it."""
    step = run["step"]
    assert run["step"]["raw"] > 1, "the slider step should change several models"
    assert len(step["sent"]) == 1
    patch, done = step["sent"][0]
    assert done is True
    assert 1 <= len(events(patch)) <= step["raw"]
    assert not [e for e in events(patch) if e.get("model", {}).get("id") == step["slider"] and e.get("attr") == "value"]


def test_a_change_python_makes_inside_a_hold_is_not_taken_for_the_pages(run):
    """Unheld in the worker, Panel's own change of a radio group's labels came back to it as the page's: its
    options became the list of labels, and the next pick a label, not a value (the tour's TypeError, issue 55)."""
    assert run["held_options"] == repr({"c": 2, "d": 3, "e": 4})
    assert run["held_pick"] == 3


def test_a_patch_that_changes_nothing_is_answered_idle(run):
    assert run["same"] == [[None, True]]


def test_a_change_python_makes_on_its_own_goes_on_the_next_tick(run):
    assert run["timer_before_tick"] == 0
    (patch, done), = run["timer"]
    assert done is False
    assert [e for e in events(patch) if e.get("attr") == "value" and e.get("new") == 2.5]


def test_models_python_adds_on_its_own_reach_the_page_before_its_patch_is_applied(run):
    """Bokeh's apply_json_patch marks every model of the document as known to the page; the models a timer
    added, not sent yet, would then go as bare references the page cannot resolve ("reference ... isn't
    known"). They go first, whole, then the answer."""
    added = run["added"]

    def defines(x) -> bool:
        if isinstance(x, dict):
            return (x.get("type") == "object" and x.get("id") == added["id"]) or any(map(defines, x.values()))
        return isinstance(x, list) and any(map(defines, x))

    assert [done for _, done in added["sent"]] == [False, True], added["sent"]
    assert defines(added["sent"][0][0]), added["sent"][0]


def test_the_pages_location_reaches_panel(run):
    assert run["location"] == "?view=dial&s=2.5"


def test_a_snapshot_names_pending_tasks_and_panels_converter_is_made_again(run):
    """before_snapshot names the asyncio tasks a restore would lose and drops the JS function Python holds;
    after_restore makes it again with the JS the installed Panel's panel/io/pyodide.py runs (the Panel the
    site ships), and leaves one "" on sys.path."""
    import importlib.util

    source = Path(importlib.util.find_spec("panel.io.pyodide").origin).read_text()
    panels_js = source.split('_dict_converter = pyodide.code.run_js("""', 1)[1].split('""")', 1)[0]
    assert "Object.fromEntries" in panels_js and "undefined" in panels_js
    assert len(run["pending"]) == 1 and "sleep" in run["pending"][0]
    assert run["dropped"] is True
    assert run["remade"] == ["made by run_js", panels_js]
    assert run["empty_paths"] == 1
