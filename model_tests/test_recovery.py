"""Recovery on open after a crash, checkpoint files, and the storage scenario files.

Scenario files (``model_tests/scenarios/storage/*.txt``) are plain text: a command, a
``----`` line, and the state expected after it, up to a blank line; ``#`` lines are prose.
``KMODEL_REWRITE=1 pytest model_tests/test_recovery.py`` regenerates the expectations from
the implementation; the diff is what a reviewer reads.
"""

from __future__ import annotations

import difflib
import os
import pathlib
import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from impl.log import (
    CheckpointError,
    EpochEntry,
    LeaderEpochCache,
    LeaderEpochCheckpointFile,
    Log,
    LogConfig,
    OffsetCheckpointFile,
    RecordBatch,
    TopicPartition,
)
from impl.log.batch import CRC_START, decode
from impl.log.checkpoint import REPLICATION_OFFSET_CHECKPOINT
from impl.sim.disk import SimDisk
from impl.sim.rng import split
from model_tests.scenario_files import parse_scenario, render_scenario

DIR = "orders-0"
SMALL = LogConfig(segment_bytes=300, index_interval_bytes=80)


def _log(disk: SimDisk, config: LogConfig = SMALL, recovery_point: int = 0) -> Log:
    return Log.open(disk, DIR, config=config, recovery_point=recovery_point)


def _batch_ends(log: Log) -> list[tuple[int, int]]:
    """(next offset, byte end within its segment) of every batch of the active segment."""
    segment = log.active_segment
    data = segment.disk.read(segment.log_path)
    ends = []
    position = 0
    while position < len(data):
        batch, position = decode(data, position)
        ends.append((batch.next_offset, position))
    return ends


# ---------------------------------------------------------------------------- torn writes


@settings(max_examples=80, deadline=None)
@given(
    flushed=st.integers(0, 12),
    unflushed=st.lists(st.binary(max_size=40), min_size=1, max_size=6),
    pass_recovery_point=st.booleans(),
    data=st.data(),
)
def test_torn_write_is_recovered_to_the_last_whole_batch(
    flushed, unflushed, pass_recovery_point, data
):
    disk = SimDisk()
    log = _log(disk)
    for i in range(flushed):
        log.append_as_leader(RecordBatch.of(b"f%d" % i), 1)
    log.flush()
    durable_leo = log.log_end_offset
    for value in unflushed:
        log.append_as_leader(RecordBatch.of(value, key=b"k"), 2)
    expected_entries = log.entries()
    active = log.active_segment.log_path
    tail = disk.unflushed_bytes(active)
    keep = data.draw(st.integers(0, tail), label="bytes of the unflushed tail kept")
    ends = _batch_ends(log)
    recovery_point = log.recovery_point if pass_recovery_point else 0

    disk.crash(torn={active: keep})
    kept_end = disk.size(active)
    recovered = _log(disk, recovery_point=recovery_point)

    whole = [(offset, end) for offset, end in ends if end <= kept_end]
    leo, valid_end = whole[-1] if whole else (recovered.active_segment.base_offset, 0)
    assert recovered.log_end_offset == max(leo, durable_leo)
    assert recovered.entries() == expected_entries[: recovered.log_end_offset]
    assert recovered.recovery.truncated_bytes == kept_end - valid_end
    assert disk.size(active) == valid_end
    first_of_each_epoch: list[EpochEntry] = []
    for offset, epoch, _, _ in recovered.entries():
        if not first_of_each_epoch or epoch > first_of_each_epoch[-1].epoch:
            first_of_each_epoch.append(EpochEntry(epoch, offset))
    assert list(recovered.epoch_cache.entries) == first_of_each_epoch
    recovered.check_invariants()
    # and it carries on: the next append lands right after the recovered tail
    info = recovered.append_as_leader(RecordBatch.of(b"after"), 3)
    assert info.first_offset == recovered.log_end_offset - 1 == max(leo, durable_leo)


def test_recovery_rebuilds_the_index_appends_would_have_built():
    disk = SimDisk()
    log = _log(disk, LogConfig(index_interval_bytes=60))
    for i in range(12):
        log.append_as_leader(RecordBatch.of(b"v" * i), 0)
    built = log.active_segment.index.entries()
    disk.crash(
        torn={log.active_segment.log_path: disk.unflushed_bytes(log.active_segment.log_path)}
    )
    recovered = _log(disk, LogConfig(index_interval_bytes=60))
    assert len(built) > 3
    assert recovered.active_segment.index.entries() == built
    assert recovered.recovery.clean


