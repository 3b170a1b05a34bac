"""The controller and its metadata store (``impl.controller``): elections, failure
handling by missed heartbeats on the logical clock, conditional ISR changes, registration
fencing, controller epochs."""

from __future__ import annotations

from impl.controller import Controller, ControllerConfig, MetadataStore
from impl.protocol import (
    NO_LEADER,
    AlterPartition,
    AlterPartitionResponse,
    BrokerHeartbeat,
    BrokerHeartbeatResponse,
    BrokerRegistration,
    BrokerRegistrationResponse,
    Errors,
    LeaderAndIsr,
    MetadataRequest,
    MetadataResponse,
    Published,
)
from impl.sim.clock import ms

KEY = ("t", 0)


TIMEOUT = ms(600)


def setup(brokers=(1, 2, 3), unclean=False, timeout=TIMEOUT) -> tuple[MetadataStore, Controller]:
    store = MetadataStore()
    store.create_partition("t", 0, tuple(brokers))
    controller = Controller(
        store, ControllerConfig(session_timeout_ns=timeout, unclean_leader_election=unclean), 0
    )
    for b in brokers:
        controller.step(f"b{b}", BrokerRegistration(b, 0), 0)
    return store, controller


def state(store):
    p = store.partitions[KEY]
    return (p.leader_epoch, p.leader, set(p.isr))


def sent(effects, kind=LeaderAndIsr):
    return [(dst, m) for dst, m in effects.sends if isinstance(m, kind)]


def test_the_first_election_picks_the_first_isr_member_and_tells_every_live_replica():
    store, controller = setup()
    out = controller.tick(0)
    assert state(store) == (0, 1, {1, 2, 3})
    assert [n for n in out.notes if isinstance(n, Published)] == [
        Published("t", 0, 0, 1, frozenset({1, 2, 3}))
    ]
    assert [dst for dst, _ in sent(out)] == ["b1", "b2", "b3"]
    assert {m.broker_epoch for _, m in sent(out)} == {1, 2, 3}, "each its own broker epoch"
    assert not controller.tick(0).notes, "nothing more to decide"


def test_missed_heartbeats_end_a_session_and_a_failed_leader_is_replaced_in_one_write():
    store, controller = setup()
    controller.tick(0)
    for t in (ms(300), ms(600)):
        for b in (2, 3):
            controller.step(f"b{b}", BrokerHeartbeat(b, store.registrations[b]), t)
    assert state(store)[1] == 1
    controller.tick(ms(650))
    assert 1 not in store.registrations, "b1 sent no heartbeat for 600ms"
    assert state(store) == (1, 2, {2, 3}), "failover: new leader and shrunk ISR at once"


def test_one_decision_per_tick():
    store, controller = setup()
    controller.tick(0)
    store.close_session(2)
    store.close_session(3)
    controller.tick(0)
    assert state(store) == (1, 1, {1, 3})
    controller.tick(0)
    assert state(store) == (2, 1, {1})
    controller.tick(0)
    assert state(store) == (2, 1, {1}), "the last ISR member is never removed"


def test_a_sole_isr_leader_failing_leaves_the_partition_leaderless_until_unclean_election():
    for unclean in (False, True):
        store, controller = setup(unclean=unclean)
        controller.tick(0)
        store.close_session(2)
        store.close_session(3)
        controller.tick(0)
        controller.tick(0)
        controller.step("b2", BrokerRegistration(2, 1), 0)  # b2 back: out of the ISR
        store.close_session(1)
        controller.tick(0)
        assert state(store) == (3, NO_LEADER, {1})
        controller.tick(0)
        if unclean:
            assert state(store) == (4, 2, {2}), "the out-of-sync b2 leads, alone"
        else:
            assert state(store) == (3, NO_LEADER, {1})


