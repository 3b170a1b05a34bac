"""The controller as a broker's role in the running simulation (``impl.world``,
``impl.controller``, ``impl.coordination``): failover by election, the zombie a pause or a
cut from the store leaves behind (a brain split), and the two fences that make it harmless,
each shown to matter by turning it off (``ClusterConfig.bugs``)."""

from __future__ import annotations

import pytest

from impl.cluster import Cluster, ClusterConfig
from impl.coordination import STORE
from impl.sim.clock import ms
from jepsen_py.runner import ConfigError, TestConfig

SECOND = ms(1000)


def started(**config) -> Cluster:
    cluster = Cluster(ClusterConfig(**config), seed=3)
    cluster.run_until(2 * SECOND)
    assert cluster.store.controller == 1, "b1, the first broker started, won the race"
    return cluster


def cut_from_store(cluster: Cluster, node: str) -> None:
    cluster.partition([(node, STORE), (STORE, node)])


def test_the_first_broker_started_is_the_controller_with_epoch_1() -> None:
    cluster = started()
    assert cluster.store.controller_epoch == 1 and set(cluster.controllers) == {1}
    assert all(b.controller_epoch == 1 for b in cluster.brokers.values() if b is not None)


def test_a_paused_controller_is_replaced_by_election_and_wakes_up_a_zombie() -> None:
    cluster = started()
    cluster.pause("b1")
    cluster.run_until(10 * SECOND)
    holder = cluster.store.controller
    assert holder in (2, 3) and cluster.store.controller_epoch == 2, cluster.describe()
    assert set(cluster.controllers) == {1, holder}, "b1 still believes it is the controller"
    assert cluster.stats["brain_splits"] == 1
    cluster.resume("b1")
    cluster.run_until(12 * SECOND)
    assert set(cluster.controllers) == {holder}, "the zombie learnt it and resigned"
    assert cluster.stats["controller_resignations"] == 1
    assert cluster.store.partitions[("t", 0)].leader != 1, "b1's leadership failed over"


def test_killing_the_controller_fails_over_by_election() -> None:
    cluster = started()
    cluster.crash("b1")
    cluster.run_until(10 * SECOND)
    assert cluster.store.controller in (2, 3) and cluster.store.controller_epoch == 2
    cluster.restart("b1")
    cluster.run_until(14 * SECOND)
    assert cluster.store.controller in (2, 3), "a restart does not take the role back"
    assert cluster.brokers[1] is not None and cluster.brokers[1].controller_epoch == 2


def zombie_after_a_cut(**config) -> Cluster:
    """b1 (controller and leader) is cut off from the store for 10 s, then healed."""
    cluster = started(**config)
    cut_from_store(cluster, "b1")
    cluster.run_until(12 * SECOND)
    assert cluster.store.controller in (2, 3), "the brokers elected another controller"
    assert 1 in cluster.controllers, "b1, cut off, has not noticed"
    cluster.heal()
    cluster.run_until(16 * SECOND)
    return cluster


def test_a_zombie_cut_off_from_the_store_has_its_write_refused_and_resigns() -> None:
    cluster = zombie_after_a_cut()
    assert 1 not in cluster.controllers
    figures = cluster.controller_figures()
    assert figures["stale_controller_rejected"] == figures["stale_controller_applied"] == 0
    assert cluster.store.partitions[("t", 0)].leader_epoch == 1, "one failover, one write"


def test_without_the_store_fence_the_zombie_writes_over_its_successor() -> None:
    cluster = zombie_after_a_cut(bugs={"unconditional_write"})
    assert cluster.stats["zombie_writes"] > 0, "the store took a write from a zombie"
    assert 1 not in cluster.controllers, "it resigned once it found its session expired"


def paused_right_after_a_write(**config) -> Cluster:
    """b3 dies; b1, the controller, writes the failover and is paused (a long GC) before
    its send threads deliver the LeaderAndIsr; b2 is elected; then b1 wakes up."""
    cluster = started(**config)
    cluster.crash("b3")
    epoch = cluster.store.partitions[("t", 0)].leader_epoch
    for _ in range(4000):  # the session of b3 expires after 6 s
        cluster.run_until(cluster.clock.now + ms(5))
        if cluster.store.partitions[("t", 0)].leader_epoch != epoch:
            break
    assert cluster.controllers[1].outbox, "the write's requests wait for the send threads"
    cluster.pause("b1")
    cluster.run_until(cluster.clock.now + 10 * SECOND)
    assert cluster.store.controller == 2
    cluster.resume("b1")
    cluster.run_until(cluster.clock.now + 2 * SECOND)
    assert 1 not in cluster.controllers, "the zombie resigned"
    return cluster


def test_a_zombies_queued_requests_arrive_after_its_successors_and_are_rejected() -> None:
    cluster = paused_right_after_a_write()
    assert cluster.store.controller_epoch == 2
    figures = cluster.controller_figures()
    assert figures["brain_splits"] == 1
    assert figures["stale_controller_rejected"] > 0, figures
    assert figures["stale_controller_applied"] == 0


