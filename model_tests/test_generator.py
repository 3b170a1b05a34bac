"""Generators simulated alone: combinators do what they say on logical time, the Kafka
workload generators make checkable histories, and a seed fixes everything."""

from __future__ import annotations

import itertools
import os
import random
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jepsen_py import generator as g
from jepsen_py.checker.anomalies import observe
from jepsen_py.checker.kafka_log import check_log
from jepsen_py.checker.result import Verdict
from jepsen_py.checker.taxonomy import VIOLATIONS
from jepsen_py.fault_verbs import fault_ops
from jepsen_py.generator import MILLISECOND, NEMESIS, SECOND, Invocation
from jepsen_py.history.op import Op

KEYS = ["t-0", "t-1", "t-2"]


def fs(sim: g.Simulation) -> list[str]:
    return [i.f for i in sim.ops()]


def spans(sim: g.Simulation) -> list[tuple[Op, Op]]:
    """(invocation, completion) pairs of client ops."""
    open_: dict[Any, Op] = {}
    pairs = []
    for op in sim.history:
        if op.process == NEMESIS:
            continue
        if op.type == "invoke":
            open_[op.process] = op
        else:
            pairs.append((open_.pop(op.process), op))
    assert not open_, "simulate lets every op complete"
    return pairs


# --- counting -------------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 40), threads=st.integers(1, 6), seed=st.integers(0, 2**32))
def test_limit_emits_exactly_n_ops(n: int, threads: int, seed: int) -> None:
    sim = g.simulate(g.clients(g.limit(n, g.repeat(g.invoke("read")))), threads, seed=seed)
    assert fs(sim) == ["read"] * n
    assert sim.outcome == "exhausted"


def test_repeat_without_limit_runs_until_the_time_is_up() -> None:
    sim = g.simulate(g.clients(g.repeat(g.invoke("read"))), 2, until=50 * MILLISECOND)
    assert sim.outcome == "until"
    # 2 threads, 1 ms per op, 50 ms: 100 ops
    assert len(sim.ops()) == 100


def test_once_takes_the_first_op_only() -> None:
    sim = g.simulate(g.clients(g.once(g.concat(g.invoke("a"), g.invoke("b")))), 2)
    assert fs(sim) == ["a"]


def test_cycle_restarts_a_finite_generator_n_times() -> None:
    pair = g.concat(g.invoke("a"), g.invoke("b"))
    sim = g.simulate(g.clients(g.cycle(pair, 3)), 1)
    assert fs(sim) == ["a", "b"] * 3
    # An empty round ends the cycle instead of spinning.
    assert g.simulate(g.clients(g.cycle(g.NIL)), 1).ops() == []


def test_filter_and_map_change_the_ops() -> None:
    base = g.mix(g.repeat(g.invoke("a")), g.repeat(g.invoke("b")))
    only_b = g.clients(g.limit(20, g.filter(lambda op: op.f == "b", base)))
    assert fs(g.simulate(only_b, 3, seed=5)) == ["b"] * 20
    keyed = g.map(lambda op: attrs.evolve(op, key="t-9"), g.limit(5, g.repeat(g.invoke("x"))))
    assert {i.key for i in g.simulate(g.clients(keyed), 2).ops()} == {"t-9"}


def test_a_filter_that_matches_nothing_says_so() -> None:
    never = g.clients(g.filter(lambda op: False, g.repeat(g.invoke("a"))))
    with pytest.raises(g.GeneratorError, match="rejected 100000 ops in a row"):
        g.simulate(never, 1)


# --- time -----------------------------------------------------------------------------


def test_time_limit_stops_invoking_at_its_cutoff() -> None:
    sim = g.simulate(
        g.phases(
            g.clients(g.time_limit(100 * MILLISECOND, g.repeat(g.invoke("a")))),
            g.clients(g.once(g.invoke("b"))),
        ),
        3,
        latency=7 * MILLISECOND,
    )
    a = [i.time for i in sim.ops("a")]
    assert a and max(a) < 100 * MILLISECOND
    assert 100 * MILLISECOND - max(a) <= 7 * MILLISECOND  # it kept going up to the cutoff
    assert [i.time for i in sim.ops("b")] == [105 * MILLISECOND]  # after the last a completed


