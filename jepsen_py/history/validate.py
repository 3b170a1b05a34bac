"""What a well-formed history is, and what its events mean to a checker.

Well-formed (Jepsen's and Knossos's rules): each client process runs one operation at a
time, so its events alternate ``invoke`` then one completion (``ok``, ``fail`` or ``info``)
of the same ``f`` and ``key``; a process whose operation ended ``info`` never invokes again
(the client goes on as a new process). An invocation still pending at the end of the history
is legal: it is indeterminate, like ``info``.

`validate` checks this as a stream: a line that breaks a rule is rejected with its file, line
number and the reason, and the check of everything else goes on. The nemesis (and any other
non-client process) is passed through unchecked: its ``info`` lines are faults, not
operations.

`Conventions` records what a source format's events mean where formats disagree, so an
importer can stay faithful to its source and the checker still reads it right:

- Knossos: a read that completed ``ok`` with value nil observed nothing and constrains
  nothing (Knossos's register model accepts any value for a nil read);
- Porcupine's etcd logs: a ``fail`` cas completed: it compared, found another value and did
  not apply; elsewhere ``fail`` means the operation had no effect and constrains nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import attrs

from jepsen_py.history.op import Op

MESSAGE_VALUE_CHARS = 300
"""Values quoted in messages are cut to this many characters."""


def clip(text: str, limit: int = MESSAGE_VALUE_CHARS) -> str:
    """``text`` cut to ``limit`` characters, marked when cut: a message never quotes a
    megabyte of someone's value back at them."""
    if len(text) <= limit:
        return text
    return f"{text[: limit - 30]}... ({len(text)} characters)"


def show(value: object, limit: int = MESSAGE_VALUE_CHARS) -> str:
    """``repr(value)`` for a message, cut to ``limit`` characters."""
    return clip(repr(value), limit)


class HistoryError(ValueError):
    """A history that cannot be read at all (missing file, unknown format), or a malformed
    line when the caller did not ask for rejected lines to be collected."""


@attrs.frozen(slots=True)
class Rejection:
    """A line left out of the check, with the reason. ``key`` is the key the line was about,
    when it could be parsed far enough to know (its key's verdict can then not be OK)."""

    path: str
    line: int | None
    reason: str
    key: Any = None
    run: str | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "reason": self.reason, "key": self.key}


@attrs.frozen(slots=True)
class Conventions:
    """What a format's events mean where formats disagree (see the module docstring)."""

    name: str
    nil_read_constrains: bool = True
    """False (Knossos): an ``ok`` read of nil observed nothing and is left out of the check.
    True: it means the register had no value (the initial value is nil)."""
    fail_completes: frozenset[str] = frozenset()
    """The ``f`` whose ``fail`` completion is a completed operation that observed the state
    (Porcupine's etcd logs: ``cas``, a compare that found another value). Any other ``fail``
    had no effect and constrains nothing."""


NATIVE = Conventions("native")
"""This project's JSONL/Parquet histories (docs/history-format.md): Jepsen's meaning of every
type."""
KNOSSOS = Conventions("knossos", nil_read_constrains=False)
"""Jepsen/Knossos EDN histories (`jepsen_py.history.edn`)."""
ETCD = Conventions("porcupine-etcd", nil_read_constrains=True, fail_completes=frozenset({"cas"}))
"""Porcupine's etcd logs (`jepsen_py.history.porcupine`)."""
PORCUPINE_KV = Conventions("porcupine-kv")
"""Porcupine's key-value histories (`jepsen_py.history.porcupine`)."""


class Rejections:
    """Collects rejected lines; raises at the first one when ``strict``."""

    def __init__(self, path: str, *, strict: bool = False) -> None:
        self.path = path
        self.strict = strict
        self.items: list[Rejection] = []

    def reject(self, line: int | None, reason: str, *, key: Any = None, run: Any = None) -> None:
        rejection = Rejection(self.path, line, clip(reason, 2 * MESSAGE_VALUE_CHARS), key, run)
        if self.strict:
            raise HistoryError(str(rejection))
        self.items.append(rejection)

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Rejection]:
        return iter(self.items)


