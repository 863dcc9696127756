"""The renderer, last step of the build: index.html from Panel's pre-rendered page (self-hosted URLs, head tags,
the Content-Security-Policy from page_policy.py), each link's first paint file, and the web manifest. The runtime's scripts (boot.js,
worker.js, sw.js, boot.css) are runtime.py's.

The page's name, description and colour come from web/ (web.page, web.theme, recorded by the
pre-render); Panel's and Bokeh's versions from their installed metadata.
"""
from __future__ import annotations

import base64
import hashlib
import html as htmllib
import importlib.metadata as md
import json
import re
from dataclasses import dataclass
from pathlib import Path

from .page_policy import csp, inline_script_hashes
from .prerender import SENTINEL

PANEL_VERSION = md.version("panel")
BOKEH_VERSION = md.version("bokeh")
PANEL_DIST = f"static/panel/{PANEL_VERSION}/dist/"       # what SENTINEL + "<version>/dist/" becomes
BOKEH_DIR = f"static/bokeh/{BOKEH_VERSION}/"
# Panel adds Bokeh's MathJax bundle (1.8 MB of JS, 0.6 MB gzipped, parsed before first paint) to any
# page with an HTML or Markdown pane, in case its text holds TeX. This page typesets its formulas
# with KaTeX and sets disable_math=True on its Markdown, so the bundle stays out; without it Panel
# shows such text as written (Bokeh's MathJax provider reports "failed", nothing is fetched).
# Set to True if a pane ever needs MathJax ($...$ in Markdown/HTML without disable_math).
MATHJAX = False
# BokehJS's WebGL glyphs (bokeh-gl.min.js, parsed before first paint) serve only figures drawn with
# output_backend="webgl"; none is, so the bundle stays out (make_site.py fails if web/ starts using it).
# bokeh-tables stays: panel.min.js requires its module when it loads.
WEBGL = False
BOKEH_CDN = re.compile(r"https://cdn\.bokeh\.org/bokeh/release/(bokeh(?:-[a-z]+)?)-" + re.escape(BOKEH_VERSION)
                       + r"(\.min)?\.js")
ESM_MODEL = re.compile(r'"name":"panel\.models\.esm\.')
# URLs that are names, not requests (SVG and XML namespaces).
NAMESPACES = ("http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink", "http://www.w3.org/1999/xhtml")
URL_ATTR = re.compile(r"""\b(?:src|href)\s*=\s*["']([^"']+)["']""", re.I)
# http(s) URLs, and protocol-relative ones (//host.tld/...) where a URL can start
ABSOLUTE = re.compile(r"""https?://[^\s"'<>)\\]+|(?<=["'(=\s])//[a-z0-9-]+(?:\.[a-z0-9-]+)+(?:[:/][^\s"'<>)\\]*)?""", re.I)


def self_host(page: str) -> str:
    """Every asset URL Panel and Bokeh wrote, pointed at our own copy under static/."""
    page = page.replace(f"{SENTINEL}{PANEL_VERSION}/dist/", "./" + PANEL_DIST)
    page = re.sub(r"""(["'])(?:\./)?static/extensions/panel/""", r"\1./" + PANEL_DIST, page)
    page = BOKEH_CDN.sub(lambda m: f"./{BOKEH_DIR}{m.group(1)}.min.js", page)
    if not MATHJAX:
        page = re.sub(r"""<script[^>]*src=["'][^"']*bokeh-mathjax[^"']*["'][^>]*>\s*</script>\s*""", "", page)
    if not WEBGL:
        page = re.sub(r"""<script[^>]*src=["'][^"']*bokeh-gl[.-][^"']*["'][^>]*>\s*</script>\s*""", "", page)
    # es-module-shims: Panel adds it for ReactiveESM/AnyWidget components, which this page does not
    # use. Its feature detection runs an inline script in a srcdoc iframe whose text depends on the
    # browser, so no hash in the CSP can allow it and every visit would log a violation. Kept (and
    # left to fall back after that refusal) only when the document holds such a component.
    if not ESM_MODEL.search(page):
        page = re.sub(r"""<script type=["']esms-options["']>[^<]*</script>\s*""", "", page)
        page = re.sub(r"""<script[^>]*src=["'][^"']*es-module-shims[^"']*["'][^>]*>\s*</script>\s*""", "", page)
    # Web fonts from Google: the system sans-serif is fine, and nothing leaves the tab.
    page = re.sub(r"""<link[^>]+fonts\.(?:googleapis|gstatic)\.com[^>]*>\s*""", "", page)
    page = re.sub(r"""@import\s+url\([^)]*fonts\.googleapis\.com[^)]*\);?""", "", page)
    # Panel's favicon and touch icon become ours (written by icons.py).
    page = re.sub(r"""<link rel="apple-touch-icon"[^>]*>""", "", page)
    page = re.sub(r"""<link rel="icon"[^>]*>""", "", page)
    return page


