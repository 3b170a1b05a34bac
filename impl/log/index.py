"""The sparse offset index of one segment (Kafka's ``OffsetIndex``, the ``.index`` file).

A segment's ``.log`` file is a sequence of variable-size batches, so finding the batch that
holds offset ``o`` needs either a scan from the start or an index. Kafka keeps a *sparse*
one: after at least ``log.index.interval.bytes`` (default 4096) bytes have been appended
since the last entry, the next batch gets an entry ``(last offset of the batch, position of
the batch in the file)``. A lookup binary-searches for the greatest entry whose offset is
<= the target and scans forward from its position; at most ``index.interval.bytes`` plus
one batch are read per lookup.

On disk an entry is 8 bytes, big-endian: the offset relative to the segment's base offset
(int32) and the position (int32), Kafka's format. The index is capped at
``segment.index.bytes`` (default 10 MiB); a full index forces the log to roll.

Invariants: entry offsets strictly increase, positions strictly increase, every offset is
>= the base offset and fits in an int32 relative to it.
"""

from __future__ import annotations

import bisect
import itertools
import struct

from impl.log.fs import FileSystem

__all__ = ["ENTRY_SIZE", "IndexCorruptError", "OffsetIndex"]

ENTRY_SIZE = 8
_ENTRY = struct.Struct(">ii")
_INT32_MAX = 2**31 - 1


class IndexCorruptError(Exception):
    """An ``.index`` file that fails Kafka's sanity check; the segment rebuilds it."""


class OffsetIndex:
    """The in-memory entries of a segment's index, mirrored to its ``.index`` file."""

    def __init__(self, disk: FileSystem, path: str, base_offset: int, max_entries: int) -> None:
        if max_entries < 1:
            raise ValueError(f"an index holds at least one entry, got max_entries={max_entries}")
        self.disk = disk
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max_entries
        self._offsets: list[int] = []
        self._positions: list[int] = []

    # ------------------------------------------------------------------ lifecycle

    def create(self) -> None:
        """Start an empty index file (replacing any previous one)."""
        self.disk.write(self.path, b"")
        self._offsets.clear()
        self._positions.clear()

    def load(self, segment_size: int) -> None:
        """Read the entries from disk, running Kafka's sanity check against the segment's
        size; raises ``IndexCorruptError`` if the file is not a valid index of it."""
        data = self.disk.read(self.path)
        if len(data) % ENTRY_SIZE:
            raise IndexCorruptError(
                f"{self.path}: {len(data)} bytes is not a whole number of 8-byte entries"
            )
        offsets: list[int] = []
        positions: list[int] = []
        for relative, position in _ENTRY.iter_unpack(data):
            offset = self.base_offset + relative
            if relative < 0 or (offsets and offset <= offsets[-1]):
                raise IndexCorruptError(
                    f"{self.path}: entry {len(offsets)} has offset {offset} after "
                    f"{offsets[-1] if offsets else self.base_offset} (entries must increase)"
                )
            if (
                position < 0
                or position >= segment_size
                or (positions and position <= positions[-1])
            ):
                raise IndexCorruptError(
                    f"{self.path}: entry {len(offsets)} has position {position}, outside the "
                    f"segment's {segment_size} bytes or not after the previous entry"
                )
            offsets.append(offset)
            positions.append(position)
        if len(offsets) > self.max_entries:
            raise IndexCorruptError(f"{self.path}: {len(offsets)} entries exceed the maximum")
        self._offsets, self._positions = offsets, positions

    def flush(self) -> None:
        self.disk.fsync(self.path)

    def delete(self) -> None:
        if self.disk.exists(self.path):
            self.disk.delete(self.path)

    # ------------------------------------------------------------------ entries

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def is_full(self) -> bool:
        return len(self._offsets) >= self.max_entries

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._offsets, self._positions, strict=True))

    @property
    def last_entry(self) -> tuple[int, int]:
        """The greatest entry, or (base offset, 0) for an empty index, as Kafka's."""
        if not self._offsets:
            return self.base_offset, 0
        return self._offsets[-1], self._positions[-1]

    def append(self, offset: int, position: int) -> None:
        """Add the entry (``offset``, ``position``): the last offset of a batch and where it
        starts. Both must exceed the previous entry's."""
        assert not self.is_full, f"{self.path}: index full; the log must roll first"
        relative = offset - self.base_offset
        assert 0 <= relative <= _INT32_MAX, (self.path, offset, self.base_offset)
        assert 0 <= position <= _INT32_MAX, (self.path, position)
        if self._offsets:
            assert offset > self._offsets[-1], (self.path, offset, self._offsets[-1])
            assert position > self._positions[-1], (self.path, position, self._positions[-1])
        self._offsets.append(offset)
        self._positions.append(position)
        self.disk.append(self.path, _ENTRY.pack(relative, position))

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """The greatest entry with offset <= ``target_offset`` (binary search), or
        (base offset, 0) if there is none: where a scan for ``target_offset`` starts."""
        i = bisect.bisect_right(self._offsets, target_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self._offsets[i], self._positions[i]

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset`` (Kafka's ``truncateTo``)."""
        keep = bisect.bisect_left(self._offsets, offset)
        if keep == len(self._offsets):
            return
        del self._offsets[keep:]
        del self._positions[keep:]
        self.disk.truncate(self.path, keep * ENTRY_SIZE)

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self._offsets.clear()
        self._positions.clear()
        self.disk.truncate(self.path, 0)

    def check_invariants(self, segment_size: int) -> None:
        offsets, positions = self._offsets, self._positions
        assert len(offsets) == len(positions) <= self.max_entries, self.path
        assert all(a < b for a, b in itertools.pairwise(offsets)), self.path
        assert all(a < b for a, b in itertools.pairwise(positions)), self.path
        assert not offsets or offsets[0] >= self.base_offset, self.path
        assert not positions or (positions[0] >= 0 and positions[-1] < segment_size), self.path
        assert self.disk.size(self.path) == len(offsets) * ENTRY_SIZE, self.path
