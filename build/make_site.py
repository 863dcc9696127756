"""`make site`: build _site/, a static, offline-first page running sdpa_core and web/ in Pyodide.

    python build/make_site.py [--out _site] [--app web/app.py]

Pyodide comes from PYODIDE_DIST=<dir> (a release folder, or any folder with its layout
and a pyodide-lock.json), else from PYODIDE_CDN (default: the official CDN) downloaded
into a cache at build time, else, with a loud warning, from that CDN at run time.
With a CPython 3.13 at hand (python3.13 on PATH, pyenv, or SDPA_PYTHON313) the wheels and the
page's stdlib modules ship as bytecode for Pyodide (see bytecode.py); without one, as sources.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.metadata as md
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import bytecode  # noqa: E402
import icons  # noqa: E402
import page  # noqa: E402
import pyodide_files  # noqa: E402
import pyodide_lock  # noqa: E402
import wheels  # noqa: E402

TEMPLATES = HERE / "templates"
SITE_PACKAGES = Path(md.distribution("panel").locate_file(""))
PANEL_DIST_DIR = SITE_PACKAGES / "panel" / "dist"
BOKEH_JS_DIR = SITE_PACKAGES / "bokeh" / "server" / "static" / "js"
# Installed in the build environment but never part of the page.
BUILD_ONLY = {"setuptools", "pip", "wheel", "sdpa-core", "sdpa-lab-web"}
OWN_WHEELS = ("sdpa_core-", "sdpa_lab_web-")     # wheel file names: these keep their sources
# Imported by panel.io.pyodide in the browser (without it Panel imports pandas); not installed here.
BROWSER_EXTRAS = {"pyodide-http": "0.2.2"}
# Pure Python with an optional C speed-up: our pure wheel works when Pyodide's is not at hand.
OPTIONAL_SPEEDUPS = {"pyyaml", "tornado", "markupsafe"}
WAYS_OUT = ("set PYODIDE_DIST=<folder of a Pyodide 0.29.3 release> for a self-hosted site, "
            "or run `make dev` for `panel serve`")


def log(msg: str) -> None:
    print(f"make site: {msg}", flush=True)


def warn_loud(lines: list[str]) -> None:
    bar = "!" * 78
    print("\n".join([bar, *(f"!! {line}" for line in lines), bar]), file=sys.stderr, flush=True)


def prerender(app: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "prerender.json"
        # a fixed hash seed: set and dict orders that depend on string hashes are the same every build
        done = subprocess.run([sys.executable, str(HERE / "prerender.py"), str(app), str(out)],
                              cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        if done.returncode != 0 or not out.exists():
            sys.stderr.write(done.stderr[-4000:])
            raise SystemExit(f"make site: running {app} in CPython to pre-render it failed (see above)")
        return json.loads(out.read_text())


def has_native_code(dist: str) -> bool:
    return any(str(f).endswith((".so", ".pyd")) for f in md.distribution(dist).files or [])


def choose_packages(pre: dict, pyo: pyodide_files.PyodideFiles, app: Path, wheel_dir: Path, cache: Path):
    """Lock entries for everything the page imports; names left to the CDN's lock at run time."""
    needed = {wheels.norm(d): d for d in pre["distributions"]} | {n: n for n in BROWSER_EXTRAS}
    for name in BUILD_ONLY:
        needed.pop(name, None)
    core = wheels.project_wheel(ROOT, wheel_dir)
    ours = [core, wheels.app_wheel(app.parent, core.version, wheel_dir),
            wheels.slim("panel", wheel_dir), wheels.slim("bokeh", wheel_dir)]
    from_pyodide: dict[str, Path] = {}
    at_runtime: list[str] = []
    pure: list[str] = []
    todo = sorted(n for n in needed if n not in ("panel", "bokeh"))
    while todo:
        name = todo.pop()
        if name in from_pyodide or name in at_runtime:
            continue
        if name == "nh3":
            ours.append(wheels.nh3_stub(wheel_dir))
            continue
        whl = pyo.wheel(name)
        if whl is not None:
            from_pyodide[name] = Path(shutil.copy2(whl, wheel_dir / whl.name))
            todo.extend(pyo.lock["packages"][name].get("depends", []))
        elif not pyo.self_hosted and name not in BROWSER_EXTRAS and (
                has_native_code(needed[name]) and name not in OPTIONAL_SPEEDUPS):
            at_runtime.append(name)
        elif name in BROWSER_EXTRAS:
            got = wheels.download_pure(name, BROWSER_EXTRAS[name], wheel_dir, cache)
            if got is None:
                raise SystemExit(f"make site: {name}=={BROWSER_EXTRAS[name]} is needed in the browser and "
                                 "neither Pyodide's files nor PyPI provided it")
            ours.append(got)
        else:
            pure.append(needed[name])
    ours += wheels.pure_dependencies(pure, wheel_dir, cache)
    ship_bytecode([w.path for w in ours] + list(from_pyodide.values()), cache.parent / "bytecode")

    shipped = {w.name for w in ours} | set(from_pyodide)
    available = shipped | set(at_runtime)
    entries = {}
    for w in ours:
        if w.name not in ("sdpa-core", "sdpa-lab-web", "nh3") and w.name not in BROWSER_EXTRAS:
            w.depends = [d for d in wheels.requires(needed.get(w.name, w.name)) if d in available]
        entries[w.name] = pyodide_lock.entry(w, w.path.name)
        log(f"  {w.name} {w.version}: {w.origin} ({w.path.stat().st_size / 1e6:.2f} MB)")
    for name, path in sorted(from_pyodide.items()):
        entries[name] = pyodide_lock.pyodide_entry(pyo.lock, name, path, shipped)
        log(f"  {name} {entries[name]['version']}: from Pyodide's files ({path.stat().st_size / 1e6:.2f} MB)")
    for name in at_runtime:
        log(f"  {name}: from {pyo.cdn} at run time")
    return entries, at_runtime


