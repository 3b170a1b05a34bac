"""What a partition replica knows of each idempotent producer (KIP-98): Kafka's
``ProducerStateManager``, ``ProducerStateEntry`` and ``ProducerAppendInfo``.

An idempotent producer (``enable.idempotence=true``, Kafka's default since 3.0) has a
producer id and a producer epoch (``InitProducerId``), and numbers the records it sends to
each partition from 0: a batch carries (producer id, producer epoch, base sequence) in its
header (``impl.log.batch``, inside what the CRC-32C covers). For every producer id the
replica keeps its latest epoch and the metadata of its last ``NUM_BATCHES_TO_RETAIN`` (5)
batches: their first and last sequence, first and last offset, and the leader epoch they
were appended in. Five, because the producer keeps at most
``max.in.flight.requests.per.connection`` <= 5 requests in flight, so any retry it can
still send is one of the last five batches.

On the **leader**, before an append (``check``; Kafka's ``UnifiedLog.analyzeAndValidate
ProducerState`` and ``ProducerAppendInfo.checkProducerEpoch/checkSequence``):

- a batch whose epoch and sequences match one of the producer's retained batches is a
  *duplicate* (a retry of a request whose answer was lost, a request the network delivered
  twice): nothing is appended and the producer is answered with the *original* offsets,
  after the same acks=all wait (Kafka >= 1.0: ``DUPLICATE_SEQUENCE`` semantics, the error
  code itself is no longer sent);
- an epoch older than the producer's latest: ``INVALID_PRODUCER_EPOCH`` (a zombie
  request of an epoch the producer has since bumped);
- a newer epoch must start at sequence 0, the same epoch must continue at the last
  sequence + 1 (int32, wrapping to 0); otherwise ``OUT_OF_ORDER_SEQUENCE_NUMBER``;
- a producer the replica has no state for may start at any sequence (Kafka accepts it:
  its state may have been lost with the records that made it).

On a **follower**, replicated batches update the state without any check (Kafka's
``AppendOrigin.REPLICATION``): the state is a function of the log, so a follower that
becomes leader answers retries exactly as the old leader would have for the records they
share. When the log is truncated (a follower's leader-epoch truncation, KIP-101/279) or
recovered after a restart, the state is rebuilt from the log (Kafka's
``truncateAndReload``/``loadProducerState``): from the latest *snapshot* at or below the log
end offset, then batch *headers* from there on (no record is decoded).

Snapshots (Kafka's ``ProducerStateManager.takeSnapshot``, ``<offset>.snapshot`` in the
partition directory): when an append rolls the log to a new segment, the replica writes the
state of every batch below the new segment's base offset, and fsyncs it (``take_snapshot``).
A rebuild first deletes the snapshots above the log end (what they saw was truncated away,
or lost in a crash: Kafka's ``truncateAndReload``), reads the latest one left (a corrupt one
is deleted and the next older tried, as Kafka treats a ``CorruptSnapshotException``) and
replays the log's headers from its offset; what lies below the log start is then dropped,
so the state is exactly what a scan from the log start would build. The log below a
snapshot's offset is what the snapshot saw: a crash can only cut the log short (recovery
drops everything after the first batch lost), and a cut or a truncation below a snapshot
deletes it; the cleaner keeps the headers of idempotent batches. Unlike Kafka's snapshot
format, which keeps each producer's last batch only, this one keeps all five retained
batches, so a restart answers the same retries as before it.

Invariant (``check_invariants``): per producer, the retained batches are in offset order,
at most ``NUM_BATCHES_TO_RETAIN``, and each sequence range has as many sequences as offsets.
"""

from __future__ import annotations

import collections
import re
import struct
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import attrs
from crc32c import crc32c

from impl.log import Log
from impl.log.batch import LOG_OVERHEAD, NO_PRODUCER_ID, read_header
from impl.log.fs import join
from impl.protocol import Errors

__all__ = [
    "NUM_BATCHES_TO_RETAIN",
    "SNAPSHOT_SUFFIX",
    "BatchMetadata",
    "Duplicate",
    "ProducerBatch",
    "ProducerStateEntry",
    "ProducerStateManager",
    "increment_sequence",
    "producer_batches",
    "snapshot_offsets",
]

NUM_BATCHES_TO_RETAIN = 5
"""``ProducerStateEntry.NUM_BATCHES_TO_RETAIN``: one per request a producer may have in
flight (``max.in.flight.requests.per.connection`` <= 5 with idempotence)."""

INT32_MAX = 2**31 - 1

_PRODUCER_FIELDS = struct.Struct(">qhi")
_PRODUCER_FIELDS_AT = 27
"""Producer id (int64), producer epoch (int16), base sequence (int32): bytes 27..40 of a v2
batch (``impl.log.batch``'s layout)."""
_HEADER_THROUGH_SEQUENCE = struct.Struct(">qiibIhiqhi")
"""A v2 header from the base offset through the base sequence (``impl.log.batch``): the
navigation fields and the producer fields in one read."""
_REBUILD_READ_BYTES = 1 << 30

