"""Every private name of Panel, Bokeh, param and Pyodide the site relies on, in one place, checked
against the versions the site ships.

An upgrade of Panel, Bokeh or Pyodide is the riskiest change in the repository: the browser runtime
(sdpa_worker.py, pyodide_internals.js, bokehjs_internals.js) and the page (web/panel_internals.py) reach into their internals. Each such name is
listed here with where it is used; `make site` checks every one against the installed Panel, Bokeh (its
bokeh.js for BokehJS's) and param (the versions it ships: plan.py takes versions from installed metadata) and against Pyodide's own
files when it self-hosts them, and fails naming each name that moved. tests/build/test_private_api.py
keeps the list complete: every private attribute the runtime and web/ use must be listed.
"""
from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Name:
    """``module`` then ``path`` (dotted attributes from it); ``used``: where we rely on it. ``instance``:
    set on instances in the named class's code (``self.<last part>``), so checked in its source;
    ``browser_only``: a module that imports only in Pyodide (panel.io.pyodide), so its source is read
    for a top-level definition of the name."""
    module: str
    path: str
    used: str
    instance: bool = False
    browser_only: bool = False


PYTHON = [
    Name("param.parameterized", "docstring_signature", "templates/sdpa_worker.py start: param's docstrings off"),
    Name("param.parameterized", "docstring_describe_params", "templates/sdpa_worker.py start"),
    Name("bokeh.model.model", "Model.__init_subclass__", "templates/sdpa_worker.py start: skipped (see BOKEH_INIT_SUBCLASS)"),
    Name("bokeh.core.has_props", "HasProps._overridden_defaults",
         "templates/sdpa_worker.py start: merged once per class (see BOKEH_OVERRIDDEN_DEFAULTS)"),
    Name("bokeh.util.serialization", "_simple_id", "templates/sdpa_worker.py build_app, prerender.py: the models' ids"),
    Name("panel.io.state", "state._add_busy_event", "templates/sdpa_worker.py build_app: no busy indicator"),
    Name("panel.io.state", "state._remove_busy_event", "templates/sdpa_worker.py build_app"),
    Name("panel.io.state", "state._templates", "templates/sdpa_worker.py build_app, follow: the page's template"),
    Name("panel.io.state", "state._schedule_on_load", "templates/sdpa_worker.py link"),
    Name("panel.io.pyodide", "init_doc", browser_only=True, used="templates/sdpa_worker.py build_app"),
    Name("panel.io.pyodide", "write_doc", browser_only=True, used="templates/sdpa_worker.py write"),
    Name("panel.io.pyodide", "_link_docs_worker", browser_only=True, used="templates/sdpa_worker.py link: what the outbox replaces"),
    Name("panel.io.pyodide", "_process_document_events", browser_only=True, used="templates/sdpa_worker.py link: a patch from events"),
    Name("panel.io.pyodide", "_dict_converter", browser_only=True,
         used="templates/sdpa_worker.py link, before_snapshot, after_restore"),
    Name("panel.io.pyodide", "_convert_json_patch", browser_only=True, used="templates/sdpa_worker.py link: the page's patch"),
    Name("panel.reactive", "Syncable._server_change",
         "templates/sdpa_worker.py ignore_own_held_changes: skipped for Python's own held changes"),
    Name("panel.reactive", "Syncable._changing", "templates/sdpa_worker.py ignore_own_held_changes: why (named in its doc)",
         instance=True),
    Name("bokeh.document.callbacks", "DocumentCallbackManager.unhold", "templates/sdpa_worker.py ignore_own_held_changes"),
    Name("bokeh.document.callbacks", "DocumentCallbackManager._held_events", "templates/sdpa_worker.py ignore_own_held_changes",
         instance=True),
    Name("panel.template.base", "BaseTemplate.server_doc", "templates/sdpa_worker.py build_app"),
    Name("panel.template.base", "BaseTemplate._documents", "templates/sdpa_worker.py build_app", instance=True),
    Name("panel.io.location", "Location._update_synced", "web/panel_internals.py stop_location_parser: what the flag stops"),
    Name("panel.io.location", "Location._syncing", "web/panel_internals.py stop_location_parser", instance=True),
    Name("bokeh.server.contexts", "_RequestProxy._request", "web/panel_internals.py server_request: the link's query, bounded",
         instance=True),
    Name("panel.pane", "HTML._transform_object", "web/panel_internals.py escaped_html: a pane's text as Panel escapes it"),
    Name("panel.viewable", "Renderable._models", "web/panel_internals.py rendered_models: a pane's or the Location's "
         "Bokeh models", instance=True),
]

