"""Each step of the site build on its own, without running the build: plan (pure, on fakes), wheels,
bytecode, lock, images, notices, renderer, offline policy."""
from __future__ import annotations

import base64
import hashlib
import html
import importlib.metadata as md
import json
import re
import struct
import zipfile
import zlib

import pytest

from build import archive, bytecode, icons, notices, offline, plan, prerender, pyodide_lock, render, runtime, wheels
from build.bundle import BundleError


# ---- plan -----------------------------------------------------------------------------------------

class FakeMetadata:
    """Installed distributions as the plan sees them: name -> (version, requires, native code)."""

    def __init__(self, dists: dict[str, tuple[str, list[str], bool]]):
        self.dists = {plan.norm(k): v for k, v in dists.items()}

    def version(self, dist):
        return self.dists[plan.norm(dist)][0]

    def requires(self, dist):
        return self.dists[plan.norm(dist)][1]

    def has_native_code(self, dist):
        return self.dists[plan.norm(dist)][2]


META = FakeMetadata({
    "sdpa-core": ("0.1.0", ["numpy"], False),
    "panel": ("1.9.4", ["bokeh", "param", "pandas", "markdown", "tqdm"], False),
    "bokeh": ("3.9.2", ["jinja2", "numpy", "pillow", "tornado", "pyyaml"], False),
    "param": ("2.4.2", [], False), "Markdown": ("3.11.3", [], False),
    "tornado": ("6.6.1", [], True), "PyYAML": ("6.0.4", [], True), "numpy": ("2.4.6", [], True),
    "Jinja2": ("3.1.6", ["markupsafe"], False), "MarkupSafe": ("3.0.4", [], True), "nh3": ("0.3.8", [], True),
    "setuptools": ("80", [], False),
})
IMPORTED = ["panel", "bokeh", "param", "Markdown", "tornado", "PyYAML", "numpy", "Jinja2", "MarkupSafe", "nh3",
            "setuptools"]
PYODIDE_LOCK = {"info": {"version": "0.29.3"}, "packages": {
    "numpy": {"version": "2.2.5", "depends": [], "file_name": "numpy.whl"},
    "jinja2": {"version": "3.1.6", "depends": ["markupsafe"], "file_name": "jinja2.whl"},
    "markupsafe": {"version": "3.0.2", "depends": [], "file_name": "markupsafe.whl"},
    "pyyaml": {"version": "6.0.2", "depends": [], "file_name": "pyyaml.whl"},
    "pyodide-http": {"version": "0.2.2", "depends": [], "file_name": "pyodide_http.whl"},
    "bokeh": {"version": "3.6.3", "depends": ["numpy"], "file_name": "bokeh.whl"},
}}


def sources(p) -> dict[str, str]:
    return {name: pkg.source for name, pkg in p.packages.items()}


def test_plan_self_hosted_takes_pyodide_wheels_slims_panel_and_stubs_nh3():
    """With Pyodide's files at hand: ours are built (sources kept), Panel and Bokeh slimmed (never Pyodide's
    older Bokeh), nh3 stubbed, compiled packages and their dependencies from Pyodide, pure ones pinned to
    the build environment, build tools left out; dependencies are cut to what ships."""
    p = plan.make_plan(IMPORTED, PYODIDE_LOCK, self_hosted=True, has_wheel=lambda n: True, meta=META)
    assert sources(p) == {
        "sdpa-core": "project", "sdpa-lab-web": "app", "panel": "slim", "bokeh": "slim", "nh3": "stub",
        "numpy": "pyodide", "jinja2": "pyodide", "markupsafe": "pyodide", "pyyaml": "pyodide",
        "pyodide-http": "pyodide", "param": "pure", "markdown": "pure", "tornado": "pure"}
    assert [n for n, pkg in p.packages.items() if pkg.keep_sources] == ["sdpa-core", "sdpa-lab-web"]
    assert p.packages["panel"].depends == ("bokeh", "markdown", "param")      # no pandas, no tqdm
    assert p.packages["bokeh"].depends == ("jinja2", "numpy", "pyyaml", "tornado")
    assert p.packages["sdpa-lab-web"].depends == ("sdpa-core",)
    assert (p.packages["numpy"].version, p.packages["param"].version) == ("2.2.5", "2.4.2")
    assert p.packages["nh3"].version == plan.STUBS["nh3"][0] and p.packages["nh3"].stub_file.is_file()
    assert p.at_runtime == []


