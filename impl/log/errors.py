"""The storage layer's errors: one type per thing that can be wrong, each message saying what
is wrong and what a caller can do about it.

Kafka's names are kept where Kafka has one: ``CorruptRecordException`` (a CRC mismatch or a
malformed batch), ``OffsetOutOfRangeException`` (a fetch outside [log start, LEO]),
``RecordTooLargeException`` (``max.message.bytes``), ``UnexpectedAppendOffsetException`` (a
follower append that does not start at the LEO).
"""

from __future__ import annotations

__all__ = [
    "BatchError",
    "CheckpointError",
    "CorruptBatchError",
    "EpochRegressionError",
    "InvalidRecordError",
    "OffsetOutOfRangeError",
    "RecordTooLargeError",
    "StaleHandleError",
    "StorageError",
    "TruncatedBatchError",
    "UnexpectedAppendOffsetError",
]


class StorageError(Exception):
    """Base class of every error of ``impl.log``."""


class BatchError(StorageError, ValueError):
    """Bytes that are not one valid record batch. ``position`` is where the batch starts."""

    def __init__(self, message: str, position: int = 0) -> None:
        super().__init__(message)
        self.position = position


class TruncatedBatchError(BatchError):
    """The bytes end before the batch does: a torn write, a short read or a cut file.

    In a log, everything from ``position`` on is an incomplete tail; recovery drops it."""


class CorruptBatchError(BatchError):
    """The batch is complete but wrong: CRC-32C mismatch, unknown magic, impossible length,
    records that do not parse, or an offset or epoch that cannot follow the previous batch
    (Kafka's ``CorruptRecordException``)."""


class OffsetOutOfRangeError(StorageError):
    """A read below the log start offset or above the LEO (Kafka's OFFSET_OUT_OF_RANGE)."""


class InvalidRecordError(StorageError):
    """A record the log's configuration forbids, e.g. a record without a key in a compacted
    log (Kafka's INVALID_RECORD)."""


class RecordTooLargeError(StorageError):
    """A batch larger than ``max.message.bytes`` (Kafka's MESSAGE_TOO_LARGE)."""


class UnexpectedAppendOffsetError(StorageError):
    """A follower append whose first batch does not start at the LEO: the follower must
    truncate (or fetch from its LEO) first."""


class EpochRegressionError(StorageError):
    """A leader appending in an epoch older than one its log already holds: a zombie leader
    (``Log.append_as_leader``). Followers' older epochs are accepted, as Kafka accepts them
    (``LeaderEpochCache.assign``)."""


class CheckpointError(StorageError):
    """A checkpoint file that does not parse; names the file and the line."""


class StaleHandleError(StorageError):
    """A ``Log`` used after its disk crashed: the process that held it is gone, re-open the
    log with ``Log.open``."""
