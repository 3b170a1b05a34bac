"""The simulated disk: a crash keeps exactly what was fsynced; faults are deterministic."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from impl.sim.clock import Clock, seconds
from impl.sim.disk import SimDisk

# A program of disk operations on a few files: (op, file index, payload or size).
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 2), st.binary(min_size=1, max_size=20)),
        st.tuples(st.just("write"), st.integers(0, 2), st.binary(max_size=20)),
        st.tuples(st.just("truncate"), st.integers(0, 2), st.integers(0, 30)),
        st.tuples(st.just("fsync"), st.integers(0, 2), st.none()),
    ),
    max_size=30,
)


def _run(ops: list, disk: SimDisk, model_current: dict, model_durable: dict) -> None:
    """Apply ``ops`` to ``disk`` and to a naive model: current bytes, and the bytes the last
    fsync saw, cut by every later truncation (absent if never fsynced)."""
    for op, i, arg in ops:
        path = f"d/f{i}"
        if op == "append":
            if not disk.exists(path):
                disk.create(path)
                model_current[path] = b""
            disk.append(path, arg)
            model_current[path] += arg
        elif op == "write":
            disk.write(path, arg)
            model_current[path] = arg
        elif op == "truncate" and disk.exists(path):
            size = min(arg, len(model_current[path]))
            disk.truncate(path, size)
            model_current[path] = model_current[path][:size]
            if path in model_durable:
                model_durable[path] = model_durable[path][:size]
        elif op == "fsync" and disk.exists(path):
            disk.fsync(path)
            model_durable[path] = model_current[path]


@settings(max_examples=300, deadline=None)
@given(_ops, _ops)
def test_crash_keeps_exactly_what_fsync_saw_minus_later_truncations(before, after):
    disk = SimDisk()
    current: dict[str, bytes] = {}
    durable: dict[str, bytes] = {}
    _run(before, disk, current, durable)
    disk.crash()
    assert {p: disk.read(p) for p in disk.paths()} == durable
    current = dict(durable)
    _run(after, disk, current, durable)
    for path in disk.paths():
        assert disk.read(path) == current[path]
        assert disk.durable_image(path) == durable.get(path)
    disk.crash()
    assert {p: disk.read(p) for p in disk.paths()} == durable
    disk.check_invariants()


def test_crash_drops_exactly_the_unflushed_tail():
    disk = SimDisk()
    disk.create("a.log")
    disk.append("a.log", b"flushed-")
    disk.fsync("a.log")
    disk.append("a.log", b"unflushed")
    assert disk.unflushed_bytes("a.log") == len(b"unflushed")
    assert disk.read("a.log") == b"flushed-unflushed"
    disk.crash()
    assert disk.read("a.log") == b"flushed-"
    assert disk.unflushed_bytes("a.log") == 0


def test_a_file_created_but_never_fsynced_vanishes_in_a_crash():
    disk = SimDisk()
    disk.create("new.log")
    disk.append("new.log", b"data")
    disk.crash()
    assert not disk.exists("new.log")


def test_truncation_is_durable_but_leaves_unflushed_bytes_below_the_cut_unflushed():
    disk = SimDisk()
    disk.create("a")
    disk.append("a", b"0123456789")
    disk.fsync("a")
    disk.truncate("a", 4)
    disk.append("a", b"xy")
    assert disk.read("a") == b"0123xy"
    disk.crash()
    assert disk.read("a") == b"0123"
    disk.append("a", b"456")
    disk.truncate("a", 5)
    disk.crash()
    assert disk.read("a") == b"0123"


@given(st.binary(min_size=1, max_size=40), st.binary(min_size=1, max_size=40), st.data())
def test_torn_write_keeps_a_prefix_of_the_unflushed_tail(flushed, tail, data):
    disk = SimDisk()
    disk.create("a")
    disk.append("a", flushed)
    disk.fsync("a")
    disk.append("a", tail)
    keep = data.draw(st.integers(0, len(tail)))
    disk.crash(torn={"a": keep})
    assert disk.read("a") == flushed + tail[:keep]


def test_torn_write_over_a_rewritten_file_mixes_new_and_old_sectors():
    disk = SimDisk()
    disk.write("a", b"AAAAAAAA")
    disk.fsync("a")
    disk.write("a", b"bbb")
    disk.crash(torn={"a": 2})
    # 2 of the 3 new bytes reached the platter, then what was durable beyond them.
    assert disk.read("a") == b"bbAAAAAA"


def test_torn_crash_draws_from_the_rng_it_is_given_and_reports_the_draws():
    def run(seed: int) -> tuple[dict[str, int], bytes]:
        disk = SimDisk()
        for name in ("x", "y"):
            disk.create(name)
            disk.append(name, b"durable")
            disk.fsync(name)
            disk.append(name, bytes(range(50)))
        torn = disk.crash_torn(random.Random(seed))
        return torn, disk.read("x") + disk.read("y")

    assert run(7) == run(7)
    draws = {tuple(sorted(run(seed)[0].items())) for seed in range(20)}
    assert len(draws) > 1, "the torn lengths must depend on the seed"
    torn, _ = run(3)
    assert sorted(torn) == ["x", "y"] and all(0 <= n <= 50 for n in torn.values())


def test_tearing_more_than_the_unflushed_tail_or_a_never_flushed_file_is_refused():
    disk = SimDisk()
    disk.create("a")
    disk.append("a", b"abc")
    with pytest.raises(ValueError, match="never fsynced"):
        disk.crash(torn={"a": 1})
    disk.fsync("a")
    disk.append("a", b"de")
    with pytest.raises(ValueError, match="has 2"):
        disk.crash(torn={"a": 3})


def test_rename_is_atomic_and_moves_the_durable_image():
    disk = SimDisk()
    disk.write("cp", b"old")
    disk.fsync("cp")
    disk.write("cp.tmp", b"new")
    disk.fsync("cp.tmp")
    disk.rename("cp.tmp", "cp")
    assert disk.paths() == ["cp"]
    disk.crash()
    assert disk.read("cp") == b"new"


def test_renaming_a_file_never_fsynced_loses_it_at_the_next_crash():
    # The zero-length-file hazard: rename without fsync first.
    disk = SimDisk()
    disk.write("cp", b"old")
    disk.fsync("cp")
    disk.write("cp.tmp", b"new")
    disk.rename("cp.tmp", "cp")
    disk.crash()
    assert not disk.exists("cp")


def test_flip_bit_changes_exactly_one_bit_also_in_the_durable_image():
    disk = SimDisk()
    disk.create("a")
    disk.append("a", bytes(16))
    disk.fsync("a")
    bit = disk.flip_bit("a", rng=random.Random(5))
    data = disk.read("a")
    assert sum(bin(b).count("1") for b in data) == 1
    assert data[bit // 8] == 1 << (bit % 8)
    disk.crash()
    assert disk.read("a") == data
    assert disk.flip_bit("a", bit) == bit
    assert disk.read("a") == bytes(16)


def test_truncate_tail_fault_is_durable():
    disk = SimDisk()
    disk.create("a")
    disk.append("a", b"0123456789")
    disk.fsync("a")
    disk.append("a", b"ab")
    disk.truncate_tail("a", 5)
    assert disk.read("a") == b"0123456"
    disk.crash()
    assert disk.read("a") == b"0123456"


def test_counters_count_bytes_written_and_flushed():
    disk = SimDisk()
    disk.create("a")
    disk.append("a", b"12345")
    disk.write("b", b"xyz")
    assert disk.stats.bytes_written == 8 and disk.stats.bytes_flushed == 0
    assert disk.fsync("a") == 5
    assert disk.fsync("a") == 0
    disk.append("a", b"67")
    disk.fsync("a")
    disk.fsync("b")
    assert disk.stats.as_dict() == {
        "bytes_written": 10,
        "bytes_flushed": 10,
        "bytes_written_back": 0,
        "fsyncs": 4,
        "crashes": 0,
    }
    disk.crash()
    assert disk.stats.crashes == disk.generation == 1


def test_writeback_makes_files_dirty_long_enough_durable():
    # Linux's flusher writes back every inode dirty for longer than dirty_expire_centisecs,
    # all its dirty pages, and leaves younger ones dirty: a power loss then keeps the old.
    clock = Clock()
    disk = SimDisk("b1", clock)
    disk.create("old")
    disk.append("old", b"early")
    clock.advance_to(seconds(20))
    disk.append("old", b"+later")  # still dirty since 0: the inode's dirtied_when stays
    disk.create("young")
    disk.append("young", b"fresh")
    assert (disk.dirty_since("old"), disk.dirty_since("young")) == (0, seconds(20))
    clock.advance_to(seconds(31))
    assert disk.writeback(older_than=clock.now - seconds(30)) == len(b"early+later")
    assert not disk.is_dirty("old") and disk.dirty_since("old") is None
    assert disk.is_dirty("young")
    disk.append("old", b"!")
    assert disk.dirty_since("old") == seconds(31), "dirty again from the next write"
    disk.crash()
    assert disk.read("old") == b"early+later", "written back: survives the power loss"
    assert not disk.exists("young"), "never written back or fsynced: gone"
    assert disk.stats.bytes_written_back == len(b"early+later")


def test_a_file_cut_back_to_its_durable_image_is_clean_again():
    clock = Clock()
    disk = SimDisk("b1", clock)
    disk.create("a")
    disk.append("a", b"kept")
    disk.fsync("a")
    clock.advance_to(seconds(1))
    disk.append("a", b"tail")
    assert disk.dirty_since("a") == seconds(1)
    disk.truncate("a", 4)
    assert not disk.is_dirty("a") and disk.dirty_since("a") is None
    disk.check_invariants()


def test_list_dir_is_sorted_and_not_recursive():
    disk = SimDisk()
    for path in ("t-1/b", "t-1/a", "t-1/sub/c", "t-10/d", "top"):
        disk.write(path, b"")
    assert disk.list_dir("t-1") == ["a", "b"]
    assert disk.list_dir("") == ["top"]


def test_errors_name_the_file():
    disk = SimDisk("broker-2")
    with pytest.raises(FileNotFoundError, match="broker-2: no file 'nope'"):
        disk.append("nope", b"x")
    disk.create("a")
    with pytest.raises(FileExistsError):
        disk.create("a")
    with pytest.raises(ValueError, match="cannot truncate 'a' to 3 bytes"):
        disk.truncate("a", 3)
