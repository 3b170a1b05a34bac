"""Topic administration and the removal of replicas in the implementation: ``DeleteTopics``,
``StopReplica`` with ``delete`` (to the replicas a KIP-455 reassignment removed and to every
replica of a deleted topic, retried until each confirms, also across a restart of the
broker), and a new reassignment target replacing the one in progress (KIP-455)."""

from __future__ import annotations

import pytest

from impl.broker import partition_dir
from impl.cluster import Cluster, ClusterConfig
from impl.controller import Controller, ControllerConfig, MetadataStore
from impl.protocol import (
    EPOCH_DURING_DELETE,
    NO_LEADER,
    BrokerRegistration,
    Errors,
    StopReplica,
    StopReplicaResponse,
)
from impl.sim.clock import ms


def setup(**knobs) -> tuple[MetadataStore, Controller]:
    """Partition t-0 on brokers 1, 2 (b1 leads, both in the ISR); brokers 1-4 registered;
    broker 1 the controller."""
    store = MetadataStore(ms(600))
    store.create_partition("t", 0, (1, 2))
    for b in (1, 2, 3, 4):
        store.step(f"b{b}", BrokerRegistration(b, 0), 0)
    controller = Controller.elect(store, ControllerConfig(**knobs), 1, store.registrations[1])
    assert controller is not None
    controller.tick(0)
    assert store.partitions[("t", 0)].leader == 1
    return store, controller


def stop_replicas(effects) -> list[tuple[str, StopReplica]]:
    return [(dst, m) for dst, m in effects.sends if isinstance(m, StopReplica)]


def test_a_new_target_replaces_the_running_reassignment_against_the_original_replicas():
    store, controller = setup()
    key = ("t", 0)
    assert controller.alter_reassignment(key, (1, 3)).name == "NONE"
    state = store.partitions[key]
    assert (state.replicas, state.adding, state.removing) == ((1, 3, 2), {3}, {2})
    # Replaced before b3 caught up: b4 instead of b3. Computed against the original
    # replicas (1, 2), so b2 is still being removed and b3, no longer wanted, is dropped.
    assert controller.alter_reassignment(key, (1, 4)).name == "NONE"
    state = store.partitions[key]
    assert (state.replicas, state.adding, state.removing) == ((1, 4, 2), {4}, {2})
    assert store.pending_deletions == {key: frozenset({3})}
    sent = stop_replicas(controller.tick(0))
    assert [(dst, m.delete) for dst, m in sent] == [("b3", True)], "b3 deletes its log"
    # Replaced again by the original replicas: nothing to add or remove, b4 dropped.
    assert controller.alter_reassignment(key, (1, 2)).name == "NONE"
    state = store.partitions[key]
    assert (state.replicas, state.reassigning) == ((1, 2), False)
    assert store.pending_deletions[key] == {3, 4}


def test_a_replacement_that_drops_the_leader_hands_leadership_to_an_isr_member():
    store, controller = setup()
    key = ("t", 0)
    assert controller.alter_reassignment(key, (3, 2)).name == "NONE"
    # Suppose b3 joined the ISR and took leadership before b1 was dropped.
    state = store.partitions[key]
    store.partitions[key] = state.__class__(
        3, state.leader_epoch + 1, frozenset({1, 2, 3}), state.partition_epoch + 1,
        state.replicas, adding=state.adding, removing=state.removing,
    )  # fmt: skip
    controller.context[key] = store.partitions[key]
    # The new target gives up b3 (the leader) and keeps the original (1, 2).
    assert controller.alter_reassignment(key, (1, 2)).name == "NONE"
    state = store.partitions[key]
    assert state.leader == 1 and state.isr == {1, 2} and not state.reassigning
    # b3 leads alone (b1 and b2 fell out of the ISR): giving b3 up leaves nobody to lead.
    store2, controller2 = setup()
    assert controller2.alter_reassignment(key, (3, 2)).name == "NONE"
    state = store2.partitions[key]
    store2.partitions[key] = state.__class__(
        3, state.leader_epoch + 1, frozenset({3}), state.partition_epoch + 1,
        state.replicas, adding=state.adding, removing=state.removing,
    )  # fmt: skip
    controller2.context[key] = before = store2.partitions[key]
    assert controller2.alter_reassignment(key, (4,)).name == "INELIGIBLE_REPLICA"
    assert store2.partitions[key] == before and not store2.pending_deletions


