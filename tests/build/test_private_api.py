"""build/private_api.py: the private Panel, Bokeh, param and Pyodide names the site relies on, all of
them listed, and every one present in the versions the site ships."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from build import private_api, runtime
from sitebuild import NO_DIST, pyodide_dist

ROOT = Path(__file__).resolve().parents[2]


def test_every_listed_name_is_in_the_installed_panel_bokeh_and_param():
    assert private_api.missing_python() == []


def test_a_name_that_moved_is_named_with_where_it_is_used(monkeypatch):
    moved = [
        private_api.Name("panel.io.pyodide", "_gone_in_an_upgrade", "templates/sdpa_worker.py link", browser_only=True),
        private_api.Name("panel.io.state", "state._renamed", "templates/sdpa_worker.py build_app"),
        private_api.Name("panel.io.location", "Location._renamed", "web/page.py", instance=True),
    ]
    gone = private_api.missing_python(moved)
    assert gone == ["panel.io.pyodide._gone_in_an_upgrade (used in templates/sdpa_worker.py link)",
                    "panel.io.state.state._renamed (used in templates/sdpa_worker.py build_app)",
                    "panel.io.location.Location._renamed (used in web/page.py)"]
    monkeypatch.setattr(private_api, "PYTHON", private_api.PYTHON + moved)
    with pytest.raises(SystemExit, match=r"(?s)state\._renamed.*Location\._renamed"):     # the build fails, naming them
        private_api.check(None)


def test_pyodide_internals_are_checked_in_its_files(tmp_path):
    (tmp_path / "pyodide.js").write_text("function loadPyodide(o){ o._loadSnapshot; _createPyodideModule }")
    (tmp_path / "pyodide.asm.js").write_text("LDSO GOT")
    gone = private_api.missing_pyodide(tmp_path)
    assert any("'API.loadDynlib=' in Pyodide's pyodide.asm.js" in g for g in gone)
    assert not any(g.startswith(("'_loadSnapshot'", "'LDSO'", "'GOT'")) for g in gone)
    dist = pyodide_dist()
    if dist is not None:      # the real distribution, when the machine has one
        assert private_api.missing_pyodide(dist) == []


def test_bokehjs_internals_are_checked_in_the_installed_bokeh_js():
    assert private_api.missing_bokehjs() == []
    bundle = ("/* core/view.js */ function _(require, module, exports) {\n    class View {\n"
              "        constructor(o) { this.parent = o.parent; }\n        get is_destroyed() { return false; }\n    }\n"
              "    exports.View = View;\n}\n/* models/plots/plot_canvas.js */ function _(require, module, exports) {\n"
              "    class PlotView {\n        async lazy_initialize() {}\n        repaint() {}\n    }\n"
              "    _a.prototype.default_view = PlotView;\n    this.define(() => ({\n        js_event_callbacks: [Dict(Any), {}],\n"
              "    }));\n    const old_name = that.event_name;\n}\n")
    names = [("core/view", "parent", "a"), ("core/view", "is_destroyed", "b"), ("core/view", "View", "c"),
             ("models/plots/plot_canvas", "lazy_initialize", "d"), ("models/plots/plot_canvas", "paint", "e"),
             ("models/plots/plot_canvas", "PlotView", "f"), ("core/view", "repaint", "g"), ("core/gone", "X", "h"),
             ("models/plots/plot_canvas", "default_view", "i"), ("models/plots/plot_canvas", "js_event_callbacks", "j"),
             ("models/plots/plot_canvas", "event_name", "k")]
    assert private_api.missing_bokehjs(bundle, names) == [
        "paint in BokehJS's models/plots/plot_canvas (used in e)",          # repaint( is not paint(
        "PlotView in BokehJS's models/plots/plot_canvas (used in f)",       # a class it does not export
        "repaint in BokehJS's core/view (used in g)",                       # defined in another module
        "X in BokehJS's core/gone (used in h)",
        "event_name in BokehJS's models/plots/plot_canvas (used in k)"]         # read there, set nowhere


def test_a_css_variable_bokeh_would_read_for_a_plot_is_refused(tmp_path):
    """templates/bokehjs_internals.js (hookFirstDraw) answers Bokeh's CSS lookups for plots' visuals with "": the build refuses a
    stylesheet that sets one."""
    (tmp_path / "static").mkdir()
    (tmp_path / "static" / "theme.css").write_text(":host { --bk-tooltip-color: red; --bk-major-label-text-color: #333; }")
    (tmp_path / "index.html").write_text("<style>:root{--bk-line-width:2px}</style><p>--bk-line-color is read</p>")
    (tmp_path / "data.bin").write_bytes(b"--bk-fill-color: red")
    assert private_api.bokeh_css_variables(tmp_path) == ["index.html: --bk-line-width",
                                                         "static/theme.css: --bk-major-label-text-color"]


# A private attribute as the runtime and the page write it: `x._name` where x is a Panel/Bokeh/param/Pyodide
# object. Our own names (_sdpa*, self._*, the page's classes) are not private API.
PRIVATE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\.(_[A-Za-z][A-Za-z0-9_]*)")
# ... and as getattr writes it: getattr(x, "_name"
PRIVATE_GETATTR = re.compile(r"getattr\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,\s*[\"'](_[A-Za-z][A-Za-z0-9_]*)[\"']")
OURS = {"self", "cls", "os", "sys", "lab", "page", "Page", "np", "sdpaLab"}


def used_names() -> set[str]:
    texts = [p.read_text() for p in sorted(runtime.TEMPLATES.iterdir()) if p.suffix in (".js", ".py")]
    texts += [p.read_text() for p in (ROOT / "web").rglob("*.py")]
    found = set()
    for text in texts:
        for owner, attr in PRIVATE.findall(text) + PRIVATE_GETATTR.findall(text):
            if owner in OURS or attr.startswith(("_sdpa", "__")):
                continue
            found.add(attr)
    return found


def test_every_private_name_the_runtime_and_the_page_use_is_listed():
    """A new reach into Panel's, Bokeh's or Pyodide's internals must be listed, so that the build checks it."""
    listed = ({n.path.rsplit(".", 1)[-1] for n in private_api.PYTHON} | {name for _, name, _ in private_api.BOKEHJS}
              | {re.sub(r"\W.*", "", t.lstrip(".")) for _, t, _ in private_api.PYODIDE})
    # names found by the scan that are not private API: a comment's reference to another project's code
    not_api = {"_init_weights", "_on_location"}
    assert used_names() - listed - not_api == set()


