"""The controller role and the coordination store (``impl.controller``,
``impl.coordination``): elections through ``/controller``, failure handling by sessions
expired on the store's clock, conditional ISR changes, registration fencing, controller
epochs, and the store's fence against a zombie controller's writes (KAFKA-6082)."""

from __future__ import annotations

import attrs

from impl.controller import Controller, ControllerConfig, MetadataStore
from impl.coordination import WriteResult
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
    LeaderAndIsrResponse,
    MetadataRequest,
    MetadataResponse,
    Published,
    SessionExpired,
)
from impl.sim.clock import ms

KEY = ("t", 0)


TIMEOUT = ms(600)


def setup(
    brokers=(1, 2, 3), unclean=False, timeout=TIMEOUT, **knobs
) -> tuple[MetadataStore, Controller]:
    """Every broker registered with the store; broker 1 wins the election."""
    store = MetadataStore(timeout)
    store.create_partition("t", 0, tuple(brokers))
    for b in brokers:
        store.step(f"b{b}", BrokerRegistration(b, 0), 0)
    config = ControllerConfig(unclean_leader_election=unclean, **knobs)
    controller = Controller.elect(store, config, 1, store.registrations[1])
    assert controller is not None
    return store, controller


def elect(store, config, broker):
    """``broker`` wins the next election (the store's ``/controller`` must be free)."""
    controller = Controller.elect(store, config, broker, store.registrations[broker])
    assert controller is not None, store.describe()
    return controller


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
            store.step(f"b{b}", BrokerHeartbeat(b, store.registrations[b]), t)
    assert state(store)[1] == 1
    assert store.tick(ms(650)).notes == [SessionExpired(1)], "the store's clock"
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
        store.step("b2", BrokerRegistration(2, 1), 0)  # b2 back: out of the ISR
        store.close_session(1)
        controller.tick(0)
        assert state(store) == (3, NO_LEADER, {1})
        controller.tick(0)
        if unclean:
            assert state(store) == (4, 2, {2}), "the out-of-sync b2 leads, alone"
        else:
            assert state(store) == (3, NO_LEADER, {1})


def test_a_broker_may_register_again_only_once_its_failure_is_handled():
    # b3, not the controller's own broker b1: a controller whose session ended resigns
    # (``test_a_zombie_whose_session_expired_learns_of_no_new_registration``).
    store, controller = setup()
    controller.tick(0)
    store.close_session(3)
    out = store.step("b3", BrokerRegistration(3, 1), 0)
    [(_, answer)] = [(d, m) for d, m in out.sends if isinstance(m, BrokerRegistrationResponse)]
    assert answer.error is Errors.DUPLICATE_BROKER_REGISTRATION
    controller.tick(0)  # b3 leaves the ISR
    out = store.step("b3", BrokerRegistration(3, 1), 0)
    answers = [m for _, m in out.sends if isinstance(m, BrokerRegistrationResponse)]
    assert answers[0].error is Errors.NONE and answers[0].broker_epoch == 4
    # The controller's /brokers/ids watch: the new registration gets the published state.
    [(_, request)] = sent(controller.tick(0))
    assert (request.leader_epoch, request.leader, request.broker_epoch) == (1, 1, 4)


def test_a_heartbeat_from_an_old_registration_is_answered_stale():
    store, _ = setup()
    out = store.step("b1", BrokerHeartbeat(1, 99), 0)
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
    assert not store.elect(2, store.registrations[2]), "/controller exists: NODE_EXISTS"
    store.delete_controller()
    successor = elect(store, controller.config, 2)
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
    store.step("b1", BrokerRegistration(1, 1), 0)
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


def test_the_election_needs_a_live_session_and_the_controller_goes_with_its_session():
    store, controller = setup()
    assert (store.controller, store.controller_epoch, controller.epoch) == (1, 1, 1)
    assert store.close_session(1)
    assert store.controller == NO_LEADER, "/controller is ephemeral"
    assert store.elect(1, 1) is None, "a session that ended cannot win"
    assert elect(store, controller.config, 3).epoch == 2, "first start 1, +1 on re-election"


def test_a_zombie_controllers_write_is_refused_and_it_resigns():
    store, zombie = setup()
    zombie.tick(0)
    store.delete_controller()
    successor = elect(store, zombie.config, 2)
    store.close_session(3)
    out = zombie.tick(0)  # it decides from its context: shrink b3 out of the ISR
    assert zombie.resigned and [n.reason for n in out.notes if hasattr(n, "reason")] == ["moved"]
    assert not sent(out), "nothing was sent for the refused write"
    assert state(store) == (0, 1, {1, 2, 3}), "the store refused it (BADVERSION)"
    successor.tick(0)
    assert state(store) == (1, 1, {1, 2})


