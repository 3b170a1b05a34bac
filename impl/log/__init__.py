"""The storage layer of a broker: record batches, segmented logs, indexes, checkpoints.

Modules, each owning one Kafka mechanism:

- ``batch``: the v2 record batch format (KIP-98) with its CRC-32C;
- ``index``: a segment's sparse offset index (``log.index.interval.bytes``);
- ``segment``: one ``.log``/``.index`` pair (``log.segment.bytes``);
- ``log``: a partition's log: append as leader or follower, read, truncate, flush;
- ``leader_epoch``: the leader-epoch cache and OffsetsForLeaderEpoch (KIP-101, KIP-279);
- ``checkpoint``: Kafka's checkpoint files (high watermark, recovery point, epochs);
- ``recovery``: what opening a log after a crash validates and repairs;
- ``cleaner``: log compaction (``cleanup.policy=compact``, tombstones, KIP-534);
- ``retention``: deleting old segments (``retention.ms``, ``retention.bytes``);
- ``config``: the topic-level storage configs; ``fs``: what the log needs from a disk;
  ``errors``: the typed errors.

Everything runs on a ``FileSystem`` passed in (``impl.sim.disk.SimDisk`` in simulation):
no real I/O, no clock, no randomness.
"""

from impl.log.batch import Record, RecordBatch, decode, encode, iter_batches
from impl.log.checkpoint import (
    CLEANER_OFFSET_CHECKPOINT,
    LEADER_EPOCH_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    EpochEntry,
    LeaderEpochCheckpointFile,
    OffsetCheckpointFile,
    TopicPartition,
)
from impl.log.config import LogConfig
from impl.log.errors import (
    BatchError,
    CheckpointError,
    CorruptBatchError,
    EpochRegressionError,
    InvalidRecordError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
    StaleHandleError,
    StorageError,
    TruncatedBatchError,
    UnexpectedAppendOffsetError,
)
from impl.log.leader_epoch import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    EpochEndOffset,
    LeaderEpochCache,
)
from impl.log.log import Log, LogAppendInfo
from impl.log.recovery import RecoveryReport

__all__ = [
    "CLEANER_OFFSET_CHECKPOINT",
    "LEADER_EPOCH_CHECKPOINT",
    "LOG_START_OFFSET_CHECKPOINT",
    "RECOVERY_POINT_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "BatchError",
    "CheckpointError",
    "CorruptBatchError",
    "EpochEndOffset",
    "EpochEntry",
    "EpochRegressionError",
    "InvalidRecordError",
    "LeaderEpochCache",
    "LeaderEpochCheckpointFile",
    "Log",
    "LogAppendInfo",
    "LogConfig",
    "OffsetCheckpointFile",
    "OffsetOutOfRangeError",
    "Record",
    "RecordBatch",
    "RecordTooLargeError",
    "RecoveryReport",
    "StaleHandleError",
    "StorageError",
    "TopicPartition",
    "TruncatedBatchError",
    "UnexpectedAppendOffsetError",
    "decode",
    "encode",
    "iter_batches",
]
