"""The segmented log: offsets, rolls, the sparse index, reads, truncation, the epoch cache."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from impl.log import (
    UNDEFINED_EPOCH,
    CorruptBatchError,
    EpochEndOffset,
    EpochEntry,
    EpochRegressionError,
    LeaderEpochCache,
    Log,
    LogConfig,
    OffsetOutOfRangeError,
    RecordBatch,
    RecordTooLargeError,
    StaleHandleError,
    UnexpectedAppendOffsetError,
)
from impl.log.batch import decode
from impl.log.index import ENTRY_SIZE
from impl.log.segment import Segment
from impl.sim.disk import SimDisk

SMALL = LogConfig(segment_bytes=300, index_interval_bytes=80)


def _open(config: LogConfig = SMALL, disk: SimDisk | None = None) -> Log:
    return Log.open(disk or SimDisk(), "orders-0", config=config)


def _fill(log: Log, count: int, epoch: int = 0, size: int = 5) -> None:
    for i in range(count):
        log.append_as_leader(RecordBatch.of(b"%0*d" % (size, i)), epoch)


def _linear_scan(segment: Segment) -> list[tuple[int, int, int]]:
    """(position, base offset, last offset) of every batch, by decoding from byte 0."""
    data = segment.disk.read(segment.log_path)
    result = []
    position = 0
    while position < len(data):
        batch, end = decode(data, position)
        result.append((position, batch.base_offset, batch.last_offset))
        position = end
    return result


# ---------------------------------------------------------------------------- basics


def test_append_assigns_consecutive_offsets_and_stamps_the_epoch():
    log = _open()
    first = log.append_as_leader(RecordBatch.of(b"a", b"b", b"c"), leader_epoch=4)
    second = log.append_as_leader(RecordBatch.of(b"d"), leader_epoch=4)
    assert (first.first_offset, first.last_offset, second.first_offset) == (0, 2, 3)
    assert log.log_end_offset == 4
    assert [(o, e, v) for o, e, _, v in log.entries()] == [
        (0, 4, b"a"),
        (1, 4, b"b"),
        (2, 4, b"c"),
        (3, 4, b"d"),
    ]
    assert log.epoch_cache.entries == (EpochEntry(4, 0),)


def test_segments_roll_by_size_and_are_named_by_20_digit_base_offset():
    disk = SimDisk()
    log = _open(disk=disk)
    _fill(log, 30)
    log.check_invariants()
    bases = [s.base_offset for s in log.segments]
    assert len(bases) > 3
    names = disk.list_dir("orders-0")
    for base in bases:
        assert f"{base:020d}.log" in names and f"{base:020d}.index" in names
    assert "00000000000000000000.log" in names
    for segment, following in zip(log.segments, log.segments[1:], strict=False):
        assert segment.size <= SMALL.segment_bytes
        # it rolled because the next batch would not fit
        scan = _linear_scan(following)
        first_size = (scan[1][0] if len(scan) > 1 else following.size) - scan[0][0]
        assert segment.size + first_size > SMALL.segment_bytes


def test_a_batch_larger_than_a_segment_still_goes_into_an_empty_one():
    log = _open(LogConfig(segment_bytes=60))
    log.append_as_leader(RecordBatch.of(bytes(100)), 0)
    log.append_as_leader(RecordBatch.of(bytes(100)), 0)
    assert [s.size > 60 for s in log.segments] == [True, True]


def test_a_full_index_rolls_the_segment():
    log = _open(LogConfig(index_interval_bytes=0, segment_index_bytes=3 * ENTRY_SIZE))
    _fill(log, 10)
    assert [len(s.index) for s in log.segments][:-1] == [3, 3]


def test_records_too_large_are_refused():
    log = _open(LogConfig(max_batch_bytes=100))
    with pytest.raises(RecordTooLargeError, match=r"exceeds max.message.bytes \(100\)"):
        log.append_as_leader(RecordBatch.of(bytes(100)), 0)
    assert log.log_end_offset == 0


# ---------------------------------------------------------------------------- index


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.tuples(st.integers(1, 4), st.integers(0, 60)), min_size=1, max_size=40),
    segment_bytes=st.integers(80, 600),
    interval=st.integers(0, 200),
)
def test_index_lookup_agrees_with_a_linear_scan(sizes, segment_bytes, interval):
    config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=interval)
    log = _open(config)
    for count, size in sizes:
        log.append_as_leader(RecordBatch.of(*[bytes(size)] * count), 0)
    log.check_invariants()
    for segment in log.segments:
        scan = _linear_scan(segment)
        for position, _, last in scan:
            assert segment.index.lookup(last)[1] <= position
        # every index entry names a real batch by its last offset and position
        assert set(segment.index.entries()) <= {(last, pos) for pos, _, last in scan}
        # entries are at least the interval apart
        entry_positions = [p for _, p in segment.index.entries()]
        for a, b in itertools.pairwise(entry_positions):
            assert b - a > interval
        for offset in range(segment.base_offset, segment.next_offset):
            expected = next((p, b) for p, b, last in scan if last >= offset)
            found = segment.find_batch(offset)
            assert found is not None
            assert (found[0], found[1].base_offset) == expected
        assert segment.find_batch(segment.next_offset) is None


def test_sparse_index_skips_small_batches_until_the_interval_is_passed():
    log = _open(LogConfig(index_interval_bytes=100))
    _fill(log, 10, size=5)
    size = len(RecordBatch.of(b"00000").encode())
    assert size == 55
    entries = log.active_segment.index.entries()
    # Kafka's rule: an entry once more than 100 bytes went by: batches 2, 4, 6, 8.
    assert [offset for offset, _ in entries] == [2, 4, 6, 8]
    assert [position for _, position in entries] == [2 * size, 4 * size, 6 * size, 8 * size]


# ---------------------------------------------------------------------------- read


def test_read_returns_whole_batches_from_the_one_holding_the_offset():
    log = _open(LogConfig())
    log.append_as_leader(RecordBatch.of(b"0", b"1", b"2"), 0)
    log.append_as_leader(RecordBatch.of(b"3", b"4"), 0)
    batches = log.read_batches(1)
    assert [(b.base_offset, b.last_offset) for b in batches] == [(0, 2), (3, 4)]
    assert log.read(5) == b""


def test_read_stops_below_upto_the_high_watermark():
    log = _open(LogConfig())
    for _ in range(4):
        log.append_as_leader(RecordBatch.of(b"x", b"y"), 0)  # offsets 0-1, 2-3, 4-5, 6-7
    assert [b.base_offset for b in log.read_batches(0, upto=4)] == [0, 2]
    assert [b.base_offset for b in log.read_batches(0, upto=5)] == [0, 2]
    assert log.read(4, upto=4) == b""
    with pytest.raises(ValueError, match="beyond the LEO"):
        log.read(0, upto=9)


def test_read_respects_max_bytes_but_returns_one_batch_at_least():
    log = _open(LogConfig())
    _fill(log, 5, size=5)  # 55-byte batches
    assert len(log.read_batches(0, max_bytes=120)) == 2
    assert len(log.read_batches(0, max_bytes=10)) == 1
    assert log.read(0, max_bytes=10, min_one_batch=False) == b""


def test_read_stays_within_one_segment_and_continues_in_the_next():
    log = _open()
    _fill(log, 30)
    first, second = log.segments[0], log.segments[1]
    batches = log.read_batches(first.base_offset, max_bytes=10**6)
    assert batches[-1].next_offset == first.next_offset
    assert log.read_batches(first.next_offset)[0].base_offset == second.base_offset


def test_reads_outside_the_log_are_out_of_range():
    log = _open()
    _fill(log, 3)
    with pytest.raises(OffsetOutOfRangeError, match=r"offset 4 is outside the log \[0, 3\]"):
        log.read(4)
    log.advance_log_start_offset(2)
    with pytest.raises(OffsetOutOfRangeError):
        log.read(1)


# ---------------------------------------------------------------------------- truncate


def test_truncate_then_append_reuses_the_offsets():
    log = _open()
    _fill(log, 20, epoch=1)
    assert log.truncate_to(7)
    log.check_invariants()
    assert log.log_end_offset == 7
    log.append_as_leader(RecordBatch.of(b"new"), 2)
    assert log.entries()[-1] == (7, 2, None, b"new")
    assert [o for o, *_ in log.entries()] == list(range(8))
    assert not log.truncate_to(100)


def test_truncate_removes_whole_segments_above_and_cuts_the_one_holding_the_offset():
    disk = SimDisk()
    log = _open(disk=disk)
    _fill(log, 30)
    bases = [s.base_offset for s in log.segments]
    target = bases[1] + 3
    assert any(o >= target for o, _ in log.segments[1].index.entries())
    log.truncate_to(target)
    assert [s.base_offset for s in log.segments] == bases[:2]
    assert all(f"{b:020d}.log" not in disk.list_dir("orders-0") for b in bases[2:])
    entries = log.active_segment.index.entries()
    assert entries and all(o < target for o, _ in entries)
    log.check_invariants()


def test_truncating_inside_a_batch_removes_the_whole_batch():
    log = _open(LogConfig())
    log.append_as_leader(RecordBatch.of(b"0", b"1"), 0)
    log.append_as_leader(RecordBatch.of(b"2", b"3", b"4"), 0)
    log.truncate_to(3)
    assert log.log_end_offset == 2


def test_truncate_below_the_first_segment_restarts_the_log_there():
    log = _open()
    _fill(log, 30)
    log.advance_log_start_offset(20)
    first = log.segments[0].base_offset
    log.truncate_to(first - 1)
    assert (log.log_start_offset, log.log_end_offset) == (first - 1, first - 1)
    log.check_invariants()


def test_advance_log_start_deletes_segments_entirely_below_it():
    log = _open()
    _fill(log, 30)
    second = log.segments[1].base_offset
    log.advance_log_start_offset(second + 1)
    assert log.segments[0].base_offset == second
    assert log.log_start_offset == second + 1
    assert log.entries()[0][0] == second + 1
    log.advance_log_start_offset(log.log_end_offset)
    assert len(log.segments) == 1 and log.active_segment.size == 0
    log.check_invariants()


# ---------------------------------------------------------------------------- follower


def test_follower_append_copies_the_leaders_bytes_exactly():
    leader, follower = _open(), _open()
    _fill(leader, 10, epoch=1)
    _fill(leader, 10, epoch=3)
    while follower.log_end_offset < leader.log_end_offset:
        follower.append_as_follower(leader.read(follower.log_end_offset, max_bytes=150))
    assert follower.entries() == leader.entries()
    assert follower.epoch_cache.entries == leader.epoch_cache.entries
    assert b"".join(follower.disk.read(s.log_path) for s in follower.segments) == b"".join(
        leader.disk.read(s.log_path) for s in leader.segments
    )


def test_follower_append_must_start_at_its_leo_and_validates_everything_first():
    leader, follower = _open(), _open()
    _fill(leader, 4, epoch=1)
    with pytest.raises(UnexpectedAppendOffsetError, match="start at offset 1"):
        follower.append_as_follower(leader.read(1))
    data = bytearray(leader.read(0))
    data[-1] ^= 0x10  # corrupt the last batch
    with pytest.raises(CorruptBatchError, match="CRC"):
        follower.append_as_follower(bytes(data))
    assert follower.log_end_offset == 0


def test_a_zombie_leader_may_not_append_an_older_epoch_than_its_log_holds():
    log = _open()
    _fill(log, 2, epoch=5)
    with pytest.raises(EpochRegressionError, match="fenced leader"):
        log.append_as_leader(RecordBatch.of(b"zombie"), 4)
    assert log.log_end_offset == 2


def test_a_follower_appends_an_older_epoch_and_its_cache_forgets_the_newer_one_as_kafkas():
    # Without KIP-320's fencing a follower may be sent epoch-4 records after epoch-5 ones;
    # Kafka appends them and its cache drops the conflicting epoch 5.
    log = _open()
    _fill(log, 2, epoch=5)
    other = _open()
    _fill(other, 3, epoch=4)
    log.append_as_follower(other.read(2))
    assert log.log_end_offset == 3
    assert log.epoch_cache.entries == (EpochEntry(4, 2),)
    assert [epoch for _, epoch, _, _ in log.entries()] == [5, 5, 4]


def test_a_follower_may_append_an_older_epoch_over_an_empty_epoch_it_began_as_leader():
    # It began epoch 5 at its LEO but wrote nothing; the new leader sends epoch-4 records
    # from that offset: epoch 5 had no records and is superseded. Kafka's rule removes the
    # earlier start of epoch 4 too (an entry with an epoch >= the new one), so epoch 4 now
    # "starts" at 2; a replica avoids this by truncating (dropping the empty epoch 5)
    # before it fetches.
    log = _open()
    _fill(log, 2, epoch=4)
    log.maybe_assign_epoch_start_offset(5, 2)
    source = _open()
    _fill(source, 3, epoch=4)
    log.append_as_follower(source.read(2))
    assert log.epoch_cache.entries == (EpochEntry(4, 2),)
    truncated = _open()
    _fill(truncated, 2, epoch=4)
    truncated.maybe_assign_epoch_start_offset(5, 2)
    truncated.truncate_to(2)
    truncated.append_as_follower(source.read(2))
    assert truncated.epoch_cache.entries == (EpochEntry(4, 0),)


def test_a_handle_used_after_its_disk_crashed_is_refused():
    disk = SimDisk()
    log = _open(disk=disk)
    disk.crash()
    with pytest.raises(StaleHandleError, match=r"Re-open it with Log\.open"):
        log.append_as_leader(RecordBatch.of(b"x"), 0)


def test_flush_interval_messages_flushes_every_n_records():
    disk = SimDisk()
    log = _open(LogConfig(flush_interval_messages=3), disk)
    _fill(log, 7)
    assert log.recovery_point == 6
    disk.crash()
    assert Log.open(disk, "orders-0").log_end_offset == 6


# ---------------------------------------------------------------------------- epoch cache


def _cache(*entries: tuple[int, int]) -> LeaderEpochCache:
    cache = LeaderEpochCache()
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


def test_end_offset_for_an_epoch_is_the_start_of_the_next_higher_one():
    cache = _cache((0, 10), (2, 13), (4, 17))
    assert cache.end_offset_for(0, 30) == EpochEndOffset(0, 13)
    assert cache.end_offset_for(2, 30) == EpochEndOffset(2, 17)
    assert cache.end_offset_for(4, 30) == EpochEndOffset(4, 30)  # latest: the LEO


def test_kip_279_a_missing_epoch_is_answered_with_the_largest_epoch_below_it():
    cache = _cache((0, 10), (2, 13), (4, 17))
    assert cache.end_offset_for(1, 30) == EpochEndOffset(0, 13)
    assert cache.end_offset_for(3, 30) == EpochEndOffset(2, 17)


def test_an_epoch_below_every_known_one_ends_where_the_first_known_epoch_starts():
    cache = _cache((5, 11), (6, 12), (7, 13))
    assert cache.end_offset_for(4, 20) == EpochEndOffset(4, 11)


def test_unknown_newer_or_undefined_epochs_are_undefined():
    cache = _cache((1, 0))
    assert cache.end_offset_for(2, 9).is_undefined
    assert cache.end_offset_for(UNDEFINED_EPOCH, 9).is_undefined
    assert LeaderEpochCache().end_offset_for(0, 0).is_undefined


def test_kip_279_fast_failover_logs_converge():
    """Scenario 3 of kafka-semantics.md at the storage level: leadership A -> B -> A.

    A wrote offsets 0-4 in epoch 1; B had 0-2, became leader in epoch 2 and wrote 3-4; A
    became leader again in epoch 3 without ever seeing epoch 2. B asks A where its epoch 2
    ended. A knows no epoch 2: it answers epoch 1 ending at 5 (KIP-279). B truncates to the
    end of *its own* epoch 1 (3), not to 5, and then copies A's log: the logs agree. With
    the pre-KIP-279 answer (only "5"), B would keep its epoch-2 records at 3-4."""
    a, b = _open(LogConfig()), _open(LogConfig())
    for i in range(5):
        a.append_as_leader(RecordBatch.of(b"a%d" % i), 1)
    b.append_as_follower(a.read(0, upto=3))
    b.maybe_assign_epoch_start_offset(2, 3)
    for i in range(3, 5):
        b.append_as_leader(RecordBatch.of(b"b%d" % i), 2)
    a.maybe_assign_epoch_start_offset(3, 5)

    assert b.latest_epoch == 2
    answer = a.end_offset_for_epoch(b.latest_epoch)
    assert answer == EpochEndOffset(1, 5)
    own = b.end_offset_for_epoch(answer.leader_epoch)
    b.truncate_to(min(answer.end_offset, own.end_offset))
    assert b.log_end_offset == 3
    b.append_as_follower(a.read(b.log_end_offset))
    assert b.entries() == a.entries()


def test_assign_only_grows_and_supersedes_empty_epochs():
    cache = _cache((1, 0), (3, 10))
    assert not cache.assign(3, 15)  # later batches of the latest epoch
    assert cache.assign(4, 20)
    assert cache.assign(5, 20)  # epoch 4 wrote nothing: superseded
    assert cache.entries == (EpochEntry(1, 0), EpochEntry(3, 10), EpochEntry(5, 20))
    with pytest.raises(ValueError, match="cannot assign epoch -1"):
        cache.assign(-1, 25)


@pytest.mark.parametrize(
    ("epoch", "start", "after"),
    [
        (6, 1600, [(5, 1000), (6, 1600)]),  # Kafka's example: epoch 7 is forgotten
        (6, 1400, [(5, 1000), (6, 1400)]),  # an earlier start for a known epoch
        (8, 1700, [(5, 1000), (6, 1500), (8, 1700)]),  # epoch 7 starts at or after 1700
        (4, 2000, [(4, 2000)]),  # an older epoch after them all: every entry conflicts
        (9, 900, [(9, 900)]),  # a newer epoch before them all
        (7, 1900, [(5, 1000), (6, 1500), (7, 1800)]),  # latest epoch, later: no change
    ],
)
def test_assign_removes_the_entries_the_new_one_does_not_follow_as_kafkas_cache(
    epoch, start, after
):
    """Kafka's ``maybeTruncateNonMonotonicEntries``: every trailing entry whose epoch is
    >= the new one or whose start offset is >= the new one goes, so both keep increasing."""
    cache = _cache((5, 1000), (6, 1500), (7, 1800))
    changed = cache.assign(epoch, start)
    assert cache.entries == tuple(EpochEntry(*e) for e in after)
    assert changed == (after != [(5, 1000), (6, 1500), (7, 1800)])
    cache.check_invariants()


@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 30)), max_size=12))
def test_any_sequence_of_assigns_leaves_a_monotone_cache_ending_with_the_last(assigns):
    cache = LeaderEpochCache()
    for epoch, start in assigns:
        before = cache.latest_entry
        cache.assign(epoch, start)
        latest = cache.latest_entry
        assert latest is not None
        if before is not None and before.epoch == epoch and start >= before.start_offset:
            assert latest == before
        else:
            assert latest == EpochEntry(epoch, start)
        cache.check_invariants()


def test_truncate_from_end_and_from_start():
    cache = _cache((1, 0), (3, 10), (5, 20))
    assert cache.truncate_from_end(20)
    assert cache.entries == (EpochEntry(1, 0), EpochEntry(3, 10))
    assert not cache.truncate_from_end(11)
    assert cache.truncate_from_start(12)
    assert cache.entries == (EpochEntry(3, 12),)
    assert not cache.truncate_from_start(5)
    assert cache.epoch_for(11) is None and cache.epoch_for(12) == 3


def test_truncating_the_log_to_its_leo_drops_an_epoch_begun_there():
    log = _open()
    _fill(log, 3, epoch=1)
    log.maybe_assign_epoch_start_offset(2, 3)
    assert not log.truncate_to(3)
    assert log.latest_epoch == 1


# ---------------------------------------------------------------------------- model check


class LogVersusModel(RuleBasedStateMachine):
    """Appends, epoch changes, truncations, flushes and crashes against a list-of-batches
    model. A crash must leave exactly the batches below the last flush (or truncation)."""

    @initialize(
        segment_bytes=st.integers(100, 500),
        interval=st.integers(0, 150),
        pass_recovery_point=st.booleans(),
    )
    def setup(self, segment_bytes, interval, pass_recovery_point):
        self.disk = SimDisk()
        self.config = LogConfig(segment_bytes=segment_bytes, index_interval_bytes=interval)
        self.pass_recovery_point = pass_recovery_point
        self.log = Log.open(self.disk, "t-0", config=self.config)
        self.batches: list[tuple[int, int, list[bytes]]] = []  # (base, epoch, values)
        self.epoch = 0
        self.durable = 0  # records below this survive a power loss
        self.recovery_point = 0  # what the log may claim is durable

    @property
    def leo(self) -> int:
        return self.batches[-1][0] + len(self.batches[-1][2]) if self.batches else 0

    @rule(values=st.lists(st.binary(max_size=30), min_size=1, max_size=4))
    def append(self, values):
        segments = len(self.log.segments)
        leo = self.leo
        self.log.append_as_leader(RecordBatch.of(*values), self.epoch)
        if len(self.log.segments) > segments:
            self.durable = self.recovery_point = leo  # the roll flushed the old segment
        self.batches.append((leo, self.epoch, values))

    @rule()
    def new_leader_epoch(self):
        self.epoch += 1
        self.log.maybe_assign_epoch_start_offset(self.epoch, self.leo)

    @rule(data=st.data())
    def truncate(self, data):
        offset = data.draw(st.integers(0, self.leo + 1))
        self.log.truncate_to(offset)
        self.batches = [b for b in self.batches if b[0] + len(b[2]) <= offset]
        self.durable = min(self.durable, self.leo)
        self.recovery_point = min(self.recovery_point, self.leo)
        self.epoch = max([self.epoch] + [e for _, e, _ in self.batches])

    @rule()
    def flush(self):
        self.log.flush()
        self.durable = self.recovery_point = self.leo

    @rule()
    def crash_and_recover(self):
        recovery_point = self.log.recovery_point if self.pass_recovery_point else 0
        self.disk.crash()
        self.log = Log.open(self.disk, "t-0", config=self.config, recovery_point=recovery_point)
        self.batches = [b for b in self.batches if b[0] + len(b[2]) <= self.durable]
        self.recovery_point = min(recovery_point, self.leo)
        assert self.log.recovery.truncated_bytes == 0  # a clean power loss tears nothing

    @precondition(lambda self: self.batches)
    @rule(data=st.data())
    def read_any_offset(self, data):
        offset = data.draw(st.integers(0, self.leo - 1))
        first = self.log.read_batches(offset, max_bytes=1)[0]
        assert first.base_offset <= offset <= first.last_offset

    @invariant()
    def matches_the_model(self):
        log = self.log
        log.check_invariants()
        expected = [
            (base + i, epoch, value)
            for base, epoch, values in self.batches
            for i, value in enumerate(values)
        ]
        assert [(o, e, v) for o, e, _, v in log.entries()] == expected
        assert log.log_end_offset == self.leo
        assert log.recovery_point == self.recovery_point <= self.durable
        starts: list[EpochEntry] = []
        for base, epoch, _ in self.batches:
            if not starts or epoch > starts[-1].epoch:
                starts.append(EpochEntry(epoch, base))
        cached = [e for e in log.epoch_cache.entries if e.start_offset < self.leo]
        assert cached == starts


LogVersusModel.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
test_log_matches_a_list_of_batches_through_crashes = LogVersusModel.TestCase
