"""The built site, file by file: self-contained, fully precached, lean, installable, locked down."""
from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import struct
import zipfile
from xml.etree import ElementTree

import pytest

from sitebuild import build_module

render = build_module("render")
offline = build_module("offline")
plan = build_module("plan")
icons = build_module("icons")


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
    files = {p.relative_to(site.root).as_posix() for p in site.root.rglob("*")
             if p.is_file() and not p.name.startswith(".")} - {offline.SW_FILE}
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
    assert render.embedded(boot, "WORKER") == {"path": "worker.js", "sha256": sha256(worker),
                                               "size": worker.stat().st_size}


def test_worker_checks_every_file_it_loads(site):
    """A self-hosted worker checks the runtime, stdlib, lock and every wheel against the sha256 and size
    the build recorded (a fallback build loads Pyodide from its CDN and has nothing to check)."""
    prefetch = {path: (digest, size) for path, digest, size in site.config["prefetch"]}
    if not site.self_hosted:
        assert prefetch == {}
        return
    expected = {f"pyodide/{f}" for f in ("pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip",
                                         "pyodide-lock.json")}
    expected |= {f"pyodide/{e['file_name']}" for e in site.lock["packages"].values()}
    assert set(prefetch) == expected
    for path, (digest, size) in prefetch.items():
        assert (sha256(site.root / path), (site.root / path).stat().st_size) == (digest, size), path


def test_lock_is_pre_solved_and_hashes_match(site):
    """Every package the worker loads is in the site's lock, with its file and sha256, dependencies closed."""
    packages = site.lock["packages"]
    for name in site.config["packages"]:
        if not site.self_hosted and name not in packages:
            continue   # from the CDN's lock at run time (fallback build only)
        entry = packages[name]
        wheel = site.root / "pyodide" / entry["file_name"]
        assert wheel.is_file(), name
        assert sha256(wheel) == entry["sha256"], name
        if site.self_hosted:
            assert set(entry["depends"]) <= set(packages), f"{name} depends on {entry['depends']}"
    assert set(packages) <= set(site.config["packages"]), "the worker loads every locked package up front"


def test_lean_no_unused_heavy_packages(site):
    """Pandas, Pillow, requests, tqdm and a real sanitiser never ship; Panel and Bokeh come as slim wheels."""
    packages = site.lock["packages"]
    assert not set(plan.NEVER_SHIP) & set(packages)
    if "nh3" in packages:
        assert "stub" in packages["nh3"]["version"]
    for name, limit in (("panel", 3e6), ("bokeh", 2e6)):
        size = (site.root / "pyodide" / packages[name]["file_name"]).stat().st_size
        assert size < limit, f"{name} wheel is {size / 1e6:.1f} MB: bundled JS not stripped?"
    assert not any(site.root.rglob("*.map")), "source maps are not needed by the page"
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
    for name, entry in site.lock["packages"].items():
        wheel = site.root / "pyodide" / entry["file_name"]
        with zipfile.ZipFile(wheel) as zf:
            licences = [n for n in zf.namelist() if ".dist-info/" in n and re.search(r"/(licenses/|LICEN[CS]E)", n)]
        if name in ours:
            continue
        assert f"<td>{entry['version']}</td>" in text, name
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
    # inline scripts run by hash, one for each; 'unsafe-eval' stays (Panel's JS needs it, see README)
    scripts = policy["script-src"]
    assert "'unsafe-inline'" not in scripts
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
    registration = render.embedded((site.root / "boot.js").read_text(), "SERVICE_WORKER")
    assert registration == offline.REGISTRATION
    assert registration["url"].startswith("./") and registration["scope"] == "./"
    assert (site.root / registration["url"]).is_file()
    assert site.policy["cache"] == offline.CACHE


def needs_python313(site):
    """Skip (after checking the build said why) when the build had no CPython 3.13 to compile with."""
    if build_module("bytecode").find_python313() is None:
        assert "no CPython 3.13 found" in site.log
        pytest.skip("needs a CPython 3.13 at build time (python3.13 on PATH, pyenv, or SDPA_PYTHON313=<python3.13>) "
                    "to compile the shipped bytecode")


def test_wheels_ship_bytecode_for_pyodide(site):
    """With a CPython 3.13 at build time, every pure wheel carries 3.13 bytecode in unchecked-hash mode
    (valid after unpacking whatever the mtimes): ours next to their sources, the others sourceless."""
    needs_python313(site)
    magic = None
    for name, entry in site.lock["packages"].items():
        with zipfile.ZipFile(site.root / "pyodide" / entry["file_name"]) as zf:
            names = [n for n in zf.namelist() if ".dist-info/" not in n]
            pycs = [n for n in names if n.endswith(".pyc")]
            if name in ("sdpa-core", "sdpa-lab-web"):
                assert "__pycache__/" in pycs[0] and ".cpython-313.pyc" in pycs[0]
                assert len([n for n in names if n.endswith(".py")]) == len(pycs), name
            else:
                assert not [n for n in names if n.endswith(".py")], f"{name} ships sources"
            if pycs:
                header = zf.read(pycs[0])[:8]
                if entry["file_name"].endswith("-none-any.whl"):   # compiled by us (Pyodide's own: checked-hash)
                    assert int.from_bytes(header[4:8], "little") == 0b01, f"{name}: not unchecked-hash"
                magic = magic or header[:4]
                assert header[:4] == magic
    assert magic == (3571).to_bytes(2, "little") + b"\r\n", "not CPython 3.13 bytecode"


def test_stdlib_ships_bytecode_for_pyodide(site):
    """In a self-hosted build, the stdlib modules the page imports are 3.13 bytecode (not sources) in
    pyodide/python_stdlib.zip."""
    if not site.self_hosted:
        pytest.skip("needs a self-hosted build, which ships pyodide/python_stdlib.zip: set PYODIDE_DIST=<folder "
                    "with pyodide-lock.json> (or let the build download from PYODIDE_CDN); this build loads "
                    f"Pyodide from {site.config['pyodideJs'].rsplit('/', 1)[0]}/ at run time")
    needs_python313(site)
    with zipfile.ZipFile(site.root / "pyodide" / "python_stdlib.zip") as zf:
        names = set(zf.namelist())
    for module in ("asyncio/base_events", "json/decoder", "_pyodide/_base", "pyodide/webloop"):
        assert f"{module}.pyc" in names and f"{module}.py" not in names, module
