"""Log compaction (impl.log.cleaner): what survives a cleaning, that offsets and epochs are
preserved, and that a crash at any step of the swap recovers to the old or the new
segments."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from impl.log import InvalidRecordError, Log, LogConfig, RecordBatch
from impl.log.cleaner import LogCleaner, clean_log
from impl.sim.disk import SimDisk

DIRECTORY = "offsets-0"
KEYS = [b"a", b"b", b"c", b"d"]

pairs = st.tuples(st.sampled_from(KEYS), st.none() | st.binary(min_size=1, max_size=8))
appends = st.lists(
    st.tuples(st.lists(pairs, min_size=1, max_size=3), st.booleans()), min_size=1, max_size=30
)
"""Batches of (key, value or tombstone), each with whether the leader epoch goes up."""


def _config(**kwargs: object) -> LogConfig:
    base: dict[str, object] = {
        "segment_bytes": 160,
        "index_interval_bytes": 40,
        "cleanup_policy": "compact",
        "delete_retention_ms": 100,
    }
    base.update(kwargs)
    return LogConfig(**base)  # type: ignore[arg-type]


def _build(disk, batches, config: LogConfig | None = None) -> Log:
    log = Log.open(disk, DIRECTORY, config=config or _config())
    epoch = 0
    for records, bump in batches:
        epoch += bump
        log.append_as_leader(RecordBatch.of_pairs(records), epoch)
    log.flush()
    return log


def _entries(log: Log) -> dict[int, tuple[int, bytes | None, bytes | None]]:
    return {o: (e, k, v) for o, e, k, v in log.entries()}


def _read_offsets(log: Log) -> list[int]:
    """Every record offset, read as a fetcher does: batch after batch from the log start."""
    offsets: list[int] = []
    position = log.log_start_offset
    while position < log.log_end_offset:
        batches = log.read_batches(position, 100)
        assert batches, position
        for batch in batches:
            offsets.extend(o for o, _ in batch.offsets_and_records())
            position = batch.next_offset
    return offsets


@settings(max_examples=150, deadline=None)
@given(appends, st.data())
def test_cleaning_keeps_the_last_value_of_each_key_at_its_offset(batches, data):
    disk = SimDisk()
    log = _build(disk, batches)
    before = _entries(log)
    epochs_before = log.epoch_cache.entries
    hw = data.draw(st.integers(log.log_start_offset, log.log_end_offset))
    result = clean_log(log, first_unstable_offset=hw, now_ms=1000)
    after = _entries(log)
    end = result.end_offset
    assert end <= hw and end <= log.active_segment.base_offset
    # every offset still present was present before, with the same epoch, key and value
    assert all(before.get(o) == entry for o, entry in after.items())
    # nothing at or above the first uncleanable offset changed
    assert {o: e for o, e in before.items() if o >= end} == {
        o: e for o, e in after.items() if o >= end
    }
    # below it: exactly the last record of each key (tombstones too: none has expired yet)
    last = {}
    for offset in sorted(before):
        if offset < end:
            last[before[offset][1]] = offset
    assert sorted(o for o in after if o < end) == sorted(last.values())
    # offsets read back increase, LEO and log start unchanged, epochs unchanged
    offsets = _read_offsets(log)
    assert offsets == sorted(after) and len(set(offsets)) == len(offsets)
    # the rebuilt indexes find every offset: a read from any offset of the log starts with
    # the batch that covers it
    for offset in range(log.log_start_offset, log.log_end_offset):
        first = log.read_batches(offset, 1)[0]
        assert first.base_offset <= offset <= first.last_offset
    assert log.epoch_cache.entries == epochs_before
    for offset, (epoch, _, _) in after.items():
        assert log.epoch_cache.epoch_for(offset) == epoch
    # the cleaned log reopens (every batch re-validated) to the same content
    reopened = Log.open(disk, DIRECTORY, config=log.config, recovery_point=0)
    assert _entries(reopened) == after and reopened.recovery.clean
    assert reopened.epoch_cache.entries == epochs_before


@settings(max_examples=100, deadline=None)
@given(appends)
def test_a_tombstone_outlives_delete_retention_and_then_goes(batches):
    disk = SimDisk()
    log = _build(disk, batches)
    log.roll()
    hw = log.log_end_offset
    first = clean_log(log, first_unstable_offset=hw, now_ms=1000)
    tombstones = {k for o, (_, k, v) in _entries(log).items() if v is None}
    if tombstones:
        assert first.next_delete_horizon == 1000 + log.config.delete_retention_ms
    # before the horizon they stay
    clean_log(log, first_unstable_offset=hw, now_ms=1099)
    assert {k for _, (_, k, v) in _entries(log).items() if v is None} == tombstones
    # at the horizon they go, and with them the key: nothing is readable for it
    last = clean_log(log, first_unstable_offset=hw, now_ms=1100)
    assert last.tombstones_removed == len(tombstones)
    keys_left = {k for _, (_, k, _) in _entries(log).items()}
    assert not keys_left & tombstones
    assert last.next_delete_horizon is None


class _Crash(Exception):
    pass


class _CrashingDisk:
    """A SimDisk that stops (raises) before its ``limit``-th mutating call."""

    MUTATING = ("create", "append", "write", "truncate", "fsync", "rename", "delete")

    def __init__(self, disk: SimDisk, limit: int) -> None:
        self._disk = disk
        self.limit = limit
        self.calls = 0

    @property
    def generation(self) -> int:
        return self._disk.generation

    def __getattr__(self, name: str):
        attribute = getattr(self._disk, name)
        if name not in self.MUTATING:
            return attribute

        def call(*args, **kwargs):
            if self.calls >= self.limit:
                raise _Crash(name)
            self.calls += 1
            return attribute(*args, **kwargs)

        return call


@settings(max_examples=40, deadline=None)
@given(appends)
def test_a_crash_at_any_step_of_cleaning_recovers_the_old_or_the_new_segments(batches):
    # the crash-free run, for the new segments
    reference = _build(SimDisk(), batches)
    hw = reference.log_end_offset
    before = _entries(reference)
    result = clean_log(reference, first_unstable_offset=hw, now_ms=5)
    after = _entries(reference)
    cleaned_ranges = [(s.base_offset, s.next_offset) for s in reference.segments][
        : result.segments_after
    ]
    steps = 0
    while True:
        disk = SimDisk()
        crashing = _CrashingDisk(disk, limit=10**9)
        log = _build(crashing, batches)
        crashing.limit = crashing.calls + steps
        try:
            clean_log(log, first_unstable_offset=hw, now_ms=5)
            finished = True
        except _Crash:
            finished = False
        disk.crash()
        reopened = Log.open(disk, DIRECTORY, config=log.config)
        got = _entries(reopened)
        for low, high in cleaned_ranges:
            part = {o: e for o, e in got.items() if low <= o < high}
            old = {o: e for o, e in before.items() if low <= o < high}
            new = {o: e for o, e in after.items() if low <= o < high}
            assert part in (old, new), (steps, low, high)
        assert {o: e for o, e in got.items() if o >= result.end_offset} == {
            o: e for o, e in before.items() if o >= result.end_offset
        }
        assert reopened.log_end_offset == reference.log_end_offset
        assert not [n for n in disk.list_dir(DIRECTORY) if n.endswith((".cleaned", ".swap"))]
        # cleaning the recovered log finishes the job
        clean_log(reopened, first_unstable_offset=hw, now_ms=5)
        assert _entries(reopened) == after
        if finished:
            break
        steps += 1
    assert steps > 0 or result.segments_before == 0


def test_cleaning_never_touches_the_active_segment_or_records_above_the_high_watermark():
    disk = SimDisk()
    log = _build(disk, [([(b"a", b"1")], False)] * 12)
    hw = 7
    result = clean_log(log, first_unstable_offset=hw, now_ms=0)
    end = result.end_offset
    assert 0 < end <= hw and log.segments[1].base_offset <= end  # whole segments only
    kept = sorted(_entries(log))
    assert [o for o in kept if o < end] == [end - 1]  # the last "a" below the cleanable end
    assert [o for o in kept if o >= end] == list(range(end, 12))


def test_the_dirty_ratio_decides_when_a_log_is_cleaned():
    disk = SimDisk()
    log = _build(disk, [([(b"a", b"1")], False)] * 12, _config(min_cleanable_dirty_ratio=0.9))
    cleaner = LogCleaner()
    hw = log.log_end_offset
    assert cleaner.dirty_ratio(log, hw) == 1.0
    assert cleaner.maybe_clean(log, hw, now_ms=0) is not None
    assert cleaner.dirty_ratio(log, hw) == 0.0
    assert cleaner.maybe_clean(log, hw, now_ms=0) is None
    off = _build(SimDisk(), [([(b"a", b"1")], False)] * 12, _config(cleaner_enable=False))
    assert cleaner.maybe_clean(off, hw, now_ms=0) is None
    delete = _build(SimDisk(), [([(b"a", b"1")], False)] * 12, _config(cleanup_policy="delete"))
    assert cleaner.maybe_clean(delete, hw, now_ms=0) is None
    with pytest.raises(ValueError, match="does not compact"):
        clean_log(delete, first_unstable_offset=hw, now_ms=0)


def test_a_compacted_log_refuses_records_without_a_key():
    log = Log.open(SimDisk(), DIRECTORY, config=_config())
    with pytest.raises(InvalidRecordError, match="needs a key"):
        log.append_as_leader(RecordBatch.of(b"v"), 0)


def test_cleanup_policy_is_checked():
    assert LogConfig(cleanup_policy="delete,compact").cleanup_policy == "compact,delete"
    with pytest.raises(ValueError, match=r"cleanup\.policy must be one of"):
        LogConfig(cleanup_policy="archive")


def test_a_cleaner_checkpoint_the_log_no_longer_covers_counts_everything_dirty():
    log = _build(SimDisk(), [([(b"a", b"1")], False)] * 12)
    cleaner = LogCleaner()
    assert cleaner.maybe_clean(log, log.log_end_offset, now_ms=0) is not None
    checkpoint = cleaner.first_dirty[DIRECTORY]
    assert checkpoint == log.active_segment.base_offset
    log.truncate_to(2)  # e.g. a follower truncating on leader-epoch divergence
    for _ in range(7):
        log.append_as_leader(RecordBatch.of_pairs([(b"a", b"2")]), 1)
    assert log.active_segment.base_offset < checkpoint
    assert cleaner.dirty_ratio(log, log.log_end_offset) == 1.0