def python313() -> str | None:
    if not hasattr(python313, "found"):
        python313.found = bytecode.find_python313()
        if python313.found is None:
            log("bytecode: no CPython 3.13 found (PATH, pyenv, or SDPA_PYTHON313=<python3.13>); shipping "
                "sources only, so every boot compiles them (about 2-3 s slower)")
    return python313.found


def ship_bytecode(paths: list[Path], cache: Path) -> None:
    """Every pure wheel gains bytecode for Pyodide's CPython 3.13: ours keep their sources (readable
    tracebacks of our code), the others become sourceless (bytecode alone is smaller than both)."""
    python = python313()
    if python is None:
        return
    started, reused = time.time(), 0
    for path in paths:
        keep = path.name.startswith(OWN_WHEELS)
        reused += bytecode.cached(path, cache, python, f"wheel sourceless={not keep}",
                                  lambda: bytecode.compile_wheel(path, python, sourceless=not keep))
    log(f"bytecode: {len(paths)} wheels compiled with {python} ({reused} from the cache, "
        f"{time.time() - started:.1f} s)")


def ship_stdlib_bytecode(zip_path: Path, used: list[str], cache: Path) -> None:
    python = python313()
    if python is None:
        return
    counts = []
    how = "stdlib " + hashlib.sha256("\n".join(sorted(used)).encode()).hexdigest()
    bytecode.cached(zip_path, cache, python, how,
                    lambda: counts.append(bytecode.compile_stdlib(zip_path, python, used)))
    log(f"bytecode: the stdlib modules the page imports, compiled in {zip_path.name}"
        + (f" ({counts[0][0]} of {counts[0][1]})" if counts else " (from the cache)"))


RUNTIME_FIRST = ("pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")


def prefetch_list(site: Path, entries: dict) -> list[list]:
    """What the worker requests before Pyodide asks, the first-needed first: [path, sha256, bytes] for
    the runtime, the lock and every wheel. The worker checks each file against both as it arrives."""
    paths = [f"pyodide/{name}" for name in RUNTIME_FIRST]
    paths += [f"pyodide/{e['file_name']}" for _, e in sorted(entries.items())]
    return [[p, sha256(site / p), (site / p).stat().st_size] for p in paths]


def copy_assets(html: str, out: Path) -> None:
    """Copy every local file the page references from the installed Panel and Bokeh."""
    todo = [p for p in page.local_paths(html) if p.startswith("static/")]
    todo += ["static/panel/1.9.4/dist/" + p.relative_to(PANEL_DIST_DIR).as_posix()
             for sub in ("css", "assets") for p in (PANEL_DIST_DIR / sub).rglob("*") if p.is_file()]
    seen = set()
    optional = set()     # fonts a stylesheet lists as alternatives: copy the ones Panel ships
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        if rel.startswith(page.PANEL_DIST):
            src = PANEL_DIST_DIR / rel[len(page.PANEL_DIST):]
        elif rel.startswith(page.BOKEH_DIR):
            src = BOKEH_JS_DIR / rel[len(page.BOKEH_DIR):]
        else:
            raise SystemExit(f"make site: the page references {rel}, which nothing provides")
        if not src.is_file() and rel in optional:
            continue
        if not src.is_file():
            raise SystemExit(f"make site: the page references {rel}, but {src} does not exist")
        dst = out / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
        if src.suffix == ".css":   # fonts and images the stylesheet pulls in
            for ref in re.findall(r"""url\(\s*["']?([^"')]+)["']?\s*\)""", src.read_text(errors="replace")):
                if not ref.startswith(("data:", "#", "http:", "https:", "//")):
                    target = (Path(rel).parent / ref.split("?")[0].split("#")[0]).as_posix()
                    todo.append(os.path.normpath(target))
                    optional.add(todo[-1])


