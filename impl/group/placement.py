"""Where a consumer group's coordinator lives: the ``__consumer_offsets`` partition of a group.

Kafka keeps a group's metadata and committed offsets in one partition of the internal topic
``__consumer_offsets`` (``offsets.topic.num.partitions``, 50 by default); the broker that
leads that partition is the group's coordinator (``FindCoordinator`` answers with it). The
partition is ``GroupMetadataManager.partitionFor``: ``Utils.abs(groupId.hashCode) %
offsets.topic.num.partitions``, where

- ``String.hashCode`` is ``s[0]*31^(n-1) + ... + s[n-1]`` over the string's UTF-16 code
  units, in 32-bit two's-complement arithmetic (it overflows and wraps), and
- ``Utils.abs(n)`` is ``n == Integer.MIN_VALUE ? 0 : Math.abs(n)`` (``Math.abs`` of
  ``Integer.MIN_VALUE`` is ``Integer.MIN_VALUE`` itself, negative, which ``%`` would keep
  negative: Kafka maps it to 0 instead).
"""

from __future__ import annotations

__all__ = [
    "CONSUMER_OFFSETS",
    "DEFAULT_OFFSETS_PARTITIONS",
    "coordinator_partition",
    "java_string_hash",
    "kafka_abs",
]

CONSUMER_OFFSETS = "__consumer_offsets"
DEFAULT_OFFSETS_PARTITIONS = 50
"""``offsets.topic.num.partitions``'s default."""

_INT_MIN = -(2**31)


def _to_int32(n: int) -> int:
    n &= 0xFFFFFFFF
    return n - 2**32 if n >= 2**31 else n


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode`` of ``s``: over UTF-16 code units (a character outside the
    BMP counts as its two surrogates), wrapping at 32 bits like Java's ``int``."""
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return _to_int32(h)


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``Math.abs`` except that ``Integer.MIN_VALUE`` maps to 0."""
    if not _INT_MIN <= n < 2**31:
        raise ValueError(f"kafka_abs takes a Java int (32-bit), got {n}")
    return 0 if n == _INT_MIN else abs(n)


def coordinator_partition(group_id: str, partitions: int = DEFAULT_OFFSETS_PARTITIONS) -> int:
    """The ``__consumer_offsets`` partition holding ``group_id``
    (``GroupMetadataManager.partitionFor``); its leader is the group's coordinator."""
    if partitions < 1:
        raise ValueError(
            f"offsets.topic.num.partitions must be >= 1, got {partitions}; Kafka's default is "
            f"{DEFAULT_OFFSETS_PARTITIONS}"
        )
    return kafka_abs(java_string_hash(group_id)) % partitions
