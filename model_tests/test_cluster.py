"""The simulated world (``impl.world``), driven by time (``impl.cluster``) and by hand
(``impl.refinement``): one seed, one run, byte for byte; faults; and histories the Jepsen
checkers accept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from impl.cluster import Cluster, ClusterConfig, IllegalEvent
from impl.controller import CONTROLLER
from impl.refinement import RefinementCluster
from impl.replica import Replica
from impl.roles import Role
from impl.sim.clock import ms, seconds
from impl.world import World
from jepsen_py.checker import anomalies
from jepsen_py.checker.kafka_log import check_log
from jepsen_py.checker.result import Verdict
from jepsen_py.history.op import Op

ROOT = Path(__file__).resolve().parent.parent


def replica_of(cluster: World, b: int) -> Replica:
    broker = cluster.brokers[b]
    assert broker is not None
    replica = broker.replica("t", 0)
    assert replica is not None
    return replica


def workload(
    seed: int, *, duration_s: float = 20, faults: bool = True, acks: str = "all"
) -> Cluster:
    """Producers and consumers at about 40 ops per simulated second, with a crash, a pause
    and a partition of brokers along the way, everything healed for the last 5 seconds."""
    config = ClusterConfig(brokers=3, producers=3, consumers=2, min_insync_replicas=2, acks=acks)
    cluster = Cluster(config, seed)
    rng = cluster.workload_rng
    end = seconds(duration_s)
    counter = [0]

    def on_timer(payload: tuple[str, ...]) -> None:
        kind = payload[0]
        if kind == "op":
            if rng.random() < 0.5:
                cluster.client_send(
                    rng.choice(cluster.producer_names), None, str(counter[0]).encode()
                )
                counter[0] += 1
            else:
                cluster.client_poll(rng.choice(cluster.consumer_names))
            cluster.schedule(cluster.clock.now + ms(25), ("op",))
        elif kind == "crash":
            cluster.crash(payload[1], rng=cluster.disk_rng)
        elif kind == "restart":
            cluster.restart(payload[1])
        elif kind == "pause":
            cluster.pause(payload[1])
        elif kind == "resume":
            cluster.resume(payload[1])
        elif kind == "isolate":
            cluster.network.isolate(payload[1])
        elif kind == "heal":
            cluster.heal()

    cluster.schedule(ms(100), ("op",))
    if faults:
        for at, event in (
            (3, ("crash", "b1")),
            (6, ("restart", "b1")),
            (8, ("pause", "b2")),
            (10, ("resume", "b2")),
            (11, ("isolate", "b3")),
            (13, ("heal",)),
        ):
            cluster.schedule(seconds(at), event)
    cluster.run_until(end, on_timer)
    # The final phase: every consumer reads everything back.
    for _ in range(40):
        for name in cluster.consumer_names:
            cluster.client_poll(name)
        cluster.run_until(cluster.clock.now + ms(200), on_timer=lambda _: None)
    return cluster


def test_the_same_seed_gives_the_same_run_and_another_seed_another():
    a, b = workload(5, duration_s=8), workload(5, duration_s=8)
    assert a.digest() == b.digest()
    assert a.history() == b.history()
    assert workload(6, duration_s=8).digest() != a.digest()


def test_the_digest_is_the_same_in_every_process():
    code = (
        "import sys; sys.path.insert(0, '.'); from model_tests.test_cluster import workload; "
        "print(workload(5, duration_s=4).digest())"
    )
    digests = set()
    for hashseed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hashseed}
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        digests.add(out.stdout.strip())
    assert digests == {workload(5, duration_s=4).digest()}


def test_under_faults_an_acks_all_history_is_linearizable_and_acks_1_is_not():
    """acks=all, min.insync.replicas=2, one fault at a time: every acknowledged write is
    read back at its offset, and the history is a linearizable log (``check_log``). The
    same run with acks=1 is not: a write acknowledged before it was replicated is not yet
    below the HW a later poll reports."""
    cluster = workload(3)
    ops = [Op(**op) for op in cluster.history()]
    found = anomalies.find_anomalies(ops)
    assert {name for name, witnesses in found.items() if witnesses} == set(), found
    sends = [op for op in ops if op.f == "send" and op.type == "ok"]
    assert len(sends) > 300 and cluster.stats["crashes"] == 1
    assert check_log(ops).verdict is Verdict.OK
    weak = workload(3, acks="1")
    result = check_log([Op(**op) for op in weak.history()])
    assert result.verdict is Verdict.ILLEGAL
    assert "no linearization" in (result.explanation or "")


def test_a_crashed_broker_restarts_from_its_disk_and_rejoins_the_isr():
    cluster = workload(4)
    state = cluster.store.partitions[("t", 0)]
    assert state.isr == frozenset({1, 2, 3}), cluster.describe()
    leos = {b: replica_of(cluster, b).leo for b in (1, 2, 3)}
    assert len(set(leos.values())) == 1, leos
    assert cluster.nodes.incarnation("b1") == 1


def test_a_paused_leader_wakes_up_as_a_zombie_and_is_fenced():
    config = ClusterConfig(brokers=3, producers=1, consumers=0, min_insync_replicas=2)
    cluster = Cluster(config, seed=9)
    cluster.run_until(seconds(1))
    assert cluster.store.partitions[("t", 0)].leader == 1
    cluster.pause("b1")
    cluster.run_until(seconds(10))
    state = cluster.store.partitions[("t", 0)]
    assert state.leader != 1 and state.leader_epoch >= 1
    zombie = replica_of(cluster, 1)
    assert zombie.role is Role.LEADER, "it slept through its own replacement"
    cluster.resume("b1")
    cluster.run_until(seconds(20))
    assert replica_of(cluster, 1) is zombie, "the same process: fenced, not restarted"
    assert zombie.role is Role.FOLLOWER


def test_illegal_events_are_refused_with_a_reason():
    cluster = RefinementCluster(ClusterConfig(refinement=True), seed=1)
    with pytest.raises(IllegalEvent, match="cannot restart"):
        cluster.restart("b1")
    cluster.crash("b1")
    with pytest.raises(IllegalEvent, match="cannot crash"):
        cluster.crash("b1")
    with pytest.raises(IllegalEvent, match="is a client"):
        cluster.crash("p1")


def test_each_driver_refuses_the_other_ones_configuration():
    with pytest.raises(ValueError, match="RefinementCluster"):
        Cluster(ClusterConfig(refinement=True), seed=1)
    with pytest.raises(ValueError, match="refinement=True"):
        RefinementCluster(ClusterConfig(), seed=1)
    cluster = RefinementCluster(ClusterConfig(refinement=True), seed=1)
    assert [cluster.broker_id(name) for name in cluster.broker_names.values()] == [1, 2, 3]
    with pytest.raises(IllegalEvent, match="no broker"):
        cluster.broker_id(CONTROLLER)


def test_refinement_mode_round_trips_fail_cleanly_across_a_partition():
    cluster = RefinementCluster(ClusterConfig(refinement=True), seed=1)
    cluster.tick_controller()
    for envelope in cluster.deliverable():
        cluster.deliver(envelope.seq)
    cluster.partition([("b2", "b1")])
    assert not cluster.replica_fetch(2), "no half round trips"
    cluster.heal()
    assert cluster.replica_fetch(2)
    assert cluster.stats["sync_Fetch"] == 1


def test_a_crash_preview_is_what_the_restart_recovers():
    config = ClusterConfig(refinement=True, min_insync_replicas=1)
    cluster = RefinementCluster(config, seed=2)
    cluster.tick_controller()
    for envelope in cluster.deliverable():
        cluster.deliver(envelope.seq)
    for _ in range(3):
        cluster.raw_produce(1)
        cluster.deliver(cluster.deliverable()[0].seq)
    files = dict(cluster.unflushed_files(1))
    cluster.crash("b1", torn={path: n // 2 for path, n in files.items()})
    preview = cluster.ghost.down[1]
    cluster.tick_controller()
    cluster.restart("b1")
    replica = replica_of(cluster, 1)
    entries, hw = preview[("t", 0)]
    assert [(o, e) for o, e, _, _ in replica.log.entries()] == entries
    assert replica.hw == hw
    assert 0 < len(entries) < 3, "a torn tail: some but not all records survived"


def test_the_topic_spreads_its_preferred_leaders_unless_an_assignment_is_given():
    from impl.coordination import round_robin_replicas

    assert [round_robin_replicas((1, 2, 3), p) for p in range(4)] == [
        (1, 2, 3),
        (2, 3, 1),
        (3, 1, 2),
        (1, 2, 3),
    ]
    spread = Cluster(ClusterConfig(partitions=3), 1)
    spread.run_until(seconds(2))
    assert [spread.store.partitions[("t", p)].leader for p in range(3)] == [1, 2, 3]
    given = Cluster(ClusterConfig(partitions=2, replica_assignment=((3, 1, 2), (3, 2, 1))), 1)
    given.run_until(seconds(2))
    assert [given.store.partitions[("t", p)].leader for p in range(2)] == [3, 3]


def test_a_stalled_controller_channel_holds_its_requests_until_released():
    # The controller (b1) moves t-0's leadership to b2 while its channel to b3 is stalled:
    # b3 goes on following b1 in the old epoch until the release delivers the held
    # requests, in order.
    cluster = Cluster(ClusterConfig(partitions=1), 1)
    cluster.run_until(seconds(2))
    assert cluster.store.controller == 1
    before = replica_of(cluster, 3).leader_epoch
    cluster.stall_channel("b1", "b3")
    assert cluster.reassign(0, (2, 1, 3)) == "NONE"
    assert cluster.preferred_election(0) == 1
    cluster.run_until(cluster.clock.now + seconds(2))
    state = cluster.store.partitions[("t", 0)]
    assert state.leader == 2 and state.leader_epoch > before
    assert replica_of(cluster, 3).leader_epoch == before, "b3 heard nothing"
    assert replica_of(cluster, 1).leader == 2, "the other brokers did"
    cluster.release_channel("b1", "b3")
    cluster.run_until(cluster.clock.now + ms(500))
    stale = replica_of(cluster, 3)
    assert (stale.leader, stale.leader_epoch) == (2, state.leader_epoch)


def test_the_log_end_offset_gauge_reads_a_running_brokers_replica_only():
    # What an operator reads from each broker's LogEndOffset metric: the replica's LEO;
    # nothing from a broker that is down, or for a partition it does not host.
    cluster = Cluster(ClusterConfig(partitions=1), 1)
    cluster.run_until(seconds(2))
    for i in range(3):
        cluster.client_send("p1", None, str(i).encode())
        cluster.run_until(cluster.clock.now + ms(100))
    assert [cluster.log_end_offset(b, 0) for b in (1, 2, 3)] == [3, 3, 3]
    assert cluster.log_end_offset(1, 5) is None
    cluster.crash("b2")
    assert cluster.log_end_offset(2, 0) is None