def test_plan_uses_a_pyodide_wheel_only_when_its_file_is_there():
    """A package in Pyodide's lock whose wheel the distribution lacks is shipped as our pure wheel when
    it works without its compiled code, and fails the plan, saying what to do, when it does not."""
    p = plan.make_plan(IMPORTED, PYODIDE_LOCK, self_hosted=True, has_wheel=lambda n: n != "pyyaml", meta=META)
    assert p.packages["pyyaml"].source == "pure" and p.packages["pyyaml"].version == "6.0.4"
    with pytest.raises(plan.PlanError, match="numpy, which has compiled code.*NEVER_SHIP"):
        plan.make_plan(IMPORTED, PYODIDE_LOCK, self_hosted=True, has_wheel=lambda n: n != "numpy", meta=META)


def test_plan_without_pyodide_files_leaves_compiled_packages_to_the_cdn():
    """Without Pyodide's files: compiled packages (and pyodide-http, which is not installed here) come
    from the CDN's lock at run time; pure Python with an optional speed-up ships as our pure wheel."""
    p = plan.make_plan(IMPORTED, None, self_hosted=False, has_wheel=lambda n: False, meta=META)
    assert p.at_runtime == ["numpy", "pyodide-http"]
    assert {n: sources(p)[n] for n in ("tornado", "pyyaml", "markupsafe", "jinja2")} == dict.fromkeys(
        ("tornado", "pyyaml", "markupsafe", "jinja2"), "pure")
    assert "numpy" in p.packages["bokeh"].depends       # named for the CDN's lock to resolve


def test_plan_lock_version_for_browser_extras_not_in_the_distribution():
    """pyodide-http's version is Pyodide's (its lock) when the distribution lacks the wheel: never a pin here."""
    p = plan.make_plan(IMPORTED, PYODIDE_LOCK, self_hosted=True, has_wheel=lambda n: n != "pyodide-http", meta=META)
    assert (p.packages["pyodide-http"].source, p.packages["pyodide-http"].version) == ("lock", "0.2.2")


@pytest.mark.parametrize("case", ["imported", "pyodide dependency"])
def test_plan_refuses_to_ship_a_never_shipped_package(case):
    """A NEVER_SHIP package the app imports, or one a Pyodide package depends on, fails the plan."""
    lock = {"packages": {**PYODIDE_LOCK["packages"],
                         "jinja2": {"version": "3.1.6", "depends": ["markupsafe", "pillow"], "file_name": "j.whl"},
                         "pillow": {"version": "11", "depends": [], "file_name": "p.whl"}}}
    if case == "imported":
        imported, lock = IMPORTED + ["pandas"], PYODIDE_LOCK
    else:
        imported = IMPORTED
    meta = FakeMetadata({**META.dists, "pandas": ("3.0", [], True)})
    with pytest.raises(plan.PlanError, match="pandas" if case == "imported" else "pillow"):
        plan.make_plan(imported, lock, self_hosted=True, has_wheel=lambda n: True, meta=meta)


def test_never_shipped_import_names_are_derived_from_metadata():
    """Pillow is blocked as `PIL` (read from its installed files), pandas as `pandas`."""
    names = plan.never_imports()
    assert {"PIL", "pandas", "requests", "tqdm", "micropip"} <= set(names)
    assert "pillow" not in names


def test_slim_patterns_strip_bundled_js_but_keep_code_and_this_versions_sri():
    bokeh = plan.Package("bokeh", "slim", dist="bokeh", version="3.9.2").slim_exclude
    panel = plan.Package("panel", "slim", dist="panel", version="1.9.4").slim_exclude
    assert bokeh.search("bokeh/server/static/js/bokeh.min.js") and bokeh.search("bokeh/_sri/3.8.0.json")
    assert not bokeh.search("bokeh/_sri/3.9.2.json") and not bokeh.search("bokeh/models/plots.py")
    assert panel.search("panel/dist/bundled/katex/katex.js") and panel.search("panel/models/x.ts")
    assert not panel.search("panel/dist/css/markdown.css") and not panel.search("panel/io/pyodide.py")


