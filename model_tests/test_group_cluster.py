"""The consumer group on the simulated cluster (``jepsen_py.group_cluster``, issues 18 and 19):
commits and the group record go through ``__consumer_offsets``' replication, a new
coordinator loads them from its replica (``COORDINATOR_LOAD_IN_PROGRESS`` meanwhile), the
consumers read what they are assigned, and the history is the delivery contract's."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

import attrs
import orjson
import pytest

from impl.group.consumer import ConsumerApp, GroupConsumer
from impl.group.coordinator import Coordinator, CoordinatorConfig
from impl.group.member import Member, MemberConfig, Request
from impl.group.messages import (
    COORDINATOR_LOAD_IN_PROGRESS,
    NONE,
    NOT_COORDINATOR,
    FindCoordinatorResponse,
    JoinGroup,
    JoinGroupResponse,
    OffsetCommit,
    OffsetCommitResponse,
    OffsetFetch,
    OffsetFetchResponse,
    SyncGroupResponse,
)
from impl.group.placement import CONSUMER_OFFSETS
from impl.sim.clock import ms
from jepsen_py.group_cluster import GroupClusterConfig, GroupClusterRun
from jepsen_py.group_workload import check_group_delivery
from spec.group.lifecycle import AWAITING_SYNC

SHORT = GroupClusterConfig(duration_ns=ms(30_000), recovery_ns=ms(10_000))
QUIET = GroupClusterConfig(faults=(), duration_ns=ms(30_000), recovery_ns=ms(10_000))


def acknowledged(history: list[dict[str, Any]]) -> dict[str, int]:
    """Per key the highest offset of an ``ok`` commit."""
    best: dict[str, int] = {}
    for op in history:
        if op["f"] == "commit" and op["type"] == "ok":
            for key, offset in op["value"].items():
                best[key] = max(best.get(key, 0), offset)
    return best


def coordinator_of(run: GroupClusterRun) -> str:
    b = run.cluster.store.partitions[(CONSUMER_OFFSETS, run.host.partition)].leader
    return run.cluster.broker_names[b]


def test_same_seed_same_history_byte_for_byte() -> None:
    a, b = GroupClusterRun(SHORT, 3), GroupClusterRun(SHORT, 3)
    assert a.run() == b.run()
    dump = [orjson.dumps(op) for op in a.history()]
    assert dump == [orjson.dumps(op) for op in b.history()] and len(dump) > 500
    other = GroupClusterRun(SHORT, 4)
    other.run()
    assert [orjson.dumps(op) for op in other.history()] != dump


def test_the_history_carries_the_delivery_contracts_ops() -> None:
    run = GroupClusterRun(SHORT, 1)
    outcome = run.run()
    assert outcome["ok"], outcome["violations"]
    history = run.history()
    fs = {op["f"] for op in history}
    assert {"send", "subscribe", "assign", "poll", "process", "commit", "fetch-offsets"} <= fs
    process = next(op for op in history if op["f"] == "process")
    assert process["type"] == "ok" and process["key"].startswith("t-")
    assert isinstance(process["value"][0][1], int) and process["generation"] >= 1
    commit = next(op for op in history if op["f"] == "commit" and op["type"] == "invoke")
    assert commit["mode"] == "sync" and "key" not in commit and commit["member"]
    final = [op for op in history if op.get("final")]
    assert [op["type"] for op in final] == ["invoke", "ok"] and final[0]["process"] == "final"
    sent = next(op for op in history if op["f"] == "send" and op["type"] == "ok")
    assert set(sent["value"]) == {"offset", "value"} and isinstance(sent["value"]["value"], int)
    kills = [op for op in history if op["f"] == "kill-consumer"]
    for kill in kills:  # the consumer that died never acts again under its process id
        later = [
            op for op in history[kill["index"] + 1 :] if op["process"] == kill["value"]["process"]
        ]
        assert not later, later
    # at least once: every record below the final committed offset was processed
    processed = {(op["key"], o) for op in history if op["f"] == "process" for o, _ in op["value"]}
    for key, offset in (run.final or {}).items():
        assert all((key, o) in processed for o in range(offset or 0)), key


def test_commits_survive_a_coordinator_failover() -> None:
    run = GroupClusterRun(QUIET, 5)
    run.advance(ms(15_000))
    before = acknowledged(run.cluster.history())
    assert before, "the group committed nothing before the failover"
    old = coordinator_of(run)
    run.cluster.crash(old)  # power loss: what it did not fsync is gone
    run.advance(ms(30_000))
    new = coordinator_of(run)
    assert new != old and run.host.stats["loads"] >= 2
    final = run.final_fetch()
    assert final is not None
    for key, offset in before.items():
        assert (final[key] or 0) >= offset, (key, final[key], offset)
    assert run.outcome()["ok"]


def test_the_new_coordinator_answers_load_in_progress_until_it_has_read_the_log() -> None:
    run = GroupClusterRun(QUIET, 5)
    run.advance(ms(15_000))
    old = coordinator_of(run)
    run.cluster.crash(old)
    cluster = run.cluster
    tps = (("t", 0),)
    answers: list[str] = []
    for _ in range(1_000):  # until a new leader is elected and has begun to load
        cluster.run_until(cluster.clock.now + ms(20))
        new = coordinator_of(run)
        if new != old and cluster.running(new):
            answer = cluster.admin_request(new, OffsetFetch("group", tps))
            assert len(answer) == 1 and isinstance(answer[0], OffsetFetchResponse)
            answers.append(answer[0].error)
            if answer[0].error == NONE:
                break
    # NOT_COORDINATOR until the broker hears of its leadership (LeaderAndIsr), then
    # COORDINATOR_LOAD_IN_PROGRESS while it reads its replica, then the offsets.
    phases = [a for i, a in enumerate(answers) if i == 0 or answers[i - 1] != a]
    assert phases in (
        [NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, NONE],
        [COORDINATOR_LOAD_IN_PROGRESS, NONE],
    ), answers


def test_load_in_progress_refuses_every_group_request() -> None:
    c = Coordinator("b1", CoordinatorConfig(durable=True))
    c.begin_load("g")
    join = JoinGroup("g", "", "c1", ("t",), ms(6_000), ms(20_000))
    assert c.step("c1", join, 0).sends == [
        ("c1", JoinGroupResponse("g", "COORDINATOR_LOAD_IN_PROGRESS"))
    ]
    commit = OffsetCommit("g", "m", 1, ((("t", 0), 3),))
    assert c.step("c1", commit, 0).sends == [
        ("c1", OffsetCommitResponse("g", COORDINATOR_LOAD_IN_PROGRESS, -1, commit.offsets))
    ]
    fetch = c.step("c1", OffsetFetch("g", (("t", 0),)), 0).sends
    assert fetch == [("c1", OffsetFetchResponse("g", COORDINATOR_LOAD_IN_PROGRESS))]
    c.load("g", None, 1, {("t", 0): 7})
    fetch = c.step("c1", OffsetFetch("g", (("t", 0), ("t", 1))), 2).sends
    assert fetch == [("c1", OffsetFetchResponse("g", NONE, ((("t", 0), 7), (("t", 1), -1))))]


def _monitor_reads(run: GroupClusterRun) -> list[dict[str, Any]]:
    return [op for op in run.history() if op["process"] == "monitor"]


def test_the_offsets_monitor_reads_the_committed_offsets_at_random_gaps() -> None:
    run = GroupClusterRun(SHORT, 4)
    run.run()
    reads = _monitor_reads(run)
    invoked = [op["time"] for op in reads if op["type"] == "invoke"]
    gaps = {b - a for a, b in pairwise(invoked)}
    # Drawn between 0.5 s and 1.5 s (longer only while no running broker coordinates).
    assert len(gaps) >= 5 and min(gaps) >= ms(500), sorted(gaps)
    assert sum(op["type"] == "ok" for op in reads) >= 20
    assert all(op["f"] == "fetch-offsets" for op in reads)
    off = GroupClusterRun(attrs.evolve(SHORT, monitor_interval_ns=0), 4)
    off.run()
    assert _monitor_reads(off) == []
    with pytest.raises(ValueError, match="monitor"):
        GroupClusterConfig(monitor_interval_ns=-1)


def test_a_read_during_a_load_is_refused_and_without_the_fence_regresses() -> None:
    """Seed 4: twice the monitor's read falls in a new coordinator's load. With the fence it
    is refused (``COORDINATOR_LOAD_IN_PROGRESS``); with ``--bug fetch_before_load`` the same
    reads are answered from the empty cache, and the delivery checker calls it a commit
    regression. With the monitor off, the members' own OffsetFetches (after a rebalance)
    never fall in a load of this run, and the bug goes unseen."""
    safe = GroupClusterRun(GroupClusterConfig(), 4)
    safe.run()
    refused = [op for op in _monitor_reads(safe) if op["type"] == "fail"]
    assert [op["error"] for op in refused] == [COORDINATOR_LOAD_IN_PROGRESS] * 2
    assert check_group_delivery(safe.history(), "at-least-once")["verdict"] == "valid"

    bug = GroupClusterConfig(bugs=frozenset({"fetch_before_load"}))
    early = GroupClusterRun(bug, 4)
    early.run()
    at = {op["time"] for op in refused}
    answered = [op for op in _monitor_reads(early) if op["type"] == "ok" and op["time"] in at]
    assert len(answered) == 2
    assert all(offset is None for op in answered for offset in op["value"].values())
    delivery = check_group_delivery(early.history(), "at-least-once")
    assert delivery["verdict"] == "invalid" and "commit-regression" in delivery["violations"]

    blind = GroupClusterRun(attrs.evolve(bug, monitor_interval_ns=0), 4)
    blind.run()
    assert check_group_delivery(blind.history(), "at-least-once")["verdict"] == "valid"


def _offsets_leader_alone(
    unclean: bool,
) -> tuple[dict[str, int], dict[str, int | None], list[dict[str, Any]]]:
    """The group commits while only the coordinator's broker holds ``__consumer_offsets``
    (its followers were killed, min.insync.replicas=1, Kafka's default); then it is killed
    and the followers come back. What was acknowledged, and what the group reads at the end.
    Every kill is a SIGKILL (the page cache survives), so that nothing is lost to unflushed
    data: what an election loses is the election's."""
    config = GroupClusterConfig(
        faults=(), min_isr=1, unclean=unclean, partitions=2, consumers=2, offsets_partitions=3
    )
    run = GroupClusterRun(config, 11)
    run.advance(ms(10_000))
    leader = coordinator_of(run)
    followers = [n for n in run.cluster.broker_names.values() if n != leader]
    for node in followers:
        run.cluster.crash(node, power_loss=False)
    run.advance(ms(30_000))  # their sessions expire; the leader alone commits
    acked = acknowledged(run.cluster.history())
    run.cluster.crash(leader, power_loss=False)
    for node in followers:
        run.cluster.restart(node)
    run.advance(ms(50_000), sending=False)
    run.cluster.restart(leader)
    run.advance(ms(70_000), sending=False)
    final = run.final_fetch()
    assert final is not None
    return acked, final, run.history()


def test_unclean_election_on_the_offsets_topic_regresses_a_commit() -> None:
    """The offsets topic's unclean election loses acknowledged commits, and the delivery
    checker (``kmodel verify --delivery``) calls it a commit regression."""
    acked, final, history = _offsets_leader_alone(unclean=True)
    behind = {k: (final[k], o) for k, o in acked.items() if (final[k] or 0) < o}
    assert behind, (acked, final)
    delivery = check_group_delivery(history, "at-least-once")
    assert delivery["verdict"] == "invalid"
    assert "commit-regression" in delivery["violations"], delivery


def test_clean_election_keeps_every_acknowledged_commit() -> None:
    acked, final, history = _offsets_leader_alone(unclean=False)
    assert all((final[k] or 0) >= o for k, o in acked.items()), (acked, final)
    delivery = check_group_delivery(history, "at-least-once")
    assert "commit-regression" not in delivery["counts"], delivery
    assert delivery["verdict"] == "valid", delivery


@pytest.mark.parametrize("seed", [1, 6])
def test_at_least_once_consumers_lose_nothing_and_every_duplicate_is_explained(seed: int) -> None:
    """Committing after processing, under the group workload's faults: no record the group
    committed past went unprocessed; records processed twice, each explained by a crash, a
    seek back after a processing failure (seed 1) or a rebalance (the delivery checker's
    ``duplicated-unexplained`` is a violation)."""
    run = GroupClusterRun(GroupClusterConfig(), seed)
    assert run.run()["ok"]
    delivery = check_group_delivery(run.history(), "at-least-once")
    assert delivery["verdict"] == "valid", delivery
    assert "lost" not in delivery["counts"] and "duplicated-unexplained" not in delivery["counts"]
    assert sum(delivery["counts"].values()) > 0, "a crash or a rebalance re-delivered some"


@pytest.mark.parametrize("seed", [2, 3])
def test_committing_before_processing_loses_what_a_kill_interrupts(seed: int) -> None:
    """At most once: a consumer killed while it processes a batch it already committed loses
    it; nothing is processed twice."""
    run = GroupClusterRun(GroupClusterConfig(commit="before-process"), seed)
    assert run.run()["ok"]
    delivery = check_group_delivery(run.history(), "at-most-once")
    assert delivery["verdict"] == "valid", delivery
    assert delivery["counts"].get("lost", 0) > 0, delivery
    assert not any(name.startswith("duplicated") for name in delivery["counts"]), delivery
    # The same history judged as at least once: the losses are violations there.
    assert check_group_delivery(run.history(), "at-least-once")["verdict"] == "invalid"


@pytest.mark.slow
def test_at_least_once_over_50_seeds_loses_nothing_and_explains_every_duplicate() -> None:
    """Issue 19's outcome: at-least-once consumers under every group fault, seeds 1..50."""
    duplicates = 0
    for seed in range(1, 51):
        run = GroupClusterRun(GroupClusterConfig(), seed)
        assert run.run()["ok"], seed
        delivery = check_group_delivery(run.history(), "at-least-once")
        assert delivery["verdict"] == "valid", (seed, delivery)
        assert "lost" not in delivery["counts"], (seed, delivery)
        duplicates += sum(n for k, n in delivery["counts"].items() if k.startswith("duplicated"))
    assert duplicates > 0


def test_no_generation_check_lets_a_late_commit_in() -> None:
    """``late-commit`` delivers a consumer's OffsetCommit after the group moved on: the
    generation check refuses it; without it the zombie's commit is accepted, on a partition
    that moved to another member (seed 2)."""
    bug = GroupClusterConfig(bugs={"no_generation_check"})
    violations = GroupClusterRun(bug, 2).run()["violations"]
    assert any(v.startswith("zombie commit accepted") for v in violations), violations
    fenced = GroupClusterRun(GroupClusterConfig(), 2)
    assert fenced.run()["ok"]
    late = [op for op in fenced.history() if op["f"].endswith("late-commit")]
    assert [op["f"] for op in late][:2] == ["start-late-commit", "stop-late-commit"]
    assert late[1]["value"].get("delivered_to"), late


@pytest.mark.parametrize(
    ("commit", "modes"),
    [
        ("before-process", {"sync"}),
        ("auto", {"auto"}),
        ("after-process-async", {"async"}),  # (and sync in onPartitionsRevoked, if any)
    ],
)
def test_the_other_commit_modes_run(commit: str, modes: set[str]) -> None:
    run = GroupClusterRun(GroupClusterConfig(commit=commit, duration_ns=ms(20_000)), 1)
    outcome = run.run()
    assert outcome["ok"] and outcome["commits_ok"] > 0 and outcome["records_processed"] > 0
    seen = {op["mode"] for op in run.history() if op["f"] == "commit"}
    assert modes <= seen <= modes | {"sync"}


def test_commit_async_after_processing_is_at_least_once() -> None:
    """``commitAsync`` after processing: commits of mode ``async`` (no retry: a failed one
    is ``fail``/``info`` at its first answer), nothing lost, every duplicate explained."""
    run = GroupClusterRun(GroupClusterConfig(commit="after-process-async"), 1)
    assert run.run()["ok"]
    history = run.history()
    assert any(op["f"] == "commit" and op.get("mode") == "async" for op in history)
    delivery = check_group_delivery(history, "at-least-once")
    assert delivery["verdict"] == "valid" and "lost" not in delivery["counts"], delivery


def test_offset_reset_none_fails_the_poll() -> None:
    run = GroupClusterRun(GroupClusterConfig(auto_offset_reset="none", faults=()), 1)
    run.advance(ms(10_000))
    fails = [op for op in run.cluster.history() if op["f"] == "poll" and op["type"] == "fail"]
    assert fails and all(op["value"]["error"] == "OFFSET_OUT_OF_RANGE" for op in fails)
    assert not any(op["f"] == "process" for op in run.cluster.history())


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(1, 51))
def test_every_fence_holds_on_the_cluster(seed: int) -> None:
    outcome = GroupClusterRun(GroupClusterConfig(), seed).run()
    assert outcome["ok"], outcome["violations"]