# ---------------------------------------------------------------------------- corruption


def _six_flushed_batches() -> tuple[SimDisk, Log]:
    disk = SimDisk()
    log = _log(disk, LogConfig())
    for i in range(6):
        log.append_as_leader(RecordBatch.of(b"value-%d" % i), 1)
    log.flush()
    return disk, log


@pytest.mark.parametrize("victim", range(6))
def test_a_bit_flip_in_the_active_segment_cuts_the_log_before_that_batch(victim):
    disk, log = _six_flushed_batches()
    start = ([0] + [end for _, end in _batch_ends(log)])[victim]
    disk.flip_bit(log.active_segment.log_path, (start + CRC_START + 3) * 8 + 5)
    disk.crash()
    recovered = _log(disk, LogConfig())
    assert recovered.log_end_offset == victim
    assert "CRC-32C mismatch" in recovered.recovery.errors[0]
    assert [e[3] for e in recovered.entries()] == [b"value-%d" % i for i in range(victim)]


def test_corruption_in_an_unflushed_segment_deletes_every_later_segment():
    disk = SimDisk()
    log = _log(disk, LogConfig(segment_bytes=200, flush_on_roll=False))
    for i in range(20):
        log.append_as_leader(RecordBatch.of(b"%03d" % i), 0)
    bases = [s.base_offset for s in log.segments]
    log.flush()
    second = log.segments[1]
    disk.flip_bit(second.log_path, (CRC_START + 60) * 8)  # inside its second batch
    recovered = _log(disk, LogConfig(segment_bytes=200), recovery_point=0)
    assert recovered.log_end_offset == bases[1] + 1
    assert recovered.recovery.segments_deleted == tuple(bases[2:])
    assert [s.base_offset for s in recovered.segments] == bases[:2]


def test_segments_below_the_recovery_point_are_trusted_not_scanned():
    disk = SimDisk()
    log = _log(disk)
    for i in range(30):
        log.append_as_leader(RecordBatch.of(b"%03d" % i), 0)
    log.flush()
    bases = [s.base_offset for s in log.segments]
    recovered = _log(disk, recovery_point=log.recovery_point)
    assert [scan.base_offset for scan in recovered.recovery.scans] == [bases[-1]]
    assert recovered.entries() == log.entries()
    full = _log(disk, recovery_point=0)
    assert [scan.base_offset for scan in full.recovery.scans] == bases


def test_a_corrupt_index_of_a_trusted_segment_is_rebuilt():
    disk = SimDisk()
    log = _log(disk)
    for i in range(30):
        log.append_as_leader(RecordBatch.of(b"%03d" % i), 0)
    log.flush()
    first = log.segments[0]
    entries = first.index.entries()
    assert entries
    disk.truncate_tail(first.index.path, 3)
    recovered = _log(disk, recovery_point=log.recovery_point)
    assert recovered.recovery.indexes_rebuilt == (first.base_offset,)
    assert recovered.segments[0].index.entries() == entries
    assert recovered.entries() == log.entries()


