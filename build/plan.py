"""Step 1 of the build, pure: which packages the page loads in Pyodide, where each comes from, and how.

Everything is decided here from the declared data below and the build's inputs (what the pre-render
imported, Pyodide's lock, installed metadata); nothing is downloaded, copied or written. The later
steps carry the plan out: wheels.py produces each wheel, bytecode.py compiles them, pyodide_lock.py
writes the lock. Versions are never written here: they come from the installed distributions'
metadata (what the page was pre-rendered with) and from Pyodide's lock.

    plan = make_plan(distributions, pyodide_lock, self_hosted=..., has_wheel=..., meta=InstalledMetadata())
"""
from __future__ import annotations

import importlib.metadata as md
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

PYODIDE_PYTHON = "3.13"          # Pyodide 0.29's CPython: markers and bytecode are for this version
STUB_DIR = Path(__file__).resolve().parent / "stubs"

# ---- declared data: the only place these names appear -------------------------------------------

#: Never part of the page, by distribution name (the import names are derived: never_imports()).
#: The pre-render makes them unimportable, so an app that starts needing one fails the build
#: instead of silently growing the page; the plan refuses to ship one.
#: psutil: Bokeh's server imports it when installed (process stats for `panel serve`), never the page.
NEVER_SHIP = ("pandas", "pillow", "tqdm", "requests", "bleach", "matplotlib", "pyarrow", "micropip", "psutil")

#: Installed for building only, never imported by the page.
BUILD_ONLY = ("setuptools", "pip", "wheel")

#: Our own wheels (built from this repository, not installed dependencies): name -> how it is built.
#: They keep their sources next to the bytecode (readable tracebacks of our code).
OWN = {"sdpa-core": "project", "sdpa-lab-web": "app"}
APP_PACKAGE = "sdpa-lab-web"     # the page's modules (web/) as the package `web`

#: Repacked from the build environment without what the page never reads: the bundled JS/CSS the page
#: loads from its own static/ copy, tests, TypeScript/LESS sources, source maps, type stubs and Sphinx
#: extensions (`{version}`: the package's own version). Licence files always stay (wheels.py).
SLIM = {
    "panel": r"^panel/(dist/(?!css/|assets/)|tests/)|\.js\.map$|\.(ts|less|pyi)$",
    "bokeh": r"^bokeh/(server/static/|sampledata/|sphinxext/|_sri/(?!{version}\.json))|\.pyi$",
}

#: Files of a shipped package left out of the site's package archive (archive.py), by package name: tests,
#: headers, static libraries, type stubs and tools the page never imports. Whatever the pre-render
#: imported can never be left out: the build fails (archive.trimmed checks each left-out module).
#: Every package also loses its .dist-info/RECORD (ARCHIVE_DROP): the list of installed files, read by
#: pip, never by the page.
TRIM = {
    "tornado": r"^tornado/test/",
    # numpy.fft and numpy.polynomial are imported on first use only (numpy's __getattr__); the page's
    # maths never uses them. lapack_lite is numpy's own test shim (numpy.linalg uses _umath_linalg).
    "numpy": r"^numpy/(f2py|testing|_pyinstaller|_core/include|_core/lib|random/lib|random/_examples|"
             r"_core/tests|tests|fft|polynomial)/|^numpy/(conftest|linalg/lapack_lite)[.]|\.(pyi|pxd|a|h)$",
    "bokeh": r"^bokeh/command/subcommands/",
    "panel": r"^panel/(command/|compiler[.]|package-lock[.]json$)",   # package.json: read at import
    "markdown": r"^markdown/(test_tools|__main__)[.]",
    "pyviz-comms": r"^pyviz_comms/labextension/(?!package[.]json$)",   # it reads its version from that file
}
ARCHIVE_DROP = r"[.]dist-info/RECORD$"

