"""Step 2 of the build: produce the wheel of every package the plan ships (plan.py decides which and how).

Ours (built from this repository), slim Panel/Bokeh, pinned pure dependencies, stubs, and Pyodide's
own wheels copied from its files. Every wheel we write is reproducible to the byte (sorted entries,
fixed timestamps), so an unchanged dependency keeps its sha256 across builds and the service
worker's content-keyed cache keeps it across redeploys. Repacked wheels keep their licence files.
"""
from __future__ import annotations

import base64
import hashlib
import importlib.metadata as md
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .plan import PYODIDE_PYTHON, SOURCES, Package, Plan

EPOCH = (1980, 1, 1, 0, 0, 0)
ALWAYS_EXCLUDE = re.compile(r"(^|/)__pycache__/|\.(pyc|so|pyd|dylib)$|\.dist-info/(RECORD|INSTALLER|direct_url\.json|REQUESTED)$")
#: The worker's Python (templates/worker.js calls it), shipped beside the app's package.
WORKER_MODULE = Path(__file__).resolve().parent / "templates" / "sdpa_worker.py"
# Licence and notice files inside a .dist-info folder (PEP 639 puts them under licenses/): they stay
# in every wheel we repack, slim ones included.
LICENCE_FILE = re.compile(r"^(licenses/.+|(LICEN[CS]E|COPYING|NOTICE|AUTHORS)[^/]*)$", re.I)


@dataclass
class Wheel:
    package: Package
    version: str
    path: Path
    imports: list[str]
    origin: str = ""          # how it was obtained, for the build log

    @property
    def name(self) -> str:
        return self.package.name


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _dist_part(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name)


def write_wheel(out_dir: Path, name: str, version: str, files: dict[str, bytes], metadata: str = "",
                info_files: dict[str, bytes] | None = None) -> Path:
    """A pure py3-none-any wheel from {archive path: bytes}, reproducible to the byte. `info_files`:
    more files for its .dist-info folder ({path inside it: bytes}), e.g. licences."""
    dist = f"{_dist_part(name)}-{version}"
    info = f"{dist}.dist-info"
    files = dict(files)
    for rel, data in (info_files or {}).items():
        files[f"{info}/{rel}"] = data
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


def repack_installed(pkg: Package, out_dir: Path, exclude: re.Pattern | None = None) -> Wheel:
    """A pure wheel of an installed distribution's files (native speed-ups left out, licences kept)."""
    dist = md.distribution(pkg.distribution)
    files, info_files = {}, {}
    for f in dist.files or []:
        arc = f.as_posix()
        if arc.startswith("..") or ALWAYS_EXCLUDE.search(arc):
            continue
        src = Path(str(dist.locate_file(f)))       # a pathlib.Path, typed as the SimplePath protocol
        if not src.is_file():
            continue
        head, _, rel = arc.partition("/")
        if head.endswith(".dist-info"):
            if LICENCE_FILE.match(rel):
                info_files[rel] = src.read_bytes()
        elif not (exclude and exclude.search(arc)):
            files[arc] = src.read_bytes()
    path = write_wheel(out_dir, dist.metadata["Name"], dist.version, files, dist.read_text("METADATA") or "",
                       info_files)
    return Wheel(pkg, dist.version, path, top_level_imports(files), origin="repacked from the build environment")


def download_pure(name: str, version: str, out_dir: Path, cache: Path) -> Path | None:
    """The PyPI pure-Python wheel for Pyodide's Python at exactly `version`, cached; None if unavailable."""
    cache.mkdir(parents=True, exist_ok=True)
    prefix = f"{_dist_part(name)}-{version}-".lower()
    found = sorted(p for p in cache.iterdir() if p.name.lower().startswith(prefix) and p.name.endswith("-none-any.whl"))
    if not found:
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
             "--python-version", PYODIDE_PYTHON, "--platform", "any", "--implementation", "py",
             "--disable-pip-version-check", "-d", str(cache), f"{name}=={version}"],
            capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            return None
        found = sorted(p for p in cache.iterdir() if p.name.lower().startswith(prefix) and p.name.endswith(".whl"))
        if not found:
            return None
    dst = out_dir / found[0].name
    dst.write_bytes(found[0].read_bytes())
    return dst


