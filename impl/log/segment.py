"""One log segment: a ``.log`` file of record batches and its ``.index`` (Kafka's
``LogSegment``).

A partition's log is split into segments so that old data can be deleted a file at a time
and recovery only has to re-read the newest files. A segment is named after its base offset
(the offset of its first record) as a 20-digit zero-padded number, as Kafka names them:
``00000000000000000042.log`` and ``00000000000000000042.index``.

The segment owns the byte positions of its batches; the log above it owns offsets across
segments. Batches are appended whole, read whole, truncated whole.

Invariants: ``size`` is the ``.log`` file's size; the batches in it are contiguous in offset
from ``base_offset`` to ``next_offset``; every index entry points at a batch start in it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import attrs

from impl.log.batch import (
    HEADER_SIZE,
    BatchHeader,
    RecordBatch,
    decode,
    read_header,
)
from impl.log.config import LogConfig
from impl.log.errors import BatchError, CorruptBatchError
from impl.log.fs import FileSystem, join
from impl.log.index import IndexCorruptError, OffsetIndex

__all__ = [
    "INDEX_SUFFIX",
    "LOG_SUFFIX",
    "Segment",
    "SegmentScan",
    "index_file_name",
    "log_file_name",
    "parse_base_offset",
]

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
_NAVIGATION_BYTES = 27
"""Bytes from a batch's start through its last-offset-delta field: enough to step over it."""
_INT32_MAX = 2**31 - 1
_SEGMENT_FILE = re.compile(r"([0-9]{20})(\.log|\.index)\Z")

BatchCheck = Callable[[RecordBatch], "str | None"]
"""A per-batch check during recovery: why the batch cannot be kept, or None."""


def log_file_name(base_offset: int) -> str:
    return f"{base_offset:020d}{LOG_SUFFIX}"


def index_file_name(base_offset: int) -> str:
    return f"{base_offset:020d}{INDEX_SUFFIX}"


def parse_base_offset(name: str) -> tuple[int, str] | None:
    """(base offset, suffix) of a segment or index file name, None for any other file."""
    match = _SEGMENT_FILE.match(name)
    if match is None:
        return None
    return int(match.group(1)), match.group(2)


@attrs.frozen(slots=True)
class SegmentScan:
    """What validating a segment found (``Segment.recover``)."""

    base_offset: int
    batches: int
    valid_bytes: int
    truncated_bytes: int
    error: str | None
    """Why the scan stopped before the end of the file, if it did."""


