"""A partition replica's log: segments, offsets, the leader-epoch cache (Kafka's
``UnifiedLog`` + ``LocalLog``).

The log is what a replica *is*, as far as data goes:

- the leader appends producers' batches (``append_as_leader``): the log assigns offsets from
  its log end offset (LEO) and stamps the leader's epoch into each batch;
- a follower appends the leader's batches byte for byte (``append_as_follower``), after
  checking their CRC and that they continue its log exactly;
- fetches read whole batches from an offset, bounded by a size and by an upper offset (the
  high watermark, for consumers);
- replication truncates it (``truncate_to``), on leader-epoch divergence (KIP-101/279) or,
  in the pre-KIP-101 protocol variant, to the high watermark;
- ``end_offset_for_epoch`` answers OffsetsForLeaderEpoch from the leader-epoch cache.

Storage: one directory per partition holding ``<base offset>.log``/``.index`` segment pairs
(``log.segment.bytes``, ``log.index.interval.bytes``) and the ``leader-epoch-checkpoint``.
Durability is explicit: ``flush`` fsyncs and advances the recovery point; a roll flushes
the segment it leaves (as Kafka's async flush on roll does); ``log.flush.interval.messages``
can force more. Everything after the recovery point may be lost or torn by a crash, and
``Log.open`` recovers it (``impl.log.recovery``).

Invariants (``check_invariants``; the cheap ones are asserted on every operation): first
segment's base offset <= log start <= LEO; recovery point <= LEO; segments are ordered,
contiguous in offsets, only the active one may be empty, and they are exactly the segment
files in the directory; the epoch cache is monotone and names no epoch start beyond the LEO.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator

import attrs

from impl.log.batch import RecordBatch, decode
from impl.log.config import LogConfig
from impl.log.errors import (
    CorruptBatchError,
    EpochRegressionError,
    InvalidRecordError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    StaleHandleError,
    UnexpectedAppendOffsetError,
)
from impl.log.fs import FileSystem
from impl.log.leader_epoch import EpochEndOffset, LeaderEpochCache
from impl.log.recovery import RecoveryReport, load_log
from impl.log.segment import LOG_SUFFIX, Segment, parse_base_offset

__all__ = ["Log", "LogAppendInfo"]

DEFAULT_FETCH_MAX_BYTES = 1024 * 1024
"""``replica.fetch.max.bytes`` / ``max.partition.fetch.bytes``: 1 MiB."""


@attrs.frozen(slots=True)
class LogAppendInfo:
    """Where an append landed: offsets ``first_offset..last_offset`` in ``leader_epoch``
    (the epoch of the last batch), and its size."""

    first_offset: int
    last_offset: int
    leader_epoch: int
    batches: int
    size_in_bytes: int

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


class Log:
    """One partition's log in one directory of one node's disk. Build it with ``open``."""

    def __init__(
        self,
        disk: FileSystem,
        directory: str,
        config: LogConfig,
        segments: list[Segment],
        epoch_cache: LeaderEpochCache,
        log_start_offset: int,
        recovery_point: int,
        recovery: RecoveryReport,
    ) -> None:
        self.disk = disk
        self.directory = directory
        self.config = config
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self.epoch_cache = epoch_cache
        self._log_start_offset = log_start_offset
        self._recovery_point = recovery_point
        self.recovery = recovery
        """What ``open`` found and repaired."""
        self._generation = disk.generation

    @classmethod
    def open(
        cls,
        disk: FileSystem,
        directory: str,
        *,
        config: LogConfig | None = None,
        recovery_point: int = 0,
        log_start_offset: int = 0,
    ) -> Log:
        """Open (creating if empty) the log in ``directory``, recovering everything at or
        after ``recovery_point`` (from ``recovery-point-offset-checkpoint``; 0 re-validates
        the whole log). See ``impl.log.recovery``."""
        config = config or LogConfig()
        loaded = load_log(
            disk,
            directory,
            config,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
        )
        log = cls(
            disk,
            directory,
            config,
            loaded.segments,
            loaded.epoch_cache,
            loaded.log_start_offset,
            loaded.recovery_point,
            loaded.report,
        )
        log.check_invariants()
        return log

    # ------------------------------------------------------------------ offsets

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        """The LEO: the offset the next appended record will get."""
        return self._segments[-1].next_offset

    @property
    def recovery_point(self) -> int:
        """Everything below this offset is flushed; a crash cannot take it."""
        return self._recovery_point

    @property
    def segments(self) -> tuple[Segment, ...]:
        return tuple(self._segments)

    @property
    def active_segment(self) -> Segment:
        return self._segments[-1]

    @property
    def size_in_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def latest_epoch(self) -> int | None:
        """The latest leader epoch in the cache (Kafka's ``latestEpoch``): what a follower
        sends as its last fetched epoch."""
        return self.epoch_cache.latest_epoch

    def end_offset_for_epoch(self, leader_epoch: int) -> EpochEndOffset:
        """OffsetsForLeaderEpoch (KIP-101, KIP-279 semantics), see ``LeaderEpochCache``."""
        self._check_live()
        return self.epoch_cache.end_offset_for(leader_epoch, self.log_end_offset)

    # ------------------------------------------------------------------ append

    def append_as_leader(
        self, batch: RecordBatch, leader_epoch: int, now_ms: int | None = None
    ) -> LogAppendInfo:
        """Append a producer's batch: assign it offsets from the LEO and stamp
        ``leader_epoch`` into it, and ``now_ms`` as its LogAppendTime when the log's
        retention reads time (``LogConfig.stamps_append_time``). The epoch must not be older
        than the log's latest: an older leader is fenced (KIP-320) and must not write. A
        compacted log refuses a record without a key (Kafka's INVALID_RECORD: "Compacted
        topic cannot accept message without key")."""
        self._check_live()
        if self.config.compact and any(r.key is None for r in batch.records):
            raise InvalidRecordError(
                f"{self.directory}: cleanup.policy={self.config.cleanup_policy} needs a key on "
                "every record (compaction keeps the last record of each key); set one"
            )
        if self.config.stamps_append_time:
            if now_ms is None:
                raise ValueError(
                    f"{self.directory}: retention.ms={self.config.retention_ms} reads batch "
                    "timestamps; pass now_ms (the leader's LogAppendTime)"
                )
            batch = batch.with_append_time(now_ms)
        if leader_epoch < 0:
            raise ValueError(f"a leader appends in an epoch >= 0, got {leader_epoch}")
        latest = self.epoch_cache.latest_epoch
        if latest is not None and leader_epoch < latest:
            raise EpochRegressionError(
                f"{self.directory}: append in leader epoch {leader_epoch}, but the log already "
                f"holds epoch {latest}: a fenced leader must not append"
            )
        placed = batch.with_placement(self.log_end_offset, leader_epoch)
        data = placed.encode()
        if len(data) > self.config.max_batch_bytes:
            raise RecordTooLargeError(
                f"{self.directory}: a batch of {len(data)} bytes exceeds max.message.bytes "
                f"({self.config.max_batch_bytes}); split it"
            )
        self.epoch_cache.assign(leader_epoch, placed.base_offset)
        self._append_batch(data, placed.base_offset, placed.last_offset, leader_epoch)
        self._maybe_flush()
        return LogAppendInfo(placed.base_offset, placed.last_offset, leader_epoch, 1, len(data))

    def append_as_follower(self, records: bytes) -> LogAppendInfo | None:
        """Append the leader's batches verbatim (a fetch response's records). They must be
        valid (CRC-32C), start exactly at the LEO and be contiguous, with leader epochs that
        never decrease. All are validated before any is written. None if ``records`` is
        empty.

        A batch older than the log's latest epoch is appended, as Kafka appends it: the
        epoch cache drops the newer entries it conflicts with (``LeaderEpochCache.assign``).
        A follower that truncated first (KIP-101) never sends one; see ``docs/impl.md``,
        finding F2, for the variants that do."""
        self._check_live()
        parsed: list[tuple[RecordBatch, int, int, int]] = []  # batch, start, end, last offset
        position = 0
        expected = self.log_end_offset
        epoch = -1
        while position < len(records):
            batch, end = decode(records, position)
            if not parsed and batch.base_offset != expected:
                raise UnexpectedAppendOffsetError(
                    f"{self.directory}: fetched batches start at offset {batch.base_offset}, "
                    f"but the log ends at {expected}; truncate or fetch from the LEO"
                )
            if batch.base_offset != expected:
                raise CorruptBatchError(
                    f"batch at byte {position}: offset {batch.base_offset} does not follow "
                    f"{expected - 1}",
                    position,
                )
            if batch.partition_leader_epoch < max(epoch, 0):
                raise CorruptBatchError(
                    f"batch at byte {position}: leader epoch {batch.partition_leader_epoch} "
                    f"after epoch {epoch}",
                    position,
                )
            epoch = batch.partition_leader_epoch
            last_offset = batch.last_offset
            parsed.append((batch, position, end, last_offset))
            expected = last_offset + 1
            position = end
        if not parsed:
            return None
        for batch, start, end, last_offset in parsed:
            stamped = batch.partition_leader_epoch
            self.epoch_cache.assign(stamped, batch.base_offset)
            self._append_batch(records[start:end], batch.base_offset, last_offset, stamped)
        self._maybe_flush()
        first_offset, last_offset = parsed[0][0].base_offset, parsed[-1][3]
        return LogAppendInfo(first_offset, last_offset, epoch, len(parsed), len(records))

    def maybe_assign_epoch_start_offset(self, leader_epoch: int, start_offset: int) -> bool:
        """A replica becoming leader of ``leader_epoch`` records that its epoch starts at its
        LEO, before it appends anything (Kafka's ``Partition.makeLeader``)."""
        self._check_live()
        if start_offset != self.log_end_offset:
            raise ValueError(
                f"{self.directory}: epoch {leader_epoch} must start at the LEO "
                f"{self.log_end_offset}, not {start_offset}"
            )
        return self.epoch_cache.assign(leader_epoch, start_offset)

    def _append_batch(
        self, data: bytes, base_offset: int, last_offset: int, leader_epoch: int
    ) -> None:
        assert base_offset == self.log_end_offset, (base_offset, self.log_end_offset)
        if self.active_segment.should_roll(len(data), last_offset):
            self.roll()
        self.active_segment.append(data, base_offset, last_offset, leader_epoch)

    def roll(self) -> Segment:
        """Start a new active segment at the LEO (no-op if the active one is empty)."""
        self._check_live()
        if self.active_segment.size == 0:
            return self.active_segment
        new_base = self.log_end_offset
        segment = Segment.create(self.disk, self.directory, new_base, self.config)
        self._segments.append(segment)
        self._bases.append(new_base)
        if self.config.flush_on_roll:
            self.flush(new_base)
        return segment

    # ------------------------------------------------------------------ flush

    def flush(self, offset: int | None = None) -> None:
        """fsync every segment holding offsets in [recovery point, ``offset``) (default: the
        LEO), then move the recovery point to ``offset``."""
        self._check_live()
        offset = self.log_end_offset if offset is None else offset
        if not 0 <= offset <= self.log_end_offset:
            raise ValueError(f"cannot flush to {offset}: the LEO is {self.log_end_offset}")
        if offset <= self._recovery_point:
            return
        for segment in self._segments:
            if segment.next_offset > self._recovery_point and segment.base_offset < offset:
                segment.flush()
        self._recovery_point = offset

    def _maybe_flush(self) -> None:
        interval = self.config.flush_interval_messages
        if interval is not None and self.log_end_offset - self._recovery_point >= interval:
            self.flush()

    # ------------------------------------------------------------------ read

    def read(
        self,
        start_offset: int,
        max_bytes: int = DEFAULT_FETCH_MAX_BYTES,
        *,
        upto: int | None = None,
        min_one_batch: bool = True,
    ) -> bytes:
        """Whole batches from the one holding ``start_offset``: only batches entirely below
        ``upto`` (exclusive; a consumer passes the high watermark, a follower nothing, i.e.
        the LEO), at most ``max_bytes`` of them, or the first batch whatever its size if
        ``min_one_batch`` (KIP-74). Reads stay within one segment, as Kafka's do.

        ``OffsetOutOfRangeError`` if ``start_offset`` is below the log start or above the
        LEO; empty bytes at the LEO or at/after ``upto``.
        """
        self._check_live()
        leo = self.log_end_offset
        if not self._log_start_offset <= start_offset <= leo:
            raise OffsetOutOfRangeError(
                f"{self.directory}: offset {start_offset} is outside the log "
                f"[{self._log_start_offset}, {leo}]; reset the fetch position"
            )
        upto = leo if upto is None else upto
        if upto > leo:
            raise ValueError(f"{self.directory}: read upto {upto} is beyond the LEO {leo}")
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        if start_offset >= upto:
            return b""
        i = bisect.bisect_right(self._bases, start_offset) - 1
        assert i >= 0, (start_offset, self._bases)
        for segment in self._segments[i:]:
            data = segment.read(start_offset, max_bytes, upto, min_one_batch)
            if data is not None:
                return data
        return b""

    def read_batches(
        self,
        start_offset: int,
        max_bytes: int = DEFAULT_FETCH_MAX_BYTES,
        *,
        upto: int | None = None,
        min_one_batch: bool = True,
    ) -> list[RecordBatch]:
        """``read``, decoded."""
        data = self.read(start_offset, max_bytes, upto=upto, min_one_batch=min_one_batch)
        result = []
        position = 0
        while position < len(data):
            batch, position = decode(data, position)
            result.append(batch)
        return result

    def batches(self) -> Iterator[RecordBatch]:
        """Every batch of the log, in order, decoded (and so CRC-checked)."""
        self._check_live()
        for segment in self._segments:
            yield from segment.batches()

    def entries(self) -> list[tuple[int, int, bytes | None, bytes | None]]:
        """(offset, leader epoch, key, value) of every record from the log start: the log
        as the replication spec sees it."""
        result = []
        for batch in self.batches():
            for offset, record in batch.offsets_and_records():
                if offset >= self._log_start_offset:
                    result.append((offset, batch.partition_leader_epoch, record.key, record.value))
        return result

    # ------------------------------------------------------------------ truncate

    def truncate_to(self, offset: int) -> bool:
        """Remove every record at or after ``offset`` (a batch holding ``offset`` goes whole,
        leaving the LEO at its base offset). Epochs starting at or after the new LEO leave
        the cache, also when nothing is removed (an epoch begun at the LEO in which no
        record was written). Returns whether records were removed."""
        self._check_live()
        if offset < 0:
            raise ValueError(f"cannot truncate to a negative offset {offset}")
        if offset >= self.log_end_offset:
            self.epoch_cache.truncate_from_end(offset)
            return False
        if offset < self._segments[0].base_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        while self._segments[-1].base_offset > offset:
            self._segments.pop().delete()
            self._bases.pop()
        self.active_segment.truncate_to(offset)
        leo = self.log_end_offset
        assert leo <= offset
        self.epoch_cache.truncate_from_end(leo)
        self._recovery_point = min(self._recovery_point, leo)
        self._log_start_offset = min(self._log_start_offset, leo)
        return True

    def replace_segments(self, first: int, count: int, segment: Segment) -> None:
        """Put ``segment`` (already on disk under its final name) in place of the ``count``
        segments from index ``first``, whose files are gone: the last step of a cleaning
        swap (``impl.log.cleaner``). It must cover exactly their offsets."""
        self._check_live()
        old = self._segments[first : first + count]
        assert count > 0 and first + count < len(self._segments), "never the active segment"
        assert segment.base_offset == old[0].base_offset, (segment, old[0])
        assert segment.next_offset == old[-1].next_offset, (segment, old[-1])
        self._segments[first : first + count] = [segment]
        self._bases[first : first + count] = [segment.base_offset]

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Delete every record and restart the log, empty, at ``offset`` (a follower whose
        fetch position fell below the leader's log start, or above its own log)."""
        self._check_live()
        if offset < 0:
            raise ValueError(f"cannot start a log at a negative offset {offset}")
        for segment in self._segments:
            segment.delete()
        self._segments = [Segment.create(self.disk, self.directory, offset, self.config)]
        self._bases = [offset]
        self.epoch_cache.clear()
        self._log_start_offset = offset
        self._recovery_point = offset

    def advance_log_start_offset(self, offset: int) -> bool:
        """Move the log start up to ``offset`` (DeleteRecords, KIP-107; or the leader's log
        start seen by a follower), deleting segments that lie entirely below it. Returns
        whether it moved."""
        self._check_live()
        if offset <= self._log_start_offset:
            return False
        if offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"{self.directory}: log start {offset} would pass the LEO {self.log_end_offset}"
            )
        self._log_start_offset = offset
        if self.active_segment.next_offset <= offset and self.active_segment.size:
            self.roll()
        while len(self._segments) > 1 and self._segments[1].base_offset <= offset:
            self._segments.pop(0).delete()
            self._bases.pop(0)
        self.epoch_cache.truncate_from_start(offset)
        return True

    def delete_oldest_segments(self, count: int) -> int:
        """Delete the ``count`` oldest segments (never the active one) and move the log
        start to the base offset of the first one left: retention (``impl.log.retention``).
        Returns the new log start."""
        self._check_live()
        if not 0 <= count < len(self._segments):
            raise ValueError(
                f"{self.directory}: cannot delete {count} of {len(self._segments)} segments "
                "(the active segment stays)"
            )
        if count:
            self.advance_log_start_offset(self._segments[count].base_offset)
        return self._log_start_offset

    # ------------------------------------------------------------------ checks

    def _check_live(self) -> None:
        if self.disk.generation != self._generation:
            raise StaleHandleError(
                f"{self.directory}: this Log was opened before the disk crashed; its process "
                "is gone. Re-open it with Log.open"
            )

    def check_invariants(self) -> None:
        """Every structural invariant, including a pass over every segment and index."""
        segments = self._segments
        assert segments, "a log always has an active segment"
        assert self._bases == [s.base_offset for s in segments]
        for a, b in itertools.pairwise(segments):
            assert a.next_offset == b.base_offset, (a, b)
            assert a.size > 0, f"only the active segment may be empty: {a}"
        for s in segments:
            s.check_invariants()
        leo = self.log_end_offset
        assert segments[0].base_offset <= self._log_start_offset <= leo, (
            segments[0].base_offset,
            self._log_start_offset,
            leo,
        )
        assert 0 <= self._recovery_point <= leo, (self._recovery_point, leo)
        self.epoch_cache.check_invariants(leo)
        on_disk = sorted(
            base
            for name in self.disk.list_dir(self.directory)
            if (parsed := parse_base_offset(name)) is not None and parsed[1] == LOG_SUFFIX
            for base in (parsed[0],)
        )
        assert on_disk == self._bases, (on_disk, self._bases)

    def describe(self) -> dict[str, object]:
        """A stable, JSON-shaped summary (for traces and scenario files)."""
        return {
            "log_start": self._log_start_offset,
            "leo": self.log_end_offset,
            "recovery_point": self._recovery_point,
            "segments": [[s.base_offset, s.next_offset, s.size] for s in self._segments],
            "epochs": [list(e) for e in self.epoch_cache.entries],
        }

    def __repr__(self) -> str:
        return (
            f"Log({self.directory!r}, [{self._log_start_offset}, {self.log_end_offset}), "
            f"{len(self._segments)} segments, epochs {self.epoch_cache!r})"
        )
