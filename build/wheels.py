"""Wheels the page installs in Pyodide: ours, slim Panel/Bokeh, and pinned pure dependencies.

Every wheel is written byte-for-byte reproducibly (sorted entries, fixed timestamps),
so an unchanged dependency keeps its sha256 across builds and the service worker's
content-keyed cache keeps it across redeploys.
"""
from __future__ import annotations

import base64
import hashlib
import importlib.metadata as md
import re
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

EPOCH = (1980, 1, 1, 0, 0, 0)
PYODIDE_PYTHON = "3.13"

# Bundled JS/CSS the page loads from its own static/ copy, tests, caches and native code; the
# TypeScript/LESS sources of that JS, type stubs and Sphinx extensions (read by no running code).
SLIM_EXCLUDE = {
    "panel": re.compile(r"^panel/(dist/(?!css/|assets/)|tests/)|\.js\.map$|\.(ts|less|pyi)$"),
    "bokeh": re.compile(r"^bokeh/(server/static/|sampledata/|sphinxext/|_sri/(?!3\.9\.2\.json))|\.pyi$"),
}
ALWAYS_EXCLUDE = re.compile(r"(^|/)__pycache__/|\.(pyc|so|pyd|dylib)$|\.dist-info/(RECORD|INSTALLER|direct_url\.json|REQUESTED)$")

NH3_STUB = '''"""Stand-in for nh3 in the SDPA Lab page (no sanitiser is shipped).

Panel calls nh3.clean() on ReactiveHTML and Markdown text. Everything this page
renders is its own trusted text, so clean() returns it unchanged. Do not reuse
this stub for a page that shows user-supplied HTML.
"""


def clean(html, **kwargs):
    return html
'''


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Wheel:
    name: str                 # canonical project name, the key in pyodide-lock.json
    version: str
    path: Path
    imports: list[str]
    depends: list[str] = field(default_factory=list)
    origin: str = ""          # how it was obtained, for the build log


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_wheel(out_dir: Path, name: str, version: str, files: dict[str, bytes], metadata: str = "") -> Path:
    """A pure py3-none-any wheel from {archive path: bytes}, reproducible to the byte."""
    dist = f"{re.sub(r'[-.]+', '_', name)}-{version}"
    info = f"{dist}.dist-info"
    files = dict(files)
    files[f"{info}/METADATA"] = (metadata or f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n").encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: sdpa-lab build/wheels.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for arc, data in sorted(files.items()):
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{arc},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    path = out_dir / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for arc in sorted(files):
            zi = zipfile.ZipInfo(arc, EPOCH)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zi, files[arc])
    return path


def top_level_imports(arcnames) -> list[str]:
    names = set()
    for arc in arcnames:
        head = arc.split("/")[0]
        if head.endswith((".dist-info", ".data")) or head.startswith("_") and head.endswith(".pth"):
            continue
        if "/" in arc or head.endswith(".py"):
            names.add(head.removesuffix(".py"))
    return sorted(n for n in names if n.isidentifier())


def repack_installed(dist_name: str, out_dir: Path, exclude: re.Pattern | None = None) -> Wheel:
    """A pure wheel of an installed distribution's files (native speed-ups left out)."""
    dist = md.distribution(dist_name)
    files = {}
    for f in dist.files or []:
        arc = f.as_posix()
        if arc.startswith("..") or ALWAYS_EXCLUDE.search(arc) or (exclude and exclude.search(arc)):
            continue
        src = Path(dist.locate_file(f))
        if src.is_file():
            files[arc] = src.read_bytes()
    meta = dist.read_text("METADATA") or ""
    name = norm(dist.metadata["Name"])
    path = write_wheel(out_dir, dist.metadata["Name"], dist.version, {k: v for k, v in files.items()
                                                                      if ".dist-info/" not in k}, meta)
    return Wheel(name, dist.version, path, top_level_imports(files), origin="repacked from the build environment")


