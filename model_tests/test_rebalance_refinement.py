"""``spec.rebalance`` checked on the implementation (issue 17): the refinement machine
(``impl.refinement_machine``) with the ``reassign`` rule starts, replaces and cancels KIP-455
reassignments among faults, checks ``spec.rebalance``'s properties on the abstraction of
every state (``impl.rebalance_abstraction``), and keeps matching every data-plane event to a
``spec.replication`` step. The broken controller that completes a reassignment before the
new replicas joined the ISR (``drop_before_isr_join``) is caught by
``ReassignmentKeepsMinIsr``."""

from __future__ import annotations

import collections
from typing import Any

import attrs
import pytest
from hypothesis.stateful import run_state_machine_as_test

from impl.abstraction import abstract
from impl.protocol import NO_LEADER
from impl.rebalance_abstraction import RebalanceCheck, rebalance_params
from impl.refinement import RefinementCluster
from impl.refinement_machine import (
    REBALANCE_VIOLATIONS,
    STATS,
    InvariantViolation,
    machine_settings,
    make_machine,
    refinement_config,
)
from impl.sim.clock import ms
from spec.explore import reachable_states
from spec.rebalance import Rebalance
from spec.rebalance.params import Params

KEY = ("t", 0)

CRASH_VIOLATIONS = frozenset({"StrongIsr", "WeakIsr", "NoAckedAllWriteLost", "NoAckedWriteLost"})
"""What ``spec.replication`` itself violates once power loss takes unflushed tails (the
refinement machine's other tests say the same)."""


def machine(bugs: frozenset[str] = frozenset()) -> type:
    config = refinement_config(truncation="kip320", acks="all", min_isr=2, bugs=bugs)
    return make_machine(
        config,
        expect_violated=CRASH_VIOLATIONS,
        always_on=frozenset({"reassign"}),
        disabled=frozenset({"crash"}),
        rebalance_expect_violated=frozenset(),
        name="Reassignment" + ("".join(sorted(bugs)) or ""),
    )


def test_the_abstraction_of_a_new_cluster_is_the_specs_initial_state():
    config = refinement_config()
    cluster = RefinementCluster(config, 0)
    check = RebalanceCheck(cluster, abstract(cluster))
    assert check.prev == next(iter(check.spec.init()))
    assert "no_elr" in rebalance_params(config).bugs, "ELR off: Kafka before 4.0"


def test_reassignments_among_faults_keep_spec_rebalance_properties():
    started, events = STATS["reassignments_requested"], STATS["assignment_events"]
    run_state_machine_as_test(machine(), settings=machine_settings(300))
    assert STATS["reassignments_requested"] > started, "no reassignment was requested"
    assert STATS["assignment_events"] > events, "no assignment change was checked"


def test_a_reassignment_that_completes_before_the_isr_join_is_caught():
    REBALANCE_VIOLATIONS.clear()
    with pytest.raises(InvariantViolation, match=r"ReassignmentKeepsMinIsr|NoAckedAllWriteLost"):
        run_state_machine_as_test(
            machine(frozenset({"drop_before_isr_join"})),
            settings=machine_settings(1000, shrink=False),
        )
    assert REBALANCE_VIOLATIONS["ReassignmentKeepsMinIsr"] > 0, dict(REBALANCE_VIOLATIONS)


# --- KIP-966 (ELR) and controlled shutdown -------------------------------------------------


ELR_CRASH_VIOLATIONS = frozenset({"WeakIsr"})
"""What ``spec.rebalance``'s data plane itself violates with KIP-966 on once power loss
takes unflushed tails (the test ``test_with_elr_the_spec_itself_breaks_weak_isr_and_no_
other_data_plane_invariant``)."""


def elr_machine(bugs: frozenset[str] = frozenset()) -> type:
    """KIP-966 on, with power loss, controlled shutdowns and reassignments: every
    ``spec.replication`` invariant is checked too, but ``WeakIsr``, which the spec itself
    breaks (with strict min ISR and the ELR, one power loss no longer loses an acknowledged
    write, but a stale leader's own ISR may still name a replica that lost it)."""
    config = refinement_config(elr=True, bugs=bugs)
    return make_machine(
        config,
        expect_violated=ELR_CRASH_VIOLATIONS,
        always_on=frozenset({"crash", "controlled_shutdown", "reassign"}),
        rebalance_expect_violated=frozenset(),
        name="Elr" + "".join(sorted(bugs)),
    )