#: Where the other links' first paints go (one JSON file each), and the call that draws the first paint.
FIRST_PAINT_DIR = "first"
EMBED_CALL = "root.Bokeh.embed.embed_items(docs_json, render_items);"


def first_paint_files(firsts: dict, out: Path) -> dict:
    """Write each pre-rendered link's document (prerender.first_paints), self-hosted like the page, as
    ``first/<key>.json``; returns ``{key: {"path", "integrity"}}`` for boot.js, which fetches the one
    the visitor's link names and checks it by its hash."""
    (out / FIRST_PAINT_DIR).mkdir(exist_ok=True)
    files = {}
    for key, doc in firsts.items():
        path = f"{FIRST_PAINT_DIR}/{key}.json"
        body = json.dumps({**doc, "docs_json": self_host(doc["docs_json"])}, separators=(",", ":")).encode()
        (out / path).write_bytes(body)
        files[key] = {"path": path, "integrity": "sha256-" + base64.b64encode(hashlib.sha256(body).digest()).decode()}
    return files


EARLY_DIR = "early"


def early_state_files(early: dict, out: Path) -> dict:
    """Write each state of each view's main control before Python is live (early_states.py) as
    ``early/<view>/<position>.html``; returns, per view, what firstpaint.js needs to make the layer's slider
    move: its label, the address's key and the value it writes at each position (null: the default), the
    value shown, the position the view opens at, and each file with its hash (checked when fetched)."""
    table = {}
    for view, st in early.items():
        (out / EARLY_DIR / view).mkdir(parents=True, exist_ok=True)
        files = []
        for i, markup in enumerate(st["html"]):
            path = f"{EARLY_DIR}/{view}/{i}.html"
            body = markup.encode()
            (out / path).write_bytes(body)
            files.append({"path": path, "integrity": "sha256-" + base64.b64encode(hashlib.sha256(body).digest()).decode()})
        table[view] = {"label": st["label"], "key": st["url_key"], "query": st["query"], "shown": st["shown"],
                       "positions": st["positions"],
                       "start": st["positions"].index(st["start"]), "files": files}
    return table


def draw_first_paint_through_boot(page: str) -> str:
    """Panel's page draws its one document as soon as BokehJS has loaded; ours asks boot.js, which
    draws the document of the view the link names instead (templates/firstpaint.js draw, window.sdpaFirstPaint)."""
    if page.count(EMBED_CALL) != 1:
        raise SystemExit(f"make site: Panel's embed call ({EMBED_CALL}) is not in the pre-rendered page once")
    return page.replace(EMBED_CALL, "window.sdpaFirstPaint(root.Bokeh, docs_json, render_items);")


