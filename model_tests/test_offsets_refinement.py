"""Refinement of the implementation's committed offsets against ``spec.offsets``
(``impl.group.offsets_refinement``): the consumer group on the simulated cluster, with
``__consumer_offsets`` replicated, is abstracted per partition to the spec's state after
every event (every message delivered, every tick, every poll and fault), and the spec's
``CommittedWithinOwnerProgress``, ``AtLeastOnce``, ``CommittedNeverRegresses`` and
``StaleGenerationNeverCommits`` are checked on it.

- A Hypothesis state machine drives the cluster: time passes in steps, consumers are
  killed, restarted, closed and rejoin, stopped (SIGSTOP) and resumed, seek back to their
  committed offset, pause and resume a partition, their handlers fail part way through a
  batch; the coordinator's broker crashes and comes back.
- Group runs of ``kmodel test --workload group`` (every fault of the workload) hold too.
- The check can fail: with the implementation's ``no_generation_check`` bug, a late commit
  of a stale generation is accepted, and the refinement reports
  ``StaleGenerationNeverCommits`` (and the committed offset going back); a consumer that
  seeks forward past records it never processed breaks ``AtLeastOnce``.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from impl.group.placement import CONSUMER_OFFSETS
from impl.protocol import NO_LEADER
from impl.sim.clock import ms
from impl.sim.node import NodeState
from jepsen_py.group_cluster import GroupClusterConfig, GroupClusterRun

CONSUMERS = ("c1", "c2", "c3")


def quiet(**kw: Any) -> GroupClusterConfig:
    return GroupClusterConfig(
        faults=(), refinement=True, partitions=3, duration_ns=ms(600_000), **kw
    )


class OffsetsMachine(RuleBasedStateMachine):
    """The cluster's group, its faults chosen by Hypothesis; after every rule the
    refinement check (run after every event) has found nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.run = GroupClusterRun(quiet(), 1)
        self.run.advance(ms(2_000), faults=False)

    @property
    def now(self) -> int:
        return self.run.cluster.clock.now

    def brokers(self) -> list[str]:
        return sorted(self.run.cluster.broker_names.values())

    def state(self, name: str) -> NodeState:
        return self.run.cluster.nodes.state(name)

    @rule(step=st.sampled_from([ms(200), ms(1_000), ms(3_000), ms(7_000)]))
    def time_passes(self, step: int) -> None:
        self.run.advance(self.now + step, faults=False)

    @rule(name=st.sampled_from(CONSUMERS))
    def kill_or_restart_consumer(self, name: str) -> None:
        cluster = self.run.cluster
        if self.state(name) is NodeState.RUNNING:
            cluster.kill_client(name)
        elif self.state(name) in (NodeState.CRASHED, NodeState.STOPPED):
            cluster.restart(name)

    @rule(name=st.sampled_from(CONSUMERS))
    def stop_or_continue_consumer(self, name: str) -> None:
        """SIGSTOP / SIGCONT: a stopped consumer wakes up as a zombie."""
        cluster = self.run.cluster
        if self.state(name) is NodeState.RUNNING:
            cluster.pause(name)
        elif self.state(name) is NodeState.PAUSED:
            cluster.resume(name)

    @rule(name=st.sampled_from(CONSUMERS))
    def leave_or_rejoin(self, name: str) -> None:
        cluster, gc = self.run.cluster, self.run.host.consumers[name]
        if self.state(name) is not NodeState.RUNNING:
            return
        if gc.member.topics:
            cluster.close_client(name)
        else:
            cluster.rejoin_client(name)

    @rule(name=st.sampled_from(CONSUMERS), pick=st.integers(0, 5))
    def seek_back_to_committed(self, name: str, pick: int) -> None:
        gc = self.run.host.consumers[name]
        owned = sorted(tp for tp in gc.assignment if gc.position(tp) is not None)
        if self.state(name) is NodeState.RUNNING and owned:
            tp = owned[pick % len(owned)]
            gc.seek(tp, gc.committed.get(tp, 0), self.now)

    @rule(name=st.sampled_from(CONSUMERS), pick=st.integers(0, 5))
    def pause_or_resume_partition(self, name: str, pick: int) -> None:
        gc = self.run.host.consumers[name]
        owned = sorted(gc.assignment)
        if self.state(name) is not NodeState.RUNNING or not owned:
            return
        tp = owned[pick % len(owned)]
        if tp in gc.paused:
            gc.resume((tp,), self.now)
        else:
            gc.pause((tp,), self.now)

    @rule(name=st.sampled_from(CONSUMERS), on=st.booleans())
    def handler_fails(self, name: str, on: bool) -> None:
        self.run.host.consumers[name].fail_processing(on)

    @rule(power_loss=st.booleans())
    def crash_coordinator(self, power_loss: bool) -> None:
        cluster = self.run.cluster
        leader = cluster.store.partitions[(CONSUMER_OFFSETS, self.run.host.partition)].leader
        down = [n for n in self.brokers() if self.state(n) is not NodeState.RUNNING]
        if leader != NO_LEADER and not down:
            cluster.crash(cluster.broker_names[leader], power_loss=power_loss)

    @precondition(
        lambda self: any(
            self.state(n) in (NodeState.CRASHED, NodeState.STOPPED) for n in self.brokers()
        )
    )
    @rule()
    def restart_brokers(self) -> None:
        for n in self.brokers():
            if self.state(n) in (NodeState.CRASHED, NodeState.STOPPED):
                self.run.cluster.restart(n)

    @invariant()
    def the_spec_properties_hold(self) -> None:
        r = self.run.refinement
        assert r is not None
        assert r.count == 0, [v.describe() for v in r.violations]


