"""The explorer's HTTP server: the page and a small JSON API over ``paths.Explorer``.

Local only (127.0.0.1), standard library only (``http.server``, one thread a request). Every
request names its state by path, so the server holds no session:

- ``GET /``: the page (``page.html``: HTML, CSS and JavaScript in one file, nothing loaded
  from the network);
- ``GET /api/spec``: the spec, its parameters, actions and properties;
- ``GET /api/state?init=I&path=i,j,k``: the state that path reaches (its cells, JSON,
  invariants), the path so far, and the enabled steps, each with the index to append;
- ``GET /api/counterexample``: the model checker's shortest counterexample as a path;
- ``POST /api/trace``: a trace file of ``kmodel check --trace-json`` as a path (and the
  property it violates, and where a liveness lasso's cycle starts).

A bad path or trace is a 400 whose JSON ``error`` says what is wrong.
"""

from __future__ import annotations

import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs
import orjson

from jepsen_py.explorer.paths import Explorer, PathError

MAX_TRACE_BYTES = 20 * 1024 * 1024
"""The largest trace file ``POST /api/trace`` reads."""


def page() -> bytes:
    """The explorer's page, shipped beside this module."""
    return resources.files("jepsen_py.explorer").joinpath("page.html").read_bytes()


def parse_path(text: str) -> tuple[int, ...]:
    """``"2,0,5"`` -> ``(2, 0, 5)``; empty -> ``()``."""
    text = text.strip()
    if not text:
        return ()
    try:
        path = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise PathError(
            f"path {text!r} is not a comma-separated list of transition indices (like 2,0,5)"
        ) from None
    if any(choice < 0 for choice in path):
        raise PathError(f"path {text!r} has a negative index")
    return path


def parse_init(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise PathError(f"init {text!r} is not the index of an initial state (like 0)") from None


class ExplorerServer(ThreadingHTTPServer):
    """An HTTP server bound to one ``Explorer``. Searches for a counterexample are run one
    at a time (the first computes it, the others wait for its result)."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], explorer: Explorer) -> None:
        super().__init__(address, Handler)
        self.explorer = explorer
        self.search_lock = threading.Lock()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}/"


class Handler(BaseHTTPRequestHandler):
    server: ExplorerServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the terminal shows the URL, not one line a click."""

    def send_body(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def send_json(self, payload: Any, status: HTTPStatus = HTTPStatus.OK) -> None:
        self.send_body(status, orjson.dumps(payload), "application/json")

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = {key: values[-1] for key, values in parse_qs(url.query).items()}
        explorer = self.server.explorer
        try:
            if url.path in ("/", "/index.html"):
                self.send_body(HTTPStatus.OK, page(), "text/html; charset=utf-8")
            elif url.path == "/api/spec":
                self.send_json(explorer.describe())
            elif url.path == "/api/state":
                init = parse_init(query.get("init", "0"))
                self.send_json(explorer.view(init, parse_path(query.get("path", ""))))
            elif url.path == "/api/counterexample":
                with self.server.search_lock:
                    found = explorer.counterexample()
                self.send_json(attrs.asdict(found))
            else:
                self.send_json(
                    {"error": f"no such page {url.path}; the API is under /api/"},
                    HTTPStatus.NOT_FOUND,
                )
        except PathError as err:
            self.send_json({"error": str(err)}, HTTPStatus.BAD_REQUEST)

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        if url.path != "/api/trace":
            self.send_json({"error": f"cannot POST to {url.path}"}, HTTPStatus.NOT_FOUND)
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_TRACE_BYTES:
            self.send_json(
                {"error": f"the trace file is over {MAX_TRACE_BYTES:,} bytes"},
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            )
            return
        body = self.rfile.read(length)
        try:
            try:
                payload = orjson.loads(body)
            except orjson.JSONDecodeError as err:
                raise PathError(f"the trace file is not JSON: {err}") from None
            loaded = self.server.explorer.path_of_trace_file(payload)
        except PathError as err:
            self.send_json({"error": str(err)}, HTTPStatus.BAD_REQUEST)
            return
        self.send_json(attrs.asdict(loaded))


def serve(explorer: Explorer, port: int = 0, host: str = "127.0.0.1") -> ExplorerServer:
    """A server for ``explorer`` bound to ``host:port`` (0: any free port), not yet serving:
    call ``serve_forever`` (in a thread, for a test)."""
    return ExplorerServer((host, port), explorer)
