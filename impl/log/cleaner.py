"""Log compaction: keep the last record of every key (Kafka's ``LogCleaner``; Kafka docs,
"Log Compaction"; KIP-534 for tombstones).

A log with ``cleanup.policy=compact`` (or ``compact,delete``) is a changelog: a consumer
that reads it from the start ends with the latest value of every key, whatever was
overwritten. The cleaner rewrites old segments without the records a later record of the
same key supersedes:

- **What may be cleaned.** Only whole non-active segments below the *first uncleanable
  offset*: the active segment's base offset, and the first unstable offset, which the
  caller passes (the high watermark here: there are no transactions, so the last stable
  offset is the high watermark). Records a follower or consumer has not been allowed to
  see yet are never touched.
- **When.** ``min.cleanable.dirty.ratio``: the bytes written since the last cleaning (the
  *dirty* section, from the cleaner checkpoint, Kafka's ``cleaner-offset-checkpoint``) over
  all cleanable bytes; or a tombstone's delete horizon has passed.
- **What is kept.** A record whose key has no later record in the cleanable range; records
  without a key (which a compacted log refuses on append, but an older log may hold).
- **Tombstones** (a null value) delete their key: kept by the first cleaning that sees them,
  which stamps the batch with a *delete horizon* ``now + delete.retention.ms`` (KIP-534),
  and dropped by the first cleaning after it, so a consumer that was reading when the key
  was deleted gets to see the delete.
- **Offsets are preserved.** A cleaned batch keeps its base offset and last offset delta
  (Kafka's ``MemoryRecords.filterTo`` for v2): the log has gaps between the offsets of its
  records, but never between batches. A batch left with no record stays as an empty header
  unless it can be folded into the preceding batch of the same leader epoch (neither from an
  idempotent producer, whose batch headers are its producer state): so the leader-epoch
  cache, which records where each epoch's first batch starts, still describes the log, and
  recovery's checks of contiguous offsets still hold. (Kafka drops an empty batch unless it
  carries producer state; this model keeps the header, at the cost of a few bytes per run of
  emptied batches in one epoch.)
- **Crash safety** (Kafka's ``LogCleaner.cleanSegments`` + ``LocalLog.replaceSegments``): a
  group of consecutive segments is rewritten into ``<base>.log.cleaned``, fsynced, renamed
  to ``<base>.log.swap`` (the commit point), the old segments' files are deleted, and the
  swap file is renamed to ``<base>.log``; its index is rebuilt from its batches. A crash
  before the commit point leaves the old segments (recovery deletes the ``.cleaned`` file),
  after it the new one (recovery completes the swap): ``impl.log.recovery``.

Consecutive segments are grouped into one cleaned segment while their cleaned bytes fit in
``segment.bytes`` and their batches in the offset index (Kafka's ``groupSegmentsBySize``).
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from impl.log.batch import NO_PRODUCER_ID, RecordBatch
from impl.log.fs import FileSystem
from impl.log.log import Log
from impl.log.recovery import CLEANED_SUFFIX, SWAP_SUFFIX
from impl.log.segment import Segment

__all__ = ["CleanResult", "LogCleaner", "clean_log", "cleanable_end"]

_INT32_MAX = 2**31 - 1


@attrs.frozen(slots=True)
class CleanResult:
    """What one cleaning of one log did."""

    directory: str
    end_offset: int
    """The first uncleanable offset: everything below it was cleaned."""
    segments_before: int
    segments_after: int
    records_before: int
    records_after: int
    bytes_before: int
    bytes_after: int
    tombstones_removed: int
    next_delete_horizon: int | None
    """The earliest delete horizon of a tombstone still in the log: when cleaning again
    can remove it."""


def cleanable_end(log: Log, first_unstable_offset: int) -> tuple[int, int]:
    """(number of segments, end offset) of the cleanable prefix of ``log``: the whole
    non-active segments that end at or below ``first_unstable_offset``."""
    count = 0
    end = log.segments[0].base_offset
    for segment in log.segments[:-1]:
        if segment.next_offset > first_unstable_offset:
            break
        count += 1
        end = segment.next_offset
    return count, end


@attrs.define
class LogCleaner:
    """The cleaner of one broker: when each compacted log is due (its checkpoint and its
    pending tombstones), and the cleaning itself. ``log.cleaner.enable`` is the log's
    config; the broker calls ``maybe_clean`` from its tick (``log.cleaner.backoff.ms``).

    The cleaner checkpoint is kept in memory: after a restart the whole log counts as
    dirty, which only makes the next cleaning come sooner (Kafka persists it in
    ``cleaner-offset-checkpoint``). A checkpoint outside [log start, active segment] is
    reset to the log start, as Kafka's ``LogCleanerManager`` does; one that a truncation
    left inside the log (Kafka lowers it on truncation) only delays the next cleaning:
    the dirty ratio decides when to clean, never what is kept."""

    first_dirty: dict[str, int] = attrs.Factory(dict)
    horizons: dict[str, int] = attrs.Factory(dict)

    def dirty_ratio(self, log: Log, first_unstable_offset: int) -> float:
        """Dirty bytes over cleanable bytes (0.0 when nothing is cleanable)."""
        count, _ = cleanable_end(log, first_unstable_offset)
        first_dirty = self.first_dirty.get(log.directory, 0)
        if not log.log_start_offset <= first_dirty <= log.active_segment.base_offset:
            # a checkpoint the log no longer covers (truncated, or restarted empty at a
            # later log start): everything is dirty (Kafka's LogCleanerManager resets it)
            first_dirty = log.log_start_offset
        total = dirty = 0
        for segment in log.segments[:count]:
            total += segment.size
            if segment.next_offset > first_dirty:
                dirty += segment.size
        return dirty / total if total else 0.0

    def is_due(self, log: Log, first_unstable_offset: int, now_ms: int) -> bool:
        config = log.config
        if not (config.compact and config.cleaner_enable):
            return False
        horizon = self.horizons.get(log.directory)
        if horizon is not None and now_ms >= horizon:
            return True
        ratio = self.dirty_ratio(log, first_unstable_offset)
        return ratio > 0 and ratio >= config.min_cleanable_dirty_ratio

    def maybe_clean(self, log: Log, first_unstable_offset: int, now_ms: int) -> CleanResult | None:
        """Clean ``log`` if it is due; None otherwise."""
        if not self.is_due(log, first_unstable_offset, now_ms):
            return None
        result = clean_log(log, first_unstable_offset=first_unstable_offset, now_ms=now_ms)
        self.first_dirty[log.directory] = result.end_offset
        if result.next_delete_horizon is None:
            self.horizons.pop(log.directory, None)
        else:
            self.horizons[log.directory] = result.next_delete_horizon
        return result


def clean_log(log: Log, *, first_unstable_offset: int, now_ms: int) -> CleanResult:
    """Compact the cleanable prefix of ``log`` (see the module docstring), whatever its
    dirty ratio."""
    if not log.config.compact:
        raise ValueError(
            f"{log.directory}: cleanup.policy={log.config.cleanup_policy} does not compact; "
            "set cleanup.policy=compact or compact,delete"
        )
    count, end = cleanable_end(log, first_unstable_offset)
    segments = log.segments[:count]
    latest: dict[bytes, int] = {}
    for segment in segments:
        for batch in segment.batches():
            for offset, record in batch.offsets_and_records():
                if record.key is not None:
                    latest[record.key] = offset
    records_before = records_after = tombstones_removed = 0
    horizon: int | None = None
    cleaned: list[list[RecordBatch]] = []
    for segment in segments:
        out: list[RecordBatch] = []
        for batch in segment.batches():
            keep = []
            has_tombstone = False
            for index, record in enumerate(batch.records):
                offset = batch.base_offset + batch.delta(index)
                records_before += 1
                if record.key is not None and latest[record.key] != offset:
                    continue
                if record.value is None and record.key is not None:
                    expired = batch.delete_horizon_ms is not None and now_ms >= (
                        batch.delete_horizon_ms
                    )
                    if expired:
                        tombstones_removed += 1
                        continue
                    has_tombstone = True
                keep.append(index)
            stamp = None
            if has_tombstone and batch.delete_horizon_ms is None:
                stamp = now_ms + log.config.delete_retention_ms
            kept = batch.without_records(keep, delete_horizon_ms=stamp)
            records_after += kept.record_count
            if has_tombstone:
                assert kept.delete_horizon_ms is not None
                horizon = (
                    kept.delete_horizon_ms
                    if horizon is None
                    else min(horizon, kept.delete_horizon_ms)
                )
            _fold(out, kept)
        cleaned.append(out)
    bytes_before = sum(s.size for s in segments)
    index = 0
    for group in _groups(log, segments, cleaned):
        batches: list[RecordBatch] = []
        for i in group:
            for batch in cleaned[i]:
                _fold(batches, batch)  # across the old segments' boundaries too
        _swap(log, index, len(group), batches)
        index += 1
    log.check_invariants()
    return CleanResult(
        directory=log.directory,
        end_offset=end,
        segments_before=count,
        segments_after=index,
        records_before=records_before,
        records_after=records_after,
        bytes_before=bytes_before,
        bytes_after=sum(s.size for s in log.segments[:index]),
        tombstones_removed=tombstones_removed,
        next_delete_horizon=horizon,
    )


def _fold(out: list[RecordBatch], batch: RecordBatch) -> None:
    """Append ``batch`` to ``out``, folding an emptied batch into the previous one when both
    are of the same leader epoch and neither carries producer state."""
    if batch.record_count == 0 and out:
        previous = out[-1]
        if (
            previous.partition_leader_epoch == batch.partition_leader_epoch
            and previous.producer_id == NO_PRODUCER_ID
            and batch.producer_id == NO_PRODUCER_ID
            and previous.attributes == batch.attributes
            and batch.last_offset - previous.base_offset <= _INT32_MAX
        ):
            assert previous.next_offset == batch.base_offset
            stamps = [t for t in (previous.max_timestamp, batch.max_timestamp) if t is not None]
            out[-1] = attrs.evolve(
                previous,
                cleaned_last_delta=batch.last_offset - previous.base_offset,
                max_timestamp=max(stamps) if stamps else None,
            )
            return
    out.append(batch)


def _groups(
    log: Log, segments: tuple[Segment, ...], cleaned: list[list[RecordBatch]]
) -> Iterator[list[int]]:
    """Consecutive segment indexes whose cleaned batches fit in one segment."""
    config = log.config
    group: list[int] = []
    size = batches = 0
    for i, segment in enumerate(segments):
        new_size = sum(len(b.encode()) for b in cleaned[i])
        span = segment.next_offset - (segments[group[0]].base_offset if group else 0)
        if group and (
            size + new_size > config.segment_bytes
            or batches + len(cleaned[i]) > config.max_index_entries
            or span - 1 > _INT32_MAX
        ):
            yield group
            group, size, batches = [], 0, 0
        group.append(i)
        size += new_size
        batches += len(cleaned[i])
    if group:
        yield group


def _swap(log: Log, index: int, count: int, batches: list[RecordBatch]) -> Segment:
    """Replace the ``count`` segments from ``index`` by one holding ``batches``, through the
    ``.cleaned`` / ``.swap`` protocol (see the module docstring)."""
    disk: FileSystem = log.disk
    old = log.segments[index : index + count]
    assert batches and batches[0].base_offset == old[0].base_offset
    assert batches[-1].next_offset == old[-1].next_offset
    final = old[0].log_path
    cleaned_path = final + CLEANED_SUFFIX
    swap_path = final + SWAP_SUFFIX
    disk.write(cleaned_path, b"".join(b.encode() for b in batches))
    disk.fsync(cleaned_path)
    disk.rename(cleaned_path, swap_path)
    for segment in old:
        segment.delete()
    disk.rename(swap_path, final)
    segment = Segment.open_existing(disk, log.directory, old[0].base_offset, log.config)
    scan = segment.recover()
    assert scan.error is None and scan.truncated_bytes == 0, scan
    segment.flush()
    log.replace_segments(index, count, segment)
    return segment
