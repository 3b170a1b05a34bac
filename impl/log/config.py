"""The log's configuration: Kafka's topic-level storage settings that this model implements.

Defaults are Kafka's, except ``retention_ms`` (see there). Simulations and tests usually
shrink ``segment_bytes`` and ``index_interval_bytes`` so that rolls and sparse-index lookups
happen within a few appends.

``cleanup.policy`` chooses what happens to old segments (Kafka docs, "Log Compaction"):
``delete`` removes whole segments past ``retention.ms``/``retention.bytes``
(``impl.log.retention``); ``compact`` keeps the last record of every key and drops the rest
(``impl.log.cleaner``); ``compact,delete`` does both.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from impl.log.index import ENTRY_SIZE

__all__ = ["CLEANUP_POLICIES", "LogConfig"]

CLEANUP_POLICIES = ("delete", "compact", "compact,delete")
"""``cleanup.policy``'s values (``delete,compact`` is read as ``compact,delete``)."""


def _policy(value: str) -> str:
    normal = ",".join(sorted(part.strip() for part in str(value).split(",")))
    if normal not in CLEANUP_POLICIES:
        raise ValueError(
            f"cleanup.policy must be one of {', '.join(CLEANUP_POLICIES)}, got {value!r}"
        )
    return normal


def _ratio(instance: object, attribute: attrs.Attribute, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValueError(f"{attribute.name} must be a number in [0, 1], got {value!r}")


def _at_least(minimum: int) -> Callable[[object, attrs.Attribute, int], None]:
    def check(instance: object, attribute: attrs.Attribute, value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"{attribute.name} must be an int >= {minimum}, got {value!r}")

    return check


@attrs.frozen(slots=True)
class LogConfig:
    segment_bytes: int = attrs.field(default=1024**3, validator=_at_least(1))
    """``log.segment.bytes``: roll to a new segment when an append would make the active one
    larger than this (a single larger batch still goes into an empty segment)."""

    index_interval_bytes: int = attrs.field(default=4096, validator=_at_least(0))
    """``log.index.interval.bytes``: add an offset-index entry once more than this many bytes
    were appended since the last one."""

    segment_index_bytes: int = attrs.field(default=10 * 1024**2, validator=_at_least(ENTRY_SIZE))
    """``log.index.size.max.bytes``/``segment.index.bytes``: a full index rolls the log."""

    max_batch_bytes: int = attrs.field(default=1048588, validator=_at_least(1))
    """``max.message.bytes``: the largest batch the log accepts."""

    flush_interval_messages: int | None = attrs.field(default=None)
    """``log.flush.interval.messages``: fsync after this many records since the last flush;
    None (Kafka's default, effectively Long.MAX_VALUE) leaves flushing to the caller."""

    flush_on_roll: bool = True
    """Kafka flushes a segment (asynchronously, right away) when it rolls to the next one; so
    only the active segment normally holds unflushed data. Modelled synchronously."""

    cleanup_policy: str = attrs.field(default="delete", converter=_policy)
    """``cleanup.policy``: ``delete``, ``compact`` or ``compact,delete``."""

    cleaner_enable: bool = True
    """``log.cleaner.enable``: whether the broker's cleaner compacts ``compact`` logs."""

    min_cleanable_dirty_ratio: float = attrs.field(default=0.5, validator=_ratio)
    """``min.cleanable.dirty.ratio``: clean a log once the bytes written since its last
    cleaning are at least this fraction of its cleanable bytes."""

    delete_retention_ms: int = attrs.field(default=86_400_000, validator=_at_least(0))
    """``delete.retention.ms``: how long a tombstone (a null value) survives the cleaning
    pass that first saw it (KIP-534's delete horizon), so that a consumer reading the log
    from the start sees the delete."""

    retention_ms: int = attrs.field(default=-1, validator=_at_least(-1))
    """``retention.ms``: delete a non-active segment whose largest timestamp is older than
    this; -1: no time limit. Kafka's default is 7 days; the model's is -1, so that a log
    carries batch timestamps (``impl.log.batch``) only when asked."""

    retention_bytes: int = attrs.field(default=-1, validator=_at_least(-1))
    """``retention.bytes``: delete the oldest non-active segments while the log would stay
    at least this large without them; -1 (Kafka's default): no size limit."""

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy.split(",")

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy.split(",")

    @property
    def stamps_append_time(self) -> bool:
        """Whether the leader stamps its LogAppendTime into batches: only time-based
        retention reads them."""
        return self.delete and self.retention_ms >= 0

    @flush_interval_messages.validator
    def _check_flush(self, attribute: attrs.Attribute, value: int | None) -> None:
        if value is not None:
            _at_least(1)(self, attribute, value)

    @property
    def max_index_entries(self) -> int:
        return self.segment_index_bytes // ENTRY_SIZE
