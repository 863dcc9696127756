"""`make site`: build _site/, a static, offline-first page running sdpa_core and web/ in Pyodide.

    python -m build.make_site [--out _site] [--app web/app.py] [--site-url https://user.github.io/repo/]

A pipeline of named steps, each in its own module and tested on its own (tests/build/test_steps.py):

    prerender     run the app once in CPython: first paint, what it imports, its name and colours
    plan          pure: which packages ship, from where, slimmed or stubbed, with or without sources
    wheels        produce each wheel (build, repack, slim, download, copy from Pyodide)
    bytecode      compile them (and the stdlib modules the page imports) for Pyodide's CPython 3.13
    archive       all of them as one pyodide/packages.tar.gz, unpacked by the worker (archive.py)
    lock          the site's pyodide-lock.json: Pyodide's, with no packages left for loadPackage
    patch         Pyodide's pyodide.asm.js, patched for the warm boot from a snapshot (pyodide_patch.py)
    assets        Panel's and Bokeh's static files the page references
    images        icons and the link-preview image (icons.py); notices.html (notices.py)
    render        index.html, manifest (render.py), its policy and integrity hashes (page_policy.py);
                  worker.js, boot.js, boot.css (runtime.py, bundled by bundle.py); each link's first
                  paint in HTML too, shown before any script runs (html_paint.py)
    offline       sw.js with the offline policy: every file and its sha256 (offline.py)

Pyodide comes from PYODIDE_DIST=<dir> (a release folder, or any folder with its layout
and a pyodide-lock.json), else from PYODIDE_CDN (default: the official CDN) downloaded
into a cache at build time, else, with a loud warning, from that CDN at run time.
With a CPython 3.13 at hand (python3.13 on PATH, pyenv, or SDPA_PYTHON313) the wheels and the
page's stdlib modules ship as bytecode for Pyodide (see bytecode.py); without one, as sources.
--site-url (or SITE_URL) gives link previews an absolute image URL; every other URL stays relative.
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
import textwrap
import time
from pathlib import Path
from typing import Any

from . import (archive, assets, bytecode, html_paint, icons, notices, offline, page_policy, plan, private_api,
               pyodide_files, pyodide_lock, pyodide_patch, render, runtime, wheels)
from .prerender import FIRST_ID

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

WAYS_OUT = (f"set PYODIDE_DIST=<folder of a Pyodide {pyodide_files.VERSION} release> for a self-hosted site, "
            "or run `make dev` for `panel serve`")
RUNTIME_FIRST = ("pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip.gz", "pyodide-lock.json")
PREVIEW = render.Preview("preview.png", *icons.PREVIEW_SIZE,
                         alt="A 4 by 4 attention-weight heat map next to the page's title")


def log(msg: str) -> None:
    print(f"make site: {msg}", flush=True)


def warn_loud(lines: list[str]) -> None:
    bar = "!" * 78
    print("\n".join([bar, *(f"!! {line}" for line in lines), bar]), file=sys.stderr, flush=True)


#: The pre-render's inputs: the app's folder, the core, the build's own code, and (below) the installed packages,
#: Python and the environment's page settings. Its output is deterministic (test_reproducible.py), so one made
#: from the same inputs is reused exactly: from the cache_root's "prerender" folder, the newest KEEP_PRERENDERS kept.
KEEP_PRERENDERS = 3


def prerender_key(app: Path) -> str:
    h = hashlib.sha256()
    for folder in (app.parent, ROOT / "sdpa_core", ROOT / "build"):
        for p in sorted(folder.rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts:
                h.update(p.relative_to(folder.parent).as_posix().encode() + b"\0" + p.read_bytes())
    h.update("\n".join(sorted(f"{d.metadata['Name']}=={d.version}" for d in md.distributions())).encode())
    h.update(sys.version.encode())
    settings = sorted((k, v) for k, v in os.environ.items()
                      if k.startswith(("SDPA_", "BOKEH_", "PANEL_")) and k != "SDPA_LAB_CACHE")
    h.update(json.dumps(settings).encode())
    return h.hexdigest()[:40]


def prerender(app: Path) -> dict:
    cache = pyodide_files.cache_root() / "prerender"
    hit = cache / f"{prerender_key(app)}.json"
    if hit.is_file():
        # an entry is its body's sha256, a newline, its body: a damaged one is made again, never used
        digest, _, body = hit.read_bytes().partition(b"\n")
        if hashlib.sha256(body).hexdigest().encode() == digest:
            log(f"prerender: from the cache ({hit.name})")
            return json.loads(body)
        log(f"prerender: the cached {hit.name} is damaged; running the app again")
        hit.unlink(missing_ok=True)
    out = run_prerender(app)
    cache.mkdir(parents=True, exist_ok=True)
    body = json.dumps(out).encode()
    part = hit.with_suffix(".part")
    part.write_bytes(hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    part.replace(hit)               # whole or absent: a stopped build leaves no half entry
    for old in sorted(cache.glob("*.json"), key=lambda p: p.stat().st_mtime)[:-KEEP_PRERENDERS]:
        old.unlink(missing_ok=True)
    return out


def run_prerender(app: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "prerender.json"
        # a fixed hash seed: set and dict orders that depend on string hashes are the same every build
        done = subprocess.run([sys.executable, "-m", "build.prerender", str(app), str(out)],
                              cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
        if done.returncode != 0 or not out.exists():
            sys.stderr.write(done.stderr[-4000:])
            raise SystemExit(f"make site: running {app} in CPython to pre-render it failed (see above)")
        return json.loads(out.read_text())


def prefetch_list(site: Path, lock: dict | None) -> list[list]:
    """What the worker requests before Pyodide asks, the first-needed first: [path, sha256, bytes] for
    the runtime, the lock and the package archive. The worker checks each file against both as it arrives."""
    paths = [f"pyodide/{name}" for name in RUNTIME_FIRST] if lock is not None else []
    paths.append(archive.PATH)
    return [[p, wheels.sha256(site / p), (site / p).stat().st_size] for p in paths]


def preview_lines(identity: render.Identity) -> list[str]:
    """The preview's text under the short name: the rest of the title, then where it runs."""
    rest = identity.title.split(":", 1)[1].strip() if ":" in identity.title else identity.description
    return [*textwrap.wrap(rest, 21), "live in your browser"]


