"""Retention (impl.log.retention): whole old segments go, the log start follows, never past
the high watermark, and what is left is exactly the log's suffix."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from impl.log import Log, LogConfig, OffsetOutOfRangeError, RecordBatch
from impl.log.retention import apply_retention, largest_timestamp
from impl.sim.disk import SimDisk

DIRECTORY = "t-0"


def _config(**kwargs: object) -> LogConfig:
    base: dict[str, object] = {"segment_bytes": 150, "index_interval_bytes": 40}
    base.update(kwargs)
    return LogConfig(**base)  # type: ignore[arg-type]


def _log(config: LogConfig, count: int, *, step_ms: int = 10) -> Log:
    """``count`` one-record batches, the i-th appended at time i * ``step_ms``."""
    log = Log.open(SimDisk(), DIRECTORY, config=config)
    for i in range(count):
        log.append_as_leader(RecordBatch.of(b"v%d" % i), 0, now_ms=i * step_ms)
    return log


def test_retention_ms_deletes_segments_whose_newest_record_is_too_old():
    log = _log(_config(retention_ms=100), 20)
    stamps = [largest_timestamp(s) for s in log.segments]
    assert len(stamps) > 3
    now = 250
    result = apply_retention(log, high_watermark=log.log_end_offset, now_ms=now)
    assert result is not None and result.by_time == result.segments_deleted > 0
    # every deleted segment had expired; the first kept one has not (or is the active one)
    for stamp in stamps[: result.segments_deleted]:
        assert stamp is not None and now - stamp > 100
    first = log.segments[0]
    stamp = largest_timestamp(first)
    assert first is log.active_segment or (stamp is not None and now - stamp <= 100)
    assert log.log_start_offset == first.base_offset == result.log_start_after
    with pytest.raises(OffsetOutOfRangeError, match="outside the log"):
        log.read(log.log_start_offset - 1)
    assert log.read(log.log_start_offset)


def test_retention_never_passes_the_high_watermark_nor_the_active_segment():
    log = _log(_config(retention_ms=0), 20)
    result = apply_retention(log, high_watermark=7, now_ms=10**9)
    assert result is not None
    assert log.log_start_offset <= 7
    assert log.segments[1].base_offset > 7
    everything = apply_retention(log, high_watermark=log.log_end_offset, now_ms=10**9)
    assert everything is not None
    assert len(log.segments) == 1 and log.log_start_offset == log.active_segment.base_offset


def test_without_timestamps_or_with_compact_only_nothing_is_deleted_by_time():
    log = _log(_config(retention_ms=-1), 20)
    assert largest_timestamp(log.segments[0]) is None  # nothing asked for timestamps
    assert apply_retention(log, high_watermark=20, now_ms=10**9) is None
    compacted = Log.open(SimDisk(), DIRECTORY, config=_config(cleanup_policy="compact"))
    for i in range(20):
        compacted.append_as_leader(RecordBatch.of(b"v", key=b"k%d" % i), 0)
    assert apply_retention(compacted, high_watermark=20, now_ms=10**9) is None


def test_a_leader_must_say_when_a_timed_log_appends():
    log = Log.open(SimDisk(), DIRECTORY, config=_config(retention_ms=5))
    with pytest.raises(ValueError, match="pass now_ms"):
        log.append_as_leader(RecordBatch.of(b"v"), 0)


def test_a_follower_keeps_the_leaders_timestamps():
    leader = _log(_config(retention_ms=100), 12)
    follower = Log.open(SimDisk(), DIRECTORY, config=leader.config)
    follower.append_as_follower(leader.read(0, 10**6))
    while follower.log_end_offset < leader.log_end_offset:
        follower.append_as_follower(leader.read(follower.log_end_offset, 10**6))
    assert [largest_timestamp(s) for s in follower.segments] == [
        largest_timestamp(s) for s in leader.segments
    ]


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 40),
    st.integers(-1, 2000),
    st.integers(-1, 400),
    st.data(),
)
def test_retention_bytes_keeps_a_suffix_of_at_least_that_many_bytes(
    count, retention_bytes, retention_ms, data
):
    config = _config(retention_bytes=retention_bytes, retention_ms=retention_ms)
    log = _log(config, count)
    before = log.entries()
    size_before = log.size_in_bytes
    hw = data.draw(st.integers(0, log.log_end_offset))
    now = data.draw(st.integers(0, 1000))
    result = apply_retention(log, high_watermark=hw, now_ms=now)
    start = log.log_start_offset
    assert start <= max(hw, 0) or result is None
    assert log.entries() == [e for e in before if e[0] >= start]
    if result is None:
        assert start == 0
    else:
        assert result.bytes_deleted == size_before - log.size_in_bytes
        if retention_bytes >= 0 and result.by_time == 0:
            assert log.size_in_bytes >= retention_bytes
    # retention stopped for a reason: the next segment is the active one, holds the high
    # watermark, or is neither too old nor too much
    if len(log.segments) > 1 and log.segments[1].base_offset <= hw:
        first = log.segments[0]
        stamp = largest_timestamp(first)
        assert retention_ms < 0 or stamp is None or now - stamp <= retention_ms
        assert retention_bytes < 0 or log.size_in_bytes - first.size < retention_bytes
    log.check_invariants()
    reopened = Log.open(log.disk, DIRECTORY, config=config)
    assert reopened.log_start_offset == start and reopened.entries() == log.entries()