def local_paths(page: str) -> list[str]:
    """Site-relative paths of the files the HTML references (query strings dropped)."""
    out = []
    for url in URL_ATTR.findall(page):
        url = htmllib.unescape(url)
        if url.startswith(("#", "data:", "blob:", "javascript:", "mailto:")) or ABSOLUTE.match(url) or not url:
            continue
        out.append(url.split("?")[0].split("#")[0].removeprefix("./"))
    # stylesheets and modules named inside the document's JSON (model properties)
    out += re.findall(r"(?:\./)?(" + re.escape(PANEL_DIST) + r"[^\s\"'?#<>\\]+)", page)
    return sorted(set(out))


# Shown when boot.js itself did not run (missing, damaged: it carries an integrity hash), since
# then nothing else can say so. Inline, so it needs no file of its own.
BOOT_FALLBACK = (
    'addEventListener("DOMContentLoaded", function () {\n'
    '  if (window.sdpaLab) return;\n'
    '  var d = document.createElement("div");\n'
    '  d.id = "sdpa-boot"; d.className = "sdpa-error"; d.setAttribute("role", "alert");\n'
    "  d.innerHTML = '<strong>The app failed to start</strong><p class=\"sdpa-problem\">boot.js did not load: it is "
    "missing or damaged, or the download failed.</p><p class=\"sdpa-actions\"><button type=\"button\">Retry</button></p>';\n"
    '  d.querySelector("button").addEventListener("click", function () { location.reload(); });\n'
    '  document.body.appendChild(d);\n'
    '});\n')
@dataclass(frozen=True)
class Identity:
    """What the page is called and how it looks from outside: from web/ (web.page, web.theme)."""
    title: str
    short_name: str
    description: str
    theme_color: str
    background_color: str = "#ffffff"

    @property
    def app_id(self) -> str:
        """The web manifest's `id`: stable whatever start_url or the host's sub-path becomes."""
        return re.sub(r"[^a-z0-9]+", "-", self.short_name.lower()).strip("-")


@dataclass(frozen=True)
class Preview:
    """The link-preview image (Open Graph, Twitter cards), drawn by icons.py."""
    path: str
    width: int
    height: int
    alt: str


# Absolute URLs that name something (link previews fetched by other sites), not requests of the page.
NOT_REQUESTS = re.compile(r"""<meta\s+(?:property|name)="(?:og|twitter):[^"]*"\s+content="[^"]*"\s*/?>""", re.I)


def foreign_urls(text: str) -> list[str]:
    """Absolute URLs that would be requests to another origin (namespaces and link-preview tags are not)."""
    text = NOT_REQUESTS.sub("", text)
    return sorted({u for u in ABSOLUTE.findall(text) if not u.startswith(NAMESPACES)})


def head_tags(identity: Identity, preview: Preview, site_url: str | None = None) -> list[str]:
    """Description, theme colour, link previews and icons. Link-preview images need an absolute URL
    for most sites that fetch them: given `site_url` (where the site is deployed), they get one;
    without it they stay relative, which every URL of this site is."""
    attr = lambda value: htmllib.escape(str(value), quote=True)    # noqa: E731
    image = (site_url.rstrip("/") + "/" if site_url else "./") + preview.path
    social = {
        "og:type": "website", "og:site_name": identity.short_name, "og:title": identity.title,
        "og:description": identity.description, "og:image": image, "og:image:type": "image/png",
        "og:image:width": preview.width, "og:image:height": preview.height, "og:image:alt": preview.alt,
        **({"og:url": site_url} if site_url else {}),
    }
    twitter = {"twitter:card": "summary_large_image", "twitter:title": identity.title,
               "twitter:description": identity.description, "twitter:image": image,
               "twitter:image:alt": preview.alt}
    return [
        f'<meta name="description" content="{attr(identity.description)}">',
        f'<meta name="theme-color" content="{attr(identity.theme_color)}">',
        *(f'<meta property="{k}" content="{attr(v)}">' for k, v in social.items()),
        *(f'<meta name="{k}" content="{attr(v)}">' for k, v in twitter.items()),
        '<link rel="manifest" href="./manifest.webmanifest">',
        '<link rel="icon" href="./icons/icon.svg" type="image/svg+xml">',
        '<link rel="apple-touch-icon" href="./icons/icon-192.png">',
        '<link rel="license" href="./notices.html">',
    ]