def test_a_completed_reassignment_deletes_the_removed_replicas_log():
    cluster = Cluster(ClusterConfig(partitions=1), seed=1)
    cluster.run_until(ms(3_000))
    state = cluster.store.partitions[("t", 0)]
    keep = state.leader
    other, gone = (b for b in state.replicas if b != keep)
    assert cluster.brokers[gone].disk.list_dir(partition_dir("t", 0)), "it has a log"
    assert cluster.reassign(0, (keep, other)) == "NONE"  # replication factor 3 -> 2
    cluster.run_until(ms(10_000))
    state = cluster.store.partitions[("t", 0)]
    assert state.replicas == (keep, other) and not state.reassigning
    assert not cluster.store.pending_deletions, "the removed replica confirmed"
    broker = cluster.brokers[gone]
    assert ("t", 0) not in broker.replicas
    assert broker.disk.list_dir(partition_dir("t", 0)) == [], "its log is gone"


def test_deleting_a_topic_reaches_a_broker_that_was_down_and_only_then_allows_recreation():
    cluster = Cluster(ClusterConfig(partitions=2), seed=2)
    cluster.run_until(ms(3_000))
    assert cluster.add_partitions(1, topic="other") == [0]
    cluster.run_until(ms(5_000))
    controller = cluster.controller
    assert controller is not None
    down = next(b for b in (1, 2, 3) if b != controller.broker_id)
    cluster.crash(f"b{down}")
    assert cluster.delete_topic("other") == "NONE"
    assert cluster.delete_topic("other") == "UNKNOWN_TOPIC_OR_PARTITION"
    assert ("other", 0) not in cluster.store.partitions
    cluster.run_until(ms(9_000))
    assert cluster.store.pending_deletions == {("other", 0): frozenset({down})}
    assert cluster.add_partitions(1, topic="other") == [], "still marked for deletion"
    for b in (1, 2, 3):
        if b != down:
            assert cluster.brokers[b].disk.list_dir(partition_dir("other", 0)) == []
    cluster.restart(f"b{down}")
    cluster.run_until(ms(20_000))
    assert not cluster.store.pending_deletions, "deleted once it registered again"
    assert cluster.brokers[down].disk.list_dir(partition_dir("other", 0)) == []
    assert cluster.add_partitions(1, topic="other") == [0], "a new topic of the same name"
    cluster.run_until(ms(24_000))
    assert cluster.store.partitions[("other", 0)].leader != NO_LEADER


def test_delete_topic_enable_false_refuses_deletion():
    store, controller = setup(delete_topic_enable=False)
    assert controller.delete_topic("t").name == "TOPIC_DELETION_DISABLED"
    assert ("t", 0) in store.partitions


def test_a_stop_replica_from_a_stale_controller_or_for_an_older_epoch_is_refused():
    cluster = Cluster(ClusterConfig(partitions=1), seed=1)
    cluster.run_until(ms(3_000))
    state = cluster.store.partitions[("t", 0)]
    follower = next(b for b in state.replicas if b != state.leader)
    broker = cluster.brokers[follower]
    assert broker.broker_epoch is not None
    stale = StopReplica(0, broker.broker_epoch, "t", 0, EPOCH_DURING_DELETE, True)
    assert broker.controller_epoch > 0
    effects = broker.step("b9", stale, 0)
    assert not effects.sends and ("t", 0) in broker.replicas, "STALE_CONTROLLER_EPOCH"
    older = StopReplica(
        broker.controller_epoch, broker.broker_epoch, "t", 0, state.leader_epoch - 1, True
    )
    effects = broker.step("b9", older, 0)
    (answer,) = [m for _, m in effects.sends if isinstance(m, StopReplicaResponse)]
    assert answer.error.name == "FENCED_LEADER_EPOCH" and ("t", 0) in broker.replicas


