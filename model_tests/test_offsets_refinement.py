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
  ``StaleGenerationNeverCommits`` (and the committed offset going back); with
  ``fetch_before_load`` an owner starts behind the committed offset
  (``CommittedWithinOwnerProgress``); a consumer that seeks forward past records it never
  processed breaks ``AtLeastOnce``.
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

from impl.group.messages import OffsetFetch
from impl.group.placement import CONSUMER_OFFSETS
from impl.protocol import NO_LEADER
from impl.sim.clock import ms
from impl.sim.node import NodeState
from jepsen_py.group_cluster import GroupClusterConfig, GroupClusterRun
from jepsen_py.group_workload import check_group_delivery

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
    """``--bug no_generation_check``, seed 2: a late OffsetCommit of generation 4 reaches
    the coordinator in generation 6 and is accepted; the spec's coordinator answers it
    ILLEGAL_GENERATION, and the group's committed offset then goes back."""
    run = GroupClusterRun(GroupClusterConfig(refinement=True, bugs={"no_generation_check"}), 2)
    outcome = run.run()
    assert not outcome["ok"]
    r = run.refinement
    assert r is not None
    props = {v.prop for v in r.violations}
    assert "StaleGenerationNeverCommits" in props, r.violations
    assert "CommittedNeverRegresses" in props, r.violations
    stale = next(v for v in r.violations if v.prop == "StaleGenerationNeverCommits")
    assert "ILLEGAL_GENERATION" in stale.detail  # with the check on, seed 2 holds


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


def fetch_during_load(bugs: frozenset[str]) -> tuple[GroupClusterRun, dict[str, Any]]:
    """A scenario: consumer c3 leaves, the group rebalances; the moment a member asks the
    coordinator for its new partitions' offsets (OffsetFetch), its link to the coordinator
    breaks (the request is lost) and the coordinator's broker begins a controlled shutdown:
    the leadership of ``__consumer_offsets`` moves and the new leader loads the partition
    (5 s here: a big partition). While it loads, the member's OffsetFetch is retried there
    (a copy delivered by the harness: Kafka's ``fetchCommittedOffsets`` finds the
    coordinator again and retries a retriable error without rejoining; this
    implementation's member rejoins when its coordinator moves, so random runs do not
    reach this)."""
    config = GroupClusterConfig(
        faults=(), refinement=True, duration_ns=ms(40_000), recovery_ns=ms(10_000), bugs=bugs
    )
    run = GroupClusterRun(config, 1)
    run.advance(ms(8_000), faults=False)
    cluster = run.cluster
    run.host.load_delay_ns = ms(5_000)
    generation = max(gc.member.generation for gc in run.host.consumers.values())
    cluster.close_client("c3")
    observe = run.observe
    plan: dict[str, Any] = {}

    def leader() -> str | None:
        b = cluster.store.partitions[(CONSUMER_OFFSETS, run.host.partition)].leader
        return None if b == NO_LEADER else cluster.broker_names[b]

    def each_event() -> None:  # the run's per-event observer, and the scenario's moves
        observe()
        if "old" not in plan:
            for name, gc in sorted(run.host.consumers.items()):
                last = gc.history[-1] if gc.history else {}
                if (last.get("f"), last.get("type")) != ("fetch-offsets", "invoke"):
                    continue
                if last["generation"] > generation:
                    old = leader()
                    assert old is not None
                    plan.update(old=old, name=name, keys=last["value"])
                    cluster.partition([(name, old), (old, name)])
                    cluster.controlled_shutdown(old)
                    return
        elif "retried_at" not in plan:
            new = leader()
            if new is None or new == plan["old"]:
                return
            if "group" in run.host.coordinators[cluster.broker_id(new)].loading:
                tps = tuple(("t", int(k.rsplit("-", 1)[1])) for k in plan["keys"])
                cluster.network.send(plan["name"], new, OffsetFetch("group", tps))
                plan["retried_at"] = new

    run.observe = each_event  # type: ignore[method-assign]
    run.advance(ms(14_000), faults=False)
    cluster.heal()
    run.observe = observe  # type: ignore[method-assign]
    run.advance(ms(24_000), faults=False)
    run.advance(ms(30_000), sending=False, faults=False)
    run.final_fetch()
    return run, plan


def test_fetch_before_load_starts_the_owner_behind_the_committed_offset() -> None:
    """``--bug fetch_before_load`` (spec.offsets' bug of the same name): the new coordinator
    answers the retried OffsetFetch from its empty cache, "no committed offset"; the owner
    starts at 0 (``earliest``) behind the group's committed offsets:
    ``CommittedWithinOwnerProgress`` breaks, and the delivery checker sees the regression.
    With the fence (``COORDINATOR_LOAD_IN_PROGRESS``, retried after the load) it holds."""
    run, plan = fetch_during_load(frozenset({"fetch_before_load"}))
    assert plan.get("retried_at"), plan
    r = run.refinement
    assert r is not None and r.count > 0
    assert {v.prop for v in r.violations} == {"CommittedWithinOwnerProgress"}
    delivery = check_group_delivery(run.history(), "at-least-once")
    assert delivery["counts"].get("commit-regression", 0) > 0, delivery
    fenced, plan = fetch_during_load(frozenset())
    assert plan.get("retried_at"), plan
    assert fenced.refinement is not None and fenced.refinement.count == 0
    assert check_group_delivery(fenced.history(), "at-least-once")["verdict"] == "valid"
