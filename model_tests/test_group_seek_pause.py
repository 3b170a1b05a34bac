"""``KafkaConsumer.seek``, ``pause`` and ``resume`` in the group consumer
(``impl.group.consumer``) on the simulated cluster, and what the delivery checker makes of
them: a seek back re-delivers (``duplicated-seek``, explained), a seek forward past
unprocessed records loses them (``lost``), a pause holds a partition back without leaving
the group, a rebalance drops it."""

from __future__ import annotations

from typing import Any

import pytest

from impl.group.consumer import GroupConsumer, NoCurrentAssignmentError
from impl.sim.clock import ms
from jepsen_py.group_cluster import GroupClusterConfig, GroupClusterRun
from jepsen_py.group_workload import check_group_delivery

QUIET = GroupClusterConfig(faults=(), duration_ns=ms(20_000), recovery_ns=ms(10_000))


def settled(seed: int = 1, until: int = ms(8_000)) -> tuple[GroupClusterRun, str, GroupConsumer]:
    """A quiet run whose group has settled: the first consumer that reads a partition."""
    run = GroupClusterRun(QUIET, seed)
    run.advance(until)
    name, gc = next((n, c) for n, c in sorted(run.host.consumers.items()) if c.fetchers)
    return run, name, gc


def finish(run: GroupClusterRun) -> list[dict[str, Any]]:
    c = run.config
    run.advance(c.duration_ns)
    run.advance(c.duration_ns + c.recovery_ns, sending=False, faults=False)
    run.final_fetch()
    return run.history()


def test_seek_pause_or_resume_of_an_unassigned_partition_is_refused() -> None:
    run, _, gc = settled()
    other = next(tp for tp in (("t", p) for p in range(6)) if tp not in gc.fetchers)
    now = run.cluster.clock.now
    for call in (
        lambda: gc.seek(other, 0, now),
        lambda: gc.pause((other,), now),
        lambda: gc.resume((other,), now),
    ):
        with pytest.raises(NoCurrentAssignmentError, match="No current assignment for partition"):
            call()


def test_a_seek_back_rereads_from_there_and_the_checker_explains_the_duplicates() -> None:
    run, _, gc = settled()
    tp = min(gc.fetchers)
    key = f"{tp[0]}-{tp[1]}"
    assert gc.processed[tp] >= 3, "the consumer has processed some records"
    gc.seek(tp, 0, run.cluster.clock.now)
    history = finish(run)
    seek = next(i for i, op in enumerate(history) if op["f"] == "seek")
    assert history[seek]["value"] == {key: 0} and history[seek]["type"] == "invoke"
    polls = [
        op
        for op in history[seek:]
        if op["f"] == "poll" and op.get("key") == key and op["type"] == "invoke"
    ]
    assert polls[0]["value"]["from"] == 0 or polls[1]["value"]["from"] == 0  # one in flight
    delivery = check_group_delivery(history, "at-least-once")
    assert delivery["verdict"] == "valid", delivery
    assert delivery["counts"].get("duplicated-seek", 0) >= 3, delivery
    assert "duplicated-unexplained" not in delivery["counts"]


def test_a_seek_forward_past_unprocessed_records_is_found_lost() -> None:
    """The checker can fail: a consumer that skips records and commits past them loses
    them, and the at-least-once verdict says so."""
    run, _, gc = settled()
    tp = min(gc.fetchers)
    skipped_to = gc.processed[tp] + 5
    gc.seek(tp, skipped_to, run.cluster.clock.now)
    history = finish(run)
    delivery = check_group_delivery(history, "at-least-once")
    assert delivery["verdict"] == "invalid", delivery
    assert delivery["violations"] == ["lost"]
    assert delivery["counts"]["lost"] >= 3, delivery  # the records skipped, in flight aside


def test_a_paused_partition_is_not_fetched_and_its_member_stays_in_the_group() -> None:
    run, name, gc = settled()
    tp = min(gc.fetchers)
    key = f"{tp[0]}-{tp[1]}"
    generation = gc.member.generation
    start = len(run.cluster.history())
    gc.pause((tp,), run.cluster.clock.now)
    run.advance(run.cluster.clock.now + ms(10_000))  # longer than session.timeout.ms
    during = run.cluster.history()[start:]
    assert gc.member.state == "stable" and gc.member.generation == generation
    assert tp in gc.paused
    invoked = [op for op in during if op["f"] == "poll" and op.get("key") == key]
    assert len(invoked) <= 2  # at most the fetch in flight when it paused, and its answer
    others = [op for op in during if op["f"] == "process" and op.get("key") != key]
    assert others, "the consumer goes on with its other partitions"
    held = gc.processed[tp]
    gc.resume((tp,), run.cluster.clock.now)
    run.advance(run.cluster.clock.now + ms(3_000))
    assert gc.processed[tp] > held, "resumed: it reads on"
    history = finish(run)
    assert {"pause", "resume"} <= {op["f"] for op in history if op.get("process") == gc.process}
    assert check_group_delivery(history, "at-least-once")["verdict"] == "valid"
    _ = name


def test_a_rebalance_that_revokes_a_paused_partition_drops_the_pause() -> None:
    run, name, gc = settled()
    paused = tuple(sorted(gc.fetchers))
    gc.pause(paused, run.cluster.clock.now)
    assert set(paused) <= gc.paused
    run.cluster.kill_client(next(n for n in sorted(run.host.consumers) if n != name))
    generation = gc.member.generation
    for _ in range(200):  # until the dead member's session expires and gc rejoins
        run.advance(run.cluster.clock.now + ms(100))
        if gc.member.state != "stable":
            assert not gc.paused, "revoked at the rejoin: the pause is dropped with them"
            break
    else:
        raise AssertionError("no rebalance")
    run.advance(run.cluster.clock.now + ms(5_000))
    assert gc.member.generation > generation
    assert not gc.paused, "eager rebalance: every partition was revoked, and the pause with it"
    assert gc.fetchers, "reassigned partitions are read again, not paused"
