"""The simulated network, the logical clock and timers it runs on, and message values.

Determinism first (the same seed replays byte for byte, in any process), then each fault:
partitions, loss, duplication, reordering, crashes and pauses, then manual control.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from impl.messages import Message, describe, frozenset_of, int_at_least, message, non_empty_str
from impl.sim.clock import Clock, TimerQueue, format_ns, ms, seconds, to_ms, us
from impl.sim.network import (
    DeliveryError,
    Envelope,
    Network,
    NetworkConfig,
    bridge_links,
    halves_links,
    isolate_links,
    majorities_ring_links,
    split_halves,
)
from impl.sim.node import NodeLifecycles, NodeState
from impl.sim.rng import SimRandom, split


@message
class Note(Message):
    """The example message of these tests."""

    sender: str = attrs.field(validator=non_empty_str)
    n: int = attrs.field(validator=int_at_least(0))
    tags: frozenset[str] = attrs.field(default=frozenset(), validator=frozenset_of(str))


NAMES = ("b1", "b2", "b3", "b4", "b5")
MAX_STEPS = 1_000_000


def make(
    seed: int = 1, names: tuple[str, ...] = NAMES[:3], **config: object
) -> tuple[NodeLifecycles, Clock, Network]:
    nodes = NodeLifecycles(names)
    clock = Clock()
    network = Network(nodes, clock, split(seed, "network"), NetworkConfig(**config))  # type: ignore[arg-type]
    return nodes, clock, network


def drain(clock: Clock, network: Network, until: int | None = None) -> list[Envelope]:
    """Run the network by time until nothing is left (or until ``until``)."""
    delivered: list[Envelope] = []
    for _ in range(MAX_STEPS):
        at = network.next_delivery_time()
        if at is None or (until is not None and at > until):
            return delivered
        clock.advance_to(at)
        while (envelope := network.deliver_next()) is not None:
            delivered.append(envelope)
    raise AssertionError("the network did not drain")


def run_scenario(seed: int) -> tuple[tuple[str, str, str], Network, Counter[str]]:
    """A run that meets every fault; returns (digest of the delivery sequence, pending digest
    midway, history digest), the network, and the faults applied."""
    nodes, clock, network = make(
        seed,
        NAMES,
        fifo=False,
        distribution="exponential",
        drop_probability=0.05,
        duplicate_probability=0.05,
    )
    workload, faults = split(seed, "workload"), split(seed, "faults")
    applied: Counter[str] = Counter()
    deliveries = hashlib.blake2b()
    midway = ""
    for step in range(1_500):
        running = nodes.in_state(NodeState.RUNNING)
        for src in workload.sample(running, min(2, len(running))):
            tags = frozenset(workload.sample(["isr", "hw", "leo", "epoch", "fenced"], 3))
            network.send(src, workload.choice(NAMES), Note(src, step, tags))
        if faults.chance(0.04):
            fault = faults.choice(
                ["isolate", "halves", "ring", "heal", "heal", "pause", "crash", "wake"]
            )
            victim = faults.choice(NAMES)
            state = nodes.state(victim)
            if fault in ("isolate", "halves", "ring"):
                network.heal()  # one partition at a time, as Jepsen's partitioner does
            if fault == "isolate":
                network.isolate(victim)
            elif fault == "halves":
                network.halves(*split_halves(faults.sample(NAMES, len(NAMES))))
            elif fault == "ring":
                network.majorities_ring(faults.sample(NAMES, len(NAMES)))
            elif fault == "heal":
                network.heal()
            elif fault == "pause" and state is NodeState.RUNNING:
                nodes.pause(victim)
            elif fault == "crash" and state.alive:
                nodes.crash(victim)
            elif fault == "wake" and state is NodeState.PAUSED:
                nodes.resume(victim)
            elif fault == "wake" and not state.alive:
                nodes.restart(victim)
            else:
                fault = "none"
            applied[fault] += 1
        for envelope in drain(clock, network, until=clock.now + workload.randrange(ms(2))):
            deliveries.update(f"{clock.now} {envelope.describe()}\n".encode())
        if step == 700:
            midway = network.pending_digest()
    return (deliveries.hexdigest(), midway, network.history_digest()), network, applied


def scenario(seed: int) -> tuple[str, str, str]:
    return run_scenario(seed)[0]


# Determinism ------------------------------------------------------------------------------


def test_same_seed_gives_a_byte_identical_run() -> None:
    assert scenario(5) == scenario(5)


def test_different_seeds_give_different_runs() -> None:
    a, b = scenario(5), scenario(6)
    assert all(x != y for x, y in zip(a, b, strict=True))


def test_a_run_is_identical_in_processes_with_other_hash_seeds() -> None:
    here = Path(__file__).parent
    code = (
        f"import sys; sys.path.insert(0, {str(here)!r}); "
        "import test_network as t; print(t.scenario(5))"
    )
    outputs = set()
    for hash_seed in ("0", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        result = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=here.parent,
        )
        outputs.add(result.stdout.strip())
    assert outputs == {str(scenario(5))}


def test_the_replayed_scenario_meets_every_fault() -> None:
    # Guards the determinism tests against vacuity: the run they replay is not a quiet one.
    _, network, applied = run_scenario(5)
    faults = ("isolate", "halves", "ring", "heal", "pause", "crash", "wake")
    assert all(applied[fault] > 0 for fault in faults), applied
    stats = network.stats()
    assert stats.delivered > 1_000
    assert stats.delivered > 0.5 * stats.sent
    for counter in ("duplicated", "dropped_random", "dropped_partition", "dropped_reset"):
        assert getattr(stats, counter) > 0, stats


def test_a_send_always_draws_four_numbers_so_a_fault_does_not_shift_other_delays() -> None:
    def delays(drop: float) -> dict[int, int]:
        _, _, network = make(3, fifo=False, drop_probability=drop)
        sent: dict[int, int] = {}
        for i in range(300):
            envelopes = network.send("b1", "b2", Note("b1", i))
            if envelopes:
                sent[i] = envelopes[0].deliver_at
            if i == 100:
                network.isolate("b3")  # a partition on another link draws nothing extra
        return sent

    clean, lossy = delays(0.0), delays(0.5)
    assert 100 < len(lossy) < 200 and len(clean) == 300
    assert {i: clean[i] for i in lossy} == lossy


# Partitions -------------------------------------------------------------------------------

FOUR = NAMES[:4]
ALL_LINKS = [(a, b) for a in FOUR for b in FOUR if a != b]


def delivered_links(network: Network, clock: Clock) -> set[tuple[str, str]]:
    for src, dst in ALL_LINKS:
        network.send(src, dst, Note(src, 0))
    return {e.link for e in drain(clock, network)}


@settings(max_examples=40, deadline=None)
@given(st.sets(st.sampled_from(ALL_LINKS)))
def test_partitions_block_exactly_the_blocked_directed_links(
    blocked: set[tuple[str, str]],
) -> None:
    _, clock, network = make(names=FOUR)
    network.block(blocked)
    assert network.blocked_links() == tuple(sorted(blocked))
    assert delivered_links(network, clock) == set(ALL_LINKS) - blocked
    assert all(network.is_blocked(*link) == (link in blocked) for link in ALL_LINKS)
    assert network.stats().dropped_partition == len(blocked)
    assert network.heal() == len(blocked)
    assert delivered_links(network, clock) == set(ALL_LINKS)


def test_a_node_always_reaches_itself() -> None:
    _, clock, network = make()
    network.isolate("b1")
    network.send("b1", "b1", Note("b1", 1))
    assert [e.link for e in drain(clock, network)] == [("b1", "b1")]
    with pytest.raises(ValueError, match="a node always reaches itself"):
        network.block([("b1", "b1")])


def test_a_message_sent_into_a_partition_is_lost_even_if_the_partition_heals_at_once() -> None:
    _, clock, network = make()
    network.block([("b1", "b2")])
    assert network.send("b1", "b2", Note("b1", 1)) == ()
    assert network.send("b2", "b1", Note("b2", 1)) != ()  # the other direction is open
    network.heal()
    assert [e.link for e in drain(clock, network)] == [("b2", "b1")]
    assert network.stats().dropped_partition == 1


def test_a_partition_drops_what_arrives_while_it_lasts_not_what_arrives_after_heal() -> None:
    _, clock, network = make(fifo=False, min_delay_ns=ms(1), max_delay_ns=ms(1))
    network.send("b1", "b2", Note("b1", 1))
    network.block([("b1", "b2")])
    assert drain(clock, network) == []
    assert network.stats().dropped_partition == 1

    network.unblock([("b1", "b2")])
    network.send("b1", "b2", Note("b1", 2))
    network.block([("b1", "b2")])
    network.heal()
    assert [e.message.n for e in drain(clock, network)] == [2]


def test_isolate_cuts_one_node_off_both_ways() -> None:
    _, clock, network = make(names=FOUR)
    network.isolate("b2")
    assert delivered_links(network, clock) == {link for link in ALL_LINKS if "b2" not in link}
    assert isolate_links(FOUR, "b2") == {link for link in ALL_LINKS if "b2" in link}
    with pytest.raises(KeyError, match="unknown node 'x'"):
        isolate_links(FOUR, "x")


def test_halves_cut_exactly_the_links_between_the_sides() -> None:
    a, b = split_halves(NAMES)
    assert (a, b) == (("b1", "b2"), ("b3", "b4", "b5"))
    links = halves_links(a, b)
    assert links == {(x, y) for x in NAMES for y in NAMES if (x in a) != (y in a)}
    with pytest.raises(ValueError, match=re.escape("share nodes ['b2']")):
        halves_links(["b1", "b2"], ["b2", "b3"])


def test_a_bridge_node_talks_to_both_halves_which_cannot_talk_to_each_other() -> None:
    links = bridge_links(NAMES)
    assert links == halves_links(["b1", "b2"], ["b4", "b5"])
    assert not any("b3" in link for link in links)
    with pytest.raises(ValueError, match="at least 3"):
        bridge_links(["b1", "b2"])


@pytest.mark.parametrize("n", range(3, 10))
def test_in_a_majorities_ring_each_node_hears_its_own_majority(n: int) -> None:
    order = [f"n{i}" for i in range(n)]
    blocked = majorities_ring_links(order)
    hears = {dst: frozenset(s for s in order if (s, dst) not in blocked) for dst in order}
    assert all(dst in hears[dst] and len(hears[dst]) == n // 2 + 1 for dst in order)
    assert len(set(hears.values())) == n  # no two nodes hear the same majority
    symmetric = all((b, a) in blocked for a, b in blocked)
    # A window of odd size sits centred on its node (4, 5, 8, 9 nodes): blocks are mutual.
    assert symmetric == (n in (4, 5, 8, 9))


# Loss, duplication, delays, order ---------------------------------------------------------


def binomial_bounds(n: int, p: float, sigmas: float = 5.0) -> tuple[float, float]:
    spread = sigmas * math.sqrt(n * p * (1 - p))
    return n * p - spread, n * p + spread


@pytest.mark.parametrize("seed", [1, 2])
def test_drop_and_duplicate_rates_match_their_probabilities(seed: int) -> None:
    sends = 20_000
    _, clock, network = make(seed, drop_probability=0.1, duplicate_probability=0.05)
    for i in range(sends):
        network.send("b1", "b2", Note("b1", i))
    low, high = binomial_bounds(sends, 0.1)
    stats = network.stats()
    assert low < stats.dropped_random < high
    # Duplication is drawn only for messages that were not dropped.
    low, high = binomial_bounds(sends - stats.dropped_random, 0.05)
    assert low < stats.duplicated < high
    delivered = drain(clock, network)
    assert len(delivered) == sends - stats.dropped_random + stats.duplicated
    copies = Counter(e.message.n for e in delivered)
    assert sorted(Counter(copies.values()).items()) == [
        (1, sends - stats.dropped_random - stats.duplicated),
        (2, stats.duplicated),
    ]
    assert all(e.duplicate_of is None or e.duplicate_of < e.seq for e in delivered)


def test_without_faults_nothing_is_lost_or_duplicated() -> None:
    _, clock, network = make()
    for i in range(2_000):
        network.send("b1", "b2", Note("b1", i))
    assert [e.message.n for e in drain(clock, network)] == list(range(2_000))
    stats = network.stats()
    assert (stats.dropped, stats.duplicated, stats.delivered) == (0, 0, 2_000)


@pytest.mark.parametrize("distribution", ["uniform", "exponential"])
def test_delays_stay_within_bounds_and_follow_the_distribution(distribution: str) -> None:
    low, high = ms(1), ms(9)
    _, _, network = make(fifo=False, distribution=distribution, min_delay_ns=low, max_delay_ns=high)
    delays = []
    for i in range(4_000):
        (envelope,) = network.send("b1", "b2", Note("b1", i))
        delays.append(envelope.deliver_at - envelope.sent_at)
    assert low <= min(delays) and max(delays) <= high
    below_middle = sum(d < (low + high) // 2 for d in delays) / len(delays)
    if distribution == "uniform":
        assert 0.45 < below_middle < 0.55
    else:
        assert below_middle > 0.8  # mostly fast, a long tail


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=0, max_value=2**32))
def test_fifo_links_deliver_in_send_order(seed: int) -> None:
    _, clock, network = make(seed, min_delay_ns=0, max_delay_ns=ms(50))
    for i in range(60):
        src, dst = ("b1", "b2", "b3")[i % 3], ("b2", "b3", "b1")[i % 2]
        network.send(src, dst, Note(src, i))
        clock.advance_by(us(100))
    per_link: dict[tuple[str, str], list[int]] = {}
    for envelope in drain(clock, network):
        per_link.setdefault(envelope.link, []).append(envelope.seq)
    assert all(seqs == sorted(seqs) for seqs in per_link.values())
    assert sum(map(len, per_link.values())) == 60


def test_without_fifo_delay_jitter_reorders_a_link() -> None:
    _, clock, network = make(fifo=False, min_delay_ns=0, max_delay_ns=ms(50))
    for i in range(60):
        network.send("b1", "b2", Note("b1", i))
        clock.advance_by(us(100))
    order = [e.message.n for e in drain(clock, network)]
    assert sorted(order) == list(range(60)) and order != list(range(60))


def test_fifo_cannot_be_switched_with_messages_in_flight() -> None:
    _, clock, network = make()
    network.send("b1", "b2", Note("b1", 1))
    with pytest.raises(ValueError, match="drain them first"):
        network.reconfigure(NetworkConfig(fifo=False))
    network.reconfigure(NetworkConfig(drop_probability=1.0))
    drain(clock, network)
    network.reconfigure(NetworkConfig(fifo=False))
    assert network.config.fifo is False


@pytest.mark.parametrize(
    ("config", "words"),
    [
        ({"min_delay_ns": 5, "max_delay_ns": 4}, "below min_delay_ns"),
        ({"drop_probability": 1.5}, "drop_probability must be in"),
        ({"duplicate_probability": -0.1}, "duplicate_probability must be in"),
        ({"min_delay_ns": -1}, "min_delay_ns must be an int >= 0"),
        ({"min_delay_ns": 1.5}, "min_delay_ns must be an int >= 0"),
        ({"distribution": "pareto"}, "distribution"),
    ],
)
def test_bad_configs_are_refused(config: dict[str, object], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        NetworkConfig(**config)  # type: ignore[arg-type]


def test_in_flight_is_bounded() -> None:
    _, _, network = make(max_in_flight=3)
    for i in range(3):
        network.send("b1", "b2", Note("b1", i))
    with pytest.raises(OverflowError, match="more than 3 messages in flight"):
        network.send("b1", "b2", Note("b1", 3))


# Crashes and pauses -----------------------------------------------------------------------


def test_a_crash_resets_the_connections_of_the_crashed_node_only() -> None:
    nodes, clock, network = make()
    for src, dst in itertools.permutations(["b1", "b2", "b3"], 2):
        network.send(src, dst, Note(src, 0))
    nodes.crash("b2")
    nodes.restart("b2")  # the new incarnation gets nothing of the old one's
    assert {e.link for e in network.in_flight()} == {("b1", "b3"), ("b3", "b1")}
    assert network.stats().dropped_reset == 4
    assert {e.link for e in drain(clock, network)} == {("b1", "b3"), ("b3", "b1")}


def test_a_down_node_refuses_connections_and_cannot_send() -> None:
    nodes, _, network = make()
    nodes.stop("b2")
    assert network.send("b1", "b2", Note("b1", 0)) == ()
    assert network.stats().dropped_unreachable == 1
    with pytest.raises(RuntimeError, match="node 'b2' is stopped and cannot send"):
        network.send("b2", "b1", Note("b2", 0))
    nodes.restart("b2")
    (envelope,) = network.send("b1", "b2", Note("b1", 1))
    assert envelope.dst_incarnation == 1


def test_a_paused_node_receives_nothing_until_it_resumes_then_everything_in_order() -> None:
    nodes, clock, network = make()
    nodes.pause("b2")
    for i in range(5):
        network.send("b1", "b2", Note("b1", i))
        network.send("b1", "b3", Note("b1", i))
    with pytest.raises(RuntimeError, match="node 'b2' is paused and cannot send"):
        network.send("b2", "b1", Note("b2", 0))
    assert {e.dst for e in drain(clock, network)} == {"b3"}
    clock.advance_by(seconds(10))
    assert drain(clock, network) == []
    assert [e.dst for e in network.in_flight()] == ["b2"] * 5

    nodes.resume("b2")
    woke_at = clock.now
    late = drain(clock, network)
    assert [e.message.n for e in late] == [0, 1, 2, 3, 4]
    assert clock.now == woke_at  # all of it was overdue: it arrives at once, late


def test_messages_from_a_node_sent_before_it_paused_still_arrive() -> None:
    nodes, clock, network = make()
    network.send("b2", "b1", Note("b2", 0))
    nodes.pause("b2")
    assert [e.src for e in drain(clock, network)] == ["b2"]


def test_a_paused_node_that_crashes_loses_what_waited_for_it() -> None:
    nodes, clock, network = make()
    nodes.pause("b2")
    network.send("b1", "b2", Note("b1", 0))
    clock.advance_by(seconds(1))
    assert drain(clock, network) == []
    nodes.crash("b2")
    nodes.restart("b2")
    assert drain(clock, network) == [] and network.in_flight() == ()
    assert network.stats().dropped_reset == 1


def test_unknown_nodes_and_unhashable_messages_are_refused() -> None:
    _, _, network = make()
    with pytest.raises(KeyError, match=re.escape("unknown node 'b9'; the nodes are ['b1'")):
        network.send("b1", "b9", Note("b1", 0))
    with pytest.raises(TypeError, match="messages are frozen, hashable values"):
        network.send("b1", "b2", ["a", "list"])


# Manual control ---------------------------------------------------------------------------


def test_any_in_flight_message_can_be_delivered_by_hand_when_links_are_not_fifo() -> None:
    _, _, network = make(fifo=False)
    for i in range(4):
        network.send("b1", "b2", Note("b1", i))
    assert [e.seq for e in network.deliverable()] == [0, 1, 2, 3]
    assert network.deliver(2).message.n == 2
    assert network.drop(0).message.n == 0
    assert [e.seq for e in network.in_flight()] == [1, 3]
    assert network.deliver(3).message.n == 3
    stats = network.stats()
    assert (stats.delivered, stats.dropped_manual, stats.in_flight) == (2, 1, 1)


def test_by_hand_fifo_links_deliver_only_their_head() -> None:
    _, _, network = make()
    for i in range(3):
        network.send("b1", "b2", Note("b1", i))
        network.send("b3", "b2", Note("b3", i))
    assert [e.seq for e in network.deliverable()] == [0, 1]
    ahead = r"cannot deliver #4 \(b1->b2\): #0 is ahead of it on the same link"
    with pytest.raises(DeliveryError, match=ahead):
        network.deliver(4)
    network.drop(0)
    network.deliver(2)
    assert [e.seq for e in network.deliverable()] == [1, 4]


def test_by_hand_partitions_and_pauses_still_hold() -> None:
    nodes, _, network = make(fifo=False)
    network.send("b1", "b2", Note("b1", 0))
    network.send("b1", "b3", Note("b1", 0))
    network.block([("b1", "b2")])
    nodes.pause("b3")
    assert network.deliverable() == ()
    with pytest.raises(DeliveryError, match="link b1->b2 is blocked by a partition"):
        network.deliver(0)
    with pytest.raises(DeliveryError, match="b3 is paused; it receives once it resumes"):
        network.deliver(1)
    with pytest.raises(DeliveryError, match="no message #7 in flight"):
        network.drop(7)
    nodes.resume("b3")
    assert network.deliver(1).dst == "b3"


# Counters and digests ---------------------------------------------------------------------


@settings(max_examples=20, deadline=None)
@given(st.integers(min_value=0, max_value=2**32))
def test_every_message_is_delivered_dropped_or_in_flight(seed: int) -> None:
    nodes, clock, network = make(
        seed, drop_probability=0.2, duplicate_probability=0.2, fifo=False, max_delay_ns=ms(20)
    )
    rng = split(seed, "workload")
    for i in range(200):
        running = nodes.in_state(NodeState.RUNNING)
        network.send(rng.choice(running), rng.choice(NAMES[:3]), Note("b1", i))
        if i == 50:
            network.isolate("b1")
        if i == 100:
            nodes.crash("b2")
        if i == 150:
            nodes.restart("b2")
            network.heal()
        drain(clock, network, until=clock.now + ms(1))
        stats = network.stats()
        assert stats.sent + stats.duplicated == stats.delivered + stats.dropped + stats.in_flight
    assert network.stats().sent_by_type == (("Note", 200),)


def test_the_pending_digest_fingerprints_the_queue() -> None:
    def queue(note: Note) -> str:
        _, _, network = make()
        network.send("b1", "b2", note)
        return network.pending_digest()

    same = queue(Note("b1", 1, frozenset({"a", "b"})))
    assert same == queue(Note("b1", 1, frozenset({"b", "a"})))
    assert same != queue(Note("b1", 2, frozenset({"a", "b"})))
    _, clock, network = make()
    empty = network.pending_digest()
    network.send("b1", "b2", Note("b1", 1))
    assert network.pending_digest() != empty
    drain(clock, network)
    assert network.pending_digest() == empty


# The clock and timers ---------------------------------------------------------------------


def test_time_units_convert_exactly() -> None:
    assert (us(1), ms(1), seconds(1), ms(0.5), ms(30_000)) == (
        1_000,
        1_000_000,
        1_000_000_000,
        500_000,
        30_000_000_000,
    )
    assert to_ms(ms(7) + 999_999) == 7
    assert [format_ns(x) for x in (7, 1_500, ms(1.5), seconds(2), -us(250))] == [
        "7ns",
        "1.5us",
        "1.5ms",
        "2s",
        "-250us",
    ]
    with pytest.raises(ValueError, match="finite"):
        ms(float("nan"))


def test_global_time_only_moves_forward_and_skew_shifts_a_nodes_view() -> None:
    clock = Clock()
    clock.advance_to(ms(10))
    with pytest.raises(ValueError, match=r"never goes backwards.*set_skew"):
        clock.advance_to(ms(9))
    clock.set_skew("b2", -ms(3))
    assert (clock.wall_now("b1"), clock.wall_now("b2")) == (ms(10), ms(7))
    assert clock.to_global("b2", ms(7)) == ms(10)
    assert clock.skews() == (("b2", -ms(3)),)
    clock.clear_skews()
    assert clock.wall_now("b2") == ms(10)


def test_a_nodes_two_readings_at_once_are_its_monotonic_and_wall_clocks() -> None:
    clock = Clock()
    clock.advance_to(ms(10))
    clock.set_skew("b2", ms(4))
    clock.set_rate("b3", 2)
    clock.advance_to(ms(20))
    clock.set_skew("b3", -ms(1))
    for node in ("b1", "b2", "b3"):
        assert clock.readings(node) == (clock.monotonic_now(node), clock.wall_now(node)), node
    assert clock.readings("b1") == (ms(20), ms(20))
    assert clock.readings("b3")[0] != clock.readings("b3")[1]


def test_timers_fire_by_time_then_by_scheduling_order() -> None:
    timers: TimerQueue[str] = TimerQueue()
    for name, at in [("c", 5), ("a", 3), ("d", 5), ("b", 3), ("e", 9)]:
        timers.schedule(at, name)
    fired = []
    while (timer := timers.pop_due(now=5)) is not None:
        fired.append(timer.payload)
    assert fired == ["a", "b", "c", "d"]
    assert timers.peek_time() == 9 and len(timers) == 1


def test_timers_can_be_cancelled_singly_or_by_owner() -> None:
    timers: TimerQueue[str] = TimerQueue()
    first = timers.schedule(1, "x", owner="b1")
    timers.schedule(2, "y", owner="b1")
    timers.schedule(3, "z", owner="b2")
    assert timers.cancel(first) and not timers.cancel(first)
    assert timers.peek_time() == 2
    assert timers.cancel_owner("b1") == 1
    assert [t.payload for t in timers.pending()] == ["z"]


def test_the_timer_queues_version_moves_with_every_change_that_can_move_the_next_time() -> None:
    timers: TimerQueue[str] = TimerQueue()
    seen = [timers.version]

    def moved() -> bool:
        seen.append(timers.version)
        return seen[-1] != seen[-2]

    first = timers.schedule(5, "a", owner="b1")
    assert moved()
    timers.schedule(7, "b", owner="b2")
    assert moved()
    assert timers.peek_time() == 5 and not moved(), "a peek changes nothing"
    assert timers.cancel(first) and moved()
    assert timers.pop_due(6) is None and moved(), "the cancelled head went"
    assert timers.pop_due(9, {"b2"}) is None and moved(), "set aside for its paused owner"
    assert timers.peek_time() is None and not moved()
    assert timers.release("b2") == 1 and moved()
    assert timers.cancel_owner("b2") == 1 and moved()


def test_a_paused_owners_timers_wait_and_then_fire_late_in_order() -> None:
    timers: TimerQueue[str] = TimerQueue()
    for at, payload, owner in [(1, "p1", "b1"), (2, "q", "b2"), (3, "p2", "b1")]:
        timers.schedule(at, payload, owner=owner)
    paused = {"b1"}
    assert timers.peek_time(paused) == 2
    assert [t.payload for t in iter(lambda: timers.pop_due(10, paused), None)] == ["q"]
    assert timers.peek_time(paused) is None and len(timers) == 2
    assert timers.release("b1") == 2
    assert [t.payload for t in iter(lambda: timers.pop_due(10), None)] == ["p1", "p2"]


# Message values ---------------------------------------------------------------------------


def test_messages_are_validated_when_built() -> None:
    with pytest.raises(ValueError, match=r"Note\.sender must be a non-empty str, got ''"):
        Note("", 1)
    with pytest.raises(ValueError, match=r"Note\.n must be >= 0, got -1"):
        Note("b1", -1)
    with pytest.raises(TypeError, match=r"Note\.n must be an int, got bool"):
        Note("b1", True)
    with pytest.raises(TypeError, match=r"Note.tags must be a frozenset \(immutable\), got set"):
        Note("b1", 1, {"x"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"Note.tags may hold only str, not 7 \(int\)"):
        Note("b1", 1, frozenset({7}))  # type: ignore[arg-type]
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        Note("b1", 1).n = 2  # type: ignore[misc]


def test_messages_are_values_described_the_same_way_everywhere() -> None:
    a, b = Note("b1", 1, frozenset({"z", "a"})), Note("b1", 1, frozenset({"a", "z"}))
    assert a == b and hash(a) == hash(b)
    assert a.describe() == "Note(sender='b1', n=1, tags={'a', 'z'})"
    assert describe({"k": (1,), "a": b"xy", "n": None}) == "{'a': b'xy', 'k': (1,), 'n': None}"
    assert describe(b"x" * 40).startswith("<40 bytes blake2b:")
    assert describe(NodeState.PAUSED) == "NodeState.PAUSED"
    with pytest.raises(TypeError, match="has no stable description"):
        describe(object())
    with pytest.raises(TypeError, match="decorates a subclass of Message"):
        message(int)  # type: ignore[type-var]


def test_the_root_seed_alone_reproduces_a_network() -> None:
    # The network's PRNG is split from the run's root seed, never shared with others.
    rng = SimRandom(77)
    nodes = NodeLifecycles(NAMES[:2])
    a = Network(nodes, Clock(), rng.split("network"))
    rng.split("disk").random()
    b = Network(NodeLifecycles(NAMES[:2]), Clock(), split(77, "network"))
    for network in (a, b):
        network.send("b1", "b2", Note("b1", 0))
    assert a.pending_digest() == b.pending_digest()