# what Pyodide 0.29.3's pyodide.asm.js holds, as loadDynamicLibrary writes dlopen's handle
DSO_WRITES_0_29 = ("if(handle){HEAP8[handle+8>>>0]=1;HEAPU32[handle+12>>>2>>>0]=memoryBase;"
                   "HEAP32[handle+16>>>2>>>0]=metadata.memorySize;HEAPU32[handle+20>>>2>>>0]=tableBase;"
                   "HEAP32[handle+24>>>2>>>0]=metadata.tableSize}")


def test_the_adapter_reads_the_struct_dso_where_pyodide_writes_it():
    assert private_api.dso_offsets_shipped(DSO_WRITES_0_29) == private_api.dso_offsets_used()
    assert private_api.wrong_dso_offsets(DSO_WRITES_0_29) == []
    # every read of the handle goes through SDPA_DSO: no offset typed anywhere else in the runtime
    for path in sorted(runtime.TEMPLATES.glob("*.js")):
        assert re.findall(r"\(\s*\w+\s*\+\s*\d+\s*\)\s*>>>", path.read_text()) == [], path.name


def code_of(js: str) -> str:
    """A module's code without its comments (// to the end of a line that is not inside a string)."""
    return "\n".join(re.sub(r"^\s*//.*$|\s//\s.*$", "", line) for line in js.splitlines())


def test_pyodide_internals_are_used_in_the_adapter_and_nowhere_else():
    """Every Pyodide and Emscripten internal private_api.PYODIDE lists is named in templates/pyodide_internals.js,
    and in no other module's code: an upgrade of Pyodide touches the adapter, not the modules that use it."""
    # each listed text's names (`._api=API` names _api; `API.loadDynlib=`, loadDynlib), our patch's hook, the heap
    names = ({n for _, text, _ in private_api.PYODIDE for n in re.findall(r"[A-Za-z_]\w*", text)} - {"API", "Module"}
             | {"sdpaGetMemory", "HEAPU32"})
    adapter = runtime.TEMPLATES / "pyodide_internals.js"
    missing = {n for n in names if not re.search(rf"\b{n}\b", code_of(adapter.read_text()))}
    assert missing == set()
    elsewhere = {(path.name, n) for path in runtime.TEMPLATES.glob("*.js") if path != adapter
                 for n in names if re.search(rf"\b{n}\b", code_of(path.read_text()))}
    assert elsewhere == set()


