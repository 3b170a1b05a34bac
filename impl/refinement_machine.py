"""The refinement machine: Hypothesis drives the implementation, the spec judges each step.

``make_machine(config, ...)`` returns a ``RuleBasedStateMachine`` whose rules are the
implementation's events, driven by hand (``impl.refinement``): produce, deliver / drop a
chosen in-flight message, redeliver an old LeaderAndIsr, a replica fetch round trip, tick
a broker or the controller (after letting logical time pass), a preferred-leader election,
crash a broker with a drawn torn tail, restart it, flush it, pause / resume a node,
partition two nodes / heal, a consumer fetch, crash / restart the controller. A few rules
are *macros* of such events, to make progress likely (``settle``: deliver everything;
``write_to_leader``; ``replicate``: every follower fetches; ``fail_leader``: the leader
stops and is replaced); each event inside a macro is checked on its own.

After every event (a rule may run several, like ``settle``), ``impl.abstraction`` maps the
world to a ``spec.replication.State`` and checks that it equals the previous one or is
reached from it by exactly one spec action (``check_step``), then that every spec invariant
holds, except those this configuration is known to violate (``expect_violated``: the spec
itself violates them, so an implementation that refines it may too).

Swarm testing: each test case enables a random subset of the optional rules (crashes,
pauses, partitions, drops, ...), so that some runs go deep without faults and others are
all faults. ``hypothesis.target`` steers towards rare states: an ISR of one replica,
records removed by truncation, an unclean election, an acknowledged write, logs that
disagree. Matched spec actions are reported as Hypothesis events
(``--hypothesis-show-statistics``) and counted in ``COVERAGE``.

A broken implementation is plugged in with ``cluster_class`` (see
``model_tests/test_refinement.py``).
"""

from __future__ import annotations

import collections
import functools
from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, Phase, currently_in_test_context, event, settings, target
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, precondition, rule

from impl.abstraction import RefinementError, abstract, check_step, describe_state, spec_params
from impl.controller import broker_node
from impl.controller_abstraction import ControllerCheck
from impl.coordination import STORE
from impl.rebalance_abstraction import RebalanceCheck, rebalance_params
from impl.refinement import RefinementCluster
from impl.sim.clock import ms
from impl.sim.network import Envelope, NetworkConfig
from impl.sim.node import NodeState
from impl.world import ClusterConfig
from spec.framework import Step
from spec.rebalance.data_plane import DataPlane
from spec.replication import NONE, Replication, State

__all__ = [
    "COVERAGE",
    "OPTIONAL_RULES",
    "REBALANCE_VIOLATIONS",
    "STATS",
    "InvariantViolation",
    "machine_settings",
    "make_machine",
    "refinement_config",
]

COVERAGE: collections.Counter[str] = collections.Counter()
"""Spec actions matched, over every machine run in this process (for non-vacuity tests)."""

STATS: collections.Counter[str] = collections.Counter()
"""``steps``: Hypothesis steps run (rules executed); ``events``: implementation events
checked against the spec."""

CONTROLLER_VIOLATIONS: collections.Counter[str] = collections.Counter()
"""``spec.controller`` properties found broken (for the tests of broken variants)."""

REBALANCE_VIOLATIONS: collections.Counter[str] = collections.Counter()
"""``spec.rebalance`` properties found broken (for the tests of broken variants)."""

TOLERATED: collections.Counter[str] = collections.Counter()
"""Known disagreements with the spec met and tolerated (see ``make_machine``'s
``tolerate``), by finding name."""

Tolerate = Callable[[Replication, State, State], "str | None"]

OPTIONAL_RULES = (
    "fail_leader",
    "drop",
    "redeliver",
    "crash",
    "pause",
    "partition",
    "consumer",
    "preferred",
    "controller_move",
    "controller_pause",
    "controller_cut",
)

DELAYS = (0, 0, ms(1), ms(10), ms(50), ms(200))
"""Logical time a tick rule lets pass first (the lag and session timeouts are below)."""


