"""A running explorer for the tests: a server on a free port of 127.0.0.1, serving in a
thread, and the spec it explores (built as ``kmodel check``/``kmodel explore`` build it)."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
import orjson

from jepsen_py.cli.specs import CHECK_SPECS
from jepsen_py.explorer.paths import Explorer
from jepsen_py.explorer.server import ExplorerServer, serve
from spec.framework import Spec

REPLICATION_DEFAULTS = {
    "model": "published-2018",
    "replicas": 2,
    "log_size": 2,
    "max_records": 2,
    "max_epoch": 2,
    "truncation": "kip320",
    "unclean": False,
}
"""``kmodel check replication``'s defaults (its flags without a None default)."""


def build_spec(name: str, bugs: tuple[str, ...] = (), **given: Any) -> tuple[Spec, dict[str, Any]]:
    """Spec ``name`` with its default flags but those ``given`` (click names) and ``bugs``,
    and its parameters' JSON."""
    entry = CHECK_SPECS[name]
    flags: dict[str, Any] = dict.fromkeys(entry.flags)
    if name == "replication":
        flags.update(REPLICATION_DEFAULTS)
    flags.update(given)
    with click.Context(click.Command("explore")):
        spec = entry.build(flags, bugs)
    return spec, entry.params_json(spec.p)  # type: ignore[attr-defined]


@contextmanager
def running_explorer(
    name: str, bugs: tuple[str, ...] = (), **given: Any
) -> Iterator[ExplorerServer]:
    spec, params = build_spec(name, bugs, **given)
    server = serve(Explorer(spec, params), port=0)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def get(server: ExplorerServer, path: str, body: bytes | None = None) -> tuple[int, Any]:
    """(status, JSON) of ``GET path`` (``POST`` with ``body``)."""
    request = urllib.request.Request(server.url.rstrip("/") + path, data=body)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, orjson.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, orjson.loads(err.read())