#: Pyodide's internals: (file of its distribution, text that must be in it, where we rely on it). All of them are used
#: in templates/pyodide_internals.js and nowhere else of the runtime (tests/build/test_private_api.py).
ADAPTER = "templates/pyodide_internals.js"
PYODIDE = [
    ("pyodide.js", "_loadSnapshot", f"{ADAPTER} snapshotOptions, forgetSnapshotHeap: the warm boot's loadPyodide option"),
    ("pyodide.asm.js", "_makeSnapshot", f"{ADAPTER} snapshotOptions: making a snapshot"),
    ("pyodide.js", "_snapshotDeserializer", f"{ADAPTER} snapshotOptions"),
    ("pyodide.js", "_createPyodideModule", f"{ADAPTER} wrapModuleFactory: the restore's libraries load first"),
    ("pyodide.asm.js", "._api=API", f"{ADAPTER} dynlibLoader, forgetSnapshotHeap: pyodide._api"),
    ("pyodide.asm.js", "._module=Module", f"{ADAPTER} emscriptenModule: pyodide._module, Emscripten's Module"),
    ("pyodide.asm.js", "API.loadDynlib=", f"{ADAPTER} dynlibLoader: the archive's compiled libraries"),
    *[("pyodide.asm.js", name, f"{ADAPTER} dynamicLinker: where libraries and functions sat in memory")
      for name in ("LDSO", "loadedLibsByName", "loadedLibsByHandle", "GOT", "wasmTable", "getFunctionAddress",
                   "setWasmTableEntry", "convertJsFunctionToWasm", "updateTableMap", "loadDynamicLibrary")],
]

#: What the shipped pyodide.asm.js writes into a `struct dso` (loadDynamicLibrary, after dlopen) for each field
#: templates/pyodide_internals.js reads back (SDPA_DSO there: field -> byte offset).
DSO_WRITES = {"memoryBase": "memoryBase", "memorySize": "metadata.memorySize", "tableBase": "tableBase",
              "tableSize": "metadata.tableSize"}
#: One such write as Emscripten compiles it: ``HEAPU32[handle+12>>>2>>>0]=memoryBase``.
DSO_WRITE = re.compile(r"HEAPU?32\[handle\+(\d+)>>>2(?:>>>0)?\]=([\w.]+)")
#: The offsets pyodide_internals.js uses: ``export const SDPA_DSO = {...};`` (JSON).
SDPA_DSO = re.compile(r"^(?:export )?const SDPA_DSO = (\{.*?\});$", re.M)


def dso_offsets_shipped(asm_js: str) -> dict[str, int]:
    """Each field of DSO_WRITES at the byte offset pyodide.asm.js writes it (absent: not found, or written at
    more than one offset)."""
    written: dict[str, set[int]] = {}
    for offset, value in DSO_WRITE.findall(asm_js):
        written.setdefault(value, set()).add(int(offset))
    return {field: min(written[value]) for field, value in DSO_WRITES.items() if len(written.get(value, ())) == 1}


def dso_offsets_used(adapter_js: str | None = None) -> dict[str, int]:
    """The offsets templates/pyodide_internals.js reads the struct at (its SDPA_DSO)."""
    if adapter_js is None:
        adapter_js = (Path(__file__).resolve().parent / ADAPTER).read_text(encoding="utf-8")
    found = SDPA_DSO.search(adapter_js)
    if found is None:
        raise ValueError(f"{ADAPTER} has no `export const SDPA_DSO = {{...}};` line")
    return json.loads(found[1])