LOG_LEVEL = re.compile(r'<script type="text/javascript">\s*Bokeh\.set_log_level\("info"\);\s*</script>')
LIBRARY = re.compile(r'<script type="text/javascript" src="([^"]+)"></script>')


def deferred_scripts(page: str) -> str:
    """Panel's page loads BokehJS, its widgets, KaTeX, Bootstrap and Panel's JS in <head>, each blocking
    the first paint until it has downloaded and run (seconds on a phone). Deferred, they run in the
    same order once the HTML is parsed, before DOMContentLoaded, where Panel's page draws its document:
    the page's HTML first paint (html_paint.py) shows meanwhile. Panel's one inline call into BokehJS
    in <head> (its log level, which is "info" already) would run before BokehJS: it goes."""
    page, n = LOG_LEVEL.subn("", page)
    if n != 1:
        raise SystemExit("make site: Panel's Bokeh.set_log_level script is not in its page once (did its template change?)")
    page, n = LIBRARY.subn(r'<script type="text/javascript" src="\1" defer></script>', page)
    if not n:
        raise SystemExit("make site: no library <script src> in Panel's page to defer")
    return page


LOADING_BODY = '<body class="pn-loading pn-arc">'


def unveiled(page: str) -> str:
    """Panel's page opens with its body loading: a spinner and a half-transparent veil over everything (text
    at about half its contrast, nothing clickable) until the worker's document arrives, seconds later on a
    phone. Under it is the linked view, drawn in full: the veil goes, and the boot panel says the page is a
    preview until it is live (boot.js still clears the class, for a page whose HTML kept it)."""
    if page.count(LOADING_BODY) != 1:
        raise SystemExit(f"make site: Panel's page has no {LOADING_BODY} once (did its template change?)")
    return page.replace(LOADING_BODY, "<body>", 1)


def finish(page: str, *, identity: Identity, preview: Preview, extra_origins: tuple[str, ...] = (),
           site_url: str | None = None) -> str:
    """Panel's pre-rendered page becomes ours: policy first, then the head tags and our boot script."""
    head = "\n".join([
        '<meta http-equiv="Content-Security-Policy" content="@@CSP@@">',
        '<meta name="referrer" content="no-referrer">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        *head_tags(identity, preview, site_url),
        '<link rel="stylesheet" href="./boot.css">',
        f"<script>{BOOT_FALLBACK}</script>",
        # first script of the page: the Python worker starts while BokehJS is still downloading
        '<script src="./boot.js"></script>',
    ])
    # Panel's own description/viewport tags, if any, give way to ours
    page = re.sub(r"""<meta\s+name=["'](?:description|viewport)["'][^>]*>\s*""", "", page)
    # CSP must come before anything it governs: right after <meta charset>.
    page = re.sub(r"(<meta charset=[^>]*>)", lambda m: m.group(1) + "\n" + head, page, count=1)
    # Panel's worker handler (an inline script creating the Worker) gives way to ours (in <head>).
    page, n = re.subn(r"<script[^>]*>(?:(?!</script>).)*new Worker\((?:(?!</script>).)*</script>",
                      "", page, count=1, flags=re.S)
    if n != 1:
        raise SystemExit("make site: Panel's worker handler script not found in the pre-rendered page")
    # the policy names the page's final inline scripts by hash
    return page.replace("@@CSP@@", csp(extra_origins, inline_script_hashes(page)), 1)


def manifest(identity: Identity, icons: list[dict]) -> str:
    """The web manifest: installable, every URL relative to the site's folder."""
    return json.dumps({
        "id": identity.app_id,
        "name": identity.title, "short_name": identity.short_name, "description": identity.description,
        "start_url": "./", "scope": "./", "display": "standalone",
        "background_color": identity.background_color, "theme_color": identity.theme_color,
        "icons": icons,
    }, indent=1) + "\n"
