"""Record batches: the unit the log stores, replicates and validates (KIP-98, magic v2).

Every append, every replica fetch and every consumer read moves whole batches; a batch is
written atomically in the sense that recovery keeps it entirely or drops it entirely. The
byte layout follows Kafka's v2 ``DefaultRecordBatch``, big-endian, with the timestamps
optional (see below)::

    offset  size  field
         0     8  base offset               assigned by the leader on append
         8     4  batch length              bytes after this field
        12     4  partition leader epoch    stamped by the leader on append
        16     1  magic                     2
        17     4  CRC-32C                   over bytes 21 .. end (attributes onwards)
        21     2  attributes                (compression etc.; 0 here, carried as is)
        23     4  last offset delta         record count - 1 as produced; kept by the cleaner
        27     8  producer id               -1 unless idempotent (KIP-98)
        35     2  producer epoch            -1
        37     4  base sequence             -1
        41     4  record count              0 only for a cleaned batch whose records all went
        45    16  base and max timestamp    only if attributes has TIMESTAMPS_FLAG (below)
        ..    ..  records

    record: length varint | attributes int8 (0) | offset delta varint |
            key length varint (-1 = null) | key | value length varint (-1 = null) | value

Varints are zig-zag base-128, as Kafka's ``ByteUtils.writeVarint``.

Timestamps. Kafka's v2 always carries a base and a max timestamp; this model carries them only
when a log needs time (``retention.ms``, or the tombstone delete horizon of compaction,
KIP-534), flagged by attribute bit 7 (``TIMESTAMPS_FLAG``, unused by Kafka), so that a log
without them keeps the exact bytes (and so the segment rolls and fetch sizes) it had before
they existed. A batch's ``max_timestamp`` is its LogAppendTime (``message.timestamp.type``),
stamped by the leader; followers copy it with the bytes. Attribute bit 6 is KIP-534's
``DELETE_HORIZON_FLAG``: the base timestamp then holds the time after which the cleaner may
drop the batch's tombstones. Both bits are owned by the codec: ``RecordBatch.attributes``
never holds them.

Compaction (``impl.log.cleaner``) keeps a v2 batch's base offset and last offset delta when
it removes records from it, as Kafka's ``MemoryRecords.filterTo`` does, so the remaining
records' offset deltas have gaps and a batch may hold no record at all (Kafka's empty
batch): every offset still belongs to exactly one batch, and offsets stay contiguous from
batch to batch.

Why the CRC starts at the attributes, as in Kafka: the base offset and the partition leader
epoch are rewritten by the leader when it appends a producer's batch, and the CRC must not
have to be recomputed for that. The consequence is kept too: a flipped bit in those two
fields is not caught by the CRC. The base offset is still checked (``expected_base_offset``:
offsets in a log are contiguous), the length and magic by framing; a flipped leader epoch is
only caught when it breaks epoch monotonicity (see ``impl.log.recovery``).

``decode`` raises ``TruncatedBatchError`` when the bytes end before the batch does (a torn
write), ``CorruptBatchError`` when a complete batch is wrong, each saying where and why.
"""

from __future__ import annotations

import itertools
import operator
import struct
from collections.abc import Iterable, Iterator
from typing import NamedTuple

import attrs
from crc32c import crc32c

from impl.log.errors import CorruptBatchError, TruncatedBatchError

__all__ = [
    "CRC_START",
    "DELETE_HORIZON_FLAG",
    "HEADER_SIZE",
    "LOG_OVERHEAD",
    "MAGIC",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "TIMESTAMPS_FLAG",
    "BatchHeader",
    "Record",
    "RecordBatch",
    "batch_end",
    "decode",
    "encode",
    "iter_batches",
    "read_header",
]

MAGIC = 2
NO_PARTITION_LEADER_EPOCH = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_TIMESTAMP = -1
TIMESTAMPS_FLAG = 0x80
"""Attribute bit 7 (this model's): a base and a max timestamp follow the fixed header."""
DELETE_HORIZON_FLAG = 0x40
"""Attribute bit 6 (KIP-534): the base timestamp is the tombstones' delete horizon."""
_CODEC_FLAGS = TIMESTAMPS_FLAG | DELETE_HORIZON_FLAG
_TIMESTAMPS = struct.Struct(">qq")