SNAPSHOT_SUFFIX = ".snapshot"
"""A producer-state snapshot: ``<offset, 20 digits>.snapshot`` (Kafka's file name)."""
_SNAPSHOT_FILE = re.compile(r"([0-9]{20})\.snapshot\Z")
_SNAPSHOT_VERSION = 1
_SNAPSHOT_HEAD = struct.Struct(">hIi")
"""Version (int16), CRC-32C of everything after it (uint32), producer count (int32)."""
_SNAPSHOT_PRODUCER = struct.Struct(">qhb")
"""Producer id (int64), producer epoch (int16), retained batches (int8)."""
_SNAPSHOT_BATCH = struct.Struct(">iiqqi")
"""A ``BatchMetadata``: first and last sequence, first and last offset, leader epoch."""


def increment_sequence(sequence: int, increment: int) -> int:
    """``DefaultRecordBatch.incrementSequence``: sequences are int32 and wrap to 0."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == INT32_MAX)


class BatchMetadata(NamedTuple):
    """One retained batch of a producer: where it landed and in which leader epoch. A
    named tuple: a replica makes one for every idempotent batch it appends."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    leader_epoch: int


@attrs.frozen(slots=True)
class Duplicate:
    """``check``'s answer for a batch already in the log: the original's metadata."""

    original: BatchMetadata