def wrong_dso_offsets(asm_js: str, adapter_js: str | None = None) -> list[str]:
    """Each field pyodide_internals.js reads at another offset than the shipped pyodide.asm.js writes it."""
    shipped, used = dso_offsets_shipped(asm_js), dso_offsets_used(adapter_js)
    return [f"struct dso's {field} at +{used.get(field)} in {ADAPTER}, at "
            f"{'+' + str(shipped[field]) if field in shipped else 'no offset found'} in Pyodide's pyodide.asm.js"
            for field in DSO_WRITES if shipped.get(field) != used.get(field)]


#: BokehJS's internals: (module of Bokeh's bokeh.js or bokeh-widgets.js, name defined in it, where we rely on it).
#: Checked in the unminified bundles of the installed Bokeh, the version whose .min.js files the site ships.
BOKEHJS_ADAPTER = "templates/bokehjs_internals.js"
BOKEHJS = [
    ("models/ui/ui_element", "UIElementView", f"{BOKEHJS_ADAPTER} hookFirstDraw: a root's draw starts in a task of its own"),
    ("models/ui/ui_element", "lazy_initialize", f"{BOKEHJS_ADAPTER} hookFirstDraw"),
    ("core/view", "parent", f"{BOKEHJS_ADAPTER} hookFirstDraw: a view without one is a root"),
    ("core/view", "is_destroyed", f"{BOKEHJS_ADAPTER} hookFirstDraw: a plot removed before its paint"),
    ("models/plots/plot_canvas", "PlotView", f"{BOKEHJS_ADAPTER} hookFirstDraw, hookViewLifetimes: each plot built and "
                                             "painted in a task of its own; a removed plot forgotten by its ranges"),
    ("models/plots/plot_canvas", "lazy_initialize", f"{BOKEHJS_ADAPTER} hookFirstDraw"),
    ("models/plots/plot_canvas", "paint", f"{BOKEHJS_ADAPTER} hookFirstDraw"),
    ("models/plots/plot_canvas", "base_font_size", f"{BOKEHJS_ADAPTER} hookFirstDraw: a plot's font size read from CSS once"),
    ("core/visuals/visual", "VisualProperties", f"{BOKEHJS_ADAPTER} hookFirstDraw: no CSS lookup for a plot's colours"),
    ("core/visuals/visual", "_get_css_value", f"{BOKEHJS_ADAPTER} hookFirstDraw"),
    ("core/visuals/visual", "--bk-", f"{BOKEHJS_ADAPTER} hookFirstDraw: the CSS variables' prefix (see bokeh_css_variables)"),
    ("document/document", "_recompute_all_models", f"{BOKEHJS_ADAPTER} pruneModelGraph: the model graph pruned soon "
                                                   "after a patch"),
    ("model", "on_event", f"{BOKEHJS_ADAPTER} hookViewLifetimes: a view's event callbacks go with the view"),
    ("model", "js_event_callbacks", f"{BOKEHJS_ADAPTER} dropCallback: where on_event keeps a model's callbacks"),
    ("core/bokeh_events", "event_name", f"{BOKEHJS_ADAPTER} hookViewLifetimes: an event class's name"),
    ("models/plots/plot", "default_view", f"{BOKEHJS_ADAPTER} hookViewLifetimes: each model class's view class"),
    ("core/view", "remove", f"{BOKEHJS_ADAPTER} hookViewLifetimes"),
    ("models/plots/plot_canvas", "connect_signals", f"{BOKEHJS_ADAPTER} hookViewLifetimes: its visual viewport listener"),
    ("models/ranges/data_range1d", "_plot_bounds", f"{BOKEHJS_ADAPTER} hookViewLifetimes: a removed plot forgotten"),
    ("models/widgets/input_widget", "_build_description_el", f"{BOKEHJS_ADAPTER} hookViewLifetimes: a description's "
                                                             "listeners"),
]