_HEADER = struct.Struct(">qiibIhiqhii")
HEADER_SIZE = _HEADER.size
LOG_OVERHEAD = 12
"""Base offset + batch length: the bytes of a batch its length field does not count."""
CRC_START = 21
_PREFIX = struct.Struct(">qi")
_NAVIGATION = struct.Struct(">qiibIhi")
"""The header from the base offset through the last offset delta: what ``read_header``
needs to step over a batch."""
_MIN_LENGTH = HEADER_SIZE - LOG_OVERHEAD

_INT16 = (-(2**15), 2**15 - 1)
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)

assert HEADER_SIZE == 45
assert _NAVIGATION.size == 27


def _check_range(name: str, value: int, low: int, high: int) -> None:
    if type(value) is int and low <= value <= high:
        return  # the common case, checked first: a plain int in range
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}: {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{low}, {high}], got {value}")


def _check_nullable_bytes(name: str, value: bytes | None) -> None:
    if value is not None and type(value) is not bytes:
        raise TypeError(f"a record {name} must be bytes or None, got {type(value).__name__}")


@attrs.frozen(slots=True)
class Record:
    """One record: a key and a value, each bytes or None (null). Its offset is its batch's
    base offset plus its index in the batch."""

    key: bytes | None
    value: bytes | None

    def __attrs_post_init__(self) -> None:
        _check_nullable_bytes("key", self.key)
        _check_nullable_bytes("value", self.value)


def _to_records(records: Iterable[Record]) -> tuple[Record, ...]:
    return tuple(records)


def _to_deltas(deltas: Iterable[int] | None) -> tuple[int, ...] | None:
    return None if deltas is None else tuple(deltas)


