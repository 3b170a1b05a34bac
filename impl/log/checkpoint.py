"""Kafka's checkpoint files: small text files rewritten whole, atomically.

Kafka keeps per-broker offsets in plain text files in each log directory, all in one
format (``CheckpointFile``)::

    0            <- version
    2            <- number of entries
    orders 0 42  <- one entry per line, fields separated by a space
    orders 1 17

- ``replication-offset-checkpoint``: the high watermark of every partition on the broker;
  entries are ``topic partition offset``;
- ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint`` and
  ``cleaner-offset-checkpoint``: the same shape, for the offset below which a log is known
  flushed, for the log start offset, and for where a compacted log's dirty part begins;
- ``leader-epoch-checkpoint`` (one per partition directory, KIP-101): entries are
  ``epoch start_offset``, see ``impl.log.leader_epoch``.

A write never leaves a half-written file under the real name: the text goes to
``<name>.tmp``, which is fsynced and then renamed over the old file (Kafka's
``Utils.atomicMoveWithFallback``). Reading is strict: a wrong version, a count that does
not match the lines, a malformed line or a missing final newline is a ``CheckpointError``
naming the file and line, so a file cut at any byte fails loudly instead of being misread.
(Like Kafka's, the format has no checksum: a flipped digit is not detected.)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Generic, NamedTuple, TypeVar

from impl.log.errors import CheckpointError
from impl.log.fs import FileSystem, join

__all__ = [
    "LEADER_EPOCH_CHECKPOINT",
    "LOG_START_OFFSET_CHECKPOINT",
    "RECOVERY_POINT_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "CheckpointFile",
    "EpochEntry",
    "LeaderEpochCheckpointFile",
    "OffsetCheckpointFile",
    "TopicPartition",
]

REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"

_INT = re.compile(r"-?[0-9]+\Z")
_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}\Z")
"""Kafka's legal topic names (``Topic.validate``)."""

T = TypeVar("T")


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class EpochEntry(NamedTuple):
    """A leader epoch and the offset of its first record (or the LEO when it began)."""

    epoch: int
    start_offset: int


def _parse_int(text: str, what: str, fail: Callable[[str], CheckpointError]) -> int:
    if not _INT.match(text):
        raise fail(f"{what} {text!r} is not an integer")
    return int(text)


class CheckpointFile(Generic[T]):
    """A checkpoint file of entries of type ``T``, each one line of ``fields`` fields."""

    def __init__(
        self,
        disk: FileSystem,
        path: str,
        *,
        version: int,
        fields: int,
        format_entry: Callable[[T], str],
        parse_entry: Callable[[list[str], Callable[[str], CheckpointError]], T],
    ) -> None:
        self.disk = disk
        self.path = path
        self.version = version
        self.fields = fields
        self._format = format_entry
        self._parse = parse_entry

    @property
    def temp_path(self) -> str:
        return self.path + ".tmp"

    def write(self, entries: Sequence[T]) -> None:
        """Replace the file with ``entries``: write a temp file, fsync it, rename it."""
        lines = [str(self.version), str(len(entries))]
        for entry in entries:
            line = self._format(entry)
            assert "\n" not in line and len(line.split(" ")) == self.fields, line
            lines.append(line)
        text = "\n".join(lines) + "\n"
        self.disk.write(self.temp_path, text.encode("ascii"))
        self.disk.fsync(self.temp_path)
        self.disk.rename(self.temp_path, self.path)

    def read(self) -> list[T]:
        """The entries in the file, [] if it does not exist; ``CheckpointError`` if it does
        not parse."""
        if not self.disk.exists(self.path):
            return []
        raw = self.disk.read(self.path)
        try:
            text = raw.decode("ascii")
        except UnicodeDecodeError as e:
            raise CheckpointError(
                f"{self.path}: byte {e.start} is not ASCII; the file is corrupt (delete it to "
                "make the broker rebuild it, losing what it recorded)"
            ) from None
        if not text.endswith("\n"):
            raise CheckpointError(
                f"{self.path}: does not end with a newline; the file was cut short"
            )
        lines = text[:-1].split("\n")

        def failure(line_number: int) -> Callable[[str], CheckpointError]:
            def fail(what: str) -> CheckpointError:
                return CheckpointError(f"{self.path} line {line_number}: {what}")

            return fail

        if len(lines) < 2:
            raise failure(len(lines) + 1)("missing the version or the entry count line")
        version = _parse_int(lines[0], "version", failure(1))
        if version != self.version:
            raise failure(1)(f"version {version}, this reader knows only {self.version}")
        count = _parse_int(lines[1], "entry count", failure(2))
        if count != len(lines) - 2:
            raise failure(2)(f"declares {count} entries but {len(lines) - 2} lines follow")
        entries = []
        for number, line in enumerate(lines[2:], start=3):
            fields = line.split(" ")
            if len(fields) != self.fields:
                raise failure(number)(f"{line!r} has {len(fields)} fields, expected {self.fields}")
            entries.append(self._parse(fields, failure(number)))
        return entries