# templates/sdpa_worker.py (start) replaces Bokeh's Model.__init_subclass__ by its first line and turns param's
# docstring flags off, assuming the rest only serves documentation. The build checks that assumption
# against the Bokeh that ships, so an upgrade that changes it fails here, not in the page.
BOKEH_INIT_SUBCLASS = """
@classmethod
def __init_subclass__(cls):
    super().__init_subclass__()
    if cls.__module__.startswith("bokeh.models"):
        assert "__init__" in cls.__dict__, str(cls)
        parameters = [x[0] for x in cls.parameters()]
        cls.__init__.__signature__ = Signature(parameters=parameters)
        process_example(cls)
"""


# templates/sdpa_worker.py (merge_overridden_defaults_once) keeps HasProps._overridden_defaults's answer per class,
# assuming it merges the class attributes of the MRO (fixed once a class is made) and that its one caller in
# Bokeh (Property.themed_default) only reads the dict. Both checked against the Bokeh that ships.
BOKEH_OVERRIDDEN_DEFAULTS = """
@classmethod
def _overridden_defaults(cls) -> dict[str, Any]:
    ''' Returns a dictionary of defaults that have been overridden.

    .. note::
        This is an implementation detail of ``Property``.

    '''
    defaults: dict[str, Any] = {}
    for c in reversed(cls.__mro__):
        defaults.update(getattr(c, "__overridden_defaults__", {}))
    return defaults
"""
#: Every use of it in Bokeh: (module, the line that uses it), each only reading the dict it returns.
BOKEH_OVERRIDDEN_DEFAULTS_USES = [("bokeh.core.property.bases", "overrides = cls._overridden_defaults()")]


def overridden_defaults_moved() -> list[str]:
    """What no longer holds of BOKEH_OVERRIDDEN_DEFAULTS's assumptions in the installed Bokeh."""
    import bokeh
    from bokeh.core.has_props import HasProps

    out = []
    method = HasProps.__dict__.get("_overridden_defaults")
    source = inspect.getsource(method.__func__) if isinstance(method, classmethod) else ""
    if source.split() != BOKEH_OVERRIDDEN_DEFAULTS.split():
        out.append("bokeh.core.has_props.HasProps._overridden_defaults changed: templates/sdpa_worker.py keeps its answer "
                   "per class; check what it does now, then update private_api.BOKEH_OVERRIDDEN_DEFAULTS")
    root = Path(bokeh.__file__).parent
    uses = sorted(str(path.relative_to(root.parent)).removesuffix(".py").replace("/", ".")
                  for path in root.rglob("*.py") if "_overridden_defaults()" in path.read_text(encoding="utf-8"))
    if uses != [module for module, _ in BOKEH_OVERRIDDEN_DEFAULTS_USES]:
        out.append(f"HasProps._overridden_defaults() is called in {uses}, not only where "
                   "private_api.BOKEH_OVERRIDDEN_DEFAULTS_USES says: check that each caller only reads it")
    for module, line in BOKEH_OVERRIDDEN_DEFAULTS_USES:
        spec = importlib.util.find_spec(module)
        if spec is None or spec.origin is None or line not in Path(spec.origin).read_text(encoding="utf-8"):
            out.append(f"{module} no longer has `{line}`: check how it uses HasProps._overridden_defaults")
    return out


def resolve(name: Name) -> bool:
    if name.browser_only:
        spec = importlib.util.find_spec(name.module)
        source = Path(spec.origin).read_text() if spec and spec.origin else ""
        return re.search(rf"^(async def |def |class ){name.path}\b|^{name.path}\s*[:=]", source, re.M) is not None
    try:
        obj: object = importlib.import_module(name.module)
    except ImportError:
        return False
    *owners, last = name.path.split(".")
    for part in owners:
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    if name.instance:
        if not isinstance(obj, type):       # an attribute its instances set: obj is their class
            return False
        try:
            return any(re.search(rf"self\.{last}\s*[:=]", inspect.getsource(cls)) for cls in inspect.getmro(obj) if cls is not object)
        except (OSError, TypeError):
            return False
    return hasattr(obj, last)