@attrs.frozen(slots=True)
class RecordBatch:
    """A run of records written in one leader epoch, covering offsets ``base_offset`` ..
    ``last_offset``.

    A producer builds one with ``base_offset=0`` and no leader epoch; the leader's log
    assigns both (``with_placement``) when it appends. As produced, the records have
    consecutive offsets (``offset_deltas`` and ``cleaned_last_delta`` are None). The
    cleaner (``without_records``) removes records and keeps the batch's offset range, so
    its records' offset deltas may have gaps and it may hold none.
    """

    records: tuple[Record, ...] = attrs.field(converter=_to_records)
    base_offset: int = 0
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH
    attributes: int = 0
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    max_timestamp: int | None = None
    """The batch's LogAppendTime in ms (None: the batch carries no timestamps)."""
    delete_horizon_ms: int | None = None
    """KIP-534: when the cleaner may drop this batch's tombstones (None: not set yet)."""
    offset_deltas: tuple[int, ...] | None = attrs.field(default=None, converter=_to_deltas)
    """Each record's offset minus ``base_offset``; None: 0, 1, 2, ... (as produced)."""
    cleaned_last_delta: int | None = None
    """The last offset delta of a cleaned batch; None: ``len(records) - 1``."""

    def __attrs_post_init__(self) -> None:
        for record in self.records:
            if not isinstance(record, Record):
                raise TypeError(f"records must be Record values, got {type(record).__name__}")
        if not self.records and self.cleaned_last_delta is None:
            raise ValueError(
                "a record batch holds at least one record (only a cleaned batch, with "
                "cleaned_last_delta set, may be empty)"
            )
        if self.offset_deltas is not None:
            deltas = self.offset_deltas
            if len(deltas) != len(self.records):
                raise ValueError(f"{len(self.records)} records but {len(deltas)} offset deltas")
            if any(a >= b for a, b in itertools.pairwise(deltas)) or (deltas and deltas[0] < 0):
                raise ValueError(f"offset deltas {deltas} must be >= 0 and strictly increase")
        last = self.last_offset_delta
        _check_range("last offset delta", last, 0, _INT32[1])
        if self.records and self.delta(len(self.records) - 1) > last:
            raise ValueError(f"a record's offset delta exceeds the last offset delta {last}")
        _check_range("base_offset", self.base_offset, 0, _INT64[1] - last - 1)
        _check_range("partition_leader_epoch", self.partition_leader_epoch, -1, _INT32[1])
        _check_range("attributes", self.attributes, *_INT16)
        if self.attributes & _CODEC_FLAGS:
            raise ValueError(
                f"attributes 0x{self.attributes & 0xFFFF:04x} set bit 6 or 7, which the codec "
                "owns: set max_timestamp / delete_horizon_ms instead"
            )
        _check_range("producer_id", self.producer_id, *_INT64)
        _check_range("producer_epoch", self.producer_epoch, *_INT16)
        _check_range("base_sequence", self.base_sequence, *_INT32)
        _check_range("record count", len(self.records), 0, _INT32[1])
        for name in ("max_timestamp", "delete_horizon_ms"):
            value = getattr(self, name)
            if value is not None:
                _check_range(name, value, -1, _INT64[1])

    @classmethod
    def of(cls, *values: bytes | None, key: bytes | None = None) -> RecordBatch:
        """A producer's batch of ``values``, all with the same ``key``."""
        return cls(tuple(Record(key, value) for value in values))

    @classmethod
    def of_pairs(cls, pairs: Iterable[tuple[bytes | None, bytes | None]]) -> RecordBatch:
        """A producer's batch of (key, value) pairs.

        Every leader builds one per Produce, so the checks are done here in one pass: each
        key and value must be bytes or None (else ``Record`` raises its error), and a batch
        of defaults needs only a record count in range (else the constructor raises)."""
        records = []
        for key, value in pairs:
            if (key is None or type(key) is bytes) and (value is None or type(value) is bytes):
                records.append(_trusted_record(key, value))
            else:
                records.append(Record(key, value))  # raises: says which is not bytes
        if cls is not RecordBatch or not 0 < len(records) <= _INT32[1]:
            return cls(tuple(records))
        return _trusted_batch(cls, (tuple(records), *_DEFAULTS_AFTER_RECORDS))

    @property
    def record_count(self) -> int:
        return len(self.records)

    @property
    def last_offset_delta(self) -> int:
        if self.cleaned_last_delta is not None:
            return self.cleaned_last_delta
        return len(self.records) - 1

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def has_timestamps(self) -> bool:
        return self.max_timestamp is not None or self.delete_horizon_ms is not None

    def delta(self, index: int) -> int:
        """The offset delta of record ``index``."""
        return index if self.offset_deltas is None else self.offset_deltas[index]

    def with_placement(self, base_offset: int, partition_leader_epoch: int) -> RecordBatch:
        """This batch as the leader appends it: at ``base_offset``, in its epoch.

        Only the two new fields are checked (as ``__attrs_post_init__`` checks them): the
        rest was validated when this batch was built, and a leader places every batch it
        appends, so skipping the records' checks matters."""
        _check_range("base_offset", base_offset, 0, _INT64[1] - self.last_offset_delta - 1)
        _check_range("partition_leader_epoch", partition_leader_epoch, -1, _INT32[1])
        return self._with(base_offset=base_offset, partition_leader_epoch=partition_leader_epoch)

    def with_producer(
        self, producer_id: int, producer_epoch: int, base_sequence: int
    ) -> RecordBatch:
        """This batch as an idempotent producer's (KIP-98): its producer id, epoch and base
        sequence (only they are checked, as in ``with_placement``)."""
        _check_range("producer_id", producer_id, *_INT64)
        _check_range("producer_epoch", producer_epoch, *_INT16)
        _check_range("base_sequence", base_sequence, *_INT32)
        return self._with(
            producer_id=producer_id, producer_epoch=producer_epoch, base_sequence=base_sequence
        )

    def with_append_time(self, timestamp_ms: int) -> RecordBatch:
        """This batch stamped with the leader's LogAppendTime (only the stamp is checked,
        as in ``with_placement``)."""
        if timestamp_ms is not None:
            _check_range("max_timestamp", timestamp_ms, -1, _INT64[1])
        return self._with(max_timestamp=timestamp_ms)

    def _with(self, **changes: object) -> RecordBatch:
        """A copy with ``changes``, which the caller checked; the other fields were checked
        when this batch was built."""
        values = list(_get_fields(self))  # (one C call for all the fields: every append)
        for name, value in changes.items():
            values[_FIELD_INDEX[name]] = value
        return _trusted_batch(type(self), values)

    def without_records(
        self, keep: Iterable[int], delete_horizon_ms: int | None = None
    ) -> RecordBatch:
        """The cleaner's copy of this batch: only the records at indexes ``keep`` (in
        order), at their original offsets; base offset, last offset and every header field
        kept (Kafka's ``MemoryRecords.filterTo`` for v2), ``delete_horizon_ms`` set if
        given."""
        indexes = sorted(set(keep))
        if indexes and not 0 <= indexes[0] <= indexes[-1] < len(self.records):
            raise IndexError(f"record indexes {indexes} outside 0..{len(self.records) - 1}")
        deltas = tuple(self.delta(i) for i in indexes)
        last = self.last_offset_delta
        consecutive = deltas == tuple(range(len(deltas)))
        return attrs.evolve(
            self,
            records=tuple(self.records[i] for i in indexes),
            offset_deltas=None if consecutive else deltas,
            cleaned_last_delta=None if consecutive and last == len(deltas) - 1 else last,
            delete_horizon_ms=(
                self.delete_horizon_ms if delete_horizon_ms is None else delete_horizon_ms
            ),
        )

    def offsets_and_records(self) -> Iterator[tuple[int, Record]]:
        for index, record in enumerate(self.records):
            yield self.base_offset + self.delta(index), record

    def encode(self) -> bytes:
        return encode(self)