SETTINGS = settings(
    max_examples=10,
    stateful_step_count=12,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)


def test_the_implementation_refines_the_offsets_spec() -> None:
    run_state_machine_as_test(OffsetsMachine, settings=SETTINGS)


@pytest.mark.slow
def test_the_implementation_refines_the_offsets_spec_at_length() -> None:
    run_state_machine_as_test(
        OffsetsMachine,
        settings=settings(SETTINGS, max_examples=60, stateful_step_count=25),
    )


def test_a_group_run_refines_the_offsets_spec() -> None:
    """A ``kmodel test --workload group`` run, shortened (every fault of the workload, seed
    1: a processing failure and its seek back, a paused partition, a consumer killed)."""
    config = GroupClusterConfig(refinement=True, duration_ns=ms(30_000), recovery_ns=ms(10_000))
    outcome = GroupClusterRun(config, 1).run()
    assert outcome["ok"], outcome["violations"]
    checked = outcome["refinement"]
    assert checked["violations"] == 0
    assert checked["observations"] > 5_000 and checked["commits_checked"] > 50, checked


@pytest.mark.slow
@pytest.mark.parametrize(
    "commit", ["after-process", "after-process-async", "before-process", "auto"]
)
@pytest.mark.parametrize("seed", range(1, 11))
def test_group_runs_refine_the_offsets_spec(commit: str, seed: int) -> None:
    """``kmodel test --workload group --seed N --commit MODE`` for N = 1..10 (AtLeastOnce
    is not checked before-process: at most once breaks it by design)."""
    outcome = GroupClusterRun(GroupClusterConfig(refinement=True, commit=commit), seed).run()
    assert outcome["ok"], outcome["violations"]
    assert outcome["refinement"]["commits_checked"] > 0


def test_without_the_generation_check_the_refinement_finds_a_stale_commit_accepted() -> None:
    """``--bug no_generation_check``, seed 4: a late OffsetCommit of generation 7 reaches
    the coordinator in generation 8 and is accepted; the spec's coordinator answers it
    ILLEGAL_GENERATION, and the group's committed offset then goes back."""
    run = GroupClusterRun(GroupClusterConfig(refinement=True, bugs={"no_generation_check"}), 4)
    outcome = run.run()
    assert not outcome["ok"]
    r = run.refinement
    assert r is not None
    props = {v.prop for v in r.violations}
    assert "StaleGenerationNeverCommits" in props, r.violations
    assert "CommittedNeverRegresses" in props, r.violations
    stale = next(v for v in r.violations if v.prop == "StaleGenerationNeverCommits")
    assert "ILLEGAL_GENERATION" in stale.detail  # with the check on, seed 4 holds (above)


def test_a_seek_forward_past_unprocessed_records_breaks_at_least_once() -> None:
    run = GroupClusterRun(quiet(), 1)
    run.advance(ms(4_000), faults=False)
    gc = next(c for _, c in sorted(run.host.consumers.items()) if c.fetchers)
    tp = min(gc.fetchers)
    gc.seek(tp, gc.processed[tp] + 5, run.cluster.clock.now)
    run.advance(ms(8_000), faults=False)
    r = run.refinement
    assert r is not None and r.count > 0
    assert {v.prop for v in r.violations} == {"AtLeastOnce"}
    assert all(v.partition == tp[1] for v in r.violations)
