"""Checkpoints a restarted broker reads back (``impl.broker``, ``impl.log_cleanup``):

- ``log-start-offset-checkpoint``: a log start inside the log's first segment (a follower
  that followed its leader's log start; DeleteRecords, KIP-107) survives a restart.
  Recovery takes the log start from the checkpoint, else from the first segment's base
  offset, which would make the records below the log start readable again;
- ``cleaner-offset-checkpoint``: where a compacted log's dirty part begins survives a
  restart, so the cleaner does not clean the whole log again at once."""

from __future__ import annotations

import pytest

from impl.broker import Broker, BrokerConfig
from impl.log import (
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    LogConfig,
    OffsetCheckpointFile,
    TopicPartition,
)
from impl.protocol import BrokerRegistrationResponse, Errors, LeaderAndIsr, Produce
from impl.replica import Replica, ReplicaConfig
from impl.sim.clock import ms
from impl.sim.disk import SimDisk

T = "t"


def started(disk: SimDisk, incarnation: int = 0) -> Broker:
    config = BrokerConfig(
        replica=ReplicaConfig(min_insync_replicas=1, replica_lag_time_max_ns=ms(100)),
        atomic=True,
        hw_checkpoint_interval_ns=None,
    )
    broker = Broker(1, disk, config, now=0, incarnation=incarnation)
    broker.start(0)
    broker.step("controller", BrokerRegistrationResponse(Errors.NONE, 10, 1), 0)
    return broker


def lead(broker: Broker) -> Replica:
    request = LeaderAndIsr(
        controller_epoch=1,
        broker_epoch=10,
        topic=T,
        partition=0,
        leader=1,
        leader_epoch=0,
        isr=frozenset({1}),
        partition_epoch=0,
        replicas=(1,),
    )
    broker.step("controller", request, 0)
    replica = broker.replica(T, 0)
    assert replica is not None
    return replica


@pytest.mark.parametrize("checkpointed", [True, False])
def test_a_log_start_inside_the_first_segment_survives_a_restart(checkpointed: bool) -> None:
    disk = SimDisk("b1")
    broker = started(disk)
    replica = lead(broker)
    for i in range(5):
        broker.step("p1", Produce("p1", i, T, 0, 1, ((None, b"v%d" % i),)), 0)
    log = replica.log
    assert log.log_end_offset == 5 and len(log.segments) == 1
    assert log.advance_log_start_offset(3)  # inside the only segment, based at 0
    if checkpointed:
        broker.checkpoint_recovery_points()  # the interval's checkpoints, the log start's too
    log.flush()
    stored = OffsetCheckpointFile(disk, "", LOG_START_OFFSET_CHECKPOINT).read()
    assert stored == ({TopicPartition(T, 0): 3} if checkpointed else {})
    disk.crash()
    again = started(disk, incarnation=1)
    recovered = again.replica(T, 0)
    assert recovered is not None and recovered.log.log_end_offset == 5
    # Without the checkpoint the deleted records 0..2 come back (what this file prevents).
    assert recovered.log.log_start_offset == (3 if checkpointed else 0)


def test_a_log_start_at_a_segment_base_needs_no_entry() -> None:
    """Retention deletes whole segments: the first segment left starts at the log start,
    which recovery finds without the file; nothing is written (and runs without retention
    write no such file at all)."""
    disk = SimDisk("b1")
    broker = started(disk)
    replica = lead(broker)
    for i in range(3):
        broker.step("p1", Produce("p1", i, T, 0, 1, ((None, b"v"),)), 0)
    replica.log.roll()
    broker.step("p1", Produce("p1", 9, T, 0, 1, ((None, b"v"),)), 0)
    assert replica.log.delete_oldest_segments(1) == 3  # retention
    broker.checkpoint_recovery_points()
    replica.log.flush()
    assert LOG_START_OFFSET_CHECKPOINT not in disk.paths()
    disk.crash()
    recovered = started(disk, incarnation=1).replica(T, 0)
    assert recovered is not None and recovered.log.log_start_offset == 3


def compacting(disk: SimDisk, incarnation: int = 0) -> Broker:
    log = LogConfig(cleanup_policy="compact", segment_bytes=200, min_cleanable_dirty_ratio=0.5)
    config = BrokerConfig(
        replica=ReplicaConfig(min_insync_replicas=1, replica_lag_time_max_ns=ms(100)),
        atomic=True,
        hw_checkpoint_interval_ns=None,
        topic_logs=((T, log),),
        log_cleaner_backoff_ns=ms(1_000),
    )
    broker = Broker(1, disk, config, now=0, incarnation=incarnation)
    broker.start(0)
    broker.step("controller", BrokerRegistrationResponse(Errors.NONE, 10, 1), 0)
    return broker


def test_the_cleaner_checkpoint_survives_a_restart() -> None:
    """``cleaner-offset-checkpoint``: after a cleaning, a restarted broker knows where its
    compacted log's dirty part begins; without the file the whole log would count as dirty
    and be cleaned again at once."""
    disk = SimDisk("b1")
    broker = compacting(disk)
    replica = lead(broker)
    for i in range(40):  # 4 keys, each rewritten: most records are superseded
        broker.step("p1", Produce("p1", i, T, 0, 1, ((b"k%d" % (i % 4), b"v%d" % i),)), 0)
    assert len(replica.log.segments) > 2
    cleanup = broker.log_cleanup
    before = cleanup.cleaner.dirty_ratio(replica.log, replica.hw)
    assert before > 0.5
    broker.tick(ms(2_000))
    assert cleanup.stats["cleanings"] == 1
    checkpointed = cleanup.cleaner.first_dirty[replica.log.directory]
    stored = OffsetCheckpointFile(disk, "", CLEANER_OFFSET_CHECKPOINT).read()
    assert stored == {TopicPartition(T, 0): checkpointed}
    ratio = cleanup.cleaner.dirty_ratio(replica.log, replica.hw)
    assert ratio < 0.5
    replica.log.flush()
    disk.crash()
    again = compacting(disk, incarnation=1)
    recovered = again.replica(T, 0)
    assert recovered is not None
    assert again.log_cleanup.cleaner.first_dirty[recovered.log.directory] == checkpointed
    assert again.log_cleanup.cleaner.dirty_ratio(recovered.log, replica.hw) == ratio
    again.tick(ms(2_000))
    assert again.log_cleanup.stats["cleanings"] == 0, "not dirty enough: nothing to redo"