def _from_file(pkg: Package, path: Path, origin: str, version: str | None = None) -> Wheel:
    with zipfile.ZipFile(path) as zf:
        imports = top_level_imports(zf.namelist())
    return Wheel(pkg, version or pkg.known_version, path, imports, origin=origin)


def project_wheel(pkg: Package, root: Path, out_dir: Path) -> Wheel:
    """sdpa_core, built by hatchling from the repository like any release wheel."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "hatchling", "build", "--target", "wheel", "--directory", tmp],
                       cwd=root, check=True, capture_output=True)
        src = next(Path(tmp).glob("*.whl"))
        dst = out_dir / src.name
        dst.write_bytes(src.read_bytes())
    return _from_file(pkg, dst, SOURCES["project"], version=dst.name.split("-")[1])


def app_wheel(pkg: Package, web_dir: Path, version: str, out_dir: Path) -> Wheel:
    """The page's own modules (web/*) as the package `web`, versioned like the project, with the worker's
    Python (templates/sdpa_worker.py) beside it."""
    files = {WORKER_MODULE.name: WORKER_MODULE.read_bytes()}
    for src in sorted(web_dir.rglob("*")):
        rel = src.relative_to(web_dir).as_posix()
        if src.is_file() and not ALWAYS_EXCLUDE.search(rel) and not rel.startswith("."):
            files[f"web/{rel}"] = src.read_bytes()
    files.setdefault("web/__init__.py", b"")
    path = write_wheel(out_dir, pkg.name, version, files)
    return Wheel(pkg, version, path, ["web", WORKER_MODULE.stem], origin=SOURCES["app"])


def stub_wheel(pkg: Package, out_dir: Path) -> Wheel:
    module = pkg.stub_file
    path = write_wheel(out_dir, pkg.name, pkg.known_version, {module.name: module.read_bytes()})
    return Wheel(pkg, pkg.known_version, path, [module.stem], origin=SOURCES["stub"])


def produce(plan: Plan, out_dir: Path, cache: Path, pyodide_wheel, root: Path, web_dir: Path) -> dict[str, Wheel]:
    """Every shipped package's wheel in `out_dir`, by name. `pyodide_wheel(name)` is the path of
    Pyodide's own wheel for a package (pyodide_files.PyodideFiles.wheel)."""
    out: dict[str, Wheel] = {}

    def one(pkg: Package) -> Wheel:
        if pkg.source == "slim":
            wheel = repack_installed(pkg, out_dir, pkg.slim_exclude)
            wheel.origin = SOURCES["slim"]
            return wheel
        if pkg.source == "stub":
            return stub_wheel(pkg, out_dir)
        if pkg.source == "pyodide":
            src = pyodide_wheel(pkg.name)
            return _from_file(pkg, Path(shutil.copy2(src, out_dir / src.name)), SOURCES["pyodide"])
        if pkg.source == "lock":
            got = download_pure(pkg.distribution, pkg.known_version, out_dir, cache)
            if got is None:
                raise SystemExit(f"make site: {pkg.name}=={pkg.version} is needed in the browser and neither "
                                 "Pyodide's files nor PyPI provided it")
            return _from_file(pkg, got, "downloaded from PyPI at the version in Pyodide's lock (cached)")
        if pkg.source == "pure":
            got = download_pure(pkg.distribution, pkg.known_version, out_dir, cache)
            return (_from_file(pkg, got, "downloaded from PyPI (cached)") if got is not None
                    else repack_installed(pkg, out_dir))
        raise ValueError(f"{pkg.name}: no wheel to produce for source {pkg.source!r}")

    core = next(p for p in plan.shipped if p.source == "project")
    out[core.name] = project_wheel(core, root, out_dir)
    for pkg in plan.shipped:
        if pkg.source == "app":
            out[pkg.name] = app_wheel(pkg, web_dir, out[core.name].version, out_dir)
    rest = [p for p in plan.shipped if p.name not in out]
    with ThreadPoolExecutor(max_workers=6) as pool:      # downloads and repacks in parallel
        for wheel in pool.map(one, rest):
            out[wheel.name] = wheel
    return dict(sorted(out.items()))
