"""KIP-966 Eligible Leader Replicas in the implementation (``impl.elr``, the controller and
the store with ``eligible_leader_replicas`` on; ``kmodel test --elr``)."""

from __future__ import annotations

import attrs

from impl.controller import Controller, ControllerConfig, MetadataStore
from impl.elr import elect, elr_after, isr_without, unclean_restart
from impl.protocol import NO_LEADER, AlterPartition, BrokerRegistration
from impl.sim.clock import ms
from jepsen_py.runner.run import run_test
from jepsen_py.scenarios import LAST_REPLICA_STANDING

KEY = ("t", 0)


def setup(elr=True, stale=False) -> tuple[MetadataStore, Controller]:
    store = MetadataStore(ms(600), eligible_leader_replicas=elr, keep_elr_on_unclean_restart=stale)
    store.create_partition("t", 0, (1, 2, 3))
    for b in (1, 2, 3):
        store.step(f"b{b}", BrokerRegistration(b, 0), 0)
    config = ControllerConfig(eligible_leader_replicas=elr, min_insync_replicas=2)
    controller = Controller.elect(store, config, 1, store.registrations[1])
    assert controller is not None
    controller.tick(0)
    return store, controller


def state(store):
    p = store.partitions[KEY]
    return p.leader, set(p.isr), set(p.elr)


def shrink_to_leader(store: MetadataStore, controller: Controller) -> None:
    """b1, the leader, shrinks the ISR to itself (AlterPartition)."""
    p = store.partitions[KEY]
    request = AlterPartition(
        1, store.registrations[1], "t", 0, p.leader_epoch, p.partition_epoch, frozenset({1}), 7
    )
    controller.step("b1", request, 0)


def test_elr_rules():
    assert elr_after(frozenset(), frozenset({1, 2, 3}), frozenset({1}), (1, 2, 3), 2) == {2, 3}
    assert elr_after(frozenset({2, 3}), frozenset({1}), frozenset({1, 2}), (1, 2, 3), 2) == set()
    assert isr_without(frozenset({1}), 1, 1, enabled=False) == {1}
    assert isr_without(frozenset({1}), 1, 1, enabled=True) == set()
    live = {2, 3}.__contains__
    assert elect((1, 2, 3), frozenset(), frozenset({1, 2, 3}), live) == (2, {2}, {1, 3})
    assert elect((1, 2, 3), frozenset({1}), frozenset(), live)[0] == NO_LEADER
    assert unclean_restart(NO_LEADER, frozenset(), frozenset({1, 2}), 1, False)[2] == {2}
    assert unclean_restart(NO_LEADER, frozenset(), frozenset({1, 2}), 1, True)[2] == {1, 2}


def test_replicas_leaving_the_isr_below_min_isr_join_the_elr_and_are_elected_from_it():
    store, controller = setup()
    shrink_to_leader(store, controller)
    assert state(store) == (1, {1}, {2, 3})
    store.close_session(1)  # the last ISR member fails
    controller.tick(0)
    assert state(store) == (NO_LEADER, set(), {1, 2, 3}), "the ISR may empty"
    controller.tick(0)
    assert state(store) == (2, {2}, {1, 3}), "clean election from the ELR"


def test_without_elr_the_last_replica_stands_and_is_elected_again():
    store, controller = setup(elr=False)
    shrink_to_leader(store, controller)
    assert state(store) == (1, {1}, set())
    store.close_session(1)
    controller.tick(0)
    assert state(store) == (NO_LEADER, {1}, set())
    store.step("b1", BrokerRegistration(1, 1), 0)
    controller.tick(0)
    assert state(store)[0] == 1, "the restarted b1 leads again, whatever it lost"


def test_a_broker_registering_again_leaves_the_elr_unless_stale_elr():
    for stale in (False, True):
        store, controller = setup(stale=stale)
        shrink_to_leader(store, controller)
        store.close_session(1)
        store.close_session(2)
        store.close_session(3)
        for _ in range(3):
            controller.tick(0)
        assert state(store) == (NO_LEADER, set(), {1, 2, 3})
        store.step("b1", BrokerRegistration(1, 1), 0)  # b1 back after an unclean shutdown
        controller.tick(0)
        if stale:
            assert state(store) == (1, {1}, {2, 3}), "stale_elr: b1 elected from the ELR"
        else:
            assert state(store) == (NO_LEADER, set(), {2, 3}), "b1 is no longer eligible"


def test_a_sole_isr_member_may_register_again_only_once_it_left_the_isr():
    store, _ = setup()
    p = store.partitions[KEY]
    store.partitions[KEY] = attrs.evolve(p, isr=frozenset({1}), elr=frozenset({2, 3}))
    assert store.needs_handling(1), "with KIP-966 even the last ISR member's failure is handled"


def test_last_replica_standing_loses_writes_without_elr_and_none_with_it():
    without = run_test(LAST_REPLICA_STANDING, 1, reports=False)
    fixed = run_test(attrs.evolve(LAST_REPLICA_STANDING, elr=True), 1, reports=False)
    assert without.check.lost_writes, "Kafka before 4.0 loses the acknowledged writes"
    assert not fixed.check.lost_writes
    assert fixed.check.valid


def test_the_demo_shows_the_loss_and_its_fix_side_by_side():
    from jepsen_py.demo.faults import demo_runs

    runs = demo_runs(10, 1)
    names = [r.config.name for r in runs]
    i = names.index("last-replica-standing")
    loss, fix = runs[i], runs[i + 1]
    assert loss.expect_loss and not loss.config.elr
    assert not fix.expect_loss and fix.config.elr
    assert attrs.evolve(fix.config, elr=False, name=loss.config.name) == loss.config
