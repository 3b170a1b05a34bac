"""Record batches (KIP-98 v2 layout): round trips, and every corruption is reported."""

from __future__ import annotations

import struct

import attrs
import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from impl.log.batch import (
    CRC_START,
    HEADER_SIZE,
    LOG_OVERHEAD,
    Record,
    RecordBatch,
    decode,
    encode,
    iter_batches,
    read_header,
)
from impl.log.errors import BatchError, CorruptBatchError, TruncatedBatchError

_nullable = st.one_of(st.none(), st.binary(max_size=300))
records = st.builds(Record, _nullable, _nullable)
batches = st.builds(
    RecordBatch,
    st.lists(records, min_size=1, max_size=8),
    base_offset=st.integers(0, 2**40),
    partition_leader_epoch=st.integers(-1, 2**31 - 1),
    attributes=st.integers(-(2**15), 2**15 - 1).map(lambda a: a & ~0xC0),
    producer_id=st.integers(-1, 2**63 - 1),
    producer_epoch=st.integers(-1, 2**15 - 1),
    base_sequence=st.integers(-1, 2**31 - 1),
)
small_batches = st.builds(
    RecordBatch,
    st.lists(
        st.builds(Record, st.none() | st.binary(max_size=6), st.binary(max_size=6)),
        min_size=1,
        max_size=3,
    ),
    base_offset=st.integers(0, 1000),
    partition_leader_epoch=st.integers(0, 100),
)

EPOCH_FIELD = range(12, 16)
"""Bytes of the partition leader epoch: outside the CRC, as in Kafka (see batch.py)."""


@settings(max_examples=300)
@given(batches)
def test_encode_decode_round_trip(batch):
    data = encode(batch)
    decoded, end = decode(data)
    assert decoded == batch
    assert end == len(data)
    assert encode(decoded) == data


@given(st.lists(batches, min_size=1, max_size=4))
def test_concatenated_batches_decode_in_order(bs):
    assert list(iter_batches(b"".join(encode(b) for b in bs))) == bs


def test_layout_matches_the_v2_header():
    batch = RecordBatch.of(b"v", key=b"k").with_placement(7, 3)
    data = encode(batch)
    base, length, epoch, magic, crc = struct.unpack_from(">qiibI", data)
    assert (base, length, epoch, magic) == (7, len(data) - LOG_OVERHEAD, 3, 2)
    assert crc == crc32c(data[CRC_START:])
    # One record: length 6 | attributes 0 | offset delta 0 | key length 1 | "k" | value
    # length 1 | "v", varints zig-zag encoded (n -> 2n).
    assert data[HEADER_SIZE:] == bytes([12, 0, 0, 2]) + b"k" + bytes([2]) + b"v"
    assert read_header(data) == (7, len(data), 3, 7)


def test_crc32c_is_castagnoli():
    assert crc32c(b"123456789") == 0xE3069283