def test_a_struct_dso_offset_that_moved_fails_the_build_naming_the_field(tmp_path):
    moved = DSO_WRITES_0_29.replace("handle+20>>>2", "handle+28>>>2")
    assert private_api.wrong_dso_offsets(moved) == [
        "struct dso's tableBase at +20 in templates/pyodide_internals.js, at +28 in Pyodide's pyodide.asm.js"]
    gone = private_api.wrong_dso_offsets(moved.replace("=metadata.tableSize", "=meta.tableSize"))
    assert gone[-1] == ("struct dso's tableSize at +24 in templates/pyodide_internals.js, at no offset found in "
                        "Pyodide's pyodide.asm.js")
    twice = private_api.wrong_dso_offsets(DSO_WRITES_0_29 + "HEAPU32[handle+40>>>2]=memoryBase")
    assert twice == ["struct dso's memoryBase at +12 in templates/pyodide_internals.js, at no offset found in "
                     "Pyodide's pyodide.asm.js"]
    (tmp_path / "pyodide.asm.js").write_text(moved)
    assert any(g.startswith("struct dso's tableBase") for g in private_api.missing_pyodide(tmp_path))


def test_the_shipped_pyodide_writes_the_struct_dso_where_the_adapter_reads_it():
    dist = pyodide_dist()
    if dist is None:
        pytest.skip(NO_DIST)
    assert private_api.wrong_dso_offsets((dist / "pyodide.asm.js").read_text(encoding="utf-8", errors="replace")) == []


def test_the_kept_overridden_defaults_fail_the_build_when_bokeh_changes_them(monkeypatch):
    """sdpa_worker keeps HasProps._overridden_defaults per class: the build fails if Bokeh's method or its
    callers are no longer what that assumes."""
    assert private_api.overridden_defaults_moved() == []
    monkeypatch.setattr(private_api, "BOKEH_OVERRIDDEN_DEFAULTS", private_api.BOKEH_OVERRIDDEN_DEFAULTS + "    x = 1\n")
    monkeypatch.setattr(private_api, "BOKEH_OVERRIDDEN_DEFAULTS_USES",
                        [*private_api.BOKEH_OVERRIDDEN_DEFAULTS_USES, ("bokeh.core.has_props", "cls._overridden_defaults().copy()")])
    moved = private_api.overridden_defaults_moved()
    assert [m.split(":")[0] for m in moved] == [
        "bokeh.core.has_props.HasProps._overridden_defaults changed",
        "HasProps._overridden_defaults() is called in ['bokeh.core.property.bases'], not only where private_api.BOKEH_OVERRIDDEN_DEFAULTS_USES says",
        "bokeh.core.has_props no longer has `cls._overridden_defaults().copy()`"]
    with pytest.raises(SystemExit, match="_overridden_defaults changed"):
        private_api.check(None)


def test_panels_internals_are_reached_from_web_through_its_adapter_only():
    """Every listed Panel or Bokeh name the page (web/) uses is in web/panel_internals.py, and no other module of
    web/ names one: an upgrade touches the adapter, not the views."""
    names = {n.path.rsplit(".", 1)[-1] for n in private_api.PYTHON if n.used.startswith("web/")}
    assert names >= {"_syncing", "_request", "_transform_object", "_models"}
    adapter = ROOT / "web" / "panel_internals.py"
    assert {n for n in names if not re.search(rf"\b{n}\b", adapter.read_text())} == set()
    elsewhere = {(str(path.relative_to(ROOT)), n) for path in (ROOT / "web").rglob("*.py") if path != adapter
                 for n in names if re.search(rf"\.{n}\b|[\"']{n}[\"']", path.read_text())}
    assert elsewhere == set()


def test_bokehjs_internals_are_used_in_the_adapter_and_nowhere_else():
    """Every BokehJS internal private_api.BOKEHJS lists is named in templates/bokehjs_internals.js and in no other
    module's code (names common in any JavaScript, such as remove or parent, aside): an upgrade of Bokeh touches the
    adapter, not slices.js or bokeh_leaks.js."""
    names = {name for _, name, _ in private_api.BOKEHJS if re.fullmatch(r"[A-Za-z_]\w*", name)} - {"parent", "remove", "paint"}
    adapter = runtime.TEMPLATES / "bokehjs_internals.js"
    assert {n for n in names if not re.search(rf"\b{n}\b", code_of(adapter.read_text()))} == set()
    elsewhere = {(path.name, n) for path in runtime.TEMPLATES.glob("*.js") if path != adapter
                 for n in names if re.search(rf"\b{n}\b", code_of(path.read_text()))}
    assert elsewhere == set()
