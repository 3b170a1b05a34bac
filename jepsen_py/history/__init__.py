"""Histories: the operation record, streaming readers and writers, importers.

The format is docs/history-format.md's: one JSON object per line with `index`, `time`
(nanoseconds), `process`, `type` (invoke | ok | fail | info), `f`, `key`, `value`, and an
optional `run`.

Every reader streams `Op`s and sends malformed lines to a `Rejections` sink (file, line,
reason) instead of stopping. `FORMATS` names each readable format with its reader and the
`Conventions` its events follow; `detect_format` picks one from a path's extension, or its
first line when the extension says nothing.

Each format's module is imported when its reader first runs (or one of its names is taken
from here): checking a Porcupine log never imports the EDN or JSONL readers, nor pyarrow.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from jepsen_py.history.files import Listing, format_by_name, list_histories
from jepsen_py.history.op import OP_TYPES, Op
from jepsen_py.history.validate import (
    ETCD,
    KNOSSOS,
    NATIVE,
    PORCUPINE_KV,
    Conventions,
    HistoryError,
    Rejection,
    Rejections,
    validate,
)

if TYPE_CHECKING:
    from jepsen_py.history.edn import read_edn
    from jepsen_py.history.jsonl import JsonlWriter, read_jsonl, write_jsonl
    from jepsen_py.history.parquet import ParquetHistoryWriter, read_parquet, write_parquet
    from jepsen_py.history.porcupine import read_etcd_log, read_kv

Reader = Callable[[str | os.PathLike[str], Rejections | None], Iterator[Op]]

_HOMES = {
    "read_jsonl": "jepsen_py.history.jsonl",
    "write_jsonl": "jepsen_py.history.jsonl",
    "JsonlWriter": "jepsen_py.history.jsonl",
    "read_edn": "jepsen_py.history.edn",
    "read_etcd_log": "jepsen_py.history.porcupine",
    "read_kv": "jepsen_py.history.porcupine",
    "read_parquet": "jepsen_py.history.parquet",
    "write_parquet": "jepsen_py.history.parquet",
    "ParquetHistoryWriter": "jepsen_py.history.parquet",
}
"""Where each reader and writer lives; imported on first use (PEP 562). pyarrow, which the
Parquet module imports, takes a fifth of a second; the others a millisecond or less each."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


def _reader(name: str) -> Reader:
    """The reader ``name`` (one of `_HOMES`), its module imported when it first reads."""

    def read(path: str | os.PathLike[str], rejections: Rejections | None = None) -> Iterator[Op]:
        reader: Reader = __getattr__(name)
        return reader(path, rejections)

    read.__name__ = read.__qualname__ = name
    return read


@attrs.frozen
class Format:
    """A readable history format: its name (the CLI's ``--format``), its reader, and what
    its events mean (`Conventions`)."""

    name: str
    read: Reader
    conventions: Conventions
    description: str


FORMATS: dict[str, Format] = {
    f.name: f
    for f in (
        Format("jsonl", _reader("read_jsonl"), NATIVE, "this project's JSON Lines history"),
        Format("parquet", _reader("read_parquet"), NATIVE, "this project's history as Parquet"),
        Format("edn", _reader("read_edn"), KNOSSOS, "a Jepsen/Knossos EDN history"),
        Format("porcupine-etcd", _reader("read_etcd_log"), ETCD, "a Porcupine/Jepsen etcd log"),
        Format(
            "porcupine-kv", _reader("read_kv"), PORCUPINE_KV, "a Porcupine key-value EDN history"
        ),
    )
}


def detect_format(path: str | os.PathLike[str]) -> str:
    """The format of ``path``: by extension, else by its first non-blank line (a JSON object,
    an etcd log event, an EDN map: a key-value one when it has ``:key``). Raises
    `HistoryError` when neither tells."""
    p = Path(path)
    by_extension = format_by_name(p.name)
    if by_extension is not None:
        return by_extension
    return detect_format_by_content(p)


def detect_format_by_content(path: str | os.PathLike[str]) -> str:
    """The format a file's first non-blank line looks like (see `detect_format`)."""
    p = Path(path)
    try:
        with open(p, "rb") as handle:
            if handle.read(4) == b"PAR1":
                return "parquet"
            handle.seek(0)
            for raw in handle:
                line = raw.decode("utf-8", errors="replace").strip()
                if not line or line.startswith(";"):
                    continue
                if line.startswith('{"'):
                    return "jsonl"
                if "jepsen.util" in line:
                    return "porcupine-etcd"
                if line.startswith(("{:", "[{", "[")):
                    return "porcupine-kv" if ":key" in line else "edn"
                break
    except OSError as exc:
        raise HistoryError(f"{p}: cannot open: {exc.strerror}") from exc
    raise HistoryError(
        f"{p}: cannot tell the history format from its name or first line; pass --format "
        f"({', '.join(FORMATS)})"
    )


def history_format(path: str | os.PathLike[str], fmt: str | None = None) -> str:
    """The format ``path`` is read in: ``fmt``, or the detected one when None. Raises
    `HistoryError` for a name that is none of `FORMATS`."""
    name = fmt or detect_format(path)
    if name not in FORMATS:
        raise HistoryError(f"unknown history format {name!r}: expected one of {', '.join(FORMATS)}")
    return name


def read_history(
    path: str | os.PathLike[str], fmt: str | None = None, rejections: Rejections | None = None
) -> Iterator[Op]:
    """Stream the ops of ``path`` in format ``fmt`` (detected when None)."""
    return FORMATS[history_format(path, fmt)].read(path, rejections)


__all__ = [
    "ETCD",
    "FORMATS",
    "KNOSSOS",
    "NATIVE",
    "OP_TYPES",
    "PORCUPINE_KV",
    "Conventions",
    "Format",
    "HistoryError",
    "JsonlWriter",
    "Listing",
    "Op",
    "ParquetHistoryWriter",
    "Rejection",
    "Rejections",
    "detect_format",
    "detect_format_by_content",
    "format_by_name",
    "history_format",
    "list_histories",
    "read_edn",
    "read_etcd_log",
    "read_history",
    "read_jsonl",
    "read_kv",
    "read_parquet",
    "validate",
    "write_jsonl",
    "write_parquet",
]
