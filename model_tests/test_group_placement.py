"""``impl.group.placement``: Java's ``String.hashCode`` and Kafka's ``partitionFor``, on values
known from the JVM (``"hello".hashCode() == 99162322``, ``"Hello World".hashCode() ==
-862545276``, ``"polygenelubricants".hashCode() == Integer.MIN_VALUE``)."""

from __future__ import annotations

import pytest

from impl.group.placement import (
    DEFAULT_OFFSETS_PARTITIONS,
    coordinator_partition,
    java_string_hash,
    kafka_abs,
)

INT_MIN = -(2**31)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("Aa", 2112),
        ("BB", 2112),
        ("hello", 99162322),
        ("Hello World", -862545276),
        ("polygenelubricants", INT_MIN),
        ("\U0001f600", 0xD83D * 31 + 0xDE00),  # outside the BMP: two UTF-16 code units
    ],
)
def test_java_string_hash_matches_the_jvm(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_kafka_abs_maps_integer_min_value_to_zero() -> None:
    assert kafka_abs(INT_MIN) == 0
    assert kafka_abs(-5) == 5
    assert kafka_abs(2**31 - 1) == 2**31 - 1
    with pytest.raises(ValueError, match="32-bit"):
        kafka_abs(2**31)


def test_coordinator_partition_known_values() -> None:
    assert DEFAULT_OFFSETS_PARTITIONS == 50
    assert coordinator_partition("hello") == 99162322 % 50 == 22
    assert coordinator_partition("Hello World") == 862545276 % 50 == 26
    # Math.abs(Integer.MIN_VALUE) is negative; Kafka's Utils.abs makes it partition 0.
    assert coordinator_partition("polygenelubricants") == 0
    assert coordinator_partition("polygenelubricants", 7) == 0
    assert coordinator_partition("Aa", 3) == 2112 % 3
    assert all(0 <= coordinator_partition(f"g{i}", 50) < 50 for i in range(200))


def test_coordinator_partition_rejects_no_partitions() -> None:
    with pytest.raises(ValueError, match=r"offsets\.topic\.num\.partitions"):
        coordinator_partition("g", 0)