def test_kmodel_test_workload_group_runs_on_the_cluster(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from jepsen_py.cli import main

    store = str(tmp_path / "store")
    args = ["test", "--workload", "group", "--time-limit", "20s", "--store", store]
    ok = CliRunner().invoke(main, [*args, "--seed", "1", "--json"])
    assert ok.exit_code == 0, ok.output
    result = json.loads(ok.output.strip().splitlines()[-1])
    assert result["verdict"] == "valid" and result["records_processed"] > 0
    history = (tmp_path / "store" / "group" / "latest" / "history.jsonl").read_text()
    assert '"f":"process"' in history and '"final":true' in history
    bad = CliRunner().invoke(
        main,
        [
            "test",
            "--workload",
            "group",
            "--seed",
            "2",
            "--bug",
            "no_generation_check",
            "--store",
            store,
        ],
    )
    assert bad.exit_code == 1 and "zombie commit accepted" in bad.output, bad.output
    modes = CliRunner().invoke(main, [*args, "--seed", "1", "--commit", "before-process"])
    assert modes.exit_code == 0 and "--commit before-process" in modes.output, modes.output
    unknown = CliRunner().invoke(main, ["test", "--workload", "group", "--nemesis", "nonsense"])
    assert unknown.exit_code == 2 and "pause-consumer" in unknown.output
    kafka = CliRunner().invoke(main, ["test", "--monitor-interval", "2s", "--store", store])
    assert kafka.exit_code == 2 and "--workload group" in kafka.output, kafka.output


def test_a_consumer_drops_the_answer_to_an_offset_fetch_it_gave_up_on() -> None:
    """An OffsetFetch unanswered for ``request.timeout.ms`` is given up on and asked again;
    the first one's answer, arriving late, is not the second one's (Kafka's client matches
    answers by correlation id): the partition starts where the second answer says."""
    member = Member("c1", MemberConfig(group="g"), lambda: "b1", lambda: {"t": 2}, process=1)
    consumer = GroupConsumer("c1", member, "t", ConsumerApp(), 1, lambda: 2)
    consumer.subscribe(("t",), 0)
    member.coordinator, member.member_id, member.generation = "b1", "c1-b1-1", 1
    member.state = AWAITING_SYNC
    member.in_flight["sync"] = Request("b1", 0, correlation=100)
    sends = consumer.step("b1", SyncGroupResponse("g", NONE, 1, (("t", 0),), 100), 1).sends
    ((_, first),) = [(d, m) for d, m in sends if isinstance(m, OffsetFetch)]
    timeout = consumer.app.request_timeout_ns
    consumer.tick(1 + timeout)  # given up on: the coordinator is looked up again
    ((_, find),) = consumer.poll(2 + timeout).sends
    found = FindCoordinatorResponse("g", NONE, "b1", find.correlation)
    ((_, second),) = consumer.step("b1", found, 3 + timeout).sends  # asked again
    assert isinstance(second, OffsetFetch) and second.correlation != first.correlation
    late = OffsetFetchResponse("g", NONE, ((("t", 0), 7),), first.correlation)
    consumer.step("b1", late, 5 + timeout)
    assert consumer.position(("t", 0)) is None  # still asking
    answer = OffsetFetchResponse("g", NONE, ((("t", 0), 3),), second.correlation)
    consumer.step("b1", answer, 6 + timeout)
    assert consumer.position(("t", 0)) == 3