def missing_python(names: list[Name] | None = None) -> list[str]:
    """Each listed name (PYTHON unless given) the installed packages no longer have, with where we use it."""
    names = PYTHON if names is None else names
    out = [f"{n.module}.{n.path} (used in {n.used})" for n in names if not resolve(n)]
    from bokeh.model.model import Model
    if inspect.getsource(Model.__init_subclass__).split() != BOKEH_INIT_SUBCLASS.split():
        out.append("bokeh.model.model.Model.__init_subclass__ changed: templates/sdpa_worker.py (start) skips it as "
                   "documentation-only work; check what it does now, then update private_api.BOKEH_INIT_SUBCLASS")
    return out + overridden_defaults_moved()


def missing_pyodide(folder: Path, names=PYODIDE) -> list[str]:
    """Each listed Pyodide internal its files in ``folder`` no longer hold, and each `struct dso` offset that
    moved."""
    texts: dict[str, str] = {}
    out = []
    for file, text, used in names:
        if file not in texts:
            path = folder / file
            texts[file] = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
        if text not in texts[file]:
            out.append(f"{text!r} in Pyodide's {file} (used in {used})")
    asm = folder / "pyodide.asm.js"
    return out + wrong_dso_offsets(asm.read_text(encoding="utf-8", errors="replace") if asm.exists() else "")


def bokehjs_module(bundle: str, module: str) -> str:
    """The text of one module of Bokeh's unminified bundle ("" when it has none by that name)."""
    start = bundle.find(f"/* {module}.js */ function _(")
    if start < 0:
        return ""
    end = bundle.find("*/ function _(", start + len(module) + 10)
    return bundle[start:] if end < 0 else bundle[start:end]


def missing_bokehjs(bundle: str | None = None, names=BOKEHJS) -> list[str]:
    """Each listed BokehJS internal the bundle (the installed Bokeh's bokeh.js unless given) no longer defines:
    an exported class, a method or getter, a property its constructor sets, a field set on a class's prototype,
    or a property its define() declares."""
    if bundle is None:
        import bokeh
        js = Path(bokeh.__file__).parent / "server" / "static" / "js"
        bundle = "".join((js / f).read_text(encoding="utf-8") for f in ("bokeh.js", "bokeh-widgets.js"))
    out = []
    for module, name, used in names:
        text = bokehjs_module(bundle, module)
        word = re.escape(name)
        found = (name in text) if not name.isidentifier() else re.search(
            rf"exports\.{word} = {word};|^\s+(async |get |static )?{word}\(|this\.{word} = |prototype\.{word} = "
            rf"|^\s+{word}: \[", text, re.M)
        if not found:
            out.append(f"{name} in BokehJS's {module} (used in {used})")
    return out


#: A CSS variable Bokeh reads for a plot's visual property: --bk-<prefix><visual>-<name> (core/visuals/visual).
CSS_VISUAL = re.compile(r"--bk-[a-z0-9-]*?(line|fill|hatch|text|image)-[a-z-]+\s*:")


def bokeh_css_variables(folder: Path) -> list[str]:
    """Where a file of the built site sets a CSS variable that Bokeh would read for a plot's colour, width or
    font. templates/bokehjs_internals.js (hookFirstDraw, for slices.js) answers every such lookup with "" (none is set), so the build refuses one."""
    found = []
    for path in sorted(folder.rglob("*")):
        if path.suffix in (".html", ".css", ".js", ".json") and path.is_file():
            for m in CSS_VISUAL.finditer(path.read_text(encoding="utf-8", errors="replace")):
                found.append(f"{path.relative_to(folder)}: {m.group(0).rstrip(': ')}")
    return found


def check(pyodide_folder: Path | None) -> None:
    """Fail the build naming every private name that moved."""
    gone = missing_python() + missing_bokehjs() + (missing_pyodide(pyodide_folder) if pyodide_folder is not None else [])
    if gone:
        raise SystemExit("make site: private names the site relies on are gone from the versions it ships "
                         "(build/private_api.py lists them):\n  " + "\n  ".join(gone))
