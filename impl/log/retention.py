"""Retention: deleting a log's oldest segments (Kafka's ``UnifiedLog.deleteOldSegments``).

With ``cleanup.policy=delete`` (or ``compact,delete``) a log does not grow for ever. On every
``log.retention.check.interval.ms`` the broker deletes, oldest first, whole segments that
are

- past ``retention.ms``: the segment's largest timestamp (the LogAppendTime the leader
  stamped into its batches, ``impl.log.batch``) is more than ``retention.ms`` before now;
  a segment without timestamps is never past it (Kafka would fall back to the file's
  modification time, which this model has not got);
- or beyond ``retention.bytes``: deleting it leaves the log at least ``retention.bytes``
  large (Kafka's ``shouldDelete = diff - segment.size >= 0``);

and only while each segment in turn qualifies (Kafka's ``deletableSegments`` stops at the
first that does not). Never the active segment, and never a segment holding an offset at or
above the high watermark (Kafka's ``highWatermark >= nextSegment.baseOffset``): a record
consumers may not read yet is not deleted. The log start offset moves to the first offset
left; fetches below it are answered OFFSET_OUT_OF_RANGE (``Log.read``) and a consumer
resets its position (``auto.offset.reset``).

Deleting a segment is one durable ``delete`` per file; the log start offset after a
restart is the first segment's base offset (``impl.log.recovery``), so a crash between two
deletions leaves a shorter deletion, never a hole.
"""

from __future__ import annotations

import itertools

import attrs

from impl.log.log import Log
from impl.log.segment import Segment

__all__ = ["RetentionResult", "apply_retention", "largest_timestamp"]


@attrs.frozen(slots=True)
class RetentionResult:
    """What one retention pass deleted from one log."""

    directory: str
    segments_deleted: int
    bytes_deleted: int
    log_start_before: int
    log_start_after: int
    by_time: int
    """Of ``segments_deleted``, how many for ``retention.ms`` (the rest: ``retention.bytes``)."""


def largest_timestamp(segment: Segment) -> int | None:
    """The largest batch timestamp in ``segment`` (Kafka's ``LogSegment.largestTimestamp``);
    None if no batch carries one."""
    stamps = [b.max_timestamp for b in segment.batches() if b.max_timestamp is not None]
    return max(stamps) if stamps else None


def apply_retention(log: Log, *, high_watermark: int, now_ms: int) -> RetentionResult | None:
    """Delete the segments of ``log`` past its retention (see the module docstring); None
    if the policy is not ``delete`` or nothing was deleted."""
    config = log.config
    if not config.delete or (config.retention_ms < 0 and config.retention_bytes < 0):
        return None
    if high_watermark > log.log_end_offset:
        raise ValueError(
            f"{log.directory}: high watermark {high_watermark} is beyond the LEO "
            f"{log.log_end_offset}"
        )
    segments = log.segments
    excess = log.size_in_bytes - config.retention_bytes if config.retention_bytes >= 0 else -1
    count = by_time = deleted_bytes = 0
    for segment, following in itertools.pairwise(segments):
        if following.base_offset > high_watermark:
            break
        expired = False
        if config.retention_ms >= 0:
            stamp = largest_timestamp(segment)
            expired = stamp is not None and now_ms - stamp > config.retention_ms
        too_big = config.retention_bytes >= 0 and excess - segment.size >= 0
        if not (expired or too_big):
            break
        excess -= segment.size
        count += 1
        by_time += expired
        deleted_bytes += segment.size
    if not count:
        return None
    before = log.log_start_offset
    after = log.delete_oldest_segments(count)
    assert after <= high_watermark, (after, high_watermark)
    return RetentionResult(log.directory, count, deleted_bytes, before, after, by_time)
