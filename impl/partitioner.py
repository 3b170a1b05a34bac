"""Which partition a producer sends a record to: the Java client's default partitioner.

Keyed records go to ``to_positive(murmur2(key)) % partitions``, bit for bit as the Java
client computes it (``org.apache.kafka.common.utils.Utils.murmur2`` and ``toPositive``), so
that a key lands on the same partition here as with any Kafka client that follows Java (the
contract that makes per-key ordering hold across producers).

Records without a key go round-robin over the topic's partitions: one counter per topic,
the scheme of the pre-2.4 ``DefaultPartitioner`` and of ``RoundRobinPartitioner``: the
counter's next value, made positive, modulo the number of *available* partitions (those with
a leader) if any, else of all partitions. (Java seeds each counter from
``ThreadLocalRandom``; here the first value is 0, or drawn from a ``random.Random`` passed
in, so that a run is reproducible from its seed. KIP-480's sticky and KIP-794's uniform
sticky partitioners, the defaults since 2.4 and 3.3, batch keyless records to one partition
at a time instead; they change latency, not the replication protocol.)

Java's ``int`` arithmetic wraps at 32 bits, and ``>>>`` is an unsigned shift; Python's ints
do neither, so every step below masks to 32 bits and the result is converted to a signed
value at the end.

The contracts in the docstrings are PEP 316 (``pre:``/``post:``), for CrossHair.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

__all__ = ["RoundRobinPartitioner", "murmur2", "partition_for_key", "to_positive"]

_MASK32 = 0xFFFFFFFF
_SEED = 0x9747B28C
_M = 0x5BD1E995
_R = 24


def _to_signed32(value: int) -> int:
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


def murmur2(data: bytes) -> int:
    """MurmurHash2 of ``data`` as the Java client computes it: a signed 32-bit int.

    pre: isinstance(data, bytes)
    post: -(2**31) <= __return__ < 2**31
    """
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK32
        k ^= k >> _R
        k = (k * _M) & _MASK32
        h = (h * _M) & _MASK32
        h ^= k
    tail = length % 4
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return _to_signed32(h)


def to_positive(number: int) -> int:
    """Java's ``Utils.toPositive``: clear the sign bit (not ``abs``, which overflows for
    Integer.MIN_VALUE).

    pre: -(2**31) <= number < 2**31
    post: 0 <= __return__ <= 0x7FFFFFFF
    post: __return__ == number & 0x7FFFFFFF
    """
    return number & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition of a keyed record: ``to_positive(murmur2(key)) % num_partitions``. A
    function of the key and the partition count only: the same key, the same partition.

    pre: isinstance(key, bytes)
    pre: num_partitions > 0
    post: 0 <= __return__ < num_partitions
    post: __return__ == to_positive(murmur2(key)) % num_partitions
    """
    if num_partitions < 1:
        raise ValueError(f"a topic has at least one partition, got {num_partitions}")
    return to_positive(murmur2(key)) % num_partitions


class RoundRobinPartitioner:
    """Keyless records round-robin per topic; keyed records by ``partition_for_key``.

    Deterministic: the counters start at 0, or at values drawn from ``rng`` (one draw per
    topic, in the order topics are first seen), and wrap like Java's 32-bit
    ``AtomicInteger``.
    """

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng
        self._counters: dict[str, int] = {}

    def partition(
        self,
        topic: str,
        key: bytes | None,
        num_partitions: int,
        available: Sequence[int] | None = None,
    ) -> int:
        """The partition for a record of ``topic`` with ``key``.

        ``available`` lists the partitions that currently have a leader; keyless records go
        only to those when there are any. Keyed records ignore it: a key's partition must not
        depend on which brokers are up.

        pre: num_partitions > 0
        pre: available is None or all(0 <= p < num_partitions for p in available)
        post: 0 <= __return__ < num_partitions
        """
        if num_partitions < 1:
            raise ValueError(f"a topic has at least one partition, got {num_partitions}")
        if key is not None:
            return partition_for_key(key, num_partitions)
        value = self._next_value(topic)
        if available:
            choices = sorted(available)
            if choices[0] < 0 or choices[-1] >= num_partitions:
                raise ValueError(f"available partitions {choices} outside [0, {num_partitions})")
            return choices[to_positive(value) % len(choices)]
        return to_positive(value) % num_partitions

    def _next_value(self, topic: str) -> int:
        current = self._counters.get(topic)
        if current is None:
            current = 0 if self._rng is None else _to_signed32(self._rng.getrandbits(32))
        self._counters[topic] = _to_signed32(current + 1)
        return current