def test_a_zombie_whose_session_expired_learns_of_no_new_registration():
    """The ``/brokers/ids`` watch is the session's: a controller whose session expired
    (it has not noticed yet) does not send its stale context to a broker that registered
    since, stamped with that broker's new broker epoch (``onBrokerStartup`` is the live
    controller's)."""
    store, zombie = setup()
    zombie.tick(0)
    store.close_session(1)  # paused past the session timeout: /controller goes with it
    store.close_session(3)
    successor = elect(store, zombie.config, 2)
    successor.tick(0)  # b1's leadership fails over to b2
    successor.tick(0)  # b3 leaves the ISR: its failure is handled
    assert state(store) == (2, 2, {2})
    store.step("b3", BrokerRegistration(3, 1), 0)
    assert [m.leader_epoch for _, m in sent(successor.tick(0))] == [2], "the live one tells b3"
    stale = [m for dst, m in sent(zombie.tick(0)) if dst == "b3"]
    assert not stale, f"the zombie sent b3 its stale context: {stale}"


def test_without_the_store_fence_a_zombie_writes_over_the_new_controller():
    store, zombie = setup(conditional_writes=False)
    zombie.tick(0)
    store.delete_controller()
    successor = elect(store, zombie.config, 2)
    store.close_session(3)
    successor.tick(0)
    assert state(store) == (1, 1, {1, 2})
    store.close_session(2)
    zombie.tick(0)  # its stale context: epoch 0, ISR {1,2,3}; b2 gone
    assert not zombie.resigned
    assert state(store) == (1, 1, {1, 3}), "leader epoch 1 written twice, by two controllers"
    assert (
        store.write(
            KEY, store.partitions[KEY], epoch_version=0, partition_epoch=None, publish=False
        )
        is WriteResult.MOVED
    )


def test_an_unpersisted_epoch_starts_every_controller_at_one():
    store, controller = setup(persist_epoch=False)
    store.delete_controller()
    successor = elect(store, controller.config, 2)
    assert controller.epoch == successor.epoch == 1, "brokers cannot tell them apart"
    assert controller.epoch_version == store.epoch_version, "the zombie passes the check"


def test_a_controller_cut_off_from_the_store_does_nothing():
    store, controller = setup()
    assert not controller.tick(0, connected=False)
    assert state(store)[1] == NO_LEADER
    assert not controller.step("b1", alter(store, 1, {1}), 0, connected=False)


def answered(broker, request, error=Errors.NONE):
    """Broker ``broker``'s LeaderAndIsrResponse to ``request``."""
    return LeaderAndIsrResponse(
        broker,
        request.controller_epoch,
        request.topic,
        request.partition,
        request.leader_epoch,
        error,
    )


def test_an_unanswered_leader_and_isr_is_sent_again_after_the_socket_timeout():
    """``RequestSendThread`` retries a request until it is answered: a LeaderAndIsr lost to
    a partition reaches its broker once the partition heals, or the broker would lead an
    old epoch for ever."""
    _, controller = setup()
    timeout = controller.config.resend_after_ns
    first = dict(sent(controller.tick(0)))
    for b in (1, 3):
        controller.step(f"b{b}", answered(b, first[f"b{b}"]), ms(10))
    assert not sent(controller.tick(timeout - 1)), "not yet"
    again = sent(controller.tick(timeout))
    assert again == [("b2", first["b2"])], "only b2's request, unanswered, and unchanged"
    assert not sent(controller.tick(timeout + 1)), "the next retry waits a timeout again"
    controller.step("b2", answered(2, first["b2"], Errors.STALE_CONTROLLER_EPOCH), timeout + 2)
    assert not sent(controller.tick(3 * timeout)), "any answer ends the retries"


def test_retries_end_when_the_broker_registers_again_and_follow_the_latest_request():
    store, controller = setup()
    timeout = controller.config.resend_after_ns
    first = dict(sent(controller.tick(0)))
    controller.step("b1", answered(1, first["b1"]), 0)
    # An answer to an older request does not end the retries of a newer one.
    newer = attrs.evolve(first["b2"], leader_epoch=first["b2"].leader_epoch + 1)
    controller.unanswered[("b2", KEY)] = (newer, 0)
    controller.step("b2", answered(2, first["b2"]), 0)
    # b3's session ends: its request is not retried once it is no longer registered.
    store.close_session(3)
    retried = sent(controller.tick(timeout))
    assert ("b2", newer) in retried
    assert "b3" not in [dst for dst, _ in retried]
    assert ("b3", KEY) not in controller.unanswered


def test_a_resigned_controller_retries_nothing():
    _, controller = setup()
    controller.tick(0)
    controller.resign("moved")
    assert not sent(controller.tick(10 * controller.config.resend_after_ns))