def download_pure(dist_name: str, version: str, out_dir: Path, cache: Path) -> Wheel | None:
    """The PyPI pure-Python wheel for Pyodide's Python, pinned to the build environment's version."""
    cache.mkdir(parents=True, exist_ok=True)
    pattern = f"{re.sub(r'[-_.]+', '_', dist_name)}-{version}-*none-any.whl"
    found = [p for p in cache.iterdir() if p.name.lower().startswith(
        f"{re.sub(r'[-_.]+', '_', dist_name)}-{version}-".lower()) and p.name.endswith("-none-any.whl")]
    if not found:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
             "--python-version", PYODIDE_PYTHON, "--platform", "any", "--implementation", "py",
             "--disable-pip-version-check", "-d", str(cache), f"{dist_name}=={version}"],
            capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            return None
        found = sorted(cache.glob(pattern)) or [p for p in cache.iterdir() if p.name.lower().startswith(
            f"{re.sub(r'[-_.]+', '_', dist_name)}-{version}-".lower())]
        if not found:
            return None
    src = found[0]
    dst = out_dir / src.name
    dst.write_bytes(src.read_bytes())
    with zipfile.ZipFile(dst) as zf:
        imports = top_level_imports(zf.namelist())
    return Wheel(norm(dist_name), version, dst, imports, origin="downloaded from PyPI (cached)")


def pure_dependency(dist_name: str, out_dir: Path, cache: Path) -> Wheel:
    version = md.version(dist_name)
    return download_pure(dist_name, version, out_dir, cache) or repack_installed(dist_name, out_dir)


def slim(dist_name: str, out_dir: Path) -> Wheel:
    wheel = repack_installed(dist_name, out_dir, SLIM_EXCLUDE[dist_name])
    wheel.origin = "slim wheel repacked from the build environment (bundled JS stripped)"
    return wheel


def project_wheel(root: Path, out_dir: Path) -> Wheel:
    """sdpa_core, built by hatchling from the repository like any release wheel."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "hatchling", "build", "--target", "wheel", "--directory", tmp],
                       cwd=root, check=True, capture_output=True)
        src = next(Path(tmp).glob("*.whl"))
        dst = out_dir / src.name
        dst.write_bytes(src.read_bytes())
    version = dst.name.split("-")[1]
    return Wheel("sdpa-core", version, dst, ["sdpa_core"], ["numpy"], origin="built with hatchling")


def app_wheel(web_dir: Path, version: str, out_dir: Path) -> Wheel:
    """The page's own modules (web/*) as the package `web`."""
    files = {}
    for src in sorted(web_dir.rglob("*")):
        rel = src.relative_to(web_dir).as_posix()
        if src.is_file() and not ALWAYS_EXCLUDE.search(rel) and not rel.startswith("."):
            files[f"web/{rel}"] = src.read_bytes()
    files.setdefault("web/__init__.py", b"")
    path = write_wheel(out_dir, "sdpa-lab-web", version, files)
    return Wheel("sdpa-lab-web", version, path, ["web"], ["sdpa-core"], origin="the page's modules (web/)")


def nh3_stub(out_dir: Path) -> Wheel:
    path = write_wheel(out_dir, "nh3", "0.0.0+sdpa.stub", {"nh3.py": NH3_STUB.encode()})
    return Wheel("nh3", "0.0.0+sdpa.stub", path, ["nh3"], origin="identity stub: the page's text is its own")


def pure_dependencies(names: list[str], out_dir: Path, cache: Path) -> list[Wheel]:
    with ThreadPoolExecutor(max_workers=6) as pool:
        return list(pool.map(lambda n: pure_dependency(n, out_dir, cache), names))


def requires(dist_name: str) -> list[str]:
    """Names a distribution depends on unconditionally (extras and markers for other Pythons ignored)."""
    from packaging.requirements import Requirement
    out = []
    for raw in md.requires(dist_name) or []:
        req = Requirement(raw)
        env = {"python_version": PYODIDE_PYTHON, "sys_platform": "emscripten", "platform_system": "Emscripten",
               "extra": ""}
        if req.marker is None or req.marker.evaluate(env):
            out.append(norm(req.name))
    return out