def test_time_limit_wakes_a_waiting_generator_at_its_cutoff() -> None:
    # The inner generator waits for a thread forever (there is none in scope); without the
    # cutoff's wake-up the phase would stall.
    stuck = g.on_threads(lambda t: False, g.repeat(g.invoke("never")))
    sim = g.simulate(g.phases(g.time_limit(SECOND, stuck), g.clients(g.once(g.invoke("after")))), 1)
    assert [(i.f, i.time) for i in sim.ops()] == [("after", SECOND)]
    assert g.simulate(stuck, 1).outcome == "stalled"


@pytest.mark.parametrize("seed", [1, 2])
def test_stagger_gives_the_mean_rate_it_is_asked_for(seed: int) -> None:
    gen = g.clients(g.time_limit(60 * SECOND, g.stagger(10 * MILLISECOND, g.repeat(g.invoke("x")))))
    sim = g.simulate(gen, 8, until=120 * SECOND, seed=seed)
    times = [i.time for i in sim.ops()]
    # 60 s at one op per 10 ms on average: 6000 ops (the sd of the count is about 0.7%).
    assert abs(len(times) - 6000) < 0.04 * 6000, len(times)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert min(gaps) >= 0 and max(gaps) < 20 * MILLISECOND  # uniform in [0, 2 dt)
    assert len(set(gaps)) > 1000  # random, not a rhythm


def test_stagger_rate_test_can_fail() -> None:
    # The same measurement on a generator twice as fast is far outside the tolerance.
    gen = g.clients(g.time_limit(60 * SECOND, g.stagger(5 * MILLISECOND, g.repeat(g.invoke("x")))))
    assert abs(len(g.simulate(gen, 8, seed=1).ops()) - 6000) > 0.04 * 6000


def test_delay_spaces_ops_exactly() -> None:
    gen = g.clients(g.limit(10, g.delay(3 * MILLISECOND, g.repeat(g.invoke("x")))))
    times = [i.time for i in g.simulate(gen, 4).ops()]
    assert times == [k * 3 * MILLISECOND for k in range(10)]


def test_sleep_pauses_between_phases_without_a_thread() -> None:
    gen = g.phases(
        g.clients(g.once(g.invoke("a"))), g.sleep(SECOND), g.clients(g.once(g.invoke("b")))
    )
    sim = g.simulate(gen, 1)
    assert [(i.f, i.time) for i in sim.ops()] == [("a", 0), ("b", SECOND + MILLISECOND)]


# --- sequencing and threads -------------------------------------------------------------


def test_phases_wait_for_every_op_of_the_previous_phase() -> None:
    def slow(inv: Invocation, rng: random.Random) -> int:
        return rng.randrange(1, 50) * MILLISECOND

    gen = g.phases(
        g.clients(g.limit(30, g.repeat(g.invoke("a")))),
        g.clients(g.limit(30, g.repeat(g.invoke("b")))),
    )
    sim = g.simulate(gen, 5, latency=slow, seed=3)
    a_done = max(done.time for inv, done in spans(sim) if inv.f == "a")
    b_start = min(inv.time for inv, _ in spans(sim) if inv.f == "b")
    assert b_start >= a_done
    # concat does not wait: the same check fails on it, so it checks something.
    loose = g.concat(
        g.clients(g.limit(30, g.repeat(g.invoke("a")))),
        g.clients(g.limit(30, g.repeat(g.invoke("b")))),
    )
    sim = g.simulate(loose, 5, latency=slow, seed=3)
    a_done = max(done.time for inv, done in spans(sim) if inv.f == "a")
    b_start = min(inv.time for inv, _ in spans(sim) if inv.f == "b")
    assert b_start < a_done


def test_each_thread_gives_every_thread_its_own_copy() -> None:
    sim = g.simulate(g.clients(g.each_thread(g.limit(3, g.repeat(g.invoke("x"))))), 4)
    assert Counter(i.thread for i in sim.ops()) == {0: 3, 1: 3, 2: 3, 3: 3}
    assert sim.outcome == "exhausted"