def _where(op: Op) -> str:
    return f"line {op.line}" if op.line is not None else f"index {op.index}"


EVENT_FS: frozenset[str] = frozenset({"process"})
"""Client ops logged once, ``ok``, when they happened, with no invocation: a consumer's
``process`` (the application finished processing records, docs/history-format.md). They
neither start nor complete an operation, so they pass whatever the process has pending."""
LOCAL_FS: frozenset[str] = frozenset({"seek", "pause", "resume"})
"""A consumer's calls that take effect at once, in the client, without a request
(``KafkaConsumer.seek``, ``pause``, ``resume``): an ``invoke`` and its ``ok`` (or the ``ok``
alone) logged when the application made the call, which may be while the process has an
op in flight (an asynchronous commit). They neither start nor complete an operation."""


def _place(where: int) -> str:
    """`_where` of an op kept as an int: its line, or ``-1 - index`` when it has none."""
    return f"line {where}" if where >= 0 else f"index {-1 - where}"


def validate(ops: Iterable[Op], rejections: Rejections) -> Iterator[Op]:
    """Yield the ops of a well-formed history, rejecting (with the reason) every line that
    breaks the one-op-at-a-time rule of its process. Streams: it holds one pending op per
    process and, of every process whose op ended info, where (an int: a 10 GB history has
    millions of them), never the history."""
    pending: dict[tuple[Any, Any], Op] = {}
    crashed: dict[Any, dict[Any, int]] = {}  # run -> process -> where its info op was
    for op in ops:
        if not op.is_client:
            yield op
            continue
        who = (op.run, op.process)
        if op.f in EVENT_FS:
            if op.type != "ok":
                rejections.reject(
                    op.line,
                    f"{op.f!r} is logged once, as ok, when the application finished "
                    f"processing; a {op.type!r} line of it means nothing: log ok, or leave it "
                    "out (a consumer killed before it finished logs no process line)",
                    key=op.key,
                    run=op.run,
                )
                continue
            yield op
            continue
        if op.f in LOCAL_FS:
            if op.type not in ("invoke", "ok"):
                rejections.reject(
                    op.line,
                    f"{op.f!r} takes effect at once in the client: log an invoke and its ok "
                    f"(or the ok alone); a {op.type!r} line of it means nothing",
                    key=op.key,
                    run=op.run,
                )
                continue
            yield op
            continue
        if op.type == "invoke":
            gone = crashed.get(op.run)
            if gone is not None and op.process in gone:
                rejections.reject(
                    op.line,
                    f"process {op.process!r} invokes again, but its op at "
                    f"{_place(gone[op.process])} ended info (indeterminate); a process whose "
                    "op ends info never invokes again: give the client a new process id",
                    key=op.key,
                    run=op.run,
                )
                continue
            if who in pending:
                rejections.reject(
                    op.line,
                    f"process {op.process!r} invokes twice without completing: its "
                    f"{pending[who].f!r} invoked at {_where(pending[who])} has no "
                    "completion before this line; add the missing ok/fail/info line",
                    key=op.key,
                    run=op.run,
                )
                continue
            pending[who] = op
            yield op
            continue
        invoked = pending.get(who)
        if invoked is None:
            rejections.reject(
                op.line,
                f"{op.type} of {op.f!r} by process {op.process!r} completes nothing: the "
                "process has no pending invocation; add its invoke line before it",
                key=op.key,
                run=op.run,
            )
            continue
        if invoked.f != op.f or invoked.key != op.key:
            rejections.reject(
                op.line,
                f"{op.type} of {op.f!r} on key {op.key!r} does not match the pending "
                f"invocation of {invoked.f!r} on key {invoked.key!r} at {_where(invoked)} "
                f"by process {op.process!r}; a completion repeats its invocation's f and key",
                key=op.key,
                run=op.run,
            )
            continue
        del pending[who]
        if op.type == "info":
            gone = crashed.get(op.run)
            if gone is None:
                crashed[op.run] = gone = {}
            gone[op.process] = op.line if op.line is not None else -1 - op.index
        yield op
