"""The consumer group on the simulated cluster (``impl.group.hosting`` in ``impl.world``): the
coordinator is the leader of the group's ``__consumer_offsets`` partition, a real topic of
the cluster, and moves with that leadership when its broker crashes."""

from __future__ import annotations

import pytest

from impl.cluster import Cluster, ClusterConfig
from impl.group.placement import CONSUMER_OFFSETS, coordinator_partition
from impl.sim.clock import ms

CONFIG = ClusterConfig(consumers=3, partitions=6, offsets_partitions=5)


def poll_until(cluster: Cluster, start: int, end: int) -> None:
    t = start
    while t < end:
        cluster.run_until(t)
        for name in cluster.consumer_names:
            if cluster.running(name):
                cluster.client_poll(name)
        t += ms(500)


def stable_assignment(cluster: Cluster) -> tuple[int, list[tuple[str, int]]]:
    assert cluster.groups is not None
    members = cluster.groups.members.values()
    assert {m.state for m in members} == {"stable"}
    (generation,) = {m.generation for m in members}
    return generation, sorted(tp for m in members for tp in m.owned)


def hosts(cluster: Cluster) -> list[int]:
    assert cluster.groups is not None
    return [
        b
        for b, c in cluster.groups.coordinators.items()
        if cluster.groups.group in c.hosted and cluster.running(cluster.broker_names[b])
    ]


def test_the_coordinator_follows_the_offsets_partitions_leader() -> None:
    cluster = Cluster(CONFIG, 1)
    assert cluster.groups is not None
    partition = coordinator_partition("group", 5)
    assert cluster.groups.partition == partition
    assert (CONSUMER_OFFSETS, partition) in cluster.store.partitions
    poll_until(cluster, 0, ms(20_000))
    generation, owned = stable_assignment(cluster)
    assert owned == [("t", p) for p in range(6)]  # each partition exactly once
    leader = cluster.store.partitions[(CONSUMER_OFFSETS, partition)].leader
    assert hosts(cluster) == [leader]
    cluster.crash(cluster.broker_names[leader])
    poll_until(cluster, ms(20_000), ms(50_000))
    new_leader = cluster.store.partitions[(CONSUMER_OFFSETS, partition)].leader
    assert new_leader != leader and hosts(cluster) == [new_leader]
    later, owned = stable_assignment(cluster)
    # The new coordinator loaded the group as stored; the members kept their generation
    # and partitions and heartbeat it (markCoordinatorUnknown does not rejoin).
    assert later == generation and owned == [("t", p) for p in range(6)]
    fs = {op["f"] for op in cluster.history() if int(str(op["process"]).split("/")[0]) >= 200}
    assert fs == {"subscribe", "assign", "fetch-offsets", "poll"}


def test_without_offsets_partitions_there_is_no_group() -> None:
    cluster = Cluster(ClusterConfig(consumers=1), 1)
    assert cluster.groups is None
    assert all(topic != CONSUMER_OFFSETS for topic, _ in cluster.store.partitions)


def test_the_group_bug_is_a_known_knob() -> None:
    ClusterConfig(bugs={"no_generation_check"})
    with pytest.raises(ValueError, match="unknown --bug"):
        ClusterConfig(bugs={"no_such_fence"})


def test_a_paused_consumer_is_a_zombie_until_it_is_fenced() -> None:
    cluster = Cluster(CONFIG, 2)
    assert cluster.groups is not None
    poll_until(cluster, 0, ms(20_000))
    generation, _ = stable_assignment(cluster)
    zombie = cluster.groups.members["c1"]
    believed = zombie.owned
    assert believed
    cluster.pause("c1")
    poll_until(cluster, ms(20_000), ms(45_000))
    others = [cluster.groups.members[n] for n in ("c2", "c3")]
    assert {m.state for m in others} == {"stable"}
    (later,) = {m.generation for m in others}
    assert later > generation
    assert sorted(tp for m in others for tp in m.owned) == [("t", p) for p in range(6)]
    # the zombie still believes it owns its partitions, in its old generation
    assert zombie.owned == believed and zombie.generation == generation
    assert any(getattr(n, "why", None) == "session" for n in cluster.groups.notes)
    cluster.resume("c1")
    poll_until(cluster, ms(45_000), ms(75_000))
    final, owned = stable_assignment(cluster)
    assert final > later and owned == [("t", p) for p in range(6)]
    assert zombie.member_id != "" and zombie.generation == final


def faulted_run(seed: int) -> Cluster:
    """A minute of the group on the cluster under broker crashes and pauses (the
    coordinator's broker among them, chosen by the seed) and consumer pauses, then a quiet
    half-minute."""
    import random

    rng = random.Random(seed)
    cluster = Cluster(CONFIG, seed)
    t = 0
    down: list[tuple[str, str]] = []
    for _ in range(6):
        poll_until(cluster, t, t + ms(10_000))
        t += ms(10_000)
        for kind, node in down:
            (cluster.restart if kind == "crash" else cluster.resume)(node)
        down = []
        kind = rng.choice(["crash", "pause-broker", "pause-consumer"])
        if kind == "pause-consumer":
            node = rng.choice(cluster.consumer_names)
            cluster.pause(node)
            down.append(("pause", node))
        else:
            node = cluster.broker_names[rng.choice(list(cluster.broker_names))]
            (cluster.crash if kind == "crash" else cluster.pause)(node)
            down.append(("crash" if kind == "crash" else "pause", node))
    for kind, node in down:
        (cluster.restart if kind == "crash" else cluster.resume)(node)
    poll_until(cluster, t, t + ms(30_000))
    return cluster


@pytest.mark.parametrize("seed", [2, 3, 4])
def test_under_broker_and_consumer_faults_each_generation_has_one_owner_per_partition(
    seed: int,
) -> None:
    from impl.group.messages import GenerationCompleted

    cluster = faulted_run(seed)
    assert cluster.groups is not None
    completed = [n for n in cluster.groups.notes if isinstance(n, GenerationCompleted)]
    # (Seeds whose faults rebalance the group: a coordinator's failover alone does not.)
    assert len(completed) >= 2
    for note in completed:
        owned = sorted(tp for _, ps in note.assignment for tp in ps)
        assert owned == [("t", p) for p in range(6)], note
    generation, owned = stable_assignment(cluster)
    assert owned == [("t", p) for p in range(6)]
    assert generation == max(n.generation for n in completed)