def test_the_controller_asks_at_once_and_again_on_registration_then_on_its_retry_timer():
    store, controller = setup()
    store.create_partition("u", 0, (2, 3))
    controller.context[("u", 0)] = store.partitions[("u", 0)]
    controller.tick(0)
    store.close_session(3)  # b3 is gone when the topic is deleted
    assert controller.delete_topic("u").name == "NONE"
    sent = stop_replicas(controller.tick(0))
    assert [(dst, m.leader_epoch) for dst, m in sent] == [("b2", EPOCH_DURING_DELETE)]
    controller.step("b2", StopReplicaResponse(2, "u", 0, Errors.NONE), 0)
    assert store.pending_deletions == {("u", 0): frozenset({3})}
    store.step("b3", BrokerRegistration(3, 0), 0)  # b3 is back: asked on registration
    assert [dst for dst, _ in stop_replicas(controller.tick(ms(1)))] == ["b3"]
    assert stop_replicas(controller.tick(ms(2))) == [], "not again before the retry timer"
    retry = ControllerConfig().stop_replica_retry_ns
    assert [dst for dst, _ in stop_replicas(controller.tick(retry + ms(10)))] == ["b3"]
    controller.step("b3", StopReplicaResponse(3, "u", 0, Errors.NONE), 0)
    assert not store.pending_deletions and not store.deleting("u")


@pytest.mark.parametrize("auto", [True, False])
def test_auto_leader_rebalance_gives_leadership_back_to_the_preferred_replica(auto: bool):
    config = ClusterConfig(
        partitions=1,
        auto_leader_rebalance=auto,
        leader_imbalance_check_interval_ns=ms(5_000),
    )
    cluster = Cluster(config, seed=4)
    cluster.run_until(ms(3_000))
    assert cluster.add_partitions(3, topic="u") == [0, 1, 2]  # preferred replicas rotate
    cluster.run_until(ms(5_000))
    controller = cluster.controller
    assert controller is not None
    key = next(
        k
        for k, s in sorted(cluster.store.partitions.items())
        if s.replicas[0] != controller.broker_id
    )
    preferred = cluster.store.partitions[key].replicas[0]
    assert cluster.store.partitions[key].leader == preferred
    cluster.crash(f"b{preferred}")
    cluster.run_until(ms(30_000))  # past the broker's session timeout
    assert cluster.store.partitions[key].leader not in (preferred, NO_LEADER)
    cluster.restart(f"b{preferred}")
    cluster.run_until(ms(70_000))
    state = cluster.store.partitions[key]
    assert preferred in state.isr, "caught up and back in the ISR"
    assert (state.leader == preferred) is auto


def test_the_auto_rebalance_flags_reach_the_controller_and_the_reproduce_command():
    from jepsen_py.runner.config import TestConfig, reproduce_command

    config = TestConfig(
        auto_leader_rebalance=True, leader_imbalance_pct=20, leader_imbalance_check_ns=ms(7_000)
    )
    controller = config.cluster_config().controller_config()
    assert controller.auto_leader_rebalance
    assert controller.leader_imbalance_per_broker_percentage == 20
    assert controller.leader_imbalance_check_interval_ns == ms(7_000)
    command = reproduce_command(config, 3)
    assert (
        "--auto-leader-rebalance --leader-imbalance-pct 20 --leader-imbalance-check 7s" in command
    )
    with pytest.raises(ValueError, match="percentage"):
        TestConfig(leader_imbalance_pct=101)