def test_without_the_broker_fence_brokers_apply_the_zombies_requests() -> None:
    cluster = paused_right_after_a_write(bugs={"accept_stale_controller_epoch"})
    figures = cluster.controller_figures()
    assert figures["stale_controller_applied"] > 0, figures
    assert figures["stale_controller_rejected"] == 0
    assert cluster.brokers[2] is not None and cluster.brokers[2].controller_epoch == 1, (
        "b2 went back to the zombie's controller epoch"
    )


def test_an_unpersisted_epoch_gives_the_zombie_the_same_epoch_as_its_successor() -> None:
    cluster = paused_right_after_a_write(bugs={"epoch_not_persisted"})
    assert cluster.store.controller_epoch == 1, "the successor started again at 1"
    assert cluster.stats["controller_elections"] == 2
    figures = cluster.controller_figures()
    assert figures["stale_controller_rejected"] == 0, "the brokers cannot tell them apart"
    assert figures["shared_epoch_writes"] > 0, "two controllers wrote in epoch 1"
    assert paused_right_after_a_write().controller_figures()["shared_epoch_writes"] == 0


def test_unknown_fence_bugs_are_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="accept_stale_controller_epoch"):
        ClusterConfig(bugs={"no_such_fence"})
    with pytest.raises(ConfigError, match="unconditional_write"):
        TestConfig(bugs=("typo",))


def test_the_store_is_neither_killed_nor_paused() -> None:
    from impl.world import IllegalEvent

    cluster = started()
    with pytest.raises(IllegalEvent, match="coordination store"):
        cluster.crash(STORE)
    with pytest.raises(IllegalEvent, match="coordination store"):
        cluster.pause(STORE)


def test_kmodel_test_offers_the_spec_bug_names_and_reproduces_them() -> None:
    from click.testing import CliRunner

    from jepsen_py.cli import main
    from jepsen_py.runner.config import reproduce_command
    from spec.controller import BUGS

    help_text = CliRunner().invoke(main, ["test", "--help"]).output
    for name in ("accept_stale_controller_epoch", "unconditional_write", "epoch_not_persisted"):
        assert name in help_text and name in BUGS, name
    config = TestConfig(bugs=("accept_stale_controller_epoch",))
    assert "--bug accept_stale_controller_epoch" in reproduce_command(config, 31)
    assert TestConfig.from_json(config.to_json()) == config


def test_the_injector_finds_a_broker_applying_a_zombies_request_at_seed_31(tmp_path) -> None:
    """Under every fault, seed 31 pauses the controller between a write and its send
    threads: with both fences on the brokers reject the zombie's request; with the broker
    fence off it is applied. The history stays valid either way (docs/controller.md). (The
    zombie's session has expired: b2's new registration no longer fires its watch, so it
    no longer sends b2 two more requests to reject.)"""
    from click.testing import CliRunner

    from jepsen_py.cli import main

    base = ["test", "--nemesis", "all", "--seed", "31", "--no-reports", "--store", str(tmp_path)]
    fenced = CliRunner().invoke(main, base)
    assert fenced.exit_code == 0, fenced.output
    assert "zombie requests rejected 1 / applied 0" in fenced.output
    unfenced = CliRunner().invoke(main, [*base, "--bug", "accept_stale_controller_epoch"])
    assert unfenced.exit_code == 0, unfenced.output
    assert "zombie requests rejected 0 / applied 1" in unfenced.output


def test_a_leader_and_isr_lost_to_a_partition_is_sent_again_after_the_heal() -> None:
    """b2 dies while the controller b1 is cut off from b3: the ISR change the controller
    decides (a new leader epoch) never reaches b3, which goes on fetching in the old epoch
    and is fenced (FENCED_LEADER_EPOCH), out of the ISR. After the heal, the request
    unanswered for ``ControllerConfig.resend_after_ns`` is sent again and b3 catches up, as
    Kafka's ``RequestSendThread`` retries it; without the retry b3 stays in epoch 0."""
    cluster = Cluster(ClusterConfig(partitions=2), seed=3)
    cluster.run_until(2 * SECOND)
    cluster.partition([("b1", "b3"), ("b3", "b1")])
    cluster.crash("b2")
    cluster.run_until(12 * SECOND)
    epochs = {key: state.leader_epoch for key, state in cluster.store.partitions.items()}
    b3 = cluster.brokers[3]
    assert b3 is not None
    assert all(epochs[key] == 1 for key in b3.replicas), cluster.describe()
    assert all(r.leader_epoch == 0 for r in b3.replicas.values()), "the request was lost"
    cluster.heal()
    cluster.run_until(16 * SECOND)  # the ISR change was sent at about 7.5 s
    assert all(r.leader_epoch == 0 for r in b3.replicas.values()), "not before the resend"
    cluster.run_until(30 * SECOND)
    assert all(r.leader_epoch == epochs[key] for key, r in b3.replicas.items())
    assert all(3 in cluster.store.partitions[key].isr for key in b3.replicas), "back in sync"