# ---- wheels ---------------------------------------------------------------------------------------

def test_write_wheel_is_reproducible_and_recorded(tmp_path):
    """The same files give the same bytes; RECORD lists every file with its hash."""
    files = {"pkg/__init__.py": b"x = 1\n", "pkg/data.txt": b"hello"}
    a = wheels.write_wheel(tmp_path, "my-pkg", "1.0", files, info_files={"licenses/LICENSE": b"MIT"})
    first = a.read_bytes()
    assert wheels.write_wheel(tmp_path, "my-pkg", "1.0", dict(reversed(files.items())),
                              info_files={"licenses/LICENSE": b"MIT"}).read_bytes() == first
    with zipfile.ZipFile(a) as zf:
        record = zf.read("my_pkg-1.0.dist-info/RECORD").decode()
        assert "my_pkg-1.0.dist-info/licenses/LICENSE" in zf.namelist()
    assert "pkg/data.txt,sha256=" in record and record.endswith("my_pkg-1.0.dist-info/RECORD,,\n")


@pytest.mark.parametrize("name", ["panel", "tornado"])
def test_repacked_wheels_keep_their_licences(tmp_path, name):
    """Slimmed Panel and repacked tornado (its C speed-up left out) still carry their licence files."""
    version = md.version(name)
    pkg = (plan.Package(name, "slim", dist=name, version=version) if name in plan.SLIM
           else plan.Package(name, "pure", dist=name, version=version))
    wheel = wheels.repack_installed(pkg, tmp_path, pkg.slim_exclude)
    with zipfile.ZipFile(wheel.path) as zf:
        names = zf.namelist()
    assert [n for n in names if re.search(r"\.dist-info/licenses/", n)], names[-5:]
    assert not [n for n in names if n.endswith((".so", ".pyd"))]
    if name == "panel":
        assert not [n for n in names if n.startswith("panel/dist/bundled/")]
    assert wheel.version == version and name in wheel.imports


def test_the_app_wheel_ships_web_and_the_workers_python(tmp_path):
    """The worker imports sdpa_worker (templates/worker.js callPython): it ships beside `web`, as the file
    CPython's tests run (tests/build/test_sdpa_worker.py)."""
    web_dir = tmp_path / "web"
    (web_dir / "views").mkdir(parents=True)
    (web_dir / "app.py").write_text("x = 1\n")
    (web_dir / "views" / "a.py").write_text("")
    wheel = wheels.app_wheel(plan.Package("sdpa-lab-web", "app"), web_dir, "1.0", tmp_path)
    with zipfile.ZipFile(wheel.path) as zf:
        names = zf.namelist()
        shipped = zf.read("sdpa_worker.py")
    assert {"web/app.py", "web/views/a.py", "web/__init__.py", "sdpa_worker.py"} <= set(names)
    assert shipped == wheels.WORKER_MODULE.read_bytes() and wheel.imports == ["web", "sdpa_worker"]


def test_stub_wheel_installs_a_module_that_returns_its_input(tmp_path):
    pkg = plan.make_plan(["nh3"], None, self_hosted=True, has_wheel=lambda n: False,
                         meta=FakeMetadata({"sdpa-core": ("0", [], False), "nh3": ("1", [], True),
                                            "panel": ("1", [], False), "bokeh": ("1", [], False)})).packages["nh3"]
    wheel = wheels.stub_wheel(pkg, tmp_path)
    namespace = {}
    with zipfile.ZipFile(wheel.path) as zf:
        exec(zf.read("nh3.py"), namespace)
    assert namespace["clean"]("<b>ok</b>") == "<b>ok</b>" and wheel.imports == ["nh3"]


# ---- bytecode -------------------------------------------------------------------------------------

