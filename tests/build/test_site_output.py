"""The built site, file by file: self-contained, fully precached, lean, installable, locked down."""
from __future__ import annotations

import base64
import gzip
import hashlib
import html
import io
import json
import re
import struct
import zipfile
from xml.etree import ElementTree

import pytest

from build import bytecode, icons, offline, plan, prerender, pyodide_patch, render, runtime


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_every_url_is_relative_or_allowed(site):
    """Every URL in the HTML, the worker, the boot script and the service worker is relative (or,
    only when no Pyodide distribution was available, on the Pyodide CDN)."""
    allowed = () if site.self_hosted else (re.match(r"https?://[^/]+", site.config["pyodideJs"])[0],)
    for name in ("index.html", "worker.js", "boot.js", "sw.js", "manifest.webmanifest"):
        text = (site.root / name).read_text()
        foreign = [u for u in render.foreign_urls(text) if not u.startswith(allowed)]
        assert foreign == [], f"{name} names other origins: {foreign}"


def test_precache_names_every_file_with_its_hash(site):
    """The service worker precaches every file of the site (except itself), each with its sha256: the
    policy it was built with is the policy of the files on disk."""
    files = {p.relative_to(site.root).as_posix() for p in site.root.rglob("*") if p.is_file()}
    files = {f for f in files if offline.stored(f)}   # the rule, read from build/offline.py
    assert set(site.assets) == files
    for path, digest in site.assets.items():
        assert sha256(site.root / path) == digest, path
    assert site.policy == offline.policy(site.root)


def test_page_references_only_files_that_ship(site):
    """Every local script, stylesheet, icon and JSON-named asset of the page exists and is precached."""
    refs = render.local_paths(site.html)
    assert {"boot.js", "manifest.webmanifest", "notices.html", "icons/icon.svg"} <= set(refs)
    for ref in refs:
        assert ref in site.assets, f"index.html references {ref}, which is not precached"


def test_scripts_and_stylesheets_carry_integrity(site):
    """Every local script and stylesheet tag of the page names its file's sha256 (a damaged file is refused
    and named by boot.js, not half run); boot.js knows worker.js's sha256 and size."""
    tags = re.findall(r"<(?:script|link)\b[^>]*?(?:src|href)=\"\./[^\"]+\"[^>]*>", site.html)
    checked = 0
    for tag in tags:
        if tag.startswith("<link") and "stylesheet" not in tag:
            continue
        path = re.search(r'(?:src|href)="\./([^"?#]+)', tag)[1]
        digest = re.search(r'integrity="sha256-([^"]+)"', tag)
        assert digest, f"no integrity: {tag}"
        assert base64.b64decode(digest[1]) == hashlib.sha256((site.root / path).read_bytes()).digest(), path
        checked += 1
    assert checked >= 10 and 'src="./boot.js" integrity=' in site.html
    boot = (site.root / "boot.js").read_text()
    worker = site.root / "worker.js"
    assert runtime.embedded(boot, "WORKER") == {"path": "worker.js", "sha256": sha256(worker),
                                               "size": worker.stat().st_size, "snapshots": site.self_hosted,
                                               "snapshotFolder": offline.SNAPSHOT_FOLDER if site.self_hosted else None}


def test_worker_checks_every_file_it_loads(site):
    """A self-hosted worker checks the runtime, stdlib, lock and the package archive against the sha256 and
    size the build recorded (a fallback build loads Pyodide from its CDN and checks the archive only)."""
    prefetch = {path: (digest, size) for path, digest, size in site.config["prefetch"]}
    expected = {site.config["archive"]["path"]}
    if site.self_hosted:
        expected |= {f"pyodide/{f}" for f in ("pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm",
                                              "python_stdlib.zip.gz", "pyodide-lock.json")}
    assert set(prefetch) == expected
    for path, (digest, size) in prefetch.items():
        assert (sha256(site.root / path), (site.root / path).stat().st_size) == (digest, size), path
    packed = site.config["archive"]
    assert (packed["sha256"], packed["size"]) == prefetch[packed["path"]]