def _format_offset(entry: tuple[TopicPartition, int]) -> str:
    tp, offset = entry
    return f"{tp.topic} {tp.partition} {offset}"


def _parse_offset(
    fields: list[str], fail: Callable[[str], CheckpointError]
) -> tuple[TopicPartition, int]:
    topic, partition, offset = fields
    if not _TOPIC.match(topic):
        raise fail(f"{topic!r} is not a legal topic name")
    p = _parse_int(partition, "partition", fail)
    o = _parse_int(offset, "offset", fail)
    if p < 0 or o < 0:
        raise fail(f"negative partition {p} or offset {o}")
    return TopicPartition(topic, p), o


class OffsetCheckpointFile:
    """``replication-offset-checkpoint`` (high watermarks) and its siblings: a map from
    topic-partition to offset. Written sorted by (topic, partition), so the bytes are the
    same in every run."""

    def __init__(self, disk: FileSystem, directory: str, name: str) -> None:
        self._file: CheckpointFile[tuple[TopicPartition, int]] = CheckpointFile(
            disk,
            join(directory, name),
            version=0,
            fields=3,
            format_entry=_format_offset,
            parse_entry=_parse_offset,
        )

    @property
    def path(self) -> str:
        return self._file.path

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        for tp, offset in offsets.items():
            if not _TOPIC.match(tp.topic) or tp.partition < 0 or offset < 0:
                raise ValueError(f"cannot checkpoint {tp!r} -> {offset}")
        self._file.write([(TopicPartition(*tp), offsets[tp]) for tp in sorted(offsets)])

    def read(self) -> dict[TopicPartition, int]:
        entries = self._file.read()
        result: dict[TopicPartition, int] = {}
        for tp, offset in entries:
            if tp in result:
                raise CheckpointError(f"{self.path}: {tp} appears twice")
            result[tp] = offset
        return result


def _format_epoch(entry: EpochEntry) -> str:
    return f"{entry.epoch} {entry.start_offset}"


def _parse_epoch(fields: list[str], fail: Callable[[str], CheckpointError]) -> EpochEntry:
    epoch = _parse_int(fields[0], "epoch", fail)
    start = _parse_int(fields[1], "start offset", fail)
    if epoch < 0 or start < 0:
        raise fail(f"negative epoch {epoch} or start offset {start}")
    return EpochEntry(epoch, start)


class LeaderEpochCheckpointFile:
    """A partition's ``leader-epoch-checkpoint``: the (epoch, start offset) list."""

    def __init__(self, disk: FileSystem, partition_dir: str) -> None:
        self._file: CheckpointFile[EpochEntry] = CheckpointFile(
            disk,
            join(partition_dir, LEADER_EPOCH_CHECKPOINT),
            version=0,
            fields=2,
            format_entry=_format_epoch,
            parse_entry=_parse_epoch,
        )

    @property
    def path(self) -> str:
        return self._file.path

    @property
    def temp_path(self) -> str:
        return self._file.temp_path

    def write(self, entries: Sequence[EpochEntry]) -> None:
        self._file.write(list(entries))

    def read(self) -> list[EpochEntry]:
        return self._file.read()
