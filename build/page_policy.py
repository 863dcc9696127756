"""What the page may load and run: its Content-Security-Policy (inline scripts allowed one by one, by hash; the
worker runs under it too) and the integrity hashes on its own scripts and stylesheets, so that a damaged or
missing file is refused and named instead of running half a script.
"""
from __future__ import annotations

import base64
import hashlib
import re


def csp(extra_origins: tuple[str, ...] = (), script_hashes: tuple[str, ...] = ()) -> str:
    """The page's policy. The worker runs under it too: boot.js starts it from a blob: URL, and such a
    worker inherits its document's policy (a worker loaded from a URL would get its response's)."""
    more = "".join(" " + o for o in extra_origins)
    hashes = "".join(f" '{h}'" for h in script_hashes)
    # Inline scripts are allowed one by one, by hash. 'unsafe-eval': Panel's panel.min.js and BokehJS
    # compile small functions at run time (without it: EvalError, and the page never becomes ready);
    # 'wasm-unsafe-eval': Pyodide's WebAssembly. blob: only in worker-src, for the worker itself: it runs
    # its checked copies of Pyodide's scripts by eval, so no blob: script can run (a page with Panel's
    # ReactiveESM components, which it imports from blob: URLs, would need blob: in script-src again).
    # All fetching stays on this origin.
    return "; ".join([
        "default-src 'self'",
        f"script-src 'self'{hashes} 'unsafe-eval' 'wasm-unsafe-eval'{more}",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        f"connect-src 'self'{more}",
        "worker-src 'self' blob:",
        "manifest-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'none'",
    ])


INLINE_SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script>", re.S | re.I)


def inline_script_hashes(page: str) -> tuple[str, ...]:
    """'sha256-...' of every inline script the browser would run (not JSON data blocks)."""
    out = []
    for attrs, body in INLINE_SCRIPT.findall(page):
        if re.search(r"\bsrc\s*=", attrs, re.I):
            continue
        kind = re.search(r"""\btype\s*=\s*["']([^"']*)["']""", attrs, re.I)
        if kind and kind[1].lower() not in ("text/javascript", "application/javascript", "module", ""):
            continue
        out.append("sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode())
    return tuple(dict.fromkeys(out))


LOCAL_TAG = re.compile(r"""<(script|link)\b([^>]*?)\s(src|href)=(["'])(\./[^"']+)\4([^>]*)>""", re.I)


def with_integrity(page: str, read) -> str:
    """Every local script and stylesheet tag gains integrity="sha256-...": a damaged or missing file
    is refused and fires an error event (boot.js names it) instead of running half a script.
    `read(path)` returns a site file's bytes."""
    def add(m: re.Match) -> str:
        tag, before, attr, q, url, after = m.groups()
        if "integrity=" in m.group(0) or (tag.lower() == "link" and "stylesheet" not in (before + after)):
            return m.group(0)
        digest = base64.b64encode(hashlib.sha256(read(url[2:].split("?")[0].split("#")[0])).digest()).decode()
        return f'<{tag}{before} {attr}={q}{url}{q} integrity="sha256-{digest}"{after}>'
    return LOCAL_TAG.sub(add, page)