_FIELD_NAMES = tuple(a.name for a in attrs.fields(RecordBatch))
assert _FIELD_NAMES == (
    "records",
    "base_offset",
    "partition_leader_epoch",
    "attributes",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "max_timestamp",
    "delete_horizon_ms",
    "offset_deltas",
    "cleaned_last_delta",
), "_trusted_batch sets the fields by name, in this order"
_FIELD_INDEX = {name: i for i, name in enumerate(_FIELD_NAMES)}
_get_fields = operator.attrgetter(*_FIELD_NAMES)
_DEFAULTS_AFTER_RECORDS = tuple(a.default for a in attrs.fields(RecordBatch)[1:])
assert attrs.NOTHING not in _DEFAULTS_AFTER_RECORDS and _FIELD_NAMES[0] == "records"
_set_field = object.__setattr__


def _trusted_batch(cls: type[RecordBatch], values: Iterable[object]) -> RecordBatch:
    """A ``RecordBatch`` of field ``values`` (in ``_FIELD_NAMES`` order, records already a
    tuple of ``Record``) that the caller has validated as ``__attrs_post_init__`` would:
    ``decode`` (which checks a batch's bytes field by field) and the ``with_*`` copies. It
    skips ``__init__``: building a batch is on the path of every append and every read."""
    (
        records,
        base_offset,
        partition_leader_epoch,
        attributes,
        producer_id,
        producer_epoch,
        base_sequence,
        max_timestamp,
        delete_horizon_ms,
        offset_deltas,
        cleaned_last_delta,
    ) = values  # _FIELD_NAMES, unrolled: this runs for every batch built
    batch = object.__new__(cls)
    _set_field(batch, "records", records)
    _set_field(batch, "base_offset", base_offset)
    _set_field(batch, "partition_leader_epoch", partition_leader_epoch)
    _set_field(batch, "attributes", attributes)
    _set_field(batch, "producer_id", producer_id)
    _set_field(batch, "producer_epoch", producer_epoch)
    _set_field(batch, "base_sequence", base_sequence)
    _set_field(batch, "max_timestamp", max_timestamp)
    _set_field(batch, "delete_horizon_ms", delete_horizon_ms)
    _set_field(batch, "offset_deltas", offset_deltas)
    _set_field(batch, "cleaned_last_delta", cleaned_last_delta)
    return batch


class BatchHeader(NamedTuple):
    """The fields of a batch a log needs to navigate without decoding the records."""

    base_offset: int
    size: int
    """Total bytes of the batch, prefix included."""
    partition_leader_epoch: int
    last_offset: int


# ---------------------------------------------------------------------------- varints


def _write_varint(out: bytearray, value: int) -> None:
    v = ((value << 1) ^ (value >> 31)) & 0xFFFFFFFF
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


class _Malformed(Exception):
    """Internal: the records section does not parse; turned into CorruptBatchError."""


def _read_varint(buf: bytes | bytearray | memoryview, pos: int, end: int) -> tuple[int, int]:
    result = 0
    for shift in (0, 7, 14, 21, 28):
        if pos >= end:
            raise _Malformed("a varint runs past the end of the batch")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            if result > 0xFFFFFFFF:
                raise _Malformed("a varint does not fit in 32 bits")
            return (result >> 1) ^ -(result & 1), pos
    raise _Malformed("a varint is longer than 5 bytes")