def test_pre_render_and_worker_name_the_app_models_alike(site):
    """The page can adopt its pre-rendered views only if the worker gives the app's models the ids the
    pre-render gave them: both start Bokeh's counter at prerender.FIRST_ID when the app starts."""
    page = (site.root / "index.html").read_text()
    found = re.search(r'<script type="application/json" id="[^"]+">(.*?)</script>', page, re.S)
    docs = json.loads(html.unescape(found.group(1)))
    roots = [doc["roots"] for doc in docs.values()]
    ids = {int(m) for m in re.findall(r'"id": ?"p(\d+)"', json.dumps(roots))}
    assert min(ids) == prerender.FIRST_ID + 1, "the app's first model is not the counter's first id"
    assert max(ids) < prerender.FIRST_ID + 10_000
    assert site.config["firstId"] == prerender.FIRST_ID
    assert 'callPython("build_app", BOOT.mode === "page" ? BOOT.search : "", CONFIG.firstId)' in (site.root / "worker.js").read_text()
    assert "bk_serialization._simple_id = first_id" in site.archive["sdpa_worker.py"].decode()   # what build_app does


def test_worker_can_save_and_restore_a_snapshot(site):
    """The warm boot's pieces are in the site: snapshot.js inside worker.js, and (self-hosted) Pyodide's
    pyodide.asm.js with build/pyodide_patch.py's patches; a site loading Pyodide from its CDN, which
    cannot be patched, has no snapshot."""
    worker = (site.root / "worker.js").read_text()
    assert "function sdpaSnapshotRecord(" in worker and "@@include:" not in worker
    if not site.self_hosted:
        assert site.config["snapshot"] is None
        return
    assert site.config["snapshot"] == {"folder": offline.SNAPSHOT_FOLDER}
    runtime = (site.root / "pyodide" / "pyodide.asm.js").read_text()
    for name, (anchor, replacement) in pyodide_patch.PATCHES.items():
        assert runtime.count(replacement) == 1 and anchor not in runtime, name


def info_folder(files, name: str, version: str) -> str | None:
    """A package's .dist-info folder in the archive (spelt as its wheel spells it: MarkupSafe, pyviz_comms)."""
    want = plan.norm(f"{name}-{version}")
    return next((n.split("/")[0] for n in files if n.split("/")[0].endswith(".dist-info")
                 and plan.norm(n.split("/")[0].removesuffix(".dist-info")) == want), None)


def test_one_archive_holds_every_package(site):
    """Every shipped package is in pyodide/packages.tar.gz (its .dist-info included), no wheel ships, the
    worker loads exactly the archive's compiled libraries, and a self-hosted lock leaves loadPackage
    nothing to fetch (a fallback build loads only the compiled packages from Pyodide's CDN)."""
    packed, files = site.config["archive"], site.archive
    assert not list(site.root.rglob("*.whl"))
    shipped = set(site.config["packages"]) - set(site.config["runtimePackages"])
    assert set(packed["packages"]) == shipped
    infos = {n.split("/")[0] for n in files if ".dist-info/" in n}
    for name, version in packed["packages"].items():
        assert info_folder(files, name, version) in infos, name
    assert packed["dynlibs"] == sorted(n for n in files if n.endswith(".so"))
    assert not any(n.endswith(".dist-info/RECORD") for n in files)
    if site.self_hosted:
        assert site.config["runtimePackages"] == [] and site.lock["packages"] == {}
        assert any(n.startswith("numpy/") for n in files)


