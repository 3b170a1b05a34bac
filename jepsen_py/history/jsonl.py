"""The native history format: one JSON object per line (docs/history-format.md).

Read as a stream: one line at a time, parsed with orjson, so a 10 GB history never sits in
memory. A malformed line (not JSON, not an object, a missing or ill-typed field, an unknown
``type``) is rejected with its line number and the reason; reading goes on. Written
incrementally by `JsonlWriter`, one line per op, in the order given.

Fields: ``process``, ``type`` and ``f`` are required; ``index`` defaults to the op's position
in the file and ``time`` to its index; ``key``, ``value`` and ``run`` are optional.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from jepsen_py.history.op import OP_TYPES, Op
from jepsen_py.history.text import NOT_UTF8, open_history
from jepsen_py.history.validate import Rejections, show
from jepsen_py.history.writer import HistoryWriter

_TYPES = ", ".join(sorted(OP_TYPES))


class RecordError(ValueError):
    """One record that is not an op; the message says which field and what is expected."""


def op_from_record(record: Any, ordinal: int, line: int | None) -> Op:
    """Build an `Op` from a decoded JSON object (or a Parquet row), or raise `RecordError`."""
    if not isinstance(record, dict):
        raise RecordError(f"expected a JSON object, got {type(record).__name__}")
    get = record.get
    type_ = get("type")
    if type(type_) is not str or type_ not in OP_TYPES:  # str first: a list is unhashable
        if type_ is None:
            raise RecordError(f"missing field 'type' (one of {_TYPES})")
        raise RecordError(f"unknown type {show(type_)}: expected one of {_TYPES}")
    # `type(x) is int` first: the common case, without the isinstance chain (a bool is an
    # int to isinstance, and is refused below)
    process = get("process")
    if (
        type(process) is not int
        and type(process) is not str
        and (process is None or isinstance(process, bool) or not isinstance(process, int | str))
    ):
        raise RecordError("field 'process' must be an integer or a string (e.g. 3, 'nemesis')")
    f = get("f")
    if (type(f) is not str and not isinstance(f, str)) or not f:
        raise RecordError("field 'f' must be a non-empty string (e.g. 'send', 'read')")
    index = get("index", ordinal)
    if type(index) is not int and (isinstance(index, bool) or not isinstance(index, int)):
        raise RecordError("field 'index' must be an integer")
    time = get("time", index)
    if type(time) is not int and (isinstance(time, bool) or not isinstance(time, int)):
        raise RecordError("field 'time' must be an integer (nanoseconds)")
    key = get("key")
    if key is not None and type(key) is not str and not isinstance(key, str):
        if isinstance(key, bool) or not isinstance(key, int):
            raise RecordError("field 'key' must be a string (or an integer, read as a string)")
        key = str(key)
    run = get("run")
    if run is not None and not isinstance(run, str):
        raise RecordError("field 'run' must be a string")
    return Op(index, time, process, type_, f, key, get("value"), run, line)


def op_to_record(op: Op) -> dict[str, Any]:
    """The JSON object of one op; ``key`` and ``run`` are left out when absent."""
    record: dict[str, Any] = {
        "index": op.index,
        "time": op.time,
        "process": op.process,
        "type": op.type,
        "f": op.f,
    }
    if op.key is not None:
        record["key"] = op.key
    record["value"] = op.value
    if op.run is not None:
        record["run"] = op.run
    return record


def read_jsonl(path: str | os.PathLike[str], rejections: Rejections | None = None) -> Iterator[Op]:
    """Stream the ops of a JSONL history. Malformed lines go to ``rejections`` (or raise
    `HistoryError` when none is given); blank lines are skipped."""
    handle, sink = open_history(path, rejections)
    with handle:
        yield from read_jsonl_lines(handle, sink)


def read_jsonl_lines(lines: Iterable[bytes], rejections: Rejections) -> Iterator[Op]:
    """The ops of a JSONL history's lines (bytes, each with or without its ``\\n``, the
    first line numbered 1): `read_jsonl` without the file, for a history already in
    memory (``io.BytesIO(content)``: Spark's whole-file path hands a file's bytes to a
    worker). Malformed lines go to ``rejections``; blank lines are skipped."""
    ordinal = 0
    loads = orjson.loads
    for number, raw in enumerate(lines, start=1):
        if raw[:1] != b"{" and not raw.strip():  # "{": an op's line, not a blank one
            continue
        try:
            record = loads(raw)  # refuses bytes that are not UTF-8: no decode beforehand
        except orjson.JSONDecodeError as exc:
            rejections.reject(number, _unreadable(raw, exc))
            continue
        try:
            op = op_from_record(record, ordinal, number)
        except RecordError as exc:
            key = record.get("key") if isinstance(record, dict) else None
            rejections.reject(number, str(exc), key=key if isinstance(key, str) else None)
            continue
        ordinal += 1
        yield op


def _unreadable(raw: bytes, exc: orjson.JSONDecodeError) -> str:
    """Why a line orjson refused is rejected: not UTF-8 (`NOT_UTF8`, as every reader
    says), else not JSON."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return NOT_UTF8
    return f"not valid JSON ({exc.args[0]}); one object per line"


class JsonlWriter(HistoryWriter):
    """Append ops to a JSONL history one line at a time.

    ``flush_every=N`` hands the lines to the operating system every N lines, so that a
    process killed mid-run (SIGKILL, OOM) leaves its history on disk up to there; ``None``
    buffers until ``close``. ``fsync=True`` also forces the file to disk on ``close``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        flush_every: int | None = None,
        fsync: bool = False,
    ) -> None:
        if flush_every is not None and flush_every < 1:
            raise ValueError(f"flush_every={flush_every}: flush at least every line (>= 1)")
        self.path = Path(path)
        self._handle: IO[bytes] = open(self.path, "wb")  # noqa: SIM115 - closed in close()
        self.count = 0
        self.flush_every = flush_every
        self.fsync = fsync

    def write(self, op: Op) -> None:
        self._handle.write(orjson.dumps(op_to_record(op)) + b"\n")
        self.count += 1
        if self.flush_every is not None and self.count % self.flush_every == 0:
            self._handle.flush()

    def flush(self) -> None:
        self._handle.flush()

    def close(self) -> None:
        if self._handle.closed:
            return
        self._handle.flush()
        if self.fsync:
            os.fsync(self._handle.fileno())
        self._handle.close()


def write_jsonl(path: str | os.PathLike[str], ops: Iterator[Op] | list[Op]) -> int:
    """Write ``ops`` to ``path``; returns how many were written."""
    with JsonlWriter(path) as writer:
        for op in ops:
            writer.write(op)
        return writer.count