class Segment:
    def __init__(self, disk: FileSystem, directory: str, base_offset: int, config: LogConfig):
        if base_offset < 0:
            raise ValueError(f"a segment's base offset is >= 0, got {base_offset}")
        self.disk = disk
        self.base_offset = base_offset
        self.config = config
        self.log_path = join(directory, log_file_name(base_offset))
        self.index = OffsetIndex(
            disk,
            join(directory, index_file_name(base_offset)),
            base_offset,
            config.max_index_entries,
        )
        self.size = 0
        self.next_offset = base_offset
        self._bytes_since_last_index_entry = 0
        self._headers: dict[int, BatchHeader] = {}
        """Batch headers already read, by position (see ``_header_at``)."""

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def create(
        cls, disk: FileSystem, directory: str, base_offset: int, config: LogConfig
    ) -> Segment:
        """A new, empty segment whose files exist durably (Kafka flushes the directory
        when it rolls, so a new segment's file survives a crash, empty)."""
        segment = cls(disk, directory, base_offset, config)
        disk.create(segment.log_path)
        segment.index.create()
        disk.fsync(segment.log_path)
        segment.index.flush()
        return segment

    @classmethod
    def open_existing(
        cls, disk: FileSystem, directory: str, base_offset: int, config: LogConfig
    ) -> Segment:
        """A segment found on disk; ``load`` or ``recover`` must run before it is used."""
        segment = cls(disk, directory, base_offset, config)
        segment.size = disk.size(segment.log_path)
        if not disk.exists(segment.index.path):
            segment.index.create()
        return segment

    def load(self) -> None:
        """Trust the segment (it is below the recovery point): load its index, checked
        against the file, and find its next offset by stepping over the batches after the
        last index entry. Raises ``IndexCorruptError`` if either does not hold up; the
        caller then recovers the segment instead."""
        self.index.load(self.size)
        offset, position = self.index.last_entry
        next_offset = self.base_offset
        if len(self.index):
            header = self._header_at(position)
            if header is None or header.last_offset != offset:
                raise IndexCorruptError(
                    f"{self.index.path}: last entry ({offset}, {position}) does not point at "
                    f"a batch ending at offset {offset} in {self.log_path}"
                )
        while position < self.size:
            header = self._header_at(position)
            if header is None or header.size < HEADER_SIZE or position + header.size > self.size:
                raise IndexCorruptError(
                    f"{self.log_path}: no whole batch at byte {position} of {self.size}"
                )
            if position == 0 and header.base_offset != self.base_offset:
                raise IndexCorruptError(
                    f"{self.log_path}: first batch starts at offset {header.base_offset}"
                )
            next_offset = header.last_offset + 1
            position += header.size
        self.next_offset = next_offset

    def recover(self, on_batch: BatchCheck | None = None) -> SegmentScan:
        """Validate every batch from the start (CRC-32C, framing, contiguous offsets from the
        base offset, and ``on_batch``'s check), rebuild the index as appends would have
        built it, and cut the file at the first batch that fails (Kafka's
        ``LogSegment.recover``)."""
        self.index.reset()
        self._bytes_since_last_index_entry = 0
        self._headers.clear()
        data = self.disk.read(self.log_path)
        position = 0
        expected = self.base_offset
        batches = 0
        error: str | None = None
        while position < len(data):
            try:
                batch, end = decode(data, position, expected_base_offset=expected)
                last = batch.last_offset
                if last - self.base_offset > _INT32_MAX:
                    raise CorruptBatchError(
                        f"batch at byte {position}: offset {last} does not fit "
                        f"relative to the segment's base offset {self.base_offset}",
                        position,
                    )
                if on_batch is not None:
                    problem = on_batch(batch)
                    if problem is not None:
                        raise CorruptBatchError(f"batch at byte {position}: {problem}", position)
            except BatchError as e:
                error = f"{self.log_path}: {e}"
                break
            self._index_batch(last, position, end - position)
            # What ``_header_at`` would read there, known now: later reads need no disk read.
            self._headers[position] = BatchHeader(
                batch.base_offset, end - position, batch.partition_leader_epoch, last
            )
            expected = last + 1
            position = end
            batches += 1
        truncated = len(data) - position
        if truncated:
            self.disk.truncate(self.log_path, position)
        self.size = position
        self.next_offset = expected
        return SegmentScan(self.base_offset, batches, position, truncated, error)

    def flush(self) -> None:
        self.disk.fsync(self.log_path)
        self.index.flush()

    def delete(self) -> None:
        if self.disk.exists(self.log_path):
            self.disk.delete(self.log_path)
        self.index.delete()

    # ------------------------------------------------------------------ append

    def should_roll(self, batch_size: int, last_offset: int) -> bool:
        """Kafka's ``shouldRoll``, minus time: the batch would overflow ``segment.bytes``, the
        index is full, or the offset no longer fits relative to the base offset."""
        if self.size == 0:
            return False
        return (
            self.size + batch_size > self.config.segment_bytes
            or self.index.is_full
            or last_offset - self.base_offset > _INT32_MAX
        )

    def append(self, data: bytes, base_offset: int, last_offset: int, leader_epoch: int) -> int:
        """Append one batch's bytes (already validated: its header holds ``base_offset``,
        ``leader_epoch`` and ``last_offset``); return the position it starts at."""
        assert base_offset == self.next_offset, (self.log_path, base_offset, self.next_offset)
        assert last_offset >= base_offset
        assert last_offset - self.base_offset <= _INT32_MAX, "roll before offsets overflow"
        position = self.disk.append(self.log_path, data)
        assert position == self.size, (self.log_path, position, self.size)
        # What ``_header_at`` would read back from the file there: the bytes just written.
        self._headers[position] = BatchHeader(base_offset, len(data), leader_epoch, last_offset)
        self._index_batch(last_offset, position, len(data))
        self.size += len(data)
        self.next_offset = last_offset + 1
        return position

    def _index_batch(self, last_offset: int, position: int, size: int) -> None:
        if self._bytes_since_last_index_entry > self.config.index_interval_bytes:
            self.index.append(last_offset, position)
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += size

    # ------------------------------------------------------------------ read

    def _header_at(self, position: int) -> BatchHeader | None:
        """The header of the batch at byte ``position``, read once and then remembered.

        Every fetch steps over batch headers from an index entry (``find_batch``, ``read``),
        so the same few headers are read again and again. Remembering them is safe because
        the bytes below ``size`` change only through this object, while it lives: appends
        add bytes after them, ``truncate_to`` cuts them (and forgets the headers it cut),
        ``recover`` starts over. Damage to the file (a crash's torn tail, a flipped bit)
        happens while the process is down, and a restarted broker opens new ``Segment``s.
        """
        header = self._headers.get(position)
        if header is None:
            header = read_header(self.disk.read(self.log_path, position, _NAVIGATION_BYTES))
            if header is not None:
                self._headers[position] = header
        return header

    def find_batch(self, offset: int) -> tuple[int, BatchHeader] | None:
        """Position and header of the first batch whose last offset is >= ``offset``: an
        index lookup, then a forward scan of batch headers (Kafka's ``translateOffset``)."""
        _, position = self.index.lookup(offset)
        while position < self.size:
            header = self._header_at(position)
            assert header is not None and header.size >= HEADER_SIZE, (self.log_path, position)
            if header.last_offset >= offset:
                return position, header
            position += header.size
        return None

    def read(
        self, start_offset: int, max_bytes: int, upto: int, min_one_batch: bool
    ) -> bytes | None:
        """Whole batches from the one holding ``start_offset``, every record below ``upto``,
        at most ``max_bytes`` of them (at least one batch if ``min_one_batch``). None if no
        batch here reaches ``start_offset`` (the read belongs to a later segment)."""
        found = self.find_batch(start_offset)
        if found is None:
            return None
        start, header = found
        if upto >= self.next_offset and self.size - start <= max_bytes:
            # Every batch from ``start`` is below ``upto`` and they all fit: the loop below
            # would take them all (a follower's fetch, a replay of the log).
            return self.disk.read(self.log_path, start, self.size - start)
        end = start
        while end < self.size:
            h = header if end == start else self._header_at(end)
            assert h is not None, (self.log_path, end)
            if h.last_offset >= upto:
                break
            if end + h.size - start > max_bytes and not (min_one_batch and end == start):
                break
            end += h.size
        return self.disk.read(self.log_path, start, end - start)

    def batches(self) -> list[RecordBatch]:
        """Every batch, decoded (and so validated)."""
        data = self.disk.read(self.log_path)
        result = []
        position = 0
        while position < len(data):
            batch, position = decode(data, position)
            result.append(batch)
        return result

    # ------------------------------------------------------------------ truncate

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is >= ``offset`` (a batch holding ``offset``
        goes whole); return the bytes removed."""
        found = self.find_batch(offset)
        if found is None:
            return 0
        position, header = found
        removed = self.size - position
        self.index.truncate_to(offset)
        self.disk.truncate(self.log_path, position)
        self._headers = {p: h for p, h in self._headers.items() if p < position}
        self.size = position
        self.next_offset = header.base_offset
        self._bytes_since_last_index_entry = 0
        return removed

    # ------------------------------------------------------------------ checks

    def check_invariants(self) -> None:
        assert self.disk.size(self.log_path) == self.size, (self.log_path, self.size)
        assert self.next_offset >= self.base_offset
        assert (self.size == 0) == (self.next_offset == self.base_offset), self.log_path
        self.index.check_invariants(self.size)

    def __repr__(self) -> str:
        return (
            f"Segment({self.log_path!r}, offsets [{self.base_offset}, {self.next_offset}), "
            f"{self.size} bytes, {len(self.index)} index entries)"
        )
