"""`evo view DIR`: a small read-only web server showing the page of a running campaign.

It serves the page (`/`), its fingerprint (`/state.json`, polled by the page to learn that a
part landed), and the files inside DIR under `/files/` (figures, campaign.json, parts). The
page is re-rendered only when the fingerprint changes, from parts kept in memory.

Why it is safe to leave running on a laptop:
  - It listens on loopback unless told otherwise, and then refuses any request whose Host
    header is not a loopback name, so a web page elsewhere cannot read it by rebinding DNS.
  - It answers GET and HEAD only and writes nothing.
  - A file is served only when its real path (symlinks resolved) lies inside DIR, no part
    of its name is `..` or hidden, and it is a regular file; everything else is 404 / 403.
    Files go out with a sandboxing Content-Security-Policy: an HTML file in DIR runs no
    script in this origin.
"""

from __future__ import annotations

import errno
import http.server
import json
import mimetypes
import socket
import sys
import threading
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from evo.analysis import html_page, html_report, snapshot

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
LOOPBACK_NAMES = {"127.0.0.1", "localhost", "::1"}
FILES = "/files/"


class Page:
    """The page of one folder, rendered again when the folder's fingerprint changes."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._reader = snapshot.PartReader()
        self._lock = threading.Lock()
        self._stamp: str | None = None
        self._html = ""

    def html(self) -> bytes:
        with self._lock:  # one render at a time; the others wait for its result
            stamp = snapshot.fingerprint(self.directory)
            if stamp != self._stamp:
                try:
                    self._html = html_report.render(self.directory, live=True, reader=self._reader)
                    self._stamp = stamp
                except Exception as error:  # noqa: BLE001 (a bug must not take the page down)
                    self._stamp = None  # try again on the next request
                    return _error_page(self.directory, stamp, error)
            return self._html.encode()


def _error_page(directory: Path, stamp: str, error: Exception) -> bytes:
    """Returns a live page that says the render failed and keeps polling for the next part."""
    body = (f"<h1>{html_page.esc(directory.name)}</h1>" + html_page.notes(
        [f"the page could not be made from the folder as it stands ({type(error).__name__}: "
         f"{error}); it is tried again when the next part lands"]))
    return html_page.document(f"Results {directory.name}", body, stamp, live=True).encode()


def resolve_file(root: Path, request_path: str) -> tuple[int, Path | None]:
    """Returns (200, path) for a regular file inside `root` named by `request_path` (the part
    after /files/, percent-decoded), else (403 or 404, None)."""
    if "\x00" in request_path or "\\" in request_path or request_path.startswith("/"):
        return 403, None
    parts = PurePosixPath(request_path).parts
    if not parts or any(p in ("..", ".") or p.startswith(".") for p in parts):
        return 403 if ".." in parts else 404, None
    target = root.joinpath(*parts)
    try:
        real = target.resolve(strict=True)
    except (OSError, RuntimeError):
        return 404, None
    if not real.is_relative_to(root) or real == root:
        return 403, None
    return (200, real) if real.is_file() else (404, None)


def handler_for(page: Page, root: Path, check_host: bool):
    """Returns the request handler class serving `page` and the files under `root`."""

    class Handler(http.server.BaseHTTPRequestHandler):
        server_version = "KernelEvo-view"
        protocol_version = "HTTP/1.0"

        def do_HEAD(self) -> None:  # noqa: N802 (the stdlib's naming)
            self._answer(send_body=False)

        def do_GET(self) -> None:  # noqa: N802
            self._answer(send_body=True)

        def _answer(self, send_body: bool) -> None:
            if check_host and _host_name(self.headers.get("Host", "")) not in LOOPBACK_NAMES:
                return self._send(403, b"forbidden: not a loopback Host\n", "text/plain", send_body)
            path = unquote(urlsplit(self.path).path)
            if path in ("/", "/index.html", "/report.html"):
                return self._send(200, page.html(), "text/html; charset=utf-8", send_body)
            if path == "/state.json":
                state = json.dumps({"stamp": snapshot.fingerprint(root)}).encode()
                return self._send(200, state, "application/json", send_body)
            if path.startswith(FILES):
                status, found = resolve_file(root, path[len(FILES):])
                if found is not None:
                    kind = mimetypes.guess_type(found.name)[0] or "application/octet-stream"
                    return self._send(200, found.read_bytes(), kind, send_body, sandbox=True)
                return self._send(status, b"not served\n", "text/plain", send_body)
            return self._send(404, b"not found\n", "text/plain", send_body)

        def _send(self, status: int, body: bytes, kind: str, send_body: bool,
                  sandbox: bool = False) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            if sandbox:
                self.send_header("Content-Security-Policy", "sandbox")
            self.end_headers()
            if send_body:
                self.wfile.write(body)

        def log_message(self, format: str, *args) -> None:  # noqa: A002 (the stdlib's name)
            pass  # the page polls every html_page.POLL_MS: that would fill the terminal

    return Handler


def _host_name(header: str) -> str:
    """Returns the host of a Host header without its port ("[::1]:80" -> "::1")."""
    if header.startswith("["):
        return header[1:].split("]", 1)[0]
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def make_server(directory: Path | str, host: str = DEFAULT_HOST,
                port: int = DEFAULT_PORT) -> http.server.ThreadingHTTPServer:
    """Returns a server (not yet serving) for `directory`; port 0 picks a free one. A port
    in use raises OSError saying so and suggesting --port 0."""
    root = Path(directory).resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"no results folder at {directory}")
    page = Page(root)
    handler = handler_for(page, root, check_host=host in LOOPBACK_NAMES)
    server_class = http.server.ThreadingHTTPServer
    if ":" in host:
        server_class = type("ThreadingHTTPServerV6", (server_class,),
                            {"address_family": socket.AF_INET6})
    try:
        server = server_class((host, port), handler)
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            raise
        raise OSError(f"port {port} on {host} is in use (another `evo view`?): choose another "
                      "with --port N, or --port 0 for any free port") from None
    server.daemon_threads = True
    return server


def main(directory: Path | str, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> None:
    """Serves until interrupted, after printing the address (port 0: a free one)."""
    server = make_server(directory, host, port)
    bound_host, bound_port = server.server_address[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    print(f"serving {Path(directory).resolve()} at http://{shown}:{bound_port}/ "
          "(read-only; Ctrl-C stops)", flush=True)
    if host not in LOOPBACK_NAMES:
        print(f"warning: listening on {host}, not loopback: anyone who can reach this machine "
              "can read the results", file=sys.stderr, flush=True)
    try:
        server.serve_forever(poll_interval=0.25)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