def test_bytecode_keeps_sources_only_where_the_plan_says(tmp_path):
    """Ours keep their .py next to the .pyc; the others become sourceless."""
    if bytecode.find_python313() is None:
        pytest.skip("needs a CPython 3.13 (python3.13 on PATH, pyenv, or SDPA_PYTHON313=<python3.13>)")
    made = []
    for keep in (True, False):
        path = wheels.write_wheel(tmp_path, f"p{int(keep)}", "1", {f"p{int(keep)}/__init__.py": b"x = 1\n"})
        made.append(wheels.Wheel(plan.Package(f"p{int(keep)}", "pure", keep_sources=keep), "1", path, []))
    bytecode.ship_wheels(made, tmp_path / "cache", lambda msg: None)
    for wheel in made:
        with zipfile.ZipFile(wheel.path) as zf:
            names = set(zf.namelist())
        has_source = f"{wheel.name}/__init__.py" in names
        assert has_source is wheel.package.keep_sources
        assert any(n.endswith(".pyc") for n in names)


# ---- lock -----------------------------------------------------------------------------------------

def test_lock_entries_come_from_the_plan_and_the_produced_files(tmp_path):
    """Our wheels get full entries, Pyodide's keep its own entry with our file's hash, every dependency
    list is the plan's, and a planned package without a wheel fails."""
    p = plan.make_plan(["numpy", "param"], PYODIDE_LOCK, self_hosted=True, has_wheel=lambda n: True, meta=META)
    made = {}
    for name, pkg in p.packages.items():
        path = wheels.write_wheel(tmp_path, name, pkg.version or "1", {f"{name.replace('-', '_')}.py": b""})
        made[name] = wheels.Wheel(pkg, pkg.version or "1", path, [name.replace("-", "_")])
    lock = pyodide_lock.build(p, made, PYODIDE_LOCK, "0.29.3")
    assert lock["info"] == PYODIDE_LOCK["info"]
    numpy = lock["packages"]["numpy"]
    assert numpy["sha256"] == hashlib.sha256(made["numpy"].path.read_bytes()).hexdigest()
    assert numpy["version"] == "2.2.5" and numpy["file_name"] == made["numpy"].path.name
    assert lock["packages"]["sdpa-lab-web"]["depends"] == ["sdpa-core"]
    del made["param"]
    with pytest.raises(SystemExit, match="param"):
        pyodide_lock.build(p, made, PYODIDE_LOCK, "0.29.3")


def test_self_hosted_lock_leaves_nothing_to_load_package():
    """The shipped lock keeps Pyodide's info for loadPyodide and no packages: they come in the archive."""
    assert pyodide_lock.runtime_only({"info": {"version": "0.29.3"}, "packages": {"x": {}}}) == \
        {"info": {"version": "0.29.3"}, "packages": {}}


# ---- archive --------------------------------------------------------------------------------------

def test_archive_is_reproducible_installed_layout_with_its_libraries(tmp_path):
    """Wheels become one tar.gz of their installed layout (data folders mapped to site-packages or left
    out), the same bytes for the same wheels, listing the .so files the worker must load."""
    a = wheels.write_wheel(tmp_path, "a", "1", {"a/__init__.py": b"", "a/_x.cpython-313-wasm32-emscripten.so": b"\0asm",
                                                "a-1.data/purelib/a_extra.py": b"y = 2\n",
                                                "a-1.data/data/share/jupyter/x.json": b"{}"})
    b = wheels.write_wheel(tmp_path, "b", "2", {"b.py": b"z = 3\n", "b/tests/_t.so": b"\0asm"})
    packed, dynlibs = archive.build({"a": a, "b": b})
    assert archive.build({"b": b, "a": a})[0] == packed
    (tmp_path / "p.tar.gz").write_bytes(packed)
    files = archive.members(tmp_path / "p.tar.gz")
    assert {"a/__init__.py", "a_extra.py", "b.py", "a-1.dist-info/METADATA", "b-2.dist-info/RECORD"} <= set(files)
    assert not any("share/jupyter" in n for n in files)
    assert dynlibs == ["a/_x.cpython-313-wasm32-emscripten.so"]     # tests' libraries are never loaded