def test_each_process_starts_over_for_a_new_process_each_thread_does_not() -> None:
    def crash(inv: Invocation, rng: random.Random) -> tuple[str, Any]:
        return "info", None  # every op ends unknown: its thread goes on as a new process

    per_process = g.clients(g.each_process(g.once(g.invoke("x"))))
    sim = g.simulate(per_process, 2, until=10 * MILLISECOND, respond=crash)
    assert len(sim.ops()) == 20  # one op per process, a new process every ms per thread
    assert len({i.process for i in sim.ops()}) == 20
    assert {i.process for i in sim.ops() if i.thread == 1} == set(range(1, 20, 2))
    per_thread = g.clients(g.each_thread(g.once(g.invoke("x"))))
    assert len(g.simulate(per_thread, 2, until=10 * MILLISECOND, respond=crash).ops()) == 2


def test_reserve_runs_each_generator_on_its_threads_only() -> None:
    gen = g.clients(g.reserve(2, g.repeat(g.invoke("poll")), g.repeat(g.invoke("send"))))
    sim = g.simulate(gen, 5, until=100 * MILLISECOND, seed=4)
    by_thread: dict[Any, set[str]] = defaultdict(set)
    for i in sim.ops():
        by_thread[i.thread].add(i.f)
    assert by_thread == {0: {"poll"}, 1: {"poll"}, 2: {"send"}, 3: {"send"}, 4: {"send"}}


def test_reserve_more_threads_than_there_are_is_an_error() -> None:
    gen = g.clients(g.reserve(4, g.repeat(g.invoke("a")), g.repeat(g.invoke("b"))))
    with pytest.raises(g.GeneratorError, match=r"needs 4 threads but has 3"):
        g.simulate(gen, 3)


def test_on_threads_and_nemesis_keep_ops_on_their_threads() -> None:
    gen = g.nemesis(g.limit(3, g.repeat(g.invoke("kill"))), g.limit(10, g.repeat(g.invoke("read"))))
    sim = g.simulate(gen, 2)
    assert {i.thread for i in sim.ops("kill")} == {NEMESIS}
    assert {i.thread for i in sim.ops("read")} <= {0, 1}
    odd = g.on_threads(lambda t: t == 1, g.limit(4, g.repeat(g.invoke("x"))))
    assert {i.thread for i in g.simulate(odd, 3).ops()} == {1}


def test_mix_draws_from_every_generator() -> None:
    gen = g.clients(g.limit(2000, g.mix(g.repeat(g.invoke("a")), g.repeat(g.invoke("b")))))
    counts = Counter(fs(g.simulate(gen, 4, seed=9)))
    assert abs(counts["a"] - 1000) < 100  # sd about 22


def test_markers_take_no_thread_and_info_reaches_the_history() -> None:
    logged: list[str] = []
    history: list[Op] = []
    gen = g.concat(g.log("starting"), g.info("phase", "main"), g.clients(g.once(g.invoke("x"))))
    interp = g.Interpreter(gen, [0], random.Random(0), emit=history.append, on_log=logged.append)
    kinds = [interp.step(0) for _ in range(3)]
    assert [k.kind for k in kinds if isinstance(k, Invocation)] == ["log", "info", "invoke"]
    assert logged == ["starting"]
    assert [(o.process, o.type, o.f, o.value) for o in history] == [
        (NEMESIS, "info", "phase", "main"),
        (0, "invoke", "x", None),
    ]


# --- the driver protocol ------------------------------------------------------------------


@attrs.frozen
class _Rude(g.Gen):
    """Always asks for thread 0, busy or not."""

    def op(self, ctx: g.Context) -> g.Step:
        return Invocation(ctx.time, 0, ctx.workers[0], "x"), self


@attrs.frozen
class _Stale(g.Gen):
    def op(self, ctx: g.Context) -> g.Step:
        return g.Pending(ctx.time), self


def test_the_interpreter_rejects_an_op_for_a_busy_thread_and_a_pending_time_in_the_past() -> None:
    with pytest.raises(g.GeneratorError, match="busy thread"):
        g.simulate(_Rude(), 1)
    with pytest.raises(g.GeneratorError, match="not after now"):
        g.simulate(_Stale(), 1)


def test_a_generator_is_a_value_asking_twice_gives_the_same_answer() -> None:
    gen = g.stagger(MILLISECOND, g.mix(g.sends(KEYS), g.polls(KEYS)))
    ctx = g.Context(0, (0, 1), frozenset({0, 1}), {0: 0, 1: 1}, random.Random(1))
    again = attrs.evolve(ctx, rng=random.Random(1))
    first, after = gen.op(ctx)
    second, _ = gen.op(again)
    assert first == second
    assert after != gen  # the next state is a new value; the old one is untouched
    assert gen.op(attrs.evolve(ctx, rng=random.Random(1)))[0] == first


