"""The log's configuration: Kafka's topic-level storage settings that this model implements.

Defaults are Kafka's. Simulations and tests usually shrink ``segment_bytes`` and
``index_interval_bytes`` so that rolls and sparse-index lookups happen within a few
appends.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from impl.log.index import ENTRY_SIZE

__all__ = ["LogConfig"]


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

    @flush_interval_messages.validator
    def _check_flush(self, attribute: attrs.Attribute, value: int | None) -> None:
        if value is not None:
            _at_least(1)(self, attribute, value)

    @property
    def max_index_entries(self) -> int:
        return self.segment_index_bytes // ENTRY_SIZE