@attrs.define
class ProducerStateEntry:
    producer_epoch: int
    batches: collections.deque[BatchMetadata] = attrs.field(
        factory=lambda: collections.deque(maxlen=NUM_BATCHES_TO_RETAIN)
    )

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq

    def add(self, producer_epoch: int, batch: BatchMetadata) -> None:
        """``ProducerStateEntry.addBatch``: a new epoch forgets the old epoch's batches."""
        if producer_epoch != self.producer_epoch:
            self.producer_epoch = producer_epoch
            self.batches.clear()
        self.batches.append(batch)

    def find(self, producer_epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """``findDuplicateBatch``: a retained batch of this epoch with these sequences."""
        if producer_epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None


@attrs.frozen(slots=True)
class ProducerBatch:
    """The producer fields of one batch of a log, read from its header."""

    producer_id: int
    producer_epoch: int
    base_sequence: int
    base_offset: int
    last_offset: int
    leader_epoch: int


def snapshot_offsets(log: Log) -> list[int]:
    """The offsets of the producer-state snapshots in ``log``'s directory, ascending."""
    found = (_SNAPSHOT_FILE.match(name) for name in log.disk.list_dir(log.directory))
    return sorted(int(match.group(1)) for match in found if match is not None)


def _snapshot_path(log: Log, offset: int) -> str:
    return join(log.directory, f"{offset:020d}{SNAPSHOT_SUFFIX}")


def producer_batches(data: bytes) -> Iterator[tuple[int, ProducerBatch | None]]:
    """(last offset, producer fields or None when not idempotent) of every batch of
    ``data`` (whole v2 batches, already validated: a log's bytes or a fetch response the
    log accepted), from their headers alone."""
    for last_offset, fields in _producer_fields(data):
        yield last_offset, None if fields is None else ProducerBatch(*fields)


def _producer_fields(
    data: bytes,
) -> Iterator[tuple[int, tuple[int, int, int, int, int, int] | None]]:
    """``producer_batches`` with the fields of each ``ProducerBatch`` as a tuple, in its
    order (replaying a log reads every header: no object per batch)."""
    position = 0
    size = len(data)
    whole = _HEADER_THROUGH_SEQUENCE
    while True:
        if size - position >= whole.size:
            # The common case, in one unpack: what read_header and _PRODUCER_FIELDS read.
            (
                base_offset,
                length,
                epoch,
                _,
                _,
                _,
                last_delta,
                producer_id,
                producer_epoch,
                base_sequence,
            ) = whole.unpack_from(data, position)
            batch_size = LOG_OVERHEAD + length
            last_offset = base_offset + last_delta
        else:
            header = read_header(data, position)
            if header is None:
                return
            batch_size, base_offset = header.size, header.base_offset
            epoch, last_offset = header.partition_leader_epoch, header.last_offset
            if batch_size > 0 and position + batch_size <= size:
                producer_id, producer_epoch, base_sequence = _PRODUCER_FIELDS.unpack_from(
                    data, position + _PRODUCER_FIELDS_AT
                )
        if batch_size <= 0 or position + batch_size > size:
            return
        fields = None
        if producer_id != NO_PRODUCER_ID:
            fields = (producer_id, producer_epoch, base_sequence, base_offset, last_offset, epoch)
        yield last_offset, fields
        position += batch_size


class ProducerStateManager:
    """The producer states of one partition replica (see the module docstring)."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerStateEntry] = {}

    # ------------------------------------------------------------------ the leader's check

    def check(
        self, producer_id: int, producer_epoch: int, first_seq: int, count: int
    ) -> Duplicate | Errors | None:
        """What the leader does with an idempotent batch of ``count`` records: append it
        (None), answer with the original's offsets (``Duplicate``), or refuse it (an
        error; nothing is appended)."""
        assert producer_id >= 0 and producer_epoch >= 0 and first_seq >= 0 and count >= 1
        entry = self.producers.get(producer_id)
        if entry is None:
            return None
        last_seq = increment_sequence(first_seq, count - 1)
        duplicate = entry.find(producer_epoch, first_seq, last_seq)
        if duplicate is not None:
            return Duplicate(duplicate)
        if producer_epoch < entry.producer_epoch:
            return Errors.INVALID_PRODUCER_EPOCH
        if producer_epoch > entry.producer_epoch:
            return None if first_seq == 0 else Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
        if not _in_sequence(entry.last_seq, first_seq):
            return Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
        return None

    # ------------------------------------------------------------------ updates

    def update(self, batch: ProducerBatch) -> None:
        """Record an appended batch (the leader's own append, or a replicated one)."""
        self._update(
            batch.producer_id,
            batch.producer_epoch,
            batch.base_sequence,
            batch.base_offset,
            batch.last_offset,
            batch.leader_epoch,
        )

    def _update(
        self,
        producer_id: int,
        producer_epoch: int,
        base_sequence: int,
        base_offset: int,
        last_offset: int,
        leader_epoch: int,
    ) -> None:
        """``update`` from the fields of a ``ProducerBatch`` (the replay of a log's headers
        calls it for every batch, without building one)."""
        metadata = BatchMetadata(
            base_sequence,
            increment_sequence(base_sequence, last_offset - base_offset),
            base_offset,
            last_offset,
            leader_epoch,
        )
        entry = self.producers.get(producer_id)
        if entry is None:
            entry = self.producers[producer_id] = ProducerStateEntry(producer_epoch)
        entry.add(producer_epoch, metadata)

    def load(
        self, data: bytes, start: int = 0, rolled: Sequence[int] = (), log: Log | None = None
    ) -> None:
        """Update from the batches of ``data`` (a follower's append, from offset ``start``).
        If that append rolled ``log`` to new segments at the offsets ``rolled``, a snapshot
        is taken at each, once the batches below it are in."""
        update = self._update
        pending = list(rolled)
        if pending:
            assert log is not None, "a snapshot at a roll needs the log it goes in"
            while pending and pending[0] <= start:
                self.take_snapshot(log, pending.pop(0))
        for last_offset, fields in _producer_fields(data):
            if fields is not None:
                update(*fields)
            while pending and pending[0] <= last_offset + 1:
                assert log is not None
                self.take_snapshot(log, pending.pop(0))
        assert not pending, f"rolled at {pending}, beyond the appended batches"

    # ------------------------------------------------------------------ snapshots

    def take_snapshot(self, log: Log, offset: int) -> None:
        """Write the state (that of every batch below ``offset``) to ``<offset>.snapshot``
        in ``log``'s directory, and fsync it (Kafka's ``takeSnapshot`` at a segment roll)."""
        body = bytearray()
        for producer_id, entry in sorted(self.producers.items()):
            body += _SNAPSHOT_PRODUCER.pack(producer_id, entry.producer_epoch, len(entry.batches))
            for batch in entry.batches:
                body += _SNAPSHOT_BATCH.pack(*batch)
        head = _SNAPSHOT_HEAD.pack(_SNAPSHOT_VERSION, crc32c(body), len(self.producers))
        path = _snapshot_path(log, offset)
        log.disk.write(path, head + body)
        log.disk.fsync(path)

    def _read_snapshot(self, log: Log, offset: int) -> dict[int, ProducerStateEntry] | None:
        """The producers of snapshot ``offset``; None if it is corrupt (wrong version, CRC
        or length)."""
        data = log.disk.read(_snapshot_path(log, offset))
        if len(data) < _SNAPSHOT_HEAD.size:
            return None
        version, crc, count = _SNAPSHOT_HEAD.unpack_from(data)
        body = memoryview(data)[_SNAPSHOT_HEAD.size :]
        if version != _SNAPSHOT_VERSION or crc != crc32c(body):
            return None
        producers: dict[int, ProducerStateEntry] = {}
        position = _SNAPSHOT_HEAD.size
        for _ in range(count):
            if position + _SNAPSHOT_PRODUCER.size > len(data):
                return None
            producer_id, epoch, batches = _SNAPSHOT_PRODUCER.unpack_from(data, position)
            position += _SNAPSHOT_PRODUCER.size
            if position + batches * _SNAPSHOT_BATCH.size > len(data):
                return None
            entry = producers[producer_id] = ProducerStateEntry(epoch)
            for _ in range(batches):
                entry.batches.append(BatchMetadata(*_SNAPSHOT_BATCH.unpack_from(data, position)))
                position += _SNAPSHOT_BATCH.size
        return producers if position == len(data) else None

    def _latest_snapshot(self, log: Log) -> tuple[int, dict[int, ProducerStateEntry]] | None:
        """Delete the snapshots above the log end, and those found corrupt on the way;
        the latest valid one left, as (offset, producers), or None."""
        end = log.log_end_offset
        for offset in reversed(snapshot_offsets(log)):
            producers = None if offset > end else self._read_snapshot(log, offset)
            if producers is not None:
                return offset, producers
            log.disk.delete(_snapshot_path(log, offset))
        return None

    # ------------------------------------------------------------------ rebuilding

    def rebuild(self, log: Log) -> None:
        """Forget everything and read the state back from ``log``: from its latest valid
        snapshot and the batch headers after it, or from its start (after a truncation, or
        when a broker opens its logs). See the module docstring."""
        # The replay keeps, per producer, its latest epoch and the fields of its last
        # batches of that epoch (what ``update`` after ``update`` would leave), and builds
        # the entries once at the end: a log holds many more batches than are retained.
        retained: dict[int, tuple[list[int], collections.deque[tuple[int, ...]]]] = {}
        start = log.log_start_offset
        offset = start
        end = log.log_end_offset
        snapshot = self._latest_snapshot(log)
        if snapshot is not None and snapshot[0] > start:
            offset = snapshot[0]
            for producer_id, entry in snapshot[1].items():
                epoch = entry.producer_epoch
                fields = collections.deque(
                    (
                        (producer_id, epoch, b.first_seq, *b[2:])  # (first, last offset, epoch)
                        for b in entry.batches
                    ),
                    maxlen=NUM_BATCHES_TO_RETAIN,
                )
                retained[producer_id] = ([epoch], fields)
        while offset < end:
            data = log.read(offset, _REBUILD_READ_BYTES)
            if not data:
                break
            last = offset - 1
            for last, fields in _producer_fields(data):  # noqa: B007 (last: after the loop)
                if fields is None:
                    continue
                found = retained.get(fields[0])
                if found is None:
                    found = retained[fields[0]] = (
                        [fields[1]],
                        collections.deque(maxlen=NUM_BATCHES_TO_RETAIN),
                    )
                elif found[0][0] != fields[1]:
                    found[0][0] = fields[1]  # ProducerStateEntry.add: a new epoch
                    found[1].clear()
                found[1].append(fields)
            assert last >= offset, (offset, last)
            offset = last + 1
        self.producers = {}
        for producer_id, (epoch, batches) in retained.items():
            # A snapshot taken before the log start moved up may name batches below it, which
            # a scan from the log start would not see (a scan sees every batch ending at or
            # after the log start: it reads the batch holding it).
            kept = [fields for fields in batches if fields[4] >= start]
            if not kept:
                continue
            entry = self.producers[producer_id] = ProducerStateEntry(epoch[0])
            for _, _, base_sequence, base_offset, last_offset, leader_epoch in kept:
                entry.batches.append(
                    BatchMetadata(
                        base_sequence,
                        increment_sequence(base_sequence, last_offset - base_offset),
                        base_offset,
                        last_offset,
                        leader_epoch,
                    )
                )

    # ------------------------------------------------------------------ views

    def last_sequence(self, producer_id: int) -> tuple[int, int] | None:
        """(epoch, last sequence) of ``producer_id``, or None when unknown here."""
        entry = self.producers.get(producer_id)
        return None if entry is None else (entry.producer_epoch, entry.last_seq)

    def describe(self) -> dict[int, tuple[int, list[tuple[int, int, int, int]]]]:
        """producer id -> (epoch, [(first seq, last seq, first offset, last offset)])."""
        return {
            pid: (
                entry.producer_epoch,
                [(b.first_seq, b.last_seq, b.first_offset, b.last_offset) for b in entry.batches],
            )
            for pid, entry in sorted(self.producers.items())
        }

    def check_invariants(self, log_end_offset: int) -> None:
        for pid, entry in self.producers.items():
            assert entry.batches, f"producer {pid}: an entry holds at least one batch"
            assert len(entry.batches) <= NUM_BATCHES_TO_RETAIN, pid
            previous = -1
            for b in entry.batches:
                assert previous < b.first_offset <= b.last_offset < log_end_offset, (pid, b)
                span = b.last_offset - b.first_offset
                assert increment_sequence(b.first_seq, span) == b.last_seq, (pid, b)
                previous = b.last_offset