def test_a_lost_tail_of_a_trusted_segment_ends_the_log_there():
    disk = SimDisk()
    log = _log(disk)
    for i in range(30):
        log.append_as_leader(RecordBatch.of(b"%03d" % i), i // 10)  # epochs 0, 1, 2
    log.flush()
    bases = [s.base_offset for s in log.segments]
    assert bases[1] < 10
    disk.truncate_tail(log.segments[0].log_path, 10)
    recovered = _log(disk, recovery_point=log.recovery_point)
    assert recovered.log_end_offset == bases[1] - 1
    assert recovered.recovery.segments_deleted == tuple(bases[1:])
    assert recovered.epoch_cache.entries == (EpochEntry(0, 0),)
    recovered.check_invariants()


def test_an_epoch_flip_that_lowers_the_epoch_is_caught_by_monotonicity():
    disk = SimDisk()
    log = _log(disk, LogConfig())
    log.append_as_leader(RecordBatch.of(b"a"), 2)
    log.append_as_leader(RecordBatch.of(b"b"), 3)
    log.flush()
    _, second_start = _batch_ends(log)[0]
    disk.flip_bit(log.active_segment.log_path, (second_start + 15) * 8)  # epoch 3 -> 2
    assert _log(disk, LogConfig()).log_end_offset == 2  # 2 after 2: undetectable, as Kafka
    disk.flip_bit(log.active_segment.log_path, (second_start + 15) * 8 + 1)  # 2 -> 0
    recovered = _log(disk, LogConfig())
    assert recovered.log_end_offset == 1
    assert "epochs never decrease" in recovered.recovery.errors[0]


# ---------------------------------------------------------------------------- epochs


def test_recovery_truncates_the_epoch_cache_to_the_recovered_leo():
    disk = SimDisk()
    log = _log(disk, LogConfig())
    log.append_as_leader(RecordBatch.of(b"a", b"b"), 1)
    log.flush()
    log.append_as_leader(RecordBatch.of(b"c"), 2)  # epoch 2 starts at 2, unflushed
    log.maybe_assign_epoch_start_offset(3, 3)
    assert log.epoch_cache.entries == (EpochEntry(1, 0), EpochEntry(2, 2), EpochEntry(3, 3))
    disk.crash()
    recovered = _log(disk, LogConfig())
    assert recovered.log_end_offset == 2
    assert recovered.epoch_cache.entries == (EpochEntry(1, 0),)
    assert LeaderEpochCheckpointFile(disk, DIR).read() == [EpochEntry(1, 0)]
    assert recovered.recovery.epochs_before == ((1, 0), (2, 2), (3, 3))


def test_epochs_are_rederived_from_scanned_batches_when_the_checkpoint_is_lost():
    disk = SimDisk()
    log = _log(disk, LogConfig())
    for epoch in (1, 1, 4, 6):
        log.append_as_leader(RecordBatch.of(b"x"), epoch)
    log.flush()
    disk.delete(f"{DIR}/leader-epoch-checkpoint")
    recovered = _log(disk, LogConfig())
    assert recovered.epoch_cache.entries == (EpochEntry(1, 0), EpochEntry(4, 2), EpochEntry(6, 3))


def test_a_corrupt_epoch_checkpoint_stops_the_open_with_the_file_and_line():
    disk = SimDisk()
    _log(disk, LogConfig()).append_as_leader(RecordBatch.of(b"x"), 1)
    disk.write(f"{DIR}/leader-epoch-checkpoint", b"0\n1\n1 x\n")
    with pytest.raises(CheckpointError, match=r"orders-0/leader-epoch-checkpoint line 3"):
        _log(disk, LogConfig())
    disk.write(f"{DIR}/leader-epoch-checkpoint", b"0\n1\n-1 0\n")
    with pytest.raises(CheckpointError, match="negative epoch -1"):
        _log(disk, LogConfig())


def test_a_checkpoint_whose_entries_conflict_loads_as_kafkas_cache_loads_it():
    # Each line is assigned in turn (Kafka's LeaderEpochFileCache constructor): a later
    # entry removes the earlier ones it does not follow. Not an error, and not rewritten.
    disk = SimDisk()
    disk.write(f"{DIR}/leader-epoch-checkpoint", b"0\n3\n3 0\n1 5\n2 7\n")
    cache = LeaderEpochCache.load(LeaderEpochCheckpointFile(disk, DIR))
    assert cache.entries == (EpochEntry(1, 5), EpochEntry(2, 7))
    assert disk.read(f"{DIR}/leader-epoch-checkpoint") == b"0\n3\n3 0\n1 5\n2 7\n"
    cache.assign(4, 9)
    assert LeaderEpochCheckpointFile(disk, DIR).read() == [(1, 5), (2, 7), (4, 9)]


def test_a_leftover_checkpoint_temp_file_is_removed_on_open():
    disk = SimDisk()
    _log(disk)
    disk.write(f"{DIR}/leader-epoch-checkpoint.tmp", b"half")
    disk.fsync(f"{DIR}/leader-epoch-checkpoint.tmp")
    assert _log(disk).recovery.files_removed == ("leader-epoch-checkpoint.tmp",)
    assert not disk.exists(f"{DIR}/leader-epoch-checkpoint.tmp")


# ---------------------------------------------------------------------------- checkpoints


def test_checkpoint_files_use_kafkas_text_format():
    disk = SimDisk()
    hw = OffsetCheckpointFile(disk, "data", REPLICATION_OFFSET_CHECKPOINT)
    hw.write({TopicPartition("orders", 1): 17, TopicPartition("orders", 0): 42})
    assert disk.read("data/replication-offset-checkpoint") == b"0\n2\norders 0 42\norders 1 17\n"
    assert hw.read() == {("orders", 0): 42, ("orders", 1): 17}
    epochs = LeaderEpochCheckpointFile(disk, "data/orders-0")
    epochs.write([EpochEntry(0, 0), EpochEntry(3, 120)])
    assert disk.read("data/orders-0/leader-epoch-checkpoint") == b"0\n2\n0 0\n3 120\n"
    assert OffsetCheckpointFile(disk, "nowhere", "x").read() == {}


def test_a_checkpoint_write_is_atomic_across_a_crash():
    disk = SimDisk()
    hw = OffsetCheckpointFile(disk, "", REPLICATION_OFFSET_CHECKPOINT)
    hw.write({TopicPartition("t", 0): 1})
    disk.write(REPLICATION_OFFSET_CHECKPOINT + ".tmp", b"0\n1\nt 0 2\n")  # no fsync, no rename
    disk.crash()
    assert hw.read() == {("t", 0): 1}
    hw.write({TopicPartition("t", 0): 3})
    disk.crash()
    assert hw.read() == {("t", 0): 3}
    assert disk.paths() == [REPLICATION_OFFSET_CHECKPOINT]


@given(st.data())
def test_a_checkpoint_cut_anywhere_fails_to_parse(data):
    disk = SimDisk()
    cp = OffsetCheckpointFile(disk, "", REPLICATION_OFFSET_CHECKPOINT)
    cp.write({TopicPartition("t", p): 1000 + p for p in range(3)})
    size = disk.size(cp.path)
    cut = data.draw(st.integers(1, size - 1))
    disk.truncate_tail(cp.path, cut)
    with pytest.raises(CheckpointError, match=REPLICATION_OFFSET_CHECKPOINT):
        cp.read()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"1\n0\n", "line 1: version 1"),
        (b"0\n2\nt 0 1\n", "line 2: declares 2 entries but 1 lines follow"),
        (b"0\n1\nt 0\n", "line 3: 't 0' has 2 fields"),
        (b"0\n1\nt 0 -1\n", "line 3: negative"),
        (b"0\n1\nbad/topic 0 1\n", "not a legal topic name"),
        (b"0\n2\nt 0 1\nt 0 2\n", "appears twice"),
        (b"0\n1\nt 0 1", "does not end with a newline"),
        (b"0\n1\nt 0 \xff\n", "not ASCII"),
    ],
)
def test_malformed_checkpoints_are_reported_with_the_line(content, message):
    disk = SimDisk()
    disk.write("cp", content)
    with pytest.raises(CheckpointError, match=message):
        OffsetCheckpointFile(disk, "", "cp").read()