def _write_nullable(out: bytearray, data: bytes | None) -> None:
    if data is None:
        _write_varint(out, -1)
    else:
        _write_varint(out, len(data))
        out += data


def _read_nullable(
    buf: bytes | bytearray | memoryview, pos: int, end: int, what: str
) -> tuple[bytes | None, int]:
    if pos < end and (byte := buf[pos]) < 0x80:  # a one-byte varint, as _decode_records
        length, pos = (byte >> 1) ^ -(byte & 1), pos + 1
    else:
        length, pos = _read_varint(buf, pos, end)
    if length == -1:
        return None, pos
    if length < -1:
        raise _Malformed(f"a record {what} has length {length}")
    if pos + length > end:
        raise _Malformed(f"a record {what} of {length} bytes runs past the end of its record")
    return bytes(buf[pos : pos + length]), pos + length


# ---------------------------------------------------------------------------- encode


def _as_int16(value: int) -> int:
    return value - 0x10000 if value >= 0x8000 else value


def encode(batch: RecordBatch) -> bytes:
    """The v2 bytes of ``batch``, CRC included."""
    body = bytearray()
    record = bytearray()
    for index, r in enumerate(batch.records):
        record.clear()
        record.append(0)  # record attributes: unused in v2
        _write_varint(record, batch.delta(index))
        _write_nullable(record, r.key)
        _write_nullable(record, r.value)
        _write_varint(body, len(record))
        body += record
    attributes = batch.attributes
    timestamps = b""
    if batch.has_timestamps:
        attributes |= TIMESTAMPS_FLAG
        max_timestamp = NO_TIMESTAMP if batch.max_timestamp is None else batch.max_timestamp
        base_timestamp = max_timestamp
        if batch.delete_horizon_ms is not None:
            attributes |= DELETE_HORIZON_FLAG
            base_timestamp = batch.delete_horizon_ms
        timestamps = _TIMESTAMPS.pack(base_timestamp, max_timestamp)
    body[:0] = timestamps
    header = bytearray(HEADER_SIZE)
    _HEADER.pack_into(
        header,
        0,
        batch.base_offset,
        HEADER_SIZE - LOG_OVERHEAD + len(body),
        batch.partition_leader_epoch,
        MAGIC,
        0,
        _as_int16(attributes),
        batch.last_offset_delta,
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        batch.record_count,
    )
    crc = crc32c(body, crc32c(memoryview(header)[CRC_START:]))
    struct.pack_into(">I", header, 17, crc)
    data = bytes(header + body)
    _remember(data, batch)
    return data


# ---------------------------------------------------------------------------- the memo

_KNOWN: dict[bytes, RecordBatch] = {}
"""Valid batches by their exact bytes, for ``decode``.

Decoding is a pure function of a batch's bytes, and in a simulation the same bytes are
decoded again and again: a leader encodes a batch, each follower decodes it when it
appends the fetched bytes, each consumer when it reads them. So ``encode`` remembers what
it produced (``decode(encode(b)) == b``) and ``decode`` what it validated. It is safe
because the key is the whole batch, CRC and the fields outside the CRC included: a torn,
flipped or re-stamped batch is different bytes, misses, and is checked in full. A hit
still gets its framing checked and must have the expected base offset. Bounded; it
changes the speed of a run, never its outcome.
"""
_KNOWN_MAX = 1 << 15


def _remember(data: bytes, batch: RecordBatch) -> None:
    if len(_KNOWN) >= _KNOWN_MAX:
        _KNOWN.clear()
    _KNOWN[data] = batch


# ---------------------------------------------------------------------------- decode


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader | None:
    """The navigation fields of the batch at ``pos`` without validating it, or None if the
    bytes from ``pos`` cannot even hold its fixed header. For bytes already validated (a
    recovered segment); use ``decode`` on anything else."""
    if len(buf) - pos < _NAVIGATION.size:
        return None
    base_offset, length, epoch, _, _, _, last_delta = _NAVIGATION.unpack_from(buf, pos)
    return BatchHeader(base_offset, LOG_OVERHEAD + length, epoch, base_offset + last_delta)