def test_lean_no_unused_heavy_packages(site):
    """Pandas, Pillow, requests, tqdm and a real sanitiser never ship; Panel and Bokeh come without their
    bundled JS, tornado without its tests, numpy without headers, static libraries and f2py; the archive
    stays under 8 MB; BokehJS's WebGL bundle is not loaded (no plot uses WebGL)."""
    packages = site.config["archive"]["packages"]
    assert not set(plan.NEVER_SHIP) & set(packages)
    if "nh3" in packages:
        assert "stub" in packages["nh3"]
    files = site.archive
    bundled = [n for n in files if n.endswith((".min.js", ".js.map")) and n.startswith(("panel/", "bokeh/"))]
    assert bundled == [], f"bundled JS not stripped: {bundled[:5]}"
    for gone in ("tornado/test/", "numpy/f2py/", "numpy/_core/include/", "numpy/_core/lib/"):
        assert not any(n.startswith(gone) for n in files), gone
    size = (site.root / site.config["archive"]["path"]).stat().st_size
    assert size < 8e6, f"the package archive is {size / 1e6:.1f} MB"
    assert not any(site.root.rglob("*.map")), "source maps are not needed by the page"
    if not render.WEBGL:
        assert "bokeh-gl" not in site.html and not any(site.root.rglob("bokeh-gl*"))
    if not render.MATHJAX:   # formulas are KaTeX; Panel's "just in case" MathJax bundle stays out
        assert "mathjax" not in site.html.lower() and not any(site.root.rglob("*mathjax*"))


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_manifest_is_installable(site):
    """The web manifest has an id, names the app as web/ does, uses relative start_url/scope and the
    theme colour of web.theme, and its icons (plain and maskable) exist at their sizes."""
    from web.page import SHORT_TITLE, TITLE
    from web.theme import HEADER_BG
    manifest = json.loads((site.root / "manifest.webmanifest").read_text())
    assert manifest["id"] and manifest["id"] not in ("./", "/")
    assert (manifest["name"], manifest["short_name"]) == (TITLE, SHORT_TITLE)
    assert manifest["start_url"] == "./" and manifest["scope"] == "./"
    assert manifest["display"] == "standalone"
    assert manifest["theme_color"] == HEADER_BG
    sizes = {"any": set(), "maskable": set()}
    for icon in manifest["icons"]:
        data = (site.root / icon["src"]).read_bytes()
        assert icon["src"] in site.assets
        if icon["type"] == "image/png":
            width, height = png_size(data)
            assert icon["sizes"] == f"{width}x{height}"
            sizes[icon["purpose"]].add(width)
        else:
            assert ElementTree.fromstring(data).tag.endswith("svg")
    assert {192, 512} <= sizes["any"] and {192, 512} <= sizes["maskable"]


def test_head_describes_the_page_for_search_and_link_previews(site):
    """The page has web/'s title and description, Open Graph and Twitter tags, and a 1200x630 preview
    image that ships and is precached."""
    from web.page import DESCRIPTION, TITLE
    head = site.html.split("</head>")[0]
    meta = dict(re.findall(r'<meta (?:name|property)="([^"]+)" content="([^"]*)">', head))
    assert f"<title>{TITLE}</title>" in head
    assert html.unescape(meta["description"]) == DESCRIPTION == html.unescape(meta["og:description"])
    assert html.unescape(meta["og:title"]) == TITLE == html.unescape(meta["twitter:title"])
    assert meta["twitter:card"] == "summary_large_image"
    image = meta["og:image"]
    assert image == meta["twitter:image"] and image.startswith("./")
    assert png_size((site.root / image[2:]).read_bytes()) == icons.PREVIEW_SIZE == \
        (int(meta["og:image:width"]), int(meta["og:image:height"]))
    assert image[2:] in site.assets and meta["og:image:alt"]


def test_notices_name_every_third_party_package_with_its_licence(site):
    """notices.html lists every shipped package but ours, with the licence texts its wheel carries, and
    the slimmed Panel and Bokeh wheels and the repacked tornado still carry theirs."""
    text = html.unescape((site.root / "notices.html").read_text())
    ours = {n for n, p in plan.OWN.items()} | set(plan.STUBS)
    for name, version in site.config["archive"]["packages"].items():
        info = info_folder(site.archive, name, version)
        licences = [n for n in site.archive if n.startswith(info + "/") and re.search(r"/(licenses/|LICEN[CS]E)", n)]
        if name in ours:
            continue
        assert f"<td>{version}</td>" in text, name
        if name in ("panel", "bokeh", "tornado"):
            assert licences, f"{name}'s wheel lost its licence file"
        for path in licences:
            assert path.split(".dist-info/", 1)[1] in text, path
    for words in ("MPL-2.0", "Apache-2.0", "BSD-3-Clause", "KaTeX"):
        assert words in text, words