def test_with_elr_the_spec_itself_breaks_weak_isr_and_no_other_data_plane_invariant():
    """Why the ELR machine excuses ``WeakIsr``, and only it: on ``spec.rebalance``'s whole
    KIP-966 state space (``--mechanism elr``'s bounds, one power loss), ``WeakIsr`` fails on
    the data plane of some states and every other ``spec.replication`` invariant holds.
    One way there: the controller takes leader b1 out (no leader, ISR {2}); b1 and b2 then
    apply the older LeaderAndIsr of epoch 0; b1 writes, b2 fetches it and b1's HW passes it
    in b1's own ISR {1, 2}; b2 loses power with the record unflushed and restarts. b1 still
    believes b2 in its ISR, below its HW (Kafka's leader would shrink it only after
    ``replica.lag.time.max.ms``; its AlterPartition is refused, an older leader epoch)."""
    spec = Rebalance(Params.of("elr"))
    broken: collections.Counter[str] = collections.Counter()
    for state in reachable_states(spec, 10**6):
        for decl in spec.data.invariants():
            if not getattr(spec.data, decl.method)(state.core):
                broken[decl.name] += 1
    assert set(broken) == ELR_CRASH_VIOLATIONS, dict(broken)


def test_with_elr_power_loss_shutdowns_and_reassignments_keep_every_property():
    elr_events, shutdowns = STATS["elr_events"], STATS["controlled_shutdown_moved_leader"]
    run_state_machine_as_test(elr_machine(), settings=machine_settings(300))
    assert STATS["elr_events"] > elr_events, "the ELR never changed"
    assert STATS["controlled_shutdown_moved_leader"] > shutdowns, "no shutdown moved a leader"


def _last_replica_loses_power(bugs: frozenset[str]) -> Any:
    """KIP-966's unclean-shutdown case, driven event by event: a write acknowledged on all
    three replicas; b2 and b3 stop answering (the ISR shrinks to {1}, b3 joins the ELR);
    b1 loses power with its log unflushed (the ISR empties, b1 joins the ELR), then
    restarts with an empty log and registers again. Every event is checked."""
    machine: Any = elr_machine(bugs)()
    machine.start(seed=0, swarm=set(), bootstrap=True)
    c = machine.c
    machine.write_to_leader()
    machine.replicate(2)
    machine.settle()
    assert machine.prev.acked, "the write was not acknowledged"

    def ticks(nodes: tuple[str, ...]) -> None:
        for _ in range(8):
            c.advance(ms(100))
            for node in nodes:
                if c.tick(node):
                    machine._after(f"tick {node}")
            machine._settle()
            if c.tick_controller():
                machine._after("controller tick")
            machine._settle()

    for node in ("b2", "b3"):
        c.pause(node)
        machine._after(f"pause {node}")
    ticks(("b1",))
    assert c.store.partitions[KEY].isr == {1} and c.store.partitions[KEY].elr == {3}
    c.crash("b1", torn={path: 0 for path, _ in c.unflushed_files(1)})
    machine._after("b1 loses power")
    ticks(())
    assert c.store.partitions[KEY].elr == {1, 3} and not c.store.partitions[KEY].isr
    c.restart("b1")
    machine._after("restart b1")
    ticks(("b1",))
    return machine


def test_a_broker_back_from_power_loss_leaves_the_elr_and_is_not_elected():
    machine = _last_replica_loses_power(frozenset())
    state = machine.c.store.partitions[KEY]
    assert state.leader == NO_LEADER and state.elr == {3}, "offline until b3 returns"


def test_the_refinement_catches_a_stale_elr_member_elected_after_power_loss():
    with pytest.raises(InvariantViolation, match="NoAckedAllWriteLost"):
        _last_replica_loses_power(frozenset({"stale_elr"}))