def machine_settings(examples: int, steps: int = 50, *, shrink: bool = True) -> settings:
    """Settings for running a machine as a test: reproducible (derandomized, no example
    database), no deadline (simulated time), every health check off; without ``shrink``
    the first failure is reported as found (for tests that only need one)."""
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        phases=list(Phase) if shrink else [Phase.generate],
    )


def counted(fn: Callable[..., None]) -> Callable[..., None]:
    """Count a rule's executions in ``STATS["steps"]`` (keeps its signature for Hypothesis)."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> None:
        STATS["steps"] += 1
        fn(*args, **kwargs)

    return run


def _describe_delivery(envelope: Envelope) -> str:
    return f"deliver {envelope.describe()}"


def _event(text: str) -> None:
    if currently_in_test_context():
        event(text)


class InvariantViolation(AssertionError):
    """A spec invariant fails on the abstract state of the implementation."""


def refinement_config(
    *,
    truncation: str = "kip320",
    acks: str = "all",
    min_isr: int = 2,
    brokers: int = 3,
    unclean: bool = False,
    elr: bool = False,
    bugs: frozenset[str] = frozenset(),
) -> ClusterConfig:
    """The cluster the refinement machine drives: one producer, no consumers, short
    timers, a network that may reorder. ``elr`` turns KIP-966 on (see ``make_machine``)."""
    return ClusterConfig(
        bugs=bugs,
        eligible_leader_replicas=elr,
        brokers=brokers,
        truncation=truncation,
        acks=acks,
        min_insync_replicas=min_isr,
        unclean=unclean,
        refinement=True,
        producers=1,
        consumers=0,
        replica_lag_time_max_ns=ms(100),
        session_timeout_ns=ms(600),
        heartbeat_interval_ns=ms(50),
        network=NetworkConfig(fifo=False),
    )


def make_machine(
    config: ClusterConfig,
    *,
    expect_violated: frozenset[str] = frozenset(),
    cluster_class: type[RefinementCluster] = RefinementCluster,
    always_on: frozenset[str] = frozenset(),
    disabled: frozenset[str] = frozenset(),
    tolerate: Tolerate | None = None,
    name: str = "RefinementMachine",
    controller_expect_violated: frozenset[str] | None = frozenset(),
    rebalance_expect_violated: frozenset[str] | None = None,
) -> type[RuleBasedStateMachine]:
    """A machine for ``config``; ``expect_violated`` names spec invariants not checked;
    ``always_on``/``disabled`` force optional rules on or off in every test case.

    ``tolerate(spec, before, after)`` may name a *known, documented* disagreement between
    the implementation and the spec (a finding): a step it names is counted in
    ``TOLERATED`` instead of failing, and checking goes on from the implementation's
    state. Anything else that is no spec step fails.

    After every event the cluster is also abstracted to ``spec.controller``'s state
    (``impl.controller_abstraction``) and that spec's invariants and transition properties
    are checked, except ``controller_expect_violated`` (None: not checked).

    With ``rebalance_expect_violated`` (None: not checked), ``spec.rebalance``'s properties
    are checked too (``impl.rebalance_abstraction``), except those named; then an event
    that changes the partition's replica assignment (a KIP-455 reassignment's start,
    replacement, cancellation or completion) or deletes a replica's copy (StopReplica) is
    checked by those properties and by every ``spec.replication`` invariant, but not matched
    to a ``spec.replication`` step: that spec has no assignment. ``always_on`` with
    ``reassign`` adds the rule that starts, replaces and cancels reassignments.

    With KIP-966 on (``config.elr``), the data plane is matched against
    ``spec.rebalance``'s (``DataPlane``: ``spec.replication`` with strict min ISR, where
    the high watermark stands still while the ISR is below ``min.insync.replicas``), and an
    event that changes the partition's ELR (a replica leaving the ISR below
    ``min.insync.replicas``, the last ISR member leaving it, an election from the ELR, an
    unclean restart) or empties the ISR is a metadata event like a reassignment's: checked
    by the invariants and by ``spec.rebalance``'s properties, not matched to a
    ``spec.replication`` step, which has no ELR."""
    spec: Replication = (
        DataPlane(rebalance_params(config)) if config.elr else Replication(spec_params(config))
    )
    invariants = [d for d in spec.invariants() if d.name not in expect_violated]
    transitions = [d for d in spec.transition_properties() if d.name not in expect_violated]
    brokers = st.sampled_from(config.broker_ids)
    servers = tuple(broker_node(b) for b in config.broker_ids)
    nodes = st.sampled_from(servers)
    linked = st.sampled_from((STORE, *servers))

    class Machine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.cluster: RefinementCluster | None = None
            self.prev: State | None = None
            self.enabled: frozenset[str] = frozenset()
            self.steps: list[str] = []
            self.max_truncated = 0
            self.min_isr_seen = config.brokers
            self.unclean_seen = 0
            self.acked_seen = 0
            self.max_divergence = 0
            self.controller_check: ControllerCheck | None = None
            self.rebalance_check: RebalanceCheck | None = None
            self.layout: tuple[object, ...] = ()

        # ------------------------------------------------------------ plumbing

        @initialize(
            seed=st.integers(0, 2**32),
            swarm=st.sets(st.sampled_from(OPTIONAL_RULES)),
            bootstrap=st.sampled_from([True, True, True, False]),
        )
        def start(self, seed: int, swarm: set[str], bootstrap: bool) -> None:
            """A new cluster; the optional rules this test case enables; and, if
            ``bootstrap``, a first election with its LeaderAndIsr delivered (each step
            checked), so that most test cases start with a leader."""
            self.enabled = (frozenset(swarm) | always_on) - disabled
            self.cluster = cluster_class(config, seed)
            self.prev = abstract(self.cluster)
            if controller_expect_violated is not None:
                self.controller_check = ControllerCheck(self.cluster)
            if rebalance_expect_violated is not None:
                self.rebalance_check = RebalanceCheck(
                    self.cluster, self.prev, rebalance_expect_violated
                )
            if self.rebalance_check is not None or config.elr:
                self.layout = self._layout()
            initial = next(iter(spec.init()))
            assert self.prev == initial, (
                "the initial world is not the spec's initial state:\n"
                + describe_state(spec, self.prev)
            )
            if bootstrap:
                self.c.tick_controller()
                self._after("controller tick (bootstrap)")
                self._settle()

        def on(self, name: str) -> bool:
            return name in self.enabled

        @property
        def c(self) -> RefinementCluster:
            assert self.cluster is not None
            return self.cluster

        def _after(self, what: str | Callable[[], str]) -> None:
            """The refinement check and the invariants, after one implementation event
            (``what`` describes it; a callable is only called to report a failure)."""
            assert self.prev is not None
            STATS["events"] += 1
            now = abstract(self.c)

            def described() -> str:
                return what() if callable(what) else what

            layout = self._layout() if self.rebalance_check is not None or config.elr else ()
            if layout != self.layout:
                # The assignment or the ELR changed, or a copy was deleted: spec.rebalance's
                # business.
                if layout[3:5] != self.layout[3:5]:
                    STATS["elr_events"] += 1
                self.layout = layout
                STATS["assignment_events"] += 1
                self.prev = now
                self._check_invariants(now, None, described)
                self._check_controller(described)
                self._check_rebalance(now, described)
                return
            try:
                step = check_step(spec, self.prev, now)
            except RefinementError:
                finding = tolerate(spec, self.prev, now) if tolerate is not None else None
                if finding is None:
                    check_step(spec, self.prev, now, described())  # raises, described
                    raise
                TOLERATED[finding] += 1
                _event(f"tolerated finding: {finding}")
                self.prev = now
                return
            if step is not None:
                self.steps.append(step.action)
                COVERAGE[step.action] += 1
                _event(f"spec action: {step.action}")
                self._observe(step, self.prev, now)
                for decl in transitions:
                    if not getattr(spec, decl.method)(self.prev, step, now):
                        raise InvariantViolation(
                            f"transition property {decl.name} fails on {step.describe()} "
                            f"(after {described()!r}): {decl.doc}\n" + describe_state(spec, now)
                        )
            self._check_invariants(now, step, described)
            self.prev = now
            self._check_controller(described)
            self._check_rebalance(now, described)

        def _check_invariants(
            self, now: State, step: Step | None, described: Callable[[], str]
        ) -> None:
            for decl in invariants:
                if not getattr(spec, decl.method)(now):
                    raise InvariantViolation(
                        f"invariant {decl.name} fails after {described()!r}"
                        + (f" = {step.describe()}" if step else "")
                        + f": {decl.doc}\n"
                        + describe_state(spec, now)
                    )

        def _layout(self) -> tuple[object, ...]:
            """The partition's replica assignment, its ELR, and which brokers hold a copy."""
            record = self.c.store.partitions[(config.topic, 0)]
            holders = tuple(
                b
                for b in config.broker_ids
                if (broker := self.c.brokers.get(b)) is not None
                and broker.replica(config.topic, 0) is not None
            )
            # With KIP-966 an empty ISR is the ELR's business too (the last member left it,
            # or registered after an unclean shutdown: ``handleBrokerUncleanShutdown``).
            empty_isr = config.elr and not record.isr
            return (record.replicas, record.adding, record.removing, record.elr, empty_isr, holders)

        def _check_rebalance(self, now: State, described: Callable[[], str]) -> None:
            """``spec.rebalance``'s properties on the abstraction of the cluster."""
            if self.rebalance_check is None:
                return
            regained = self.rebalance_check.preferred_regained
            broken = self.rebalance_check.check(self.c, now, described)
            STATS["preferred_regained"] += self.rebalance_check.preferred_regained - regained
            if broken:
                REBALANCE_VIOLATIONS.update(b.split(" ", 1)[0] for b in broken)
                raise InvariantViolation("rebalance spec: " + "; ".join(broken))

        def _check_controller(self, described: Callable[[], str]) -> None:
            """``spec.controller``'s properties on the abstraction of the cluster."""
            if self.controller_check is None:
                return
            assert controller_expect_violated is not None
            broken = set(self.controller_check.check(self.c)) - controller_expect_violated
            if broken:
                CONTROLLER_VIOLATIONS.update(broken)
                raise InvariantViolation(
                    f"controller spec: {', '.join(sorted(broken))} fails after "
                    f"{described()!r}\n"
                    + self.controller_check.spec.short(self.controller_check.prev)
                )

        def _observe(self, step: Step, before: State, after: State) -> None:
            if step.action.startswith("become_follower"):
                lost = sum(
                    b.leo - a.leo for a, b in zip(after.replicas, before.replicas, strict=True)
                )
                self.max_truncated = max(self.max_truncated, lost)
            if after.quorum.leader != NONE:
                self.min_isr_seen = min(self.min_isr_seen, len(after.quorum.isr))
            if step.action == "unclean_elect":
                self.unclean_seen += 1
            self.acked_seen = len(after.acked)
            logs = [rep.log for rep in after.replicas]
            for i, a in enumerate(logs):
                for b in logs[i + 1 :]:
                    differ = sum(1 for x, y in zip(a, b, strict=False) if x != y)
                    self.max_divergence = max(self.max_divergence, differ)

        def teardown(self) -> None:
            if self.cluster is None or not currently_in_test_context():
                return
            target(float(self.max_truncated), label="records removed by one truncation")
            target(float(config.brokers - self.min_isr_seen), label="ISR shrinkage")
            target(float(self.unclean_seen), label="unclean elections")
            target(float(self.acked_seen), label="acknowledged writes")
            target(float(self.max_divergence), label="records two logs disagree on")

        # ------------------------------------------------------------ client events

        @rule(b=brokers)
        @counted
        def produce(self, b: int) -> None:
            self.c.raw_produce(b)
            self._after(f"produce to b{b}")

        @rule()
        @counted
        def write_to_leader(self) -> None:
            """A macro of checked events: a produce to the broker the store names leader,
            delivered at once (most writes go where the metadata says)."""
            leader = self.c.store.partitions[(config.topic, 0)].leader
            if leader == NONE:
                return
            self.c.raw_produce(leader)
            self._after(f"produce to b{leader}")
            for envelope in self.c.deliverable():
                if (
                    envelope.dst == broker_node(leader)
                    and type(envelope.message).__name__ == "Produce"
                ):
                    self.c.deliver(envelope.seq)
                    self._after(functools.partial(_describe_delivery, envelope))
                    break

        @precondition(lambda self: bool(self._fetchers()))
        @rule(rounds=st.integers(1, 3))
        @counted
        def replicate(self, rounds: int) -> None:
            """A macro of checked events: every follower fetches, ``rounds`` times (two
            rounds move a record to the followers and the HW past it)."""
            for _ in range(rounds):
                for b in self._fetchers():
                    if self.c.replica_fetch(b):
                        self._after(f"replica fetch by b{b}")

        @precondition(lambda self: bool(self.c.deliverable()))
        @rule(data=st.data())
        @counted
        def deliver(self, data: Any) -> None:
            ready = self.c.deliverable()
            # Bias towards the oldest message: most runs progress, some reorder.
            i = data.draw(st.integers(0, len(ready) - 1) | st.just(0), label="message")
            envelope = ready[i]
            self.c.deliver(envelope.seq)
            self._after(lambda: f"deliver {envelope.describe()}")

        @precondition(lambda self: bool(self.c.deliverable()))
        @rule()
        @counted
        def settle(self) -> None:
            """Deliver every deliverable message, oldest first (bounded)."""
            self._settle()

        def _settle(self) -> None:
            for _ in range(12):
                ready = self.c.deliverable()
                if not ready:
                    break
                envelope = ready[0]
                self.c.deliver(envelope.seq)
                self._after(functools.partial(_describe_delivery, envelope))

        @precondition(lambda self: self.on("drop") and bool(self.c.network.in_flight()))
        @rule(data=st.data())
        @counted
        def drop(self, data: Any) -> None:
            flying = self.c.network.in_flight()
            envelope = flying[data.draw(st.integers(0, len(flying) - 1), label="message")]
            self.c.drop(envelope.seq)
            self._after(lambda: f"drop {envelope.describe()}")

        @precondition(lambda self: self.on("redeliver") and bool(self.c.sent_leader_and_isr))
        @rule(data=st.data())
        @counted
        def redeliver(self, data: Any) -> None:
            sent = self.c.sent_leader_and_isr
            i = data.draw(st.integers(0, len(sent) - 1), label="old LeaderAndIsr")
            if self.c.redeliver(i):
                self._after(lambda: f"redeliver {sent[i][0]} {sent[i][1].describe()}")

        @precondition(lambda self: self.on("consumer"))
        @rule(b=brokers)
        @counted
        def consumer_fetch(self, b: int) -> None:
            self.c.raw_consumer_fetch(b)
            self._after(f"consumer fetch from b{b}")

        # ------------------------------------------------------------ replication

        def _fetchers(self) -> list[int]:
            result = []
            for b in config.broker_ids:
                broker = self.c.brokers.get(b)
                if broker is None or not self.c.running(broker_node(b)):
                    continue
                replica = broker.replica(config.topic, 0)
                if replica is not None and replica.fetcher is not None:
                    result.append(b)
            return result

        @precondition(lambda self: bool(self._fetchers()))
        @rule(data=st.data())
        @counted
        def fetch(self, data: Any) -> None:
            b = data.draw(st.sampled_from(self._fetchers()), label="follower")
            if self.c.replica_fetch(b):
                self._after(f"replica fetch by b{b}")

        @rule(b=brokers, delay=st.sampled_from(DELAYS))
        @counted
        def tick_broker(self, b: int, delay: int) -> None:
            self.c.advance(delay)
            if self.c.tick(broker_node(b)):
                self._after(f"tick b{b} after {delay}ns")

        @rule(delay=st.sampled_from(DELAYS))
        @counted
        def tick_controller(self, delay: int) -> None:
            self.c.advance(delay)
            if self.c.tick_controller():
                self._after(f"controller tick after {delay}ns")

        @precondition(lambda self: self.on("fail_leader"))
        @rule(resume=st.booleans())
        @counted
        def fail_leader(self, resume: bool) -> None:
            """A macro of checked events: the leader stops (SIGSTOP), the others keep
            heartbeating while its session runs out, the controller replaces it, its
            decision is delivered, and (``resume``) the old leader wakes up."""
            leader = self.c.store.partitions[(config.topic, 0)].leader
            name = broker_node(leader)
            if leader == NONE or not self.c.running(name):
                return
            self.c.pause(name)
            self._after(f"pause {name}")
            for _ in range(8):
                self.c.advance(ms(100))
                for b in config.broker_ids:
                    if self.c.tick(broker_node(b)):
                        self._after(f"tick b{b} (+100ms)")
                if self.c.tick_controller():
                    self._after("controller tick (+100ms)")
                if not self.c.store.is_registered(leader):
                    break
            self._settle()
            if resume:
                self.c.resume(name)
                self._after(f"resume {name}")

        @precondition(lambda self: self.on("preferred"))
        @rule()
        @counted
        def preferred_election(self) -> None:
            if self.c.elect_preferred():
                self._after("preferred leader election")

        if "controlled_shutdown" in always_on:
            # Defined only when asked for: another rule in the class changes what
            # Hypothesis draws for every other machine.

            @precondition(lambda self: self.on("controlled_shutdown"))
            @rule(b=brokers)
            @counted
            def controlled_shutdown(self, b: int) -> None:
                """A macro of checked events (``controlled.shutdown.enable``): broker ``b``
                asks the controller, which moves its leadership to another ISR member and
                takes it out of the ISR; then it stops, its log flushed. Not in
                ``OPTIONAL_RULES``: only with ``always_on``."""
                name = broker_node(b)
                if not self.c.running(name) or not self.c.controlled_shutdown(name):
                    return
                led = self.c.store.partitions[(config.topic, 0)].leader == b
                for _ in range(8):
                    self.c.advance(ms(100))
                    if self.c.tick(name):
                        self._after(f"tick {name} (controlled shutdown)")
                    self._settle()
                    if self.c.tick_controller():
                        self._after("controller tick (+100ms)")
                    self._settle()
                    state = self.c.store.partitions[(config.topic, 0)]
                    if state.leader != b and (b not in state.isr or len(state.isr) == 1):
                        break
                moved = self.c.store.partitions[(config.topic, 0)].leader not in (b, NONE)
                if led and moved:
                    STATS["controlled_shutdown_moved_leader"] += 1
                if self.c.finish_controlled_shutdown(name):
                    self._after(f"{name} stops cleanly (logs flushed)")

        if "reassign" in always_on:
            # Defined only when asked for, like ``controlled_shutdown``.

            @precondition(lambda self: self.on("reassign"))
            @rule(
                replicas=st.lists(brokers, min_size=1, max_size=config.brokers, unique=True),
                cancel=st.booleans(),
            )
            @counted
            def reassign(self, replicas: list[int], cancel: bool) -> None:
                """An admin's ``AlterPartitionReassignments`` (KIP-455) on the controller:
                move the partition to ``replicas`` (replacing one in progress), or cancel
                the one in progress."""
                controller = self.c.controller
                if controller is None or not self.c.running(broker_node(controller.broker_id)):
                    return
                ongoing = self.c.store.partitions[(config.topic, 0)].reassigning
                if cancel and ongoing:
                    error = self.c.reassign(0, None)
                else:
                    error = self.c.reassign(0, tuple(replicas))
                if error == "NONE":
                    STATS["reassignments_requested"] += 1
                    self._after(f"reassign to {replicas}" if not (cancel and ongoing) else "cancel")

        # ------------------------------------------------------------ faults

        @precondition(lambda self: self.on("crash"))
        @rule(b=brokers, data=st.data())
        @counted
        def crash(self, b: int, data: Any) -> None:
            name = broker_node(b)
            if not self.c.nodes.state(name).alive:
                return
            torn = {
                path: data.draw(st.integers(0, unflushed), label=f"torn bytes of {path}")
                for path, unflushed in self.c.unflushed_files(b)
            }
            self.c.crash(name, torn=torn)
            self._after(f"crash {name} keeping {torn}")

        def _restartable(self) -> list[int]:
            q = self.c.store.partitions[(config.topic, 0)]
            return [
                b
                for b in config.broker_ids
                if self.c.nodes.state(broker_node(b)) is NodeState.CRASHED
                # The spec's restart: once the controller has handled the failure.
                and (b not in q.isr or (q.isr == frozenset({b}) and q.leader == NONE))
            ]

        @precondition(lambda self: self.on("crash") and bool(self._restartable()))
        @rule(data=st.data())
        @counted
        def restart(self, data: Any) -> None:
            b = data.draw(st.sampled_from(self._restartable()), label="broker")
            self.c.restart(broker_node(b))
            self._after(f"restart b{b}")

        @rule(b=brokers)
        @counted
        def flush(self, b: int) -> None:
            if self.c.flush(b):
                self._after(f"flush b{b}")

        @precondition(lambda self: self.on("crash"))
        @rule(b=brokers)
        @counted
        def kernel_writeback(self, b: int) -> None:
            # The kernel writes the broker machine's dirty pages back (every file, as if all
            # had expired): the recovery point does not move, so the spec stutters, and a
            # later crash keeps more than was fsynced -- the spec's crash may keep any
            # prefix of the unflushed tail.
            if self.c.disks[b].writeback(older_than=self.c.clock.now):
                self._after(f"kernel write-back b{b}")

        @precondition(lambda self: self.on("pause"))
        @rule(node=nodes)
        @counted
        def pause_or_resume(self, node: str) -> None:
            state = self.c.nodes.state(node)
            if state is NodeState.RUNNING:
                self.c.pause(node)
                self._after(f"pause {node}")
            elif state is NodeState.PAUSED:
                self.c.resume(node)
                self._after(f"resume {node}")

        @precondition(lambda self: self.on("partition"))
        @rule(a=linked, b=linked)
        @counted
        def partition(self, a: str, b: str) -> None:
            if a == b:
                self.c.heal()
                self._after("heal")
                return
            self.c.partition([(a, b), (b, a)])
            self._after(f"partition {a} | {b}")

        @precondition(lambda self: self.on("controller_move"))
        @rule()
        @counted
        def controller_moves(self) -> None:
            """An operator deletes ``/controller`` (the usual way to force a re-election):
            the next controller tick elects one; the old one is a zombie until its next
            write is refused."""
            if self.c.store.delete_controller():
                self._after("delete /controller")

        def _controller_node(self) -> str | None:
            holder = self.c.store.controller
            return broker_node(holder) if holder in self.c.controllers else None

        @precondition(lambda self: self.on("controller_pause"))
        @rule()
        @counted
        def controller_pause_or_resume(self) -> None:
            """A long GC pause of the controller (it stays controller in its own mind), or
            the end of one: a paused zombie wakes up."""
            paused = [
                broker_node(b)
                for b in sorted(self.c.controllers)
                if self.c.nodes.state(broker_node(b)) is NodeState.PAUSED
            ]
            if paused:
                self.c.resume(paused[0])
                self._after(f"resume {paused[0]} (a controller)")
                return
            node = self._controller_node()
            if node is not None and self.c.running(node):
                self.c.pause(node)
                self._after(f"pause the controller {node}")

        @precondition(lambda self: self.on("controller_cut"))
        @rule()
        @counted
        def controller_cut_or_heal(self) -> None:
            """The controller cut off from the store but not from the brokers, or healed."""
            if self.c.network.blocked_links():
                self.c.heal()
                self._after("heal")
                return
            node = self._controller_node()
            if node is not None:
                self.c.partition([(node, STORE), (STORE, node)])
                self._after(f"cut the controller {node} off from {STORE}")

        @rule()
        @counted
        def expire_sessions(self) -> None:
            """Session timeouts pass on the store's clock: every broker that did not
            heartbeat meanwhile loses its session (a paused or cut-off one, or any)."""
            self.c.advance(config.session_timeout_ns + ms(100))
            if self.c.tick_controller():
                self._after("session timeout, then controller tick")

        @rule(b=brokers)
        @counted
        def zombie_tick(self, b: int) -> None:
            """A controller the store no longer names acts on its stale context."""
            zombie = b != self.c.store.controller and b in self.c.controllers
            if zombie and self.c.tick_role(b):
                self._after(f"zombie controller b{b} ticks")

    Machine.__name__ = Machine.__qualname__ = name
    return Machine