#: Standard-library modules removed from Pyodide's python_stdlib.zip (bytecode.py): debuggers, REPLs,
#: documentation, mail and server protocols, none of which a page in a browser tab runs. A module the
#: pre-render imported is never dropped (the build fails instead).
STDLIB_DROP = ("_pyrepl/", "pdb.py", "bdb.py", "pydoc.py", "pydoc_data/", "doctest.py", "xmlrpc/", "wsgiref/",
               "pickletools.py", "mailbox.py", "imaplib.py", "smtplib.py", "ftplib.py", "poplib.py",
               "socketserver.py", "trace.py", "tabnanny.py", "pyclbr.py", "modulefinder.py", "zipapp.py",
               "pty.py", "tty.py", "getpass.py", "netrc.py", "this.py", "antigravity.py", "__phello__/",
               "__hello__.py", "turtle.py", "turtledemo/", "idlelib/", "tkinter/", "ensurepip/", "venv/",
               "lib2to3/", "dbm/", "shelve.py", "wave.py", "sched.py")

#: Stand-ins for packages the page imports but does not need: name -> (version, module file in build/stubs/).
STUBS = {"nh3": ("0.0.0+sdpa.stub", "nh3.py")}

#: Imported in the browser only (panel.io.pyodide; without it Panel imports pandas). Their version is
#: Pyodide's (its lock), never pinned here.
BROWSER_EXTRAS = ("pyodide-http",)

#: Pure Python with an optional C speed-up: our pure wheel works when Pyodide's is not at hand.
OPTIONAL_SPEEDUPS = ("pyyaml", "tornado", "markupsafe")

#: Where a package comes from (Package.source):
SOURCES = {
    "project": "built with hatchling from this repository",
    "app": "the page's modules (web/)",
    "slim": "slim wheel repacked from the build environment (bundled JS stripped)",
    "stub": "stub: the page never calls it",
    "pyodide": "from Pyodide's files",
    "pure": "pure wheel pinned to the build environment (PyPI, else repacked)",
    "lock": "pure wheel at the version in Pyodide's lock (PyPI)",
    "runtime": "from Pyodide's CDN at run time",
}


def norm(name: str) -> str:
    """PEP 503 normalised name: the key in pyodide-lock.json."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Package:
    name: str                       # normalised; the lock's key
    source: str                     # a key of SOURCES
    dist: str | None = None         # installed distribution to repack/pin (slim, pure)
    version: str | None = None      # known at planning time: Pyodide's lock, installed metadata, stubs
    keep_sources: bool = False      # bytecode next to the sources (ours) or instead of them
    depends: tuple[str, ...] = ()   # names in this plan (or at run time), as the lock lists them

    @property
    def ships(self) -> bool:
        return self.source != "runtime"

    @property
    def slim_exclude(self) -> re.Pattern | None:
        """For a slim package: the archive paths left out of its wheel."""
        if self.source != "slim":
            return None
        return re.compile(SLIM[self.name].replace("{version}", re.escape(self.version or "")))

    @property
    def stub_file(self) -> Path:
        if self.source != "stub":
            raise PlanError(f"make site: {self.name} is no stub")
        return STUB_DIR / STUBS[self.name][1]

    @property
    def distribution(self) -> str:
        """`dist`, which slim, pure and lock packages have: what their wheel is made or pinned from."""
        if self.dist is None:
            raise PlanError(f"make site: {self.name} ({self.source}) names no distribution")
        return self.dist

    @property
    def known_version(self) -> str:
        """`version`, which every package but ours and those left to the CDN has at planning time."""
        if self.version is None:
            raise PlanError(f"make site: {self.name} ({self.source}) has no version yet")
        return self.version


@dataclass
class Plan:
    packages: dict[str, Package] = field(default_factory=dict)   # sorted by name
    self_hosted: bool = True

    @property
    def shipped(self) -> list[Package]:
        return [p for p in self.packages.values() if p.ships]

    @property
    def at_runtime(self) -> list[str]:
        return [n for n, p in self.packages.items() if not p.ships]



class Metadata(Protocol):
    """What the plan reads about installed distributions (tests pass a fake)."""
    def version(self, dist: str) -> str: ...
    def requires(self, dist: str) -> list[str]: ...
    def has_native_code(self, dist: str) -> bool: ...


class InstalledMetadata:
    """The build environment's distributions (importlib.metadata)."""

    def version(self, dist: str) -> str:
        return md.version(dist)

    def requires(self, dist: str) -> list[str]:
        """Names a distribution depends on unconditionally in Pyodide (extras and other platforms ignored)."""
        from packaging.requirements import Requirement
        env = {"python_version": PYODIDE_PYTHON, "sys_platform": "emscripten", "platform_system": "Emscripten",
               "extra": ""}
        out = []
        for raw in md.requires(dist) or []:
            req = Requirement(raw)
            if req.marker is None or req.marker.evaluate(env):
                out.append(norm(req.name))
        return out

    def has_native_code(self, dist: str) -> bool:
        return any(str(f).endswith((".so", ".pyd")) for f in md.distribution(dist).files or [])