def log_packages(the_plan: plan.Plan, built: dict[str, wheels.Wheel]) -> None:
    for name, pkg in the_plan.packages.items():
        if name in built:
            w = built[name]
            log(f"  {name} {w.version}: {w.origin} ({w.path.stat().st_size / 1e6:.2f} MB)")
        else:
            log(f"  {name}: {plan.SOURCES[pkg.source]}")


def build(out: Path, app: Path, site_url: str | None = None) -> dict:
    started = time.time()
    pyo = pyodide_files.locate()
    if pyo.self_hosted:
        log(f"Pyodide {pyodide_files.VERSION} from {pyo.folder} ({pyo.kind})")
        python = (pyo.lock or {}).get("info", {}).get("python", plan.PYODIDE_PYTHON)
        if not (python + ".").startswith(plan.PYODIDE_PYTHON + "."):
            raise SystemExit(f"make site: this Pyodide runs Python {python}, but the build prepares wheels and "
                             f"bytecode for {plan.PYODIDE_PYTHON} (plan.PYODIDE_PYTHON)")
    else:
        warn_loud([f"Pyodide's files could not be obtained: {pyo.problem}.",
                   f"The site will load Pyodide from {pyo.cdn} at run time: it needs the network",
                   "on first visit and makes requests to another origin.",
                   f"To fix: {WAYS_OUT}."])
    private_api.check(pyo.folder if pyo.self_hosted else None)   # names that moved in an upgrade fail here
    if out.exists():
        shutil.rmtree(out)
    (out / "pyodide").mkdir(parents=True)
    cache = pyodide_files.cache_root() / "wheels"
    compiled = cache.parent / "bytecode"

    # prerender
    log(f"pre-rendering {app.relative_to(ROOT) if app.is_relative_to(ROOT) else app} in CPython")
    pre = prerender(app)
    identity = render.Identity(**pre["identity"])
    if not render.WEBGL and ("webgl" in pre["html"] or any("webgl" in f.read_text() for f in app.parent.rglob("*.py"))):
        raise SystemExit("make site: the page draws with WebGL; set render.WEBGL = True so bokeh-gl.min.js ships")
    html = render.self_host(pre["html"])

    # plan -> wheels -> bytecode -> lock
    log("packages for the browser (pre-solved into pyodide/pyodide-lock.json):")
    the_plan = plan.make_plan(pre["distributions"], pyo.lock, self_hosted=pyo.self_hosted,
                              has_wheel=lambda name: pyo.wheel(name) is not None, meta=plan.InstalledMetadata())
    # the wheels are build products: what ships is the archive of their files (archive.py)
    work = Path(tempfile.mkdtemp(prefix="sdpa-wheels-"))
    built = wheels.produce(the_plan, work, cache, pyo.wheel, ROOT, app.parent)
    bytecode.ship_wheels(built.values(), compiled, log)
    log_packages(the_plan, built)
    lock = pyodide_lock.build(the_plan, built, pyo.lock, pyodide_files.VERSION)   # checks every package has a wheel
    packed = archive.write(out, {n: w.path for n, w in built.items()}, {n: w.version for n, w in built.items()},
                           {**plan.TRIM, "*": plan.ARCHIVE_DROP}, pre.get("modules", []))
    log(f"archive: {len(built)} packages in {archive.PATH} ({packed['size'] / 1e6:.2f} MB, "
        f"{len(packed['dynlibs'])} compiled libraries)")
    if pyo.self_hosted:
        pyodide_lock.write(out / "pyodide" / "pyodide-lock.json", pyodide_lock.runtime_only(lock))
        pyo.copy_runtime(out / "pyodide")
        pyodide_patch.patch_file(out / "pyodide" / "pyodide.asm.js")      # fails the build if Pyodide changed
        gone = bytecode.drop_stdlib(out / "pyodide" / "python_stdlib.zip", plan.STDLIB_DROP,
                                    pre.get("stdlib_files", []))
        log(f"stdlib: {gone} files the page never imports left out (plan.STDLIB_DROP)")
        bytecode.ship_stdlib(out / "pyodide" / "python_stdlib.zip", pre.get("stdlib_files", []), compiled, log)
        archive.pack_stdlib(out)
        config: dict[str, Any] = {"pyodideJs": "./pyodide/pyodide.js", "runtimeLock": None,
                                  "lock": "./pyodide/pyodide-lock.json", "stdlib": archive.STDLIB,
                                  "snapshot": {"folder": offline.SNAPSHOT_FOLDER}}
        extra_origins: tuple[str, ...] = ()
    else:
        # Pyodide from its CDN, unpatched: no memory snapshot (build/pyodide_patch.py)
        config = {"pyodideJs": pyo.cdn + "pyodide.js", "runtimeLock": pyo.cdn + "pyodide-lock.json", "lock": None,
                  "stdlib": None, "snapshot": None}
        origin = re.match(r"https?://[^/]+", pyo.cdn)
        if origin is None:
            raise SystemExit(f"make site: Pyodide's CDN {pyo.cdn} is not an http(s) URL (PYODIDE_CDN)")
        extra_origins = (origin.group(0),)
    config.update(packages=sorted(the_plan.packages), runtimePackages=the_plan.at_runtime, archive=packed,
                  panelRoot="./static/panel/", prefetch=prefetch_list(out, lock if pyo.self_hosted else None),
                  offlineCache=offline.CACHE, firstId=FIRST_ID)

    # assets, images, notices
    static = assets.copy(html, out)
    manifest_icons = icons.write(out / "icons", identity.theme_color)
    icons.write_preview(out / PREVIEW.path, identity.theme_color, identity.short_name, preview_lines(identity))
    third_party = [w.path for w in built.values() if w.package.source not in ("project", "app", "stub")]
    for n in notices.write(out / "notices.html", third_party, static, render.PANEL_DIST, identity.short_name):
        if n.licence == "not stated" and not n.texts:
            log(f"notices: {n.name} {n.version} ships with neither licence metadata nor a licence file")
    shutil.rmtree(work)

    # render
    worker = runtime.worker_js(config).encode()
    (out / "worker.js").write_bytes(worker)
    # each link's first paint also as HTML, shown before any script runs (html_paint.py)
    layers = {key: {**doc, "html": html_paint.other_layer(html, doc)} for key, doc in pre["first_paints"].items()}
    firsts = render.first_paint_files(layers, out)
    log(f"first paints: {len(firsts) + 1} links pre-rendered (index.html and {render.FIRST_PAINT_DIR}/*.json, "
        f"{sum((out / f['path']).stat().st_size for f in firsts.values()) / 1e6:.2f} MB)")
    # each early view's main control at every position, before Python is live (early_states.py)
    early = render.early_state_files(pre["early_states"], out)
    log(f"early states: {sum(len(v['files']) for v in early.values())} states of {len(early)} views' main controls "
        f"({render.EARLY_DIR}/, {sum((out / f['path']).stat().st_size for v in early.values() for f in v['files']) / 1e6:.2f} MB)")
    (out / "boot.js").write_text(runtime.boot_js(worker, offline.REGISTRATION, snapshot_folder=(config["snapshot"] or {}).get("folder"),
                                                first_paints=firsts, default_first_paint=pre["default_first_paint"],
                                                setting_keys=pre["state_keys"], early_states=early))
    (out / "boot.css").write_text(runtime.boot_css(identity))
    (out / "manifest.webmanifest").write_text(render.manifest(identity, manifest_icons))
    html = html_paint.paint_page(render.unveiled(render.deferred_scripts(render.draw_first_paint_through_boot(html))))
    html = render.finish(html, identity=identity, preview=PREVIEW, extra_origins=extra_origins, site_url=site_url)
    (out / "index.html").write_text(page_policy.with_integrity(html, lambda rel: (out / rel).read_bytes()))
    (out / ".nojekyll").write_text("")   # GitHub Pages: serve every file as it is
    overrides = private_api.bokeh_css_variables(out)
    if overrides:
        raise SystemExit("make site: the site sets CSS variables that Bokeh reads for its plots' visuals, which "
                         "templates/bokehjs_internals.js (hookFirstDraw) answers with \"\" (no lookup):\n  " + "\n  ".join(overrides))
    if pyo.self_hosted:
        for name in ("index.html", "worker.js", "boot.js"):
            foreign = render.foreign_urls((out / name).read_text())
            if foreign:
                raise SystemExit(f"make site: {name} would request other origins: {', '.join(foreign)}")

    # offline: last, since the policy lists every other file
    policy = offline.policy(out)
    (out / offline.SW_FILE).write_text(runtime.service_worker(policy))
    total = sum((out / p).stat().st_size for p in policy["assets"])
    summary = {"pyodide": pyo.kind, "self_hosted": pyo.self_hosted, "files": len(policy["assets"]), "bytes": total,
               "packages": config["packages"], "seconds": round(time.time() - started, 1)}
    log(f"{out}: {len(policy['assets'])} files, {total / 1e6:.1f} MB, all precached by {offline.SW_FILE} "
        f"(left out: {', '.join(offline.NOT_STORED)}; {summary['seconds']} s)")
    if not pyo.self_hosted:
        print(f"make site: WARNING: Pyodide is referenced from {pyo.cdn} at run time; {WAYS_OUT}.",
              file=sys.stderr)
    return summary


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m build.make_site", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "_site")
    ap.add_argument("--app", type=Path, default=ROOT / "web" / "app.py")
    ap.add_argument("--site-url", default=os.environ.get("SITE_URL") or None,
                    help="where the site is deployed (absolute link-preview image URL); default: $SITE_URL")
    args = ap.parse_args()
    if not args.app.is_file():
        raise SystemExit(f"make site: {args.app} does not exist (the page's entry point)")
    build(args.out.resolve(), args.app.resolve(), args.site_url)
    return 0


if __name__ == "__main__":
    sys.exit(main())