def test_archive_trim_refuses_to_leave_out_an_imported_module(tmp_path):
    """plan.TRIM leaves files out, but never a module the pre-render imported (the build fails instead)."""
    w = wheels.write_wheel(tmp_path, "numpy", "2", {"numpy/__init__.py": b"", "numpy/f2py/__init__.py": b"",
                                                    "numpy/__init__.pyi": b""})
    packed, _ = archive.build({"numpy": w}, {"numpy": plan.TRIM["numpy"]}, ["numpy"])
    (tmp_path / "p.tar.gz").write_bytes(packed)
    assert [n for n in archive.members(tmp_path / "p.tar.gz") if not n.startswith("numpy-")] == ["numpy/__init__.py"]
    with pytest.raises(SystemExit, match="numpy.f2py"):
        archive.build({"numpy": w}, {"numpy": plan.TRIM["numpy"]}, ["numpy", "numpy.f2py"])
    assert archive.module_of("numpy/f2py/__pycache__/x.cpython-313.pyc") == "numpy.f2py.x"
    assert archive.module_of("numpy/_core/_m.cpython-313-wasm32-emscripten.so") == "numpy._core._m"


def test_stdlib_drop_refuses_an_imported_module(tmp_path):
    """plan.STDLIB_DROP removes debuggers, REPLs and protocols from the stdlib zip, never what the page imports."""
    z = tmp_path / "python_stdlib.zip"
    bytecode._write_zip(z, {"pdb.py": b"", "json/__init__.py": b"", "xmlrpc/client.py": b""})
    assert bytecode.drop_stdlib(z, plan.STDLIB_DROP, ["json/__init__.py"]) == 2
    assert zipfile.ZipFile(z).namelist() == ["json/__init__.py"]
    with pytest.raises(SystemExit, match="pdb.py"):
        bytecode.drop_stdlib(z, plan.STDLIB_DROP, ["pdb.py"])


# ---- images ---------------------------------------------------------------------------------------

def decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and RGB rows of a PNG written by icons.Canvas (filter 0, 8-bit RGB)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        assert struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0] == zlib.crc32(kind + body)
        chunks[kind] = chunks.get(kind, b"") + body
        pos += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert (depth, colour) == (8, 2)
    raw = zlib.decompress(chunks[b"IDAT"])
    stride = 1 + 3 * width
    rows = [raw[i * stride + 1:(i + 1) * stride] for i in range(height)]
    assert all(raw[i * stride] == 0 for i in range(height))
    return width, height, rows


@pytest.mark.parametrize("size", [192, 512])
def test_maskable_icons_keep_the_picture_inside_the_safe_zone(size):
    """Every pixel that is not background lies in the centred circle of radius 40% (the maskable safe
    zone); the plain icon's grid reaches beyond it (hence two icons)."""
    background = bytes(icons.rgb("#1d3557"))
    for maskable, inside in ((True, True), (False, False)):
        width, height, rows = decode_png(icons.icon(size, "#1d3557", maskable).png())
        assert (width, height) == (size, size)
        c, r = (size - 1) / 2, icons.SAFE_ZONE * size
        drawn = [(x, y) for y, row in enumerate(rows) for x in range(size) if row[3 * x:3 * x + 3] != background]
        assert drawn
        assert all((x - c) ** 2 + (y - c) ** 2 <= r * r for x, y in drawn) is inside


def test_preview_is_1200_by_630_with_text_and_reproducible():
    a = icons.preview("#1d3557", "SDPA Lab", ["why attention divides", "by √d_k"]).png()
    assert a == icons.preview("#1d3557", "SDPA Lab", ["why attention divides", "by √d_k"]).png()
    width, height, rows = decode_png(a)
    assert (width, height) == icons.PREVIEW_SIZE
    white = bytes(icons.WHITE)
    assert sum(row.count(white) for row in rows[150:280]) > 1000      # the title is drawn


def test_icon_manifest_entries_name_files_written(tmp_path):
    entries = icons.write(tmp_path / "icons", "#1d3557")
    assert {e.get("purpose") for e in entries} == {None, "any", "maskable"}
    for e in entries:
        assert (tmp_path / e["src"]).is_file()


# ---- notices --------------------------------------------------------------------------------------