@settings(max_examples=200, deadline=None)
@given(small_batches, st.data())
def test_crc_catches_every_single_bit_flip_in_the_checksummed_bytes(batch, data):
    encoded = encode(batch)
    bit = data.draw(st.integers(CRC_START * 8 - 32, len(encoded) * 8 - 1))  # CRC field on
    flipped = bytearray(encoded)
    flipped[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(CorruptBatchError, match="CRC-32C mismatch"):
        decode(bytes(flipped))


def test_every_single_bit_flip_outside_the_epoch_field_is_detected_exhaustively():
    batch = RecordBatch.of(b"value-1", None, b"", key=b"key").with_placement(41, 6)
    encoded = encode(batch)
    undetected = []
    for bit in range(len(encoded) * 8):
        flipped = bytearray(encoded)
        flipped[bit // 8] ^= 1 << (bit % 8)
        try:
            decode(bytes(flipped), expected_base_offset=41)
        except BatchError:
            continue
        undetected.append(bit // 8)
    # Only the leader epoch field escapes (all but its sign bit, which makes it < -1).
    assert set(undetected) <= set(EPOCH_FIELD)
    assert len(undetected) == 31


def test_a_flip_in_the_leader_epoch_is_not_caught_by_the_crc_as_in_kafka():
    # Kafka leaves the epoch outside the CRC so the leader can stamp it without recomputing;
    # recovery checks epoch monotonicity instead (test_recovery).
    encoded = bytearray(encode(RecordBatch.of(b"x").with_placement(0, 2)))
    encoded[15] ^= 0x01
    decoded, _ = decode(bytes(encoded))
    assert decoded.partition_leader_epoch == 3


@given(small_batches)
def test_every_proper_prefix_is_reported_as_truncated(batch):
    encoded = encode(batch)
    for cut in range(len(encoded)):
        with pytest.raises(TruncatedBatchError) as e:
            decode(encoded[:cut])
        assert e.value.position == 0


def test_errors_say_where_and_what():
    good = encode(RecordBatch.of(b"a"))
    with pytest.raises(TruncatedBatchError, match=r"batch at byte 5: only 4 bytes left"):
        decode(b"\0" * 5 + good[:4], 5)
    with pytest.raises(TruncatedBatchError, match=r"declares \d+ bytes but only 20 remain"):
        decode(good[:20])
    bad_magic = bytearray(good)
    bad_magic[16] = 1
    with pytest.raises(CorruptBatchError, match="magic byte 1, expected 2"):
        decode(bytes(bad_magic))
    short_length = bytearray(good)
    short_length[8:12] = struct.pack(">i", 10)
    with pytest.raises(CorruptBatchError, match="length field 10 is below"):
        decode(bytes(short_length))
    with pytest.raises(CorruptBatchError, match="base offset 0, but the log's next offset"):
        decode(good, expected_base_offset=3)


def _with_crc(data: bytearray) -> bytes:
    struct.pack_into(">I", data, 17, crc32c(bytes(data[CRC_START:])))
    return bytes(data)


def test_structurally_invalid_batches_with_a_valid_crc_are_corrupt():
    good = bytearray(encode(RecordBatch.of(b"abc", b"de")))
    wrong_count = bytearray(good)
    struct.pack_into(">i", wrong_count, 41, 3)
    with pytest.raises(CorruptBatchError, match="3 records with last offset delta 1"):
        decode(_with_crc(wrong_count))
    extra = good + b"\0"
    struct.pack_into(">i", extra, 8, len(extra) - LOG_OVERHEAD)
    with pytest.raises(CorruptBatchError, match="1 bytes follow the last record"):
        decode(_with_crc(extra))
    wrong_delta = bytearray(good)
    wrong_delta[HEADER_SIZE + 2] = 2  # the first record's offset delta (zig-zag 1)
    # a gap before the first record is legal (a cleaned batch), but the second record's
    # delta 1 then no longer follows it
    with pytest.raises(CorruptBatchError, match="record 1 has offset delta 1, not after 1"):
        decode(_with_crc(wrong_delta))


def test_batches_are_validated_when_built():
    with pytest.raises(ValueError, match="at least one record"):
        RecordBatch(())
    with pytest.raises(TypeError, match="bytes or None"):
        Record("text", None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="partition_leader_epoch"):
        RecordBatch.of(b"x").with_placement(0, -2)
    with pytest.raises(ValueError, match="base_offset"):
        RecordBatch((Record(None, b""),), base_offset=-1)


def test_offsets_of_a_placed_batch():
    batch = RecordBatch.of_pairs([(b"k", b"1"), (None, b"2"), (b"k", None)]).with_placement(10, 4)
    assert (batch.base_offset, batch.last_offset, batch.next_offset) == (10, 12, 13)
    assert [o for o, _ in batch.offsets_and_records()] == [10, 11, 12]


@settings(max_examples=200)
@given(
    small_batches,
    st.data(),
    st.none() | st.integers(-1, 2**40),
    st.none() | st.integers(0, 2**40),
)
def test_a_cleaned_batch_keeps_its_offsets_and_round_trips(batch, data, stamp, horizon):
    keep = data.draw(st.sets(st.integers(0, batch.record_count - 1)))
    cleaned = batch.without_records(keep, delete_horizon_ms=horizon)
    if stamp is not None:
        cleaned = cleaned.with_append_time(stamp)
    assert cleaned.base_offset == batch.base_offset
    assert cleaned.last_offset == batch.last_offset
    before = dict(batch.offsets_and_records())
    after = dict(cleaned.offsets_and_records())
    assert after == {o: r for o, r in before.items() if o - batch.base_offset in keep}
    data_bytes = encode(cleaned)
    decoded, end = decode(data_bytes)
    assert decoded == cleaned and end == len(data_bytes)
    assert read_header(data_bytes).last_offset == batch.last_offset


def test_timestamps_are_flagged_and_kept_out_of_the_attributes_field():
    plain = RecordBatch.of(b"a").with_placement(3, 1)
    stamped = plain.with_append_time(1234)
    assert len(encode(stamped)) == len(encode(plain)) + 16
    assert decode(encode(stamped))[0] == stamped
    assert decode(encode(stamped))[0].attributes == 0
    with pytest.raises(ValueError, match="bit 6 or 7"):
        RecordBatch.of(b"a").__class__((Record(None, b"a"),), attributes=0x80)


def test_an_empty_batch_exists_only_as_a_cleaned_one():
    batch = RecordBatch.of(b"a", b"b").with_placement(7, 2)
    empty = batch.without_records(())
    assert empty.record_count == 0 and (empty.base_offset, empty.last_offset) == (7, 8)
    assert decode(encode(empty))[0] == empty
    with pytest.raises(ValueError, match="only a cleaned batch"):
        RecordBatch(())


@settings(max_examples=300)
@given(batches, st.integers(0, 2**40))
def test_a_batch_decoded_past_the_memo_equals_the_checked_constructor(batch, base_offset):
    """``decode`` builds a batch without re-running the constructor's checks (its own cover
    them): what it builds equals the constructor's batch. The base offset is outside the CRC,
    so rewriting it gives bytes never seen before, which miss the memo and are decoded."""
    data = bytearray(encode(batch))
    struct.pack_into(">q", data, 0, base_offset)
    decoded, _ = decode(bytes(data))
    assert decoded == attrs.evolve(batch, base_offset=base_offset)
    assert encode(decoded) == bytes(data)


@given(st.lists(st.tuples(_nullable, _nullable), min_size=1, max_size=8), batches)
def test_the_leaders_copies_equal_the_checked_constructor(pairs, batch):
    """``of_pairs``, ``with_placement`` and ``with_producer`` skip the checks the fields
    they keep already passed: each equals the fully checked constructor's batch."""
    built = RecordBatch.of_pairs(pairs)
    assert built == RecordBatch(tuple(Record(k, v) for k, v in pairs))
    assert batch.with_placement(7, 3) == attrs.evolve(
        batch, base_offset=7, partition_leader_epoch=3
    )
    assert batch.with_producer(5, 1, 9) == attrs.evolve(
        batch, producer_id=5, producer_epoch=1, base_sequence=9
    )


def test_the_leaders_copies_check_the_fields_they_change():
    batch = RecordBatch.of(b"a", b"b")
    with pytest.raises(ValueError, match="base_offset"):
        batch.with_placement(2**63 - 2, 0)  # the last offset would not fit in an int64
    with pytest.raises(ValueError, match="producer_epoch"):
        batch.with_producer(1, 2**15, 0)
    with pytest.raises(ValueError, match="base_sequence"):
        batch.with_producer(1, 0, 2**31)
    with pytest.raises(TypeError, match="a record value must be bytes or None"):
        RecordBatch.of_pairs([(None, "text")])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="at least one record"):
        RecordBatch.of_pairs([])
