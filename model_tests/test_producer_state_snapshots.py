"""Producer-state snapshots (``impl.producer_state``; Kafka's ``ProducerStateManager
.takeSnapshot`` and ``<offset>.snapshot`` files): taken at a segment roll, read back by a
rebuild, which must always give what a scan of the log from its start gives."""

from __future__ import annotations

import copy

from impl.log import Log, LogConfig, RecordBatch
from impl.producer_state import (
    SNAPSHOT_SUFFIX,
    ProducerBatch,
    ProducerStateManager,
    snapshot_offsets,
)
from impl.sim.disk import SimDisk

DIR = "t-0"
CONFIG = LogConfig(segment_bytes=400, index_interval_bytes=64)
"""Small segments: a roll every few batches."""


def leader_append(log: Log, state: ProducerStateManager, pid: int, epoch: int, seq: int) -> None:
    """What a leader's replica does with an idempotent batch (``Replica.handle_produce``):
    append it, snapshot the state below a new segment, then record the batch."""
    active = log.active_segment
    batch = RecordBatch.of(b"v" * 24).with_producer(pid, epoch, seq)
    info = log.append_as_leader(batch, 0)
    if log.active_segment is not active:
        state.take_snapshot(log, info.first_offset)
    state.update(ProducerBatch(pid, epoch, seq, info.first_offset, info.last_offset, 0))


def build(appends: int = 40) -> tuple[SimDisk, Log, ProducerStateManager]:
    """Producer 9 writes once, first; then three producers write in turn, and producer 2
    bumps its epoch half way (KIP-360)."""
    disk = SimDisk("b1")
    log = Log.open(disk, DIR, config=CONFIG)
    state = ProducerStateManager()
    leader_append(log, state, 9, 0, 0)
    sequences = {1: 0, 2: 0, 3: 0}
    epochs = {1: 0, 2: 0, 3: 0}
    for i in range(appends):
        pid = 1 + i % 3
        if pid == 2 and i >= appends // 2 and epochs[2] == 0:
            epochs[2], sequences[2] = 1, 0
        leader_append(log, state, pid, epochs[pid], sequences[pid])
        sequences[pid] += 1
    return disk, log, state


def scanned(disk: SimDisk, log: Log) -> dict[int, tuple[int, list[tuple[int, int, int, int]]]]:
    """The state a rebuild without any snapshot finds: every header from the log start."""
    clone = copy.deepcopy(disk)
    for name in clone.list_dir(DIR):
        if name.endswith(SNAPSHOT_SUFFIX):
            clone.delete(f"{DIR}/{name}")
    reopened = Log.open(clone, DIR, config=log.config, log_start_offset=log.log_start_offset)
    state = ProducerStateManager()
    state.rebuild(reopened)
    return state.describe()


def rebuilt(log: Log) -> dict[int, tuple[int, list[tuple[int, int, int, int]]]]:
    state = ProducerStateManager()
    state.rebuild(log)
    return state.describe()


def test_every_roll_writes_a_snapshot_at_the_new_segments_base_offset():
    disk, log, _ = build()
    bases = [s.base_offset for s in log.segments]
    assert len(bases) > 4, "the test needs several rolls"
    assert snapshot_offsets(log) == bases[1:]
    for offset in bases[1:]:
        path = f"{DIR}/{offset:020d}{SNAPSHOT_SUFFIX}"
        assert disk.unflushed_bytes(path) == 0, "a snapshot is fsynced as it is written"


def test_a_rebuild_from_the_latest_snapshot_equals_the_running_state_and_a_full_scan():
    disk, log, state = build()
    assert rebuilt(log) == state.describe() == scanned(disk, log)
    assert rebuilt(log)[2][0] == 1, "producer 2's new epoch"


def test_the_state_below_a_snapshot_is_read_from_it_not_from_the_log():
    disk, log, _ = build()
    latest = snapshot_offsets(log)[-1]
    planted = ProducerStateManager()
    planted.update(ProducerBatch(99, 4, 7, 0, 0, 0))
    planted.take_snapshot(log, latest)
    assert 99 in rebuilt(log), "a rebuild starts from the snapshot's state"
    assert 99 not in scanned(disk, log)


def test_each_snapshot_holds_the_state_of_the_batches_below_its_offset():
    disk, log, _ = build()
    for offset in snapshot_offsets(log):
        clone = copy.deepcopy(disk)
        cut = Log.open(clone, DIR, config=CONFIG)
        cut.truncate_to(offset)
        assert rebuilt(cut) == scanned(clone, cut), offset


def test_snapshots_above_a_truncation_are_deleted_and_the_state_follows_the_log():
    disk, log, _ = build()
    offsets = snapshot_offsets(log)
    target = offsets[1] + 1
    assert log.truncate_to(target)
    assert rebuilt(log) == scanned(disk, log)
    assert snapshot_offsets(log) == [o for o in offsets if o <= target]


def test_a_corrupt_snapshot_is_deleted_and_the_one_before_it_used():
    disk, log, state = build()
    offsets = snapshot_offsets(log)
    disk.flip_bit(f"{DIR}/{offsets[-1]:020d}{SNAPSHOT_SUFFIX}", 60)
    assert rebuilt(log) == state.describe() == scanned(disk, log)
    assert snapshot_offsets(log) == offsets[:-1]


def test_batches_below_the_log_start_leave_a_snapshot_taken_before_it_moved():
    disk, log, _ = build(60)
    # Producer 9's only batch goes; producer 1 keeps some of its five last batches.
    start = snapshot_offsets(log)[-1] - 5
    log.advance_log_start_offset(start)
    state = rebuilt(log)
    assert state == scanned(disk, log)
    assert 9 not in state
    assert 0 < len(state[1][1]) < 5


def test_a_follower_append_across_rolls_snapshots_each_new_segment():
    """A fetch response can span segments (here the follower's are smaller than the
    leader's): each roll's snapshot holds the batches below it, loaded from the response
    before the snapshot is written."""
    leader_disk, leader, _ = build()
    disk = SimDisk("b2")
    smaller = LogConfig(segment_bytes=250, index_interval_bytes=64)
    follower = Log.open(disk, DIR, config=smaller)
    state = ProducerStateManager()
    records = leader.read(0, 1 << 20, min_one_batch=True)
    while records:
        start, active = follower.log_end_offset, follower.active_segment
        follower.append_as_follower(records)
        rolled = [s.base_offset for s in follower.segments if s.base_offset > active.base_offset]
        state.load(records, start, rolled, follower)
        records = leader.read(follower.log_end_offset, 1 << 20)
    assert len(snapshot_offsets(follower)) > 1
    assert rebuilt(follower) == state.describe() == scanned(leader_disk, leader)
    for offset in snapshot_offsets(follower):
        clone = copy.deepcopy(disk)
        cut = Log.open(clone, DIR, config=smaller)
        cut.truncate_to(offset)
        assert rebuilt(cut) == scanned(clone, cut), offset