def test_a_broker_may_register_again_only_once_its_failure_is_handled():
    store, controller = setup()
    controller.tick(0)
    store.close_session(1)
    out = controller.step("b1", BrokerRegistration(1, 1), 0)
    [(_, answer)] = [(d, m) for d, m in out.sends if isinstance(m, BrokerRegistrationResponse)]
    assert answer.error is Errors.DUPLICATE_BROKER_REGISTRATION
    controller.tick(0)  # failover
    out = controller.step("b1", BrokerRegistration(1, 1), 0)
    answers = [m for _, m in out.sends if isinstance(m, BrokerRegistrationResponse)]
    assert answers[0].error is Errors.NONE and answers[0].broker_epoch == 4
    [(_, request)] = sent(out)
    assert (request.leader_epoch, request.leader, request.broker_epoch) == (1, 2, 4)


def test_a_heartbeat_from_an_old_registration_is_answered_stale():
    _, controller = setup()
    out = controller.step("b1", BrokerHeartbeat(1, 99), 0)
    [(_, answer)] = [(d, m) for d, m in out.sends if isinstance(m, BrokerHeartbeatResponse)]
    assert answer.error is Errors.STALE_BROKER_EPOCH


def alter(store, broker, isr, *, leader_epoch=None, partition_epoch=None, broker_epoch=None):
    p = store.partitions[KEY]
    return AlterPartition(
        broker_id=broker,
        broker_epoch=store.registrations.get(broker, -1) if broker_epoch is None else broker_epoch,
        topic="t",
        partition=0,
        leader_epoch=p.leader_epoch if leader_epoch is None else leader_epoch,
        partition_epoch=p.partition_epoch if partition_epoch is None else partition_epoch,
        new_isr=frozenset(isr),
        request_id=1,
    )


def answer(controller, request) -> AlterPartitionResponse:
    [(_, response)] = controller.step("b", request, 0).sends
    assert isinstance(response, AlterPartitionResponse)
    return response


def test_isr_changes_are_accepted_only_from_the_current_leader_epoch_and_version():
    store, controller = setup()
    controller.tick(0)
    assert answer(controller, alter(store, 2, {1, 2})).error is Errors.FENCED_LEADER_EPOCH
    replayed = alter(store, 1, {1, 2})
    stale_version = alter(store, 1, {1, 2}, partition_epoch=0)
    assert answer(controller, stale_version).error is Errors.INVALID_UPDATE_VERSION
    ok = answer(controller, alter(store, 1, {1, 2}))
    assert ok.error is Errors.NONE and ok.isr == frozenset({1, 2})
    assert state(store) == (0, 1, {1, 2}), "an ISR change is no new leader epoch"
    assert answer(controller, replayed).error is Errors.INVALID_UPDATE_VERSION, "one change"
    wrong_registration = alter(store, 1, {1}, broker_epoch=77)
    assert answer(controller, wrong_registration).error is Errors.STALE_BROKER_EPOCH
    store.close_session(3)
    assert answer(controller, alter(store, 1, {1, 2, 3})).error is Errors.INELIGIBLE_REPLICA


def test_a_new_controller_has_a_newer_epoch_and_resends_what_was_published():
    store, controller = setup()
    controller.tick(0)
    answer(controller, alter(store, 1, {1, 2}))
    successor = Controller(store, controller.config, ms(10))
    assert successor.epoch == controller.epoch + 1
    resent = sent(successor.resend_all())
    assert {m.isr for _, m in resent} == {frozenset({1, 2, 3})}, "the published request"
    assert {m.controller_epoch for _, m in resent} == {successor.epoch}


def test_preferred_leader_election_moves_leadership_back_to_the_first_replica():
    store, controller = setup()
    controller.tick(0)
    store.close_session(1)
    controller.tick(0)
    assert state(store) == (1, 2, {2, 3})
    controller.step("b1", BrokerRegistration(1, 1), 0)
    assert not controller.elect_preferred(0).notes, "b1 is not in the ISR"
    answer(controller, alter(store, 2, {1, 2, 3}))
    controller.elect_preferred(0)
    assert state(store) == (2, 1, {1, 2, 3})


def test_metadata_names_the_leader_and_epoch():
    _, controller = setup()
    controller.tick(0)
    [(_, response)] = controller.step("p1", MetadataRequest("t", 5), 0).sends
    assert isinstance(response, MetadataResponse)
    [p] = response.partitions
    assert (p.partition, p.leader, p.leader_epoch) == (0, 1, 0)
