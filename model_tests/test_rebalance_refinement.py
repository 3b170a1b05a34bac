"""``spec.rebalance`` checked on the implementation (issue 17): the refinement machine
(``impl.refinement_machine``) with the ``reassign`` rule starts, replaces and cancels KIP-455
reassignments among faults, checks ``spec.rebalance``'s properties on the abstraction of
every state (``impl.rebalance_abstraction``), and keeps matching every data-plane event to a
``spec.replication`` step. The broken controller that completes a reassignment before the
new replicas joined the ISR (``drop_before_isr_join``) is caught by
``ReassignmentKeepsMinIsr``."""

from __future__ import annotations

import pytest
from hypothesis.stateful import run_state_machine_as_test

from impl.abstraction import abstract
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