def batch_end(buf: bytes | bytearray | memoryview, pos: int = 0) -> int:
    """Where the batch at ``pos`` ends by its length field, at most the end of ``buf``; the
    end of ``buf`` if the bytes from ``pos`` cannot hold its navigation fields (as
    ``read_header`` returns None). Splits fetched bytes into batches without validating
    them; ``decode`` each piece."""
    available = len(buf) - pos
    if available < _NAVIGATION.size:
        return len(buf)
    _, length = _PREFIX.unpack_from(buf, pos)
    return pos + min(available, LOG_OVERHEAD + length)


def decode(
    buf: bytes | bytearray | memoryview,
    pos: int = 0,
    *,
    expected_base_offset: int | None = None,
) -> tuple[RecordBatch, int]:
    """Decode and validate the batch starting at ``pos``; return it and the position after it.

    Raises ``TruncatedBatchError`` if the bytes end before the batch does, and
    ``CorruptBatchError`` if the batch is complete but invalid (CRC-32C mismatch, unknown
    magic, impossible length, records that do not parse, or a base offset other than
    ``expected_base_offset`` when one is given).

    A batch whose exact bytes were decoded or encoded before is answered from a memo (see
    ``_KNOWN``) once its framing is checked.
    """
    available = len(buf) - pos
    if available < LOG_OVERHEAD:
        where = f"batch at byte {pos}"
        raise TruncatedBatchError(
            f"{where}: only {available} bytes left, fewer than the {LOG_OVERHEAD}-byte "
            "offset and length prefix (the bytes end mid-batch: a torn write or short read)",
            pos,
        )
    _, length = _PREFIX.unpack_from(buf, pos)
    if length < _MIN_LENGTH:
        where = f"batch at byte {pos}"
        raise CorruptBatchError(
            f"{where}: length field {length} is below the {_MIN_LENGTH} bytes of a v2 header "
            "(the length field is corrupt)",
            pos,
        )
    end = pos + LOG_OVERHEAD + length
    if end > len(buf):
        where = f"batch at byte {pos}"
        raise TruncatedBatchError(
            f"{where}: declares {LOG_OVERHEAD + length} bytes but only {available} remain "
            "(a torn write or short read, or a corrupt length field)",
            pos,
        )
    chunk = bytes(buf[pos:end])
    known = _KNOWN.get(chunk)
    if known is not None and expected_base_offset in (None, known.base_offset):
        return known, end
    where = f"batch at byte {pos}"  # for the errors below: formatted only off the memo's path
    (
        base_offset,
        _,
        epoch,
        magic,
        stored_crc,
        attributes,
        last_offset_delta,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    ) = _HEADER.unpack_from(buf, pos)
    if magic != MAGIC:
        raise CorruptBatchError(
            f"{where}: magic byte {magic}, expected {MAGIC} (only v2 batches are stored)", pos
        )
    view = memoryview(buf)[pos + CRC_START : end]
    computed_crc = crc32c(view)
    if computed_crc != stored_crc:
        raise CorruptBatchError(
            f"{where}: CRC-32C mismatch: stored 0x{stored_crc:08x}, computed "
            f"0x{computed_crc:08x} over bytes {pos + CRC_START}..{end} (the batch was "
            "corrupted on disk or in flight; a log truncates here, a reader refetches)",
            pos,
        )
    if expected_base_offset is not None and base_offset != expected_base_offset:
        raise CorruptBatchError(
            f"{where}: base offset {base_offset}, but the log's next offset there is "
            f"{expected_base_offset} (offsets in a log are contiguous)",
            pos,
        )
    if base_offset < 0 or epoch < NO_PARTITION_LEADER_EPOCH:
        raise CorruptBatchError(
            f"{where}: negative base offset {base_offset} or leader epoch {epoch}", pos
        )
    if count < 0 or last_offset_delta < max(count - 1, 0):
        raise CorruptBatchError(
            f"{where}: {count} records with last offset delta {last_offset_delta}; a batch's "
            "records fit in its offset range",
            pos,
        )
    records_at = pos + HEADER_SIZE
    max_timestamp: int | None = None
    delete_horizon: int | None = None
    if attributes & TIMESTAMPS_FLAG:
        if end - records_at < _TIMESTAMPS.size:
            raise CorruptBatchError(f"{where}: the timestamps run past the end of the batch", pos)
        base_timestamp, max_ts = _TIMESTAMPS.unpack_from(buf, records_at)
        records_at += _TIMESTAMPS.size
        max_timestamp = None if max_ts == NO_TIMESTAMP else max_ts
        if attributes & DELETE_HORIZON_FLAG:
            delete_horizon = base_timestamp
    elif attributes & DELETE_HORIZON_FLAG:
        raise CorruptBatchError(f"{where}: a delete horizon flag without timestamps", pos)
    try:
        records, deltas = _decode_records(buf, records_at, end, count, last_offset_delta)
    except _Malformed as e:
        raise CorruptBatchError(f"{where}: {e}", pos) from None
    consecutive = deltas == tuple(range(count))
    # Everything ``RecordBatch.__attrs_post_init__`` checks holds by the checks above and by
    # the header's field widths, except these three (same checks, same order, same errors).
    _check_range("base_offset", base_offset, 0, _INT64[1] - last_offset_delta - 1)
    for name, stamp in (("max_timestamp", max_timestamp), ("delete_horizon_ms", delete_horizon)):
        if stamp is not None:
            _check_range(name, stamp, -1, _INT64[1])
    batch = _trusted_batch(
        RecordBatch,
        (
            records,
            base_offset,
            epoch,
            _as_int16((attributes & 0xFFFF) & ~_CODEC_FLAGS),
            producer_id,
            producer_epoch,
            base_sequence,
            max_timestamp,
            delete_horizon,
            None if consecutive else deltas,
            None if consecutive and last_offset_delta == count - 1 else last_offset_delta,
        ),
    )
    _remember(chunk, batch)
    return batch, end


