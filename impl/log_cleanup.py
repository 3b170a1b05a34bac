"""A broker's periodic log cleanup: retention and compaction of the logs it hosts (Kafka's
``LogManager.cleanupLogs``, scheduled every ``log.retention.check.interval.ms``, and the
``LogCleaner`` threads, which look for a dirty log every ``log.cleaner.backoff.ms``).

Both run on the broker's logical clock from its tick, over the broker's replicas in sorted
order, and only for logs whose config asks for them (``cleanup.policy``, ``retention.ms``,
``retention.bytes``, ``log.cleaner.enable``): with Kafka's defaults as this model sets them
(no retention limit, ``delete`` policy) a tick does nothing at all. Leaders and followers
alike clean their own logs, each below its own high watermark, as in Kafka; a replica's
timestamps are the leader's (they travel in the batches). What ran is counted in
``stats``; the logs themselves say what they hold.

The cleaner's checkpoint, where each compacted log's dirty part begins, is written to
``cleaner-offset-checkpoint`` after every cleaning (Kafka's ``LogCleanerManager.doneCleaning``)
and read back when the broker starts (``load_checkpoint``): a restarted broker does not take
its whole compacted log as dirty and clean it again at once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import attrs

from impl.log import Log, OffsetCheckpointFile, TopicPartition
from impl.log.cleaner import LogCleaner
from impl.log.retention import apply_retention

__all__ = ["LogCleanup"]


class HostedLog(Protocol):
    """What the cleanup needs of a replica: its log and its high watermark."""

    log: Log
    hw: int


@attrs.define
class LogCleanup:
    retention_check_interval_ns: int
    """``log.retention.check.interval.ms`` (Kafka: 5 minutes)."""
    cleaner_backoff_ns: int
    """``log.cleaner.backoff.ms`` (Kafka: 15 seconds)."""
    next_retention_at: int = 0
    next_clean_at: int = 0
    cleaner: LogCleaner = attrs.Factory(LogCleaner)
    checkpoint: OffsetCheckpointFile | None = None
    """``cleaner-offset-checkpoint`` (None: the cleaner's checkpoint stays in memory)."""
    stats: dict[str, int] = attrs.Factory(
        lambda: {"segments_deleted": 0, "cleanings": 0, "records_cleaned": 0}
    )

    def tick(self, replicas: Mapping[tuple[str, int], HostedLog], now: int, wall: int) -> None:
        """Run what is due at monotonic time ``now``; ``wall`` (ns) is the clock batch
        timestamps and tombstone horizons are compared with."""
        now_ms = wall // 1_000_000
        if now >= self.next_retention_at:
            self.next_retention_at = now + self.retention_check_interval_ns
            for key in sorted(replicas):
                replica = replicas[key]
                result = apply_retention(replica.log, high_watermark=replica.hw, now_ms=now_ms)
                if result is not None:
                    self.stats["segments_deleted"] += result.segments_deleted
        if now >= self.next_clean_at:
            self.next_clean_at = now + self.cleaner_backoff_ns
            for key in sorted(replicas):
                replica = replicas[key]
                cleaned = self.cleaner.maybe_clean(replica.log, replica.hw, now_ms)
                if cleaned is not None:
                    self.stats["cleanings"] += 1
                    self.stats["records_cleaned"] += cleaned.records_before - cleaned.records_after
                    self._write_checkpoint(replicas)

    def load_checkpoint(self, replicas: Mapping[tuple[str, int], HostedLog]) -> None:
        """Take the cleaner's checkpoint from ``cleaner-offset-checkpoint`` for the logs
        ``replicas`` hosts (one the log no longer covers is reset by the cleaner)."""
        if self.checkpoint is None:
            return
        stored = self.checkpoint.read()
        for (topic, partition), replica in sorted(replicas.items()):
            offset = stored.get(TopicPartition(topic, partition))
            if offset is not None:
                self.cleaner.first_dirty[replica.log.directory] = offset

    def _write_checkpoint(self, replicas: Mapping[tuple[str, int], HostedLog]) -> None:
        if self.checkpoint is None:
            return
        first_dirty = self.cleaner.first_dirty
        self.checkpoint.write(
            {
                TopicPartition(topic, partition): first_dirty[replica.log.directory]
                for (topic, partition), replica in sorted(replicas.items())
                if replica.log.directory in first_dirty
            }
        )