def render_template(name: str, **values: str) -> str:
    text = (TEMPLATES / name).read_text()
    for key, value in values.items():
        text = re.sub(rf"/\*{key}\*/.*?/\*END\*/", lambda _: value, text, count=1, flags=re.S) \
            if f"/*{key}*/" in text else text.replace(f"@@{key}@@", value)
    return text


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build(out: Path, app: Path) -> dict:
    started = time.time()
    pyo = pyodide_files.locate()
    if pyo.self_hosted:
        log(f"Pyodide {pyodide_files.VERSION} from {pyo.folder} ({pyo.kind})")
    else:
        warn_loud([f"Pyodide's files could not be obtained: {pyo.problem}.",
                   f"The site will load Pyodide from {pyo.cdn} at run time: it needs the network",
                   "on first visit and makes requests to another origin.",
                   f"To fix: {WAYS_OUT}."])
    if out.exists():
        shutil.rmtree(out)
    (out / "pyodide").mkdir(parents=True)
    cache = pyodide_files.cache_root() / "wheels"

    log(f"pre-rendering {app.relative_to(ROOT) if app.is_relative_to(ROOT) else app} in CPython")
    pre = prerender(app)
    html = page.self_host(pre["html"])
    title = (re.search(r"<title>(.*?)</title>", html, re.S) or [None, "SDPA Lab"])[1].strip()
    theme = (re.search(r"--header-background:\s*(#[0-9a-fA-F]{3,8})", html) or [None, "#1f3a5f"])[1]

    log("packages for the browser (pre-solved into pyodide/pyodide-lock.json):")
    entries, at_runtime = choose_packages(pre, pyo, app, out / "pyodide", cache)
    info = (pyo.lock or {}).get("info", {"arch": "wasm32", "python": "3.13.2", "version": pyodide_files.VERSION})
    pyodide_lock.write(out / "pyodide" / "pyodide-lock.json", info, entries, external=set(at_runtime))

    if pyo.self_hosted:
        pyo.copy_runtime(out / "pyodide")
        ship_stdlib_bytecode(out / "pyodide" / "python_stdlib.zip", pre.get("stdlib_files", []), cache.parent / "bytecode")
        config = {"pyodideJs": "./pyodide/pyodide.js", "runtimeLock": None}
        extra_origins: tuple[str, ...] = ()
    else:
        config = {"pyodideJs": pyo.cdn + "pyodide.js", "runtimeLock": pyo.cdn + "pyodide-lock.json"}
        extra_origins = (re.match(r"https?://[^/]+", pyo.cdn).group(0),)
    config.update(lock="./pyodide/pyodide-lock.json", packages=sorted(entries) + sorted(at_runtime),
                  panelRoot="./static/panel/", prefetch=prefetch_list(out, entries) if pyo.self_hosted else [])

    copy_assets(html, out)
    (out / "worker.js").write_text(render_template("worker.js", CONFIG=json.dumps(config, indent=1)))
    worker = out / "worker.js"
    (out / "boot.js").write_text(render_template("boot.js", PANEL_DIST=page.PANEL_DIST, WORKER_SHA256=sha256(worker),
                                                 WORKER_SIZE=str(worker.stat().st_size)))
    shutil.copy2(TEMPLATES / "boot.css", out / "boot.css")
    manifest = {
        "name": title, "short_name": "SDPA Lab",
        "description": "Scaled dot-product attention, explored in your browser: nothing installed, nothing uploaded.",
        "start_url": "./", "scope": "./", "display": "standalone",
        "background_color": "#ffffff", "theme_color": theme,
        "icons": icons.write(out / "icons"),
    }
    (out / "manifest.webmanifest").write_text(json.dumps(manifest, indent=1) + "\n")
    html = page.finish(html, title=title, theme=theme, extra_origins=extra_origins)
    (out / "index.html").write_text(page.with_integrity(html, lambda rel: (out / rel).read_bytes()))
    (out / ".nojekyll").write_text("")   # GitHub Pages: serve every file as it is

    if pyo.self_hosted:
        for name in ("index.html", "worker.js", "boot.js"):
            foreign = page.foreign_urls((out / name).read_text())
            if foreign:
                raise SystemExit(f"make site: {name} would request other origins: {', '.join(foreign)}")

    assets = {p.relative_to(out).as_posix(): sha256(p) for p in sorted(out.rglob("*"))
              if p.is_file() and not p.name.startswith(".")}
    (out / "sw.js").write_text(render_template("sw.js", ASSETS=json.dumps(assets, indent=1, sort_keys=True)))
    total = sum((out / p).stat().st_size for p in assets)
    summary = {"pyodide": pyo.kind, "self_hosted": pyo.self_hosted, "files": len(assets), "bytes": total,
               "packages": config["packages"], "seconds": round(time.time() - started, 1)}
    log(f"{out}: {len(assets)} files, {total / 1e6:.1f} MB, all precached by sw.js "
        f"({summary['seconds']} s)")
    if not pyo.self_hosted:
        print(f"make site: WARNING: Pyodide is referenced from {pyo.cdn} at run time; {WAYS_OUT}.",
              file=sys.stderr)
    return summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "_site")
    ap.add_argument("--app", type=Path, default=ROOT / "web" / "app.py")
    args = ap.parse_args()
    if not args.app.is_file():
        raise SystemExit(f"make site: {args.app} does not exist (the page's entry point)")
    build(args.out.resolve(), args.app.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