def _decode_records(
    buf: bytes | bytearray | memoryview, pos: int, end: int, count: int, last_delta: int
) -> tuple[tuple[Record, ...], tuple[int, ...]]:
    # A varint below 0x80 is one byte, zig-zag decoded inline (what ``_read_varint`` returns
    # for it); any other goes through ``_read_varint``. Records are built with
    # ``_trusted_record``: key and value are bytes or None by construction.
    records = []
    deltas = []
    previous = -1
    for index in range(count):
        if pos < end and (byte := buf[pos]) < 0x80:
            length, pos = (byte >> 1) ^ -(byte & 1), pos + 1
        else:
            length, pos = _read_varint(buf, pos, end)
        record_end = pos + length
        if length < 3 or record_end > end:
            raise _Malformed(f"record {index} has impossible length {length}")
        if buf[pos] != 0:
            raise _Malformed(f"record {index} has attributes {buf[pos]}, expected 0")
        p = pos + 1
        if (byte := buf[p]) < 0x80:  # p < record_end: length >= 3
            delta, p = (byte >> 1) ^ -(byte & 1), p + 1
        else:
            delta, p = _read_varint(buf, p, record_end)
        if not previous < delta <= last_delta:
            raise _Malformed(
                f"record {index} has offset delta {delta}, not after {previous} and within "
                f"the last offset delta {last_delta}"
            )
        previous = delta
        deltas.append(delta)
        key, p = _read_nullable(buf, p, record_end, "key")
        value, p = _read_nullable(buf, p, record_end, "value")
        if p != record_end:
            raise _Malformed(f"record {index} has {record_end - p} trailing bytes")
        records.append(_trusted_record(key, value))
        pos = record_end
    if pos != end:
        raise _Malformed(f"{end - pos} bytes follow the last record")
    return tuple(records), tuple(deltas)


def _trusted_record(key: bytes | None, value: bytes | None) -> Record:
    """A ``Record`` of a key and a value known to be bytes or None (``_read_nullable``'s),
    built without ``__init__``'s checks."""
    record = object.__new__(Record)
    _set_field(record, "key", key)
    _set_field(record, "value", value)
    return record


def iter_batches(
    buf: bytes | bytearray | memoryview, *, first_offset: int | None = None
) -> Iterator[RecordBatch]:
    """Decode consecutive batches filling ``buf`` exactly; with ``first_offset``, also check
    that offsets are contiguous from it."""
    pos = 0
    expected = first_offset
    while pos < len(buf):
        batch, pos = decode(buf, pos, expected_base_offset=expected)
        if expected is not None:
            expected = batch.next_offset
        yield batch