def test_csp_is_first_in_head_and_keeps_requests_on_this_origin(site):
    """A Content-Security-Policy meta comes before any script or stylesheet; fetches stay on 'self'."""
    head = site.html.split("</head>")[0]
    meta = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', head)
    assert meta, "no CSP meta"
    assert meta.start() < min(i for i in (head.find("<script"), head.find("<link")) if i >= 0)
    policy = dict((d.split()[0], d.split()[1:]) for d in meta[1].split("; "))
    assert policy["default-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"]
    if site.self_hosted:
        assert policy["connect-src"] == ["'self'"]
        assert not [s for d in policy.values() for s in d if s.startswith("http")]
    # inline scripts run by hash, one for each; 'unsafe-eval' stays (Panel's JS needs it, see docs/site.md)
    scripts = policy["script-src"]
    assert "'unsafe-inline'" not in scripts
    # blob: starts the worker only: no blob: script runs (the worker evals its checked Pyodide scripts)
    assert "blob:" not in scripts and "blob:" in policy["worker-src"]
    inline = [body for attrs, body in re.findall(r"<script\b([^>]*)>(.*?)</script>", site.html, re.S)
              if "src=" not in attrs and not re.search(r'type="(application/json|esms-options)"', attrs)]
    assert inline, "the page has no inline script?"
    for body in inline:
        digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
        assert f"'sha256-{digest}'" in scripts, body[:80]
    assert len([s for s in scripts if s.startswith("'sha256-")]) == len(set(inline))


def test_service_worker_is_registered_relative_with_the_build_policy(site):
    """boot.js registers the service worker the build wrote, with a relative URL and scope (the site works
    under any sub-path), and sw.js holds the offline policy's cache name."""
    registration = runtime.embedded((site.root / "boot.js").read_text(), "SERVICE_WORKER")
    assert registration == offline.REGISTRATION
    assert registration["url"].startswith("./") and registration["scope"] == "./"
    assert (site.root / registration["url"]).is_file()
    assert site.policy["cache"] == offline.CACHE


def needs_python313(site):
    """Skip (after checking the build said why) when the build had no CPython 3.13 to compile with."""
    if bytecode.find_python313() is None:
        assert "no CPython 3.13 found" in site.log
        pytest.skip("needs a CPython 3.13 at build time (python3.13 on PATH, pyenv, or SDPA_PYTHON313=<python3.13>) "
                    "to compile the shipped bytecode")


def test_packages_ship_bytecode_for_pyodide(site):
    """With a CPython 3.13 at build time, every package in the archive carries 3.13 bytecode in
    unchecked-hash mode (valid whatever the mtimes): ours next to their sources, the others sourceless."""
    needs_python313(site)
    files = site.archive
    ours = ("sdpa_core/", "web/")
    worker = ("sdpa_worker.py", "__pycache__/sdpa_worker.cpython-313.pyc")      # the worker's Python, a module
    code = [n for n in files if n.endswith((".py", ".pyc")) and ".dist-info/" not in n]
    for top in ours:
        sources = [n for n in code if n.startswith(top) and n.endswith(".py")]
        pycs = [n for n in code if n.startswith(top) and n.endswith(".cpython-313.pyc") and "/__pycache__/" in n]
        assert sources and len(sources) == len(pycs), top
    assert set(worker) <= set(code)
    others = [n for n in code if not n.startswith(ours) and n not in worker]
    assert not [n for n in others if n.endswith(".py")], "third-party packages ship sources"
    headers = {files[n][:8] for n in code if n.endswith(".pyc") and n.startswith(("panel/", "bokeh/", "param/"))}
    assert headers == {(3571).to_bytes(2, "little") + b"\r\n" + (0b01).to_bytes(4, "little")}, \
        "not CPython 3.13 unchecked-hash bytecode"


def test_stdlib_ships_bytecode_for_pyodide(site):
    """In a self-hosted build, the stdlib modules the page imports are 3.13 bytecode (not sources) in
    pyodide/python_stdlib.zip.gz, and the modules plan.STDLIB_DROP names are gone."""
    if not site.self_hosted:
        pytest.skip("needs a self-hosted build, which ships pyodide/python_stdlib.zip.gz: set PYODIDE_DIST=<folder "
                    "with pyodide-lock.json> (or let the build download from PYODIDE_CDN); this build loads "
                    f"Pyodide from {site.config['pyodideJs'].rsplit('/', 1)[0]}/ at run time")
    needs_python313(site)
    with zipfile.ZipFile(io.BytesIO(gzip.decompress((site.root / "pyodide" / "python_stdlib.zip.gz").read_bytes()))) as zf:
        names = set(zf.namelist())
        assert {i.compress_type for i in zf.infolist()} == {zipfile.ZIP_STORED}, "one gzip stream, members stored"
    assert not any(n.startswith(plan.STDLIB_DROP) for n in names)
    for module in ("asyncio/base_events", "json/decoder", "_pyodide/_base", "pyodide/webloop"):
        assert f"{module}.pyc" in names and f"{module}.py" not in names, module