def test_notices_read_licence_and_texts_from_wheel_metadata(tmp_path):
    meta = "Metadata-Version: 2.4\nName: demo\nVersion: 2.0\nLicense-Expression: Apache-2.0\n" \
           "Project-URL: Source, https://example.org/demo\n"
    path = wheels.write_wheel(tmp_path, "demo", "2.0", {"demo.py": b""}, meta,
                              info_files={"licenses/LICENSE": b"Apache License <text>"})
    old = "Metadata-Version: 2.1\nName: old\nVersion: 1\nClassifier: License :: OSI Approved :: BSD License\n"
    other = wheels.write_wheel(tmp_path, "old", "1", {"old.py": b""}, old)
    out = tmp_path / "notices.html"
    notices.write(out, [path, other], ["static/panel/1.9.4/dist/bundled/katex/katex@0.16.22/dist/katex.min.js"],
                  "static/panel/1.9.4/dist/", "SDPA Lab")
    text = out.read_text()
    assert "<td>demo</td><td>2.0</td><td>Apache-2.0</td>" in text and "https://example.org/demo" in text
    assert "Apache License &lt;text&gt;" in text and "<td>BSD License</td>" in text
    assert "<td>KaTeX</td><td>0.16.22</td><td>MIT</td>" in text and "MPL-2.0" in text


def test_notices_refuse_an_undeclared_bundled_library():
    with pytest.raises(SystemExit, match="newlib"):
        notices.bundled(["static/p/bundled/newlib/x.js"], "static/p/")


# ---- renderer -------------------------------------------------------------------------------------

IDENTITY = render.Identity(title="Lab: why", short_name="Lab", description='Says "why" & how',
                           theme_color="#123456")
PREVIEW = render.Preview("preview.png", 1200, 630, "a picture")
PANEL_PAGE = ('<html><head><meta charset="utf-8"><title>Lab: why</title></head><body>'
              '<script>var w = new Worker("x.js");</script><script>var y = 1;</script></body></html>')


def test_finish_puts_the_policy_first_then_description_previews_and_boot_script():
    page = render.finish(PANEL_PAGE, identity=IDENTITY, preview=PREVIEW)
    head = page.split("</head>")[0]
    assert head.index("Content-Security-Policy") < head.index("<script")
    assert '<meta name="description" content="Says &quot;why&quot; &amp; how">' in head
    assert '<meta property="og:image" content="./preview.png">' in head
    assert '<meta name="twitter:card" content="summary_large_image">' in head
    assert '<meta name="theme-color" content="#123456">' in head
    assert "new Worker" not in page and '<script src="./boot.js"></script>' in page
    assert render.foreign_urls(page) == []
    with pytest.raises(SystemExit, match="worker handler"):
        render.finish("<html><head><meta charset='utf-8'></head></html>", identity=IDENTITY, preview=PREVIEW)


def test_link_previews_get_an_absolute_url_only_when_the_site_url_is_known():
    """og:image/og:url may name the deployed site: they are not requests, so the same-origin check
    ignores them, but not a script on another origin."""
    tags = "\n".join(render.head_tags(IDENTITY, PREVIEW, "https://user.github.io/lab/"))
    assert '<meta property="og:image" content="https://user.github.io/lab/preview.png">' in tags
    assert '<meta property="og:url" content="https://user.github.io/lab/">' in tags
    assert render.foreign_urls(tags) == []
    assert render.foreign_urls(tags + '<script src="https://cdn.example/x.js"></script>') == ["https://cdn.example/x.js"]


def test_templates_carry_data_that_reads_back():
    """Data put in a template with fill() is read back by embedded(); a name with no place fails."""
    config = {"lock": "./pyodide/pyodide-lock.json", "prefetch": [["a", "b", 1]]}
    assert runtime.embedded(runtime.worker_js(config), "CONFIG") == config
    boot = runtime.boot_js(b"worker bytes", offline.REGISTRATION)
    assert runtime.embedded(boot, "SERVICE_WORKER") == offline.REGISTRATION
    assert runtime.embedded(boot, "WORKER")["sha256"] == hashlib.sha256(b"worker bytes").hexdigest()
    assert "@@" not in boot and "#123456" in runtime.boot_css(IDENTITY)
    with pytest.raises(KeyError):
        runtime.fill("sw.js", NOPE=1)


