"""`make serve`: serve _site/ on localhost the way a static host would (MIME types, ETag, gzip).

    python -m tools.serve [--port 8000] [--dir _site]

Any static host works for the built site; this one only adds what a good one does:
`application/wasm` for Pyodide's runtime, revalidation by ETag, and gzip.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import http.server
import os
import sys
import threading
from functools import partial
from pathlib import Path

from build import offline

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

TYPES = {
    ".wasm": "application/wasm",
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".json": "application/json",
    ".webmanifest": "application/manifest+json",
    ".whl": "application/zip",
    ".zip": "application/zip",
    ".svg": "image/svg+xml",
    ".css": "text/css",
    ".html": "text/html",
}
COMPRESSIBLE = {".wasm", ".js", ".mjs", ".json", ".webmanifest", ".svg", ".css", ".html", ".map"}


#: The longest request line served (http.server refuses more than 64 KiB with HTTP 414): a link carries a pasted
#: config.json of up to 100,000 bytes, which percent-encoding can triple.
MAX_REQUEST_LINE = 1 << 20


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **TYPES}

    def handle_one_request(self):
        """http.server's, with MAX_REQUEST_LINE in place of its 64 KiB: a long link is served, a longer one is
        refused with 414 and a sentence saying the limit."""
        try:
            self.raw_requestline = self.rfile.readline(MAX_REQUEST_LINE + 1)
            if len(self.raw_requestline) > MAX_REQUEST_LINE:
                self.requestline, self.request_version, self.command = "", "", ""
                self.send_error(414, f"The link is over {MAX_REQUEST_LINE:,} characters; this server reads at most that")
                return
            if not self.raw_requestline:
                self.close_connection = True
                return
            if not self.parse_request():
                return
            method = getattr(self, "do_" + self.command, None)
            if method is None:
                self.send_error(501, f"Unsupported method ({self.command!r})")
                return
            method()
            self.wfile.flush()
        except TimeoutError as e:
            self.log_error("Request timed out: %r", e)
            self.close_connection = True
    _gzip_cache: dict[tuple[str, float], bytes] = {}
    _lock = threading.Lock()
    bytes_sent = 0          # response bodies, for benchmarks/measure_site.py
    bodies: list[tuple[str, int]] = []    # (URL path with query, bytes) of every 200 with a body

    def log_message(self, fmt, *args):     # quiet unless asked: tests and `make serve` stay readable
        if os.environ.get("SDPA_SERVE_LOG"):
            super().log_message(fmt, *args)

    def end_headers(self):
        self.send_header("Cache-Control", offline.CACHE_CONTROL)
        self.send_header("X-Content-Type-Options", "nosniff")
        super().end_headers()

    def do_GET(self):
        self._respond(body=True)

    def do_HEAD(self):
        self._respond(body=False)

    def _respond(self, body: bool) -> None:
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            if not self.path.split("?")[0].endswith("/"):
                return super().do_GET() if body else super().do_HEAD()   # redirect to the slash
            path = path / "index.html"
        if not path.is_file():
            self.send_error(404, "Not found")
            return
        stat = path.stat()
        etag = '"%s"' % hashlib.sha1(f"{path}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:20]
        data = None
        encoding = None
        if path.suffix in COMPRESSIBLE and "gzip" in self.headers.get("Accept-Encoding", ""):
            key = (str(path), stat.st_mtime_ns)
            with self._lock:
                data = self._gzip_cache.get(key)
                if data is None:
                    data = self._gzip_cache[key] = gzip.compress(path.read_bytes(), compresslevel=6, mtime=0)
            encoding = "gzip"
            etag = etag[:-1] + '-gz"'
        if self.headers.get("If-None-Match") == etag:
            self.send_response(304)
            self.send_header("ETag", etag)
            self.end_headers()
            return
        if data is None:
            data = path.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Length", str(len(data)))
        self.send_header("ETag", etag)
        self.send_header("Vary", "Accept-Encoding")
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.end_headers()
        if body:
            with self._lock:
                SiteHandler.bytes_sent += len(data)
                SiteHandler.bodies.append((self.path, len(data)))
            try:
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass    # the browser went away (page closed, test finished)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def start(directory: Path, port: int = 0, host: str = "127.0.0.1") -> tuple[Server, str]:
    """Serve `directory` in a background thread; return the server and its URL (port 0: any free port)."""
    server = Server((host, port), partial(SiteHandler, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://{host}:{server.server_address[1]}/"


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.serve", description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--dir", type=Path, default=ROOT / "_site")
    args = ap.parse_args()
    if not (args.dir / "index.html").is_file():
        print(f"serve: {args.dir} has no index.html; run `make site` first", file=sys.stderr)
        return 1
    server = Server((args.host, args.port), partial(SiteHandler, directory=str(args.dir)))
    print(f"Serving {args.dir} at http://{'localhost' if args.host == '127.0.0.1' else args.host}:"
          f"{server.server_address[1]}/  (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