# --- determinism --------------------------------------------------------------------------


def example_workload(seed: int) -> g.Gen:
    return g.phases(
        g.nemesis(
            g.time_limit(
                2 * SECOND, g.nemesis_schedule(["partition", "kill"], 200 * MILLISECOND, seed)
            ),
            g.time_limit(
                2 * SECOND, g.stagger(2 * MILLISECOND, g.mix(g.sends(KEYS), g.polls(KEYS)))
            ),
        ),
        g.heal(["partition", "kill"]),
        g.clients(g.final_reads(KEYS)),
    )


def example_latency(inv: Invocation, rng: random.Random) -> int:
    return int(rng.expovariate(1 / (3 * MILLISECOND)))


def test_a_seed_fixes_the_run_and_another_seed_changes_it() -> None:
    def run(seed: int) -> g.Simulation:
        world = g.IdealLog(p_fail=0.05, p_info=0.05)
        return g.simulate(
            example_workload(seed), 5, seed=seed, latency=example_latency, respond=world
        )

    a, b, c = run(11), run(11), run(12)
    assert a == b
    assert a.history != c.history


# --- faults -------------------------------------------------------------------------------


def test_nemesis_schedule_alternates_start_and_stop_on_the_nemesis_thread() -> None:
    faults = ["partition", "kill", "pause", "clock-skew"]
    sched = g.nemesis_schedule(faults, SECOND, seed=3)
    sim = g.simulate(sched, 2, until=40 * SECOND)
    ops = sim.ops()
    assert {i.thread for i in ops} == {NEMESIS}
    starts, stops = ops[0::2], ops[1::2]
    for start, stop in zip(starts, stops, strict=False):
        fault = next(x for x in faults if fault_ops(x)[0] == start.f)
        assert stop.f == fault_ops(fault)[1]
    assert {i.f for i in starts} == {fault_ops(x)[0] for x in faults}
    gaps = [b.time - a.time for a, b in itertools.pairwise(ops)]
    assert all(SECOND // 2 <= gap <= 3 * SECOND // 2 + MILLISECOND for gap in gaps)
    # The seed fixes the schedule, independently of the workload's stream...
    again = g.simulate(sched, 2, until=40 * SECOND, seed=99)
    assert [(i.f, i.time) for i in again.ops()] == [(i.f, i.time) for i in ops]
    # ...and another seed gives another one.
    other = g.simulate(g.nemesis_schedule(faults, SECOND, seed=4), 2, until=40 * SECOND)
    assert [(i.f, i.time) for i in other.ops()] != [(i.f, i.time) for i in ops]


def test_an_overlapping_schedule_holds_up_to_max_active_faults_and_stops_only_running_ones() -> (
    None
):
    faults = ["partition", "kill", "pause", "clock-skew"]
    sched = g.nemesis_schedule(faults, SECOND, seed=3, max_active=3)
    ops = g.simulate(sched, 2, until=200 * SECOND).ops()
    running: list[str] = []
    most = 0
    for inv in ops:
        fault = next(x for x in faults if inv.f in fault_ops(x))
        if inv.f == fault_ops(fault)[0]:
            assert fault not in running, (inv, running)
            running.append(fault)
        else:
            assert fault in running, (inv, running)
            running.remove(fault)
        assert 1 <= len(running) <= 3 or inv.f == fault_ops(fault)[1]
        most = max(most, len(running))
    assert most == 3  # faults do compound
    again = g.simulate(
        g.nemesis_schedule(faults, SECOND, seed=3, max_active=3), 2, until=200 * SECOND
    )
    assert [(i.f, i.time) for i in again.ops()] == [(i.f, i.time) for i in ops]
    with pytest.raises(g.GeneratorError):
        g.nemesis_schedule(faults, SECOND, seed=3, max_active=0)


def test_a_nested_schedule_opens_with_a_partition_acts_inside_it_and_heals_last() -> None:
    faults = ["partition", "partition-leader", "kill", "pause", "clock"]
    outer = ["partition", "partition-leader"]
    hold = 10 * SECOND
    sched = g.nemesis_schedule(faults, SECOND, seed=5, max_active=3, outer=outer, hold=hold)
    ops = g.simulate(sched, 2, until=400 * SECOND).ops()
    running: list[str] = []
    inner_seen = 0
    for before, inv in itertools.pairwise([None, *ops]):
        fault = next(x for x in faults if inv.f in fault_ops(x))
        if inv.f == fault_ops(fault)[0]:
            # Nothing running: an outer fault opens; inside it, only inner ones start.
            assert (fault in outer) == (not running), (inv, running)
            if running:
                inner_seen += 1
            if before is not None and before.f in (fault_ops(o)[0] for o in outer):
                assert inv.time - before.time >= hold, "the partition outlasts the hold"
            running.append(fault)
        else:
            assert fault == running[-1], ("innermost first", inv, running)
            running.pop()
    assert inner_seen > 5


@pytest.mark.parametrize("max_active", [1, 3])
def test_the_op_after_a_held_fault_starts_waits_its_hold(max_active: int) -> None:
    # A fault that waits for the protocol (it cuts a follower off and acts once the ISR
    # drops it) holds the schedule: the next op comes at least its hold later. The others
    # keep the plain schedule's gaps (at most 1.5 intervals with the default jitter).
    faults = ["kill", "shutdown-last-isr", "pause"]
    hold = 12 * SECOND
    sched = g.nemesis_schedule(
        faults, SECOND, seed=7, max_active=max_active, holds={"shutdown-last-isr": hold}
    )
    ops = g.simulate(sched, 2, until=300 * SECOND).ops()
    held = 0
    for before, inv in itertools.pairwise(ops):
        if before.f == "start-shutdown-last-isr":
            held += 1
            assert inv.time - before.time >= hold, (before, inv)
        else:
            assert inv.time - before.time <= 3 * SECOND // 2, (before, inv)
    assert held > 3


@pytest.mark.parametrize("max_active", [1, 3])
def test_the_op_after_a_settling_fault_starts_comes_no_sooner_than_its_settle(
    max_active: int,
) -> None:
    # A fault that plays out over steps of its own (leadership moved, then a cut lifted)
    # gets at least its settle before the next op: a shorter gap is stretched to it, a
    # longer one kept (unlike a hold, which adds to every gap).
    faults = ["kill", "transfer-leadership", "pause"]
    settle = 5 * SECOND // 2
    sched = g.nemesis_schedule(
        faults, 2 * SECOND, seed=7, max_active=max_active, settles={"transfer-leadership": settle}
    )
    plain = g.nemesis_schedule(faults, 2 * SECOND, seed=7, max_active=max_active)
    ops = g.simulate(sched, 2, until=300 * SECOND).ops()
    gaps = [
        inv.time - before.time
        for before, inv in itertools.pairwise(ops)
        if before.f == "start-transfer-leadership"
    ]
    assert len(gaps) > 3 and min(gaps) >= settle
    assert max(gaps) > settle, "a gap longer than the settle is kept, not replaced"
    assert max(gaps) <= 3 * SECOND, "nothing added to a gap already longer"
    # The same draws: only the gaps after the settling fault's starts move.
    assert [i.f for i in ops] == [i.f for i in g.simulate(plain, 2, until=300 * SECOND).ops()][
        : len(ops)
    ]


def test_heal_stops_every_fault() -> None:
    sim = g.simulate(g.heal(["partition", "kill", "pause"]), 1)
    assert [(i.thread, i.f) for i in sim.ops()] == [
        (NEMESIS, "stop-partition"),
        (NEMESIS, "restart"),
        (NEMESIS, "resume"),
    ]


def test_nemesis_schedule_rejects_a_set_of_faults() -> None:
    with pytest.raises(g.GeneratorError, match="not a set"):
        g.nemesis_schedule({"kill", "pause"}, SECOND, 1)  # type: ignore[arg-type]


# --- the Kafka workload ---------------------------------------------------------------------


def test_sends_values_are_unique() -> None:
    gen = g.clients(g.limit(3000, g.mix(g.sends(KEYS, values_from=100), g.polls(KEYS))))
    sim = g.simulate(gen, 6, seed=2)
    values = [i.value for i in sim.ops("send")]
    assert len(values) > 1000
    assert len(set(values)) == len(values)
    assert min(values) == 100
    assert {i.key for i in sim.ops("send")} == set(KEYS)


def test_copies_of_sends_repeat_values_as_documented() -> None:
    # The uniqueness check above can fail: each_thread copies the counter.
    sim = g.simulate(g.clients(g.each_thread(g.limit(5, g.sends(KEYS)))), 3)
    values = [i.value for i in sim.ops("send")]
    assert len(set(values)) < len(values)


def test_polls_start_where_the_process_left_off() -> None:
    world = g.IdealLog(max_records=3)
    gen = g.clients(g.limit(4000, g.mix(g.sends(["t-0"]), g.polls(["t-0"], p_rewind=0.1))))
    sim = g.simulate(gen, 4, seed=6, respond=world)
    position: dict[Any, int] = {}
    rewinds = continued = 0
    for inv, done in spans(sim):
        if inv.f != "poll":
            continue
        start = inv.value["from"]
        if start == position.get(inv.process, 0):
            continued += 1
        else:
            assert start == 0, (inv, position.get(inv.process))
            rewinds += 1
        records = done.value["records"]
        position[inv.process] = records[-1][0] + 1 if records else start
    assert continued > 1000 and 50 < rewinds < 300


def test_final_reads_cover_every_key_and_the_checker_sees_a_clean_history() -> None:
    world = g.IdealLog(max_records=3, p_fail=0.05, p_info=0.05)
    sim = g.simulate(example_workload(21), 5, seed=21, latency=example_latency, respond=world)
    assert sim.outcome == "exhausted"
    history = list(sim.history)
    read: dict[str | None, set[int]] = defaultdict(set)
    before: dict[str | None, set[int]] = defaultdict(set)
    for inv, done in spans(sim):
        if inv.f == "poll" and done.type == "ok":
            final = inv.value.get("final") is True
            (read if final else before)[inv.key].update(o for o, _ in done.value["records"])
    for key in KEYS:
        assert read[key] == set(range(len(world.logs[key]))), key
    # The coverage check means something: the main phase's polls alone miss offsets.
    assert any(before[key] != set(range(len(world.logs[key]))) for key in KEYS)
    assert check_log(history).verdict == Verdict.OK
    keys = observe(history)
    assert keys and all(k.final.complete for k in keys)
    assert not [n for k in keys for n in k.found() if n in VIOLATIONS]


def test_final_reads_give_up_on_a_key_that_never_answers() -> None:
    def broken(inv: Invocation, rng: random.Random) -> tuple[str, Any]:
        return "fail", None

    sim = g.simulate(g.clients(g.final_reads(KEYS, max_strikes=3)), 2, respond=broken)
    assert sim.outcome == "exhausted"
    assert Counter(i.key for i in sim.ops()) == {k: 4 for k in KEYS}


def test_final_reads_keep_one_process_per_key() -> None:
    sim = g.simulate(example_workload(5), 5, seed=5, latency=example_latency)
    owners: dict[str | None, set[Any]] = defaultdict(set)
    for i in sim.ops("poll"):
        if i.value.get("final"):
            owners[i.key].add(i.thread)
    assert set(owners) == set(KEYS)
    assert all(len(threads) == 1 for threads in owners.values())


_RUN_ELSEWHERE = """
import hashlib, sys
sys.path.insert(0, sys.argv[1])
from test_generator import example_latency, example_workload
from jepsen_py import generator as g
world = g.IdealLog(p_info=0.05)
sim = g.simulate(example_workload(7), 5, seed=7, latency=example_latency, respond=world)
print(hashlib.sha256(repr(sim.history).encode()).hexdigest())
"""


def test_the_same_seed_gives_the_same_history_in_another_process() -> None:
    # Set and dict order of strings changes with PYTHONHASHSEED; nothing may depend on it.
    here = Path(__file__).resolve().parent
    digests = set()
    for hash_seed in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-c", _RUN_ELSEWHERE, str(here)],
            cwd=here.parent,
            env={**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(here.parent)},
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        digests.add(done.stdout.strip())
    assert len(digests) == 1


def test_replica_reads_read_every_key_from_one_replica_and_are_not_the_final_read() -> None:
    sim = g.simulate(g.clients(g.replica_reads(KEYS, 2)), 2, seed=3, latency=example_latency)
    assert sim.outcome == "exhausted"
    polls = list(sim.ops("poll"))
    assert {i.key for i in polls} == set(KEYS)
    assert all(i.value.get("replica") == 2 and "final" not in i.value for i in polls)