def test_a_template_is_bundled_with_the_modules_it_imports(tmp_path, monkeypatch):
    """An entry is one script holding each module it imports (once, though two import it), no `import` or `export`
    left, its data filled; a module that does not build fails the build with esbuild's message naming the file."""
    (tmp_path / "main.js").write_text('import {b} from "./one.js";\nimport {c} from "./two.js";\n'
                                      'b(c("@@DATA:DATA@@"), "@@NAME@@");\n')
    (tmp_path / "one.js").write_text('import {c} from "./two.js";\nexport const b = (...x) => c(x);\n')
    (tmp_path / "two.js").write_text('export function c(x) {\n  return [x, "two"];\n}\n')
    (tmp_path / "broken.js").write_text('import {nothing} from "./two.js";\nnothing(;\n')
    monkeypatch.setattr(runtime, "TEMPLATES", tmp_path)
    text = runtime.fill("main.js", DATA=[1], NAME="n")
    assert text.count("function c(x)") == 1 and "import " not in text and "export " not in text
    assert '/*DATA*/[\n 1\n]/*END*/' in text and '"n"' in text and runtime.embedded(text, "DATA") == [1]
    assert text.startswith('"use strict";\n(() => {') and text.rstrip().endswith("})();")      # strict, as modules are
    with pytest.raises(BundleError, match=r"broken\.js:2"):
        runtime.fill("broken.js")


def test_manifest_has_an_id_and_the_identity():
    manifest = render.manifest(IDENTITY, [{"src": "icons/i.png", "purpose": "maskable"}])
    assert '"id": "lab"' in manifest and '"theme_color": "#123456"' in manifest and "maskable" in manifest


# ---- offline policy -------------------------------------------------------------------------------

def test_policy_precaches_every_file_the_rule_stores(tmp_path):
    files = {"index.html": b"<p>", "pyodide/a.whl": b"wheel", offline.SW_FILE: b"old", ".nojekyll": b"",
             "pyodide/.hidden": b"x"}
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    assert [rel for rel in files if offline.stored(rel)] == ["index.html", "pyodide/a.whl"]   # not itself, no dotfile
    policy = offline.policy(tmp_path)
    assert policy == {"cache": offline.CACHE, "assets": {
        rel: hashlib.sha256(data).hexdigest() for rel, data in files.items() if offline.stored(rel)}, "csp": None}
    sw = runtime.service_worker(policy)
    assert runtime.embedded(sw, "POLICY") == policy
    # the page's policy, read from index.html's <meta> (entities undone), for sw.js to send as a header
    (tmp_path / "index.html").write_text('<meta http-equiv="Content-Security-Policy" '
                                         'content="default-src &#x27;self&#x27;; img-src data:">')
    assert offline.policy(tmp_path)["csp"] == "default-src 'self'; img-src data:"
    assert html.escape(offline.CACHE) in sw


def test_the_first_paint_is_drawn_through_boot_js_and_each_link_gets_its_own_file(tmp_path):
    page = "<script>function f(root) { root.Bokeh.embed.embed_items(docs_json, render_items); }</script>"
    drawn = render.draw_first_paint_through_boot(page)
    assert "window.sdpaFirstPaint(root.Bokeh, docs_json, render_items);" in drawn and "embed_items" not in drawn
    with pytest.raises(SystemExit, match="embed call"):
        render.draw_first_paint_through_boot("<script>nothing</script>")
    doc = {"docs_json": '{"a":"https://sdpa-lab.invalid/static/panel/x"}', "docid": "d", "root_ids": ["p1"]}
    files = render.first_paint_files({"dial": doc}, tmp_path)
    assert files["dial"]["path"] == "first/dial.json"
    body = (tmp_path / "first" / "dial.json").read_bytes()
    assert files["dial"]["integrity"] == "sha256-" + base64.b64encode(hashlib.sha256(body).digest()).decode()
    assert json.loads(body)["root_ids"] == ["p1"]


def test_the_pre_render_records_the_pages_imports_not_its_own():
    """`python -m build.prerender` imports runpy and this package before the page runs: neither is the page's,
    so neither decides what ships (a PyPA `build` installed beside would otherwise be shipped as the page's)."""
    assert prerender.OWN_PACKAGE == "build"
    names = ["runpy", "build", "build.plan", "build.prerender", "buildx", "json", "panel", "panel.io"]
    assert prerender.page_modules(names) == ["buildx", "json", "panel", "panel.io"]