def never_imports() -> list[str]:
    """Top-level import names of NEVER_SHIP, read from installed metadata (Pillow is `PIL`), else the
    distribution name itself."""
    owners: dict[str, set[str]] = {}
    for module, dists in md.packages_distributions().items():
        for dist in dists:
            owners.setdefault(norm(dist), set()).add(module)
    names = set()
    for dist in NEVER_SHIP:
        names |= owners.get(dist, {dist.replace("-", "_")})
    return sorted(n for n in names if n.isidentifier() and not n.startswith("_"))


class PlanError(SystemExit):
    pass


def make_plan(distributions: list[str], pyodide_lock: dict | None, *, self_hosted: bool,
              has_wheel: Callable[[str], bool], meta: Metadata) -> Plan:
    """The packages for the browser.

    distributions: what the app imported in CPython (pre-render), as installed distribution names.
    pyodide_lock: Pyodide's pyodide-lock.json (None when only its CDN is left, at run time).
    has_wheel(name): whether Pyodide's files provide that package's wheel now.
    """
    lock = (pyodide_lock or {}).get("packages", {})
    needed = {norm(d): d for d in distributions}
    for name in (*BUILD_ONLY, *OWN):
        needed.pop(name, None)
    needed.update({n: n for n in BROWSER_EXTRAS})
    never = set(NEVER_SHIP)
    plan: dict[str, Package] = {}

    core = next(n for n, how in OWN.items() if how == "project")
    plan[core] = Package(core, "project", keep_sources=True, depends=tuple(meta.requires(core)))
    plan[APP_PACKAGE] = Package(APP_PACKAGE, "app", keep_sources=True, depends=(core,))
    for name in SLIM:
        plan[name] = Package(name, "slim", dist=needed.get(name, name), version=meta.version(needed.get(name, name)))
    todo = sorted((n for n in needed if n not in plan), reverse=True)
    while todo:
        name = todo.pop()
        if name in plan:
            continue
        if name in never:
            raise PlanError(f"make site: the page would ship {name}, which NEVER_SHIP (build/plan.py) keeps out")
        if name in STUBS:
            plan[name] = Package(name, "stub", version=STUBS[name][0])
        elif name in lock and has_wheel(name):
            entry = lock[name]
            plan[name] = Package(name, "pyodide", version=entry["version"], depends=tuple(entry.get("depends", [])))
            todo.extend(sorted((d for d in entry.get("depends", []) if d not in plan), reverse=True))
        elif name in BROWSER_EXTRAS:
            # not installed here: Pyodide's lock names its version, else its CDN's lock at run time
            plan[name] = (Package(name, "lock", dist=name, version=lock[name]["version"]) if name in lock
                          else Package(name, "runtime"))
        elif meta.has_native_code(needed[name]) and name not in OPTIONAL_SPEEDUPS:
            if self_hosted:     # our pure copy would lack its compiled code: it would not import
                raise PlanError(
                    f"make site: the page imports {name}, which has compiled code, and Pyodide's files have no "
                    f"wheel for it. Add that wheel to the Pyodide distribution; or, in build/plan.py, add "
                    f"{name} to NEVER_SHIP if the page does not need it in the browser, or to OPTIONAL_SPEEDUPS "
                    "if it works without its compiled code")
            plan[name] = Package(name, "runtime")
        else:
            plan[name] = Package(name, "pure", dist=needed[name], version=meta.version(needed[name]))

    available = set(plan)
    done = {}
    for name, pkg in sorted(plan.items()):
        listed = meta.requires(pkg.distribution) if pkg.source in ("slim", "pure") else pkg.depends
        deps = tuple(sorted(d for d in set(listed) if d in available and d != name))
        shipped_never = never & set(deps)
        if shipped_never:
            raise PlanError(f"make site: {name} would pull in {sorted(shipped_never)}, kept out by NEVER_SHIP")
        done[name] = Package(pkg.name, pkg.source, pkg.dist, pkg.version, pkg.keep_sources, deps)
    return Plan(done, self_hosted=self_hosted)