# ---------------------------------------------------------------------------- scenarios


SCENARIOS = pathlib.Path(__file__).parent / "scenarios" / "storage"


class StorageScenario:
    """Executes scenario commands against one node's disk and one partition log."""

    def __init__(self) -> None:
        self.disk = SimDisk("node-1")
        self.log: Log | None = None
        self.config = LogConfig()

    def run(self, command: str) -> list[str]:
        name, *args = shlex.split(command)
        kwargs = dict(arg.split("=", 1) for arg in args)
        handler = getattr(self, "do_" + name.replace("-", "_"), None)
        if handler is None:
            raise ValueError(f"unknown scenario command {name!r}")
        return handler(**kwargs)

    # commands ----------------------------------------------------------------

    def do_open(self, **kw: str) -> list[str]:
        if "segment-bytes" in kw or "index-interval-bytes" in kw:
            self.config = LogConfig(
                segment_bytes=int(kw.get("segment-bytes", self.config.segment_bytes)),
                index_interval_bytes=int(
                    kw.get("index-interval-bytes", self.config.index_interval_bytes)
                ),
            )
        recovery_point = int(kw.get("recovery-point", 0))
        self.log = Log.open(self.disk, DIR, config=self.config, recovery_point=recovery_point)
        report = self.log.recovery
        lines = [
            f"recovery: {report.segments_found} segments found, "
            f"{len(report.scans)} scanned, {report.truncated_bytes} bytes cut"
        ]
        for scan in report.scans:
            lines.append(
                f"  scan of segment {scan.base_offset}: valid batches {scan.batches}, "
                f"bytes kept {scan.valid_bytes}, bytes cut {scan.truncated_bytes}"
            )
            if scan.error:
                lines.append(f"    because {scan.error}")
        for base in report.segments_deleted:
            lines.append(f"  deleted segment {base}")
        return lines + self.state()

    def do_append(self, epoch: str, values: str) -> list[str]:
        info = self._live().append_as_leader(
            RecordBatch.of(*[v.encode() for v in values.split(",")]), int(epoch)
        )
        return [f"appended offsets {info.first_offset}..{info.last_offset}", *self.state()]

    def do_become_leader(self, epoch: str) -> list[str]:
        log = self._live()
        log.maybe_assign_epoch_start_offset(int(epoch), log.log_end_offset)
        return self.state()

    def do_flush(self) -> list[str]:
        self._live().flush()
        return self.state()

    def do_crash(self, **kw: str) -> list[str]:
        assert self.log is not None
        active = self.log.active_segment.log_path
        if "keep" in kw:
            torn = {active: int(kw["keep"])}
            self.disk.crash(torn)
        elif "seed" in kw:
            torn = self.disk.crash_torn(split(int(kw["seed"]), "disk"), [active])
        else:
            torn = {}
            self.disk.crash()
        self.log = None
        lines = [f"power lost; torn: {self._torn(torn)}"]
        return lines + self._files()

    def do_flip_bit(self, segment: str, byte: str, bit: str) -> list[str]:
        path = f"{DIR}/{int(segment):020d}.log"
        self.disk.flip_bit(path, int(byte) * 8 + int(bit))
        return [f"flipped bit {bit} of byte {byte} of {path}"]

    def do_read(self, offset: str, upto: str | None = None) -> list[str]:
        log = self._live()
        batches = log.read_batches(int(offset), upto=int(upto) if upto else None)
        if not batches:
            return ["(nothing)"]
        return [
            f"batch {b.base_offset}..{b.last_offset} epoch {b.partition_leader_epoch}: "
            + ",".join((r.value or b"").decode() for r in b.records)
            for b in batches
        ]

    # rendering ---------------------------------------------------------------

    def _live(self) -> Log:
        assert self.log is not None, "the scenario must open the log first"
        return self.log

    @staticmethod
    def _torn(torn: dict[str, int]) -> str:
        return ", ".join(f"{p} kept {n} bytes" for p, n in sorted(torn.items())) or "nothing"

    def _files(self) -> list[str]:
        lines = []
        for path in self.disk.paths():
            lines.append(
                f"  file {path}: {self.disk.size(path)} bytes, "
                f"{self.disk.unflushed_bytes(path)} unflushed"
            )
        return lines

    def state(self) -> list[str]:
        log = self._live()
        epochs = " ".join(f"{e.epoch}@{e.start_offset}" for e in log.epoch_cache.entries)
        lines = [
            f"log: start {log.log_start_offset}, LEO {log.log_end_offset}, "
            f"recovery point {log.recovery_point}, epochs [{epochs}]"
        ]
        for segment in log.segments:
            index = " ".join(f"{o}@{p}" for o, p in segment.index.entries())
            lines.append(
                f"  segment {segment.base_offset}: offsets [{segment.base_offset}, "
                f"{segment.next_offset}), {segment.size} bytes "
                f"({self.disk.unflushed_bytes(segment.log_path)} unflushed), index [{index}]"
            )
        log.check_invariants()
        return lines


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.txt")), ids=lambda p: p.stem)
def test_storage_scenario(path: pathlib.Path):
    items = parse_scenario(path.read_text())
    assert render_scenario(items) == path.read_text(), "the scenario file must round-trip"
    scenario = StorageScenario()
    actual_items = []
    mismatches = []
    for kind, line, expected in items:
        if kind == "text":
            actual_items.append((kind, line, expected))
            continue
        actual = scenario.run(line)
        assert all(a.strip() for a in actual), "scenario output must not hold blank lines"
        actual_items.append((kind, line, actual))
        if actual != expected:
            diff = "\n".join(
                difflib.unified_diff(expected, actual, "expected", "actual", lineterm="")
            )
            mismatches.append(f"after {line!r}:\n{diff}")
    if os.environ.get("KMODEL_REWRITE") == "1":
        path.write_text(render_scenario(actual_items))
        return
    assert not mismatches, (
        f"{path.name} diverges (KMODEL_REWRITE=1 regenerates it; review the diff):\n"
        + "\n\n".join(mismatches)
    )


def test_scenario_runner_reports_a_divergence():
    items = parse_scenario("open\n----\nthis is not what open prints\n")
    scenario = StorageScenario()
    (_, command, expected) = items[0]
    assert scenario.run(command) != expected
    with pytest.raises(ValueError, match="expected '----'"):
        parse_scenario("open\nno separator\n")