def test_the_shutting_set_follows_a_controlled_shutdown_until_the_restart():
    """``spec.rebalance``'s ``shutting``: from the controller's grant to the broker's
    registration with a new broker epoch."""
    machine: Any = elr_machine()()
    machine.start(seed=0, swarm=set(), bootstrap=True)
    machine.controlled_shutdown(1)
    check = machine.rebalance_check
    assert check.prev.meta.shutting == {1} and check.prev.meta.shutdowns == 1
    assert machine.c.store.partitions[KEY].leader != 1
    machine.c.restart("b1")
    machine._after("restart b1")
    for _ in range(5):
        machine.tick_broker(1, ms(100))
        machine._settle()
    assert check.prev.meta.shutting == frozenset(), "b1 registered again"


def test_a_zombie_controller_does_not_send_its_stale_context_to_a_restarted_broker():
    """A case the slow test below once drew, replayed rule by rule (each event checked):
    the operator moves the controller to b2; leader b1 stops and b2 takes over (leader
    epoch 1, ISR {2, 3}); b3 crashes; leader b2 stops past its session timeout, so with no
    broker registered the store's controller writes leader epoch 2 (no leader, ISR {3})
    in b2's controller epoch; b2 wakes up, a zombie that has not noticed its session is
    gone; b3 restarts with an empty log and asks for a controlled shutdown. The zombie's
    ``/brokers/ids`` watch must not fire for b3's new registration: it would send b3 its
    stale leader epoch 1 stamped with b3's new broker epoch, which b3 (no newer epoch
    recovered, same controller epoch) applies -- no ``spec.replication`` step, since that
    request was meant for b3's previous incarnation."""
    machine: Any = elr_machine()()
    swarm = {"redeliver", "crash", "controller_move", "controller_pause", "preferred"}
    swarm |= {"fail_leader", "drop", "pause", "consumer"}
    machine.start(seed=0, swarm=swarm, bootstrap=True)
    c = machine.c
    machine.controller_moves()
    machine.fail_leader(False)
    c.crash("b3", torn={path: 0 for path, _ in c.unflushed_files(3)})
    machine._after("crash b3")
    machine.fail_leader(True)
    assert c.store.controller == NO_LEADER and 2 in c.controllers, "b2 is a zombie"
    assert c.store.partitions[KEY].leader_epoch == 2
    c.restart("b3")
    machine._after("restart b3")
    assert c.store.registrations == {3: 4} and 2 in c.controllers, "b3 registered again"
    machine.controlled_shutdown(3)  # its ticks: the zombie's, and every event is checked
    assert c.brokers.get(3) is None, "b3 stopped cleanly"


@pytest.mark.slow
def test_with_elr_many_more_examples_keep_every_property():
    run_state_machine_as_test(elr_machine(), settings=machine_settings(3000))


def auto_rebalance_machine() -> type:
    config = attrs.evolve(
        refinement_config(), auto_leader_rebalance=True, leader_imbalance_check_interval_ns=ms(300)
    )
    return make_machine(
        config,
        expect_violated=CRASH_VIOLATIONS,
        always_on=frozenset({"fail_leader"}),
        disabled=frozenset({"preferred"}),
        rebalance_expect_violated=frozenset(),
        name="AutoRebalance",
    )


def test_the_auto_rebalance_moves_leadership_back_as_a_spec_step():
    """``auto.leader.rebalance.enable`` with a 300 ms check interval, driven event by
    event: the leader b1 fails and b2 takes over; b1 returns and rejoins the ISR; the
    controller's periodic check finds b1 (the preferred replica) leading none of its
    partitions and hands leadership back. Every event is a ``spec.replication`` step
    (the election is ``controller_elect``) and ``spec.rebalance``'s properties hold."""
    machine: Any = auto_rebalance_machine()()
    machine.start(seed=0, swarm=set(), bootstrap=True)
    machine.fail_leader(True)
    assert machine.c.store.partitions[KEY].leader == 2
    regained = STATS["preferred_regained"]
    for _ in range(5):
        machine.replicate(2)
        for b in (1, 2, 3):
            machine.tick_broker(b, ms(100))
        machine.tick_controller(ms(100))
        machine._settle()
    assert machine.c.store.partitions[KEY].leader == 1
    assert STATS["preferred_regained"] == regained + 1


def test_with_the_auto_rebalance_failovers_keep_every_property():
    run_state_machine_as_test(auto_rebalance_machine(), settings=machine_settings(100))
